"""The compiled round of RFD-SON and FD-SON against the numpy rule, per round.

``explorer.newton.compiled`` plays ``learn_many`` with numba (the numpy round stays the
reference). For d = 500 and m in (5, 10, 20), RFD-SON with the logistic loss at the setting
``newton_rounds.py`` uses (alpha0 = 100, eta = 0.25, C = 10), on its stream: both arms start
from the same warmed-up state (2m + 1 rounds: the buffer has shrunk once) and learn the same
rows, a whole number of shrink periods (m + 1 rounds) sized to a time budget; the arms are
interleaved (alternating which goes first) and the per-repeat ratio numpy time / compiled
time is kept, its median reported. CPU time, one BLAS thread (``_common``). Also FD-SON at
m = 10 and ``learn`` row by row at m = 10.

Check (exit status): on every timed stretch both arms give the same losses and the same
final state (within 1e-12 relative; the rule is built to give identical numbers). Without
numba the script reports that and passes.

Run ``python benchmarks/newton_compiled.py [--quick] [--threads N] [--json PATH]``.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402  (also makes `explorer` importable)
import numpy as np  # noqa: E402

from explorer.newton import SketchedOnlineNewton, compiled  # noqa: E402
from newton_rounds import SETTING, classification_stream  # noqa: E402

CORRECTNESS_KEY = "all_checks_pass"
SETTINGS = {
    "full": {"budget": 0.3, "repeats": 7, "d": 500, "grid_m": (5, 10, 20)},
    "quick": {"budget": 0.02, "repeats": 2, "d": 500, "grid_m": (10,)},
}


def relative_gap(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.abs(a - b).max(initial=0.0) / max(float(np.abs(b).max(initial=0.0)), 1e-300))


def state_gap(a: dict, b: dict) -> float:
    return max((relative_gap(a[k], b[k]) for k in a if not isinstance(a[k], str)), default=0.0)


def compare(sketch: str, d: int, m: int, *, budget: float, repeats: int, by_row: bool = False,
            seed: int = 0) -> dict:
    """Median per-round times of both arms and the median paired ratio."""
    learner = SketchedOnlineNewton(d, sketch=sketch, m=m, **SETTING)
    warm, period = 2 * m + 1, m + 1
    X, y = classification_stream(warm + period * 4, d, seed)
    learner.learn_many(X[:warm], y[:warm])
    start = learner.state_dict()

    def play(arm: str, rows, labels):
        fresh = SketchedOnlineNewton.from_state_dict(start)
        switch = compiled.numpy_only() if arm == "numpy" else contextlib.nullcontext()
        with switch:
            if by_row:
                seconds = C.timed(lambda: [fresh.learn(x, label) for x, label in zip(rows, labels)])
                losses = None
            else:
                with C.no_gc():
                    began = C.clock()
                    losses = fresh.learn_many(rows, labels)
                    seconds = C.clock() - began
        return seconds / len(labels), losses, fresh.state_dict()

    per_round, _, _ = play("numpy", X[warm:], y[warm:])  # calibration
    n = max(1, int(budget / (per_round * period))) * period
    X, y = classification_stream(warm + n, d, seed + 2)
    times = {"numpy": [], "compiled": []}
    ratios, gaps = [], []
    with C.no_gc(collect=True):
        for r in range(repeats):
            order = ("numpy", "compiled") if r % 2 == 0 else ("compiled", "numpy")
            done = {arm: play(arm, X[warm:], y[warm:]) for arm in order}
            for arm in order:
                times[arm].append(done[arm][0])
            ratios.append(done["numpy"][0] / done["compiled"][0])
            if done["numpy"][1] is not None:
                gaps.append(relative_gap(done["compiled"][1], done["numpy"][1]))
            gaps.append(state_gap(done["compiled"][2], done["numpy"][2]))
    numpy_us, compiled_us = (1e6 * float(np.median(times[a])) for a in ("numpy", "compiled"))
    return {"sketch": sketch, "d": d, "m": m, "call": "learn" if by_row else "learn_many", "rounds": n,
            "numpy_us": numpy_us, "compiled_us": compiled_us, "compiled_per_s": 1e6 / compiled_us,
            "ratio": float(np.median(ratios)), "ratio_spread": C.spread(ratios),
            "max_relative_gap": max(gaps), "pass": max(gaps) <= 1e-12}


def run(*, quick: bool = False, seed: int = 0, progress: bool = True, **overrides) -> dict:
    settings = {**SETTINGS["quick" if quick else "full"], **overrides}
    began = time.perf_counter()
    if not compiled.AVAILABLE:
        return {"benchmark": "newton_compiled", "available": False, "configs": [],
                "all_checks_pass": True, "seconds": 0.0}
    compiled.wait()
    d, budget, repeats = settings["d"], settings["budget"], settings["repeats"]
    runs = [("rfd", m, False) for m in settings["grid_m"]]
    if not quick:
        runs += [("fd", 10, False), ("rfd", 10, True)]
    configs = []
    for sketch, m, by_row in runs:
        if progress:
            call = "learn" if by_row else "learn_many"
            print(f"  {sketch} d={d} m={m} {call} ...", file=sys.stderr, flush=True)
        configs.append(compare(sketch, d, m, budget=budget, repeats=repeats, by_row=by_row, seed=seed))
    return {"benchmark": "newton_compiled", "available": True, "setting": SETTING, "settings": settings,
            "configs": configs, "all_checks_pass": all(c["pass"] for c in configs),
            "seconds": time.perf_counter() - began}


def format_results(result: dict) -> str:
    if not result["available"]:
        return "numba is not installed: no compiled path to measure (pip install -e '.[fast]')"
    return C.table(result["configs"], [
        ("sketch", "sketch"), ("call", "call"), ("d", "d"), ("m", "m"), ("numpy_us", "numpy us/round"),
        ("compiled_us", "compiled us/round"), ("compiled_per_s", "compiled rounds/s"),
        ("ratio", "numpy / compiled"), ("ratio_spread", "ratio spread"),
        ("max_relative_gap", "max rel. gap"), ("pass", "same numbers")],
        "Compiled against numpy rounds (median of interleaved repeats, CPU time)")


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key="all_checks_pass")


if __name__ == "__main__":
    sys.exit(main())
