"""The Panel dashboard: a live explorer with one page per algorithm family.

``explorer serve`` calls :func:`serve`; :func:`create_app` builds one browser session's
app (a fresh :class:`Dashboard`: no state is shared between sessions). A family adds its
page by subclassing :class:`~explorer.dashboard.page.Page` and appending the class to
:data:`PAGES` (see ``page.py``).
"""

from .app import PAGES, Dashboard, create_app
from .page import Page
from .server import serve

__all__ = ["create_app", "serve", "Dashboard", "Page", "PAGES"]
