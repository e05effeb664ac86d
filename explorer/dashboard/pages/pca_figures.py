"""The four figures of the online adaptive PCA page, built once with fixed trace names.

The page patches their arrays as the stream advances (:class:`~..live.LivePlot`).
Colours (:data:`PCA_COLORS`, :func:`~explorer.plots.method_color`) follow the paper's Fig. 1
roles: adaptive PCA red (the method of the paper), static online PCA blue, Follow the Leader
green, the best fixed projection :data:`~explorer.plots.style.COMPARATOR_GREY` (the hindsight
comparator, dashed). Heights and
margins are :mod:`explorer.plots.style`'s. The titles are written above each figure by the
page (with a line of explanation), so the figures have none.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...plots import line_chart
from ...plots.style import BACKGROUND, BOUND_BLACK, CONCEPT_COLORS, HEIGHT, MARGIN, method_color

__all__ = [
    "LOG10_FLOOR",
    "METHODS",
    "PCA_COLORS",
    "SAMPLED",
    "fixed_share_figure",
    "loss_figure",
    "overlap_figure",
    "weights_figure",
]

METHODS = ("Follow the Leader", "best fixed projection", "static online PCA", "adaptive PCA")
"""The four methods' trace names, in legend order."""
PCA_COLORS = {name: method_color(name) for name in METHODS}
"""The colour of each of :data:`METHODS` on this page (the paper's Fig. 1 roles)."""
SAMPLED = "adaptive PCA (sampled P_t)"
LOG10_FLOOR = -12.0
"""Eigenvalues below 10^-12 are drawn as 10^-12 in the heatmap (static PCA goes to e^-80)."""


def loss_figure() -> go.Figure:
    """Cumulative loss of the four methods (expected loss for the randomized two)."""
    colors = {**PCA_COLORS, SAMPLED: PCA_COLORS["adaptive PCA"]}
    fig = line_chart([0.0], {name: [np.nan] for name in (*METHODS, SAMPLED)}, colors=colors,
                     dashed=["best fixed projection"], x_title="t (rows seen)",
                     y_title="cumulative loss Σ‖x − P x‖²", height=HEIGHT)
    fig.for_each_trace(lambda t: t.update(line_dash="dot", line_width=1.5) if t.name == SAMPLED else None)
    return _finish(fig)


def overlap_figure() -> go.Figure:
    """How much of the current segment's best rank-k variance each method's subspace captures."""
    fig = line_chart([0.0], {name: [np.nan] for name in METHODS}, colors=PCA_COLORS,
                     dashed=["best fixed projection"], x_title="t (rows seen)",
                     y_title="share of the segment's best", height=HEIGHT)
    fig.update_yaxes(range=[-0.02, 1.05], tickformat=".0%")
    return _finish(fig)


def weights_figure() -> go.Figure:
    """Heatmap of the sorted eigenvalues of W_t over time (log10), with the kept/discarded split."""
    fig = go.Figure()
    fig.add_trace(go.Heatmap(name="eigenvalues", uid="eigenvalues", x=[0.0], y=[1], z=[[np.nan]],
                             colorscale="Viridis", zmin=LOG10_FLOOR, zmax=0.0,
                             colorbar=dict(title=dict(text="log₁₀ w", side="right"), thickness=12),
                             hovertemplate="t = %{x}<br>i = %{y}<br>log₁₀ w = %{z:.2f}<extra></extra>"))
    fig.add_trace(go.Scatter(name="k | n − k: kept below, discarded above", uid="split",
                             x=[], y=[], mode="lines", line=dict(color=BACKGROUND, dash="dash", width=2)))
    fig.update_layout(template="plotly_white", height=HEIGHT, margin=MARGIN, hovermode="closest",
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0.0, font_size=11),
                      showlegend=True)
    fig.update_xaxes(title_text="t (rows seen)")
    fig.update_yaxes(title_text="eigenvalue index i (smallest first)")
    return fig


def fixed_share_figure() -> go.Figure:
    """Top: fixed-share mass and the smallest eigenvalues (log); bottom: capped entries."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        row_heights=[0.58, 0.42])
    red, blue = PCA_COLORS["adaptive PCA"], PCA_COLORS["static online PCA"]
    top = (("fixed-share mass ½‖ŵ − v‖₁", dict(color=CONCEPT_COLORS["fixed-share mass"], width=2)),
           ("min eigenvalue (adaptive)", dict(color=red, width=2)),
           ("min eigenvalue (static)", dict(color=blue, width=2)),
           ("floor α/n", dict(color=BOUND_BLACK, dash="dash", width=1.5)))
    for name, line in top:
        fig.add_trace(go.Scatter(name=name, uid=name, x=[], y=[], mode="lines", line=line), row=1, col=1)
    bottom = (("capped (adaptive)", dict(color=red, width=2)),
              ("capped (static)", dict(color=blue, width=2, dash="dot")),
              ("n − k (all that can be)", dict(color=BOUND_BLACK, dash="dash", width=1.5)))
    for name, line in bottom:
        fig.add_trace(go.Scatter(name=name, uid=name, x=[], y=[], mode="lines", line=line,
                                 line_shape="hv"), row=2, col=1)
    fig.update_layout(template="plotly_white", height=HEIGHT + 60, margin=dict(MARGIN, t=90),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0.0, font_size=11),
                      hovermode="x unified")
    fig.update_yaxes(title_text="weight (log)", type="log", exponentformat="power", row=1, col=1)
    fig.update_yaxes(title_text="capped entries", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="t (rows seen)", row=2, col=1)
    return fig


def _finish(fig: go.Figure) -> go.Figure:
    """The legend in the room above the plot."""
    fig.update_layout(margin=MARGIN, legend=dict(y=1.02, font=dict(size=11)), hovermode="x unified")
    return fig
