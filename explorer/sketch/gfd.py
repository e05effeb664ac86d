"""Generalized Frequent Directions (Luo et al., KDD 2018, Algorithm 2).

Two FD sketches, ``B+`` for the rows of positive weight and ``B-`` for the negative ones,
approximate an indefinite sum ``sum_t s_t g_t g_t^T`` by ``B+^T B+ - B-^T B-``
(docs/algorithms.md section 6).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._validation import as_reals, as_row, as_rows, check_float, check_mass
from ..hooks import Observable
from ..merging import Mergeable
from ..params import Tunable
from ..state import StateReader, all_or_nothing, state_part, stateful
from .fd import FrequentDirections, merge_into
from .shrink import ShrinkFailed, ShrinkRecord, ShrinkRule

__all__ = ["GeneralizedFrequentDirections"]


@stateful
class GeneralizedFrequentDirections(Observable, Tunable, Mergeable):
    r"""Generalized FD for indefinite sums (Luo et al., KDD 2018, Algorithm 2).

    Approximates ``G = sum_t s_t g_t g_t^T`` by ``B+^T B+ - B-^T B-``: a row with weight
    ``s > 0`` goes into the FD sketch ``positive`` as ``sqrt(s) g``, one with ``s < 0``
    into ``negative`` as ``sqrt(-s) g``. With ``H+``/``H-`` the matrices of those scaled
    rows, ``||G - (B+^T B+ - B-^T B-)||_2 <= Delta+ + Delta- <=
    (||H+ - H+_k||_F^2 + ||H- - H-_k||_F^2) / (m - k)``.
    Shrink events of the two parts are re-emitted with ``part`` "+" or "-". ``merge``
    merges the positive parts and the negative parts of two sketches (docs/merging.md
    section 4).

    >>> import numpy as np
    >>> sk = GeneralizedFrequentDirections(d=2, m=2)
    >>> sk.extend(np.eye(2), [2.0, -1.0])
    >>> sk.gram().tolist()
    [[2.0, 0.0], [0.0, -1.0]]
    """

    def __init__(self, d: int, m: int, *, fast: bool = False):
        super().__init__()
        self.positive = FrequentDirections(d, m, fast=fast)
        self.negative = FrequentDirections(d, m, fast=fast)
        self.d, self.m, self.fast = self.positive.d, self.positive.m, self.positive.fast
        self.n_seen = 0
        self._forward_events(self.positive, self._relabel("+"))
        self._forward_events(self.negative, self._relabel("-"))

    def _relabel(self, part: str):
        return lambda event: dataclasses.replace(event, t=self.n_seen, part=part)

    def __repr__(self) -> str:
        return (f"GeneralizedFrequentDirections(d={self.d}, m={self.m}, fast={self.fast}) "
                f"n_seen={self.n_seen} delta_total={self.delta_total:.4g}")

    def update(self, x, s: float) -> None:
        """Add ``s x x^T`` (``s`` a finite non-zero weight)."""
        self._insert(as_row(x, self.d)[None, :], np.array([_check_weight(s)]))

    def extend(self, X, s) -> None:
        """Add ``sum_i s_i x_i x_i^T`` in order; ``s`` a scalar or one weight per row."""
        X = as_rows(X, self.d)
        weights = as_reals(s, "s")
        if weights.ndim == 0:
            weights = np.full(X.shape[0], float(weights))
        if weights.shape != (X.shape[0],):
            raise ValueError(f"s must be a scalar or have one weight per row ({X.shape[0]}), "
                             f"got shape {weights.shape}")
        for weight in weights:
            _check_weight(weight)
        self._insert(X, weights)

    def insert(self, row: np.ndarray, positive: bool, *, columns: np.ndarray | None = None,
               rule: "ShrinkRule | None" = None) -> "ShrinkRecord | None":
        """Add a row the caller has already checked and scaled (``sqrt(|s|) g``) to the part
        of its weight's sign: the fast path of S-FTRL's round, with
        :meth:`FrequentDirections.insert`'s ``columns`` (a sparse row) and ``rule`` (how
        that part shrinks). Returns that part's :class:`~explorer.sketch.ShrinkRecord`, or None; all or
        nothing as the part's own ``insert``."""
        shrink = (self.positive if positive else self.negative).insert(row, columns=columns, rule=rule)
        self.n_seen += 1
        return shrink

    def _insert(self, X: np.ndarray, weights: np.ndarray) -> None:
        """All or nothing: both parts' totals are checked first, and a failed shrink in
        either part puts both back as they were before the call."""
        scaled = np.sqrt(np.abs(weights))[:, None] * X
        for part, rows in ((self.positive, np.flatnonzero(weights > 0)),
                           (self.negative, np.flatnonzero(weights < 0))):
            check_mass(part.frobenius_squared, scaled[rows], name="X", row_numbers=rows)
        if len(X) == 1:  # one row: its part's own extend is all or nothing
            self.n_seen += 1
            try:
                (self.positive if weights[0] > 0 else self.negative).extend(scaled)
            except BaseException:  # a failed shrink, an interrupt: the part undid its rows
                self.n_seen -= 1
                raise
            return
        with all_or_nothing(self):
            for row, weight in zip(scaled, weights):
                self.n_seen += 1
                (self.positive if weight > 0 else self.negative).extend(row[None, :])

    @property
    def delta_total(self) -> float:
        """Sum of the shrink amounts of both parts."""
        return self.positive.delta_total + self.negative.delta_total

    def gram(self) -> np.ndarray:
        """``B+^T B+ - B-^T B-`` (d x d, for inspection)."""
        return self.positive.gram() - self.negative.gram()

    def _merged(self, other: "GeneralizedFrequentDirections"
                ) -> tuple["GeneralizedFrequentDirections", float, int, tuple[int, int]]:
        """What :meth:`~explorer.merging.Mergeable.merge` needs: the positive parts merged,
        and the negative parts (``B+`` summarizes the positive rows of both streams)."""
        merged = type(self)(self.d, self.m, fast=self.fast)
        delta, n_shrinks = 0.0, 0
        for mine, into, theirs in ((self.positive, merged.positive, other.positive),
                                   (self.negative, merged.negative, other.negative)):
            part_delta, part_shrinks = merge_into(into, mine, theirs)
            delta, n_shrinks = delta + part_delta, n_shrinks + part_shrinks
        merged.n_seen = self.n_seen + other.n_seen
        ranks = (self.positive.rank + self.negative.rank, other.positive.rank + other.negative.rank)
        return merged, delta, n_shrinks, ranks

    def state_dict(self) -> dict:
        parts = {f"{name}.{key}": value
                 for name, sketch in (("positive", self.positive), ("negative", self.negative))
                 for key, value in sketch.state_dict().items()}
        return {"kind": type(self).__name__, "d": self.d, "m": self.m, "fast": self.fast,
                "n_seen": self.n_seen, **parts}

    @classmethod
    def from_state_dict(cls, state: dict) -> "GeneralizedFrequentDirections":
        reader = StateReader(state, cls)
        d, m, fast = reader.count("d", minimum=1), reader.count("m", minimum=2), reader.flag("fast")
        for part in ("positive", "negative"):  # before the parts' buffers are allocated
            reader.check_shape(f"{part}.buffer", (2 * m if fast else m, d), f"d = {d}, m = {m}, fast = {fast}")
        sk = cls(d, m, fast=fast)
        sk.load_state_dict(state)
        return sk

    def load_state_dict(self, state: dict) -> None:
        """In place (same d, m, fast), both parts checked before either is stored."""
        reader = StateReader(state, type(self))
        for key in ("d", "m", "fast"):
            reader.same(key, getattr(self, key))
        parts = [state_part(state, f"{name}.") for name in ("positive", "negative")]
        checks = [FrequentDirections(self.d, self.m, fast=self.fast) for _ in parts]
        for check, part in zip(checks, parts):
            check.load_state_dict(part)  # refuses a bad part before anything is stored
        n_seen = reader.count("n_seen", minimum=checks[0].n_seen + checks[1].n_seen)
        with all_or_nothing(self):  # both parts as one: interrupted, the sketch is put back
            self.positive.load_state_dict(parts[0])
            self.negative.load_state_dict(parts[1])
            self.n_seen = n_seen


def _check_weight(s) -> float:
    s = check_float("s", s)
    if s == 0.0:
        raise ValueError("s must be a non-zero weight (positive rows go to B+, negative to B-), got 0")
    return s
