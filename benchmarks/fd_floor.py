"""Fast Frequent Directions against its BLAS/LAPACK floor, and ``extend`` against ``update``.

Fast FD (a 2m-row buffer) shrinks once per m + 1 rows. Whatever the code around it, each
shrink of a wide buffer costs at least three library calls, which are the **floor** here:
``G = B B^T`` (2m x d times d x 2m), ``eigh(G)`` (2m x 2m, numpy's, as the sketch calls it)
and ``W B`` ((m - 1) x 2m times 2m x d), timed alone on a buffer of the same shape, per m + 1
rows. Against it, in one process and interleaved (the arm order rotates every repeat):

- ``update``: ``FrequentDirections(d, m, fast=True).update`` row by row (the streaming use:
  input checks, copying, the shrink's own checks and bookkeeping), its shrinks compiled
  (:func:`explorer.compiled.shrink`: the same library calls without numpy's per-call
  overhead) when numba is installed, as a user gets them;
- ``update, numpy``: the same under :func:`explorer.compiled.numpy_only` (the numpy rule);
- ``extend``: one ``extend`` call on the same rows.

Both arms start from the same warmed-up sketch (2m rows in, one shrink done) and take a
whole number of shrink periods sized to a time budget. CPU time, one BLAS thread, garbage
collection off while timing; the medians of the repeats are kept.

Targets (reported as verdict lines, never enforced): ``update`` within 1.3x the floor at
d = 1000; ``extend`` never slower than ``update``. Check (exit status): ``extend`` leaves the
sketch ``update`` leaves, bit for bit, on every timed stream, and so does the numpy rule.

Run ``python benchmarks/fd_floor.py [--quick] [--threads N] [--json PATH]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402  (also makes `explorer` importable)
import numpy as np  # noqa: E402

from explorer import FrequentDirections, compiled  # noqa: E402

CORRECTNESS_KEY = "all_checks_pass"
TARGETS = {"update_over_floor_at_d1000": 1.3, "extend_over_update": 1.0}
SETTINGS = {
    "full": {"budget": 0.3, "repeats": 7, "grid": ((1000, 10), (1000, 20), (5000, 10), (5000, 20))},
    "quick": {"budget": 0.01, "repeats": 1, "grid": ((200, 5),)},
}


def floor_seconds(B: np.ndarray, m: int, shrinks: int) -> float:
    """CPU seconds of ``shrinks`` rounds of the three calls every wide shrink makes."""
    W = np.random.default_rng(1).standard_normal((m - 1, B.shape[0]))
    began = C.clock()
    for _ in range(shrinks):
        G = B @ B.T
        np.linalg.eigh(G)
        W @ B
    return C.clock() - began


def compare(d: int, m: int, *, budget: float, repeats: int, seed: int = 0) -> dict:
    period = m + 1
    rng = np.random.default_rng(seed)
    warm_rows = rng.standard_normal((2 * m, d))
    start = FrequentDirections(d, m, fast=True)
    start.extend(warm_rows)
    state = start.state_dict()

    def fresh() -> FrequentDirections:
        return FrequentDirections.from_state_dict(state)

    probe = rng.standard_normal((4 * period, d))
    sketch = fresh()
    per_row = C.timed(lambda: [sketch.update(x) for x in probe]) / probe.shape[0]
    n = max(2, int(budget / (per_row * period))) * period
    X = C.make_stream(n, d, seed=seed + 1)
    buffer = np.ascontiguousarray(rng.standard_normal((2 * m, d)))

    def arm_update():
        sk = fresh()
        update = sk.update
        began = C.clock()
        for x in X:
            update(x)
        return C.clock() - began, sk

    def arm_numpy():
        with compiled.numpy_only():
            return arm_update()

    def arm_extend():
        sk = fresh()
        began = C.clock()
        sk.extend(X)
        return C.clock() - began, sk

    def arm_floor():
        return floor_seconds(buffer, m, n // period), None

    arms = {"update": arm_update, "update_numpy": arm_numpy, "extend": arm_extend, "floor": arm_floor}
    times: dict[str, list[float]] = {name: [] for name in arms}
    same = True
    with C.no_gc(collect=True):
        for r in range(repeats):
            names = list(arms)[r % len(arms):] + list(arms)[:r % len(arms)]
            done = {name: arms[name]() for name in names}
            for name in names:
                times[name].append(done[name][0] / n)
            a = done["update"][1]
            for b in (done["extend"][1], done["update_numpy"][1]):
                same &= bool(np.array_equal(a.sketch, b.sketch)) and \
                    (a.n_seen, a.n_shrinks, a.delta_total) == (b.n_seen, b.n_shrinks, b.delta_total)
    us = {name: 1e6 * float(np.median(t)) for name, t in times.items()}
    return {"d": d, "m": m, "rows": n, "update_us": us["update"], "extend_us": us["extend"],
            "update_numpy_us": us["update_numpy"], "numpy_over_floor": us["update_numpy"] / us["floor"],
            "floor_us": us["floor"], "update_over_floor": us["update"] / us["floor"],
            "extend_over_floor": us["extend"] / us["floor"],
            "extend_over_update": us["extend"] / us["update"], "same_sketch": same}


def verdicts(configs: list[dict]) -> list[str]:
    lines = []
    at_1000 = [c for c in configs if c["d"] == 1000]
    if at_1000:
        worst = max(c["update_over_floor"] for c in at_1000)
        target = TARGETS["update_over_floor_at_d1000"]
        lines.append(f"update within {target}x the floor at d = 1000: "
                     f"{'yes' if worst <= target else 'NO'} (worst {worst:.2f}x)")
    worst = max(c["extend_over_update"] for c in configs)
    lines.append(f"extend never slower than update: {'yes' if worst <= 1.0 else 'NO'} "
                 f"(worst extend / update {worst:.2f})")
    return lines


def run(*, quick: bool = False, seed: int = 0, progress: bool = True, **overrides) -> dict:
    settings = {**SETTINGS["quick" if quick else "full"], **overrides}
    began = time.perf_counter()
    shrinks_compiled = compiled.wait()  # every timing on the path a user gets (numpy without numba)
    configs = []
    for d, m in settings["grid"]:
        if progress:
            print(f"  d={d} m={m} ...", file=sys.stderr, flush=True)
        configs.append(compare(d, m, budget=settings["budget"], repeats=settings["repeats"], seed=seed))
    return {"benchmark": "fd_floor", "settings": {k: v for k, v in settings.items() if k != "grid"},
            "shrinks_compiled": shrinks_compiled,
            "configs": configs, "verdicts": verdicts(configs),
            CORRECTNESS_KEY: all(c["same_sketch"] for c in configs),
            "seconds": time.perf_counter() - began}


def format_results(result: dict) -> str:
    table = C.table(result["configs"], [
        ("d", "d"), ("m", "m"), ("rows", "rows"), ("floor_us", "floor us/row"),
        ("update_us", "update us/row"), ("update_numpy_us", "numpy rule us/row"), ("extend_us", "extend us/row"),
        ("update_over_floor", "update / floor"), ("numpy_over_floor", "numpy rule / floor"),
        ("extend_over_floor", "extend / floor"),
        ("extend_over_update", "extend / update"), ("same_sketch", "same sketch")],
        "Fast FD against the floor of its shrinks (median of interleaved repeats, CPU time; shrinks "
        + ("compiled" if result["shrinks_compiled"] else "by the numpy rule: numba is not installed") + ")")
    return table + "\n" + "\n".join(result["verdicts"])


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key=CORRECTNESS_KEY)


if __name__ == "__main__":
    sys.exit(main())
