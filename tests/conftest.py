"""Shared fixtures and settings for tests/.

- Hypothesis runs deterministically: the same examples on every run and every machine
  (profile "explorer"); ``HYPOTHESIS_PROFILE=thorough`` searches harder and at random.
- Browser tests (marker ``browser``, or any test using Playwright's ``page``) run in
  Debian's ``chromium`` (``playwright install`` cannot download its own browser here);
  without it they fail with a message saying how to install it (never a silent skip:
  deselect them explicitly with ``-m "not browser"``). ``make test`` installs chromium first.
"""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import settings

settings.register_profile("explorer", derandomize=True, max_examples=60, deadline=None, database=None, print_blob=True)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "explorer"))

CHROMIUM = shutil.which("chromium")

# Headless Chromium as root, on a machine whose only network is the loopback: no sandbox,
# no GPU, and none of the background connections Chromium would otherwise try at start.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def pytest_collection_modifyitems(config, items):
    """Mark Playwright tests ``browser``; each of them first checks that chromium exists."""
    for item in items:
        if "page" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
        if item.get_closest_marker("browser") is not None:
            item.fixturenames.insert(0, "_require_chromium")


@pytest.fixture
def _require_chromium():
    if CHROMIUM is None:
        pytest.fail("Debian chromium is not installed: run `make test` (it installs it), or "
                    "`apt-get install chromium`, or deselect these tests with -m 'not browser'",
                    pytrace=False)


@pytest.fixture
def compiled_ready():
    """numba's compiled paths built (or loaded from its cache) before a test compares them with
    the numpy rule; skipped only when numba is not installed (the test extra installs it)."""
    from explorer import compiled

    if not compiled.AVAILABLE:
        pytest.skip("numba is not installed: the compiled path does not exist "
                    "(pip install -e '.[fast]'; the test extra installs it)")
    assert compiled.wait(240), f"the compiled paths did not build: {compiled.error()!r}"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's launch options, pointed at Debian's chromium."""
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [*browser_type_launch_args.get("args", []), *CHROMIUM_ARGS],
    }


VIEWPORT = {"width": 1400, "height": 3000}
"""A browser test's window: every figure of a page on screen. A figure scrolled out of view
is not redrawn until it comes back (explorer.dashboard.live.PlotlyView), so a test reading
the data of a figure below a 720 px fold read stale data."""


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    """pytest-playwright's page options: a window showing every figure (:data:`VIEWPORT`)."""
    return {**browser_context_args, "viewport": VIEWPORT}


@pytest.fixture(autouse=True)
def _reset_panel_state(request):
    """After a browser test, clear Panel's global state (servers, sessions, callbacks)."""
    yield
    if request.node.get_closest_marker("browser") is not None:
        import panel as pn

        pn.state.reset()
