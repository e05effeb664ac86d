"""Small multiples: one panel per data set or sketch size, the same named curves in each.

Arrays in, figures out, as in :mod:`.charts`; every method keeps its colour
(:func:`.style.method_color`) in every panel.

- :func:`small_multiples`: one panel per dataset or sketch size, the same named curves
  in each, one shared legend (the paper's Figure 1: relative error over sketch sizes, one
  panel per dataset; Figures 2-4: accuracy over alpha_0, one panel per m), on one x or each
  curve on its own (``x=None``: loss against each method's running time).

>>> fig = small_multiples([1e-2, 1.0, 1e2],
...                       {"m = 5": {"FD-SON": [0.5, 0.9, 0.8], "RFD-SON": [0.9, 0.9, 0.8]},
...                        "m = 10": {"FD-SON": [0.6, 0.9, 0.8], "RFD-SON": [0.9, 0.9, 0.8]}},
...                       log_x=True)
>>> [(t.name, t.showlegend) for t in fig.data]
[('FD-SON', True), ('RFD-SON', True), ('FD-SON', False), ('RFD-SON', False)]
>>> fig.data[1].line.color == method_color("RFD-SON")
True
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .charts import as_vector, as_xy, curve_trace, dash_styles, series_colors
from .style import EXACT_GREY, LAYOUT, method_color

__all__ = ["small_multiples"]

def small_multiples(x, panels: Mapping[str, Mapping[str, Any]], *,
                    log_x: bool = False, log_y: bool | Mapping[str, bool] = False, dashed: Iterable[str] = (),
                    dashes: Mapping[str, str] | None = None,
                    hline: float | Mapping[str, float] | None = None,
                    hline_label: str = "", colors: Mapping[str, str] | None = None,
                    markers: bool = True, columns: int = 3, shared_y: bool = True,
                    x_title: str | Mapping[str, str] | None = None,
                    y_title: str | Mapping[str, str] | None = None,
                    title: str | None = None, height: int = 380) -> go.Figure:
    """One panel per entry of ``panels`` (title -> {curve name -> y, one per ``x``}); with
    ``x=None`` each curve brings its own x: {curve name -> ``(x, y)``}, as in
    :func:`~explorer.plots.charts.curves_chart`.

    The same name gets the same colour in every panel
    (:func:`~explorer.plots.charts.series_colors`: ``colors``, else its method's, else a
    free colour of the cycle; the names of ``dashes`` share their method's) and appears
    once in the legend; clicking it hides that curve in all panels. Names in ``dashed`` are
    drawn dashed, ``dashes`` gives a name another dash (``"dot"``, ...: one sketch size a
    dash). ``hline`` draws a dotted horizontal reference line in every panel (one number) or
    per panel (title -> number), e.g. the accuracy of always predicting the majority class;
    ``hline_label`` annotates it. Non-finite values leave gaps. At most ``columns`` panels
    per row. ``y_title``: on the first column's axes (one string), or per panel (title ->
    string: panels on their own scales, ``shared_y=False``, showing different quantities);
    ``x_title`` on every panel's x axis, or per panel; ``log_y`` for every panel, or per
    panel (title -> bool; panels not named stay linear).

    >>> fig = small_multiples([5, 10], {"digits": {"FD": [0.2, 0.1]}}, log_y=True, hline=0.05)
    >>> fig.layout.yaxis.type, len(fig.layout.shapes)
    ('log', 1)
    >>> fig = small_multiples(None, {"a": {"FD": ([0.1, 0.3], [2, 1])}, "b": {"FD": ([0.2], [3])}})
    >>> [(t.x.tolist(), t.y.tolist()) for t in fig.data]
    [([0.1, 0.3], [2.0, 1.0]), ([0.2], [3.0])]
    """
    x = None if x is None else as_vector("x", x)
    if not panels:
        raise ValueError("panels must name at least one panel")
    columns = int(columns)
    if columns < 1:
        raise ValueError(f"columns must be >= 1, got {columns}")
    names: list[str] = []
    for panel, series in panels.items():
        if not series:
            raise ValueError(f"panels[{panel!r}] must name at least one curve")
        names += [name for name in series if name not in names]
    dash = dash_styles(names, dashed, dashes, among="curves of any panel")
    for argument, given in (("hline", hline), ("y_title", y_title), ("x_title", x_title), ("log_y", log_y)):
        missing = set(given) - set(panels) if isinstance(given, Mapping) else set()
        if missing:
            raise ValueError(f"{argument} names panels {sorted(missing)} that are not in panels {list(panels)}")
    color = series_colors(names, colors, shared=dashes or ())

    n_panels = len(panels)
    n_cols = min(columns, n_panels)
    n_rows = -(-n_panels // n_cols)
    fig = make_subplots(rows=n_rows, cols=n_cols, subplot_titles=list(panels),
                        shared_yaxes=shared_y, horizontal_spacing=0.06 if shared_y else 0.09,
                        vertical_spacing=0.15)
    shown: set[str] = set()
    for k, (panel, series) in enumerate(panels.items()):
        row, col = divmod(k, n_cols)
        for name, values in series.items():
            curve_x, y = as_xy(f"panels[{panel!r}][{name!r}]", values if x is None else (x, values))
            fig.add_trace(curve_trace(curve_x, y, name=name, color=color[name], dash=dash[name], markers=markers,
                                      legendgroup=name, showlegend=name not in shown, marker=dict(size=6)),
                          row=row + 1, col=col + 1)
            shown.add(name)
        level = _of_panel(hline, panel)
        if level is not None:
            level = float(level)
            if not np.isfinite(level):
                raise ValueError(f"hline for panel {panel!r} must be finite, got {level}")
            fig.add_hline(y=level, line=dict(color=EXACT_GREY, dash="dot", width=1.5),
                          annotation_text=hline_label or None,
                          annotation_position="bottom right", row=row + 1, col=col + 1)
    fig.update_layout(**LAYOUT, height=height * n_rows if n_rows > 1 else height,
                      title=dict(text=title, y=0.98, yanchor="top") if title else None)
    fig.update_layout(margin=dict(t=110 if title else 80), legend=dict(y=1.08))
    # log axes label decades as powers of ten (1e-10 .. 1e10 would read "100p" .. "10B")
    fig.update_xaxes(type="log" if log_x else None, exponentformat="power" if log_x else None)
    for k, panel in enumerate(panels):
        row, col = divmod(k, n_cols)
        log = bool(_of_panel(log_y, panel))
        fig.update_yaxes(type="log" if log else None, exponentformat="power" if log else None,
                         row=row + 1, col=col + 1)
        fig.update_xaxes(title_text=_of_panel(x_title, panel), row=row + 1, col=col + 1)
        if isinstance(y_title, Mapping):
            fig.update_yaxes(title_text=_of_panel(y_title, panel), row=row + 1, col=col + 1)
    if not isinstance(y_title, Mapping):
        fig.update_yaxes(title_text=y_title, col=1)
    return fig


def _of_panel(given, panel: str):
    """An option given for every panel (one value) or per panel (title -> value; None for a
    panel not named)."""
    return given.get(panel) if isinstance(given, Mapping) else given
