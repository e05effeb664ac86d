"""Examples per second of RFD-SON against FULL-ON (issue 4; Luo et al. 2017, Table 3).

For d in (500, 5000) and m in (5, 10, 20), one seeded classification stream (``x_t`` a
rank-10 signal plus noise, ``_common.make_stream``, so no d x d matrix is built; labels
``sign(w*^T x)`` for a random unit ``w*``, 5% flipped: ``linear_classification_labels``)
is fed through ``SketchedOnlineNewton.learn_many`` with the logistic loss and the setting
the Vowpal Wabbit benchmark tuned (alpha0 = 100, eta = 0.25, slab C = 10):

- RFD-SON (fast RFD, Algorithm 6): O(md) per round plus a 2m x 2m eigendecomposition every
  m + 1 rounds;
- FULL-ON: the exact online Newton step, ``H^{-1}`` kept as a d x d matrix and updated by
  Sherman-Morrison, O(d^2) per round (200 MB and two 5000 x 5000 matrix-vector products per
  round at d = 5000), whatever m is.

RFD-SON first plays 2m + 1 warm-up rounds (its buffer has shrunk once), then a whole number
of shrink periods (m + 1 rounds) sized to fill a time budget; FULL-ON plays a fixed number
of rounds after one warm-up round. Repeats are interleaved and the median kept. The ratio
``RFD-SON ex/s / FULL-ON ex/s`` is the number to compare across machines.

Check (exit status): with m > d the sketch keeps every direction, and RFD-SON must equal
FULL-ON (losses to 1e-8 over 200 rounds at d = 20, m = 25).

Run ``python benchmarks/newton_rounds.py [--quick] [--threads N] [--json PATH]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402  (also makes `explorer` importable)
import numpy as np  # noqa: E402

from explorer.newton import SketchedOnlineNewton  # noqa: E402
from explorer.streams import linear_classification_labels  # noqa: E402

#: the setting benchmarks/newton_vs_vw.py tuned for RFD-SON with the logistic loss
SETTING = {"loss": "logistic", "alpha0": 100.0, "eta": 0.25, "C": 10.0}
SETTINGS = {
    "full": {"budget": 0.5, "repeats": 3, "grid_d": (500, 5000), "grid_m": (5, 10, 20),
             "full_rounds": {500: 400, 5000: 10}, "check_rounds": 200},
    "quick": {"budget": 0.05, "repeats": 1, "grid_d": (500,), "grid_m": (10,),
              "full_rounds": {500: 40}, "check_rounds": 50},
}


def classification_stream(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X = C.make_stream(n, d, seed=seed)
    y, _ = linear_classification_labels(X, flip=0.05, seed=seed + 1)
    return X, y


def time_rfd(d: int, m: int, *, budget: float, repeats: int, seed: int = 0) -> dict:
    """Median examples per second of RFD-SON in its steady state."""
    learner = SketchedOnlineNewton(d, sketch="rfd", m=m, **SETTING)
    warm, period = 2 * m + 1, m + 1
    X, y = classification_stream(warm + period, d, seed)
    learner.learn_many(X[:warm], y[:warm])
    per_round = C.timed(learner.learn_many, X[warm:], y[warm:]) / period  # calibration
    n = max(1, int(budget / (per_round * period))) * period
    X, y = classification_stream(n * repeats, d, seed + 2)
    with C.no_gc(collect=True):
        times = [C.timed(learner.learn_many, X[r * n:(r + 1) * n], y[r * n:(r + 1) * n]) / n
                 for r in range(repeats)]
    return {"rounds": n, "examples_per_s": 1 / float(np.median(times)), "spread": C.spread(times)}


def time_full(d: int, rounds: int, *, repeats: int, seed: int = 0) -> dict:
    """Median examples per second of FULL-ON (after one warm-up round)."""
    learner = SketchedOnlineNewton(d, sketch="full", **SETTING)
    X, y = classification_stream(1 + rounds * repeats, d, seed)
    learner.learn_many(X[:1], y[:1])
    with C.no_gc(collect=True):
        times = [C.timed(learner.learn_many, X[1 + r * rounds:1 + (r + 1) * rounds],
                         y[1 + r * rounds:1 + (r + 1) * rounds]) / rounds for r in range(repeats)]
    return {"rounds": rounds, "examples_per_s": 1 / float(np.median(times)), "spread": C.spread(times)}


def check_sketch_larger_than_d_equals_full(rounds: int, seed: int = 0) -> dict:
    """m > d: no shrink removes anything (delta = 0), so RFD-SON is FULL-ON."""
    X, y = classification_stream(rounds, 20, seed)
    rfd = SketchedOnlineNewton(20, sketch="rfd", m=25, **SETTING)
    full = SketchedOnlineNewton(20, sketch="full", **SETTING)
    gap = float(np.max(np.abs(rfd.learn_many(X, y) - full.learn_many(X, y))))
    return {"rounds": rounds, "max_loss_gap": gap, "pass": gap <= 1e-8}


def run(*, quick: bool = False, seed: int = 0, progress: bool = True, **overrides) -> dict:
    settings = {**SETTINGS["quick" if quick else "full"], **overrides}
    start = time.perf_counter()
    full = {}
    for d, rounds in settings["full_rounds"].items():
        if progress:
            print(f"  FULL-ON d={d} ({rounds} rounds) ...", file=sys.stderr, flush=True)
        full[d] = time_full(d, rounds, repeats=settings["repeats"], seed=seed)
    configs = []
    for d in settings["grid_d"]:
        for m in settings["grid_m"]:
            if progress:
                print(f"  RFD-SON d={d} m={m} ...", file=sys.stderr, flush=True)
            rfd = time_rfd(d, m, budget=settings["budget"], repeats=settings["repeats"], seed=seed)
            row = {"d": d, "m": m, "rfd_per_s": rfd["examples_per_s"], "rfd_rounds": rfd["rounds"],
                   "rfd_spread": rfd["spread"]}
            if d in full:
                row["full_per_s"] = full[d]["examples_per_s"]
                row["rfd_over_full"] = row["rfd_per_s"] / row["full_per_s"]
            configs.append(row)
    if progress:
        print("  check: RFD-SON with m > d vs FULL-ON ...", file=sys.stderr, flush=True)
    check = check_sketch_larger_than_d_equals_full(settings["check_rounds"], seed)
    return {"benchmark": "newton_rounds", "setting": SETTING,
            "settings": {k: v for k, v in settings.items() if k != "full_rounds"},
            "full_rounds": {str(k): v for k, v in settings["full_rounds"].items()},
            "configs": configs, "full": {str(k): v for k, v in full.items()},
            "check_sketch_larger_than_d_equals_full": check, "all_checks_pass": check["pass"],
            "seconds": time.perf_counter() - start}


def format_results(result: dict) -> str:
    setting = ", ".join(f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}"
                        for k, v in result["setting"].items())
    parts = [C.table(result["configs"], [
        ("d", "d"), ("m", "m"), ("rfd_per_s", "RFD-SON ex/s"), ("full_per_s", "FULL-ON ex/s"),
        ("rfd_over_full", "RFD-SON / FULL-ON"), ("rfd_spread", "RFD spread"),
        ("rfd_rounds", "RFD rounds timed")],
        f"Examples per second, learn_many, {setting} (median of repeats)")]
    check = result["check_sketch_larger_than_d_equals_full"]
    parts.append(C.loss_gap_check("RFD-SON with m = 25 > d = 20 vs FULL-ON", check))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key="all_checks_pass")


if __name__ == "__main__":
    sys.exit(main())
