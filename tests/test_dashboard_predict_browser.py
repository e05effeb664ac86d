""""Predict, then play" in a real browser, by keyboard only: on the sketching page (a short
stream opened near its end), Tab to the toggle and open it, Tab into the question's radio
group and choose with an arrow key, commit, play to the end with Space: the reveal line
names the answer (derived from the same page run without a browser), the link keeps the
committed choice as ``predict``, and axe-core's WCAG A/AA rules find nothing serious."""

from __future__ import annotations

import pytest
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture)
from test_dashboard_browser import SMALL, counter, open_page, query, real_errors

from explorer.dashboard.pages.sketching import SketchingPage
from explorer.dashboard.settings import Settings
from explorer.predictions import PREDICTIONS

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

CHOICE = 1  # the second answer: one ArrowDown from the first


def expected_answer() -> str:
    """The sketching page's answer on the test's link, computed without a browser."""
    page = SketchingPage(Settings(n=300, d=20, m=5))
    page.step(page.n_rows)
    return PREDICTIONS["sketching"].reveal(page)[0]


def test_predict_commit_play_and_reveal_by_keyboard_then_axe(server, page):
    from axe_playwright_python.sync_playwright import Axe
    from test_dashboard_a11y import OPTIONS, blocking_violations, named
    from test_dashboard_keyboard import focused

    def tab_to(test) -> dict:
        for _ in range(200):
            page.keyboard.press("Tab")
            element = focused(page) or {}
            if test(element):
                return element
        raise AssertionError("Tab never reached the element")

    errors = open_page(page, server["url"] + f"?page=sketching&{SMALL}&t=290")
    counter(page, 290).wait_for()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    tab_to(lambda e: e.get("text") == "Predict, then play")
    page.keyboard.press("Enter")
    group = page.get_by_role("group", name=PREDICTIONS["sketching"].question)
    group.wait_for(timeout=30_000)
    # built when first opened, yet styled as the page: no design of its own (with the
    # session's, Bootstrap's stylesheet inside the group drew the legend in 24 px)
    sizes = group.evaluate("""fieldset => [getComputedStyle(fieldset.querySelector('legend')).fontSize,
                                          getComputedStyle(fieldset.querySelector('label')).fontSize]""")
    assert sizes[0] == sizes[1], f"the question's legend is {sizes[0]}, its choices {sizes[1]}"
    tab_to(lambda e: e.get("tag") == "INPUT")  # the first radio of the question
    page.keyboard.press("ArrowDown")
    choices = PREDICTIONS["sketching"].labels
    radio = page.get_by_role("radio", name=choices[CHOICE])
    radio.wait_for()
    assert radio.is_checked()
    tab_to(lambda e: e.get("text") == "Commit prediction")
    page.keyboard.press("Enter")
    page.get_by_text(f"Your prediction: {choices[CHOICE]}.", exact=True).wait_for(timeout=30_000)
    assert radio.is_disabled()
    page.wait_for_function("() => location.search.includes('predict=1')", timeout=30_000)
    assert query(page)["predict"] == str(CHOICE)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press(" ")  # Play: to the end of the stream, where the answer is revealed
    counter(page, 300).wait_for()
    line = page.locator("p.challenge-feedback", has_text="Revealed at")
    line.wait_for(timeout=30_000)
    text = line.inner_text()
    assert text.startswith("Revealed at t = 300 of 300 (the end).")
    assert f"Your prediction: {choices[CHOICE]}." in text and f"Answer: {expected_answer()}." in text
    assert line.get_attribute("aria-live") == "polite" and line.get_attribute("role") == "status"
    named(page)
    found = blocking_violations(Axe().run(page, options=OPTIONS).response)
    assert found == [], "axe with the prediction revealed:\n" + "\n".join(found)
    assert real_errors(errors) == []
