"""Tests for explorer.plots: the figure builders draw exactly the arrays they are given."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from explorer import FrequentDirections, Recorder
from explorer.plots import (COLORS, Events, band_chart, bar_chart, curves_chart, event_marks, heatmap, line_chart,
                            method_color, shrink_spectrum, small_multiples)


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


def test_line_chart_takes_a_dash_per_name():
    fig = line_chart([1, 2], {"m = 5": [1, 2], "m = 10": [2, 3], "bound": [3, 4]}, dashed=["bound"],
                     dashes={"m = 5": "dot"})
    assert [t.line.dash for t in fig.data] == ["dot", "solid", "dash"]


# -- curves_chart ----------------------------------------------------------------------------

def test_curves_chart_draws_each_curve_against_its_own_x():
    fig = curves_chart({"FTRL": ([0.5, 1.0, 2.0], [0.7, 0.6, 0.5]), "S-FTRL": ([0.1, 0.3], [0.8, 0.4])},
                       x_title="seconds", y_title="loss", title="T", height=380)
    assert isinstance(fig, go.Figure)
    assert [t.name for t in fig.data] == ["FTRL", "S-FTRL"]
    assert fig.data[0].x.tolist() == [0.5, 1.0, 2.0] and fig.data[0].y.tolist() == [0.7, 0.6, 0.5]
    assert fig.data[1].x.tolist() == [0.1, 0.3] and fig.data[1].y.tolist() == [0.8, 0.4]
    assert [t.mode for t in fig.data] == ["lines", "lines"]
    assert fig.layout.xaxis.title.text == "seconds" and fig.layout.yaxis.title.text == "loss"
    assert fig.layout.title.text == "T" and fig.layout.height == 380


def test_curves_chart_dashes_markers_log_axes_and_colours():
    fig = curves_chart({"S-FTRL (m = 5)": ([1, 2], [1, 2]), "S-FTRL (m = 10)": ([1, 3], [2, 1]),
                        "bound": ([1, 4], [3, 3]), "a": ([1, 10], [1, 1])},
                       dashed=["bound"], dashes={"S-FTRL (m = 5)": "dot", "S-FTRL (m = 10)": "dash"},
                       colors={"a": "#000000"}, markers=True, log_x=True, log_y=True)
    assert [t.line.dash for t in fig.data] == ["dot", "dash", "dash", "solid"]
    colors = [t.line.color for t in fig.data]
    assert colors[0] == method_color("S-FTRL") and colors[3] == "#000000"
    assert len(set(colors)) == len(colors)  # two curves of one method are kept apart
    assert {t.mode for t in fig.data} == {"lines+markers"}
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_curves_chart_turns_non_finite_values_into_gaps():
    fig = curves_chart({"kappa": ([1, 2, 3, 4], [1.0, np.inf, np.nan, -np.inf])})
    y = np.asarray(fig.data[0].y, dtype=float)
    assert y[0] == 1.0 and np.isnan(y[1:]).all()


def test_line_chart_draws_what_curves_chart_draws_on_a_shared_x():
    x, series = [1.0, 2.0, 3.0], {"error": [3.0, np.inf, 1.0], "bound": [4.0, 3.0, 2.0]}
    shared = line_chart(x, series, dashed=["bound"], title="T")
    own = curves_chart({name: (x, y) for name, y in series.items()}, dashed=["bound"], title="T")
    assert shared.to_dict() == own.to_dict()


@given(st.lists(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1, max_size=6),
                min_size=1, max_size=4))
@settings(max_examples=25, deadline=None)
def test_curves_chart_draws_exactly_the_given_arrays(ys):
    series = {f"curve {i}": (np.arange(len(y)) * (i + 1.0), y) for i, y in enumerate(ys)}
    fig = curves_chart(series)
    assert [t.name for t in fig.data] == list(series)
    for trace, (x, y) in zip(fig.data, series.values()):
        np.testing.assert_array_equal(trace.x, x)
        np.testing.assert_array_equal(trace.y, np.asarray(y, dtype=float))


@pytest.mark.parametrize("kwargs, message", [
    (dict(series={}), "at least one curve"),
    (dict(series={"a": ([1, 2], [1, 2, 3])}), r"series\['a'\] must have 2 entries \(one per x\)"),
    (dict(series={"a": ([1, 2], [1, 2])}, dashed=["b"]), r"dashed names \['b'\] are not in series"),
    (dict(series={"a": ([1, 2], [1, 2])}, dashes={"b": "dot"}), r"dashes names \['b'\] are not in series"),
    (dict(series={"a": ([1, 2], [1, 2])}, dashes={"a": "wiggly"}), "dashes must be one of"),
    (dict(series={"a": [1, 2, 3]}), r"series\['a'\] must be a pair \(x, y\)"),
    (dict(series={"a": 5}), "must be a pair"),
    (dict(series={"a": ([[1, 2]], [1, 2])}), r"x of series\['a'\] must be 1-D"),
    (dict(series={"a": ([1, 2], ["u", "v"])}), "numbers"),
])
def test_curves_chart_rejects_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        curves_chart(**kwargs)


def test_small_multiples_takes_curves_on_their_own_x():
    """A panel per data set, each method's loss against its own seconds (x=None)."""
    fig = small_multiples(None, {"Spambase": {"FTRL": ([0.1, 0.2], [0.5, 0.4]), "S-FTRL (m = 10)": ([0.05], [0.6])},
                                 "MNIST": {"FTRL": ([1.0, 2.0, 3.0], [0.3, 0.2, 0.1]),
                                           "S-FTRL (m = 5)": ([0.5, 0.9], [0.4, 0.3])}},
                          dashes={"S-FTRL (m = 5)": "dot", "S-FTRL (m = 10)": "dash"}, shared_y=False)
    assert [(t.name, t.x.tolist(), t.xaxis) for t in fig.data] == [
        ("FTRL", [0.1, 0.2], "x"), ("S-FTRL (m = 10)", [0.05], "x"),
        ("FTRL", [1.0, 2.0, 3.0], "x2"), ("S-FTRL (m = 5)", [0.5, 0.9], "x2")]
    assert [t.showlegend for t in fig.data] == [True, True, False, True]
    assert [t.line.dash for t in fig.data] == ["solid", "dash", "solid", "dot"]
    assert fig.data[1].line.color == fig.data[3].line.color == method_color("S-FTRL")  # one hue, a dash per m
    with pytest.raises(ValueError, match=r"panels\['p'\]\['a'\] must be a pair"):
        small_multiples(None, {"p": {"a": [1, 2, 3]}})
    with pytest.raises(ValueError, match=r"dashes names \['b'\] are not curves of any panel"):
        small_multiples(None, {"p": {"a": ([1], [1])}}, dashes={"b": "dot"})


# -- band_chart ------------------------------------------------------------------------------

def test_band_chart_draws_the_min_max_band_and_the_mean_per_name():
    runs = {"static online PCA": np.array([[1.0, 3.0, 6.0], [2.0, 2.0, 9.0], [0.0, 4.0, 3.0]]),
            "online adaptive PCA": np.array([[1.0, 1.0, 1.0]])}
    fig = band_chart([1, 2, 3], runs, x_title="t", y_title="cumulative loss", title="T", height=420)
    assert [t.name for t in fig.data] == ["static online PCA (min-max)", "static online PCA",
                                          "online adaptive PCA (min-max)", "online adaptive PCA"]
    band, mean = fig.data[0], fig.data[1]
    assert band.fill == "toself" and band.showlegend is False and band.hoverinfo == "skip"
    assert band.opacity == 0.2 and band.line.width == 0
    assert band.x.tolist() == [1, 2, 3, 3, 2, 1]
    assert band.y.tolist() == [2.0, 4.0, 9.0, 3.0, 2.0, 0.0]          # max, then min backwards
    assert mean.x.tolist() == [1, 2, 3] and mean.y.tolist() == [1.0, 3.0, 6.0]
    assert band.legendgroup == mean.legendgroup == "static online PCA"  # one legend entry hides both
    assert band.fillcolor == mean.line.color == method_color("static online PCA")
    assert fig.data[2].fillcolor == fig.data[3].line.color == method_color("online adaptive PCA")
    assert fig.layout.xaxis.title.text == "t" and fig.layout.title.text == "T" and fig.layout.height == 420


def test_band_chart_colours_are_distinct_and_can_be_given():
    fig = band_chart([0, 1], {"a": [[0, 1]], "b": [[1, 2]], "c": [[2, 3]]}, colors={"c": "#000000"},
                     log_x=True, log_y=True)
    lines = [t.line.color for t in fig.data[1::2]]
    assert lines[:2] == [COLORS[0], COLORS[1]] and lines[2] == "#000000"
    assert [t.fillcolor for t in fig.data[::2]] == lines
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_band_chart_takes_switch_marks():
    fig = band_chart(np.arange(1, 7), {"a": np.ones((2, 6))})
    fig.update_layout(**event_marks(Events("switch", "stream switches subspace", [2, 4])))
    assert [shape.x0 for shape in fig.layout.shapes] == [2.0, 4.0]
    assert fig.layout.shapes[0].line.dash == "dot"


@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 8)),
                  elements=st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)))
@settings(max_examples=40, deadline=None)
def test_band_edges_are_the_runs_extremes_and_the_line_their_mean(runs):
    x = np.arange(runs.shape[1], dtype=float)
    band, mean = band_chart(x, {"method": runs}).data
    n = x.size
    np.testing.assert_array_equal(band.x, np.r_[x, x[::-1]])
    np.testing.assert_array_equal(band.y[:n], runs.max(axis=0))
    np.testing.assert_array_equal(band.y[n:], runs.min(axis=0)[::-1])
    np.testing.assert_array_equal(mean.y, runs.mean(axis=0))
    assert np.all(band.y[:n] >= mean.y - 1e-9 * (1 + np.abs(mean.y)))
    assert np.all(band.y[n:][::-1] <= mean.y + 1e-9 * (1 + np.abs(mean.y)))


@pytest.mark.parametrize("x, runs, message", [
    ([1, 2], {}, "at least one band"),
    ([1, 2], {"a": [1, 2]}, r"runs\['a'\] must be 2-D \(a row per run\), got shape \(2,\)"),
    ([1, 2], {"a": np.ones((2, 2, 2))}, "must be 2-D"),
    ([1, 2], {"a": np.ones((0, 2))}, r"runs\['a'\] must hold at least one run"),
    ([1, 2], {"a": np.ones((3, 5))}, r"runs\['a'\] must have 2 columns \(one per x\), got 5"),
    ([1, 2], {"a": [[1, np.nan]]}, r"runs\['a'\] must be finite"),
    ([1, 2], {"a": [[1, np.inf]]}, "must be finite"),
    ([1, 2], {"a": [[1, 2], [3]]}, "must be a 2-D array of numbers"),
    ([1, 2], {"a": [["u", "v"]]}, "numbers"),
    ([1, np.nan], {"a": [[1, 2]]}, "x must be finite"),
    ([[1, 2]], {"a": [[1, 2]]}, "x must be 1-D"),
])
def test_band_chart_rejects_bad_input(x, runs, message):
    with pytest.raises(ValueError, match=message):
        band_chart(x, runs)


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
            curves_chart({"a": ([1, 2], [1, np.nan]), "b": ([0.5], [2])}, dashes={"b": "dot"}),
            band_chart([1, 2], {"a": [[1, 2], [3, 4]]}),
            shrink_spectrum([2.0, 1.0], 0.5, show_rfd=True),
            heatmap([0, 1], [0, 1], np.eye(2), points={"p": (0, 0)})]
    for fig in figs:
        assert go.Figure(fig.to_dict()).to_json()
