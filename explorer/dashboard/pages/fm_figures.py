"""The four figures of the factorization-machine page, built once with fixed trace names.

The page patches their arrays as the stream advances (:class:`~..live.LivePlot`).
Colours are :mod:`explorer.plots.style`'s: S-FTRL light blue (its sketch, GFD, is of the
FD family), full-matrix FTRL grey (the oracle S-FTRL approximates), OGD dark orange; the
two halves of Generalized FD (:data:`~explorer.plots.GFD_HALVES`) orange (``B+``, gradients
with ``q > 0``) and purple (``B-``, ``q < 0``); the reference predictor dark grey. Reference
quantities are dashed; the titles are written above each figure by the page.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...experiments.fm import LEARNER_NAMES
from ...plots import line_chart
from ..controls import log_axis
from ...plots.style import BASELINE_GREY, EXACT_GREY, GFD_HALVES, GUIDE_GREY, HEIGHT, MARGIN, method_color

__all__ = ["metric_figure", "spectra_figure", "spectra_update", "balance_figure", "time_figure",
           "LEARNER_COLORS", "PART_COLORS", "BASELINE"]

LEARNER_COLORS = {key: method_color(name) for key, name in LEARNER_NAMES.items()}
PART_COLORS = GFD_HALVES
BASELINE = "reference"


def metric_figure() -> go.Figure:
    """Progressive RMSE (or AUC) of the three learners and a reference (the y title is the page's)."""
    names = {LEARNER_NAMES[key]: LEARNER_COLORS[key] for key in LEARNER_NAMES}
    fig = line_chart([0.0], {**{name: [np.nan] for name in names}, BASELINE: [np.nan]},
                     colors={**names, BASELINE: BASELINE_GREY}, dashed=[BASELINE],
                     x_title="t (rounds)", y_title="progressive RMSE", height=HEIGHT)
    fig.update_traces(selector=dict(name=BASELINE), line_width=1.2)
    fig.update_layout(margin=MARGIN, legend=dict(y=1.02, font=dict(size=11)), hovermode="x unified")
    return fig


def spectra_figure() -> go.Figure:
    """B+ | B- side by side: sigma_i^2 of the sketch (bars), the exact spectrum and its FD band."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08,
                        subplot_titles=("B₊ (q > 0: over-predicted)", "B₋ (q < 0: under-predicted)"))
    for col, part in enumerate("+-", start=1):
        shared = dict(showlegend=col == 1)
        fig.add_trace(go.Bar(name=f"σᵢ²(B{'₊' if part == '+' else '₋'})", uid=f"{part} sketch",
                             x=[], y=[], marker_color=PART_COLORS[part]), row=1, col=col)
        fig.add_trace(go.Scatter(name="exact λᵢ(HᵀH)", uid=f"{part} exact", x=[], y=[],
                                 mode="lines+markers", legendgroup="exact",
                                 line=dict(color=EXACT_GREY, width=1), marker=dict(size=5),
                                 **shared), row=1, col=col)
        fig.add_trace(go.Scatter(name="λᵢ − Δ (FD's lower bound)", uid=f"{part} band", x=[], y=[],
                                 mode="lines", legendgroup="band",
                                 line=dict(color=EXACT_GREY, width=1, dash="dot"), **shared),
                      row=1, col=col)
    fig.update_layout(template="plotly_white", height=HEIGHT, margin=MARGIN, bargap=0.3,
                      legend=dict(orientation="h", yanchor="bottom", y=1.1, x=0.0, font_size=11),
                      hovermode="closest")
    fig.update_annotations(font_size=13)
    fig.update_xaxes(title_text="direction i", dtick=1)
    fig.update_yaxes(title_text="eigenvalue", row=1, col=1)
    return fig


def spectra_update(spectra, *, log: bool) -> tuple[dict, dict]:
    """``(traces, layout)`` patching :func:`spectra_figure` with ``spectra`` (per half, as
    :meth:`~explorer.experiments.fm.FactorizationRace.spectra` gives them): bars, exact values
    and band on ``1 .. size``, a readable x tick step, and a log (or linear from 0) y axis."""
    traces, size = {}, 1
    for part, values in spectra.items():
        size = max(size, values["size"])
        x = np.arange(1, values["size"] + 1)
        for kind in ("sketch", "exact", "band"):
            traces[f"{part} {kind}"] = {"x": x[:values[kind].size], "y": values[kind]}
    dtick = 1 if size <= 12 else 2 if size <= 24 else 5
    axis = {**log_axis(log), "rangemode": "normal" if log else "tozero"}
    return traces, {"yaxis": axis, "yaxis2": axis, "xaxis": {"dtick": dtick}, "xaxis2": {"dtick": dtick}}


def balance_figure() -> go.Figure:
    """Share of rounds (solid) and of gradient mass (dotted) that went to B+ and to B-."""
    names = {"rounds → B₊ (q > 0)": PART_COLORS["+"], "rounds → B₋ (q < 0)": PART_COLORS["-"],
             "mass → B₊": PART_COLORS["+"], "mass → B₋": PART_COLORS["-"]}
    fig = line_chart([0.0], {name: [np.nan] for name in names}, colors=names,
                     x_title="t (rounds)", y_title="share of S-FTRL's gradients", height=HEIGHT)
    fig.for_each_trace(lambda t: t.update(line_dash="dot") if t.name.startswith("mass") else None)
    fig.update_yaxes(range=[0, 1], tickformat=".0%")
    fig.add_hline(y=0.5, line=dict(color=GUIDE_GREY, width=1))
    fig.update_layout(margin=MARGIN, legend=dict(y=1.02, font=dict(size=11)), hovermode="x unified")
    return fig


def time_figure() -> go.Figure:
    """Wall time per round of each learner, amortized over the rounds so far."""
    names = {LEARNER_NAMES[key]: LEARNER_COLORS[key] for key in LEARNER_NAMES}
    fig = line_chart([0.0], {name: [np.nan] for name in names}, colors=names,
                     x_title="t (rounds)", y_title="µs per round (amortized)", height=HEIGHT)
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(margin=MARGIN, legend=dict(y=1.02, font=dict(size=11)), hovermode="x unified")
    return fig
