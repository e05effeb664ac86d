"""Oja's sketch and Oja-SON (Luo et al. 2016, Algorithm 4; docs/algorithms.md section 3.7).

The sketch's invariants at every step (orthonormal V, eigenvalue estimates >= 0 and bounded
by ``learning_rate ||A||_F^2``, ``B B^T`` diagonal), the convergence of V's span to the range
of an exactly low-rank covariance (the angle measured), and Oja-SON as a
:class:`~explorer.newton.SketchedOnlineNewton` kind: validation, refusals with the state
bit-identical, resume, determinism, and the Woodbury solve against a dense one.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer import streams
from explorer.errors import Diverged
from explorer.newton import SketchedOnlineNewton
from explorer.oja import OjaSketch
from state_checks import assert_same_state, snapshot, through_a_file


def low_rank_stream(n, d, k, seed):
    """n rows in the range of an orthonormal U (k x d), variances 1 .. 0.5 along U's rows."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((d, k)))[0].T
    X = (rng.standard_normal((n, k)) * np.sqrt(np.linspace(1.0, 0.5, k))) @ U
    return X, U


def largest_angle_sine(U, sk):
    """Sine of the largest principal angle between range(U^T) (k x d) and the span of the k
    rows of V with the largest eigenvalue estimates."""
    V = sk.components[np.argsort(sk.eigenvalues)[::-1][:U.shape[0]]]
    return float(np.linalg.norm(U - U @ V.T @ V, 2))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 10), st.integers(0, 9), st.integers(0, 10_000), st.integers(1, 40),
       st.sampled_from([1e-6, 1.0, 1e6]), st.sampled_from([1.0, 2.0, 10.0]))
def test_invariants_hold_after_every_row(m, extra, seed, n, scale, learning_rate):
    d = m + extra
    X = np.random.default_rng(seed).standard_normal((n, d)) * scale
    sk = OjaSketch(d, m, learning_rate=learning_rate, seed=seed)
    for x in X:
        record = sk.insert(x)
        V, e = sk.components, sk.eigenvalues
        np.testing.assert_allclose(V @ V.T, np.eye(m), atol=1e-12)
        assert np.isfinite(e).all() and (e >= 0).all()
        assert e.sum() <= learning_rate * sk.frobenius_squared * (1 + 1e-12)
        B = sk.rows
        np.testing.assert_allclose(B @ B.T, np.diag(e), atol=1e-12 * e.max(initial=0.0))
        assert record.kept == m and record.delta == 0.0
        assert np.array_equal(record.squared, np.sort(e)[::-1])
    assert sk.n_seen == n and sk.rank == m and sk.capacity == m + 1


@pytest.mark.parametrize("d, m, k", [(10, 3, 2), (20, 5, 3), (40, 6, 4), (8, 8, 3)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_span_converges_to_the_range_of_a_low_rank_covariance(d, m, k, seed):
    """k <= m: after 3000 rows the span of V's top k rows (by e) is range(U) within a
    sine of 0.05 (measured 0.004-0.04), closer than after 30 rows; the k largest estimates
    e / n are the variances within 20% (measured within 9%), and the rest below 0.01
    (measured at most 0.005)."""
    X, U = low_rank_stream(3000, d, k, seed)
    sk = OjaSketch(d, m, seed=seed)
    early = OjaSketch(d, m, seed=seed)
    sk.extend(X)
    early.extend(X[:30])
    assert largest_angle_sine(U, sk) < 0.05
    assert largest_angle_sine(U, sk) < largest_angle_sine(U, early)
    estimates = np.sort(sk.eigenvalues)[::-1] / len(X)
    np.testing.assert_allclose(estimates[:k], np.linspace(1.0, 0.5, k), rtol=0.2)
    assert (estimates[k:] < 0.01).all()


def test_settings_are_checked():
    with pytest.raises(ValueError, match="m must be <= d"):
        OjaSketch(3, 4)
    with pytest.raises(ValueError, match="learning_rate"):
        OjaSketch(3, 2, learning_rate=0.5)
    with pytest.raises(ValueError, match="seed"):
        OjaSketch(3, 2, seed=-1)
    with pytest.raises(ValueError, match="m must be <= d"):
        SketchedOnlineNewton(3, sketch="oja", m=4)


def test_a_refused_row_or_batch_leaves_the_sketch_as_it_was():
    sk = OjaSketch(4, 2, seed=0)
    sk.extend(np.eye(4))
    before = snapshot(sk)
    for bad in ([np.nan, 0, 0, 0], [1e200, 0, 0, 0], [1.0, 2.0]):
        with pytest.raises(ValueError):
            sk.update(bad)
    with pytest.raises(ValueError, match="row 1"):
        sk.extend([[1.0, 0, 0, 0], [1e200, 0, 0, 0]])
    assert_same_state(snapshot(sk), before)


@pytest.mark.parametrize("key, value, message", [
    ("components", lambda V: 2 * V, "orthonormal"),
    ("eigenvalues", lambda e: -e, "eigenvalues"),
    ("eigenvalues", lambda e: e * 1e6, "eigenvalues"),
])
def test_a_tampered_state_is_refused(key, value, message):
    sk = OjaSketch(5, 2, seed=0)
    sk.extend(np.random.default_rng(0).standard_normal((10, 5)))
    before = snapshot(sk)
    state = sk.state_dict()
    state[key] = value(state[key])
    with pytest.raises(ValueError, match=message):
        sk.load_state_dict(state)
    with pytest.raises(ValueError, match=message):
        OjaSketch.from_state_dict(state)
    assert_same_state(snapshot(sk), before)


# -- Oja-SON ------------------------------------------------------------------------------

def stream(n=120, d=8, seed=0):
    X = streams.decaying_spectrum(n, d, seed=seed)
    y, _ = streams.linear_classification_labels(X, seed=seed)
    return X / np.linalg.norm(X, axis=1).max(), y


def oja_son(seed=3, **changes):
    return SketchedOnlineNewton(8, **{**dict(sketch="oja", m=3, alpha0=0.1, eta=0.5, C=1.0,
                                             loss="logistic", seed=seed), **changes})


def test_oja_son_is_deterministic_by_seed():
    X, y = stream()
    a, b, c = oja_son(), oja_son(), oja_son(seed=4)
    assert np.array_equal(a.learn_many(X, y), b.learn_many(X, y))
    c.learn_many(X, y)
    assert not np.array_equal(a.u, c.u)  # another V_0
    assert_same_state(snapshot(a), snapshot(b))


@pytest.mark.parametrize("alpha0", [0.0, 0.1])
def test_oja_son_resumes_bit_identically(alpha0):
    X, y = stream()
    never, stopped = oja_son(alpha0=alpha0), oja_son(alpha0=alpha0)
    never.learn_many(X[:60], y[:60])
    stopped.learn_many(X[:60], y[:60])
    resumed = through_a_file(stopped)
    assert np.array_equal(never.learn_many(X[60:], y[60:]), resumed.learn_many(X[60:], y[60:]))
    assert_same_state(snapshot(resumed), snapshot(never))


def test_oja_son_refuses_bad_input_with_the_state_bit_identical():
    X, y = stream()
    learner = oja_son()
    learner.learn_many(X[:30], y[:30])
    before = snapshot(learner)
    with pytest.raises(ValueError):
        learner.learn(np.full(8, np.nan), 1.0)
    with pytest.raises(ValueError):
        learner.learn(X[0], 0.5)  # logistic labels are -1 or +1
    with pytest.raises(ValueError, match="X row 2"):
        learner.learn_many(np.vstack([X[:2], np.full((1, 8), np.inf)]), y[:3])
    tampered = learner.state_dict()
    tampered["curvature.sketch.eigenvalues"] = -tampered["curvature.sketch.eigenvalues"]
    with pytest.raises(ValueError, match="eigenvalues"):
        learner.load_state_dict(tampered)
    assert_same_state(snapshot(learner), before)


def test_oja_son_divergence_is_refused_whole():
    learner = SketchedOnlineNewton(6, sketch="oja", m=3, alpha0=1e-100, eta=1e100, C=1.0, loss="squared",
                                   seed=0)
    rng = np.random.default_rng(0)
    with pytest.raises(Diverged) as raised:
        for _ in range(50):
            before = snapshot(learner)
            learner.learn(rng.standard_normal(6) * 1e100, 1.0)
    assert_same_state(snapshot(learner), before)
    assert raised.value.t == learner.t + 1


@given(st.integers(0, 10_000), st.sampled_from([0.0, 1e-3, 1.0]), st.integers(2, 6))
@settings(max_examples=25, deadline=None)
def test_oja_son_woodbury_solve_equals_dense_solve(seed, alpha0, m):
    """``H = alpha0 I + B^T B`` with ``B = diag(sqrt(e)) V``: the O(md) solve is the dense one
    (the pseudo-inverse with alpha0 = 0)."""
    X, y = stream(n=60, d=8, seed=seed)
    learner = oja_son(seed=seed, alpha0=alpha0, m=m)
    learner.learn_many(X, y)
    B = learner.sketch.rows
    H = B.T @ B + alpha0 * np.eye(8)
    v = np.random.default_rng(seed).standard_normal(8)
    expected = np.linalg.solve(H, v) if alpha0 > 0 else np.linalg.pinv(H) @ v
    np.testing.assert_allclose(learner.solve(v), expected, rtol=1e-6, atol=1e-8 * np.abs(expected).max())


def test_oja_son_with_params_and_records():
    X, y = stream()
    learner = oja_son()
    learner.learn_many(X[:40], y[:40])
    moved = learner.with_params(alpha0=0.2)
    assert moved.alpha == 0.2 and moved.t == learner.t
    assert np.array_equal(moved.sketch.components, learner.sketch.components)
    record = learner.step(X[40], y[40])
    assert record.rank == 3 and record.shrink is not None and record.shrink.kept == 3
    assert learner.get_params()["sketch"] == "oja"
