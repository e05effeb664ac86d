"""The guarantees of docs/algorithms.md section 5 (Yuan & Lamperski), asserted on random inputs."""

import io

import numpy as np
import pytest
import scipy.linalg
import scipy.optimize
from hypothesis import given
from hypothesis import strategies as st

import explorer.pca.online
import explorer.pca.simplex
from explorer import Recorder
from explorer.errors import Diverged
from explorer.hooks import StepRecord
from explorer.pca import (
    AdaptiveRegret,
    AdaptiveBestSubset,
    FollowTheLeaderPCA,
    OnlineAdaptivePCA,
    VarianceMinSimplex,
    VarianceMinSphere,
    adaptive_regret,
    best_fixed_portfolio,
    best_fixed_projection,
    best_fixed_unit_vector,
    cap,
    compression_losses,
    fixed_share,
    interval_regret,
    mixture_decomposition,
    pca_theory_settings,
    simplex_theory_settings,
    sphere_theory_settings,
)
from explorer.streams import changing_subspace
from state_checks import assert_same_state, through_a_file

TOL = 1e-10


# -- random inputs ----------------------------------------------------------------------------

@st.composite
def weights(draw, max_n=12):
    """A non-negative vector with a random spread (some entries possibly 0 or tied), and d."""
    n = draw(st.integers(1, max_n))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    w = np.exp(rng.uniform(-draw(st.sampled_from([0.0, 1.0, 5.0, 30.0])), 0, size=n))
    if draw(st.booleans()):
        w[rng.random(n) < 0.3] = 0.0
    if draw(st.booleans()):  # ties
        w = np.round(w, 1)
    if not (w > 0).any():
        w[0] = 1.0
    d = draw(st.integers(1, int(np.count_nonzero(w > 0))))
    return w, d


@st.composite
def capped_points(draw, max_n=12):
    """A point of the capped simplex B_d^n (often with many entries exactly at 1/d)."""
    w, d = draw(weights(max_n))
    return cap(w, d), d


@st.composite
def pca_streams(draw, max_n=7, max_T=30):
    """Rows with norm <= 1 (sometimes in a low-dimensional subspace, sometimes switching)."""
    n = draw(st.integers(2, max_n))
    k = draw(st.integers(1, n - 1))
    T = draw(st.integers(1, max_T))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.standard_normal((T, n))
    if draw(st.booleans()):
        half = T // 2
        X[:half] = X[:half, :1] * rng.standard_normal(n)
        X[half:] = X[half:, :1] * rng.standard_normal(n)
    X *= rng.uniform(0, 1, size=(T, 1)) / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    eta = draw(st.sampled_from([0.1, 1.0, 3.0]))
    alpha = draw(st.sampled_from([0.0, 1e-5, 0.01, 0.3]))
    return X, k, eta, alpha


def kl(q, w):
    mask = q > 0
    return float(np.sum(q[mask] * np.log(q[mask] / w[mask])))


# -- capping -----------------------------------------------------------------------------------

@given(weights())
def test_cap_lands_in_the_capped_simplex_and_meets_the_kkt_conditions(case):
    w, d = case
    q = cap(w, d)
    assert q.sum() == pytest.approx(1.0, abs=1e-12)
    assert q.min() >= 0 and q.max() <= 1 / d + 1e-15
    assert np.all(q[w == 0] == 0)  # the projection lives on the support of w
    # KKT of min KL(q || w) on {sum q = 1, q <= 1/d}: q = min(1/d, c w) for one c > 0.
    support = w > 0
    free = support & (q < 1 / d * (1 - 1e-9))
    if free.any():
        ratios = q[free] / w[free]
        c = ratios.mean()
        np.testing.assert_allclose(ratios, c, rtol=1e-9)
        capped = support & ~free
        assert np.all(c * w[capped] >= 1 / d * (1 - 1e-9))
    # Scale does not matter; projecting twice changes nothing.
    np.testing.assert_allclose(cap(7.5 * w, d), q, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(cap(q, d), q, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seed", range(8))
def test_cap_agrees_with_a_generic_optimizer(seed):
    rng = np.random.default_rng(seed)
    n = rng.integers(3, 8)
    d = int(rng.integers(2, n))
    w = rng.dirichlet(np.full(n, 0.3)) + 1e-3
    w /= w.sum()
    q = cap(w, d)
    result = scipy.optimize.minimize(
        lambda u: kl(np.maximum(u, 1e-300), w), np.full(n, 1 / n), method="SLSQP",
        bounds=[(1e-12, 1 / d)] * n,
        constraints=[{"type": "eq", "fun": lambda u: u.sum() - 1}],
        options={"ftol": 1e-14, "maxiter": 1000})
    assert result.success
    assert kl(q, w) <= kl(result.x, w) + 1e-9  # nothing feasible does better
    np.testing.assert_allclose(q, result.x, atol=2e-5)


def test_cap_examples():
    np.testing.assert_allclose(cap([0.7, 0.2, 0.1], 2), [0.5, 1 / 3, 1 / 6])
    np.testing.assert_array_equal(cap([0.25] * 4, 4), [0.25] * 4)
    np.testing.assert_allclose(cap([5.0, 1.0, 1.0], 3), [1 / 3] * 3)  # d = n: uniform
    assert cap([1.0, 0.0], 1).tolist() == [1.0, 0.0]


@pytest.mark.parametrize("w, d, message", [
    ([0.5, 0.5, 0.0], 3, "at least d = 3 positive"),
    ([0.5, -0.1, 0.6], 1, "non-negative"),
    ([0.5, np.nan], 1, "NaN"),
    ([[0.5, 0.5]], 1, "1-D"),
    ([], 1, "1-D"),
    ("abc", 1, "1-D array"),
    (0.5, 1, "1-D array"),
    ([0.5, 0.5], 0, "d must be an integer >= 1"),
    ([0.5, 0.5], 1.5, "d must be an integer"),
])
def test_cap_rejects_bad_input(w, d, message):
    with pytest.raises(ValueError, match=message):
        cap(w, d)


# -- mixture decomposition -----------------------------------------------------------------

@given(capped_points())
def test_decomposition_has_at_most_n_corners_that_reconstruct_w(case):
    w, d = case
    n = w.size
    probs, corners = mixture_decomposition(w, d)
    assert 1 <= probs.size <= n
    assert probs.min() > 0 and probs.sum() == pytest.approx(1.0, abs=1e-12)
    assert corners.shape == (probs.size, n)
    assert np.all((corners == 0) | (corners == 1 / d))
    assert np.all(np.count_nonzero(corners, axis=1) == d)
    np.testing.assert_allclose(probs @ corners, w, atol=1e-12)
    # Sampling a corner includes item i with probability d * w_i.
    np.testing.assert_allclose(probs @ (corners > 0), d * w, atol=1e-11)


@pytest.mark.parametrize("w, d", [
    (np.full(7, 1 / 7), 3),                      # all tied
    (np.r_[np.full(4, 1 / 5), 0.2 / 3 * np.ones(3)], 5),  # four at the cap
    (np.r_[0.5, 0.5, np.zeros(5)], 2),          # a corner itself
    (np.array([1.0]), 1),
    (np.full(5, 0.2), 5),                        # d = n
])
def test_decomposition_of_tied_and_degenerate_points(w, d):
    probs, corners = mixture_decomposition(w, d)
    assert probs.size <= w.size
    np.testing.assert_allclose(probs @ corners, w, atol=1e-13)


@pytest.mark.parametrize("w, d, message", [
    ([0.6, 0.4], 2, "at most 1/d"),      # not capped
    ([0.5, 0.4], 1, "sum to 1"),
    ([0.5, 0.5], 3, "at most the length"),
    ([0.5, 0.5, -0.0001], 2, "non-negative"),
    ([0.5, np.inf], 1, "NaN or inf"),
])
def test_decomposition_rejects_bad_input(w, d, message):
    with pytest.raises(ValueError, match=message):
        mixture_decomposition(w, d)


# -- fixed share ----------------------------------------------------------------------------

@given(st.integers(1, 10), st.floats(0, 1), st.integers(0, 2**32 - 1))
def test_fixed_share_keeps_a_floor_and_stays_a_probability_vector(n, alpha, seed):
    v = np.random.default_rng(seed).dirichlet(np.ones(n))
    w_hat = fixed_share(v, alpha)
    assert w_hat.sum() == pytest.approx(1.0)
    assert w_hat.min() >= alpha / n - 1e-15
    np.testing.assert_allclose(w_hat, alpha / n + (1 - alpha) * v)


@pytest.mark.parametrize("alpha", [-0.1, 1.5, np.nan, "0.1", None])
def test_fixed_share_rejects_bad_alpha(alpha):
    with pytest.raises(ValueError, match="alpha"):
        fixed_share([0.5, 0.5], alpha)


# -- online adaptive PCA -----------------------------------------------------------------------

def run_pca(X, k, eta=1.0, alpha=1e-5, seed=0, hooks=()):
    pca = OnlineAdaptivePCA(X.shape[1], k, eta=eta, alpha=alpha, seed=seed)
    for hook in hooks:
        pca.add_hook(hook)
    sampled, expected = [], []
    for x in X:
        sampled.append(pca.learn(x))
        expected.append(pca.last_expected_loss)
    return pca, np.array(sampled), np.array(expected)


def assert_density_matrix(W, cap_level):
    np.testing.assert_allclose(W, W.T, atol=1e-14)
    eigenvalues = np.linalg.eigvalsh(W)
    assert eigenvalues.min() >= -1e-14
    assert eigenvalues.max() <= cap_level + 1e-12
    assert np.trace(W) == pytest.approx(1.0, abs=1e-12)


@given(pca_streams())
def test_w_stays_a_capped_density_matrix_with_a_fixed_share_floor(case):
    X, k, eta, alpha = case
    n = X.shape[1]
    pca = OnlineAdaptivePCA(n, k, eta=eta, alpha=alpha, seed=1)
    for x in X:
        pca.learn(x)
        assert_density_matrix(pca.W, 1 / (n - k))
        w = pca.eigenvalues
        assert w.sum() == pytest.approx(1.0, abs=1e-12)
        assert w.min() >= alpha / n * (1 - 1e-9)  # capping only scales the rest up
        D = pca.eigenvectors
        np.testing.assert_allclose(D.T @ D, np.eye(n), atol=1e-12)


@given(pca_streams())
def test_expected_loss_is_the_mean_of_the_corner_losses(case):
    X, k, eta, alpha = case
    n = X.shape[1]
    recorder = Recorder()
    pca = OnlineAdaptivePCA(n, k, eta=eta, alpha=alpha, seed=2)
    pca.add_hook(recorder)
    for x in X:
        before = pca.expected_loss(x)
        D = pca.eigenvectors
        loss = pca.learn(x)
        event = recorder.events("decompose")[-1]
        corner_losses = [float(np.sum((D.T @ x) ** 2 * (n - k) * r)) for r in event.corners]
        assert pca.last_expected_loss == pytest.approx(before, abs=1e-12)
        assert float(event.probs @ corner_losses) == pytest.approx(before, abs=1e-10)
        assert loss == pytest.approx(corner_losses[event.chosen], abs=1e-12)
        # The sampled P_t = I - R is a rank-k projection and the loss is ||x - P_t x||^2.
        P = pca.last_basis @ pca.last_basis.T
        assert pca.last_basis.shape == (n, k)
        assert loss == pytest.approx(float(np.sum((x - P @ x) ** 2)), abs=1e-12)


def test_expected_loss_equals_the_average_sampled_loss_over_many_seeds():
    X, _ = changing_subspace(n_segments=2, segment_length=6, n=5, rank=2, seed=3)
    runs = [run_pca(X, 2, seed=seed)[1:] for seed in range(800)]
    sampled = np.array([s for s, _ in runs])
    expected = runs[0][1]
    for _, e in runs:  # the expected losses do not depend on the seed
        np.testing.assert_array_equal(e, expected)
    per_round = sampled.mean(axis=0)
    stderr = sampled.std(axis=0) / np.sqrt(len(runs)) + 1e-12
    assert np.all(np.abs(per_round - expected) <= 5 * stderr)
    totals = sampled.sum(axis=1)
    assert totals.mean() == pytest.approx(expected.sum(), abs=5 * totals.std() / np.sqrt(len(totals)))


def reference_expected_losses(X, k, eta, alpha):
    """A slow, independent Algorithm 4: ln W kept as a matrix, exp through scipy's expm."""
    n = X.shape[1]
    log_W = np.log(1 / n) * np.eye(n)
    losses = []
    for x in X:
        W = scipy.linalg.expm(log_W)
        losses.append((n - k) * x @ W @ x)
        V = scipy.linalg.expm(log_W - eta * np.outer(x, x))
        v, U = np.linalg.eigh(V / np.trace(V))
        w = cap(fixed_share(np.maximum(v, 0), alpha), n - k)
        log_W = (U * np.log(w)) @ U.T
    return np.array(losses)


@pytest.mark.parametrize("eta, alpha", [(1.0, 1e-3), (5.0, 0.05), (0.3, 0.5)])
def test_pca_agrees_with_a_dense_expm_reference(eta, alpha):
    X, _ = changing_subspace(n_segments=3, segment_length=25, n=8, rank=2, seed=4)
    _, _, expected = run_pca(X, 3, eta=eta, alpha=alpha)
    np.testing.assert_allclose(expected, reference_expected_losses(X, 3, eta, alpha), rtol=1e-8)


def test_static_online_pca_keeps_exact_logs_of_tiny_eigenvalues():
    X, _ = changing_subspace(seed=0)
    pca, _, expected = run_pca(X, 2, alpha=0.0)
    log_w = pca.log_eigenvalues
    assert np.isfinite(log_w).all() and np.isfinite(expected).all()
    assert log_w.min() < -40  # e^-40 < 1e-17: below what an eigensolver of W could resolve
    assert pca.eigenvalues.max() <= 1 / 18 + 1e-15
    # A longer run drives eigenvalues below the smallest double without breaking anything.
    long = np.tile(X[:200], (4, 1))
    pca, _, expected = run_pca(long, 2, eta=5.0, alpha=0.0)
    assert pca.log_eigenvalues.min() < -745 and np.isfinite(expected).all()
    assert np.isfinite(pca.log_eigenvalues).all()


@pytest.mark.parametrize("seed", range(3))
def test_adaptive_beats_static_on_the_toy_stream(seed):
    X, _ = changing_subspace(seed=seed)
    _, _, static = run_pca(X, 2, alpha=0.0)
    _, _, adaptive = run_pca(X, 2, alpha=1e-5)
    assert adaptive.sum() < 0.5 * static.sum()
    assert adaptive_regret(adaptive, X, 2) < 0.5 * adaptive_regret(static, X, 2)
    # ... and both beat Follow the Leader and the best fixed projection across the switches.
    ftl = FollowTheLeaderPCA(20, 2)
    ftl_total = sum(ftl.learn(x) for x in X)
    _, best = best_fixed_projection(X, 2)
    assert static.sum() < min(ftl_total, best.sum())


@given(pca_streams(max_T=20))
def test_pca_adaptive_regret_bound_holds_on_every_interval(case):
    """Theorem 3's inequality before tuning (Lemma 2 summed as in Appendix B):
    (1 - e^-eta) L_rs - eta * best_rs <= (n - k) (ln(n / alpha) + T ln(1 / (1 - alpha)))."""
    X, k, eta, alpha = case
    if alpha == 0.0:
        alpha = 1e-5
    T, n = X.shape
    _, _, expected = run_pca(X, k, eta=eta, alpha=alpha)
    bound = (n - k) * (np.log(n / alpha) + T * np.log(1 / (1 - alpha)))
    prefix = np.r_[0, np.cumsum(expected)]
    for r in range(T):
        for s in range(r, T):
            C = X[r:s + 1].T @ X[r:s + 1]
            best = np.linalg.eigvalsh(C)[:n - k].sum()
            assert (1 - np.exp(-eta)) * (prefix[s + 1] - prefix[r]) - eta * best <= bound + 1e-9


def test_hooks_report_each_round_in_order():
    X, _ = changing_subspace(n_segments=2, segment_length=5, n=6, seed=5)
    kinds = []
    recorder = Recorder()
    pca = OnlineAdaptivePCA(6, 2, alpha=0.01, seed=0)
    pca.add_hook(recorder)
    pca.add_hook(lambda event: kinds.append(event.kind))
    for x in X:
        pca.learn(x)
    assert kinds == ["decompose", "fixed_share", "cap", "step"] * 10
    step = recorder.columns("step")
    assert step["t"].tolist() == list(range(1, 11))
    assert step["expected_loss"][-1] == pytest.approx(pca.last_expected_loss)
    assert step["loss"][-1] == pytest.approx(pca.last_loss)
    assert np.all(step["rank"] == 6) and np.all(step["condition_number"] >= 1)
    share = recorder.events("fixed_share")[-1]
    np.testing.assert_allclose(share.w_hat, 0.01 / 6 + 0.99 * share.v)
    capping = recorder.events("cap")[-1]
    np.testing.assert_allclose(np.sort(capping.after), np.sort(pca.eigenvalues))
    assert np.all(capping.after <= 1 / 4 + 1e-15) and 0 <= capping.n_capped < 4
    decompose = recorder.events("decompose")[-1]
    assert decompose.probs.sum() == pytest.approx(1.0) and 0 <= decompose.chosen < decompose.probs.size


def test_no_event_is_built_without_a_listener(monkeypatch):
    def refuse(**fields):
        raise AssertionError("an event was built")

    for name in ("DecomposeEvent", "FixedShareEvent", "CapEvent"):
        monkeypatch.setattr(explorer.pca.simplex, name, refuse)
    monkeypatch.setattr(explorer.pca.online, "StepRecord", refuse)
    X, _ = changing_subspace(n_segments=1, segment_length=5, n=5, seed=0)
    pca = OnlineAdaptivePCA(5, 1, seed=0)
    for x in X:
        pca.learn(x)
    pca.add_hook(lambda event: None)
    with pytest.raises(AssertionError, match="an event was built"):
        pca.learn(X[0])


@pytest.mark.blas_kernels
def test_same_seed_same_numbers_and_seeds_differ():
    X, _ = changing_subspace(n_segments=2, segment_length=30, n=8, seed=6)
    _, first, e1 = run_pca(X, 2, seed=42)
    _, second, e2 = run_pca(X, 2, seed=42)
    _, other, e3 = run_pca(X, 2, seed=43)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(e1, e2)
    np.testing.assert_array_equal(e1, e3)  # W does not depend on the draws
    assert not np.array_equal(first, other)


def bad_rows(n):
    return [np.full(n, np.nan), np.r_[np.ones(n - 1), np.inf], np.ones(n + 1), np.ones((2, n)),
            "not a row", None]


LEARNERS = {
    "pca": (lambda: OnlineAdaptivePCA(5, 2, seed=3), lambda rng: rng.uniform(-0.4, 0.4, 5)),
    "static pca": (lambda: OnlineAdaptivePCA(5, 2, alpha=0.0, seed=3),
                   lambda rng: rng.uniform(-0.4, 0.4, 5)),
    "experts": (lambda: AdaptiveBestSubset(5, 2, eta=2.0, alpha=0.01, seed=3),
                lambda rng: rng.uniform(0, 1, 5)),
    "sphere": (lambda: VarianceMinSphere(5, eta=1.0, alpha=0.01, seed=3),
               lambda rng: random_covariance(rng, 5)),
    "simplex": (lambda: VarianceMinSimplex(5, eta=1.0, alpha=0.01),
                lambda rng: random_covariance(rng, 5)),
    "ftl": (lambda: FollowTheLeaderPCA(5, 2), lambda rng: rng.uniform(-0.4, 0.4, 5)),
}


def random_covariance(rng, n):
    """A random 0 <= C <= I."""
    A = rng.standard_normal((n, n))
    C = A @ A.T
    return C / np.linalg.eigvalsh(C).max()


@pytest.mark.parametrize("name", LEARNERS)
def test_bad_input_raises_and_leaves_the_state_unchanged(name):
    make, draw = LEARNERS[name]
    learner = make()
    rng = np.random.default_rng(7)
    for _ in range(5):
        learner.learn(draw(rng))
    before = learner.state_dict()
    bad = bad_rows(5) + [np.ones(5), draw(rng)]
    for i, x in enumerate(bad):
        with pytest.raises(ValueError):
            if i == len(bad) - 2:
                if name in ("sphere", "simplex"):
                    learner.learn(np.triu(np.ones((5, 5))))  # not symmetric
                else:
                    raise ValueError("skip: a vector of ones is a valid row here")
            elif i == len(bad) - 1:
                learner.learn(x, 1.0)  # y is not part of this protocol
            else:
                learner.learn(x)
    assert_same_state(before, learner.state_dict())


@pytest.mark.parametrize("name", LEARNERS)
@pytest.mark.blas_kernels
def test_save_load_continue_equals_never_stopping(name):
    make, draw = LEARNERS[name]
    rng = np.random.default_rng(8)
    inputs = [draw(rng) for _ in range(30)]
    straight, stopped = make(), make()
    for x in inputs[:15]:
        straight.learn(x)
        stopped.learn(x)
    resumed = through_a_file(stopped)
    assert type(resumed) is type(straight)
    a = [straight.learn(x) for x in inputs[15:]]
    b = [resumed.learn(x) for x in inputs[15:]]
    np.testing.assert_array_equal(a, b)
    assert_same_state(straight.state_dict(), resumed.state_dict())


# -- the round protocol: step, with_params, Diverged (issue 14) -----------------------------------

def twins(name, rounds=6):
    """Two learners ``name`` fed the same ``rounds`` inputs, and the next 8 inputs."""
    make, draw = LEARNERS[name]
    rng = np.random.default_rng(11)
    inputs = [draw(rng) for _ in range(rounds + 8)]
    a, b = make(), make()
    for x in inputs[:rounds]:
        a.learn(x)
        b.learn(x)
    return a, b, inputs[rounds:]


@pytest.mark.parametrize("name", LEARNERS)
def test_step_is_learn_with_its_record(name):
    """``step(x).loss == learn(x)``, bit for bit, with the same state after; the record is
    what the learner computed (its t, sampled and expected loss, alpha), and the "step"
    hook receives that very record."""
    learner, twin, inputs = twins(name)
    heard = []
    twin.add_hook(lambda event: heard.append(event) if event.kind == "step" else None)
    for x in inputs:
        loss = learner.learn(x)
        record = twin.step(x)
        assert isinstance(record, StepRecord) and record is heard[-1]
        assert record.loss == loss and record.t == twin.t == learner.t
        assert record.loss == twin.last_loss
        assert record.expected_loss == getattr(twin, "last_expected_loss", None)
        assert record.alpha == getattr(twin, "alpha", None)
        assert record.prediction is None and record.shrink is None
    assert_same_state(learner.state_dict(), twin.state_dict())
    with pytest.raises(ValueError, match="takes no label: y must be None"):
        twin.step(inputs[0], 1.0)  # no label in this family (as learn refuses one)
    assert_same_state(learner.state_dict(), twin.state_dict())


def test_step_reports_the_density_matrix_after_the_round():
    pca = OnlineAdaptivePCA(6, 2, alpha=0.01, seed=0)
    record = pca.step(np.array([0.6, 0.8, 0.0, 0.0, 0.0, 0.0]))
    log_w = pca.log_eigenvalues
    assert record.rank == 6 and record.condition_number == pytest.approx(np.exp(np.ptp(log_w)))
    assert record.expected_loss == pytest.approx(4 / 6)  # (n - k) tr(I/n x x^T)


@pytest.mark.parametrize("name", [name for name in LEARNERS if name != "ftl"])
def test_with_params_continues_the_stream_with_new_eta_and_alpha(name):
    """A new learner, continuing from this one's state (weights, t, the sampler) with eta
    and alpha changed: exactly the learner a saved state with those values loads to."""
    learner, _, inputs = twins(name)
    before = learner.state_dict()
    faster = learner.with_params(eta=0.5, alpha=0.2)
    assert_same_state(before, learner.state_dict())  # the old one is untouched
    assert (faster.eta, faster.alpha, learner.eta) == (0.5, 0.2, before["eta"])
    expected = type(learner).from_state_dict({**before, "eta": 0.5, "alpha": 0.2})
    assert [faster.learn(x) for x in inputs] == [expected.learn(x) for x in inputs]
    assert_same_state(faster.state_dict(), expected.state_dict())
    assert faster.get_params() == {**learner.get_params(), "eta": 0.5, "alpha": 0.2}


def test_with_params_of_static_online_pca_may_switch_fixed_share_on():
    """alpha = 0 is a value of OnlineAdaptivePCA's alpha, not another learner: with_params
    may switch fixed share on from the static weights (the smallest, near e^-80 after a
    segment, are lifted to about alpha/n in one round) and off again (alpha = 0 keeps
    the logs exactly, as static PCA does)."""
    X, _ = changing_subspace(n_segments=2, segment_length=100, n=8, seed=2)
    static = OnlineAdaptivePCA(8, 2, eta=5.0, alpha=0.0, seed=0)
    for x in X[:100]:
        static.learn(x)
    assert static.log_eigenvalues.min() < np.log(1e-20)
    adaptive = static.with_params(alpha=1e-3)
    assert static.alpha == 0.0 and adaptive.alpha == 1e-3
    adaptive.learn(X[100])
    assert adaptive.eigenvalues.min() >= 0.999 * 1e-3 / 8
    off = adaptive.with_params(alpha=0.0)
    again = OnlineAdaptivePCA.from_state_dict({**adaptive.state_dict(), "alpha": 0.0})
    np.testing.assert_array_equal([off.learn(x) for x in X[101:]], [again.learn(x) for x in X[101:]])


@pytest.mark.parametrize("name", LEARNERS)
def test_with_params_refuses_what_may_not_change_mid_stream(name):
    learner, _, _ = twins(name)
    before = learner.state_dict()
    with pytest.raises(ValueError, match="cannot change n mid-stream"):
        learner.with_params(n=7)
    with pytest.raises(ValueError, match="has no parameter 'eta_pca'"):
        learner.with_params(eta_pca=1.0)
    if name == "ftl":
        with pytest.raises(ValueError, match=r"cannot change k mid-stream \(it may change none\)"):
            learner.with_params(k=1)
    else:
        with pytest.raises(ValueError, match="eta must be a finite number"):
            learner.with_params(eta=0.0)
        with pytest.raises(ValueError, match=r"alpha must be a finite number in \[0.0, 1.0\]"):
            learner.with_params(alpha=1.5)
    assert_same_state(before, learner.state_dict())


@pytest.mark.parametrize("name", ["pca", "sphere", "ftl"])
def test_a_failing_eigensolver_is_diverged_naming_the_round(monkeypatch, name):
    """Before issue 14 a failing LAPACK call was a bare ValueError without the round."""
    learner, _, inputs = twins(name)
    before = learner.state_dict()

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("did not converge")

    monkeypatch.setattr(scipy.linalg, "eigh", broken)
    with pytest.raises(Diverged, match="round 7: the symmetric eigensolver failed") as caught:
        learner.step(inputs[0])
    assert caught.value.t == 7 and isinstance(caught.value, ValueError)
    assert_same_state(before, learner.state_dict())


def test_from_state_dict_refuses_foreign_or_misshapen_state():
    with pytest.raises(ValueError, match="cannot build"):
        OnlineAdaptivePCA.from_state_dict(VarianceMinSphere(3, eta=1.0, alpha=0.1).state_dict())
    state = OnlineAdaptivePCA(4, 1).state_dict()
    state["log_w"] = np.zeros(3)
    with pytest.raises(ValueError, match=r"'log_w' must be a real array of shape \(4,\)"):
        OnlineAdaptivePCA.from_state_dict(state)


@pytest.mark.parametrize("make, message", [
    (lambda: OnlineAdaptivePCA(1, 1), "n must be an integer >= 2"),
    (lambda: OnlineAdaptivePCA(5, 0), "k must be an integer >= 1"),
    (lambda: OnlineAdaptivePCA(5, 5), r"k must be an integer in \[1, n - 1\]"),
    (lambda: OnlineAdaptivePCA(5, 2, eta=-1.0), "eta must be a finite number in"),
    (lambda: OnlineAdaptivePCA(5, 2, alpha=1.5), r"alpha must be a finite number in \[0.0, 1.0\]"),
    (lambda: OnlineAdaptivePCA(5, 2, alpha=np.nan), "alpha"),
    (lambda: OnlineAdaptivePCA(5.0, 2), "n must be an integer"),
    (lambda: AdaptiveBestSubset(4, 4, eta=1.0, alpha=0.1), "k must be"),
    (lambda: AdaptiveBestSubset(4, 2, eta=np.inf, alpha=0.1), "eta"),
    (lambda: VarianceMinSphere(0, eta=1.0, alpha=0.1), "n must be"),
    (lambda: VarianceMinSimplex(3, eta=1.0, alpha=-0.1), "alpha"),
    (lambda: FollowTheLeaderPCA(3, 3), "k must be"),
])
def test_bad_parameters_name_the_parameter(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# -- adaptive best subset of experts -----------------------------------------------------------

@given(st.integers(2, 7), st.data())
def test_experts_are_online_pca_restricted_to_diagonal_matrices(n, data):
    """With coordinate-aligned rows W stays diagonal, and PCA is the subset-of-experts
    algorithm on the loss vectors x_i^2 (the paper's reduction)."""
    k = data.draw(st.integers(1, n - 1))
    alpha = data.draw(st.sampled_from([0.0, 1e-3, 0.2]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    T = 25
    X = np.zeros((T, n))
    X[np.arange(T), rng.integers(0, n, T)] = rng.uniform(0, 1, T)
    pca = OnlineAdaptivePCA(n, k, eta=2.0, alpha=alpha)
    experts = AdaptiveBestSubset(n, k, eta=2.0, alpha=alpha)
    for x in X:
        pca.learn(x)
        experts.learn(x ** 2)
        assert pca.last_expected_loss == pytest.approx(experts.last_expected_loss, abs=1e-10)
    np.testing.assert_allclose(np.sort(pca.eigenvalues), np.sort(experts.weights), atol=1e-10)


@given(st.integers(2, 8), st.data())
def test_experts_regret_bound_holds_on_every_interval(n, data):
    """Theorem 1 before tuning: (1 - e^-eta) L_rs - eta best_rs <= (n-k)(ln(n/alpha) + T ln(1/(1-alpha)))."""
    k = data.draw(st.integers(1, n - 1))
    eta = data.draw(st.sampled_from([0.2, 1.0, 4.0]))
    alpha = data.draw(st.sampled_from([1e-4, 0.05, 0.5]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    T = 20
    L = rng.uniform(0, 1, (T, n)) ** 3
    L[T // 2:] = L[T // 2:, ::-1]  # the good experts change
    learner = AdaptiveBestSubset(n, k, eta=eta, alpha=alpha, seed=0)
    expected = []
    for losses in L:
        learner.learn(losses)
        expected.append(learner.last_expected_loss)
        w = learner.weights
        assert w.sum() == pytest.approx(1) and w.max() <= 1 / (n - k) + 1e-15
    bound = (n - k) * (np.log(n / alpha) + T * np.log(1 / (1 - alpha)))
    regret = interval_regret(
        (1 - np.exp(-eta)) * np.array(expected),
        lambda r, s: eta * np.sort(L[r:s + 1].sum(axis=0))[:n - k].sum())
    assert regret <= bound + 1e-9


def test_experts_sampled_subset_and_expected_loss():
    learner = AdaptiveBestSubset(6, 2, eta=1.0, alpha=0.1, seed=0)
    rng = np.random.default_rng(9)
    for _ in range(10):
        losses = rng.uniform(0, 1, 6)
        expected = learner.expected_loss(losses)
        loss = learner.learn(losses)
        assert learner.last_subset.size == 4
        assert loss == pytest.approx(losses[learner.last_subset].sum())
        assert learner.last_expected_loss == pytest.approx(expected)


# -- variance minimization -----------------------------------------------------------------------

def test_sphere_is_pca_with_one_discarded_direction():
    X, _ = changing_subspace(n_segments=2, segment_length=20, n=5, seed=10)
    pca = OnlineAdaptivePCA(5, 4, eta=1.5, alpha=0.01, seed=0)
    sphere = VarianceMinSphere(5, eta=1.5, alpha=0.01, seed=0)
    for x in X:
        pca.learn(x)
        sphere.learn(x)  # a vector x stands for C = x x^T
        assert pca.last_expected_loss == pytest.approx(sphere.last_expected_loss, abs=1e-12)
    np.testing.assert_allclose(pca.W, sphere.W, atol=1e-12)


@given(st.integers(1, 5), st.sampled_from([0.1, 0.5, 1.0]), st.sampled_from([1e-3, 0.1]),
       st.integers(0, 2**32 - 1))
def test_sphere_regret_bound_of_theorem_5_holds_on_every_interval(n, eta, alpha, seed):
    """Eq. (27): sum tr(Y C) - min eig(sum C) <= (ln(n/alpha) + T ln(1/(1-alpha))) / eta + eta T / 2."""
    rng = np.random.default_rng(seed)
    T = 16
    Cs = [random_covariance(rng, n) * rng.uniform() for _ in range(T)]
    vm = VarianceMinSphere(n, eta=eta, alpha=alpha, seed=0)
    expected = []
    for C in Cs:
        before = vm.expected_loss(C)
        vm.learn(C)
        expected.append(vm.last_expected_loss)
        assert before == pytest.approx(vm.last_expected_loss)
        assert_density_matrix(vm.W, 1.0)
    prefix = np.cumsum([np.zeros((n, n))] + Cs, axis=0)
    bound = (np.log(n / alpha) + T * np.log(1 / (1 - alpha))) / eta + eta * T / 2
    regret = interval_regret(expected, lambda r, s: best_fixed_unit_vector(prefix[s + 1] - prefix[r])[1])
    assert regret <= bound + 1e-9


def test_sphere_expected_loss_is_the_average_sampled_loss():
    rng = np.random.default_rng(11)
    Cs = [random_covariance(rng, 4) for _ in range(10)]
    totals, expected = [], []
    for seed in range(800):
        vm = VarianceMinSphere(4, eta=1.0, alpha=0.05, seed=seed)
        sampled = 0.0
        expected.append(0.0)
        for C in Cs:
            sampled += vm.learn(C)
            expected[-1] += vm.last_expected_loss
        totals.append(sampled)
    assert np.ptp(expected) == 0  # Y_t does not depend on the draws
    assert np.mean(totals) == pytest.approx(expected[0], abs=5 * np.std(totals) / np.sqrt(len(totals)))


@given(st.integers(1, 4), st.sampled_from([0.2, 1.0, 3.0]), st.sampled_from([1e-3, 0.1]),
       st.integers(0, 2**32 - 1))
def test_simplex_regret_bound_of_theorem_6_holds_on_every_interval(n, b, alpha, seed):
    """Eq. (62) with r = 2: a sum y^T C y - b min_u sum u^T C u <= ln(n/alpha) + T ln(1/(1-alpha)),
    for a = b / (2b + 1) and eta = 2a."""
    rng = np.random.default_rng(seed)
    T = 12
    Cs = [random_covariance(rng, n) * rng.uniform() for _ in range(T)]
    a = b / (2 * b + 1)
    vm = VarianceMinSimplex(n, eta=2 * a, alpha=alpha)
    losses = []
    for C in Cs:
        y = vm.portfolio
        losses.append(vm.learn(C))
        assert losses[-1] == pytest.approx(y @ C @ y)
        assert vm.portfolio.sum() == pytest.approx(1) and vm.portfolio.min() >= alpha / n * (1 - 1e-12)
    prefix = np.cumsum([np.zeros((n, n))] + Cs, axis=0)
    bound = np.log(n / alpha) + T * np.log(1 / (1 - alpha))
    regret = interval_regret(a * np.array(losses),
                             lambda r, s: b * best_fixed_portfolio(prefix[s + 1] - prefix[r])[1])
    assert regret <= bound + 1e-7


def test_best_fixed_portfolio_matches_the_closed_form_when_no_weight_is_zero():
    rng = np.random.default_rng(12)
    C = random_covariance(rng, 4) + 0.5 * np.eye(4)
    u, value = best_fixed_portfolio(C)
    ones = np.ones(4)
    closed = np.linalg.solve(C, ones)
    closed /= closed.sum()
    if closed.min() > 0:
        np.testing.assert_allclose(u, closed, atol=1e-6)
    assert value == pytest.approx(closed @ C @ closed, abs=1e-9) or value <= closed @ C @ closed
    with pytest.raises(ValueError, match="square"):
        best_fixed_portfolio(np.ones((2, 3)))


# -- comparators and regret -------------------------------------------------------------------

def test_follow_the_leader_projects_onto_the_top_of_the_past():
    X, _ = changing_subspace(n_segments=2, segment_length=10, n=6, seed=13)
    ftl = FollowTheLeaderPCA(6, 2)
    for t, x in enumerate(X):
        values, vectors = np.linalg.eigh(X[:t].T @ X[:t])
        if values[-2] - values[-3] > 1e-9:  # the top-2 subspace is unique
            top = vectors[:, -2:]
            np.testing.assert_allclose(ftl.basis @ ftl.basis.T, top @ top.T, atol=1e-8)
        basis = ftl.basis
        assert ftl.learn(x) == pytest.approx(compression_losses(x[None], basis)[0], abs=1e-12)
    assert ftl.t == len(X)


def test_follow_the_leader_fills_a_rank_deficient_past_with_coordinate_axes():
    ftl = FollowTheLeaderPCA(4, 2)
    np.testing.assert_allclose(np.abs(ftl.basis), np.eye(4)[:, :2], atol=1e-15)  # nothing seen
    x = np.array([0.0, 0.6, 0.8, 0.0])
    ftl.learn(x)
    P = ftl.basis @ ftl.basis.T
    np.testing.assert_allclose(P @ x, x, atol=1e-12)           # the seen direction is kept
    np.testing.assert_allclose(P @ [1.0, 0, 0, 0], [1.0, 0, 0, 0], atol=1e-12)  # then e_1


@given(pca_streams())
def test_best_fixed_projection_is_best_and_sums_the_smallest_eigenvalues(case):
    X, k, _, _ = case
    n = X.shape[1]
    basis, losses = best_fixed_projection(X, k)
    np.testing.assert_allclose(basis.T @ basis, np.eye(k), atol=1e-12)
    assert losses.sum() == pytest.approx(np.linalg.eigvalsh(X.T @ X)[:n - k].sum(), abs=1e-10)
    other = np.linalg.qr(np.random.default_rng(0).standard_normal((n, k)))[0]
    assert losses.sum() <= compression_losses(X, other).sum() + 1e-12


def brute_force_adaptive_regret(losses, X, k):
    n = X.shape[1]
    best = -np.inf
    for r in range(len(X)):
        for s in range(r, len(X)):
            C = X[r:s + 1].T @ X[r:s + 1]
            best = max(best, losses[r:s + 1].sum() - np.linalg.eigvalsh(C)[:n - k].sum())
    return best


@given(pca_streams(max_T=25), st.integers(2, 7))
def test_adaptive_regret_is_exact_and_a_stride_gives_a_lower_bound(case, stride):
    X, k, eta, alpha = case
    _, _, expected = run_pca(X, k, eta=eta, alpha=alpha)
    exact, (r, s) = adaptive_regret(expected, X, k, stride=1, return_interval=True)
    assert exact == pytest.approx(brute_force_adaptive_regret(expected, X, k), abs=1e-9)
    assert adaptive_regret(expected, X, k) == exact  # stride None is exact for short streams
    n = X.shape[1]
    C = X[r:s + 1].T @ X[r:s + 1]
    assert expected[r:s + 1].sum() - np.linalg.eigvalsh(C)[:n - k].sum() == pytest.approx(exact, abs=1e-9)
    assert adaptive_regret(expected, X, k, stride=stride) <= exact + 1e-9
    generic = interval_regret(expected, lambda a, b: max(
        np.linalg.eigvalsh(X[a:b + 1].T @ X[a:b + 1])[:n - k].sum(), 0.0))
    assert generic == pytest.approx(exact, abs=1e-9)


@given(pca_streams(max_T=25), st.sampled_from([None, 1, 3]))
def test_adaptive_regret_kept_comparators_score_each_learner_alone(case, stride):
    # One AdaptiveRegret scores several learners' losses: each answer (value and worst
    # interval) is what a fresh one gives, in any order, and a refused call changes nothing.
    X, k, eta, alpha = case
    runs = [run_pca(X, k, eta=eta, alpha=a)[2] for a in (0.0, alpha)] + [np.linspace(0.0, 1.0, len(X))]
    kept = AdaptiveRegret(X, k, stride=stride)
    fresh = [adaptive_regret(losses, X, k, stride=stride, return_interval=True) for losses in runs]
    for losses, answer in reversed(list(zip(runs, fresh))):
        with pytest.raises(ValueError, match="one loss per row"):
            kept(losses[:-1])
        assert kept(losses, return_interval=True) == answer
        assert kept(losses) == answer[0]
    assert AdaptiveRegret(X, k, stride=1)(runs[0]) == pytest.approx(
        brute_force_adaptive_regret(runs[0], X, k), abs=1e-9)
    # one pass for every rank: each the one its own AdaptiveRegret gives
    every = AdaptiveRegret.for_ranks(X, range(1, X.shape[1] + 1), stride=stride)
    assert sorted(every) == list(range(1, X.shape[1] + 1)) and every[k](runs[0], return_interval=True) == fresh[0]
    for rank, kept_rank in every.items():
        assert kept_rank(runs[2], return_interval=True) == adaptive_regret(runs[2], X, rank, stride=stride,
                                                                           return_interval=True)


def test_adaptive_regret_is_at_least_static_regret():
    X, _ = changing_subspace(seed=1)
    _, _, expected = run_pca(X, 2, alpha=0.0)
    _, best = best_fixed_projection(X, 2)
    static = expected.sum() - best.sum()
    assert adaptive_regret(expected, X, 2) >= static - 1e-9
    assert adaptive_regret(expected, X, 2, stride=50) >= static - 1e-9  # [0, T) is on every grid


@pytest.mark.parametrize("call, message", [
    (lambda X: adaptive_regret(np.ones(3), X, 1), "one loss per row"),
    (lambda X: adaptive_regret(np.r_[np.ones(9), np.nan], X, 1), "NaN"),
    (lambda X: adaptive_regret(np.ones(10), X, 0), "k must be"),
    (lambda X: adaptive_regret(np.ones(10), X, 1, stride=0), "stride must be"),
    (lambda X: adaptive_regret(np.ones(10), X[:, :0], 1), "non-empty matrix"),
    (lambda X: AdaptiveRegret(X, 5), "k must be"),
    (lambda X: AdaptiveRegret(X, 1, stride=0), "stride must be"),
    (lambda X: AdaptiveRegret(X, 1)(np.ones((10, 1))), "one loss per row"),
    (lambda X: AdaptiveRegret.for_ranks(X, []), "at least one rank"),
    (lambda X: AdaptiveRegret.for_ranks(X, [1, 5]), "k must be"),
    (lambda X: interval_regret(np.ones(10), "no"), "callable"),
    (lambda X: best_fixed_projection(X, 5), "k must be"),
    (lambda X: compression_losses(X, np.ones((3, 1))), "basis"),
])
def test_regret_and_comparators_reject_bad_input(call, message):
    X = np.random.default_rng(14).standard_normal((10, 4))
    with pytest.raises(ValueError, match=message):
        call(X)


# -- theory settings -------------------------------------------------------------------------

def test_theory_settings_follow_the_theorems():
    eta, alpha = pca_theory_settings(T=600, n=20, k=2, L=600 * 18)
    D = 18 * np.log(20 * (1 + 18 * 600)) + 1
    assert alpha == pytest.approx(1 / (600 * 18 + 1))
    assert eta == pytest.approx(np.log(1 + np.sqrt(2 * D / (600 * 18))))
    assert 0.17 < eta < 0.2  # the paper's toy example reports eta = 0.19
    assert sphere_theory_settings(99, 4).alpha == pytest.approx(0.01)
    assert sphere_theory_settings(99, 4, L=5.0).eta == pytest.approx(
        np.log(1 + np.sqrt(2 * (np.log(400) + 1) / 5)))
    eta, alpha = simplex_theory_settings(99, 4, L=5.0)
    b = np.sqrt(2 * np.log(400) + 2) / np.sqrt(5.0) / 2
    assert eta == pytest.approx(2 * b / (2 * b + 1)) and alpha == pytest.approx(0.01)
    for call in (lambda: pca_theory_settings(10, 5, 5, 1.0), lambda: pca_theory_settings(10, 5, 2, 0.0),
                 lambda: sphere_theory_settings(0, 5), lambda: simplex_theory_settings(10, 5, -1.0)):
        with pytest.raises(ValueError):
            call()
