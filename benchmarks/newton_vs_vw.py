"""RFD-SON against Vowpal Wabbit's sketched Newton (OjaNewton) and VW's default learner.

    python benchmarks/newton_vs_vw.py            # n = 20000, m in {5, 10, 20}: ~3 minutes
    python benchmarks/newton_vs_vw.py --quick    # n = 2000, m = 10: ~15 s

The stream (issue 4): d = 500, n = 20000, x ~ N(1, Sigma) with eigenvalues 100 j^-2 in a
random basis, labels sign(w*^T x) for a random unit w*, 5% flipped; written once in VW's
text format. For m in {5, 10, 20} and the logistic and squared losses we report the
progressive error (mistakes of the prediction made *before* learning each example, over
the single pass) and examples per second.

RFD-SON runs with alpha0 = 0 (the JMLR setting) at two values of eta (the curvature
weight, H = alpha I + (mu + eta) sum g g^T, so a larger eta takes smaller steps): the
default eta = 0, and eta tuned on a grid on a *separate validation stream* (same
distribution, another seed, n = 5000), as the papers tune alpha0 for their baselines.
FULL-ON (the exact online Newton step, d x d, alpha0 = 1, eta tuned the same way) is the
reference for what the sketch approximates.

The command line is every benchmark's (``--quick``, ``--threads``, ``--json``); all timings
here are wall time whatever ``--clock`` says, since VW runs as a separate process. What each
timing includes (the median of 3 runs; ``run(n=..., repeats=...)`` changes them):
- VW, end to end: the whole ``python -m vowpalwabbit -d FILE ...`` process (start-up,
  parsing the text file, learning, progressive evaluation).
- VW, learning: the same minus a ``--noop`` pass over the same file (start-up and parsing
  only), so the parse of 20000 x 500 text features is not charged to VW's learner; "parse"
  when the difference is under a fifth of the run (VW's default learner: the parse is
  nearly all of its time, and the difference is noise).
- RFD-SON / FULL-ON: ``learn`` on every row of the in-memory arrays, reading the
  prediction it made before the update (``last_prediction``; no parsing), single-threaded
  numpy in this process; data generation excluded.

Needs ``pip install -e .[bench]`` (vowpalwabbit; only this benchmark uses it); without it
the benchmark reports itself skipped.
"""

from __future__ import annotations

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
ETA_GRID = (0.0, 1.0, 4.0, 16.0, 64.0, 256.0)
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
    mistakes = 0
    start = time.perf_counter()
    for x, label in zip(X, y):
        learner.learn(x, label)
        mistakes += np.sign(learner.last_prediction) != label  # made before the update
    return mistakes / len(y), time.perf_counter() - start


def run_son(X: np.ndarray, y: np.ndarray, repeats: int, **kwargs) -> dict:
    runs = [progressive_error(X, y, **kwargs) for _ in range(repeats)]
    seconds = statistics.median(s for _, s in runs)
    return {"error": runs[0][0], "learning_examples_per_second": len(y) / seconds}


def tune_eta(validation: tuple[np.ndarray, np.ndarray], grid=ETA_GRID, **kwargs) -> float:
    """The eta of ``grid`` with the fewest progressive mistakes on the validation stream."""
    errors = [progressive_error(*validation, eta=eta, **kwargs)[0] for eta in grid]
    return grid[int(np.argmin(errors))]


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
            rows.append({"learner": "VW default", "loss": loss, "m": None, "eta": None,
                         **run_vw(path, vw, n, repeats, noop)})
            for m in sizes:
                rows.append({"learner": "VW OjaNewton", "loss": loss, "m": m, "eta": None,
                             **run_vw(path, vw + ["--OjaNewton", "--sketch_size", str(m)], n,
                                      repeats, noop)})
            for m in sizes:
                son = dict(sketch="rfd", m=m, loss=loss, alpha0=0.0)
                tuned = tune_eta(validation, **son)
                for eta, label in ((0.0, "RFD-SON, eta = 0"), (tuned, "RFD-SON, eta tuned")):
                    rows.append({"learner": label, "loss": loss, "m": m, "eta": eta,
                                 **run_son(X, y, repeats, eta=eta, **son)})
            full = dict(sketch="full", loss=loss, alpha0=1.0)
            tuned = tune_eta(validation, **full)
            rows.append({"learner": "FULL-ON (exact)", "loss": loss, "m": None, "eta": tuned,
                         **run_son(X, y, 1, eta=tuned, **full)})
    return {"n": n, "d": d, "repeats": repeats, "vw_noop_seconds": noop, "rows": rows,
            "load_average": os.getloadavg()[0], CORRECTNESS_KEY: True}


def format_results(result: dict) -> str:
    if "skipped" in result:
        return f"newton_vs_vw: skipped ({result['skipped']})"
    lines = [f"stream: n = {result['n']}, d = {result['d']}, x ~ N(1, Sigma), eigenvalues "
             f"100 j^-2, 5% labels flipped; median of {result['repeats']} timings; VW start-up "
             f"+ parse (--noop) {result['vw_noop_seconds']:.2f} s; load average "
             f"{result['load_average']:.1f}",
             f"{'learner':<20} {'loss':<9} {'m':>3} {'eta':>5} {'prog. error':>12} "
             f"{'ex/s end to end':>16} {'ex/s learning':>14}"]
    for row in result["rows"]:
        eta = "-" if row["eta"] is None else f"{row['eta']:g}"
        end_to_end = row.get("examples_per_second")
        lines.append(f"{row['learner']:<20} {row['loss']:<9} {row['m'] or '-':>3} {eta:>5} "
                     f"{row['error']:>12.4f} {_rate(end_to_end, '-'):>16} "
                     f"{_rate(row['learning_examples_per_second']):>14}")
    return "\n".join(lines)


def _rate(value: float | None, missing: str = "parse") -> str:
    return missing if value is None else f"{value:.0f}"


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key=CORRECTNESS_KEY)


if __name__ == "__main__":
    sys.exit(main())
