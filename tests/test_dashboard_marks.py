"""Notes on the figures: every dashboard page marks its events on its time axes.

Each page of :data:`explorer.dashboard.app.PAGES` draws thin verticals
(:func:`explorer.plots.event_marks`) where its race's events happened: shrinks, learners
that stopped, the stream's subspace switches, changes of leader. The tests here step a page
one row at a time, read each event off what the round itself produced (a step record, a
sketch's shrink counter, the recorded curves: an oracle independent of the page's marks),
and check that the figure carries a mark at that row and none past the rows streamed.
A new page fails :func:`test_every_page_has_an_oracle` until it joins :data:`ORACLES`.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.dashboard import Dashboard
from explorer.dashboard.app import PAGES
from explorer.errors import Diverged
from explorer.plots import EVENT_STYLES, MARKS_SHOWN, Events, event_marks

SETTINGS = dict(n=240, d=12, m=4)


def _shrank(page, record_of: str) -> bool:
    """Whether learner ``record_of``'s record of the row just played holds a shrink."""
    record = page.race.records.get(record_of)
    return record is not None and record.t == page.t and record.shrink is not None


def _counter(count):
    """An oracle that sees an event when ``count(page)`` grew since the last row."""
    def oracle(page, seen: dict) -> bool:
        now, before = count(page), seen.get("count", 0)
        seen["count"] = now
        return now > before
    return oracle


def _pca_leader(page, seen: dict) -> bool:
    """Another learner is strictly ahead in the recorded cumulative losses (the plotted ones)."""
    point = page.history.last()
    losses = {key: point[f"loss_{key}"] for key in ("ftl", "static", "adaptive")}
    best, leader = min(losses, key=losses.get), seen.get("leader")
    seen["leader"] = best if leader is None or losses[best] < losses[leader] else leader
    return leader is not None and seen["leader"] != leader


def _fm_shrinks(page) -> int:
    sketch = page.race.learners["sftrl"].sketch
    return sketch.positive.n_shrinks + sketch.negative.n_shrinks


ORACLES = {
    # page key: (the figure that marks the event, whether the row just played had one)
    "sketching": ("alpha", _counter(lambda page: page.sketches.fd["fast"].n_shrinks)),
    "newton": ("alpha", lambda page, seen: _shrank(page, "RFD-SON")),
    "adagrad": ("rank", lambda page, seen: _shrank(page, "ffd")),
    "pca": ("loss", _pca_leader),
    "fm": ("balance", _counter(_fm_shrinks)),
}
"""How each page's events are read off the rounds, independently of the page's marks."""


def _app(key: str, **settings) -> Dashboard:
    app = Dashboard()
    app.settings.param.update(**{**SETTINGS, **settings})
    app.page = key
    app.active.views  # noqa: B018 - built, so that refresh() draws
    return app


def _marks(plot) -> list[float]:
    """The x of the event marks a live figure carries (its own guides have no legend name)."""
    return [shape.x0 for shape in plot.figure.layout.shapes if shape.name]


def test_every_page_has_an_oracle():
    assert {cls.key for cls in PAGES} == set(ORACLES)


@pytest.mark.parametrize("key", [cls.key for cls in PAGES])
def test_a_page_marks_its_events_where_they_happened_and_nothing_later(key):
    app = _app(key)
    page, (figure, happened), seen, events = app.active, ORACLES[key], {}, []
    while len(events) < 2 and not page.finished:
        page.step(1)
        if happened(page, seen):
            events.append(page.t)
    assert len(events) == 2, f"no two events on the {key} page in {page.t} rows"
    page.step(3)  # a few rows past the last event
    page.refresh()
    marks = _marks(page.plots[figure])
    assert set(events) <= set(marks), (events, marks)
    assert max(marks) <= page.t
    assert all(max(_marks(plot), default=0) <= page.t for plot in page.plots.values())


@pytest.mark.parametrize("key", [cls.key for cls in PAGES])
def test_the_marks_stay_few_however_long_the_stream(key):
    app = _app(key, n=600)
    page = app.active
    page.step(600)
    page.refresh()
    for name, plot in page.plots.items():
        shapes = [shape for shape in plot.figure.layout.shapes if shape.name]
        per_label = {}
        for shape in shapes:
            per_label[shape.name] = per_label.get(shape.name, 0) + 1
        assert all(count <= MARKS_SHOWN for count in per_label.values()), (name, per_label)
        assert all(shape.x0 <= page.t for shape in shapes)
        assert sum(bool(shape.showlegend) for shape in shapes) == len(per_label)  # one legend entry each


@pytest.mark.parametrize("key", [cls.key for cls in PAGES])
def test_a_learner_that_stops_is_marked_where_it_stopped(key):
    if key == "sketching":
        pytest.skip("the sketching page compares sketches: a row they refuse stops nothing")
    app = _app(key, **({"eta": 10.0} if key == "fm" else {}))
    page = app.active
    page.step(20)
    if key != "fm":  # S-FTRL diverges by itself at eta = 10 (tests/test_dashboard_fm.py)
        def overflow(x, y=None):  # what a learner raises when its numbers leave the finite range
            raise Diverged("the loss overflowed", t=page.t + 1)
        page.race.learners[next(iter(page.race.learners))].step = overflow
    while not page.race.stopped and not page.finished:
        page.step(1)
    assert page.race.stopped, f"nobody stopped on the {key} page"
    page.step(2)
    page.refresh()
    for name, error in page.race.stopped.items():
        over_stream = [plot for plot in page.plots.values() if plot.over_stream]
        assert all(error.t in _marks(plot) for plot in over_stream), (name, error.t)


def test_back_forgets_the_marks_of_the_rows_it_undoes():
    app = _app("sketching")
    page, transport = app.active, app.transport
    transport.step(120)
    later = _marks(page.plots["alpha"])
    transport.back(60)
    assert page.t == 60
    fresh = _app("sketching")
    fresh.transport.step(60)
    marks = _marks(page.plots["alpha"])
    assert marks == _marks(fresh.active.plots["alpha"]) and max(marks) <= 60 < max(later)
    transport.step(60)
    assert _marks(page.plots["alpha"]) == later


# -- the helper ------------------------------------------------------------------------------
@given(times=st.lists(st.integers(0, 500), max_size=60), upto=st.integers(0, 500),
       limit=st.integers(0, 40), kind=st.sampled_from(sorted(EVENT_STYLES)))
@settings(max_examples=200, deadline=None)
def test_event_marks_draws_the_latest_streamed_events_once(times, upto, limit, kind):
    shapes = event_marks(Events(kind, "label", times), upto=upto, limit=limit)["shapes"]
    expected = sorted({t for t in times if t <= upto})[-limit:] if limit else []
    assert [shape["x0"] for shape in shapes] == expected
    assert all(shape["x1"] == shape["x0"] and shape["yref"] == "paper" for shape in shapes)
    assert [shape["showlegend"] for shape in shapes] == [i == 0 for i in range(len(shapes))]
    assert all(shape["line"]["dash"] == EVENT_STYLES[kind]["dash"] for shape in shapes)


def test_event_marks_keeps_the_figures_own_shapes_and_a_given_colour():
    own = {"type": "line", "y0": 0.5, "y1": 0.5}
    marks = event_marks(Events("shrink", "B+ shrinks", [3.0, np.nan], color="#b35806"),
                        Events("stopped", "OGD stopped", [7]), keep=[own])["shapes"]
    assert marks[0] == own and [m["x0"] for m in marks[1:]] == [3.0, 7.0]
    assert marks[1]["line"]["color"] == "#b35806"
    assert marks[2]["line"]["color"] == EVENT_STYLES["stopped"]["color"]
    with pytest.raises(ValueError, match="kind must be one of"):
        event_marks(Events("explosion", "boom", [1]))
