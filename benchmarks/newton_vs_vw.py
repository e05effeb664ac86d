"""RFD-SON against Vowpal Wabbit's sketched Newton (OjaNewton) and VW's default learner.

    python benchmarks/newton_vs_vw.py            # n = 20000, m in {5, 10, 20}: ~8 minutes
    python benchmarks/newton_vs_vw.py --quick    # n = 2000, m = 10: ~1 minute

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

Speed targets (:func:`speed`, logistic loss, the defaults, in this one process, CPU time,
interleaved repeats and the median of the per-repeat ratios): VW learning in-process from
pre-parsed examples (``Workspace.parse`` outside the clock, ``learn`` on each example inside
it, its prediction read before ``finish_example``: the progressive error is VW's own) against
RFD-SON's ``learn_many`` on the compiled path (:mod:`explorer.newton.compiled`, warmed up).
The verdict lines: RFD-SON at least VW ``--OjaNewton``'s rate at every m and 2x at m >= 10,
and at least 1 / 1.5 of VW's default learner's rate at m = 5.

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
from explorer.newton import SketchedOnlineNewton, compiled

CORRECTNESS_KEY = "ran"
LOSSES = ("logistic", "squared")
GRID = {"alpha0": (0.0, 1.0, 10.0, 100.0, 1000.0),
        "eta": (0.0, 0.0625, 0.25, 1.0, 4.0, 16.0, 64.0),
        "C": (1.0, 10.0)}
DEFAULTS = {"alpha0": "auto", "eta": "auto", "C": "auto"}
OLD_DEFAULTS = {"alpha0": 0.0, "eta": 0.0, "C": 1.0}
VALIDATION_SEED, VALIDATION_N = 1, 5000
#: The targets: RFD-SON / VW OjaNewton at least 1 (every m) and 2 (m >= 10); RFD-SON / VW
#: default at least 1 / 1.5 at m = 5.
TARGETS = {"oja_every_m": 1.0, "oja_from_m10": 2.0, "default_at_m5": 1 / 1.5}
CHUNK = 1000  # examples parsed (untimed) before each timed stretch of VW learning


def vw_lines(X: np.ndarray, y: np.ndarray) -> list[str]:
    """The examples in VW's text format (what :func:`write_vw` writes)."""
    return [f"{int(label)} |f " + " ".join(f"{j}:{value:.6g}" for j, value in enumerate(x))
            for x, label in zip(X, y)]


def vw_in_process(lines: list[str], y: np.ndarray, arguments: str) -> tuple[float, float]:
    """(CPU seconds spent in VW's ``learn``, progressive error) of one pass in this process:
    every CHUNK examples are parsed first (untimed), then learned one by one (timed); the
    prediction each ``learn`` leaves is the one made before its update (VW's progressive
    validation), read before ``finish_example``."""
    from vowpalwabbit import Workspace, pyvw

    workspace = Workspace(f"{arguments} --binary --quiet")
    learn, seconds, wrong = pyvw.pylibvw.vw.learn, 0.0, 0
    try:
        for start in range(0, len(lines), CHUNK):
            examples = [workspace.parse(line) for line in lines[start:start + CHUNK]]
            with C.no_gc():
                began = time.process_time()
                for example in examples:
                    learn(workspace, example)
                seconds += time.process_time() - began
            for example, label in zip(examples, y[start:start + CHUNK]):
                wrong += example.get_simplelabel_prediction() != label
                workspace.finish_example(example)
    finally:
        workspace.finish()
    return seconds, wrong / len(y)


def son_in_process(X: np.ndarray, y: np.ndarray, m: int) -> tuple[float, float]:
    """(CPU seconds, progressive error) of RFD-SON's ``learn_many`` with the defaults."""
    learner = SketchedOnlineNewton(X.shape[1], sketch="rfd", m=m, loss="logistic")
    with C.no_gc():
        began = time.process_time()
        _, predictions = learner.learn_many(X, y, return_predictions=True)
        seconds = time.process_time() - began
    return seconds, float(np.mean(np.sign(predictions) != y))


def speed(X: np.ndarray, y: np.ndarray, sizes: tuple[int, ...], repeats: int) -> dict:
    """Learning-only rates (examples per CPU second) of VW's default learner, VW OjaNewton
    and RFD-SON (compiled) per m, the arms interleaved in each repeat (the order rotated),
    and the medians of the per-repeat ratios RFD-SON / VW."""
    compiled_path = compiled.wait()
    son_in_process(X[:200], y[:200], sizes[0])  # the compiled kernel loaded and warm
    lines, n = vw_lines(X, y), len(y)
    rows = []
    for m in sizes:
        arms = {"vw_default": lambda: vw_in_process(lines, y, "--loss_function logistic"),
                "vw_oja": lambda: vw_in_process(lines, y, f"--loss_function logistic --OjaNewton "
                                                         f"--sketch_size {m}"),
                "rfd_son": lambda: son_in_process(X, y, m)}
        seconds = {arm: [] for arm in arms}
        errors = {}
        for r in range(repeats):
            order = list(arms)[r % 3:] + list(arms)[:r % 3]
            for arm in order:
                spent, errors[arm] = arms[arm]()
                seconds[arm].append(spent)
        ratio = {other: float(np.median([a / b for a, b in zip(seconds[other], seconds["rfd_son"])]))
                 for other in ("vw_default", "vw_oja")}
        rows.append({"m": m, **{f"{arm}_per_s": n / float(np.median(seconds[arm])) for arm in arms},
                     **{f"{arm}_error": errors[arm] for arm in arms},
                     "ratio_vw_oja": ratio["vw_oja"], "ratio_vw_default": ratio["vw_default"]})
    return {"compiled": compiled_path, "rows": rows, "verdicts": verdicts(rows)}


def verdicts(rows: list[dict]) -> list[tuple[str, bool]]:
    """The targets as (sentence, met) from the speed rows."""
    by_m = {row["m"]: row for row in rows}
    lines = [(f"RFD-SON >= VW OjaNewton's rate at m = {', '.join(map(str, by_m))}: "
              + ", ".join(f"{row['ratio_vw_oja']:.2f}x" for row in rows),
              all(row["ratio_vw_oja"] >= TARGETS["oja_every_m"] for row in rows))]
    big = [row for row in rows if row["m"] >= 10]
    if big:
        lines.append((f"RFD-SON >= 2x VW OjaNewton's rate at m >= 10: "
                      + ", ".join(f"{row['ratio_vw_oja']:.2f}x (m = {row['m']})" for row in big),
                      all(row["ratio_vw_oja"] >= TARGETS["oja_from_m10"] for row in big)))
    if 5 in by_m:
        lines.append((f"RFD-SON within 1.5x of VW's default learner at m = 5: "
                      f"{by_m[5]['ratio_vw_default']:.2f}x its rate (target >= {1 / 1.5:.2f}x)",
                      by_m[5]["ratio_vw_default"] >= TARGETS["default_at_m5"]))
    return lines


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
    compiled.wait()  # every RFD-SON timing on the compiled path (numpy without numba)
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
    load = os.getloadavg()[0]
    fast = speed(X, y, sizes, repeats)
    return {"n": n, "d": d, "repeats": repeats, "vw_noop_seconds": noop, "rows": rows, "speed": fast,
            "load_average": load, "load_average_end": os.getloadavg()[0], CORRECTNESS_KEY: True}


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
    if "speed" in result:
        lines += format_speed(result)
    return "\n".join(lines)


def format_speed(result: dict) -> list[str]:
    fast = result["speed"]
    lines = ["", f"learning only, in this process (CPU time; VW from pre-parsed examples; RFD-SON "
             f"{'compiled' if fast['compiled'] else 'numpy (no numba)'}), logistic loss, defaults; "
             f"load average {result['load_average']:.1f} -> {result.get('load_average_end', 0.0):.1f}",
             f"{'m':>3} {'VW default ex/s':>16} {'VW Oja ex/s':>12} {'RFD-SON ex/s':>13} "
             f"{'/ VW Oja':>9} {'/ VW default':>13} {'err VW def':>11} {'err VW Oja':>11} {'err RFD':>8}"]
    for row in fast["rows"]:
        lines.append(f"{row['m']:>3} {row['vw_default_per_s']:>16.0f} {row['vw_oja_per_s']:>12.0f} "
                     f"{row['rfd_son_per_s']:>13.0f} {row['ratio_vw_oja']:>8.2f}x "
                     f"{row['ratio_vw_default']:>12.2f}x {row['vw_default_error']:>11.4f} "
                     f"{row['vw_oja_error']:>11.4f} {row['rfd_son_error']:>8.4f}")
    lines += [f"{'MET ' if met else 'MISSED'}  {sentence}" for sentence, met in fast["verdicts"]]
    return lines


def _setting(value: float | str | None) -> str:
    return "-" if value is None else value if isinstance(value, str) else f"{value:g}"


def _rate(value: float | None, missing: str = "parse") -> str:
    return missing if value is None else f"{value:.0f}"


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key=CORRECTNESS_KEY)


if __name__ == "__main__":
    sys.exit(main())
