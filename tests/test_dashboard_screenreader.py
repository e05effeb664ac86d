"""The dashboard for a screen-reader user, in a real browser.

- Every button of a toggle or a button group says whether it is pressed (``aria-pressed``,
  the same as Bokeh's ``bk-active``), before and after a click (:class:`~explorer.dashboard.aria.AriaNames`).
- Every figure of every page is a ``role=figure`` whose ``aria-label`` says what it shows
  (title, axes, the latest values: :func:`~explorer.dashboard.aria.describe`), not its tick
  labels, and that changes after Step.
- A polite live region reads out the page's latest step: it changes after Step and Pause,
  and while playing at most once every 2 s (:class:`~explorer.dashboard.aria.LiveSummary`).

The server and the helpers are those of ``test_dashboard_browser.py`` (its own server for
this module). Every wait polls on the browser's clock.
"""

from __future__ import annotations

import pytest
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture, used here)
from test_dashboard_browser import (SMALL, TIMEOUT_MS, button, counter, open_page, real_errors, shown_t,
                                    wait_until)

from explorer.dashboard.app import PAGES

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

TOGGLES = r"""() => {
  const all = (root, out = []) => {
    out.push(...root.querySelectorAll(".bk-Toggle, .bk-RadioButtonGroup, .bk-CheckboxButtonGroup, " +
      ".bk-panel-models-widgets-RadioButtonGroup, .bk-panel-models-widgets-CheckboxButtonGroup"))
    for (const el of root.querySelectorAll("*")) if (el.shadowRoot) all(el.shadowRoot, out)
    return out
  }
  return all(document).flatMap(host => Array.from(host.shadowRoot.querySelectorAll("button.bk-btn"))
    .map(b => ({text: b.textContent.replace(/\s+/g, " ").trim(), active: b.classList.contains("bk-active"),
                pressed: b.getAttribute("aria-pressed")})))
}"""
"""Every toggle button on the page: its text, whether Bokeh shows it pressed, its aria-pressed."""

FIGURES = """els => els.map(el => ({
  role: el.getAttribute("role"), label: el.getAttribute("aria-label") || "",
  ticks: Array.from(el.querySelectorAll(".xtick text, .ytick text")).map(t => t.textContent).join(" ")}))"""
"""Every Plotly graph div: its role, aria-label and tick labels."""

WATCH = """(el, ms) => new Promise(done => {
  const changes = []
  let text = el.textContent
  const observer = new MutationObserver(() => {
    if (el.textContent !== text) { text = el.textContent; changes.push(performance.now()) }
  })
  observer.observe(el, {childList: true, characterData: true, subtree: true})
  setTimeout(() => { observer.disconnect(); done(changes) }, ms)
})"""
"""The times (ms) at which the element's text changed during ``ms`` milliseconds."""


def load(page, url: str) -> list[str]:
    """Open ``url``, wait for its first figure; the console errors (filled as they come)."""
    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    page.locator(".js-plotly-plot .plot-container.plotly").first.wait_for()
    return errors


def toggles(page) -> list[dict]:
    return page.evaluate(TOGGLES)


def mismatched(page) -> list[dict]:
    """The toggle buttons whose aria-pressed does not say their state."""
    return [b for b in toggles(page) if b["pressed"] != ("true" if b["active"] else "false")]


def figures(page) -> list[dict]:
    return page.locator(".js-plotly-plot").evaluate_all(FIGURES)


GROUPS = r"""() => {
  const all = (root, out = []) => {
    out.push(...root.querySelectorAll(".bk-panel-models-widgets-RadioButtonGroup, " +
      ".bk-panel-models-widgets-CheckboxButtonGroup, .bk-RadioButtonGroup, .bk-CheckboxButtonGroup"))
    for (const el of root.querySelectorAll("*")) if (el.shadowRoot) all(el.shadowRoot, out)
    return out
  }
  return all(document).map(host => {
    const group = host.shadowRoot.querySelector(".bk-btn-group")
    return {role: group.getAttribute("role"), label: group.getAttribute("aria-label") || "",
            buttons: Array.from(group.querySelectorAll("button")).map(b => b.textContent.trim())}
  })
}"""
"""Every radio or check button group on the page: its role, accessible name and buttons."""


@pytest.mark.parametrize(("key", "clicks"), [("sketching", ("log scale",)),
                                             ("newton", ("fast sketches ↻", "logistic", "RP-SON")),
                                             ("fm", ("exact",)), ("adagrad", ()), ("pca", ())])
def test_toggle_buttons_say_whether_they_are_pressed(server, page, key, clicks):
    """Toggles and Panel's own radio and check button groups alike (these had no state)."""
    errors = load(page, server["url"] + f"?page={key}&" + SMALL)
    wait_until(lambda: len(toggles(page)) > 0 and not mismatched(page), page, timeout_ms=20_000)
    for text in clicks:
        before = [b["active"] for b in toggles(page)]
        page.get_by_role("button", name=text, exact=True).first.click()
        wait_until(lambda: [b["active"] for b in toggles(page)] != before, page, timeout_ms=20_000)
        assert mismatched(page) == []
    assert real_errors(errors) == []


@pytest.mark.parametrize("key", [cls.key for cls in PAGES])
def test_every_button_group_is_a_group_named_by_its_label(server, page, key):
    """A screen reader announces "loss ↻, group" before "squared, toggle button, pressed"."""
    errors = load(page, server["url"] + f"?page={key}&" + SMALL)
    wait_until(lambda: (groups := page.evaluate(GROUPS))
               and all(g["role"] == "group" and g["label"] for g in groups), page, timeout_ms=20_000)
    for group in page.evaluate(GROUPS):
        assert group["label"] not in group["buttons"] and len(group["label"]) > 2, group
    assert real_errors(errors) == []


@pytest.mark.parametrize("key", [cls.key for cls in PAGES])
def test_every_figure_says_what_it_shows_and_follows_step(server, page, key):
    errors = load(page, server["url"] + f"?page={key}&n=300&d=20")
    counter(page, 0).wait_for()
    wait_until(lambda: all(f["label"] for f in figures(page)), page, timeout_ms=20_000)
    before = figures(page)
    for figure in before:
        assert figure["role"] == "figure"
        assert figure["label"] != figure["ticks"]
        # words beyond the tick labels: a title and the values in words
        assert set(figure["label"].split()) - set(figure["ticks"].split()), figure
        assert "." in figure["label"] and len(figure["label"].split()) >= 4
    for t in range(1, 6):  # a figure of the last shrink may need a few rows to change
        button(page, "Step").click()
        counter(page, t).wait_for()
        try:
            wait_until(lambda: all(a["label"] != b["label"] for a, b in zip(figures(page), before)), page,
                       timeout_ms=3000)
            break
        except AssertionError:
            continue
    after = figures(page)
    assert len(after) == len(before)
    assert [a["label"] for a, b in zip(after, before) if a["label"] == b["label"]] == []
    assert real_errors(errors) == []


def test_a_polite_live_region_reads_out_each_step_at_a_bounded_rate(server, page):
    errors = open_page(page, server["url"] + "?" + SMALL)
    counter(page, 0).wait_for()
    live = page.locator(".explorer-live")
    assert live.count() == 1
    assert live.get_attribute("aria-live") == "polite" and live.get_attribute("role") == "status"
    wait_until(lambda: "t = 0 of 300 rows" in live.text_content(), page)
    first = live.text_content()
    button(page, "Step").click()
    counter(page, 1).wait_for()
    wait_until(lambda: live.text_content() != first, page, timeout_ms=10_000)
    assert "t = 1 of 300 rows" in live.text_content() and "Latest:" in live.text_content()
    button(page, "Play").click()
    changes = live.evaluate(WATCH, 6000)
    button(page, "Pause").click()
    assert 1 <= len(changes) <= 4, changes  # it speaks while playing, at most every 2 s
    assert all(b - a >= 1900 for a, b in zip(changes, changes[1:])), changes
    wait_until(lambda: button(page, "Play").is_enabled(), page)
    t = shown_t(page)
    wait_until(lambda: f"t = {t} of 300 rows" in live.text_content(), page, timeout_ms=10_000)
    assert real_errors(errors) == []
