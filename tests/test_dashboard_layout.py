"""Issue 17, defect 6: from a 1024 px laptop to a 1400 px screen, nothing is cut off.

Every page is opened at both widths (the sidebar open) and every piece of text outside
the figures is checked in the browser: inside the window, not clipped by a box that
hides its overflow, and not covered by another element (the explanations' last line
lay under the plots, the AdaGrad options' key and the t counter ran off the right edge,
the fifth tab was off-screen at 1024 px), nor wider than its own box (a slider's label
ran over the next slider's at 1024 px: "segment length ↻: 200segment rank"). A screenshot of each is kept in pytest's
temporary folder for a person to look at.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture, used here)
from test_dashboard_browser import counter, real_errors

from explorer.dashboard.app import PAGES

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = (1024, 1400)
PROBLEMS_JS = r"""() => {
  const W = document.documentElement.clientWidth;
  const out = [];
  const parentOf = el => el.parentElement || (el.getRootNode() && el.getRootNode().host) || null;
  const visible = el => { const s = getComputedStyle(el); return s.display !== "none" && s.visibility !== "hidden"; };
  // text for screen readers only (the live summary): clipped to nothing on purpose, never seen
  const screenReaderOnly = el => {
    for (let a = el; a instanceof Element; a = parentOf(a)) {
      const s = getComputedStyle(a);
      if (s.clipPath.startsWith("inset(50%") || s.clip === "rect(0px, 0px, 0px, 0px)") return true;
    }
    return false;
  };
  const walk = root => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (!el.childNodes || ![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
      if (el.closest("svg, .modebar, .js-plotly-plot, option, select, script, style")) continue;
      // a closed <details> shows only its summary (chromium still lays out the rest)
      const details = el.closest("details");
      if (details && !details.open && !el.closest("summary")) continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0 || !visible(el) || screenReaderOnly(el)) continue;
      const text = el.textContent.trim().replace(/\s+/g, " ").slice(0, 70);
      if (r.right > W + 1 || r.left < -1) { out.push(`off-screen (right ${Math.round(r.right)} > ${W}): ${text}`); continue; }
      if (getComputedStyle(el).display !== "inline" && el.scrollWidth > el.clientWidth + 1) {
        out.push(`runs out of its box (${el.scrollWidth} > ${el.clientWidth} px) over what is beside it: ${text}`); continue;
      }
      const root = el.getRootNode();
      const points = [[r.left + 3, r.bottom - 3], [r.right - 3, r.bottom - 3], [(r.left + r.right) / 2, (r.top + r.bottom) / 2]];
      const covered = points.map(([x, y]) => root.elementFromPoint(x, y)).find(hit => hit && !el.contains(hit) && !hit.contains(el));
      if (covered) { out.push(`covered by <${covered.tagName.toLowerCase()} class="${covered.className}">: ${text}`); continue; }
      for (let a = parentOf(el); a && a !== document.documentElement; a = parentOf(a)) {
        if (!(a instanceof Element)) break;
        const s = getComputedStyle(a);
        if (s.overflowX === "visible" && s.overflowY === "visible") continue;
        const q = a.getBoundingClientRect();
        if (q.width === 0 || q.height === 0) break;
        const scrolls = (s.overflowY === "auto" || s.overflowY === "scroll");
        if (r.right > q.right + 1 || (!scrolls && r.bottom > q.bottom + 1)) {
          out.push(`clipped by <${a.tagName.toLowerCase()} class="${a.className}"> (text ${Math.round(r.right)},${Math.round(r.bottom)} box ${Math.round(q.right)},${Math.round(q.bottom)}): ${text}`);
          break;
        }
        if (scrolls) break;
      }
    }
  };
  walk(document);
  return out;
}"""
"""Every text outside the figures that is off-screen, clipped or covered, as one line each."""


OPEN_DETAILS_JS = """() => {
  const open = root => root.querySelectorAll("*").forEach(el => {
    if (el.shadowRoot) open(el.shadowRoot);
    if (el.tagName === "DETAILS") el.open = true;
  });
  open(document);
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_no_text_or_control_is_cut_off(server, browser, width, tmp_path):
    problems = {}
    for cls in PAGES:
        page = browser.new_page(viewport={"width": width, "height": 3000})  # all of it on screen
        errors = []
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.set_default_timeout(60_000)
        page.goto(server["url"] + f"?page={cls.key}&t=40")
        page.locator(".js-plotly-plot .plot-container.plotly").first.wait_for()
        counter(page, 40).wait_for()
        page.wait_for_timeout(500)  # the plots' last resize
        page.screenshot(path=tmp_path / f"{cls.key}_{width}.png")
        found = page.evaluate(PROBLEMS_JS)
        # Then with every <details> open (the symbols list): its text must not be cut off
        # or lie under what follows it.
        page.evaluate(OPEN_DETAILS_JS)
        page.wait_for_timeout(500)
        page.screenshot(path=tmp_path / f"{cls.key}_{width}_open.png")
        found += [f"(details open) {problem}" for problem in page.evaluate(PROBLEMS_JS)]
        if found:
            problems[cls.key] = found
        assert real_errors(errors) == []
        page.close()
    assert problems == {}


def test_a_figure_off_screen_is_drawn_when_it_comes_back(server, browser):
    """Issue 17, defect 9: figures below the fold are not redrawn while playing (the
    browser's time goes to the ones on screen); scrolled into view, a figure shows the
    latest data at once."""
    height = 1400
    page = browser.new_page(viewport={"width": 1024, "height": height})  # one column of figures
    page.set_default_timeout(60_000)
    page.goto(server["url"] + "?page=newton&n=300&d=20")
    figures = page.locator(".js-plotly-plot")
    expect(figures).to_have_count(5)
    counter(page, 0).wait_for()
    high = figures.nth(0)
    high.scroll_into_view_if_needed()  # on screen whatever the texts above the figures take
    tops = [figures.nth(i).evaluate("el => el.getBoundingClientRect().top") for i in range(5)]
    assert 0 <= tops[0] < height - 200  # the first figure on screen
    low = figures.nth(next(i for i, top in enumerate(tops) if top > height))  # one below the fold
    last_x = "el => { const x = el.data[0].x; return x.length ? x[x.length - 1] : null }"
    before = low.evaluate(last_x)
    for t in (1, 2, 3):
        page.get_by_role("button", name="Step", exact=True).click()
        counter(page, t).wait_for()
    shows_3 = "el => el.data[0].x[el.data[0].x.length - 1] === 3"
    page.wait_for_function(shows_3, arg=high.element_handle())
    assert low.evaluate(last_x) == before  # not redrawn off screen
    low.scroll_into_view_if_needed()
    page.wait_for_function(shows_3, arg=low.element_handle())
    page.close()
