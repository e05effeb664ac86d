"""Every dashboard view as code and as CSV (:mod:`explorer.dashboard.export`).

For every page, at its default settings and at a non-default one, with ``t`` mid-stream
(between two grid rows, after a Step and a seek): the generated script runs in a fresh
Python process and prints the numbers of the page's last history point, bit for bit
(wall-time columns left out); the CSV reads back as the page's history, bit for bit.
Hypothesis varies the stream and ``t`` on short streams, the script run in-process. A
browser test reaches both download buttons by keyboard and saves both files.
"""

from __future__ import annotations

import contextlib
import csv as csv_module
import io
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from explorer.dashboard.app import PAGES, Dashboard
from explorer.dashboard.export import CLOCK_COLUMNS, csv, filename, script
from explorer.dashboard.layout import downloads
from explorer.dashboard.settings import UPLOAD, Settings
from explorer.dashboard.upload import parse_upload
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture, used below)

ROOT = Path(__file__).parent.parent
CLASSES = {cls.key: cls for cls in PAGES}
NON_DEFAULT = {  # one setting per page off its default: shared ones and the page's own
    "sketching": ({"m": 7, "alpha0": 0.01, "seed": 3, "dataset": "decaying spectrum"}, {}),
    "newton": ({"m": 6, "eta": 1.0, "alpha0": 0.1, "seed": 2},
               {"son_loss": "logistic", "label_space": "raw", "fast": False, "label_noise": 0.1,
                "learners": ["RFD-SON", "FD-SON", "ADAGRAD"], "eta_schedule": "inverse_t"}),
    "adagrad": ({"m": 4, "eta": 0.01, "seed": 5}, {"method": "pds", "loss": "squared_hinge", "delta": 0.1}),
    "pca": ({"d": 12, "seed": 4}, {"k": 3, "segment_length": 150, "rank": 3, "eta_pca": 2.0, "alpha": 1e-3}),
    "fm": ({"m": 5, "eta": 0.05, "seed": 1, "d": 15},
           {"fm_task": "binary: shared stream", "fm_variant": "exact", "ogd_eta": 1.0}),
}


def parse(printed: str) -> dict[str, float]:
    """The script's ``name = value`` lines as a dict."""
    pairs = [line.split(" = ") for line in printed.splitlines() if line.strip()]
    assert all(len(pair) == 2 for pair in pairs), printed
    return {name: float(value) for name, value in pairs}


def shown(page) -> dict[str, float]:
    """The page's last history point without its wall-time columns."""
    clock = CLOCK_COLUMNS.get(page.key)
    return {name: float(value) for name, value in page.history.last().items()
            if not (clock and name.startswith(clock))}


def assert_same(printed: dict[str, float], page) -> None:
    expected = shown(page)
    assert set(printed) == set(expected)
    for name, value in expected.items():
        got = printed[name]
        same = (math.isnan(value) and math.isnan(got)) or got == value or (
            math.isfinite(value) and abs(got - value) <= 1e-12 * abs(value))
        assert same, f"{page.key}: {name} = {got!r} printed, {value!r} on the page"
    assert expected["t"] == page.t


def make_page(key: str, shared: dict, own: dict, t: int):
    """The page on these settings, played to ``t`` as a student would: one Step, then a seek."""
    page = CLASSES[key](Settings(**shared), **own)
    page.step(1)
    page.step(t - 1)
    return page


def run_script(source: str) -> str:
    result = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                            timeout=600, cwd=ROOT)
    assert result.returncode == 0, source + result.stderr
    return result.stdout


def exec_script(source: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<export>", "exec"), {"__name__": "__main__"})
    return out.getvalue()


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("key", list(CLASSES))
@pytest.mark.parametrize("default", [True, False], ids=["default", "changed"])
def test_the_script_prints_the_numbers_the_page_shows(key, default):
    shared, own = ({}, {}) if default else NON_DEFAULT[key]
    page = make_page(key, shared, own, t=437)  # the grid is every 4th row: 437 is between two
    assert page.t == 437 and page.history["t"][-1] == 437
    assert_same(parse(run_script(script(page))), page)


@pytest.mark.parametrize("key", list(CLASSES))
def test_the_csv_reads_back_as_the_history_bit_for_bit(key):
    page = make_page(key, {"n": 300, "d": 10, "m": 4}, {}, t=123)
    text = csv(page)
    rows = list(csv_module.reader(io.StringIO(text)))
    names = page.history.names
    assert rows[0] == names and len(rows) == len(page.history) + 1
    for j, name in enumerate(names):
        column = np.array([float(row[j]) for row in rows[1:]])
        assert np.array_equal(column, page.history[name], equal_nan=True), name  # == : same bits


@hypothesis_settings(max_examples=12, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(list(CLASSES)), n=st.integers(50, 160), d=st.integers(5, 12),
       m=st.integers(2, 8), seed=st.integers(0, 2**31 - 1), share=st.floats(0.0, 1.0))
def test_the_script_matches_on_short_random_streams(key, n, d, m, seed, share):
    page = CLASSES[key](Settings(n=n, d=d, m=m, seed=seed))
    page.step(round(share * page.n_rows))
    assert_same(parse(exec_script(script(page))), page)


OPTIONS = {  # each page's own options, drawn from what its widgets offer
    "sketching": st.fixed_dictionaries({}),
    "newton": st.fixed_dictionaries({
        "son_loss": st.sampled_from(["squared", "logistic"]), "fast": st.booleans(),
        "label_space": st.sampled_from(["whitened", "raw"]), "slab": st.sampled_from([0.5, 1.0, 3.0]),
        "eta_schedule": st.sampled_from(["constant", "inverse_t"]),
        "adagrad_eta": st.sampled_from([0.01, 0.1, 1.0])}),
    "adagrad": st.fixed_dictionaries({"method": st.sampled_from(["cmd", "pds"]),
                                      "loss": st.sampled_from(["absolute", "squared_hinge"]),
                                      "delta": st.sampled_from([0.0, 1e-4, 1.0, 10.0])}),
    "pca": st.fixed_dictionaries({"k": st.integers(1, 4), "segment_length": st.integers(10, 80),
                                  "rank": st.integers(1, 4), "eta_pca": st.sampled_from([0.1, 1.0, 5.0]),
                                  "alpha": st.sampled_from([0.0, 1e-5, 1e-2])}),
    "fm": st.fixed_dictionaries({"fm_task": st.sampled_from(["ratings: synthetic", "binary: shared stream"]),
                                 "fm_variant": st.sampled_from(["fast", "exact"]),
                                 "fm_users": st.integers(2, 20), "fm_items": st.integers(2, 20),
                                 "ogd_eta": st.sampled_from([0.1, 0.5, 2.0])}),
}


@hypothesis_settings(max_examples=12, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), key=st.sampled_from(list(CLASSES)), alpha0=st.sampled_from([0.0, 0.01, 1.0, 100.0]),
       eta=st.sampled_from([0.001, 0.1, 1.0]), share=st.floats(0.0, 1.0))
def test_the_script_matches_for_the_pages_own_options(data, key, alpha0, eta, share):
    own = data.draw(OPTIONS[key])
    page = CLASSES[key](Settings(n=120, d=8, m=3, alpha0=alpha0, eta=eta, seed=7), **own)
    page.step(round(share * page.n_rows))
    assert_same(parse(exec_script(script(page))), page)


def test_the_fm_script_plays_a_diverging_race_in_the_pages_chunks():
    # eta = 1 makes S-FTRL's and FTRL's predictions run away at round 46; a learner stops at
    # the end of the rows played with it, so the script plays the page's 4-row chunks too
    page = make_page("fm", {"eta": 1.0}, {}, t=437)
    assert set(page.race.stopped) == {"sftrl", "ftrl"} and page.resolution == 4
    assert_same(parse(exec_script(script(page))), page)


def test_a_real_data_set_shorter_than_n_streams_all_its_rows():
    page = make_page("sketching", {"dataset": "digits", "n": 5000, "m": 5}, {}, t=40)
    assert page.n_rows < 5000
    source = script(page)
    assert "n=None" in source
    assert_same(parse(exec_script(source)), page)


def test_the_upload_choice_without_a_file_streams_the_default_data_set_as_the_page_does():
    page = make_page("adagrad", {"dataset": UPLOAD, "n": 200, "d": 8, "m": 3}, {}, t=61)
    assert_same(parse(exec_script(script(page))), page)


def test_an_upload_cannot_be_rebuilt_and_its_name_stays_text():
    name = "evil'\nimport os; os.system('echo owned')\n\"\"\"#.csv"
    data = parse_upload("data.csv", b"1,2,3\n4,5,6\n7,8,10\n1,0,0\n")
    data = type(data)(name=name, X=data.X, y=data.y)
    page = CLASSES["sketching"](Settings(dataset=UPLOAD, upload=data, m=2))
    source = script(page)
    compile(source, "<export>", "exec")  # still Python
    assert "import os" not in "\n".join(line for line in source.splitlines()
                                        if not line.lstrip().startswith(("raise", "#")))
    with pytest.raises(ValueError, match="cannot rebuild from a seed") as error:
        exec_script(source)
    assert repr(name) in str(error.value)  # quoted, as the script wrote it


def test_a_page_without_a_script_is_refused():
    class Other:
        key, title = "other", "Other"
    with pytest.raises(ValueError, match="no script for page 'other'; pages with one: sketching"):
        script(Other())


def test_the_buttons_write_the_active_page_at_its_t():
    app = Dashboard()
    app.page = "pca"
    app.settings.param.update(n=200, d=6)
    app.active.step(55)
    python, table = downloads(app)
    assert python.label == "Download as Python (.py)" and table.label == "Download curves (.csv)"
    assert python.write() == ("explorer-pca-t55.py", script(app.active))
    assert table.write() == ("explorer-pca-t55.csv", csv(app.active))
    assert filename(app.active, "py") == "explorer-pca-t55.py"


# -- in a browser ---------------------------------------------------------------------------
@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_both_downloads_are_reached_by_keyboard_and_save_their_files(server, page, tmp_path):
    from test_dashboard_browser import SMALL, counter, open_page, real_errors
    from test_dashboard_keyboard import focused

    errors = open_page(page, server["url"] + "?" + SMALL + "&t=37")
    counter(page, 37).wait_for()
    saved = {}
    for label, extension in (("Download as Python (.py)", "py"), ("Download curves (.csv)", "csv")):
        page.evaluate("() => document.activeElement && document.activeElement.blur()")  # from the top
        for _ in range(120):
            page.keyboard.press("Tab")
            if focused(page)["text"] == label:
                break
        else:
            raise AssertionError(f"Tab never reached {label!r}")
        assert page.get_by_role("button", name=label, exact=True).count() == 1  # named for readers
        with page.expect_download(timeout=60_000) as download:
            page.keyboard.press("Enter")
        path = tmp_path / download.value.suggested_filename
        download.value.save_as(path)
        saved[extension] = path
    assert saved["py"].name == "explorer-sketching-t37.py"
    assert saved["csv"].name == "explorer-sketching-t37.csv"
    printed = parse(run_script(saved["py"].read_text()))
    rows = list(csv_module.reader(io.StringIO(saved["csv"].read_text())))
    last = dict(zip(rows[0], (float(value) for value in rows[-1])))
    assert printed["t"] == 37.0 and set(printed) == set(last)
    assert all(printed[name] == value or (math.isnan(value) and math.isnan(printed[name]))
               for name, value in last.items())
    assert real_errors(errors) == []

