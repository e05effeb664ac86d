"""The dashboard from the keyboard alone, in a real browser: the page tabs and the shortcuts.

The page tabs follow the WAI-ARIA tabs pattern (Tab reaches the selected tab, the arrows,
Home and End move between tabs, Enter or Space open one); Space plays and pauses, → steps
and ← goes back, leaving the focus where it was, and none of them fires while typing in a
box, on a slider or with a modifier key held. No test here clicks.

The server and the helpers are those of ``test_dashboard_browser.py`` (its own server for
this module). Every wait polls on the browser's clock; no fixed sleep is an assertion.
"""

from __future__ import annotations

import pytest
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture, used here)
from test_dashboard_browser import (SMALL, TIMEOUT_MS, button, counter, open_page, query, real_errors,
                                    shown_t, wait_until)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

FOCUSED = """() => {
  let a = document.activeElement
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement
  return a ? {tag: a.tagName, role: a.getAttribute("role"), text: (a.innerText || "").trim(),
              selected: a.getAttribute("aria-selected")} : null
}"""
"""The element that has the focus, looking inside the components' shadow roots."""


def focused(page) -> dict:
    return page.evaluate(FOCUSED)


def tab_to(page, role: str, presses: int = 80) -> dict:
    """Press Tab until the focus is on an element of ``role``; return it."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        element = focused(page)
        if element and element["role"] == role:
            return element
    raise AssertionError(f"{presses} Tab presses never reached a {role}")


def selected_tab(page) -> str:
    return page.locator("[role=tab][aria-selected=true]").inner_text()


def shown_page(page) -> str:
    """The page whose body is shown: the first visible figure's container is in its panel."""
    return page.locator("[role=tabpanel]").filter(visible=True).first.get_attribute("aria-labelledby")


def test_the_tabs_change_page_from_the_keyboard(server, page):
    errors = open_page(page, server["url"] + "?" + SMALL)
    tab = tab_to(page, "tab")
    assert tab["selected"] == "true" and tab["text"].startswith("Sketching")
    # only the selected tab is in the Tab order (roving tabindex)
    assert page.locator("[role=tab][tabindex='0']").count() == 1
    assert page.locator("[role=tablist]").count() == 1
    first_panel = shown_page(page)
    page.keyboard.press("ArrowRight")  # moves the focus, opens nothing yet
    assert focused(page)["text"].startswith("Sketched online Newton")
    assert query(page)["page"] == "sketching"
    page.keyboard.press("Enter")
    wait_until(lambda: query(page).get("page") == "newton", page)
    wait_until(lambda: shown_page(page) != first_panel, page)
    assert selected_tab(page).startswith("Sketched online Newton")
    assert focused(page)["text"].startswith("Sketched online Newton")  # the focus stays
    # End, Home and Left wrap around; Space opens too
    page.keyboard.press("End")
    assert focused(page)["text"].startswith("Sketched FTRL")
    page.keyboard.press("Home")
    assert focused(page)["text"].startswith("Sketching")
    page.keyboard.press("ArrowLeft")
    assert focused(page)["text"].startswith("Sketched FTRL")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press(" ")
    wait_until(lambda: query(page).get("page") == "pca", page)
    assert selected_tab(page).startswith("Online adaptive PCA")
    assert button(page, "Pause").is_disabled()  # Space on a tab opened it, did not play
    assert counter(page, 0).is_visible()
    assert not real_errors(errors)


def test_the_arrows_step_and_go_back_and_keep_the_focus(server, page):
    errors = open_page(page, server["url"] + "?" + SMALL)
    before = focused(page)
    page.keyboard.press("ArrowRight")
    counter(page, 1).wait_for()
    page.keyboard.press("ArrowRight")
    counter(page, 2).wait_for()
    page.keyboard.press("ArrowLeft")
    counter(page, 1).wait_for()
    assert focused(page) == before
    wait_until(lambda: query(page).get("t") == "1", page)
    assert not real_errors(errors)


def test_space_plays_and_pauses_and_keeps_the_focus(server, page):
    errors = open_page(page, server["url"] + "?" + SMALL)
    before = focused(page)
    page.keyboard.press(" ")
    wait_until(lambda: button(page, "Pause").is_enabled(), page)
    wait_until(lambda: shown_t(page) >= 2, page)
    assert focused(page) == before
    page.keyboard.press(" ")
    wait_until(lambda: button(page, "Pause").is_disabled(), page)
    stopped = shown_t(page)
    page.wait_for_timeout(500)
    assert shown_t(page) == stopped and focused(page) == before
    assert not real_errors(errors)


def still(page, t: int) -> None:
    """After time for a wrong step or play to reach the page: t unchanged, not playing."""
    page.wait_for_timeout(1000)
    assert counter(page, t).is_visible() and button(page, "Pause").is_disabled()


def test_no_shortcut_while_typing_on_a_slider_or_with_a_modifier(server, page):
    """On the AdaGrad page at t = 5, where η applies mid-stream (moving its slider keeps t)."""
    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server["url"] + "?page=adagrad&t=5&" + SMALL)
    page.locator(".js-plotly-plot .plot-container.plotly").first.wait_for()
    counter(page, 5).wait_for()
    page.get_by_role("textbox", name="seed").focus()
    page.keyboard.press(" ")
    still(page, 5)
    for key in ("ArrowRight", "ArrowLeft"):
        page.keyboard.press(key)
    still(page, 5)
    eta = page.locator("[role=slider]").nth(2)  # m, α₀, η
    before = eta.get_attribute("aria-valuenow")
    eta.focus()
    page.keyboard.press("ArrowRight")
    wait_until(lambda: eta.get_attribute("aria-valuenow") != before, page)  # the slider moved
    still(page, 5)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    for key in ("Shift+ArrowRight", "Control+ArrowRight", "Alt+ArrowRight", "Shift+Space"):
        page.keyboard.press(key)
    still(page, 5)
    # the same key, with the focus on the page, does step
    page.keyboard.press("ArrowRight")
    counter(page, 6).wait_for()
    assert not real_errors(errors)


def test_the_shortcuts_are_written_on_the_page(server, page):
    open_page(page, server["url"] + "?" + SMALL)
    text = page.get_by_text("Keyboard:").inner_text()
    assert "play/pause" in text and "step" in text and "back" in text


FOCUSED_LINK = """() => {
  let a = document.activeElement
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement
  return a && a.tagName === "A" ? {href: a.getAttribute("href"), text: a.innerText.trim()} : null
}"""


def test_the_pages_links_to_lessons_and_docs_are_reached_by_tab_and_answer(server, page):
    """Tab reaches every link of the page (explorer.dashboard.references) in order, each with
    its text, and the server answers each target."""
    from explorer.dashboard.references import reference_links
    open_page(page, server["url"] + "?" + SMALL)
    expected, reached = reference_links("sketching"), []
    for _ in range(80):
        page.keyboard.press("Tab")
        link = page.evaluate(FOCUSED_LINK)
        if link and link["href"].startswith(("/lessons/", "/docs/")):  # not the template's title
            reached.append((link["text"], link["href"]))
        if len(reached) == len(expected):
            break
    assert reached == expected
    for _, href in expected:
        response = page.request.get(server["url"].rstrip("/") + href.split("#")[0])
        assert response.status == 200 and "text/html" in response.headers["content-type"], href
