"""The four figures of the sketching page, built once with fixed trace names.

The page patches their arrays as the stream advances (:class:`~..live.LivePlot`). Colours
follow :mod:`explorer.plots.style`: FD blue, RFD red, the exact (oracle) quantity grey; the
fast (doubling-space) variants are dotted, the bounds dashed. The titles are written
above each figure by the page (with a line of explanation), so the figures have none.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...plots import line_chart
from ...plots.style import BOUND_BLACK, EXACT_GREY, HEIGHT, MARGIN, METHOD_COLORS, tint

__all__ = ["spectrum_figure", "alpha_figure", "error_figure", "condition_figure", "SPECTRUM_PANELS",
           "DELTA_TRACE", "direction_dtick", "MAX_DIRECTION_LABELS"]

FD_COLOR, RFD_COLOR = METHOD_COLORS["FD"], METHOD_COLORS["RFD"]
LIGHT = {"FD": tint("FD"), "RFD": tint("RFD")}
"""Light tints of FD's and RFD's colours: the spectrum's bars before the shrink."""
SPECTRUM_PANELS = {"FD": FD_COLOR, "RFD": RFD_COLOR}
ERROR_TICKFORMAT = "~g"
"""The error axis's tick labels (d3-format): 0.5, 12.5, 1e-15, never an SI "f" or "µ"."""


def spectrum_figure() -> go.Figure:
    """FD | RFD side by side: bars before/after the last shrink, the shrink level, the exact spectrum."""
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.05,
                        subplot_titles=("FD: eigenvalues of BᵀB + α₀I",
                                        "RFD: eigenvalues of BᵀB + αI"))
    for col, (name, color) in enumerate(SPECTRUM_PANELS.items(), start=1):
        shared = dict(showlegend=col == 1)  # one legend entry for the lines both panels draw
        fig.add_trace(go.Bar(name=f"{name} before", uid=f"{name} before", x=[], y=[],
                             marker_color=LIGHT[name], opacity=0.8), row=1, col=col)
        fig.add_trace(go.Bar(name=f"{name} after", uid=f"{name} after", x=[], y=[],
                             marker_color=color, width=0.5), row=1, col=col)
        fig.add_trace(go.Scatter(name="δ = σ_m² (shrink level)", uid=f"{name} delta",
                                 x=[], y=[], mode="lines", legendgroup="delta",
                                 line=dict(color=BOUND_BLACK, dash="dash", width=1.5), **shared),
                      row=1, col=col)
        fig.add_trace(go.Scatter(name="exact: λᵢ(AᵀA) + α₀", uid=f"{name} exact", x=[], y=[],
                                 mode="lines+markers", legendgroup="exact",
                                 line=dict(color=EXACT_GREY, width=1), marker=dict(size=5),
                                 **shared), row=1, col=col)
    fig.update_layout(template="plotly_white", barmode="overlay", height=HEIGHT, margin=MARGIN,
                      legend=dict(orientation="h", yanchor="bottom", y=1.1, x=0.0, font_size=11),
                      hovermode="closest")
    fig.update_annotations(font_size=13)  # the two subplot titles
    fig.update_xaxes(title_text="direction i", dtick=1)
    fig.update_yaxes(title_text="eigenvalue", row=1, col=1)
    return fig


def alpha_figure() -> go.Figure:
    """RFD's alpha over time (exact and fast) against FD's fixed alpha0."""
    fig = line_chart([0.0], {"RFD α (exact)": [np.nan], "RFD α (fast)": [np.nan],
                             "FD: α₀ (fixed)": [np.nan]},
                     colors={"RFD α (exact)": RFD_COLOR, "RFD α (fast)": RFD_COLOR,
                             "FD: α₀ (fixed)": FD_COLOR},
                     dashed=["FD: α₀ (fixed)"], x_title="t (rows seen)", y_title="α", height=HEIGHT)
    return _dot_fast(fig)


def error_figure() -> go.Figure:
    """Measured covariance errors of FD and RFD (exact, fast) against their bounds."""
    names = {"FD error (exact)": FD_COLOR, "RFD error (exact)": RFD_COLOR,
             "FD error (fast)": FD_COLOR, "RFD error (fast)": RFD_COLOR,
             "FD bound": FD_COLOR, "RFD bound (half)": RFD_COLOR}
    fig = line_chart([0.0], {name: [np.nan] for name in names}, colors=names,
                     dashed=["FD bound", "RFD bound (half)"],
                     x_title="t (rows seen)", y_title="spectral error", height=HEIGHT)
    # a d3 format: Plotly's default SI prefixes wrote 1e-15 as "1f" (read as a broken format)
    fig.update_yaxes(tickformat=ERROR_TICKFORMAT)
    _dot_fast(fig)
    for variant, name in DELTA_TRACE.items():  # each run's own certified bound: FD <= Δ, RFD <= Δ/2
        fig.add_trace(go.Scatter(name=name, x=[0.0], y=[np.nan], mode="lines", line_shape="hv",
                                 line=dict(color=FD_COLOR, width=1,
                                           dash="dashdot" if variant == "exact" else "dot")))
    return fig


def condition_figure() -> go.Figure:
    """Theorem 4: condition numbers of the two regularized sketches and of the exact matrix."""
    names = {"κ(BᵀB + α₀I) FD (exact)": FD_COLOR, "κ(BᵀB + αI) RFD (exact)": RFD_COLOR,
             "κ(BᵀB + α₀I) FD (fast)": FD_COLOR, "κ(BᵀB + αI) RFD (fast)": RFD_COLOR,
             "κ(AᵀA + α₀I) exact": EXACT_GREY}
    fig = line_chart([0.0], {name: [np.nan] for name in names}, colors=names,
                     dashed=["κ(AᵀA + α₀I) exact"], x_title="t (rows seen)",
                     y_title="κ (log scale)", log_y=True, height=HEIGHT)
    fig.update_yaxes(dtick=1)  # one label per decade
    return _dot_fast(fig)


MAX_DIRECTION_LABELS = 15
"""At most this many direction labels per spectrum panel (half the page's width at 1024 px)."""


def direction_dtick(size: int) -> int:
    """The step of the direction labels for ``size`` bars: 1, 2, 5, 10, ... so that at most
    :data:`MAX_DIRECTION_LABELS` are written (54 bars at m = 50 had 54 overlapping labels).

    >>> direction_dtick(14), direction_dtick(24), direction_dtick(54)
    (1, 2, 5)
    """
    for step in (1, 2, 5, 10, 20, 50, 100, 200, 500):
        if size / step <= MAX_DIRECTION_LABELS:
            return step
    return 1000


DELTA_TRACE = {"exact": "Δ of the exact run", "fast": "Δ of the fast run"}
"""The error figure's traces of each variant's Δ (``delta_total``), by variant."""


def _dot_fast(fig: go.Figure) -> go.Figure:
    """The fast variant dotted; the legend in the room above the plot; each value held
    until the next point (``hv`` steps): the curves have a point every few rows, and a
    line joining two of them rose before the shrink that made the change."""
    fig.for_each_trace(lambda t: t.update(line_dash="dot") if "(fast)" in t.name else None)
    fig.update_traces(line_shape="hv")
    fig.update_layout(margin=MARGIN, legend=dict(y=1.02, font=dict(size=11)))
    return fig
