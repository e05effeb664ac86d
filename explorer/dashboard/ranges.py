"""Axis ranges for live figures: round numbers that change only now and then.

Plotly's autorange fits every axis to the data on every redraw, so a figure whose curves
grow by one point must redraw its axes, tick labels and legend each time, most of a redraw
in a browser that renders in software (benchmarks/README.md, ``dashboard_latency.py``). A
:class:`~.live.LivePlot` instead sets its axes to the ranges :func:`axis_ranges` computes
from the data: the data's extent, padded by :data:`PAD` of its span, rounded outwards to a
multiple of a 1-2-5 step (about :data:`STEPS` of them per axis), a log axis at whole
decades. While the stream plays (``growing``) an axis from zero ends at a rung of
:data:`LADDER` instead, so a range stays the same for many updates and in between the
browser moves the curves without redrawing the axes (:class:`~.live.PlotlyView`). At rest
the grid fits the data more closely (a rung can leave 40% of the axis empty: 300 rows on
[0, 500]). An axis that places bars (one unit wide: a spectrum's
directions) is the exact extent of what is drawn on it.

The ranges depend on the data (and on whether it is growing) alone, not on what was drawn
before: a figure opened from a shared link at row t has the axes of the sender's figure at
row t. Only figures of scatter and bar traces (and no shapes) are ranged here: a heatmap's
cells or a shape's extent are left to Plotly's autorange, and an axis its figure gives a
range keeps it.

>>> nice_range(0.0, 137.0, growing=True)
[0.0, 150.0]
>>> nice_range(0.0, 137.0)
[0.0, 160.0]
>>> nice_range(0.8, 0.95)
[0.78, 0.96]
>>> nice_range(3.0, 2500.0, log=True)
[0.0, 4.0]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["nice_range", "axis_ranges", "ranged_axes", "PAD", "STEPS", "LADDER", "RANGED_TYPES",
           "EMPTY_RANGE"]

PAD = 0.03
"""Room left beyond the data on each side, as a share of its span (a line on the frame is hard to see)."""
STEPS = 8
"""About this many steps of the 1-2-5 grid span the data; fewer: emptier axes, rarer redraws."""
RANGED_TYPES = frozenset({"scatter", "bar"})
"""Trace types whose extent is their x and y (and a bar's base at zero and width)."""
LADDER = (1, 1.5, 2, 3, 5, 7.5)
"""The round numbers an axis from zero ends at while the stream plays (times a power of ten)."""
EMPTY_RANGE = (0.0, 1.0)
"""The range of an axis with nothing drawn on it yet (on a log axis: 1 to 10)."""
BAR_HALF_WIDTH = 0.5
"""A bar at x reaches x ± 0.5 (Plotly gives each bar one unit of x when bars are 1 apart)."""


def nice_range(low: float, high: float, *, log: bool = False, include_zero: bool = False,
               growing: bool = False) -> list[float] | None:
    """``[low, high]`` padded and rounded outward to round numbers (log: to decades,
    as Plotly's log ranges are written, in log10 units; ``growing``: from zero up to a
    rung of the ladder); None when there is nothing finite (or, on a log axis, nothing
    positive) to show."""
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        return None
    nice = _nice_range(low, high, log=log, include_zero=include_zero, growing=growing)
    if nice is None or all(map(math.isfinite, nice)):
        return nice
    # rounding overflowed, next to the largest float: the data's own extent, made wider than a point
    if low < high:
        return [low, high]
    below, above = math.nextafter(low, -math.inf), math.nextafter(high, math.inf)
    return [below if math.isfinite(below) else low, above if math.isfinite(above) else high]


def _nice_range(low: float, high: float, *, log: bool, include_zero: bool,
                growing: bool) -> list[float] | None:
    if log:
        if high <= 0:
            return None
        low = max(low, math.ulp(0.0))  # the smallest positive float: nothing at or below zero is drawn
        bottom, top = math.floor(math.log10(low)), math.ceil(math.log10(high))
        return [float(bottom), float(top if top > bottom else bottom + 1)]
    if include_zero or 0 <= 2 * low <= high or high <= 0 and 2 * high >= low:
        # zero in, when it at most doubles the span: such an axis moves only at the ladder's rungs
        low, high = min(low, 0.0), max(high, 0.0)
    if high == low == 0.0:  # zero alone (an error or a count at t = 0): up from zero, never below
        return [0.0, 1.0]
    if high == low:  # one value: a span as wide as the value around it
        half = abs(high) / 2
        low, high = low - half, high + half
    span = high - low
    raw = span * (1 + 2 * PAD) / STEPS
    if not (np.finfo(float).tiny <= raw and math.isfinite(raw * 100)):  # at the float limits
        return [float(low), float(high)] if low < high else [low - 1.0, high + 1.0]
    padded_low = low - PAD * span if low < 0 or low - PAD * span >= 0 else 0.0
    padded_high = high + PAD * span if high > 0 or high + PAD * span <= 0 else 0.0
    if growing and padded_low == 0.0:  # from zero (a count of rows, an error): up to a rung
        return [0.0, max(high, _rung(padded_high))]
    if growing and padded_high == 0.0:
        return [min(low, -_rung(-padded_low)), 0.0]
    step = _step(raw)
    # min/max: where the step is below the values' own float spacing, rounding could cut them
    return [min(low, _round(math.floor(padded_low / step) * step, step)),
            max(high, _round(math.ceil(padded_high / step) * step, step))]


def _rung(value: float) -> float:
    """The smallest of 1, 1.5, 2, 3, 5 and 7.5 times a power of ten that is at least ``value``
    (> 0): six rungs a decade, so a growing curve changes its axis six times a decade and
    leaves at most 40% of it empty (just past 3, the axis ends at 5)."""
    power = 10.0 ** math.floor(math.log10(value))
    for factor in LADDER:
        if factor * power >= value:
            return _round(factor * power, power / 10)
    return _round(10 * power, power)


def _step(raw: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is at least ``raw``."""
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * power >= raw:
            return factor * power
    return 10 * power  # pragma: no cover - the loop ends at 10


def _round(value: float, step: float) -> float:
    """``value`` with the float noise of ``k * step`` rounded off (0.30000000000000004 -> 0.3)."""
    digits = max(0, -math.floor(math.log10(step)) + 1)
    return float(round(value, digits)) + 0.0  # + 0.0: never -0.0


def ranged_axes(layout: Mapping, traces: Sequence[Mapping]) -> list[str] | None:
    """The layout keys (``"xaxis"``, ``"yaxis2"``, ...) whose ranges :func:`axis_ranges`
    sets, or None when the figure is not one it ranges (a trace that is not scatter or bar,
    a shape, an axis that is not linear or log)."""
    if layout.get("shapes") or any(trace.get("type", "scatter") not in RANGED_TYPES for trace in traces):
        return None
    axes = set()
    for trace in traces:
        axes.add(_axis_key("x", trace.get("xaxis")))
        axes.add(_axis_key("y", trace.get("yaxis")))
    axes.update(key for key in layout if _is_axis_key(key))
    ranged = []
    for key in sorted(axes):
        axis = layout.get(key) or {}
        if axis.get("type") not in (None, "-", "linear", "log"):
            return None
        if axis.get("range") is None:
            ranged.append(key)
    return ranged


def axis_ranges(layout: Mapping, traces: Sequence[Mapping], axes: Sequence[str], *,
                growing: bool = False) -> dict[str, list | None]:
    """The range of each of ``axes`` that fits every visible trace drawn on it
    (:func:`nice_range`; :data:`EMPTY_RANGE` where nothing is drawn, or nothing positive
    on a log axis); an axis that places bars
    gets the exact extent of what is drawn on it. Axes that match another (``matches: "y"``) share the
    range of the group."""
    groups: dict[str, list[str]] = {}
    for key in axes:
        groups.setdefault(_group(layout, key), []).append(key)
    # per group: lowest, highest, whether bars reach from zero on it, whether bars are placed on it
    extents = {group: [math.inf, -math.inf, False, False] for group in groups}
    for trace in traces:
        if trace.get("visible", True) is False:
            continue
        bar = trace.get("type") == "bar"
        horizontal = bar and trace.get("orientation") == "h"
        keys = {letter: _group(layout, _axis_key(letter, trace.get(f"{letter}axis"))) for letter in "xy"}
        logs = {letter: (layout.get(keys[letter]) or {}).get("type") == "log" for letter in "xy"}
        points = _points(trace.get("x"), trace.get("y"), logs["x"], logs["y"])
        if points is None:
            continue
        for letter, values in zip("xy", points):
            if keys[letter] not in extents:
                continue
            extent = extents[keys[letter]]
            low, high = float(values.min()), float(values.max())
            if bar and (letter == "x") != horizontal:  # the bar's position: its width
                low, high = low - BAR_HALF_WIDTH, high + BAR_HALF_WIDTH
                extent[3] = True
            elif bar:  # the bar's length, from zero
                extent[2] = True
            extent[0], extent[1] = min(extent[0], low), max(extent[1], high)
    ranges = {}
    for group, keys in groups.items():
        low, high, include_zero, places_bars = extents[group]
        log = (layout.get(group) or {}).get("type") == "log"
        if places_bars and not log and math.isfinite(low) and math.isfinite(high):
            nice = [low, high]
        else:
            nice = nice_range(low, high, log=log, include_zero=include_zero and not log, growing=growing)
        if nice is None and not math.isfinite(low) and not math.isfinite(high):
            nice = list(EMPTY_RANGE)  # an empty frame from zero, not Plotly's -1 to 4 (or 6)
        for key in keys:
            ranges[key] = nice
    return ranges


def _points(x, y, x_log: bool, y_log: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """The x and y of the points a trace draws (both finite, positive on a log axis; x is
    0, 1, ... when not given), or None when it draws none or its values are not numbers."""
    try:
        y = np.asarray([] if y is None else y, dtype=float).ravel()
        x = np.arange(y.size, dtype=float) if x is None else np.asarray(x, dtype=float).ravel()
    except (TypeError, ValueError):  # text (category) values: no numeric extent
        return None
    if x.size != y.size:
        return None
    keep = np.isfinite(x) & np.isfinite(y)
    if x_log:
        keep &= x > 0
    if y_log:
        keep &= y > 0
    return (x[keep], y[keep]) if keep.any() else None


def _axis_key(letter: str, ref: str | None) -> str:
    """``"x2"`` -> ``"xaxis2"``, None -> ``"xaxis"``."""
    return f"{letter}axis{(ref or letter)[1:]}"


def _is_axis_key(key: str) -> bool:
    return key[:5] in ("xaxis", "yaxis") and (key[5:] == "" or key[5:].isdigit())


def _group(layout: Mapping, key: str) -> str:
    """The axis ``key`` matches (``yaxis2`` with ``matches: "y"`` -> ``yaxis``), or ``key``."""
    matches = (layout.get(key) or {}).get("matches")
    return _axis_key(key[0], matches) if matches else key
