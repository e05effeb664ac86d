"""Rows per second of Frequent Directions and Robust FD against a naive reference.

For every (d, m) of the grid, one seeded stream is fed, in this process, to:

- ``naive``: the reference defined here: append the row to an m-row buffer and take a
  full (thin) ``scipy.linalg.svd`` of the occupied rows after *every* row, shrinking by
  ``sigma_m^2`` once the buffer is full;
- ``FrequentDirections`` / ``RobustFrequentDirections``, exact and fast, fed row by row
  with ``update`` (the streaming use), and the fast ones also with one ``extend`` of the
  whole block.

Reported: rows/s of each and the ratio ``rows/s / naive rows/s`` (ratios, not absolute
limits: they carry over between machines far better). Before timing, every method has
seen the same 2m warm-up rows, so the timed part is the steady state (buffers full,
shrinking). Slow methods (naive, exact) time ``n_slow`` rows, fast ones ``n_fast`` rows
(a multiple of m+1, so each timed run holds the same number of fast shrinks), both sized
from a short calibration to fill a time budget; runs are interleaved (method order
rotates every repeat) and the median is kept.

Checks on the very stream that was timed: the naive reference and exact FD give the same
``B^T B`` (``np.allclose``, compared without forming a d x d matrix) and the same total
shrink ``Delta``; fast ``extend`` gives the same sketch as fast ``update``.

A breakdown of fast RFD's time per row (validation and copying in ``update`` vs the
decomposition in each shrink and the rest of the shrink) explains the ratios; see README.md.

Run ``python benchmarks/sketch_throughput.py [--quick] [--threads N] [--json PATH]``.
"""

from __future__ import annotations

import copy
import gc
import math
import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402  (also makes `explorer` importable)
import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402

import explorer.sketch.shrink as sketch_module  # noqa: E402
from explorer import FrequentDirections, RobustFrequentDirections  # noqa: E402

GRID_D = (100, 1000, 5000)
GRID_M = (10, 20, 50)
TARGET = {"method": "rfd_fast", "d": 1000, "m": 20, "min_ratio": 10.0}

#: (name, table header); exact/fast are fed with update row by row, *_extend with one extend
METHODS: list[tuple[str, str]] = [
    ("naive", "naive"),
    ("fd_exact", "FD exact"),
    ("rfd_exact", "RFD exact"),
    ("fd_fast", "FD fast"),
    ("rfd_fast", "RFD fast"),
    ("fd_fast_extend", "FD fast extend"),
    ("rfd_fast_extend", "RFD fast extend"),
]
SLOW = {"naive", "fd_exact", "rfd_exact"}

SETTINGS = {
    # seconds one timed run of a slow / fast method should take, repeats, calibration time
    "full": {"slow_budget": 0.25, "fast_budget": 0.25, "repeats": 5, "calibration": 0.05,
             "min_slow_rows": 5, "min_fast_periods": 3},
    "quick": {"slow_budget": 0.01, "fast_budget": 0.01, "repeats": 1, "calibration": 0.005,
              "min_slow_rows": 2, "min_fast_periods": 1},
}


# -- the naive reference --------------------------------------------------------------------
def naive_svd(B: np.ndarray):
    """The reference's SVD: LAPACK gesdd through scipy, thin (never a d x d factor)."""
    return scipy.linalg.svd(B, full_matrices=False, check_finite=False)


class NaiveFD:
    """Frequent Directions the obvious way: a full SVD of the buffer after every row.

    Append ``x`` to the m-row buffer ``B``; ``B = U diag(sigma) V^T`` (occupied rows only);
    ``delta = sigma_m^2`` if the buffer is full, else 0; ``B <- sqrt(max(sigma^2 - delta, 0)) V^T``
    with the zero rows dropped. ``B^T B`` is exactly exact FD's after every row (only
    ``delta > 0`` changes it; the other SVDs merely rotate ``B``). No input checks: it is
    the yardstick, so it gets no handicap.
    """

    def __init__(self, d: int, m: int):
        self.d, self.m = d, m
        self.B = np.zeros((m, d))
        self.filled = 0
        self.delta_total = 0.0
        self.n_seen = 0

    def update(self, x) -> None:
        self.B[self.filled] = x
        self.filled += 1
        self.n_seen += 1
        _, sigma, Vt = naive_svd(self.B[:self.filled])
        squared = sigma ** 2
        delta = float(squared[self.m - 1]) if self.filled == self.m else 0.0
        shrunk = np.maximum(squared - delta, 0.0)
        keep = int(np.count_nonzero(shrunk > 0.0))
        self.B[:keep] = np.sqrt(shrunk[:keep])[:, None] * Vt[:keep]
        self.B[keep:] = 0.0
        self.filled = keep
        self.delta_total += delta

    @property
    def rows(self) -> np.ndarray:
        return self.B[:self.filled]


def _factory(name: str, d: int, m: int):
    if name == "naive":
        return NaiveFD(d, m)
    cls = RobustFrequentDirections if name.startswith("rfd") else FrequentDirections
    return cls(d, m, fast="fast" in name)


def _feed_rows(obj, X: np.ndarray) -> None:
    """The streaming use: one ``update`` per row."""
    update = obj.update
    for x in X:
        update(x)


def _feed_block(obj, X: np.ndarray) -> None:
    obj.extend(X)


def _feeder(name: str):
    return _feed_block if name.endswith("extend") else _feed_rows


# -- calibration: how many rows fill the time budget ------------------------------------------
def _calibrate(d: int, m: int, seconds: float, seed: int) -> tuple[float, float]:
    """Seconds per row of the naive reference and of fast RFD ``update`` in steady state."""
    rng = np.random.default_rng(seed)
    naive = NaiveFD(d, m)
    _feed_rows(naive, rng.standard_normal((2 * m, d)))
    elapsed, rows = 0.0, 0
    while elapsed < seconds or rows < 2:
        x = rng.standard_normal(d)
        elapsed += C.timed(naive.update, x)
        rows += 1
    per_row_naive = elapsed / rows
    fast = RobustFrequentDirections(d, m, fast=True)
    _feed_rows(fast, rng.standard_normal((2 * m, d)))
    elapsed, rows = 0.0, 0
    while elapsed < seconds or rows == 0:
        chunk = rng.standard_normal((m + 1, d))
        elapsed += C.timed(_feed_rows, fast, chunk)
        rows += m + 1
    return per_row_naive, elapsed / rows


# -- profile of fast RFD: where does a row's time go? ---------------------------------------
def _breakdown(warm: RobustFrequentDirections, X: np.ndarray, n_naive_rows_per_s: float) -> dict:
    """Time one instrumented fast-RFD ``update`` run: the decomposition in each shrink (the
    eigendecomposition of ``B B^T`` for a wide buffer, LAPACK's SVD otherwise), the rest of
    the shrink, and the per-row code."""
    sk = copy.deepcopy(warm)
    decomposition_time = [0.0]
    shrink_time = [0.0]

    def timed(fn, into):
        def wrapper(*args):
            start = C.clock()
            try:
                return fn(*args)
            finally:
                into[0] += C.clock() - start
        return wrapper

    originals = {"_svd": sketch_module._svd, "gram_shrink": sketch_module.gram_shrink}
    shrinks_before = sk.n_shrinks
    for name, fn in originals.items():
        setattr(sketch_module, name, timed(fn, decomposition_time))
    sk._shrink = timed(sk._shrink, shrink_time)  # instance attribute: this object only
    try:
        total = C.timed(_feed_rows, sk, X)
    finally:
        for name, fn in originals.items():
            setattr(sketch_module, name, fn)
        del sk._shrink
    n = X.shape[0]
    shrinks = sk.n_shrinks - shrinks_before
    # The SVD of a buffer as the sketch stores it (C order, 2m x d, wide) against the SVD
    # of its transpose (Fortran order, d x 2m, tall): same singular values and vectors.
    buffer = np.ascontiguousarray(np.random.default_rng(1).standard_normal((sk.capacity, sk.d)))
    as_stored = _median_time(lambda: scipy.linalg.svd(buffer, full_matrices=False, check_finite=False))
    transposed = _median_time(lambda: scipy.linalg.svd(buffer.T, full_matrices=False, check_finite=False))
    us = 1e6 / n
    return {
        "rows": n,
        "shrinks": shrinks,
        "total_us_per_row": total * us,
        "decomposition_us_per_row": decomposition_time[0] * us,
        "shrink_other_us_per_row": (shrink_time[0] - decomposition_time[0]) * us,
        "update_overhead_us_per_row": (total - shrink_time[0]) * us,
        "naive_us_per_row": 1e6 / n_naive_rows_per_s,
        "svd_2m_as_stored_us": as_stored * 1e6,
        "svd_2m_transposed_us": transposed * 1e6,
    }


def _median_time(fn, seconds: float = 0.05, batches: int = 5) -> float:
    """Median seconds per call of ``fn``, timed in ``batches`` batches of about seconds/batches."""
    calls = max(1, int(seconds / batches / max(C.timed(fn), 1e-7)))
    times = [C.timed(lambda: [fn() for _ in range(calls)]) / calls for _ in range(batches)]
    return float(np.median(times))


# -- one configuration ------------------------------------------------------------------------
def run_config(d: int, m: int, *, slow_budget: float, fast_budget: float, repeats: int,
               calibration: float, min_slow_rows: int, min_fast_periods: int, seed: int = 0,
               methods: list[str] | None = None, breakdown: bool = True) -> dict:
    names = [name for name, _ in METHODS if methods is None or name in methods]
    per_row_naive, per_row_fast = _calibrate(d, m, calibration, seed + 1)
    n_slow = max(min_slow_rows, math.ceil(slow_budget / per_row_naive))
    periods = max(min_fast_periods, math.ceil(fast_budget / (per_row_fast * (m + 1))))
    n_fast = periods * (m + 1)
    warm_rows = 2 * m
    X = C.make_stream(warm_rows + max(n_slow, n_fast), d, seed=seed)
    X_warm = X[:warm_rows]
    timed_rows = {name: X[warm_rows:warm_rows + (n_slow if name in SLOW else n_fast)] for name in names}

    warm = {}
    for name in names:
        obj = _factory(name, d, m)
        _feeder(name)(obj, X_warm)
        warm[name] = obj

    times: dict[str, list[float]] = {name: [] for name in names}
    final: dict[str, object] = {}
    for r in range(repeats):
        gc.collect()
        order = names[r % len(names):] + names[:r % len(names)]  # rotate: no fixed position
        for name in order:
            obj = copy.deepcopy(warm[name])
            times[name].append(C.timed(_feeder(name), obj, timed_rows[name]))
            final[name] = obj

    results = {}
    for name in names:
        rows = timed_rows[name].shape[0]
        median = float(np.median(times[name]))
        results[name] = {"rows": rows, "seconds": times[name], "rows_per_s": rows / median,
                         "us_per_row": 1e6 * median / rows, "spread": C.spread(times[name])}
    if "naive" in results:
        for name in names:
            results[name]["ratio_vs_naive"] = results[name]["rows_per_s"] / results["naive"]["rows_per_s"]

    checks = {}
    if "naive" in final and "fd_exact" in final:
        naive, exact = final["naive"], final["fd_exact"]
        checks["naive_vs_exact_gram"] = C.compare_grams(naive.rows, exact.rows)
        checks["naive_vs_exact_delta_close"] = bool(np.isclose(naive.delta_total, exact.delta_total,
                                                               rtol=1e-9))
    for kind in ("fd", "rfd"):
        a, b = final.get(f"{kind}_fast"), final.get(f"{kind}_fast_extend")
        if a is not None and b is not None:
            checks[f"{kind}_fast_extend_equals_update"] = bool(
                np.allclose(a.sketch, b.sketch, rtol=1e-12, atol=0) and a.n_seen == b.n_seen)
    ok = all(v if isinstance(v, bool) else v["allclose"] for v in checks.values())

    out = {"d": d, "m": m, "warm_rows": warm_rows, "n_slow": n_slow, "n_fast": n_fast,
           "repeats": repeats, "methods": results, "checks": checks, "checks_pass": ok}
    if breakdown and "rfd_fast" in warm and "naive" in results:
        out["breakdown_rfd_fast"] = _breakdown(warm["rfd_fast"], timed_rows["rfd_fast"],
                                               results["naive"]["rows_per_s"])
    return out


def run(*, quick: bool = False, grid_d=GRID_D, grid_m=GRID_M, seed: int = 0, progress: bool = True,
        **overrides) -> dict:
    """Run the whole grid; returns a JSON-ready dict (see README.md for the fields)."""
    settings = {**SETTINGS["quick" if quick else "full"], **overrides}
    configs = []
    start = time.perf_counter()
    for d in grid_d:
        for m in grid_m:
            if progress:
                print(f"  throughput d={d} m={m} ...", file=sys.stderr, flush=True)
            configs.append(run_config(d, m, seed=seed, **settings))
    result = {"benchmark": "sketch_throughput", "settings": settings, "clock": C.clock_name(),
              "configs": configs,
              "seconds": time.perf_counter() - start}
    target = next((c for c in configs if c["d"] == TARGET["d"] and c["m"] == TARGET["m"]), None)
    if target is not None and TARGET["method"] in target["methods"]:
        ratio = target["methods"][TARGET["method"]].get("ratio_vs_naive")
        result["target"] = {**TARGET, "ratio": ratio,
                            "met": None if ratio is None else bool(ratio >= TARGET["min_ratio"])}
    result["all_checks_pass"] = all(c["checks_pass"] for c in configs)
    return result


# -- output --------------------------------------------------------------------------------
def format_results(result: dict) -> str:
    names = [name for name, _ in METHODS]
    labels = dict(METHODS)
    rate_rows, ratio_rows, detail_rows, profile_rows = [], [], [], []
    for c in result["configs"]:
        methods = c["methods"]
        rate_rows.append({"d": c["d"], "m": c["m"],
                          **{n: methods[n]["rows_per_s"] for n in names if n in methods}})
        ratio_rows.append({"d": c["d"], "m": c["m"],
                           **{n: methods[n].get("ratio_vs_naive") for n in names if n in methods}})
        gram = c["checks"].get("naive_vs_exact_gram", {})
        detail_rows.append({"d": c["d"], "m": c["m"], "n_slow": c["n_slow"], "n_fast": c["n_fast"],
                            "repeats": c["repeats"],
                            "spread": max(v["spread"] for v in methods.values()),
                            "gram": gram.get("allclose"), "rel_err": gram.get("rel_err"),
                            "delta": c["checks"].get("naive_vs_exact_delta_close"),
                            "extend": all(v for k, v in c["checks"].items() if k.endswith("update"))})
        b = c.get("breakdown_rfd_fast")
        if b:
            profile_rows.append({"d": c["d"], "m": c["m"], **b,
                                 "layout_gain": b["svd_2m_as_stored_us"] / b["svd_2m_transposed_us"]})
    cols = [("d", "d"), ("m", "m")] + [(n, labels[n]) for n in names]
    parts = [
        C.table(rate_rows, cols, "Rows per second (median of interleaved repeats)"),
        C.table(ratio_rows, cols, "Ratio to the naive reference (rows/s divided by naive rows/s)"),
        C.table(detail_rows, [("d", "d"), ("m", "m"), ("n_slow", "rows slow"), ("n_fast", "rows fast"),
                              ("repeats", "repeats"), ("spread", "max spread"),
                              ("gram", "naive==exact B^T B"), ("rel_err", "rel. Frobenius err"),
                              ("delta", "same Delta"), ("extend", "extend==update")],
                "Run sizes and correctness checks (spread = (max-min)/median over repeats)"),
    ]
    if profile_rows:
        parts.append(C.table(profile_rows, [
            ("d", "d"), ("m", "m"), ("total_us_per_row", "RFD fast us/row"),
            ("update_overhead_us_per_row", "per-row code"), ("decomposition_us_per_row", "eigh/SVD (amort.)"),
            ("shrink_other_us_per_row", "rest of shrink"), ("naive_us_per_row", "naive us/row"),
            ("svd_2m_as_stored_us", "SVD 2m x d as stored us"), ("svd_2m_transposed_us", "SVD of B^T us"),
            ("layout_gain", "x faster transposed")],
            "Where fast RFD's time goes (microseconds per row; one instrumented run)"))
    target = result.get("target")
    if target:
        verdict = "met" if target["met"] else "NOT met"
        parts.append(f"Target: fast RFD at d={target['d']}, m={target['m']} is "
                     f"{target['ratio']:.1f}x the naive reference (goal >= {target['min_ratio']:.0f}x): {verdict}.")
    parts.append("All correctness checks pass." if result["all_checks_pass"] else "SOME CORRECTNESS CHECKS FAILED.")
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key="all_checks_pass", grid=True)


if __name__ == "__main__":
    sys.exit(main())
