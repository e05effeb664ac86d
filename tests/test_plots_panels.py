"""Tests for explorer.plots.panels: small multiples draw exactly the arrays they are given."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from explorer.plots import COLORS
from explorer.plots import METHOD_COLORS, method_color, small_multiples

GRID = [1e-4, 1.0, 1e4]
PANELS = {
    "m = 5": {"FD-SON": [0.5, 0.9, 0.7], "RFD-SON": [0.9, 0.9, 0.7]},
    "m = 10": {"FD-SON": [0.6, 0.9, 0.7], "RFD-SON": [0.9, 0.9, 0.7], "FULL-ON": [0.8, 0.9, 0.7]},
}


def test_method_color_matches_the_longest_prefix():
    assert method_color("RFD-SON, m = 5") == METHOD_COLORS["RFD-SON"] == COLORS[1]
    assert method_color("FD-SON, m = 20") == METHOD_COLORS["FD-SON"] == COLORS[0]
    assert method_color("fd") == METHOD_COLORS["FD"]
    assert method_color("Oja-SON, m = 5") == METHOD_COLORS["Oja-SON"]
    assert method_color("ADA-FFD rank") == METHOD_COLORS["ADA-FFD"] != METHOD_COLORS["ADA-FD"]
    assert method_color("a method of no family") is None
    assert method_color("a method of no family", default="#123456") == "#123456"


def test_small_multiples_one_trace_per_curve_and_panel():
    fig = small_multiples(GRID, PANELS, log_x=True, x_title="α₀", y_title="accuracy", title="T")
    assert isinstance(fig, go.Figure)
    assert [t.name for t in fig.data] == ["FD-SON", "RFD-SON", "FD-SON", "RFD-SON", "FULL-ON"]
    assert fig.data[2].y.tolist() == [0.6, 0.9, 0.7]
    assert fig.data[0].x.tolist() == GRID
    # each panel on its own axes
    assert [t.xaxis for t in fig.data] == ["x", "x", "x2", "x2", "x2"]
    assert [a.text for a in fig.layout.annotations][:2] == ["m = 5", "m = 10"]
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis2.type == "log"
    assert fig.layout.yaxis.title.text == "accuracy" and fig.layout.xaxis.title.text == "α₀"
    assert fig.layout.title.text == "T"


def test_small_multiples_keeps_colours_and_legend_entries_per_name():
    fig = small_multiples(GRID, PANELS, colors={"FULL-ON": "#abcdef"}, dashed=["FULL-ON"])
    shown = [t.name for t in fig.data if t.showlegend]
    assert shown == ["FD-SON", "RFD-SON", "FULL-ON"]
    by_name = {}
    for trace in fig.data:
        by_name.setdefault(trace.name, set()).add(trace.line.color)
        assert trace.legendgroup == trace.name
    assert by_name == {"FD-SON": {COLORS[0]}, "RFD-SON": {COLORS[1]}, "FULL-ON": {"#abcdef"}}
    assert fig.data[-1].line.dash == "dash" and fig.data[0].line.dash == "solid"


def test_small_multiples_unknown_names_cycle_through_the_palette():
    fig = small_multiples([1, 2], {"p": {"alpha": [1, 2], "beta": [2, 3]}}, markers=False)
    assert [t.line.color for t in fig.data] == [COLORS[0], COLORS[1]]
    assert fig.data[0].mode == "lines"


def test_small_multiples_wraps_rows_and_draws_reference_lines():
    panels = {f"p{i}": {"FD": [1.0, 2.0]} for i in range(4)}
    fig = small_multiples([1, 2], panels, columns=2, hline={"p0": 1.5, "p3": 0.5},
                          hline_label="majority class", log_y=True)
    assert {t.xaxis for t in fig.data} == {"x", "x2", "x3", "x4"}
    assert len(fig.layout.shapes) == 2
    assert sorted(s.y0 for s in fig.layout.shapes) == [0.5, 1.5]
    assert fig.layout.yaxis.type == "log"
    assert fig.layout.height == 2 * 380


def test_small_multiples_turns_infinities_into_gaps():
    fig = small_multiples([1, 2, 3], {"p": {"kappa": [1.0, np.inf, 2.0]}})
    y = np.asarray(fig.data[0].y, dtype=float)
    assert y[0] == 1.0 and np.isnan(y[1]) and y[2] == 2.0


def test_small_multiples_titles_each_panels_y_axis_when_given_per_panel():
    """One string titles the first column's axes; a mapping titles each panel's own axis
    (panels on their own scales showing different quantities), and no other."""
    fig = small_multiples(GRID, PANELS, shared_y=False, columns=1,
                          y_title={"m = 10": "accuracy"})
    assert (fig.layout.yaxis.title.text, fig.layout.yaxis2.title.text) == (None, "accuracy")
    fig = small_multiples(GRID, PANELS, shared_y=False, y_title={"m = 5": "rank", "m = 10": "regret"})
    assert (fig.layout.yaxis.title.text, fig.layout.yaxis2.title.text) == ("rank", "regret")
    fig = small_multiples(GRID, PANELS, shared_y=False, y_title="accuracy")
    assert (fig.layout.yaxis.title.text, fig.layout.yaxis2.title.text) == ("accuracy", None)


def test_small_multiples_sets_log_axes_and_x_titles_per_panel():
    """A mapping puts each named panel's y axis on a log scale (the others stay linear) and
    titles each panel's own x axis; one value applies to every panel."""
    fig = small_multiples(GRID, PANELS, shared_y=False, log_y={"m = 10": True},
                          x_title={"m = 5": "round t", "m = 10": "index"})
    assert (fig.layout.yaxis.type, fig.layout.yaxis2.type) == (None, "log")
    assert fig.layout.yaxis2.exponentformat == "power" and fig.layout.yaxis.exponentformat is None
    assert (fig.layout.xaxis.title.text, fig.layout.xaxis2.title.text) == ("round t", "index")
    fig = small_multiples(GRID, PANELS, log_y=True, x_title="α₀")
    assert (fig.layout.yaxis.type, fig.layout.yaxis2.type) == ("log", "log")
    assert (fig.layout.xaxis.title.text, fig.layout.xaxis2.title.text) == ("α₀", "α₀")


@pytest.mark.parametrize("kwargs, message", [
    (dict(x=[1, 2], panels={}), "at least one panel"),
    (dict(x=[1, 2], panels={"p": {}}), "at least one curve"),
    (dict(x=[1, 2], panels={"p": {"a": [1, 2, 3]}}), "one per x"),
    (dict(x=[1, 2], panels={"p": {"a": [1, 2]}}, dashed=["b"]), "not curves"),
    (dict(x=[1, 2], panels={"p": {"a": [1, 2]}}, hline={"q": 1.0}), "not in panels"),
    (dict(x=[1, 2], panels={"p": {"a": [1, 2]}}, hline=np.nan), "finite"),
    (dict(x=[1, 2], panels={"p": {"a": [1, 2]}}, y_title={"q": "rank"}), "y_title names panels"),
    (dict(x=[1, 2], panels={"p": {"a": [1, 2]}}, x_title={"q": "t"}), "x_title names panels"),
    (dict(x=[1, 2], panels={"p": {"a": [1, 2]}}, log_y={"q": True}), "log_y names panels"),
    (dict(x=[1, 2], panels={"p": {"a": [1, 2]}}, columns=0), "columns"),
    (dict(x=[[1, 2]], panels={"p": {"a": [1]}}), "1-D"),
])
def test_small_multiples_rejects_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        small_multiples(**kwargs)


def test_small_multiples_gives_two_curves_of_one_method_two_colours():
    """One colour rule for every chart (series_colors): a second curve of a method, or a
    name whose cycle colour a method already has, gets a free colour, the same in every panel."""
    curves = {"ADA-FFD CMD": [1, 2], "ADA-FFD PDS": [2, 3], "error": [3, 4]}
    fig = small_multiples([1, 2], {"a": curves, "b": curves})
    colors = {t.name: t.line.color for t in fig.data}
    assert len(set(colors.values())) == 3 and colors["ADA-FFD CMD"] == method_color("ADA-FFD")
    assert [t.line.color for t in fig.data[:3]] == [t.line.color for t in fig.data[3:]]
