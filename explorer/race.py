"""Several learners on one stream, in lock step: the one run loop of pages and notebooks.

A :class:`Race` feeds the same rows to every learner it holds, keeps each learner's last
:class:`~explorer.hooks.StepRecord` and cumulative loss, and records a bounded
:class:`~explorer.history.History` of the numbers a lesson or a dashboard page plots. It has
no Panel in it: a dashboard page (:mod:`explorer.dashboard.page`) is a view over one race,
and a notebook uses the same object. docs/architecture.md draws the path from a round to
a picture.

- A learner that diverges (:class:`~explorer.errors.Diverged`) is left as it was before
  that row and stops; the others go on (``race.stopped`` says who and why).
- A hyper-parameter changes mid-stream through :meth:`Race.with_params` (or
  :meth:`Race.retune`), i.e. the learner's own validated ``with_params``
  (:mod:`explorer.params`), never by assignment; hooks attached through
  :meth:`Race.add_hook` move to the learner that continues (:class:`HotLearners`).
- :meth:`Race.state_dict` / :meth:`Race.load_state_dict` are the snapshots for Back:
  plain arrays (every learner's ``state_dict``), bit-identical on resume.

>>> import numpy as np
>>> from explorer import AdaGrad
>>> X = np.random.default_rng(0).standard_normal((50, 3)); y = X @ [1.0, -2.0, 0.5]
>>> race = Race({"diag": AdaGrad(3, variant="diag"), "full": AdaGrad(3, variant="full")}, X, y)
>>> history = race.run(every=25)
>>> history["t"].tolist(), history.names
([25.0, 50.0], ['t', 'loss.diag', 'total.diag', 'loss.full', 'total.full'])
>>> bool(race.totals["full"] == history["total.full"][-1]), race.records["diag"].t
(True, 50)
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Mapping

import numpy as np

from ._validation import check_int
from .errors import Diverged
from .history import History
from .run import progress_bar

__all__ = ["Race", "HotLearners", "Curves", "EventTimes", "EVENTS_KEPT", "TIME_DECAY"]

Measure = Callable[["Race"], Mapping[str, float]]

EVENTS_KEPT = 256
"""An :class:`EventTimes` keeps at most this many rounds of each kind (the latest)."""


class EventTimes:
    """The rounds at which a run's events happened (a shrink, a change of leader), by
    ``kind``: the latest ``limit`` of each kind, oldest first, so memory stays bounded
    however long the stream. A race books them as its rounds play (:meth:`add`), and its
    snapshots carry them (:meth:`state_dict` / :meth:`load_state_dict`: plain lists).

    >>> log = EventTimes(limit=2)
    >>> for t in (3, 7, 12):
    ...     log.add("shrink RFD", t)
    >>> log.times("shrink RFD").tolist(), log.times("never").tolist(), log.kinds
    ([7.0, 12.0], [], ['shrink RFD'])
    """

    def __init__(self, limit: int = EVENTS_KEPT):
        self.limit = check_int("limit", limit, minimum=1)
        self._times: dict[str, list[int]] = {}

    @property
    def kinds(self) -> list[str]:
        """The kinds booked so far, in the order of their first event."""
        return list(self._times)

    def add(self, kind: str, t: int) -> None:
        """Book an event of ``kind`` at round ``t`` (the oldest of that kind goes past ``limit``)."""
        times = self._times.setdefault(str(kind), [])
        times.append(int(t))
        if len(times) > self.limit:
            del times[: len(times) - self.limit]

    def times(self, kind: str) -> np.ndarray:
        """The kept rounds of ``kind``, oldest first (floats, for an x axis; empty if none)."""
        return np.array(self._times.get(kind, ()), dtype=float)

    def state_dict(self) -> dict[str, list[int]]:
        """``{kind: [rounds]}``, copies."""
        return {kind: list(times) for kind, times in self._times.items()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Keep exactly the events of ``state`` (a :meth:`state_dict`), at most ``limit`` per kind."""
        self._times = {str(kind): [int(t) for t in times][-self.limit:] for kind, times in state.items()}


class HotLearners:
    """Named learners (``self.learners``, name -> learner) whose hyper-parameters change
    mid-stream, each continuing through its own ``with_params``, with the hooks attached
    through :meth:`add_hook` kept: the learner that continues gets them, so callers never
    re-attach them. :class:`Race` is one; a race with a loop of its own (the FM race) mixes
    it in.

    >>> from explorer import AdaGrad
    >>> from explorer.hooks import Recorder
    >>> race = Race({"diag": AdaGrad(2, variant="diag")}, np.eye(2), [1.0, -1.0])
    >>> recorder = Recorder(kinds=("step",))
    >>> race.add_hook("diag", recorder)
    >>> race.retune("diag", eta=0.5), race.retune("diag", eta=0.5)
    (True, False)
    >>> _ = race.step(2); len(recorder.events("step"))
    2
    """

    learners: dict[str, Any]

    def _kept_hooks(self) -> dict[str, list]:
        return vars(self).setdefault("_hooks", {})

    def add_hook(self, name: str, hook: Callable) -> None:
        """Attach ``hook`` to learner ``name`` (its ``add_hook``), for good: after
        :meth:`with_params` or :meth:`attach_hooks` the learner that continues has it too."""
        self.learners[name].add_hook(hook)
        self._kept_hooks().setdefault(name, []).append(hook)

    def attach_hooks(self, name: str) -> None:
        """Attach the kept hooks of ``name`` to its learner, a new object (rebuilt from a state)."""
        for hook in self._kept_hooks().get(name, ()):
            self.learners[name].add_hook(hook)

    def with_params(self, name: str, **changes: Any) -> None:
        """Continue learner ``name`` with ``changes`` (its ``with_params``: validated, all or
        nothing); the race keeps its place in the stream and the learner its hooks."""
        if name not in self.learners:
            raise ValueError(f"no learner {name!r} in this race; learners are {', '.join(self.learners)}")
        self.learners[name] = self.learners[name].with_params(**changes)
        self.attach_hooks(name)

    def retune(self, name: str, **wanted: Any) -> bool:
        """Give learner ``name`` the ``wanted`` hyper-parameters from the next round on:
        :meth:`with_params` with those that differ from its ``get_params()``; a learner that
        has them all already is left as it is (bit for bit). Returns whether it changed,
        e.g. ``race.retune("diag", eta=0.5)``."""
        params = self.learners[name].get_params()
        changes = {key: value for key, value in wanted.items() if params[key] != value}
        if changes:
            self.with_params(name, **changes)
        return bool(changes)


class Curves:
    """The one owner of a run's curves: ``history`` (a :class:`~explorer.history.History`) and
    the one way to append to it, :meth:`record`: ``t`` and :meth:`measure` now, then the
    caller's ``extra`` columns. :class:`Race` is one; so is every family's race, and a
    dashboard page draws its race's ``history`` (:mod:`explorer.dashboard.page`).

    >>> race = Race({}, np.eye(2), measure=lambda race: {"rows": float(race.t)})
    >>> _ = race.step(1, record=False); race.record(seed=0.0)
    >>> race.history.last()
    {'t': 1.0, 'rows': 1.0, 'seed': 0.0}
    """

    history: History
    t: int

    def measure(self) -> dict[str, float]:
        """The columns of a history point at ``t``, besides ``t``."""
        raise NotImplementedError

    def record(self, **extra: float) -> None:
        """Append one history point for the current state: ``t``, :meth:`measure`, ``extra``."""
        self.history.append(t=float(self.t), **self.measure(), **extra)


TIME_DECAY = 0.97
"""The moving average of a learner's time per round: ``s <- decay s + (1 - decay) seconds``."""


class Race(HotLearners, Curves):
    """``learners`` (name -> online learner with ``step``) played on the rows of ``X``
    (labels ``y``, or None for a learner without labels, e.g. online PCA).

    A history point (:meth:`measure`) holds ``t`` and, per learner, ``loss.<name>`` (that
    round's loss, NaN once stopped) and ``total.<name>`` (the cumulative loss), then the
    columns ``measure(race) -> {column: float}`` adds (exact errors, condition numbers,
    ...); a family's race overrides :meth:`measure` with its own columns. ``capacity``: at
    most that many history points (every other one is dropped when full,
    :class:`~explorer.history.History`); unbounded when None.

    A family's race extends the loop in one place, :meth:`after_round` (called once per
    row, after every learner played it): it never re-loops over the rows itself.
    """

    def __init__(self, learners: Mapping[str, Any], X, y=None, *, measure: Measure | None = None,
                 capacity: int | None = None):
        self.learners = dict(learners)  # none is allowed: the stream still advances
        for name, learner in self.learners.items():
            if not callable(getattr(learner, "step", None)):
                raise ValueError(f"learner {name!r} ({type(learner).__name__}) has no step(x, y)")
        self.X = np.asarray(X, dtype=float)
        if self.X.ndim != 2:
            raise ValueError(f"X must be 2-D (rows, features), got shape {self.X.shape}")
        self.y = None if y is None else np.asarray(y, dtype=float)
        if self.y is not None and self.y.shape != (self.X.shape[0],):
            raise ValueError(f"y must have one entry per row of X ({self.X.shape[0]}), got shape {self.y.shape}")
        if measure is not None and not callable(measure):
            raise ValueError(f"measure must be a callable(race) -> dict, got {type(measure).__name__}")
        self._extra_columns = measure
        self.t = 0
        self.records: dict[str, Any] = {}
        self.totals = {name: 0.0 for name in self.learners}
        self.seconds = {name: math.nan for name in self.learners}
        """Each learner's wall time per round (its ``step``), a moving average (:data:`TIME_DECAY`)."""
        self.stopped: dict[str, Diverged] = {}
        self.event_times = EventTimes()
        """The rounds of the events a family's race books (:class:`EventTimes`), in its snapshots."""
        self.history = History(capacity=capacity)

    @property
    def n(self) -> int:
        """Rows in the stream."""
        return self.X.shape[0]

    @property
    def done(self) -> bool:
        return self.t >= self.n

    @property
    def running(self) -> list[str]:
        """The learners still playing (not stopped by a divergence)."""
        return [name for name in self.learners if name not in self.stopped]

    # -- playing ---------------------------------------------------------------------------
    def step(self, k: int = 1, *, record: bool = True) -> int:
        """Play the next ``k`` rows (fewer at the end of the stream) on every running
        learner, then record one history point unless told not to; returns rows played."""
        k = min(check_int("k", k, minimum=0), self.n - self.t)
        for _ in range(k):
            x = self.X[self.t]
            y = None if self.y is None else self.y[self.t]
            for name in self.running:
                self._play(name, x, y)
            self.t += 1
            self.after_round(x, y)
        if record and k:
            self.record()
        return k

    def after_round(self, x: np.ndarray, y) -> None:
        """Book round ``t`` (just played on row ``x``, label ``y``) from ``self.records``:
        the one place a family's race extends the loop (nothing here)."""

    def _play(self, name: str, x: np.ndarray, y) -> None:
        learner = self.learners[name]
        start = time.perf_counter()
        try:
            record = learner.step(x) if y is None else learner.step(x, y)
        except Diverged as error:
            self.stopped[name] = error
            self.records.pop(name, None)
            return
        seconds, previous = time.perf_counter() - start, self.seconds.get(name, math.nan)
        self.seconds[name] = seconds if math.isnan(previous) else TIME_DECAY * previous + (1 - TIME_DECAY) * seconds
        self.records[name] = record
        self.totals[name] += float(record.loss)

    def run(self, *, every: int = 1, progress: bool = False) -> History:
        """Play to the end of the stream, recording every ``every`` rows and at the end."""
        every = check_int("every", every, minimum=1)
        bar = progress_bar(progress, self.n - self.t, "race")
        try:
            while not self.done:
                bar.update(self.step(every - self.t % every))
        finally:
            bar.close()
        return self.history

    def measure(self) -> dict[str, float]:
        """The columns of a history point besides ``t``: per learner ``loss.<name>`` and
        ``total.<name>``, then ``measure(race)`` of the constructor; a family's race
        (:mod:`explorer.experiments`) overrides this with its own columns."""
        point: dict[str, float] = {}
        for name in self.learners:
            record = self.records.get(name)
            point[f"loss.{name}"] = record.loss if record is not None and record.t == self.t else np.nan
            point[f"total.{name}"] = self.totals[name]
        if self._extra_columns is not None:
            point.update(self._extra_columns(self))
        return point

    # -- snapshots (Back) ------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Every learner's ``state_dict`` (plain arrays), ``t``, the totals, which learners
        stopped and why, the last records (frozen, so kept as they are) and the booked
        :attr:`event_times`; the history
        is the caller's to truncate."""
        return {"t": self.t, "totals": dict(self.totals),
                "learners": {name: learner.state_dict() for name, learner in self.learners.items()},
                "stopped": {name: (str(error), error.row, error.t) for name, error in self.stopped.items()},
                "records": dict(self.records), "event_times": self.event_times.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Go back (or forward) to a :meth:`state_dict` of this race, in place (the learner
        objects, and the hooks on them, stay); all or nothing."""
        t = check_int("t", state["t"], minimum=0)
        if t > self.n or state["learners"].keys() != self.learners.keys():
            raise ValueError(f"this state is not of this race (t = {t} of {self.n} rows, learners "
                             f"{list(state['learners'])} vs {list(self.learners)})")
        before = {name: learner.state_dict() for name, learner in self.learners.items()}
        try:
            for name, learner in self.learners.items():
                learner.load_state_dict(state["learners"][name])
        except Exception:
            for name, learner in self.learners.items():
                learner.load_state_dict(before[name])
            raise
        self.t, self.totals = t, dict(state["totals"])
        self.stopped = {name: Diverged(message, row=row, t=at)
                        for name, (message, row, at) in state["stopped"].items()}
        self.records = dict(state["records"])
        self.event_times.load_state_dict(state["event_times"])
