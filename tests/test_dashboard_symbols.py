"""Symbols on demand in a real browser: the keyboard reaches a page's definitions, and axe passes.

On the sketched Newton page a few rows in, Tab alone reaches the "Symbols on this page"
summary, Enter opens it, and the list shows the definitions of the glossary
(``explorer.glossary``) for exactly the symbols the page uses (the same list the server
computed); a symbol in an explanation carries its definition as ``<abbr title>``. axe-core
then runs on the page with the list open (the rules and the blocking impacts of
``test_dashboard_a11y.py``), and a screenshot is kept in ``SCREENSHOT``.

The server and the helpers are those of ``test_dashboard_browser.py`` (its own server for
this module).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect
from test_dashboard_a11y import OPTIONS, blocking_violations, named
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture, used here)
from test_dashboard_browser import TIMEOUT_MS, counter, real_errors

from explorer.dashboard.pages.newton import NewtonPage
from explorer.dashboard.settings import Settings
from explorer.dashboard.symbols import page_symbols

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

SCREENSHOT = Path(os.environ.get("EXPLORER_SYMBOLS_SCREENSHOT", "/tmp/h/symbols.png"))

FOCUSED = """() => {
  let a = document.activeElement
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement
  return a ? {tag: a.tagName, text: (a.innerText || "").trim(),
              open: a.parentElement ? a.parentElement.open === true : false} : null
}"""
"""The focused element, looking inside the components' shadow roots, and whether the
``<details>`` it belongs to is open."""


def test_the_symbols_list_is_reached_by_keyboard_and_defines_the_page_symbols(server, page):
    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server["url"] + "?page=newton&n=300&d=20&m=5&t=40")
    page.locator(".js-plotly-plot .plot-container.plotly").first.wait_for()
    counter(page, 40).wait_for()
    for _ in range(120):  # Tab alone, from the top of the page
        page.keyboard.press("Tab")
        element = page.evaluate(FOCUSED)
        if element and element["tag"] == "SUMMARY":
            break
    else:
        raise AssertionError("120 Tab presses never reached the symbols list")
    assert element["text"].startswith("Symbols on this page") and not element["open"]
    page.keyboard.press("Enter")
    assert page.evaluate(FOCUSED)["open"]

    listing = page.locator("details.symbols").filter(visible=True)
    terms = listing.locator("dt").all_inner_texts()
    expected = NewtonPage(Settings(n=300, d=20, m=5))
    expected.step(40)
    expected.refresh()
    assert terms == [s.symbol for s in page_symbols(expected)]
    kappa = listing.locator("dt", has_text="κ").locator("xpath=following-sibling::dd[1]")
    expect(kappa).to_contain_text("condition number: largest over smallest eigenvalue")
    link = kappa.locator("a")
    assert link.get_attribute("href") == "/docs/algorithms#01-streams-and-sketches"
    response = page.request.get(server["url"].rstrip("/") + "/docs/algorithms")
    assert response.status == 200 and 'id="01-streams-and-sketches"' in response.text()
    abbr = page.locator("abbr[title^='condition number:']").filter(visible=True).first
    assert abbr.inner_text() == "κ"

    named(page)
    found = blocking_violations(Axe().run(page, options=OPTIONS).response)
    assert found == [], "axe on the newton page with its symbols open:\n" + "\n".join(found)
    listing.scroll_into_view_if_needed()
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))
    assert real_errors(errors) == []
