r"""The sketched online Newton round compiled by numba: the fast path of ``learn`` and ``learn_many``.

The round is :meth:`~explorer.newton.SketchedOnlineNewton._round` (Algorithm 5 with RFD or FD),
the readable numpy rule the lessons show and the browser runs; :func:`rounds` plays it
compiled for RFD-SON and FD-SON while no hook listens and no ``"auto"`` setting is pending.
It calls the very BLAS/LAPACK routines the numpy rule reaches (``ddot``, ``dgemv``, ``dtrsv``,
``dpotrs``, through ``scipy.linalg.cython_blas`` / ``cython_lapack``) in the same order, so
its numbers are the numpy rule's; every case the reference handles differently stops the
compiled loop *before* that row is touched and leaves it to the numpy round: a shrink (the
buffer's last free row), a projection or solve without a Cholesky factor (``alpha = 0``'s
pseudo-inverse, LU after a lost pivot), a raised FD-SON ``alpha_0``, and every refusal
(non-finite prediction, loss or step, a row too small or too large). Refusals, records,
``state_dict`` and resumes are therefore the numpy rule's own.

Switches: numba missing (the runtime, Pyodide) or ``EXPLORER_COMPILED=0`` in the
environment: numpy only; :func:`numpy_only` does the same for a block (tests compare both).

Compile cost: the kernel is compiled with ``cache=True`` (numba's on-disk cache, next to
this file or, in a read-only install, in the user's cache directory) and, the first time a
process needs it, in a background thread: rounds run by the numpy rule until it is ready,
so no student's first slider move waits for the compiler. :func:`wait` blocks until ready.

>>> import numpy as np
>>> from explorer.newton import RFDSON
>>> learner = RFDSON(3, m=2, alpha0=1.0, eta=0.5, C=2.0)
>>> learner.learn_many(np.eye(3), [1.0, -1.0, 1.0]).tolist()
[1.0, 1.0, 1.0]

References: Luo, Chen, Zhang, Li (2017), *Online learning via regularized frequent
directions*, Algorithms 5-6; Lam, Pitrou, Seibert (2015), *Numba: a LLVM-based Python JIT
compiler*.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from typing import Iterator

import numpy as np

from ..sketch import MAX_SQUARED_MASS
from .curvature import TINY_SQUARED_ROW
from .defaults import FIXED_SHIFT_SKETCHES, MAX_CURVATURE, UNSKETCHED_SAFETY

__all__ = ["AVAILABLE", "enabled", "numpy_only", "wait", "rounds", "COUNTS", "LOSS_CODES", "CompiledRounds"]

try:
    import llvmlite.binding
    import numba
    from numba.extending import get_cython_function_address
except ImportError:  # the runtime and the browser build: numpy only
    numba = None

#: Whether numba is installed (the compiled path exists at all).
AVAILABLE = numba is not None
#: How many rows the compiled path played ("rows") and how often it was entered ("calls").
COUNTS = {"rows": 0, "calls": 0}
#: The losses the kernel knows, by code (the learner passes its loss's code).
LOSS_CODES = {"squared": 0, "logistic": 1}
#: Slots of the kernel's scalar arrays (floats: settings and the sketch's mass).
C_, MU, ETA, SHIFT, MASS, ALPHA0, RAISE, FACE = range(8)
T, FILLED, N_SEEN, FACTORED, CAPACITY, LOSS, INVERSE_T, CHECK_ALPHA0 = range(8)

_switch = {"on": os.environ.get("EXPLORER_COMPILED", "1") != "0"}
_compiler = {"thread": None, "ready": threading.Event(), "kernel": None, "error": None}


def enabled() -> bool:
    """Whether :func:`rounds` may run: numba installed, not switched off (``EXPLORER_COMPILED=0``,
    :func:`numpy_only`). Starts the background compile the first time it says True."""
    if not (AVAILABLE and _switch["on"]):
        return False
    if _compiler["thread"] is None:
        _compiler["thread"] = threading.Thread(target=_compile, name="explorer-numba", daemon=True)
        _compiler["thread"].start()
    return _compiler["ready"].is_set()


@contextlib.contextmanager
def numpy_only() -> Iterator[None]:
    """A block in which every round takes the numpy rule (the reference)."""
    before, _switch["on"] = _switch["on"], False
    try:
        yield
    finally:
        _switch["on"] = before


def wait(timeout: float | None = None) -> bool:
    """Block until the kernel is compiled (or loaded from the cache); True once it is."""
    if not (AVAILABLE and _switch["on"]):
        return False
    enabled()
    return _compiler["ready"].wait(timeout) and _compiler["kernel"] is not None


def rounds(X: np.ndarray, y: np.ndarray, start: int, losses: np.ndarray, predictions: np.ndarray,
           u: np.ndarray, buffer: np.ndarray, inner: np.ndarray, factor: np.ndarray,
           floats: np.ndarray, ints: np.ndarray) -> int:
    """Play rows ``start, start + 1, ...`` of ``X`` (labels ``y``) compiled, writing each
    round's loss and prediction, until the end or the first row the numpy rule must take;
    returns that row's index. ``u`` (a copy), ``buffer``, ``inner``, ``factor`` are updated
    in place, and ``floats`` / ``ints`` (slots above) hold the scalars before and after."""
    COUNTS["calls"] += 1
    stop = _compiler["kernel"](X, y, start, losses, predictions, u, buffer, inner, factor, floats, ints)
    COUNTS["rows"] += stop - start
    return stop


class CompiledRounds:
    """Mixin of :class:`~explorer.newton.SketchedOnlineNewton`: its rounds by :func:`rounds`
    where the compiled rule applies (RFD-SON, FD-SON; no hook; no pending ``"auto"``)."""

    #: The sketches the compiled round plays (the others always take the numpy rule).
    COMPILED_SKETCHES = ("rfd", "fd")

    def _compiled_rounds(self, X: np.ndarray, y: np.ndarray, start: int, losses: np.ndarray,
                         predictions: np.ndarray, face_miss: float) -> int:
        """Rows ``start, ...`` of checked ``X``, ``y`` by :func:`rounds` while it applies;
        returns the first row left to the numpy round (``start`` if none was played).
        ``face_miss``: :data:`explorer.newton.son.FACE_MISS`."""
        if (self._hooks or self._pending or self._anchor is not None
                or self.sketch_kind not in self.COMPILED_SKETCHES or not enabled()):
            return start
        curvature = self._curvature
        sketch = curvature.sketch
        auto_alpha0 = self.sketch_kind in FIXED_SHIFT_SKETCHES and "alpha0" in self._auto
        floats = np.array([self.C, self.mu, self._eta, curvature.shift, sketch.frobenius_squared,
                           self._alpha0, UNSKETCHED_SAFETY * MAX_CURVATURE[self.loss], face_miss])
        ints = np.array([self.t, sketch.rank, sketch.n_seen, int(curvature.factored), sketch.capacity,
                         LOSS_CODES[self.loss], int(self._eta_schedule == "inverse_t"), int(auto_alpha0)],
                        dtype=np.int64)
        u = self.u.copy()
        X = np.ascontiguousarray(X, dtype=float)
        stop = rounds(X, np.ascontiguousarray(y, dtype=float), start, losses, predictions, u,
                      sketch.writable_buffer(), curvature.inner, curvature.factor, floats, ints)
        if stop > start:
            self.u, self.t = u, int(ints[T])
            sketch.rows_written(int(ints[FILLED]), int(ints[N_SEEN]), float(floats[MASS]))
        return stop

    def _compiled_learn(self, x: np.ndarray, y: float, face_miss: float) -> tuple | None:
        """``learn``'s round by :func:`rounds`: ``(loss, w_t^T x, None)``, or None if the
        numpy round must take it."""
        losses, predictions = np.empty(1), np.empty(1)
        if self._compiled_rounds(x[None, :], np.array([y]), 0, losses, predictions, face_miss) == 0:
            return None
        return float(losses[0]), float(predictions[0]), None


def _compile() -> None:
    try:
        kernel.compile(_SIGNATURE)  # or loaded from numba's cache
        kernel.disable_compile()  # another signature would compile in the foreground
        _compiler["kernel"] = kernel
    except Exception as error:  # a broken numba install: numpy only, and say why
        _compiler["error"] = error
        _switch["on"] = False
    _compiler["ready"].set()


_SIGNATURE = ("int64(float64[:, ::1], float64[::1], int64, float64[::1], float64[::1], float64[::1], "
              "float64[:, ::1], float64[:, ::1], float64[::1, :], float64[::1], int64[::1])")

if AVAILABLE:  # scipy's own BLAS/LAPACK (the routines the numpy rule reaches), by symbol: cacheable
    def _routine(module: str, name: str, result, arguments: int):
        llvmlite.binding.add_symbol(f"explorer_{name}", get_cython_function_address(f"scipy.linalg.cython_{module}", name))
        return numba.types.ExternalFunction(f"explorer_{name}", result(*[numba.types.voidptr] * arguments))

    _ddot = _routine("blas", "ddot", numba.types.float64, 5)
    _dgemv = _routine("blas", "dgemv", numba.types.void, 11)
    _dtrsv = _routine("blas", "dtrsv", numba.types.void, 8)
    _dpotrs = _routine("lapack", "dpotrs", numba.types.void, 8)
    _jit = numba.njit(cache=True, nogil=True)
else:
    def _jit(function):  # numpy only: the kernel is never called
        return function


@_jit
def dot(a, b, n):
    """``a[:n] @ b[:n]`` (numpy: BLAS ddot)."""
    size, one = np.array([n], np.int32), np.array([1], np.int32)
    return _ddot(size.ctypes, a.ctypes, one.ctypes, b.ctypes, one.ctypes)


@_jit
def rows_times(B, v, r, out):
    """``out[:r] = B[:r] @ v`` (numpy: ddot for one row, else dgemv)."""
    if r == 1:
        out[0] = dot(B[0], v, v.size)
        return
    codes = np.array([84, 0], np.uint8)  # "T"
    sizes = np.array([v.size, r, 1, 0], np.int32)
    scalars = np.array([1.0, 0.0])
    _dgemv(codes.ctypes, sizes[0:].ctypes, sizes[1:].ctypes, scalars.ctypes, B.ctypes,
           sizes[0:].ctypes, v.ctypes, sizes[2:].ctypes, scalars[1:].ctypes, out.ctypes, sizes[2:].ctypes)


@_jit
def times_rows(c, B, r, out):
    """``out = c[:r] @ B[:r]`` (numpy: dgemv)."""
    codes = np.array([78, 0], np.uint8)  # "N"
    sizes = np.array([B.shape[1], r, 1], np.int32)
    scalars = np.array([1.0, 0.0])
    _dgemv(codes.ctypes, sizes[0:].ctypes, sizes[1:].ctypes, scalars.ctypes, B.ctypes,
           sizes[0:].ctypes, c.ctypes, sizes[2:].ctypes, scalars[1:].ctypes, out.ctypes, sizes[2:].ctypes)


@_jit
def factor_solve(L, b, r):
    """``b[:r] <- (L L^T)^{-1} b[:r]`` in place, ``L = L[:r, :r]`` lower (scipy's dpotrs)."""
    codes = np.array([76, 0], np.uint8)  # "L"
    sizes = np.array([r, 1, L.shape[0], 0], np.int32)
    _dpotrs(codes.ctypes, sizes[0:].ctypes, sizes[1:].ctypes, L.ctypes, sizes[2:].ctypes,
            b.ctypes, sizes[0:].ctypes, sizes[3:].ctypes)


@_jit
def lower_solve(L, b, n):
    """``b[:n] <- L[:n, :n]^{-1} b[:n]`` in place, L lower (scipy's dtrsv)."""
    codes = np.array([76, 78, 78], np.uint8)  # "L", "N", "N"
    sizes = np.array([n, L.shape[0], 1], np.int32)
    _dtrsv(codes[0:].ctypes, codes[1:].ctypes, codes[2:].ctypes, sizes[0:].ctypes, L.ctypes,
           sizes[1:].ctypes, b.ctypes, sizes[2:].ctypes)


@_jit
def finite(v):
    """Whether every entry of ``v`` is finite (``explorer._validation.all_finite``)."""
    for value in v:
        if not math.isfinite(value):
            return False
    return True


@_jit
def solve(v, B, factor, r, shift, projected, coefficients, out):
    """out = H^{-1} v (curvature.SketchCurvature.solve, factored); False if B v overflows."""
    if r == 0:
        out[:] = v / shift
        return True
    rows_times(B, v, r, projected)
    if not finite(projected[:r]):
        return False
    factor_solve(factor, projected, r)
    times_rows(projected, B, r, coefficients)
    out[:] = (v - coefficients) / shift
    return True

@_jit
def moved(u, excess, direction, norm, out):
    """son._moved: u - excess * direction / norm, else u - direction * (excess / norm)."""
    out[:] = u - excess * direction / norm
    if not finite(out):
        out[:] = u - direction * (excess / norm)
    return finite(out)

@_jit
def kernel(X, Y, start, losses, predictions, u, buffer, inner, factor, floats, ints):
    """The rounds of :func:`rounds` (Algorithm 5 as :meth:`~explorer.newton.SketchedOnlineNewton._round`)."""
    d, capacity = X.shape[1], ints[CAPACITY]
    C, shift = floats[C_], floats[SHIFT]
    w, g, row, step = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    projected, coefficients, known = np.empty(capacity), np.empty(d), np.empty(capacity)
    saved = np.empty(capacity)
    for i in range(start, X.shape[0]):
        x, y, r = X[i], Y[i], ints[FILLED]
        factored = ints[FACTORED] == 1
        z = dot(u, x, d)  # 1. the slab projection (son.project_on_slab)
        at, face, w[:] = z, z, u
        if abs(z) > C:
            if not math.isfinite(z):
                return i
            excess = np.sign(z) * (abs(z) - C)
            squared = dot(x, x, d)
            projected_ok = False
            if shift > 0:
                if r > 0 and not factored:
                    return i  # LU: the numpy rule
                if not solve(x, buffer, factor, r, shift, projected, coefficients, step):
                    return i
                norm = dot(x, step, d)
                if norm > 1e-12 * squared / shift:
                    projected_ok = moved(u, excess, step, norm, w)
                    if projected_ok and not abs(dot(w, x, d) - math.copysign(C, z)) <= floats[FACE] * abs(z):
                        projected_ok = False
            if not projected_ok and not moved(u, excess, x, squared, w):
                return i
            at = dot(w, x, d)
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
            g[:] = slope * x
            row[:] = scale * g
            squared = dot(row, row, d)
            if squared != 0.0 or g.any():
                if not (squared >= TINY_SQUARED_ROW and floats[MASS] + squared <= MAX_SQUARED_MASS):
                    return i
                if ints[CHECK_ALPHA0] == 1:  # FD-SON's auto alpha0 (defaults._raise_alpha0)
                    needed = floats[RAISE] * dot(x, x, d)
                    if not 0.0 < needed <= MAX_SQUARED_MASS or needed > floats[ALPHA0]:
                        return i
                if r == capacity - 1 or not (shift > 0 and factored):
                    return i  # a shrink, or no Cholesky factor: the numpy rule
                buffer[r] = row  # FD's insert into the next free row
                rows_times(buffer, row, r + 1, projected)  # the border of K (SketchCurvature.add)
                known[:r] = projected[:r]
                if r > 0:
                    lower_solve(factor, known, r)
                pivot = shift + projected[r] - (dot(known, known, r) if r > 0 else 0.0)
                if not pivot > 0:
                    buffer[r] = 0.0
                    return i
                saved[:r + 1] = factor[r, :r + 1]
                factor[r, :r] = known[:r]
                factor[r, r] = math.sqrt(pivot)
                inner_row = projected[:r + 1].copy()
                ok = solve(g, buffer, factor, r + 1, shift, projected, coefficients, step)
                if ok:
                    step[:] = w - step
                    ok = finite(step)
                if not ok:  # the step overflows: a refusal, by the numpy rule
                    buffer[r] = 0.0
                    factor[r, :r + 1] = saved[:r + 1]
                    return i
                inner[r, :r + 1] = inner_row
                inner[:r + 1, r] = inner_row
                w[:] = step
                ints[FILLED], ints[N_SEEN] = r + 1, ints[N_SEEN] + 1
                floats[MASS] = floats[MASS] + squared
        u[:] = w
        ints[T] = t
        losses[i], predictions[i] = loss, face
    return X.shape[0]
