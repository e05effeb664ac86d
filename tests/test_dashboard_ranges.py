"""Issue 17, defect 9: live figures keep round axis ranges, so most updates move the traces
without redrawing axes and legend (explorer.dashboard.ranges, LivePlot, PlotlyView.quick).

What must hold for a student to trust the axes: every point drawn lies inside them, they
depend on the data alone (a shared link draws the sender's axes), and a growing curve
changes them rarely, or the quick path buys nothing.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.dashboard import live
from explorer.dashboard.aria import ANNOUNCE_SECONDS
from explorer.dashboard.live import LivePlot
from explorer.dashboard.pages import sketching_figures
from explorer.dashboard.ranges import EMPTY_RANGE, LADDER, axis_ranges, nice_range, ranged_axes
from explorer.plots import Events, event_marks

finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=400, deadline=None)
@given(finite, finite, st.booleans())
def test_a_nice_range_holds_the_data_and_is_finite(a, b, include_zero):
    low, high = min(a, b), max(a, b)
    got = nice_range(low, high, include_zero=include_zero)
    assert got is not None and all(math.isfinite(v) for v in got)
    assert got[0] <= low and high <= got[1] and got[0] < got[1], got
    if include_zero:
        assert got[0] <= 0 <= got[1]


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=5e-324, max_value=1.7e308), st.floats(min_value=5e-324, max_value=1.7e308))
def test_a_log_range_is_whole_decades_around_the_data(a, b):
    low, high = min(a, b), max(a, b)
    bottom, top = nice_range(low, high, log=True)
    assert bottom == int(bottom) and top == int(top) and bottom < top
    assert bottom <= math.log10(low) + 1e-12 and math.log10(high) <= top + 1e-12


def test_nothing_to_show_gives_no_range():
    assert nice_range(math.inf, -math.inf) is None
    assert nice_range(math.nan, 1.0) is None
    assert nice_range(-3.0, -1.0, log=True) is None


def test_zero_alone_is_drawn_from_zero_and_an_empty_axis_is_not_left_to_plotly():
    """At t = 0 a curve is one point at 0: its axis was -0.6 to 0.6 (a tick at -8.9e-17);
    an axis with nothing on it was left to Plotly's autorange (-1 to 4)."""
    assert nice_range(0.0, 0.0) == [0.0, 1.0] == nice_range(0.0, 0.0, growing=True)
    assert nice_range(2.0, 2.0)[0] > 0 and nice_range(-2.0, -2.0)[1] < 0
    empty = [{"type": "scatter", "x": [0.0], "y": [math.nan]}]
    assert axis_ranges({}, empty, ["xaxis", "yaxis"]) == {"xaxis": [0.0, 1.0], "yaxis": [0.0, 1.0]}


def test_a_growing_curve_changes_its_axis_six_times_a_decade():
    """x = 0..t for t = 1..10^4 while playing: the axis ends on the ladder's rungs, never
    more than half of it empty once t >= 10."""
    ends, changes = None, 0
    for t in range(1, 10_001):
        low, high = nice_range(0.0, float(t), growing=True)
        assert low == 0.0
        if high != ends:
            ends, changes = high, changes + 1
        if t >= 10:
            assert t / high > 0.5, (t, high)  # at most half empty (7.5 -> 10 is the widest jump + pad)
    assert changes <= len(LADDER) * 4 + 2, changes


def test_at_rest_an_axis_from_zero_fits_the_data_closely():
    """A rung can leave 40% of the axis empty (300 rows on [0, 500]): a shared link, or a
    paused stream, showed its curves squeezed into the left of every figure. At rest the
    axis ends on the 1-2-5 grid, at most an eighth of it (and the pad) past the data."""
    assert nice_range(0.0, 300.0, growing=True) == [0.0, 500.0]
    for t in range(10, 10_001, 7):
        low, high = nice_range(0.0, float(t))
        assert low == 0.0 and t <= high and (high - t) / high < 1 / 4, (t, high)


def test_bars_are_placed_on_their_exact_extent():
    """The spectrum's directions 1..15 went on [0, 20]: a tick at 0 and a quarter of the
    axis empty. Bars' positions change only with their number, so an axis that places
    bars is the exact extent of what is on it (the spectrum's lines mark the same places)."""
    layout = {"xaxis": {}, "yaxis": {}}
    bars = [{"type": "bar", "x": np.arange(1, 16), "y": np.arange(15.0)}]
    assert axis_ranges(layout, bars, ["xaxis", "yaxis"])["xaxis"] == [0.5, 15.5]
    level = {"type": "scatter", "x": [0.5, 15.5], "y": [3.0, 3.0]}
    exact = {"type": "scatter", "x": np.arange(1, 17), "y": np.arange(16.0)}
    assert axis_ranges(layout, [*bars, level, exact], ["xaxis", "yaxis"])["xaxis"] == [0.5, 16.0]
    assert axis_ranges(layout, [*bars, level], ["xaxis", "yaxis"])["yaxis"][0] == 0.0  # bars from zero


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=1, max_size=30),
       st.lists(st.tuples(st.integers(-50, 50), st.floats(0, 1e9)), min_size=1, max_size=12),
       st.booleans())
def test_every_drawn_point_lies_inside_the_ranged_axes(points, bars, log_y):
    """Lines and bars together (bars from zero, one unit wide), hypothetical values of any size."""
    xs, ys = (np.array(v, dtype=float) for v in zip(*points))
    bx, by = (np.array(v, dtype=float) for v in zip(*bars))
    layout = {"xaxis": {}, "yaxis": {"type": "log"} if log_y else {}}
    traces = [{"type": "scatter", "x": xs, "y": ys}, {"type": "bar", "x": bx, "y": by},
              {"type": "scatter", "x": [1e300], "y": [1e300], "visible": False}]
    axes = ranged_axes(layout, traces)
    assert axes == ["xaxis", "yaxis"]
    ranges = axis_ranges(layout, traces, axes)
    x_range, y_range = ranges["xaxis"], ranges["yaxis"]
    shown = np.isfinite(ys) & ((ys > 0) if log_y else True)
    bar_shown = (by > 0) if log_y else np.ones(by.size, bool)
    if not (shown.any() or bar_shown.any()):  # nothing drawn (a log axis, nothing positive)
        assert x_range == y_range == list(EMPTY_RANGE)
        return
    assert x_range[0] <= min(xs[shown].min(initial=np.inf), bx[bar_shown].min(initial=np.inf) - 0.5)
    assert x_range[1] >= max(xs[shown].max(initial=-np.inf), bx[bar_shown].max(initial=-np.inf) + 0.5)
    values = np.concatenate([ys[shown], by[bar_shown]])
    if log_y:
        if values.size:
            assert y_range[0] <= math.log10(values.min()) + 1e-12 and math.log10(values.max()) <= y_range[1] + 1e-12
    else:
        assert y_range[0] <= min(values.min(), 0.0) and max(values.max(), 0.0) <= y_range[1]  # bars from zero


def test_what_is_not_ranged():
    """A heatmap or a shape is left to Plotly's autorange (the whole figure is), and so is
    an axis whose figure gives it a range; matched axes share one range."""
    assert ranged_axes({}, [{"type": "heatmap", "z": [[1]]}]) is None
    assert ranged_axes({"shapes": [{"type": "line"}]}, [{"type": "scatter"}]) is None
    assert ranged_axes({"yaxis": {"range": [0, 1]}}, [{"type": "scatter"}]) == ["xaxis"]
    layout = {"yaxis2": {"matches": "y"}}
    traces = [{"type": "bar", "x": [1, 2], "y": [1, 2]},
              {"type": "bar", "x": [1, 2], "y": [1, 40], "xaxis": "x2", "yaxis": "y2"}]
    ranges = axis_ranges(layout, traces, ranged_axes(layout, traces))
    assert ranges["yaxis"] == ranges["yaxis2"] and ranges["yaxis"][1] >= 40


def test_a_live_plot_sends_its_ranges_only_when_they_change_and_never_its_layout():
    """The quick path of defect 9: growing, the error figure re-sends its values, and its
    ranges only when the data leaves them; the layout (the page's) is never re-sent, so
    the browser moves traces and axes (Plotly.animate) instead of redrawing the figure."""
    plot = LivePlot(sketching_figures.error_figure())
    assert plot.pane.quick
    plot.growing = True
    layout = plot.pane.layout
    t = np.arange(0.0, 101.0)
    plot.update({"FD error (exact)": {"x": t, "y": t / 100}})
    ranges = plot.pane.ranges
    assert ranges["xaxis"] == [0.0, 150.0] and ranges["yaxis"] == [0.0, 1.5]
    for end in range(102, 140):
        t = np.arange(0.0, end)
        plot.update({"FD error (exact)": {"x": t, "y": t / 100}})
        assert plot.pane.ranges is ranges, end  # not re-sent
    t = np.arange(0.0, 160.0)
    plot.update({"FD error (exact)": {"x": t, "y": t / 100}})
    assert plot.pane.ranges is not ranges and plot.pane.ranges["xaxis"][1] >= 159
    assert plot.pane.layout is layout
    assert list(plot.figure.layout.xaxis.range) == plot.pane.ranges["xaxis"]
    plot.update({}, layout={"yaxis": {"type": "log"}})  # the page's layout: sent, ranged again
    assert plot.pane.layout is not layout and plot.pane.ranges["yaxis"] == [-2.0, 1.0]
    t = np.arange(0.0, 311.0)
    plot.update({"FD error (exact)": {"x": t, "y": t / 100}})
    assert plot.pane.ranges["xaxis"] == [0.0, 500.0]
    plot.settle()  # the stream stopped: the axes fit the data as at rest
    assert plot.pane.ranges["xaxis"] == [0.0, 350.0] and not plot.growing


def test_marks_travel_apart_from_the_layout_and_wait_while_the_stream_grows(monkeypatch):
    """Notes on a figure (``marks=``) go as the pane's ``shapes``, never in its layout (a new
    layout is a whole Plotly.react; new shapes are redrawn alone): at once at rest; while
    the stream grows, at most every ANNOUNCE_SECONDS, and the latest at settle(). The page's
    own layout is never held back with them, and marks that did not change are not re-sent."""
    clock = [100.0]
    monkeypatch.setattr(live, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    plot = LivePlot(sketching_figures.alpha_figure())
    shapes = [event_marks(Events("shrink", "shrinks", np.arange(1.0, end + 1)), upto=end) for end in range(6)]
    drawn = lambda: [shape["x0"] for shape in plot.pane.shapes]  # noqa: E731
    layout = plot.pane.layout
    plot.update({}, marks=shapes[1])  # at rest: at once, the layout untouched
    assert drawn() == [1.0] and plot.pane.layout is layout
    sent = plot.pane.shapes
    plot.update({}, marks=shapes[1])  # unchanged: not re-sent
    assert plot.pane.shapes is sent
    plot.growing = True
    clock[0] += 0.1
    plot.update({}, marks=shapes[2])  # sent at 100, now 100.1: waits
    assert plot.pane.shapes is sent
    plot.update({}, layout={"yaxis": {"type": "log"}}, marks=shapes[3])  # the layout goes, the marks wait
    assert plot.pane.layout["yaxis"]["type"] == "log" and drawn() == [1.0]
    layout = plot.pane.layout
    clock[0] += ANNOUNCE_SECONDS
    plot.update({}, marks=shapes[4])
    assert drawn() == [1.0, 2.0, 3.0, 4.0] and plot.pane.layout is layout
    clock[0] += 0.1
    plot.update({}, marks=shapes[5])
    assert drawn() == [1.0, 2.0, 3.0, 4.0]
    plot.settle()  # the stream stopped: the latest marks
    assert drawn() == [1.0, 2.0, 3.0, 4.0, 5.0] == [shape.x0 for shape in plot.figure.layout.shapes]


def test_a_heatmap_figure_is_never_quick():
    figure = go.Figure(go.Heatmap(name="z", z=[[1.0, 2.0]]))
    assert not LivePlot(figure).pane.quick


@pytest.mark.parametrize("build", [sketching_figures.spectrum_figure, sketching_figures.alpha_figure,
                                   sketching_figures.error_figure, sketching_figures.condition_figure])
def test_the_sketching_figures_are_quick(build):
    """All four figures the play rate is measured on take the quick path."""
    assert LivePlot(build()).pane.quick


@pytest.mark.parametrize("template", ["plotly", "plotly_white"])
def test_a_live_plot_sends_only_the_template_its_figure_reads(template):
    """The browser gets the template cut to the figure's trace types and 2-D layout
    defaults (a whole template is applied on every redraw), and the cut keeps the
    template's own values. (The cut was once merged back into the whole template.)"""
    import plotly.io as pio

    figure = go.Figure([go.Scatter(name="a", x=[1.0], y=[2.0]), go.Bar(name="b", x=[1.0], y=[1.0])])
    figure.update_layout(template=template)
    sent = LivePlot(figure).pane.layout["template"]
    assert set(sent["data"]) == {"scatter", "bar"}
    assert set(sent["layout"]) <= set(live.FLAT_TEMPLATE_LAYOUT)
    whole = pio.templates[template].to_plotly_json()
    assert sent["layout"]["colorway"] == whole["layout"]["colorway"]
    assert sent["layout"]["plot_bgcolor"] == whole["layout"]["plot_bgcolor"]
    assert sent["data"]["bar"] == whole["data"]["bar"]
