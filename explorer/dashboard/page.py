"""What one dashboard page is: the small protocol every algorithm family implements.

A page is a :class:`Page` subclass, a ``param.Parameterized`` whose logic runs without a
browser (unit tests call ``reset()``, ``step()``, ``snapshot()``/``restore()`` and read
``history``). The frame (:mod:`explorer.dashboard.app`) owns the shared :class:`Settings`
and the :class:`~explorer.dashboard.transport.Transport`; it calls, on the active page:

- ``reset()`` when a structural setting changes (data set, n, d, seed, m),
- ``apply_hot(name)`` when a hot one does (alpha0, eta: they apply mid-stream),
- ``step(k)`` on Step and on every Play tick, then ``refresh()`` inside ``pn.io.hold()``,
- ``snapshot()`` every few steps, and for Back ``truncate(t)``,
  ``restore(snapshot)`` and ``step(k, record=False)`` up to ``t``.

A subclass sets ``key``, ``title``, ``uses`` (the :class:`Settings` it reads) and ``hot``
(those applied without a reset), and implements ``_build(X)``: a new race on the stream X
as ``self.race`` (an :class:`explorer.race.Race` or another :class:`~explorer.race.Curves`
with ``step``, ``measure``, ``state_dict``/``load_state_dict``; never changing the objects
it replaces, which a failed :meth:`Page.reset` puts back), ``_tune()`` (today's hot values
to the race), ``_make_views()`` (panes, built once) and ``_update_views()`` (patch their
data). ``page.history`` is ``race.history`` (a point: ``race.measure()``, ``_columns()``);
``_advance``, ``_state``, ``_load`` and ``apply_hot`` play, snapshot, restore and retune it.

Optional: ``restart`` (the page's own parameters whose change restarts the stream),
``hot_options`` (those applied from now on, by ``apply_hot_options()`` and ``_tune()``),
``_stream()`` (the rows the page streams, if not the shared settings') and
``set_uses(uses, hot)`` (when the settings that apply depend on the page's options; fires
``uses_changed``). Parameters a page declares itself are kept in the URL too.

A new family appends its :class:`Page` subclass to ``PAGES`` in ``app.py``
(``pages/sketching.py`` is the full example; docs/architecture.md, section 7, sketches one).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar

import numpy as np
import param

from ..history import History
from .live import LivePlot
from .settings import Settings

__all__ = ["Page", "HISTORY_POINTS"]

HISTORY_POINTS = 250
"""About how many points a page's curves have over a whole stream (see :meth:`Page.step`)."""


class Page(param.Parameterized):
    """Base class of a dashboard page: one algorithm family run on the shared stream."""

    key: ClassVar[str] = ""
    title: ClassVar[str] = ""
    intro: ClassVar[str] = ""
    """One line above the transport saying what to watch on this page (Markdown)."""
    uses: ClassVar[tuple[str, ...]] = ()
    """The shared settings this page reads (an instance may change it: :meth:`set_uses`)."""
    hot: ClassVar[tuple[str, ...]] = ()
    """Those of ``uses`` applied mid-stream (:meth:`apply_hot`); the others restart."""
    restart: ClassVar[tuple[str, ...]] = ()
    """The page's own parameters whose change restarts the stream (see :meth:`request_restart`)."""
    hot_options: ClassVar[tuple[str, ...]] = ()
    """The page's own parameters applied mid-stream (see :meth:`apply_hot_options`)."""
    hot_point: ClassVar[bool] = True
    """Whether a ``hot`` change records a history point (a step); ``hot_options_point``: an option's."""
    hot_options_point: ClassVar[bool] = True
    eta_meaning: ClassVar[str] = "step size"
    """What the shared η is on this page, for its sidebar label ("η: step size")."""

    t = param.Integer(default=0, bounds=(0, None), doc="Rows of the stream consumed so far.")
    n_rows = param.Integer(default=0, bounds=(0, None), doc="Rows in the current stream.")
    notes = param.List(default=[], item_type=str, doc="Explanations shown above the plots.")
    uses_changed = param.Event(doc="Fired by set_uses: the sidebar re-reads uses and hot.")

    def __init__(self, settings: Settings, **params):
        super().__init__(**params)
        self.settings = settings
        self._tail = False  # the history's last point is the current row between two grid rows
        self.run = 0  # times the stream was (re)started: a snapshot is restored only into its own run
        self.on_restart: Callable[[], bool] | None = None  # set by the frame (see request_restart)
        self._X = np.zeros((0, 1))
        self._views = None
        self.plots: dict[str, LivePlot] = {}  # the live figures, by name (set by _make_views)
        self.growing = False  # the stream is playing (Transport.play; settle() ends it)
        self._setting_back = False
        self.reset()
        if self.restart:
            self.param.watch(self._options_changed, list(self.restart))
        if self.hot_options:
            self.param.watch(lambda *events: self.apply_hot_options(), list(self.hot_options))

    # -- the stream ----------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.t >= self.n_rows

    def reset(self) -> None:
        """Rebuild the algorithms from the settings and go back to t = 0.

        All or nothing: when the page cannot run on the new stream (``_stream``,
        ``_build`` or the first ``record`` raises), its attributes and ``t``, ``n_rows``
        and ``notes`` are put back as they were and the error is re-raised.
        """
        attributes = dict(vars(self))
        values = {"t": self.t, "n_rows": self.n_rows, "notes": self.notes}
        try:
            self.run += 1
            self._X, self._stream_notes = self._stream()
            self.n_rows = self._X.shape[0]
            self._tail = False
            self._build(self._X)
            self.race.history = History(capacity=4 * HISTORY_POINTS)
            self.t = 0
            self.update_notes()
            self.record()
        except Exception:
            for name in set(vars(self)) - set(attributes):
                delattr(self, name)
            vars(self).update(attributes)
            self.param.update(values)
            raise

    @property
    def history(self) -> History:
        """The curves: the race's :class:`~explorer.history.History`, one per run (:meth:`step`)."""
        return self.race.history

    @property
    def resolution(self) -> int:
        """Rows between two points of the curves: the stream's length over :data:`HISTORY_POINTS`."""
        return max(1, math.ceil(self.n_rows / HISTORY_POINTS))

    def step(self, n: int = 1, record: bool = True) -> int:
        """Feed the next ``n`` rows (fewer at the end); unless told not to, record the history.
        The curves have a point at every ``resolution``-th row (the *grid*) and one at the
        current row, replaced by the next step: the history at row ``t`` is the same however
        the stream got there (Step, Play at any speed, a shared link's seek)."""
        k = min(int(n), self.n_rows - self.t)
        if k <= 0:
            return 0
        if not record:
            self._advance(self._X[self.t:self.t + k])
            self.t += k
            return k
        if self._tail:
            self.history.truncate(self.t - 1)
            self._tail = False
        end, r = self.t + k, self.resolution
        while self.t < end:
            stop = min(end, (self.t // r + 1) * r)
            self._advance(self._X[self.t:stop])
            self.t = stop
            self.record_current()
        return k

    def record_current(self) -> None:
        """Make the history's last point the current row's (provisional between grid rows)."""
        fresh = len(self.history) == 0 or self.history["t"][-1] != self.t
        if fresh:
            self.record()
        self._tail = fresh and self.t % self.resolution != 0 and not self.finished

    def truncate(self, t: int) -> None:
        """Forget the history after row ``t`` (Back, before the page is put back at ``t``)."""
        self.history.truncate(t)
        self._tail = False

    def apply_hot(self, name: str) -> None:
        """A shared setting changed: one of ``hot`` goes to the race from the next row on
        (:meth:`_tune`, new notes, a point at the change if ``hot_point``); others restart."""
        if name not in self.hot:
            return self.reset()
        self._tune()
        self.update_notes()
        if self.hot_point:
            self.record()

    def apply_hot_options(self) -> None:
        """A ``hot_options`` value changed: :meth:`_tune`, notes, a point if ``hot_options_point``, a redraw."""
        self._tune()
        self.update_notes()
        if self.hot_options_point:
            self.record()
        self.refresh()

    def request_restart(self) -> bool:
        """A ``restart`` option changed: back to t = 0. Inside a dashboard ``on_restart`` does
        it (now or on the next visit) and says whether it could; alone, the page resets."""
        if self.on_restart is not None:
            return self.on_restart()
        self.reset()
        self.refresh()
        return True

    def _options_changed(self, *events) -> None:
        """A restart option changed; one the page cannot restart on is set back (nothing restarts)."""
        if not self._setting_back and not self.request_restart():
            self._setting_back = True
            try:
                self.param.update({event.name: event.old for event in events})  # restarts on them
            finally:
                self._setting_back = False

    def set_uses(self, uses: tuple[str, ...], hot: tuple[str, ...] | None = None) -> None:
        """Change which shared settings this instance reads (and which are hot), for a page
        whose options decide it; fires ``uses_changed`` when they change (the sidebar re-labels)."""
        hot = self.hot if hot is None else tuple(hot)
        if (tuple(uses), hot) != (tuple(self.uses), tuple(self.hot)):
            self.uses, self.hot = tuple(uses), hot
            self.param.trigger("uses_changed")

    # -- Back ----------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """The state at ``t`` (plain arrays from ``state_dict``) of this run, for :meth:`restore`."""
        return {"t": self.t, "run": self.run, "state": self._state()}

    def restore(self, snapshot: dict) -> None:
        """Go back to a snapshot taken in this run (the history is left to the caller); one
        from before a restart (another stream, other options) is refused."""
        if snapshot["run"] != self.run:
            raise ValueError(f"a snapshot of run {snapshot['run']} cannot be restored into run "
                             f"{self.run} (the stream restarted since)")
        self.t = int(snapshot["t"])
        self._load(snapshot["state"])

    # -- views ---------------------------------------------------------------------------
    @property
    def views(self):
        """The page's panes (built on first use, then only patched by :meth:`refresh`)."""
        if self._views is None:
            self._views = self._make_views()
            for plot in self.plots.values():
                plot.stream_length = self.n_rows
            self._update_views()
        return self._views

    def refresh(self) -> None:
        """Push the latest history into the views (call inside ``pn.io.hold()``)."""
        if self._views is not None:
            for plot in self.plots.values():
                plot.growing, plot.stream_length = self.growing, self.n_rows
            self._update_views()

    def settle(self) -> None:
        """The stream stopped playing: the figures fit their axes as at rest (:mod:`.ranges`)."""
        self.growing = False
        for plot in self.plots.values():
            plot.settle()

    def update_notes(self) -> None:
        """Notes on how the stream was loaded, then the page's own (after a hot change too)."""
        self.notes = [*self._stream_notes, *self._notes()]

    def record(self) -> None:
        """Append one history point, kept for good (the race's ``record``: ``t``,
        ``race.measure()``, :meth:`_columns`); a hot change is drawn as a step."""
        self.race.record(**self._columns())
        self._tail = False

    def _columns(self) -> dict[str, float]:
        """The page's own columns of a history point (e.g. a setting drawn as a step)."""
        return {}

    def _notes(self) -> list[str]:
        """Page-specific explanations of the current settings (e.g. 'm >= d: nothing shrinks')."""
        return []

    def _stream(self) -> tuple[np.ndarray, list[str]]:
        """The rows :meth:`reset` streams and notes on them; pages with a stream of their own override."""
        return self.settings.stream()

    # -- for subclasses ------------------------------------------------------------------
    # ``_build`` sets ``self.race``; these defaults play, snapshot and restore it.
    def _build(self, X: np.ndarray) -> None:
        raise NotImplementedError

    def _advance(self, rows: np.ndarray) -> None:
        stopped = len(self.race.stopped)
        self.race.step(rows.shape[0], record=False)
        if len(self.race.stopped) != stopped:  # a learner diverged: say who stopped, and when
            self.update_notes()

    def _tune(self) -> None:
        """Give the algorithms today's hot values (the settings' and the page's own)."""

    def _state(self) -> dict:
        return self.race.state_dict()

    def _load(self, state: dict) -> None:
        self.race.load_state_dict(state)
        self._tune()  # hot values are today's, not the snapshot's
        self.update_notes()

    def _make_views(self):
        raise NotImplementedError

    def _update_views(self) -> None:
        raise NotImplementedError
