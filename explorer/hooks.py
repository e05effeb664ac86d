"""Introspection hooks: event records, the observable base class, and `Recorder`.

Every algorithm in :mod:`explorer` is :class:`Observable`: ``handle = algo.add_hook(fn)``
registers ``fn``, which is then called with one frozen event record per interesting
moment (a shrink, a step, a fixed-share mix, ...); ``handle.remove()`` detaches it.
Events are data, never prints, so a notebook or the dashboard only has to read them.

When no hook is attached, an algorithm builds no event at all: every emission site is
guarded by ``if self._hooks:``, so observation costs nothing unless somebody listens.

>>> from explorer import FrequentDirections, Recorder
>>> sk = FrequentDirections(d=3, m=2)
>>> rec = Recorder(kinds=("shrink",))
>>> handle = sk.add_hook(rec)
>>> sk.extend([[1.0, 0, 0], [0, 2.0, 0], [0, 0, 3.0]])
>>> rec.columns("shrink")["delta"].round(3).tolist()
[1.0, 3.0]
>>> handle.remove()
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import numpy as np

__all__ = [
    "ShrinkEvent",
    "MergeEvent",
    "StepRecord",
    "Deferred",
    "FixedShareEvent",
    "CapEvent",
    "DecomposeEvent",
    "HookHandle",
    "Observable",
    "Recorder",
]


@dataclass(frozen=True)
class ShrinkEvent:
    """One shrink of a Frequent Directions buffer (docs/algorithms.md sections 1, 2, 6).

    t: rows seen when the shrink happened; sigma: singular values of the buffer *before*
    the shrink, descending; delta: the amount subtracted from every sigma**2;
    alpha: RFD's regularizer after this shrink (None for plain FD);
    part: "+" or "-" for the two halves of Generalized FD, else None.
    """

    kind: ClassVar[str] = "shrink"
    t: int
    sigma: np.ndarray
    delta: float
    alpha: float | None = None
    part: str | None = None


@dataclass(frozen=True)
class MergeEvent:
    """One merge of two sketches, ``a.merge(b)`` (docs/merging.md), sent to the hooks of
    both ``a`` and ``b`` (they are unchanged; the merged sketch is new and has no hooks).

    t: rows the merged sketch summarizes (``a.n_seen + b.n_seen``); sizes: the rows each
    part summarized, ``(a.n_seen, b.n_seen)``; ranks: the occupied rows each part brought
    to the merge; delta: the sum of the deltas of the merge's own shrinks; n_shrinks: how
    many shrinks the merge did; delta_total: the merged sketch's (both parts' plus
    ``delta``); alpha: the merged RFD's regularizer (None for FD and Generalized FD).
    """

    kind: ClassVar[str] = "merge"
    t: int
    sizes: tuple[int, int]
    ranks: tuple[int, int]
    delta: float
    n_shrinks: int
    delta_total: float
    alpha: float | None = None


class Deferred:
    """A record's value computed when first read: ``fn(*args)``, once.

    A learner gives a field of :class:`StepRecord` a ``Deferred`` when the value costs more
    than the round (SON's ``kappa(H_t)``, an eigendecomposition): ``args`` are copies of what
    the value depends on, taken at the round, so the field reads the same whenever, and
    whoever, reads it; a record nobody reads costs only the copies.

    >>> record = StepRecord(t=1, loss=0.0, condition_number=Deferred(max, 2.0, 3.0))
    >>> record.condition_number
    3.0
    """

    __slots__ = ("fn", "args")

    def __init__(self, fn: Callable[..., Any], *args):
        self.fn, self.args = fn, args

    def __float__(self) -> float:
        """The value, computed now (a column of numbers takes it so)."""
        return float(self.fn(*self.args))


class _ReadOnce:
    """The descriptor of a record field that may be given as a :class:`Deferred`: the
    first read computes it and keeps the result in its place. Default: None."""

    def __set_name__(self, owner, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, record, owner=None):
        if record is None:
            return None  # the field's default, as dataclasses read it
        value = record.__dict__[self.slot]
        if isinstance(value, Deferred):
            value = value.fn(*value.args)
            record.__dict__[self.slot] = value
        return value

    def __set__(self, record, value) -> None:  # only __init__ gets here: the record is frozen
        record.__dict__[self.slot] = value


@dataclass(frozen=True)
class StepRecord:
    """One round of an online learner: what it computed anyway (kind ``"step"``).

    ``learner.step(x, y)`` returns it and hooks receive it; ``learner.learn(x, y)`` is
    ``step(x, y).loss`` (docs/architecture.md). A field the learner does not have is None.

    t: the round (1-based); loss: the loss suffered before updating; prediction: the
    learner's prediction for ``x`` before updating (None where there is none: PCA);
    gradient_scale: the scalar q with gradient ``q x`` (the loss's derivative at the
    prediction; FM: ``phi'(z_t)``, gradient ``q a_hat a_hat^T``); shrink: the
    :class:`~explorer.sketch.ShrinkRecord` of this round's sketch shrink, else None;
    alpha: the regularizer (RFD-SON's alpha_t, ...); condition_number, rank: of the
    learner's curvature or sketch after the round (the sketched Newton learners give
    condition_number as a :class:`Deferred`, computed when first read); expected_loss: a randomized learner's loss in
    expectation over its own randomness (what regret bounds are about); part_ranks: the
    occupied rows of ``B+`` and ``B-`` for a learner on a Generalized FD sketch;
    curvature_weight: the sketched Newton learners' ``mu + eta_t``, the weight of this
    round's gradient in ``H`` (round t adds ``curvature_weight * gradient_scale**2 x x^T``).
    """

    kind: ClassVar[str] = "step"
    t: int
    loss: float
    prediction: float | None = None
    gradient_scale: float | None = None
    shrink: Any = None
    alpha: float | None = None
    condition_number: float | None = _ReadOnce()
    rank: int | None = None
    expected_loss: float | None = None
    part_ranks: tuple[int, int] | None = None
    curvature_weight: float | None = None


@dataclass(frozen=True)
class FixedShareEvent:
    """Fixed-share mixing (Yuan & Lamperski): v after the exponentiated update, w_hat after mixing."""

    kind: ClassVar[str] = "fixed_share"
    t: int
    v: np.ndarray
    w_hat: np.ndarray
    alpha: float


@dataclass(frozen=True)
class CapEvent:
    """Capping onto the capped simplex: the weights before and after, and how many were capped."""

    kind: ClassVar[str] = "cap"
    t: int
    before: np.ndarray
    after: np.ndarray
    n_capped: int


@dataclass(frozen=True)
class DecomposeEvent:
    """Mixture decomposition: corner probabilities, the corners, and the index sampled."""

    kind: ClassVar[str] = "decompose"
    t: int
    probs: np.ndarray
    corners: np.ndarray
    chosen: int


Hook = Callable[[Any], None]


class HookHandle:
    """Returned by :meth:`Observable.add_hook`; ``remove()`` detaches the hook (idempotent)."""

    def __init__(self, owner: "Observable", fn: Hook):
        self._owner = owner
        self._fn = fn

    def remove(self) -> None:
        self._owner._remove_hook(self._fn)


class Observable:
    """Base class of every algorithm: a list of hooks and the means to forward events.

    Subclasses emit with ``if self._hooks: self._emit(SomeEvent(...))`` so no event is
    built while nobody listens. An algorithm built on another one (a learner on its
    sketch) calls :meth:`_forward_events` so the inner events reach the outer hooks;
    the forwarding link is attached only while the outer object has hooks of its own.
    """

    def __init__(self) -> None:
        self._hooks: list[Hook] = []
        self._sources: list[tuple[Observable, Callable[[Any], Any]]] = []
        self._source_handles: list[HookHandle] = []

    def add_hook(self, fn: Hook) -> HookHandle:
        """Call ``fn(event)`` on every event from now on; returns a handle to remove it."""
        if not callable(fn):
            raise ValueError(f"hook must be callable, got {type(fn).__name__}")
        self._hooks.append(fn)
        if len(self._hooks) == 1:
            self._source_handles = [
                source.add_hook(self._make_forwarder(adapt)) for source, adapt in self._sources
            ]
        return HookHandle(self, fn)

    def _remove_hook(self, fn: Hook) -> None:
        if fn in self._hooks:
            self._hooks.remove(fn)
            if not self._hooks:
                for handle in self._source_handles:
                    handle.remove()
                self._source_handles = []

    def _emit(self, event: Any) -> None:
        for fn in list(self._hooks):
            fn(event)

    def _forward_events(self, source: "Observable", adapt: Callable[[Any], Any]) -> None:
        """Re-emit ``adapt(event)`` for every event of ``source`` (e.g. a learner's sketch)."""
        self._sources.append((source, adapt))
        if self._hooks:
            self._source_handles.append(source.add_hook(self._make_forwarder(adapt)))

    def _stop_forwarding(self, source: "Observable") -> None:
        """Stop re-emitting ``source``'s events (an inner object the algorithm replaced)."""
        if self._hooks:
            for handle in self._source_handles:
                handle.remove()
        self._sources = [(kept, adapt) for kept, adapt in self._sources if kept is not source]
        if self._hooks:
            self._source_handles = [kept.add_hook(self._make_forwarder(adapt))
                                    for kept, adapt in self._sources]

    def _make_forwarder(self, adapt: Callable[[Any], Any]) -> Hook:
        return lambda event: self._emit(adapt(event))


class Recorder:
    """A hook that keeps events and hands them back as numpy columns for plotting.

    ``Recorder(kinds=("shrink",), limit=None)``: keep only these kinds (all by default),
    and at most ``limit`` events per kind (oldest dropped first; a ring buffer for long
    dashboard runs). ``columns(kind)`` returns ``{field: array}``; array-valued fields
    (sigma, v, ...) become a 2-D array, padded with NaN when their lengths differ.
    """

    def __init__(self, kinds: tuple[str, ...] | None = None, limit: int | None = None):
        if limit is not None and (isinstance(limit, (bool, np.bool_))
                                  or not isinstance(limit, (int, np.integer)) or limit < 1):
            raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
        self.kinds = None if kinds is None else tuple(kinds)
        self.limit = limit
        self._events: dict[str, list[Any]] = {}

    def __call__(self, event: Any) -> None:
        if self.kinds is not None and event.kind not in self.kinds:
            return
        events = self._events.setdefault(event.kind, [])
        events.append(event)
        if self.limit is not None and len(events) > self.limit:
            del events[: len(events) - self.limit]

    def events(self, kind: str) -> list[Any]:
        """The kept events of one kind, oldest first."""
        return list(self._events.get(kind, []))

    def clear(self) -> None:
        self._events.clear()

    def replace(self, events) -> None:
        """Forget everything, then keep ``events`` (e.g. restored from a snapshot), in order."""
        self.clear()
        for event in events:
            self(event)

    def __len__(self) -> int:
        return sum(len(v) for v in self._events.values())

    def columns(self, kind: str) -> dict[str, np.ndarray]:
        """Events of ``kind`` as ``{field: numpy array}``; empty dict if none were kept."""
        events = self._events.get(kind, [])
        if not events:
            return {}
        names = [f.name for f in dataclasses.fields(events[0])]
        return {name: _stack([getattr(e, name) for e in events]) for name in names}


def _stack(values: list[Any]) -> np.ndarray:
    """Scalars to a 1-D array (None -> NaN); arrays to a 2-D array padded with NaN; records
    (a step's ``shrink``, tuples) to a 1-D object array, None where there is none."""
    if any(isinstance(v, tuple) for v in values):
        column = np.empty(len(values), dtype=object)
        column[:] = [None] * len(values)
        for i, v in enumerate(values):
            column[i] = v
        return column
    if any(isinstance(v, np.ndarray) and v.ndim > 0 for v in values):
        arrays = [np.atleast_1d(np.asarray(v, dtype=float)).ravel() for v in values]
        width = max(a.size for a in arrays)
        out = np.full((len(arrays), width), np.nan)
        for i, a in enumerate(arrays):
            out[i, : a.size] = a
        return out
    if any(isinstance(v, str) for v in values):
        return np.array(["" if v is None else v for v in values])
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        return np.array(values, dtype=np.int64)
    return np.array([np.nan if v is None else v for v in values], dtype=float)
