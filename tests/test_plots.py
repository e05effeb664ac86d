"""Tests for explorer.plots: the figure builders draw exactly the arrays they are given."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from explorer import FrequentDirections, Recorder
from explorer.plots import COLORS, bar_chart, heatmap, line_chart, shrink_spectrum


# -- line_chart ------------------------------------------------------------------------------

def test_line_chart_draws_each_series_against_x():
    fig = line_chart([1, 2, 3], {"error": [3.0, 2.0, 1.0], "bound": [4.0, 3.0, 2.0]},
                     dashed=["bound"], x_title="t", y_title="err", title="T")
    assert isinstance(fig, go.Figure)
    assert [t.name for t in fig.data] == ["error", "bound"]
    assert fig.data[0].x.tolist() == [1.0, 2.0, 3.0]
    assert fig.data[1].y.tolist() == [4.0, 3.0, 2.0]
    assert [t.line.dash for t in fig.data] == ["solid", "dash"]
    assert fig.layout.xaxis.title.text == "t" and fig.layout.yaxis.title.text == "err"
    assert fig.layout.title.text == "T"


def test_line_chart_colors_log_axes_and_markers():
    fig = line_chart([1, 10], {"a": [1, 2], "b": [3, 4]}, colors={"b": "#000000"},
                     log_x=True, log_y=True, markers=True)
    assert fig.data[0].line.color == COLORS[0]
    assert fig.data[1].line.color == "#000000"
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert fig.data[0].mode == "lines+markers"


def test_line_chart_turns_infinities_into_gaps():
    fig = line_chart([1, 2, 3], {"kappa": [1.0, np.inf, 2.0]})
    y = np.asarray(fig.data[0].y, dtype=float)
    assert y[0] == 1.0 and np.isnan(y[1]) and y[2] == 2.0


def test_line_chart_points_are_extra_marker_traces():
    fig = line_chart([0, 1], {"v": [1, 0]}, points={"optimum": (0.5, 0.25)})
    assert [t.name for t in fig.data] == ["v", "optimum"]
    assert fig.data[1].mode == "markers"
    assert (fig.data[1].x[0], fig.data[1].y[0]) == (0.5, 0.25)


@pytest.mark.parametrize("kwargs, message", [
    (dict(x=[1, 2], series={"a": [1, 2, 3]}), "one per x"),
    (dict(x=[1, 2], series={}), "at least one"),
    (dict(x=[1, 2], series={"a": [1, 2]}, dashed=["b"]), "not in series"),
    (dict(x=[[1, 2]], series={"a": [1]}), "1-D"),
    (dict(x=["a", "b"], series={"a": [1, 2]}), "numbers"),
    (dict(x=[1, 2], series={"a": [1, 2]}, points={"p": (1,)}), "pair"),
])
def test_line_chart_rejects_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        line_chart(**kwargs)


# -- bar_chart -------------------------------------------------------------------------------

def test_bar_chart_groups_series_over_categories():
    fig = bar_chart(["m = 5", "m = 10"], {"exact": [1996, 1991], "fast": [332, 181]},
                    y_title="SVDs")
    assert fig.layout.barmode == "group"
    assert [t.name for t in fig.data] == ["exact", "fast"]
    assert list(fig.data[0].x) == ["m = 5", "m = 10"]
    assert fig.data[1].y.tolist() == [332.0, 181.0]
    assert list(fig.data[0].text) == ["1996", "1991"]


def test_bar_chart_without_text_and_with_log_axis():
    fig = bar_chart([1, 2], {"a": [1.0, 100.0]}, text=False, log_y=True)
    assert fig.data[0].text is None
    assert fig.layout.yaxis.type == "log"
    assert list(fig.data[0].x) == ["1", "2"]  # categories become labels


@pytest.mark.parametrize("categories, series, message", [
    ([], {"a": []}, "categories"),
    (["a"], {}, "at least one"),
    (["a", "b"], {"x": [1]}, "one per x"),
])
def test_bar_chart_rejects_bad_input(categories, series, message):
    with pytest.raises(ValueError, match=message):
        bar_chart(categories, series)


# -- shrink_spectrum ---------------------------------------------------------------------------

def test_shrink_spectrum_before_after_and_delta_line():
    fig = shrink_spectrum([3.0, 2.0, 1.0], delta=1.0)
    before, after = fig.data
    assert before.y.tolist() == [9.0, 4.0, 1.0]
    assert after.y.tolist() == [8.0, 3.0, 0.0]
    assert list(before.x) == ["1", "2", "3"]
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert len(lines) == 1 and lines[0].y0 == lines[0].y1 == 1.0


def test_shrink_spectrum_clamps_at_zero_and_adds_rfd_group():
    fig = shrink_spectrum([2.0, 1.0, 0.5], delta=1.0, show_rfd=True)
    assert fig.data[1].y.tolist() == [3.0, 0.0, 0.0]          # max(sigma^2 - delta, 0)
    assert fig.data[2].y.tolist() == [3.5, 0.5, 0.5]          # + alpha = delta / 2
    fig = shrink_spectrum([2.0, 1.0], delta=1.0, show_rfd=True, alpha=2.0)
    assert fig.data[2].y.tolist() == [5.0, 2.0]
    assert len([s for s in fig.layout.shapes if s.type == "line"]) == 2


def test_shrink_spectrum_draws_a_recorded_shrink_event():
    sk = FrequentDirections(d=4, m=2)
    recorder = Recorder(kinds=("shrink",))
    sk.add_hook(recorder)
    sk.extend(np.diag([3.0, 2.0, 1.0, 0.5]))
    event = recorder.events("shrink")[0]
    fig = shrink_spectrum(event.sigma, event.delta)
    np.testing.assert_allclose(fig.data[0].y, event.sigma ** 2)
    assert fig.data[1].y[-1] == 0.0  # row m is freed


@pytest.mark.parametrize("sigma, delta, message", [
    ([], 1.0, "at least one"),
    ([1.0, 2.0], 1.0, "descending"),
    ([2.0, -1.0], 1.0, "non-negative"),
    ([2.0, np.nan], 1.0, "finite"),
    ([2.0, 1.0], -1.0, "delta"),
    ([2.0, 1.0], np.inf, "delta"),
])
def test_shrink_spectrum_rejects_bad_input(sigma, delta, message):
    with pytest.raises(ValueError, match=message):
        shrink_spectrum(sigma, delta)


def test_shrink_spectrum_rejects_negative_alpha():
    with pytest.raises(ValueError, match="alpha"):
        shrink_spectrum([2.0, 1.0], 1.0, show_rfd=True, alpha=-1.0)


# -- heatmap ---------------------------------------------------------------------------------

def test_heatmap_orientation_and_points():
    z = np.arange(6.0).reshape(3, 2)          # 3 values of y, 2 of x
    fig = heatmap([0.0, 1.0], [0.0, 1.0, 2.0], z,
                  points={"RFD": (0.5, 1.0), "FD": (0.0, 1.0)}, colorbar_title="error")
    hm = fig.data[0]
    assert np.asarray(hm.z).tolist() == z.tolist()
    assert list(hm.x) == [0.0, 1.0] and list(hm.y) == [0.0, 1.0, 2.0]
    assert [t.name for t in fig.data[1:]] == ["RFD", "FD"]
    assert fig.data[1].marker.symbol != fig.data[2].marker.symbol


def test_heatmap_rejects_mismatched_grid():
    with pytest.raises(ValueError, match="shape"):
        heatmap([0, 1], [0, 1, 2], np.zeros((2, 3)))


def test_figures_serialize_to_json():
    """What fig.show() sends to JupyterLab: the figure must be valid plotly JSON."""
    figs = [line_chart([1, 2], {"a": [1, np.inf]}), bar_chart(["a"], {"x": [1]}),
            shrink_spectrum([2.0, 1.0], 0.5, show_rfd=True),
            heatmap([0, 1], [0, 1], np.eye(2), points={"p": (0, 0)})]
    for fig in figs:
        assert go.Figure(fig.to_dict()).to_json()
