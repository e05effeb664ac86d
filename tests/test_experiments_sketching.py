"""explorer.experiments.sketching: the sketching page's experiment, without Panel."""

import numpy as np
import pytest

from explorer import FrequentDirections, RobustFrequentDirections
from explorer.experiments.sketching import SKETCH_VARIANTS, SketchComparison
from explorer.metrics import (best_fd_bound, covariance_error, exact_condition_number,
                              sketch_condition_numbers)
from explorer.streams import low_rank_plus_noise
from state_checks import assert_same_state

X = low_rank_plus_noise(120, 12, rank=3, seed=0)


def comparison(rows=X[:70], alpha0=0.5, m=4) -> SketchComparison:
    race = SketchComparison(X.shape[1], m, alpha0=alpha0)
    for start in range(0, rows.shape[0], 9):  # the page feeds a few rows at a time
        race.extend(rows[start:start + 9])
    return race


def flat(state: dict) -> dict:
    """The comparison's nested state as one flat dict of arrays (for assert_same_state)."""
    out = {key: state[key] for key in ("d", "m", "alpha0", "gram")}
    for name in ("fd", "rfd"):
        for v in SKETCH_VARIANTS:
            out.update({f"{name}.{v}.{key}": value for key, value in state[name][v].items()})
    return out


def test_measure_gives_the_numbers_of_the_sketch_api_and_metrics():
    race = comparison()
    A = X[:70]
    point = race.measure()
    for v in SKETCH_VARIANTS:
        fd, rfd = FrequentDirections(12, 4, fast=v == "fast"), RobustFrequentDirections(12, 4, alpha0=0.5, fast=v == "fast")
        fd.extend(A)
        rfd.extend(A)
        np.testing.assert_array_equal(race.rfd[v].rows, rfd.rows)
        assert point[f"alpha_{v}"] == rfd.alpha
        assert point[f"error_fd_{v}"] == pytest.approx(covariance_error(A, fd), rel=1e-9)
        assert point[f"error_rfd_{v}"] == pytest.approx(covariance_error(A, rfd), rel=1e-9)
        kappa = sketch_condition_numbers(rfd)
        assert point[f"kappa_fd_{v}"] == pytest.approx(kappa["fd"], rel=1e-9)
        assert point[f"kappa_rfd_{v}"] == pytest.approx(kappa["rfd"], rel=1e-9)
    assert point["bound_fd"] == pytest.approx(best_fd_bound(A, 4), rel=1e-9)
    assert point["bound_rfd"] == point["bound_fd"] / 2
    assert point["kappa_exact"] == pytest.approx(exact_condition_number(A, 0.5), rel=1e-6)
    assert race.n_seen == 70 and race.last_shrink("exact")["t"].tolist() == [70]


def test_with_params_applies_alpha0_to_both_rfd_sketches_and_leaves_the_original():
    race = comparison()
    before = flat(race.state_dict())
    moved = race.with_params(alpha0=3.0)
    assert_same_state(flat(race.state_dict()), before)
    for v in SKETCH_VARIANTS:
        assert moved.rfd[v].alpha == 3.0 + race.rfd[v].delta_total / 2
        np.testing.assert_array_equal(moved.rfd[v].rows, race.rfd[v].rows)
    moved.extend(X[70:80])  # the recorders follow the new sketches
    assert moved.last_shrink("exact")["t"].tolist() == [80]
    assert race.last_shrink("exact")["t"].tolist() == [70]
    with pytest.raises(ValueError, match="cannot change m mid-stream"):
        race.with_params(m=5)
    with pytest.raises(ValueError, match="alpha0"):
        race.with_params(alpha0=-1.0)


def test_save_load_continue_equals_never_stopping():
    straight, stopped = comparison(), comparison()
    resumed = SketchComparison.from_state_dict(stopped.state_dict())
    for race in (straight, resumed):
        race.extend(X[70:])
    assert_same_state(flat(straight.state_dict()), flat(resumed.state_dict()))
    assert straight.measure() == resumed.measure()
    assert resumed.last_shrink("fast")["t"].tolist() == straight.last_shrink("fast")["t"].tolist()


def test_a_refused_row_changes_nothing():
    race = comparison()
    before, point = flat(race.state_dict()), race.measure()
    rows = X[70:75].copy()
    rows[3] = 1e200  # past MAX_SQUARED_MASS: FD refuses it
    with pytest.raises(ValueError, match="too large"):
        race.extend(rows)
    assert_same_state(flat(race.state_dict()), before)
    assert race.measure() == point


def test_a_failure_in_a_later_sketch_puts_the_earlier_ones_back(monkeypatch):
    race = comparison()
    before = flat(race.state_dict())

    def refuse(rows):
        raise ValueError("refused")

    monkeypatch.setattr(race.rfd["fast"], "extend", refuse)  # the last of the four
    with pytest.raises(ValueError, match="refused"):
        race.extend(X[70:80])
    assert_same_state(flat(race.state_dict()), before)
    race.extend(X[70:80])  # the restored sketches work (and are hooked to the recorders)
    assert race.last_shrink("exact")["t"].tolist() == [80]


def test_load_refuses_another_comparison():
    race = comparison()
    with pytest.raises(ValueError, match="alpha0"):
        SketchComparison(12, 4, alpha0=1.0).load_state_dict(race.state_dict())
    with pytest.raises(ValueError, match="'m'"):
        SketchComparison(12, 5, alpha0=0.5).load_state_dict(race.state_dict())


def test_rounding_noise_before_the_first_shrink_is_reported_as_zero_not_as_a_violated_bound():
    """Issue 17: before any shrink (delta_total == 0) the sketch holds A exactly, so the
    error is 0 <= Delta = 0 by Theorem 3; the dense error matrix gave ~5e-16 > bound 0."""
    from explorer.metrics import ROUNDING_LEVEL, gram_covariance_error
    race = SketchComparison(X.shape[1], 4, alpha0=0.5)
    for row in X[:3]:  # one row at a time, as Step does: the Gram sum rounds
        race.extend(row[None])
    raw = [gram_covariance_error(race.gram, s) for s in (*race.fd.values(), *race.rfd.values())]
    assert max(raw) > 0.0  # the noise the page drew above its bound
    point = race.measure()
    assert point["bound_fd"] == point["bound_rfd"] == 0.0
    for v in SKETCH_VARIANTS:
        assert race.fd[v].delta_total == race.rfd[v].delta_total == 0.0
        assert point[f"error_fd_{v}"] == point[f"error_rfd_{v}"] == 0.0
    # after a shrink a real error stays as measured, and is far above the rounding level
    race = comparison(rows=X[:6])
    point = race.measure()
    assert race.fd["exact"].delta_total > 0
    assert point["error_fd_exact"] == gram_covariance_error(race.gram, race.fd["exact"])
    assert point["error_fd_exact"] > 1e6 * ROUNDING_LEVEL * race.eigenvalues()[0]
