"""The four figures of the AdaGrad page, built once with fixed trace names.

The page patches their arrays as the stream advances (:class:`~..live.LivePlot`). Colours,
height and margins follow :mod:`explorer.plots.style` (:func:`~explorer.plots.method_color`):
ADA-FD blue (the FD sketch), ADA-FFD navy, ADA-FULL -- the exact (oracle) proximal matrix --
grey, ADA-DIAG brown; the baselines OGD and Adam are dotted. Bounds and levels are dashed
black. The titles are written
above each figure by the page (with a line of explanation), so the figures have none.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ...adagrad import BASELINES, LABELS, LEARNERS
from ...plots import BOUND_BLACK, EXACT_GREY, HEIGHT, MARGIN, line_chart, method_color, tint

__all__ = ["LEARNER_COLORS", "regret_figure", "rank_figure", "eigen_figure", "time_figure"]

LEARNER_COLORS = {key: method_color(LABELS[key]) for key in LEARNERS}
"""The colour of each learner of :data:`explorer.adagrad.LEARNERS` (its method's)."""


def _learner_lines(y_title: str, log_y: bool = False) -> go.Figure:
    names = {LABELS[key]: LEARNER_COLORS[key] for key in LEARNERS}
    fig = line_chart([0.0], {name: [np.nan] for name in names}, colors=names,
                     x_title="t (rows seen)", y_title=y_title, log_y=log_y, height=HEIGHT)
    for key in BASELINES:
        fig.update_traces(selector=dict(name=LABELS[key]), line_dash="dot")
    fig.update_layout(margin=MARGIN, legend=dict(y=1.02, font=dict(size=11)),
                      hovermode="x unified")
    return fig


def regret_figure() -> go.Figure:
    """Regret (cumulative loss minus the comparator's) of every learner over the stream."""
    return _learner_lines("regret")


def time_figure() -> go.Figure:
    """Wall time per round of every learner (moving average), log scale."""
    fig = _learner_lines("ms per round (log scale)", log_y=True)
    fig.update_yaxes(dtick=1)  # one label per decade
    return fig


def rank_figure() -> go.Figure:
    """Rank of the ADA-FFD and ADA-FD sketches row by row, with FFD's cycle limits."""
    # ADA-FD first, so that ADA-FFD (equal to it until the first shrink) is drawn on top
    fig = line_chart([0.0], {"ADA-FD rank (rows kept)": [np.nan], "ADA-FFD rank r": [np.nan],
                             "2τ: ADA-FFD shrinks here": [np.nan],
                             "τ − 1: rank after a shrink": [np.nan]},
                     colors={"ADA-FFD rank r": LEARNER_COLORS["ffd"],
                             "ADA-FD rank (rows kept)": LEARNER_COLORS["fd"],
                             "2τ: ADA-FFD shrinks here": BOUND_BLACK,
                             "τ − 1: rank after a shrink": BOUND_BLACK},
                     dashed=["2τ: ADA-FFD shrinks here", "τ − 1: rank after a shrink"],
                     x_title="t (rows seen)", y_title="rank", height=HEIGHT)
    fig.update_traces(selector=dict(name="ADA-FFD rank r"), line_shape="hv")
    fig.update_traces(selector=dict(name="ADA-FD rank (rows kept)"), line_shape="hv")
    fig.update_traces(selector=dict(name="τ − 1: rank after a shrink"), line_dash="dot",
                      line_width=1.5)
    fig.update_traces(selector=dict(name="2τ: ADA-FFD shrinks here"), line_width=1.5)
    fig.update_layout(margin=MARGIN, legend=dict(y=1.02, font=dict(size=11)))
    return fig


def eigen_figure() -> go.Figure:
    """Eigenvalues of ADA-FFD's M now and before its last shrink, of ADA-FD's SᵀS and of G."""
    fig = go.Figure()
    fig.add_trace(go.Bar(name="M before the last shrink", x=[], y=[], marker_color=tint("ADA-FFD"),
                         opacity=0.8))
    fig.add_trace(go.Bar(name="ADA-FFD: eigenvalues of M now", x=[], y=[],
                         marker_color=LEARNER_COLORS["ffd"], width=0.5))
    fig.add_trace(go.Scatter(name="s = λ_τ (last shrink)", x=[], y=[], mode="lines",
                             line=dict(color=BOUND_BLACK, dash="dash", width=1.5)))
    fig.add_trace(go.Scatter(name="ADA-FD: eigenvalues of SᵀS", x=[], y=[], mode="markers",
                             marker=dict(color=LEARNER_COLORS["fd"], size=8, symbol="diamond")))
    fig.add_trace(go.Scatter(name="ADA-FULL: eigenvalues of G (exact)", x=[], y=[],
                             mode="lines+markers", line=dict(color=EXACT_GREY, width=1),
                             marker=dict(size=5)))
    fig.update_layout(template="plotly_white", barmode="overlay", height=HEIGHT, margin=MARGIN,
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0.0, font_size=11),
                      hovermode="closest")
    fig.update_xaxes(title_text="eigenvalue index i")
    fig.update_yaxes(title_text="eigenvalue (log scale)", type="log", dtick=1)
    return fig
