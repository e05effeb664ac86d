"""Regret at the paper's horizon: Wan & Zhang's synthetic regression run for T = 10000 rounds.

``notebooks/ada_fd_paper.ipynb`` reproduces Figures 1-3 of Wan & Zhang (TPAMI 2022) at
T = 600 so that the whole notebook runs in a few minutes (180-270 s of wall-clock time on a
busy 2-core machine when last run; it prints its run time); the paper uses T = 10000. This script runs the long
setting with the notebook's generator and seeds (d = 500, ``x_t ~ N(1, Sigma)`` with
eigenvalues ``100 j^-2`` from ``streams.decaying_spectrum(seed=0)``, ``y_t = beta_*^T x_t``
from ``streams.linear_regression_targets(seed=1)``, absolute loss, so the regret is the
cumulative loss). The notebook's 600 rows are the first 600 rows of this stream (checked),
so the regret at t = 600 here is the notebook's number.

- Figure 1-2: ADA-FULL, ADA-FD and ADA-FFD (tau = 20), ADA-DIAG under PDS and CMD, plus
  OGD and Adam under CMD, every eta in {1e-4, ..., 1}; delta as in the notebook (1 for CMD,
  10 for PDS, ADA-FULL included; 1e-8 for ADA-DIAG). ADA-FULL is computed as in the
  notebook: ``G_t = sum x x^T`` is the same for every eta and method (absolute loss), so one
  eigendecomposition per round serves all ten settings (``FFDProximal`` with 2 tau > d,
  which never shrinks; checked against the textbook ``AdaGrad(variant="full")``).
- For every horizon t in ``HORIZONS`` each algorithm gets its best eta *at that horizon*
  (the paper's protocol), and the script prints the regret ratios to ADA-FULL.
- Figure 3: ADA-FD and ADA-FFD with tau = 20, 40, 60, 80 (CMD, each with its best eta at
  T for tau = 20), total regret at T.

Time: one 500 x 500 eigendecomposition per round for ADA-FULL dominates (about 10 000 of
them, 0.05-0.15 s each on one core: 10-25 minutes); ``--quick`` runs a small smoke version.

Checks (exit status): the ADA-FULL shortcut equals the textbook ADA-FULL on the first
rounds (losses to 1e-10), and the first 600 rows equal the notebook's ``X``.

Run ``python benchmarks/ada_fd_regret_T10000.py [--quick] [--threads N] [--json PATH]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402  (also makes `explorer` importable)
import numpy as np  # noqa: E402

from explorer.adagrad import OGD, AdaGrad, Adam  # noqa: E402
from explorer.adagrad.proximal import FFDProximal  # noqa: E402
from explorer.experiments.adagrad import shared_gradient_runs  # noqa: E402
from explorer.streams import decaying_spectrum, linear_regression_targets  # noqa: E402

ETAS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)
#: delta of ADA-FULL (and the paper's for ADA-FD/FFD) per method, as in the notebook
DELTA = {"cmd": 1.0, "pds": 10.0}
ALGORITHMS = {"pds": ("ADA-FULL", "ADA-FD", "ADA-FFD", "ADA-DIAG"),
              "cmd": ("ADA-FULL", "ADA-FD", "ADA-FFD", "ADA-DIAG", "OGD", "Adam")}
#: the notebook's horizon (its X is the first 600 rows of this stream)
NOTEBOOK_T = 600

SETTINGS = {
    "full": {"d": 500, "T": 10000, "tau": 20, "horizons": (600, 1000, 2000, 5000, 10000),
             "taus": (20, 40, 60, 80), "check_rounds": 30},
    "quick": {"d": 40, "T": 300, "tau": 5, "horizons": (100, 300), "taus": (5, 10),
              "check_rounds": 10},
}


def ada_full_runs(X, y, settings):
    """ADA-FULL, absolute loss, for several (method, eta, delta) at once: {setting: losses}.

    The notebook's shortcut (``explorer.experiments.adagrad.shared_gradient_runs``):
    ``G_t = sum x x^T`` is shared by every setting, and ``FFDProximal`` with ``2 tau > d``
    keeps it exactly (V orthonormal, G = V M V^T).
    """
    d = X.shape[1]
    proximal = FFDProximal(d, tau=d // 2 + 1, delta=1.0)  # never shrinks
    return shared_gradient_runs(proximal, X, y, settings)[0]


def make_learner(name: str, method: str, eta: float, d: int, tau: int):
    if name == "OGD":
        return OGD(d, eta=eta)
    if name == "Adam":
        return Adam(d, eta=eta)
    variant = {"ADA-FD": "fd", "ADA-FFD": "ffd", "ADA-DIAG": "diag"}[name]
    return AdaGrad(d, variant=variant, method=method, eta=eta, tau=tau)


def check_shortcut(X, y, rounds: int) -> dict:
    """The shortcut against the textbook ADA-FULL (one d x d eigh per round) on ``rounds``."""
    settings = [(m, 0.01, DELTA[m]) for m in ("cmd", "pds")]
    shortcut = ada_full_runs(X[:rounds], y[:rounds], settings)
    gap = max(float(np.max(np.abs(
        AdaGrad(X.shape[1], variant="full", method=m, eta=eta, delta=delta).learn_many(X[:rounds], y[:rounds])
        - shortcut[m, eta, delta]))) for m, eta, delta in settings)
    return {"rounds": rounds, "max_loss_gap": gap, "pass": gap <= 1e-10}


def run(*, quick: bool = False, seed: int = 0, progress: bool = True, **overrides) -> dict:
    settings = {**SETTINGS["quick" if quick else "full"], **overrides}
    d, T, tau = settings["d"], settings["T"], settings["tau"]
    horizons = [h for h in settings["horizons"] if h <= T]
    start = time.perf_counter()

    def say(text):
        if progress:
            print(f"  [{time.perf_counter() - start:6.0f} s] {text}", file=sys.stderr, flush=True)

    X = decaying_spectrum(T, d, seed=seed)
    y, _ = linear_regression_targets(X, seed=seed + 1)
    same_as_notebook = None
    if not quick and T >= NOTEBOOK_T:
        same_as_notebook = bool(np.array_equal(X[:NOTEBOOK_T], decaying_spectrum(NOTEBOOK_T, d, seed=seed)))
    say("check: ADA-FULL shortcut against the textbook ADA-FULL ...")
    check = check_shortcut(X, y, settings["check_rounds"])

    at = np.array(horizons) - 1
    regret = {}  # (method, algorithm, eta) -> regret at each horizon
    seconds = {}
    for method in ("pds", "cmd"):
        for name in ALGORITHMS[method][1:]:
            begin = time.perf_counter()
            for eta in ETAS:
                losses = make_learner(name, method, eta, d, tau).learn_many(X, y)
                regret[method, name, eta] = np.cumsum(losses)[at]
            seconds[method, name] = time.perf_counter() - begin
            say(f"{method.upper()} {name}: {len(ETAS)} step sizes in {seconds[method, name]:.0f} s")
    say(f"ADA-FULL: {T} rounds, one {d} x {d} eigendecomposition each, 10 settings at once ...")
    begin = time.perf_counter()
    full = ada_full_runs(X, y, [(m, eta, DELTA[m]) for m in ("pds", "cmd") for eta in ETAS])
    seconds["both", "ADA-FULL"] = time.perf_counter() - begin
    for (method, eta, _), losses in full.items():
        regret[method, "ADA-FULL", eta] = np.cumsum(losses)[at]
    say(f"ADA-FULL done in {seconds['both', 'ADA-FULL']:.0f} s")

    rows = []  # one row per (method, horizon): best regret of each algorithm and ratios to ADA-FULL
    best_eta = {}
    for method in ("pds", "cmd"):
        for i, horizon in enumerate(horizons):
            row = {"method": method.upper(), "t": horizon}
            for name in ALGORITHMS[method]:
                eta = min(ETAS, key=lambda e: regret[method, name, e][i])
                best_eta[method, name, horizon] = eta
                row[name] = float(regret[method, name, eta][i])
                row[name + " eta"] = eta
            for name in ALGORITHMS[method][1:]:
                row[name + " / FULL"] = row[name] / row["ADA-FULL"]
            rows.append(row)

    by_tau = []  # Figure 3 at T: CMD, each sketch with its best eta at T for tau = settings["tau"]
    for tau_ in settings["taus"]:
        row = {"tau": tau_}
        for name in ("ADA-FD", "ADA-FFD"):
            eta = best_eta["cmd", name, horizons[-1]]
            if tau_ == tau:
                total = float(regret["cmd", name, eta][-1])
            else:
                begin = time.perf_counter()
                total = float(np.sum(make_learner(name, "cmd", eta, d, tau_).learn_many(X, y)))
                say(f"Figure 3: {name} tau = {tau_} in {time.perf_counter() - begin:.0f} s")
            row[name], row[name + " eta"] = total, eta
        by_tau.append(row)

    passed = bool(check["pass"] and same_as_notebook is not False)
    return {"benchmark": "ada_fd_regret_T10000", "settings": settings, "etas": list(ETAS),
            "delta": DELTA, "rows": rows, "by_tau": by_tau,
            "regret": {f"{m} {a} {e:g}": v.tolist() for (m, a, e), v in regret.items()},
            "horizons": horizons,
            "seconds": {f"{m} {a}": s for (m, a), s in seconds.items()},
            "check_shortcut": check, "first_600_rows_are_the_notebooks": same_as_notebook,
            "all_checks_pass": passed, "total_seconds": time.perf_counter() - start}


def format_results(result: dict) -> str:
    settings = result["settings"]
    parts = []
    for method in ("PDS", "CMD"):
        names = ALGORITHMS[method.lower()]
        rows = [r for r in result["rows"] if r["method"] == method]
        columns = [("t", "t")] + [(n, n) for n in names] + [(n + " / FULL", n.replace("ADA-", "") + "/FULL")
                                                              for n in names[1:]]
        parts.append(C.table(rows, columns, f"{method}: regret at t, each algorithm at its best eta at that t "
                                            f"(d = {settings['d']}, tau = {settings['tau']})"))
        parts.append(C.table(rows, [("t", "t")] + [(n + " eta", n + " eta") for n in names],
                             f"{method}: the best eta at each t"))
    names = ("ADA-FD", "ADA-FFD")
    parts.append(C.table(result["by_tau"], [("tau", "tau")] + [(n, n) for n in names]
                         + [(n + " eta", n + " eta") for n in names],
                         f"Figure 3: CMD regret at T = {settings['T']} against tau"))
    check = result["check_shortcut"]
    lines = [C.loss_gap_check("ADA-FULL shortcut vs textbook ADA-FULL", check)]
    if result["first_600_rows_are_the_notebooks"] is not None:
        lines.append(f"Check: the first {NOTEBOOK_T} rows are notebooks/ada_fd_paper.ipynb's X: "
                     f"{C.fmt(result['first_600_rows_are_the_notebooks'])}")
    lines.append(f"Total time {result['total_seconds']:.0f} s")
    parts.append("\n".join(lines))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key="all_checks_pass")


if __name__ == "__main__":
    sys.exit(main())
