"""The transport every page shares: Play, Pause, Step, Back, Reset and a speed.

One :class:`Transport` per browser session drives the active :class:`~.page.Page`, as
the TensorFlow Playground's ``Player`` does (UX.md): Play is a periodic callback created
with ``start=False`` and owned by the session (one loop at most, stopped when the
session closes); Step and Back pause first. Back returns to earlier states: every
``snapshot_every`` rows the page's state (plain ``state_dict`` arrays) is kept, and
going back to row ``t`` restores the last snapshot before ``t`` and replays the few rows
after it. When the list of snapshots is full every other one is dropped, so Back still
reaches the start of the stream, replaying a little more. A restart drops them all: a
snapshot of an earlier run (``Page.run``: another stream or other options) is never
restored, also when the page restarted without the transport (a hot change may).

Play is paced by the browser when ``paced`` is set: every tick counts a frame as sent
(``frames_sent``) and the page reports back the frames it has painted (``frames_shown``,
see :class:`~.layout.FrameClock`). While the browser is more than ``MAX_FRAMES_AHEAD``
frames behind, a tick feeds no rows (it is *held*); the rows due since the last frame are
fed as soon as the browser reports a painted frame, not at the next period. So a slow
browser gets fewer plot updates per second at the same rows per second, instead of a
backlog that would make Pause answer seconds late; after ``STALL_SECONDS`` without news
from the browser play goes on regardless (measurements: benchmarks/README.md,
``dashboard_latency.py``).

A page that fails (a learner refuses a row, a restart that cannot build on the data, a hot
change that overflows) never takes the transport down: play pauses, the page is put back
to the last row it learned (last snapshot, then replay, row by row, so ``t`` stops exactly
before the failing row), and ``failure`` says what happened; the frame shows it as an
alert. The logic runs without a browser: ``step()``, ``back()``, ``tick()`` and
``reset()`` are plain methods (``tests/test_dashboard_logic.py``).
"""

from __future__ import annotations

import bisect
import time

import panel as pn
import param
from panel.io.callbacks import PeriodicCallback

from .page import Page

__all__ = ["Transport", "Rewind", "SPEEDS", "MAX_TICKS_PER_SECOND", "MAX_FRAMES_AHEAD",
           "STALL_SECONDS", "reason"]

SPEEDS = (1, 2, 5, 10, 15, 30, 60, 150, 300)
"""Choices of the speed control, in rows per second."""
MAX_TICKS_PER_SECOND = 15
"""Plot updates per second at most; faster speeds feed several rows per update."""
MAX_FRAMES_AHEAD = 2
"""Frames the browser may still be drawing when the next one is sent."""
STALL_SECONDS = 2.0
"""Without a painted frame for this long, play goes on anyway (a browser that reports nothing)."""


class Rewind(param.Parameterized):
    """Back's memory for :class:`Transport`: a snapshot of ``page`` every ``snapshot_every``
    rows in ``_snapshots``, at most ``max_snapshots`` (then every other one is dropped)."""

    snapshot_every = param.Integer(default=20, bounds=(1, None), doc="Rows between two snapshots.")
    max_snapshots = param.Integer(default=64, bounds=(2, None), doc="Snapshots kept (then thinned).")

    def _rewind(self, target: int) -> None:
        """Back to row ``target <= t``: restore the last snapshot before it, replay the rows
        after it unrecorded (they were learned before), keep the history up to ``target``."""
        page = self.page
        self._drop_old_snapshots()
        times = [s["t"] for s in self._snapshots]
        i = bisect.bisect_right(times, target) - 1
        if i < 0:  # no snapshot that early (a page taken over mid-stream)
            page.reset()
            self._snapshots = [page.snapshot()]
        else:
            page.restore(self._snapshots[i])
            del self._snapshots[i + 1:]
        page.truncate(target)
        page.step(target - page.t, record=False)
        page.record_current()

    def _drop_old_snapshots(self) -> None:
        """Forget the snapshots of an earlier run of the page (it restarted without us)."""
        if self._snapshots and self._snapshots[0]["run"] != self.page.run:
            self._snapshots = [s for s in self._snapshots if s["run"] == self.page.run]

    def _maybe_snapshot(self) -> None:
        self._drop_old_snapshots()
        last = self._snapshots[-1]["t"] if self._snapshots else -self.snapshot_every
        if self.page.t - last >= self.snapshot_every:
            self._snapshots.append(self.page.snapshot())
            if len(self._snapshots) > self.max_snapshots:
                self._snapshots = self._snapshots[::2]


class Transport(Rewind):
    """Play / Pause / Step / Back / Reset for one page; ``shared_t`` and ``speed`` go in the URL."""

    speed = param.Selector(default=15, objects=list(SPEEDS), doc="Rows per second while playing.")
    playing = param.Boolean(default=False, doc="True while the periodic callback runs.")
    t = param.Integer(default=0, bounds=(0, None), doc="Current row (updated on every tick).")
    shared_t = param.Integer(default=0, bounds=(0, None), doc=(
        "The row in the URL (?t=): follows t whenever the transport stops, not on every tick, "
        "since each URL change is a browser history entry. Setting it seeks there."))
    n_rows = param.Integer(default=0, bounds=(0, None), doc="Rows in the page's stream.")
    status = param.String(default="", doc="One line about what just happened.")
    failure = param.String(default="", doc=(
        "Why the page's last step, restart or hot change failed; every failure triggers it, "
        "also one with the same text as the last."))
    paced = param.Boolean(default=False, doc="Wait for the browser to show a frame before the next.")
    frames_sent = param.Integer(default=0, doc="Ticks that changed the plots.")
    frames_shown = param.Integer(default=0, doc="Frames the browser reported as painted.")

    def __init__(self, page: Page, **params):
        super().__init__(**params)
        self._syncing = False
        self._sent_at = time.monotonic()
        self._held = False
        self._snapshots: list[dict] = []
        # A background callback: Panel counts every other periodic callback in its one
        # server-wide busy state, and each change of it updates the busy indicator of every
        # session. Ten sessions playing sent thousands of indicator updates a second, the
        # server fell behind and sessions stalled for seconds at a time.
        self._callback = PeriodicCallback(callback=self.tick, period=self.period, background=True)
        self.page = page

    # -- the page being driven --------------------------------------------------------------
    @property
    def page(self) -> Page:
        return self._page

    @page.setter
    def page(self, page: Page) -> None:
        self.pause()
        self._page = page
        self._snapshots = [page.snapshot()] if page.t == 0 else []
        self._sync()

    @property
    def period(self) -> int:
        """Milliseconds between two plot updates while playing."""
        return round(1000 / min(self.speed, MAX_TICKS_PER_SECOND))

    @property
    def rows_per_tick(self) -> int:
        return max(1, round(self.speed / min(self.speed, MAX_TICKS_PER_SECOND)))

    @param.depends("speed", watch=True)
    def _speed_changed(self) -> None:
        self._callback.period = self.period

    # -- the buttons ----------------------------------------------------------------------
    def play(self) -> None:
        if self.page.finished:
            self.status = "End of the stream: press Reset (or Back) to watch it again."
            return
        self.status = ""
        self.playing = True
        self.page.growing = True
        self._sent_at = time.monotonic()
        self._callback.start()

    def pause(self) -> None:
        if self.playing:
            self._callback.stop()
            self.playing = False
            with pn.io.hold():
                self.page.settle()
                self._sync()

    def step(self, n: int = 1) -> None:
        """Pause, then feed the next ``n`` rows."""
        self.pause()
        self._advance(n)

    def back(self, n: int = 1) -> None:
        """Pause, then return to row ``t - n``."""
        self.pause()
        self.seek(self.page.t - n)

    def reset(self) -> bool:
        """Pause, rebuild the page's algorithms from its settings, back to t = 0.

        False when the page cannot run on its settings (``failure`` says why): it then
        keeps the stream and state it had (:meth:`Page.reset` is all or nothing).
        """
        self.pause()
        try:
            self.page.reset()
        except Exception as error:
            self._fail(f"cannot run on these settings: {reason(error)}")
            return False
        self._snapshots = [self.page.snapshot()]
        self.status = ""
        self.refresh()
        return True

    def apply_hot(self, names) -> bool:
        """The hot settings ``names`` changed: the page applies them mid-stream, then redraws.

        False when the page failed (``failure`` says why); its state may then be part
        old, part new, and the caller restores the settings and resets.
        """
        try:
            for name in names:
                self.page.apply_hot(name)
        except Exception as error:
            self.pause()
            self._fail(f"the change could not be applied: {reason(error)}")
            return False
        self.refresh()
        return True

    def tick(self) -> None:
        """One periodic-callback round: feed rows and redraw (if the browser keeps up).

        The rows fed are ``rows_per_tick``, or more when frames came further apart than
        the period (a slow browser): the stream keeps ``speed`` rows per second.
        """
        now = time.monotonic()
        since = now - self._sent_at
        self._held = (self.paced and self.frames_sent - self.frames_shown > MAX_FRAMES_AHEAD
                      and since < STALL_SECONDS)
        if self._held:
            return
        self._sent_at = now
        self.frames_sent += 1
        self._advance(max(self.rows_per_tick, round(self.speed * min(since, 1.0))))
        if self.page.finished:
            self.pause()

    def seek(self, t: int) -> None:
        """Go to row ``t`` (clipped to the stream): back through snapshots, forward by stepping.

        Going back, the history points up to ``t`` stay (the stream is deterministic), the
        last snapshot before ``t`` is restored and the rows after it are replayed unrecorded.
        """
        page = self.page
        target = min(max(int(t), 0), page.n_rows)
        if target < page.t:
            try:
                self._rewind(target)
            except Exception as error:  # a restart without a snapshot failed: the page is as it was
                self._fail(f"cannot go back to t = {target}: {reason(error)}")
                return
        chunk = max(self.snapshot_every, -(-(target - page.t) // 200))
        while page.t < target and self._feed(min(chunk, target - page.t)):
            self._maybe_snapshot()
        self.refresh()

    def stop(self) -> None:
        """Stop the periodic callback for good (the session is closing)."""
        self.pause()
        self._callback.stop()

    # -- internals --------------------------------------------------------------------------
    def _advance(self, n: int) -> None:
        if self.page.finished:
            self.status = "End of the stream: press Reset (or Back) to watch it again."
        elif self._feed(n):
            self._maybe_snapshot()
        self.refresh()

    def _feed(self, n: int) -> bool:
        """``page.step(n)``; if the page fails, pause, bring it back to the last row it
        learned (the rows before the failing one, fed one at a time) and say why: False."""
        start = self.page.t
        try:
            self.page.step(n)
            return True
        except Exception as error:
            failed = error
        self.pause()
        try:
            self._rewind(start)  # a learner may have taken some of the rows: undo them
            for _ in range(n - 1):  # the rows before the failing one, and its own error
                t = self.page.t
                try:
                    self.page.step(1)
                except Exception as error:
                    failed = error
                    self._rewind(t)
                    break
        except Exception as error:  # going back failed too (a bug of the page): start again
            self._fail(f"play stopped at t = {start}: {reason(failed)}; going back to the last "
                       f"row learned failed too ({reason(error)}), so the stream starts again")
            self.reset()
            return False
        self._fail(f"row {self.page.t + 1} of the stream could not be learned, so play "
                   f"stopped at t = {self.page.t}: {reason(failed)}")
        return False

    def _fail(self, message: str) -> None:
        self._sync()
        self.status = "Stopped: see the message above."
        with param.parameterized.discard_events(self):
            self.failure = f"{self.page.title}: {message}"
        self.param.trigger("failure")

    def refresh(self) -> None:
        """Redraw the page and update t, batched into one message (``pn.io.hold``)."""
        with pn.io.hold():
            try:
                self.page.refresh()
            except Exception as error:
                self.pause()
                self._fail(f"the plots could not be redrawn: {reason(error)}")
            self._sync()

    def _sync(self) -> None:
        self._syncing = True
        try:
            shared = {} if self.playing else {"shared_t": self.page.t}
            self.param.update(t=self.page.t, n_rows=self.page.n_rows, **shared)
        finally:
            self._syncing = False

    @param.depends("frames_shown", watch=True)
    def _frame_shown(self) -> None:
        """The browser caught up: feed a held tick now (at most one tick per period)."""
        if self.playing and self._held and time.monotonic() - self._sent_at >= self.period / 1000:
            self.tick()

    @param.depends("shared_t", watch=True)
    def _shared_t_set(self) -> None:
        if not self._syncing and self.shared_t != self.page.t:
            self.seek(self.shared_t)


def reason(error: Exception) -> str:
    """What a failure says to the student: a ``ValueError``'s own message (the library's
    contract: it says what was wrong and what is allowed), else the exception's kind too."""
    return str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
