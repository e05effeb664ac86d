"""Rounds per second of S-FTRL against full-matrix FTRL, and against River's FMRegressor.

Part 1 (issue 7): for d in (500, 2625, 10000), S-FTRL (m = 10, fast) and ``FTRLFM`` learn
the same seeded stream through the public ``learn`` (validation included), in two forms:

- one-hot: a synthetic MovieLens-shaped ratings stream with n_users : n_items = 943 : 1682
  and n_users + n_items = d (two non-zeros per row, three with the constant feature),
  fed as ``(indices, values)`` pairs. S-FTRL's round is O(m) plus a shrink (O(m^2 d))
  every m+1 rows of a part; FTRL's is O(nnz^2) -- but its memory is (d+1)^2 floats.
- dense: Gaussian rows of length d (the paper's classification setting). FTRL's round is
  a (d+1) x (d+1) rank-one update, O(d^2); S-FTRL's is O(md) amortized.

Part 2: S-FTRL against ``river.facto.FMRegressor`` (defaults: 10 factors, SGD 0.01) on
MovieLens-100K in time order (recbole's data files; a synthetic MovieLens-shaped stream
when recbole is missing, and always as a second stream): progressive RMSE (each rating
predicted before it is learnt) and rounds per second. River gets a dict per rating
(``{"u<id>": 1, "i<id>": 1}``), S-FTRL an ``(indices, values)`` pair; both timings include
building those. ``progressive`` (S-FTRL's whole-stream fast path, validated once) and
``FTRLFM`` / ``OGDFM`` are listed for reference.

Both wall-clock and CPU (``time.process_time``) rates are reported: this 2-core machine is
shared, and under load the wall-clock rate measures the neighbours as much as the code.
Methods are timed back to back on the same stream, in the same process.

Checks (exit status): S-FTRL with m = d + 2 equals FTRL (predictions to 1e-9), and S-FTRL
fed sparse pairs equals S-FTRL fed the same rows dense (predictions to 1e-9).

Run ``python benchmarks/fm_rounds.py [--quick] [--threads N] [--json PATH]``.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402  (also makes `explorer` importable)
import numpy as np  # noqa: E402

from explorer.fm import (  # noqa: E402
    FTRLFM,
    OGDFM,
    SketchedFTRL,
    movielens_100k,
    progressive,
    synthetic_ratings,
)

GRID_D = (500, 2625, 10000)
M = 10
SETTINGS = {
    # rounds of each learner per d; dense FTRL is O(d^2) per round, so it gets few
    "full": {"grid_d": GRID_D, "onehot_rounds": 30000, "dense_rounds": 3000,
             "dense_ftrl_rounds": {500: 2000, 2625: 100, 10000: 8}, "river_n": None,
             "synthetic_n": 100_000, "check_rounds": 300},
    "quick": {"grid_d": (500,), "onehot_rounds": 2000, "dense_rounds": 300,
              "dense_ftrl_rounds": {500: 100}, "river_n": 3000, "synthetic_n": 3000,
              "check_rounds": 60},
}


def split_users_items(d: int) -> tuple[int, int]:
    """n_users + n_items = d in MovieLens-100K's proportion 943 : 1682."""
    n_users = max(1, round(d * 943 / 2625))
    return n_users, d - n_users


def pairs(X) -> list[tuple[np.ndarray, np.ndarray]]:
    """The rows of a CSR matrix as (indices, values) pairs (built before timing)."""
    return [(X.indices[lo:hi], X.data[lo:hi]) for lo, hi in zip(X.indptr[:-1], X.indptr[1:])]


def time_learn(learner, rows, labels) -> dict:
    """Feed ``learn`` row by row; wall and CPU rounds per second, and the losses."""
    losses = np.empty(len(labels))
    with C.no_gc(collect=True):
        wall, cpu = time.perf_counter(), time.process_time()
        for t, (x, y) in enumerate(zip(rows, labels)):
            losses[t] = learner.learn(x, y)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n = len(labels)
    return {"rounds": n, "rounds_per_s": n / wall, "cpu_rounds_per_s": n / max(cpu, 1e-9),
            "losses": losses}


def state_bytes(learner) -> int:
    return int(sum(np.asarray(v).nbytes for v in learner.state_dict().values()))


def grid(settings: dict, seed: int, progress: bool) -> list[dict]:
    rows_out = []
    rng = np.random.default_rng(seed)
    for d in settings["grid_d"]:
        n_users, n_items = split_users_items(d)
        n = min(settings["onehot_rounds"], n_users * n_items // 2)
        data = synthetic_ratings(n, n_users=n_users, n_items=n_items, seed=seed)
        stream = pairs(data.X)
        for name, make in (("S-FTRL", lambda: SketchedFTRL(d, m=M)), ("FTRLFM", lambda: FTRLFM(d))):
            if progress:
                print(f"  one-hot d={d} {name} ...", file=sys.stderr, flush=True)
            learner = make()
            timing = time_learn(learner, stream, data.y)
            rows_out.append({"input": "one-hot", "d": d, "method": name, "rounds": n,
                             "rounds_per_s": timing["rounds_per_s"],
                             "cpu_rounds_per_s": timing["cpu_rounds_per_s"],
                             "state_mib": state_bytes(learner) / 2**20,
                             "rmse": float(np.sqrt(2 * timing["losses"].mean()))})
            del learner
        X = rng.standard_normal((settings["dense_rounds"], d)) / np.sqrt(d)
        y = X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(len(X))
        for name, make, n in (("S-FTRL", lambda: SketchedFTRL(d, m=M), len(X)),
                              ("FTRLFM", lambda: FTRLFM(d), settings["dense_ftrl_rounds"][d])):
            if progress:
                print(f"  dense d={d} {name} ({n} rounds) ...", file=sys.stderr, flush=True)
            learner = make()
            timing = time_learn(learner, X[:n], y[:n])
            rows_out.append({"input": "dense", "d": d, "method": name, "rounds": n,
                             "rounds_per_s": timing["rounds_per_s"],
                             "cpu_rounds_per_s": timing["cpu_rounds_per_s"],
                             "state_mib": state_bytes(learner) / 2**20})
            del learner
    by_key = {(r["input"], r["d"], r["method"]): r for r in rows_out}
    for r in rows_out:
        if r["method"] == "S-FTRL":
            ftrl = by_key[(r["input"], r["d"], "FTRLFM")]
            r["speedup_vs_ftrl"] = r["rounds_per_s"] / ftrl["rounds_per_s"]
            r["cpu_speedup_vs_ftrl"] = r["cpu_rounds_per_s"] / ftrl["cpu_rounds_per_s"]
    return rows_out


def river_rounds(data, n: int | None) -> dict:
    """river.facto.FMRegressor with its defaults: predict_one, then learn_one, per rating."""
    from river import facto

    users, items, ratings = data.users[:n], data.items[:n], data.y[:n]
    model = facto.FMRegressor(seed=0)
    predictions = np.empty(len(ratings))
    with C.no_gc(collect=True):
        wall, cpu = time.perf_counter(), time.process_time()
        for t, (u, i, y) in enumerate(zip(users.tolist(), items.tolist(), ratings.tolist())):
            x = {f"u{u}": 1.0, f"i{i}": 1.0}
            predictions[t] = model.predict_one(x)
            model.learn_one(x, y)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"rounds": len(ratings), "rounds_per_s": len(ratings) / wall,
            "cpu_rounds_per_s": len(ratings) / cpu,
            "rmse": float(np.sqrt(np.mean((predictions - ratings) ** 2)))}


def ours_rounds(data, n: int | None, name: str) -> dict:
    X, y = data.X[:n] if n else data.X, data.y[:n]
    d = X.shape[1]
    if name == "S-FTRL progressive":
        learner = SketchedFTRL(d, m=M)
        with C.no_gc(collect=True):
            cpu = time.process_time()
            run = progressive(learner, X, y)
            cpu = time.process_time() - cpu
        return {"rounds": len(y), "rounds_per_s": len(y) / run["seconds"][-1],
                "cpu_rounds_per_s": len(y) / cpu,
                "rmse": float(np.sqrt(np.mean((run["prediction"] - y) ** 2)))}
    learner = {"S-FTRL": lambda: SketchedFTRL(d, m=M), "FTRLFM": lambda: FTRLFM(d),
               "OGDFM": lambda: OGDFM(d)}[name]()
    timing = time_learn(learner, pairs(X), y)
    return {"rounds": len(y), "rounds_per_s": timing["rounds_per_s"],
            "cpu_rounds_per_s": timing["cpu_rounds_per_s"],
            "rmse": float(np.sqrt(2 * timing["losses"].mean()))}


def against_river(settings: dict, seed: int, progress: bool) -> list[dict]:
    streams = []
    if importlib.util.find_spec("recbole") is not None:
        streams.append(("MovieLens-100K (time order)", movielens_100k()))
    streams.append(("synthetic MovieLens-shaped", synthetic_ratings(settings["synthetic_n"], seed=seed)))
    has_river = importlib.util.find_spec("river") is not None
    rows = []
    for stream_name, data in streams:
        for name in ("S-FTRL", "river FMRegressor", "S-FTRL progressive", "FTRLFM", "OGDFM"):
            if name.startswith("river") and not has_river:
                continue
            if progress:
                print(f"  {stream_name}: {name} ...", file=sys.stderr, flush=True)
            n = settings["river_n"]
            result = river_rounds(data, n) if name.startswith("river") else ours_rounds(data, n, name)
            rows.append({"stream": stream_name, "method": name, **result})
    return rows


def checks(settings: dict, seed: int) -> dict:
    data = synthetic_ratings(min(settings["check_rounds"], 90), n_users=8, n_items=12, seed=seed)
    d = data.X.shape[1]
    exact = progressive(FTRLFM(d), data.X, data.y)["prediction"]
    sketched = progressive(SketchedFTRL(d, m=d + 2), data.X, data.y)["prediction"]
    wide = synthetic_ratings(settings["check_rounds"], n_users=30, n_items=50, seed=seed)
    from_pairs = progressive(SketchedFTRL(80, m=4), wide.X, wide.y)["prediction"]
    from_dense = progressive(SketchedFTRL(80, m=4), wide.X.toarray(), wide.y)["prediction"]
    gap_exact = float(np.abs(exact - sketched).max())
    gap_sparse = float(np.abs(from_pairs - from_dense).max())
    return {"sftrl_m_d_plus_2_vs_ftrl": gap_exact, "sparse_vs_dense": gap_sparse,
            "pass": bool(gap_exact < 1e-9 and gap_sparse < 1e-9)}


def run(*, quick: bool = False, seed: int = 0, progress: bool = True, **overrides) -> dict:
    settings = {**SETTINGS["quick" if quick else "full"], **overrides}
    start = time.perf_counter()
    check = checks(settings, seed)
    river = against_river(settings, seed, progress)
    table = grid(settings, seed, progress)
    return {"benchmark": "fm_rounds", "m": M,
            "settings": {k: v for k, v in settings.items() if k != "dense_ftrl_rounds"},
            "grid": table, "river": river, "checks": check, "all_checks_pass": check["pass"],
            "seconds": time.perf_counter() - start}


def format_results(result: dict) -> str:
    parts = [C.table(result["grid"], [
        ("input", "input"), ("d", "d"), ("method", "method"), ("rounds", "rounds"),
        ("rounds_per_s", "rounds/s"), ("cpu_rounds_per_s", "rounds/cpu-s"),
        ("speedup_vs_ftrl", "vs FTRL"), ("cpu_speedup_vs_ftrl", "vs FTRL (cpu)"),
        ("state_mib", "state MiB"), ("rmse", "prog. RMSE")],
        f"S-FTRL (m = {result['m']}, fast) vs full-matrix FTRL, public learn() row by row")]
    parts.append(C.table(result["river"], [
        ("stream", "stream"), ("method", "method"), ("rounds", "rounds"),
        ("rmse", "progressive RMSE"), ("rounds_per_s", "rounds/s"),
        ("cpu_rounds_per_s", "rounds/cpu-s")],
        f"Against river.facto.FMRegressor (defaults); S-FTRL m = {result['m']}, eta = 0.02"))
    check = result["checks"]
    parts.append(f"Checks: S-FTRL (m = d+2) vs FTRL max |prediction gap| = "
                 f"{check['sftrl_m_d_plus_2_vs_ftrl']:.1e}; sparse vs dense rows "
                 f"{check['sparse_vs_dense']:.1e} ({'pass' if check['pass'] else 'FAIL'})")
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key="all_checks_pass")


if __name__ == "__main__":
    sys.exit(main())
