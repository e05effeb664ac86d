"""explorer.report: what a checked cell prints is decided or refused, never a coin flip."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.report import Undecided, decide, rounded, sig

finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False)


@given(finite, finite, st.floats(min_value=1e-12, max_value=1e3))
def test_decide_answers_only_outside_its_margin(a, b, margin):
    if abs(a - b) <= margin:
        with pytest.raises(Undecided):
            decide(a, "<", b, margin=margin)
    else:
        assert decide(a, "<", b, margin=margin) == (a < b)
        assert decide(a, ">=", b, margin=margin) == (a >= b)
        # No change smaller than the margin's slack can flip the answer.
        slack = (abs(a - b) - margin) / 2
        assert decide(a + slack, "<", b, margin=margin / 2 if margin > 1e-300 else margin) == (a < b)


@given(st.floats(min_value=1e-6, max_value=1e9), st.integers(1, 8))
def test_sig_prints_the_same_digits_for_anything_within_its_guard(x, digits):
    guard = 1e-6 * x
    try:
        shown = sig(x, digits, guard=guard)
    except Undecided:
        # Refused: a rounding edge lies within the guard.
        step = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
        edge = (math.floor(x / step - 0.5) + 0.5) * step
        assert min(abs(x - edge), abs(x - edge - step)) <= guard * (1 + 1e-9) + 1e-12 * step
        return
    for moved in (x - guard / 2, x + guard / 2):
        assert sig(moved, digits, guard=0.0) == shown


def test_values_on_an_edge_are_refused_and_bad_arguments_say_what_is_allowed():
    with pytest.raises(Undecided, match="rounding edge"):
        sig(0.12345, 4, guard=1e-6)
    with pytest.raises(Undecided):
        rounded(29.15, 1, guard=0.001)
    assert rounded(29.14, 1, guard=0.001) == 29.1
    with pytest.raises(ValueError, match="op must be one of"):
        decide(1, "==", 2, margin=0.1)
    with pytest.raises(ValueError, match="margin must be"):
        decide(1, "<", 2, margin=0)
    with pytest.raises(Undecided, match="not finite"):
        decide(float("nan"), "<", 2, margin=0.1)


@given(st.lists(finite, min_size=1, max_size=20), finite, st.floats(min_value=1e-6, max_value=1e3))
def test_decide_all_is_decide_on_every_pair_up_to_the_first_false(values, bound, margin):
    from explorer.report import decide_all

    try:
        answer = decide_all(values, "<", bound, margin=margin)
    except Undecided:
        # Some pair up to the first False lies within the margin.
        first_false = next((i for i, v in enumerate(values) if not v < bound), len(values) - 1)
        assert any(abs(v - bound) <= margin for v in values[:first_false + 1])
        return
    assert answer == all(v < bound for v in values)


def test_perturbed_changes_every_entry_by_about_one_rounding_error_and_is_seeded():
    import numpy as np

    from explorer.report import perturbed

    X = np.random.default_rng(0).standard_normal((50, 4))
    copy = perturbed(X, 3)
    assert np.array_equal(copy, perturbed(X, 3)) and not np.array_equal(copy, perturbed(X, 4))
    assert 0 < np.max(np.abs(copy / X - 1)) < 1e-14


@given(finite, finite, st.floats(min_value=1e-6, max_value=1e3))
def test_verdict_names_the_side_beyond_the_margin_and_ties_within_half_of_it(a, b, margin):
    from explorer.report import verdict

    gap = abs(a - b)
    try:
        word = verdict(a, b, margin=margin)
    except Undecided:
        assert margin / 2 <= gap * (1 + 1e-12) + 1e-12 and gap <= margin * (1 + 1e-12) + 1e-12
        return
    if word == "tied":
        assert gap < margin
    else:
        assert gap > margin and word == ("lower" if a < b else "higher")


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=8), st.floats(1e-6, 10.0))
def test_lowest_names_the_smallest_only_when_the_runner_up_is_beyond_the_margin(values, margin):
    from explorer.report import lowest

    ordered = sorted(values)
    if len(values) > 1 and ordered[1] - ordered[0] <= margin:
        with pytest.raises(Undecided):
            lowest(values, margin=margin)
        return
    i = lowest(values, margin=margin)
    assert values[i] == ordered[0]
    assert lowest(dict(zip([f"k{j}" for j in range(len(values))], values)), margin=margin) == f"k{i}"


def test_lowest_refuses_no_values_and_a_bad_margin():
    from explorer.report import lowest

    with pytest.raises(ValueError, match="at least one value"):
        lowest({}, margin=1.0)
    with pytest.raises(ValueError, match="margin must be a finite number > 0"):
        lowest([1.0], margin=0.0)
