r"""A measured error against the bounds that hold it, drawn so that the ordering shows.

Frequent Directions guarantees (docs/algorithms.md section 1.3; Liberty 2013, Ghashami et al. 2016)

.. math::  \|A^\top A - B^\top B\|_2 \;\le\; \Delta \;\le\; \min_{k<m} \frac{\|A - A_k\|_F^2}{m - k},

and all three are small next to :math:`\|A^\top A\|_2`, the error of the empty sketch. On one
axis with :math:`\|A^\top A\|_2` the three lie on each other, and a log axis does not
part them when they are close (a nearly tight chain). So :func:`error_bound_chart` draws two
panels over the same rows: the values as they are, with :math:`\|A^\top A\|_2` for scale,
and below them the error and :math:`\Delta` as fractions of the bound, under a line at 1
(the bound itself), where ``error <= Δ <= bound`` reads as "the solid line under the
dash-dotted one, both under 1".

>>> fig = error_bound_chart([50, 100], error=[1.0, 2.0], delta=[1.5, 2.5], bound=[2.0, 3.0],
...                         scale=[10.0, 20.0])
>>> [(trace.name, trace.yaxis) for trace in fig.data if trace.showlegend is not False]
[('measured ‖AᵀA − BᵀB‖₂', 'y'), ('Δ = Σ δ_t', 'y'), ('bound min_k ‖A − A_k‖²_F / (m − k)', 'y'), ('‖AᵀA‖₂ (the empty sketch B = 0)', 'y')]
>>> [trace.y.tolist() for trace in fig.data if trace.yaxis == "y2"]
[[0.5, 0.6666666666666666], [0.75, 0.8333333333333334], [1.0, 1.0]]
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .charts import as_vector
from .style import BOUND_BLACK, EXACT_GREY, LAYOUT, method_color

__all__ = ["error_bound_chart", "ERROR_NAMES"]

ERROR_NAMES = {"error": "measured ‖AᵀA − BᵀB‖₂", "delta": "Δ = Σ δ_t",
               "bound": "bound min_k ‖A − A_k‖²_F / (m − k)",
               "scale": "‖AᵀA‖₂ (the empty sketch B = 0)"}
"""The legend's name of each curve of :func:`error_bound_chart`."""


def error_bound_chart(t, *, error: Iterable[float], delta: Iterable[float],
                      bound: Iterable[float], scale: Iterable[float] | None = None,
                      method: str = "FD", title: str | None = None,
                      x_title: str = "rows seen t", height: int = 600) -> go.Figure:
    r"""Two panels over the rows ``t``: the values, and each as a fraction of ``bound``.

    ``error``, ``delta`` and ``bound``: one value per ``t`` (the measured
    :math:`\|A^\top A - B^\top B\|_2`, the sketch's :math:`\Delta` and the data's bound);
    ``scale`` (optional, top panel only): :math:`\|A^\top A\|_2`. The error is drawn in
    ``method``'s colour, :math:`\Delta` in the same colour dash-dotted (the run's own
    certificate, as on the dashboard's sketching page), the bound black dashed and the scale
    grey dashed. The lower panel shows ``error / bound`` and ``delta / bound`` with a line at
    1; where the bound is 0 (no shrink yet) the ratios are gaps. One legend entry per curve:
    clicking it hides the curve in both panels.

    >>> fig = error_bound_chart([1, 2], error=[0.0, 1.0], delta=[0.0, 1.0], bound=[0.0, 2.0])
    >>> fig.data[3].y.tolist()[1], bool(np.isnan(fig.data[3].y[0])), fig.layout.yaxis2.title.text
    (0.5, True, 'fraction of the bound')
    """
    t = as_vector("t", t)
    values = {"error": as_vector("error", error, t.size), "delta": as_vector("delta", delta, t.size),
              "bound": as_vector("bound", bound, t.size)}
    if scale is not None:
        values["scale"] = as_vector("scale", scale, t.size)
    own = method_color(method)
    if own is None:
        raise ValueError(f"method must name a method of explorer.plots.METHOD_COLORS, got {method!r}")
    lines = {"error": dict(color=own, width=2), "delta": dict(color=own, width=2, dash="dashdot"),
             "bound": dict(color=BOUND_BLACK, width=2, dash="dash"),
             "scale": dict(color=EXACT_GREY, width=2, dash="dash")}
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        row_heights=[0.55, 0.45])
    for key, y in values.items():
        fig.add_trace(go.Scatter(x=t, y=_finite(y), name=ERROR_NAMES[key], legendgroup=key,
                                 mode="lines", line=lines[key]), row=1, col=1)
    positive = values["bound"] > 0
    for key in ("error", "delta", "bound"):
        ratio = np.divide(values[key], values["bound"], out=np.full(t.size, np.nan), where=positive)
        fig.add_trace(go.Scatter(x=t, y=_finite(ratio), name=f"{ERROR_NAMES[key]} / bound",
                                 legendgroup=key, showlegend=False, mode="lines",
                                 line=lines[key]), row=2, col=1)
    fig.update_layout(**LAYOUT, height=height,
                      title=dict(text=title, y=0.98, yanchor="top") if title else None)
    fig.update_layout(margin=dict(t=110 if title else 80), legend=dict(y=1.03))
    fig.update_yaxes(title_text="spectral error", row=1, col=1)
    fig.update_yaxes(title_text="fraction of the bound", row=2, col=1)
    fig.update_xaxes(title_text=x_title, row=2, col=1)
    return fig


def _finite(y: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(y), y, np.nan)
