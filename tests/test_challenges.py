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
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture)

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


# -- in a browser ---------------------------------------------------------------------------
@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_challenge_is_solved_from_the_keyboard_and_the_page_passes_axe(server, page):
    """The sketching page (m = 5): Tab to "Challenges", Enter; Check says "not yet"; Show
    solution; → five times (the solution: step to t = m); Check says "solved"; then axe's
    WCAG A/AA rules find nothing serious with the challenges open."""
    from axe_playwright_python.sync_playwright import Axe
    from test_dashboard_a11y import OPTIONS, blocking_violations, named
    from test_dashboard_browser import SMALL, counter, open_page, real_errors
    from test_dashboard_keyboard import focused

    def tab_to(text: str) -> None:
        for _ in range(150):
            page.keyboard.press("Tab")
            if (focused(page) or {}).get("text") == text:
                return
        raise AssertionError(f"Tab never reached {text!r}")

    errors = open_page(page, server["url"] + "?" + SMALL)
    counter(page, 0).wait_for()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    tab_to("Challenges")
    page.keyboard.press("Enter")
    line = page.locator("p.challenge-feedback").first
    line.wait_for(state="attached", timeout=30_000)
    tab_to("Check")
    page.keyboard.press("Enter")
    page.get_by_text("not yet: t = 0", exact=False).first.wait_for(timeout=30_000)
    assert line.get_attribute("aria-live") == "polite" and line.get_attribute("role") == "status"
    tab_to("Show solution")
    page.keyboard.press("Space")
    page.get_by_text("Solution: Press Step", exact=False).first.wait_for(timeout=30_000)
    for t in range(1, 6):
        page.keyboard.press("ArrowRight")  # Step, the focus stays on the toggle
        counter(page, t).wait_for()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    assert focused(page)["text"] == "Check"
    page.keyboard.press("Enter")
    page.get_by_text("solved: t = 5", exact=False).first.wait_for(timeout=30_000)
    assert line.inner_text().startswith("solved: t = 5: RFD (exact) α =")
    named(page)
    found = blocking_violations(Axe().run(page, options=OPTIONS).response)
    assert found == [], "axe with the challenges open:\n" + "\n".join(found)
    assert real_errors(errors) == []
