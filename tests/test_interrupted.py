"""A call interrupted anywhere leaves the object as it was before the call.

The promise "a call that fails midway restores the state" covers failures the package does
not raise itself: a ``KeyboardInterrupt`` (a student stopping a cell), a ``MemoryError``, a
fault in a library underneath. This suite checks it for every class of
``tests/stateful_zoo.py``, at every point of a call: a trace function counts the Python
function calls made inside ``explorer/`` during a round (``ROUNDS``), a batch (``BATCHES``,
``KEPT_BATCHES``) or an in-place ``load_state_dict``, and raises ``KeyboardInterrupt`` at the
k-th, for every k (up to :data:`MAX_POINTS` spread over the call). The interrupt must come
out of the call; then a batch leaves ``state_dict()`` bit-identical to the one before the call
(and the object plays exactly like a twin loaded from it), a round leaves the state as before
it or as after it, and a load the old state or the loaded one: never a mix. Compiled kernels
(numba) are not traced: an interrupt lands between them.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import explorer
from explorer.state import registered_kinds
from learner_checks import continues_like_a_twin
from state_checks import assert_same_state, differing_keys, same_state, snapshot
from stateful_zoo import BATCHES, FEEDS, KEPT_BATCHES, ROUNDS, fed, labels, rows

PACKAGE = str(pathlib.Path(explorer.__file__).resolve().parent)
#: At most this many interruption points per call (spread evenly over its function calls).
MAX_POINTS = 150
N_ROWS = 8  # rows per batch: at least two shrinks of every sketch in the zoo (m = 3)


class Interrupt:
    """A trace function raising ``KeyboardInterrupt`` at the ``at``-th function call made
    in the package (never with ``at = 0``); ``calls`` counts them."""

    def __init__(self, at: int = 0):
        self.at, self.calls, self.fired = at, 0, False

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(PACKAGE):
            self.calls += 1
            if self.calls == self.at:
                sys.settrace(None)
                self.fired = True
                raise KeyboardInterrupt(f"interrupted at call {self.at}")
        return None

    def run(self, call):
        previous = sys.gettrace()
        sys.settrace(self)
        try:
            return call()
        finally:
            sys.settrace(previous)


def points(n_calls: int) -> list[int]:
    """Every call index 1..n_calls, or :data:`MAX_POINTS` of them spread evenly."""
    return sorted({int(k) for k in np.linspace(1, n_calls, min(n_calls, MAX_POINTS)).round()})


def batch_input(seed: int = 12):
    rng = np.random.default_rng(seed)
    return rows(rng, N_ROWS) / 10, labels(rng, N_ROWS)


def play(name):
    """A fixed sequence of ordinary rounds, drawn afresh on every call."""
    def rounds(obj) -> list:
        rng = np.random.default_rng(21)
        return [np.asarray(ROUNDS[name](obj, x, y)).tolist() for x, y in zip(rows(rng, 4) / 10, labels(rng, 4))]
    return rounds


def interrupted_calls(name: str, call) -> None:
    """``call(obj)`` interrupted at each of its points: raised, state as before, then like a twin."""
    counter = Interrupt()
    counter.run(lambda: call(fed(name)))
    assert counter.calls > 0
    fired = 0
    for at in points(counter.calls):
        obj = fed(name)
        before = snapshot(obj)
        interrupt = Interrupt(at)
        try:
            interrupt.run(lambda: call(obj))
        except KeyboardInterrupt:
            pass
        if not interrupt.fired:  # a path that makes fewer calls this time (a compiled one got ready)
            continue
        fired += 1
        assert_same_state(snapshot(obj), before)
        if at % 7 == 1:  # a sample of the points: no hidden attribute kept a trace
            continues_like_a_twin(obj, before, play(name))
    assert fired > 0


BATCH_CALLS = [(name, kind) for kind, table in (("batch", BATCHES), ("kept", KEPT_BATCHES)) for name in sorted(table)]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name,kind", BATCH_CALLS)
def test_a_batch_interrupted_anywhere_leaves_the_object_as_it_was(name, kind):
    X, y = batch_input()
    table = BATCHES if kind == "batch" else KEPT_BATCHES
    interrupted_calls(name, lambda obj: table[name](obj, X, y))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(FEEDS))
def test_a_round_interrupted_anywhere_is_undone_or_done_never_half(name):
    """Rounds played one by one: an interrupted round leaves the state as before it or as
    after it (the interrupt came after its last change), never in between."""
    X, y = batch_input()

    def rounds(obj, states, interrupt=None):
        for x, label in zip(X, y):
            tracer = sys.gettrace()
            sys.settrace(None)  # the test's own snapshot is not a point of the call
            states.append(snapshot(obj))
            sys.settrace(tracer)
            ROUNDS[name](obj, x, label)
        states.append(snapshot(obj))

    clean, counter = [], Interrupt()
    counter.run(lambda: rounds(fed(name), clean))
    fired = 0
    for at in points(counter.calls):
        obj, states, interrupt = fed(name), [], Interrupt(at)
        try:
            interrupt.run(lambda: rounds(obj, states))
        except KeyboardInterrupt:
            pass
        if interrupt.fired:
            fired += 1
            r = len(states) - 1  # the round interrupted
            now = snapshot(obj)
            assert same_state(now, clean[r]) or same_state(now, clean[r + 1]), (
                f"round {r} interrupted at call {at}: state differs from before the round at "
                f"{differing_keys(now, clean[r])} and from after it at {differing_keys(now, clean[r + 1])}")
    assert fired > 0


def test_every_registered_class_is_interrupted():
    assert sorted(FEEDS) == registered_kinds()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(FEEDS))
def test_an_interrupted_load_leaves_the_object_as_it_was_or_loaded(name):
    """``load_state_dict`` in place (what a resume and a rollback call): interrupted anywhere,
    the object holds its old state or the loaded one, never a mix."""
    state = snapshot(fed(name, n=27, seed=8))
    counter = Interrupt()
    counter.run(lambda: fed(name).load_state_dict(state))
    fired = 0
    for at in points(counter.calls):
        obj = fed(name)
        before, interrupt = snapshot(obj), Interrupt(at)
        try:
            interrupt.run(lambda: obj.load_state_dict(state))
        except KeyboardInterrupt:
            pass
        if interrupt.fired:
            fired += 1
            now = snapshot(obj)
            assert same_state(now, before) or same_state(now, state), (
                f"interrupted at call {at}: differs from before at {differing_keys(now, before)} "
                f"and from the loaded state at {differing_keys(now, state)}")
    assert fired > 0
