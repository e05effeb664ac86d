"""FD's compiled shrink (:func:`explorer.compiled.shrink`) against the numpy rule.

Every Frequent Directions sketch shrinks a wide full buffer by numba's compiled
:func:`~explorer.compiled.shrink` once it is ready, and by
:func:`~explorer.sketch.shrink.fd_shrink` otherwise (the reference). The same streams go
through both side by side (hypothesis: exact and fast FD, Robust FD, sizes with d above and
below the buffer, scales from 1e-160 to 1e150, zero rows, rows refused for their mass, ``update``
and ``extend``): outcomes, refusal messages, shrink events and every entry of ``state_dict()``
must be the same bit for bit, so a run is the same whether the compile finished before it,
during it or never. Skipped only when numba is not installed (the test extra installs it).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer import compiled
from explorer.hooks import Recorder
from explorer.sketch import FrequentDirections, RobustFrequentDirections

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("compiled_ready")]

MAKERS = {
    "fd": lambda d, m: FrequentDirections(d, m),
    "fast fd": lambda d, m: FrequentDirections(d, m, fast=True),
    "rfd": lambda d, m: RobustFrequentDirections(d, m, fast=True),
}


def outcome(call):
    try:
        call()
        return ("ok",)
    except ValueError as error:
        return ("refused", type(error), str(error))


def same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def play(sketch, X: np.ndarray, by_row: bool) -> list:
    """The outcome of each call (``update`` row by row, else one ``extend``)."""
    if by_row:
        return [outcome(lambda row=row: sketch.update(row)) for row in X]
    return [outcome(lambda: sketch.extend(X))]


def events(recorder: Recorder) -> list:
    return [(e.t, e.delta, e.alpha, e.sigma.tobytes()) for e in recorder.events("shrink")]


@settings(max_examples=80, deadline=None)
@given(kind=st.sampled_from(sorted(MAKERS)), d=st.integers(1, 40), m=st.integers(2, 6),
       n=st.integers(0, 90), scale=st.integers(-160, 150), zeros=st.floats(0.0, 0.5),
       huge=st.booleans(), by_row=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_a_stream_is_the_same_on_both_paths(kind, d, m, n, scale, zeros, huge, by_row, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.exp(rng.standard_normal((n, 1))) * 10.0 ** scale
    X[rng.random(n) < zeros] = 0.0
    if huge and n:
        X[rng.integers(n)] = 1e160  # past the mass limit: refused, on both paths alike
    fast, reference = MAKERS[kind](d, m), MAKERS[kind](d, m)
    fast_events, reference_events = Recorder(), Recorder()
    fast.add_hook(fast_events)
    reference.add_hook(reference_events)
    shrinks = compiled.COUNTS["shrinks"]
    got = play(fast, X, by_row)
    with compiled.numpy_only():
        expected = play(reference, X, by_row)
    assert got == expected
    assert events(fast_events) == events(reference_events)
    state, expected_state = fast.state_dict(), reference.state_dict()
    assert state.keys() == expected_state.keys()
    assert all(same(state[key], expected_state[key]) for key in state), \
        [key for key in state if not same(state[key], expected_state[key])]
    if fast.capacity < d and fast.n_shrinks and scale > -90:
        assert compiled.COUNTS["shrinks"] > shrinks  # the compiled path played (not only numpy)


def test_the_numpy_rule_plays_while_switched_off_and_for_a_tall_buffer():
    """``numpy_only`` and a buffer with at least as many rows as columns (the SVD route) leave
    every shrink to :func:`~explorer.sketch.shrink.fd_shrink`; a wide one takes the compiled."""
    X = np.random.default_rng(0).standard_normal((60, 8))
    shrinks = compiled.COUNTS["shrinks"]
    with compiled.numpy_only():
        FrequentDirections(8, 3, fast=True).extend(X)
    tall = FrequentDirections(8, 4, fast=True)  # 8 rows x 8 columns
    tall.extend(X)
    assert tall.n_shrinks > 0 and compiled.COUNTS["shrinks"] == shrinks
    wide = FrequentDirections(8, 3, fast=True)
    wide.extend(X)
    assert compiled.COUNTS["shrinks"] - shrinks == wide.n_shrinks > 0


def test_resuming_across_the_paths_is_never_stopping():
    """A state saved on one path continues on the other exactly like a run on the numpy rule
    alone, saved and resumed at the same rows (``extend`` sums ``||A||_F^2`` per call)."""
    X = np.random.default_rng(1).standard_normal((300, 50))
    parts = (X[:137], X[137:211], X[211:])
    with compiled.numpy_only():
        reference = FrequentDirections(50, 5, fast=True)
        for part in parts:
            reference = FrequentDirections.from_state_dict(reference.state_dict())
            reference.extend(part)
    first = FrequentDirections(50, 5, fast=True)
    first.extend(parts[0])
    with compiled.numpy_only():
        second = FrequentDirections.from_state_dict(first.state_dict())
        second.extend(parts[1])
    third = FrequentDirections.from_state_dict(second.state_dict())
    third.extend(parts[2])
    assert third.n_shrinks > 30
    assert all(same(third.state_dict()[key], value) for key, value in reference.state_dict().items())
