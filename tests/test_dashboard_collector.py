"""The served dashboard's garbage-collection policy (explorer.dashboard.collector), as a
mechanism: what is frozen, when a closed session's cycles are reclaimed, and that
``serve`` wires it. The pauses themselves are measured by benchmarks/gc_pauses.py."""

from __future__ import annotations

import gc
import weakref

import pytest

from explorer.dashboard import server
from explorer.dashboard.collector import THAW_AFTER_CLOSED, SessionCollector
from explorer.dashboard.memory import FULL_COLLECTION_EVERY


@pytest.fixture(autouse=True)
def gc_restored():
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


class _Node:
    """A reference cycle: only a collection frees it."""

    def __init__(self):
        self.me = self


def test_serve_starts_a_collector_and_serves_sessions_through_it(monkeypatch):
    served = {}
    monkeypatch.setattr(server.pn, "serve", lambda app, **kwargs: served.update(app=app, **kwargs))
    gc.unfreeze()
    server.serve(port=5999, show=False)
    assert gc.get_freeze_count() > 0  # the start-up objects
    assert gc.get_threshold()[2] == FULL_COLLECTION_EVERY
    assert served["app"] is not server.create_app  # a factory that counts the sessions


def test_serve_without_freeze_serves_the_plain_factory(monkeypatch):
    served = {}
    monkeypatch.setattr(server.pn, "serve", lambda app, **kwargs: served.update(app=app))
    gc.unfreeze()
    server.serve(port=5999, show=False, freeze=False)
    assert served["app"] is server.create_app and gc.get_freeze_count() == 0


def test_the_factory_counts_each_session_it_builds():
    collector = SessionCollector()
    factory = server.session_factory(collector, build=lambda: "an app")
    assert [factory(), factory()] == ["an app", "an app"] and collector.live == 2


def test_a_session_whose_build_failed_is_not_counted():
    collector = SessionCollector()

    def broken():
        raise RuntimeError("no page")

    with pytest.raises(RuntimeError):
        server.session_factory(collector, build=broken)()
    assert collector.live == 0


def test_frozen_cycles_wait_for_the_thaw():
    collector = SessionCollector()
    node = _Node()
    alive = weakref.ref(node)
    collector.freeze()  # the session's objects: out of the collector's walks
    del node
    gc.collect()
    assert alive() is not None  # not walked, so not freed, by a full collection
    collector.thaw()
    assert alive() is None and gc.get_freeze_count() > 0


def test_young_garbage_is_collected_before_it_is_frozen():
    collector = SessionCollector()
    node = _Node()
    alive = weakref.ref(node)
    del node  # garbage before the freeze: collected by it, not frozen
    collector.freeze()
    assert alive() is None


def test_the_thaw_comes_when_the_last_session_closes_or_too_many_wait():
    collector = SessionCollector(thaw_after_closed=3)
    for _ in range(5):
        collector.opened()
    assert [collector.closed(), collector.closed()] == [False, False]  # others still open
    assert collector.closed()  # the third closed while others stayed open: thaw anyway
    collector.thaw()
    assert collector.closed() is False and collector.closed() is True  # the last one
    assert THAW_AFTER_CLOSED >= 1


def test_a_session_opened_since_the_close_cancels_a_due_thaw():
    collector = SessionCollector()
    collector.opened()
    assert collector.closed()
    collector.opened()  # came before the delayed thaw ran
    collector.thaw_if_still_due()
    assert collector.thaws == 0


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3", None, True])
def test_a_bad_thaw_count_is_refused(bad):
    with pytest.raises(ValueError, match="thaw_after_closed must be an integer >= 1"):
        SessionCollector(thaw_after_closed=bad)


@pytest.mark.slow
def test_the_pause_benchmark_runs_the_served_policy_on_a_tiny_session():
    """benchmarks/gc_pauses.py, one session of two steps a page, the served arm only: the
    collections are recorded and the policy froze the objects (no timing is checked)."""
    from test_benchmarks import import_benchmarks

    (gc_pauses,) = import_benchmarks("gc_pauses")
    result = gc_pauses.run(sessions=1, steps=2, arms=("serve",))
    (served,) = result["arms"]
    assert served["frozen"] > 0 and served["actions"] == 2 * 2 * 5
    assert served["cpu_ms"]["count"] == sum(served["collections"].values()) > 0
    assert "Verdict:" in gc_pauses.format_results(result)
