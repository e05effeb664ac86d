"""Time per round of online adaptive PCA against n (Yuan & Lamperski, Algorithm 4).

For n in (20, 64, 256) and k = 2, one seeded toy stream (``changing_subspace``: segments of
rank-2 Gaussian rows, norm <= 1; the paper's Fig. 1 data at n = 20) is fed row by row to

- ``adaptive``: ``OnlineAdaptivePCA(n, k, eta=1, alpha=1e-5)``;
- ``static``: the same with ``alpha=0`` (static online PCA of Warmuth & Kuzmin);
- ``ftl``: ``FollowTheLeaderPCA(n, k)`` (one ``eigh`` of the running covariance per round).

Each learner first plays 30 untimed warm-up rounds (so ``W`` is no longer I/n); then a
number of rounds sized to fill a time budget is timed, in interleaved repeats whose median
is kept. The paper states O(n^3) per round (the eigendecomposition); the script fits the
exponent of time against n and breaks one adaptive round down into its parts, timed
separately on the warmed-up state: forming ``D diag(ln w) D^T - eta x x^T`` and its
``eigh`` (``exp step``), the mixture decomposition (``decompose``, O(n^2 log n): up to n
passes of a sort) and capping plus fixed share (``cap``).

Checks (exit status): after every timed run ``W`` is a density matrix with eigenvalues at
most 1/(n - k), its eigenvectors are orthonormal (error < 1e-10), and every expected loss
is finite.

Run ``python benchmarks/pca_rounds.py [--quick] [--threads N] [--json PATH]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402  (also makes `explorer` importable)
import numpy as np  # noqa: E402

from explorer.pca import FollowTheLeaderPCA, OnlineAdaptivePCA  # noqa: E402
from explorer.pca._base import eigh, log_normalize  # noqa: E402
from explorer.pca.simplex import cap_log, decompose, fixed_share_log  # noqa: E402
from explorer.streams import changing_subspace  # noqa: E402

GRID_N = (20, 64, 256)
K = 2
WARM_UP = 30
METHODS = {
    "adaptive": lambda n: OnlineAdaptivePCA(n, K, eta=1.0, alpha=1e-5, seed=0),
    "static": lambda n: OnlineAdaptivePCA(n, K, eta=1.0, alpha=0.0, seed=0),
    "ftl": lambda n: FollowTheLeaderPCA(n, K),
}
SETTINGS = {
    "full": {"budget": 0.4, "repeats": 5, "grid_n": GRID_N, "parts_calls": 20},
    "quick": {"budget": 0.02, "repeats": 1, "grid_n": (20, 64), "parts_calls": 2},
}


def _feed(learner, X: np.ndarray) -> None:
    for x in X:
        learner.learn(x)


def toy_stream(rows: int, n: int, seed: int = 0) -> np.ndarray:
    X, _ = changing_subspace(n_segments=max(1, -(-rows // 200)), segment_length=200, n=n,
                             rank=2, seed=seed)
    return X[:rows]


def time_rounds(n: int, *, budget: float, repeats: int, seed: int = 0) -> dict:
    """Median microseconds per round of every method, plus the health checks."""
    learners = {name: make(n) for name, make in METHODS.items()}
    warm = toy_stream(WARM_UP + 5, n, seed)
    for learner in learners.values():
        _feed(learner, warm[:WARM_UP])
    per_round = max(C.timed(_feed, learner, warm[WARM_UP:]) / 5 for learner in learners.values())
    rounds = max(3, int(budget / per_round))
    X = toy_stream(rounds * repeats, n, seed + 1)
    times = {name: [] for name in learners}
    expected_finite = True
    with C.no_gc(collect=True):
        for r in range(repeats):
            names = list(learners)
            order = names[r % len(names):] + names[:r % len(names)]  # rotate
            for name in order:
                times[name].append(C.timed(_feed, learners[name], X[r * rounds:(r + 1) * rounds])
                                   / rounds)
                if name != "ftl":
                    expected_finite &= bool(np.isfinite(learners[name].last_expected_loss))
    out = {name: {"rounds": rounds, "us_per_round": 1e6 * float(np.median(t)),
                  "spread": C.spread(t)} for name, t in times.items()}
    out["checks"] = {name: _health(learners[name]) for name in ("adaptive", "static")}
    out["checks"]["expected_finite"] = expected_finite
    return out


def _health(pca: OnlineAdaptivePCA) -> dict:
    w = pca.eigenvalues
    D = pca.eigenvectors
    orthonormality = float(np.abs(D.T @ D - np.eye(pca.n)).max())
    density = bool(abs(w.sum() - 1) < 1e-10 and w.min() >= 0
                   and w.max() <= 1 / (pca.n - pca.k) + 1e-12)
    return {"density_matrix": density, "orthonormality_error": orthonormality,
            "min_log_eigenvalue": float(pca.log_eigenvalues.min()),
            "pass": density and orthonormality < 1e-10}


def time_parts(n: int, *, calls: int, seed: int = 0) -> dict:
    """Microseconds of each part of one adaptive round, on a warmed-up learner."""
    pca = METHODS["adaptive"](n)
    X = toy_stream(WARM_UP + 1, n, seed)
    _feed(pca, X[:WARM_UP])
    x = X[WARM_UP]
    d = n - K
    w, log_w, D = pca.eigenvalues, pca.log_eigenvalues, pca.eigenvectors
    G = np.outer(x, x)
    _, log_v = exponentiated_step(D, log_w, pca.eta, G)
    parts = {
        "exp_step_us": lambda: exponentiated_step(D, log_w, pca.eta, G),
        "decompose_us": lambda: decompose(np.minimum(w, 1.0 / d), d),
        "cap_us": lambda: cap_log(fixed_share_log(log_v, pca.alpha), d),
    }
    out = {name: 1e6 * float(np.median([C.timed(fn) for _ in range(calls)]))
           for name, fn in parts.items()}
    out["corners"] = int(decompose(np.minimum(w, 1.0 / d), d)[0].size)
    M = (D * log_w) @ D.T
    out["eigh_only_us"] = 1e6 * float(np.median(
        [C.timed(np.linalg.eigh, M) for _ in range(calls)]))
    return out


def exponentiated_step(D: np.ndarray, log_w: np.ndarray, eta: float, G: np.ndarray):
    """The learner's step 4, ``exp(ln W - eta G) / tr`` as eigenvectors and log-eigenvalues,
    with ``W = D diag(e^log_w) D^T``: the same operations as a round's (explorer/pca/_base.py)."""
    mu, U = eigh((D * log_w) @ D.T - eta * G)
    return U, log_normalize(mu)


def fit_exponent(configs: list[dict], key: str) -> float | None:
    """Slope of log(time) against log(n)."""
    if len(configs) < 2:
        return None
    return float(np.polyfit(np.log([c["n"] for c in configs]),
                            np.log([c[key] for c in configs]), 1)[0])


def run(*, quick: bool = False, seed: int = 0, progress: bool = True, **overrides) -> dict:
    settings = {**SETTINGS["quick" if quick else "full"], **overrides}
    start = time.perf_counter()
    configs = []
    for n in settings["grid_n"]:
        if progress:
            print(f"  online PCA n={n} k={K} ...", file=sys.stderr, flush=True)
        timing = time_rounds(n, budget=settings["budget"], repeats=settings["repeats"], seed=seed)
        parts = time_parts(n, calls=settings["parts_calls"], seed=seed)
        configs.append({
            "n": n, "k": K, "rounds": timing["adaptive"]["rounds"],
            **{f"{name}_us": timing[name]["us_per_round"] for name in METHODS},
            **{f"{name}_spread": timing[name]["spread"] for name in METHODS},
            **parts,
            "orthonormality_error": max(timing["checks"][name]["orthonormality_error"]
                                        for name in ("adaptive", "static")),
            "static_min_log_eigenvalue": timing["checks"]["static"]["min_log_eigenvalue"],
            "checks_pass": bool(timing["checks"]["adaptive"]["pass"]
                                and timing["checks"]["static"]["pass"]
                                and timing["checks"]["expected_finite"]),
        })
    return {"benchmark": "pca_rounds", "settings": settings, "configs": configs,
            "exponents": {name: fit_exponent(configs, f"{name}_us") for name in METHODS},
            "all_checks_pass": all(c["checks_pass"] for c in configs),
            "seconds": time.perf_counter() - start}


def format_results(result: dict) -> str:
    table = C.table(result["configs"], [
        ("n", "n"), ("k", "k"), ("rounds", "rounds timed"), ("adaptive_us", "adaptive us/round"),
        ("static_us", "static us/round"), ("ftl_us", "FTL us/round"),
        ("exp_step_us", "exp step us"), ("eigh_only_us", "eigh(n) us"),
        ("decompose_us", "decompose us"), ("corners", "corners"), ("cap_us", "cap+share us"),
        ("adaptive_spread", "spread"), ("orthonormality_error", "max|D^T D - I|"),
        ("checks_pass", "W ok")],
        "Time per round, k = 2, toy stream (median of interleaved repeats)")
    exponents = ", ".join(f"{name}: {C.fmt(value) or 'n/a'}"
                          for name, value in result["exponents"].items())
    return (f"{table}\n\nTime ~ n^a, fitted a = {exponents} (the paper: O(n^3) per round; "
            f"small n is dominated by per-call overheads)\nAll checks pass: "
            f"{C.fmt(result['all_checks_pass'])}")


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key="all_checks_pass")


if __name__ == "__main__":
    sys.exit(main())
