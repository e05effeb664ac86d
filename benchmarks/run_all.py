"""Run every benchmark, print a table per benchmark, save the results as JSON.

    python benchmarks/run_all.py            # the full suite (a few minutes on 2 cores)
    python benchmarks/run_all.py --quick    # a smoke run (well under a minute)
    explorer bench                          # the same as the first line

Results go to ``benchmarks/results/latest.json`` (``--output`` to change; the folder is
git-ignored). The exit status is non-zero only when a *correctness* check fails (naive and
exact FD disagree, extend differs from update, a d x d array shows up in memory, the
guard-free copy computes a different sketch); speed targets are reported, never enforced.
See README.md in this folder for what every number means.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

#: Run first, in this order; every other module of this folder that defines
#: ``run(quick=...)`` and ``format_results(result)`` runs after them, alphabetically.
FIRST = ("sketch_throughput", "sketch_memory", "hook_overhead")
#: Correctness verdict (a key of the result) of modules that do not declare their own
#: with a module-level ``CORRECTNESS_KEY``.
CORRECTNESS_KEYS = {"sketch_throughput": "all_checks_pass", "sketch_memory": "no_dxd_pass",
                    "hook_overhead": "all_identical"}


def discover() -> dict[str, str | None]:
    """Benchmark module names (files here, not starting with "_") -> their correctness key.

    A module is a benchmark when its source defines ``run`` and ``format_results`` at top
    level; it is only imported when it runs (so one broken script cannot stop the others).
    """
    names = sorted(p.stem for p in C.HERE.glob("*.py")
                   if not p.stem.startswith("_") and p.stem != "run_all" and _is_benchmark(p))
    ordered = [n for n in FIRST if n in names] + [n for n in names if n not in FIRST]
    return {name: CORRECTNESS_KEYS.get(name) for name in ordered}


def _is_benchmark(path: Path) -> bool:
    source = path.read_text(encoding="utf-8", errors="replace")
    return "\ndef run(" in source and "\ndef format_results(" in source


def load(name: str):
    """Import benchmark ``name``; None if it is not a benchmark module (no run/format_results)."""
    module = importlib.import_module(name)
    if callable(getattr(module, "run", None)) and callable(getattr(module, "format_results", None)):
        return module
    return None


def main(argv: list[str] | None = None) -> int:
    available = discover()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    C.standard_arguments(parser)
    parser.add_argument("--only", nargs="+", choices=list(available), metavar="NAME",
                        help=f"run only these benchmarks ({', '.join(available)})")
    parser.add_argument("--output", default=str(C.RESULTS_DIR / "latest.json"), metavar="PATH",
                        help="where to write the JSON results (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.json:
        args.output = args.json

    threads_note = C.limit_blas_threads(args.threads or None)
    print(f"Sketch Explorer benchmarks ({'quick' if args.quick else 'full'} run); {threads_note}; "
          f"{C.clock_name()} clock", file=sys.stderr)
    report = {"quick": args.quick, "threads": args.threads or None, "clock": C.clock_name(),
              "environment_start": C.environment(), "benchmarks": {}, "skipped": [], "errors": {}}
    start = time.perf_counter()
    failures = []
    for name, default_key in available.items():
        if args.only and name not in args.only:
            continue
        print(f"[{name}]", file=sys.stderr, flush=True)
        try:
            module = load(name)
            if module is None:
                report["skipped"].append(name)
                print(f"  skipped: {name}.py has no run()/format_results()", file=sys.stderr)
                continue
            result = module.run(quick=args.quick)
            text = module.format_results(result)
        except Exception:  # one broken benchmark must not hide the others' results
            report["errors"][name] = traceback.format_exc()
            failures.append(name)
            print(f"\n=== {name}: ERROR ===\n{report['errors'][name]}", flush=True)
            continue
        report["benchmarks"][name] = result
        seconds = result.get("seconds") if isinstance(result, dict) else None
        seconds = seconds if isinstance(seconds, (int, float)) else None  # a dict: per method
        print(f"\n=== {name}" + (f" ({seconds:.0f} s)" if seconds is not None else "") + " ===\n")
        print(text, flush=True)
        key = getattr(module, "CORRECTNESS_KEY", default_key)
        if key is not None and not result.get(key, False):
            failures.append(name)
    report["seconds"] = time.perf_counter() - start
    report["environment_end"] = C.environment()
    report["correctness_failures"] = failures

    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1, default=_jsonable))
    load_avg = report["environment_start"]["load_average"], report["environment_end"]["load_average"]
    print(f"\nTotal {report['seconds']:.0f} s; load average at start {_load(load_avg[0])}, "
          f"at end {_load(load_avg[1])} (on {report['environment_start']['cpu_count']} cores). "
          f"Results written to {output}")
    if failures:
        print(f"CORRECTNESS CHECKS FAILED (or the benchmark crashed) in: {', '.join(failures)}")
        return 1
    return 0


def _load(values) -> str:
    return "n/a" if not values else "/".join(f"{v:.2f}" for v in values)


def _jsonable(value):
    """numpy scalars and arrays in results become plain JSON."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


if __name__ == "__main__":
    sys.exit(main())
