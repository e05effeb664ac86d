r"""Sketched online Newton step: RFD-SON, FD-SON, RP-SON and FULL-ON (docs/algorithms.md section 3).

The online Newton step keeps the curvature matrix
``H_t = alpha_0 I + sum_{s<=t} (mu + eta_s) g_s g_s^T`` and moves along ``-H_t^{-1} g_t``.
The sketched versions replace the sum by a sketch ``B`` of the rows
``sqrt(mu + eta_s) g_s``: FD-SON uses ``alpha_0 I + B^T B``, RFD-SON ``alpha I + B^T B``
with RFD's growing ``alpha``, RP-SON a Gaussian random projection. Solves go through
Woodbury in O(md) per round; no d x d matrix exists except in FULL-ON.

References
----------
- Luo, Agarwal, Cesa-Bianchi, Langford (2016), *Efficient second order online learning
  by sketching* (SON, the slab projection, RP-SON / FD-SON).
- Luo, Chen, Zhang, Li (2017), *Online learning via regularized frequent directions*,
  Algorithms 5-6 (RFD-SON, fast RFD-SON); Luo et al. (JMLR 2019), alpha_0 = 0 with the
  pseudo-inverse ("hyperparameter-free").
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.linalg.blas import dtrsv
from scipy.linalg.lapack import dpotrs

from ._validation import as_labeled_rows, as_row, check_float, check_int
from .hooks import Observable, StepEvent
from .losses import get_loss
from .sketch import FrequentDirections, RandomProjectionSketch, RobustFrequentDirections
from .state import check_kind, copy_array, stateful

__all__ = ["SketchedOnlineNewton", "SKETCHES", "default_mu"]

SKETCHES = ("rfd", "fd", "rp", "full")
ETA_SCHEDULES = ("constant", "inverse_t")


def default_mu(loss: str, C: float) -> float:
    """The exp-concavity constant ``mu`` of Assumption 2 on the slab ``|w^T x| <= C``.

    squared ``(z - y)^2`` with ``|z|, |y| <= C``: ``l'' = 2`` and ``l'^2 <= 16 C^2``, so
    ``mu = 1 / (8 C^2)`` (JMLR 2019); logistic: ``l'' / l'^2 >= e^{-C}``, so ``mu = e^{-C}``.

    >>> default_mu("squared", 1.0), round(default_mu("logistic", 1.0), 4)
    (0.125, 0.3679)
    """
    if loss == "squared":
        return 1.0 / (8.0 * C ** 2)
    if loss == "logistic":
        return float(np.exp(-C))
    raise ValueError(f"loss must be 'squared' or 'logistic', got {loss!r}")


class _SketchCurvature:
    """``H = shift I + B^T B`` from a sketch, with ``K = B B^T`` kept up to date in O(rd).

    ``shift`` is RFD's alpha (RFD-SON) or the fixed alpha_0 (FD-SON, RP-SON). Solves use
    Woodbury, ``H^{-1} v = (v - B^T (shift I + K)^{-1} B v) / shift``; with ``shift = 0``
    (JMLR, before the first shrink) the pseudo-inverse ``B^T K^{+2} B``.

    For FD and RFD, ``shift`` only changes at a shrink and a new row only borders ``K``,
    so the Cholesky factor ``L`` of ``shift I + K`` is bordered too (one triangular solve,
    O(r^2)) and refactored at each shrink; a solve is then two triangular solves. If
    rounding makes a bordered pivot non-positive, solves fall back to LU until the next
    shrink. RP changes every row of ``B`` each round and always uses LU.
    """

    def __init__(self, sketch, alpha0: float):
        self.sketch = sketch
        self.alpha0 = alpha0
        capacity = sketch.capacity if hasattr(sketch, "capacity") else sketch.m
        self.inner = np.zeros((capacity, capacity))
        self.factor = np.zeros((capacity, capacity), order="F")
        self.bordered = not isinstance(sketch, RandomProjectionSketch)
        self.refactor()

    def _rows(self) -> np.ndarray:
        return self.sketch.rows_view

    @property
    def rank(self) -> int:
        return self.sketch.rank if self.bordered else self.sketch.m

    def add(self, row: np.ndarray) -> None:
        if not row.any():
            return  # a zero row changes neither B nor K: it is not added
        if not self.bordered:
            self._add_projected(row)
            return
        shrink = self.sketch.insert_row(row)  # non-zero: checked above
        B = self.sketch.rows_view
        r = B.shape[0]
        if shrink is not None:  # rows are orthogonal right after a shrink
            diagonal = np.einsum("ij,ij->i", B, B)
            self.inner[:] = 0.0
            self.inner[np.arange(r), np.arange(r)] = diagonal
            self.refactor(diagonal)
        else:
            products = B @ row
            self.inner[r - 1, :r] = products
            self.inner[:r, r - 1] = products
            self._border(products)

    def refactor(self, diagonal: np.ndarray | None = None) -> None:
        """Cholesky of ``shift I + K`` from scratch (after a shrink, or a loaded state).

        ``shift`` is read from the sketch here, the only time it can have changed (RFD's
        alpha grows at shrinks). ``diagonal``: K is ``diag(diagonal)`` (right after a
        shrink), so ``L = diag(sqrt(shift + diagonal))``, what Cholesky would compute.
        """
        self.shift = shift = getattr(self.sketch, "alpha", self.alpha0)
        r = self.rank
        self.factored = self.bordered and shift > 0  # factor[:r, :r] is valid
        if self.factored and diagonal is not None:
            self.factor[:r, :r] = np.diag(np.sqrt(shift + diagonal))
        elif self.factored and r:
            self.factored = False
            matrix = self.inner[:r, :r].copy()
            matrix.flat[::r + 1] += shift
            try:
                self.factor[:r, :r] = np.linalg.cholesky(matrix)
                self.factored = True
            except np.linalg.LinAlgError:
                pass  # LU until the next shrink

    def _border(self, products: np.ndarray) -> None:
        """Extend ``L`` by the new last row: ``l = L^{-1} k``, pivot ``sqrt(shift + k_r - |l|^2)``."""
        if not self.factored:
            return
        r = products.size
        known = dtrsv(self.factor[:r - 1, :r - 1], products[:r - 1], lower=1) if r > 1 else products[:0]
        pivot = self.shift + products[r - 1] - known @ known
        if pivot > 0:
            self.factor[r - 1, :r - 1] = known
            self.factor[r - 1, r - 1] = np.sqrt(pivot)
        else:
            self.factored = False

    def _add_projected(self, row: np.ndarray) -> None:
        """RP: ``B <- B + r g^T`` changes every row; ``K`` follows in O(md)."""
        B = self.sketch.rows_view
        before = B @ row
        self.sketch.insert_row(row)
        r = (B @ row - before) / (row @ row)  # the random direction just drawn
        self.inner += np.outer(r, before) + np.outer(before, r) + (row @ row) * np.outer(r, r)

    def solve(self, v: np.ndarray) -> np.ndarray:
        r, shift = self.rank, self.shift
        if r == 0:
            return v / shift if shift > 0 else np.zeros_like(v)
        B = self._rows()
        if self.factored:
            return (v - dpotrs(self.factor[:r, :r], B @ v, lower=1)[0] @ B) / shift
        K = self.inner[:r, :r]
        if shift > 0:
            matrix = K.copy()
            matrix.flat[::r + 1] += shift
            return (v - B.T @ np.linalg.solve(matrix, B @ v)) / shift
        values, vectors = np.linalg.eigh(K)
        keep = values > values.max() * 1e-12
        coefficients = vectors[:, keep] @ ((vectors[:, keep].T @ (B @ v)) / values[keep] ** 2)
        return B.T @ coefficients

    def condition_number(self) -> float:
        """``(lambda_max + shift) / (lambda_min + shift)`` of ``B^T B`` from ``K = B B^T``.

        ``B^T B`` shares K's d largest eigenvalues; its smallest is 0 when r < d.
        """
        r, d, shift = self.rank, self.sketch.d, self.shift
        eigenvalues = np.linalg.eigvalsh(self.inner[:r, :r]) if r else np.zeros(1)
        smallest = shift + (eigenvalues[r - d] if r >= d else 0.0)
        return float((eigenvalues[-1] + shift) / smallest) if smallest > 0 else np.inf

    def state_dict(self) -> dict:
        return {"inner": copy_array(self.inner), "factor": copy_array(self.factor),
                "factored": self.factored,
                **{f"sketch.{k}": v for k, v in self.sketch.state_dict().items()}}

    def load(self, state: dict) -> None:
        """Restore exactly, factor included: a refactored ``L`` differs in the last bits,
        and FD-SON with a tiny alpha_0 amplifies such differences into other weights."""
        self.sketch.load_state_dict({k[len("sketch."):]: v for k, v in state.items()
                              if k.startswith("sketch.")})
        self.inner[:] = np.asarray(state["inner"], dtype=float)
        self.refactor()
        if "factor" in state:  # else a state saved before the factor was kept
            self.factor[:] = np.asarray(state["factor"], dtype=float)
            self.factored = bool(state["factored"])


class _FullCurvature:
    """FULL-ON: ``H^{-1}`` itself (d x d), updated by Sherman-Morrison in O(d^2)."""

    def __init__(self, d: int, alpha0: float):
        if alpha0 <= 0:
            raise ValueError(f"alpha0 must be > 0 for sketch='full' (H_0 = alpha0 I is inverted), "
                             f"got {alpha0}")
        self.inverse = np.eye(d) / alpha0
        self.shift = alpha0
        self.sketch = None
        self.rank = d

    def add(self, row: np.ndarray) -> None:
        h = self.inverse @ row
        self.inverse -= np.outer(h, h) / (1.0 + row @ h)

    def solve(self, v: np.ndarray) -> np.ndarray:
        return self.inverse @ v

    def condition_number(self) -> float:
        return float(np.linalg.cond(self.inverse))

    def state_dict(self) -> dict:
        return {"inverse": copy_array(self.inverse)}

    def load(self, state: dict) -> None:
        self.inverse[:] = np.asarray(state["inverse"], dtype=float)


@stateful
class SketchedOnlineNewton(Observable):
    r"""Sketched online Newton step (Luo et al. 2017, Algorithms 5-6; Luo et al. 2016).

    Round t, with ``f_t(w) = l(w^T x_t, y_t)`` and ``H`` the current curvature matrix:

    1. project ``u_t`` onto the slab ``|w^T x_t| <= C`` in the ``H_{t-1}`` norm:
       ``w_t = u_t - tau(u_t^T x_t) H^{-1} x_t / (x_t^T H^{-1} x_t)``,
       ``tau(z) = sign(z) max(|z| - C, 0)`` -- so the prediction is ``clip(u_t^T x_t, -C, C)``;
    2. suffer ``l(w_t^T x_t, y_t)``; ``g_t = l'(w_t^T x_t, y_t) x_t``;
    3. add the row ``sqrt(mu + eta_t) g_t`` to the sketch (skipped when ``g_t = 0``);
    4. ``u_{t+1} = w_t - H_t^{-1} g_t``.

    ``sketch``: "rfd" (``H = alpha I + B^T B``), "fd" (``alpha_0 I + B^T B``), "rp"
    (random projection, ``alpha_0 I + B^T B``) or "full" (FULL-ON, exact ``H``, needs
    ``alpha0 > 0``). ``mu`` defaults to the loss's exp-concavity constant
    (:func:`default_mu`); ``eta`` is the explorer's extra curvature knob, constant or
    ``eta / t`` (``eta_schedule="inverse_t"``, the papers' O(1/t)). ``C`` caps every
    prediction: with the logistic loss the default ``C = 1`` keeps it where the loss is
    nearly linear, and a wider slab (``C = 10`` with ``alpha0 > 0`` and a small ``eta``)
    made about a third fewer mistakes on the benchmark stream (lesson 3, "How wide a
    slab?"). With ``alpha = 0``
    (RFD-SON with ``alpha0 = 0`` before the first shrink) the pseudo-inverse is used, and
    a point ``x`` outside the sketch's row space is projected in the Euclidean norm.

    Hooks: the sketch's "shrink" events (t = round), and a "step" event per round with the
    loss, the regularizer (alpha), the condition number of ``H`` and the sketch's rank.

    >>> import numpy as np
    >>> learner = SketchedOnlineNewton(3, sketch="rfd", m=2)
    >>> [round(learner.learn(x, y), 3) for x, y in [([1, 0, 0], 1), ([1, 0, 0], 1)]]
    [1.0, 0.0]
    >>> float(learner.predict([1, 0, 0]))
    1.0
    """

    def __init__(self, d: int, *, sketch: str = "rfd", m: int = 10, alpha0: float = 0.0,
                 eta: float = 0.0, mu: float | None = None, C: float = 1.0, fast: bool = True,
                 loss: str = "squared", eta_schedule: str = "constant", seed: int | None = None):
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        if sketch not in SKETCHES:
            raise ValueError(f"sketch must be one of {SKETCHES}, got {sketch!r}")
        if eta_schedule not in ETA_SCHEDULES:
            raise ValueError(f"eta_schedule must be one of {ETA_SCHEDULES}, got {eta_schedule!r}")
        self.sketch_kind, self.eta_schedule, self.loss_name = sketch, eta_schedule, loss
        self.m = check_int("m", m, minimum=2)
        self.alpha0 = check_float("alpha0", alpha0, minimum=0.0)
        self.eta = check_float("eta", eta, minimum=0.0)
        self.C = check_float("C", C, minimum=0.0, strict_minimum=True)
        self.mu = default_mu(loss, self.C) if mu is None else check_float("mu", mu, minimum=0.0)
        if self.mu + self.eta <= 0:
            raise ValueError("mu + eta must be > 0 (the weight of each gradient in H)")
        self.fast, self.seed = bool(fast), seed
        self._loss = get_loss(loss)
        self._curvature = self._make_curvature()
        self.u = np.zeros(self.d)
        self.t = 0
        self.last_prediction = 0.0
        if self._curvature.sketch is not None:
            self._forward_events(self._curvature.sketch,
                                 lambda event: dataclasses.replace(event, t=self.t))

    def _make_curvature(self):
        if self.sketch_kind == "full":
            return _FullCurvature(self.d, self.alpha0)
        if self.sketch_kind == "rp":
            sketch = RandomProjectionSketch(self.d, self.m, seed=self.seed)
        elif self.sketch_kind == "rfd":
            sketch = RobustFrequentDirections(self.d, self.m, alpha0=self.alpha0, fast=self.fast)
        else:
            sketch = FrequentDirections(self.d, self.m, fast=self.fast)
        return _SketchCurvature(sketch, self.alpha0)

    def __repr__(self) -> str:
        return (f"SketchedOnlineNewton(d={self.d}, sketch={self.sketch_kind!r}, m={self.m}, "
                f"alpha0={self.alpha0:g}, eta={self.eta:g}, loss={self.loss_name!r}) t={self.t}")

    @property
    def sketch(self):
        """The sketch object (None for FULL-ON)."""
        return self._curvature.sketch

    @property
    def alpha(self) -> float:
        """The current regularizer of ``H``: RFD's alpha, else alpha_0."""
        return self._curvature.shift

    def solve(self, v) -> np.ndarray:
        """``H^{-1} v`` for the current curvature matrix (Woodbury; pseudo-inverse if alpha = 0)."""
        return self._curvature.solve(as_row(v, self.d, "v"))

    def condition_number(self) -> float:
        """Condition number of the current ``H`` (O(m^3) for sketches, O(d^3) for FULL-ON)."""
        return self._curvature.condition_number()

    def predict(self, x) -> float:
        """The prediction ``w^T x`` after the slab projection: ``clip(u^T x, -C, C)``."""
        return min(max(float(self.u @ as_row(x, self.d)), -self.C), self.C)

    def learn(self, x, y) -> float:
        """Suffer the loss of the projected ``w_t`` on ``(x, y)``, then take the Newton step.

        The prediction the loss was suffered on, ``w_t^T x`` (what :meth:`predict` gave just
        before), is kept as ``last_prediction``: progressive evaluation without a second pass
        over ``x``.
        """
        return self._learn_row(as_row(x, self.d), check_float("y", y))

    def learn_many(self, X, y, *, return_predictions: bool = False):
        """:meth:`learn` on each row of ``X`` with labels ``y`` in order; returns the losses.

        The same numbers as a loop of ``learn``, but every row and label is checked once,
        first (on bad input nothing is learned), which saves about a sixth of a round's time
        at d = 500. With ``return_predictions``, returns ``(losses, predictions)``: also each
        ``w_t^T x_t`` the loss was suffered on, for progressive evaluation.

        >>> learner = SketchedOnlineNewton(2, m=2)
        >>> losses, predictions = learner.learn_many([[1, 0], [1, 0]], [1, 1], return_predictions=True)
        >>> losses.tolist(), predictions.tolist()
        ([1.0, 0.0], [0.0, 1.0])
        """
        X, y = as_labeled_rows(X, y, self.d)
        losses, predictions = np.empty(len(y)), np.empty(len(y))
        for i, (x, label) in enumerate(zip(X, y.tolist())):
            losses[i] = self._learn_row(x, label)
            predictions[i] = self.last_prediction
        return (losses, predictions) if return_predictions else losses

    def _learn_row(self, x: np.ndarray, y: float) -> float:
        w, z = self._project(x)
        self.last_prediction = z
        loss, slope = self._loss.value_and_derivative(z, y)
        self.t += 1
        if slope != 0.0:
            g = slope * x
            eta_t = self.eta / self.t if self.eta_schedule == "inverse_t" else self.eta
            self._curvature.add(math.sqrt(self.mu + eta_t) * g)
            w = w - self._curvature.solve(g)
        self.u = w
        if self._hooks:
            self._emit(StepEvent(t=self.t, loss=loss, alpha=self.alpha,
                                 condition_number=self.condition_number(),
                                 rank=self._curvature.rank))
        return loss

    def _project(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        """``(w_t, w_t^T x)``: step 1, the slab projection, and the prediction it gives."""
        z = float(self.u @ x)
        if abs(z) <= self.C:
            return self.u, z
        excess = np.sign(z) * (abs(z) - self.C)
        direction = self._curvature.solve(x)
        norm = float(x @ direction)
        if norm <= 1e-12 * float(x @ x) * max(1.0, 1.0 / max(self.alpha, 1e-300)):
            direction, norm = x, float(x @ x)  # x outside the pseudo-inverse's range
        w = self.u - excess * direction / norm
        return w, float(w @ x)

    def state_dict(self) -> dict:
        return {"kind": type(self).__name__, "d": self.d, "sketch": self.sketch_kind,
                "m": self.m, "alpha0": self.alpha0, "eta": self.eta, "mu": self.mu, "C": self.C,
                "fast": self.fast, "loss": self.loss_name, "eta_schedule": self.eta_schedule,
                "u": self.u.copy(), "t": self.t,
                **{f"curvature.{k}": v for k, v in self._curvature.state_dict().items()}}

    @classmethod
    def from_state_dict(cls, state: dict) -> "SketchedOnlineNewton":
        check_kind(state, cls)
        learner = cls(int(state["d"]), sketch=str(state["sketch"]), m=int(state["m"]),
                      alpha0=float(state["alpha0"]), eta=float(state["eta"]),
                      mu=float(state["mu"]), C=float(state["C"]), fast=bool(state["fast"]),
                      loss=str(state["loss"]), eta_schedule=str(state["eta_schedule"]))
        learner._curvature.load({k[len("curvature."):]: v for k, v in state.items()
                                 if k.startswith("curvature.")})
        learner.u = np.asarray(state["u"], dtype=float).copy()
        learner.t = int(state["t"])
        return learner
