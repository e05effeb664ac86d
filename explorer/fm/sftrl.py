"""S-FTRL: sketched follow-the-regularized-leader for the online FM (:class:`SketchedFTRL`).

Luo et al. (KDD 2018), Algorithm 4, and Algorithm 5 with GFD's doubling space
(docs/algorithms.md section 6.4). FTRL's ``Theta_{t+1} = -eta sum_s q_s a_hat_s a_hat_s^T``
is an indefinite sum of rank-one terms; its sign split goes into Generalized FD's two
Frequent Directions sketches, ``B+`` (rounds with ``q_t > 0``) and ``B-`` (``q_t < 0``),
so ``Theta_{t+1} = -eta (B+^T B+ - B-^T B-)`` and ``z = -eta (||B+ a_hat||^2 - ||B- a_hat||^2)``.
The round is :meth:`SketchedFTRL._z` and :meth:`SketchedFTRL._update`; the rest of it
(loss, ``q``, all or nothing) is :class:`~explorer.fm.convex.ConvexFM`'s.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..hooks import StepRecord
from ..sketch import GeneralizedFrequentDirections, ShrinkFailed
from ..learner import RoundRefused
from ..state import StateReader, all_or_nothing, state_part, stateful
from ._shrink import PartMemo
from .convex import ConvexFM

__all__ = ["SketchedFTRL"]


@stateful
class SketchedFTRL(ConvexFM):
    r"""Sketched FTRL for the online FM (Luo et al., KDD 2018, Algorithm 4; fast: Algorithm 5).

    FTRL with ``R(Theta) = ||Theta||_F^2 / 2`` plays ``Theta_{t+1} = -eta sum_s q_s a_hat_s
    a_hat_s^T``. S-FTRL keeps that indefinite sum in a
    :class:`~explorer.sketch.GeneralizedFrequentDirections` on ``(a_hat_t, q_t)``:
    rows with ``q_t > 0`` enter ``B+`` as ``sqrt(q_t) a_hat_t``, rows with ``q_t < 0``
    enter ``B-`` as ``sqrt(-q_t) a_hat_t`` (``q_t = 0`` adds nothing), so

    .. math:: \Theta_{t+1} = -\eta\,(B_+^T B_+ - B_-^T B_-),\qquad
              z = -\eta\,(\|B_+ \hat a\|^2 - \|B_- \hat a\|^2).

    ``Theta`` is never formed: memory O(md), and a prediction costs O(m nnz(a)) — O(m)
    for a one-hot (user, item) row. Only a shrink touches all d+1 columns: with
    ``fast=True`` (Algorithm 5, a 2m-row buffer per part) once every m+1 rows of a part,
    O(m^2 d) each, so O(md) amortized per round; ``fast=False`` (Algorithm 4) shrinks on
    every row once a part is full. Each part keeps at most m-1 rows after a shrink, so
    with ``m >= d + 2`` nothing is ever lost and S-FTRL equals :class:`~explorer.fm.FTRLFM`.
    Regret (Theorem 4): FTRL's bound plus
    ``max_t ||Theta_t - Theta_*||_* (||M+ - M+_k||_F^2 + ||M- - M-_k||_F^2) / (m - k)``.

    The shrink of a wide buffer (more columns than rows, the usual case) takes the
    eigen-decomposition of the small Gram matrix ``B B^T`` (as the authors' code does)
    instead of LAPACK's SVD of ``B``. Eigenvalues below ``(d+1) eps lambda_1`` count as
    zero. Narrow buffers use the SVD, exactly as :class:`~explorer.sketch.FrequentDirections`
    does.

    Hooks: "shrink" (forwarded from the sketch, ``part`` "+" or "-", ``t`` the round)
    and "step" (the :class:`~explorer.hooks.StepRecord` :meth:`step` returns: loss,
    prediction, ``gradient_scale`` q, the round's ``shrink``, ``rank`` and ``part_ranks``,
    the occupied rows of ``B+`` and ``B-``).

    Parameters
    ----------
    d : number of features (the sketch holds d+1 columns: ``a_hat = [a; 1]``).
    m : sketch size; each part keeps at most m-1 rows.
    eta : step size; default 0.02 for "squared", 0.25 for "logistic" (the authors'). Hot:
        ``with_params(eta=...)`` rescales the played ``Theta = -eta (B+^T B+ - B-^T B-)``
        at once, since the sketch holds the gradient sum itself.
    loss : "squared" (``(z - b)^2 / 2``) or "logistic" (labels -1/+1).
    fast : the doubling-space Algorithm 5 (default) or the exact Algorithm 4.

    Three ratings, all under-predicted (q < 0: every row goes to ``B-``); with m = 2 the
    exact variant keeps one row of ``B-``, so the prediction differs from FTRL's 4.064:

    >>> fm = SketchedFTRL(d=4, m=2, eta=0.1, fast=False)
    >>> for user, item, rating in [(0, 2, 4.0), (1, 3, 2.0), (0, 3, 3.0)]:
    ...     _ = fm.learn(([user, item], [1.0, 1.0]), rating)
    >>> round(fm.predict(([0, 2], [1.0, 1.0])), 4), fm.sketch.positive.rank, fm.sketch.negative.rank
    (2.7229, 0, 1)
    """

    def __init__(self, d: int, *, m: int = 10, eta: float | None = None, loss: str = "squared",
                 fast: bool = True):
        super().__init__(d, eta=eta, loss=loss)
        try:
            self.sketch = GeneralizedFrequentDirections(self.d + 1, m, fast=fast)
        except MemoryError:
            raise ValueError(f"SketchedFTRL(d={d}, m={m}) needs two buffers of {2 * m} x {d + 1} "
                             "floats, more memory than there is; choose a smaller m") from None
        self.m, self.fast = self.sketch.m, self.sketch.fast
        self._memo = (PartMemo(), PartMemo())  # for B+ and B-
        # a shrink happens inside round t + 1 (t counts the rounds completed)
        self._forward_events(self.sketch, lambda event: dataclasses.replace(event, t=self.t + 1))

    def __repr__(self) -> str:
        return (f"SketchedFTRL(d={self.d}, m={self.m}, eta={self.eta:g}, loss={self.loss!r}, "
                f"fast={self.fast}) t={self.t}")

    def _z_bound(self, val, squared_norm: float) -> float:
        # |(B a)_i| <= ||B_i|| ||a|| and ||B a||^2 <= ||B||_F^2 ||a||^2 <= ||A||_F^2 ||a||^2
        sketch = self.sketch
        return (sketch.positive.frobenius_squared + sketch.negative.frobenius_squared) * squared_norm

    def _z(self, idx, val) -> float:
        """``z = -eta (||B+ a_hat||^2 - ||B- a_hat||^2)``: O(m nnz(a_hat)), Theta never formed."""
        plus, minus = self.sketch.positive, self.sketch.negative
        if idx is None:
            p = plus.rows @ val
            n = minus.rows @ val
        else:
            p = plus.rows.take(idx, axis=1) @ val
            n = minus.rows.take(idx, axis=1) @ val
        return -self.eta * (float(p @ p) - float(n @ n))

    def _update(self, idx, val, q: float, squared_norm: float):
        """The sign split of the gradient ``q a_hat a_hat^T``: ``sqrt(q) a_hat`` into ``B+``
        if ``q > 0``, ``sqrt(-q) a_hat`` into ``B-`` if ``q < 0`` (GFD's insert)."""
        if q == 0.0:
            return None  # a zero gradient adds nothing (and GFD takes non-zero weights only)
        if q > 0:
            part, memo = self.sketch.positive, self._memo[0]
        else:
            part, memo = self.sketch.negative, self._memo[1]
        # sqrt(|q|) > 0 and the bias entry is 1, so the row is never all zero; it is finite
        # (|q| <= 2e150, ||a_hat||^2 <= 1e300), and insert is all or nothing.
        row = math.sqrt(abs(q)) * val
        try:
            shrink = self.sketch.insert(row, q > 0, columns=idx, rule=memo.shrink_rule(idx, part.m))
        except ShrinkFailed as error:
            raise RoundRefused(f"the sketch's shrink failed ({error})") from None
        except ValueError:
            raise RoundRefused(
                f"the gradient row sqrt(|q|) a_hat (q = {q:.3g}) would take the sketch's total "
                f"squared norm past Frequent Directions' limit: the learner diverged; lower eta "
                f"(now {self.eta:g}) or rescale the data") from None
        memo.after_insert(idx, shrink)
        return shrink

    def _record(self, z: float, loss: float, q: float, shrink) -> StepRecord:
        plus, minus = self.sketch.positive.rank, self.sketch.negative.rank
        return StepRecord(t=self.t, loss=loss, prediction=z, gradient_scale=q, shrink=shrink,
                          rank=plus + minus, part_ranks=(plus, minus))

    def theta(self) -> np.ndarray:
        """``-eta (B+^T B+ - B-^T B-)``, (d+1) x (d+1): for inspection and tests only."""
        return -self.eta * self.sketch.gram()

    def state_dict(self) -> dict:
        """Plain arrays and scalars (the sketch's under ``"sketch."``)."""
        sketch = {f"sketch.{key}": value for key, value in self.sketch.state_dict().items()}
        memos = {f"memo.{part}.{key}": value for part, memo in zip("+-", self._memo)
                 for key, value in memo.state_dict().items()}
        return {**self._base_state(), "m": self.m, "fast": self.fast, **sketch, **memos}

    @classmethod
    def from_state_dict(cls, state: dict) -> "SketchedFTRL":
        """A learner that continues exactly where the saved one stopped (checked:
        :meth:`load_state_dict`)."""
        reader = StateReader(state, cls)
        d, m, fast = reader.count("d", minimum=1), reader.count("m", minimum=2), reader.flag("fast")
        for part in ("positive", "negative"):  # before allocating: the buffers must fit d and m
            key = f"sketch.{part}.buffer"
            reader.check_shape(key, (2 * m if fast else m, d + 1), f"d = {d}, m = {m}, fast = {fast}")
        fm = cls(d, m=m, fast=fast, **cls._read_settings(reader))
        fm.load_state_dict(state)
        return fm

    def load_state_dict(self, state: dict) -> None:
        """Become the learner ``state`` describes, in place (same d, m, fast, eta, loss; the
        sketch keeps its identity and hooks). Everything is checked before anything is
        stored: the sketch by :meth:`GeneralizedFrequentDirections.load_state_dict
        <explorer.sketch.GeneralizedFrequentDirections.load_state_dict>` (shapes, NaN,
        counters, mass), the memos by :meth:`PartMemo.read <explorer.fm._shrink.PartMemo.read>`
        against the rows they describe, and ``t`` >= the rows the sketch has seen."""
        reader = StateReader(state, type(self))
        self._check_settings(reader)
        for key in ("m", "fast"):
            reader.same(key, getattr(self, key))
        sketch_state = state_part(state, "sketch.")
        checked = GeneralizedFrequentDirections(self.d + 1, self.m, fast=self.fast)
        checked.load_state_dict(sketch_state)  # refuses a bad sketch before anything is stored
        memos = tuple(PartMemo.read(StateReader(state_part(state, f"memo.{sign}."), type(self),
                                                prefix=f"memo.{sign}."), part.rows)
                      for sign, part in zip("+-", (checked.positive, checked.negative)))
        t = reader.count("t", minimum=checked.n_seen)  # a round with q = 0 adds no row
        with all_or_nothing(self):  # the stores as one: interrupted, the learner is put back as it was
            self.sketch.load_state_dict(sketch_state)
            self._memo = memos
            self.t = t
