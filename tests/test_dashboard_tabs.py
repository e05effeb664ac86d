"""What a student does first, in a real browser: click the page tabs, upload a file too large.

Issue 17: a tab click changed the intro, the counter and the URL but not the body below
the tabs (the client's Tabs model went back to the previous tab, so the body lagged one
click behind), and a body built after the first render had Bootstrap's whole stylesheet
in each pane (24 px headings). A 38 MB upload closed the session's websocket without a word.

The server and the helpers are those of ``test_dashboard_browser.py`` (its own server for
this module). Every wait polls on the browser's clock; no fixed sleep is an assertion.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture, used here)
from test_dashboard_browser import (SMALL, TIMEOUT_MS, button, counter, open_page, query,
                                    real_errors, step_twice_and_see_plots_change, wait_until)

from explorer.dashboard.app import PAGES
from explorer.dashboard.live import PlotlyView
from explorer.dashboard.settings import Settings

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def every_transition(n: int) -> list[int]:
    """A walk from 0 through the pages that goes from every page to every other page once
    (an Euler circuit of the complete directed graph, Hierholzer's algorithm)."""
    unused = {i: [j for j in range(n) if j != i] for i in range(n)}
    stack, walk = [0], []
    while stack:
        if unused[stack[-1]]:
            stack.append(unused[stack[-1]].pop())
        else:
            walk.append(stack.pop())
    return walk[::-1]


def trace_names() -> dict[str, set[str]]:
    """Each page's trace names, read from the page built in Python on the test's settings."""
    names = {}
    for cls in PAGES:
        views = cls(Settings(n=300, d=20)).views.select(PlotlyView)
        names[cls.key] = {trace.get("name") for view in views for trace in view.data}
    return names


VISIBLE_FIGURES = """els => els.map(el => {
  const box = el.getBoundingClientRect()
  return {names: (el.data || []).map(d => d.name), width: box.width, height: box.height,
          points: (el.data || []).reduce((n, d) => n + (d.y ? d.y.length : 0), 0),
          drawn: el.querySelector('.main-svg') !== null}
})"""


def visible_figures(page) -> list[dict]:
    """The Plotly figures shown (the other tabs' bodies are hidden), with their trace names."""
    return page.locator(".js-plotly-plot").filter(visible=True).evaluate_all(VISIBLE_FIGURES)


def heading_sizes(page) -> set[str]:
    """Font sizes of the plot titles shown (Markdown ``####`` of ``cells.plot_cell``)."""
    return set(page.locator("h4").filter(visible=True).evaluate_all(
        "els => els.map(el => getComputedStyle(el).fontSize)"))


def test_every_tab_click_shows_that_pages_plots(server, page):
    """Click from every page to every other page: the body shows the clicked page's
    figures (its trace names, drawn, non-empty), styled as the page shown at load, and
    Step drives that page."""
    walk = every_transition(len(PAGES))
    assert {(a, b) for a, b in zip(walk, walk[1:])} == {
        (a, b) for a in range(len(PAGES)) for b in range(len(PAGES)) if a != b}
    names = trace_names()
    unique = {key: own - set().union(*(other for k, other in names.items() if k != key))
              for key, own in names.items()}
    assert all(unique.values()), unique  # each page can be told from the others

    errors = open_page(page, server["url"] + "?" + SMALL)
    tabs = page.locator(".bk-tab")
    assert tabs.all_inner_texts() == [cls.title for cls in PAGES]
    headings = heading_sizes(page)  # the first page's, rendered with the template
    assert headings

    def shows(key: str) -> bool:
        """Only figures of page ``key`` are shown (a page may rename a trace as it
        plays: each figure shares a name with the page, none has another page's own),
        every one drawn at full size, and one with a name only this page has."""
        figures = visible_figures(page)
        others = set().union(*(own for k, own in unique.items() if k != key))
        return bool(figures) and all(
            set(f["names"]) & names[key] and not set(f["names"]) & others
            and f["drawn"] and f["width"] > 100 and f["height"] > 100
            for f in figures) and any(set(f["names"]) & unique[key] for f in figures)

    stepped = set()
    for clicks, index in enumerate(walk):
        cls = PAGES[index]
        if clicks:  # the first page is the one shown at load
            tabs.nth(index).click()
        try:
            wait_until(lambda: shows(cls.key), page)
        except AssertionError:
            raise AssertionError(f"after a click on {cls.title!r} the body shows "
                                 f"{visible_figures(page)}") from None
        assert page.locator(".bk-tab.bk-active").inner_text() == cls.title
        page.wait_for_function(f"() => /[?&]page={cls.key}(&|$)/.test(location.search)")
        assert heading_sizes(page) == headings, cls.key
        if cls.key not in stepped:  # first visit: the transport drives this page's plots
            step_twice_and_see_plots_change(page, visible_figures)
            assert any(f["points"] > 0 for f in visible_figures(page)), cls.key
            stepped.add(cls.key)
        else:  # back on a page: its own t and plots
            counter(page, 2).wait_for()
    assert query(page)["page"] == PAGES[walk[-1]].key
    assert real_errors(errors) == []


def test_a_38_mb_upload_is_refused_in_the_browser_and_the_session_lives_on(server, page, tmp_path):
    """The page refuses a file over 5 MB before reading it and says so; Step still works,
    and a file just under the limit still goes through the server's websocket limit."""
    errors = open_page(page, server["url"] + "?" + SMALL)
    upload = page.locator('input[type="file"]')
    big = tmp_path / "big.csv"
    big.write_bytes(b"1.5,2.5\n" * (38 * 2**20 // 8))
    upload.set_input_files(big)
    refused = "Upload refused: big.csv: the file has 38.0 MB; at most 5 MB is accepted"
    page.get_by_text(refused).wait_for()
    assert upload.input_value() == ""  # the box does not show the refused file
    button(page, "Step").click()
    counter(page, 1).wait_for()  # the session is alive
    assert query(page)["dataset"] == "low+rank+%2B+noise"  # the data it had

    near = tmp_path / "near.npy"  # 4.8 MB: sent (6.4 MB base64) and streamed
    np.save(near, np.random.default_rng(0).standard_normal((20_000, 30)))
    assert 4.5 * 2**20 < near.stat().st_size <= 5 * 2**20
    upload.set_input_files(near)
    page.wait_for_function("() => /[?&]dataset=your\\+upload(&|$)/.test(location.search)",
                           timeout=TIMEOUT_MS)
    counter(page, 0).wait_for()
    assert page.get_by_text(re.compile("Upload refused")).count() == 0
    button(page, "Step").click()
    counter(page, 1).wait_for()
    assert real_errors(errors) == []
