"""The "Open the next update" panel (explorer/dashboard/opened.py), without a browser: it opens
the round the next Step plays on a copy (the page's algorithm is untouched), shows its parts
as escaped text and its heatmaps, follows t only while shown, and says when the stream is over."""

from __future__ import annotations

import numpy as np
import param
import pytest

from explorer import RFDSON
from explorer.dashboard.opened import OpenedUpdate, open_next, parts_html
from explorer.sketch import FrequentDirections
from state_checks import assert_same_state, snapshot


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
    card = view.panel()
    view.algorithm = "FD <b>"
    assert "&lt;b&gt;" in view.steps.object and "<b>" not in view.steps.object
    assert view.steps.object.count("<li>") == 2 and view.figure.object is not None
    drawn = view.steps.object
    page.step()  # collapsed: nothing is recomputed
    assert view.steps.object == drawn
    card.collapsed = False
    assert "round t = 2 of FD" in view.steps.object
    page.step()
    assert "round t = 3 of FD" in view.steps.object
