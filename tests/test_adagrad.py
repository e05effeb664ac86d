"""ADA-FULL, ADA-DIAG, ADA-FD, ADA-FFD (PDS and CMD), OGD, Adam: docs/algorithms.md section 4.

The oracle is a dense, literal transcription of Wan & Zhang's algorithms (d x d matrices,
a matrix square root by eigh, a linear solve); the guarantees are those of the paper:
FD's bound on the gradient sketch, ADA-FFD with 2 tau > d equal to ADA-FULL, the rank
cycle tau - 1 .. 2 tau, orthonormal V over long streams.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

import explorer.adagrad.adagrad as adagrad_module
import explorer.adagrad.linear as linear_module
from explorer import Recorder
from explorer.adagrad import LEARNERS, OGD, AdaGrad, Adam, RankShrinkEvent, make_learner
from explorer.errors import Diverged
from explorer.hooks import StepRecord
from explorer.sketch import ShrinkRecord
from explorer.losses import get_loss
from explorer.streams import decaying_spectrum, linear_regression_targets
from state_checks import assert_same_state, through_a_file

VARIANTS = ("full", "diag", "fd", "ffd")
METHODS = ("cmd", "pds")


@pytest.fixture(autouse=True, scope="module")
def one_blas_thread():
    """One BLAS thread: the matrices here are small or medium (eigh of 500 x 500 at most),
    and on a shared 2-core machine a 2-thread LAPACK runs them several times slower."""
    with threadpool_limits(1):
        yield


# -- a dense, literal oracle ----------------------------------------------------------------

def psd_sqrt(G):
    """``G^{1/2}`` of a symmetric PSD matrix; eigenvalues below d eps lambda_max count as 0."""
    values, vectors = np.linalg.eigh(G)
    values = np.maximum(values, 0.0)
    values[values <= G.shape[0] * np.finfo(float).eps * max(values.max(), 0.0)] = 0.0
    return (vectors * np.sqrt(values)) @ vectors.T


def reference_run(X, y, *, variant, method, eta, delta, tau, loss):
    """Wan & Zhang's algorithms written out with dense d x d matrices.

    fd: Algorithms 1-2 literally (g into the last row of S, SVD, subtract Sigma_tau^2).
    ffd: the doubling trick on the dense matrix S^T S (assumes gradients in general
    position, so the rank grows by one per round until 2 tau or d).
    """
    loss = get_loss(loss)
    d = X.shape[1]
    beta, g_bar, G, S, rank = np.zeros(d), np.zeros(d), np.zeros((d, d)), np.zeros((tau, d)), 0
    losses = []
    for x, label in zip(X, y):
        z = x @ beta
        losses.append(float(loss.value(z, label)))
        g = float(loss.derivative(z, label)) * x
        if not g.any():
            continue
        if variant == "full":
            G += np.outer(g, g)
            H = delta * np.eye(d) + psd_sqrt(G)
        elif variant == "diag":
            G += np.outer(g, g)
            H = np.diag(delta + np.sqrt(np.diag(G)))
        elif variant == "fd":
            assert not S[-1].any()
            S[-1] = g
            _, sigma, Vt = np.linalg.svd(S, full_matrices=False)
            shift = sigma[tau - 1] ** 2 if sigma.size >= tau else 0.0  # 0 when d < tau
            shrunk = np.sqrt(np.maximum(sigma ** 2 - shift, 0.0))
            S = np.zeros((tau, d))
            S[:shrunk.size] = shrunk[:, None] * Vt
            S[:shrunk.size][shrunk == 0] = 0.0
            H = delta * np.eye(d) + psd_sqrt(S.T @ S)
        else:
            G += np.outer(g, g)
            rank = min(rank + 1, d)
            H = delta * np.eye(d) + psd_sqrt(G)
        if method == "cmd":
            beta = beta - eta * np.linalg.solve(H, g)
        else:
            g_bar = g_bar + g
            beta = -eta * np.linalg.solve(H, g_bar)
        if variant == "ffd" and rank == 2 * tau:
            values, vectors = np.linalg.eigh(G)
            values, vectors = values[::-1], vectors[:, ::-1]
            kept = np.maximum(values[:tau - 1] - values[tau - 1], 0.0)
            G = (vectors[:, :tau - 1] * kept) @ vectors[:, :tau - 1].T
            rank = tau - 1
    return np.array(losses), beta


@st.composite
def regression_cases(draw, max_n=40, max_d=10):
    """A generic stream (full-rank Gaussian rows with a random spectrum) and labels."""
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.exp(rng.uniform(-1.5, 1.5, size=d))
    loss = draw(st.sampled_from(["absolute", "logistic", "squared_hinge"]))
    if loss == "absolute":
        y = X @ rng.standard_normal(d)
    else:
        y = np.where(rng.standard_normal(n) >= 0, 1.0, -1.0)
    return X, y, loss


@given(regression_cases(), st.sampled_from(VARIANTS), st.sampled_from(METHODS),
       st.integers(2, 4), st.sampled_from([0.01, 0.1]))
def test_learners_follow_the_dense_algorithms(case, variant, method, tau, eta):
    X, y, loss = case
    learner = AdaGrad(X.shape[1], variant=variant, method=method, eta=eta, tau=tau, loss=loss)
    losses = learner.learn_many(X, y)
    expected_losses, expected_beta = reference_run(X, y, variant=variant, method=method, eta=eta,
                                                   delta=learner.delta, tau=tau, loss=loss)
    scale = max(1.0, np.abs(expected_losses).max())
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-7, atol=1e-7 * scale)
    np.testing.assert_allclose(learner.beta, expected_beta, rtol=1e-7,
                               atol=1e-7 * max(1.0, np.abs(expected_beta).max()))


# -- the paper's claims ----------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_ffd_with_tau_251_equals_full_at_d_500(method):
    """Footnote 1: 2 tau = 502 > d = 500, so ADA-FFD never shrinks and is ADA-FULL.

    300 rounds, not the paper's 10000: ADA-FULL takes a 500 x 500 eigendecomposition per
    round (about 10 s here for each method).
    """
    X = decaying_spectrum(300, 500, seed=0)
    y, _ = linear_regression_targets(X, seed=1)
    full = AdaGrad(500, variant="full", method=method)
    ffd = AdaGrad(500, variant="ffd", method=method, tau=251)
    full_losses, ffd_losses = full.learn_many(X, y), ffd.learn_many(X, y)
    np.testing.assert_allclose(ffd_losses, full_losses, rtol=0, atol=1e-8)
    np.testing.assert_allclose(ffd.beta, full.beta, rtol=0, atol=1e-8)
    assert ffd.n_shrinks == 0 and ffd.rank == full.rank == 300


@pytest.mark.parametrize("method", METHODS)
def test_half_d_plus_one_equals_full_and_half_d_cycles(method):
    """Fig. 4 at d = 40: tau = 21 equals ADA-FULL over 300 rounds; tau = 20 cycles 19..40."""
    d, T = 40, 300
    X = decaying_spectrum(T, d, seed=2)
    y, _ = linear_regression_targets(X, seed=3)
    full = AdaGrad(d, variant="full", method=method)
    above = AdaGrad(d, variant="ffd", method=method, tau=d // 2 + 1)
    at = AdaGrad(d, variant="ffd", method=method, tau=d // 2)
    recorder = Recorder()
    at.add_hook(recorder)
    full_losses = full.learn_many(X, y)
    np.testing.assert_allclose(above.learn_many(X, y), full_losses, rtol=0, atol=1e-8)
    at_losses = at.learn_many(X, y)
    assert above.n_shrinks == 0 and above.rank == d
    ranks = recorder.columns("step")["rank"]  # at the end of each round, after any shrink
    assert ranks.max() == d - 1 and ranks[d - 1:].min() == d // 2 - 1  # the cycle
    assert set(recorder.columns("shrink")["rank_before"].tolist()) == {d}
    assert at.n_shrinks == 1 + (T - d) // (d // 2 + 1)
    assert not np.allclose(at_losses, full_losses)


@given(regression_cases(max_n=60), st.sampled_from(["fd", "ffd"]), st.sampled_from(METHODS),
       st.integers(2, 5), st.booleans())
def test_sketches_satisfy_the_fd_guarantee_on_the_gradients(case, variant, method, tau, low_rank):
    """Lemma 4 / eq. (13): 0 <= C^T C - S^T S <= Delta I, Delta <= ||C - C_k||_F^2 / (tau - k)."""
    X, y, loss = case
    if low_rank and X.shape[1] > 2:
        X = X[:, :2] @ np.random.default_rng(0).standard_normal((2, X.shape[1]))
    learner = AdaGrad(X.shape[1], variant=variant, method=method, tau=tau, eta=0.05, loss=loss)
    C = np.array([learner.step(x, label).gradient_scale * x for x, label in zip(X, y)])
    error = np.linalg.eigvalsh(C.T @ C - learner.gram())
    tol = 1e-9 * max(1.0, np.linalg.norm(C) ** 2)
    assert error.min() >= -tol
    assert error.max() <= learner.delta_total + tol
    sigma = np.linalg.svd(C, compute_uv=False)
    for k in range(tau):
        assert learner.delta_total <= np.sum(sigma[k:] ** 2) / (tau - k) + tol


@given(regression_cases(max_n=30), st.sampled_from(VARIANTS), st.sampled_from(METHODS),
       st.integers(2, 4), st.integers(0, 2**32 - 1))
def test_inverse_by_the_formulas_equals_a_dense_inverse(case, variant, method, tau, seed):
    X, y, loss = case
    learner = AdaGrad(X.shape[1], variant=variant, method=method, tau=tau, eta=0.05, loss=loss)
    learner.learn_many(X, y)
    gram = learner.gram()
    if variant == "diag":
        H = np.diag(learner.delta + np.sqrt(np.diag(gram)))
    else:
        H = learner.delta * np.eye(X.shape[1]) + psd_sqrt(gram)
    v = np.random.default_rng(seed).standard_normal(X.shape[1])
    np.testing.assert_allclose(learner.solve(v), np.linalg.solve(H, v), rtol=1e-8,
                               atol=1e-10 * np.abs(v).max())
    np.testing.assert_allclose(learner.proximal_matrix(), H, rtol=1e-8,
                               atol=1e-8 * max(1.0, np.abs(H).max()))
    assert learner.condition_number() == pytest.approx(np.linalg.cond(H), rel=1e-6)


def test_v_stays_orthonormal_over_100000_rounds():
    """Small d and tau so that 10^5 rounds (about 25000 shrinks) take a few seconds."""
    X = decaying_spectrum(100_000, 12, seed=4)
    y, _ = linear_regression_targets(X, seed=5)
    learner = AdaGrad(12, variant="ffd", tau=3)
    for start in range(0, 100_000, 25_000):
        learner.learn_many(X[start:start + 25_000], y[start:start + 25_000])
        assert learner.proximal.orthonormality_error() < 1e-10
        assert 2 <= learner.rank <= 6
    assert learner.n_shrinks == 100_000 // 4 - 1  # one shrink every tau + 1 rounds
    assert not learner.proximal.V[:, learner.rank:].any()


# -- hooks ------------------------------------------------------------------------------------

def test_ffd_shrink_events_show_the_rank_cycle():
    tau, d = 4, 30
    X = decaying_spectrum(60, d, seed=6)
    y, _ = linear_regression_targets(X, seed=7)
    learner = AdaGrad(d, variant="ffd", tau=tau)
    recorder = Recorder()
    learner.add_hook(recorder)
    learner.learn_many(X, y)
    shrinks = recorder.events("shrink")
    assert all(isinstance(event, RankShrinkEvent) for event in shrinks)
    assert [event.t for event in shrinks] == list(range(2 * tau, 61, tau + 1))
    assert {(event.rank_before, event.rank_after) for event in shrinks} == {(2 * tau, tau - 1)}
    for event in shrinks:
        assert np.all(np.diff(event.sigma) <= 0) and event.sigma.size == 2 * tau
        assert event.delta == pytest.approx(event.sigma[tau - 1] ** 2)
    steps = recorder.columns("step")
    assert steps["t"].tolist() == list(range(1, 61))
    # the rank at the end of each round: 1, 2, ..., 2 tau - 1, then tau - 1 after each shrink
    assert steps["rank"][:2 * tau - 1].tolist() == list(range(1, 2 * tau))
    assert steps["rank"][2 * tau - 1:].min() == tau - 1 and steps["rank"].max() == 2 * tau - 1
    assert learner.delta_total == pytest.approx(sum(event.delta for event in shrinks))
    assert np.all(np.isfinite(steps["condition_number"])) and np.all(steps["condition_number"] >= 1)


def test_fd_shrink_events_carry_round_and_ranks():
    tau, d = 3, 10
    X = decaying_spectrum(12, d, seed=8)
    y, _ = linear_regression_targets(X, seed=9)
    learner = AdaGrad(d, variant="fd", tau=tau)
    recorder = Recorder()
    handle = learner.add_hook(recorder)
    learner.learn_many(X[:10], y[:10])
    columns = recorder.columns("shrink")
    assert columns["t"].tolist() == list(range(tau, 11))
    assert set(columns["rank_before"].tolist()) == {tau}
    assert set(columns["rank_after"].tolist()) == {tau - 1}
    assert learner.delta_total == pytest.approx(columns["delta"].sum())
    handle.remove()
    learner.learn_many(X[10:], y[10:])
    assert len(recorder.events("shrink")) == 10 - tau + 1


def test_no_event_is_built_without_a_listener(monkeypatch):
    def refuse(**fields):
        raise AssertionError("an event was built")

    monkeypatch.setattr(linear_module, "StepRecord", refuse)
    monkeypatch.setattr(adagrad_module, "RankShrinkEvent", refuse)
    X = decaying_spectrum(30, 8, seed=10)
    y, _ = linear_regression_targets(X, seed=11)
    for variant in VARIANTS:
        AdaGrad(8, variant=variant, tau=2).learn_many(X, y)
    listened = AdaGrad(8, variant="ffd", tau=2)
    listened.add_hook(lambda event: None)
    with pytest.raises(AssertionError, match="an event was built"):
        listened.learn_many(X, y)


# -- baselines and losses -----------------------------------------------------------------------

def test_ogd_and_adam_follow_their_formulas():
    rng = np.random.default_rng(12)
    X, y = rng.standard_normal((25, 4)), rng.standard_normal(25)
    ogd, adam = OGD(4, eta=0.1), Adam(4, eta=0.05)
    beta_ogd, beta_adam, m, v = np.zeros(4), np.zeros(4), np.zeros(4), np.zeros(4)
    for t, (x, label) in enumerate(zip(X, y), start=1):
        assert ogd.learn(x, label) == pytest.approx(abs(beta_ogd @ x - label))
        beta_ogd = beta_ogd - 0.1 / np.sqrt(t) * np.sign(beta_ogd @ x - label) * x
        assert adam.learn(x, label) == pytest.approx(abs(beta_adam @ x - label))
        g = np.sign(beta_adam @ x - label) * x
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        beta_adam = beta_adam - 0.05 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    np.testing.assert_allclose(ogd.beta, beta_ogd, rtol=1e-12)
    np.testing.assert_allclose(adam.beta, beta_adam, rtol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("method", METHODS)
def test_a_zero_gradient_changes_nothing(variant, method):
    learner = AdaGrad(3, variant=variant, method=method, tau=2, loss="squared_hinge")
    learner.learn([1.0, 0.0, 0.0], 1.0)
    learner.beta = np.array([5.0, 0.0, 0.0])  # margin 5 >= 1: zero squared-hinge gradient
    before = learner.state_dict()
    assert learner.learn([1.0, 1.0, 0.0], 1.0) == 0.0
    after = learner.state_dict()
    assert after.pop("t") == before.pop("t") + 1
    assert_same_state(before, after)


def test_squared_hinge_classifies_breast_cancer_online():
    from explorer.streams import breast_cancer

    X, y = breast_cancer()
    for variant in VARIANTS:
        learner = AdaGrad(X.shape[1], variant=variant, tau=5, loss="squared_hinge")
        mistakes = 0
        for x, label in zip(X, y):
            mistakes += np.sign(learner.predict(x)) != label  # sign(0) = 0 counts as a mistake
            learner.learn(x, label)
        assert np.mean(np.sign(learner.predict(X)) == y) > 0.9, variant
        assert mistakes < 0.2 * len(y)


def test_predict_on_a_matrix_equals_row_by_row():
    X = decaying_spectrum(20, 6, seed=13)
    y, _ = linear_regression_targets(X, seed=14)
    learner = AdaGrad(6, variant="fd", tau=2)
    learner.learn_many(X, y)
    np.testing.assert_allclose(learner.predict(X), [learner.predict(x) for x in X], rtol=1e-13)


# -- bad input, determinism, saving ----------------------------------------------------------------

MAKERS = {
    **{f"{variant}-{method}": (lambda variant=variant, method=method:
                               AdaGrad(5, variant=variant, method=method, tau=2))
       for variant in VARIANTS for method in METHODS},
    "ogd": lambda: OGD(5, eta=0.1),
    "adam": lambda: Adam(5, eta=0.1),
}


def warmed_up(make, seed=15, n=12):
    learner = make()
    X = decaying_spectrum(n, 5, seed=seed)
    y, _ = linear_regression_targets(X, seed=seed + 1)
    learner.learn_many(X, y)
    return learner


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_bad_input_raises_and_leaves_the_state_unchanged(name):
    learner = warmed_up(MAKERS[name])
    before = learner.state_dict()
    for x in (np.full(5, np.nan), np.r_[np.ones(4), np.inf], np.ones(6), np.ones((2, 5)),
              "not a row", None, [1, 2, [3]]):
        with pytest.raises(ValueError):
            learner.learn(x, 1.0)
    for label in (np.nan, np.inf, "one", None, [1.0, 2.0]):
        with pytest.raises(ValueError, match="y"):
            learner.learn(np.ones(5), label)
    poisoned = np.ones((4, 5))
    poisoned[3, 1] = np.nan
    with pytest.raises(ValueError, match="row 3"):
        learner.learn_many(poisoned, np.ones(4))
    with pytest.raises(ValueError, match="y must be 4 finite numbers"):
        learner.learn_many(np.ones((4, 5)), [1.0, 2.0, np.nan, 3.0])
    with pytest.raises(ValueError, match="y must be 4"):
        learner.learn_many(np.ones((4, 5)), np.ones(3))
    with pytest.raises(ValueError):
        learner.predict(np.ones(4))
    assert_same_state(before, learner.state_dict())


def test_divergence_raises_instead_of_poisoning_the_state():
    """Issue 14: raised as explorer.errors.Diverged (it was a bare ValueError), with the round."""
    learner = OGD(2, eta=1.0, loss="squared")
    learner.learn([1.0, 1.0], 1e140)  # beta = 2e140 (1, 1): finite, but far gone
    before = learner.state_dict()
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(Diverged, match="lower eta") as error:
            learner.learn([1e149, 1e149], 0.0)  # (beta^T x)^2 overflows
    assert (error.value.row, error.value.t) == (0, 2)
    assert_same_state(before, learner.state_dict())


# -- step records and hyper-parameters --------------------------------------------------------------

@pytest.mark.parametrize("key", LEARNERS)
def test_step_records_what_the_round_computed(key):
    """step(x, y) is learn(x, y) with its record: the loss, the prediction and gradient scale
    before the update, ADA-FD/FFD's shrink (the same one the "shrink" hook reports), rank."""
    X = decaying_spectrum(40, 8, seed=30)
    y, _ = linear_regression_targets(X, seed=31)
    learned, stepped = make_learner(key, 8, eta=0.1, tau=3), make_learner(key, 8, eta=0.1, tau=3)
    recorder = Recorder()
    stepped.add_hook(recorder)
    for x, label in zip(X, y):
        prediction = stepped.predict(x)
        record = stepped.step(x, label)
        assert isinstance(record, StepRecord) and record.loss == learned.learn(x, label)
        assert record.t == stepped.t and record.prediction == prediction
        assert record.gradient_scale == np.sign(prediction - label)  # the absolute loss's l'
        assert recorder.events("step")[-1] is record
        if key in ("full", "diag", "fd", "ffd"):
            assert record.rank == stepped.rank
            assert record.condition_number == stepped.condition_number()
    assert_same_state(learned.state_dict(), stepped.state_dict())
    shrinks = [r.shrink for r in recorder.events("step") if r.shrink is not None]
    events = recorder.events("shrink")
    assert len(shrinks) == len(events) == stepped.n_shrinks if key in ("fd", "ffd") else shrinks == []
    for shrink, event in zip(shrinks, events):
        assert isinstance(shrink, ShrinkRecord)
        np.testing.assert_array_equal(np.sqrt(shrink.squared), event.sigma)
        assert (shrink.delta, shrink.kept) == (event.delta, event.rank_after)


def test_ffd_compress_is_fds_rule_on_the_eigenvalues_of_m():
    """ADA-FFD's shrink is FD's (explorer.sketch.shrink_amounts): delta = lambda_tau, the first
    tau - 1 eigenvalues minus delta are kept, and it reports a ShrinkRecord."""
    tau, d = 3, 12
    learner = AdaGrad(d, variant="ffd", tau=tau)
    X = decaying_spectrum(2 * tau, d, seed=32)
    y, _ = linear_regression_targets(X, seed=33)
    records = [learner.step(x, label) for x, label in zip(X, y)]
    assert [r.shrink is None for r in records] == [True] * (2 * tau - 1) + [False]
    shrink = records[-1].shrink
    assert shrink.squared.size == 2 * tau and shrink.kept == tau - 1 == learner.rank
    assert shrink.delta == shrink.squared[tau - 1]
    np.testing.assert_array_equal(learner.proximal.eigenvalues(), shrink.squared[:tau - 1] - shrink.delta)


@pytest.mark.parametrize("key", LEARNERS)
def test_with_params_continues_the_stream_with_new_hot_values(key):
    """eta (and delta) change mid-stream through with_params: a new learner with this one's
    state (G, the sketch, beta, t) and the new values; the old one is untouched. For ADA-FULL
    the new H is delta' I + G^{1/2} exactly."""
    X = decaying_spectrum(30, 6, seed=34)
    y, _ = linear_regression_targets(X, seed=35)
    learner = make_learner(key, 6, eta=0.1, tau=2)
    learner.learn_many(X[:20], y[:20])
    before = learner.state_dict()
    changes = {"eta": 0.3, **({"delta": 0.5} if "delta" in learner.HOT else {})}
    changed = learner.with_params(**changes)
    assert_same_state(before, learner.state_dict())
    state = changed.state_dict()
    assert {k: state[k] for k in changes} == changes and changed.get_params()["eta"] == 0.3
    assert_same_state({k: v for k, v in state.items() if k not in changes},
                      {k: v for k, v in before.items() if k not in changes})
    if key == "full":
        G = learner.gram()
        np.testing.assert_allclose(changed.proximal_matrix(), 0.5 * np.eye(6) + psd_sqrt(G), rtol=1e-10)
    assert np.isfinite(changed.learn_many(X[20:], y[20:])).all() and changed.t == 30


def test_get_params_are_the_constructor_arguments():
    learner = AdaGrad(4, variant="fd", method="pds", eta=0.2, tau=3, loss="squared")
    assert learner.get_params() == dict(d=4, variant="fd", method="pds", eta=0.2, delta=10.0, tau=3,
                                        loss="squared")
    assert learner.loss == "squared" and Adam(2).get_params()["delta"] == 1e-8
    with pytest.raises(ValueError, match="cannot change tau mid-stream .it may change eta, delta."):
        learner.with_params(tau=4)
    with pytest.raises(ValueError, match="key must be one of"):
        make_learner("sgd", 3, eta=0.1)


@pytest.mark.parametrize("kwargs, message", [
    (dict(variant="low-rank"), "variant must be one of"),
    (dict(method="sgd"), "method must be one of"),
    (dict(eta=0.0), r"eta must be a finite number in \(0.0"),
    (dict(eta=np.nan), "eta"),
    (dict(eta="big"), "eta must be a real number"),
    (dict(delta=-1.0), r"delta must be a finite number in \(0.0"),
    (dict(delta=np.inf), "delta"),
    (dict(tau=1), "tau must be an integer >= 2"),
    (dict(tau=2.5), "tau must be an integer"),
    (dict(tau=True), "tau must be an integer"),
    (dict(loss="hinge"), "loss must be one of 'squared', 'logistic', 'absolute', 'squared_hinge'"),
    (dict(d=0), "d must be an integer >= 1"),
])
def test_bad_parameters_name_the_parameter(kwargs, message):
    arguments = {"d": 5, **kwargs}
    with pytest.raises(ValueError, match=message):
        AdaGrad(arguments.pop("d"), **arguments)


@pytest.mark.parametrize("make, message", [
    (lambda: OGD(3, eta=-1.0), "eta"),
    (lambda: Adam(3, beta1=1.0), r"beta1 must be in \[0, 1\)"),
    (lambda: Adam(3, beta2=1.5), "beta2"),
    (lambda: Adam(3, delta=0.0), "delta"),
    (lambda: OGD(3, loss=get_loss("squared")), "loss must be one of"),
])
def test_bad_baseline_parameters(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_same_input_same_numbers(name):
    first, second = warmed_up(MAKERS[name], n=40), warmed_up(MAKERS[name], n=40)
    assert_same_state(first.state_dict(), second.state_dict())


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.blas_kernels
def test_save_load_continue_equals_never_stopping(name):
    X = decaying_spectrum(40, 5, seed=16)
    y, _ = linear_regression_targets(X, seed=17)
    straight, stopped = MAKERS[name](), MAKERS[name]()
    straight.learn_many(X[:25], y[:25])
    stopped.learn_many(X[:25], y[:25])
    resumed = through_a_file(stopped)
    assert type(resumed) is type(straight)
    np.testing.assert_array_equal(straight.learn_many(X[25:], y[25:]),
                                  resumed.learn_many(X[25:], y[25:]))
    assert_same_state(straight.state_dict(), resumed.state_dict())


def test_state_dict_of_another_kind_is_refused():
    with pytest.raises(ValueError, match="cannot build"):
        AdaGrad.from_state_dict(OGD(3).state_dict())
    state = AdaGrad(3, variant="ffd", tau=2).state_dict()
    state["proximal.V"] = np.zeros((4, 4))
    with pytest.raises(ValueError, match="shape"):
        AdaGrad.from_state_dict(state)


def test_benchmark_script_runs_a_tiny_configuration():
    """benchmarks/adagrad_rounds.py imports and runs; only its correctness checks are asserted."""
    import importlib
    import sys
    from pathlib import Path

    folder = str(Path(__file__).resolve().parent.parent / "benchmarks")
    sys.path.insert(0, folder)
    try:
        bench = importlib.import_module("adagrad_rounds")
        result = bench.run(grid_d=(30, 60), grid_tau=(3, 4), full_rounds={30: 2}, check_rounds=3,
                           budget=1e-3, repeats=1, progress=False)
    finally:
        sys.path.remove(folder)
    assert result["all_checks_pass"]
    assert len(result["configs"]) == 4 and result["configs"][0]["full_us"] > 0
    assert {"tau_exponent", "d_exponent", "model_us"} <= set(result["fit"])
    assert "ADA-FFD cost" in bench.format_results(result)
