"""RFD-SON against Vowpal Wabbit's sketched Newton (OjaNewton) and VW's default learner.

    python benchmarks/newton_vs_vw.py            # n = 20000, m in {5, 10, 20}: ~6 minutes
    python benchmarks/newton_vs_vw.py --quick    # n = 2000, m = 10: ~40 s

The stream (issue 4): d = 500, n = 20000, x ~ N(1, Sigma) with eigenvalues 100 j^-2 in a
random basis, labels sign(w*^T x) for a random unit w*, 5% flipped; written once in VW's
text format. For m in {5, 10, 20} and the logistic and squared losses we report the
progressive error (mistakes of the prediction made *before* learning each example, over
the single pass) and examples per second.

RFD-SON runs three times: with the defaults (``"auto"``: alpha0, eta and C resolved from the
first informative row, ``SketchedOnlineNewton._resolve``), with the old defaults (alpha0 = 0,
the JMLR setting; eta = 0; slab C = 1, which learned nothing here: issue 16), and with
alpha0, eta and C tuned on a grid (``GRID``) on a *separate validation stream*
(same distribution, another seed, n = 5000), as the papers tune alpha0 for their
baselines. eta is the curvature weight (H = alpha I + (mu + eta) sum g g^T, so a larger
eta takes smaller steps); C is the slab |w^T x| <= C. The slab matters most: with C = 1
the logistic loss never leaves its linear part and every setting of alpha0 and eta
plateaus near least squares' error. FULL-ON (the exact online Newton step, d x d, tuned
on the same grid without alpha0 = 0, which it cannot invert) is the reference for what
the sketch approximates.

The command line is every benchmark's (``--quick``, ``--threads``, ``--json``); all timings
here are wall time whatever ``--clock`` says, since VW runs as a separate process. What each
timing includes (the median of 3 runs; ``run(n=..., repeats=...)`` changes them):
- VW, end to end: the whole ``python -m vowpalwabbit -d FILE ...`` process (start-up,
  parsing the text file, learning, progressive evaluation).
- VW, learning: the same minus a ``--noop`` pass over the same file (start-up and parsing
  only), so the parse of 20000 x 500 text features is not charged to VW's learner; "parse"
  when the difference is under a fifth of the run (VW's default learner: the parse is
  nearly all of its time, and the difference is noise).
- RFD-SON / FULL-ON: ``learn_many`` over the in-memory arrays (the rows are checked once,
  then learned one by one, returning the prediction made before each update; no parsing),
  single-threaded numpy in this process; data generation excluded.

Needs ``pip install -e .[bench]`` (vowpalwabbit; only this benchmark uses it); without it
the benchmark reports itself skipped.
"""

from __future__ import annotations

import itertools
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import _common as C  # also makes explorer importable from a plain checkout
import numpy as np

from explorer import streams
from explorer.newton import SketchedOnlineNewton

CORRECTNESS_KEY = "ran"
LOSSES = ("logistic", "squared")
GRID = {"alpha0": (0.0, 1.0, 10.0, 100.0, 1000.0),
        "eta": (0.0, 0.0625, 0.25, 1.0, 4.0, 16.0, 64.0),
        "C": (1.0, 10.0)}
DEFAULTS = {"alpha0": "auto", "eta": "auto", "C": "auto"}
OLD_DEFAULTS = {"alpha0": 0.0, "eta": 0.0, "C": 1.0}
VALIDATION_SEED, VALIDATION_N = 1, 5000


def make_stream(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X = streams.decaying_spectrum(n, d, seed=seed)
    y, _ = streams.linear_classification_labels(X, flip=0.05, seed=seed)
    return X, y


def write_vw(path: str, X: np.ndarray, y: np.ndarray) -> None:
    with open(path, "w") as f:
        for x, label in zip(X, y):
            features = " ".join(f"{j}:{value:.6g}" for j, value in enumerate(x))
            f.write(f"{int(label)} |f {features}\n")


def _vw(path: str, extra: list[str], n: int) -> tuple[str, float]:
    command = [sys.executable, "-m", "vowpalwabbit", "-d", path, "--binary",
               "--progress", str(n), *extra]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return result.stderr, time.perf_counter() - start


def run_vw(path: str, extra: list[str], n: int, repeats: int, noop_seconds: float) -> dict:
    """Progressive 0/1 error and examples/s of one VW pass, end to end and learning only."""
    runs = [_vw(path, extra, n) for _ in range(repeats)]
    match = re.search(r"average loss = ([0-9.]+)", runs[0][0])
    if match is None:
        raise RuntimeError(f"no average loss in VW's output:\n{runs[0][0][-2000:]}")
    seconds = statistics.median(s for _, s in runs)
    learning = seconds - noop_seconds
    return {"error": float(match.group(1)), "examples_per_second": n / seconds,
            # within timing noise of the parse alone: not a measurement of the learner
            "learning_examples_per_second": n / learning if learning > 0.2 * seconds else None}


def progressive_error(X: np.ndarray, y: np.ndarray, **kwargs) -> tuple[float, float]:
    """(mistakes / n, seconds) of predict-then-learn over the stream."""
    learner = SketchedOnlineNewton(X.shape[1], **kwargs)
    start = time.perf_counter()
    _, predictions = learner.learn_many(X, y, return_predictions=True)  # each before its update
    seconds = time.perf_counter() - start
    return float(np.mean(np.sign(predictions) != y)), seconds


def run_son(X: np.ndarray, y: np.ndarray, repeats: int, **kwargs) -> dict:
    runs = [progressive_error(X, y, **kwargs) for _ in range(repeats)]
    seconds = statistics.median(s for _, s in runs)
    return {"error": runs[0][0], "learning_examples_per_second": len(y) / seconds}


def grid_points(grid: dict) -> list[dict]:
    """Every combination of the grid's values, as keyword arguments."""
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


def tune(validation: tuple[np.ndarray, np.ndarray], grid: dict = GRID, **kwargs) -> dict:
    """The grid point with the fewest progressive mistakes on the validation stream
    (the first of equals, in ``grid_points`` order)."""
    points = grid_points(grid)
    errors = [progressive_error(*validation, **point, **kwargs)[0] for point in points]
    return points[int(np.argmin(errors))]


def run(quick: bool = False, n: int = 20000, d: int = 500, repeats: int = 3) -> dict:
    try:
        import vowpalwabbit  # noqa: F401
    except ImportError:
        return {"skipped": "vowpalwabbit is not installed (pip install -e .[bench])",
                CORRECTNESS_KEY: True}
    if quick:
        n, repeats = 2000, 1
    sizes = (10,) if quick else (5, 10, 20)
    X, y = make_stream(n, d)
    validation = make_stream(VALIDATION_N // (5 if quick else 1), d, seed=VALIDATION_SEED)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "stream.vw")
        write_vw(path, X, y)
        noop = statistics.median(_vw(path, ["--noop"], n)[1] for _ in range(repeats))
        for loss in LOSSES:
            vw = ["--loss_function", loss]
            rows.append({"learner": "VW default", "loss": loss, "m": None,
                         **run_vw(path, vw, n, repeats, noop)})
            for m in sizes:
                rows.append({"learner": "VW OjaNewton", "loss": loss, "m": m,
                             **run_vw(path, vw + ["--OjaNewton", "--sketch_size", str(m)], n,
                                      repeats, noop)})
            for m in sizes:
                son = dict(sketch="rfd", m=m, loss=loss)
                tuned = tune(validation, **son)
                for setting, label in ((DEFAULTS, "RFD-SON, defaults"),
                                       (OLD_DEFAULTS, "RFD-SON, old defaults"),
                                       (tuned, "RFD-SON, tuned")):
                    rows.append({"learner": label, "loss": loss, "m": m, **setting,
                                 **run_son(X, y, repeats, **setting, **son)})
            full = dict(sketch="full", loss=loss)
            tuned = tune(validation, {**GRID, "alpha0": GRID["alpha0"][1:]}, **full)
            rows.append({"learner": "FULL-ON (exact)", "loss": loss, "m": None, **tuned,
                         **run_son(X, y, 1, **tuned, **full)})
    return {"n": n, "d": d, "repeats": repeats, "vw_noop_seconds": noop, "rows": rows,
            "load_average": os.getloadavg()[0], CORRECTNESS_KEY: True}


def format_results(result: dict) -> str:
    if "skipped" in result:
        return f"newton_vs_vw: skipped ({result['skipped']})"
    lines = [f"stream: n = {result['n']}, d = {result['d']}, x ~ N(1, Sigma), eigenvalues "
             f"100 j^-2, 5% labels flipped; median of {result['repeats']} timings; VW start-up "
             f"+ parse (--noop) {result['vw_noop_seconds']:.2f} s; load average "
             f"{result['load_average']:.1f}",
             f"{'learner':<22} {'loss':<9} {'m':>3} {'alpha0':>6} {'eta':>6} {'C':>3} "
             f"{'prog. error':>12} {'ex/s end to end':>16} {'ex/s learning':>14}"]
    for row in result["rows"]:
        setting = " ".join(f"{_setting(row.get(name)):>{width}}"
                           for name, width in (("alpha0", 6), ("eta", 6), ("C", 3)))
        lines.append(f"{row['learner']:<22} {row['loss']:<9} {row['m'] or '-':>3} {setting} "
                     f"{row['error']:>12.4f} {_rate(row.get('examples_per_second'), '-'):>16} "
                     f"{_rate(row['learning_examples_per_second']):>14}")
    return "\n".join(lines)


def _setting(value: float | str | None) -> str:
    return "-" if value is None else value if isinstance(value, str) else f"{value:g}"


def _rate(value: float | None, missing: str = "parse") -> str:
    return missing if value is None else f"{value:.0f}"


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key=CORRECTNESS_KEY)


if __name__ == "__main__":
    sys.exit(main())
