r"""The sketched online Newton page: RFD-SON, FD-SON, RP-SON, FULL-ON and ADAGRAD racing.

Five learners of docs/algorithms.md section 3 (Luo et al. 2017, Algorithms 5-6; Luo et al.
2016; Luo et al. JMLR 2019) read the same rows ``x_t`` of the shared stream and the same
labels ``y_t`` in {-1, +1}: the sketched online Newton step with an RFD sketch
(:math:`H = \alpha I + B^T B`, :math:`\alpha = \alpha_0 + \Delta/2`), an FD sketch
(:math:`\alpha_0 I + B^T B`) and a random projection (RP-SON), the exact online Newton
step FULL-ON (:math:`H = \alpha_0 I + \sum_s (\mu + \eta) g_s g_s^T`, O(d^2) a row) and
diagonal ADAGRAD (Duchi et al. 2011, the papers' first-order baseline).

This module is the view: the race, its comparator ``w*`` (the best fixed linear predictor
in hindsight), the online accuracy, the condition numbers, alpha and the exact spectra are
:class:`explorer.experiments.newton.NewtonRace`, which the page steps, measures (one
history point per step) and snapshots for Back; what the page says about it is
:func:`notes`, :func:`summary` and :func:`watch`, here. The labels are ``sign(w^T x)``,
each flipped with probability ``label_noise``, for a direction ``w`` drawn from the seed
(:func:`~explorer.experiments.newton.planted_labels`), so a link reproduces them: by
default (``label_space="whitened"``) a random direction of the whitened rows, so that the
faint directions of the stream weigh as much in the label as the strong ones, the
ill-conditioned problem of the papers' data sets where curvature pays; ``"raw"``, a random
unit vector, lets the label ride on the strong directions. :func:`watch` says, from the
recorded totals, whether and since which row RFD-SON leads ADAGRAD and FD-SON.

Shared settings: the stream, seed, m, alpha0 and eta. eta (the extra curvature weight
:math:`\mu + \eta`) and alpha0 are hot: each learner continues through its
``with_params`` (for FULL-ON, :math:`H^{-1}` is re-inverted with the new alpha0 in O(d^3)).
Page options: ``son_loss`` (the loss), ``slab`` (C), ``learners``, ``fast``,
``label_noise`` and ``label_space`` restart the race; ``eta_schedule`` and ``adagrad_eta`` are hot;
``loss_view`` and ``spectrum_learner`` only change what is drawn.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import panel as pn
import param

from ...experiments.newton import (KEYS, LABEL_SPACES, LEARNERS, ORACLE_MAX_D, SKETCHED, NewtonRace,
                                   faint_share, make_learners, planted_labels)
from ...run import lead_since
from ...streams import binary_labels
from ..controls import log_values
from ..cells import help_text, labelled, plot_cell, plot_grid, row, switch
from ..live import LivePlot, finite
from ...plots import MARKS_SHOWN, METHOD_COLORS, Events, event_marks
from ..page import Page
from . import newton_figures as figures
from .newton_figures import ALPHA0_LINE, MAJORITY, STAR

__all__ = ["NewtonPage", "notes", "summary", "watch"]

TITLES = {"loss": "Regret against the best fixed predictor", "accuracy": "Online accuracy",
          "condition": "Condition number of each preconditioner H",
          "alpha": "α over time", "spectrum": "Spectrum of H"}
EXPLAIN = {
    "loss": "Cumulative loss minus that of w*, the best fixed linear predictor in hindsight "
            "(fit on the whole stream, predictions clipped to [−C, C] as the learners' are, C the slab). "
            "Flat means as good as w*; the online Newton step's guarantee is O(d log T). "
            "A dashed vertical in a learner's colour: it diverged there and stopped.",
    "accuracy": "Fraction of rows whose label the learner got right before seeing it "
                "(sign of its prediction). Grey: w* (dashed) and always guessing the "
                "majority class (dotted). A dashed vertical: that learner stopped.",
    "condition": "κ(H) = λ_max / λ_min of the matrix each learner inverts. FD-SON's "
                 "α₀I + BᵀB has κ ≈ σ₁²/α₀, huge when α₀ is small; RFD-SON's α lifts the "
                 "floor (Theorem 4). ∞ is not drawn. A dashed vertical: that learner stopped.",
    "alpha": "Every FD shrink adds δ/2 to RFD-SON's α: the curvature FD throws away, given "
             "back to all directions. FD-SON, RP-SON and FULL-ON keep α₀ (dashed). Dotted red "
             f"verticals: RFD-SON's shrinks (the latest {MARKS_SHOWN}); dashed, in a learner's colour: it stopped.",
    "spectrum": "Bars: eigenvalues of the chosen learner's H along its sketch directions; "
                "every other direction gets α (dashed). Grey: the exact eigenvalues of "
                "α₀I + Σ (μ+η) g gᵀ over the same learner's gradients.",
}


class NewtonPage(Page):
    """The sketched online Newton family racing on the shared stream (usable without a browser)."""

    key = "newton"
    title = "Sketched online Newton"
    intro = ("Sketched Newton learners race on one labelled stream: watch regret, accuracy and "
             "the conditioning of each preconditioner as **m**, **α₀** and **η** (here SON's "
             "curvature weight) change. A Newton step scales each direction by its curvature, "
             "so it learns the stream's faint directions as fast as its strong ones, where a "
             "first-order step (ADAGRAD) crawls: it pays when the labels lean on the faint "
             "directions (labels 'whitened'). RFD-SON's α gives every direction outside its "
             "sketch a curvature that grows with the stream; FD-SON's stays α₀.")
    eta_meaning = "SON curvature weight"
    uses = ("dataset", "n", "d", "seed", "m", "alpha0", "eta")
    hot = ("alpha0", "eta")
    restart = ("son_loss", "slab", "learners", "fast", "label_noise", "label_space")
    hot_options = ("eta_schedule", "adagrad_eta")
    hot_options_point = False  # the learners take them from the next row on; no point

    son_loss = param.Selector(default="squared", objects=["squared", "logistic"],
                          doc="Loss l(wᵀx, y) of every learner (restarts).")
    slab = param.Number(default=1.0, bounds=(0.1, 100.0),
                        doc="The slab |wᵀx| ≤ C: every SON learner's prediction is clipped to "
                            "[-C, C] (docs/algorithms.md section 3). With the logistic loss a "
                            "wider slab lets the loss's curvature act (lesson 3) (restarts).")
    learners = param.ListSelector(default=list(LEARNERS), objects=list(LEARNERS),
                                  doc="Which learners race (restarts).")
    fast = param.Boolean(default=True, doc="Fast (doubling-space) FD/RFD sketches, Algorithm 6 "
                                           "(restarts).")
    label_noise = param.Number(default=0.05, bounds=(0.0, 0.45), step=0.01,
                               doc="Probability that a label is flipped (restarts).")
    label_space = param.Selector(default="whitened", objects=list(LABEL_SPACES), doc=(
        "Where the labels' random direction is drawn: in the whitened rows (every direction of "
        "the stream weighs the same, the faint ones too) or the raw ones (restarts)."))
    eta_schedule = param.Selector(default="constant", objects=["constant", "inverse_t"],
                                  doc="η constant or η/t, the papers' O(1/t) option (hot).")
    adagrad_eta = param.Number(default=0.1, bounds=(1e-4, 10.0), step=0.05,
                               doc="ADAGRAD's own step size (hot; the shared η weighs SON's curvature).")
    loss_view = param.Selector(default="regret", objects=["regret", "average loss"],
                               doc="What the first plot shows.")
    spectrum_learner = param.Selector(default="RFD-SON", objects=list(SKETCHED),
                                 doc="Which sketched learner's H the spectrum shows.")

    # -- algorithms: explorer.experiments.newton ------------------------------------------------
    def _build(self, X: np.ndarray) -> None:
        s = self.settings
        labels = s.labels()  # an upload's own labels, else planted ones
        self._faint = None
        if labels is None:
            y, w = planted_labels(X, flip=self.label_noise, seed=s.seed, space=self.label_space)
            self._faint = faint_share(X, w, min(s.m, X.shape[1]))
        else:
            y, _ = binary_labels(labels)
        learners = make_learners(self.learners, X.shape[1], m=s.m, alpha0=s.alpha0, eta=s.eta,
                                 C=self.slab, fast=self.fast, loss=self.son_loss,
                                 eta_schedule=self.eta_schedule, seed=s.seed,
                                 adagrad_eta=self.adagrad_eta)
        self.race = NewtonRace(learners, X, y, loss=self.son_loss, C=self.slab)

    def _tune(self) -> None:
        """Today's hot values for every learner (those that already have them are kept)."""
        s = self.settings
        self.race.tune(eta=s.eta, alpha0=s.alpha0, eta_schedule=self.eta_schedule,
                       adagrad_eta=self.adagrad_eta)

    def apply_hot(self, name: str) -> None:
        if name == "alpha0" and "FULL-ON" in self.learners and (
                ("FULL-ON" in self.race.learners) != (self.settings.alpha0 > 0)):
            return self.reset()  # FULL-ON joins or leaves the race (it needs alpha0 > 0)
        super().apply_hot(name)

    def _notes(self) -> list[str]:
        s = self.settings
        labels = s.labels()
        uploaded = None if labels is None else (
            f"the uploaded file's ({binary_labels(labels)[1]}; label noise does not apply)")
        return notes(self.race, selected=self.learners, d=self._X.shape[1], m=s.m, alpha0=s.alpha0,
                     seed=s.seed, label_noise=self.label_noise, C=self.slab, loss=self.son_loss,
                     adagrad_eta=self.adagrad_eta, labels=uploaded, label_space=self.label_space,
                     faint=self._faint)

    def _columns(self) -> dict[str, float]:
        # alpha0 too: a change mid-stream is drawn as a step where it happened
        return {"alpha0": self.settings.alpha0}

    # -- views --------------------------------------------------------------------------------
    def _make_views(self):
        self.plots = {"loss": LivePlot(figures.loss_figure(), over_stream=True),
                      "accuracy": LivePlot(figures.accuracy_figure(), over_stream=True),
                      "condition": LivePlot(figures.condition_figure(), over_stream=True),
                      "alpha": LivePlot(figures.alpha_figure(), over_stream=True),
                      "spectrum": LivePlot(figures.spectrum_figure())}
        self.summary = pn.pane.Markdown("", margin=(0, 10))
        p = self.param
        options = row(
            labelled("loss ↻", pn.widgets.RadioButtonGroup.from_param(p.son_loss, width=170)),
            pn.widgets.FloatInput.from_param(p.slab, name="slab C ↻", width=90),
            labelled("learners ↻", pn.widgets.CheckButtonGroup.from_param(p.learners)),
            switch(p.fast, "fast sketches ↻", align="end"),
            pn.widgets.FloatSlider.from_param(p.label_noise, name="label noise ↻", width=150),
            labelled("labels ↻", pn.widgets.RadioButtonGroup.from_param(p.label_space, width=170)),
            labelled("η schedule ⚡", pn.widgets.RadioButtonGroup.from_param(p.eta_schedule, width=170)),
            pn.widgets.FloatInput.from_param(p.adagrad_eta, name="ADAGRAD η (step size) ⚡", width=150))
        legend = help_text("Options of this page: ⚡ applies mid-stream, ↻ restarts the "
                           "race (as in the sidebar).", margin=(0, 10))
        self.param.watch(lambda *_: self._update_views(), ["loss_view", "spectrum_learner"])
        views = {"loss": pn.widgets.RadioButtonGroup.from_param(p.loss_view, name="", width=200,
                                                               align="center"),
                 "spectrum": pn.widgets.RadioButtonGroup.from_param(p.spectrum_learner, name="",
                                                                   width=260, align="center")}
        cells = {name: plot_cell(TITLES[name], EXPLAIN[name], plot, *([views[name]] if name in views else []))
                 for name, plot in self.plots.items()}
        self._loss_heading = cells["loss"][0][0]
        return pn.Column(self.summary, options, legend, plot_grid(*cells.values()),
                         sizing_mode="stretch_width")

    def _update_views(self) -> None:
        h = self.history
        t = h["t"]
        average = self.loss_view == "average loss"
        scale = np.where(t > 0, t, np.nan)
        lines = {"loss": {}, "accuracy": {}, "condition": {}}
        racing = self.race.learners
        for name in LEARNERS:
            key, shown = KEYS[name], name in racing
            y_loss = h[f"loss_{key}"] / scale if average else h[f"regret_{key}"]
            for plot, y in (("loss", y_loss), ("accuracy", h[f"accuracy_{key}"]),
                            ("condition", finite(h[f"kappa_{key}"]))):
                lines[plot][name] = {"x": t, "y": finite(y) if shown else [], "visible": shown}
        lines["loss"][STAR] = {"x": t, "y": h["loss_star"] / scale if average else np.zeros(t.size)}
        lines["accuracy"][STAR] = {"x": t, "y": h["accuracy_star"]}
        lines["accuracy"][MAJORITY] = {"x": t, "y": h["accuracy_majority"]}
        title = "average loss so far" if average else "regret"
        stopped = [Events("stopped", f"{name} stopped", [error.t], METHOD_COLORS[name])
                   for name, error in self.race.stopped.items()]
        marks = event_marks(*stopped, upto=self.t)
        self.plots["loss"].update(lines["loss"], layout={"yaxis": {"title": {"text": title}}}, marks=marks)
        self._loss_heading.object = "#### " + ("Average loss so far" if average else TITLES["loss"])
        self.plots["accuracy"].update(lines["accuracy"], marks=marks)
        self.plots["condition"].update(lines["condition"], marks=marks)
        shrinks = [Events("shrink", "RFD-SON shrinks", self.race.shrink_times("RFD-SON"), METHOD_COLORS["RFD-SON"])]
        self.plots["alpha"].update({
            "RFD-SON": {"x": t, "y": log_values(h["alpha_rfd"]), "visible": "RFD-SON" in racing},
            ALPHA0_LINE: {"x": t, "y": log_values(h["alpha0"])}},
            marks=event_marks(*shrinks, *stopped, upto=self.t))
        self._update_spectrum()
        self.summary.object = self._summary()

    def _update_spectrum(self) -> None:
        size = min(self._X.shape[1], self.settings.m + 6)
        shown = self.race.spectrum_bars(self.spectrum_learner, size)
        if shown is None:
            self.plots["spectrum"].update({key: {"x": [], "y": []} for key in ("sketch", "exact", "alpha")})
            return
        name, bars, exact, alpha = shown
        x = np.arange(1, size + 1)
        self.plots["spectrum"].update({
            "sketch": {"x": x, "y": log_values(bars), "name": f"{name}: σᵢ²(B) + α",
                       "marker": {"color": METHOD_COLORS[name]}},
            "exact": {"x": x, "y": log_values(exact) if exact is not None else []},
            "alpha": {"x": [0.5, size + 0.5], "y": log_values(np.full(2, alpha))}},
            layout={"xaxis": {"dtick": 1 if size <= 20 else 5}})

    def _summary(self) -> str:
        """The latest step's record as one line of text."""
        return (summary(self.race, self.history.last(), self.n_rows) + "\n\n"
                + watch(self.race, self.history, faint=self._faint, label_space=self.label_space,
                        k=min(self.settings.m, self._X.shape[1])))


# -- what the page says (the notes under its title, the summary line) ---------------------------
def notes(race: NewtonRace, *, selected, d: int, m: int, alpha0: float, seed: int, label_noise: float,
          C: float, loss: str, adagrad_eta: float, labels: str | None = None,
          label_space: str = "raw", faint: float | None = None) -> list[str]:
    """The notes under the page's title for ``race`` on these settings (``selected``: the
    ticked learners, FULL-ON among them even when ``alpha0 = 0`` keeps it out of the race):
    the labels (``labels`` says where they came from when not planted from ``seed`` in
    ``label_space``; ``faint``: :func:`~explorer.experiments.newton.faint_share` of their
    direction, top ``m``) and slab, then each caveat that applies (logistic ADAGRAD leaving
    the slab, no learner, ``m >= d``, ``alpha0 = 0``, no exact spectrum, a learner that diverged)."""
    if label_space == "whitened":
        planted = (f"y = sign(vᵀS^−½x) for a random unit vector v (seed {seed}), S = XᵀX/n the "
                   f"rows' second moment: every principal direction of the stream weighs the same "
                   f"in the label, the faint ones too; {100 * label_noise:g}% of them flipped")
    else:
        planted = (f"y = sign(vᵀx) for a random unit vector v (seed {seed}), "
                   f"{100 * label_noise:g}% of them flipped")
    if labels is None and faint is not None:
        planted += (f". {100 * faint:.0f}% of the label's signal (the mean square of the "
                    f"planted wᵀx) lies outside the stream's top {min(m, d)} principal directions")
    out = [(f"Labels: {labels or planted}. The learners play "
            f"clip(wᵀx, −{C:g}, {C:g}); "
            f"ADAGRAD uses its own step size η = {adagrad_eta:g} (the shared η is "
            f"SON's curvature weight μ + η).")]
    if loss == "logistic" and "ADAGRAD" in race.learners:
        out.append(f"Logistic loss: the SON learners stay in the slab |wᵀx| ≤ {C:g} "
                   f"(loss ≥ log(1 + e^−{C:g}) ≈ {np.log1p(np.exp(-C)):.2g} "
                   f"a row), as w* does here; ADAGRAD is not confined, so its regret can go "
                   f"below 0.")

    if not race.learners:
        out.append("No learner is selected: tick at least one above the plots.")
    if m >= d:
        out.append(f"m = {m} ≥ d = {d}: the sketches keep every direction, so FD-SON "
                   f"is FULL-ON and RFD-SON's α never grows. Choose m < d.")
    if alpha0 == 0:
        out.append("α₀ = 0 (the JMLR 'hyperparameter-free' setting): FD-SON and RP-SON "
                   "use the pseudo-inverse, κ(H) = ∞ is not drawn"
                   + (", and FULL-ON sits out (H₀ = α₀I must be invertible)."
                      if "FULL-ON" in selected else "."))
    if d > ORACLE_MAX_D:
        out.append(f"d = {d} > {ORACLE_MAX_D}: the exact spectrum (grey) is not computed.")
    for name, t in race.diverged.items():
        reason = str(race.stopped[name]).rstrip(".") if name in race.stopped else ""
        out.append(f"{name} left the race at t = {t}" + (f" ({reason})" if reason else "")
                   + (": lower its η." if name == "ADAGRAD" else "."))
    return out


def summary(race: NewtonRace, point: Mapping[str, float], n_rows: int) -> str:
    """The page's one line about the latest :meth:`NewtonRace.measure` ``point`` (at round
    ``race.t`` of ``n_rows``): each learner's average loss and accuracy, the leader, and
    RFD-SON's alpha with its last shrink."""
    t, racing, diverged = race.t, race.learners, race.diverged
    if not racing:
        return "**Latest:** no learner selected."
    if t == 0:
        return (f"**Latest:** t = 0, {len(racing)} learners ready · w* has average loss "
                f"{race.hindsight.loss[-1] / n_rows:.3g} on the whole stream")
    parts = [f"{name} stopped" if name in diverged else
             f"{name} {point[f'loss_{KEYS[name]}'] / t:.3g} ({100 * point[f'accuracy_{KEYS[name]}']:.0f}%)"
             for name in racing]
    alive = {n: point[f"loss_{KEYS[n]}"] for n in racing if n not in diverged}
    best = f" · leader: **{min(alive, key=alive.get)}**" if alive else ""
    shrink = ""
    if "RFD-SON" in racing:
        last = race.last_shrink("RFD-SON")
        shrink = (f" · RFD-SON α = {racing['RFD-SON'].alpha:.3g}"
                  + (f" (last shrink at t = {last[0]}, δ = {last[1]:.3g})" if last
                     else " (no shrink yet)"))
    return "**Latest:** average loss (accuracy): " + ", ".join(parts) + best + shrink


def watch(race: NewtonRace, history, *, faint: float | None = None, label_space: str = "raw",
          k: int = 10) -> str:
    """What to look for, from the recorded totals in ``history`` (the page's, one point per
    grid row): whether RFD-SON's total loss is below ADAGRAD's and FD-SON's, since which
    recorded row (:func:`~explorer.run.lead_since`), and when RFD-SON is not
    ahead of ADAGRAD, that the papers' effect does not show in this run (with ``faint``, the
    planted labels' share outside the top ``k`` directions, when raw labels leave it small)."""
    racing, diverged = race.learners, race.diverged
    head = "**What to look for:** "
    if "RFD-SON" not in racing or not {"ADAGRAD", "FD-SON"} & set(racing):
        return head + "tick RFD-SON and ADAGRAD or FD-SON to race them."
    if "RFD-SON" in diverged:
        return head + "RFD-SON left the race (the notes above say when and why)."
    if race.t == 0:
        return (head + "whether RFD-SON's total loss falls below ADAGRAD's and FD-SON's, and "
                "from which row on. Press Step or Play.")
    t, ours, parts = history["t"], history["loss_rfd"], []
    ahead_of_adagrad = None
    for rival in ("ADAGRAD", "FD-SON"):
        if rival not in racing or rival in diverged:
            continue
        theirs = history[f"loss_{KEYS[rival]}"]
        since = lead_since(t, ours, theirs)
        mine, other = f"{ours[-1] / race.t:.3g}", f"{theirs[-1] / race.t:.3g}"
        parts.append(f"RFD-SON leads {rival} since row {since} (average loss {mine} against {other})"
                     if since is not None else
                     f"{rival} is ahead of RFD-SON (average loss {other} against RFD-SON's {mine})")
        if rival == "ADAGRAD":
            ahead_of_adagrad = since is not None
    text = head + "; ".join(parts) + "."
    if ahead_of_adagrad:
        text += " The papers' effect: the sketched second-order learner beats the first-order one."
    elif ahead_of_adagrad is False:
        text += (" The papers' effect (the sketched second-order learner ahead of the first-order "
                 "one) does not show in this run so far.")
        if label_space == "raw" and faint is not None and faint < 0.5:
            text += (f" Only {100 * faint:.0f}% of the raw labels' signal lies outside the "
                     f"stream's top {k} directions, which a first-order step finds as well: "
                     "try labels 'whitened'.")
    return text
