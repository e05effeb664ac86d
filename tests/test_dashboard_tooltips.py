"""Hover texts in a real browser: on screen, over no other control, never in a click's way.

Panel shows a button's hover text to its right: the Newton page's learners text covered
the "fast sketches" switch beside the group, and the PCA page's "Theory setting" text ran
off the right edge at 1024 px. Both now go above or below their control
(``explorer.dashboard.cells.hint``). The PCA figures' y-axis titles stay inside their
figures at 1024 px.

The server and the helpers are those of ``test_dashboard_browser.py`` (its own server for
this module). Every wait polls on the browser's clock; no fixed sleep is an assertion.
"""

from __future__ import annotations

import pytest
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture, used here)
from test_dashboard_browser import TIMEOUT_MS, counter, query, real_errors, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]


def open_at(browser, url: str, width: int):
    page = browser.new_page(viewport={"width": width, "height": 1200})
    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    page.locator(".js-plotly-plot .plot-container.plotly").first.wait_for()
    return page, errors


def hover_text(page, control, text: str) -> dict:
    """Hover ``control`` with the mouse and return the box of the hover text shown."""
    control.hover()
    tip = page.locator(".bk-Tooltip", has=page.locator(".bk-tooltip-content", has_text=text))
    tip.wait_for(state="visible")
    return tip.bounding_box()


def inside(box: dict, width: int, height: int) -> bool:
    return (box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= width
            and box["y"] + box["height"] <= height)


def overlap(a: dict, b: dict) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


@pytest.mark.parametrize("width", [1024, 1400])
def test_the_learners_text_leaves_the_fast_switch_free_and_clickable(server, browser, width):
    page, errors = open_at(browser, server["url"] + "?page=newton&n=300&d=20", width)
    fast = page.get_by_role("button", name="fast sketches ↻", exact=True)
    learners = page.get_by_role("button", name="ADAGRAD", exact=True).first
    tip = hover_text(page, learners, "Which learners race")
    assert inside(tip, width, 1200), tip
    assert not overlap(tip, fast.bounding_box()), (tip, fast.bounding_box())
    # a real mouse click on the switch, straight from the group, turns the fast sketches off
    box = fast.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    wait_until(lambda: query(page).get("fast") == "false", page)
    counter(page, 0).wait_for()
    assert real_errors(errors) == []
    page.close()


@pytest.mark.parametrize("width", [1024, 1400])
def test_the_theory_setting_text_stays_on_screen(server, browser, width):
    page, errors = open_at(browser, server["url"] + "?page=pca&n=300&d=20", width)
    theory = page.get_by_role("button", name="Theory setting (Theorem 1)")
    tip = hover_text(page, theory, "best fixed projection")
    assert inside(tip, width, 1200), tip
    assert real_errors(errors) == []
    page.close()


def test_the_pca_figures_axis_titles_fit_at_1024_px(server, browser):
    page, errors = open_at(browser, server["url"] + "?page=pca&n=300&d=20&t=40", 1024)
    page.set_viewport_size({"width": 1024, "height": 3000})  # every figure drawn
    counter(page, 40).wait_for()
    wait_until(lambda: "smallest" in page.locator(".js-plotly-plot .ytitle").nth(2).text_content(), page)
    boxes = page.locator(".js-plotly-plot").evaluate_all("""els => els.map(el => {
      const f = el.getBoundingClientRect()
      return Array.from(el.querySelectorAll(".ytitle, .xtitle")).map(t => {
        const b = t.getBoundingClientRect()
        return {text: t.textContent, inside: b.left >= f.left && b.right <= f.right &&
                b.top >= f.top && b.bottom <= f.bottom}
      })
    })""")
    titles = [title for figure in boxes for title in figure]
    assert any(t["text"].startswith("eigenvalue i") for t in titles)
    assert [t["text"] for t in titles if not t["inside"]] == []
    assert real_errors(errors) == []
    page.close()
