r"""numba's compiled paths: the switch, the background compile, and the BLAS/LAPACK calls numpy makes.

A compiled path plays a rule the package also writes in numpy (the reference the lessons show
and the browser build runs), on the same operands through the same routines: ``ddot``,
``dgemv``, ``dtrsv``, ``dpotrs``, ``dsyevd``, ``dsyrk`` and ``dgemm`` of scipy's
``cython_blas`` / ``cython_lapack``, bound by symbol here (:func:`dot`, :func:`rows_times`, ...),
so both give the same numbers. Three paths use them: FD's shrink of a wide buffer
(:func:`shrink`, :meth:`~explorer.sketch.FrequentDirections.insert`; :func:`fd_shrink` is the
sketches' entry), the sketched online Newton round (:mod:`explorer.newton.compiled`) and online
PCA's mixture decomposition (:mod:`explorer.pca.compiled`, with :func:`numpy_sum`).

Switches: without numba (the runtime, Pyodide) or with ``EXPLORER_COMPILED=0``, numpy only;
:func:`numpy_only` for a block. Compile cost: ``cache=True`` (a folder per version of the
compiled modules' sources, under ``NUMBA_CACHE_DIR`` or ``~/.cache/explorer``), compiled
(numba imported too) in a background thread the first time :func:`enabled` is asked; the
numpy rule plays until then (no slider move waits). :func:`wait` blocks until it is ready; a
process ending sooner waits at exit.

>>> import numpy as np
>>> from explorer.sketch import FrequentDirections
>>> X = np.random.default_rng(0).standard_normal((50, 40))
>>> fast = FrequentDirections(40, 4, fast=True)
>>> fast.extend(X)
>>> with numpy_only():
...     reference = FrequentDirections(40, 4, fast=True)
...     reference.extend(X)
>>> bool(np.array_equal(fast.sketch, reference.sketch))
True

Reference: Lam, Pitrou, Seibert (2015), *Numba: a LLVM-based Python JIT compiler*, LLVM-HPC.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import math
import os
import sys
import threading
from typing import Callable, Iterator

import numpy as np

__all__ = ["AVAILABLE", "COUNTS", "EPS", "enabled", "numpy_only", "wait", "settle", "error", "jit", "entry",
           "dot", "rows_times", "times_rows", "factor_solve", "lower_solve", "finite",
           "squared_rows", "numpy_sum", "shrink", "fd_shrink", "eigvalsh", "eigvalsh_workspace"]

#: Whether numba is installed (the compiled paths exist at all; imported by the compiling thread).
try:
    AVAILABLE = importlib.util.find_spec("numba") is not None
except (ImportError, ValueError):  # a module "numba" that is not a package
    AVAILABLE = False
#: What the compiled paths played: the Newton rows ("rows") and calls ("calls"), FD's shrinks
#: ("shrinks"), online PCA's mixture decompositions ("decompositions").
COUNTS = {"rows": 0, "calls": 0, "shrinks": 0, "decompositions": 0}
EPS = float(np.finfo(float).eps)

_switch = {"on": os.environ.get("EXPLORER_COMPILED", "1") != "0"}
_compiler = {"thread": None, "ready": threading.Event(), "error": None, "lock": threading.Lock()}
#: The functions to compile, in order (a callee before its callers): (module name, function name).
_JITTED: list[tuple[str, str]] = []
#: The entry points called from Python, with the one signature each is compiled for.
_ENTRIES: list[tuple[str, str, str]] = []


def enabled() -> bool:
    """Whether the compiled paths may run: numba installed, not switched off
    (``EXPLORER_COMPILED=0``, :func:`numpy_only`), compiled. Starts the background compile
    the first time it is asked."""
    if not (AVAILABLE and _switch["on"]):
        return False
    if _compiler["thread"] is None:
        with _compiler["lock"]:
            if _compiler["thread"] is None:
                # not a daemon: a process that ends while LLVM compiles waits for it (killed
                # mid-compile, LLVM's teardown can abort the process) and caches the code
                _compiler["thread"] = threading.Thread(target=_compile, name="explorer-numba", daemon=False)
                _compiler["thread"].start()
    return _compiler["ready"].is_set()


@contextlib.contextmanager
def numpy_only() -> Iterator[None]:
    """A block in which every rule takes its numpy path (the reference)."""
    before, _switch["on"] = _switch["on"], False
    try:
        yield
    finally:
        _switch["on"] = before


def wait(timeout: float | None = None) -> bool:
    """Block until the compiled paths are ready (compiled or loaded from the cache); True once they are."""
    if not (AVAILABLE and _switch["on"]):
        return False
    enabled()
    return _compiler["ready"].wait(timeout) and _compiler["error"] is None


def settle(timeout: float | None = None) -> None:
    """Block until a compile that has started has ended (nothing if none started)."""
    thread = _compiler["thread"]
    if thread is not None:
        thread.join(timeout)


def error() -> Exception | None:
    """Why the compile failed (the paths are then off), or None."""
    return _compiler["error"]


def jit(function: Callable) -> Callable:
    """Mark a function of a compiled path: :func:`_compile` replaces it, wherever a module of
    such functions holds it, by numba's compiled version. Plain Python until then, never called."""
    _JITTED.append((function.__module__, function.__name__))
    return function


def entry(signature: str) -> Callable[[Callable], Callable]:
    """:func:`jit`, and compile the function for ``signature`` alone (called from Python)."""
    def mark(function: Callable) -> Callable:
        _ENTRIES.append((function.__module__, function.__name__, signature))
        return jit(function)
    return mark


def _compile() -> None:
    """Import numba, bind scipy's own BLAS/LAPACK (the routines numpy reaches) by symbol (so
    the cache can hold the code), compile every :func:`jit` function (or load it from numba's
    cache) in this background thread, not at import."""
    try:
        numba = importlib.import_module("numba")
        binding = importlib.import_module("llvmlite.binding")
        address = importlib.import_module("numba.extending").get_cython_function_address
        space = globals()
        for name, (module, result, arguments) in _ROUTINES.items():
            binding.add_symbol(f"explorer_{name}", address(f"scipy.linalg.cython_{module}", name))
            signature = getattr(numba.types, result)(*[numba.types.voidptr] * arguments)
            space[f"_{name}"] = numba.types.ExternalFunction(f"explorer_{name}", signature)
        modules = [sys.modules[name] for name in dict.fromkeys(module for module, _ in _JITTED)]
        config = importlib.import_module("numba.core.config")
        user_folder, config.CACHE_DIR = config.CACHE_DIR, _cache_folder(config.CACHE_DIR, modules)
        try:  # numba picks a function's cache folder when it wraps it
            for module_name, name in _JITTED:
                original = getattr(sys.modules[module_name], name)
                compiled = numba.njit(cache=True, nogil=True)(original)
                for module in modules:  # the modules that imported it hold it under its name
                    if vars(module).get(name) is original:
                        setattr(module, name, compiled)
        finally:
            config.CACHE_DIR = user_folder
        for module_name, name, signature in _ENTRIES:
            function = getattr(sys.modules[module_name], name)
            function.compile(signature)
            function.disable_compile()  # another signature would compile in the foreground
    except Exception as failure:  # a broken numba install: numpy only, and say why
        _compiler["error"] = failure
        _switch["on"] = False
    _compiler["ready"].set()


def _cache_folder(user_folder: str, modules: list) -> str:
    """numba's cache for these paths: a folder per version of their sources, under
    ``NUMBA_CACHE_DIR`` or the user's cache directory. numba checks only a function's own
    file, so a kernel cached beside its module would keep a callee of another module as it
    was (and crash when that callee changed)."""
    digest = hashlib.sha256()
    for module in modules:
        with open(module.__file__, "rb") as source:
            digest.update(source.read())
    root = user_folder or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                                       "explorer")
    return os.path.join(root, f"numba-{digest.hexdigest()[:16]}")


#: The BLAS/LAPACK routines the compiled paths call: (module, result type, number of arguments).
_ROUTINES = {"ddot": ("blas", "float64", 5), "dgemv": ("blas", "void", 11), "dtrsv": ("blas", "void", 8),
             "dpotrs": ("lapack", "void", 8), "dsyevd": ("lapack", "void", 11),
             "dsyrk": ("blas", "void", 10), "dgemm": ("blas", "void", 13)}
_ddot = _dgemv = _dtrsv = _dpotrs = _dsyevd = _dsyrk = _dgemm = None  # bound by _compile

#: Constant arguments of the BLAS/LAPACK calls: the flags "T", "N", "L", "V", the scalars 1, 0
#: and the stride 1; the sizes go through a scratch int32 array ``ws`` (no allocation per call).
FLAGS, SCALARS, ONE = np.array([84, 78, 76, 86], np.uint8), np.array([1.0, 0.0]), np.array([1], np.int32)


@jit
def dot(a, b, n, ws):
    """``a[:n] @ b[:n]`` (numpy: BLAS ddot)."""
    ws[0] = n
    return _ddot(ws.ctypes, a.ctypes, ONE.ctypes, b.ctypes, ONE.ctypes)


@jit
def rows_times(B, v, r, out, ws):
    """``out[:r] = B[:r] @ v`` (numpy: ddot for one row, else dgemv)."""
    if r == 1:
        out[0] = dot(B[0], v, v.size, ws)
        return
    ws[0], ws[1] = v.size, r
    _dgemv(FLAGS.ctypes, ws[0:].ctypes, ws[1:].ctypes, SCALARS.ctypes, B.ctypes,
           ws[0:].ctypes, v.ctypes, ONE.ctypes, SCALARS[1:].ctypes, out.ctypes, ONE.ctypes)


@jit
def times_rows(c, B, r, out, ws):
    """``out = c[:r] @ B[:r]`` (numpy: dgemv)."""
    ws[0], ws[1] = B.shape[1], r
    _dgemv(FLAGS[1:].ctypes, ws[0:].ctypes, ws[1:].ctypes, SCALARS.ctypes, B.ctypes,
           ws[0:].ctypes, c.ctypes, ONE.ctypes, SCALARS[1:].ctypes, out.ctypes, ONE.ctypes)


@jit
def factor_solve(L, b, r, ws):
    """``b[:r] <- (L L^T)^{-1} b[:r]`` in place, ``L = L[:r, :r]`` lower (scipy's dpotrs)."""
    ws[0], ws[1] = r, L.shape[0]
    _dpotrs(FLAGS[2:].ctypes, ws[0:].ctypes, ONE.ctypes, L.ctypes, ws[1:].ctypes,
            b.ctypes, ws[0:].ctypes, ws[2:].ctypes)


@jit
def lower_solve(L, b, n, ws):
    """``b[:n] <- L[:n, :n]^{-1} b[:n]`` in place, L lower (scipy's dtrsv)."""
    ws[0], ws[1] = n, L.shape[0]
    _dtrsv(FLAGS[2:].ctypes, FLAGS[1:].ctypes, FLAGS[1:].ctypes, ws[0:].ctypes, L.ctypes,
           ws[1:].ctypes, b.ctypes, ONE.ctypes)


@jit
def eigvalsh_workspace(n):
    """``(work, iwork)`` for :func:`eigvalsh` of matrices up to n x n: LAPACK's optimal sizes
    (a workspace query, as numpy makes), so dsytrd blocks as in numpy's call."""
    K, values, work, iwork = np.zeros(max(n, 1) ** 2), np.empty(max(n, 1)), np.empty(1), np.zeros(1, np.int32)
    sizes = np.array([max(n, 1), -1, -1, 0], np.int32)
    _dsyevd(FLAGS[1:].ctypes, FLAGS[2:].ctypes, sizes[0:].ctypes, K.ctypes, sizes[0:].ctypes, values.ctypes,
            work.ctypes, sizes[1:].ctypes, iwork.ctypes, sizes[2:].ctypes, sizes[3:].ctypes)
    return np.empty(max(int(work[0]), 1)), np.empty(max(int(iwork[0]), 1), np.int32)


@jit
def eigvalsh(K, r, values, work, iwork, sizes):
    """numpy's ``eigvalsh`` of the symmetric r x r matrix ``K[:r * r]`` (overwritten): LAPACK
    dsyevd without vectors, the eigenvalues ascending into ``values[:r]``; ``work`` and
    ``iwork`` from :func:`eigvalsh_workspace`, ``sizes`` four int32. Returns LAPACK's info."""
    sizes[0], sizes[1], sizes[2], sizes[3] = r, work.size, iwork.size, 0
    _dsyevd(FLAGS[1:].ctypes, FLAGS[2:].ctypes, sizes[0:].ctypes, K.ctypes, sizes[0:].ctypes, values.ctypes,
            work.ctypes, sizes[1:].ctypes, iwork.ctypes, sizes[2:].ctypes, sizes[3:].ctypes)
    return sizes[3]


@jit
def finite(v):
    """Whether every entry of ``v`` is finite (``explorer._validation.all_finite``)."""
    for value in v:
        if not math.isfinite(value):
            return False
    return True


@jit
def squared_rows(B, r, out):
    """``out[:r] = np.einsum("ij,ij->i", B[:r], B[:r])``, summed in numpy's order (two lanes,
    blocks of eight)."""
    for i in range(r):
        x, n, k = B[i], B.shape[1], 0
        lane0, lane1 = 0.0, 0.0
        while n - k >= 8:
            lane0 = x[k] * x[k] + (x[k + 2] * x[k + 2] + (x[k + 4] * x[k + 4]
                                                        + (x[k + 6] * x[k + 6] + lane0)))
            lane1 = x[k + 1] * x[k + 1] + (x[k + 3] * x[k + 3] + (x[k + 5] * x[k + 5]
                                                                  + (x[k + 7] * x[k + 7] + lane1)))
            k += 8
        while k < n:
            lane0 = x[k] * x[k] + lane0
            lane1 = (x[k + 1] * x[k + 1] if k + 1 < n else 0.0) + lane1
            k += 2
        out[i] = 0.0 + (lane0 + lane1)


@jit
def _block_sum(a, start, n):
    """numpy's ``pairwise_sum`` of a block ``a[start:start + n]`` of at most 128 entries:
    in order below 8, else eight lanes, combined as a tree, then the rest in order."""
    if n < 8:
        total = 0.0
        for i in range(start, start + n):
            total += a[i]
        return total
    lanes = a[start:start + 8].copy()
    i = 8
    while i < n - n % 8:
        for j in range(8):
            lanes[j] += a[start + i + j]
        i += 8
    total = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))
    for k in range(start + i, start + n):
        total += a[k]
    return total


@jit
def numpy_sum(a):
    """``a.sum()`` of a contiguous 1-D float array, in numpy's order: ``pairwise_sum``
    halves a range above 128 entries (the first half a multiple of 8) and adds the halves'
    sums. Written with a stack, not recursion (numba's cache mis-links recursive functions)."""
    starts, sizes = np.empty(192, np.int64), np.empty(192, np.int64)
    values = np.empty(64)
    starts[0], sizes[0], tasks, done = 0, a.size, 1, 0
    while tasks:
        tasks -= 1
        start, n = starts[tasks], sizes[tasks]
        if n < 0:  # both halves are summed: combine them
            done -= 1
            values[done - 1] = values[done - 1] + values[done]
        elif n <= 128:
            values[done] = _block_sum(a, start, n)
            done += 1
        else:
            half = n // 2
            half -= half % 8
            starts[tasks], sizes[tasks] = start, -1  # combine, after
            starts[tasks + 1], sizes[tasks + 1] = start + half, n - half  # the second half, then
            starts[tasks + 2], sizes[tasks + 2] = start, half  # the first half, first
            tasks += 3
    return 0.0 + values[0]


@entry("Tuple((int64, float64))(float64[:, ::1], int64, int64, float64[:, ::1], float64[::1])")
def shrink(B, r, m, kept, lam):
    """FD's shrink of a wide full buffer ``B[:r]`` (:func:`explorer.sketch.gram_shrink` of
    ``B B^T``): the kept rows into ``kept``, the squared singular values (descending) into
    ``lam[:r]``; returns ``(keep, delta)``, keep -1 if LAPACK failed or a number is not finite."""
    d = B.shape[1]
    gram, values = np.zeros((r, r)), np.empty(r)
    codes = np.array([76, 84, 86, 78], np.uint8)  # "L", "T", "V", "N"
    sizes = np.array([r, d, 1 + 6 * r + 2 * r * r, 3 + 5 * r, 0, 0], np.int32)
    scalars = np.array([1.0, 0.0])
    _dsyrk(codes[0:].ctypes, codes[1:].ctypes, sizes[0:].ctypes, sizes[1:].ctypes, scalars.ctypes,
           B.ctypes, sizes[1:].ctypes, scalars[1:].ctypes, gram.ctypes, sizes[0:].ctypes)
    for i in range(r):  # numpy's B @ B.T: syrk, then the other triangle copied
        for j in range(i):
            gram[i, j] = gram[j, i]
    work, iwork = np.empty(sizes[2]), np.empty(sizes[3], np.int32)
    _dsyevd(codes[2:].ctypes, codes[0:].ctypes, sizes[0:].ctypes, gram.ctypes, sizes[0:].ctypes,
            values.ctypes, work.ctypes, sizes[2:].ctypes, iwork.ctypes, sizes[3:].ctypes, sizes[4:].ctypes)
    if sizes[4] != 0:
        return -1, 0.0
    lam[:r] = values[::-1]  # descending; eigenvector j is row r - 1 - j of gram (column-major)
    floor = d * EPS * max(lam[0], 0.0)
    for j in range(r):
        lam[j] = lam[j] if lam[j] > floor else 0.0
    delta = lam[m - 1] if r >= m else 0.0
    keep = 0
    for j in range(min(m - 1, r)):
        keep += max(lam[j] - delta, 0.0) > 0.0
    weights = np.empty((r, max(keep, 1)))
    for j in range(keep):
        factor = math.sqrt(max(lam[j] - delta, 0.0) / lam[j])
        for i in range(r):
            weights[i, j] = gram[r - 1 - j, i] * factor
    if keep == 1:
        times_rows(weights[:, 0].copy(), B, r, kept[0], sizes[4:])
    elif keep > 1:
        sizes[4], sizes[5] = keep, r
        _dgemm(codes[3:].ctypes, codes[1:].ctypes, sizes[1:].ctypes, sizes[4:].ctypes, sizes[5:].ctypes,
               scalars.ctypes, B.ctypes, sizes[1:].ctypes, weights.ctypes, sizes[4:].ctypes,
               scalars[1:].ctypes, kept.ctypes, sizes[1:].ctypes)
    if not (math.isfinite(delta) and finite(lam[:r]) and finite(kept[:keep].ravel())):
        return -1, 0.0
    return keep, delta


def fd_shrink(B: np.ndarray, m: int) -> tuple[np.ndarray, float, np.ndarray] | None:
    """:func:`explorer.sketch.shrink.fd_shrink` of a wide buffer ``B`` (its occupied rows) by
    :func:`shrink`: ``(squared, delta, kept_rows)``, every number finite; None when the
    compiled paths are not ready, ``B`` is tall, or LAPACK failed (the numpy rule's then)."""
    if B.shape[0] >= B.shape[1] or not enabled():
        return None
    kept, squared = np.empty((m - 1, B.shape[1])), np.empty(B.shape[0])
    keep, delta = shrink(B, B.shape[0], m, kept, squared)
    if keep < 0:
        return None
    COUNTS["shrinks"] += 1
    return squared, delta, kept[:keep]
