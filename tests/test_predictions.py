"""Predict, then reveal (explorer/predictions.py), on every dashboard page: each page has one
prediction with a guide, a question and choices; on the default settings, played to the end,
the reveal answers with one of the choices, never a tie, and the measured value is clear of
the other answers by more than the tie margin; each guide's claims hold on the page's
defaults (the rows it names are where the page's own records say)."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

from explorer.dashboard.app import PAGES
from explorer.dashboard.settings import Settings
from explorer.predictions import PREDICTIONS, TIE, Prediction
from explorer.run import lead_since

KEYS = [cls.key for cls in PAGES]
CLASSES = {cls.key: cls for cls in PAGES}


@cache
def played(key: str):
    """Page ``key`` on the default settings, played to the end of its stream (shared: read only)."""
    page = CLASSES[key](Settings())
    page.step(page.n_rows)
    return page


def test_every_page_has_a_prediction_with_a_guide_a_question_and_choices():
    assert set(PREDICTIONS) == set(KEYS)
    for key in KEYS:
        prediction, page = PREDICTIONS[key], CLASSES[key](Settings(n=60))
        choices = prediction.choices(page)
        assert len(choices) >= 2 and all(isinstance(c, str) and c for c in choices)
        assert len(set(choices)) == len(choices)
        assert "?" in prediction.question
        assert 2 <= prediction.guide.count(". ") + 1 <= 4  # two or three sentences


@pytest.mark.slow
@pytest.mark.parametrize("key", KEYS)
def test_on_the_defaults_the_end_answers_with_a_choice_by_more_than_a_tie(key):
    prediction, page = PREDICTIONS[key], played(key)
    assert page.finished
    answer, numbers = prediction.reveal(page)
    assert answer in prediction.choices(page), answer
    assert numbers.startswith(f"t = {page.n_rows} of {page.n_rows} (the end): ")
    values = [float(v) for v in prediction.values(page)]
    if prediction.edges:  # the value is clear of every edge by more than the tie margin
        assert all(abs(values[0] - edge) > 2 * TIE * abs(edge) for edge in prediction.edges)
    else:  # the lowest is clear of the next by more than the tie margin
        low, second = sorted(v for v in values if math.isfinite(v))[:2]
        assert second - low > 2 * TIE * abs(second)
    chosen = prediction.choices(page).index(answer)
    assert "ended lowest" in prediction.gap(page, chosen) or "inside your range" in prediction.gap(page, chosen)
    for other in set(range(len(prediction.choices(page)))) - {chosen}:
        gap = prediction.gap(page, other)
        assert "above" in gap or "below" in gap, gap


def test_a_tie_and_a_missing_value_are_said_as_such():
    class Page:
        t, n_rows = 3, 10
    close = Prediction("g.", "q?", ("a", "b", "c"), "loss", lambda page: (1.0, 1.005, 3.0))
    answer, numbers = close.reveal(Page())
    assert answer == "a tie within 1%: a and b"
    assert numbers.startswith("t = 3 of 10 (before the end): loss a 1, b 1, c 3.")
    assert close.gap(Page(), 1) == "b ended lowest, at 1."  # inside the tie
    absent = Prediction("g.", "q?", ("a", "b"), "loss", lambda page: (math.nan, 2.0))
    assert absent.reveal(Page())[0] == "b" and "not racing" in absent.gap(Page(), 0)
    edge = Prediction("g.", "q?", ("low", "high"), "ratio", lambda page: (0.502,), edges=(0.5,))
    assert edge.reveal(Page())[0].startswith("a tie within 1%: on the edge 0.5 between low and high")
    assert Prediction("g.", "q?", ("low", "high"), "r", lambda p: (math.nan,), edges=(0.5,)).reveal(
        Page())[0].startswith("no answer")


# -- the guides' claims, on the defaults ---------------------------------------------------

def test_the_sketching_guide_first_shrink_at_m_and_the_fast_one_at_2m_then_every_m_plus_1():
    page = CLASSES["sketching"](Settings())
    m, alpha0 = page.settings.m, page.settings.alpha0
    assert "t = m (10 on the defaults)" in PREDICTIONS["sketching"].guide and m == 10
    page.step(m - 1)
    point = page.history.last()
    assert point["alpha_exact"] == alpha0 and point["error_fd_exact"] == 0 == point["error_rfd_exact"]
    page.step(1)
    point = page.history.last()
    assert point["alpha_exact"] > alpha0 and point["error_fd_exact"] > 0 and point["error_rfd_exact"] > 0
    page.step(4 * m)
    fast = [int(t) for t in page.sketches.shrink_times("fast")[:3]]
    assert fast == [2 * m, 3 * m + 1, 4 * m + 2]


@pytest.mark.slow
def test_the_newton_guide_rfd_and_fd_change_places_for_the_last_time_after_row_400():
    h = played("newton").history
    assert "after row 400" in PREDICTIONS["newton"].guide
    since = [lead_since(h["t"], h[f"regret_{a}"], h[f"regret_{b}"]) for a, b in (("rfd", "fd"), ("fd", "rfd"))]
    leader = [s for s in since if s is not None]
    assert len(leader) == 1 and 400 < leader[0] < 1000
    t, spread = h["t"], np.ptp([h[f"regret_{k}"] for k in ("rfd", "fd", "rp", "adagrad")], axis=0)
    assert spread[(t > 0) & (t <= 100)].max() > 10  # the curves separate in the first 100 rows


def test_the_adagrad_guide_ffd_falls_from_2tau_to_tau_minus_1_then_every_tau_plus_1():
    page = CLASSES["adagrad"](Settings())
    tau = page.settings.m
    page.step(2 * tau - 1)
    assert int(page.race.learners["ffd"].rank) == 2 * tau - 1
    page.step(1)
    assert int(page.race.learners["ffd"].rank) == tau - 1
    page.step(3 * tau)
    assert [int(t) for t in page.race.shrink_times("ffd")[:3]] == [2 * tau, 3 * tau + 1, 4 * tau + 2]


@pytest.mark.slow
def test_the_pca_guide_switches_every_200_rows_and_every_overlap_drops():
    page = played("pca")
    h, length = page.history, page.segment_length
    assert length == 200 and "every 200 rows" in PREDICTIONS["pca"].guide
    t = h["t"]
    starts = [int(t[i]) for i in range(1, len(t)) if h["segment"][i] != h["segment"][i - 1]]
    assert [int(s - s % length) for s in starts] == [200, 400, 600, 800]
    for start in (200, 400, 600, 800):
        after = np.flatnonzero(t > start)[0]
        for who in ("adaptive", "static", "ftl"):
            assert h[f"overlap_{who}"][after] < 0.5, (who, start)


@pytest.mark.slow
def test_the_fm_guide_sftrl_crosses_the_running_mean_around_row_400():
    h = played("fm").history
    assert "around row 400" in PREDICTIONS["fm"].guide
    since = lead_since(h["t"], h["metric_sftrl"], h["reference"])
    assert since is not None and 300 <= since <= 500
    first = np.flatnonzero(h["t"] > 0)[0]
    assert all(h[f"metric_{k}"][first] > h["metric_sftrl"][-1] for k in ("sftrl", "ftrl", "ogd"))
