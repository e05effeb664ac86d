"""Keeping garbage collection out of a served dashboard's way: no collection walks the sessions.

A full (generation-2) collection walks every object the collector tracks, and one session
with its five pages holds about a hundred thousand of them (Panel's and Bokeh's models,
param's watchers): a collection that walks them stalls every session's Play. Yet almost
all of them live as long as their session, and playing makes almost no cyclic garbage.
So :class:`SessionCollector`, which ``explorer serve`` runs beside the sessions:

- every :data:`FREEZE_EVERY_S` seconds collects the young generations (their garbage
  first) and moves everything alive into the permanent generation (``gc.freeze``): the
  collections the interpreter runs meanwhile walk only what was made since, a short
  pause however many sessions are open;
- once the last session has closed (nobody is watching), or once :data:`THAW_AFTER_CLOSED`
  sessions closed while others stayed open, thaws everything (``gc.unfreeze``), collects
  it all and frees the heap's empty pages (:func:`~.memory.release`), then freezes again:
  a closed session's cycles are reclaimed there, not during anyone's play.

The server wires it (:func:`~.server.serve`); ``benchmarks/gc_pauses.py`` measures the
pauses with and without it.

Reference: the CPython documentation of ``gc.freeze`` and ``gc.set_threshold``.
"""

from __future__ import annotations

import gc

from .memory import RELEASE_DELAY_S, freeze_startup, release

__all__ = ["SessionCollector", "FREEZE_EVERY_S", "THAW_AFTER_CLOSED", "THAW_DELAY_S"]

FREEZE_EVERY_S = 2.0
"""Seconds between two freezes of what is alive: what a page built since then is all a
collection walks."""
THAW_AFTER_CLOSED = 20
"""Sessions closed while others stay open before their frozen cycles are reclaimed anyway
(one full collection then: the price of bounding the memory they hold)."""
THAW_DELAY_S = RELEASE_DELAY_S + 0.5
"""Seconds between the last session's destruction and the thaw: Bokeh drops the session's
document after the destroy callbacks have run."""


class SessionCollector:
    """The garbage-collection policy of one dashboard server (see the module's docstring).

    ``opened()`` / ``closed()`` count the live sessions (``closed`` says whether to thaw
    now), ``freeze()`` runs every :data:`FREEZE_EVERY_S` s and ``thaw()`` after the last
    close; :meth:`start` freezes the start-up objects (:func:`~.memory.freeze_startup`).

    >>> import gc
    >>> collector = SessionCollector()
    >>> collector.start() > 0, gc.get_freeze_count() > 0
    (True, True)
    >>> collector.opened(); collector.closed()
    True
    >>> collector.thaw() > 0 and gc.get_freeze_count() > 0
    True
    >>> gc.unfreeze(); gc.set_threshold(700, 10, 10)
    """

    def __init__(self, thaw_after_closed: int = THAW_AFTER_CLOSED):
        if isinstance(thaw_after_closed, bool) or not isinstance(thaw_after_closed, int) \
                or thaw_after_closed < 1:
            raise ValueError(f"thaw_after_closed must be an integer >= 1, got {thaw_after_closed!r}")
        self.thaw_after_closed = thaw_after_closed
        self.live = 0  # sessions open now
        self.closed_since_thaw = 0  # sessions whose frozen objects wait for a thaw
        self.thaws = 0

    def start(self) -> int:
        """Freeze the start-up objects; returns how many are frozen."""
        return freeze_startup()

    def opened(self) -> None:
        """A session was created."""
        self.live += 1

    def closed(self) -> bool:
        """A session was destroyed; True when its memory should be reclaimed now (:meth:`thaw`):
        no session is left, or :attr:`thaw_after_closed` closed while others stayed open."""
        self.live = max(self.live - 1, 0)
        self.closed_since_thaw += 1
        return self.live == 0 or self.closed_since_thaw >= self.thaw_after_closed

    def freeze(self) -> int:
        """Collect the young generations, then freeze what is alive; returns the frozen count."""
        gc.collect(1)
        gc.freeze()
        return gc.get_freeze_count()

    def thaw(self) -> int:
        """Unfreeze, collect everything (and trim the heap), freeze again; returns the frozen count."""
        gc.unfreeze()
        release()
        gc.freeze()
        self.closed_since_thaw = 0
        self.thaws += 1
        return gc.get_freeze_count()

    def thaw_if_still_due(self) -> None:
        """:meth:`thaw` unless a session opened since the last close asked for it (and not
        enough closed to force it)."""
        if self.live == 0 or self.closed_since_thaw >= self.thaw_after_closed:
            self.thaw()
