"""Time per round of ADA-FFD, ADA-FD and ADA-FULL (Wan & Zhang, section 3 complexities).

For every d in (500, 2000, 5000) and tau in (20, 40, 80), one seeded regression stream
(``x_t`` a rank-10 signal plus noise, ``y_t = beta_*^T x_t``, absolute loss: the paper's
task) is fed through ``AdaGrad.learn`` row by row, mirror descent (CMD):

- ``ffd``: ADA-FFD (Algorithms 3-4), claimed O(tau d) per round on average (tau <= sqrt d);
- ``fd``: ADA-FD (Algorithms 1-2), claimed O(tau^2 d) per round (one SVD of tau x d);
- ``full``: ADA-FULL, a d x d eigendecomposition per round, O(d^3) whatever tau is (timed
  once per d, on few rounds: one round at d = 5000 is a 5000 x 5000 ``eigh``).

The sketched learners first play 2 tau + 1 warm-up rounds (their rank has reached the
cycle), then a whole number of ADA-FFD cycles (tau + 1 rounds each, so every timed run
holds the same share of shrinks) sized to fill a time budget; repeats are interleaved and
the median kept. From the ADA-FFD times the script fits ``time = c tau^a d^b`` (least
squares in logs) and reports the exponents ``a`` and ``b`` (1 and 1 would be the paper's
O(tau d)), plus the slope in tau at each d and in d at each tau. ``eigh_us`` is the time of
one ``numpy.linalg.eigh`` of an r x r matrix with r = 1.5 tau (the average rank): the
O(tau^3) part of a round that the paper's O(tau d) leaves out by assuming tau <= sqrt d.

Checks (exit status): ADA-FFD with tau = 251 equals ADA-FULL at d = 500 on 30 rounds
(losses to 1e-8), and every timed ADA-FFD keeps ``V`` orthonormal (error < 1e-10).

Run ``python benchmarks/adagrad_rounds.py [--quick] [--threads N] [--json PATH]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402  (also makes `explorer` importable)
import numpy as np  # noqa: E402

from explorer.adagrad import AdaGrad  # noqa: E402

GRID_D = (500, 2000, 5000)
GRID_TAU = (20, 40, 80)
#: rounds of ADA-FULL timed at each d (its cost does not depend on t)
FULL_ROUNDS = {500: 20, 2000: 3, 5000: 1}

SETTINGS = {
    "full": {"budget": 0.5, "repeats": 3, "grid_d": GRID_D, "grid_tau": GRID_TAU,
             "full_rounds": FULL_ROUNDS, "check_rounds": 30},
    "quick": {"budget": 0.02, "repeats": 1, "grid_d": (500,), "grid_tau": (20, 40),
              "full_rounds": {500: 2}, "check_rounds": 5},
}


def regression_stream(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``_common.make_stream`` (no d x d matrix even at d = 5000) and noise-free targets."""
    X = C.make_stream(n, d, seed=seed)
    beta_star = np.random.default_rng(seed + 1).standard_normal(d)
    return X, X @ (beta_star / np.linalg.norm(beta_star))


def _feed(learner: AdaGrad, X: np.ndarray, y: np.ndarray) -> None:
    for x, label in zip(X, y):
        learner.learn(x, label)


def time_sketches(d: int, tau: int, *, budget: float, repeats: int, seed: int = 0) -> dict:
    """Median microseconds per round of ADA-FFD and ADA-FD in their steady state."""
    warm = 2 * tau + 1
    period = tau + 1
    learners = {name: AdaGrad(d, variant=name, tau=tau) for name in ("ffd", "fd")}
    X, y = regression_stream(warm + period, d, seed)
    for learner in learners.values():
        _feed(learner, X[:warm], y[:warm])
    # calibrate: how many cycles of tau + 1 rounds fill the budget (slowest method decides)
    per_round = max(C.timed(_feed, learner, X[warm:], y[warm:]) / period
                    for learner in learners.values())
    cycles = max(1, int(budget / (per_round * period)))
    n = cycles * period
    X, y = regression_stream(n * repeats, d, seed + 2)
    times = {name: [] for name in learners}
    with C.no_gc(collect=True):
        for r in range(repeats):
            order = list(learners) if r % 2 == 0 else list(learners)[::-1]
            for name in order:
                rows = slice(r * n, (r + 1) * n)
                times[name].append(C.timed(_feed, learners[name], X[rows], y[rows]) / n)
    out = {name: {"rounds": n, "us_per_round": 1e6 * float(np.median(t)), "spread": C.spread(t)}
           for name, t in times.items()}
    out["ffd"]["orthonormality_error"] = learners["ffd"].proximal.orthonormality_error()
    r = max(2, round(1.5 * tau))
    M = np.random.default_rng(seed).standard_normal((r, r))
    M = M @ M.T
    out["eigh_us"] = 1e6 * min(C.timed(np.linalg.eigh, M) for _ in range(20))
    return out


def time_full(d: int, rounds: int, seed: int = 0) -> dict:
    """Microseconds per round of ADA-FULL (after one warm-up round)."""
    learner = AdaGrad(d, variant="full")
    X, y = regression_stream(rounds + 1, d, seed)
    _feed(learner, X[:1], y[:1])
    seconds = C.timed(_feed, learner, X[1:], y[1:])
    return {"rounds": rounds, "us_per_round": 1e6 * seconds / rounds}


def check_ffd_251_equals_full(rounds: int, seed: int = 0) -> dict:
    """Footnote 1 of the paper: d = 500, tau = 251 never shrinks and is ADA-FULL."""
    X, y = regression_stream(rounds, 500, seed)
    full, ffd = AdaGrad(500, variant="full"), AdaGrad(500, variant="ffd", tau=251)
    gap = float(np.max(np.abs(full.learn_many(X, y) - ffd.learn_many(X, y))))
    return {"rounds": rounds, "max_loss_gap": gap, "pass": gap <= 1e-8}


def fit_exponents(rows: list[dict]) -> dict:
    """Least squares ``log t = log c + a log tau + b log d`` over all (d, tau) of ADA-FFD."""
    tau = np.array([row["tau"] for row in rows], dtype=float)
    d = np.array([row["d"] for row in rows], dtype=float)
    t = np.array([row["ffd_us"] for row in rows], dtype=float)
    fit = {}
    if len(set(tau)) > 1 and len(set(d)) > 1:
        design = np.column_stack([np.ones_like(t), np.log(tau), np.log(d)])
        (_, a, b), *_ = np.linalg.lstsq(design, np.log(t), rcond=None)
        fit["tau_exponent"], fit["d_exponent"] = float(a), float(b)
    fit["tau_slope_at_d"] = {int(k): _slope([r for r in rows if r["d"] == k], "tau")
                             for k in sorted(set(d.astype(int)))}
    fit["d_slope_at_tau"] = {int(k): _slope([r for r in rows if r["tau"] == k], "d")
                             for k in sorted(set(tau.astype(int)))}
    if len(rows) >= 3:
        # the cost model of section 3.2.1: a fixed per-round overhead, the O(tau d) products
        # and the O(tau^3) eigendecomposition of M (least squares on relative errors)
        design = np.column_stack([np.ones_like(t), tau * d, tau ** 3])
        coefficients, *_ = np.linalg.lstsq(design / t[:, None], np.ones_like(t), rcond=None)
        predicted = design @ coefficients
        fit["model_us"] = {"constant": float(coefficients[0]),
                           "per_tau_d_ns": 1e3 * float(coefficients[1]),
                           "per_tau_cubed_ns": 1e3 * float(coefficients[2]),
                           "max_relative_error": float(np.max(np.abs(predicted - t) / t))}
    return fit


def _slope(rows: list[dict], key: str) -> float | None:
    """Exponent of ``ffd_us`` against ``key`` (log-log least squares), None with one point."""
    if len(rows) < 2:
        return None
    x = np.log([row[key] for row in rows])
    return float(np.polyfit(x, np.log([row["ffd_us"] for row in rows]), 1)[0])


def run(*, quick: bool = False, seed: int = 0, progress: bool = True, **overrides) -> dict:
    settings = {**SETTINGS["quick" if quick else "full"], **overrides}
    start = time.perf_counter()
    configs = []
    for d in settings["grid_d"]:
        for tau in settings["grid_tau"]:
            if progress:
                print(f"  ADA-FFD / ADA-FD d={d} tau={tau} ...", file=sys.stderr, flush=True)
            sketches = time_sketches(d, tau, budget=settings["budget"],
                                     repeats=settings["repeats"], seed=seed)
            configs.append({"d": d, "tau": tau, "ffd_us": sketches["ffd"]["us_per_round"],
                            "fd_us": sketches["fd"]["us_per_round"], "eigh_us": sketches["eigh_us"],
                            "ffd_spread": sketches["ffd"]["spread"],
                            "fd_spread": sketches["fd"]["spread"],
                            "rounds": sketches["ffd"]["rounds"],
                            "orthonormality_error": sketches["ffd"]["orthonormality_error"]})
    full = {}
    for d, rounds in settings["full_rounds"].items():
        if progress:
            print(f"  ADA-FULL d={d} ({rounds} rounds) ...", file=sys.stderr, flush=True)
        full[d] = time_full(d, rounds, seed)
    for row in configs:
        if row["d"] in full:
            row["full_us"] = full[row["d"]]["us_per_round"]
            row["full_over_ffd"] = row["full_us"] / row["ffd_us"]
        row["fd_over_ffd"] = row["fd_us"] / row["ffd_us"]
    if progress:
        print("  check: ADA-FFD tau=251 vs ADA-FULL at d=500 ...", file=sys.stderr, flush=True)
    check = check_ffd_251_equals_full(settings["check_rounds"], seed)
    orthonormal = all(row["orthonormality_error"] < 1e-10 for row in configs)
    return {"benchmark": "adagrad_rounds", "settings": {k: v for k, v in settings.items()
                                                         if k != "full_rounds"},
            "full_rounds": {str(k): v for k, v in settings["full_rounds"].items()},
            "configs": configs, "full": {str(k): v for k, v in full.items()},
            "fit": fit_exponents(configs), "check_ffd_251_equals_full": check,
            "orthonormal": orthonormal, "all_checks_pass": bool(check["pass"] and orthonormal),
            "seconds": time.perf_counter() - start}


def format_results(result: dict) -> str:
    parts = [C.table(result["configs"], [
        ("d", "d"), ("tau", "tau"), ("ffd_us", "ADA-FFD us/round"), ("fd_us", "ADA-FD us/round"),
        ("full_us", "ADA-FULL us/round"), ("fd_over_ffd", "FD / FFD"),
        ("full_over_ffd", "FULL / FFD"), ("eigh_us", "eigh(1.5 tau) us"),
        ("ffd_spread", "FFD spread"), ("orthonormality_error", "max|V^T V - I|")],
        "Time per round, mirror descent, absolute loss (median of interleaved repeats)")]
    fit = result["fit"]
    lines = ["ADA-FFD cost ~ tau^a d^b (1 and 1 = the paper's O(tau d)):"]
    if "tau_exponent" in fit:
        lines.append(f"  joint fit: a = {fit['tau_exponent']:.2f}, b = {fit['d_exponent']:.2f}")
    lines.append("  slope in tau at d = " + ", ".join(
        f"{d}: {C.fmt(s) or 'n/a'}" for d, s in fit["tau_slope_at_d"].items()))
    lines.append("  slope in d at tau = " + ", ".join(
        f"{t}: {C.fmt(s) or 'n/a'}" for t, s in fit["d_slope_at_tau"].items()))
    if "model_us" in fit:
        model = fit["model_us"]
        lines.append(f"  cost model us = c + a tau d + b tau^3: c = {model['constant']:.0f} us, "
                     f"a = {model['per_tau_d_ns']:.2f} ns, b = {model['per_tau_cubed_ns']:.2f} ns "
                     f"(worst relative misfit {100 * model['max_relative_error']:.0f}%)")
    check = result["check_ffd_251_equals_full"]
    lines.append(C.loss_gap_check("ADA-FFD tau=251 vs ADA-FULL at d=500", check) + "; "
                 f"V orthonormal in every timed run: {C.fmt(result['orthonormal'])}")
    parts.append("\n".join(lines))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key="all_checks_pass")


if __name__ == "__main__":
    sys.exit(main())
