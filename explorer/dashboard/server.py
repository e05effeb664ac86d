"""Serving the dashboard: ``explorer serve [--port N] [--no-show]`` ends up in :func:`serve`.

It wraps ``pn.serve`` with the per-session factory :func:`~.app.create_app`, bound to
localhost unless the caller asks for another address. A closed tab's session (its
periodic callback, sketches and figures) is destroyed once it has had no connection for
``UNUSED_SESSION_MS``, looked for every ``CHECK_SESSIONS_MS``: freed within about a
minute and a quarter, as users expect (holoviz/panel#1399, #8099). Not much shorter: a
page whose websocket connects after its session was dropped (a slow, loaded machine)
gets a session rebuilt without its page, whose styles then point at Panel's CDN.
It also answers the pages' links to their lessons and docs (:func:`~.references.routes`),
serves plotly.js's partial bundle when it is installed (:mod:`.bundle`),
and keeps garbage collection off the sessions' critical path (:mod:`.collector`): what
start-up made and what each session builds is frozen out of the collector's walks, and a
closed session's cycles are reclaimed once no session is left to stall.
"""

from __future__ import annotations

import panel as pn
from tornado.ioloop import IOLoop, PeriodicCallback

from . import bundle
from .app import create_app
from .collector import FREEZE_EVERY_S, THAW_DELAY_S, SessionCollector
from .references import routes
from .upload import MAX_BYTES

__all__ = ["serve", "session_factory", "CHECK_SESSIONS_MS", "UNUSED_SESSION_MS", "MAX_MESSAGE_BYTES"]

CHECK_SESSIONS_MS = 10_000
UNUSED_SESSION_MS = 60_000
MAX_MESSAGE_BYTES = 4 * -(-MAX_BYTES // 3) + 2**20
"""Largest websocket message the server reads: an upload of :data:`~.upload.MAX_BYTES`
travels base64-encoded (4/3 of it), plus 1 MB for the rest of the message. A larger
message closes that session's websocket, so the page itself refuses larger files before
sending them (:class:`~.layout.FileUpload`); this limit keeps a client that skips the
check from making the server read more."""
LOOPBACK = ("127.0.0.1", "localhost")


def serve(port: int = 5006, show: bool = True, address: str = "127.0.0.1", *,
          threaded: bool = False, freeze: bool = True, **kwargs):
    """Serve the dashboard on ``address:port`` (localhost by default); blocks unless ``threaded``.

    Extra keyword arguments go to ``pn.serve`` (``websocket_origin``, ``liveness``, ...).
    With ``threaded=True`` the server runs in a thread and the thread object is returned
    (call ``.stop()`` on it); otherwise this returns when the server stops (Ctrl-C).
    With ``freeze`` (the default) a :class:`~.collector.SessionCollector` runs beside the
    sessions (:func:`session_factory`): the objects of start-up, then every few seconds
    those of the sessions, are exempted from garbage collection, so that no collection
    walks them and none stalls Play; a closed session is reclaimed once none is left.
    """
    if not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port must be an integer in 1..65535, got {port!r}")
    hosts = LOOPBACK if address in LOOPBACK else (address,)
    kwargs.setdefault("websocket_origin", [f"{host}:{port}" for host in hosts])
    kwargs.setdefault("check_unused_sessions_milliseconds", CHECK_SESSIONS_MS)
    kwargs.setdefault("unused_session_lifetime_milliseconds", UNUSED_SESSION_MS)
    kwargs.setdefault("websocket_max_message_size", MAX_MESSAGE_BYTES)
    kwargs.setdefault("title", "Sketch Explorer")
    kwargs["extra_patterns"] = [*kwargs.get("extra_patterns", ()), *routes(), *bundle.routes()]
    app = create_app
    if freeze:
        collector = SessionCollector()
        collector.start()
        app = session_factory(collector)
    return pn.serve(app, port=port, address=address, show=show, threaded=threaded, **kwargs)


def session_factory(collector: SessionCollector, build=create_app):
    """``build`` (a session's app factory) wrapped so that ``collector`` sees the sessions:
    each one counted open and closed, its memory reclaimed :data:`~.collector.THAW_DELAY_S`
    after the last close (``collector.thaw``), and ``collector.freeze`` run every
    :data:`~.collector.FREEZE_EVERY_S` s on the server's event loop from the first session on.

    >>> from explorer.dashboard.collector import SessionCollector
    >>> collector = SessionCollector()
    >>> factory = session_factory(collector, build=lambda: "app")
    >>> factory(), collector.live
    ('app', 1)
    """
    freezing: dict = {}

    def factory():
        loop = IOLoop.current()
        if loop not in freezing:  # one periodic freeze per server loop
            freezing[loop] = PeriodicCallback(collector.freeze, FREEZE_EVERY_S * 1000)
            freezing[loop].start()
        app = build()  # counted once built: a session whose build failed never closes
        collector.opened()
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            def closed(session_context) -> None:
                if collector.closed():
                    IOLoop.current().call_later(THAW_DELAY_S, collector.thaw_if_still_due)
            pn.state.on_session_destroyed(closed)
        return app

    return factory
