"""Convex FM learners (docs/algorithms.md section 6): S-FTRL on Generalized FD, FTRL, OGD.

The paper's guarantees and identities, asserted on random streams: GFD's error bound for
the sketch S-FTRL keeps, S-FTRL = FTRL once m >= d + 2, the prediction formula against an
explicit Theta; plus input formats, bad input, determinism, hooks and save/load.
"""

import importlib.util

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given
from hypothesis import strategies as st

from explorer import Recorder
from explorer.fm import (
    FTRLFM,
    OGDFM,
    SketchedFTRL,
    as_fm_row,
    augment,
    compact_theta,
    fm_predict,
    one_hot,
    progressive,
    split_theta,
    synthetic_ratings,
)
from explorer.hooks import StepRecord
from explorer.losses import get_loss
from state_checks import assert_same_state, through_a_file

TOL = 1e-8


@st.composite
def fm_streams(draw, max_n=80, max_d=14, sparse=None):
    """A random stream (rows, labels, d, m, fast, loss, eta); rows are (indices, values) pairs
    when sparse, dense vectors otherwise. Labels are off-centre, so q changes sign."""
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    m = draw(st.integers(2, 7))
    fast = draw(st.booleans())
    loss = draw(st.sampled_from(["squared", "logistic"]))
    sparse = draw(st.booleans()) if sparse is None else sparse
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        if sparse:
            nnz = int(rng.integers(0, min(d, 4) + 1))
            idx = rng.choice(d, size=nnz, replace=False)
            rows.append((idx, rng.choice([1.0, -0.5, 2.0], size=nnz)))
        else:
            rows.append(rng.standard_normal(d) * np.exp(rng.uniform(-1, 1, d)))
    if loss == "squared":
        labels = rng.normal(1.0, 2.0, n)
    else:
        labels = rng.choice([-1.0, 1.0], n)
    eta = float(draw(st.sampled_from([0.01, 0.05, 0.2])))
    return rows, labels, d, m, fast, loss, eta


def dense(row, d):
    if isinstance(row, tuple):
        x = np.zeros(d)
        x[row[0]] = row[1]
        return x
    return np.asarray(row, dtype=float)


def learn_all(learner, rows, labels):
    return [learner.learn(x, y) for x, y in zip(rows, labels)]


def record_gradients(learner, rows, labels):
    """Learn the stream; return the rows a_hat and the gradient scales q the learner used."""
    rec = Recorder(kinds=("step",))
    handle = learner.add_hook(rec)
    learn_all(learner, rows, labels)
    handle.remove()
    q = rec.columns("step")["gradient_scale"]
    A_hat = np.array([augment(dense(x, learner.d)) for x in rows])
    return A_hat, q


def tail(H, k):
    if H.shape[0] == 0:
        return 0.0
    sigma = np.linalg.svd(H, compute_uv=False)
    return float(np.sum(sigma[k:] ** 2))


# -- the paper's guarantees -------------------------------------------------------------------

@given(fm_streams())
def test_sftrl_sketch_obeys_the_gfd_bound(case):
    """||sum_t q_t a_hat a_hat^T - (B+^T B+ - B-^T B-)||_2 <= Delta+ + Delta- <= tails/(m-k)."""
    rows, labels, d, m, fast, loss, eta = case
    fm = SketchedFTRL(d, m=m, eta=eta, loss=loss, fast=fast)
    A_hat, q = record_gradients(fm, rows, labels)
    G = (A_hat * q[:, None]).T @ A_hat
    error = np.linalg.norm(G - fm.sketch.gram(), 2)
    H_plus = np.sqrt(q[q > 0])[:, None] * A_hat[q > 0]
    H_minus = np.sqrt(-q[q < 0])[:, None] * A_hat[q < 0]
    scale = max(1.0, np.linalg.norm(H_plus) ** 2 + np.linalg.norm(H_minus) ** 2)
    plus, minus = fm.sketch.positive, fm.sketch.negative
    assert fm.sketch.delta_total == pytest.approx(plus.delta_total + minus.delta_total)
    assert error <= fm.sketch.delta_total + TOL * scale
    for k in range(m):
        assert fm.sketch.delta_total <= (tail(H_plus, k) + tail(H_minus, k)) / (m - k) + TOL * scale
    # each part is an FD sketch of its own rows: H^T H - B^T B is PSD
    for H, part in ((H_plus, plus), (H_minus, minus)):
        gap = H.T @ H - part.gram() if H.size else -part.gram()
        assert np.linalg.eigvalsh(gap).min() >= -TOL * scale
        assert part.rank <= part.capacity - 1


@given(fm_streams())
def test_sftrl_with_m_at_least_d_plus_2_equals_ftrl(case):
    """Each part keeps m-1 >= d+1 rows: nothing of the (d+1)-dimensional a_hat is lost."""
    rows, labels, d, _, fast, loss, eta = case
    sketched = SketchedFTRL(d, m=d + 2, eta=eta, loss=loss, fast=fast)
    exact = FTRLFM(d, eta=eta, loss=loss)
    for x, y in zip(rows, labels):
        assert sketched.learn(x, y) == pytest.approx(exact.learn(x, y), rel=1e-9, abs=1e-9)
    scale = max(1.0, np.abs(exact.theta()).max())
    np.testing.assert_allclose(sketched.theta(), exact.theta(), rtol=0, atol=1e-9 * scale)
    assert sketched.sketch.delta_total <= 1e-9 * scale


@given(fm_streams(max_d=8), st.integers(0, 2**32 - 1))
def test_prediction_is_a_hat_theta_a_hat_with_theta_formed(case, seed):
    rows, labels, d, m, fast, loss, eta = case
    x = np.random.default_rng(seed).standard_normal(d)
    for fm in (SketchedFTRL(d, m=m, eta=eta, loss=loss, fast=fast), FTRLFM(d, eta=eta, loss=loss),
               OGDFM(d, eta=eta, loss=loss)):
        learn_all(fm, rows, labels)
        Theta = fm.theta()
        assert Theta.shape == (d + 1, d + 1)
        np.testing.assert_allclose(Theta, Theta.T, atol=1e-12 * max(1.0, np.abs(Theta).max()))
        w0, w, X = split_theta(Theta)
        expected = augment(x) @ Theta @ augment(x)
        tol = 1e-9 * max(1.0, np.abs(Theta).sum() * (1 + np.abs(x).max()) ** 2)
        assert fm.predict(x) == pytest.approx(expected, abs=tol)
        assert fm_predict(w0, w, X, x) == pytest.approx(expected, abs=tol)
        np.testing.assert_allclose(compact_theta(w0, w, X), Theta, atol=1e-12 * max(1.0, np.abs(Theta).max()))


def test_sftrl_prediction_never_forms_theta(monkeypatch):
    """predict and learn use ||B a_hat||^2 only: gram() (the d x d product) is never called."""
    fm = SketchedFTRL(3000, m=5)
    monkeypatch.setattr(type(fm.sketch), "gram", lambda self: pytest.fail("Theta was formed"))
    data = synthetic_ratings(300, n_users=1000, n_items=2000, seed=3)
    progressive(fm, data.X, data.y)
    fm.learn(([0, 1500], [1.0, 1.0]), 4.0)
    assert np.isfinite(fm.predict(([2, 2999], [1.0, 1.0])))


# -- the losses, the step sizes, the learners' agreement -----------------------------------------

def test_squared_loss_is_half_of_losses_py_and_logistic_is_losses_py():
    squared, logistic = get_loss("squared"), get_loss("logistic")
    fm = FTRLFM(2, eta=0.1)
    assert fm.learn([1.0, 0.0], 3.0) == pytest.approx(0.5 * float(squared.value(0.0, 3.0)))  # 4.5
    clf = FTRLFM(2, eta=0.1, loss="logistic")
    assert clf.learn([1.0, 0.0], -1.0) == pytest.approx(float(logistic.value(0.0, -1.0)))
    # the gradient scale q = z - y (not 2(z - y)): Theta[0, 0] = -eta * q = 0.3
    assert fm.theta()[0, 0] == pytest.approx(0.3)
    assert clf.theta()[0, 0] == pytest.approx(-0.1 * float(logistic.derivative(0.0, -1.0)))


def test_ogd_steps_shrink_like_one_over_sqrt_t():
    fm = OGDFM(1, eta=1.0)
    fm.learn([0.0], 1.0)             # z = 0, q = -1, step 1: Theta[1, 1] = 1
    assert fm.theta()[1, 1] == pytest.approx(1.0)
    fm.learn([0.0], 0.0)             # z = 1, q = 1, step 1/sqrt(2)
    assert fm.theta()[1, 1] == pytest.approx(1.0 - 1 / np.sqrt(2))


@given(fm_streams(sparse=False))
def test_dense_blas_update_equals_sparse_update(case):
    rows, labels, d, m, fast, loss, eta = case
    for cls in (FTRLFM, OGDFM):
        a, b = cls(d, eta=eta, loss=loss), cls(d, eta=eta, loss=loss)
        for x, y in zip(rows, labels):
            assert a.learn(x, y) == pytest.approx(b.learn((np.arange(d), x), y), rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(a.theta(), b.theta(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("fast", [True, False])
def test_sparse_gram_shrink_equals_the_dense_one(fast):
    """A wide sketch (d+1 >> 2m) fed one-hot rows as pairs or as dense vectors: same B^T B."""
    data = synthetic_ratings(600, n_users=30, n_items=50, seed=5)
    d = data.X.shape[1]
    sparse_fm, dense_fm = SketchedFTRL(d, m=4, fast=fast), SketchedFTRL(d, m=4, fast=fast)
    X = data.X.toarray()
    for t in range(600):
        row = data.X[[t]]
        a = sparse_fm.learn((row.indices, row.data), data.y[t])
        b = dense_fm.learn(X[t], data.y[t])
        assert a == pytest.approx(b, rel=1e-9, abs=1e-9)
    assert sparse_fm.sketch.positive.n_shrinks > 10
    np.testing.assert_allclose(sparse_fm.sketch.gram(), dense_fm.sketch.gram(), atol=1e-9)


def test_input_formats_agree():
    d = 6
    formats = [
        np.array([0.0, 2.0, 0.0, 0.0, -1.0, 0.0]),
        ([1, 4], [2.0, -1.0]),
        ([4, 1], np.array([-1.0, 2.0])),
        scipy.sparse.csr_array(np.array([[0.0, 2.0, 0.0, 0.0, -1.0, 0.0]])),
        scipy.sparse.coo_matrix(([2.0, -1.0], ([0, 0], [1, 4])), shape=(1, d)),
        scipy.sparse.coo_array(np.array([0.0, 2.0, 0.0, 0.0, -1.0, 0.0])),
    ]
    losses, predictions = [], []
    for x in formats:
        fm = SketchedFTRL(d, m=3, eta=0.1)
        losses.append([fm.learn(x, 3.0), fm.learn(x, -1.0), fm.learn(x, 2.0)])
        predictions.append(fm.predict(x))
    for other in losses[1:]:
        np.testing.assert_allclose(other, losses[0], rtol=1e-12)
    np.testing.assert_allclose(predictions, predictions[0], rtol=1e-12)
    # scipy duplicates are summed, as scipy itself does
    idx, val = as_fm_row(scipy.sparse.coo_matrix(([1.0, 1.0], ([0, 0], [2, 2])), shape=(1, d)), d)
    assert idx.tolist() == [2] and val.tolist() == [2.0]
    # a tuple of two numbers is a dense row of length 2, not a pair
    assert as_fm_row((0.5, 1.5), 2)[0] is None


@pytest.mark.parametrize("make", [
    lambda d: SketchedFTRL(d, m=3, eta=0.05),
    lambda d: SketchedFTRL(d, m=3, eta=0.05, fast=False),
    lambda d: FTRLFM(d, eta=0.05),
    lambda d: OGDFM(d, eta=0.5),
])
def test_progressive_equals_the_learn_loop(make):
    data = synthetic_ratings(400, n_users=20, n_items=30, seed=2)
    d = data.X.shape[1]
    looped, run = make(d), make(d)
    losses = [looped.learn(data.X[[t]], data.y[t]) for t in range(400)]
    result = progressive(run, data.X, data.y)
    np.testing.assert_array_equal(result["loss"], losses)
    np.testing.assert_allclose(result["loss"], (result["prediction"] - data.y) ** 2 / 2, rtol=1e-12)
    np.testing.assert_array_equal(result["gradient_scale"], result["prediction"] - data.y)
    np.testing.assert_array_equal(result["t"], np.arange(1, 401))
    assert result["seconds"][0] > 0 and np.all(np.diff(result["seconds"]) >= 0)
    dense_run = progressive(make(d), data.X.toarray(), data.y)
    np.testing.assert_allclose(dense_run["prediction"], result["prediction"], rtol=1e-9, atol=1e-9)
    more = progressive(run, data.X[:5], data.y[:5])  # t goes on from the learner's round
    np.testing.assert_array_equal(more["t"], np.arange(401, 406))


# -- bad input, determinism, save/load, hooks ------------------------------------------------------

LEARNERS = [
    lambda: SketchedFTRL(5, m=2, eta=0.1),
    lambda: SketchedFTRL(5, m=2, eta=0.1, fast=False),
    lambda: SketchedFTRL(5, m=3, eta=0.1, loss="logistic"),
    lambda: FTRLFM(5, eta=0.1),
    lambda: OGDFM(5, eta=0.1, loss="logistic"),
]


def warmed(make):
    fm = make()
    rng = np.random.default_rng(0)
    for t in range(12):
        x = (rng.choice(5, 2, replace=False), np.array([1.0, 0.5])) if t % 2 else rng.standard_normal(5)
        fm.learn(x, 1.0 if t % 3 else -1.0)
    return fm


BAD_ROWS = [
    (np.ones(4), "length d = 5"),
    (np.array([1.0, np.nan, 0, 0, 0]), "NaN or inf"),
    (([1, 5], [1.0, 1.0]), r"\[0, 4\]"),
    (([-1], [1.0]), r"\[0, 4\]"),
    (([1, 1], [1.0, 1.0]), "must not repeat"),
    (([0.5, 1.0], [1.0, 1.0]), "integers"),
    (([1, 2], [1.0]), "same length"),
    (([1, 2], [1.0, np.inf]), "NaN or inf"),
    ((["a", "b"], [1.0, 1.0]), "integers"),
    (scipy.sparse.csr_array(np.ones((2, 5))), "shape"),
    (scipy.sparse.csr_array(np.ones((1, 4))), "shape"),
    ("text", "numeric"),
]


@pytest.mark.parametrize("make", LEARNERS)
@pytest.mark.parametrize("x, message", BAD_ROWS)
def test_bad_rows_raise_and_leave_the_state_unchanged(make, x, message):
    fm, reference = warmed(make), warmed(make)
    with pytest.raises(ValueError, match=message):
        fm.learn(x, 1.0)
    with pytest.raises(ValueError, match=message):
        fm.predict(x)
    assert_same_state(fm.state_dict(), reference.state_dict())


@pytest.mark.parametrize("make", LEARNERS)
def test_bad_labels_raise_and_leave_the_state_unchanged(make):
    fm, reference = warmed(make), warmed(make)
    bad = [np.nan, np.inf, "4", None]
    if fm.loss == "logistic":
        bad += [0.0, 2.0]
    for y in bad:
        with pytest.raises(ValueError, match="y"):
            fm.learn(np.ones(5), y)
    with pytest.raises(ValueError, match=r"y\[1\]"):
        progressive(fm, np.ones((3, 5)), [1.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="columns"):
        progressive(fm, scipy.sparse.csr_array(np.ones((3, 4))), [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="one label per row"):
        progressive(fm, np.ones((3, 5)), [1.0, 1.0])
    assert_same_state(fm.state_dict(), reference.state_dict())


def test_divergence_raises_before_changing_the_state():
    fm = FTRLFM(1, eta=1e140)
    fm.learn([1.0], 1e10)  # Theta's entries become 1e150: the next prediction is 4e150
    reference = fm.state_dict()
    with pytest.raises(ValueError, match="diverged; lower eta") as error:
        fm.learn([1.0], 1.0)
    assert isinstance(error.value, FloatingPointError)  # what the notebooks catch
    assert (error.value.row, error.value.t) == (0, 2)
    assert_same_state(fm.state_dict(), FTRLFM.from_state_dict(reference).state_dict())


@pytest.mark.parametrize("kwargs, message", [
    (dict(d=0), "d must be an integer >= 1"),
    (dict(d=2.5), "d must be an integer"),
    (dict(d=3, m=1), "m must be an integer >= 2"),
    (dict(d=3, eta=0.0), r"eta must be a finite number in \(0.0"),
    (dict(d=3, eta=-1.0), "eta"),
    (dict(d=3, eta=np.nan), "eta"),
    (dict(d=3, loss="hinge"), "loss must be one of 'squared', 'logistic', got 'hinge'"),
    (dict(d=3, fast="yes"), "fast must be True or False"),
])
def test_bad_parameters_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SketchedFTRL(**kwargs)
    full_kwargs = {k: v for k, v in kwargs.items() if k not in ("m", "fast")}
    if len(full_kwargs) == len(kwargs):
        for cls in (FTRLFM, OGDFM):
            with pytest.raises(ValueError, match=message):
                cls(**full_kwargs)


def test_defaults_are_the_authors_settings():
    assert SketchedFTRL(3).eta == 0.02 and SketchedFTRL(3, loss="logistic").eta == 0.25
    assert (SketchedFTRL(3).m, SketchedFTRL(3).fast) == (10, True)
    assert FTRLFM(3).eta == 0.02 and OGDFM(3).eta == 0.5


@pytest.mark.blas_kernels
def test_same_data_same_numbers_bit_for_bit():
    first = synthetic_ratings(3000, n_users=60, n_items=90, seed=11)
    second = synthetic_ratings(3000, n_users=60, n_items=90, seed=11)
    assert (first.X != second.X).nnz == 0 and np.array_equal(first.y, second.y)
    assert not np.array_equal(first.y, synthetic_ratings(3000, n_users=60, n_items=90, seed=12).y)
    d = first.X.shape[1]
    for make in (lambda: SketchedFTRL(d, m=5), lambda: FTRLFM(d), lambda: OGDFM(d)):
        a, b = progressive(make(), first.X, first.y), progressive(make(), second.X, second.y)
        np.testing.assert_array_equal(a["prediction"], b["prediction"])


@pytest.mark.parametrize("make", LEARNERS)
@pytest.mark.blas_kernels
def test_save_load_continue_equals_never_stopping(make):
    rng = np.random.default_rng(4)
    rows = [(rng.choice(5, 2, replace=False), np.array([1.0, -1.0])) if t % 3 else rng.standard_normal(5)
            for t in range(60)]
    labels = rng.choice([-1.0, 1.0], 60)
    straight = make()
    expected = learn_all(straight, rows, labels)
    first = make()
    got = learn_all(first, rows[:27], labels[:27])
    resumed = through_a_file(first)
    assert type(resumed) is type(first) and resumed.t == 27
    got += learn_all(resumed, rows[27:], labels[27:])
    assert got == expected  # bit for bit
    assert_same_state(resumed.state_dict(), straight.state_dict())


def test_load_refuses_a_foreign_or_mismatched_state():
    state = SketchedFTRL(4, m=3).state_dict()
    with pytest.raises(ValueError, match="cannot build a FTRLFM"):
        FTRLFM.from_state_dict(state)
    state["sketch.d"] = 9
    with pytest.raises(ValueError, match="'d' must be|does not fit"):
        SketchedFTRL.from_state_dict(state)
    full = FTRLFM(4).state_dict()
    full["theta"] = np.zeros((3, 3))
    with pytest.raises(ValueError, match=r"'theta' must be an array of shape \(5, 5\)"):
        FTRLFM.from_state_dict(full)


def test_hooks_report_steps_with_ranks_and_shrinks_with_parts():
    data = synthetic_ratings(500, n_users=25, n_items=40, seed=8)
    fm = SketchedFTRL(data.X.shape[1], m=4)
    rec = Recorder()
    handle = fm.add_hook(rec)
    run = progressive(fm, data.X, data.y)
    steps, shrinks = rec.columns("step"), rec.columns("shrink")
    assert type(rec.events("step")[0]) is StepRecord
    np.testing.assert_array_equal(steps["t"], np.arange(1, 501))
    np.testing.assert_array_equal(steps["loss"], run["loss"])
    np.testing.assert_array_equal(steps["prediction"], run["prediction"])
    np.testing.assert_array_equal(steps["gradient_scale"], run["gradient_scale"])
    np.testing.assert_allclose(steps["gradient_scale"], run["prediction"] - data.y)
    plus, minus = np.array(steps["part_ranks"].tolist()).T
    assert plus.max() <= 2 * 4 - 1 and minus.max() <= 2 * 4 - 1
    np.testing.assert_array_equal(steps["rank"], plus + minus)
    assert (plus[-1], minus[-1]) == (fm.sketch.positive.rank, fm.sketch.negative.rank)
    shrunk = [event.t for event in rec.events("step") if event.shrink is not None]
    assert len(shrunk) == len(np.unique(shrinks["t"]))  # one shrink at most per round
    np.testing.assert_array_equal(shrunk, np.unique(shrinks["t"]))
    assert set(shrinks["part"].tolist()) == {"+", "-"}
    n_shrinks = fm.sketch.positive.n_shrinks + fm.sketch.negative.n_shrinks
    assert len(shrinks["t"]) == n_shrinks and np.all(np.diff(shrinks["t"]) >= 0)
    assert shrinks["t"].max() <= 500
    assert shrinks["delta"].sum() == pytest.approx(fm.sketch.delta_total)
    assert np.all(np.diff(shrinks["sigma"], axis=1)[~np.isnan(np.diff(shrinks["sigma"], axis=1))] <= 1e-12)
    handle.remove()
    fm.learn(data.X[[0]], 3.0)
    assert len(rec.events("step")) == 500


def test_step_is_the_round_learn_plays_with_its_record():
    data = synthetic_ratings(140, n_users=10, n_items=15, seed=5)
    stepped, learnt = SketchedFTRL(25, m=3), SketchedFTRL(25, m=3)
    shrinks = 0
    for t in range(140):
        x = (data.X.indices[2 * t:2 * t + 2], data.X.data[2 * t:2 * t + 2])
        record = stepped.step(x, data.y[t])
        assert record.loss == learnt.learn(x, data.y[t]) and record.t == t + 1
        assert record.gradient_scale == record.prediction - data.y[t]
        assert record.part_ranks == (stepped.sketch.positive.rank, stepped.sketch.negative.rank)
        assert record.rank == sum(record.part_ranks)
        if record.shrink is not None:
            shrinks += 1
            assert record.shrink.kept <= 2 and record.shrink.delta == pytest.approx(record.shrink.squared[2])
    assert shrinks == stepped.sketch.positive.n_shrinks + stepped.sketch.negative.n_shrinks > 0
    assert_same_state(stepped.state_dict(), learnt.state_dict())
    record = FTRLFM(4).step(([0], [1.0]), 2.0)
    assert (record.prediction, record.gradient_scale) == (0.0, -2.0)
    assert record.shrink is None and record.part_ranks is None and record.rank is None


@pytest.mark.parametrize("make", [lambda: SketchedFTRL(25, m=3), lambda: FTRLFM(25), lambda: OGDFM(25)])
def test_with_params_eta_continues_the_stream(make):
    """S-FTRL and FTRL play -eta * (sum of past gradients): a new eta rescales the Theta they
    play; OGD's eta scales the steps to come only. The original learner is untouched."""
    data = synthetic_ratings(100, n_users=10, n_items=15, seed=6)
    fm = make()
    progressive(fm, data.X[:60], data.y[:60])
    theta, state = fm.theta(), fm.state_dict()
    faster = fm.with_params(eta=fm.eta * 4)
    assert faster.t == 60 and faster.get_params() == {**fm.get_params(), "eta": fm.eta * 4}
    expected = theta if isinstance(fm, OGDFM) else 4 * theta
    np.testing.assert_allclose(faster.theta(), expected, rtol=1e-13, atol=1e-15)
    assert_same_state(fm.state_dict(), state)
    progressive(faster, data.X[60:], data.y[60:])
    assert faster.t == 100 and fm.t == 60
    with pytest.raises(AttributeError):
        fm.eta = 1.0


def test_no_event_is_built_without_a_listener(monkeypatch):
    import explorer.fm.convex as convex
    import explorer.fm.sftrl as sftrl
    import explorer.sketch.fd as sketch

    def refuse(*args, **kwargs):
        raise AssertionError("an event was built with no hook attached")

    for module in (convex, sftrl):  # the modules whose rounds build a StepRecord
        monkeypatch.setattr(module, "StepRecord", refuse)
    monkeypatch.setattr(sketch, "ShrinkEvent", refuse)
    data = synthetic_ratings(200, n_users=20, n_items=15, seed=1)
    for fm in (SketchedFTRL(35, m=2), FTRLFM(35)):
        progressive(fm, data.X, data.y)


# -- data -------------------------------------------------------------------------------------

def test_one_hot_and_synthetic_ratings_shapes_and_errors():
    X = one_hot([0, 1], [2, 0], n_users=2, n_items=3)
    assert X.toarray().tolist() == [[1, 0, 0, 0, 1], [0, 1, 1, 0, 0]]
    with pytest.raises(ValueError, match="users must lie"):
        one_hot([2], [0], n_users=2, n_items=3)
    with pytest.raises(ValueError, match="n_items"):
        one_hot([0], [0], n_users=2, n_items=0)
    data = synthetic_ratings(5000, seed=0)
    assert data.X.shape == (5000, 943 + 1682) and set(np.unique(data.y)) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert np.all(np.diff(data.X.indptr) == 2)
    pairs = data.users * 1682 + data.items
    assert np.unique(pairs).size == 5000  # each pair rated once
    assert 3.0 < data.y.mean() < 4.0
    with pytest.raises(ValueError, match="n must be at most"):
        synthetic_ratings(7, n_users=2, n_items=3)


@pytest.mark.skipif(importlib.util.find_spec("recbole") is None,
                    reason="MovieLens-100K ships in recbole: pip install --no-deps recbole==1.2.1")
def test_movielens_100k_is_time_ordered_one_hot():
    from explorer.fm import movielens_100k

    data = movielens_100k()
    assert data.X.shape == (100_000, 2625) and (data.n_users, data.n_items) == (943, 1682)
    assert np.all(np.diff(data.timestamps) >= 0)
    assert round(float(data.y.mean()), 2) == 3.53
    assert movielens_100k(order="file").users[0] == 195  # user 196, the file's first line
    with pytest.raises(ValueError, match="order"):
        movielens_100k(order="random")


@pytest.mark.skipif(importlib.util.find_spec("dmba") is None,
                    reason="Spambase ships in dmba: pip install --no-deps dmba==0.2.4")
def test_spambase_labels():
    from explorer.fm import spambase

    X, y = spambase()
    assert X.shape == (4601, 57) and set(np.unique(y)) == {-1.0, 1.0}
    assert int((y == 1).sum()) == 1813


def test_movielens_latest_small_is_one_hot_half_stars():
    from explorer.fm import movielens_latest_small

    data = movielens_latest_small()
    assert data.X.shape == (100_004, 9737) and (data.n_users, data.n_items) == (671, 9066)
    assert np.all(np.diff(data.timestamps) >= 0)
    assert set(np.unique(data.y)) == set(np.arange(1, 11) / 2)
    assert set(np.diff(data.X.indptr)) == {2}
    by_file = movielens_latest_small(order="file")
    assert np.all(np.diff(by_file.users) >= 0)  # the table is sorted by user
    assert sorted(by_file.y) == sorted(data.y)
    with pytest.raises(ValueError, match="order"):
        movielens_latest_small(order="random")


def test_most_active_keeps_the_densest_corner_in_order():
    from explorer.fm import most_active

    data = synthetic_ratings(2000, n_users=40, n_items=60, seed=5)
    core = most_active(data, n_users=8, n_items=12)
    top_users = np.argsort(-np.bincount(data.users, minlength=40), kind="stable")[:8]
    top_items = np.argsort(-np.bincount(data.items, minlength=60), kind="stable")[:12]
    keep = np.isin(data.users, top_users) & np.isin(data.items, top_items)
    assert core.X.shape == (int(keep.sum()), 20) and core.n_users == 8 and core.n_items == 12
    np.testing.assert_array_equal(core.y, data.y[keep])  # same ratings, same order
    np.testing.assert_array_equal(np.sort(top_users)[core.users], data.users[keep])  # renumbered in id order
    np.testing.assert_array_equal(np.sort(top_items)[core.items], data.items[keep])
    np.testing.assert_array_equal(core.X.toarray(), one_hot(core.users, core.items, 8, 12).toarray())
    with pytest.raises(ValueError, match="n_users and n_items must be at most 40 and 60"):
        most_active(data, n_users=41, n_items=5)
