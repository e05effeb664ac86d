"""Online learners for the compact convex FM: S-FTRL on Generalized FD, full FTRL and OGD.

All three play the same game (Luo et al., KDD 2018, sections 2.3-3.2; docs/algorithms.md
section 6): at round t the learner holds ``Theta_t``, receives ``a_t``, predicts
``z_t = a_hat_t^T Theta_t a_hat_t``, suffers ``phi(z_t)`` and gets the rank-one gradient
``q_t a_hat_t a_hat_t^T`` with ``q_t = phi'(z_t)``. They differ only in what they keep:

- :class:`FTRLFM` (Algorithm 1 with ``R = ||Theta||_F^2 / 2``, no constraint):
  ``Theta_{t+1} = -eta sum_{s<=t} q_s a_hat_s a_hat_s^T``, a full (d+1) x (d+1) matrix.
- :class:`OGDFM`: ``Theta_{t+1} = Theta_t - eta_t q_t a_hat_t a_hat_t^T`` with
  ``eta_t = eta / sqrt(t)``. (With a constant step it would *be* FTRL here: without a
  constraint the two coincide; the decaying step is what makes it a different baseline.)
- :class:`SketchedFTRL` (Algorithm 4 / 5): the same sum kept by Generalized FD,
  ``Theta_{t+1} = -eta (B+^T B+ - B-^T B-)``, never formed.

Losses: ``"squared"`` is the ratings loss ``(z - b)^2 / 2`` of docs/algorithms.md section 6,
derivative ``z - b``. :mod:`explorer.losses` defines ``"squared"`` as ``(z - y)^2``
(derivative ``2(z - y)``, the RFD-SON convention), so these learners use exactly half
of it. ``"logistic"`` is ``log(1 + exp(-b z))`` for ``b`` in {-1, +1}, as in losses.py.
The authors' MATLAB code (github.com/bmdy/SFTRL) uses ``2(z - b)`` with ``eta = 0.01``;
our default ``eta = 0.02`` with ``z - b`` is the same update.

All or nothing. Inputs are validated before anything changes (rows real and
finite with ``||a_hat||^2 <= 1e300``, labels finite with ``|b| <= 1e150``, ±1 for
"logistic": :mod:`.compact`). A round whose numbers leave the finite range -- a prediction
``|z| > 1e150`` (:data:`MAX_PREDICTION`), an entry of ``Theta`` past 1e300
(:data:`MAX_THETA_ENTRY`), a sketch row past Frequent Directions' mass limit, or a failed
shrink -- raises :class:`~explorer.errors.Diverged` (a ``ValueError``) naming the row, with
the learner as it was before the call: ``learn`` changes nothing before its round is known
to be finite, and :func:`progressive` undoes the rounds it had already played.

A round returns its record: ``step(x, y)`` is the :class:`~explorer.hooks.StepRecord` of
the round (``prediction`` ``z_t``, ``gradient_scale`` ``q_t``, S-FTRL's ``shrink``, ``rank``
and ``part_ranks``), ``learn(x, y)`` its loss, and hooks receive the same record.
:func:`progressive` runs a whole stream and returns its per-round numbers as a
:class:`~explorer.run.History` with the same column names. ``eta`` is the one hot
hyper-parameter (:class:`~explorer.params.Tunable`): ``with_params(eta=...)`` continues the
stream with another step (docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from typing import Iterator

import numpy as np
import scipy.linalg
import scipy.sparse

from .._validation import check_float, check_int
from ..errors import Diverged
from ..hooks import Observable, StepRecord
from ..losses import check_label, get_loss
from ..params import Tunable
from ..run import History
from ..sketch import GeneralizedFrequentDirections, ShrinkFailed
from ..state import StateReader, all_or_nothing, copy_array, state_part, stateful
from ._shrink import PartMemo
from .compact import MAX_LABEL, as_fm_row, as_fm_rows, check_labels

__all__ = ["SketchedFTRL", "FTRLFM", "OGDFM", "progressive", "LOSS_NAMES", "MAX_PREDICTION",
           "MAX_THETA_ENTRY"]

_ddot = scipy.linalg.blas.ddot  # ||a_hat||^2 in a round: BLAS directly, 4x less overhead than numpy

LOSS_NAMES = ("squared", "logistic")
"""The two losses of the paper's experiments: ratings and binary labels."""

FTRL_DEFAULT_ETA = {"squared": 0.02, "logistic": 0.25}
"""FTRL / S-FTRL step: the authors' settings (test.m: 0.01 on ``2(z-b)``; test_bc.m: 0.25)."""

OGD_DEFAULT_ETA = {"squared": 0.5, "logistic": 4.0}
"""OGD's ``eta`` in ``eta / sqrt(t)``: hand-picked starting values (the paper gives none).
Tuned on a validation split in ``notebooks/sftrl_paper.ipynb``, OGD's best step on
MovieLens-100K is 2, not 0.5; the 4 for Spambase has not been tuned."""

MAX_PREDICTION = 1e150
"""A prediction ``|z|`` above this means the learner diverged: with labels within
:data:`~explorer.fm.compact.MAX_LABEL` the loss and its derivative stay finite below it."""

MAX_THETA_ENTRY = 1e300
"""FTRL's and OGD's ``Theta`` keep every entry within this (a round that would push one past
it diverged), so ``Theta`` is always finite. S-FTRL's sketch has Frequent Directions' own
limit on ``||B+||_F^2`` and ``||B-||_F^2`` (:data:`~explorer.sketch.MAX_SQUARED_MASS`)."""


class RoundFailed(Exception):
    """Raised inside a round, before it stored anything; ``learn``, ``step`` and
    ``progressive`` turn it into :class:`~explorer.errors.Diverged` with the row's number."""


def _check_loss(loss) -> str:
    if loss not in LOSS_NAMES:
        raise ValueError(f"loss must be one of {', '.join(map(repr, LOSS_NAMES))}, got {loss!r}")
    return loss


class ConvexFM(Observable, Tunable):
    """Shared protocol: validation, the loss with its factor, predict / learn / step /
    progressive, events, ``with_params(eta=...)``, and the all-or-nothing guarantees
    (``RoundFailed`` inside a round, ``_transaction`` around a call of :meth:`progressive`)."""

    HOT = ("eta",)
    _default_eta = FTRL_DEFAULT_ETA

    def __init__(self, d: int, *, eta: float | None, loss: str):
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        self.loss = _check_loss(loss)
        self._eta = check_float("eta", self._default_eta[self.loss] if eta is None else eta,
                                minimum=0.0, strict_minimum=True)
        self._loss = get_loss(self.loss)
        # losses.py's squared loss is (z - y)^2; the FM ratings loss is half of it.
        self._factor = 0.5 if self.loss == "squared" else 1.0
        self.t = 0

    @property
    def eta(self) -> float:
        """The step size, a finite number > 0; fixed for this object:
        ``with_params(eta=...)`` continues the stream with another one."""
        return self._eta

    # -- the protocol -------------------------------------------------------------------
    def predict(self, x) -> float:
        """``z = a_hat^T Theta a_hat`` for a dense or sparse row (the log-odds for "logistic")."""
        idx, val = self._augment(*as_fm_row(x, self.d))
        return self._prediction(idx, val, _ddot(val, val))

    def learn(self, x, y) -> float:
        """Suffer the loss of the current ``Theta`` on ``(x, y)``, then update; return that loss.

        ``x``: a dense vector of length d, an ``(indices, values)`` pair or a scipy.sparse
        row (see :func:`explorer.fm.as_fm_row`); ``y``: a finite number (-1 or +1 for the
        logistic loss). A bad input raises ``ValueError`` and changes nothing; so does a
        round that diverges (:class:`~explorer.errors.Diverged`: lower eta; numpy may first
        warn about the overflow, which :meth:`progressive` silences for its whole loop).
        """
        return self._checked_round(x, y)[1]

    def step(self, x, y) -> StepRecord:
        """The round :meth:`learn` plays, returned as its :class:`~explorer.hooks.StepRecord`
        (``step(x, y).loss == learn(x, y)``, same state after): ``prediction`` ``z_t``,
        ``gradient_scale`` ``q_t = phi'(z_t)`` (the gradient is ``q_t a_hat a_hat^T``), and
        for S-FTRL the ``shrink`` this round caused (a
        :class:`~explorer.sketch.ShrinkRecord`, else None), ``rank`` and ``part_ranks``
        (occupied rows of ``B+`` and ``B-``). Hooks receive this same record."""
        z, loss, q, shrink, record = self._checked_round(x, y)
        return record if record is not None else self._record(z, loss, q, shrink)

    def progressive(self, X, y) -> History:
        """Play the stream ``(X, y)``: predict each row, then learn it; the per-round
        numbers as a :class:`~explorer.run.History` with one row per round, columns named
        as :class:`~explorer.hooks.StepRecord`'s fields: ``t`` (this learner's round),
        ``prediction`` ``z_t``, ``loss``, ``gradient_scale`` ``q_t``, and ``seconds``, the
        wall time of the learning loop from its start to the end of that round (so
        ``["seconds"][-1]`` is the whole loop's).

        ``X``: a dense array (n x d) or any scipy.sparse matrix (n x d; converted to CSR
        once, never densified); ``y``: n labels. All or nothing: everything is validated
        before the first round (a bad row or label raises ``ValueError`` naming it), and if
        a round then diverges (:class:`~explorer.errors.Diverged`, naming the row: lower
        eta) the learner is put back as it was before the call (S-FTRL: one snapshot of its
        O(md) state per call; FTRL and OGD: the entries of ``Theta`` each round overwrote).
        The rows are fed without re-validation and no record is built unless a hook
        listens (the fast path of the notebooks, the dashboard and the benchmarks).
        """
        kind, X = as_fm_rows(X, self.d)
        n = X.shape[0]
        labels = check_labels(y, n, self.loss)
        predictions, losses, scales, clock = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        play = self._round
        if kind == "csr":
            # a_hat for every row at once: the bias column d appended to each row's entries.
            X = scipy.sparse.hstack([X, scipy.sparse.csr_array(np.ones((n, 1)))], format="csr")
            indptr, indices, data = X.indptr.tolist(), X.indices.astype(np.intp), X.data
        else:
            X = np.hstack([X, np.ones((n, 1))])
        t0, t = self.t, 0
        try:
            # A non-finite number is refused by the round, not warned about.
            with np.errstate(all="ignore"), self._transaction():
                now = time.perf_counter
                start = now()
                if kind == "csr":
                    for t in range(n):
                        lo, hi = indptr[t], indptr[t + 1]
                        predictions[t], losses[t], scales[t], _, _ = play(
                            indices[lo:hi], data[lo:hi], labels[t], True)
                        clock[t] = now()
                else:
                    for t in range(n):
                        predictions[t], losses[t], scales[t], _, _ = play(None, X[t], labels[t], True)
                        clock[t] = now()
        except RoundFailed as failure:
            raise self._diverged(failure, row=t) from None
        return History({"t": np.arange(t0 + 1, t0 + n + 1), "prediction": predictions, "loss": losses,
                        "gradient_scale": scales, "seconds": clock - start})

    def _checked_round(self, x, y) -> tuple:
        """One round on a row and label checked here: ``_round``'s tuple, or ``Diverged``."""
        idx, val = as_fm_row(x, self.d)
        y = check_label(y, self.loss, bound=MAX_LABEL)
        try:
            return self._round(*self._augment(idx, val), y, quiet=False)
        except (RoundFailed, FloatingPointError) as failure:
            raise self._diverged(failure, row=0) from None

    def _diverged(self, failure: Exception, row: int) -> Diverged:
        """The error for a round that failed at ``row`` of a call (the state is as before it):
        ``failure`` is a ``RoundFailed``, or numpy's ``FloatingPointError`` under
        ``np.seterr(all="raise")``, which a round raises only before it stores anything."""
        t = self.t + row + 1
        return Diverged(f"{type(self).__name__}: row {row} of this call (round {t}): {failure}; "
                        "nothing was updated", row=row, t=t)

    def _augment(self, idx, val):
        """``a_hat = [a; 1]`` as ``(indices, values)`` (``indices`` None for a dense row)."""
        n = val.shape[0]
        val_hat = np.empty(n + 1)
        val_hat[:n] = val
        val_hat[n] = 1.0
        if idx is None:
            return None, val_hat
        idx_hat = np.empty(n + 1, dtype=np.intp)
        idx_hat[:n] = idx
        idx_hat[n] = self.d
        return idx_hat, val_hat

    def _round(self, idx, val, y: float, quiet: bool) -> tuple:
        """One round on a validated ``a_hat`` (bias entry included); returns what it computed,
        ``(z, loss, q, shrink, record)``: ``record`` is the :class:`StepRecord` sent to
        hooks, built only when some hook listens (else None: :meth:`step` builds it).
        ``quiet``: numpy's warnings are silenced already (:meth:`progressive`'s loop).

        All or nothing: raises ``RoundFailed`` having stored nothing. ``|z| <= 1e150``
        and ``|y| <= 1e150`` keep the loss and ``q`` finite; ``_update`` checks its own
        numbers before it stores them, and the round is counted once it has.
        """
        squared_norm = _ddot(val, val)  # ||a_hat||^2: finite, at most 1e300 (checked input)
        z = self._z(idx, val) if quiet else self._prediction(idx, val, squared_norm)
        if not abs(z) <= MAX_PREDICTION:  # also NaN
            raise RoundFailed(f"the prediction z = {z:.3g} is not within +-{MAX_PREDICTION:.0e}: "
                               f"the learner diverged; lower eta (now {self.eta:g})")
        loss = self._factor * float(self._loss.value(z, y))
        q = self._factor * float(self._loss.derivative(z, y))
        shrink = self._update(idx, val, q, squared_norm)
        self.t += 1
        record = None
        if self._hooks:
            record = self._record(z, loss, q, shrink)
            self._emit(record)
        return z, loss, q, shrink, record

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """Around a call of :meth:`progressive`: if it raises, the learner is put back as it
        was (:func:`~explorer.state.all_or_nothing`: one snapshot of the state per call)."""
        with all_or_nothing(self):
            yield

    def _record(self, z: float, loss: float, q: float, shrink) -> StepRecord:
        """The record of the round just played (``t`` counts it already)."""
        return StepRecord(t=self.t, loss=loss, prediction=z, gradient_scale=q, shrink=shrink)

    def _prediction(self, idx, val, squared_norm: float) -> float:
        """``z = a_hat^T Theta a_hat``, without numpy's overflow warning: computed as is when
        ``_z_bound`` shows that no number on the way can overflow (every ordinary round),
        else with the warning silenced (the caller refuses a non-finite z)."""
        if self._z_bound(val, squared_norm) <= 1e300:  # far below the largest float, 1.8e308
            return self._z(idx, val)
        with np.errstate(over="ignore", invalid="ignore"):
            return self._z(idx, val)

    def _z_bound(self, val, squared_norm: float) -> float:
        """An upper bound on every number the computation of ``_z`` passes through."""
        raise NotImplementedError

    def _z(self, idx, val) -> float:
        raise NotImplementedError

    def _update(self, idx, val, q: float, squared_norm: float):
        """Add round ``t + 1``'s gradient ``q a_hat a_hat^T`` (``squared_norm`` =
        ``||a_hat||^2``) and return the sketch's :class:`~explorer.sketch.ShrinkRecord` if
        it shrank, else None; raise ``RoundFailed`` (having stored nothing) if its numbers
        would leave the finite range."""
        raise NotImplementedError

    def theta(self) -> np.ndarray:
        """The current ``Theta`` as a (d+1) x (d+1) array (O(d^2) memory: for inspection)."""
        raise NotImplementedError

    def _base_state(self) -> dict:
        return {"kind": type(self).__name__, "d": self.d, "eta": self.eta, "loss": self.loss,
                "t": self.t}

    @staticmethod
    def _read_settings(reader: StateReader) -> dict:
        """The constructor's keyword arguments eta and loss, as a state stores them, checked."""
        return {"eta": reader.number("eta", minimum=0.0, strict_minimum=True),
                "loss": reader.text("loss", LOSS_NAMES)}

    def _check_settings(self, reader: StateReader) -> None:
        """An in-place load keeps the settings: the state's must be this learner's own."""
        for key in ("d", "eta", "loss"):
            reader.same(key, getattr(self, key))


# -- S-FTRL --------------------------------------------------------------------------------

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
    with ``m >= d + 2`` nothing is ever lost and S-FTRL equals :class:`FTRLFM`.
    Regret (Theorem 4): FTRL's bound plus
    ``max_t ||Theta_t - Theta_*||_* (||M+ - M+_k||_F^2 + ||M- - M-_k||_F^2) / (m - k)``.

    The shrink of a wide buffer (more columns than rows, the usual case) takes the
    eigen-decomposition of the small Gram matrix ``B B^T`` (as the authors' code does)
    instead of LAPACK's SVD of ``B``: 10-20x faster at d = 2625. Eigenvalues below
    ``(d+1) eps lambda_1`` count as zero. Narrow buffers use the SVD, exactly as
    :class:`~explorer.sketch.FrequentDirections` does.

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
        plus, minus = self.sketch.positive, self.sketch.negative
        if idx is None:
            p = plus.rows @ val
            n = minus.rows @ val
        else:
            p = plus.rows.take(idx, axis=1) @ val
            n = minus.rows.take(idx, axis=1) @ val
        return -self.eta * (float(p @ p) - float(n @ n))

    def _update(self, idx, val, q: float, squared_norm: float):
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
            raise RoundFailed(f"the sketch's shrink failed ({error})") from None
        except ValueError:
            raise RoundFailed(
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
        self.sketch.load_state_dict(sketch_state)
        self._memo = memos
        self.t = t


# -- full-matrix baselines -------------------------------------------------------------------

class _FullMatrixFM(ConvexFM):
    """``Theta`` stored as a dense (d+1) x (d+1) array; ``Theta -= step q a_hat a_hat^T``.

    A sparse row costs O(nnz^2) (only the entries it touches), a dense row O(d^2) (one
    BLAS rank-one update, in place). Memory is always O(d^2): 55 MB at d = 2625,
    800 MB at d = 10,000, 54 GB at MovieLens-10M's d = 82,248.

    Finite by construction: ``_bound`` is an upper bound on ``max |Theta_ij|``, grown by
    ``|step q| ||a_hat||^2`` each round (no entry of the update is larger); only when it
    would pass :data:`MAX_THETA_ENTRY` is the true maximum taken (O(d^2)), and a round
    that would still pass it is refused before anything is stored.
    """

    def __init__(self, d: int, *, eta: float | None, loss: str):
        super().__init__(d, eta=eta, loss=loss)
        try:
            self._theta = np.zeros((self.d + 1, self.d + 1))
        except MemoryError:
            raise ValueError(f"{type(self).__name__}(d={d}) needs a ({d} + 1)^2 matrix of floats, "
                             "more memory than there is; SketchedFTRL needs O(m d)") from None
        self._ger = scipy.linalg.get_blas_funcs("ger", (self._theta,))
        self._bound = 0.0
        self._undo: list | None = None  # set by _transaction: what each round overwrote

    def __repr__(self) -> str:
        return f"{type(self).__name__}(d={self.d}, eta={self.eta:g}, loss={self.loss!r}) t={self.t}"

    def _step_size(self) -> float:
        raise NotImplementedError

    def _z_bound(self, val, squared_norm: float) -> float:
        # |sum_ij Theta_ij a_i a_j| <= max|Theta_ij| (sum_i |a_i|)^2 <= _bound n ||a||^2
        return self._bound * val.size * squared_norm

    def _z(self, idx, val) -> float:
        if idx is None:
            return float(val @ (self._theta @ val))
        return float(val @ self._theta[np.ix_(idx, idx)] @ val)

    def _update(self, idx, val, q: float, squared_norm: float) -> None:
        if q == 0.0:
            return None
        scale = -self._step_size() * q
        growth = abs(scale) * squared_norm  # >= every |scale a_i a_j|
        bound = self._bound + growth
        if not bound <= MAX_THETA_ENTRY:
            bound = _largest_magnitude(self._theta) + growth
            if not bound <= MAX_THETA_ENTRY:
                raise RoundFailed(f"an entry of Theta would pass {MAX_THETA_ENTRY:.0e} (step * q * "
                                   f"||a_hat||^2 = {growth:.3g}): the learner diverged; lower eta "
                                   f"(now {self.eta:g}) or rescale the data")
        if idx is None:
            if self._undo is not None:  # one copy of Theta, which costs what this round costs
                self._undo.append((None, self._theta.copy()))
                self._undo = None
            # Theta is C-ordered and symmetric: its transpose is a Fortran view of it.
            self._ger(scale, val, val, a=self._theta.T, overwrite_a=True)
        else:
            entries = np.ix_(idx, idx)
            block = self._theta[entries]
            if self._undo is not None:
                self._undo.append((entries, block))
            self._theta[entries] = block + scale * np.outer(val, val)
        self._bound = bound
        return None  # no sketch, no shrink

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """All or nothing without copying ``Theta`` per call (55 MB at d = 2625, more than a
        call of a few sparse rows costs): each sparse round keeps the O(nnz^2) entries it
        overwrites, the first dense round of the call a copy of ``Theta``; a failure puts
        them back, last first."""
        undo, t, bound = [], self.t, self._bound
        self._undo = undo
        try:
            yield
        except BaseException:
            for entries, block in reversed(undo):
                if entries is None:
                    self._theta[...] = block
                else:
                    self._theta[entries] = block
            self.t, self._bound = t, bound
            raise
        finally:
            self._undo = None

    def theta(self) -> np.ndarray:
        """A copy of ``Theta`` ((d+1) x (d+1))."""
        return self._theta.copy()

    def state_dict(self) -> dict:
        return {**self._base_state(), "theta": copy_array(self._theta)}

    @classmethod
    def from_state_dict(cls, state: dict):
        """A learner that continues exactly where the saved one stopped (checked:
        :meth:`load_state_dict`)."""
        reader = StateReader(state, cls)
        d = reader.count("d", minimum=1)
        reader.check_shape("theta", (d + 1, d + 1), f"d = {d}")  # before allocating (d+1)^2 floats
        fm = cls(d, **cls._read_settings(reader))
        fm.load_state_dict(state)
        return fm

    def load_state_dict(self, state: dict) -> None:
        """Become the learner ``state`` describes, in place (same d, eta, loss). Checked
        before anything is stored: ``theta`` of shape (d+1, d+1), finite, entries within
        :data:`MAX_THETA_ENTRY`, all zero at ``t = 0``; ``t`` a count. (A ``Theta`` that is
        not symmetric is accepted: predictions and updates only see its symmetric part.)"""
        reader = StateReader(state, type(self))
        self._check_settings(reader)
        t = reader.count("t")
        theta = reader.array("theta", self._theta.shape)
        largest = _largest_magnitude(theta)
        if not largest <= MAX_THETA_ENTRY:
            raise reader.refuse("theta", f"entries within +-{MAX_THETA_ENTRY:.0e}", largest)
        if t == 0 and largest > 0:
            raise reader.refuse("theta", "all zero at t = 0 (nothing learnt yet)", f"|entry| {largest:.3g}")
        self._theta[...] = theta
        self.t, self._bound = t, largest


def _largest_magnitude(theta: np.ndarray) -> float:
    """``max |theta_ij|`` without an O(d^2) temporary."""
    return float(max(theta.max(), -theta.min()))


@stateful
class FTRLFM(_FullMatrixFM):
    r"""Full-matrix FTRL on the compact convex FM (Luo et al., KDD 2018, Algorithm 1).

    With ``R(Theta) = ||Theta||_F^2 / 2`` and no constraint, FTRL's argmin is explicit:

    .. math:: \Theta_{t+1} = -\eta \sum_{s \le t} q_s\, \hat a_s \hat a_s^T ,
              \qquad q_s = \phi'(\hat a_s^T \Theta_s \hat a_s),

    kept incrementally as ``Theta -= eta q_t a_hat_t a_hat_t^T``. Regret (Theorem 1):
    ``2 eta sum_t ||grad_t||_F^2 + (R(Theta_*) - R(Theta_1)) / eta``. O(d^2) memory;
    per round O(d^2) for a dense row, O(nnz^2) for a sparse one.

    ``eta`` is hot: ``with_params(eta=...)`` plays ``-eta_new sum_s q_s a_hat_s a_hat_s^T``
    from then on, so the stored ``Theta`` is rescaled by ``eta_new / eta`` (as S-FTRL's
    sketch, which holds the sum itself, does at no cost).

    >>> fm = FTRLFM(d=4, eta=0.1)
    >>> for user, item, rating in [(0, 2, 4.0), (1, 3, 2.0), (0, 3, 3.0)]:
    ...     _ = fm.learn(([user, item], [1.0, 1.0]), rating)
    >>> round(fm.predict(([0, 2], [1.0, 1.0])), 4), fm.theta().shape
    (4.064, (5, 5))
    >>> round(fm.with_params(eta=0.05).predict(([0, 2], [1.0, 1.0])), 4)   # half of it
    2.032
    """

    def __init__(self, d: int, *, eta: float | None = None, loss: str = "squared"):
        super().__init__(d, eta=eta, loss=loss)

    def _step_size(self) -> float:
        return self.eta

    def _continue_state(self, state: dict, fresh: "FTRLFM", changes: dict) -> dict:
        """``Theta = -eta * (sum of past gradients)``: a new eta rescales it by new / old
        (refused, ``ValueError``, if an entry would pass :data:`MAX_THETA_ENTRY`)."""
        state = super()._continue_state(state, fresh, changes)
        theta = state["theta"] * (fresh.eta / self.eta)
        if not _largest_magnitude(theta) <= MAX_THETA_ENTRY:
            raise ValueError(f"FTRLFM.with_params(eta={fresh.eta:g}): Theta = -eta * (sum of past "
                             f"gradients) would have an entry past {MAX_THETA_ENTRY:.0e}; choose a "
                             f"smaller eta")
        state["theta"] = theta
        return state


@stateful
class OGDFM(_FullMatrixFM):
    r"""Online gradient descent on the compact convex FM (Zinkevich 2003; the paper's OGD).

    .. math:: \Theta_{t+1} = \Theta_t - \frac{\eta}{\sqrt t}\, q_t\, \hat a_t \hat a_t^T .

    Unconstrained, like :class:`FTRLFM` (the paper's OGD of Lin et al. 2018 also projects
    onto a nuclear-norm ball, an O(d^3) eigen-decomposition per round, not done here).
    Default ``eta``: 0.5 ("squared") and 4.0 ("logistic"), tuned on this repository's
    streams (the paper gives none). ``eta`` is hot: ``with_params(eta=...)`` changes the
    steps ``eta / sqrt(t)`` to come, ``Theta`` stays as it is.

    >>> fm = OGDFM(d=2, eta=1.0)
    >>> fm.learn(([0], [1.0]), 2.0), float(fm.theta()[0, 0])  # loss (0-2)^2/2; Theta -= 1 * (-2)
    (2.0, 2.0)
    """

    _default_eta = OGD_DEFAULT_ETA

    def __init__(self, d: int, *, eta: float | None = None, loss: str = "squared"):
        super().__init__(d, eta=eta, loss=loss)

    def _step_size(self) -> float:
        return self.eta / math.sqrt(self.t + 1)  # this is round t + 1


# -- progressive validation -------------------------------------------------------------------

def progressive(learner: ConvexFM, X, y) -> History:
    """Run ``learner`` over the stream ``(X, y)``: predict each row, then learn it
    (:meth:`SketchedFTRL.progressive`, the same for :class:`FTRLFM` and :class:`OGDFM`).

    >>> import scipy.sparse
    >>> X = scipy.sparse.csr_array(([1.0, 1.0, 1.0, 1.0], [0, 2, 1, 3], [0, 2, 4]), shape=(2, 4))
    >>> run = progressive(FTRLFM(d=4, eta=0.1), X, [4.0, 2.0])
    >>> run["t"].tolist(), run["prediction"].round(3).tolist(), run["loss"].round(3).tolist()
    ([1, 2], [0.0, 0.4], [8.0, 1.28])
    >>> run["gradient_scale"].round(3).tolist(), bool(run["seconds"][-1] > 0)
    ([-4.0, -1.6], True)
    """
    if not isinstance(learner, ConvexFM):
        raise ValueError(f"learner must be SketchedFTRL, FTRLFM or OGDFM, got {type(learner).__name__}")
    return learner.progressive(X, y)
