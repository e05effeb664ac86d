"""The FM race in words: the notes under its curves and the one-line summary of its latest point.

What the dashboard's FM page (:mod:`explorer.dashboard.pages.fm`) says about a
:class:`~explorer.experiments.fm.race.FactorizationRace` (Luo et al., KDD 2018;
docs/algorithms.md section 6): S-FTRL's ``m >= d + 2`` makes it FTRL, no exact spectra past
:data:`~explorer.experiments.fm.lineup.ORACLE_MAX`, who diverged, and the latest numbers.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from .lineup import DIVERGED, LEARNER_NAMES, LEARNERS, ORACLE_MAX

__all__ = ["race_notes", "race_summary"]


def race_notes(race, *, eta: float, ogd_eta: float) -> list[str]:
    """What the curves of ``race`` need said: S-FTRL's ``m >= d + 2`` makes it FTRL, no exact
    spectra past :data:`ORACLE_MAX`, and who diverged (with the page's ``eta`` / ``ogd_eta``)."""
    d, m = race.X.shape[1], race.learners["sftrl"].m
    notes = []
    if m >= d + 2:
        notes.append(f"m = {m} ≥ d + 2 = {d + 2}: each half of the sketch has room for every "
                     "direction, nothing is shrunk and S-FTRL equals FTRL (their curves "
                     "coincide). Choose a smaller m to see the sketch at work.")
    if not race.oracle:
        notes.append(f"d + 1 = {d + 1} > {ORACLE_MAX}: the exact spectra (grey) are not "
                     "computed; the bars are S-FTRL's own.")
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
    memory = 2 * sftrl.sketch.positive.capacity * (sftrl.d + 1)
    return (f"**Latest:** t = {race.t} · {'RMSE' if race.ratings else 'AUC'} {values} · {share} · "
            f"rank B₊ {int(p['rank_plus'])}, B₋ {int(p['rank_minus'])} (m = {sftrl.m}) · {last}, "
            f"Δ₊ + Δ₋ = {p['delta_plus'] + p['delta_minus']:.3g} · µs/round (S-FTRL, FTRL, OGD) "
            f"{times} · memory {memory:,} floats for the sketch, {(sftrl.d + 1) ** 2:,} for a full Θ")


def _number(value: float) -> str:
    return f"{value:.4g}" if np.isfinite(value) else "–"
