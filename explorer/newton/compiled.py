r"""The sketched online Newton round compiled by numba: the fast path of ``learn``, ``learn_many``, ``progressive``.

The round is :meth:`~explorer.newton.SketchedOnlineNewton._round` (Algorithm 5 with RFD or FD:
FD's insert and its shrink through ``B B^T``), the numpy rule the lessons show and the browser
runs. :func:`rounds` plays it compiled for RFD-SON and FD-SON while no hook listens and no
``"auto"`` setting is pending, calling the BLAS/LAPACK routines the numpy rule reaches
(``ddot``, ``dgemv``, ``dtrsv``, ``dpotrs``, ``dsyrk``, ``dsyevd``, ``dgemm`` of
``scipy.linalg.cython_blas`` / ``cython_lapack``) on the same operands and summing
``einsum``'s row norms in numpy's order: the same numbers. A row the rule treats otherwise
(no Cholesky factor, a tall buffer's SVD shrink, a tiny, failed or watched shrink, a raised
FD-SON ``alpha_0``, any refusal) stops the loop before it is touched and goes to the numpy
round, so refusals, ``state_dict`` and resumes are the rule's own. ``progressive`` gets each
round's alpha_t and kappa(H_t) too (numpy's ``eigvalsh`` call, dsyevd without vectors, on
``K``); ``step`` stays numpy.

Switches and compile cost are :mod:`explorer.compiled`'s (re-exported here): numpy only
without numba or with ``EXPLORER_COMPILED=0``; compiled in a background thread at the first
round that wants it, the numpy rule playing until then (no slider move waits).

>>> import numpy as np
>>> from explorer.newton import RFDSON
>>> X, y = np.random.default_rng(0).standard_normal((40, 6)), np.arange(40.0) % 3
>>> fast = RFDSON(6, m=2).learn_many(X, y)
>>> with numpy_only():
...     reference = RFDSON(6, m=2).learn_many(X, y)
>>> bool(np.array_equal(fast, reference))
True

References: Luo, Chen, Zhang, Li (2017), *Online learning via regularized frequent
directions*, Algorithms 5-6; Lam, Pitrou, Seibert (2015), *Numba*, LLVM-HPC.
"""

from __future__ import annotations

import math

import numpy as np

from ..compiled import (AVAILABLE, COUNTS, dot, eigvalsh, eigvalsh_workspace, enabled, entry, error, factor_solve,
                        finite, jit, lower_solve, numpy_only, rows_times, settle, shrink, squared_rows, times_rows,
                        wait)
from ..sketch import MAX_SQUARED_MASS, TINY_SQUARE, FrequentDirections, RobustFrequentDirections
from .curvature import TINY_SQUARED_ROW, SketchCurvature
from .defaults import FIXED_SHIFT_SKETCHES, MAX_CURVATURE, UNSKETCHED_SAFETY

__all__ = ["AVAILABLE", "enabled", "numpy_only", "wait", "settle", "error", "rounds", "COUNTS", "LOSS_CODES",
           "CompiledRounds"]

#: The sketches whose shrink the kernel plays (FD's own rule; a subclass may change it).
COMPILED_SHRINKS = (FrequentDirections, RobustFrequentDirections)
#: The curvature's methods the kernel plays: one replaced on an instance (a test injecting a
#: fault) sends the rounds to the numpy rule, which calls it.
REPLACED = frozenset({"add", "solve", "solve_gradient", "undo_point", "refactor"})
#: The losses the kernel knows, by code (the learner passes its loss's code).
LOSS_CODES = {"squared": 0, "logistic": 1}
#: Slots of the kernel's scalar arrays (floats: settings and the sketch's mass).
C_, MU, ETA, SHIFT, MASS, ALPHA0, RAISE, FACE, DELTA_TOTAL, BASE = range(10)
T, FILLED, N_SEEN, FACTORED, CAPACITY, LOSS, INVERSE_T, CHECK_ALPHA0, N_SHRINKS, SHRINKS, RFD, M, KAPPA_FAILED = range(13)
#: The round outputs (:attr:`SketchedOnlineNewton.ROUND_OUTPUTS`) the kernel writes too.
COMPILED_OUTPUTS = frozenset({"alpha", "condition_number"})
#: An output nobody asked for.
NONE = np.empty(0)


def rounds(X: np.ndarray, y: np.ndarray, start: int, losses: np.ndarray, predictions: np.ndarray,
           u: np.ndarray, buffer: np.ndarray, inner: np.ndarray, factor: np.ndarray,
           floats: np.ndarray, ints: np.ndarray, alphas: np.ndarray = NONE,
           kappas: np.ndarray = NONE) -> int:
    """Play rows ``start, start + 1, ...`` of ``X`` (labels ``y``) compiled, writing each
    round's loss and prediction (and, into non-empty ``alphas`` / ``kappas``, alpha_t and
    kappa(H_t) after it), until the end or the first row the numpy rule must take;
    returns that row's index. ``u`` (a copy), ``buffer``, ``inner``, ``factor`` are updated
    in place, and ``floats`` / ``ints`` (slots above) hold the scalars before and after."""
    COUNTS["calls"] += 1
    stop = kernel(X, y, start, losses, predictions, u, buffer, inner, factor, floats, ints, alphas, kappas)
    COUNTS["rows"] += stop - start
    return stop


class CompiledRounds:
    """Mixin of :class:`~explorer.newton.SketchedOnlineNewton`: its rounds by :func:`rounds`
    where the compiled rule applies (RFD-SON, FD-SON; no hook; no pending ``"auto"``)."""

    #: The sketches the compiled round plays (the others always take the numpy rule).
    COMPILED_SKETCHES = ("rfd", "fd")

    def _compiled_rounds(self, X: np.ndarray, y: np.ndarray, start: int, losses: np.ndarray,
                         predictions: np.ndarray, face_miss: float,
                         outputs: dict[str, np.ndarray] | None = None) -> int:
        """Rows ``start, ...`` of checked ``X``, ``y`` by :func:`rounds` while it applies;
        returns the first row left to the numpy round (``start`` if none was played).
        ``face_miss``: :data:`explorer.newton.son.FACE_MISS`."""
        curvature, outputs = self._curvature, outputs or {}
        if (outputs.keys() - COMPILED_OUTPUTS or self._hooks or self._pending or self._anchor is not None
                or self.sketch_kind not in self.COMPILED_SKETCHES or type(curvature) is not SketchCurvature
                or vars(curvature).keys() & REPLACED or not enabled()):
            return start
        sketch = curvature.sketch
        buffer, inner, factor = sketch.writable_buffer(), curvature.inner, curvature.factor
        if not (buffer.flags.c_contiguous and inner.flags.c_contiguous and factor.flags.f_contiguous):
            return start  # not the layout the kernel was compiled for
        auto_alpha0 = self.sketch_kind in FIXED_SHIFT_SKETCHES and "alpha0" in self._auto
        rfd = self.sketch_kind == "rfd"
        # FD's shrink compiled too for a wide buffer (the Gram route) that no hook watches
        shrinks = type(sketch) in COMPILED_SHRINKS and sketch.capacity < self.d and not sketch.observed
        floats = np.array([self.C, self.mu, self._eta, curvature.shift, sketch.frobenius_squared,
                           self._alpha0, UNSKETCHED_SAFETY * MAX_CURVATURE[self.loss], face_miss,
                           sketch.delta_total, sketch.alpha0 if rfd else curvature.alpha0])
        ints = np.array([self.t, sketch.rank, sketch.n_seen, int(curvature.factored), sketch.capacity,
                         LOSS_CODES[self.loss], int(self._eta_schedule == "inverse_t"), int(auto_alpha0),
                         sketch.n_shrinks, int(shrinks), int(rfd), sketch.m, 0], dtype=np.int64)
        u = self.u.copy()
        X = np.ascontiguousarray(X, dtype=float)
        stop = rounds(X, np.ascontiguousarray(y, dtype=float), start, losses, predictions, u,
                      buffer, inner, factor, floats, ints, outputs.get("alpha", NONE),
                      outputs.get("condition_number", NONE))
        if stop > start:
            self.u, self.t = u, int(ints[T])
            sketch.rows_written(int(ints[FILLED]), int(ints[N_SEEN]), float(floats[MASS]),
                                n_shrinks=int(ints[N_SHRINKS]), delta_total=float(floats[DELTA_TOTAL]))
            curvature.shift, curvature.factored = float(floats[SHIFT]), bool(ints[FACTORED])
        if ints[KAPPA_FAILED]:  # the numpy rule's eigvalsh raises this when kappa is read
            raise np.linalg.LinAlgError("Eigenvalues did not converge")
        return stop

    def _compiled_learn(self, x: np.ndarray, y: float, face_miss: float) -> tuple | None:
        """``learn``'s round by :func:`rounds`: ``(loss, w_t^T x, None)``, or None if the
        numpy round must take it."""
        losses, predictions = np.empty(1), np.empty(1)
        # the kernel writes into the curvature in place: an interrupt (or any error) before
        # the learner's books are settled puts the round back, as the numpy round does
        undo, u, t = self._curvature.undo_point(), self.u, self.t
        try:
            played = self._compiled_rounds(x[None, :], np.array([y]), 0, losses, predictions, face_miss)
        except BaseException:
            undo()
            self.u, self.t = u, t
            raise
        if played == 0:
            return None
        return float(losses[0]), float(predictions[0]), None


_SIGNATURE = ("int64(float64[:, ::1], float64[::1], int64, float64[::1], float64[::1], float64[::1], "
              "float64[:, ::1], float64[:, ::1], float64[::1, :], float64[::1], int64[::1], float64[::1], "
              "float64[::1])")


@jit
def solve(v, B, factor, r, shift, projected, coefficients, out, ws):
    """out = H^{-1} v (curvature.SketchCurvature.solve, factored); False if B v overflows."""
    if r == 0:
        for j in range(v.size):
            out[j] = v[j] / shift
        return True
    rows_times(B, v, r, projected, ws)
    if not finite(projected[:r]):
        return False
    factor_solve(factor, projected, r, ws)
    times_rows(projected, B, r, coefficients, ws)
    for j in range(v.size):
        out[j] = (v[j] - coefficients[j]) / shift
    return True


@jit
def moved(u, excess, direction, norm, out):
    """son._moved: u - excess * direction / norm, else u - direction * (excess / norm)."""
    for j in range(u.size):
        out[j] = u[j] - excess * direction[j] / norm
    if not finite(out):
        for j in range(u.size):
            out[j] = u[j] - direction[j] * (excess / norm)
    return finite(out)


@jit
def kappa(inner, r, d, shift, K, values, work, iwork, sizes):
    """curvature.kappa_of_inner of ``inner[:r, :r]`` (numpy's eigvalsh through the same LAPACK
    call); NaN if LAPACK failed."""
    largest, low = 0.0, 0.0
    if r > 0:
        for a in range(r):
            for b in range(r):
                K[a * r + b] = inner[a, b]
        if eigvalsh(K, r, values, work, iwork, sizes) != 0:
            return math.nan
        largest = values[r - 1]
        low = values[r - d] if r >= d else 0.0
    smallest = shift + low
    return (largest + shift) / smallest if smallest > 0 else math.inf


@jit
def outputs(i, alphas, kappas, inner, r, d, shift, K, values, work, iwork, sizes):
    """Round i's alpha_t and kappa(H_t) into ``alphas`` / ``kappas`` when asked for; False if
    kappa's LAPACK call failed."""
    if alphas.size > 0:
        alphas[i] = shift
    if kappas.size > 0:
        kappas[i] = kappa(inner, r, d, shift, K, values, work, iwork, sizes)
        return not math.isnan(kappas[i])
    return True


@entry(_SIGNATURE)
def kernel(X, Y, start, losses, predictions, u, buffer, inner, factor, floats, ints, alphas, kappas):
    """The rounds of :func:`rounds` (Algorithm 5 as :meth:`~explorer.newton.SketchedOnlineNewton._round`)."""
    d, capacity = X.shape[1], ints[CAPACITY]
    # kappa's eigenvalue problem: its scratch, sized for the largest K once, and only when asked
    asked = capacity if kappas.size > 0 else 0
    if asked:
        work, iwork = eigvalsh_workspace(asked)
    else:
        work, iwork = np.empty(1), np.empty(1, np.int32)
    K, values, sizes = np.empty(asked * asked), np.empty(asked), np.zeros(4, np.int32)
    C, shift = floats[C_], floats[SHIFT]
    w, g, row, step = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    projected, coefficients, known = np.empty(capacity), np.empty(d), np.empty(capacity)
    saved, border = np.empty(capacity), np.empty(capacity)
    ws = np.zeros(4, np.int32)  # sizes for BLAS/LAPACK (ws[2]: dpotrs's info)
    for i in range(start, X.shape[0]):
        x, y, r = X[i], Y[i], ints[FILLED]
        factored = ints[FACTORED] == 1
        z = dot(u, x, d, ws)  # 1. the slab projection (son.project_on_slab)
        at, face, w[:] = z, z, u
        if abs(z) > C:
            if not math.isfinite(z):
                return i
            excess = np.sign(z) * (abs(z) - C)
            squared = dot(x, x, d, ws)
            projected_ok = False
            if shift > 0:
                if r > 0 and not factored:
                    return i  # LU: the numpy rule
                if not solve(x, buffer, factor, r, shift, projected, coefficients, step, ws):
                    return i
                norm = dot(x, step, d, ws)
                if norm > 1e-12 * squared / shift:
                    projected_ok = moved(u, excess, step, norm, w)
                    missed = abs(dot(w, x, d, ws) - math.copysign(C, z)) if projected_ok else 0.0
                    projected_ok = projected_ok and missed <= floats[FACE] * abs(z)  # son.FACE_MISS
            if not projected_ok and not moved(u, excess, x, squared, w):
                return i
            at = dot(w, x, d, ws)
            if not math.isfinite(at):
                return i
            face = math.copysign(C, z)
            if not abs(at - face) <= floats[FACE] * C:
                at = face
        if ints[LOSS] == 0:  # 2. the loss and its slope (explorer.losses)
            residual = at - y
            loss, slope = residual * residual, 2.0 * residual
        else:
            margin = -y * at
            if margin > 0:
                tail = math.exp(-margin)
                loss, slope = margin + math.log1p(tail), -y / (1.0 + tail)
            else:
                tail = math.exp(margin)
                loss, slope = math.log1p(tail), -y * tail / (1.0 + tail)
        if not (math.isfinite(loss) and math.isfinite(slope)):
            return i
        t = ints[T] + 1
        if slope != 0.0:  # 3. the curvature row (curvature.check_row) and 4. the step
            eta_t = floats[ETA] / t if ints[INVERSE_T] == 1 else floats[ETA]
            scale = math.sqrt(floats[MU] + eta_t)
            for j in range(d):
                g[j] = slope * x[j]
                row[j] = scale * g[j]
            squared = dot(row, row, d, ws)
            if squared != 0.0 or g.any():
                if not (squared >= TINY_SQUARED_ROW and floats[MASS] + squared <= MAX_SQUARED_MASS):
                    return i
                if ints[CHECK_ALPHA0] == 1:  # FD-SON's auto alpha0 (defaults._raise_alpha0)
                    needed = floats[RAISE] * dot(x, x, d, ws)
                    if not 0.0 < needed <= MAX_SQUARED_MASS or needed > floats[ALPHA0]:
                        return i
                if r == capacity - 1:  # the row fills the buffer: FD's shrink
                    if ints[SHRINKS] == 0:
                        return i
                    buffer[r] = row
                    kept, diagonal, lam = np.empty((capacity, d)), np.empty(capacity), np.empty(capacity)
                    keep, delta = shrink(buffer, capacity, ints[M], kept, lam)
                    largest = lam[0]
                    delta_total = floats[DELTA_TOTAL] + delta
                    shifted = floats[BASE] + delta_total / 2 if ints[RFD] == 1 else floats[BASE]
                    if keep < 0 or largest < TINY_SQUARE or not shifted > 0:
                        buffer[r] = 0.0  # a failed or tiny shrink, or alpha = 0: the numpy rule
                        return i
                    squared_rows(kept, keep, diagonal)  # SketchCurvature.add and refactor: K, L diagonal
                    diagonal_factor = np.zeros((capacity, capacity))
                    for j in range(keep):
                        diagonal_factor[j, j] = math.sqrt(shifted + diagonal[j])
                    ok = solve(g, kept, diagonal_factor, keep, shifted, projected, coefficients, step, ws)
                    for j in range(d):
                        step[j] = w[j] - step[j]
                    if not (ok and finite(step)):  # the step overflows: a refusal, by the numpy rule
                        buffer[r] = 0.0
                        return i
                    buffer[:keep], buffer[keep:] = kept[:keep], 0.0
                    inner[:, :], factor[:keep, :keep] = 0.0, 0.0
                    for j in range(keep):
                        inner[j, j], factor[j, j] = diagonal[j], diagonal_factor[j, j]
                    w[:] = step
                    ints[FILLED], ints[N_SEEN], ints[N_SHRINKS] = keep, ints[N_SEEN] + 1, ints[N_SHRINKS] + 1
                    ints[FACTORED], floats[MASS] = 1, floats[MASS] + squared
                    floats[DELTA_TOTAL], floats[SHIFT] = delta_total, shifted
                    shift = shifted
                    u[:] = w
                    ints[T] = t
                    losses[i], predictions[i] = loss, face
                    if not outputs(i, alphas, kappas, inner, ints[FILLED], d, shift, K, values, work, iwork, sizes):
                        ints[KAPPA_FAILED] = 1
                        return i + 1
                    continue
                if not (shift > 0 and factored):
                    return i  # no Cholesky factor: the numpy rule
                buffer[r] = row  # FD's insert into the next free row
                rows_times(buffer, row, r + 1, projected, ws)  # the border of K (SketchCurvature.add)
                known[:r] = projected[:r]
                if r > 0:
                    lower_solve(factor, known, r, ws)
                pivot = shift + projected[r] - (dot(known, known, r, ws) if r > 0 else 0.0)
                if not pivot > 0:
                    buffer[r] = 0.0
                    return i
                saved[:r + 1] = factor[r, :r + 1]
                factor[r, :r] = known[:r]
                factor[r, r] = math.sqrt(pivot)
                border[:r + 1] = projected[:r + 1]
                ok = solve(g, buffer, factor, r + 1, shift, projected, coefficients, step, ws)
                for j in range(d):
                    step[j] = w[j] - step[j]
                if not (ok and finite(step)):  # the step overflows: a refusal, by the numpy rule
                    buffer[r] = 0.0
                    factor[r, :r + 1] = saved[:r + 1]
                    return i
                inner[r, :r + 1] = border[:r + 1]
                inner[:r + 1, r] = border[:r + 1]
                w[:] = step
                ints[FILLED], ints[N_SEEN] = r + 1, ints[N_SEEN] + 1
                floats[MASS] = floats[MASS] + squared
        u[:] = w
        ints[T] = t
        losses[i], predictions[i] = loss, face
        if not outputs(i, alphas, kappas, inner, ints[FILLED], d, shift, K, values, work, iwork, sizes):
            ints[KAPPA_FAILED] = 1
            return i + 1
    return X.shape[0]
