"""Time per round against d for the online classification methods (Wan & Zhang, Figure 7).

The paper's Figure 7 times the classifiers of its Figures 5-6 (mirror descent, tau = 20,
squared hinge loss) on Gisette (d = 5000) and Epsilon (d = 2000) and finds ADA-FFD faster
than RADAGRAD and FD-SON, "more obvious for the larger d" than at d = 500 (its Figure 3b).
Gisette and Epsilon ship in no package (docs/datasets.md), so this script times the same
learners on one seeded stream per d (``_common.make_stream``: a rank-10 signal plus
noise, labels ``sign(w_*^T x)`` with 5% flipped), fed row by row through ``learn``, with
the logistic loss: its gradient is never 0, so every round is a full update. (With the
squared hinge loss a round whose margin is met skips the update, and how many do depends
on how well each learner has learned: a different question from the cost of a round.)

- ``ffd``: ADA-FFD (Algorithms 3-4), O(tau d) per round on average;
- ``fd``: ADA-FD (Algorithms 1-2), O(tau^2 d) (one SVD of the tau x d sketch);
- ``radagrad``: RADAGRAD (Krummenacher et al. 2016; the paper's equation 4), O(tau^2 d):
  a projection, a rank-one QR update, a tau x tau SVD and the d x tau product ``Q W``;
- ``fd_son``: FD-SON (Luo et al. 2016), ``SketchedOnlineNewton(sketch="fd", m=tau,
  fast=True)``, its FD sketch with a doubled buffer: O(tau d) per round plus an
  O(tau^2 d) shrink every tau rounds (slab C = 1; every argument passed explicitly);
- ``fd_son_plain``: the same with ``fast=False``: an FD sketch of tau rows that shrinks
  (one SVD) every round once full, O(tau^2 d) like ADA-FD;
- ``diag``: ADA-DIAG, O(d): the floor every method pays for touching a row.

Every method first plays 2 tau + 1 warm-up rounds (the sketches are full and shrinking),
then whole ADA-FFD cycles of tau + 1 rounds sized to fill a time budget; repeats are
interleaved and the median kept, one BLAS thread, CPU clock. The ratios to ADA-FFD
(measured in the same process on the same rows) are the result; the absolute times are
this machine's. The script also fits each method's exponent in d (log-log slope).

Checks (exit status): with tau >= d RADAGRAD equals ADA-FULL (losses to 1e-8, logistic
loss, d = 12), and ADA-FFD's ``V`` stays orthonormal in every timed run (error < 1e-10).

Run ``python benchmarks/ada_fd_time_vs_d.py [--quick] [--threads N] [--json PATH]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402  (also makes `explorer` importable)
import numpy as np  # noqa: E402

from explorer.adagrad import LABELS, AdaGrad, RadaGrad  # noqa: E402
from explorer.newton import SketchedOnlineNewton  # noqa: E402
from explorer.streams import linear_classification_labels  # noqa: E402

CORRECTNESS_KEY = "all_checks_pass"
TAU = 20
#: The timed methods, the baseline of the ratios first.
METHODS = ("ffd", "fd", "radagrad", "fd_son", "fd_son_plain", "diag")
NAMES = {**{key: LABELS[key] for key in ("ffd", "fd", "radagrad", "diag")}, "fd_son": "FD-SON",
         "fd_son_plain": "FD-SON (SVD each round)"}

SETTINGS = {
    "full": {"grid_d": (500, 1000, 2000, 5000), "tau": TAU, "budget": 0.3, "repeats": 3,
             "check_rounds": 40},
    "quick": {"grid_d": (100, 400), "tau": 10, "budget": 0.02, "repeats": 1, "check_rounds": 10},
}


def make(key: str, d: int, tau: int, seed: int = 0):
    """A fresh learner of ``METHODS`` (CMD, logistic loss). FD-SON gets the paper's step
    size 0.1 and delta 1 as ``eta = 1 / 0.1`` (curvature weight) and ``alpha0 = 1 / 0.1``."""
    if key in ("fd_son", "fd_son_plain"):
        return SketchedOnlineNewton(d, sketch="fd", m=tau, alpha0=10.0, eta=10.0, mu=0.0, C=1.0,
                                    fast=key == "fd_son", loss="logistic", eta_schedule="constant", seed=seed)
    if key == "radagrad":
        return RadaGrad(d, method="cmd", eta=0.1, delta=1.0, tau=tau, loss="logistic", seed=seed)
    return AdaGrad(d, variant=key, method="cmd", eta=0.1, delta=None, tau=tau, loss="logistic")


def classification_stream(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``_common.make_stream`` (no d x d matrix at any d) and noisy linear labels."""
    X = C.make_stream(n, d, seed=seed)
    y, _ = linear_classification_labels(X, flip=0.05, seed=seed + 1)
    return X, y


def _feed(learner, X: np.ndarray, y: np.ndarray) -> None:
    for x, label in zip(X, y):
        learner.learn(x, label)


def time_methods(d: int, tau: int, *, budget: float, repeats: int, seed: int = 0) -> dict:
    """Median microseconds per round of every method of :data:`METHODS` in its steady state."""
    warm, period = 2 * tau + 1, tau + 1
    learners = {key: make(key, d, tau, seed) for key in METHODS}
    X, y = classification_stream(warm + period, d, seed)
    for learner in learners.values():
        _feed(learner, X[:warm], y[:warm])
    per_round = max(C.timed(_feed, learner, X[warm:], y[warm:]) / period for learner in learners.values())
    n = max(1, int(budget / (per_round * period))) * period  # the slowest method decides
    X, y = classification_stream(n * repeats, d, seed + 2)
    times = {key: [] for key in learners}
    with C.no_gc(collect=True):
        for r in range(repeats):
            order = list(learners)[r % len(learners):] + list(learners)[:r % len(learners)]
            for key in order:
                rows = slice(r * n, (r + 1) * n)
                times[key].append(C.timed(_feed, learners[key], X[rows], y[rows]) / n)
    row = {"d": d, "tau": tau, "rounds": n,
           "orthonormality_error": learners["ffd"].proximal.orthonormality_error()}
    for key, values in times.items():
        row[f"{key}_us"] = 1e6 * float(np.median(values))
        row[f"{key}_spread"] = C.spread(values)
    for key in METHODS[1:]:
        row[f"{key}_over_ffd"] = row[f"{key}_us"] / row["ffd_us"]
    return row


def check_radagrad_equals_full(rounds: int, seed: int = 0) -> dict:
    """With tau >= d the projection is orthogonal: RADAGRAD is ADA-FULL (logistic loss)."""
    X, y = classification_stream(rounds, 12, seed)
    full = AdaGrad(12, variant="full", method="cmd", eta=0.1, loss="logistic").learn_many(X, y)
    rada = RadaGrad(12, method="cmd", eta=0.1, tau=12, loss="logistic", seed=seed).learn_many(X, y)
    gap = float(np.max(np.abs(full - rada)))
    return {"rounds": rounds, "max_loss_gap": gap, "pass": gap <= 1e-8}


def slopes(rows: list[dict]) -> dict:
    """Each method's exponent in d (log-log least squares over the grid), None with one d."""
    if len(rows) < 2:
        return {key: None for key in METHODS}
    log_d = np.log([row["d"] for row in rows])
    return {key: float(np.polyfit(log_d, np.log([row[f"{key}_us"] for row in rows]), 1)[0]) for key in METHODS}


def run(*, quick: bool = False, seed: int = 0, progress: bool = True, **overrides) -> dict:
    settings = {**SETTINGS["quick" if quick else "full"], **overrides}
    start = time.perf_counter()
    rows = []
    for d in settings["grid_d"]:
        if progress:
            print(f"  d={d} tau={settings['tau']}: {', '.join(NAMES[k] for k in METHODS)} ...",
                  file=sys.stderr, flush=True)
        rows.append(time_methods(d, settings["tau"], budget=settings["budget"],
                                 repeats=settings["repeats"], seed=seed))
    check = check_radagrad_equals_full(settings["check_rounds"], seed)
    orthonormal = all(row["orthonormality_error"] < 1e-10 for row in rows)
    return {"benchmark": "ada_fd_time_vs_d", "settings": settings, "names": NAMES, "rows": rows,
            "d_exponent": slopes(rows), "check_radagrad_equals_full": check, "orthonormal": orthonormal,
            "all_checks_pass": bool(check["pass"] and orthonormal), "seconds": time.perf_counter() - start}


def format_results(result: dict) -> str:
    names = result["names"]
    columns = [("d", "d"), ("tau", "tau")] + [(f"{key}_us", f"{names[key]} us") for key in METHODS]
    columns += [(f"{key}_over_ffd", f"{names[key]} / ADA-FFD") for key in METHODS[1:]]
    parts = [C.table(result["rows"], columns, "Time per round, classification (CMD, logistic loss: every "
                                              "round updates), median of interleaved repeats")]
    exponents = result["d_exponent"]
    lines = ["Exponent of the time in d (1 = linear): " + ", ".join(
        f"{names[key]} {C.fmt(value) or 'n/a'}" for key, value in exponents.items())]
    check = result["check_radagrad_equals_full"]
    lines.append(C.loss_gap_check("RADAGRAD with tau = d equals ADA-FULL", check) + "; "
                 f"ADA-FFD's V orthonormal in every timed run: {C.fmt(result['orthonormal'])}")
    parts.append("\n".join(lines))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key=CORRECTNESS_KEY)


if __name__ == "__main__":
    sys.exit(main())
