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
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse

from .._validation import check_float, check_int
from ..hooks import Observable, StepEvent
from ..losses import get_loss
from ..sketch import GeneralizedFrequentDirections
from ..state import check_kind, copy_array, stateful
from ._shrink import PartMemo
from .compact import as_fm_row, as_fm_rows, check_label

__all__ = ["SketchedFTRL", "FTRLFM", "OGDFM", "FMStepEvent", "Progressive", "progressive",
           "LOSS_NAMES"]

LOSS_NAMES = ("squared", "logistic")
"""The two losses of the paper's experiments: ratings and binary labels."""

DEFAULT_ETA = {"squared": 0.02, "logistic": 0.25}
"""FTRL / S-FTRL step: the authors' settings (test.m: 0.01 on ``2(z-b)``; test_bc.m: 0.25)."""

OGD_DEFAULT_ETA = {"squared": 0.5, "logistic": 4.0}
"""OGD's ``eta`` in ``eta / sqrt(t)``: hand-picked starting values (the paper gives none).
Tuned on a validation split in ``notebooks/sftrl_paper.ipynb``, OGD's best step on
MovieLens-100K is 2, not 0.5; the 4 for Spambase has not been tuned."""

@dataclass(frozen=True)
class FMStepEvent(StepEvent):
    """One round of an FM learner (kind "step").

    prediction: ``z_t`` before the update; q: ``phi'(z_t)`` (the gradient is
    ``q a_hat a_hat^T``); rank_plus / rank_minus: occupied rows of ``B+`` / ``B-``
    (S-FTRL only), whose sum is reported as ``rank``.
    """

    prediction: float | None = None
    q: float | None = None
    rank_plus: int | None = None
    rank_minus: int | None = None


def _check_loss(loss) -> str:
    if loss not in LOSS_NAMES:
        raise ValueError(f"loss must be one of {', '.join(map(repr, LOSS_NAMES))}, got {loss!r}")
    return loss


class _ConvexFM(Observable):
    """Shared protocol: validation, the loss with its factor, predict / learn, events."""

    _default_eta = DEFAULT_ETA

    def __init__(self, d: int, *, eta: float | None, loss: str):
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        self.loss = _check_loss(loss)
        eta = self._default_eta[self.loss] if eta is None else eta
        self.eta = check_float("eta", eta, minimum=0.0, strict_minimum=True)
        self._loss = get_loss(self.loss)
        # losses.py's squared loss is (z - y)^2; the FM ratings loss is half of it.
        self._factor = 0.5 if self.loss == "squared" else 1.0
        self.t = 0

    # -- the protocol -------------------------------------------------------------------
    def predict(self, x) -> float:
        """``z = a_hat^T Theta a_hat`` for a dense or sparse row (the log-odds for "logistic")."""
        idx, val = as_fm_row(x, self.d)
        return self._z(*self._augment(idx, val))

    def learn(self, x, y) -> float:
        """Suffer the loss of the current ``Theta`` on ``(x, y)``, then update; return that loss.

        ``x``: a dense vector of length d, an ``(indices, values)`` pair or a scipy.sparse
        row (see :func:`explorer.fm.as_fm_row`); ``y``: a finite number (-1 or +1 for the
        logistic loss). A bad input raises ``ValueError`` and changes nothing.
        """
        idx, val = as_fm_row(x, self.d)
        return self._learn(idx, val, check_label(y, self.loss))[1]

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

    def _learn(self, idx, val, y: float) -> tuple[float, float]:
        """One round on an already validated row; returns ``(z, loss)``."""
        return self._learn_augmented(*self._augment(idx, val), y)

    def _learn_augmented(self, idx, val, y: float) -> tuple[float, float]:
        """One round on a validated ``a_hat`` (bias entry included); returns ``(z, loss)``."""
        z = self._z(idx, val)
        loss = self._factor * float(self._loss.value(z, y))
        q = self._factor * float(self._loss.derivative(z, y))
        if not (math.isfinite(loss) and math.isfinite(q)):
            raise FloatingPointError(f"{type(self).__name__} diverged at round {self.t + 1} "
                                     f"(prediction {z}); use a smaller eta (now {self.eta})")
        self.t += 1
        self._update(idx, val, q)
        if self._hooks:
            self._emit(self._step_event(z, loss, q))
        return z, loss

    def _step_event(self, z: float, loss: float, q: float) -> FMStepEvent:
        return FMStepEvent(t=self.t, loss=loss, prediction=z, q=q)

    def _z(self, idx, val) -> float:
        raise NotImplementedError

    def _update(self, idx, val, q: float) -> None:
        raise NotImplementedError

    def theta(self) -> np.ndarray:
        """The current ``Theta`` as a (d+1) x (d+1) array (O(d^2) memory: for inspection)."""
        raise NotImplementedError

    def _base_state(self) -> dict:
        return {"kind": type(self).__name__, "d": self.d, "eta": self.eta, "loss": self.loss,
                "t": self.t}


# -- S-FTRL --------------------------------------------------------------------------------

@stateful
class SketchedFTRL(_ConvexFM):
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
    and "step" (:class:`FMStepEvent`: loss, prediction, q, ``rank_plus``, ``rank_minus``).

    Parameters
    ----------
    d : number of features (the sketch holds d+1 columns: ``a_hat = [a; 1]``).
    m : sketch size; each part keeps at most m-1 rows.
    eta : step size; default 0.02 for "squared", 0.25 for "logistic" (the authors').
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
        self.sketch = GeneralizedFrequentDirections(self.d + 1, m, fast=fast)
        self.m, self.fast = self.sketch.m, self.sketch.fast
        self._memo = (PartMemo(), PartMemo())  # for B+ and B-
        self._forward_events(self.sketch, lambda event: dataclasses.replace(event, t=self.t))

    def __repr__(self) -> str:
        return (f"SketchedFTRL(d={self.d}, m={self.m}, eta={self.eta:g}, loss={self.loss!r}, "
                f"fast={self.fast}) t={self.t}")

    def _z(self, idx, val) -> float:
        plus, minus = self.sketch.positive, self.sketch.negative
        if idx is None:
            p = plus.rows_view @ val
            n = minus.rows_view @ val
        else:
            p = plus.rows_view.take(idx, axis=1) @ val
            n = minus.rows_view.take(idx, axis=1) @ val
        return -self.eta * (float(p @ p) - float(n @ n))

    def _update(self, idx, val, q: float) -> None:
        if q == 0.0:
            return  # a zero gradient adds nothing (and GFD takes non-zero weights only)
        if q > 0:
            part, memo = self.sketch.positive, self._memo[0]
        else:
            part, memo = self.sketch.negative, self._memo[1]
        # sqrt(|q|) > 0 and the bias entry is 1, so the row is never all zero.
        row = math.sqrt(abs(q)) * val
        shrink = part.insert_row(row, columns=idx, rule=memo.shrink_rule(idx, part.m))
        self.sketch.n_seen += 1
        memo.after_insert(idx, shrink)

    def _step_event(self, z: float, loss: float, q: float) -> FMStepEvent:
        plus, minus = self.sketch.positive.rank, self.sketch.negative.rank
        return FMStepEvent(t=self.t, loss=loss, prediction=z, q=q, rank=plus + minus,
                           rank_plus=plus, rank_minus=minus)

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
        check_kind(state, cls)
        fm = cls(int(state["d"]), m=int(state["m"]), eta=float(state["eta"]),
                 loss=str(state["loss"]), fast=bool(state["fast"]))
        prefix = "sketch."
        sketch = GeneralizedFrequentDirections.from_state_dict(
            {key[len(prefix):]: value for key, value in state.items() if key.startswith(prefix)})
        if (sketch.d, sketch.m, sketch.fast) != (fm.d + 1, fm.m, fm.fast):
            raise ValueError(f"state_dict sketch (d={sketch.d}, m={sketch.m}, fast={sketch.fast}) "
                             f"does not fit d+1={fm.d + 1}, m={fm.m}, fast={fm.fast}")
        for name in ("positive", "negative"):
            getattr(fm.sketch, name).load_state_dict(getattr(sketch, name).state_dict())
        fm.sketch.n_seen = sketch.n_seen
        for part, memo in zip("+-", fm._memo):
            prefix = f"memo.{part}."
            memo.restore({key[len(prefix):]: value for key, value in state.items()
                          if key.startswith(prefix)})
        fm.t = int(state["t"])
        return fm


# -- full-matrix baselines -------------------------------------------------------------------

class _FullMatrixFM(_ConvexFM):
    """``Theta`` stored as a dense (d+1) x (d+1) array; ``Theta -= step q a_hat a_hat^T``.

    A sparse row costs O(nnz^2) (only the entries it touches), a dense row O(d^2) (one
    BLAS rank-one update, in place). Memory is always O(d^2): 55 MB at d = 2625,
    800 MB at d = 10,000, 54 GB at MovieLens-10M's d = 82,248.
    """

    def __init__(self, d: int, *, eta: float | None, loss: str):
        super().__init__(d, eta=eta, loss=loss)
        self._theta = np.zeros((self.d + 1, self.d + 1))
        self._ger = scipy.linalg.get_blas_funcs("ger", (self._theta,))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(d={self.d}, eta={self.eta:g}, loss={self.loss!r}) t={self.t}"

    def _step_size(self) -> float:
        raise NotImplementedError

    def _z(self, idx, val) -> float:
        if idx is None:
            return float(val @ (self._theta @ val))
        return float(val @ self._theta[np.ix_(idx, idx)] @ val)

    def _update(self, idx, val, q: float) -> None:
        if q == 0.0:
            return
        scale = -self._step_size() * q
        if idx is None:
            # Theta is C-ordered and symmetric: its transpose is a Fortran view of it.
            self._ger(scale, val, val, a=self._theta.T, overwrite_a=True)
        else:
            self._theta[np.ix_(idx, idx)] += scale * np.outer(val, val)

    def theta(self) -> np.ndarray:
        """A copy of ``Theta`` ((d+1) x (d+1))."""
        return self._theta.copy()

    def state_dict(self) -> dict:
        return {**self._base_state(), "theta": copy_array(self._theta)}

    @classmethod
    def from_state_dict(cls, state: dict):
        check_kind(state, cls)
        fm = cls(int(state["d"]), eta=float(state["eta"]), loss=str(state["loss"]))
        theta = np.asarray(state["theta"], dtype=float)
        if theta.shape != fm._theta.shape:
            raise ValueError(f"state_dict theta of shape {theta.shape} does not fit d={fm.d}")
        fm._theta[:] = theta
        fm.t = int(state["t"])
        return fm


@stateful
class FTRLFM(_FullMatrixFM):
    r"""Full-matrix FTRL on the compact convex FM (Luo et al., KDD 2018, Algorithm 1).

    With ``R(Theta) = ||Theta||_F^2 / 2`` and no constraint, FTRL's argmin is explicit:

    .. math:: \Theta_{t+1} = -\eta \sum_{s \le t} q_s\, \hat a_s \hat a_s^T ,
              \qquad q_s = \phi'(\hat a_s^T \Theta_s \hat a_s),

    kept incrementally as ``Theta -= eta q_t a_hat_t a_hat_t^T``. Regret (Theorem 1):
    ``2 eta sum_t ||grad_t||_F^2 + (R(Theta_*) - R(Theta_1)) / eta``. O(d^2) memory;
    per round O(d^2) for a dense row, O(nnz^2) for a sparse one.

    >>> fm = FTRLFM(d=4, eta=0.1)
    >>> for user, item, rating in [(0, 2, 4.0), (1, 3, 2.0), (0, 3, 3.0)]:
    ...     _ = fm.learn(([user, item], [1.0, 1.0]), rating)
    >>> round(fm.predict(([0, 2], [1.0, 1.0])), 4), fm.theta().shape
    (4.064, (5, 5))
    """

    def __init__(self, d: int, *, eta: float | None = None, loss: str = "squared"):
        super().__init__(d, eta=eta, loss=loss)

    def _step_size(self) -> float:
        return self.eta


@stateful
class OGDFM(_FullMatrixFM):
    r"""Online gradient descent on the compact convex FM (Zinkevich 2003; the paper's OGD).

    .. math:: \Theta_{t+1} = \Theta_t - \frac{\eta}{\sqrt t}\, q_t\, \hat a_t \hat a_t^T .

    Unconstrained, like :class:`FTRLFM` (the paper's OGD of Lin et al. 2018 also projects
    onto a nuclear-norm ball, an O(d^3) eigen-decomposition per round, not done here).
    Default ``eta``: 0.5 ("squared") and 4.0 ("logistic"), tuned on this repository's
    streams (the paper gives none).

    >>> fm = OGDFM(d=2, eta=1.0)
    >>> fm.learn(([0], [1.0]), 2.0), float(fm.theta()[0, 0])  # loss (0-2)^2/2; Theta -= 1 * (-2)
    (2.0, 2.0)
    """

    _default_eta = OGD_DEFAULT_ETA

    def __init__(self, d: int, *, eta: float | None = None, loss: str = "squared"):
        super().__init__(d, eta=eta, loss=loss)

    def _step_size(self) -> float:
        return self.eta / math.sqrt(self.t)


# -- progressive validation -------------------------------------------------------------------

def _as_labels(y, n: int, loss: str) -> np.ndarray:
    try:
        labels = np.array(y, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"y must be numeric labels: {error}") from None
    if labels.shape != (n,):
        raise ValueError(f"y must hold one label per row ({n}), got shape {labels.shape}")
    bad = ~np.isfinite(labels)
    if loss == "logistic":
        bad |= (labels != 1.0) & (labels != -1.0)
    if bad.any():
        t = int(np.flatnonzero(bad)[0])
        check_label(float(labels[t]), loss, name=f"y[{t}]")  # raises, naming the label
    return labels


class Progressive(NamedTuple):
    """What :func:`progressive` returns: per-round predictions ``z_t`` and losses, and seconds."""

    predictions: np.ndarray
    losses: np.ndarray
    seconds: float


def progressive(learner: _ConvexFM, X, y) -> Progressive:
    """Run ``learner`` over the stream ``(X, y)``: predict each row, then learn it.

    ``X``: a dense array (n x d) or any scipy.sparse matrix (n x d; converted to CSR once,
    never densified); ``y``: n labels. Everything is validated before the first round,
    so a bad stream raises ``ValueError`` and leaves ``learner`` unchanged. The rows are
    then fed without re-validation (the fast path of the notebooks and benchmarks).
    ``seconds`` is the wall time of the learning loop alone.

    >>> import scipy.sparse
    >>> X = scipy.sparse.csr_array(([1.0, 1.0, 1.0, 1.0], [0, 2, 1, 3], [0, 2, 4]), shape=(2, 4))
    >>> run = progressive(FTRLFM(d=4, eta=0.1), X, [4.0, 2.0])
    >>> run.predictions.round(3).tolist(), run.losses.round(3).tolist()
    ([0.0, 0.4], [8.0, 1.28])
    """
    if not isinstance(learner, _ConvexFM):
        raise ValueError(f"learner must be SketchedFTRL, FTRLFM or OGDFM, got {type(learner).__name__}")
    kind, X = as_fm_rows(X, learner.d)
    n = X.shape[0]
    labels = _as_labels(y, n, learner.loss)
    predictions, losses = np.empty(n), np.empty(n)
    start = time.perf_counter()
    learn = learner._learn_augmented
    if kind == "csr":
        # a_hat for every row at once: the bias column d appended to each row's entries.
        X = scipy.sparse.hstack([X, scipy.sparse.csr_array(np.ones((n, 1)))], format="csr")
        indptr, indices, data = X.indptr.tolist(), X.indices.astype(np.intp), X.data
        for t in range(n):
            lo, hi = indptr[t], indptr[t + 1]
            predictions[t], losses[t] = learn(indices[lo:hi], data[lo:hi], labels[t])
    else:
        X = np.hstack([X, np.ones((n, 1))])
        for t in range(n):
            predictions[t], losses[t] = learn(None, X[t], labels[t])
    return Progressive(predictions, losses, time.perf_counter() - start)
