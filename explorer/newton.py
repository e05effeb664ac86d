r"""Sketched online Newton step: RFD-SON, FD-SON, RP-SON, Oja-SON and FULL-ON (docs/algorithms.md section 3).

The online Newton step keeps the curvature matrix
``H_t = alpha_0 I + sum_{s<=t} (mu + eta_s) g_s g_s^T`` and moves along ``-H_t^{-1} g_t``.
The sketched versions replace the sum by a sketch ``B`` of the rows
``sqrt(mu + eta_s) g_s``: FD-SON uses ``alpha_0 I + B^T B``, RFD-SON ``alpha I + B^T B``
with RFD's growing ``alpha``, RP-SON a Gaussian random projection, Oja-SON Oja's
eigenvector estimates (:class:`~explorer.oja.OjaSketch`). Solves go through
Woodbury in O(md) per round; no d x d matrix exists except in FULL-ON.

Extreme input is learned or refused whole (``learn``, ``step``, ``learn_many`` are all or
nothing; a round whose numbers leave the finite range raises :class:`~explorer.errors.Diverged`);
``step`` returns the round's :class:`~explorer.hooks.StepRecord`, ``with_params`` continues
with another eta, alpha0 or eta schedule (docs/architecture.md).

References
----------
- Luo, Agarwal, Cesa-Bianchi, Langford (2016), *Efficient second order online learning
  by sketching* (SON, the slab projection, RP-SON / FD-SON).
- Luo, Chen, Zhang, Li (2017), *Online learning via regularized frequent directions*,
  Algorithms 5-6 (RFD-SON, fast RFD-SON); Luo et al. (JMLR 2019), Algorithm 3, alpha_0 = 0
  with the pseudo-inverse ("hyperparameter-free").
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import numbers
from typing import Callable

import numpy as np
from scipy.linalg.blas import ddot as _ddot, dtrsv
from scipy.linalg.lapack import dpotrs

from ._validation import (
    SCALES, all_finite, as_labeled_rows, as_row, check_choice, check_int, check_matrix_size,
    check_scale,
)
from .errors import Diverged
from .hooks import Observable, StepRecord
from .losses import check_label, check_labels, get_loss
from .oja import OjaSketch
from .params import Tunable
from .sketch import (
    MAX_SQUARED_MASS, FrequentDirections, RandomProjectionSketch, RobustFrequentDirections,
    ShrinkRecord,
)
from .son_defaults import (
    AUTO, AUTO_NAMES, FIXED_SHIFT_SKETCHES, PLACEHOLDERS, auto_names, auto_settings, default_mu, given_setting,
    scales_agree, unsketched_alpha0,
)
from .state import StateReader, all_or_nothing, copy_array, state_part, stateful

__all__ = ["SketchedOnlineNewton", "SKETCHES", "SUPPORTED_LOSSES", "SCALES", "AUTO", "auto_settings",
           "default_mu"]

SKETCHES = ("rfd", "fd", "rp", "oja", "full")
ETA_SCHEDULES = ("constant", "inverse_t")
#: The losses the online Newton step is defined for: exp-concave on the slab (section 3.4).
SUPPORTED_LOSSES = ("squared", "logistic")

#: A curvature row ``sqrt(mu + eta_t) g_t`` with a squared norm below this is refused: its
#: products ``B B^T`` would be subnormal or 0 (the pseudo-inverse would silently drop it).
TINY_SQUARED_ROW = 1e-290

#: How far a loaded ``K``, Cholesky factor or ``H^{-1}`` may be from what its sketch
#: implies (relative): rounding over a long run stays far below, a tampered file does not.
STATE_TOLERANCE = 1e-6

#: How far (relative to ``|u^T x|``) the H-norm slab projection may land from the face
#: ``w^T x = +-C`` before it counts as lost to rounding and the Euclidean one is used.
FACE_MISS = 1e-3

def _quiet() -> np.errstate:
    """Overflows inside a round are checked for and refused with a message; numpy's
    warnings about them would only repeat it (entering this costs about 4% of a learn()
    round at d = 500; learn_many enters it once per call)."""
    return np.errstate(over="ignore", invalid="ignore", divide="ignore")


def _moved(u: np.ndarray, excess: float, direction: np.ndarray, norm: float) -> np.ndarray | None:
    """``u - excess * direction / norm`` (a slab projection), or None if it is not finite;
    ``excess * direction`` may overflow where ``direction * (excess / norm)`` does not."""
    w = u - excess * direction / norm
    if not all_finite(w):
        w = u - direction * (excess / norm)
    return w if all_finite(w) else None


class _Refused(ValueError):
    """A round that cannot be taken (the caller says which, and keeps nothing of it)."""


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

    Kept invariants (checked on load): ``K`` is symmetric, equals ``B B^T`` up to rounding
    and is zero past the sketch's rank; when ``factored``, ``L L^T = shift I + K``.
    """

    def __init__(self, sketch, alpha0: float):
        self.sketch = sketch
        self.alpha0 = alpha0
        self.bordered = not isinstance(sketch, RandomProjectionSketch)
        self.capacity = sketch.capacity if self.bordered else sketch.m
        self.inner = np.zeros((self.capacity, self.capacity))
        self.factor = np.zeros((self.capacity, self.capacity), order="F")
        self.refactor()

    @property
    def rank(self) -> int:
        return self.sketch.rank if self.bordered else self.sketch.m

    @property
    def mass(self) -> float:
        """The squared mass a new row adds to, against :data:`MAX_SQUARED_MASS`: FD's
        running ``||A||_F^2``; RP checks each row on its own."""
        return self.sketch.frobenius_squared if self.bordered else 0.0

    def step(self, w: np.ndarray, g: np.ndarray, row: np.ndarray, scale: float,
             undoable: bool) -> tuple[np.ndarray, ShrinkRecord | None]:
        """Add ``row = scale * g`` (checked by the caller); return ``w - H^{-1} g`` with
        the new H and the sketch's :class:`~explorer.sketch.ShrinkRecord` if the row made it
        shrink, or raise :class:`_Refused` if the solve fails or the step is not finite.
        ``undoable``: the curvature is then put back as it was (``learn``; ``learn_many``
        restores its own snapshot of the whole learner instead)."""
        undo = self._undo_point() if undoable else None
        try:
            shrink = self.add(row)
            u = w - self.solve(g)
            if not all_finite(u):
                raise Diverged("the step H^{-1} g overflows")
        except BaseException as error:  # an interrupt is undone too
            if undo is not None:
                undo()
            if isinstance(error, (ValueError, ArithmeticError, np.linalg.LinAlgError)):
                raise _Refused(f"the Newton step failed ({error})") from None
            raise
        return u, shrink

    def _undo_point(self) -> Callable[[], None]:
        """A function that puts the curvature back as it is now, whatever one :meth:`add`
        does to it: the sketch's own undo (:meth:`~explorer.sketch.FrequentDirections.undo_point`),
        then ``K`` and ``L``. A row that fills FD's buffer (a shrink) or goes into RP (which
        changes every row of ``B``) needs a copy of both; any other row only takes the next
        free row of ``K`` and ``L`` (the cheap common case)."""
        undo_sketch = self.sketch.undo_point()
        if not self.bordered or self.rank == self.capacity - 1:
            inner, factor = self.inner.copy(), self.factor.copy(order="K")
            factored, shift = self.factored, self.shift

            def undo_all() -> None:
                undo_sketch()
                self.inner[:], self.factor[:] = inner, factor
                self.factored, self.shift = factored, shift
            return undo_all
        r = self.rank
        factor_row, factored = self.factor[r].copy(), self.factored

        def undo_row() -> None:
            undo_sketch()
            self.inner[r, :] = self.inner[:, r] = 0.0
            self.factor[r], self.factored = factor_row, factored
        return undo_row

    def add(self, row: np.ndarray) -> ShrinkRecord | None:
        """Add a finite non-zero row to the sketch and bring ``K`` (and ``L``) up to date;
        returns the sketch's record of the shrink this row caused, else None (always for RP)."""
        if not self.bordered:
            self._add_projected(row)
            return None
        shrink = self.sketch.insert(row)
        B = self.sketch.rows
        r = B.shape[0]
        if shrink is not None:  # rows are orthogonal right after a shrink
            diagonal = np.einsum("ij,ij->i", B, B)
            self.inner[:] = 0.0
            self.inner[np.arange(r), np.arange(r)] = diagonal
            self.refactor(diagonal)
        else:
            products = B @ row  # |products| <= ||A||_F^2 <= MAX_SQUARED_MASS: finite
            self.inner[r - 1, :r] = products
            self.inner[:r, r - 1] = products
            self._border(products)
        return shrink

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
        if pivot > 0:  # False for an overflowing or NaN ``known`` too
            self.factor[r - 1, :r - 1] = known
            self.factor[r - 1, r - 1] = np.sqrt(pivot)
        else:
            self.factored = False

    def _add_projected(self, row: np.ndarray) -> None:
        """RP: ``B <- B + r g^T`` changes every row; ``K`` follows in O(md)."""
        before = self.sketch.rows @ row
        r = self.sketch.insert(row)  # the random direction drawn for this row
        self.inner += np.outer(r, before) + np.outer(before, r) + (row @ row) * np.outer(r, r)
        if not all_finite(self.inner.ravel()):
            raise Diverged("B B^T overflows")

    def solve(self, v: np.ndarray) -> np.ndarray:
        r, shift = self.rank, self.shift
        if r == 0:
            return v / shift if shift > 0 else np.zeros_like(v)
        B = self.sketch.rows
        projected = B @ v
        if not all_finite(projected):  # no LAPACK call on non-finite numbers
            raise Diverged("B v overflows")
        if self.factored:
            return (v - dpotrs(self.factor[:r, :r], projected, lower=1)[0] @ B) / shift
        K = self.inner[:r, :r]
        if shift > 0:
            matrix = K.copy()
            matrix.flat[::r + 1] += shift
            return (v - B.T @ np.linalg.solve(matrix, projected)) / shift
        values, vectors = np.linalg.eigh(K)
        keep = values > values.max() * 1e-12
        # divided twice, not by values ** 2: a square underflows for rows of norm ~1e-80
        coefficients = vectors[:, keep] @ ((vectors[:, keep].T @ projected) / values[keep] / values[keep])
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

    def check_state(self, state: dict, reader: StateReader) -> dict:
        """Everything :meth:`assign` needs from ``state`` (the ``curvature.`` part), checked
        and nothing stored: the sketch through its own ``load_state_dict`` (on a copy), then
        ``K`` and ``L`` against it."""
        probe = type(self.sketch).from_state_dict(self.sketch.state_dict())
        try:
            probe.load_state_dict(state_part(state, "sketch."))
        except ValueError as error:
            raise ValueError(f"{reader.owner} state, part 'curvature.sketch.': {error}") from None
        inner = reader.array("inner", self.inner.shape)
        r = probe.rank if self.bordered else probe.m
        if not np.array_equal(inner, inner.T) or inner[r:].any():
            raise reader.refuse("inner", f"a symmetric matrix, zero past the sketch's rank {r}",
                                "another matrix")
        B = probe.rows
        with np.errstate(over="ignore", invalid="ignore"):  # B B^T may overflow (RP)
            expected = B @ B.T
            error = np.abs(inner[:r, :r] - expected).max(initial=0.0)
        scale = float(np.abs(expected).max(initial=0.0))
        if not (math.isfinite(scale) and error <= STATE_TOLERANCE * scale):
            raise reader.refuse("inner", "B B^T of the sketch's rows", "another matrix")
        checked = {"sketch": state_part(state, "sketch."), "inner": inner, "n_seen": probe.n_seen}
        if not reader.has("factor"):  # a state saved before the factor was kept: refactored
            return checked
        factor, factored = reader.array("factor", self.factor.shape), reader.flag("factored")
        shift = getattr(probe, "alpha", self.alpha0)
        if factored:
            if not (self.bordered and shift > 0):
                raise reader.refuse("factored", "False (no Cholesky factor without FD and a shift > 0)", True)
            L = np.tril(factor[:r, :r])
            target = inner[:r, :r] + shift * np.eye(r)
            with np.errstate(over="ignore", invalid="ignore"):  # a tampered factor may overflow
                error = np.abs(L @ L.T - target).max(initial=0.0)
            if not ((np.diag(L) > 0).all()
                    and error <= STATE_TOLERANCE * float(np.abs(target).max(initial=0.0))):
                raise reader.refuse("factor", "the Cholesky factor of shift I + K", "another matrix")
        return {**checked, "factor": factor, "factored": factored}

    def assign(self, checked: dict) -> None:
        """Store what :meth:`check_state` returned (cannot fail: the sketch was checked)."""
        self.sketch.load_state_dict(checked["sketch"])
        self.inner[:] = checked["inner"]
        if "factor" not in checked:
            self.refactor()
        else:
            # Restored exactly, not refactored: a refactored L differs in the last bits,
            # and FD-SON with a tiny alpha_0 amplifies such differences into other weights.
            self.shift = getattr(self.sketch, "alpha", self.alpha0)
            self.factor[:] = checked["factor"]
            self.factored = checked["factored"]


class _FullCurvature:
    """FULL-ON: ``H^{-1}`` itself (d x d), updated by Sherman-Morrison in O(d^2).

    With ``h = H^{-1} r`` and ``s = 1 + r^T h`` for the new row ``r = c g``:
    ``H_new^{-1} = H^{-1} - k k^T`` with ``k = h / sqrt(s)``, and the Newton step is
    ``H_new^{-1} g = h / (c s)``. Both are computed and checked before anything is stored.
    ``k k^T <= H^{-1}``, so no entry of ``H^{-1}`` ever exceeds ``1 / alpha0``.
    """

    def __init__(self, d: int, alpha0: float):
        self.inverse = np.eye(d) / alpha0
        self.alpha0 = alpha0
        self.shift = alpha0
        self.sketch = None
        self.rank = d
        self.mass = 0.0

    def step(self, w: np.ndarray, g: np.ndarray, row: np.ndarray, scale: float,
             undoable: bool) -> tuple[np.ndarray, None]:
        """``(w - H_new^{-1} g, None)`` after adding ``row = scale * g`` (no sketch, no
        shrink); nothing is stored unless it succeeds (so ``undoable`` costs nothing here)."""
        h = self.inverse @ row
        s = 1.0 + float(row @ h)
        if not (math.isfinite(s) and s > 0.0):
            raise _Refused(f"the Newton step failed (1 + r^T H^{{-1}} r = {s:.6g})")
        k = h / math.sqrt(s)
        u = w - h / s / scale
        if not (math.isfinite(_ddot(k, k)) and all_finite(u)):
            raise _Refused("the Newton step failed (the step H^{-1} g overflows)")
        self.inverse -= np.outer(k, k)
        return u, None

    def solve(self, v: np.ndarray) -> np.ndarray:
        return self.inverse @ v

    def condition_number(self) -> float:
        return float(np.linalg.cond(self.inverse))

    def state_dict(self) -> dict:
        return {"inverse": copy_array(self.inverse)}

    def check_state(self, state: dict, reader: StateReader) -> dict:
        """``H^{-1}`` (d x d): finite, symmetric, eigenvalues in ``(0, 1/alpha0]`` up to rounding."""
        inverse = reader.array("inverse", self.inverse.shape)
        top = 1.0 / self.alpha0
        with np.errstate(over="ignore"):
            asymmetry = np.abs(inverse - inverse.T).max()
        if not asymmetry <= STATE_TOLERANCE * top:
            raise reader.refuse("inverse", "a symmetric matrix", "an asymmetric one")
        values = np.linalg.eigvalsh(inverse)
        if values[0] < -STATE_TOLERANCE * top or values[-1] > (1 + STATE_TOLERANCE) * top:
            raise reader.refuse("inverse", f"H^{{-1}} with eigenvalues in (0, 1/alpha0 = {top:.6g}]",
                                f"eigenvalues in [{values[0]:.6g}, {values[-1]:.6g}]")
        return {"inverse": inverse, "n_seen": 0}

    def assign(self, checked: dict) -> None:
        self.inverse[:] = checked["inverse"]


@stateful
class SketchedOnlineNewton(Tunable, Observable):
    r"""Sketched online Newton step (Luo et al. 2017, Algorithms 5-6; Luo et al. 2016).

    Round t, with ``f_t(w) = l(w^T x_t, y_t)`` and ``H`` the current curvature matrix:

    1. project ``u_t`` onto the slab ``|w^T x_t| <= C`` in the ``H_{t-1}`` norm:
       ``w_t = u_t - tau(u_t^T x_t) H^{-1} x_t / (x_t^T H^{-1} x_t)``,
       ``tau(z) = sign(z) max(|z| - C, 0)`` -- so the prediction is ``clip(u_t^T x_t, -C, C)``;
    2. suffer ``l(w_t^T x_t, y_t)``; ``g_t = l'(w_t^T x_t, y_t) x_t``;
    3. add the row ``sqrt(mu + eta_t) g_t`` to the sketch (skipped when ``g_t = 0``);
    4. ``u_{t+1} = w_t - H_t^{-1} g_t``.

    ``sketch``: "rfd" (``H = alpha I + B^T B``), "fd" (``alpha_0 I + B^T B``), "rp"
    (random projection, ``alpha_0 I + B^T B``), "oja" (Oja-SON: Oja's sketch
    ``B = diag(sqrt(e)) V``, ``alpha_0 I + B^T B``, Luo et al. 2016 Algorithm 4; needs
    ``m <= d``; ``V_0`` drawn from ``seed``) or "full" (FULL-ON, exact ``H``, needs
    ``alpha0 > 0``). ``mu`` defaults to the loss's exp-concavity constant
    (:func:`default_mu`); ``eta`` is the explorer's extra curvature knob, constant or
    ``eta / t`` (``eta_schedule="inverse_t"``, the papers' O(1/t)). ``C`` caps every
    prediction: with the logistic loss ``C = 1`` keeps it where the loss is nearly linear,
    and a wider slab (``C = 10`` with ``alpha0 > 0`` and a small ``eta``) made about a third
    fewer mistakes on the benchmark stream (lesson 3, "How wide a slab?").

    Defaults: ``alpha0``, ``eta`` and ``C`` are ``"auto"``, resolved at the first round with
    a non-zero gradient (before it ``u = 0``) by the rules of :mod:`explorer.son_defaults`
    (:meth:`_resolve`), provisionally until a later row of a similar scale confirms them
    (:meth:`_check_anchor`). ``get_params()`` keeps ``"auto"``; the properties and
    ``state_dict`` hold the values in use (placeholders while :attr:`pending_defaults` is
    not empty). The JMLR setting is ``alpha0=0.0, eta=0.0, C=1.0``.

    With ``alpha = 0`` (RFD-SON with ``alpha0 = 0`` before the first shrink) the step uses
    the pseudo-inverse and the slab projection is Euclidean; with ``alpha > 0`` it is in
    the H norm, unless ``x^T H^{-1} x`` is numerically zero next to its largest
    possible value ``|x|^2 / alpha`` (a scale-free test).

    Allowed settings (anything else is a ``ValueError`` naming the argument): ``d >= 1``;
    ``m >= 2``, with no kept matrix over :data:`explorer._validation.MAX_ENTRIES` entries; ``C`` in
    :data:`SCALES` = [1e-100, 1e100] or "auto"; ``alpha0`` and ``eta`` "auto", 0 or in
    :data:`SCALES`, ``mu`` (given, or the default for C) 0 or in :data:`SCALES`,
    ``mu + eta > 0``, ``alpha0 > 0`` for FULL-ON;
    ``fast`` True or False; ``seed`` None or an integer in [0, 2^63); ``loss`` one of
    :data:`SUPPORTED_LOSSES`. Labels are finite with ``|y| <= 1e100``, and -1 or +1 for
    the logistic loss.

    All or nothing: ``learn``, ``step`` and ``learn_many`` check their input first (a
    ``ValueError`` naming what is wrong); a round whose numbers leave the range the maths
    can hold (a curvature row whose squared norm underflows, :data:`TINY_SQUARED_ROW`, or
    passes the sketch's limit of 1e300; a prediction ``u^T x`` or a Newton step that
    overflows; a failed solve) raises :class:`~explorer.errors.Diverged` (a ``ValueError``)
    naming the row and the round, with the learner exactly as before the call.
    Scale-equivariant where the maths is: RFD-SON with ``alpha0 = 0`` or ``"auto"`` learns
    rows of norm 1e-120 to 1e120 alike (``u`` scales inversely). With a fixed tiny ``alpha0``
    (``B^T B`` over 1e16 times ``alpha0 I``) the Woodbury solve loses every digit
    (docs/algorithms.md section 3.5): such runs stay finite, in the slab, or are refused.

    ``step(x, y)`` is ``learn`` returning the round's :class:`~explorer.hooks.StepRecord`:
    the loss, the prediction ``clip(u_t^T x, -C, C)``, the gradient scale ``l'`` there (the
    sketch received ``sqrt(curvature_weight(t)) l' x``), the
    :class:`~explorer.sketch.ShrinkRecord` if the row made the sketch shrink, alpha and the
    rank. ``with_params`` changes a :data:`HOT` setting mid-stream: ``eta``, ``eta_schedule``
    (both weigh the rows to come) or ``alpha0`` (``B`` kept, ``H`` shifted). Hooks: the
    sketch's "shrink" events (t = round), and every round's "step" record, which then also
    holds the condition number of ``H`` (O(m^3), only when a hook listens).

    >>> import numpy as np
    >>> learner = SketchedOnlineNewton(3, sketch="rfd", m=2, alpha0=0.0, eta=0.0, C=1.0)
    >>> [round(learner.learn(x, y), 3) for x, y in [([1, 0, 0], 1), ([1, 0, 0], 1)]]
    [1.0, 0.0]
    >>> float(learner.predict([1, 0, 0]))
    1.0
    """

    HOT = ("eta", "alpha0", "eta_schedule")

    def __init__(self, d: int, *, sketch: str = "rfd", m: int = 10, alpha0: float | str = AUTO,
                 eta: float | str = AUTO, mu: float | None = None, C: float | str = AUTO,
                 fast: bool = True, loss: str = "squared", eta_schedule: str = "constant",
                 seed: int | None = None):
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        self.sketch_kind = check_choice("sketch", sketch, SKETCHES)
        self._eta_schedule = check_choice("eta_schedule", eta_schedule, ETA_SCHEDULES)
        self.loss = check_choice("loss", loss, SUPPORTED_LOSSES)
        self.m = check_int("m", m, minimum=2)
        if not isinstance(fast, (bool, np.bool_)):
            raise ValueError(f"fast must be True or False, got {fast!r}")
        self.fast = bool(fast)
        self._check_size()
        given = {"alpha0": given_setting("alpha0", alpha0, zero=True), "eta": given_setting("eta", eta, zero=True),
                 "C": given_setting("C", C, zero=False)}
        if mu is None and given["C"] == AUTO:
            given["mu"] = AUTO
        #: the settings given as "auto", and those still waiting for data (see _resolve)
        self._auto = tuple(name for name in AUTO_NAMES if given.get(name) == AUTO)
        self._pending = self._auto if self.loss == "squared" else tuple(
            name for name in self._auto if name == "alpha0")  # logistic: Y = 1 is known
        self._pending_at_start = self._pending
        #: (|x|^2, |y|) of the row the auto settings came from, until a later row confirms them
        self._anchor: tuple[float, float] | None = None
        if self.sketch_kind == "full" and given["alpha0"] == 0:
            raise ValueError("alpha0 must be > 0 for sketch='full' (H_0 = alpha0 I is inverted), got 0")
        if self.loss == "logistic":
            labels = auto_settings(self.loss, 1.0)
            given.update({name: labels[name] for name in ("eta", "C") if given[name] == AUTO})
            given.pop("mu", None)  # the default for the resolved C, below
        given = {name: PLACEHOLDERS[name] if value == AUTO else value for name, value in given.items()}
        # FULL-ON keeps H^{-1} = I / alpha0 from the start: 1 until alpha0 is known
        self._alpha0 = 1.0 if "alpha0" in self._pending and self.sketch_kind == "full" else given["alpha0"]
        self._eta = given["eta"]
        self.C = given["C"]
        if "mu" in given:
            mu = given["mu"]
        elif mu is None:
            mu = default_mu(self.loss, self.C)
            if not SCALES[0] <= mu <= SCALES[1]:
                raise ValueError(f"the default mu for the {self.loss} loss with C = {self.C:g} is "
                                 f"{mu:.3g}, outside [{SCALES[0]:.0e}, {SCALES[1]:.0e}]; choose a C "
                                 f"nearer 1 or give mu")
        self.mu = check_scale("mu", mu, zero=True)
        if self.mu + self.eta <= 0 and not {"eta", "mu"} & set(self._pending):
            raise ValueError("mu + eta must be > 0 (the weight of each gradient in H)")
        if seed is not None and (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral)
                                 or not 0 <= seed < 2 ** 63):
            raise ValueError(f"seed must be None or an integer in [0, 2^63), got {seed!r}")
        self.seed = None if seed is None else int(seed)
        self._loss_function = get_loss(self.loss)
        self.u = np.zeros(self.d)
        self.t = 0
        self.last_prediction = 0.0
        # a shrink happens inside round self.t + 1 (self.t counts the rounds done)
        self._use_curvature(self._make_curvature())

    def _check_size(self) -> None:
        """Refuse settings whose matrices would not fit in :data:`explorer._validation.MAX_ENTRIES` entries."""
        if self.sketch_kind == "full":
            shape = (self.d, self.d)
        else:
            capacity = 2 * self.m if self.fast and self.sketch_kind != "rp" else self.m
            shape = max((capacity, self.d), (capacity, capacity), key=lambda s: s[0] * s[1])
        check_matrix_size(f"d = {self.d} and m = {self.m}", *shape)

    def _make_curvature(self):
        if self.sketch_kind == "full":
            return _FullCurvature(self.d, self.alpha0)
        if self.sketch_kind == "rp":
            sketch = RandomProjectionSketch(self.d, self.m, seed=self.seed)
        elif self.sketch_kind == "oja":
            sketch = OjaSketch(self.d, self.m, seed=self.seed)
        elif self.sketch_kind == "rfd":
            sketch = RobustFrequentDirections(self.d, self.m, alpha0=self.alpha0, fast=self.fast)
        else:
            sketch = FrequentDirections(self.d, self.m, fast=self.fast)
        return _SketchCurvature(sketch, self.alpha0)

    def __repr__(self) -> str:
        return (f"SketchedOnlineNewton(d={self.d}, sketch={self.sketch_kind!r}, m={self.m}, "
                f"alpha0={self.alpha0:g}, eta={self.eta:g}, loss={self.loss!r}) t={self.t}")

    def get_params(self) -> dict:
        """The constructor's arguments; ``sketch`` is the kind (``sketch_kind``), since the
        attribute ``sketch`` is the sketch object, and ``mu`` the value in use (the default
        for the loss and C if none was given). Settings given as ``"auto"`` stay ``"auto"``
        (``mu`` None with an auto ``C``): a twin resolves them from its own data."""
        params = {**super().get_params(), "sketch": self.sketch_kind}
        return {**params, **{name: None if name == "mu" else AUTO for name in self._auto}}

    @property
    def pending_defaults(self) -> tuple[str, ...]:
        """The ``"auto"`` settings still waiting for the first round with a non-zero gradient
        (until then ``alpha0``, ``eta``, ``C``, ``mu`` read placeholders no round uses).

        >>> learner = SketchedOnlineNewton(3)
        >>> learner.pending_defaults, learner.get_params()["alpha0"]
        (('alpha0', 'eta', 'C', 'mu'), 'auto')
        >>> _ = learner.learn([3.0, 0.0, 4.0], 2.0)  # |y| = 2, |x|^2 = 25, l'(0, y) = -4
        >>> learner.pending_defaults, learner.C, learner.eta, round(learner.alpha0, 9)
        ((), 20.0, 0.03125, 12.625)
        """
        return self._pending

    def _placeholder(self, name: str) -> float:
        """What a pending setting holds (FULL-ON's alpha0 is 1: it keeps ``I / alpha0``)."""
        return 1.0 if name == "alpha0" and self.sketch_kind == "full" else PLACEHOLDERS[name]

    def _resolve(self, x: np.ndarray, y: float, slope: float, t: int) -> None:
        """Resolve the pending ``"auto"`` settings at the first round whose gradient
        ``g = l'(0, y) x`` is not zero (earlier rounds changed nothing but ``t``), by the
        rules of :mod:`explorer.son_defaults`: each pending one of ``C``, ``eta``, ``mu``
        from ``Y = |y|``; ``alpha0 = ||sqrt(mu + eta_t) g||^2`` (RFD-SON, FULL-ON) or
        ``2 l''_max ||x||^2`` (FD, RP, Oja-SON, raised by later rows: :meth:`_raise_alpha0`).
        Raises :class:`_Refused` for settings out of range; the caller undoes everything."""
        pending = set(self._pending)
        if pending & {"C", "eta", "mu"}:
            try:
                labels = auto_settings(self.loss, abs(y), slab="C" in pending, eta="eta" in pending,
                                       mu="mu" in pending)
            except ValueError as error:
                raise _Refused(str(error)) from None
            self.C = labels.get("C", self.C)
            self._eta = labels.get("eta", self._eta)
            self.mu = labels.get("mu", self.mu)
        if "alpha0" in pending:
            row = math.sqrt(self.curvature_weight(t)) * slope * x
            self._curvature_row_is_new(row, x)  # refuses a row the curvature cannot take
            self._alpha0 = self._needed_alpha0(x) if self.sketch_kind in FIXED_SHIFT_SKETCHES else _ddot(row, row)
        self._pending = ()
        squared = _ddot(x, x)
        self._anchor = (squared, abs(y) if self.loss == "squared" else 0.0) if squared > 0 else None
        self._use_curvature(self._make_curvature())

    def _check_anchor(self, x: np.ndarray, y: float) -> None:
        """Auto settings resolved from one row are provisional: the next non-zero row that
        :func:`~explorer.son_defaults.scales_agree` with it confirms them; one that does not
        (the first row was 1e-140 where the rest are 1, or the other way round) discards the
        provisional start, ``u``, the sketch and the settings, and this round resolves them
        again from its own row: one degenerate first row cannot fix the scale for ever."""
        if self._anchor is None or not x.any():
            return
        if scales_agree(self._anchor, _ddot(x, x), y):
            self._anchor = None
            return
        for name in self._pending_at_start:
            value = self._placeholder(name)
            if name in ("alpha0", "eta"):
                setattr(self, f"_{name}", value)
            else:
                setattr(self, name, value)
        self._pending, self._anchor, self.u = self._pending_at_start, None, np.zeros(self.d)
        self._use_curvature(self._make_curvature())

    def _needed_alpha0(self, x: np.ndarray) -> float:
        """FD/RP/Oja-SON's auto alpha0 for the row x (:func:`~explorer.son_defaults.unsketched_alpha0`)."""
        alpha0 = unsketched_alpha0(self.loss, _ddot(x, x))
        if not 0.0 < alpha0 <= MAX_SQUARED_MASS:
            raise _Refused(f"the auto alpha0 2 l''_max |x|^2 = {alpha0:.3g} for this row is outside "
                           f"(0, {MAX_SQUARED_MASS:.0e}]; rescale the data")
        return alpha0

    def _raise_alpha0(self, x: np.ndarray) -> Callable[[], None] | None:
        """FD/RP/Oja-SON with an auto alpha0: raise it to this row's :meth:`_needed_alpha0`
        if larger (the largest over the rows seen); returns a function that undoes the raise
        exactly, or None if nothing changed."""
        if self.sketch_kind not in FIXED_SHIFT_SKETCHES or "alpha0" not in self._auto:
            return None
        needed = self._needed_alpha0(x)
        if not needed > self._alpha0:
            return None
        curvature = self._curvature
        kept = (self._alpha0, curvature.factor.copy(order="K"), curvature.factored, curvature.shift)

        def undo() -> None:
            self._alpha0 = curvature.alpha0 = kept[0]
            curvature.factor[:], curvature.factored, curvature.shift = kept[1:]
        self._alpha0 = curvature.alpha0 = needed
        curvature.refactor()
        return undo

    def _use_curvature(self, curvature) -> None:
        """Keep ``curvature`` (built for the alpha0 now in use), its sketch's events forwarded
        (and the replaced curvature's sketch no longer)."""
        replaced = getattr(self, "_curvature", None)
        if replaced is not None and replaced.sketch is not None:
            self._stop_forwarding(replaced.sketch)
        self._curvature = curvature
        if self._curvature.sketch is not None:
            self._forward_events(self._curvature.sketch,
                                 lambda event: dataclasses.replace(event, t=self.t + 1))

    @property
    def sketch(self):
        """The sketch object (None for FULL-ON)."""
        return self._curvature.sketch

    @property
    def alpha0(self) -> float:
        """``H_0 = alpha0 I`` (read-only: ``with_params(alpha0=...)`` continues with another)."""
        return self._alpha0

    @property
    def eta(self) -> float:
        """The extra curvature weight (read-only: ``with_params(eta=...)``)."""
        return self._eta

    @property
    def eta_schedule(self) -> str:
        """``eta_t = eta`` ("constant") or ``eta / t`` (read-only: ``with_params``)."""
        return self._eta_schedule

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

    def curvature_weight(self, t: int) -> float:
        """``mu + eta_t``, the weight of round ``t``'s gradient in ``H`` (its row in the
        sketch is ``sqrt(mu + eta_t) g_t``): ``eta_t = eta``, or ``eta / t`` with
        ``eta_schedule="inverse_t"``. With a step record ``rec``, round t added
        ``curvature_weight(rec.t) * rec.gradient_scale ** 2 * x x^T`` to ``H``.

        >>> SketchedOnlineNewton(2, eta=0.5, mu=0.25, eta_schedule="inverse_t").curvature_weight(2)
        0.5
        """
        return self.mu + (self._eta / t if self._eta_schedule == "inverse_t" else self._eta)

    def predict(self, x) -> float:
        """The prediction ``w^T x`` after the slab projection: ``clip(u^T x, -C, C)``.

        :class:`~explorer.errors.Diverged` if ``u^T x`` overflows (``learn`` refuses such a
        row too)."""
        x = as_row(x, self.d)
        with _quiet():
            z = float(self.u @ x)
        if not math.isfinite(z):
            raise Diverged("x: the prediction u^T x overflows; rescale x", t=self.t + 1)
        return min(max(z, -self.C), self.C)

    def learn(self, x, y) -> float:
        """Suffer the loss of the projected ``w_t`` on ``(x, y)``, then take the Newton step.

        The prediction the loss was suffered on, ``w_t^T x`` (what :meth:`predict` gave just
        before), is kept as ``last_prediction``: progressive evaluation without a second pass
        over ``x``. All or nothing: a refused round (``ValueError``, or
        :class:`~explorer.errors.Diverged`) changes nothing. ``step(x, y).loss``.
        """
        return self._checked_round(x, y, False)[0]

    def step(self, x, y) -> StepRecord:
        """:meth:`learn`, returning the round's :class:`~explorer.hooks.StepRecord` (see the
        class docstring; hooks receive this same record).

        >>> rec = SketchedOnlineNewton(2, m=2).step([2.0, 0.0], 1.0)
        >>> rec.t, rec.loss, rec.prediction, rec.gradient_scale, rec.shrink, rec.rank
        (1, 1.0, 0.0, -2.0, None, 1)
        """
        return self._checked_round(x, y, True)[2]

    def _checked_round(self, x, y, record: bool) -> tuple:
        """One round on an unchecked row and label: ``(loss, w_t^T x, StepRecord or None)``."""
        x = as_row(x, self.d)
        y = check_label(y, self.loss, bound=SCALES[1])
        try:
            # a round that resolves "auto" settings is undone whole, settings included
            provisional = self._pending or self._anchor is not None
            with _quiet(), all_or_nothing(self) if provisional else contextlib.nullcontext():
                done = self._round(x, y, undoable=True, record=record)
        except _Refused as refusal:
            raise Diverged(f"x: {refusal}; nothing was updated", t=self.t + 1) from None
        self.last_prediction = done[1]
        return done

    def learn_many(self, X, y, *, return_predictions: bool = False):
        """:meth:`learn` on each row of ``X`` with labels ``y`` in order; returns the losses.

        The same numbers as a loop of ``learn``, but every row and label is checked once,
        first, which saves about a sixth of a round's time at d = 500. All or nothing: if
        any round is refused, the whole call is undone (one snapshot of the state per call)
        and the ``ValueError`` (:class:`~explorer.errors.Diverged` with its ``row`` and
        ``t``, if the numbers left the finite range) names the row; step records already
        sent to hooks stay sent.
        With ``return_predictions``, returns ``(losses, predictions)``: also each
        ``w_t^T x_t`` the loss was suffered on, for progressive evaluation.

        >>> learner = SketchedOnlineNewton(2, m=2, alpha0=0.0, eta=0.0, C=1.0)  # the JMLR setting
        >>> losses, predictions = learner.learn_many([[1, 0], [1, 0]], [1, 1], return_predictions=True)
        >>> losses.tolist(), predictions.tolist()
        ([1.0, 0.0], [0.0, 1.0])
        """
        X, y = as_labeled_rows(X, y, self.d)
        check_labels(y, self.loss, bound=SCALES[1])
        losses, predictions = np.empty(len(y)), np.empty(len(y))
        if len(y):
            with all_or_nothing(self), _quiet():
                for i, (x, label) in enumerate(zip(X, y.tolist())):
                    try:
                        losses[i], predictions[i], _ = self._round(x, label, undoable=False)
                    except _Refused as refusal:
                        raise Diverged(f"X row {i}: {refusal}; nothing was updated (the call is "
                                       f"undone)", row=i, t=self.t + 1) from None
            self.last_prediction = float(predictions[-1])
        return (losses, predictions) if return_predictions else losses

    def _round(self, x: np.ndarray, y: float, undoable: bool,
               record: bool = False) -> tuple[float, float, StepRecord | None]:
        """One round on a checked row and label; returns ``(loss, w_t^T x, record)``, or
        raises :class:`_Refused`. The :class:`~explorer.hooks.StepRecord` is built only if
        asked for (``step``) or a hook listens (it is then sent to the hooks), else None:
        ``learn`` pays nothing for it. Nothing of the learner's own is stored until the new
        ``u`` is known to be finite; the curvature puts itself back if ``undoable``."""
        self._check_anchor(x, y)
        w, at, z = self._project(x)
        loss, slope = self._loss_function.value_and_derivative(at, y)
        if not (math.isfinite(loss) and math.isfinite(slope)):
            raise _Refused(f"the loss at the prediction {z:.6g} and the label {y:.6g} overflows")
        t = self.t + 1
        shrink = None
        if slope != 0.0:
            if self._pending and x.any():
                self._resolve(x, y, slope, t)
            scale = math.sqrt(self.curvature_weight(t))
            g = slope * x
            row = scale * g
            if self._curvature_row_is_new(row, g):  # g = 0 adds nothing to H and leaves u = w
                raised = self._raise_alpha0(x)
                try:
                    w, shrink = self._curvature.step(w, g, row, scale, undoable)
                except _Refused:
                    if raised is not None and undoable:
                        raised()
                    raise
        self.u, self.t = w, t
        if not (record or self._hooks):
            return loss, z, None
        done = StepRecord(t=t, loss=loss, prediction=z, gradient_scale=slope, shrink=shrink,
                          alpha=self.alpha, rank=self._curvature.rank,
                          condition_number=self.condition_number() if self._hooks else None)
        if self._hooks:
            self._emit(done)
        return loss, z, done

    def _curvature_row_is_new(self, row: np.ndarray, g: np.ndarray) -> bool:
        """False for a zero gradient (nothing to add); True for a row the curvature can
        take; else :class:`_Refused`: a squared norm that underflows
        (:data:`TINY_SQUARED_ROW`) or takes the sketch past :data:`MAX_SQUARED_MASS`."""
        squared = _ddot(row, row)
        if squared == 0.0 and not g.any():
            return False
        if not squared >= TINY_SQUARED_ROW:
            raise _Refused(f"the curvature row sqrt(mu + eta_t) g_t is too small (squared norm "
                           f"{squared:.3g} < {TINY_SQUARED_ROW:.0e}, where its products underflow); "
                           f"rescale the data or the labels up")
        if not self._curvature.mass + squared <= MAX_SQUARED_MASS:
            raise _Refused(f"the curvature row sqrt(mu + eta_t) g_t is too large (the sketched "
                           f"squared norm would pass {MAX_SQUARED_MASS:.0e}, where a shrink "
                           f"overflows); rescale the data or the labels down")
        return True

    def _project(self, x: np.ndarray) -> tuple[np.ndarray, float, float]:
        """``(w_t, a_t, z_t)``: step 1, the slab projection, the point ``a_t`` the loss is
        taken at and the prediction ``z_t = clip(u_t^T x, -C, C)`` (:meth:`predict`'s, never
        outside ``[-C, C]``); ``a_t = w_t^T x = z_t`` but for rounding.

        When H is ill-conditioned (alpha tiny next to ``B^T B``) ``H^{-1} x`` can lose every
        digit and the H-norm projection miss the face ``w^T x = +-C`` by far: such a ``w``
        (off by more than :data:`FACE_MISS` of ``|u^T x|``) is replaced by the Euclidean
        projection. ``a_t = w_t^T x`` as computed, unless even that misses the face by more
        than ``FACE_MISS * C`` (then ``a_t = z_t``)."""
        z = float(self.u @ x)
        if abs(z) <= self.C:
            return self.u, z, z
        if not math.isfinite(z):
            raise _Refused("the prediction u^T x overflows")
        excess = np.sign(z) * (abs(z) - self.C)
        squared = float(x @ x)
        w = None
        if self.alpha > 0:
            try:
                solved = self._curvature.solve(x)
            except (ArithmeticError, np.linalg.LinAlgError) as error:
                raise _Refused(f"the slab projection failed ({error})") from None
            # x^T H^{-1} x >= |x|^2 / lambda_max(H); next to its largest possible value
            # |x|^2 / alpha it is numerically zero only when rounding ate it (scale-free)
            norm = float(x @ solved)
            if norm > 1e-12 * squared / self.alpha:
                w = _moved(self.u, excess, solved, norm)
                if w is not None and not abs(float(w @ x) - math.copysign(self.C, z)) <= FACE_MISS * abs(z):
                    w = None
        if w is None:  # the Euclidean projection, with the pseudo-inverse or as the fallback
            w = _moved(self.u, excess, x, squared)
        at = float(w @ x) if w is not None else math.nan
        if not math.isfinite(at):
            raise _Refused("the slab projection overflows")
        face = math.copysign(self.C, z)
        return w, (at if abs(at - face) <= FACE_MISS * self.C else face), face

    def _continue_state(self, state: dict, fresh: "SketchedOnlineNewton", changes: dict) -> dict:
        """This learner's state continued by ``fresh`` (:meth:`with_params`): eta and the
        eta schedule only weigh the rows to come, so they are stored as they are; a new
        ``alpha0`` changes ``H`` itself.

        Sketches only read alpha0 (RFD-SON: ``alpha = alpha0 + Delta / 2``), so ``B`` is
        kept and the Cholesky factor of ``alpha I + K`` recomputed. FULL-ON stores
        ``H^{-1}``: it becomes ``(H + (alpha0' - alpha0) I)^{-1}`` (one d x d
        eigendecomposition). An unchanged alpha0 leaves the state bit-identical.

        >>> full, fresh = (SketchedOnlineNewton(3, sketch="full", alpha0=a) for a in (1.0, 2.0))
        >>> _ = full.learn([1.0, 2.0, 0.0], 1.0), fresh.learn([1.0, 2.0, 0.0], 1.0)  # same g at u = 0
        >>> moved = full.with_params(alpha0=2.0)
        >>> bool(np.allclose(moved.solve([1.0, 1.0, 1.0]), fresh.solve([1.0, 1.0, 1.0]))), moved.alpha
        (True, 2.0)
        """
        if AUTO in changes.values():
            raise ValueError("with_params takes numbers; 'auto' is resolved once, at the first "
                             "round with a non-zero gradient (build a new learner for that)")
        state = super()._continue_state(state, fresh, changes)
        fresh_state = fresh.state_dict()
        state["auto"] = fresh_state["auto"]  # a setting given a number is no longer auto
        state["pending"] = ",".join(name for name in self._pending if name in fresh.pending_defaults)
        if not fresh._auto:  # nothing left to re-resolve
            state["anchor"] = np.zeros(2)
        alpha0 = fresh.alpha0
        if "alpha0" not in changes or alpha0 == self.alpha0:
            return state
        if self.sketch_kind == "full":
            values, vectors = np.linalg.eigh(state["curvature.inverse"])
            shifted = (vectors / (1.0 / values + (alpha0 - self.alpha0))) @ vectors.T
            state["curvature.inverse"] = (shifted + shifted.T) / 2
        else:
            del state["curvature.factor"], state["curvature.factored"]  # refactored for the new alpha
            if self.sketch_kind == "rfd":
                state["curvature.sketch.alpha0"] = alpha0
        return state

    # -- persistence ------------------------------------------------------------------------
    def _settings(self) -> dict:
        """The settings as a state dict stores them: the values in use (for an ``"auto"``
        one: resolved, or its placeholder while pending), seed None as -1."""
        return {**self.get_params(), "alpha0": self.alpha0, "eta": self.eta, "C": self.C,
                "mu": self.mu, "seed": -1 if self.seed is None else self.seed}

    def state_dict(self) -> dict:
        """Plain values; ``auto`` and ``pending`` name the settings given as ``"auto"`` and
        those not yet resolved (comma-separated), the settings hold the values in use."""
        return {"kind": type(self).__name__, **self._settings(), "auto": ",".join(self._auto),
                "pending": ",".join(self._pending), "anchor": np.array(self._anchor or (0.0, 0.0)),
                "u": self.u.copy(), "t": self.t,
                **{f"curvature.{k}": v for k, v in self._curvature.state_dict().items()}}

    @classmethod
    def from_state_dict(cls, state: dict) -> "SketchedOnlineNewton":
        reader = StateReader(state, cls)
        seed = reader.seed()
        seed = -1 if seed is None else seed  # older states: none
        auto = auto_names(reader, "auto")

        def given(name: str, **bounds):
            return AUTO if name in auto else reader.number(name, **bounds)

        learner = cls(reader.count("d", minimum=1), sketch=reader.text("sketch", SKETCHES),
                      m=reader.count("m", minimum=2), alpha0=given("alpha0", minimum=0.0),
                      eta=given("eta", minimum=0.0),
                      mu=None if "mu" in auto else reader.number("mu", minimum=0.0),
                      C=given("C", minimum=0.0, strict_minimum=True), fast=reader.flag("fast"),
                      loss=reader.text("loss", SUPPORTED_LOSSES),
                      eta_schedule=reader.text("eta_schedule", ETA_SCHEDULES),
                      seed=None if seed < 0 else seed)
        learner.load_state_dict(state)
        return learner

    def _check_in_use(self, reader: StateReader) -> tuple[dict, tuple[str, ...]]:
        """The ``"auto"`` settings a state holds, checked: ``({name: value}, pending)``.
        Pending ones hold their placeholders; resolved ones are what :meth:`_resolve` can
        give (finite, positive; alpha0 at most the sketch's mass limit)."""
        if auto_names(reader, "auto") != self._auto:
            raise reader.refuse("auto", repr(",".join(self._auto)), reader.raw("auto"))
        pending = auto_names(reader, "pending")
        if pending not in ((), self._pending_at_start):
            raise reader.refuse("pending", f"'' or {','.join(self._pending_at_start)!r}",
                                reader.raw("pending"))
        values = {}
        for name in self._auto:
            value = reader.number(name, minimum=0.0)
            if name not in self._pending_at_start:  # resolved when built (logistic: Y = 1)
                reader.same(name, getattr(self, name))
            elif name in pending:
                if value != self._placeholder(name):
                    raise reader.refuse(name, f"the placeholder {self._placeholder(name)} while "
                                        "pending", value)
            elif not (0.0 < value <= (MAX_SQUARED_MASS if name == "alpha0" else SCALES[1])):
                raise reader.refuse(name, "a resolved auto value: positive and finite", value)
            values[name] = value
        return values, pending

    def load_state_dict(self, state: dict) -> None:
        """Become the learner ``state`` describes, in place (same settings; hooks stay).

        Everything is checked before anything is stored: the settings equal this learner's,
        ``u`` is finite of shape (d,), ``t`` a count no smaller than the sketch's rows, the
        sketch part loads through the sketch's own ``load_state_dict``, ``K`` is ``B B^T``
        and the Cholesky factor factors ``shift I + K`` (FULL-ON: ``H^{-1}`` symmetric with
        eigenvalues in ``(0, 1/alpha0]``), up to :data:`STATE_TOLERANCE`. A refusal is a
        ``ValueError`` naming the key, with the learner as it was. States saved without
        ``seed`` or the Cholesky factor (older versions) still load.
        """
        reader = StateReader(state, type(self))
        in_use, pending = self._check_in_use(reader)
        for key, value in self._settings().items():
            if key not in in_use and (key != "seed" or reader.has("seed")):
                reader.same(key, value)
        u = reader.array("u", (self.d,))
        t = reader.count("t")
        part = state_part(state, "curvature.")
        # an auto alpha0 resolved otherwise (or not yet): checked against its own curvature
        alpha0 = in_use.get("alpha0", self.alpha0)
        curvature, previous = self._curvature, self._alpha0
        if alpha0 != self.alpha0:
            self._alpha0 = alpha0
            curvature = self._make_curvature()
            self._alpha0 = previous
        checked = curvature.check_state(part, StateReader(part, type(self), prefix="curvature."))
        if checked["n_seen"] > t:
            raise reader.refuse("t", f">= the {checked['n_seen']} rows the sketch has seen "
                                "(one per round)", t)
        if pending and (checked["n_seen"] or u.any()):
            raise reader.refuse("pending", "'' once a row has reached the curvature (u != 0)",
                                ",".join(pending))
        anchor = reader.array("anchor", (2,)) if reader.has("anchor") else np.zeros(2)  # older: none
        if (anchor < 0).any() or ((pending or not self._auto) and anchor.any()):
            raise reader.refuse("anchor", "(|x|^2, |y|) >= 0 of the row the auto settings came from, "
                                "zeros while pending or with no auto setting", anchor.tolist())
        if curvature is not self._curvature:
            self._alpha0 = alpha0
            self._use_curvature(curvature)
        self._curvature.assign(checked)
        self._anchor = (float(anchor[0]), float(anchor[1])) if anchor[0] > 0 else None
        self._eta, self.C, self.mu = (in_use.get(name, getattr(self, name)) for name in ("eta", "C", "mu"))
        self._pending = pending
        self.u, self.t = u, t
