r"""The online adaptive PCA page: fixed share against static online PCA, FTL and hindsight.

Yuan & Lamperski, *Online adaptive PCA and its extensions* (ICML 2019), Algorithm 4 and
Fig. 1; docs/algorithms.md section 5. Four methods read the same stream and, each round,
project :math:`x_t` onto a rank-k subspace, paying :math:`\|x_t - P_t x_t\|^2`: adaptive
PCA (fixed share alpha > 0), static online PCA (alpha = 0), Follow the Leader and the best
fixed projection in hindsight (the oracle, in grey). The randomized two are drawn with
their *expected* loss, adaptive PCA's sampled loss dotted beside it.

This module is the view over :class:`explorer.experiments.pca.AdaptivePCARace` (the race,
its comparators and measurements), which the page steps, measures and snapshots for Back;
O(d^3) per row (the two learners' and FTL's eigendecompositions).

The page makes its own stream, whose subspace changes: the paper's toy data
(:func:`explorer.experiments.pca.toy_stream`) with the shared n (rows), d (the paper's n:
the dimension) and seed, in segments of ``segment_length`` rows, each Gaussian with a random
rank-``rank`` covariance. The shared data set is not used.

Knobs: eta and alpha are hot (the learners' ``with_params``; static PCA takes eta only);
k, segment length and rank restart the stream. eta is the page's own (``eta_pca``, default
1 as in the paper's toy setting), not the shared learning rate: the PCA eta scales a loss
in [0, 1] inside a matrix exponential, and the shared eta (0.1, for gradient steps) would
leave static and adaptive PCA nearly indistinguishable (benchmarks/README.md).

>>> from explorer.dashboard.settings import Settings
>>> page = AdaptivePCAPage(Settings(n=400, d=20), segment_length=100)
>>> _ = page.step(400)
>>> point = page.history.last()
>>> point["loss_adaptive"] < point["loss_static"] < point["loss_ftl"]
True
"""

from __future__ import annotations

import math

import numpy as np
import panel as pn
import param

from ...experiments.pca import DENSITY_LEARNERS, AdaptivePCARace, toy_stream
from ...plots import MARKS_SHOWN, Events, event_marks
from ...plots.style import HEIGHT
from ..controls import bind, log_values
from ..cells import help_text, hint, plot_cell, plot_grid, row
from ..live import LivePlot, finite
from ..page import Page
from . import pca_figures as figures

__all__ = ["ALPHA_CHOICES", "ETA_CHOICES", "AdaptivePCAPage"]

ETA_CHOICES = (0.01, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0)
ALPHA_CHOICES = (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1)
LEARNER_NAMES = {"ftl": "Follow the Leader", "static": "static online PCA", "adaptive": "adaptive PCA"}
"""The race's learners by their names in the figures."""
TITLES = {"loss": "Cumulative loss of the four methods",
          "overlap": "The stream's current subspace vs each method's",
          "weights": "Eigenvalue weights of W_t over time",
          "fixed_share": "Fixed share and capping"}
EXPLAIN = {
    "loss": "Dotted verticals: the stream switches subspace; dash-dotted, in a learner's colour: "
            f"it takes the lead in cumulative loss (the latest {MARKS_SHOWN} of each kind). After a switch FTL "
            "keeps the old subspace longest, static online PCA (α = 0) adapts slowly, adaptive PCA "
            "fastest; the best fixed projection (hindsight, grey) is poor across segments (paper, Fig. 1).",
    "overlap": "tr(BᵀC_sB) / (best rank-k variance of C_s): the share of the current segment's "
               "variance that each method's k-dimensional subspace B keeps (100%: the segment's "
               "own top-k subspace). Adaptive PCA's B: the k least-weighted eigenvectors of W_t. "
               "Dotted verticals: the stream switches subspace.",
    "weights": "Each column: the smallest eigenvalues of W_t (the others sit near the cap "
               "1/(n − k)). W_t weighs the directions to discard: the k below the white line "
               "are (most likely) kept. "
               "Fixed share keeps every weight ≥ α/n; with α = 0 they fall to e⁻⁸⁰ and below.",
    "fixed_share": "Top: the mass fixed share moves, ½‖ŵ − v‖₁ ≤ α, and the smallest weight of W_t "
                   "(adaptive stays above α/n: nothing is forgotten for good). Bottom: entries the "
                   "capping step held at 1/(n − k). Dotted verticals: the stream switches subspace.",
}


class AdaptivePCAPage(Page):
    """Online adaptive PCA vs static online PCA, FTL and the best fixed projection."""

    key = "pca"
    title = "Online adaptive PCA"
    intro = ("Online PCA on a stream whose subspace switches: fixed share lets adaptive PCA "
             "follow each switch; static PCA forgets too slowly.")
    uses = ("n", "d", "seed")
    hot = ()
    hot_options = ("eta_pca", "alpha")
    restart = ("k", "segment_length", "rank")

    eta_pca = param.Number(default=1.0, bounds=(1e-3, 50.0),
                           doc="η of both online PCAs' exponentiated update (paper's toy: 1). Hot.")
    alpha = param.Number(default=1e-5, bounds=(0.0, 1.0),
                         doc="Fixed-share rate α of adaptive PCA (static PCA: 0). Hot.")
    k = param.Integer(default=2, bounds=(1, 20), doc="Rank of the projection (at most d - 1).")
    segment_length = param.Integer(default=200, bounds=(10, 5000),
                                   doc="Rows between two switches of the stream's subspace.")
    rank = param.Integer(default=2, bounds=(1, 20), doc="Rank of each segment's covariance.")
    heatmap_of = param.Selector(default="adaptive", objects=list(DENSITY_LEARNERS),
                                doc="Whose W_t the heatmap shows.")

    # -- the page's own stream ----------------------------------------------------------------
    def _stream(self) -> tuple[np.ndarray, list[str]]:
        """The paper's toy stream from n, d, seed and the knobs (``_segment``: each row's segment)."""
        X, self._segment = toy_stream(self.settings.n, self.settings.d, segment_length=self.segment_length,
                                      rank=self.rank, seed=self.settings.seed)
        return X, []

    @property
    def k_used(self) -> int:
        """k, at most d - 1 (a rank-d projection loses nothing)."""
        return min(self.k, self._X.shape[1] - 1)

    # -- algorithms: explorer.experiments.pca ----------------------------------------------------
    def _build(self, X: np.ndarray) -> None:
        self.race = AdaptivePCARace(X, self._segment, self.k_used, eta=self.eta_pca, alpha=self.alpha,
                                    seed=self.settings.seed)

    def _tune(self) -> None:
        self.race.tune(eta=float(self.eta_pca), alpha=float(self.alpha))

    def _notes(self) -> list[str]:
        s, d, k = self.settings, self._X.shape[1], self.k_used
        segments = int(self._segment[-1]) + 1
        notes = [(f"This page streams its own toy data (Yuan & Lamperski, Fig. 1): n = {s.n} rows "
                  f"in dimension d = {d} (the paper's n), {segments} segment(s) of "
                  f"{self.segment_length} rows, each in its own random rank-{min(self.rank, d)} "
                  f"subspace, seed {s.seed}. The data-set choice does not apply here."),
                 ("η here is the page's own, the rate of the exponentiated update (paper's toy: "
                  "1); the sidebar's η, a gradient step size, is greyed: at its default 0.1 "
                  "static and adaptive PCA would be hard to tell apart.")]
        if k < self.k:
            notes.append(f"k = {self.k} needs k < d = {d}: using k = {k}.")
        if self.rank > d:
            notes.append(f"rank = {self.rank} > d = {d}: each segment has rank {d}.")
        if segments == 1:
            notes.append(f"segment length {self.segment_length} ≥ n = {s.n}: one segment, the "
                         f"subspace never switches, so there is nothing to adapt to.")
        if k < min(self.rank, d):
            notes.append(f"k = {k} < rank = {self.rank}: no rank-k projection holds a whole "
                         f"segment, every method keeps losing something.")
        if self.alpha == 0:
            notes.append("α = 0: adaptive PCA is static online PCA (the two curves coincide).")
        notes += [f"{name} left the race: {error}" for name, error in self.race.stopped.items()]
        return notes

    def eigenvalue_log10(self, learner: str) -> np.ndarray:
        """The recorded log10 eigenvalues of ``learner``'s W_t, ascending: (d, points)."""
        return np.vstack([self.history[f"w_{learner}_{i}"] for i in range(self._X.shape[1])])

    # -- views ----------------------------------------------------------------------------------
    def _make_views(self):
        self.plots = {"loss": LivePlot(figures.loss_figure(), over_stream=True),
                      "overlap": LivePlot(figures.overlap_figure(), over_stream=True),
                      "weights": LivePlot(figures.weights_figure()),
                      "fixed_share": LivePlot(figures.fixed_share_figure(),
                                              height=HEIGHT + 60, over_stream=True)}
        self.summary = pn.pane.Markdown("", margin=(0, 10))
        knobs = pn.FlexBox(
            _choice_slider(self, "eta_pca", ETA_CHOICES, "η (PCA update) ⚡"),
            _choice_slider(self, "alpha", ALPHA_CHOICES, "α: fixed share ⚡"),
            _int_slider(self, "k", "k: rank of P_t ↻", end=10),
            _int_slider(self, "segment_length", "segment length ↻", step=10, end=1000),
            _int_slider(self, "rank", "segment rank ↻", end=10),
            flex_wrap="wrap", sizing_mode="stretch_width")
        paper = pn.widgets.Button(label="Paper's toy setting (η = 1, α = 10⁻⁵)")
        paper.on_click(lambda event: self.param.update(eta_pca=1.0, alpha=1e-5))
        theory = hint(pn.widgets.Button(label="Theory setting (Theorem 1), in hindsight", description=(
            "α = 1/(T(n−k)+1), η = ln(1 + √(2D/L)) with L the loss of the best fixed projection "
            "in hindsight: computed from the whole stream, rows not yet streamed included")))
        theory.on_click(lambda event: self.param.update(**self.theory_setting()))
        legend = help_text("⚡ applies mid-stream · ↻ restarts the stream",
                           styles={"font-size": "0.9em"}, margin=(8, 10))
        heatmap_of = pn.widgets.RadioButtonGroup.from_param(self.param.heatmap_of, align="center")
        self.param.watch(lambda *_: self._update_views(), ["heatmap_of"])
        cells = [plot_cell(TITLES[name], EXPLAIN[name], plot, *([heatmap_of] if name == "weights" else []))
                 for name, plot in self.plots.items()]
        return pn.Column(knobs, row(paper, theory, legend), self.summary, plot_grid(*cells),
                         sizing_mode="stretch_width")

    def heatmap_rows(self) -> int:
        """Rows of the heatmap: the smallest 3k + 10 eigenvalues (all when d is small). The
        larger ones all sit near the cap 1/(n - k) and would only squeeze the interesting ones."""
        return min(self._X.shape[1], 3 * self.k_used + 10)

    def theory_setting(self) -> dict[str, float]:
        """Theorem 1's eta and alpha for this stream (L: the best fixed projection's total
        loss), eta within the slider's bounds."""
        eta, alpha = self.race.theory_setting()
        return {"eta_pca": float(min(max(eta, 1e-3), 50.0)), "alpha": float(alpha)}

    def _update_views(self) -> None:
        h, d, k = self.history, self._X.shape[1], self.k_used
        t = h["t"]
        shapes = self._marks(leaders=False)
        self.plots["loss"].update({
            "Follow the Leader": {"x": t, "y": h["loss_ftl"]},
            "best fixed projection": {"x": t, "y": h["loss_best"]},
            "static online PCA": {"x": t, "y": h["loss_static"]},
            "adaptive PCA": {"x": t, "y": h["loss_adaptive"]},
            figures.SAMPLED: {"x": t, "y": h["loss_sampled"]}}, marks=self._marks(leaders=True))
        self.plots["overlap"].update({
            "Follow the Leader": {"x": t, "y": h["overlap_ftl"]},
            "best fixed projection": {"x": t, "y": h["overlap_best"]},
            "static online PCA": {"x": t, "y": h["overlap_static"]},
            "adaptive PCA": {"x": t, "y": h["overlap_adaptive"]}}, marks=shapes)
        shown = self.heatmap_rows()
        z = np.maximum(self.eigenvalue_log10(self.heatmap_of)[:shown], figures.LOG10_FLOOR)
        what = "all" if shown == d else f"{shown} smallest of"
        self.plots["weights"].update({
            "eigenvalues": {"x": t, "y": np.arange(1, shown + 1), "z": z, "zmax": -math.log10(d - k)},
            "split": {"x": [t[0], max(t[-1], 1.0)], "y": [k + 0.5, k + 0.5]}},
            layout={"yaxis": {"range": [0.5, shown + 0.5],
                              "title": {"text": f"eigenvalue i ({what} {d})"}}})
        floor = self.alpha / d
        self.plots["fixed_share"].update({
            "fixed-share mass ½‖ŵ − v‖₁": {"x": t, "y": log_values(h["fs_mass"])},
            "min eigenvalue (adaptive)": {"x": t, "y": _from_log10(h["w_adaptive_0"])},
            "min eigenvalue (static)": {"x": t, "y": _from_log10(h["w_static_0"])},
            "floor α/n": {"x": t, "y": np.full(t.size, floor if floor > 0 else np.nan)},
            "capped (adaptive)": {"x": t, "y": h["capped_adaptive"]},
            "capped (static)": {"x": t, "y": h["capped_static"]},
            "n − k (all that can be)": {"x": t, "y": np.full(t.size, float(d - k))}}, marks=shapes)
        self.summary.object = self._summary()

    def _marks(self, *, leaders: bool) -> dict:
        """The events streamed so far, as verticals (:func:`~explorer.plots.event_marks`): the
        stream's subspace switches, the learners that stopped and, with ``leaders``, the rounds
        where another learner took the lead in cumulative loss (the latest few of each)."""
        groups = [Events("switch", "stream switches subspace", self.race.hindsight.boundaries)]
        groups += [Events("stopped", f"{LEARNER_NAMES[key]} stopped", [error.t],
                          figures.PCA_COLORS[LEARNER_NAMES[key]]) for key, error in self.race.stopped.items()]
        if leaders:
            groups += [Events("leader", f"{LEARNER_NAMES[key]} takes the lead", times,
                              figures.PCA_COLORS[LEARNER_NAMES[key]])
                       for key, times in self.race.leader_changes().items()]
        return event_marks(*groups, upto=self.t)

    def _summary(self) -> str:
        """The latest step's record as one line of text."""
        p = self.history.last()
        segments = int(self._segment[-1]) + 1
        moved = (f"fixed share moved {p['fs_mass']:.2g} of the weight"
                 if np.isfinite(p["fs_mass"]) else "no update yet")
        capped = (f"{int(p['capped_adaptive'])} of {self._X.shape[1]} eigenvalues capped"
                  if np.isfinite(p["capped_adaptive"]) else "none capped yet")
        kept = (f" · adaptive keeps {p['overlap_adaptive']:.0%} of the segment's best"
                if self.t > 0 and np.isfinite(p["overlap_adaptive"]) else "")
        return (f"**Latest:** segment {int(p['segment']) + 1} of {segments} · cumulative loss: "
                f"FTL {p['loss_ftl']:.1f}, best fixed {p['loss_best']:.1f}, static "
                f"{p['loss_static']:.1f}, adaptive {p['loss_adaptive']:.1f} (sampled "
                f"{p['loss_sampled']:.1f}){kept} · {moved} · {capped}")


def _from_log10(values: np.ndarray) -> np.ndarray:
    """10**values for a log axis, clipped at 1e-300 instead of underflowing to 0."""
    return 10.0 ** np.maximum(finite(values), -300.0)


SLIDER_WIDTH = 170
"""Px: room for the longest label and its value ("segment length ↻: 1000"); the knobs wrap
onto a second line when five do not fit (a FlexBox: Panel gives a Row the sum of its
children's fixed widths as its minimum, which pushed the page off-screen; see
:func:`~..cells.row`). Stretched, five sliders shared 1024 px and a label ran over the
next one."""


def _choice_slider(page: Page, name: str, choices, label: str) -> pn.widgets.DiscreteSlider:
    """A slider over ``choices`` (plus the current value), bound both ways to ``page.name``;
    it sets the parameter when released (``value_throttled``)."""
    def options(value):
        return sorted({*map(float, choices), float(value)})
    value = float(getattr(page, name))
    widget = pn.widgets.DiscreteSlider(label=label, options=options(value), value=value,
                                       width=SLIDER_WIDTH)
    return bind(widget, page, name, throttled=True,
                follow=lambda new: {"options": options(new), "value": float(new)})


def _int_slider(page: Page, name: str, label: str, *, end: int, step: int = 1) -> pn.widgets.IntSlider:
    """An integer slider bound both ways to ``page.name``, applied when released."""
    start = page.param[name].bounds[0]
    value = getattr(page, name)
    widget = pn.widgets.IntSlider(label=label, start=start, end=max(end, value), step=step, value=value,
                                  width=SLIDER_WIDTH)
    return bind(widget, page, name, throttled=True,
                follow=lambda new: {"end": max(widget.end, new), "value": new})
