"""The dashboard's accessibility, checked by axe-core in a real browser.

Every page (each tab) is opened at 1400 px wide with a few rows learned, on the light
theme and on the dark one (``?theme=dark``), and axe-core
(bundled by ``axe-playwright-python``) runs its WCAG 2.0 and 2.1 A and AA rules on the whole document,
the components' open shadow roots included. The test fails on any violation of impact
"serious" or "critical", naming the rule, its impact and the selectors of the elements.
:data:`EXCLUDED` would list a violation inside Panel's or Bokeh's own widgets that this
project's code cannot change, by rule id and selector (none today).

The server and the helpers are those of ``test_dashboard_browser.py`` (its own server for
this module).
"""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture, used here)
from test_dashboard_browser import TIMEOUT_MS, counter, real_errors

from explorer.dashboard.app import PAGES

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

OPTIONS = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
           "resultTypes": ["violations"]}
"""axe.run's options: the WCAG 2.0 and 2.1 level A and AA rules, violations only. (2.2's
``target-size`` would flag Bokeh's 15 px up/down buttons of the number boxes.)"""

BLOCKING = {"serious", "critical"}

EXCLUDED: dict[str, tuple[str, ...]] = {}
"""Rule id -> substrings of the selectors it may flag, for violations inside Panel's or
Bokeh's own widgets that this project cannot fix, each with the reason on the line above
it. Empty: the unnamed sliders, number-box buttons and the sidebar's list are named or
fixed by :class:`explorer.dashboard.aria.AriaNames`."""


def target(node: dict) -> str:
    """An element's selector path; ``>>`` steps into a shadow root."""
    return " >> ".join(part if isinstance(part, str) else " >> ".join(part) for part in node["target"])


def blocking_violations(response: dict) -> list[str]:
    """One line per element with a serious or critical violation that is not excluded."""
    found = []
    for violation in response["violations"]:
        if violation["impact"] not in BLOCKING:
            continue
        for node in violation["nodes"]:
            where = target(node)
            if any(part in where for part in EXCLUDED.get(violation["id"], ())):
                continue
            found.append(f"{violation['id']} ({violation['impact']}): {where}")
    return found


def named(page) -> None:
    """Give AriaNames (it names the controls twice a second) up to 5 s to name every slider
    handle, and go on regardless: a control it missed is then axe's to report."""
    try:
        page.wait_for_function("""() => {
          const all = (root, out = []) => {
            out.push(...root.querySelectorAll("[role=slider]"))
            for (const el of root.querySelectorAll("*")) if (el.shadowRoot) all(el.shadowRoot, out)
            return out
          }
          return all(document).every(el => el.getAttribute("aria-label"))
        }""", timeout=5000)
    except PlaywrightTimeout:
        pass


@pytest.mark.parametrize("theme", ["default", "dark"])
@pytest.mark.parametrize("key", [cls.key for cls in PAGES])
def test_every_page_passes_axe_wcag_a_and_aa(server, page, key, theme):
    assert page.viewport_size["width"] == 1400
    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server["url"] + f"?page={key}&n=300&d=20&t=5" + ("&theme=dark" if theme == "dark" else ""))
    page.locator(".js-plotly-plot .plot-container.plotly").first.wait_for()
    counter(page, 5).wait_for()
    page.locator("[role=tab][aria-selected=true]").wait_for()  # the tabs have their roles
    page.wait_for_timeout(500)  # the plots' last resize
    named(page)
    response = Axe().run(page, options=OPTIONS).response
    found = blocking_violations(response)
    assert found == [], f"axe on the {key} page ({theme} theme):\n" + "\n".join(found)
    assert real_errors(errors) == []


def test_the_sliders_and_number_boxes_are_named_by_their_labels(server, page):
    """The names are the labels a sighted user reads (the value left out), not just any text."""
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server["url"] + "?page=newton&n=300&d=20")
    page.locator(".js-plotly-plot .plot-container.plotly").first.wait_for()
    named(page)
    names = page.locator("[role=slider]").evaluate_all("els => els.map(el => el.getAttribute('aria-label'))")
    assert names[:5] == ["m: sketch size ↻", "α₀: initial regularizer ⚡", "η: SON curvature weight ⚡",
                         "n: stream length ↻", "d: dimension ↻"]  # the sidebar's, in order
    assert "label noise ↻" in names  # one of the page's own
    for box in ("seed ↻", "slab C ↻"):
        for action in ("Increase", "Decrease"):
            assert page.get_by_role("button", name=f"{action} {box}", exact=True).count() == 1
