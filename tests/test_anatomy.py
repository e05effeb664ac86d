"""Open one update (explorer/anatomy.py, explorer/plots/anatomy.py): the opened round is the
round the algorithm plays (same state after as a twin that only updates), and its numbers
are the paper's, checked against an exact recomputation: delta is the m-th squared singular
value of the full buffer, the kept rows are those with sigma_i^2 > delta, RFD's alpha grows
by delta / 2, a round without a shrink appends x_t to B; RFD-SON's parts are its step
record's, its sketched row sqrt(mu + eta_t) g_t."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from explorer import OGD, RFDSON, FDSON, AdaGrad, OnlineAdaptivePCA, SketchedFTRL
from explorer.anatomy import (OpenedRound, can_open, open_adagrad_round, open_pca_round, open_round,
                              open_sftrl_round, open_sketch_round, open_son_round)
from explorer.pca import AdaptiveBestSubset
from explorer.plots.anatomy import round_heatmaps
from explorer.sketch import FrequentDirections, RobustFrequentDirections
from state_checks import assert_same_state, snapshot

SKETCHES = {"FD": lambda d, m, fast: FrequentDirections(d, m, fast=fast),
            "RFD": lambda d, m, fast: RobustFrequentDirections(d, m, alpha0=0.5, fast=fast)}


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(SKETCHES)), d=st.integers(2, 7), m=st.integers(2, 4),
       fast=st.booleans(), n=st.integers(1, 14), seed=st.integers(0, 2 ** 16))
def test_an_opened_sketch_round_is_the_round_with_the_papers_numbers(kind, d, m, fast, n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.1, 10.0, d)
    opened, twin = SKETCHES[kind](d, m, fast), SKETCHES[kind](d, m, fast)
    for x in X:
        rows_before, alpha_before = opened.rows.copy(), getattr(opened, "alpha", None)
        result = open_sketch_round(opened, x)
        twin.update(x)
        assert_same_state(snapshot(opened), snapshot(twin))  # the round the sketch plays
        assert isinstance(result, OpenedRound) and result.t == opened.n_seen
        assert np.array_equal(result.before, rows_before) and np.array_equal(result.after, opened.rows)
        full = np.vstack([rows_before, x])
        if full.shape[0] < opened.capacity:  # room: x_t appended, nothing else
            assert np.array_equal(result.after, full)
            assert [p.symbol for p in result.parts] == ["x_t", "room"]
            continue
        exact = np.linalg.svd(full, compute_uv=False)  # an independent SVD of the full buffer
        sigma = result.part("sigma").value
        assert np.allclose(sigma[:exact.size], exact[:sigma.size], rtol=1e-9, atol=1e-9 * exact[0])
        delta = result.part("delta").value
        expected = exact[m - 1] ** 2 if exact.size >= m else 0.0
        assert math.isclose(delta, expected, rel_tol=1e-9, abs_tol=1e-9 * exact[0] ** 2)
        shrunk = result.part("sigma^2 - delta").value
        assert result.after.shape[0] == int(np.count_nonzero(shrunk[:m - 1] > 0))
        assert not shrunk[result.after.shape[0]:].any()  # the freed ones exactly 0, not rounding residue
        if kind == "RFD":
            assert math.isclose(result.part("alpha").value - alpha_before, delta / 2, rel_tol=1e-12,
                                abs_tol=1e-15 * max(1.0, alpha_before))


def test_a_zero_row_and_a_bad_row():
    sketch = FrequentDirections(3, 2)
    opened = open_sketch_round(sketch, np.zeros(3))
    assert opened.row is None and opened.lines() == ["round t = 1 of FD (m = 2): x_t = 0 adds nothing to B"]
    before = snapshot(sketch)
    for bad in ([np.nan, 0.0, 0.0], [1.0, 2.0], "abc"):
        with pytest.raises(ValueError):
            open_sketch_round(sketch, bad)
        assert_same_state(snapshot(sketch), before)
        assert sketch._hooks == []  # the listening hook is removed on a refusal too
    with pytest.raises(ValueError, match="FrequentDirections or RobustFrequentDirections"):
        open_sketch_round(object(), [1.0, 0.0, 0.0])


@settings(max_examples=15, deadline=None)
@given(cls=st.sampled_from([RFDSON, FDSON]), seed=st.integers(0, 2 ** 16), n=st.integers(1, 12))
def test_an_opened_son_round_is_its_step(cls, seed, n):
    rng = np.random.default_rng(seed)
    X, y = rng.standard_normal((n, 5)), rng.choice([-1.0, 1.0], n)
    opened, twin = cls(5, m=2, alpha0=1.0, eta=0.1), cls(5, m=2, alpha0=1.0, eta=0.1)
    for x, label in zip(X, y):
        result = open_son_round(opened, x, label)
        record = twin.step(x, label)
        assert_same_state(snapshot(opened), snapshot(twin))
        assert result.part("w_t^T x_t").value == record.prediction and result.part("loss").value == record.loss
        g = record.gradient_scale * x
        assert np.array_equal(result.part("g_t").value, g)
        if record.gradient_scale:
            assert np.array_equal(result.row, math.sqrt(twin.curvature_weight(record.t)) * g)
        assert np.array_equal(result.part("u_{t+1}").value, twin.u)
        assert np.array_equal(result.after, twin.sketch.rows)
        assert ("delta" in [p.symbol for p in result.parts]) == (record.shrink is not None)


def test_son_round_refuses_other_learners():
    from explorer import FullON
    with pytest.raises(ValueError, match="RFD-SON or FD-SON"):
        open_son_round(FullON(3, alpha0=1.0), [1.0, 0.0, 0.0], 1.0)


def test_the_heatmaps_show_the_incoming_row_and_the_buffer_after():
    sketch = RobustFrequentDirections(4, 2)
    sketch.update([3.0, 0.0, 0.0, 0.0])
    fig = round_heatmaps(open_sketch_round(sketch, [0.0, 4.0, 0.0, 0.0]))
    left, right = fig.data
    assert np.array_equal(left.z, [[3.0, 0.0, 0.0, 0.0], [0.0, 4.0, 0.0, 0.0]])
    assert np.array_equal(right.z[1], np.zeros(4))  # the freed row, drawn as the zero it is
    assert right.z.shape == (2, 4) and left.zmid == 0.0 and left.zmax == right.zmax == 4.0
    assert len(fig.layout.shapes) == 1  # the incoming row, outlined
    assert fig.layout.meta["caption"][-1] == "alpha += delta / 2: 0 -> 4.5"


def _twins(make, n, seed, labelled=True):
    rng = np.random.default_rng(seed)
    return make(), make(), rng.standard_normal((n, 6)), rng.choice([-1.0, 1.0], n)


@settings(max_examples=12, deadline=None)
@given(variant=st.sampled_from(["ffd", "fd", "diag", "full"]), seed=st.integers(0, 2 ** 16), n=st.integers(1, 10))
def test_an_opened_adagrad_round_is_its_step(variant, seed, n):
    make = lambda: AdaGrad(6, variant=variant, tau=2, loss="logistic", eta=0.5)  # noqa: E731
    opened, twin, X, y = _twins(make, n, seed)
    for x, label in zip(X, y):
        result = open_adagrad_round(opened, x, label)
        record = twin.step(x, label)
        assert_same_state(snapshot(opened), snapshot(twin))
        assert result.part("loss").value == record.loss and result.part("prediction").value == record.prediction
        assert np.array_equal(result.part("g_t").value, record.gradient_scale * x)
        assert np.array_equal(result.part("beta_{t+1}").value, twin.beta) and np.array_equal(result.after[0], twin.beta)
        assert ("delta" in [p.symbol for p in result.parts]) == (record.shrink is not None)


@settings(max_examples=12, deadline=None)
@given(experts=st.booleans(), alpha=st.sampled_from([0.0, 0.01, 0.5]), seed=st.integers(0, 2 ** 16),
       n=st.integers(1, 8))
def test_an_opened_pca_round_is_its_step_with_fixed_share_and_capping(experts, alpha, seed, n):
    """The parts are the round's events, and they satisfy the paper's equations: the corner
    probabilities sum to 1, w_hat = (1 - alpha) v + alpha / n, the capped weights are at most
    1 / (n - k)."""
    make = ((lambda: AdaptiveBestSubset(6, 2, eta=1.0, alpha=alpha, seed=3)) if experts
            else (lambda: OnlineAdaptivePCA(6, 2, alpha=alpha, seed=3)))
    opened, twin, X, _ = _twins(make, n, seed)
    for x in (np.abs(X) if experts else X):
        result = open_pca_round(opened, x)
        record = twin.step(x)
        assert_same_state(snapshot(opened), snapshot(twin))
        assert result.part("loss").value == record.loss
        probs = result.part("corners").value
        assert math.isclose(probs.sum(), 1.0, rel_tol=1e-12)
        v, w_hat = result.part("v").value, result.part("w_hat").value
        assert np.allclose(w_hat, (1 - alpha) * v + alpha / 6, rtol=1e-12, atol=1e-15)
        assert result.after.max() <= 1 / 4 * (1 + 1e-12)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2 ** 16), n=st.integers(1, 12))
def test_an_opened_sftrl_round_splits_the_gradient_by_its_sign(seed, n):
    make = lambda: SketchedFTRL(6, m=2, loss="logistic")  # noqa: E731
    opened, twin, X, y = _twins(make, n, seed)
    for x, label in zip(X, y):
        plus, minus = opened.sketch.positive.rank, opened.sketch.negative.rank
        result = open_sftrl_round(opened, x, label)
        record = twin.step(x, label)
        assert_same_state(snapshot(opened), snapshot(twin))
        q = record.gradient_scale
        assert result.part("z_t").value == record.prediction and result.part("q_t").value == q
        assert np.array_equal(result.row, math.sqrt(abs(q)) * np.append(x, 1.0))
        entered, other = (opened.sketch.positive, minus) if q > 0 else (opened.sketch.negative, plus)
        assert np.array_equal(result.after, entered.rows)
        assert (opened.sketch.negative.rank if q > 0 else opened.sketch.positive.rank) == other  # the other part is untouched
        if record.shrink is None:
            assert np.array_equal(result.after[-1], result.row)


def test_open_round_picks_by_type_and_names_what_it_opens():
    assert open_round(FrequentDirections(3, 2), [1.0, 0.0, 0.0]).algorithm == "FD"
    assert open_round(RFDSON(3, m=2), [1.0, 0.0, 0.0], 1.0).algorithm == "RFD-SON"
    with pytest.raises(ValueError, match="no opened round for OGD"):
        open_round(OGD(3), [1.0, 0.0, 0.0], 1.0)


def test_an_sftrl_round_on_a_sparse_row_draws_the_dense_row():
    import scipy.sparse
    X = scipy.sparse.csr_array(([1.0, 1.0], [0, 3], [0, 2]), shape=(1, 5))
    for x in (X[0], ([0, 3], [1.0, 1.0]), np.array([1.0, 0, 0, 1.0, 0])):
        opened = open_sftrl_round(SketchedFTRL(5, m=2), x, 4.0)
        q = opened.part("q_t").value
        assert np.array_equal(opened.row, math.sqrt(abs(q)) * np.array([1.0, 0, 0, 1.0, 0, 1.0]))


def test_can_open_says_which_algorithms_open_round_takes():
    from explorer import FullON
    assert can_open(RFDSON(3, m=2)) and can_open(FrequentDirections(3, 2)) and can_open(SketchedFTRL(3))
    assert not can_open(FullON(3, alpha0=1.0)) and not can_open(OGD(3)) and not can_open(object())
