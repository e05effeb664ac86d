r"""Challenges that check themselves: small tasks on each dashboard page, checked on its live state.

Each page of the dashboard (``sketching``, ``newton``, ``adagrad``, ``pca``, ``fm``) offers
two or three :class:`Challenge`\ s in :data:`CHALLENGES`. A challenge is data: the task, a
hint, the solution (text, never markup) and ``check(page) -> (solved, feedback)``, where
``feedback`` says what is measured now, with its numbers. A check reads only what the page
shows: its public attributes (``t``, ``n_rows``, ``settings``, ``history``, its options)
and its race's public methods, so the same rule holds on a page driven by a test, a
notebook or the browser. No Panel here: :mod:`explorer.dashboard.challenges` draws them.

>>> from explorer.dashboard.pages.sketching import SketchingPage
>>> from explorer.dashboard.settings import Settings
>>> page = SketchingPage(Settings(n=60, d=8, m=4))
>>> first_shrink = CHALLENGES["sketching"][0]
>>> first_shrink.check(page)
(False, 't = 0: no shrink yet, RFD (exact) α = 1 = α₀; B holds 0 of m = 4 rows.')
>>> page.step(4)
4
>>> first_shrink.check(page)[0]
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Challenge", "CHALLENGES", "check"]


@dataclass(frozen=True)
class Challenge:
    """One task on a page: ``key`` (unique on the page), ``task``, ``hint`` and
    ``solution`` (plain text), and ``rule(page) -> (solved, feedback)``, called by
    :meth:`check`.

    >>> c = Challenge("t10", "Step to t = 10.", "Press Step.", "Press Step ten times.",
    ...               lambda page: (page.t >= 10, f"t = {page.t}"))
    >>> class Page: t = 3
    >>> c.check(Page())
    (False, 't = 3')
    """

    key: str
    task: str
    hint: str
    solution: str
    rule: Callable[[object], tuple[bool, str]]

    def check(self, page) -> tuple[bool, str]:
        """``(solved, feedback)`` on the page's state now; feedback gives the numbers measured."""
        solved, feedback = self.rule(page)
        return bool(solved), str(feedback)


def check(page, key: str) -> tuple[bool, str]:
    """Check challenge ``key`` of ``page`` (its ``page.key`` picks the list); ``KeyError``
    for a key the page does not offer."""
    for challenge in CHALLENGES[page.key]:
        if challenge.key == key:
            return challenge.check(page)
    raise KeyError(f"page {page.key!r} has no challenge {key!r}")


def _num(value: float) -> str:
    """A measured value with three significant digits (``inf`` and ``nan`` as such)."""
    return f"{value:.3g}" if math.isfinite(value) else str(value)


def _last(page) -> dict[str, float]:
    """The page's latest recorded point (empty before the first)."""
    history = page.history
    return history.last() if len(history) else {}


# -- sketching --------------------------------------------------------------------------

def _first_shrink(page) -> tuple[bool, str]:
    rfd, alpha0, m = page.race.rfd["exact"], page.settings.alpha0, page.settings.m
    if rfd.alpha > alpha0:
        return True, (f"t = {page.t}: RFD (exact) α = {_num(rfd.alpha)} > α₀ = {_num(alpha0)}: "
                      f"a shrink gave δ/2 = {_num(rfd.alpha - alpha0)} back to every direction.")
    held = min(page.t, m)
    return False, (f"t = {page.t}: no shrink yet, RFD (exact) α = {_num(rfd.alpha)} = α₀; "
                   f"B holds {held} of m = {m} rows.")


def _no_loss(page) -> tuple[bool, str]:
    d, m, point = page.race.d, page.settings.m, _last(page)
    delta = point.get("delta_exact", 0.0)
    solved = page.t >= 100 and delta == 0 and point.get("t", -1) == page.t
    return solved, (f"t = {page.t} (at least 100 asked), d = {d}, m = {m}: "
                    f"Δ (FD exact) = {_num(delta)}" + (" — nothing was shrunk away." if solved else "."))


def _condition_gap(page) -> tuple[bool, str]:
    point = _last(page)
    fd, rfd = point.get("kappa_fd_exact", math.nan), point.get("kappa_rfd_exact", math.nan)
    ratio = fd / rfd if rfd > 0 else math.nan
    if page.t < 200:
        return False, f"t = {page.t} (at least 200 asked): κ(FD) / κ(RFD) = {_num(ratio)} so far."
    if not math.isfinite(fd):
        return False, (f"t = {page.t}: κ(FD) = ∞ (α₀ = 0 leaves BᵀB singular), not a number to "
                       f"compare: take α₀ > 0.")
    return ratio >= 100, (f"t = {page.t}, α₀ = {_num(page.settings.alpha0)}: κ(FD) = {_num(fd)}, "
                          f"κ(RFD) = {_num(rfd)}, ratio {_num(ratio)} (100 asked).")


SKETCHING = (
    Challenge(
        "first-shrink",
        "Make RFD's α jump: step until the first shrink.",
        "A shrink happens when the buffer B is full: it has room for m rows.",
        "Press Step (or →) one row at a time from t = 0. At t = m (10 on the defaults) the "
        "exact sketch shrinks for the first time and α = α₀ + δ/2 jumps above α₀.",
        _first_shrink),
    Challenge(
        "no-loss",
        "Make the sketch lossless: choose d and m so that FD shrinks nothing away "
        "(Δ = 0) over at least 100 rows.",
        "δ = σ_m² of the buffer. When can the m-th singular value of rows in d dimensions be 0?",
        "Set d = 10 and m = 11 in the sidebar (any m > d), then Step 100 rows: B has room for "
        "every direction, so σ_m = 0 and every δ is 0.",
        _no_loss),
    Challenge(
        "condition-gap",
        "Find an α₀ for which FD's condition number is at least 100 times RFD's after 200 rows "
        "(Theorem 4).",
        "FD keeps α₀ while RFD's α grows with every shrink: the smaller α₀, the worse FD's "
        "BᵀB + α₀I is conditioned. α₀ = 0 makes it infinite, which does not count.",
        "Set α₀ = 0.01 (or 0.001) and play at least 200 rows: κ(FD) ≈ 24000 against "
        "κ(RFD) ≈ 30 at t = 200 on the defaults.",
        _condition_gap),
)


# -- newton ------------------------------------------------------------------------------

def _totals(page) -> dict[str, float]:
    return {name: float(total) for name, total in page.race.totals.items()}


def _rfd_beats_fd(page) -> tuple[bool, str]:
    totals = _totals(page)
    rfd, fd = totals.get("RFD-SON", math.nan), totals.get("FD-SON", math.nan)
    ratio = rfd / fd if fd > 0 else math.nan
    solved = page.t >= 300 and ratio <= 0.6
    return solved, (f"t = {page.t} (at least 300 asked), α₀ = {_num(page.settings.alpha0)}: "
                    f"total loss RFD-SON {_num(rfd)}, FD-SON {_num(fd)}, ratio {_num(ratio)} "
                    f"(0.6 or less asked).")


def _adagrad_keeps_up(page) -> tuple[bool, str]:
    totals = _totals(page)
    rfd, adagrad = totals.get("RFD-SON", math.nan), totals.get("ADAGRAD", math.nan)
    ratio = adagrad / rfd if rfd > 0 else math.nan
    solved = page.t >= 300 and ratio <= 1.02
    return solved, (f"t = {page.t} (at least 300 asked): total loss ADAGRAD {_num(adagrad)}, "
                    f"RFD-SON {_num(rfd)}, ratio {_num(ratio)} (1.02 or less asked).")


NEWTON = (
    Challenge(
        "rfd-without-tuning",
        "Find an α₀ at which FD-SON suffers and RFD-SON does not: RFD-SON's total loss after "
        "300 rows at most 0.6 times FD-SON's (same m).",
        "FD-SON's curvature is BᵀB + α₀I with a fixed α₀; RFD-SON adds back α, the mass its "
        "sketch shrank away. Try small values of α₀.",
        "Set α₀ = 0.01 in the sidebar and play 300 rows: RFD-SON ≈ 291 against FD-SON ≈ 562 "
        "on the defaults (ratio ≈ 0.52); at α₀ = 1 the two are level.",
        _rfd_beats_fd),
    Challenge(
        "adagrad-keeps-up",
        "Find labels on which the Newton step's advantage is gone: ADAGRAD's total loss after "
        "300 rows within 2% of RFD-SON's, or below it.",
        "The page plants the labels on the whitened rows so the faint directions count. What "
        "if most of the label rides on the strong directions?",
        "Switch the option 'labels' to 'raw' (the stream restarts) and play 300 rows: ADAGRAD "
        "≈ 172 against RFD-SON ≈ 172.",
        _adagrad_keeps_up),
)


# -- adagrad -----------------------------------------------------------------------------

def _rank_falls(page) -> tuple[bool, str]:
    race, tau = page.race, page.settings.m
    rank = int(race.learners["ffd"].rank)
    shrinks = race.shrink_times("ffd")
    just_shrunk = len(shrinks) > 0 and int(shrinks[-1]) == page.t
    solved = just_shrunk and rank == tau - 1
    where = (f"last shrink at t = {int(shrinks[-1])}" if len(shrinks) else "no shrink yet")
    return solved, (f"t = {page.t}: ADA-FFD's rank is {rank} (τ = m = {tau}: it shrinks on "
                    f"reaching 2τ = {2 * tau}, to τ − 1 = {tau - 1}); {where}.")


def _diag_wins(page) -> tuple[bool, str]:
    race = page.race
    diag, ffd = race.cumulative_loss("diag"), race.cumulative_loss("ffd")
    solved = page.t >= 300 and diag < ffd
    return solved, (f"t = {page.t} (at least 300 asked), η = {_num(page.settings.eta)}: "
                    f"cumulative loss ADA-DIAG {_num(diag)}, ADA-FFD {_num(ffd)}.")


ADAGRAD = (
    Challenge(
        "rank-falls",
        "Watch ADA-FFD's rank fall to τ − 1: stop exactly on the round of a shrink.",
        "The rank grows by one a round; the figure's dashed lines mark 2τ (where it shrinks) "
        "and τ − 1 (where it lands). Step one row at a time near 2τ.",
        "On the defaults (m = τ = 10), Step to t = 19 (rank 19), then Step once more: at "
        "t = 20 ADA-FFD shrinks and its rank reads 9 = τ − 1.",
        _rank_falls),
    Challenge(
        "diag-wins",
        "Find a step size η for which the diagonal AdaGrad (ADA-DIAG) has a lower cumulative "
        "loss than ADA-FFD after 300 rows.",
        "At η = 0.1 the sketched full-matrix variants lead. The step size is shared by all "
        "learners: try a smaller one.",
        "Set η = 0.01 in the sidebar and play 300 rows: ADA-DIAG's regret ≈ 29 against "
        "ADA-FFD's ≈ 54.",
        _diag_wins),
)


# -- pca ---------------------------------------------------------------------------------

def _quick_recovery(page) -> tuple[bool, str]:
    h, length = page.history, page.segment_length
    if not len(h):
        return False, f"t = {page.t}: nothing recorded yet."
    t, segment, overlap = h["t"], h["segment"], h["overlap_adaptive"]
    start = segment * length  # the round after which this point's segment began
    since = t - start
    recovered = (segment >= 1) & (since > 0) & (since <= 10) & (overlap >= 0.95)
    if recovered.any():
        i = int(np.flatnonzero(recovered)[0])
        return True, (f"t = {int(t[i])}, {int(since[i])} rounds after the switch at "
                      f"t = {int(start[i])}: overlap {_num(float(overlap[i]))} ≥ 0.95 "
                      f"(α = {_num(page.alpha)}).")
    after = (segment >= 1) & (since > 0) & (since <= 10)
    if after.any():
        i = int(np.flatnonzero(after)[-1])
        return False, (f"{int(since[i])} rounds after the switch at t = {int(start[i])}: "
                       f"adaptive PCA's overlap is {_num(float(overlap[i]))} (0.95 asked within "
                       f"10 rounds; α = {_num(page.alpha)}).")
    return False, (f"t = {page.t}: no recorded point within 10 rounds after a switch yet (the "
                   f"first switch is at t = {length}); α = {_num(page.alpha)}.")


def _static_lags(page) -> tuple[bool, str]:
    point = _last(page)
    adaptive, static = point.get("overlap_adaptive", math.nan), point.get("overlap_static", math.nan)
    solved = point.get("segment", 0) >= 1 and adaptive >= 0.9 and static <= 0.2
    return solved, (f"t = {page.t}, segment {int(point.get('segment', 0))}: overlap with the "
                    f"current subspace, adaptive PCA {_num(adaptive)}, static online PCA "
                    f"{_num(static)} (≥ 0.9 and ≤ 0.2 asked, after a switch).")


PCA = (
    Challenge(
        "quick-recovery",
        "Find an α for which adaptive PCA is back on the new subspace (overlap ≥ 0.95) "
        "within 10 rounds after a switch.",
        "α is the fixed share: the weight every direction keeps, so a forgotten direction can "
        "come back quickly. The default 10⁻⁵ is slow; step in small steps after the switch.",
        "Set α = 0.1, Step to t = 200 (the first switch on the defaults), then Step 10 rows "
        "at once: overlap ≈ 0.99 at t = 210.",
        _quick_recovery),
    Challenge(
        "static-lags",
        "Catch static online PCA lagging: stop at a row after a switch where adaptive PCA's "
        "overlap is at least 0.9 and static PCA's at most 0.2.",
        "Static PCA (α = 0) has let the new directions' weights fall to nearly nothing before "
        "the switch; adaptive PCA kept α/n on each.",
        "On the defaults play to t = 230 (30 rows after the switch at t = 200): adaptive ≈ 0.99, "
        "static ≈ 0.06.",
        _static_lags),
)


# -- fm ----------------------------------------------------------------------------------

def _small_sketch(page) -> tuple[bool, str]:
    point, m = _last(page), page.settings.m
    sftrl, ftrl = point.get("metric_sftrl", math.nan), point.get("metric_ftrl", math.nan)
    solved = page.t >= 1000 and m <= 4 and sftrl <= 1.01 * ftrl
    return solved, (f"t = {page.t} (at least 1000 asked), m = {m} (4 or less asked): "
                    f"progressive RMSE S-FTRL {_num(sftrl)}, FTRL {_num(ftrl)} "
                    f"(S-FTRL within 1% asked).")


def _mean_wins(page) -> tuple[bool, str]:
    point = _last(page)
    sftrl, mean = point.get("metric_sftrl", math.nan), point.get("reference", math.nan)
    solved = page.finished and page.t >= 500 and sftrl > mean
    return solved, (f"t = {page.t} of {page.n_rows} (the whole stream, at least 500, asked): "
                    f"progressive RMSE S-FTRL {_num(sftrl)}, running mean rating {_num(mean)}.")


FM = (
    Challenge(
        "small-sketch",
        "Find a sketch size m ≤ 4 for which S-FTRL's progressive RMSE after 1000 ratings is "
        "within 1% of FTRL's (FTRL keeps the whole d × d matrix).",
        "m is the rows each of S-FTRL's two sketches (B+ and B−) keeps. Try the smallest "
        "values one by one; each restarts the stream.",
        "Set m = 3 and play the 1000 ratings: S-FTRL ≈ 0.649 against FTRL ≈ 0.660. At m = 2 "
        "S-FTRL stays about 20% behind (0.79).",
        _small_sketch),
    Challenge(
        "mean-wins",
        "Make the running mean rating beat S-FTRL over the whole stream: at the end S-FTRL's "
        "progressive RMSE is still above the running mean's.",
        "Every learner starts at Θ = 0, predicting 0 stars, and those rounds stay in its "
        "progressive RMSE. Noisier ratings teach the biases more slowly.",
        "Set the option 'rating noise σ' to 0.9 (the stream restarts) and play to the end: "
        "S-FTRL never catches the running mean.",
        _mean_wins),
)


CHALLENGES: dict[str, tuple[Challenge, ...]] = {
    "sketching": SKETCHING, "newton": NEWTON, "adagrad": ADAGRAD, "pca": PCA, "fm": FM}
"""The challenges of each dashboard page, by the page's key."""
