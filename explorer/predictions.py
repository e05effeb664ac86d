r"""Predict, then reveal: one question per dashboard page, answered by the page's own state.

Each page of the dashboard (``sketching``, ``newton``, ``adagrad``, ``pca``, ``fm``) has one
:class:`Prediction` in :data:`PREDICTIONS`: a short ``guide`` (what to watch and when), a
``question`` and its :meth:`~Prediction.choices`, asked before the student plays the
stream, and :meth:`~Prediction.reveal`, which answers it from what the page shows: its
public attributes (``t``, ``n_rows``, ``settings``, ``history``) and its race's public
``stopped``. Asking for a prediction before the chart is seen improves recall (Kim,
Reinecke & Hullman, CHI 2017). No Panel here: :mod:`explorer.dashboard.predict` draws it.

A question is of one of two kinds. *Lowest*: which choice ends with the lowest value (a
loss, an error); when the two lowest are within :data:`TIE` of each other the answer is
"a tie within 1%". *Bracket*: in which of the ranges split at ``edges`` one measured value
ends; within :data:`TIE` of an edge the answer is a tie too. The number of choices of a
page never depends on its settings, so a committed choice (an index) keeps its meaning.

>>> from explorer.dashboard.pages.sketching import SketchingPage
>>> from explorer.dashboard.settings import Settings
>>> page = SketchingPage(Settings(n=60, d=8, m=4))
>>> sketching = PREDICTIONS["sketching"]
>>> len(sketching.choices(page))
3
>>> _ = page.step(60)
>>> answer, numbers = sketching.reveal(page)
>>> answer in sketching.choices(page), numbers.startswith("t = 60 of 60 (the end)")
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Prediction", "PREDICTIONS", "TIE"]

TIE = 0.01
"""Two values closer than this, relative to the larger magnitude, are a tie."""


def _num(value: float) -> str:
    """A measured value with three significant digits, or whole from 1000 on (``nan``: "–")."""
    if not math.isfinite(value):
        return "–"
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= TIE * max(abs(a), abs(b))


@dataclass(frozen=True)
class Prediction:
    """One page's question. ``labels`` are its choices; ``values(page)`` measures them now:
    for a *lowest* question (``edges`` empty) one value per choice, lower is better
    (``nan``: that choice is not racing); for a *bracket* question a single value, and the
    choice ``i`` is the range between ``edges[i - 1]`` and ``edges[i]`` (ascending).
    ``what`` names the value, ``note(page)`` adds context to the numbers.

    >>> p = Prediction("Watch t.", "Which is lowest?", ("a", "b"), "loss",
    ...                lambda page: (2.0, 1.0))
    >>> class Page: t, n_rows = 5, 5
    >>> p.reveal(Page())
    ('b', 't = 5 of 5 (the end): loss a 2, b 1.')
    >>> p.gap(Page(), 0)
    'a ended at 2, 1 (100%) above b at 1.'
    """

    guide: str
    question: str
    labels: tuple[str, ...]
    what: str
    values: Callable[[object], tuple[float, ...]]
    edges: tuple[float, ...] = ()
    note: Callable[[object], str] = lambda page: ""

    def choices(self, page) -> tuple[str, ...]:
        """The answers offered (the same number on every setting of the page)."""
        return self.labels

    def _measured(self, page) -> tuple[float, ...]:
        return tuple(float(v) for v in self.values(page))

    def _when(self, page) -> str:
        return f"t = {page.t} of {page.n_rows} ({'the end' if page.t >= page.n_rows else 'before the end'})"

    def reveal(self, page) -> tuple[str, str]:
        """``(answer, numbers)`` on the page now: the answer is one of :meth:`choices`, "a
        tie within 1%: ..." or "no answer: ..."; ``numbers`` start with the row ``t``."""
        values = self._measured(page)
        note = self.note(page)
        tail = f" {note}" if note else ""
        if self.edges:
            value = values[0]
            numbers = f"{self._when(page)}: {self.what} {_num(value)}.{tail}"
            return self._bracket(value), numbers
        shown = ", ".join(f"{label} {_num(v)}" for label, v in zip(self.labels, values))
        return self._lowest(values), f"{self._when(page)}: {self.what} {shown}.{tail}"

    def _lowest(self, values: tuple[float, ...]) -> str:
        ranked = sorted((v, i) for i, v in enumerate(values) if math.isfinite(v))
        if not ranked:
            return "no answer: no choice has a value yet"
        if len(ranked) > 1 and _close(ranked[0][0], ranked[1][0]):
            return f"a tie within {TIE:.0%}: {self.labels[ranked[0][1]]} and {self.labels[ranked[1][1]]}"
        return self.labels[ranked[0][1]]

    def _bracket(self, value: float) -> str:
        if not math.isfinite(value):
            return "no answer: the value cannot be measured on these settings"
        for i, edge in enumerate(self.edges):
            if _close(value, edge):
                return (f"a tie within {TIE:.0%}: on the edge {_num(edge)} between "
                        f"{self.labels[i]} and {self.labels[i + 1]}")
        return self.labels[sum(value > edge for edge in self.edges)]

    def gap(self, page, choice: int) -> str:
        """How far the predicted ``choice`` (an index of :meth:`choices`) is from the answer,
        in numbers."""
        values, label = self._measured(page), self.labels[choice]
        answer = self.reveal(page)[0]
        if self.edges:
            value = values[0]
            low = self.edges[choice - 1] if choice > 0 else -math.inf
            high = self.edges[choice] if choice < len(self.edges) else math.inf
            if not math.isfinite(value):
                return "No value to compare with."
            if low <= value <= high:
                return f"{_num(value)} lies inside your range ({label})."
            side, edge = ("above", high) if value > high else ("below", low)
            return f"{_num(value)} lies {_num(abs(value - edge))} {side} your range ({label}, edge {_num(edge)})."
        mine = values[choice]
        if not math.isfinite(mine):
            return f"{label} has no value: it is not racing (switched off or stopped)."
        best = min((v, i) for i, v in enumerate(values) if math.isfinite(v))
        if best[1] == choice or answer.startswith("a tie") and _close(mine, best[0]):
            return f"{label} ended lowest, at {_num(mine)}."
        above = mine - best[0]
        share = f" ({above / abs(best[0]):.0%})" if best[0] != 0 else ""
        return (f"{label} ended at {_num(mine)}, {_num(above)}{share} above "
                f"{self.labels[best[1]]} at {_num(best[0])}.")


def _last(page) -> dict[str, float]:
    return page.history.last() if len(page.history) else {}


def _running(page, key: str, column: str, sign: float = 1.0) -> float:
    """``sign`` times the latest ``column``, ``nan`` for a learner that stopped or is absent."""
    if key in page.race.stopped:
        return math.nan
    return sign * float(_last(page).get(column, math.nan))


# -- sketching --------------------------------------------------------------------------

def _error_ratio(page) -> tuple[float]:
    point = _last(page)
    fd, rfd = point.get("error_fd_exact", math.nan), point.get("error_rfd_exact", math.nan)
    return (rfd / fd if fd > 0 else math.nan,)


def _sketching_note(page) -> str:
    p = _last(page)
    return (f"Covariance error of the exact sketches: FD {_num(p.get('error_fd_exact', math.nan))} "
            f"(bound {_num(p.get('bound_fd', math.nan))}), RFD {_num(p.get('error_rfd_exact', math.nan))} "
            f"(half bound {_num(p.get('bound_rfd', math.nan))}).")


SKETCHING = Prediction(
    guide=("The first shrink comes at row t = m (10 on the defaults): watch RFD's α jump above α₀ "
           "and the exact sketches' covariance errors leave 0. The fast sketches (a 2m-row "
           "buffer) shrink first at t = 2m, then every m + 1 rows (the dotted marks). From then "
           "on, follow FD's and RFD's errors against the bounds to the end of the stream."),
    question=("At the end of the stream, how large will RFD's covariance error ‖AᵀA − BᵀB − αI‖ "
              "be, as a share of FD's ‖AᵀA − BᵀB‖ (both exact sketches, the same B)?"),
    labels=("less than a quarter of FD's", "between a quarter and three quarters of FD's",
            "more than three quarters of FD's"),
    what="RFD's error / FD's error",
    values=_error_ratio, edges=(0.25, 0.75), note=_sketching_note)


# -- newton ------------------------------------------------------------------------------

NEWTON_CHOICES = ("RFD-SON", "FD-SON", "RP-SON", "ADAGRAD")


def _newton_totals(page) -> tuple[float, ...]:
    totals, stopped = page.race.totals, page.race.stopped
    return tuple(float(totals[name]) if name in totals and name not in stopped else math.nan
                 for name in NEWTON_CHOICES)


def _newton_note(page) -> str:
    totals = page.race.totals
    if "FULL-ON" in totals and "FULL-ON" not in page.race.stopped:
        return f"FULL-ON, the exact Newton step, for scale: {_num(float(totals['FULL-ON']))}."
    return ""


NEWTON = Prediction(
    guide=("Watch the regret plot (each learner's total loss minus that of w*, the best fixed "
           "predictor): the curves separate in the first 100 rows. RFD-SON and FD-SON share one "
           "sketch and differ only in α (the α plot): which of the two is ahead changes for the "
           "last time only after row 400 on the defaults, so keep watching to the end."),
    question=("Which of the sketched learners and ADAGRAD ends the stream with the lowest total "
              "loss? (FULL-ON, the exact O(d²) Newton step, is the yardstick, not a choice.)"),
    labels=NEWTON_CHOICES, what="total loss", values=_newton_totals, note=_newton_note)


# -- adagrad -----------------------------------------------------------------------------

def _ffd_over_full(page) -> tuple[float]:
    full, ffd = _running(page, "full", "regret_full"), _running(page, "ffd", "regret_ffd")
    return (ffd / full if full > 0 else math.nan,)


def _adagrad_note(page) -> str:
    p = _last(page)
    return ("Regret: " + ", ".join(f"{name} {_num(p.get(f'regret_{key}', math.nan))}" for key, name in
                                   (("full", "ADA-FULL"), ("ffd", "ADA-FFD"), ("diag", "ADA-DIAG")))
            + ".")


ADAGRAD = Prediction(
    guide=("ADA-FFD's rank (the rank plot) climbs by one a row to 2τ (τ = m = 10 on the "
           "defaults) and at t = 2τ = 20 falls to τ − 1 = 9; then the saw-tooth repeats every "
           "τ + 1 = 11 rows. In the regret plot, watch ADA-FFD, which keeps τ directions, "
           "against ADA-FULL (grey), which keeps all d, and ADA-DIAG, up to the end."),
    question=("At the end of the stream, what will ADA-FFD's regret be, as a multiple of "
              "ADA-FULL's (the exact proximal matrix)?"),
    labels=("at most 1.25 times ADA-FULL's", "between 1.25 and 2 times ADA-FULL's",
            "more than twice ADA-FULL's"),
    what="ADA-FFD's regret / ADA-FULL's", values=_ffd_over_full, edges=(1.25, 2.0), note=_adagrad_note)


# -- pca ---------------------------------------------------------------------------------

PCA_CHOICES = (("adaptive", "adaptive PCA"), ("static", "static online PCA"), ("ftl", "Follow the Leader"))


def _pca_losses(page) -> tuple[float, ...]:
    return tuple(_running(page, key, f"loss_{key}") for key, _ in PCA_CHOICES)


PCA = Prediction(
    guide=("The stream switches to a new random subspace every 200 rows on the defaults "
           "(dotted verticals at t = 200, 400, 600, 800): watch every method's overlap drop at "
           "each switch. Then count the rows each one needs to get back above 0.9, and watch how "
           "the cumulative losses grow in the rows after a switch."),
    question="Which method ends the stream with the lowest cumulative (expected) loss?",
    labels=tuple(name for _, name in PCA_CHOICES), what="cumulative loss", values=_pca_losses,
    note=lambda page: (f"The best fixed projection in hindsight, for scale: "
                       f"{_num(_last(page).get('loss_best', math.nan))}."))


# -- fm ----------------------------------------------------------------------------------

FM_CHOICES = (("sftrl", "S-FTRL (sketch)"), ("ftrl", "FTRL (full Θ)"), ("ogd", "OGD (full Θ)"))


def _fm_errors(page) -> tuple[float, ...]:
    """The progressive RMSE on ratings, 1 − AUC on binary labels: lower is better."""
    return tuple(_running(page, key, f"metric_{key}") if page.ratings
                 else 1.0 - _running(page, key, f"metric_{key}") for key, _ in FM_CHOICES)


def _fm_note(page) -> str:
    reference = _last(page).get("reference", math.nan)
    if page.ratings:
        return f"The progressive error is the RMSE; the running mean rating's: {_num(reference)}."
    return f"The progressive error is 1 − AUC; chance's: {_num(1.0 - reference)}."


FM = Prediction(
    guide=("Every learner starts at Θ = 0, predicting 0 stars, so every progressive RMSE starts "
           "high and falls. Watch S-FTRL's RMSE cross the running mean rating's (dashed): around "
           "row 400 on the defaults. S-FTRL keeps m rows in each of its two sketches; FTRL and "
           "OGD keep the whole (d + 1) × (d + 1) matrix."),
    question=("Which learner ends the stream with the lowest progressive error (the RMSE on "
              "ratings, 1 − AUC on binary labels)?"),
    labels=tuple(name for _, name in FM_CHOICES), what="progressive error", values=_fm_errors,
    note=_fm_note)


PREDICTIONS: dict[str, Prediction] = {
    "sketching": SKETCHING, "newton": NEWTON, "adagrad": ADAGRAD, "pca": PCA, "fm": FM}
"""The prediction of each dashboard page, by the page's key."""
