r"""The sketching page: Frequent Directions against Robust FD on the same stream.

Four sketches read every row: FD and RFD (docs/algorithms.md sections 1-2; Luo et al. 2017,
Algorithms 1-4), each exact (one shrink per row once full) and fast (doubling space).
FD and RFD hold the same ``B``; RFD adds :math:`\alpha = \alpha_0 + \Delta/2`. After every
step the page records, from a running :math:`A^T A` (d x d, O(d^2) per row):

- the spectral errors :math:`\|A^T A - B^T B\|_2` (FD) and
  :math:`\|A^T A + \alpha_0 I - (B^T B + \alpha I)\|_2` (RFD), the quantity of
  :func:`explorer.metrics.covariance_error`, against the FD bound
  :math:`\min_{k<m} \|A - A_k\|_F^2 / (m - k)` and RFD's half of it (Theorem 3);
- the condition numbers of :math:`B^T B + \alpha_0 I` and :math:`B^T B + \alpha I`
  (:func:`explorer.metrics.sketch_condition_numbers`, Theorem 4) and of the exact
  :math:`A^T A + \alpha_0 I`;
- alpha, and the last shrink (a :class:`~explorer.hooks.Recorder` on each RFD sketch).

Working from :math:`A^T A` costs O(d^3) per recorded point whatever t is, where
``covariance_error(A, sketch)`` would redo O(t d^2); the tests check both agree.
alpha0 is hot: ``B`` does not depend on it, so it applies mid-stream.
"""

from __future__ import annotations

import numpy as np
import panel as pn
import param
import scipy.linalg

from ...hooks import Recorder
from ...metrics import sketch_condition_numbers
from ...sketch import FrequentDirections, RobustFrequentDirections
from ..live import LivePlot, finite, plot_cell
from ..page import Page
from . import sketching_figures as figures

__all__ = ["SketchingPage", "VARIANTS"]

VARIANTS = ("exact", "fast")
TITLES = {"spectrum": "Spectrum at the last shrink", "alpha": "α = α₀ + Δ/2 over the stream",
          "error": "Covariance error against the bounds", "condition": "Condition numbers (Theorem 4)"}
EXPLAIN = {
    "spectrum": "A shrink subtracts δ = σ_m² from every σᵢ² (light bars: before, dark: "
                "after). RFD keeps the same B but lifts every direction by α, so it errs by "
                "at most Δ/2 either way; FD can only under-estimate. Grey: the exact spectrum.",
    "alpha": "Every shrink adds δ/2 to α: the mass FD throws away, given back evenly to all "
             "directions (Luo et al. 2017, Algorithm 3). FD keeps α₀.",
    "error": "Measured errors stay below the bounds: FD ≤ min_k ‖A − A_k‖²_F / (m − k), "
             "RFD ≤ half of it (Theorem 3).",
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

    spectrum_of = param.Selector(default="exact", objects=list(VARIANTS),
                                 doc="Which variant's last shrink the spectrum shows.")
    log_spectrum = param.Boolean(default=True, doc="Log scale for the spectrum.")

    # -- algorithms -----------------------------------------------------------------------
    def _build(self, X: np.ndarray) -> None:
        d, m = X.shape[1], self.settings.m
        self.fd = {v: FrequentDirections(d, m, fast=v == "fast") for v in VARIANTS}
        self.rfd = {v: RobustFrequentDirections(d, m, alpha0=self.settings.alpha0, fast=v == "fast")
                    for v in VARIANTS}
        self.recorders = {v: Recorder(kinds=("shrink",), limit=1) for v in VARIANTS}
        for v in VARIANTS:
            self.rfd[v].add_hook(self.recorders[v])
        self._gram = np.zeros((d, d))
        self.eigenvalues = np.zeros(d)

    def _advance(self, rows: np.ndarray) -> None:
        for v in VARIANTS:
            self.fd[v].extend(rows)
            self.rfd[v].extend(rows)
        self._gram += rows.T @ rows

    def apply_hot(self, name: str) -> None:
        if name != "alpha0":
            return super().apply_hot(name)
        for sketch in self.rfd.values():
            sketch.alpha0 = self.settings.alpha0  # alpha = alpha0 + Delta/2 follows
        self.update_notes()
        self.record()

    def _notes(self) -> list[str]:
        d, m = self._X.shape[1], self.settings.m
        notes = []
        if m >= d:
            notes.append(f"m = {m} ≥ d = {d}: the sketch has room for every direction, so "
                         f"nothing is ever shrunk away (δ = 0). Choose m < d to see FD at work.")
        if self.settings.alpha0 == 0:
            notes.append("α₀ = 0 (the JMLR 'hyperparameter-free' setting): BᵀB + α₀I is "
                         "singular while rank(B) < d, so FD's condition number is ∞ and not "
                         "drawn; RFD's α turns positive at the first shrink.")
        return notes

    # -- measurements -----------------------------------------------------------------------
    def _measure(self) -> dict[str, float]:
        lam = scipy.linalg.eigvalsh(self._gram, check_finite=False)[::-1]
        lam[lam <= 1e-12 * max(lam[0], 0.0)] = 0.0  # rank-deficient A^T A: exactly singular
        self.eigenvalues = lam
        alpha0 = self.settings.alpha0
        point = {"bound_fd": best_fd_bound(lam, self.settings.m),
                 "kappa_exact": _ratio(lam[0] + alpha0, lam[-1] + alpha0)}
        point["bound_rfd"] = point["bound_fd"] / 2
        for v in VARIANTS:
            fd, rfd = self.fd[v], self.rfd[v]
            point[f"error_fd_{v}"] = spectral_error(self._gram, fd.rows, 0.0)
            point[f"error_rfd_{v}"] = spectral_error(self._gram, rfd.rows, alpha0 - rfd.alpha)
            kappa = sketch_condition_numbers(rfd)
            point[f"kappa_fd_{v}"], point[f"kappa_rfd_{v}"] = kappa["fd"], kappa["rfd"]
            point[f"alpha_{v}"] = rfd.alpha
        return point

    def last_shrink(self, variant: str) -> dict[str, np.ndarray]:
        """The Recorder's columns for the last shrink of the ``variant`` RFD sketch ({} if none)."""
        return self.recorders[variant].columns("shrink")

    # -- Back -------------------------------------------------------------------------------
    def _state(self) -> dict:
        return {"fd": {v: self.fd[v].state_dict() for v in VARIANTS},
                "rfd": {v: self.rfd[v].state_dict() for v in VARIANTS},
                "shrink": {v: self.recorders[v].events("shrink") for v in VARIANTS}}

    def _load(self, state: dict) -> None:
        for v in VARIANTS:
            self.fd[v] = FrequentDirections.from_state_dict(state["fd"][v])
            self.rfd[v] = RobustFrequentDirections.from_state_dict(state["rfd"][v])
            self.rfd[v].alpha0 = self.settings.alpha0  # hot: today's alpha0, not the snapshot's
            self.recorders[v].replace(state["shrink"][v])
            self.rfd[v].add_hook(self.recorders[v])
        seen = self._X[:self.t]
        self._gram = seen.T @ seen

    # -- views --------------------------------------------------------------------------------
    def _make_views(self):
        self.plots = {"spectrum": LivePlot(figures.spectrum_figure()),
                      "alpha": LivePlot(figures.alpha_figure()),
                      "error": LivePlot(figures.error_figure()),
                      "condition": LivePlot(figures.condition_figure())}
        self.summary = pn.pane.Markdown("", margin=(0, 10))
        options = pn.Row(
            pn.widgets.RadioButtonGroup.from_param(self.param.spectrum_of, label="spectrum of"),
            pn.widgets.Checkbox.from_param(self.param.log_spectrum, label="log scale"),
            align="center")
        self.param.watch(lambda *_: self._update_views(), ["spectrum_of", "log_spectrum"])
        cells = [plot_cell(TITLES[name], EXPLAIN[name], plot, *([options] if name == "spectrum" else []))
                 for name, plot in self.plots.items()]
        return pn.Column(self.summary, pn.GridBox(*cells, ncols=2, sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")

    def _update_views(self) -> None:
        h = self.history
        t = h["t"]
        self.plots["alpha"].update({
            "RFD α (exact)": {"x": t, "y": h["alpha_exact"]},
            "RFD α (fast)": {"x": t, "y": h["alpha_fast"]},
            "FD: α₀ (fixed)": {"x": t, "y": np.full(t.size, self.settings.alpha0)}})
        self.plots["error"].update({
            **{f"{a.upper()} error ({v})": {"x": t, "y": h[f"error_{a}_{v}"]}
               for a in ("fd", "rfd") for v in VARIANTS},
            "FD bound": {"x": t, "y": h["bound_fd"]},
            "RFD bound (half)": {"x": t, "y": h["bound_rfd"]}})
        self.plots["condition"].update({
            **{f"κ(BᵀB + {'α₀' if a == 'fd' else 'α'}I) {a.upper()} ({v})":
               {"x": t, "y": finite(h[f"kappa_{a}_{v}"])} for a in ("fd", "rfd") for v in VARIANTS},
            "κ(AᵀA + α₀I) exact": {"x": t, "y": finite(h["kappa_exact"])}})
        self._update_spectrum()
        self.summary.object = self._summary()

    def _update_spectrum(self) -> None:
        """Bars of the last shrink of the chosen variant, in both panels, with the exact spectrum."""
        rfd, alpha0 = self.rfd[self.spectrum_of], self.settings.alpha0
        shrink = self.last_shrink(self.spectrum_of)
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
            traces[f"{name} exact"] = {"x": x, "y": self.eigenvalues[:size] + alpha0}
        axis = {"type": "log", "dtick": 1} if self.log_spectrum else {"type": "linear", "dtick": None}
        self.plots["spectrum"].update(traces, layout={"yaxis": axis, "yaxis2": axis})

    def _summary(self) -> str:
        """The latest step's record as one line of text."""
        point, v = self.history.last(), self.spectrum_of
        shrink = self.last_shrink(v)
        last = (f"last shrink ({v}) at t = {int(shrink['t'][0])}: δ = {shrink['delta'][0]:.4g}"
                if shrink else f"no shrink yet ({v}): the buffer still has free rows")
        return (f"**Latest:** {last} · α = {point['alpha_exact']:.4g} (exact), "
                f"{point['alpha_fast']:.4g} (fast) · error FD {point['error_fd_exact']:.4g} ≤ "
                f"{point['bound_fd']:.4g}, RFD {point['error_rfd_exact']:.4g} ≤ {point['bound_rfd']:.4g}")


def spectral_error(gram: np.ndarray, B: np.ndarray, shift: float) -> float:
    """``||gram - B^T B + shift I||_2`` for a symmetric ``gram`` (largest |eigenvalue|)."""
    error = gram - B.T @ B
    error[np.diag_indices_from(error)] += shift
    ends = scipy.linalg.eigvalsh(error, check_finite=False)[[0, -1]]
    return float(np.max(np.abs(ends)))


def best_fd_bound(eigenvalues: np.ndarray, m: int) -> float:
    """``min_{0<=k<m} sum_{i>k} lambda_i / (m - k)`` from the eigenvalues of A^T A (descending).

    The same number as :func:`explorer.metrics.best_fd_bound` (``lambda_i = sigma_i(A)^2``).
    """
    squared = np.zeros(max(m, eigenvalues.size))
    squared[:eigenvalues.size] = eigenvalues
    tails = np.cumsum(squared[::-1])[::-1][:m]
    return float(np.min(tails / (m - np.arange(m))))


def _pad(values: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size)
    out[:min(size, values.size)] = values[:size]
    return out


def _ratio(largest: float, smallest: float) -> float:
    return np.inf if smallest <= 0.0 else largest / smallest
