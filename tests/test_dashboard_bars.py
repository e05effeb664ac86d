"""Bars that a live figure gains between two redraws are drawn in their trace's colour.

A figure whose axes keep their ranges moves its traces with ``Plotly.animate`` instead of
redrawing (``PlotlyView.quick``); bars that such a move added were left without a fill
style, and the browser drew them black (the AdaGrad page's eigenvalue bars, 8-9 of 19,
a colour not in the legend). The server and helpers are those of
``test_dashboard_browser.py``; every wait polls on the browser's clock.
"""

from __future__ import annotations

import pytest
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture, used here)
from test_dashboard_browser import button, counter, open_page, real_errors, wait_until

from explorer.dashboard.pages.fm import FactorizationPage

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BAR_FILLS = """el => Array.from(el.querySelectorAll(".barlayer .trace"), (g, i) => ({
  points: Array.from(g.querySelectorAll(".point path"), p => p.style.fill || p.getAttribute("fill") || ""),
  drawn: Array.from(g.querySelectorAll(".point path")).filter(p => (p.getAttribute("d") || "M0,0Z") !== "M0,0Z").length,
}))"""


def eigen_figure(page):
    figures = page.locator(".js-plotly-plot")
    for i in range(figures.count()):
        if figures.nth(i).evaluate("el => (el.data || []).some(d => d.name === 'ADA-FFD: eigenvalues of M now')"):
            return figures.nth(i)
    return None


@pytest.mark.timeout(300)
def test_eigenvalue_bars_added_step_by_step_have_their_trace_colour(server, page):
    errors = open_page(page, server["url"] + "?page=adagrad&n=300&d=20&m=5", figures=4)
    counter(page, 0).wait_for()
    figure = eigen_figure(page)
    assert figure is not None
    seen = []
    for t in range(1, 13):
        button(page, "Step").click()
        counter(page, t).wait_for()
        wait_until(lambda: figure.evaluate("el => el.draws") >= t, page)
        fills = figure.evaluate(BAR_FILLS)
        seen.append([len(trace["points"]) for trace in fills])
        for trace in fills:
            bad = [fill for fill in trace["points"] if fill in ("", "rgb(0, 0, 0)", "black")]
            assert not bad, (t, fills)
            assert len(set(trace["points"])) <= 1, (t, fills)  # one colour per trace
    assert max(max(counts, default=0) for counts in seen) > min(max(counts, default=0) for counts in seen), seen
    assert real_errors(errors) == []


def figure_with(page, uid: str):
    figures = page.locator(".js-plotly-plot")
    for i in range(figures.count()):
        if figures.nth(i).evaluate(f"el => (el.data || []).some(d => d.uid === {uid!r})"):
            return figures.nth(i)
    return None


@pytest.mark.timeout(300)
@pytest.mark.parametrize("window", [(1400, 3000), (1400, 900), (1024, 768)])
def test_the_fm_spectra_draw_when_stepping_from_t_0(server, page, window):
    """Reported: the spectra of B+ and B- stayed empty for the whole session after Step or
    Play from t = 0 (the browser threw "container is not an object"); a link with t > 0
    drew them. Not reproduced here (default data, the page opened by its tab, Play from
    t = 0; also Step from a link at t = 0; in a window showing every figure and in laptop
    windows where the figure is below the fold until scrolled to): this guards it,
    uncaught page errors included."""
    page.set_viewport_size({"width": window[0], "height": window[1]})
    errors = open_page(page, server["url"])
    page.on("pageerror", lambda error: errors.append(str(error)))
    counter(page, 0).wait_for()
    page.locator(".bk-tab").filter(has_text=FactorizationPage.title).click()
    wait_until(lambda: figure_with(page, "+ sketch") is not None, page)
    figure = figure_with(page, "+ sketch")
    assert figure is not None
    button(page, "Play").click()
    figure.scroll_into_view_if_needed()
    wait_until(lambda: figure.evaluate("el => el.draws") >= 2, page)
    button(page, "Pause").click()
    wait_until(lambda: max((trace["drawn"] for trace in figure.evaluate(BAR_FILLS)), default=0) > 0, page,
               timeout_ms=15_000)
    assert real_errors(errors) == []
