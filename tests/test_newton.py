"""Sketched online Newton (docs/algorithms.md section 3).

Exactness, Woodbury, projection, robustness; step records and hyper-parameters (issue 14).
"""

import io

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer import Recorder, load_state, save_state, streams
from explorer.losses import get_loss
from explorer.newton import SketchedOnlineNewton


def classification_stream(n=400, d=8, seed=0):
    X = streams.decaying_spectrum(n, d, seed=seed)
    y, _ = streams.linear_classification_labels(X, seed=seed)
    return X / np.linalg.norm(X, axis=1).max(), y


def losses(learner, X, y):
    return np.array([learner.learn(x, label) for x, label in zip(X, y)])


def dense_curvature(learner):
    sketch = learner.sketch
    B = sketch.rows if hasattr(sketch, "rank") else sketch.sketch
    return B.T @ B + learner.alpha * np.eye(learner.d)


@pytest.mark.parametrize("kind", ["rfd", "fd"])
@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_sketch_larger_than_d_equals_full_newton(kind, fast, loss):
    """m > d: the sketch keeps every direction (delta = 0), so H is exact: FULL-ON."""
    X, y = classification_stream(d=6)
    sketched = SketchedOnlineNewton(6, sketch=kind, m=8, alpha0=0.5, fast=fast, loss=loss)
    full = SketchedOnlineNewton(6, sketch="full", alpha0=0.5, loss=loss)
    np.testing.assert_allclose(losses(sketched, X, y), losses(full, X, y), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sketched.u, full.u, rtol=1e-6, atol=1e-9)
    assert sketched.sketch.delta_total == 0.0


@given(st.sampled_from(["rfd", "fd", "rp"]), st.integers(2, 6), st.integers(0, 10_000),
       st.sampled_from([0.0, 1e-3, 1.0]), st.booleans())
def test_woodbury_solve_equals_dense_solve(kind, m, seed, alpha0, fast):
    if kind != "rfd" and alpha0 == 0.0:
        alpha0 = 1e-3  # only RFD-SON may start from alpha0 = 0 (pseudo-inverse)
    X, y = classification_stream(n=60, d=7, seed=seed)
    learner = SketchedOnlineNewton(7, sketch=kind, m=m, alpha0=alpha0, fast=fast, seed=seed)
    losses(learner, X, y)
    v = np.random.default_rng(seed).standard_normal(7)
    H = dense_curvature(learner)
    expected = np.linalg.solve(H, v) if learner.alpha > 0 else np.linalg.pinv(H) @ v
    np.testing.assert_allclose(learner.solve(v), expected, rtol=1e-6,
                               atol=1e-8 * np.abs(expected).max())
    np.testing.assert_allclose(learner.condition_number(), np.linalg.cond(H), rtol=1e-6)


@pytest.mark.parametrize("kind", ["rfd", "fd", "rp"])
def test_an_all_zero_example_changes_nothing_but_t(kind):
    """x = 0 gives g = 0, which is not added to the sketch. (It used to overwrite the last
    row of the kept K = B B^T with zeros, so later solves were wrong.)"""
    X, y = classification_stream(n=40, d=7)
    with_zeros = SketchedOnlineNewton(7, sketch=kind, m=3, alpha0=0.1, seed=0)
    without = SketchedOnlineNewton(7, sketch=kind, m=3, alpha0=0.1, seed=0)
    for i, (x, label) in enumerate(zip(X, y)):
        if i % 7 == 3:
            with_zeros.learn(np.zeros(7), label)
        with_zeros.learn(x, label)
        without.learn(x, label)
    np.testing.assert_array_equal(with_zeros.u, without.u)
    v = np.random.default_rng(1).standard_normal(7)
    np.testing.assert_allclose(with_zeros.solve(v), np.linalg.solve(dense_curvature(with_zeros), v),
                               rtol=1e-8)


@pytest.mark.parametrize("kind", ["rfd", "fd", "rp", "full"])
def test_learn_many_is_a_loop_of_learn(kind):
    X, y = classification_stream(n=50, d=6)
    looped = SketchedOnlineNewton(6, sketch=kind, m=3, alpha0=0.1, seed=2, loss="logistic")
    batched = SketchedOnlineNewton(6, sketch=kind, m=3, alpha0=0.1, seed=2, loss="logistic")
    expected, predictions = [], []
    for x, label in zip(X, y):
        expected.append(looped.learn(x, label))
        predictions.append(looped.last_prediction)
    losses, made = batched.learn_many(X, y, return_predictions=True)
    np.testing.assert_array_equal(losses, expected)
    np.testing.assert_array_equal(made, predictions)
    np.testing.assert_array_equal(batched.u, looped.u)
    assert batched.t == looped.t == 50


@pytest.mark.parametrize("X, y, message", [
    (np.ones((3, 5)), np.ones(3), "d = 6 columns"),
    (np.ones((3, 6)), np.ones(2), "y must be 3 finite numbers"),
    (np.ones((3, 6)), [1.0, np.nan, 1.0], "y must be 3 finite numbers"),
    (np.vstack([np.ones(6), np.full(6, np.inf)]), np.ones(2), "row 1 contains NaN or inf"),
])
def test_learn_many_rejects_bad_input_before_learning_anything(X, y, message):
    learner = SketchedOnlineNewton(6, m=3)
    learner.learn(np.arange(6.0), 1.0)
    before = learner.state_dict()
    with pytest.raises(ValueError, match=message):
        learner.learn_many(X, y)
    for key, value in learner.state_dict().items():
        np.testing.assert_array_equal(value, before[key], err_msg=key)


def test_pseudo_inverse_before_the_first_shrink():
    """JMLR convention: alpha0 = 0 and alpha = 0 until a shrink; H^+ on the sketch's span."""
    learner = SketchedOnlineNewton(5, sketch="rfd", m=4, alpha0=0.0)
    learner.learn(np.array([1.0, 2.0, 0, 0, 0]), 1.0)
    learner.learn(np.array([0, 1.0, 0, 1.0, 0]), -1.0)
    assert learner.alpha == 0.0
    H = dense_curvature(learner)
    v = np.arange(5.0)
    np.testing.assert_allclose(learner.solve(v), np.linalg.pinv(H) @ v, atol=1e-10)
    assert np.isinf(learner.condition_number())


@given(st.integers(0, 10_000), st.sampled_from(["rfd", "fd", "rp", "full"]),
       st.floats(0.1, 3.0))
def test_projection_lands_on_the_slab(seed, kind, C):
    X, y = classification_stream(n=50, d=5, seed=seed)
    learner = SketchedOnlineNewton(5, sketch=kind, m=3, alpha0=1e-2, C=C, seed=seed)
    for x, label in zip(X * 5, y):  # large inputs push u^T x off the slab
        w, _, z = learner._project(x)
        assert z == pytest.approx(w @ x, abs=1e-9 * C)
        assert abs(z) <= C
        assert learner.predict(x) == pytest.approx(z, abs=1e-9 * C)
        learner.learn(x, label)


def test_projection_is_the_h_norm_minimizer():
    """Among points of the slab, the projection is closest to u in the H norm."""
    X, y = classification_stream(n=40, d=4, seed=3)
    learner = SketchedOnlineNewton(4, sketch="rfd", m=3, alpha0=0.1)
    losses(learner, X, y)
    x = 10 * X[0]
    w, _, _ = learner._project(x)
    H = dense_curvature(learner)
    rng = np.random.default_rng(0)
    for _ in range(200):
        candidate = w + rng.standard_normal(4) * 0.1
        candidate -= x * max(abs(candidate @ x) - learner.C, 0) * np.sign(candidate @ x) / (x @ x)
        diff_w, diff_c = w - learner.u, candidate - learner.u
        assert diff_w @ H @ diff_w <= diff_c @ H @ diff_c + 1e-9


def accuracy_spread(kind, alphas, X, y):
    accuracies = []
    for alpha0 in alphas:
        learner = SketchedOnlineNewton(X.shape[1], sketch=kind, m=5, alpha0=alpha0)
        mistakes = 0
        for x, label in zip(X, y):
            mistakes += np.sign(learner.predict(x)) != label
            learner.learn(x, label)
        accuracies.append(1 - mistakes / len(y))
    return max(accuracies) - min(accuracies)


def test_rfd_son_is_robust_to_alpha0_and_fd_son_is_not():
    """Luo et al. 2017, Figures 2-4, on a small badly conditioned stream."""
    X, y = classification_stream(n=1500, d=40, seed=0)
    alphas = [1e-6, 1e-4, 1e-2, 1.0, 1e2]
    rfd, fd = accuracy_spread("rfd", alphas, X, y), accuracy_spread("fd", alphas, X, y)
    assert rfd < 0.5 * fd, (rfd, fd)


def test_hooks_report_steps_and_forward_shrinks_with_round_numbers():
    X, y = classification_stream(n=30, d=6)
    learner = SketchedOnlineNewton(6, sketch="rfd", m=3, alpha0=0.1, fast=False)
    recorder = Recorder()
    learner.add_hook(recorder)
    recorded = losses(learner, X, y)
    steps = recorder.columns("step")
    np.testing.assert_array_equal(steps["loss"], recorded)
    assert steps["t"].tolist() == list(range(1, 31))
    shrinks = recorder.columns("shrink")
    assert set(shrinks["t"]) <= set(range(1, 31)) and len(shrinks["t"]) > 0
    assert steps["alpha"][-1] == pytest.approx(learner.alpha)
    assert steps["condition_number"][-1] == pytest.approx(learner.condition_number())


@pytest.mark.parametrize("kind", ["rfd", "fd", "rp", "full"])
def test_bad_input_raises_and_leaves_the_state_unchanged(kind):
    X, y = classification_stream(n=20, d=4)
    learner = SketchedOnlineNewton(4, sketch=kind, m=3, alpha0=0.1, seed=1)
    losses(learner, X, y)
    before = learner.state_dict()
    for x, label in [(np.full(4, np.nan), 1.0), (np.ones(5), 1.0), (np.ones(4), np.inf),
                     (np.ones(4), "yes"), (np.r_[1.0, 2.0, np.inf, 0.0], -1.0)]:
        with pytest.raises(ValueError):
            learner.learn(x, label)
    with pytest.raises(ValueError):
        learner.predict(np.ones(3))
    after = learner.state_dict()
    for key in before:
        np.testing.assert_array_equal(np.asarray(before[key]), np.asarray(after[key]), err_msg=key)


@pytest.mark.parametrize("kwargs, message", [
    (dict(sketch="sketchy"), "sketch must be one of"),
    (dict(m=1), "m must be an integer >= 2"),
    (dict(alpha0=-1.0), "alpha0 must be"),
    (dict(sketch="full", alpha0=0.0), "alpha0 must be > 0 for sketch='full'"),
    (dict(loss="hinge"), "loss must be"),
    (dict(C=0.0), "C must be"),
    (dict(eta=-0.1), "eta must be"),
    (dict(mu=0.0, eta=0.0), "mu \\+ eta must be > 0"),
    (dict(eta_schedule="cosine"), "eta_schedule must be one of"),
])
def test_bad_parameters_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SketchedOnlineNewton(4, **kwargs)


@pytest.mark.parametrize("kind", ["rfd", "fd", "rp", "full"])
@pytest.mark.blas_kernels
def test_save_load_continue_equals_never_stopping(kind):
    X, y = classification_stream(n=80, d=5)
    make = lambda: SketchedOnlineNewton(5, sketch=kind, m=3, alpha0=0.1, seed=4,
                                        eta=0.5, eta_schedule="inverse_t")
    straight, stopped = make(), make()
    losses(straight, X[:40], y[:40])
    losses(stopped, X[:40], y[:40])
    resumed = saved_and_loaded(stopped)
    np.testing.assert_array_equal(losses(straight, X[40:], y[40:]), losses(resumed, X[40:], y[40:]))
    recorder = Recorder()
    resumed.add_hook(recorder)
    losses(resumed, X[:10], y[:10])
    assert len(recorder.events("step")) == 10


def saved_and_loaded(learner):
    file = io.BytesIO()
    save_state(learner, file)
    file.seek(0)
    return load_state(file)


@pytest.mark.blas_kernels
def test_resuming_mid_buffer_carries_the_cholesky_factor_bit_for_bit():
    """FD-SON with a small alpha0 turns last-bit differences into different weights, so a
    state must restore the bordered Cholesky factor itself, not refactor K (which once made
    the dashboard's "back" differ from never going back)."""
    X, y = classification_stream(n=200, d=12)
    straight = SketchedOnlineNewton(12, sketch="fd", m=4, alpha0=1e-3)
    stopped = SketchedOnlineNewton(12, sketch="fd", m=4, alpha0=1e-3)
    losses(straight, X[:22], y[:22])
    losses(stopped, X[:22], y[:22])
    resumed = saved_and_loaded(stopped)
    losses(straight, X[22:], y[22:])
    losses(resumed, X[22:], y[22:])
    np.testing.assert_array_equal(straight.u, resumed.u)


@pytest.mark.blas_kernels
def test_a_state_saved_without_the_factor_still_loads():
    """States saved before the Cholesky factor was kept: it is refactored from K."""
    X, y = classification_stream(n=30, d=6)
    learner = SketchedOnlineNewton(6, sketch="rfd", m=3, alpha0=0.5)
    losses(learner, X, y)
    state = {k: v for k, v in learner.state_dict().items() if "factor" not in k}
    resumed = SketchedOnlineNewton.from_state_dict(state)
    v = np.arange(6.0)
    np.testing.assert_allclose(resumed.solve(v), np.linalg.solve(dense_curvature(learner), v),
                               rtol=1e-10)


@pytest.mark.blas_kernels
def test_same_seed_same_numbers():
    X, y = classification_stream(n=100, d=6)
    run = lambda seed: losses(SketchedOnlineNewton(6, sketch="rp", m=3, alpha0=0.1, seed=seed), X, y)
    np.testing.assert_array_equal(run(5), run(5))
    assert not np.array_equal(run(5), run(6))


@pytest.mark.parametrize("kind", ["rfd", "fd", "rp", "full"])
def test_last_prediction_is_what_predict_gave_before_learning(kind):
    """Progressive evaluation reads it instead of calling predict first (benchmarks)."""
    X, y = classification_stream(n=120, d=8, seed=2)
    learner = SketchedOnlineNewton(8, sketch=kind, m=3, alpha0=0.1, C=0.5, seed=1)
    before, kept = [], []
    for x, label in zip(X, y):
        before.append(learner.predict(x))
        learner.learn(x, label)
        kept.append(learner.last_prediction)
    np.testing.assert_allclose(kept, before, rtol=1e-9, atol=1e-12)
    assert np.mean(np.abs(before) == 0.5) > 0.1  # the slab projection was exercised


# -- step records, hyper-parameters (issue 14) ----------------------------------------------------

@pytest.mark.parametrize("kind", ["rfd", "fd", "rp", "full"])
def test_step_is_learn_with_the_rounds_record(kind):
    """``step`` plays the same round as ``learn`` and says what it computed: the loss, the
    prediction it was suffered on, the loss's derivative there, the shrink, alpha, the rank."""
    X, y = classification_stream(n=60, d=6, seed=1)
    learned = SketchedOnlineNewton(6, sketch=kind, m=3, alpha0=0.1, seed=2, loss="logistic", C=0.5)
    stepped = SketchedOnlineNewton(6, sketch=kind, m=3, alpha0=0.1, seed=2, loss="logistic", C=0.5)
    shrinks = 0
    for t, (x, label) in enumerate(zip(X * 4, y), start=1):
        loss = learned.learn(x, label)
        before = getattr(stepped.sketch, "n_shrinks", 0)
        rec = stepped.step(x, label)
        assert rec.t == t and rec.loss == loss and rec.prediction == learned.last_prediction
        # the prediction is clipped to the slab; the loss was taken at the computed w^T x,
        # which rounding may leave a few ulps outside it
        assert rec.gradient_scale == pytest.approx(
            get_loss("logistic").value_and_derivative(rec.prediction, label)[1], rel=1e-12, abs=1e-15)
        assert abs(rec.prediction) <= 0.5
        assert (rec.shrink is not None) == (getattr(stepped.sketch, "n_shrinks", 0) > before)
        shrinks += rec.shrink is not None
        assert rec.alpha == stepped.alpha and rec.rank == (stepped.sketch.rank if kind in ("rfd", "fd")
                                                         else 3 if kind == "rp" else 6)
        assert rec.condition_number == stepped.condition_number()  # with or without hooks
    assert (shrinks > 0) == (kind in ("rfd", "fd"))
    np.testing.assert_array_equal(stepped.u, learned.u)


def test_shrink_events_carry_the_round_they_happened_in():
    """The forwarded shrink events said t = round - 1 (the rounds done before it)."""
    X, y = classification_stream(n=40, d=6)
    learner = SketchedOnlineNewton(6, sketch="rfd", m=3, alpha0=0.1)
    recorder = Recorder(kinds=("shrink",))
    learner.add_hook(recorder)
    rounds = [rec.t for rec in (learner.step(x, label) for x, label in zip(X, y)) if rec.shrink is not None]
    assert len(rounds) > 3 and recorder.columns("shrink")["t"].tolist() == rounds


@pytest.mark.parametrize("schedule", ["constant", "inverse_t"])
def test_records_rebuild_the_exact_curvature_through_a_change_of_eta(schedule):
    """FULL-ON's ``H = alpha0 I + sum_t (mu + eta_t) q_t^2 x_t x_t^T`` from the step records
    alone (q_t = gradient_scale, mu + eta_t = curvature_weight), with eta changed by
    ``with_params`` half way: what the dashboard's exact spectrum is built from."""
    X, y = classification_stream(n=40, d=5, seed=3)
    learner = SketchedOnlineNewton(5, sketch="full", alpha0=0.5, eta=0.2, eta_schedule=schedule)
    H = 0.5 * np.eye(5)
    for i, (x, label) in enumerate(zip(X, y)):
        if i == 20:
            learner = learner.with_params(eta=2.0)
        rec = learner.step(x, label)
        assert rec.curvature_weight == learner.curvature_weight(rec.t)
        H += rec.curvature_weight * rec.gradient_scale ** 2 * np.outer(x, x)
    np.testing.assert_allclose(np.linalg.inv(learner.state_dict()["curvature.inverse"]), H, rtol=1e-9)


def test_get_params_are_the_constructors_arguments():
    learner = SketchedOnlineNewton(4, sketch="rp", m=3, alpha0=0.1, C=1.0, loss="logistic", seed=7)
    params = learner.get_params()
    assert params["sketch"] == "rp" and params["loss"] == "logistic" and params["seed"] == 7
    assert params["mu"] == learner.mu == np.exp(-1.0)  # the default for the logistic loss, C = 1
    assert learner.loss == "logistic" and learner.sketch is not None  # the sketch object stays
    twin = SketchedOnlineNewton(**params)
    assert twin.state_dict().keys() == learner.state_dict().keys()


@pytest.mark.parametrize("change", [dict(eta=0.7), dict(eta_schedule="inverse_t")])
def test_with_params_eta_continues_the_stream_unchanged_so_far(change):
    """eta and its schedule weigh only the rows to come: the state carries over bit for bit,
    and the new learner plays on like one that had the new value in its state."""
    X, y = classification_stream(n=60, d=6)
    learner = SketchedOnlineNewton(6, sketch="fd", m=3, alpha0=1e-3, eta=0.1)
    losses(learner, X[:30], y[:30])
    moved = learner.with_params(**change)
    assert moved.t == 30 and learner.get_params()["eta"] == 0.1
    state = learner.state_dict()
    for key, value in moved.state_dict().items():
        if key not in change:
            np.testing.assert_array_equal(value, state[key], err_msg=key)
    by_hand = SketchedOnlineNewton.from_state_dict({**state, **change})
    np.testing.assert_array_equal(losses(moved, X[30:], y[30:]), losses(by_hand, X[30:], y[30:]))


def test_with_params_refuses_what_cannot_change_mid_stream():
    learner = SketchedOnlineNewton(4, sketch="full", alpha0=1.0)
    with pytest.raises(ValueError, match="alpha0 must be > 0 for sketch='full'"):
        learner.with_params(alpha0=0.0)
    for name, value in (("m", 5), ("sketch", "fd"), ("loss", "logistic"), ("seed", 3)):
        with pytest.raises(ValueError, match=f"cannot change {name} mid-stream"):
            learner.with_params(**{name: value})
    with pytest.raises(AttributeError):
        learner.with_alpha0  # noqa: B018 (the old way is gone)
    for name in learner.HOT:  # assigning would leave the curvature behind (alpha0) or skip the checks
        with pytest.raises(AttributeError):
            setattr(learner, name, 0.5)
