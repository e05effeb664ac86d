"""Sketching past one machine: explorer.distributed.sketch_array on a memory-mapped stream.

(Not named ``distributed.py``: this folder is on ``sys.path`` when a benchmark runs, and a
module of that name would hide Dask's ``distributed`` package.)

A stream of ``rows x cols`` float64 rows (default 10^6 x 1000, 8 GB) is written once, chunk
by chunk, as a ``.npy`` file in a temporary folder (deleted at the end); while it is
written, the exact ``A^T A`` (cols x cols) is summed chunk by chunk, the reference for
every error below. Then the same file is read by

- ``sequential FD``: one ``FrequentDirections(fast=True)``, ``extend`` over memory-mapped
  chunks (one process, one thread): the baseline;
- ``sketch_array``: :func:`explorer.distributed.sketch_array` (FD, fast) on Dask's local
  threaded scheduler with 1 and 2 threads, and on a ``distributed.LocalCluster`` of 2
  worker processes (1 thread each), all with the same chunks and ``split_every``, so the
  three give the same sketch bit for bit (checked);
- ``svd_compressed``: ``dask.array.linalg.svd_compressed(X, k=m)`` (randomized SVD; Dask's
  default of 0 power iterations, and 2), on 2 threads; ``B = diag(s) V^T``;
- ``IncrementalPCA``: scikit-learn's ``partial_fit`` over the same chunks (one thread).
  It centres the data: its model of ``A^T A`` is ``B^T B + n mu mu^T`` with
  ``B = diag(singular_values_) components_`` and ``mu = mean_`` (the centred rank-m part
  plus the mean it removed), and that is what is compared.

Reported per method: wall seconds, rows/s, the ratio to sequential FD, peak memory (a
second run under tracemalloc: numpy's allocations, not the file's pages in the OS cache;
for the cluster, each worker process's peak resident size, interpreter and libraries
included), and the spectral error ``||A^T A - B^T B||_2 / ||A||_F^2`` next to the best any
rank-m approximation can do (``sigma_{m+1}(A)^2 / ||A||_F^2``) and FD's bound. Fast FD
keeps up to 2m-1 rows (memory 2 m d), the rank-m methods m. Correctness checks (the exit
status): FD's guarantee ``||A^T A - B^T B||_2 <= delta_total <= min_k ||A - A_k||_F^2 /
(m - k)`` for every FD result, ``n_seen == rows``, and threads / cluster bit-identical.

The machine's page cache holds the file after it is written (it has more RAM than the
file), so every method reads from memory: the numbers are compute, not disk.

    python benchmarks/sketch_distributed.py                 # 10^6 x 1000 (8 GB of disk, ~RAM)
    python benchmarks/sketch_distributed.py --quick         # 2*10^4 x 200, seconds
    python benchmarks/sketch_distributed.py --rows 1000000 --cols 500 --folder /big/tmp
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402
import numpy as np  # noqa: E402

from explorer import FrequentDirections  # noqa: E402

CORRECTNESS_KEY = "all_checks_pass"
SIZES = {"full": {"rows": 10 ** 6, "cols": 1000, "m": 20, "chunk_rows": 2 ** 14, "split_every": 8},
         "quick": {"rows": 20_000, "cols": 200, "m": 10, "chunk_rows": 2_000, "split_every": 4}}
SEED = 0
RANK = 20  # the stream's signal: RANK directions of decaying strength, plus noise


# -- the stream ----------------------------------------------------------------------------
def write_stream(path: Path, rows: int, cols: int, chunk_rows: int, seed: int = SEED) -> dict:
    """Write the stream as a ``.npy`` file chunk by chunk (never all of it in memory) and sum
    the exact Gram matrix on the way. Returns the Gram, ``||A||_F^2`` and the timings."""
    rng = np.random.default_rng(seed)
    rank = min(RANK, cols)
    basis = np.linalg.qr(rng.standard_normal((cols, rank)))[0].T  # rank x cols, orthonormal
    strengths = 10.0 / np.arange(1, rank + 1) ** 0.75
    gram, gram_seconds = np.zeros((cols, cols)), 0.0
    start_time = time.perf_counter()
    with open(path, "wb") as file:
        np.lib.format.write_array_header_1_0(file, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float64)),
                                                    "fortran_order": False, "shape": (rows, cols)})
        for index, start in enumerate(range(0, rows, chunk_rows)):
            chunk_rng = np.random.default_rng([seed, index])
            n = min(chunk_rows, rows - start)
            block = (chunk_rng.standard_normal((n, rank)) * strengths) @ basis
            block += chunk_rng.standard_normal((n, cols))
            file.write(block.tobytes())
            tick = time.perf_counter()
            gram += block.T @ block
            gram_seconds += time.perf_counter() - tick
    return {"gram": gram, "frobenius_squared": float(np.trace(gram)), "gram_seconds": gram_seconds,
            "write_seconds": time.perf_counter() - start_time - gram_seconds}


def chunk_starts(rows: int, chunk_rows: int, m: int) -> list[int]:
    """Chunk boundaries for the sequential methods; a last chunk of fewer than m rows joins the
    one before (IncrementalPCA needs at least n_components rows per batch)."""
    starts = list(range(0, rows, chunk_rows)) + [rows]
    if len(starts) > 2 and starts[-1] - starts[-2] < m:
        del starts[-2]
    return starts


def memmap_chunks(path: Path, starts: list[int]):
    """The file's rows, chunk by chunk, each through a fresh memory map (as the Dask reader)."""
    for start, stop in zip(starts[:-1], starts[1:]):
        rows = np.load(path, mmap_mode="r", allow_pickle=False)
        yield rows[start:stop]
        del rows


# -- the methods -------------------------------------------------------------------------------
def sequential_fd(path, cols, m, starts):
    sketch = FrequentDirections(cols, m, fast=True)
    for block in memmap_chunks(path, starts):
        sketch.extend(block)
    return sketch


def sketch_array_threads(path, m, chunk_rows, split_every, threads):
    import dask

    from explorer.distributed import sketch_array

    with dask.config.set(scheduler="threads", num_workers=threads):
        return sketch_array(path, m, chunk_rows=chunk_rows, split_every=split_every)


def svd_compressed(path, m, chunk_rows, threads, power):
    import dask
    import dask.array as da

    from explorer.distributed import open_rows

    X = open_rows(path, chunk_rows=chunk_rows)
    _, s, v = da.linalg.svd_compressed(X, k=m, n_power_iter=power, seed=SEED)
    with dask.config.set(scheduler="threads", num_workers=threads):
        s, v = dask.compute(s, v)
    return s[:, None] * v


def incremental_pca(path, m, starts):
    from sklearn.decomposition import IncrementalPCA

    ipca = IncrementalPCA(n_components=m)
    for block in memmap_chunks(path, starts):
        ipca.partial_fit(block)
    return ipca


# -- measuring --------------------------------------------------------------------------------
def timed_run(fn, *args):
    """(result, wall seconds, CPU seconds of this process)."""
    with C.no_gc(collect=True):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn(*args)
        return result, time.perf_counter() - wall, time.process_time() - cpu


def traced_peak(fn, *args) -> int:
    """Peak bytes numpy and Python allocated during ``fn(*args)`` (tracemalloc)."""
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def spectral_error(gram: np.ndarray, approximation_gram: np.ndarray) -> float:
    """``||A^T A - C||_2`` for a symmetric ``C``: the largest |eigenvalue| of the difference."""
    return float(np.abs(np.linalg.eigvalsh(gram - approximation_gram)).max())


def fd_checks(sketch, gram, spectrum, rows, m) -> dict:
    """FD's guarantee on the sketch ``sketch`` of the stream with Gram ``gram``."""
    B = sketch.rows
    difference = np.linalg.eigvalsh(gram - B.T @ B)
    scale = float(np.trace(gram)) * 1e-9
    tails = float(np.trace(gram)) - np.concatenate([[0.0], np.cumsum(spectrum)])
    bound = min(tails[k] / (m - k) for k in range(m))
    return {"n_seen": sketch.n_seen == rows, "psd": bool(difference.min() >= -scale),
            "error_le_delta": bool(difference.max() <= sketch.delta_total + scale),
            "delta_le_bound": bool(sketch.delta_total <= bound + scale), "bound": bound}


def cluster_run(path, m, chunk_rows, split_every, workers):
    """sketch_array on a LocalCluster of ``workers`` processes: (sketch, wall seconds, start
    seconds, peak resident MiB of each worker, baseline MiB of each before the sketch)."""
    from distributed import Client, LocalCluster

    from explorer.distributed import sketch_array

    started = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        start_seconds = time.perf_counter() - started
        baseline = client.run(_max_resident_mib)
        sketch, wall, _ = timed_run(lambda: sketch_array(path, m, chunk_rows=chunk_rows, split_every=split_every))
        peaks = client.run(_max_resident_mib)
    return sketch, wall, start_seconds, sorted(peaks.values()), sorted(baseline.values())


def _max_resident_mib() -> float:
    """This process's peak resident size: Linux's VmHWM (ru_maxrss would count the parent's
    peak, inherited through fork and exec), else ru_maxrss."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB; macOS: bytes (rough)


# -- the benchmark ----------------------------------------------------------------------------
def run(quick: bool = False, *, rows: int | None = None, cols: int | None = None, m: int | None = None,
        chunk_rows: int | None = None, folder: str | None = None, cluster: bool = True, ipca: bool = True,
        progress: bool = True) -> dict:
    size = dict(SIZES["quick" if quick else "full"])
    size.update({k: v for k, v in (("rows", rows), ("cols", cols), ("m", m), ("chunk_rows", chunk_rows)) if v})
    rows, cols, m, chunk_rows, split_every = (size[k] for k in ("rows", "cols", "m", "chunk_rows", "split_every"))
    say = (lambda text: print(f"  {text}", file=sys.stderr, flush=True)) if progress else (lambda text: None)
    began, load_start = time.perf_counter(), os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="explorer-distributed-", dir=folder))
    try:
        path = workdir / "rows.npy"
        need = rows * cols * 8
        free = shutil.disk_usage(workdir).free
        if need > 0.9 * free:
            raise RuntimeError(f"{C.human_bytes(need)} needed in {workdir}, {C.human_bytes(free)} free: "
                               "pass --folder on a larger disk or fewer --rows/--cols")
        say(f"writing {rows:,} x {cols:,} float64 ({C.human_bytes(need)}) to {path}")
        stream = write_stream(path, rows, cols, chunk_rows)
        gram, mass = stream["gram"], stream["frobenius_squared"]
        spectrum = np.linalg.eigvalsh(gram)[::-1]
        starts = chunk_starts(rows, chunk_rows, m)
        methods, sketches, checks = [], {}, {}

        def record(name, workers, wall, cpu, peak, approximation_gram, kept, **extra):
            methods.append({"method": name, "workers": workers, "seconds": wall, "cpu_seconds": cpu,
                            "rows_per_s": rows / wall, "peak_mib": None if peak is None else peak / 2 ** 20,
                            "error": spectral_error(gram, approximation_gram) / mass, "rows_kept": kept, **extra})
            say(f"{name} ({workers}): {wall:.1f} s, error {methods[-1]['error']:.3g}")

        # the sequential baseline
        sketch, wall, cpu = timed_run(sequential_fd, path, cols, m, starts)
        peak = traced_peak(sequential_fd, path, cols, m, starts)
        record("sequential FD (fast)", "1 thread", wall, cpu, peak, sketch.rows.T @ sketch.rows, sketch.rank,
               delta=sketch.delta_total / mass)
        checks["sequential"] = fd_checks(sketch, gram, spectrum, rows, m)

        # sketch_array on threads (after a tiny run, so that no timing includes importing Dask)
        sketch_array_threads(np.ones((4, 2)), 2, None, split_every, 1)
        for threads in (1, 2):
            sketch, wall, cpu = timed_run(sketch_array_threads, path, m, chunk_rows, split_every, threads)
            peak = traced_peak(sketch_array_threads, path, m, chunk_rows, split_every, threads)
            record("sketch_array", f"{threads} thread{'s' * (threads > 1)}", wall, cpu, peak,
                   sketch.rows.T @ sketch.rows, sketch.rank, delta=sketch.delta_total / mass)
            sketches[threads] = sketch
            checks[f"threads_{threads}"] = fd_checks(sketch, gram, spectrum, rows, m)
        checks["threads_identical"] = _identical(sketches[1], sketches[2])

        # sketch_array on a LocalCluster of 2 processes
        if cluster and _has_distributed():
            sketch, wall, start_seconds, peaks, baseline = cluster_run(path, m, chunk_rows, split_every, 2)
            record("sketch_array", "LocalCluster 2 processes", wall, None, None, sketch.rows.T @ sketch.rows,
                   sketch.rank, delta=sketch.delta_total / mass, cluster_start_seconds=start_seconds,
                   worker_peak_mib=peaks, worker_baseline_mib=baseline)
            checks["cluster_identical"] = _identical(sketch, sketches[1])

        # what a user would pick instead
        for power in (0, 2):
            B, wall, cpu = timed_run(svd_compressed, path, m, chunk_rows, 2, power)
            peak = traced_peak(svd_compressed, path, m, chunk_rows, 2, power)
            record(f"svd_compressed (n_power_iter={power})", "2 threads", wall, cpu, peak, B.T @ B, B.shape[0])
        if ipca:
            model, wall, cpu = timed_run(incremental_pca, path, m, starts)
            peak = traced_peak(incremental_pca, path, m, starts)
            B = model.singular_values_[:, None] * model.components_
            record("IncrementalPCA", "1 thread", wall, cpu, peak,
                   B.T @ B + model.n_samples_seen_ * np.outer(model.mean_, model.mean_), B.shape[0])

        passed = all(value for check in checks.values()
                     for value in (check.values() if isinstance(check, dict) else [check]) if isinstance(value, bool))
        sequential = methods[0]["rows_per_s"]
        for method in methods:
            method["vs_sequential"] = method["rows_per_s"] / sequential
        return {"rows": rows, "cols": cols, "m": m, "chunk_rows": chunk_rows, "split_every": split_every,
                "file_bytes": need, "write_seconds": stream["write_seconds"], "exact_gram_seconds": stream["gram_seconds"],
                "best_rank_m_error": float(spectrum[m] / mass) if m < cols else 0.0,
                "fd_bound": checks["sequential"]["bound"] / mass, "methods": methods, "checks": checks,
                CORRECTNESS_KEY: passed, "seconds": time.perf_counter() - began,
                "load_average": [list(load_start), list(os.getloadavg())]}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _identical(a, b) -> bool:
    return bool(np.array_equal(a.sketch, b.sketch) and a.delta_total == b.delta_total and a.n_seen == b.n_seen)


def _has_distributed() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def format_results(result: dict) -> str:
    """A markdown table (README-ready) and the correctness verdict."""
    header = (f"{result['rows']:,} x {result['cols']:,} float64 ({C.human_bytes(result['file_bytes'])}), "
              f"m = {result['m']}, chunks of {result['chunk_rows']:,} rows, split_every = {result['split_every']}; "
              f"written in {result['write_seconds']:.0f} s, exact A^T A summed in {result['exact_gram_seconds']:.0f} s. "
              f"Best rank-m error sigma_(m+1)^2/||A||_F^2 = {result['best_rank_m_error']:.3g}; "
              f"FD's bound min_k ||A - A_k||_F^2/((m-k)||A||_F^2) = {result['fd_bound']:.3g}.")
    lines = [header, "",
             "| method | workers | seconds | rows/s | vs sequential FD | peak memory | error / \\|\\|A\\|\\|_F^2 | rows of B |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in result["methods"]:
        if row.get("worker_peak_mib"):
            peak = "workers " + ", ".join(f"{v:.0f}" for v in row["worker_peak_mib"]) + " MiB RSS (idle " + \
                   ", ".join(f"{v:.0f}" for v in row["worker_baseline_mib"]) + ")"
        else:
            peak = "" if row["peak_mib"] is None else f"{row['peak_mib']:.1f} MiB"
        lines.append(f"| {row['method']} | {row['workers']} | {row['seconds']:.1f} | {row['rows_per_s']:,.0f} | "
                     f"{row['vs_sequential']:.2f} | {peak} | {row['error']:.3g} | {row['rows_kept']} |")
    failed = [f"{name}.{key}" if isinstance(check, dict) else name
              for name, check in result["checks"].items()
              for key in (check if isinstance(check, dict) else [None])
              if (check[key] is False if isinstance(check, dict) else check is False)]
    load = "; ".join("/".join(f"{v:.1f}" for v in values) for values in result["load_average"])
    lines += ["", f"{result['seconds']:.0f} s in all; load average at start and end: {load} "
              f"(on {os.cpu_count()} cores)"]
    lines += ["", "correctness checks: " + ("all pass" if result[CORRECTNESS_KEY] else "FAILED: " + ", ".join(failed))]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    C.standard_arguments(parser)
    parser.add_argument("--rows", type=int, help="rows of the stream (default: 10^6; --quick: 2*10^4)")
    parser.add_argument("--cols", type=int, help="columns (default: 1000; --quick: 200)")
    parser.add_argument("--m", type=int, help="sketch size and rank (default: 20; --quick: 10)")
    parser.add_argument("--chunk-rows", type=int, help="rows per chunk (default: 16384; --quick: 2000)")
    parser.add_argument("--folder", help="where the temporary file goes (default: the system's temp folder)")
    parser.add_argument("--no-cluster", action="store_true", help="skip the LocalCluster run")
    parser.add_argument("--no-ipca", action="store_true", help="skip IncrementalPCA (O(n d^2): the slowest)")
    args = parser.parse_args(argv)
    print(C.limit_blas_threads(args.threads or None), file=sys.stderr)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads or 1))  # the cluster's worker processes
    result = run(quick=args.quick, rows=args.rows, cols=args.cols, m=args.m, chunk_rows=args.chunk_rows,
                 folder=args.folder, cluster=not args.no_cluster, ipca=not args.no_ipca)
    result["environment"] = C.environment()
    print(format_results(result))
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(result, indent=1, default=float))
    return 0 if result[CORRECTNESS_KEY] else 1


if __name__ == "__main__":
    sys.exit(main())
