"""Generic Plotly figure builders for the lessons and the dashboard: arrays in, figures out.

Compute and view are separate (STYLE.md): the lessons compute numpy arrays with
:mod:`explorer.sketch` and :mod:`explorer.metrics`, and these functions only draw them.
Every builder returns a ``plotly.graph_objects.Figure`` and never calls ``show()``; it
validates its arrays and raises ``ValueError`` naming the argument when shapes disagree.

- :func:`line_chart`: several named curves against one x axis (errors against bounds,
  alpha over time, condition numbers), bounds drawn dashed, optional log axes.
- :func:`curves_chart`: the same with each curve on its own x (loss against seconds).
- :func:`band_chart`: per name, the mean of several runs (seeds) and their min-max band.
- :func:`bar_chart`: grouped bars for a few named series over categories (counters,
  number of SVDs).
- :func:`shrink_spectrum`: one Frequent Directions shrink, the squared singular values
  before and after with the shrink amount delta drawn (docs/algorithms.md section 1), plus the
  spectrum Robust FD keeps (``+ delta / 2``, section 2) when asked.
- :func:`heatmap`: a value over a 2-D grid with labelled points (the error of every
  ``(s, xi)`` choice in Theorem 1 of Luo et al. 2017, with RFD's and FD's choices marked).
- :func:`event_marks`: thin verticals at the times of events (:class:`Events`: shrinks,
  divergences, subspace switches, changes of leader) on a figure's time axis.

>>> import numpy as np
>>> fig = shrink_spectrum(np.array([3.0, 2.0, 1.0]), delta=1.0)
>>> [trace.name for trace in fig.data]
['before: σ_i²', 'after: max(σ_i² − δ, 0)']
>>> fig.data[1].y.tolist()
[8.0, 3.0, 0.0]
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple

import numpy as np
import plotly.graph_objects as go

from .style import BOUND_BLACK, COLORS, EVENT_STYLES, LAYOUT, MARKS_SHOWN, TINTS, method_color

__all__ = ["line_chart", "curves_chart", "band_chart", "bar_chart", "shrink_spectrum", "heatmap", "as_vector",
           "as_xy", "series_colors", "dash_styles", "curve_trace", "Events", "event_marks"]

def as_vector(name: str, values, length: int | None = None) -> np.ndarray:
    """``values`` as a 1-D float array, optionally of a given length.

    NaN and inf are allowed here (an infinite condition number, say); the builders that
    draw lines turn them into gaps.
    """
    array = _numbers(name, values, 1)
    if length is not None and array.size != length:
        raise ValueError(f"{name} must have {length} entries (one per x), got {array.size}")
    return array


def _numbers(name: str, values, ndim: int, rows: str = "") -> np.ndarray:
    """``values`` as a float array of ``ndim`` dimensions (``rows`` says what a row is)."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a {ndim}-D array of numbers{rows}: {error}") from None
    if array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D{rows}, got shape {array.shape}")
    return array


def _finish(fig: go.Figure, *, title: str | None, x_title: str | None, y_title: str | None,
            height: int, log_x: bool = False, log_y: bool = False) -> go.Figure:
    fig.update_layout(**LAYOUT, height=height,
                      title=dict(text=title, y=0.98, yanchor="top") if title else None)
    fig.update_xaxes(title_text=x_title, type="log" if log_x else None)
    fig.update_yaxes(title_text=y_title, type="log" if log_y else None)
    if title:  # leave room for the title above the horizontal legend
        fig.update_layout(margin=dict(t=80), legend=dict(y=1.02))
    return fig


def line_chart(x, series: Mapping[str, Iterable[float]], *, dashed: Iterable[str] = (),
               dashes: Mapping[str, str] | None = None, markers: bool = False,
               points: Mapping[str, tuple[float, float]] | None = None,
               title: str | None = None, x_title: str | None = None,
               y_title: str | None = None, log_x: bool = False, log_y: bool = False,
               colors: Mapping[str, str] | None = None, height: int = 400) -> go.Figure:
    """One line per entry of ``series`` (name -> y values, one per ``x``).

    Names listed in ``dashed`` are drawn dashed: the convention for bounds, drawn beside
    the measured quantity they bound; ``dashes`` gives a name another dash (``"dot"``, ...:
    :func:`dash_styles`). ``colors`` maps names to colours (default: the
    method's colour (:func:`series_colors`), else the :data:`COLORS` cycle in the order of
    ``series``). Non-finite values leave gaps.
    ``points`` adds single labelled markers, name -> ``(x, y)`` (e.g. an optimum).
    Each curve on its own x: :func:`curves_chart`, which draws these lines.

    >>> fig = line_chart([1, 2, 3], {"error": [3, 2, 1], "bound": [4, 3, 2]}, dashed=["bound"])
    >>> [(t.name, t.line.dash) for t in fig.data]
    [('error', 'solid'), ('bound', 'dash')]
    """
    x = as_vector("x", x)
    fig = curves_chart({name: (x, values) for name, values in series.items()}, dashed=dashed,
                       dashes=dashes, markers=markers, title=title, x_title=x_title, y_title=y_title,
                       log_x=log_x, log_y=log_y, colors=colors, height=height)
    _add_points(fig, points, first_color=len(series))
    return fig


def curves_chart(series: Mapping[str, tuple[Any, Any]], *, dashed: Iterable[str] = (),
                 dashes: Mapping[str, str] | None = None, markers: bool = False,
                 title: str | None = None, x_title: str | None = None,
                 y_title: str | None = None, log_x: bool = False, log_y: bool = False,
                 colors: Mapping[str, str] | None = None, height: int = 400) -> go.Figure:
    """One line per entry of ``series``, name -> ``(x, y)``: each curve on its own x (a
    method's average loss against its own running time, the steps a tuning walk tried).

    As :func:`line_chart`: ``dashed`` names drawn dashed, ``dashes`` name -> dash
    (:func:`dash_styles`); ``colors`` maps names to colours (default :func:`series_colors`);
    non-finite y values leave gaps; ``markers`` marks every point.

    >>> fig = curves_chart({"FTRL": ([0.5, 1.0, 2.0], [0.7, 0.6, 0.5]),
    ...                     "S-FTRL": ([0.1, 0.2], [0.8, 0.6])}, dashes={"S-FTRL": "dot"})
    >>> [(t.name, t.x.tolist(), t.line.dash) for t in fig.data]
    [('FTRL', [0.5, 1.0, 2.0], 'solid'), ('S-FTRL', [0.1, 0.2], 'dot')]
    """
    if not series:
        raise ValueError("series must name at least one curve")
    dash = dash_styles(series, dashed, dashes)
    color = series_colors(series, colors)
    fig = go.Figure()
    for name, pair in series.items():
        x, y = as_xy(f"series[{name!r}]", pair)
        fig.add_trace(curve_trace(x, y, name=name, color=color[name], dash=dash[name], markers=markers))
    return _finish(fig, title=title, x_title=x_title, y_title=y_title, height=height,
                   log_x=log_x, log_y=log_y)


def as_xy(name: str, pair) -> tuple[np.ndarray, np.ndarray]:
    """``pair`` = ``(x, y)`` as two 1-D float arrays of one length (:func:`as_vector`).

    >>> as_xy("curve", ([0, 1], [2.5, np.inf]))
    (array([0., 1.]), array([2.5, inf]))
    """
    try:
        x, y = pair
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (x, y) of arrays, got {type(pair).__name__}") from None
    x = as_vector(f"x of {name}", x)
    return x, as_vector(name, y, x.size)


_DASHES = ("solid", "dot", "dash", "longdash", "dashdot", "longdashdot")


def dash_styles(names: Iterable[str], dashed: Iterable[str] = (), dashes: Mapping[str, str] | None = None,
                *, among: str = "in series") -> dict[str, str]:
    """The dash of each name: ``dashes[name]`` (one of ``solid``, ``dot``, ``dash``,
    ``longdash``, ``dashdot``, ``longdashdot``), else ``"dash"`` for the names in ``dashed``
    (bounds), else ``"solid"``. A name in ``dashed`` or ``dashes`` that is not in ``names``
    raises ``ValueError`` (``among`` says where the names were looked for).

    >>> dash_styles(["error", "bound", "m = 5"], dashed=["bound"], dashes={"m = 5": "dot"})
    {'error': 'solid', 'bound': 'dash', 'm = 5': 'dot'}
    """
    names, dashed, dashes = list(names), set(dashed), dict(dashes or {})
    for argument, given in (("dashed", dashed), ("dashes", dashes)):
        unknown = set(given) - set(names)
        if unknown:
            raise ValueError(f"{argument} names {sorted(unknown)} are not {among} {names}")
    wrong = {name: dash for name, dash in dashes.items() if dash not in _DASHES}
    if wrong:
        raise ValueError(f"dashes must be one of {', '.join(_DASHES)}, got {wrong}")
    return {name: dashes.get(name, "dash" if name in dashed else "solid") for name in names}


def curve_trace(x: np.ndarray, y: np.ndarray, *, name: str, color: str, dash: str = "solid",
                markers: bool = False, **scatter) -> go.Scatter:
    """The line every builder draws: ``y`` against ``x`` (checked arrays: :func:`as_xy`),
    width 2, non-finite ``y`` as gaps; ``scatter`` passes more ``go.Scatter`` properties.

    >>> trace = curve_trace(np.array([1.0, 2.0]), np.array([np.inf, 1.0]), name="a", color="#000000")
    >>> trace.y.tolist(), trace.mode
    ([nan, 1.0], 'lines')
    """
    return go.Scatter(x=x, y=np.where(np.isfinite(y), y, np.nan), name=name,
                      mode="lines+markers" if markers else "lines",
                      line=dict(color=color, dash=dash, width=2), **scatter)


def band_chart(x, runs: Mapping[str, Any], *, title: str | None = None, x_title: str | None = None,
               y_title: str | None = None, log_x: bool = False, log_y: bool = False,
               colors: Mapping[str, str] | None = None, height: int = 400) -> go.Figure:
    """Per entry of ``runs`` (name -> array of shape ``(n_runs, len(x))``, a row per run: one
    per seed), the mean over the runs as a line and a shaded band from their minimum to their
    maximum at each ``x``, in the name's colour (:func:`series_colors`; ``colors`` as in
    :func:`line_chart`). The band has no legend entry of its own: the line's hides both.
    Every value must be finite (a band cannot have a gap).

    >>> fig = band_chart([1, 2, 3], {"loss": [[1, 2, 3], [3, 6, 5]]})
    >>> [(t.name, t.fill) for t in fig.data]
    [('loss (min-max)', 'toself'), ('loss', None)]
    >>> fig.data[1].y.tolist(), fig.data[0].y.tolist()  # mean; max, then min backwards
    ([2.0, 4.0, 4.0], [3.0, 6.0, 5.0, 3.0, 2.0, 1.0])
    """
    x = as_vector("x", x)
    if not np.all(np.isfinite(x)):
        raise ValueError("x must be finite")
    if not runs:
        raise ValueError("runs must name at least one band")
    color = series_colors(runs, colors)
    fig = go.Figure()
    for name, values in runs.items():
        curves = _runs(f"runs[{name!r}]", values, x.size)
        fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[curves.max(0), curves.min(0)[::-1]],
                                 fill="toself", fillcolor=color[name], opacity=0.2, line=dict(width=0),
                                 hoverinfo="skip", showlegend=False, name=f"{name} (min-max)",
                                 legendgroup=name))
        fig.add_trace(curve_trace(x, curves.mean(0), name=name, color=color[name], legendgroup=name))
    return _finish(fig, title=title, x_title=x_title, y_title=y_title, height=height,
                   log_x=log_x, log_y=log_y)


def _runs(name: str, values, length: int) -> np.ndarray:
    """``values`` as a finite float array of shape ``(n_runs >= 1, length)``."""
    array = _numbers(name, values, 2, rows=" (a row per run)")
    if array.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one run")
    if array.shape[1] != length:
        raise ValueError(f"{name} must have {length} columns (one per x), got {array.shape[1]}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite (a band cannot have gaps)")
    return array


def series_colors(names: Iterable[str], colors: Mapping[str, str] | None = None,
                  shared: Iterable[str] = ()) -> dict[str, str]:
    """The colour of each name: the one ``colors`` gives, else its method's
    (:func:`method_color`) if no other name has that colour yet, else the next colour of the
    :data:`COLORS` cycle that no name has (so two curves of one method stay apart). Names
    in ``shared`` keep their method's colour all the same: they are told apart otherwise
    (a dash each, as one method's sketch sizes).

    >>> series_colors(["ADA-FFD CMD", "ADA-FFD PDS", "error"]) == {
    ...     "ADA-FFD CMD": method_color("ADA-FFD"), "ADA-FFD PDS": COLORS[0], "error": COLORS[1]}
    True
    >>> series_colors(["error", "bound"]) == {"error": COLORS[0], "bound": COLORS[1]}
    True
    >>> len(set(series_colors(["FD m=5", "FD m=10"], shared=["FD m=5", "FD m=10"]).values()))
    1
    """
    names, colors, shared = list(names), dict(colors or {}), set(shared)
    chosen = {name: colors[name] for name in names if colors.get(name)}
    for name in names:
        own = method_color(name)
        if name not in chosen and own is not None and (own not in chosen.values() or name in shared):
            chosen[name] = own
    free = [c for c in COLORS if c not in chosen.values()] or list(COLORS)
    rest = [name for name in names if name not in chosen]
    chosen.update({name: free[k % len(free)] for k, name in enumerate(rest)})
    return {name: chosen[name] for name in names}


_SYMBOLS = ("x", "circle", "diamond", "square", "triangle-up")


def _add_points(fig: go.Figure, points, first_color: int = 0) -> None:
    """One marker trace per named point ``(x, y)``."""
    for i, (name, point) in enumerate(dict(points or {}).items()):
        try:
            px, py = (float(v) for v in point)
        except (TypeError, ValueError):
            raise ValueError(f"points[{name!r}] must be a pair (x, y) of numbers, got {point!r}") from None
        fig.add_trace(go.Scatter(
            x=[px], y=[py], mode="markers", name=name,
            marker=dict(symbol=_SYMBOLS[i % len(_SYMBOLS)], size=13,
                        color=COLORS[(first_color + i) % len(COLORS)], line=dict(width=2))))


def bar_chart(categories, series: Mapping[str, Iterable[float]], *, title: str | None = None,
              x_title: str | None = None, y_title: str | None = None, log_y: bool = False,
              text: bool = True, height: int = 380) -> go.Figure:
    """Grouped bars: one colour per entry of ``series`` (name -> one value per category):
    the method's colour (:func:`series_colors`), else the :data:`COLORS` cycle.

    ``text`` writes each value on its bar (rounded to 4 significant digits).

    >>> fig = bar_chart(["a", "b"], {"true": [5, 3], "estimate": [4, 2]})
    >>> [t.name for t in fig.data], fig.layout.barmode
    (['true', 'estimate'], 'group')
    """
    categories = [str(c) for c in categories]
    if not categories:
        raise ValueError("categories must not be empty")
    if not series:
        raise ValueError("series must name at least one group of bars")
    color = series_colors(series)
    fig = go.Figure()
    for name, values in series.items():
        y = as_vector(f"series[{name!r}]", values, len(categories))
        fig.add_trace(go.Bar(x=categories, y=y, name=name, marker_color=color[name],
                             text=[f"{v:.4g}" for v in y] if text else None,
                             textposition="outside" if text else None))
    fig.update_layout(barmode="group")
    return _finish(fig, title=title, x_title=x_title, y_title=y_title, height=height,
                   log_y=log_y)


def shrink_spectrum(sigma, delta: float, *, alpha: float | None = None, show_rfd: bool = False,
                    title: str | None = None, height: int = 400) -> go.Figure:
    r"""One shrink drawn: bars of :math:`\sigma_i^2` before and :math:`\max(\sigma_i^2 - \delta, 0)` after.

    ``sigma``: singular values of the full buffer before the shrink, descending (as in a
    ``"shrink"`` event); ``delta``: the amount subtracted, drawn as a horizontal line.
    With ``show_rfd`` a third group shows what Robust FD's Gram matrix
    :math:`B^T B + \alpha I` holds in each direction after the shrink:
    ``max(sigma_i^2 - delta, 0) + alpha``; ``alpha`` defaults to ``delta / 2`` (the
    increase of one shrink, starting from alpha = 0), and the level ``alpha`` is drawn too.

    >>> fig = shrink_spectrum([2.0, 1.0], delta=1.0, show_rfd=True)
    >>> fig.data[2].y.tolist()
    [3.5, 0.5]
    """
    sigma = as_vector("sigma", sigma)
    if sigma.size == 0:
        raise ValueError("sigma must hold at least one singular value")
    if not np.all(np.isfinite(sigma)) or np.any(sigma < 0):
        raise ValueError("sigma must be finite and non-negative")
    if np.any(np.diff(sigma) > 1e-12 * max(1.0, float(sigma[0]))):
        raise ValueError("sigma must be sorted in descending order")
    delta = float(delta)
    if not np.isfinite(delta) or delta < 0:
        raise ValueError(f"delta must be a finite number >= 0, got {delta}")
    before = sigma ** 2
    after = np.maximum(before - delta, 0.0)
    labels = [str(i) for i in range(1, sigma.size + 1)]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=labels, y=before, name="before: σ_i²", marker_color=TINTS["FD"]))
    fig.add_trace(go.Bar(x=labels, y=after, name="after: max(σ_i² − δ, 0)",
                         marker_color=COLORS[0]))
    if show_rfd:
        alpha = delta / 2 if alpha is None else float(alpha)
        if not np.isfinite(alpha) or alpha < 0:
            raise ValueError(f"alpha must be a finite number >= 0, got {alpha}")
        fig.add_trace(go.Bar(x=labels, y=after + alpha, name="RFD: after + α",
                             marker_color=COLORS[1]))
        fig.add_hline(y=alpha, line=dict(color=COLORS[1], dash="dot"),
                      annotation_text=f"α = {alpha:.3g}", annotation_position="bottom right")
    fig.add_hline(y=delta, line=dict(color=BOUND_BLACK, dash="dash"),
                  annotation_text=f"δ = σ_m² = {delta:.3g}", annotation_position="top right")
    fig.update_layout(barmode="group")
    return _finish(fig, title=title, x_title="direction i (singular value index)",
                   y_title="squared singular value", height=height)


def heatmap(x, y, z, *, points: Mapping[str, tuple[float, float]] | None = None,
            title: str | None = None, x_title: str | None = None, y_title: str | None = None,
            colorbar_title: str | None = None, height: int = 440) -> go.Figure:
    """``z[i, j]`` drawn at ``(x[j], y[i])``; ``points`` adds labelled markers, name -> ``(x, y)``.

    >>> fig = heatmap([0, 1], [0, 1, 2], np.zeros((3, 2)), points={"optimum": (0.5, 1.0)})
    >>> fig.data[0].z.shape, fig.data[1].name
    ((3, 2), 'optimum')
    """
    x, y = as_vector("x", x), as_vector("y", y)
    z = np.asarray(z, dtype=float)
    if z.shape != (y.size, x.size):
        raise ValueError(f"z must have shape (len(y), len(x)) = {(y.size, x.size)}, got {z.shape}")
    fig = go.Figure(go.Heatmap(x=x, y=y, z=z, colorscale="Viridis",
                               colorbar=dict(title=dict(text=colorbar_title))))
    _add_points(fig, points, first_color=1)
    fig = _finish(fig, title=title, x_title=x_title, y_title=y_title, height=height)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.15))
    return fig


class Events(NamedTuple):
    """Events of one kind to mark on a time axis (:func:`event_marks`): ``kind``, a key of
    :data:`~explorer.plots.style.EVENT_STYLES` (the line's dash, width and default colour);
    ``label``, the legend's text for all of them; ``times``, where they happened (x values);
    ``color``, a method's colour instead of the kind's (None: the kind's)."""

    kind: str
    label: str
    times: Any
    color: str | None = None


def event_marks(*groups: Events, upto: float | None = None, limit: int = MARKS_SHOWN,
                keep: Iterable = ()) -> dict[str, list[dict]]:
    """A layout patch ``{"shapes": [...]}``: the shapes of ``keep`` (a figure's own: a 50 %
    line), then a thin vertical across the whole plot height at each time of each group.

    Only times ``<= upto`` are drawn (an event not yet streamed would stretch the x axis),
    and of those the latest ``limit`` distinct ones per group, so the number of shapes stays
    bounded however long the stream. Each group draws in its kind's style
    (:data:`~explorer.plots.style.EVENT_STYLES`, below the curves), with one legend entry,
    ``label``, that shows or hides all its lines.

    >>> marks = event_marks(Events("shrink", "RFD shrinks", [5, 10, 15, 30]), upto=20, limit=2)
    >>> [shape["x0"] for shape in marks["shapes"]], marks["shapes"][0]["line"]["dash"]
    ([10.0, 15.0], 'dot')
    >>> [(shape["name"], shape["showlegend"]) for shape in marks["shapes"]]
    [('RFD shrinks', True), ('RFD shrinks', False)]
    """
    limit = int(limit)
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    shapes = [shape.to_plotly_json() if hasattr(shape, "to_plotly_json") else dict(shape) for shape in keep]
    for group in groups:
        if group.kind not in EVENT_STYLES:
            raise ValueError(f"kind must be one of {', '.join(EVENT_STYLES)}, got {group.kind!r}")
        style = EVENT_STYLES[group.kind]
        times = as_vector(f"times of {group.label!r}", group.times)
        times = times[np.isfinite(times)]
        if upto is not None:
            times = times[times <= upto]
        times = np.unique(times)[-limit:] if limit else times[:0]  # sorted, distinct, the latest
        line = {**style, **({"color": group.color} if group.color else {})}
        shapes += [dict(type="line", xref="x", yref="paper", x0=float(x), x1=float(x), y0=0, y1=1,
                        layer="below", line=line, name=group.label, legendgroup=group.label,
                        showlegend=i == 0)
                   for i, x in enumerate(times)]
    return {"shapes": shapes}
