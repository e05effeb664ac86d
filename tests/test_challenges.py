"""The dashboard's challenges (explorer/challenges.py), on every page: each page offers two or
three; a fresh page reports each one unsolved with a number in its feedback; following the
solution's text through the page's public API (the sidebar's settings, the page's options,
Step) makes its check report solved. The panel (explorer/dashboard/challenges.py) shows text
as text and announces the feedback politely."""

from __future__ import annotations

import re

import pytest

from explorer.challenges import CHALLENGES, Challenge, check
from explorer.dashboard.app import PAGES, Dashboard
from explorer.dashboard.challenges import ChallengesPanel

KEYS = [cls.key for cls in PAGES]


def fresh(key: str) -> Dashboard:
    """A dashboard showing only page ``key``, on the default settings."""
    return Dashboard(pages=tuple(cls for cls in PAGES if cls.key == key))


def step_to(app: Dashboard, t: int) -> None:
    app.transport.step(t - app.active.t)


def step_until(app: Dashboard, challenge: Challenge, limit: int) -> None:
    """Step one row at a time (the → key) until the check says solved, at most ``limit`` rows."""
    for _ in range(limit):
        if challenge.check(app.active)[0]:
            return
        app.transport.step(1)


def follow(app: Dashboard, page_key: str, challenge: Challenge) -> None:
    """Do what ``challenge.solution`` says, through the controls' public counterparts."""
    page, settings = app.active, app.settings
    match page_key, challenge.key:
        case ("sketching", "first-shrink") | ("adagrad", "rank-falls"):
            step_until(app, challenge, 40)
        case "sketching", "no-loss":
            settings.param.update(d=10, m=11)
            step_to(app, 100)
        case "sketching", "condition-gap":
            settings.alpha0 = 0.01
            step_to(app, 200)
        case "newton", "rfd-without-tuning":
            settings.alpha0 = 0.01
            step_to(app, 300)
        case "newton", "adagrad-keeps-up":
            page.label_space = "raw"
            step_to(app, 300)
        case "adagrad", "diag-wins":
            settings.eta = 0.01
            step_to(app, 300)
        case "pca", "quick-recovery":
            page.alpha = 0.1
            step_to(app, 200)
            app.transport.step(10)
        case "pca", "static-lags":
            step_to(app, 230)
        case "fm", "small-sketch":
            settings.m = 3
            step_to(app, 1000)
        case "fm", "mean-wins":
            page.fm_noise = 0.9
            step_to(app, page.n_rows)
        case _:
            raise AssertionError(f"no driver for {page_key}/{challenge.key}: add one here")


def test_every_page_has_two_or_three_challenges_with_unique_keys():
    assert sorted(CHALLENGES) == sorted(KEYS)
    for key, challenges in CHALLENGES.items():
        assert 2 <= len(challenges) <= 3, key
        assert len({c.key for c in challenges}) == len(challenges), key
        for c in challenges:
            assert c.task and c.hint and c.solution, (key, c.key)


CASES = [(key, c.key) for key in KEYS for c in CHALLENGES.get(key, ())]


@pytest.mark.parametrize("page_key, key", CASES)
def test_a_fresh_page_is_unsolved_and_the_solution_solves_it(page_key, key):
    app = fresh(page_key)
    challenge = next(c for c in CHALLENGES[page_key] if c.key == key)
    solved, feedback = challenge.check(app.active)
    assert not solved, feedback
    assert re.search(r"\d", feedback), feedback
    follow(app, page_key, challenge)
    solved, feedback = check(app.active, key)
    assert solved, feedback
    assert re.search(r"\d", feedback), feedback


def test_check_refuses_an_unknown_key():
    app = fresh("sketching")
    with pytest.raises(KeyError, match="no challenge 'nope'"):
        check(app.active, "nope")


def test_the_panel_shows_text_as_text_and_announces_the_feedback():
    app = fresh("sketching")
    panel = ChallengesPanel(app.active)
    panel.panel()
    item = panel.items[0]
    assert item.feedback.text == ""
    item.press_check()
    assert "not yet" in item.feedback.text and "t = 0" in item.feedback.text
    step_until(app, item.challenge, 40)
    item.press_check()
    assert "solved" in item.feedback.text
    assert not item.hint_pane.visible and not item.solution_pane.visible
    item.show_hint = item.show_solution = True
    assert item.hint_pane.visible and item.solution_pane.visible
    strange = Challenge("x", "<b>bold</b> & *star*", "h", "s", lambda page: (False, "<i>1</i>"))
    shown = ChallengesPanel(app.active, challenges=(strange,))
    shown.panel()
    strange_item = shown.items[0]
    strange_item.press_check()
    assert strange_item.feedback.text == "not yet: <i>1</i>"  # plain text: the line sets textContent
    assert "<b>" not in strange_item.task_html() and "&lt;b&gt;bold" in strange_item.task_html()


def test_a_check_that_raises_is_reported_not_swallowed():
    app = fresh("sketching")

    def broken(page):
        raise RuntimeError("boom")
    panel = ChallengesPanel(app.active, challenges=(Challenge("b", "t", "h", "s", broken),))
    panel.panel()
    with pytest.raises(RuntimeError, match="boom"):
        panel.items[0].press_check()
