"""OCG on the compact convex FM (explorer/fm/ocg.py; docs/algorithms.md, "OCG").

The method's guarantees, asserted on random streams: the iterate never leaves the
nuclear-norm ball; the power steps find numpy's top eigenpair; with enough power steps and
no rank cap every round is the exact OCG step computed with a dense eigen-decomposition; it
learns a planted low-rank task. Plus bad input, determinism, save/load and the hot eta.
"""

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.errors import Diverged
from explorer.fm import OCGFM, augment, progressive
from explorer.fm.ocg import leading_eigenpair
from state_checks import assert_same_state, snapshot, through_a_file


def _stream(seed, n, d, loss, sparse):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        if sparse:
            idx = rng.choice(d, size=int(rng.integers(0, min(d, 3) + 1)), replace=False)
            rows.append((idx, rng.choice([1.0, -0.5, 2.0], size=idx.size)))
        else:
            rows.append(rng.standard_normal(d))
    labels = rng.normal(1.0, 2.0, n) if loss == "squared" else rng.choice([-1.0, 1.0], n)
    return rows, labels


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 9), n=st.integers(1, 40),
       loss=st.sampled_from(["squared", "logistic"]), sparse=st.booleans(),
       tau=st.floats(1e-3, 1e3), eta=st.floats(1e-3, 10.0), rank=st.integers(1, 12),
       iterations=st.integers(1, 4))
def test_the_iterate_never_leaves_the_nuclear_norm_ball(seed, d, n, loss, sparse, tau, eta, rank,
                                                        iterations):
    fm = OCGFM(d, eta=eta, tau=tau, rank=rank, iterations=iterations, loss=loss, seed=seed % 1000)
    rows, labels = _stream(seed, n, d, loss, sparse)
    for x, y in zip(rows, labels):
        fm.learn(x, y)
        eigenvalues = np.linalg.eigvalsh(fm.theta())
        assert np.abs(eigenvalues).sum() <= tau * (1 + 1e-9) + 1e-12
        assert fm.nuclear_norm() <= tau * (1 + 1e-12)
        state = fm.state_dict()
        W = state["basis"]
        assert W.shape[0] <= min(rank, d + 1)
        np.testing.assert_allclose(W @ W.T, np.eye(W.shape[0]), atol=1e-10)


@pytest.mark.parametrize("seed", range(8))
def test_power_steps_find_numpys_top_eigenpair(seed):
    """A random symmetric matrix whose largest |eigenvalue| is 1.5x the next (either sign):
    the power steps give numpy's eigenvalue and eigenvector (up to sign)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    spectrum = rng.uniform(-1, 1, n)
    spectrum[0] = rng.choice([-1.5, 1.5])
    G = (Q * spectrum) @ Q.T
    value, u = leading_eigenpair(lambda v: G @ v, rng.standard_normal(n), 200)
    eigenvalues, vectors = np.linalg.eigh(G)
    top = np.argmax(np.abs(eigenvalues))
    assert value == pytest.approx(eigenvalues[top], abs=1e-10)
    assert abs(u @ vectors[:, top]) == pytest.approx(1.0, abs=1e-10)
    assert np.linalg.norm(u) == pytest.approx(1.0, abs=1e-12)


def test_a_zero_operator_leaves_the_start_vector():
    value, u = leading_eigenpair(lambda v: 0 * v, np.array([3.0, 4.0]), 5)
    assert value == 0.0 and u.tolist() == [0.6, 0.8]


def _exact_ocg(rows, labels, d, eta, tau, loss):
    """OCG (Hazan & Kale 2012) on the compact FM, dense: G = eta S + 2 Theta, numpy's eigh,
    Theta <- (1 - sigma) Theta - sigma tau sign(lambda) u u^T, sigma = min(1, 2 / sqrt(t)).
    Also returns the largest ratio |lambda_2| / |lambda_1| met (the power method's rate)."""
    theta, S, out, ratio = np.zeros((d + 1, d + 1)), np.zeros((d + 1, d + 1)), [], 0.0
    for t, (x, y) in enumerate(zip(rows, labels), start=1):
        a = augment(x if not isinstance(x, tuple) else _dense(x, d))
        z = a @ theta @ a
        out.append(z)
        q = z - y if loss == "squared" else -y / (1 + np.exp(y * z))
        S += q * np.outer(a, a)
        values, vectors = np.linalg.eigh(eta * S + 2 * theta)
        top = np.argmax(np.abs(values))
        magnitudes = np.sort(np.abs(values))
        ratio = max(ratio, magnitudes[-2] / magnitudes[-1])
        u = vectors[:, top]
        sigma = min(1.0, 2 / np.sqrt(t))
        theta = (1 - sigma) * theta - sigma * tau * np.sign(values[top]) * np.outer(u, u)
    return np.array(out), theta, ratio


def _dense(x, d):
    v = np.zeros(d)
    v[x[0]] = x[1]
    return v


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_with_many_power_steps_and_no_rank_cap_it_is_exact_ocg(seed, loss):
    """Enough power steps for the smallest eigen-gap met (ratio^k < e^-40), rank = d + 1."""
    d, n = 5, 30
    rows, labels = _stream(seed, n, d, loss, sparse=seed % 2 == 1)
    expected, theta, ratio = _exact_ocg(rows, labels, d, 0.3, 4.0, loss)
    assert ratio < 0.998  # else the stream is too close to a tie to compare (none of these)
    fm = OCGFM(d, eta=0.3, tau=4.0, iterations=int(40 / -np.log(ratio)) + 10, rank=d + 1, loss=loss,
               seed=seed)
    predictions = [fm.step(x, y).prediction for x, y in zip(rows, labels)]
    np.testing.assert_allclose(predictions, expected, atol=1e-6)
    np.testing.assert_allclose(fm.theta(), theta, atol=1e-6)


def test_it_learns_a_planted_low_rank_task():
    """Labels a_hat^T Theta* a_hat with Theta* of rank 2 inside the ball: the mean loss of the
    second half of the stream is under a fifth of predicting 0's."""
    rng = np.random.default_rng(0)
    d, n = 12, 1500
    U = rng.standard_normal((d + 1, 2))
    U /= np.linalg.norm(U, axis=0)
    planted = (U * [2.0, 1.0]) @ U.T
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    A = np.hstack([X, np.ones((n, 1))])
    y = np.einsum("ij,jk,ik->i", A, planted, A)
    run = progressive(OCGFM(d, eta=0.1, tau=4.0, seed=0), X, y)
    half = n // 2
    assert run["loss"][half:].mean() < 0.2 * (y[half:] ** 2 / 2).mean()


def test_step_record_has_sigma_and_rank():
    fm = OCGFM(3, tau=2.0, rank=2, seed=1)
    rng = np.random.default_rng(0)
    for t in range(1, 9):
        record = fm.step(rng.standard_normal(3), 1.0)
        assert record.t == t and record.alpha == min(1.0, 2 / np.sqrt(t))
        assert record.rank == fm.state_dict()["eigenvalues"].size <= 2
        assert record.loss == pytest.approx((record.prediction - 1.0) ** 2 / 2)


def test_defaults_and_bad_parameters():
    fm = OCGFM(4)
    assert (fm.eta, fm.tau, fm.iterations, fm.rank, fm.seed) == (0.05, 10.0, 2, 20, None)
    assert (OCGFM(4, loss="logistic").eta, OCGFM(4, loss="logistic").tau) == (0.25, 20.0)
    for kwargs, name in [({"tau": 0.0}, "tau"), ({"tau": np.inf}, "tau"), ({"eta": -1.0}, "eta"),
                         ({"eta": 1e200}, "eta"), ({"iterations": 0}, "iterations"),
                         ({"rank": 0}, "rank"), ({"rank": 2.5}, "rank"), ({"seed": -1}, "seed"),
                         ({"loss": "hinge"}, "loss")]:
        with pytest.raises(ValueError, match=name):
            OCGFM(4, **kwargs)


@pytest.mark.parametrize("x, y", [(np.full(4, np.nan), 1.0), (np.ones(3), 1.0), (np.ones(4), np.inf),
                                  (([7], [1.0]), 1.0), ("row", 1.0)])
def test_bad_input_is_refused_with_the_state_unchanged(x, y):
    fm = OCGFM(4, seed=0)
    for row in np.random.default_rng(1).standard_normal((5, 4)):
        fm.learn(row, 2.0)
    before = snapshot(fm)
    with pytest.raises(ValueError):
        fm.learn(x, y)
    with pytest.raises(ValueError):
        progressive(fm, np.vstack([np.ones(4), np.ones(4) * np.inf]), [1.0, 1.0])
    assert_same_state(snapshot(fm), before)


def test_logistic_labels_must_be_plus_minus_one():
    fm = OCGFM(3, loss="logistic", seed=0)
    before = snapshot(fm)
    with pytest.raises(ValueError):
        fm.learn(np.ones(3), 0.5)
    assert_same_state(snapshot(fm), before)


def _ratings(n, d, seed):
    rng = np.random.default_rng(seed)
    users, items = rng.integers(0, d // 2, n), rng.integers(d // 2, d, n)
    X = scipy.sparse.csr_array((np.ones(2 * n), np.column_stack([users, items]).ravel(),
                                np.arange(0, 2 * n + 1, 2)), shape=(n, d))
    return X, rng.integers(1, 6, n).astype(float)


def test_same_seed_same_numbers_and_progressive_equals_the_learn_loop():
    X, y = _ratings(60, 10, 0)
    a, b, c = OCGFM(10, seed=4), OCGFM(10, seed=4), OCGFM(10, seed=4)
    run = progressive(a, X, y)
    progressive(b, X, y)
    losses = [c.learn((X.indices[lo:hi], X.data[lo:hi]), t)
              for lo, hi, t in zip(X.indptr[:-1], X.indptr[1:], y)]
    assert_same_state(snapshot(a), snapshot(b))
    assert_same_state(snapshot(a), snapshot(c))
    assert run["loss"].tolist() == losses
    dense = OCGFM(10, seed=4)
    progressive(dense, X.toarray(), y)
    np.testing.assert_allclose(dense.theta(), a.theta(), atol=1e-12)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_save_load_continue_is_bit_identical(loss):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 6))
    y = rng.choice([-1.0, 1.0], 40)
    never = OCGFM(6, rank=3, loss=loss, seed=2)
    stopped = OCGFM(6, rank=3, loss=loss, seed=2)
    progressive(never, X, y)
    progressive(stopped, X[:25], y[:25])
    resumed = through_a_file(stopped)
    progressive(resumed, X[25:], y[25:])
    assert_same_state(snapshot(resumed), snapshot(never))


def test_load_refuses_a_state_that_leaves_the_ball_or_is_not_orthonormal():
    fm = OCGFM(4, tau=2.0, seed=0)
    for row in np.random.default_rng(1).standard_normal((5, 4)):
        fm.learn(row, 2.0)
    good = fm.state_dict()
    before = snapshot(fm)
    bad_values = {**good, "eigenvalues": good["eigenvalues"] * 3}
    bad_basis = {**good, "basis": good["basis"] * 1.1}
    fresh_with_sum = {**OCGFM(4, tau=2.0, seed=0).state_dict(), "gradient_sum": np.ones((5, 5))}
    bad_direction = {**good, "direction": np.zeros(5)}
    for state, key in [(bad_values, "eigenvalues"), (bad_basis, "basis"), (fresh_with_sum, "gradient_sum"),
                       (bad_direction, "direction")]:
        with pytest.raises(ValueError, match=key):
            fm.load_state_dict(state)
        with pytest.raises(ValueError, match=key):
            OCGFM.from_state_dict(state)
    with pytest.raises(ValueError, match="tau"):  # an in-place load keeps the settings
        fm.load_state_dict({**good, "tau": 3.0})
    assert_same_state(snapshot(fm), before)


def test_with_params_eta_reweighs_the_stored_gradient_sum():
    X, y = _ratings(50, 8, 1)
    fm = OCGFM(8, eta=0.02, seed=0)
    progressive(fm, X[:30], y[:30])
    changed = fm.with_params(eta=0.5)
    assert changed.eta == 0.5 and changed.t == fm.t
    np.testing.assert_array_equal(changed.gradient_sum(), fm.gradient_sum())
    np.testing.assert_array_equal(changed.theta(), fm.theta())
    twin = OCGFM(8, eta=0.5, seed=0)
    twin.load_state_dict({**fm.state_dict(), "eta": 0.5})
    progressive(changed, X[30:], y[30:])
    progressive(twin, X[30:], y[30:])
    assert_same_state(snapshot(changed), snapshot(twin))
    with pytest.raises(ValueError, match="tau"):
        fm.with_params(tau=1.0)


# -- sizes are bounded: no round may run for hours, from the constructor or a state file --
_SIZES = st.one_of(st.integers(1, 10 ** 30), st.sampled_from([10 ** 9, 2 ** 63, 10 ** 5 + 1, 10 ** 4 + 1]))


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(["iterations", "rank", "d", "seed"]), value=_SIZES)
def test_every_size_is_bounded_in_the_constructor_and_the_state_file(key, value):
    """``iterations`` (alone and times ``(d + 1)^2``), ``rank``, ``d`` and ``seed`` past their
    bounds: a ``ValueError`` naming the key, from ``OCGFM(...)`` and from a state file, the
    learner loaded into unchanged."""
    from explorer.fm.ocg import OCG_MAX_ITERATIONS, OCG_MAX_POWER_WORK, OCG_MAX_SIDE
    d = 4
    kwargs = {"d": d, "iterations": 2, "rank": 3, "seed": 0, key: value}
    n = kwargs["d"] + 1
    allowed = {"iterations": value <= OCG_MAX_ITERATIONS and value * 25 <= OCG_MAX_POWER_WORK,
               "rank": value <= OCG_MAX_SIDE, "d": n <= OCG_MAX_SIDE and 2 * n * n <= OCG_MAX_POWER_WORK,
               "seed": value < 2 ** 63}[key]
    if not allowed:
        with pytest.raises(ValueError, match=key):
            OCGFM(**kwargs)
    fm = OCGFM(d, iterations=2, rank=3, seed=0)
    fm.learn(np.ones(d), 1.0)
    before = snapshot(fm)
    state = {**fm.state_dict(), key: value}
    if key == "d" or not allowed:
        with pytest.raises(ValueError, match=key):
            OCGFM.from_state_dict(state)
        with pytest.raises(ValueError, match=key):
            fm.load_state_dict(state)
    assert_same_state(snapshot(fm), before)


def test_the_power_steps_are_bounded_by_their_work():
    """At MovieLens-100K's d = 2625 at most 1e9 / 2626^2 = 145 power steps a round; the
    message says the largest allowed. The 1e9 hang of a state file is refused too."""
    assert OCGFM(2625, iterations=145).iterations == 145
    with pytest.raises(ValueError, match="iterations <= 145 at d = 2625"):
        OCGFM(2625, iterations=146)
    with pytest.raises(ValueError, match="iterations.*at most 100000"):
        OCGFM(1, iterations=10 ** 9)
    state = {**OCGFM(3, seed=0).state_dict(), "iterations": 10 ** 9}
    with pytest.raises(ValueError, match="'iterations' must be an integer in"):
        OCGFM.from_state_dict(state)
