"""The "Open the next update" panel (explorer/dashboard/opened.py), without a browser: it opens
the round the next Step plays on a copy (the page's algorithm is untouched), shows its parts
as escaped text and its heatmaps, follows t only while shown, and says when the stream is over."""

from __future__ import annotations

import os

import numpy as np
import param
import pytest

from explorer import RFDSON
from explorer.dashboard.opened import OpenedUpdate, open_next, parts_html
from explorer.sketch import FrequentDirections
from state_checks import assert_same_state, snapshot
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture)


class FakePage(param.Parameterized):
    """What a page offers the panel: t, n_rows, finished and next_rounds()."""

    t = param.Integer(default=0)
    n_rows = param.Integer(default=6)

    def __init__(self):
        super().__init__()
        self.X = np.random.default_rng(0).standard_normal((6, 3))
        self.learner, self.sketch = RFDSON(3, m=2), FrequentDirections(3, 2)

    @property
    def finished(self):
        return self.t >= self.n_rows

    def next_rounds(self):
        x = self.X[self.t]
        return {"RFD-SON": (self.learner, x, 1.0), "FD <b>": (self.sketch, x, None)}

    def step(self):
        x = self.X[self.t]
        self.learner.learn(x, 1.0)
        self.sketch.update(x)
        self.t += 1


def test_open_next_opens_the_next_round_on_a_copy():
    page = FakePage()
    page.step()
    before = snapshot(page.learner)
    opened = open_next(page, "RFD-SON")
    assert opened.t == 2 and opened.algorithm == "RFD-SON"
    assert_same_state(snapshot(page.learner), before)  # the page's learner did not move
    twin = RFDSON.from_state_dict(page.learner.state_dict())
    assert opened.part("loss").value == twin.step(page.X[1], 1.0).loss
    with pytest.raises(ValueError, match="offers no algorithm 'OGD'"):
        open_next(page, "OGD")
    page.t = 6
    assert open_next(page, "RFD-SON") is None and "stream is over" in parts_html(None)


def test_the_panel_escapes_text_and_follows_t_only_while_shown():
    page = FakePage()
    view = OpenedUpdate(page)
    view.panel()
    assert view.figure is None and view.figure_holder.objects == []  # no empty graph before opening
    view.algorithm = "FD <b>"
    assert view.steps.object == "" and view.figure is None  # closed: nothing computed
    view.shown = True
    assert "&lt;b&gt;" in view.steps.object and "<b>" not in view.steps.object
    assert view.steps.object.count("<li>") == 2 and view.figure.object is not None
    assert view.figure_holder.objects == [view.figure]
    view.shown = False
    drawn = view.steps.object
    page.step()  # closed: nothing is recomputed
    assert view.steps.object == drawn
    view.shown = True
    assert "round t = 2 of FD" in view.steps.object
    page.step()
    assert "round t = 3 of FD" in view.steps.object


def test_every_page_opens_its_next_update_and_leaves_its_state():
    """On each of the five pages, after 37 rows: every algorithm offered opens the round
    t = 38, and the page's race (its state dicts) is bit-identical afterwards."""
    from explorer.dashboard.app import PAGES
    from explorer.dashboard.settings import Settings

    for cls in PAGES:
        page = cls(Settings(n=200, d=8))
        page.step(37)
        before = page.snapshot()["state"]
        view = OpenedUpdate(page)
        assert view.param.algorithm.objects, cls.key  # something to open on every page
        for name in view.param.algorithm.objects:
            assert open_next(page, name).t == 38, (cls.key, name)
        after = page.snapshot()["state"]
        assert repr(after) == repr(before), cls.key


# -- in a browser ---------------------------------------------------------------------------
@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_next_update_opens_by_keyboard_and_follows_step(server, page):
    from test_dashboard_browser import SMALL, counter, open_page, real_errors
    from test_dashboard_keyboard import focused

    errors = open_page(page, server["url"] + "?" + SMALL + "&t=37")
    counter(page, 37).wait_for()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    for _ in range(150):
        page.keyboard.press("Tab")
        if "Open the next update" in focused(page)["text"]:
            break
    else:
        raise AssertionError("Tab never reached 'Open the next update'")
    page.keyboard.press("Enter")
    steps = page.locator("ol.opened-round")
    steps.wait_for(timeout=30_000)
    assert steps.locator("li").first.inner_text().startswith("round t = 38 of FD (m = 5)")
    from playwright.sync_api import expect
    expect(page.locator(".js-plotly-plot .plot-container.plotly")).to_have_count(5, timeout=30_000)  # + B's heatmaps
    page.get_by_text("B with x_t").first.wait_for(timeout=30_000)
    if os.environ.get("EXPLORER_SCREENSHOTS"):  # for a person to look at
        page.screenshot(path=os.path.join(os.environ["EXPLORER_SCREENSHOTS"], "opened_update.png"), full_page=True)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press("ArrowRight")  # Step
    counter(page, 38).wait_for()
    page.get_by_text("round t = 39 of FD (m = 5)").first.wait_for(timeout=30_000)
    assert real_errors(errors) == []
