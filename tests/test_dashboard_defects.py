"""Issue 17, defects 2, 3 and 4, read from the page a student sees in a real browser.

2. The PCA page's heatmap got ``z`` as one flat typed array (Bokeh sends an n-d array
   flat, its shape beside it, which Plotly does not read) and drew a diagonal staircase
   instead of the 16 x T grid of W_t's eigenvalue weights.
3. The sketching page's error axis labelled 0.5e-15 "0.5f" (Plotly's SI prefixes) while
   rounding noise was drawn above the zero bounds before the first shrink.
4. A shared link restored the settings and t but rebuilt the curves from one point every
   20 rows (a Newton link at t = 12 had an empty accuracy plot).
9. Play was slow because every update redrew every figure whole (axes, ticks, legend);
   now a figure whose axes keep their ranges only moves its traces (``PlotlyView.quick``).
   What it draws must be what a whole redraw draws.

The server and the helpers are those of ``test_dashboard_browser.py`` (its own server for
this module). Every wait polls on the browser's clock; no fixed sleep is an assertion.
"""

from __future__ import annotations

import re

import pytest
from conftest import VIEWPORT
from playwright.sync_api import expect
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture, used here)
from test_dashboard_browser import (SMALL, all_figures, button, counter, open_page, query,
                                    real_errors, shown_t, traces, wait_until)

from explorer.dashboard.pages.pca import AdaptivePCAPage
from explorer.dashboard.settings import Settings

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HEATMAP = """el => {
  const i = el.data.findIndex(d => d.type === "heatmap")
  const z = el.data[i].z, calc = el.calcdata && el.calcdata[i] && el.calcdata[i][0].z
  return {x: el.data[i].x.length, y: el.data[i].y.length, rows: z.length,
          widths: Array.from(z, row => row == null || row.length === undefined ? -1 : row.length),
          drawnRows: calc ? calc.length : -1}
}"""


def test_the_pca_heatmap_gets_a_2d_z_in_the_browser(server, page):
    """After three steps the heatmap's z in Plotly's gd.data is rows x T (16 x T here:
    the 3k + 10 smallest eigenvalues of W_t, one column per history point)."""
    errors = open_page(page, server["url"] + "?page=pca&n=300&d=20")
    counter(page, 0).wait_for()
    for t in (1, 2, 3):
        button(page, "Step").click()
        counter(page, t).wait_for()
    headless = AdaptivePCAPage(Settings(n=300, d=20))
    headless.step(3)
    rows, points = headless.heatmap_rows(), len(headless.history)
    assert rows == 16 and points >= 3
    figure = page.locator(".js-plotly-plot").filter(visible=True)

    def shape():
        for i in range(figure.count()):
            found = figure.nth(i).evaluate("el => (el.data || []).some(d => d.type === 'heatmap')")
            if found:
                return figure.nth(i).evaluate(HEATMAP)
        return None

    wait_until(lambda: (s := shape()) is not None and s["x"] == points, page)
    got = shape()
    assert got["y"] == rows and got["rows"] == rows, got
    assert got["widths"] == [got["x"]] * rows, got  # every row a row of T values, not a flat array
    assert got["drawnRows"] == rows, got  # Plotly's own calcdata is the same 2-D grid
    assert real_errors(errors) == []


SI_OR_BAD = re.compile(r"\d[yzafpnµmkMGTPEZY]$|[a-z]$")


def test_the_error_axis_ticks_are_numbers_and_errors_sit_on_their_zero_bounds(server, page):
    """Before the first shrink (m = 5, t = 3) the errors drawn are exactly 0, on their zero
    bounds, and the error axis's tick labels are plain numbers (no "0.5f", "1f")."""
    errors = open_page(page, server["url"] + "?" + SMALL)
    counter(page, 0).wait_for()
    for t in (1, 2, 3):
        button(page, "Step").click()
        counter(page, t).wait_for()
    wait_until(lambda: len(traces(page, "error")["FD error (exact)"]) == 3, page)  # t = 0, 2, 3 (n = 300)
    drawn = traces(page, "error")
    for name in ("FD error (exact)", "RFD error (exact)", "FD error (fast)", "RFD error (fast)"):
        values = [v for v in drawn[name] if v is not None]
        assert values and all(v == 0 for v in values), (name, values)
    ticks = page.locator(".js-plotly-plot").nth(2).locator(".ytick text").evaluate_all(
        "els => els.map(el => el.textContent)")  # SVG text: no innerText
    assert ticks and not [tick for tick in ticks if SI_OR_BAD.search(tick.strip())], ticks
    assert real_errors(errors) == []


def test_a_shared_link_at_t_draws_the_senders_curves(server, page, browser):
    """The sender steps and plays on the Newton page, pauses, and sends the URL; the
    receiver's figures hold the same points (x, y, z of every trace) as the sender's."""
    errors = open_page(page, server["url"] + "?page=newton&" + SMALL, figures=5)
    for t in (1, 2, 3):
        button(page, "Step").click()
        counter(page, t).wait_for()
    button(page, "Play").click()
    wait_until(lambda: shown_t(page) >= 15, page)
    button(page, "Pause").click()
    expect(button(page, "Play")).to_be_enabled()
    t = shown_t(page)
    page.wait_for_function(f"() => /[?&]t={t}(&|$)/.test(location.search)")
    sent = settled_figures(page)
    receiver = browser.new_page(viewport=VIEWPORT)
    try:
        open_page(receiver, page.url, figures=5)
        counter(receiver, t).wait_for()
        assert query(receiver)["t"] == str(t)
        wait_until(lambda: all_figures(receiver) == sent, receiver)
    finally:
        receiver.close()
    assert real_errors(errors) == []


def settled_figures(page) -> str:
    """:func:`all_figures` once two reads 300 ms apart agree (the last redraw has landed)."""
    last = None
    while (now := all_figures(page)) != last:
        last = now
        page.wait_for_timeout(300)
    return now


# Every path (lines, bars, grid lines) of a figure in order, and its tick labels with their
# positions as a set (a quick draw keeps the tick labels it had and adds the new ones at
# the end of their group: the same picture, another order in the DOM); then the same after
# a whole redraw (Plotly.react) of the figure's own data and layout.
QUICK_VS_FULL_JS = """async el => {
  const attrs = node => ["transform", "x", "y"].map(name => node.getAttribute(name))
  const drawn = () => ({
    paths: [...el.querySelectorAll(".scatterlayer path, .barlayer path, .gridlayer path")].map(p => p.getAttribute("d")),
    ticks: [...el.querySelectorAll(".xtick, .ytick")].map(g => JSON.stringify(
      [attrs(g), g.textContent, ...[...g.querySelectorAll("text")].map(attrs)])).sort(),
  })
  const quick = drawn()
  await Plotly.react(el, el.data.map(trace => ({...trace})), structuredClone(el.layout))
  return {quick, full: drawn()}
}"""


def test_the_quick_redraw_draws_what_a_whole_redraw_draws(server, page):
    """Defect 9: after play (most updates were quick draws) and a few steps, every figure's lines, bars, grid lines and tick labels are exactly
    those a whole redraw of the same data and layout gives."""
    errors = open_page(page, server["url"] + "?" + SMALL)
    button(page, "Play").click()
    wait_until(lambda: shown_t(page) >= 40, page)
    button(page, "Pause").click()
    expect(button(page, "Play")).to_be_enabled()
    t = shown_t(page)
    for step in (1, 2, 3):
        button(page, "Step").click()
        counter(page, t + step).wait_for()
    figures = page.locator(".js-plotly-plot")
    last_x = "el => { const x = el.data[0].x; return x[x.length - 1] }"
    wait_until(lambda: figures.nth(2).evaluate(last_x) == t + 3, page)
    for i in range(4):
        drawn = figures.nth(i).evaluate(QUICK_VS_FULL_JS)
        assert drawn["quick"]["paths"] and drawn["quick"]["ticks"], i
        assert drawn["quick"] == drawn["full"], i
    assert real_errors(errors) == []

