"""Peak memory of Frequent Directions and Robust FD while streaming (tracemalloc).

For every (d, m) of the grid and every variant, the sketch is built and fed with
``update`` row by row *inside* a tracemalloc window (the stream itself is made before
the window opens, so it is not counted). Reported:

- ``peak``: the most memory the sketch held at any moment: its buffer plus the
  temporaries of a shrink (the SVD's copy of the buffer, its factors, LAPACK workspace
  allocated through numpy, the shrunk rows);
- ``peak / buffer``: against the buffer itself, ``m*d*8`` bytes (exact) or ``2m*d*8``
  (fast): O(md) memory means this stays a small constant;
- ``peak / d^2*8``: against one d x d float64 matrix. A peak below ``d*d*8`` proves that
  no d x d array was ever alive (it alone would exceed the peak); at d = 5000 the check is
  that the peak is under a tenth of it.

The stream runs past the point where the buffer is full for a few shrinks, so the peak
includes the steady state. ``rfd_fast_extend`` feeds the same rows with one ``extend``:
its input checks add temporaries of about ``n*d`` bytes (boolean masks of the block), so
its peak grows with the block, not with d^2. The naive reference of
sketch_throughput.py is measured too, for scale. Memory that LAPACK/OpenBLAS allocate
with ``malloc`` behind numpy's back is invisible to tracemalloc (it is small here: the
factors and the ``lwork`` workspace are numpy arrays).

Run ``python benchmarks/sketch_memory.py [--quick] [--json PATH]``.
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from explorer import FrequentDirections, RobustFrequentDirections  # noqa: E402
from sketch_throughput import NaiveFD  # noqa: E402

GRID_D = (100, 1000, 5000)
GRID_M = (10, 20, 50)
VARIANTS = ("naive", "fd_exact", "rfd_exact", "fd_fast", "rfd_fast", "rfd_fast_extend")
#: at d >= this, the peak must stay under NO_DXD_FRACTION of one d x d float64 matrix
NO_DXD_MIN_D = 5000
NO_DXD_FRACTION = 0.1
SETTINGS = {"full": {"shrinks": 3}, "quick": {"shrinks": 1}}


def _make(variant: str, d: int, m: int):
    if variant == "naive":
        return NaiveFD(d, m)
    cls = RobustFrequentDirections if variant.startswith("rfd") else FrequentDirections
    return cls(d, m, fast="fast" in variant)


def rows_needed(variant: str, m: int, shrinks: int) -> tuple[int, int]:
    """(buffer rows, stream rows): fill the buffer, then ``shrinks`` shrinks' worth of rows."""
    capacity = 2 * m if "fast" in variant else m
    interval = m + 1 if "fast" in variant else 1  # rows between shrinks once full
    return capacity, capacity + shrinks * interval


def traced_peak(build) -> tuple[int, int]:
    """(peak, retained) bytes allocated while ``build()`` ran, relative to the start."""
    started_here = not tracemalloc.is_tracing()
    if started_here:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        obj = build()
        current, peak = tracemalloc.get_traced_memory()
        del obj
    finally:
        if started_here:
            tracemalloc.stop()
    return peak - base, current - base


def measure(variant: str, d: int, m: int, *, shrinks: int, seed: int = 0) -> dict:
    capacity, n = rows_needed(variant, m, shrinks)
    X = C.make_stream(n, d, seed=seed)

    def build():
        sk = _make(variant, d, m)
        if variant.endswith("extend"):
            sk.extend(X)
        else:
            update = sk.update
            for x in X:
                update(x)
        return sk

    peak, retained = traced_peak(build)
    buffer = capacity * d * 8
    dxd = d * d * 8
    return {"d": d, "m": m, "variant": variant, "rows": n, "peak_bytes": peak,
            "retained_bytes": retained, "buffer_bytes": buffer, "peak_over_buffer": peak / buffer,
            "dxd_bytes": dxd, "peak_over_dxd": peak / dxd, "below_dxd": bool(peak < dxd)}


def run(*, quick: bool = False, grid_d=GRID_D, grid_m=GRID_M, variants=VARIANTS, seed: int = 0,
        progress: bool = True, **overrides) -> dict:
    settings = {**SETTINGS["quick" if quick else "full"], **overrides}
    start = time.perf_counter()
    gc.collect()
    rows = []
    for d in grid_d:
        for m in grid_m:
            if progress:
                print(f"  memory d={d} m={m} ...", file=sys.stderr, flush=True)
            for variant in variants:
                rows.append(measure(variant, d, m, seed=seed, **settings))
    checked = [r for r in rows if r["d"] >= NO_DXD_MIN_D and r["variant"] != "naive"]
    for r in checked:
        r["no_dxd_check"] = bool(r["peak_over_dxd"] < NO_DXD_FRACTION)
    return {"benchmark": "sketch_memory", "settings": settings, "rows": rows,
            "no_dxd_min_d": NO_DXD_MIN_D, "no_dxd_fraction": NO_DXD_FRACTION,
            "no_dxd_checked": len(checked),
            "no_dxd_pass": all(r["no_dxd_check"] for r in checked),
            "max_peak_over_buffer": max(r["peak_over_buffer"] for r in rows if r["variant"] != "naive"
                                        and not r["variant"].endswith("extend")),
            "seconds": time.perf_counter() - start}


def format_results(result: dict) -> str:
    rows = [{**r, "peak": C.human_bytes(r["peak_bytes"]), "buffer": C.human_bytes(r["buffer_bytes"]),
             "retained": C.human_bytes(r["retained_bytes"]), "dxd": C.human_bytes(r["dxd_bytes"])}
            for r in result["rows"]]
    text = C.table(rows, [("d", "d"), ("m", "m"), ("variant", "variant"), ("rows", "rows"),
                          ("peak", "peak"), ("buffer", "buffer (cap*d*8)"),
                          ("peak_over_buffer", "peak/buffer"), ("retained", "kept after"),
                          ("dxd", "d*d*8"), ("peak_over_dxd", "peak/(d*d*8)"),
                          ("no_dxd_check", "no d x d")],
                   "Peak traced memory while streaming (tracemalloc; the input stream is not counted)")
    verdict = "pass" if result["no_dxd_pass"] else "FAIL"
    if result["no_dxd_checked"]:
        text += (f"\n\nNo d x d array at d >= {result['no_dxd_min_d']}: peak < "
                 f"{result['no_dxd_fraction']:g} * d*d*8 for all {result['no_dxd_checked']} sketch runs: {verdict}.")
    else:
        text += f"\n\nNo d x d check: the grid has no d >= {result['no_dxd_min_d']}."
    text += (f"\nLargest peak/buffer of a streaming sketch (update): {result['max_peak_over_buffer']:.2f}.")
    return text


def main(argv: list[str] | None = None) -> int:
    return C.script_main(argv, doc=__doc__, run=run, format_results=format_results,
                         passed_key="no_dxd_pass", grid=True)


if __name__ == "__main__":
    sys.exit(main())
