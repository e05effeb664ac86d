"""Helpers shared by the benchmark scripts: environment, streams, timing, tables.

Not a benchmark itself. Every script in this folder does ``import _common`` (the folder is
on ``sys.path`` when a script runs, and the smoke test puts it there), which also makes
``explorer`` importable from a plain checkout that was never ``pip install``-ed.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
RESULTS_DIR = HERE / "results"
LESSONS_DIR = REPO_ROOT / "lessons"

try:  # an editable install (make venv) or an installed package
    import explorer  # noqa: F401
except ImportError:  # a bare checkout: use the package next to this folder
    sys.path.insert(0, str(REPO_ROOT))
    import explorer  # noqa: F401

import numpy as np
import scipy

#: BLAS/LAPACK threads used while timing unless ``--threads`` says otherwise. One thread
#: makes the numbers independent of whatever else runs on the machine (a 2-core box
#: shared with a test run slows a 2-thread OpenBLAS SVD down 10x or more, unevenly).
#: Every method in a comparison runs under the same setting, so ratios stay fair.
DEFAULT_THREADS = 1


# -- environment -------------------------------------------------------------------------
_limiter = None


def limit_blas_threads(threads: int | None) -> str:
    """Cap BLAS/LAPACK threads for the rest of the process (None: leave as is).

    Uses threadpoolctl (installed with scikit-learn, an ``explorer`` dependency); returns
    a short description of what was done.
    """
    global _limiter
    if threads is None:
        return "BLAS threads left at the library default"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(threads)
        return f"threadpoolctl missing: set *_NUM_THREADS={threads} (effective only before numpy loads)"
    _limiter = threadpool_limits(limits=threads)
    return f"BLAS threads limited to {threads} (threadpoolctl)"


def blas_info() -> list[dict]:
    """The BLAS libraries loaded and their thread counts (empty if threadpoolctl is missing)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover
        return []
    keep = ("internal_api", "version", "num_threads", "architecture", "prefix")
    return [{k: info.get(k) for k in keep} for info in threadpool_info()]


def environment() -> dict:
    """What a reader needs to interpret the numbers: versions, cores, load, BLAS."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                                capture_output=True, text=True, timeout=10).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "explorer"], cwd=REPO_ROOT,
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git_commit": commit,
        "explorer_has_uncommitted_changes": dirty,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "blas": blas_info(),
    }


# -- streams -----------------------------------------------------------------------------
def make_stream(n: int, d: int, *, seed: int = 0, rank: int = 10, noise: float = 0.1) -> np.ndarray:
    """A seeded stream of ``n`` rows in R^d: a rank-``rank`` signal with decaying strengths
    plus isotropic noise (what FD is for). Float64, C-contiguous; no row is all-zero."""
    rng = np.random.default_rng(seed)
    rank = min(rank, d)
    basis = np.linalg.qr(rng.standard_normal((d, rank)))[0].T  # rank x d, orthonormal rows
    strengths = 10.0 / np.arange(1, rank + 1)
    X = (rng.standard_normal((n, rank)) * strengths) @ basis
    X += noise * rng.standard_normal((n, d))
    return np.ascontiguousarray(X)


# -- comparing Gram matrices without forming them -----------------------------------------
def compare_grams(B1: np.ndarray, B2: np.ndarray, *, rtol: float = 1e-7) -> dict:
    """Compare ``B1^T B1`` with ``B2^T B2`` without any d x d array.

    Both Gram matrices live in the row space of ``C = [B1; B2]``. With ``Q`` (d x r) an
    orthonormal basis of it, ``G_i = Q (B_i Q)^T (B_i Q) Q^T``, so
    ``||G1 - G2||_F = ||(B1 Q)^T (B1 Q) - (B2 Q)^T (B2 Q)||_F``: an exact comparison of
    r x r matrices (r <= rows of B1 + rows of B2). ``allclose`` is ``np.allclose`` on those
    small matrices with ``atol = rtol * max|G1|``; ``rel_err`` is the relative Frobenius error.
    """
    C = np.vstack([B1, B2])
    if not C.any():
        return {"allclose": True, "rel_err": 0.0}
    Q = np.linalg.qr(C.T)[0]  # d x r, orthonormal columns spanning both row spaces
    P1, P2 = B1 @ Q, B2 @ Q
    G1, G2 = P1.T @ P1, P2.T @ P2
    scale = float(np.abs(G1).max()) or 1.0
    rel = float(np.linalg.norm(G1 - G2) / (np.linalg.norm(G1) or 1.0))
    return {"allclose": bool(np.allclose(G1, G2, rtol=rtol, atol=rtol * scale)), "rel_err": rel}


# -- timing --------------------------------------------------------------------------------
@contextlib.contextmanager
def no_gc(collect: bool = False):
    """Timed sections run with the cyclic garbage collector off (as ``timeit`` does).

    ``collect=True`` first runs a full collection (tens of milliseconds in a big process:
    do it once per round of measurements, not per measurement).
    """
    if collect:
        gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


#: The clocks a benchmark can time with. "cpu" (the default) is the CPU time of this
#: process: on a shared machine it leaves out the time the process waits for a core,
#: which wall-clock time counts and which varies from run to run. With one BLAS thread
#: (the default) it equals wall time on an idle machine. With several BLAS threads it
#: adds up their CPU time, so use "wall" there to see the speed-up from threads.
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
DEFAULT_CLOCK = "cpu"
clock = CLOCKS[DEFAULT_CLOCK]


def set_clock(name: str) -> str:
    """Time with ``CLOCKS[name]`` from now on; returns a description."""
    global clock
    clock = CLOCKS[name]
    return f"timing with the {name} clock ({clock.__name__})"


def timed(fn, *args) -> float:
    """Seconds taken by one call ``fn(*args)`` on the current clock (garbage collector off)."""
    with no_gc():
        start = clock()
        fn(*args)
        return clock() - start


def spread(values) -> float:
    """(max - min) / median: how much repeated measurements disagree (0 = perfectly)."""
    values = np.asarray(values, dtype=float)
    med = float(np.median(values))
    return float((values.max() - values.min()) / med) if med > 0 else 0.0


# -- output --------------------------------------------------------------------------------
def fmt(value) -> str:
    """Compact, readable cells: 3 significant digits for floats, thousands for ints."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "NO"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if v == 0:
            return "0"
        if abs(v) >= 1e12 or abs(v) < 1e-3:
            return f"{v:.3g}"
        return f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"
    return "" if value is None else str(value)


def loss_gap_check(claim: str, check: dict) -> str:
    """One report line for an equality check of two learners: ``check`` holds ``rounds``,
    ``max_loss_gap`` and ``pass``."""
    return (f"Check: {claim} over {check['rounds']} rounds: max |loss gap| = "
            f"{check['max_loss_gap']:.2e} ({'pass' if check['pass'] else 'FAIL'})")


def select_lessons(names) -> list[Path]:
    """The lessons named by ``--lessons`` (file-name prefixes or stems, each matching exactly
    one lesson), in that order; every lesson when ``names`` is empty."""
    available = sorted(LESSONS_DIR.glob("*.ipynb"))
    if not names:
        return available
    chosen = []
    for name in names:
        matches = [p for p in available if p.name.startswith(name) or p.stem == name]
        if len(matches) != 1:
            raise ValueError(f"--lessons {name!r} matches {[p.name for p in matches] or 'no lesson'} "
                             f"(lessons: {', '.join(p.name for p in available)})")
        chosen += matches
    return chosen


def table(rows: list[dict], columns: list[tuple[str, str]], title: str | None = None) -> str:
    """A plain-text table of ``rows`` (dicts) with ``columns`` = [(key, header), ...]."""
    cells = [[header for _, header in columns]]
    cells += [[fmt(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = [" ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    lines.insert(1, " ".join("-" * w for w in widths))
    if title:
        lines.insert(0, title)
    return "\n".join(lines)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def standard_arguments(parser) -> None:
    """The options every benchmark script accepts."""
    parser.add_argument("--quick", action="store_true", help="a short smoke run (tiny time budgets)")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS,
                        help="BLAS/LAPACK threads while timing (default: %(default)s; 0 = library default)")
    # `type` runs at parse time (also on the default), so every script that calls
    # standard_arguments honours --clock without further code.
    parser.add_argument("--clock", type=_clock_option, default=DEFAULT_CLOCK, metavar="{cpu,wall}",
                        help="cpu: CPU time of this process (robust on a busy machine); "
                             "wall: elapsed time (default: %(default)s)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON here")


def _clock_option(name: str) -> str:
    if name not in CLOCKS:
        import argparse

        raise argparse.ArgumentTypeError(f"clock must be one of {sorted(CLOCKS)}, got {name!r}")
    set_clock(name)
    return name


def clock_name() -> str:
    """The name of the clock ``timed`` uses now."""
    return next(name for name, fn in CLOCKS.items() if fn is clock)


def script_main(argv, *, doc: str, run, format_results, passed_key: str, grid: bool = False) -> int:
    """The command line every benchmark script shares.

    Parse the standard options (plus ``--d``/``--m`` lists when ``grid``), limit BLAS
    threads, ``run``, print ``format_results``, optionally write JSON, and exit 0 only if
    ``result[passed_key]`` (a correctness check, never a timing) is true.
    """
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    standard_arguments(parser)
    grid_options = {}
    if grid:
        parser.add_argument("--d", type=int, nargs="+", help="dimensions (default: the script's grid)")
        parser.add_argument("--m", type=int, nargs="+", help="sketch sizes (default: the script's grid)")
    args = parser.parse_args(argv)
    if grid:
        grid_options = {k: v for k, v in (("grid_d", args.d), ("grid_m", args.m)) if v}
    print(limit_blas_threads(args.threads or None), file=sys.stderr)
    result = run(quick=args.quick, **grid_options)
    result["environment"] = environment()
    print(format_results(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0 if result[passed_key] else 1
