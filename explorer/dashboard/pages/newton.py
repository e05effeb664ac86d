r"""The sketched online Newton page: RFD-SON, FD-SON, RP-SON, FULL-ON and ADAGRAD racing.

Five learners of docs/algorithms.md section 3 (Luo et al. 2017, Algorithms 5-6; Luo et al.
2016; Luo et al. JMLR 2019) read the same rows ``x_t`` of the shared stream and the same
labels ``y_t`` in {-1, +1}: the sketched online Newton step with an RFD sketch
(:math:`H = \alpha I + B^T B`, :math:`\alpha = \alpha_0 + \Delta/2`), an FD sketch
(:math:`\alpha_0 I + B^T B`) and a random projection (RP-SON), the exact online Newton
step FULL-ON (:math:`H = \alpha_0 I + \sum_s (\mu + \eta) g_s g_s^T`, O(d^2) a row) and
diagonal ADAGRAD (Duchi et al. 2011, the papers' first-order baseline), all through
:class:`explorer.newton.SketchedOnlineNewton` and :class:`explorer.adagrad.AdaGrad`.

The labels are ``sign(w_*^T x)`` for a random unit ``w_*`` drawn from the seed, each
flipped with probability ``label_noise`` (:func:`explorer.streams.linear_classification_labels`),
so a link reproduces them. Every step the page records, per learner: the cumulative loss
and the regret against ``w*``, the best fixed linear predictor in hindsight (fit once per
stream on all rows; its predictions clipped to [-C, C] like the learners'); the
online accuracy (the sign of the prediction made before the label is seen); the
condition number of ``H`` (``condition_number()``: O(m^3) for the sketches) and alpha.
The spectrum shows the eigenvalues of the chosen sketched learner's ``H`` beside the
exact ones of the matrix it sketches, :math:`\alpha_0 I + \sum_s (\mu + \eta_s) g_s g_s^T`
over its own gradients (kept as a running d x d sum only while d <= ``ORACLE_MAX_D``).

Shared settings: the stream, seed, m, alpha0 and eta. eta (the extra curvature weight
:math:`\mu + \eta`) and alpha0 are hot: a learner continues from its ``state_dict`` with
the new value (for FULL-ON, :math:`H^{-1}` is re-inverted with the new alpha0 in O(d^3)).
Page options: ``son_loss`` (the loss), ``slab`` (C), ``learners``, ``fast`` and ``label_noise``
restart the race;
``eta_schedule`` and ``adagrad_eta`` are hot; ``loss_view`` and ``spectrum_learner`` only
change what is drawn.
"""

from __future__ import annotations

import numpy as np
import panel as pn
import param
import scipy.linalg
import scipy.optimize

from ...adagrad import AdaGrad
from ...hooks import Recorder
from ...losses import get_loss
from ...newton import SketchedOnlineNewton
from ...streams import linear_classification_labels
from ..live import LivePlot, finite, plot_cell
from ..page import Page
from . import newton_figures as figures
from .newton_figures import ALPHA0_LINE, LEARNERS, MAJORITY, STAR

__all__ = ["KEYS", "LEARNERS", "SKETCHED", "NewtonPage", "best_fixed_predictor"]

SKETCH_OF = {"RFD-SON": "rfd", "FD-SON": "fd", "RP-SON": "rp", "FULL-ON": "full"}
SKETCHED = ("RFD-SON", "FD-SON", "RP-SON")
KEYS = {"RFD-SON": "rfd", "FD-SON": "fd", "RP-SON": "rp", "FULL-ON": "full", "ADAGRAD": "adagrad"}
"""The short name of each learner in the history columns (``regret_rfd``, ``kappa_full``...)."""
ORACLE_MAX_D = 100
"""Above this d the exact spectrum (a d x d running sum per sketched learner) is not kept."""
HOT = ("eta_schedule", "adagrad_eta")
TITLES = {"loss": "Regret against the best fixed predictor", "accuracy": "Online accuracy",
          "condition": "Condition number of each preconditioner H",
          "alpha": "α over time", "spectrum": "Spectrum of H"}
EXPLAIN = {
    "loss": "Cumulative loss minus that of w*, the best fixed linear predictor in hindsight "
            "(fit on the whole stream, predictions clipped to [−C, C] as the learners' are, C the slab). "
            "Flat means as good as w*; the online Newton step's guarantee is O(d log T).",
    "accuracy": "Fraction of rows whose label the learner got right before seeing it "
                "(sign of its prediction). Grey: w* (dashed) and always guessing the "
                "majority class (dotted).",
    "condition": "κ(H) = λ_max / λ_min of the matrix each learner inverts. FD-SON's "
                 "α₀I + BᵀB has κ ≈ σ₁²/α₀, huge when α₀ is small; RFD-SON's α lifts the "
                 "floor (Theorem 4). ∞ is not drawn.",
    "alpha": "Every FD shrink adds δ/2 to RFD-SON's α: the curvature FD throws away, given "
             "back to all directions. FD-SON, RP-SON and FULL-ON keep α₀ (dashed).",
    "spectrum": "Bars: eigenvalues of the chosen learner's H along its sketch directions; "
                "every other direction gets α (dashed). Grey: the exact eigenvalues of "
                "α₀I + Σ (μ+η) g gᵀ over the same learner's gradients.",
}


class NewtonPage(Page):
    """The sketched online Newton family racing on the shared stream (usable without a browser)."""

    key = "newton"
    title = "Sketched online Newton"
    intro = ("Sketched Newton learners race on one labelled stream: watch regret, accuracy and "
             "the conditioning of each preconditioner as **m**, **α₀** and **η** change.")
    uses = ("dataset", "n", "d", "seed", "m", "alpha0", "eta")
    hot = ("alpha0", "eta")
    restart = ("son_loss", "slab", "learners", "fast", "label_noise")

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
    eta_schedule = param.Selector(default="constant", objects=["constant", "inverse_t"],
                                  doc="η constant or η/t, the papers' O(1/t) option (hot).")
    adagrad_eta = param.Number(default=0.1, bounds=(1e-4, 10.0), step=0.05,
                               doc="ADAGRAD's own step size (hot; the shared η weighs SON's curvature).")
    loss_view = param.Selector(default="regret", objects=["regret", "average loss"],
                               doc="What the first plot shows.")
    spectrum_learner = param.Selector(default="RFD-SON", objects=list(SKETCHED),
                                 doc="Which sketched learner's H the spectrum shows.")

    def __init__(self, settings, **params):
        super().__init__(settings, **params)
        self.param.watch(self._hot_option, list(HOT))

    # -- algorithms -----------------------------------------------------------------------
    def _build(self, X: np.ndarray) -> None:
        d = X.shape[1]
        self.y, _ = linear_classification_labels(X, flip=self.label_noise, seed=self.settings.seed)
        self._loss = get_loss(self.son_loss)
        w_star = best_fixed_predictor(X, self.y, self.son_loss)
        z_star = np.clip(X @ w_star, -self.slab, self.slab)
        self._star_loss = np.cumsum(self._loss.value(z_star, self.y))
        self._star_correct = np.cumsum(z_star * self.y > 0)
        self._majority = np.maximum(np.cumsum(self.y > 0), np.cumsum(self.y < 0))
        self.active = [name for name in LEARNERS if name in self.learners
                       and not (name == "FULL-ON" and self.settings.alpha0 == 0)]
        self.models = {name: self._make(name, d) for name in self.active}
        self.recorders = {name: Recorder(kinds=("shrink",), limit=1) for name in self.active
                          if name in ("RFD-SON", "FD-SON")}
        for name, recorder in self.recorders.items():
            self.models[name].add_hook(recorder)
        self.cum_loss = {name: 0.0 for name in self.active}
        self.correct = {name: 0 for name in self.active}
        self.diverged: dict[str, int] = {}
        self.grams = {name: np.zeros((d, d)) for name in self.active
                      if name in SKETCHED and d <= ORACLE_MAX_D}

    def _make(self, name: str, d: int):
        s = self.settings
        if name == "ADAGRAD":
            return AdaGrad(d, variant="diag", method="cmd", eta=self.adagrad_eta, loss=self.son_loss)
        return SketchedOnlineNewton(d, sketch=SKETCH_OF[name], m=s.m, alpha0=s.alpha0, eta=s.eta,
                                    C=self.slab, fast=self.fast, loss=self.son_loss,
                                    eta_schedule=self.eta_schedule, seed=s.seed)

    def _advance(self, rows: np.ndarray) -> None:
        start, diverged = self.t, False
        for i, x in enumerate(rows):
            y = self.y[start + i]
            for name, model in self.models.items():
                if name in self.diverged:
                    continue
                prediction = model.predict(x)
                gram = self.grams.get(name)
                if gram is not None:  # the row the sketch receives: sqrt(mu + eta_t) g_t
                    slope = float(self._loss.derivative(prediction, y))
                    if slope != 0.0:
                        eta_t = model.eta / (model.t + 1) if model.eta_schedule == "inverse_t" else model.eta
                        gram += ((model.mu + eta_t) * slope ** 2) * np.outer(x, x)
                try:
                    loss = model.learn(x, y)
                except ValueError:  # ADAGRAD with too large a step overflows: it leaves the race
                    loss = np.inf
                if not np.isfinite(loss):
                    self.diverged[name], diverged = start + i + 1, True
                    continue
                self.cum_loss[name] += loss
                self.correct[name] += prediction * y > 0
        if diverged:
            self.update_notes()

    def _hot_option(self, *events) -> None:
        for model in self.models.values():
            if isinstance(model, AdaGrad):
                model.eta = self.adagrad_eta
            else:
                model.eta_schedule = self.eta_schedule
        self.update_notes()

    def apply_hot(self, name: str) -> None:
        s = self.settings
        if name == "eta":
            for model in self._newton_models():
                model.eta = s.eta
        elif name == "alpha0":
            if "FULL-ON" in self.learners and ("FULL-ON" in self.active) != (s.alpha0 > 0):
                return self.reset()  # FULL-ON joins or leaves the race (it needs alpha0 > 0)
            for model_name in list(self.models):
                if model_name != "ADAGRAD":
                    self.models[model_name] = _with_alpha0(self.models[model_name], s.alpha0)
                    self._hook(model_name)
        else:
            return super().apply_hot(name)
        self.update_notes()
        self.record()

    def _newton_models(self):
        return [model for name, model in self.models.items() if name != "ADAGRAD"]

    def _hook(self, name: str) -> None:
        if name in self.recorders:
            self.models[name].add_hook(self.recorders[name])

    def _notes(self) -> list[str]:
        s, d = self.settings, self._X.shape[1]
        notes = [(f"Labels: y = sign(vᵀx) for a random unit vector v (seed {s.seed}), "
                  f"{100 * self.label_noise:g}% of them flipped. The learners play "
                  f"clip(wᵀx, −{self.slab:g}, {self.slab:g}); "
                  f"ADAGRAD uses its own step size η = {self.adagrad_eta:g} (the shared η is "
                  f"SON's curvature weight μ + η).")]
        if self.son_loss == "logistic" and "ADAGRAD" in self.active:
            notes.append(f"Logistic loss: the SON learners stay in the slab |wᵀx| ≤ {self.slab:g} "
                         f"(loss ≥ log(1 + e^−{self.slab:g}) ≈ {np.log1p(np.exp(-self.slab)):.2g} "
                         f"a row), as w* does here; ADAGRAD is not confined, so its regret can go "
                         f"below 0.")
        if not self.active:
            notes.append("No learner is selected: tick at least one above the plots.")
        if s.m >= d:
            notes.append(f"m = {s.m} ≥ d = {d}: the sketches keep every direction, so FD-SON "
                         f"is FULL-ON and RFD-SON's α never grows. Choose m < d.")
        if s.alpha0 == 0:
            notes.append("α₀ = 0 (the JMLR 'hyperparameter-free' setting): FD-SON and RP-SON "
                         "use the pseudo-inverse, κ(H) = ∞ is not drawn"
                         + (", and FULL-ON sits out (H₀ = α₀I must be invertible)."
                            if "FULL-ON" in self.learners else "."))
        if d > ORACLE_MAX_D:
            notes.append(f"d = {d} > {ORACLE_MAX_D}: the exact spectrum (grey) is not computed.")
        for name, t in self.diverged.items():
            notes.append(f"{name} overflowed at t = {t} and left the race"
                         + (": lower its η." if name == "ADAGRAD" else "."))
        return notes

    # -- measurements -----------------------------------------------------------------------
    def _measure(self) -> dict[str, float]:
        t = self.t
        star = float(self._star_loss[t - 1]) if t else 0.0
        point = {"loss_star": star,
                 "accuracy_star": self._star_correct[t - 1] / t if t else np.nan,
                 "accuracy_majority": self._majority[t - 1] / t if t else np.nan}
        for name in LEARNERS:
            key, model = KEYS[name], self.models.get(name)
            alive = model is not None and name not in self.diverged
            total = self.cum_loss[name] if alive else np.nan
            point[f"loss_{key}"] = total
            point[f"regret_{key}"] = total - star
            point[f"accuracy_{key}"] = self.correct[name] / t if alive and t else np.nan
            point[f"kappa_{key}"] = model.condition_number() if alive else np.nan
            point[f"alpha_{key}"] = model.alpha if alive and name != "ADAGRAD" else np.nan
        return point

    def last_shrink(self, name: str) -> dict[str, np.ndarray]:
        """The Recorder's columns for the last shrink of RFD-SON or FD-SON ({} if none)."""
        recorder = self.recorders.get(name)
        return recorder.columns("shrink") if recorder is not None else {}

    def spectrum(self, name: str) -> tuple[np.ndarray, np.ndarray | None, float]:
        """Eigenvalues of ``H`` along the sketch (descending), the exact ones (or None), and alpha."""
        model = self.models[name]
        sigma = scipy.linalg.svdvals(model.sketch.rows, check_finite=False) if model.t else np.zeros(0)
        exact = None
        if name in self.grams:
            exact = scipy.linalg.eigvalsh(self.grams[name], check_finite=False)[::-1]
            exact = np.maximum(exact, 0.0) + self.settings.alpha0
        return sigma ** 2 + model.alpha, exact, model.alpha

    # -- Back -------------------------------------------------------------------------------
    def _state(self) -> dict:
        return {"models": {name: model.state_dict() for name, model in self.models.items()},
                "cum_loss": dict(self.cum_loss), "correct": dict(self.correct),
                "diverged": dict(self.diverged),
                "grams": {name: gram.copy() for name, gram in self.grams.items()},
                "shrink": {name: r.events("shrink") for name, r in self.recorders.items()}}

    def _load(self, state: dict) -> None:
        s = self.settings
        for name, model_state in state["models"].items():
            if name == "ADAGRAD":
                model = AdaGrad.from_state_dict(model_state)
                model.eta = self.adagrad_eta  # hot values are today's, not the snapshot's
            else:
                model = _with_alpha0(SketchedOnlineNewton.from_state_dict(model_state), s.alpha0)
                model.eta, model.eta_schedule = s.eta, self.eta_schedule
            self.models[name] = model
        for name, recorder in self.recorders.items():
            recorder.replace(state["shrink"][name])
            self._hook(name)
        self.cum_loss, self.correct = dict(state["cum_loss"]), dict(state["correct"])
        self.diverged = dict(state["diverged"])
        self.grams = {name: gram.copy() for name, gram in state["grams"].items()}
        self.update_notes()

    # -- views --------------------------------------------------------------------------------
    def _make_views(self):
        self.plots = {"loss": LivePlot(figures.loss_figure()),
                      "accuracy": LivePlot(figures.accuracy_figure()),
                      "condition": LivePlot(figures.condition_figure()),
                      "alpha": LivePlot(figures.alpha_figure()),
                      "spectrum": LivePlot(figures.spectrum_figure())}
        self.summary = pn.pane.Markdown("", margin=(0, 10))
        p = self.param
        options = pn.Row(
            pn.widgets.RadioButtonGroup.from_param(p.son_loss, name="loss ↻", width=170),
            pn.widgets.FloatInput.from_param(p.slab, name="slab C ↻", width=90),
            pn.widgets.CheckButtonGroup.from_param(p.learners, name="learners ↻"),
            pn.widgets.Checkbox.from_param(p.fast, name="fast sketches ↻", align="end"),
            pn.widgets.FloatSlider.from_param(p.label_noise, name="label noise ↻", width=150),
            pn.widgets.RadioButtonGroup.from_param(p.eta_schedule, name="η schedule ⚡", width=170),
            pn.widgets.FloatInput.from_param(p.adagrad_eta, name="ADAGRAD η ⚡", width=110),
            sizing_mode="stretch_width", styles={"flex-wrap": "wrap"})
        legend = pn.pane.Markdown("Options of this page: ⚡ applies mid-stream, ↻ restarts the "
                                  "race (as in the sidebar).", styles={"color": "#555"},
                                  margin=(0, 10))
        self.param.watch(lambda *_: self._update_views(), ["loss_view", "spectrum_learner"])
        views = {"loss": pn.widgets.RadioButtonGroup.from_param(p.loss_view, name="", width=200,
                                                               align="center"),
                 "spectrum": pn.widgets.RadioButtonGroup.from_param(p.spectrum_learner, name="",
                                                                   width=260, align="center")}
        cells = {name: plot_cell(TITLES[name], EXPLAIN[name], plot, *([views[name]] if name in views else []))
                 for name, plot in self.plots.items()}
        self._loss_heading = cells["loss"][0][0]
        grid = pn.GridBox(*[cells[name] for name in ("loss", "accuracy", "condition", "alpha")],
                          ncols=2, sizing_mode="stretch_width")
        return pn.Column(self.summary, options, legend, grid,
                         pn.Row(cells["spectrum"], pn.Spacer(sizing_mode="stretch_width"),
                                sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")

    def _update_views(self) -> None:
        h = self.history
        t = h["t"]
        average = self.loss_view == "average loss"
        scale = np.where(t > 0, t, np.nan)
        lines = {"loss": {}, "accuracy": {}, "condition": {}}
        for name in LEARNERS:
            key, shown = KEYS[name], name in self.models
            y_loss = h[f"loss_{key}"] / scale if average else h[f"regret_{key}"]
            for plot, y in (("loss", y_loss), ("accuracy", h[f"accuracy_{key}"]),
                            ("condition", finite(h[f"kappa_{key}"]))):
                lines[plot][name] = {"x": t, "y": finite(y) if shown else [], "visible": shown}
        lines["loss"][STAR] = {"x": t, "y": h["loss_star"] / scale if average else np.zeros(t.size)}
        lines["accuracy"][STAR] = {"x": t, "y": h["accuracy_star"]}
        lines["accuracy"][MAJORITY] = {"x": t, "y": h["accuracy_majority"]}
        title = "average loss so far" if average else "regret"
        self.plots["loss"].update(lines["loss"], layout={"yaxis": {"title": {"text": title}}})
        self._loss_heading.object = "#### " + ("Average loss so far" if average else TITLES["loss"])
        self.plots["accuracy"].update(lines["accuracy"])
        self.plots["condition"].update(lines["condition"])
        self.plots["alpha"].update({
            "RFD-SON": {"x": t, "y": positive_or_nan(h["alpha_rfd"]), "visible": "RFD-SON" in self.models},
            ALPHA0_LINE: {"x": t, "y": positive_or_nan(np.full(t.size, self.settings.alpha0))}})
        self._update_spectrum()
        self.summary.object = self._summary()

    def _update_spectrum(self) -> None:
        name = self.spectrum_learner if self.spectrum_learner in self.models else next(
            (n for n in SKETCHED if n in self.models), None)
        if name is None:
            self.plots["spectrum"].update({key: {"x": [], "y": []} for key in ("sketch", "exact", "alpha")})
            return
        sketch, exact, alpha = self.spectrum(name)
        size = min(self._X.shape[1], self.settings.m + 6)
        x = np.arange(1, size + 1)
        bars = np.full(size, alpha)
        bars[:min(size, sketch.size)] = sketch[:size]
        color = figures.METHOD_COLORS[name]
        self.plots["spectrum"].update({
            "sketch": {"x": x, "y": positive_or_nan(bars), "name": f"{name}: σᵢ²(B) + α",
                       "marker": {"color": color}},
            "exact": {"x": x, "y": positive_or_nan(exact[:size]) if exact is not None else []},
            "alpha": {"x": [0.5, size + 0.5], "y": positive_or_nan(np.full(2, alpha))}},
            layout={"xaxis": {"dtick": 1 if size <= 20 else 5}})

    def _summary(self) -> str:
        """The latest step's record as one line of text."""
        point, t = self.history.last(), self.t
        if not self.models:
            return "**Latest:** no learner selected."
        if t == 0:
            return (f"**Latest:** t = 0, {len(self.models)} learners ready · "
                    f"w* has average loss {self._star_loss[-1] / self.n_rows:.3g} on the whole stream")
        parts = []
        for name in self.models:
            key = KEYS[name]
            if name in self.diverged:
                parts.append(f"{name} overflowed")
                continue
            parts.append(f"{name} {point[f'loss_{key}'] / t:.3g} ({100 * point[f'accuracy_{key}']:.0f}%)")
        alive = {n: point[f"loss_{KEYS[n]}"] for n in self.models if n not in self.diverged}
        best = f" · leader: **{min(alive, key=alive.get)}**" if alive else ""
        shrink = ""
        if "RFD-SON" in self.models:
            last = self.last_shrink("RFD-SON")
            shrink = (f" · RFD-SON α = {self.models['RFD-SON'].alpha:.3g}"
                      + (f" (last shrink at t = {int(last['t'][0])}, δ = {last['delta'][0]:.3g})"
                         if last else " (no shrink yet)"))
        return "**Latest:** average loss (accuracy): " + ", ".join(parts) + best + shrink


def positive_or_nan(values) -> np.ndarray:
    """Values for a log axis: non-positive and non-finite ones become gaps."""
    values = finite(values)
    return np.where(values > 0, values, np.nan)


def best_fixed_predictor(X: np.ndarray, y: np.ndarray, loss: str, ridge: float = 1e-6) -> np.ndarray:
    """``argmin_w sum_t l(w^T x_t, y_t) + ridge * n ||w||^2`` over the whole stream (hindsight).

    Squared loss: least squares; logistic: L-BFGS (O(nd) per iteration). The small ridge
    keeps ``w`` finite on separable or rank-deficient streams.

    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> np.round(best_fixed_predictor(X, X @ np.array([0.5, -0.5]), "squared"), 4).tolist()
    [0.5, -0.5]
    """
    n, d = X.shape
    lam = ridge * n
    if loss == "squared":
        return np.linalg.solve(X.T @ X + lam * np.eye(d), X.T @ y)
    f = get_loss(loss)

    def objective(w):
        z = X @ w
        return float(f.value(z, y).sum() + lam * w @ w), X.T @ f.derivative(z, y) + 2 * lam * w
    result = scipy.optimize.minimize(objective, np.zeros(d), jac=True, method="L-BFGS-B",
                                     options={"maxiter": 200})
    return result.x


def _with_alpha0(model: SketchedOnlineNewton, alpha0: float) -> SketchedOnlineNewton:
    """The learner itself if alpha0 is unchanged, else its continuation with the new one."""
    return model if alpha0 == model.alpha0 else model.with_alpha0(alpha0)
