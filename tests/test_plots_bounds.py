"""explorer.plots.error_bound_chart: an error, Δ and the bound, with a panel where their order shows.

On one axis with ‖AᵀA‖₂ the three FD curves of lesson 01 lay on each other; the chart's
lower panel divides them by the bound, so error <= Δ <= bound reads as two lines under 1.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from explorer import FrequentDirections
from explorer.metrics import best_fd_bound, covariance_error
from explorer.plots import BOUND_BLACK, ERROR_NAMES, EXACT_GREY, error_bound_chart, method_color
from explorer.run import run
from explorer.streams import low_rank_plus_noise

ROOT = pathlib.Path(__file__).resolve().parents[1]


def fd_history(m: int, fast: bool = False):
    X = low_rank_plus_noise(400, 20, rank=3, noise=0.1, seed=1)
    sketch = FrequentDirections(d=20, m=m, fast=fast)
    return run(sketch, X, every=20, observe={
        "error": lambda s: covariance_error(X[:s.n_seen], s),
        "bound": lambda s: best_fd_bound(X[:s.n_seen], s.m),
        "scale": lambda s: np.linalg.norm(X[:s.n_seen], 2) ** 2})


def chart(h, **kwargs):
    return error_bound_chart(h["t"], error=h["error"], delta=h["delta_total"], bound=h["bound"],
                             scale=h["scale"], **kwargs)


def panel(fig, axis: str) -> dict:
    return {trace.name: np.asarray(trace.y, dtype=float) for trace in fig.data if trace.yaxis == axis}


@pytest.mark.parametrize("m, fast", [(2, False), (3, True), (6, False), (10, True)])
def test_the_lower_panel_shows_error_under_delta_under_the_bound(m, fast):
    h = fd_history(m, fast)
    fig = chart(h)
    assert fig.layout.yaxis2.title.text == "fraction of the bound"
    ratios = panel(fig, "y2")
    error, delta, bound = (ratios[f"{ERROR_NAMES[key]} / bound"] for key in ("error", "delta", "bound"))
    shown = np.isfinite(bound)
    assert shown.sum() >= len(h["t"]) - 1  # only a row with no shrink yet has no ratio
    assert np.all(bound[shown] == 1.0)
    tight = 1e-9
    assert np.all(error[shown] <= delta[shown] * (1 + tight))
    assert np.all(delta[shown] <= 1 + tight)
    # the panel parts curves that the top panel squashes: all of them are far under the scale
    if m >= 6:
        top = panel(fig, "y")
        assert np.all(top[ERROR_NAMES["bound"]][1:] < 0.5 * top[ERROR_NAMES["scale"]][1:])


def test_the_top_panel_holds_the_values_and_the_scale():
    h = fd_history(4)
    top = panel(chart(h), "y")
    assert list(top) == [ERROR_NAMES[key] for key in ("error", "delta", "bound", "scale")]
    np.testing.assert_array_equal(top[ERROR_NAMES["delta"]], np.asarray(h["delta_total"], float))


def test_one_legend_entry_per_curve_in_the_style_colours():
    fig = error_bound_chart([1, 2], error=[1, 2], delta=[2, 3], bound=[3, 4], scale=[9, 9],
                            method="RFD")
    legend = [trace for trace in fig.data if trace.showlegend is not False]
    assert [trace.name for trace in legend] == list(ERROR_NAMES.values())
    for trace in fig.data:  # a curve and its ratio share a legend group: one click hides both
        assert trace.legendgroup in ERROR_NAMES
    colors = {trace.legendgroup: (trace.line.color, trace.line.dash) for trace in legend}
    assert colors == {"error": (method_color("RFD"), None), "delta": (method_color("RFD"), "dashdot"),
                      "bound": (BOUND_BLACK, "dash"), "scale": (EXACT_GREY, "dash")}


def test_no_bound_yet_leaves_a_gap_not_a_division_by_zero():
    fig = error_bound_chart([1, 2, 3], error=[0, 0, 1], delta=[0, 0, 1], bound=[0, 0, 2])
    ratios = panel(fig, "y2")
    assert all(np.isnan(y[:2]).all() and y[2] in (0.5, 1.0) for y in ratios.values())


@pytest.mark.parametrize("kwargs, message", [
    (dict(error=[1], delta=[1, 2], bound=[1, 2]), "error must have 2 entries"),
    (dict(error=[1, 2], delta=[1, 2], bound=[1, 2], scale=[[1, 2]]), "scale must be 1-D"),
    (dict(error=[1, 2], delta=[1, 2], bound=[1, 2], method="no such"), "method must name"),
])
def test_bad_arrays_are_refused_with_the_argument_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        error_bound_chart([1, 2], **kwargs)


def test_lesson_01_draws_its_error_charts_with_the_ratio_panel():
    cells = json.loads((ROOT / "lessons/01_frequent_directions.ipynb").read_text())["cells"]
    code = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    chart_cell = next(source for source in code if source.startswith("def error_chart"))
    assert "error_bound_chart(" in chart_cell and "line_chart(" not in chart_cell
    assert any("interactive_output(show_error_vs_bound" in source and "error_chart(h" in source
               for source in code)
