"""Smoke test of benchmarks/: every script imports and runs one tiny configuration.

Only correctness facts and the shape of the results are asserted, never a timing (speed
is measured by ``python benchmarks/run_all.py``, not by tests).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from explorer import FrequentDirections, Recorder, RobustFrequentDirections

BENCHMARKS_DIR = Path(__file__).resolve().parent.parent / "benchmarks"
TINY = {"d": 20, "m": 4}


def import_benchmarks(*names: str):
    """The benchmark scripts ``names``, imported the way the scripts import each other
    (benchmarks/ on ``sys.path`` while they load)."""
    sys.path.insert(0, str(BENCHMARKS_DIR))
    try:
        return [importlib.import_module(name) for name in names]
    finally:
        sys.path.remove(str(BENCHMARKS_DIR))


@pytest.fixture(scope="module")
def bench():
    """The benchmark modules, imported the way the scripts import each other."""
    sys.path.insert(0, str(BENCHMARKS_DIR))
    try:
        names = ("_common", "sketch_throughput", "sketch_memory", "hook_overhead", "run_all")
        yield SimpleNamespace(**{name.lstrip("_"): importlib.import_module(name) for name in names})
    finally:
        sys.path.remove(str(BENCHMARKS_DIR))


def test_naive_reference_matches_exact_fd(bench):
    d, m = TINY["d"], TINY["m"]
    X = bench.common.make_stream(40, d, seed=3)
    naive, exact = bench.sketch_throughput.NaiveFD(d, m), FrequentDirections(d, m)
    for x in X:
        naive.update(x)
        exact.update(x)
    assert np.allclose(naive.rows.T @ naive.rows, exact.gram())
    assert np.isclose(naive.delta_total, exact.delta_total)
    # the d x d-free comparison the benchmark uses agrees, and does notice a difference
    assert bench.common.compare_grams(naive.rows, exact.rows)["allclose"]
    assert not bench.common.compare_grams(naive.rows, 1.01 * exact.rows)["allclose"]


def test_throughput_tiny(bench):
    st = bench.sketch_throughput
    result = st.run(grid_d=(TINY["d"],), grid_m=(TINY["m"],), progress=False, slow_budget=1e-3,
                    fast_budget=1e-3, repeats=1, calibration=1e-3, min_slow_rows=2, min_fast_periods=1)
    (config,) = result["configs"]
    assert set(config["methods"]) == {name for name, _ in st.METHODS}
    for stats in config["methods"].values():
        assert {"rows", "seconds", "rows_per_s", "us_per_row", "spread", "ratio_vs_naive"} <= set(stats)
        assert stats["rows_per_s"] > 0
    assert config["n_fast"] % (TINY["m"] + 1) == 0
    assert config["checks"]["naive_vs_exact_gram"]["allclose"]
    assert config["checks"]["naive_vs_exact_delta_close"]
    assert config["checks"]["fd_fast_extend_equals_update"]
    assert config["checks"]["rfd_fast_extend_equals_update"]
    assert result["all_checks_pass"]
    assert "target" not in result  # the target configuration is not in this grid
    assert "Ratio to the naive reference" in st.format_results(result)


def test_memory_tiny(bench):
    sm = bench.sketch_memory
    result = sm.run(grid_d=(TINY["d"],), grid_m=(TINY["m"],), progress=False, shrinks=1)
    assert [row["variant"] for row in result["rows"]] == list(sm.VARIANTS)
    for row in result["rows"]:
        # the sketch is built inside the traced window, so its own buffer is in the peak
        assert row["peak_bytes"] >= row["buffer_bytes"] > 0
        assert {"peak_over_buffer", "peak_over_dxd", "retained_bytes", "rows"} <= set(row)
    assert result["no_dxd_checked"] == 0 and result["no_dxd_pass"]  # d = 20 is below the d x d check
    assert "Peak traced memory" in sm.format_results(result)


def test_stripped_class_has_no_hook_guards(bench):
    stripped, removed = bench.hook_overhead.strip_hook_guards(RobustFrequentDirections)
    assert "_commit_shrink" in removed and all("self._hooks" in s for s in removed["_commit_shrink"])
    X = bench.common.make_stream(30, TINY["d"], seed=1)
    shipped, bare = (cls(TINY["d"], TINY["m"], fast=True) for cls in (RobustFrequentDirections, stripped))
    shipped_events, bare_events = Recorder(), Recorder()
    shipped.add_hook(shipped_events)
    bare.add_hook(bare_events)
    shipped.extend(X)
    bare.extend(X)
    assert np.array_equal(shipped.sketch, bare.sketch) and shipped.alpha == bare.alpha
    assert len(shipped_events) > 0 and len(bare_events) == 0  # the guard (and emission) is gone


def test_hook_overhead_tiny(bench):
    ho = bench.hook_overhead
    config = {"name": "tiny", "cls": "rfd", "fast": True, **TINY}
    result = ho.run(configs=(config,), progress=False, rounds=1, budget=1e-3, guard_loops=100)
    (c,) = result["configs"]
    assert set(c["arms"]) == set(ho.ARMS)
    assert c["stripped_identical"] and result["all_identical"]
    assert c["guarded_calls"]["_commit_shrink"] > 0
    assert {"no_hook_overhead_pct", "aa_noise_pct", "guard_cost_pct", "below_limit"} <= set(c)
    assert "Overhead with no hook attached" in ho.format_results(result)


def test_run_all_writes_json(bench, tmp_path, monkeypatch):
    st, sm, ho = bench.sketch_throughput, bench.sketch_memory, bench.hook_overhead
    tiny_runs = {
        "sketch_throughput": lambda quick: st.run(grid_d=(TINY["d"],), grid_m=(TINY["m"],), progress=False,
                                                  slow_budget=1e-3, fast_budget=1e-3, repeats=1,
                                                  calibration=1e-3, min_slow_rows=2, min_fast_periods=1),
        "sketch_memory": lambda quick: sm.run(grid_d=(TINY["d"],), grid_m=(TINY["m"],), progress=False,
                                              shrinks=1),
        "hook_overhead": lambda quick: ho.run(configs=({"name": "tiny", "cls": "rfd", "fast": True, **TINY},),
                                              progress=False, rounds=1, budget=1e-3, guard_loops=100),
    }
    modules = {name: SimpleNamespace(run=tiny_runs[name], format_results=getattr(bench, name).format_results)
               for name in tiny_runs}
    assert set(tiny_runs) <= set(bench.run_all.discover())
    monkeypatch.setattr(bench.run_all, "discover", lambda: {name: bench.run_all.CORRECTNESS_KEYS[name]
                                                            for name in tiny_runs})
    monkeypatch.setattr(bench.run_all, "load", modules.get)
    output = tmp_path / "results" / "latest.json"
    assert bench.run_all.main(["--quick", "--threads", "0", "--output", str(output)]) == 0
    report = json.loads(output.read_text())
    assert set(report["benchmarks"]) == set(tiny_runs)
    assert report["correctness_failures"] == []
    assert {"numpy", "scipy", "load_average", "blas"} <= set(report["environment_start"])


def test_run_all_survives_a_broken_benchmark(bench, tmp_path, monkeypatch, capsys):
    def broken(quick):
        raise RuntimeError("boom")

    fine = SimpleNamespace(run=lambda quick: {"ok": True}, format_results=lambda result: "fine table")
    modules = {"broken": SimpleNamespace(run=broken, format_results=str), "fine": fine}
    monkeypatch.setattr(bench.run_all, "discover", lambda: {"broken": None, "fine": "ok"})
    monkeypatch.setattr(bench.run_all, "load", modules.get)
    output = tmp_path / "latest.json"
    assert bench.run_all.main(["--threads", "0", "--output", str(output)]) == 1
    report = json.loads(output.read_text())
    assert "boom" in report["errors"]["broken"] and report["benchmarks"]["fine"] == {"ok": True}
    assert report["correctness_failures"] == ["broken"]
    assert "fine table" in capsys.readouterr().out


def test_newton_vs_vw_tunes_on_the_validation_stream_only():
    """The tuned setting is the grid's best on the validation stream (another seed), and
    the progressive error counts the prediction made before each example is learned."""
    [vw] = import_benchmarks("newton_vs_vw")
    validation = vw.make_stream(300, 12, seed=vw.VALIDATION_SEED)
    son = dict(sketch="rfd", m=4, loss="logistic")
    grid = {"eta": (0.0, 16.0, 256.0), "C": (1.0, 10.0)}
    points = vw.grid_points(grid)
    assert len(points) == 6 and {"eta": 256.0, "C": 1.0} in points
    errors = [vw.progressive_error(*validation, **point, **son)[0] for point in points]
    assert len(set(errors)) > 1  # the grid is a real choice on this stream
    assert vw.tune(validation, grid, **son) == points[int(np.argmin(errors))]
    X, y = validation
    error, _ = vw.progressive_error(X[:1], y[:1], eta=0.0, **son)
    assert error == 1.0  # the untrained learner predicts 0, which is neither label
    rows = [{"learner": "RFD-SON, tuned", "loss": "squared", "m": 4, "alpha0": 10.0,
             "eta": 0.25, "C": 10.0, "error": 0.125, "learning_examples_per_second": 2e4}]
    table = vw.format_results({"n": 300, "d": 12, "repeats": 1, "vw_noop_seconds": 0.1,
                               "load_average": 0.5, "rows": rows})
    assert "0.1250" in table and "20000" in table and "0.25" in table


def test_newton_rounds_tiny():
    """RFD-SON against FULL-ON: keys, positive rates, and the m > d equality check."""
    [rounds] = import_benchmarks("newton_rounds")
    result = rounds.run(grid_d=(30,), grid_m=(4,), full_rounds={30: 5}, budget=1e-3, repeats=1,
                        check_rounds=30, progress=False)
    (config,) = result["configs"]
    assert config["rfd_per_s"] > 0 and config["full_per_s"] > 0
    assert config["rfd_rounds"] % 5 == 0  # whole shrink periods of m + 1 rounds
    assert result["check_sketch_larger_than_d_equals_full"]["max_loss_gap"] <= 1e-8
    assert result["all_checks_pass"]
    assert "RFD-SON / FULL-ON" in rounds.format_results(result)


def test_fd_floor_tiny():
    """Fast FD against its floor: whole shrink periods, positive times, extend leaves the
    sketch update leaves, and a verdict line for each target."""
    [floor] = import_benchmarks("fd_floor")
    result = floor.run(grid=((40, 4),), budget=1e-3, repeats=2, progress=False)
    (config,) = result["configs"]
    assert config["rows"] % 5 == 0 and config["rows"] >= 10
    assert min(config["floor_us"], config["update_us"], config["extend_us"]) > 0
    assert config["same_sketch"] and result["all_checks_pass"]
    assert any(line.startswith("extend never slower than update") for line in result["verdicts"])
    assert "update / floor" in floor.format_results(result)


def test_newton_defaults_quick():
    """MNIST 4-vs-9 only: the split is deterministic and disjoint, every row has its three
    errors, the tuned setting is a grid point, and the table prints them."""
    defaults, vw = import_benchmarks("newton_defaults", "newton_vs_vw")
    X, y = np.arange(20.0).reshape(10, 2), np.arange(10.0)
    (Xv, yv), (Xt, yt) = defaults.split(X, y)
    assert len(yv) == 3 and len(yt) == 7 and sorted(np.concatenate([yv, yt])) == list(y)
    assert np.array_equal(defaults.split(X, y)[0][1], yv)
    result = defaults.run(quick=True)
    assert [row["loss"] for row in result["rows"]] == ["logistic", "squared"]
    for row in result["rows"]:
        assert row["tuned_setting"] in vw.grid_points(vw.GRID)
        assert all(0 <= row[key] <= 1 for key in ("majority", "defaults", "old defaults", "tuned"))
    assert "MNIST 4-vs-9" in defaults.format_results(result)


def test_ada_fd_time_vs_d_tiny():
    """Figure 7's timing: every method timed at every d, ratios to ADA-FFD, the checks pass."""
    [vs_d] = import_benchmarks("ada_fd_time_vs_d")
    result = vs_d.run(grid_d=(20, 40), tau=4, budget=1e-3, repeats=1, check_rounds=10, progress=False)
    assert [row["d"] for row in result["rows"]] == [20, 40]
    for row in result["rows"]:
        assert all(row[f"{key}_us"] > 0 for key in vs_d.METHODS)
        assert row["rounds"] % 5 == 0  # whole ADA-FFD cycles of tau + 1 rounds
        assert row["radagrad_over_ffd"] == row["radagrad_us"] / row["ffd_us"]
    assert set(result["d_exponent"]) == set(vs_d.METHODS)
    assert result["check_radagrad_equals_full"]["max_loss_gap"] <= 1e-8 and result[vs_d.CORRECTNESS_KEY]
    assert "RADAGRAD / ADA-FFD" in vs_d.format_results(result)


@pytest.mark.browser
@pytest.mark.slow
def test_lesson_slider_latency_quick(tmp_path):
    """Lesson 01 in JupyterLab in chromium: Run All, then two slider steps that each redraw.

    A child process, as from the command line: Playwright's sync API cannot start inside a
    pytest-playwright session that another browser test may have opened.
    """
    output = tmp_path / "latency.json"
    done = subprocess.run([sys.executable, str(BENCHMARKS_DIR / "lesson_slider_latency.py"), "--quick",
                           "--json", str(output)], capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(output.read_text())
    (lesson,) = result["lessons"]
    assert lesson["lesson"] == "01_frequent_directions.ipynb" and "error" not in lesson
    assert lesson["redraw_s"]["n"] == 2 and len(set(lesson["values"])) == 3  # each step moved the slider
    assert lesson["run_all_s"] > 0 and lesson["cells"] > 0
    assert "01_frequent_directions" in done.stdout

@pytest.mark.slow
def test_lesson_slider_kernel_quick():
    """Lesson 01 run to its sliders in a child interpreter, its first control moved one
    notch and back: both moves ran the lesson's callback, and the verdict is printed."""
    [kernel] = import_benchmarks("lesson_slider_kernel")
    result = kernel.run(quick=True)
    (lesson,) = result["lessons"]
    assert lesson["lesson"] == "01_frequent_directions.ipynb" and "error" not in lesson, lesson
    (row,) = lesson["sliders"]
    assert row["moved"] and row["from"] != row["to"] and row["new_s"] > 0 and row["back_s"] > 0
    assert result[kernel.CORRECTNESS_KEY] and "Verdict:" in kernel.format_results(result)


def test_run_all_prints_a_result_whose_seconds_is_not_one_number(bench, tmp_path, monkeypatch, capsys):
    """ada_fd_regret_T10000 reports ``seconds`` per method (a dict): the full run crashed
    printing its header after every benchmark before it had run."""
    per_method = SimpleNamespace(run=lambda quick: {"ok": True, "seconds": {"ADA-FFD": 1.5}},
                                 format_results=lambda result: "per-method table")
    monkeypatch.setattr(bench.run_all, "discover", lambda: {"per_method": "ok"})
    monkeypatch.setattr(bench.run_all, "load", {"per_method": per_method}.get)
    assert bench.run_all.main(["--threads", "0", "--output", str(tmp_path / "latest.json")]) == 0
    assert "=== per_method ===" in capsys.readouterr().out


def test_sketch_distributed_tiny(tmp_path):
    """benchmarks/sketch_distributed.py on a tiny stream: every FD result meets the guarantee,
    1 and 2 threads agree bit for bit, the temporary file is gone (no cluster: seconds)."""
    [sd] = import_benchmarks("sketch_distributed")
    result = sd.run(rows=600, cols=12, m=3, chunk_rows=100, folder=str(tmp_path), cluster=False, progress=False)
    assert result[sd.CORRECTNESS_KEY] and result["checks"]["threads_identical"]
    names = [row["method"] for row in result["methods"]]
    assert names.count("sketch_array") == 2 and "IncrementalPCA" in names and len(names) == 6
    for row in result["methods"]:
        assert row["rows_per_s"] > 0 and 0 <= row["error"] < 1
    rank_m = [row["error"] for row in result["methods"] if row["rows_kept"] <= 3]  # svd_compressed, IPCA
    assert len(rank_m) == 3 and result["best_rank_m_error"] <= min(rank_m) * (1 + 1e-9)
    assert list(tmp_path.iterdir()) == []
    assert "| sketch_array | 2 threads |" in sd.format_results(result)


def test_tree_parity_compares_a_tree_with_itself():
    """benchmarks/tree_parity.py times every path in both trees; against itself every ratio
    is a positive number, and a folder with no explorer/ is refused."""
    (parity,) = import_benchmarks("tree_parity")
    result = parity.compare(BENCHMARKS_DIR.parent, BENCHMARKS_DIR.parent, 1, (20, 60, 30))
    assert set(result) >= {"RFD-SON step", "fast FD extend", "adaptive PCA learn"}
    assert all(row["ratio"] > 0 and row["this_ms"] >= 0 for row in result.values())
    with pytest.raises(SystemExit):
        parity.main(["--against", str(BENCHMARKS_DIR)])
