r"""The AdaGrad page: adaptive subgradient methods on a sketch, all on the same stream.

Six learners play a linear model on the shared stream (docs/algorithms.md section 4; Wan &
Zhang, *Efficient adaptive online learning via frequent directions*, TPAMI 2022; Duchi,
Hazan & Singer, JMLR 2011), all through :class:`explorer.adagrad.AdaGrad` and its
baselines:

- ADA-FULL (:math:`H_t = \delta I + G_t^{1/2}`, one d x d eigendecomposition per round:
  the exact proximal matrix, drawn in grey; skipped when d > :data:`FULL_MAX_D`),
- ADA-DIAG (:math:`\delta I + \mathrm{diag}(G_t)^{1/2}`), ADA-FD (a Frequent Directions
  sketch of the gradients with :math:`\tau` rows, Algorithms 1-2) and ADA-FFD (the doubling
  trick, Algorithms 3-4: :math:`S = M^{1/2} V^T`, the rank cycles between
  :math:`\tau - 1` and :math:`2\tau`),
- OGD (step :math:`\eta/\sqrt t`) and Adam, the paper's baselines.

The sketch size is the shared ``m``: :math:`\tau = m`. Targets are ``y = X beta_*`` with
``beta_*`` a random unit vector (the paper's regression,
:func:`explorer.streams.linear_regression_targets`), or for the squared hinge loss the
labels ``sign(w_*^T x)`` with 5% flipped (:func:`explorer.streams.linear_classification_labels`);
regret is the cumulative loss minus that of ``beta_*`` (``w_*``). The race (learners,
targets, regrets) is :class:`explorer.experiments.adagrad.AdaGradRace`; this page is a view
over it. ``eta`` (shared) and ``delta`` are hot (``H_t`` is built from ``G_t``, which
neither changes); ``m``, ``method`` (CMD or PDS) and ``loss`` restart.

>>> from explorer.dashboard.settings import Settings
>>> page = AdaGradPage(Settings(dataset="decaying spectrum", n=100, d=20, m=4))
>>> _ = page.step(30)
>>> page.learners["ffd"].rank <= 2 * 4, round(page.history.last()["regret_full"], 3) > 0
(True, True)
"""

from __future__ import annotations

import numpy as np
import panel as pn
import param

from ...adagrad import BASELINES, LABELS, LEARNERS, METHODS, VARIANTS
from ...experiments.adagrad import FULL_MAX_D, LOSSES, AdaGradRace
from ...plots import MARKS_SHOWN, Events, event_marks
from ...streams import binary_labels
from ..controls import bind, log_axis, log_values
from ..cells import help_text, labelled, plot_cell, plot_grid, row, switch
from ..live import LivePlot, finite
from ..page import Page
from . import adagrad_figures as figures

__all__ = ["AdaGradPage", "RANK_WINDOW", "DELTA_CHOICES"]

RANK_WINDOW = 300
"""The rank plot shows the last this many rows (the cycle stays readable on long streams)."""
DELTA_CHOICES = (1e-8, 1e-4, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0)

TITLES = {"regret": "Regret of the variants on one stream",
          "rank": "Sketch rank over time: the ADA-FFD cycle",
          "eigen": "Eigenvalues of M (ADA-FFD) against SᵀS (ADA-FD) and G (exact)",
          "time": "Time per round"}
EXPLAIN = {
    "regret": "Cumulative loss minus that of the comparator β* (0 for the absolute loss: "
              "y = β*ᵀx). ADA-FD and ADA-FFD keep τ = m directions of G and land close to "
              "ADA-FULL (grey), which keeps all d. All learners share η, the step size. "
              "Log scale unless a regret is ≤ 0. A dashed vertical in a learner's colour: it "
              "diverged there and stopped.",
    "rank": "ADA-FFD adds one orthonormal column to V per new gradient direction; at r = 2τ "
            "it shrinks (in the same round) by s = λ_τ and keeps τ − 1: a saw-tooth of period τ + 1. ADA-FD "
            "shrinks on every row and keeps at most τ − 1. Last 300 rows; dotted verticals: "
            f"ADA-FFD's shrinks (the latest {MARKS_SHOWN}).",
    "eigen": "Dark bars: M's eigenvalues now (those of SᵀS = V M Vᵀ); light: just before the "
             "last shrink, which subtracted s from all of them. Grey: the exact G = Σ g gᵀ "
             "that ADA-FULL keeps; the sketches under-estimate it.",
    "time": "Moving average of the wall time of one round: ADA-FULL does a d × d "
            "eigendecomposition (O(d³)), ADA-FD an SVD of τ rows (O(τ²d)), ADA-FFD "
            "O(τd) on average, DIAG, OGD and Adam O(d). A dashed vertical: that learner stopped.",
}


class AdaGradPage(Page):
    """ADA-FULL / DIAG / FD / FFD, OGD and Adam on the shared stream (usable without a browser)."""

    key = "adagrad"
    title = "AdaGrad on a sketch"
    intro = ("AdaGrad on a sketch: full, diagonal, FD and FFD preconditioners on one stream; watch "
             "ADA-FFD's rank cycle between τ−1 and 2τ (τ = **m**).")
    uses = ("dataset", "n", "d", "seed", "m", "eta")
    hot = ("eta",)
    restart = ("method", "loss")
    hot_options = ("delta",)

    method = param.Selector(default="cmd", objects=list(METHODS), doc=(
        "Update form: CMD (composite mirror descent, beta -= eta H⁻¹ g) or PDS (dual averaging, "
        "beta = -eta H⁻¹ ḡ). Restarts the stream."))
    delta = param.Number(default=0.0, bounds=(0.0, 1e3), doc=(
        "delta of H = delta I + ...; 0 means the paper's (1 for CMD, 10 for PDS, 1e-8 for "
        "ADA-DIAG), any positive value applies to all four AdaGrad variants. Applies mid-stream."))
    loss = param.Selector(default="absolute", objects=list(LOSSES), doc=(
        "absolute: |βᵀx − y| on y = β*ᵀx (the paper's regression); squared_hinge: labels "
        "sign(w*ᵀx) with 5% flipped. Restarts the stream."))
    baselines = param.Boolean(default=True, doc="Draw OGD and Adam too.")
    log_regret = param.Boolean(default=True, doc="Log scale for the regret (the curves differ by decades).")

    # -- the race ---------------------------------------------------------------------------
    def _build(self, X: np.ndarray) -> None:
        self.race = AdaGradRace(X, loss=self.loss, method=self.method, eta=self.settings.eta,
                                      delta=self._delta(), tau=self.settings.m, seed=self.settings.seed,
                                      y=self.settings.labels())

    def _delta(self) -> float | None:
        """The page's delta for the four AdaGrad variants: None (0 on the widget) is the paper's."""
        return float(self.delta) if self.delta else None

    @property
    def experiment(self) -> AdaGradRace:
        """The race (the name this page used for it before)."""
        return self.race

    @property
    def learners(self) -> dict:
        return self.race.learners

    @property
    def comparator(self) -> np.ndarray:
        return self.race.comparator

    @property
    def diverged(self) -> dict[str, int]:
        return self.race.diverged

    def _tune(self) -> None:
        self.race.tune(eta=float(self.settings.eta), delta=self._delta())

    def _notes(self) -> list[str]:
        d, tau = self._X.shape[1], self.settings.m
        labels = self.settings.labels()
        if labels is not None:
            as_classes = binary_labels(labels)[1] if self.loss == "squared_hinge" else "as given"
            notes = [f"Learning the uploaded labels ({as_classes}); regret is measured against "
                     f"the least-squares fit on the whole stream, not the best predictor for "
                     f"this loss, so it may go below 0."]
        elif self.loss == "absolute":
            notes = ["Targets y = β*ᵀx, β* a random unit vector drawn from the seed: the absolute "
                     "loss of β* is 0, so regret = cumulative loss. The paper's stream is "
                     "'decaying spectrum' (x ~ N(1, Σ), eigenvalues 100 j⁻²)."]
        else:
            notes = ["Labels sign(w*ᵀx) with 5% flipped, w* a random unit vector drawn from the "
                     "seed; regret is measured against w*, whose squared hinge loss is not 0."]
        if 2 * tau > d:
            notes.append(f"2τ = {2 * tau} > d = {d}: ADA-FFD's rank stops at d and it never "
                         f"shrinks, so it equals ADA-FULL (the paper's footnote 1). "
                         f"Choose m < d/2 to see the cycle.")
        if d > FULL_MAX_D:
            notes.append(f"d = {d} > {FULL_MAX_D}: ADA-FULL (a d × d eigendecomposition per row) "
                         f"is not run.")
        if self.delta:
            notes.append(f"δ = {self.delta:g} for all four AdaGrad variants (the paper uses "
                         f"1e-8 for ADA-DIAG).")
        for key, t in self.diverged.items():
            notes.append(f"{LABELS[key]} diverged at t = {t} (its β overflowed): lower η; "
                         f"it is stopped there.")
        return notes

    def cumulative_loss(self, key: str) -> float:
        """The sum of the losses ``key`` suffered on rows 1..t."""
        return self.race.cumulative_loss(key)

    # -- views --------------------------------------------------------------------------------
    def _make_views(self):
        self.plots = {"regret": LivePlot(figures.regret_figure(), over_stream=True),
                      "rank": LivePlot(figures.rank_figure()),
                      "eigen": LivePlot(figures.eigen_figure()),
                      "time": LivePlot(figures.time_figure(), over_stream=True)}
        self.summary = pn.pane.Markdown("", margin=(0, 10))
        options = row(
            labelled("method ↻", pn.widgets.RadioButtonGroup.from_param(
                self.param.method, options={"CMD": "cmd", "PDS": "pds"}, width=110)),
            _delta_select(self),
            pn.widgets.Select.from_param(self.param.loss, label="loss ↻", width=140),
            switch(self.param.baselines, "show OGD and Adam", align="end"),
            switch(self.param.log_regret, "log regret", align="end"),
            help_text("τ = m (sidebar) · ↻ restarts · ⚡ applies mid-stream", align="end"),
            sizing_mode="stretch_width")
        self.param.watch(lambda *_: self._update_views(), ["baselines", "log_regret"])
        cells = [plot_cell(TITLES[name], EXPLAIN[name], plot) for name, plot in self.plots.items()]
        return pn.Column(options, self.summary, plot_grid(*cells),
                         sizing_mode="stretch_width")

    def _update_views(self) -> None:
        h = self.history
        t = h["t"]
        shown = {key: key not in BASELINES or self.baselines for key in LEARNERS}
        later = np.concatenate([h[f"regret_{key}"][t > 0] for key in LEARNERS])
        log = self.log_regret and not np.any(later[np.isfinite(later)] <= 0)  # else linear
        axis = log_axis(log)
        marks = event_marks(*(Events("stopped", f"{LABELS[key]} stopped", [error.t], figures.LEARNER_COLORS[key])
                              for key, error in self.race.stopped.items()), upto=self.t)
        for plot, column in (("regret", "regret"), ("time", "ms")):
            values = {key: finite(h[f"{column}_{key}"]) for key in LEARNERS}
            if plot == "regret" and log:  # regret 0 at t = 0 has no logarithm
                values = {key: np.where(y > 0, y, np.nan) for key, y in values.items()}
            self.plots[plot].update({LABELS[key]: {"x": t, "y": values[key], "visible": shown[key]}
                                     for key in LEARNERS},
                                    layout={"yaxis": axis} if plot == "regret" else None, marks=marks)
        self._update_rank()
        self._update_eigen()
        self.summary.object = self._summary()

    def _update_rank(self) -> None:
        tau, end, ranks = self.settings.m, self.t, self.race.ranks
        shrinks = self.race.shrink_times("ffd")
        begin = max(0, end - RANK_WINDOW)
        x = np.arange(begin + 1, end + 1)
        ends = np.array([begin + 1, max(end, begin + 2)], dtype=float)
        self.plots["rank"].update({
            "ADA-FFD rank r": {"x": x, "y": ranks["ffd"][begin:end]},
            "ADA-FD rank (rows kept)": {"x": x, "y": ranks["fd"][begin:end]},
            "2τ: ADA-FFD shrinks here": {"x": ends, "y": np.full(2, float(2 * tau))},
            "τ − 1: rank after a shrink": {"x": ends, "y": np.full(2, float(tau - 1))}},
            marks=event_marks(Events("shrink", "ADA-FFD shrinks", shrinks[shrinks > begin],
                                      figures.LEARNER_COLORS["ffd"]), upto=end))

    def _update_eigen(self) -> None:
        spectra, shrink = self.race.spectra(), self.race.last_shrink("ffd")
        level = [shrink.delta] * 2 if shrink is not None else []
        size = min(self._X.shape[1], 2 * self.settings.m + 2)
        x = np.arange(1, size + 1)

        def bars(values):
            values = values[:size]
            return {"x": x[:values.size], "y": log_values(values, keep_inf=True)}
        self.plots["eigen"].update({
            "M before the last shrink": bars(spectra["ffd_before"]),
            "ADA-FFD: eigenvalues of M now": bars(spectra["ffd"]),
            "s = λ_τ (last shrink)": {"x": [0.5, size + 0.5][:len(level)], "y": level},
            "ADA-FD: eigenvalues of SᵀS": bars(spectra["fd"]),
            "ADA-FULL: eigenvalues of G (exact)": bars(spectra["full"])})

    def _summary(self) -> str:
        """The latest step's record as one line of text."""
        point, tau = self.history.last(), self.settings.m
        shrink = self.race.last_shrink("ffd")
        last = (f"last ADA-FFD shrink at t = {shrink.t}: s = λ_τ = {shrink.delta:.4g}, rank "
                f"{shrink.rank_before} → {shrink.rank_after}" if shrink else "no ADA-FFD shrink yet")
        regrets = ", ".join(f"{LABELS[key]} {point[f'regret_{key}']:.4g}" for key in VARIANTS
                            if np.isfinite(point[f"regret_{key}"]))
        timing = " vs ".join(f"{LABELS[key]} {point[f'ms_{key}']:.3g} ms" for key in ("ffd", "full")
                             if np.isfinite(point[f"ms_{key}"]))
        return (f"**Latest:** ADA-FFD rank r = {int(point['rank_ffd'])} (cycles {tau - 1} → "
                f"{2 * tau}) · {last} · regret {regrets}" + (f" · per round {timing}" if timing else "")
                + self._below_zero(point))

    def _below_zero(self, point) -> str:
        """Why a regret is negative, when one is: the comparator is not the best fixed point."""
        if not any(point[f"regret_{key}"] < 0 for key in LEARNERS if np.isfinite(point[f"regret_{key}"])):
            return ""
        comparator = ("the least-squares fit" if self.settings.labels() is not None
                      else "w*, the unit vector that drew the labels,")
        return (f" · Regret < 0: it is measured against {comparator} not the best fixed β in "
                f"hindsight for the {self.loss.replace('_', ' ')} loss, so a learner can suffer less.")


def _delta_select(page: AdaGradPage) -> pn.widgets.Select:
    """δ as a choice of meaningful values; 'paper' is 0. A value off the grid is added."""
    def options(value):
        values = sorted({*DELTA_CHOICES, float(value)} - {0.0})
        return {"paper's (1 CMD, 10 PDS)": 0.0, **{f"{v:g}": v for v in values}}

    widget = pn.widgets.Select(label="δ ⚡", options=options(page.delta), value=page.delta, width=215,
                               description="δ of H = δI + …; the paper's: 1 (CMD), 10 (PDS), "
                                           "1e-8 for ADA-DIAG. Applies mid-stream.")
    return bind(widget, page, "delta", follow=lambda new: {"options": options(new), "value": new})
