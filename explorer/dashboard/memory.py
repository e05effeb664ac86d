"""Giving a closed session's memory back to the operating system.

CPython frees a session's objects when Bokeh drops it, but keeps the freed memory in its
heap for reuse: the server's RSS stayed at its peak after ten sessions closed (145 MB ->
227 MB, unchanged a minute later; issue 17, defect 8), though ten more sessions reused it
without growing. :func:`release_soon`, called when a session is destroyed, collects the
session's reference cycles once Bokeh has let go of it and asks glibc to return free heap
pages (``malloc_trim``; elsewhere only the collection runs).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

__all__ = ["release", "release_soon", "RELEASE_DELAY_S"]

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
