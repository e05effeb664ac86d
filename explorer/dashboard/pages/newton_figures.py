"""The five figures of the sketched online Newton page, built once with fixed trace names.

The page patches their arrays as the stream advances (:class:`~..live.LivePlot`). Every
learner keeps its colour of :data:`explorer.plots.METHOD_COLORS` (RFD-SON red, FD-SON
blue, RP-SON green, FULL-ON grey, ADAGRAD brown); the comparator ``w*`` is drawn in
:data:`~explorer.plots.style.COMPARATOR_GREY`, dashed, and the exact (oracle) spectrum in
:data:`~explorer.plots.style.EXACT_GREY`. Heights and margins are
:mod:`explorer.plots.style`'s. The titles are written above each figure by the page (with
a line of explanation), so the figures have none.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ...experiments.newton import LEARNERS
from ...plots import line_chart
from ...plots.style import BOUND_BLACK, COMPARATOR_GREY, EXACT_GREY, HEIGHT, MARGIN, METHOD_COLORS

__all__ = ["ALPHA0_LINE", "MAJORITY", "STAR", "accuracy_figure", "alpha_figure", "condition_figure",
           "loss_figure", "spectrum_figure"]

STAR = "w* (best fixed, hindsight)"
MAJORITY = "majority class"
ALPHA0_LINE = "α₀ (FD-SON, RP-SON, FULL-ON)"
_COLORS = {name: METHOD_COLORS[name] for name in LEARNERS}


def _lines(names: dict[str, str], *, y_title: str, dashed=(), dotted=(), log_y=False) -> go.Figure:
    fig = line_chart([0.0], {name: [np.nan] for name in names}, colors=names, dashed=list(dashed),
                     x_title="t (rows seen)", y_title=y_title, log_y=log_y, height=HEIGHT)
    fig.for_each_trace(lambda t: t.update(line_dash="dot") if t.name in dotted else None)
    fig.update_layout(margin=MARGIN, legend=dict(y=1.02, font=dict(size=11)), hovermode="x unified")
    return fig


def loss_figure() -> go.Figure:
    """Regret against ``w*`` (or the average loss so far) of every learner; ``w*`` dashed grey."""
    return _lines({**_COLORS, STAR: COMPARATOR_GREY}, y_title="regret", dashed=[STAR])


def accuracy_figure() -> go.Figure:
    """Online accuracy so far (sign of the prediction made before the label was seen)."""
    fig = _lines({**_COLORS, STAR: COMPARATOR_GREY, MAJORITY: COMPARATOR_GREY},
                 y_title="accuracy so far", dashed=[STAR], dotted=[MAJORITY])
    fig.update_yaxes(range=[0.0, 1.02])
    return fig


def condition_figure() -> go.Figure:
    """κ of each learner's preconditioner H (ADAGRAD: δI + diag(G)^½), log scale."""
    fig = _lines(dict(_COLORS), y_title="κ(H) (log scale)", log_y=True)
    fig.update_yaxes(dtick=1)  # one label per decade
    return fig


def alpha_figure() -> go.Figure:
    """RFD-SON's α = α₀ + Δ/2 against the fixed α₀ of the others, log scale."""
    fig = _lines({"RFD-SON": _COLORS["RFD-SON"], ALPHA0_LINE: _COLORS["FD-SON"]},
                 y_title="α: regularizer of H (log)", dashed=[ALPHA0_LINE], log_y=True)
    return fig


def spectrum_figure() -> go.Figure:
    """Eigenvalues of the chosen learner's ``H`` (bars) beside the exact ones (grey) and α."""
    fig = go.Figure()
    fig.add_trace(go.Bar(name="sketch: σᵢ²(B) + α", uid="sketch", x=[], y=[],
                         marker_color=_COLORS["RFD-SON"], opacity=0.85))
    fig.add_trace(go.Scatter(name="exact: λᵢ(Σ (μ+η) g gᵀ) + α₀", uid="exact", x=[], y=[],
                             mode="lines+markers", line=dict(color=EXACT_GREY, width=1.5),
                             marker=dict(size=5)))
    fig.add_trace(go.Scatter(name="α (every direction outside B)", uid="alpha", x=[], y=[],
                             mode="lines", line=dict(color=BOUND_BLACK, dash="dash", width=1.5)))
    fig.update_layout(template="plotly_white", height=HEIGHT, margin=MARGIN, hovermode="closest",
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0.0, font_size=11),
                      bargap=0.25)
    fig.update_xaxes(title_text="direction i")
    fig.update_yaxes(title_text="eigenvalue of H (log)", type="log", dtick=1)
    return fig
