r"""The curvature ``H_t`` of the sketched online Newton step, and ``H_t^{-1} v``.

:class:`SketchCurvature` is ``H = shift I + B^T B`` from a sketch ``B`` (RFD-SON: RFD's alpha;
FD-SON, RP-SON, Oja-SON: the fixed alpha_0), solved by Woodbury in O(md) per round;
:class:`FullCurvature` is FULL-ON's exact ``H^{-1}`` (d x d), updated by Sherman-Morrison.
Both have the same round interface: ``undo_point()``, ``add(row)`` (``H_t = H_{t-1} + r r^T``,
returning the sketch's :class:`~explorer.sketch.ShrinkRecord` or None), ``solve_gradient(g, c)``
(``H_t^{-1} g`` for the row ``r = c g`` just added), ``solve(v)``, and ``state_dict``,
``read_state``, ``assign`` for persistence. :func:`make_curvature` builds the one a sketch
kind names; :func:`check_row` refuses a row ``H`` cannot take. docs/algorithms.md sections 3.1
and 3.3.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy.linalg.blas import ddot as _ddot, dtrsv
from scipy.linalg.lapack import dpotrs

from .._validation import all_finite, check_matrix_size
from ..errors import Diverged
from ..hooks import Deferred
from ..learner import RoundRefused
from ..oja import OjaSketch
from ..sketch import (
    MAX_SQUARED_MASS, FrequentDirections, RandomProjectionSketch, RobustFrequentDirections,
    ShrinkRecord,
)
from ..state import StateReader, copy_array, state_part

__all__ = ["SketchCurvature", "FullCurvature", "SKETCHES", "TINY_SQUARED_ROW",
           "STATE_TOLERANCE", "make_curvature", "check_size", "check_row", "kappa_of_inner",
           "kappa_of_inverse"]

#: The curvature each ``sketch=`` names: RFD-SON, FD-SON, RP-SON, Oja-SON, FULL-ON.
SKETCHES = ("rfd", "fd", "rp", "oja", "full")

#: A curvature row ``sqrt(mu + eta_t) g_t`` with a squared norm below this is refused: its
#: products ``B B^T`` would be subnormal or 0 (the pseudo-inverse would silently drop it).
TINY_SQUARED_ROW = 1e-290

#: How far a loaded ``K``, Cholesky factor or ``H^{-1}`` may be from what its sketch
#: implies (relative): rounding over a long run stays far below, a tampered file does not.
STATE_TOLERANCE = 1e-6


def check_size(kind: str, d: int, m: int, fast: bool) -> None:
    """Refuse settings whose matrices would not fit in :data:`explorer._validation.MAX_ENTRIES` entries."""
    if kind == "full":
        shape = (d, d)
    else:
        capacity = 2 * m if fast and kind != "rp" else m
        shape = max((capacity, d), (capacity, capacity), key=lambda s: s[0] * s[1])
    check_matrix_size(f"d = {d} and m = {m}", *shape)


def make_curvature(kind: str, d: int, m: int, alpha0: float, fast: bool, seed: int | None,
                   normalize: bool = False):
    """The curvature ``sketch=kind`` names, with ``H_0 = alpha0 I`` (``normalize``: Oja's
    scale-free step, :class:`~explorer.oja.OjaSketch`)."""
    if kind == "full":
        return FullCurvature(d, alpha0)
    if kind == "rp":
        sketch = RandomProjectionSketch(d, m, seed=seed)
    elif kind == "oja":
        sketch = OjaSketch(d, m, seed=seed, normalize=normalize)
    elif kind == "rfd":
        sketch = RobustFrequentDirections(d, m, alpha0=alpha0, fast=fast)
    else:
        sketch = FrequentDirections(d, m, fast=fast)
    return SketchCurvature(sketch, alpha0)


def kappa_of_inner(K: np.ndarray, d: int, shift: float) -> float:
    """``kappa(shift I + B^T B) = (lambda_max + shift) / (lambda_min + shift)`` from the
    r x r ``K = B B^T``: ``B^T B`` shares K's d largest eigenvalues, its smallest is 0 when
    r < d; inf when ``lambda_min + shift`` is 0."""
    r = K.shape[0]
    eigenvalues = np.linalg.eigvalsh(K) if r else np.zeros(1)
    smallest = shift + (eigenvalues[r - d] if r >= d else 0.0)
    return float((eigenvalues[-1] + shift) / smallest) if smallest > 0 else np.inf


def kappa_of_inverse(inverse: np.ndarray) -> float:
    """``kappa(H)`` from the symmetric positive definite ``H^{-1}``: the ratio of its extreme
    eigenvalues (its lower triangle's: one symmetric eigenvalue problem, cheaper than an SVD);
    inf when rounding leaves the smallest at or below 0."""
    eigenvalues = np.linalg.eigvalsh(inverse)
    return float(eigenvalues[-1] / eigenvalues[0]) if eigenvalues[0] > 0 else np.inf


def check_row(row: np.ndarray, g: np.ndarray, mass: float) -> bool:
    """False for a zero gradient (nothing to add); True for a row the curvature can
    take; else :class:`~explorer.learner.RoundRefused`: a squared norm that underflows
    (:data:`TINY_SQUARED_ROW`) or takes the sketch's ``mass`` past :data:`MAX_SQUARED_MASS`."""
    squared = _ddot(row, row)
    if squared == 0.0 and not g.any():
        return False
    if not squared >= TINY_SQUARED_ROW:
        raise RoundRefused(f"the curvature row sqrt(mu + eta_t) g_t is too small (squared norm "
                      f"{squared:.3g} < {TINY_SQUARED_ROW:.0e}, where its products underflow); "
                      f"rescale the data or the labels up")
    if not mass + squared <= MAX_SQUARED_MASS:
        raise RoundRefused(f"the curvature row sqrt(mu + eta_t) g_t is too large (the sketched "
                      f"squared norm would pass {MAX_SQUARED_MASS:.0e}, where a shrink "
                      f"overflows); rescale the data or the labels down")
    return True


class SketchCurvature:
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

    def undo_point(self) -> Callable[[], None]:
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

    def solve_gradient(self, g: np.ndarray, scale: float) -> np.ndarray:
        """``H_t^{-1} g`` for the gradient whose row ``scale * g`` :meth:`add` just took: :meth:`solve`."""
        return self.solve(g)

    def solve(self, v: np.ndarray) -> np.ndarray:
        """``H^{-1} v`` by Woodbury (the pseudo-inverse if ``shift = 0``)."""
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
        """``kappa(H) = (lambda_max + shift) / (lambda_min + shift)`` now (:func:`kappa_of_inner`)."""
        return kappa_of_inner(self.inner[:self.rank, :self.rank], self.sketch.d, self.shift)

    def deferred_condition_number(self) -> Deferred:
        """:meth:`condition_number` as it is now, computed when read: O(r^2) now, O(r^3) then."""
        r = self.rank
        return Deferred(kappa_of_inner, self.inner[:r, :r].copy(), self.sketch.d, self.shift)

    def state_dict(self) -> dict:
        return {"inner": copy_array(self.inner), "factor": copy_array(self.factor),
                "factored": self.factored,
                **{f"sketch.{k}": v for k, v in self.sketch.state_dict().items()}}

    def read_state(self, state: dict, reader: StateReader) -> dict:
        """Everything :meth:`assign` needs from ``state`` (the ``curvature.`` part), checked
        and nothing stored: the sketch through its own ``load_state_dict`` (on a copy), then
        ``K`` and ``L`` against it."""
        # a fresh sketch with the same settings: the sketch itself may be mid-round (a batch
        # being rolled back after an interrupt), so its own state is not read
        probe = type(self.sketch)(**self.sketch.get_params())
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
        """Store what :meth:`read_state` returned (cannot fail: the sketch was checked)."""
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


class FullCurvature:
    """FULL-ON: ``H^{-1}`` itself (d x d), updated by Sherman-Morrison in O(d^2).

    With ``h = H^{-1} r`` and ``s = 1 + r^T h`` for the new row ``r = c g``:
    ``H_new^{-1} = H^{-1} - k k^T`` with ``k = h / sqrt(s)``, and the Newton step is
    ``H_new^{-1} g = h / (c s)`` (:meth:`solve_gradient`). :meth:`add` replaces the array
    ``H^{-1}`` rather than writing into it, so its :meth:`undo_point` copies nothing.
    ``k k^T <= H^{-1}``, so no entry of ``H^{-1}`` ever exceeds ``1 / alpha0``.
    """

    def __init__(self, d: int, alpha0: float):
        self.inverse = np.eye(d) / alpha0
        self.alpha0 = alpha0
        self.shift = alpha0
        self.sketch = None
        self.rank = d
        self.mass = 0.0
        self.added = np.zeros(d)

    def undo_point(self) -> Callable[[], None]:
        """A function that puts ``H^{-1}`` back as it is now (:meth:`add` replaces the array)."""
        inverse = self.inverse

        def undo() -> None:
            self.inverse = inverse
        return undo

    def add(self, row: np.ndarray) -> None:
        """``H^{-1} <- H^{-1} - k k^T`` for the row ``r``, keeping ``h / s = H_new^{-1} r``
        for :meth:`solve_gradient`; nothing is stored unless ``s > 0`` and ``k`` is finite
        (no sketch, so never a shrink)."""
        h = self.inverse @ row
        s = 1.0 + float(row @ h)
        if not (math.isfinite(s) and s > 0.0):
            raise ArithmeticError(f"1 + r^T H^{{-1}} r = {s:.6g}")
        k = h / math.sqrt(s)
        if not math.isfinite(_ddot(k, k)):
            raise Diverged("the step H^{-1} g overflows")
        self.inverse = self.inverse - np.outer(k, k)
        self.added = h / s
        return None

    def solve_gradient(self, g: np.ndarray, scale: float) -> np.ndarray:
        """``H_new^{-1} g = h / (s c)`` for the gradient whose row ``c g`` (``c = scale``)
        :meth:`add` just took: Sherman-Morrison's exact product, not ``H_new^{-1} @ g``."""
        return self.added / scale

    def solve(self, v: np.ndarray) -> np.ndarray:
        """``H^{-1} v``."""
        return self.inverse @ v

    def condition_number(self) -> float:
        """``kappa(H)`` now, from ``H^{-1}`` (O(d^3))."""
        return kappa_of_inverse(self.inverse)

    def deferred_condition_number(self) -> Deferred:
        """:meth:`condition_number` as it is now, computed when read: O(d^2) now, O(d^3) then."""
        return Deferred(kappa_of_inverse, self.inverse.copy())

    def state_dict(self) -> dict:
        return {"inverse": copy_array(self.inverse)}

    def read_state(self, state: dict, reader: StateReader) -> dict:
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
