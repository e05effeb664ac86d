r"""The factorization-machine page: sketched FTRL (S-FTRL) against full FTRL and OGD.

Luo, Zhang, Zhang, Zhu, Zhang, Pei (KDD 2018), *Sketched follow-the-regularized-leader for
online factorization machine*; docs/algorithms.md section 6. The convex FM
``z = a_hat^T Theta a_hat`` gets the rank-one, sign-indefinite gradient ``q a_hat a_hat^T``
(``q = phi'(z)``) every round. FTRL keeps their sum in a full (d+1) x (d+1) ``Theta``;
S-FTRL keeps it in Generalized FD, ``Theta = -eta (B+^T B+ - B-^T B-)``: rows with
``q > 0`` (over-predictions) enter ``B+``, rows with ``q < 0`` enter ``B-``. Three learners
(:mod:`explorer.fm`) read the same stream; after every step the page records

- the progressive RMSE (ratings: squared loss ``(z - b)^2 / 2``) or the progressive AUC
  (binary labels, logistic loss) of each learner over the rounds so far, predicted
  before learning, with a reference: the running mean rating, or chance (AUC 0.5);
- S-FTRL's sign balance: the share of rounds, and of gradient mass ``|q| ||a_hat||^2``,
  that went to ``B+`` and to ``B-``, with ``q`` from its predictions by
  :func:`gradient_scale` (equal to the ``q`` of its ``FMStepEvent``; a step hook would cost
  about 10 µs a round and distort the timing);
- the amortized wall time per round of each learner (the loop of
  :func:`explorer.fm.progressive`, total over the rounds so far: one round is too short to time).

A :class:`~explorer.hooks.Recorder` keeps S-FTRL's last shrink (which half, when, delta)
for the one-line summary.

The spectra of ``B+`` and ``B-`` are drawn beside the exact spectra of the matrices they
sketch, ``H+^T H+ = sum_{q>0} |q| a_hat a_hat^T`` (and ``H-``), kept by the page while
``d + 1 <= ORACLE_MAX``; FD guarantees ``lambda_i - Delta <= sigma_i^2(B) <= lambda_i``.

Streams. The ratings tasks use a stream of their own, because an FM on ratings needs
one-hot ``[e_user; e_item]`` rows: :func:`explorer.fm.synthetic_ratings` (seeded by the
shared seed, n rows) or the first n ratings of MovieLens-100K in time order. The binary
task uses the shared stream X (data set, n, d, seed), rows scaled to unit norm, labels
:func:`explorer.streams.linear_classification_labels` of X (same seed).

eta is hot: FTRL and S-FTRL play ``-eta * (sum of past gradients)``, so a new eta rescales
their whole current ``Theta`` (FTRL's stored ``Theta`` is rescaled by new/old); OGD's own
``eta_0`` (in ``eta_0 / sqrt(t)``, a page option) is hot too and scales the steps to come.

>>> progressive_auc(np.array([0.1, 0.9, 0.4, 0.8]), np.array([-1.0, 1.0, -1.0, 1.0]))
1.0
>>> gradient_scale(np.array([3.0, 0.0]), np.array([4.0, 1.0]), "squared").tolist()
[-1.0, -1.0]
"""

from __future__ import annotations

import numpy as np
import panel as pn
import param
import scipy.linalg
import scipy.sparse
import scipy.special
import scipy.stats

from ...fm import FTRLFM, OGDFM, SketchedFTRL, movielens_100k, one_hot, progressive, synthetic_ratings
from ...hooks import Recorder
from ...streams import linear_classification_labels
from ..live import LivePlot, explanation, finite, plot_cell
from ..page import Page
from . import fm_figures as figures

__all__ = ["FactorizationPage", "TASKS", "LEARNERS", "ORACLE_MAX", "progressive_auc", "gradient_scale"]

SYNTHETIC, MOVIELENS, BINARY = "ratings: synthetic", "ratings: MovieLens-100K", "binary: shared stream"
TASKS = (SYNTHETIC, MOVIELENS, BINARY)
LEARNERS = ("sftrl", "ftrl", "ogd")
ORACLE_MAX = 300
"""The exact spectra of H+ and H- are kept (O(d^2) per round, O(d^3) per redraw) up to this d + 1."""
DIVERGED = 1e6
"""A prediction |z| above this counts as diverged (ratings are 1..5; unit-norm rows keep logits small)."""
OGD_ETAS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)

TITLES = {"metric": "Progressive error of the three learners",
          "spectra": "Spectra of B₊ and B₋ (S-FTRL's Generalized FD)",
          "balance": "Sign balance of the gradients",
          "time": "Time per round"}
EXPLAIN = {
    "ratings": "RMSE over all rounds so far, each rating predicted before it is learned "
               "(lower is better). Dashed: always predicting the mean rating seen so far. "
               "S-FTRL plays FTRL's Θ through a sketch: with m ≥ d + 2 the two coincide.",
    "binary": "AUC over all rounds so far, each label predicted before it is learned "
              "(higher is better; dashed: chance). S-FTRL plays FTRL's Θ through a sketch: "
              "with m ≥ d + 2 the two coincide.",
    "spectra": "Bars: σᵢ² of the sketch. Grey: the exact eigenvalues of the sum it sketches "
               "(HᵀH = Σ |q| â âᵀ over that sign's rounds); FD keeps each within Δ (its "
               "total shrink) below, dotted. Θ = −η(B₊ᵀB₊ − B₋ᵀB₋).",
    "balance": "Each gradient q â âᵀ goes to B₊ if q > 0 (the model over-predicted) or to "
               "B₋ if q < 0. Solid: share of rounds; dotted: share of the mass |q|·‖â‖². "
               "Both halves fill up: the sum is indefinite, hence Generalized FD.",
    "time": "Amortized: each learner's own loop time over all its rounds so far. S-FTRL: O(m·nnz) per "
            "prediction plus an O(m²d) shrink every m+1 rows of a half. FTRL and OGD touch "
            "nnz² entries of Θ: few for one-hot rows, d² for dense ones; but Θ takes (d+1)² memory.",
}


class FactorizationPage(Page):
    """S-FTRL vs FTRL vs OGD on a ratings or binary stream (logic usable without a browser)."""

    key = "fm"
    title = "Sketched FTRL for FMs"
    intro = ("Watch S-FTRL learn a factorization machine through two FD sketches (B₊ for "
             "over-, B₋ for under-predictions): press **Step** or **Play**, change **m** or "
             "**η**, and compare with full-matrix FTRL and OGD.")
    uses = ("dataset", "n", "d", "seed", "m", "eta")  # the union; each instance narrows it per task
    hot = ("eta",)
    restart = ("fm_task", "fm_users", "fm_items", "fm_variant")

    fm_task = param.Selector(default=SYNTHETIC, objects=list(TASKS), doc=(
        "Ratings (one-hot user + item rows, RMSE) from a seeded synthetic stream or MovieLens-100K, "
        "or binary labels (AUC) on the shared stream. Restarts."))
    fm_users = param.Integer(default=30, bounds=(2, 300), doc="Users of the synthetic ratings. Restarts.")
    fm_items = param.Integer(default=40, bounds=(2, 300), doc="Items of the synthetic ratings. Restarts.")
    fm_variant = param.Selector(default="fast", objects=["fast", "exact"], doc=(
        "S-FTRL's sketch: fast (Algorithm 5, 2m-row buffers) or exact (Algorithm 4). Restarts."))
    ogd_eta = param.Number(default=0.5, bounds=(1e-4, 100.0), doc=(
        "OGD's step eta_0 in eta_0 / sqrt(t). Applies mid-stream."))
    fm_log_spectra = param.Boolean(default=True, doc="Log scale for the spectra of B+ and B-.")

    def __init__(self, settings, **params):
        self._movielens = None
        super().__init__(settings, **params)
        self.param.watch(self._ogd_eta_changed, "ogd_eta")

    # -- the stream ---------------------------------------------------------------------------
    @property
    def ratings(self) -> bool:
        return self.fm_task != BINARY

    def _uses(self) -> tuple[str, ...]:
        if self.fm_task == SYNTHETIC:
            return ("n", "seed", "m", "eta")
        if self.fm_task == MOVIELENS and self._real_movielens:
            return ("n", "m", "eta")
        if self.fm_task == MOVIELENS:
            return ("n", "seed", "m", "eta")
        return ("dataset", "n", "d", "seed", "m", "eta")

    def _stream(self):
        """This task's rows and notes: CSR one-hot rows (ratings in ``_y``), or the shared stream's
        rows scaled to unit norm (±1 labels in ``_y``); the settings the task reads follow."""
        X, self._y, notes = self._task_stream()
        self.set_uses(self._uses())
        return X, notes

    def _task_stream(self):
        """``(X, y, notes)`` of the current task."""
        self._real_movielens = False
        n, seed = self.settings.n, self.settings.seed
        if self.fm_task == BINARY:
            X, notes = self.settings.stream()
            y, _ = linear_classification_labels(X, seed=seed)
            norms = np.linalg.norm(X, axis=1, keepdims=True)
            A = X / np.where(norms > 0, norms, 1.0)
            notes.append(f"Binary task on the shared stream (d = {X.shape[1]}): labels "
                         f"y = sign(w*ᵀx), 5% flipped (linear_classification_labels, seed {seed}); "
                         "each row is scaled to unit norm, since the FM's z is quadratic in the row.")
            return A, y, notes
        notes = []
        if self.fm_task == MOVIELENS:
            try:
                if self._movielens is None:
                    self._movielens = movielens_100k(order="time")
                data = self._movielens
                users = np.unique(data.users[:n], return_inverse=True)[1]
                items = np.unique(data.items[:n], return_inverse=True)[1]
                n_users, n_items = int(users.max()) + 1, int(items.max()) + 1
                X = one_hot(users, items, n_users, n_items)
                self._real_movielens = True
                return X, data.y[:n].copy(), [
                    f"MovieLens-100K: its first n = {n} ratings in time order, as one-hot rows over "
                    f"the {n_users} users and {n_items} items they mention (d = {n_users + n_items}). "
                    "Columns never seen leave Θ unchanged, so the predictions are those of the full "
                    "d = 2625 model. The seed does not apply."]
            except (ModuleNotFoundError, FileNotFoundError) as error:
                notes.append(f"MovieLens-100K is not available ({error}); streaming the synthetic "
                             "ratings instead.")
        pairs = self.fm_users * self.fm_items
        if n > pairs:
            notes.append(f"{self.fm_users} users × {self.fm_items} items give only {pairs} "
                         f"(user, item) pairs, each rated once: streaming {pairs} rows (n = {n} asked).")
            n = pairs
        data = synthetic_ratings(n, n_users=self.fm_users, n_items=self.fm_items, seed=seed)
        notes.append(f"Ratings task: this page streams its own seeded MovieLens-shaped ratings "
                     f"(synthetic_ratings, seed {seed}): one-hot rows [e_user; e_item], "
                     f"d = {self.fm_users} + {self.fm_items} = {data.X.shape[1]}. The shared "
                     "data set and d apply to the binary task only.")
        return data.X, data.y, notes

    # -- algorithms -----------------------------------------------------------------------
    def _build(self, X) -> None:
        n, d = X.shape
        loss = "squared" if self.ratings else "logistic"
        self.learners = {
            "sftrl": SketchedFTRL(d, m=self.settings.m, eta=self.settings.eta, loss=loss,
                                  fast=self.fm_variant == "fast"),
            "ftrl": FTRLFM(d, eta=self.settings.eta, loss=loss),
            "ogd": OGDFM(d, eta=self.ogd_eta, loss=loss)}
        self.recorder = Recorder(kinds=("shrink",), limit=1)  # S-FTRL's last shrink (either half)
        self.learners["sftrl"].add_hook(self.recorder)
        self.diverged: dict[str, int | None] = dict.fromkeys(LEARNERS)
        self.predictions = {key: np.full(n, np.nan) for key in LEARNERS}
        self.q = np.full(n, np.nan)  # S-FTRL's phi'(z_t), from its step events
        # wall time of each learner's loop and the rounds it covered (replays after Back too)
        self._seconds, self._rows_timed = dict.fromkeys(LEARNERS, 0.0), dict.fromkeys(LEARNERS, 0)
        sparse = scipy.sparse.issparse(X)
        if sparse:  # a_hat of a one-hot row: (user, n_users + item, d), all ones
            self._hat_idx = np.column_stack([X.indices.reshape(-1, 2), np.full(n, d)])
            self._hat_norm2 = np.full(n, 3.0)
        else:
            self._hat = np.hstack([X, np.ones((n, 1))])
            self._hat_norm2 = np.einsum("ij,ij->i", self._hat, self._hat)
        self.oracle = d + 1 <= ORACLE_MAX
        self._gram = {part: np.zeros((d + 1, d + 1)) if self.oracle else None for part in "+-"}
        if self.ratings:  # the reference: predict the mean of the ratings seen so far (0 at first)
            seen = np.arange(n)
            self._reference = np.r_[0.0, np.cumsum(self._y)[:-1]] / np.maximum(seen, 1)
            self._reference[0] = 0.0

    def _advance(self, rows) -> None:
        t0, t1 = self.t, self.t + rows.shape[0]
        labels = self._y[t0:t1]
        for key, learner in self.learners.items():
            if self.diverged[key] is not None:
                continue
            try:
                run = progressive(learner, rows, labels)
            except FloatingPointError as error:  # eta too large: the learner says so and stops here
                self.diverged[key] = getattr(error, "t", learner.t + 1)  # Diverged.t: the round that diverged
                self.update_notes()
                continue
            self.predictions[key][t0:t1] = run.predictions
            self._seconds[key] += run.seconds
            self._rows_timed[key] += t1 - t0
            wild = np.flatnonzero(np.abs(run.predictions) > DIVERGED)
            if wild.size:  # finite, but no longer a prediction: stop here too
                self.diverged[key] = t0 + int(wild[0]) + 1
                self.predictions[key][t0 + wild[0]:t1] = np.nan
                self.update_notes()
        z = self.predictions["sftrl"][t0:t1]
        self.q[t0:t1] = gradient_scale(z, labels, "squared" if self.ratings else "logistic")
        if self.oracle:
            self._add_to_gram(t0, t1)

    def _add_to_gram(self, t0: int, t1: int) -> None:
        """Add ``|q| a_hat a_hat^T`` of rounds t0..t1-1 to the exact H+^T H+ or H-^T H-."""
        q = self.q[t0:t1]
        for part, mask in (("+", q > 0), ("-", q < 0)):
            if not mask.any():
                continue
            w = np.abs(q[mask])
            if scipy.sparse.issparse(self._X):
                idx = self._hat_idx[t0:t1][mask]
                rows, cols = np.broadcast_arrays(idx[:, :, None], idx[:, None, :])
                np.add.at(self._gram[part], (rows, cols), np.broadcast_to(w[:, None, None], rows.shape))
            else:
                A = self._hat[t0:t1][mask]
                self._gram[part] += (A * w[:, None]).T @ A

    def apply_hot(self, name: str) -> None:
        if name != "eta":
            return super().apply_hot(name)
        eta = self.settings.eta
        self.learners["sftrl"].eta = eta  # Theta = -eta (B+^T B+ - B-^T B-): rescaled at once
        self.learners["ftrl"] = _with_eta(self.learners["ftrl"], eta)
        self.update_notes()

    def _ogd_eta_changed(self, event) -> None:
        self.learners["ogd"].eta = self.ogd_eta  # eta_0 / sqrt(t) from the next round on
        self.update_notes()
        if self._views is not None:
            self._update_views()

    def _notes(self) -> list[str]:
        d, m = self._X.shape[1], self.settings.m
        notes = []
        if m >= d + 2:
            notes.append(f"m = {m} ≥ d + 2 = {d + 2}: each half of the sketch has room for every "
                         "direction, nothing is shrunk and S-FTRL equals FTRL (their curves "
                         "coincide). Choose a smaller m to see the sketch at work.")
        if not self.oracle:
            notes.append(f"d + 1 = {d + 1} > {ORACLE_MAX}: the exact spectra (grey) are not "
                         "computed; the bars are S-FTRL's own.")
        for key, t in self.diverged.items():
            if t is not None:
                eta = self.ogd_eta if key == "ogd" else self.settings.eta
                notes.append(f"{figures.LEARNER_NAMES[key]} diverged at round {t} with "
                             f"{'η₀' if key == 'ogd' else 'η'} = {eta:g} (|z| > {DIVERGED:g}) and "
                             "stopped: choose a smaller one and press Reset.")
        return notes

    # -- measurements -----------------------------------------------------------------------
    def _measure(self) -> dict[str, float]:
        t = self.t
        y = self._y[:t]
        point = {}
        for key in LEARNERS:
            z = self.predictions[key][:t]
            point[f"metric_{key}"] = _rmse(z, y) if self.ratings else progressive_auc(z, y)
            point[f"time_{key}"] = (1e6 * self._seconds[key] / self._rows_timed[key]
                                    if self._rows_timed[key] and self.diverged[key] is None else np.nan)
        if self.ratings:
            point["reference"] = _rmse(self._reference[:t], y)
        else:
            point["reference"] = 0.5 if t and 0 < np.sum(y > 0) < t else np.nan
        q = self.q[:t]
        mass = np.abs(np.nan_to_num(q)) * self._hat_norm2[:t]
        total = mass.sum()
        for part, mask in (("plus", q > 0), ("minus", q < 0)):
            point[f"share_{part}"] = mask.sum() / t if t else np.nan
            point[f"mass_{part}"] = mass[mask].sum() / total if total > 0 else np.nan
        sketch = self.learners["sftrl"].sketch
        point.update(rank_plus=sketch.positive.rank, rank_minus=sketch.negative.rank,
                     delta_plus=sketch.positive.delta_total, delta_minus=sketch.negative.delta_total)
        return point

    # -- Back -------------------------------------------------------------------------------
    def _state(self) -> dict:
        """The learners' state_dicts (full Theta stored sparse for one-hot rows) and divergence.

        The per-round arrays (predictions, q) are not copied: the stream is deterministic,
        so their entries before any snapshot's t stay valid, and later ones are replayed.
        """
        states = {}
        for key, learner in self.learners.items():
            state = learner.state_dict()
            if "theta" in state and scipy.sparse.issparse(self._X):
                state["theta"] = scipy.sparse.csr_array(state["theta"])
            states[key] = state
        return {"learners": states, "diverged": dict(self.diverged),
                "shrink": self.recorder.events("shrink")}

    def _load(self, state: dict) -> None:
        states = state["learners"]
        self.learners = {}
        for key, cls in (("sftrl", SketchedFTRL), ("ftrl", FTRLFM), ("ogd", OGDFM)):
            s = dict(states[key])
            if scipy.sparse.issparse(s.get("theta")):
                s["theta"] = s["theta"].toarray()
            self.learners[key] = cls.from_state_dict(s)
        # hot settings: today's values, not the snapshot's
        self.learners["sftrl"].eta = self.settings.eta
        self.learners["ftrl"] = _with_eta(self.learners["ftrl"], self.settings.eta)
        self.learners["ogd"].eta = self.ogd_eta
        self.recorder.replace(state["shrink"])
        self.learners["sftrl"].add_hook(self.recorder)
        self.diverged = dict(state["diverged"])
        if self.oracle:
            d = self._X.shape[1]
            self._gram = {part: np.zeros((d + 1, d + 1)) for part in "+-"}
            self._add_to_gram(0, self.t)
        self.update_notes()

    # -- views --------------------------------------------------------------------------------
    def _make_views(self):
        self.plots = {"metric": LivePlot(figures.metric_figure()),
                      "spectra": LivePlot(figures.spectra_figure()),
                      "balance": LivePlot(figures.balance_figure()),
                      "time": LivePlot(figures.time_figure())}
        self.summary = pn.pane.Markdown("", margin=(0, 10))
        self.explain = {name: explanation(EXPLAIN.get(name, "")) for name in self.plots}
        cells = [plot_cell(TITLES[name], self.explain[name], plot) for name, plot in self.plots.items()]
        return pn.Column(self._options(), self.summary,
                         pn.GridBox(*cells, ncols=2, sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")

    def _options(self) -> pn.Row:
        """The page's own controls (↻ restarts the stream, ⚡ applies mid-stream)."""
        task = pn.widgets.Select.from_param(self.param.fm_task, label="task ↻", width=210)
        sliders = {}
        for name, label in (("fm_users", "users ↻"), ("fm_items", "items ↻")):
            bounds = self.param[name].bounds
            sliders[name] = slider = pn.widgets.IntSlider(label=label, start=bounds[0], end=bounds[1],
                                                          value=getattr(self, name), width=150)
            slider.param.watch(lambda event, name=name: setattr(self, name, event.new), "value_throttled")
            self.param.watch(lambda event, slider=slider: setattr(slider, "value", event.new), name)
        variant = pn.widgets.RadioButtonGroup.from_param(self.param.fm_variant,
                                                         width=130, align="end")

        def etas(value):
            return {f"{v:g}": float(v) for v in sorted({*OGD_ETAS, float(value)})}
        ogd = pn.widgets.Select(label="OGD η₀ ⚡", options=etas(self.ogd_eta), value=float(self.ogd_eta),
                                width=100)
        ogd.param.watch(lambda event: setattr(self, "ogd_eta", event.new), "value")
        self.param.watch(lambda event: ogd.param.update(options=etas(event.new), value=float(event.new)),
                         "ogd_eta")

        def synthetic(task):
            for slider in sliders.values():
                slider.disabled = task != SYNTHETIC
        synthetic(self.fm_task)
        self.param.watch(lambda event: synthetic(event.new), "fm_task")
        log = pn.widgets.Checkbox.from_param(self.param.fm_log_spectra, label="log spectra",
                                             align="end", margin=(0, 10, 12, 10))
        self.param.watch(lambda *_: self._update_views(), ["fm_log_spectra"])
        return pn.Row(task, *sliders.values(), pn.Column(pn.pane.Markdown("S-FTRL sketch ↻", margin=(0, 5)),
                                                         variant, margin=0),
                      ogd, log, sizing_mode="stretch_width")

    def _update_views(self) -> None:
        h = self.history
        t = h["t"]
        name = figures.LEARNER_NAMES
        reference = "running mean rating" if self.ratings else "chance (AUC = 0.5)"
        self.plots["metric"].update(
            {**{name[key]: {"x": t, "y": finite(h[f"metric_{key}"])} for key in LEARNERS},
             figures.BASELINE: {"x": t, "y": finite(h["reference"]), "name": reference}},
            layout={"yaxis": {"title": {"text": "progressive RMSE" if self.ratings else "progressive AUC"}}})
        self.explain["metric"].object = EXPLAIN["ratings" if self.ratings else "binary"]
        self.plots["balance"].update({
            "rounds → B₊ (q > 0)": {"x": t, "y": finite(h["share_plus"])},
            "rounds → B₋ (q < 0)": {"x": t, "y": finite(h["share_minus"])},
            "mass → B₊": {"x": t, "y": finite(h["mass_plus"])},
            "mass → B₋": {"x": t, "y": finite(h["mass_minus"])}})
        self.plots["time"].update({name[key]: {"x": t, "y": finite(h[f"time_{key}"])}
                                   for key in LEARNERS})
        self._update_spectra()
        self.summary.object = self._summary()

    def spectra(self) -> dict[str, dict[str, np.ndarray]]:
        """Per half ("+", "-"): the sketch's sigma_i^2, the exact eigenvalues and the FD lower band."""
        sketch = self.learners["sftrl"].sketch
        out = {}
        for part, fd in (("+", sketch.positive), ("-", sketch.negative)):
            sigma2 = fd.singular_values() ** 2 if np.isfinite(fd.rows).all() else np.zeros(0)
            sigma2 = _drop_rounding(sigma2)
            size = min(fd.d, max(sigma2.size, self.settings.m) + 2)
            exact = band = np.zeros(0)
            gram = self._gram[part]
            if self.oracle and np.isfinite(gram).all():
                exact = scipy.linalg.eigvalsh(gram, check_finite=False,
                                              subset_by_index=[fd.d - size, fd.d - 1])[::-1]
                exact = _drop_rounding(exact)
                band = np.maximum(exact - fd.delta_total, 0.0)
            out[part] = {"sketch": sigma2[:size], "exact": exact, "band": band, "size": size}
        return out

    def _update_spectra(self) -> None:
        traces, size = {}, 1
        for part, values in self.spectra().items():
            size = max(size, values["size"])
            x = np.arange(1, values["size"] + 1)
            traces[f"{part} sketch"] = {"x": x[:values["sketch"].size], "y": values["sketch"]}
            traces[f"{part} exact"] = {"x": x[:values["exact"].size], "y": values["exact"]}
            traces[f"{part} band"] = {"x": x[:values["band"].size], "y": values["band"]}
        dtick = 1 if size <= 12 else 2 if size <= 24 else 5
        axis = ({"type": "log", "rangemode": "normal", "dtick": 1} if self.fm_log_spectra
                else {"type": "linear", "rangemode": "tozero", "dtick": None})
        self.plots["spectra"].update(traces, layout={"yaxis": axis, "yaxis2": axis,
                                                     "xaxis": {"dtick": dtick}, "xaxis2": {"dtick": dtick}})

    def _summary(self) -> str:
        """The latest step's record as one line of text."""
        p = self.history.last()
        metric = "RMSE" if self.ratings else "AUC"
        values = " · ".join(f"{label} {_number(p[f'metric_{key}'])}" for key, label in
                            (("sftrl", "S-FTRL"), ("ftrl", "FTRL"), ("ogd", "OGD")))
        times = ", ".join(f"{p[f'time_{key}']:.0f}" if np.isfinite(p[f"time_{key}"]) else "–"
                          for key in LEARNERS)
        share = (f"q > 0 on {p['share_plus']:.0%} of rounds" if np.isfinite(p["share_plus"])
                 else "no gradient yet")
        shrink = self.recorder.columns("shrink")
        last = (f"last shrink: B{'₊' if shrink['part'][0] == '+' else '₋'} at t = "
                f"{int(shrink['t'][0])}, δ = {shrink['delta'][0]:.3g}" if shrink else "no shrink yet")
        sftrl = self.learners["sftrl"]
        memory = 2 * sftrl.sketch.positive.capacity * (sftrl.d + 1)
        return (f"**Latest:** t = {self.t} · {metric} {values} · {share} · rank B₊ "
                f"{int(p['rank_plus'])}, B₋ {int(p['rank_minus'])} (m = {self.settings.m}) · {last}, "
                f"Δ₊ + Δ₋ = {p['delta_plus'] + p['delta_minus']:.3g} · µs/round (S-FTRL, FTRL, OGD) "
                f"{times} · memory {memory:,} floats for the sketch, {(sftrl.d + 1) ** 2:,} for a full Θ")


def progressive_auc(z: np.ndarray, y: np.ndarray) -> float:
    """Area under the ROC curve of scores ``z`` for labels ``y`` in {-1, +1} (ties count half).

    NaN while one class is missing or a score is not finite (a diverged learner).
    """
    z, y = np.asarray(z, dtype=float), np.asarray(y, dtype=float)
    positive = y > 0
    n_pos = int(positive.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0 or not np.isfinite(z).all():
        return np.nan
    ranks = scipy.stats.rankdata(z)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def gradient_scale(z: np.ndarray, y: np.ndarray, loss: str) -> np.ndarray:
    """``q = phi'(z)`` of the FM learners: ``z - b`` ("squared", ``(z - b)^2 / 2``) or
    ``-b / (1 + exp(b z))`` ("logistic", ``log(1 + exp(-b z))``), as in :mod:`explorer.fm.learners`."""
    z, y = np.asarray(z, dtype=float), np.asarray(y, dtype=float)
    if loss == "squared":
        return z - y
    return -y * scipy.special.expit(-y * z)


def _drop_rounding(values: np.ndarray) -> np.ndarray:
    """Eigenvalues below ``1e-10`` of the largest are rounding: 0 (a log axis leaves them out)."""
    values = np.asarray(values, dtype=float).copy()
    if values.size:
        values[values <= 1e-10 * max(values.max(), 0.0)] = 0.0
    return values


def _number(value: float) -> str:
    return f"{value:.4g}" if np.isfinite(value) else "–"


def _rmse(z: np.ndarray, y: np.ndarray) -> float:
    if z.size == 0 or not np.isfinite(z).all():
        return np.nan
    return float(np.sqrt(np.mean((z - y) ** 2)))


def _with_eta(ftrl: FTRLFM, eta: float) -> FTRLFM:
    """FTRL with a new eta: Theta = -eta * (sum of past gradients), so Theta scales by new / old."""
    state = ftrl.state_dict()
    state["theta"] = state["theta"] * (eta / state["eta"])
    state["eta"] = eta
    return FTRLFM.from_state_dict(state)
