"""Issue 17, defect 4 and the α plot of defect 7: the curves at row t do not depend on how
the stream got there.

A shared link carries the settings and ``t``; the receiver's transport seeks to ``t`` in
large chunks, while the sender stepped, played or went back. The curves had one point per
step (the receiver: one every 20 rows, and an empty accuracy plot at t = 12). Now a page
records a point at every ``resolution``-th row and at the current row, so the history at
row ``t`` is the same for every path (``Page.step``). Only wall-clock columns (ADA-*'s ms
per round, the FM page's microseconds) differ between two runs, and are left out.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.dashboard.app import PAGES, Dashboard

pytestmark = pytest.mark.timeout(300)

KEYS = [cls.key for cls in PAGES]
CLOCK_COLUMNS = ("ms_", "time_")
"""Columns measured with a clock: never equal between two runs."""


def dashboard(key: str, n: int = 400) -> Dashboard:
    app = Dashboard()
    app.settings.n = n
    app.page = key
    return app


def comparable(history) -> dict[str, np.ndarray]:
    return {name: history[name].copy() for name in history if not name.startswith(CLOCK_COLUMNS)}


def assert_same_curves(sender, receiver) -> None:
    a, b = comparable(sender.history), comparable(receiver.history)
    assert list(a) == list(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("key", KEYS)
def test_a_link_at_t_draws_the_curves_the_sender_stepped_through(key):
    """Steps of 1-8 rows, a Back and a Play tick on one side; a link's seek on the other."""
    sender, receiver = dashboard(key), dashboard(key)
    rng = np.random.default_rng(0)
    while sender.transport.t < 97:
        sender.transport.step(int(rng.integers(1, 9)))
    sender.transport.back(5)
    sender.transport.tick()  # one Play round (15 rows/s: one row)
    t = sender.transport.t
    receiver.transport.shared_t = t
    assert receiver.transport.t == t and sender.active.resolution == 2  # n = 400: every 2nd row
    assert_same_curves(sender.active, receiver.active)
    # and the plots: the points drawn are the history's (a link at t = 12 had an empty plot)
    assert sender.active.history["t"][-1] == t and len(sender.active.history) == 1 + t // 2 + t % 2


def test_a_newton_link_at_t_12_has_its_accuracy_points():
    receiver = dashboard("newton", n=1000)
    receiver.transport.shared_t = 12
    page = receiver.active
    page.views  # noqa: B018 (built on first use)
    accuracy = page.plots["accuracy"].trace("RFD-SON")
    assert list(accuracy.x) == [0, 4, 8, 12] and np.isfinite(accuracy.y[1:]).all()


@settings(max_examples=15, deadline=None)
@given(steps=st.lists(st.integers(1, 40), min_size=1, max_size=8), n=st.integers(50, 700))
def test_the_sketching_curves_at_t_are_the_same_for_any_steps(steps, n):
    sender, receiver = dashboard("sketching", n=n), dashboard("sketching", n=n)
    for k in steps:
        sender.transport.step(k)
    receiver.transport.shared_t = sender.transport.t
    assert_same_curves(sender.active, receiver.active)
    t = sender.active.history["t"]
    assert np.all(np.diff(t) > 0) and t[-1] == sender.transport.t


@pytest.mark.parametrize("key, line", [("sketching", "FD: α₀ (fixed)"),
                                       ("newton", "α₀ (FD-SON, RP-SON, FULL-ON)")])
def test_an_alpha0_change_mid_stream_is_drawn_as_a_step_where_it_happened(key, line):
    """The α₀ line was redrawn from today's α₀ over the whole stream; now the earlier rows
    keep the α₀ they ran with, and the change is a vertical step at its row."""
    app = dashboard(key)
    page = app.active
    page.views  # noqa: B018
    app.transport.step(13)
    app.settings.alpha0 = 10.0
    app.transport.step(4)
    drawn = page.plots["alpha"].trace(line)
    x, y = np.asarray(drawn.x), np.asarray(drawn.y)
    assert set(y[x < 13]) == {1.0} and set(y[x > 13]) == {10.0}
    assert list(y[x == 13]) == [1.0, 10.0]  # before and after, at the row of the change
