r"""The factorization-machine page: sketched FTRL (S-FTRL) against full FTRL and OGD.

Luo, Zhang, Zhang, Zhu, Zhang, Pei (KDD 2018), *Sketched follow-the-regularized-leader for
online factorization machine*; docs/algorithms.md section 6. This module is the view: the
race of the three learners (:mod:`explorer.fm`), their divergence, the exact spectra S-FTRL's
sketch is measured against and the metrics are :class:`explorer.experiments.fm.FactorizationRace`;
the streams :func:`~explorer.experiments.fm.task_stream`; what the page says about the race
(:func:`race_notes`, :func:`race_summary`, :func:`race_watch`) is here. After every step it records

- the progressive RMSE (ratings: squared loss ``(z - b)^2 / 2``) or the progressive AUC
  (binary labels, logistic loss) of each learner, predicted before learning, against a
  reference: the running mean rating, or chance (AUC 0.5);
- S-FTRL's sign balance: the share of rounds, and of gradient mass ``|q| ||a_hat||^2``,
  that went to ``B+`` and to ``B-``;
- the amortized wall time per round of each learner (one round is too short to time);
- S-FTRL's last shrink (which half, when, delta) for the one-line summary.

The spectra of ``B+`` and ``B-`` are drawn beside the exact spectra of the matrices they
sketch, ``H+^T H+ = sum_{q>0} |q| a_hat a_hat^T`` (and ``H-``), kept while
``d + 1 <= ORACLE_MAX``; FD guarantees ``lambda_i - Delta <= sigma_i^2(B) <= lambda_i``.

Streams: ratings need one-hot ``[e_user; e_item]`` rows, from :func:`explorer.fm.synthetic_ratings`
(the page's users and items, rating noise ``fm_noise``: cleaner than MovieLens, so that a
short stream teaches the biases) or the first n ratings of MovieLens-100K in time order; the
binary task uses the shared stream X, rows scaled to unit norm, labels
:func:`explorer.streams.linear_classification_labels` of X (same seed).

eta is hot: FTRL and S-FTRL play ``-eta * (sum of past gradients)``, so a new eta rescales
their whole current ``Theta`` (each learner's ``with_params(eta=...)``); OGD's own
``eta_0`` (in ``eta_0 / sqrt(t)``, a page option) is hot too and scales the steps to come.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import panel as pn
import param

from ...experiments.fm import (BINARY, DIVERGED, LEARNER_NAMES, LEARNERS, MOVIELENS, ORACLE_MAX,
                                RATING_NOISE, SYNTHETIC, TASKS, FactorizationRace, make_learners,
                                task_stream)
from ...plots import MARKS_SHOWN, Events, event_marks
from ...run import lead_since
from ..controls import bind, grid_options
from ..cells import explanation, help_text, labelled, plot_cell, plot_grid, switch
from ..live import LivePlot, finite
from ..page import Page
from . import fm_figures as figures

__all__ = ["FactorizationPage", "TASKS", "SYNTHETIC", "MOVIELENS", "BINARY", "race_notes", "race_summary",
           "race_watch"]

OGD_ETAS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
DEFAULT_ETA = 0.1
"""The sidebar's default η; above it the page warns that FTRL and S-FTRL may diverge."""
GLOSSARY = ("B₊, B₋: S-FTRL's two Frequent Directions sketches (Generalized FD), of the rounds "
            "with q > 0 and with q < 0; each holds up to m rows (exact) or 2m (fast). "
            "â = [aₜ; 1]: the round's feature row aₜ (one-hot user and item on ratings) with a 1 "
            "appended for the bias.")

TITLES = {"metric": "Progressive error of the three learners",
          "spectra": "Spectra of B₊ and B₋ (S-FTRL's Generalized FD)",
          "balance": "Sign balance of the gradients",
          "time": "Time per round"}
EXPLAIN = {
    "ratings": "RMSE over all rounds so far, each rating predicted before it is learned "
               "(lower is better). Dashed: always predicting the mean rating seen so far. "
               "S-FTRL plays FTRL's Θ through a sketch: with m ≥ d + 2 the two coincide. "
               "A dashed vertical in a learner's colour: it diverged there and stopped.",
    "binary": "AUC over all rounds so far, each label predicted before it is learned "
              "(higher is better; dashed: chance). S-FTRL plays FTRL's Θ through a sketch: "
              "with m ≥ d + 2 the two coincide. A dashed vertical in a learner's colour: it "
              "diverged there and stopped.",
    "spectra": "Bars: σᵢ² of the sketch. Grey: the exact eigenvalues of the sum it sketches "
               "(HᵀH = Σ |q| â âᵀ over that sign's rounds); FD keeps each within Δ (its "
               "total shrink) below, dotted. Θ = −η(B₊ᵀB₊ − B₋ᵀB₋).",
    "balance": "Each gradient q â âᵀ goes to B₊ if q > 0 (the model over-predicted) or to "
               "B₋ if q < 0. Solid: share of rounds; dotted: share of the mass |q|·‖â‖². "
               "Both halves fill up: the sum is indefinite, hence Generalized FD. Dotted verticals: "
               f"the shrinks of B₊ and of B₋, in their colours (the latest {MARKS_SHOWN} of each).",
    "time": "Amortized: each learner's own loop time over all its rounds so far. S-FTRL: O(m·nnz) per "
            "prediction plus an O(m²d) shrink every m+1 rows of a half. FTRL and OGD touch "
            "nnz² entries of Θ: few for one-hot rows, d² for dense ones; but Θ takes (d+1)² memory. "
            "A dashed vertical: that learner stopped.",
}


class FactorizationPage(Page):
    """S-FTRL vs FTRL vs OGD on a ratings or binary stream (logic usable without a browser)."""

    key = "fm"
    title = "Sketched FTRL for FMs"
    intro = ("Watch S-FTRL learn a factorization machine through two FD sketches (B₊ for "
             "over-, B₋ for under-predictions): press **Step** or **Play**, change **m** or "
             "**η** (the FTRL step size), and compare with full-matrix FTRL and OGD.")
    eta_meaning = "FTRL step size"
    uses = ("dataset", "n", "d", "seed", "m", "eta")  # the union; each instance narrows it per task
    hot = ("eta",)
    hot_point = hot_options_point = False  # S-FTRL's eta, OGD's eta_0: from the next row on, no point
    restart = ("fm_task", "fm_users", "fm_items", "fm_noise", "fm_variant")
    hot_options = ("ogd_eta",)

    fm_task = param.Selector(default=SYNTHETIC, objects=list(TASKS), doc=(
        "Ratings (one-hot user + item rows, RMSE) from a seeded synthetic stream or MovieLens-100K, "
        "or binary labels (AUC) on the shared stream. Restarts."))
    fm_users = param.Integer(default=30, bounds=(2, 300), doc="Users of the synthetic ratings. Restarts.")
    fm_items = param.Integer(default=40, bounds=(2, 300), doc="Items of the synthetic ratings. Restarts.")
    fm_noise = param.Number(default=RATING_NOISE, bounds=(0.0, 2.0), step=0.1, doc=(
        "Noise σ of the synthetic ratings (before rounding to 1-5 stars). Restarts."))
    fm_variant = param.Selector(default="fast", objects=["fast", "exact"], doc=(
        "S-FTRL's sketch: fast (Algorithm 5, 2m-row buffers) or exact (Algorithm 4). Restarts."))
    ogd_eta = param.Number(default=0.5, bounds=(1e-4, 100.0), doc=(
        "OGD's step eta_0 in eta_0 / sqrt(t). Applies mid-stream."))
    fm_log_spectra = param.Boolean(default=True, doc="Log scale for the spectra of B+ and B-.")

    # -- the stream ---------------------------------------------------------------------------
    @property
    def ratings(self) -> bool:
        return self.fm_task != BINARY

    def _stream(self):
        """This task's rows and notes (:func:`~explorer.experiments.fm.task_stream`, labels or
        ratings in ``_y``); the settings the task reads follow."""
        X, self._y, notes, reads = task_stream(self.fm_task, self.settings.n, seed=self.settings.seed,
                                               n_users=self.fm_users, n_items=self.fm_items,
                                               shared=self.settings.stream, noise=self.fm_noise)
        self.set_uses((*reads, "m", "eta"))
        return X, notes

    # -- the race ---------------------------------------------------------------------------
    def _build(self, X) -> None:
        learners = make_learners(X.shape[1], m=self.settings.m, eta=self.settings.eta, ogd_eta=self.ogd_eta,
                                 loss="squared" if self.ratings else "logistic",
                                 fast=self.fm_variant == "fast")
        self.race = FactorizationRace(learners, X, self._y)

    def _tune(self) -> None:
        """Today's hot values (S-FTRL's and FTRL's eta, OGD's eta_0) for every learner."""
        self.race.tune(eta=self.settings.eta, ogd_eta=self.ogd_eta)

    def _notes(self) -> list[str]:
        return race_notes(self.race, eta=self.settings.eta, ogd_eta=self.ogd_eta)

    # -- views --------------------------------------------------------------------------------
    def _make_views(self):
        self.plots = {"metric": LivePlot(figures.metric_figure(), over_stream=True),
                      "spectra": LivePlot(figures.spectra_figure()),
                      "balance": LivePlot(figures.balance_figure(), over_stream=True),
                      "time": LivePlot(figures.time_figure(), over_stream=True)}
        # the balance figure's own 50 % line, kept under the marks of the shrinks
        self._balance_guides = self.plots["balance"].figure.layout.shapes
        self.summary = pn.pane.Markdown("", margin=(0, 10))
        self.explain = {name: explanation(EXPLAIN.get(name, "")) for name in self.plots}
        cells = [plot_cell(TITLES[name], self.explain[name], plot) for name, plot in self.plots.items()]
        return pn.Column(self._options(), help_text(GLOSSARY, margin=(0, 10)), self.summary,
                         plot_grid(*cells),
                         sizing_mode="stretch_width")

    def _options(self) -> pn.Row:
        """The page's own controls (↻ restarts the stream, ⚡ applies mid-stream)."""
        task = pn.widgets.Select.from_param(self.param.fm_task, label="task ↻", width=210)
        sliders = {}
        for name, label in (("fm_users", "users ↻"), ("fm_items", "items ↻")):
            bounds = self.param[name].bounds
            sliders[name] = bind(pn.widgets.IntSlider(label=label, start=bounds[0], end=bounds[1],
                                                      value=getattr(self, name), width=150),
                                 self, name, throttled=True)
        bounds = self.param.fm_noise.bounds
        sliders["fm_noise"] = bind(pn.widgets.FloatSlider(label="rating noise σ ↻", start=bounds[0],
                                                          end=bounds[1], step=0.1, value=self.fm_noise,
                                                          width=150), self, "fm_noise", throttled=True)
        variant = pn.widgets.RadioButtonGroup.from_param(self.param.fm_variant,
                                                         width=130, align="end")

        ogd = bind(pn.widgets.Select(label="OGD η₀ ⚡", options=grid_options(OGD_ETAS, self.ogd_eta),
                                     value=float(self.ogd_eta), width=100), self, "ogd_eta",
                   follow=lambda new: {"options": grid_options(OGD_ETAS, new), "value": float(new)})

        def synthetic(task):
            for slider in sliders.values():
                slider.disabled = task != SYNTHETIC
        synthetic(self.fm_task)
        self.param.watch(lambda event: synthetic(event.new), "fm_task")
        log = switch(self.param.fm_log_spectra, "log spectra", align="end", margin=(0, 10, 12, 10))
        self.param.watch(lambda *_: self._update_views(), ["fm_log_spectra"])
        # a FlexBox wraps: a Row's minimum width is the sum of its children's (see cells.row)
        return pn.FlexBox(task, *sliders.values(), labelled("S-FTRL sketch ↻", variant),
                          ogd, log, sizing_mode="stretch_width")

    def _update_views(self) -> None:
        h = self.history
        t = h["t"]
        name = LEARNER_NAMES
        reference = "running mean rating" if self.ratings else "chance (AUC = 0.5)"
        stopped = [Events("stopped", f"{name[key]} stopped", [error.t], figures.LEARNER_COLORS[key])
                   for key, error in self.race.stopped.items()]
        marks = event_marks(*stopped, upto=self.t)
        self.plots["metric"].update(
            {**{name[key]: {"x": t, "y": finite(h[f"metric_{key}"])} for key in LEARNERS},
             figures.BASELINE: {"x": t, "y": finite(h["reference"]), "name": reference}},
            layout={"yaxis": {"title": {"text": "progressive RMSE" if self.ratings else "progressive AUC"}}},
            marks=marks)
        self.explain["metric"].object = EXPLAIN["ratings" if self.ratings else "binary"]
        self.plots["balance"].update({
            "rounds → B₊ (q > 0)": {"x": t, "y": finite(h["share_plus"])},
            "rounds → B₋ (q < 0)": {"x": t, "y": finite(h["share_minus"])},
            "mass → B₊": {"x": t, "y": finite(h["mass_plus"])},
            "mass → B₋": {"x": t, "y": finite(h["mass_minus"])}},
            marks=event_marks(*(Events("shrink", f"B{sub} shrinks", self.race.shrink_times(part),
                                        figures.PART_COLORS[part]) for part, sub in (("+", "₊"), ("-", "₋"))),
                               *stopped, upto=self.t, keep=self._balance_guides))
        self.plots["time"].update({name[key]: {"x": t, "y": finite(h[f"time_{key}"])}
                                   for key in LEARNERS}, marks=marks)
        self.plots["spectra"].update(*figures.spectra_update(self.race.spectra(self.settings.m),
                                                             log=self.fm_log_spectra))
        self.summary.object = (race_summary(self.race, self.history.last()) + "\n\n"
                               + race_watch(self.race, self.history))


# -- what the page says (the notes under its title, the summary line) ---------------------------
def race_notes(race, *, eta: float, ogd_eta: float) -> list[str]:
    """What the curves of ``race`` need said: S-FTRL's ``m >= d + 2`` makes it FTRL, no exact
    spectra past :data:`~explorer.experiments.fm.ORACLE_MAX`, and who diverged (with the page's ``eta`` / ``ogd_eta``)."""
    d, m = race.X.shape[1], race.learners["sftrl"].m
    notes = []
    if m >= d + 2:
        notes.append(f"m = {m} ≥ d + 2 = {d + 2}: each half of the sketch has room for every "
                     "direction, nothing is shrunk and S-FTRL equals FTRL (their curves "
                     "coincide). Choose a smaller m to see the sketch at work.")
    if not race.oracle:
        notes.append(f"d + 1 = {d + 1} > {ORACLE_MAX}: the exact spectra (grey) are not "
                     "computed; the bars are S-FTRL's own.")
    if eta > DEFAULT_ETA and not {"sftrl", "ftrl"} & set(race.stopped):
        notes.append(f"η = {eta:g} is above the default {DEFAULT_ETA:g}: FTRL and S-FTRL play "
                     "Θ = −η · (sum of past gradients), and a large η can make them diverge. If "
                     f"one does (|z| > {DIVERGED:g}) it stops and a note here says at which round.")
    for key, error in race.stopped.items():
        value = ogd_eta if key == "ogd" else eta
        notes.append(f"{LEARNER_NAMES[key]} diverged at round {error.t} with "
                     f"{'η₀' if key == 'ogd' else 'η'} = {value:g} (|z| > {DIVERGED:g}) and "
                     "stopped: choose a smaller one and press Reset.")
    return notes


def race_summary(race, point: Mapping[str, float]) -> str:
    """The latest ``race.measure()`` ``point`` as one line of Markdown (metrics, sign balance,
    the sketch's ranks, last shrink and total shrink, time per round, memory)."""
    p, sftrl = point, race.learners["sftrl"]
    values = " · ".join(f"{label} {_number(p[f'metric_{key}'])}" for key, label in
                        (("sftrl", "S-FTRL"), ("ftrl", "FTRL"), ("ogd", "OGD")))
    times = ", ".join(f"{p[f'time_{key}']:.0f}" if np.isfinite(p[f"time_{key}"]) else "–"
                      for key in LEARNERS)
    share = (f"q > 0 on {p['share_plus']:.0%} of rounds" if np.isfinite(p["share_plus"])
             else "no gradient yet")
    shrink = race.last_shrink
    last = (f"last shrink: B{'₊' if shrink.part == '+' else '₋'} at t = {shrink.t}, "
            f"δ = {shrink.delta:.3g}" if shrink is not None else "no shrink yet")
    capacity = sftrl.sketch.positive.capacity
    memory = 2 * capacity * (sftrl.d + 1)
    return (f"**Latest:** t = {race.t} · {'RMSE' if race.ratings else 'AUC'} {values} · {share} · "
            f"rank B₊ {int(p['rank_plus'])}, B₋ {int(p['rank_minus'])} of at most {capacity} rows "
            f"each (m = {sftrl.m}) · {last}, "
            f"Δ₊ + Δ₋ = {p['delta_plus'] + p['delta_minus']:.3g} · µs/round (S-FTRL, FTRL, OGD) "
            f"{times} · memory {memory:,} floats for the sketch, {(sftrl.d + 1) ** 2:,} for a full Θ")


def _number(value: float) -> str:
    return f"{value:.4g}" if np.isfinite(value) else "–"


def race_watch(race, history) -> str:
    """What to look for, from the recorded curves in ``history`` (the page's): whether and
    since which recorded round S-FTRL's progressive error beats the reference (the running
    mean rating, or chance) (:func:`~explorer.run.lead_since`), and how the
    three learners rank now (the paper's Table 2 has S-FTRL first, then FTRL, then OGD)."""
    head = "**What to look for:** "
    what, ref = ("RMSE", "the running mean rating's") if race.ratings else ("AUC", "chance's (0.5)")
    if race.t == 0:
        return (head + f"whether S-FTRL's progressive {what} gets better than {ref} (dashed), "
                "from which round on, and whether S-FTRL stays ahead of full FTRL and OGD, as "
                "in the paper's Table 2. Press Step or Play.")
    if "sftrl" in race.stopped:
        return head + "S-FTRL stopped (the notes above say when): choose a smaller η and press Reset."
    sign = 1.0 if race.ratings else -1.0  # lower RMSE is better, higher AUC
    t, ours, theirs = history["t"], sign * history["metric_sftrl"], sign * history["reference"]
    since = lead_since(t, ours, theirs)
    mine, other = f"{sign * ours[-1]:.3g}", f"{sign * theirs[-1]:.3g}"
    if since is not None:
        text = (f"S-FTRL's progressive {what} has been better than {ref} since round {since} "
                f"({mine} against {other}): "
                + ("it learned more than the average rating." if race.ratings else
                   "it ranks the labels better than a coin."))
    else:
        text = (f"S-FTRL's progressive {what} is not better than {ref} ({mine} against {other}): "
                "it does not beat the reference in this run so far.")
        if race.ratings:
            text += (" Every learner starts at Θ = 0, predicting 0 stars, and its first rounds "
                     "stay in the progressive RMSE; it overtakes the mean only once what it "
                     f"learned of each user and item makes up for them ({_per_key(race)} so far).")
    alive = {key: sign * history[f"metric_{key}"][-1] for key in LEARNERS if key not in race.stopped}
    alive = {key: value for key, value in alive.items() if np.isfinite(value)}
    if len(alive) > 1:
        order = sorted(alive, key=alive.get)
        ranking = ", ".join(f"{LEARNER_NAMES[key]} {sign * alive[key]:.3g}" for key in order)
        text += (f" Now, best first: {ranking}"
                 + (" (the paper's order)." if order == [k for k in LEARNERS if k in alive] else "."))
    return head + text


def _per_key(race) -> str:
    """Ratings per user and per item so far (one-hot rows: two non-zeros each)."""
    import scipy.sparse

    if not scipy.sparse.issparse(race.X) or race.t == 0:
        return f"{race.t} rows"
    columns = race.X[:race.t].indices.reshape(-1, 2)
    users, items = (np.unique(columns[:, j]).size for j in (0, 1))
    return (f"{race.t} ratings, {race.t / users:.1f} per user and {race.t / items:.1f} per item "
            "on average")
