"""Giving a closed session's memory back to the operating system, and keeping the garbage
collector's pauses short.

CPython frees a session's objects when Bokeh drops it, but keeps the freed memory in its
heap for reuse: the server's RSS stayed at its peak after ten sessions closed, though ten
more sessions reused it without growing (benchmarks/README.md, "Figures behind the
code"). :func:`release_soon`, called when a session is destroyed, collects the session's
reference cycles once Bokeh has let go of it and asks glibc to return free heap
pages (``malloc_trim``; elsewhere only the collection runs).

A full (generation-2) collection walks every tracked object, and a dashboard process holds
a few hundred thousand of them before its first session: Panel, Bokeh, scipy, scikit-learn
and the package itself. :func:`freeze_startup`, called once the server has imported
everything, moves those into the collector's permanent generation (``gc.freeze``): they
live as long as the process, and full collections then walk only what sessions created
(``benchmarks/dashboard_gc.py`` measures the pauses with and without it).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

__all__ = ["freeze_startup", "release", "release_soon", "FULL_COLLECTION_EVERY", "RELEASE_DELAY_S"]

RELEASE_DELAY_S = 2.0
"""Seconds between a session's destruction and the release: Bokeh drops the session's
document after the destroy callbacks have run."""


def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return None


_TRIM = _malloc_trim()


def release() -> None:
    """Collect garbage, then return the heap's free pages to the OS (glibc only)."""
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)


def release_soon(delay: float = RELEASE_DELAY_S) -> None:
    """:func:`release` after ``delay`` seconds, on the server's event loop (now if there is none)."""
    from tornado.ioloop import IOLoop

    try:
        IOLoop.current().call_later(delay, release)
    except RuntimeError:  # no event loop in this thread
        release()


FULL_COLLECTION_EVERY = 1000
"""Generation-1 collections between two automatic full collections once the server runs
(CPython's default is 10): a full collection walks every session's objects (85-140 CPU-ms
with one session on this 2-core machine), so it comes 100 times less often; a closed
session's cycles are still collected at once by :func:`release`."""


def freeze_startup() -> int:
    """Collect once, then exempt every object alive now from later collections
    (``gc.freeze``), and make automatic full collections rarer
    (:data:`FULL_COLLECTION_EVERY`). Call it after start-up, before the first session;
    returns the number of objects frozen.

    >>> import gc
    >>> freeze_startup() > 0 and gc.get_freeze_count() > 0
    True
    >>> gc.get_threshold()[2] == FULL_COLLECTION_EVERY
    True
    >>> gc.unfreeze(); gc.set_threshold(700, 10, 10)
    """
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
    return gc.get_freeze_count()
