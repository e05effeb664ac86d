r"""The sketching page: Frequent Directions against Robust FD on the same stream.

A thin view over :class:`explorer.experiments.sketching.SketchComparison`: four sketches
(FD and RFD, exact and fast; docs/algorithms.md sections 1-2, Luo et al. 2017,
Algorithms 1-4) read every row, and after every step the page records what
:meth:`~explorer.experiments.sketching.SketchComparison.measure` reads off a running
:math:`A^T A`: the spectral errors against the FD bound and RFD's half of it (Theorem 3),
the condition numbers of Theorem 4, alpha, and the last shrink of each RFD sketch.
alpha0 is hot: ``B`` does not depend on it, so it applies mid-stream through
``with_params``.
"""

from __future__ import annotations

import numpy as np
import panel as pn
import param

from ...experiments.sketching import SKETCH_VARIANTS, SketchComparison
from ...plots import MARKS_SHOWN, Events, event_marks, method_color
from ..controls import log_axis
from ..cells import labelled, plot_cell, plot_grid, row, switch
from ..live import LivePlot, finite
from ..page import Page
from . import sketching_figures as figures

__all__ = ["SketchingPage"]

TITLES = {"spectrum": "Spectrum at the last shrink", "alpha": "α = α₀ + Δ/2 over the stream",
          "error": "Covariance error against the bounds", "condition": "Condition numbers (Theorem 4)"}
EXPLAIN = {
    "spectrum": "A shrink subtracts δ = σ_m² from every σᵢ² (light bars: before, dark: "
                "after). RFD keeps the same B but lifts every direction by α, so it errs by "
                "at most Δ/2 either way; FD can only under-estimate. Grey: the exact spectrum.",
    "alpha": "Every shrink adds δ/2 to α: the mass FD throws away, given back evenly to all "
             "directions (Luo et al. 2017, Algorithm 3). FD keeps α₀. Dotted red verticals: the "
             f"fast run's shrinks, FD's and RFD's alike (the latest {MARKS_SHOWN}); the exact run "
             "shrinks on every row once B is full.",
    "error": "Measured errors stay below the bounds: FD ≤ Δ ≤ min_k ‖A − A_k‖²_F / (m − k), "
             "RFD ≤ half of each (Theorem 3). Δ, the mass each run shrank away, is its own: "
             "the fast run (a 2m-row buffer) has a Δ of its own, drawn thin.",
    "condition": "κ(BᵀB + αI) ≤ κ(BᵀB + α₀I) always (Theorem 4): the matrix a sketched "
                 "Newton step inverts is better conditioned with RFD. ∞ is not drawn.",
}


class SketchingPage(Page):
    """FD vs RFD, exact vs fast, on the shared stream (logic usable without a browser)."""

    key = "sketching"
    title = "Sketching: FD vs RFD"
    intro = ("Watch Frequent Directions sketch a stream row by row: press **Step** or **Play**, "
             "change **m**, go **Back**.")
    uses = ("dataset", "n", "d", "seed", "m", "alpha0")
    hot = ("alpha0",)

    spectrum_of = param.Selector(default="exact", objects=list(SKETCH_VARIANTS),
                                 doc="Which variant's last shrink the spectrum shows.")
    log_spectrum = param.Boolean(default=True, doc="Log scale for the spectrum.")

    # -- algorithms -----------------------------------------------------------------------
    def _build(self, X: np.ndarray) -> None:
        self.sketches = SketchComparison(X.shape[1], self.settings.m, alpha0=self.settings.alpha0)

    @property
    def race(self) -> SketchComparison:
        """What the page plays and whose curves it draws: the sketches."""
        return self.sketches

    def next_rounds(self) -> dict[str, tuple]:
        """The four sketches with the next row, for "Open the next update" (:mod:`..opened`)."""
        x = self._X[self.t]
        return {f"{kind.upper()} ({variant})": (sketches[variant], x, None)
                for kind, sketches in (("fd", self.sketches.fd), ("rfd", self.sketches.rfd))
                for variant in sketches}

    def _advance(self, rows: np.ndarray) -> None:
        self.sketches.extend(rows)

    def _tune(self) -> None:
        """Today's alpha0 (hot: ``B`` does not depend on it); the curves go on."""
        self._continue_with(self.sketches)

    def _continue_with(self, sketches: SketchComparison) -> None:
        """Continue with ``sketches`` (a new object) at today's alpha0, keeping the curves."""
        if sketches.alpha0 != self.settings.alpha0:
            sketches = sketches.with_params(alpha0=self.settings.alpha0)
        sketches.history = self.sketches.history
        self.sketches = sketches

    def _notes(self) -> list[str]:
        d, m = self._X.shape[1], self.settings.m
        notes = []
        if m > d:  # FD's shrink removes sigma_m^2, which is 0 while rank <= d < m
            notes.append(f"m = {m} > d = {d}: the sketch has room for every direction, so "
                         f"nothing is ever shrunk away (δ = 0). Choose m ≤ d to see FD at work.")
        if self.settings.alpha0 == 0:
            notes.append("α₀ = 0 (the JMLR 'hyperparameter-free' setting): BᵀB + α₀I is "
                         "singular while rank(B) < d, so FD's condition number is ∞ and not "
                         "drawn; RFD's α turns positive at the first shrink.")
        return notes

    # -- measurements and Back ------------------------------------------------------------
    def _columns(self) -> dict[str, float]:
        # alpha0 too: a change mid-stream is drawn as a step where it happened
        # and each variant's own Delta (FD's certified bound of this run)
        return {"alpha0": self.settings.alpha0,
                **{f"delta_{v}": self.sketches.fd[v].delta_total for v in SKETCH_VARIANTS}}

    def _load(self, state: dict) -> None:
        self._continue_with(SketchComparison.from_state_dict(state))  # hot: today's alpha0

    # -- views --------------------------------------------------------------------------------
    def _make_views(self):
        self.plots = {"spectrum": LivePlot(figures.spectrum_figure()),
                      "alpha": LivePlot(figures.alpha_figure(), over_stream=True),
                      "error": LivePlot(figures.error_figure(), over_stream=True),
                      "condition": LivePlot(figures.condition_figure(), over_stream=True)}
        self.summary = pn.pane.Markdown("", margin=(0, 10))
        options = row(
            labelled("spectrum of", pn.widgets.RadioButtonGroup.from_param(self.param.spectrum_of)),
            switch(self.param.log_spectrum, "log scale"),
            align="center")
        self.param.watch(lambda *_: self._update_views(), ["spectrum_of", "log_spectrum"])
        cells = [plot_cell(TITLES[name], EXPLAIN[name], plot, *([options] if name == "spectrum" else []))
                 for name, plot in self.plots.items()]
        return pn.Column(self.summary, plot_grid(*cells),
                         sizing_mode="stretch_width")

    def _update_views(self) -> None:
        h = self.history
        t = h["t"]
        self.plots["alpha"].update({
            "RFD α (exact)": {"x": t, "y": h["alpha_exact"]},
            "RFD α (fast)": {"x": t, "y": h["alpha_fast"]},
            "FD: α₀ (fixed)": {"x": t, "y": h["alpha0"]}},
            # the fast run's shrinks only: the exact run shrinks on every row once B is full
            marks=event_marks(Events("shrink", "shrinks (fast run)", self.sketches.shrink_times("fast"),
                                      method_color("RFD")), upto=self.t))
        self.plots["error"].update({
            **{f"{a.upper()} error ({v})": {"x": t, "y": h[f"error_{a}_{v}"]}
               for a in ("fd", "rfd") for v in SKETCH_VARIANTS},
            **{figures.DELTA_TRACE[v]: {"x": t, "y": h[f"delta_{v}"]} for v in SKETCH_VARIANTS},
            "FD bound": {"x": t, "y": h["bound_fd"]},
            "RFD bound (half)": {"x": t, "y": h["bound_rfd"]}})
        self.plots["condition"].update({
            **{f"κ(BᵀB + {'α₀' if a == 'fd' else 'α'}I) {a.upper()} ({v})":
               {"x": t, "y": finite(h[f"kappa_{a}_{v}"])} for a in ("fd", "rfd") for v in SKETCH_VARIANTS},
            "κ(AᵀA + α₀I) exact": {"x": t, "y": finite(h["kappa_exact"])}})
        self._update_spectrum()
        self.summary.object = self._summary()

    def _update_spectrum(self) -> None:
        """Bars of the last shrink of the chosen variant, in both panels, with the exact spectrum."""
        rfd, alpha0 = self.sketches.rfd[self.spectrum_of], self.settings.alpha0
        shrink = self.sketches.last_shrink(self.spectrum_of)
        if shrink:
            sigma2 = shrink["sigma"][0][np.isfinite(shrink["sigma"][0])] ** 2
            delta = float(shrink["delta"][0])
            after = np.maximum(sigma2 - delta, 0.0)
        else:  # no shrink yet: the current spectrum, nothing before
            sigma2, delta = np.zeros(0), np.nan
            after = rfd.singular_values() ** 2
        size = min(self._X.shape[1], max(after.size, self.settings.m) + 4)
        x = np.arange(1, size + 1)
        level = np.array([0.5, size + 0.5])
        # FD's floor stays alpha0; RFD's alpha only moves at shrinks, so rfd.alpha is its value
        # right after the last one (and it follows a hot change of alpha0).
        shifts = {"FD": (alpha0, alpha0), "RFD": (rfd.alpha - delta / 2 if shrink else alpha0, rfd.alpha)}
        traces = {}
        for name, (before_shift, after_shift) in shifts.items():
            traces[f"{name} before"] = {"x": x[:sigma2.size], "y": _pad(sigma2, size)[:sigma2.size] + before_shift}
            traces[f"{name} after"] = {"x": x, "y": _pad(after, size) + after_shift}
            traces[f"{name} delta"] = {"x": level, "y": np.full(2, delta + before_shift)}
            traces[f"{name} exact"] = {"x": x, "y": self.sketches.eigenvalues()[:size] + alpha0}
        axis = log_axis(self.log_spectrum)
        directions = {"dtick": figures.direction_dtick(size)}  # a readable label step at m = 50 too
        self.plots["spectrum"].update(traces, layout={"yaxis": axis, "yaxis2": axis,
                                                      "xaxis": directions, "xaxis2": directions})

    def _summary(self) -> str:
        """The latest step's record as one line of text."""
        point, v = self.history.last(), self.spectrum_of
        shrink = self.sketches.last_shrink(v)
        last = (f"last shrink ({v}) at t = {int(shrink['t'][0])}: δ = {shrink['delta'][0]:.4g}"
                if shrink else f"no shrink yet ({v}): the buffer still has free rows")
        return (f"**Latest:** {last} · α = {point['alpha_exact']:.4g} (exact), "
                f"{point['alpha_fast']:.4g} (fast) · error FD {point['error_fd_exact']:.4g} ≤ "
                f"{point['bound_fd']:.4g}, RFD {point['error_rfd_exact']:.4g} ≤ {point['bound_rfd']:.4g}")


def _pad(values: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size)
    out[:min(size, values.size)] = values[:size]
    return out

