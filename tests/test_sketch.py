"""The guarantees of docs/algorithms.md sections 1, 2 and 6, asserted on random streams."""

import io

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import explorer.sketch.fd
import explorer.sketch.shrink
from explorer import (
    FrequentDirections,
    GeneralizedFrequentDirections,
    RandomProjectionSketch,
    Recorder,
    RobustFrequentDirections,
    load_state,
)
from state_checks import assert_same_state, through_a_file

TOL = 1e-8


@st.composite
def streams(draw, max_n=60, max_d=12):
    """A random stream A (n x d) with a random spectrum, plus m and the fast flag."""
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    m = draw(st.integers(2, 8))
    fast = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scales = np.exp(rng.uniform(-3, 3, size=d))  # spectra from flat to steep
    A = rng.standard_normal((n, d)) * scales
    if draw(st.booleans()):  # low rank: rank(A) < d when the rank is small
        r = draw(st.integers(1, d))
        A = rng.standard_normal((n, r)) @ rng.standard_normal((r, d))
    return A, m, fast


def tail_energy(A, k):
    sigma = np.linalg.svd(A, compute_uv=False)
    return float(np.sum(sigma[k:] ** 2))


def relative_tol(A):
    return TOL * max(1.0, np.linalg.norm(A) ** 2)


def sketch_of(cls, A, m, fast, **kwargs):
    sk = cls(A.shape[1], m, fast=fast, **kwargs)
    sk.extend(A)
    return sk


def check_fd_guarantees(A, m, sk, gram_b):
    """FD's guarantees (docs/algorithms.md section 1) for the rows A and a sketch of them
    whose B^T B is ``gram_b``."""
    error = A.T @ A - gram_b
    eigenvalues = np.linalg.eigvalsh(error)
    tol = relative_tol(A)
    assert eigenvalues.min() >= -tol  # A^T A - B^T B is PSD
    assert eigenvalues.max() <= sk.delta_total + tol  # ||A^T A - B^T B||_2 <= Delta
    for k in range(m):
        assert sk.delta_total <= tail_energy(A, k) / (m - k) + tol
    assert sk.delta_total <= (np.linalg.norm(A) ** 2 - np.trace(gram_b)) / m + tol
    assert sk.frobenius_squared == pytest.approx(np.linalg.norm(A) ** 2, rel=1e-9, abs=1e-300)


@given(streams())
def test_fd_error_is_psd_and_bounded_by_delta(case):
    A, m, fast = case
    sk = sketch_of(FrequentDirections, A, m, fast)
    check_fd_guarantees(A, m, sk, sk.gram())


@given(streams())
def test_rfd_error_is_two_sided_and_half_of_fd(case):
    A, m, fast = case
    alpha0 = 0.25
    sk = sketch_of(RobustFrequentDirections, A, m, fast, alpha0=alpha0)
    error = A.T @ A + alpha0 * np.eye(A.shape[1]) - sk.gram()
    eigenvalues = np.linalg.eigvalsh(error)
    tol = relative_tol(A)
    assert sk.alpha == pytest.approx(alpha0 + sk.delta_total / 2)
    assert eigenvalues.min() >= -(sk.alpha - alpha0) - tol
    assert eigenvalues.max() <= (sk.alpha - alpha0) + tol
    for k in range(m):
        assert np.abs(eigenvalues).max() <= tail_energy(A, k) / (2 * (m - k)) + tol


@given(streams())
def test_rfd_condition_number_theorem_4(case):
    A, m, fast = case
    alpha0 = 1e-2
    sk = sketch_of(RobustFrequentDirections, A, m, fast, alpha0=alpha0)
    identity = np.eye(A.shape[1])
    gram_b = sk.gram() - sk.alpha * identity
    kappa_rfd = np.linalg.cond(gram_b + sk.alpha * identity)
    kappa_fd = np.linalg.cond(gram_b + alpha0 * identity)
    assert kappa_rfd <= kappa_fd * (1 + 1e-6)
    if np.linalg.matrix_rank(A) < A.shape[1]:
        assert kappa_rfd <= np.linalg.cond(A.T @ A + alpha0 * identity) * (1 + 1e-6)


def test_theorem_4_needs_rank_deficiency():
    """Full-rank A, d = m = 3: kappa(M_RFD) <= kappa(M) can fail (docs/algorithms.md section 2)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        A = rng.standard_normal((3, 3))
        sk = sketch_of(RobustFrequentDirections, A, 3, False, alpha0=1e-3)
        if np.linalg.cond(sk.gram()) > np.linalg.cond(A.T @ A + 1e-3 * np.eye(3)):
            return
    pytest.fail("no full-rank counterexample to kappa(M_RFD) <= kappa(M) found")


@given(st.integers(2, 6), st.integers(0, 10_000), st.floats(0.0, 2.0))
def test_one_rfd_step_is_the_optimal_low_rank_plus_shift(m, seed, alpha0):
    """Theorems 1-2: the first shrink gives the best C C^T + s I, error (l_m - l_d) / 2."""
    rng = np.random.default_rng(seed)
    d = m + 3
    A = rng.standard_normal((m, d)) * np.exp(rng.uniform(-1, 1, d))
    target = A.T @ A + alpha0 * np.eye(d)
    eigenvalues = np.sort(np.linalg.eigvalsh(target))[::-1]
    sk = sketch_of(RobustFrequentDirections, A, m, False, alpha0=alpha0)
    achieved = np.linalg.norm(target - sk.gram(), 2)
    optimum = (eigenvalues[m - 1] - eigenvalues[-1]) / 2
    assert achieved == pytest.approx(optimum, rel=1e-7, abs=1e-9)
    # no other shift does better with the best rank-(m-1) part (a grid of rivals)
    top, basis = np.linalg.eigh(target)
    for shift in np.linspace(eigenvalues[-1], eigenvalues[0], 25):
        kept = np.maximum(top - shift, 0.0)
        kept[np.argsort(top)[: d - (m - 1)]] = 0.0
        rival = (basis * kept) @ basis.T + shift * np.eye(d)
        assert np.linalg.norm(target - rival, 2) >= optimum - 1e-9


@given(streams())
def test_fd_and_rfd_keep_the_same_matrix(case):
    A, m, fast = case
    fd = sketch_of(FrequentDirections, A, m, fast)
    rfd = sketch_of(RobustFrequentDirections, A, m, fast, alpha0=3.0)
    np.testing.assert_array_equal(fd.sketch, rfd.sketch)
    assert fd.delta_total == rfd.delta_total


@given(streams())
def test_extend_equals_update_row_by_row(case):
    A, m, fast = case
    A = A.copy()
    A[::4] = 0.0  # zero rows occupy no row of B but count as seen
    A[1::7] *= 1e-170  # rows whose squared norm underflows to 0 are not zero rows
    block = sketch_of(RobustFrequentDirections, A, m, fast, alpha0=0.5)
    rows = RobustFrequentDirections(A.shape[1], m, fast=fast, alpha0=0.5)
    for a in A:
        rows.update(a)
    np.testing.assert_array_equal(block.sketch, rows.sketch)
    assert (block.n_seen, block.n_shrinks, block.delta_total) == \
        (rows.n_seen, rows.n_shrinks, rows.delta_total)
    assert block.n_seen == A.shape[0]


@pytest.mark.parametrize("fast", [False, True])
def test_rows_past_the_kept_ones_are_exactly_zero(fast):
    """No 1e-8 "ghost" row survives a shrink (docs/algorithms.md section 1, step 3)."""
    rng = np.random.default_rng(0)
    sk = FrequentDirections(30, 5, fast=fast)
    for a in rng.standard_normal((200, 30)):
        sk.update(a)
        assert not np.any(sk.sketch[sk.rank:])
        assert np.all(np.any(sk.sketch[:sk.rank] != 0, axis=1))
    assert sk.rank <= sk.capacity - 1


@pytest.mark.parametrize("shape", [(6, 30), (30, 6), (5, 5)])
def test_svd_helper_gives_the_factors_of_wide_and_tall_buffers(shape):
    B = np.random.default_rng(0).standard_normal(shape)
    sigma, Vt = explorer.sketch.shrink._svd(B)
    np.testing.assert_allclose(sigma, np.linalg.svd(B, compute_uv=False))
    np.testing.assert_allclose((Vt.T * sigma**2) @ Vt, B.T @ B, atol=1e-12)
    np.testing.assert_allclose(Vt @ Vt.T, np.eye(min(shape)), atol=1e-12)


def test_exact_shrinks_every_row_and_fast_every_m_plus_1_rows():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((100, 20))
    assert sketch_of(FrequentDirections, A, 5, False).n_shrinks == 100 - 5 + 1
    # fast: first shrink at row 2m = 10, then every m + 1 = 6 rows
    assert sketch_of(FrequentDirections, A, 5, True).n_shrinks == 1 + (100 - 10) // 6


def test_fewer_columns_than_rows_only_compacts():
    """d < m: the shrink subtracts 0 and B^T B equals A^T A exactly (no information lost)."""
    rng = np.random.default_rng(2)
    A = rng.standard_normal((50, 3))
    for fast in (False, True):
        sk = sketch_of(RobustFrequentDirections, A, 6, fast)
        assert sk.delta_total == 0.0 and sk.alpha == 0.0
        np.testing.assert_allclose(sk.gram(), A.T @ A, rtol=1e-10, atol=1e-10)


def test_shrink_event_reports_the_spectrum_before_the_shrink():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((12, 8))
    sk = RobustFrequentDirections(8, 4, alpha0=1.0)
    sk.extend(A[:3])
    before = np.linalg.svd(np.vstack([sk.rows, A[3]]), compute_uv=False)
    recorder = Recorder()
    handle = sk.add_hook(recorder)
    sk.extend(A[3:])
    events = recorder.events("shrink")
    assert len(events) == 9 and [e.t for e in events] == list(range(4, 13))
    np.testing.assert_allclose(events[0].sigma, before)
    assert events[0].delta == pytest.approx(before[3] ** 2)
    columns = recorder.columns("shrink")
    np.testing.assert_allclose(columns["alpha"], 1.0 + np.cumsum(columns["delta"]) / 2)
    handle.remove()
    sk.update(A[0])
    assert len(recorder.events("shrink")) == 9  # removed hooks hear nothing


def test_no_event_is_built_without_a_listener(monkeypatch):
    def refuse(**fields):
        raise AssertionError("an event was built")

    monkeypatch.setattr(explorer.sketch.fd, "ShrinkEvent", refuse)
    X = np.random.default_rng(4).standard_normal((10, 5))
    FrequentDirections(5, 2).extend(X)
    GeneralizedFrequentDirections(5, 2).extend(X, -1.0)
    listened = FrequentDirections(5, 2)
    listened.add_hook(lambda event: None)
    with pytest.raises(AssertionError, match="an event was built"):
        listened.extend(X)


@given(streams(), st.integers(0, 2**32 - 1))
def test_gfd_bound_on_indefinite_streams(case, seed):
    A, m, fast = case
    weights = np.random.default_rng(seed).uniform(-2, 2, A.shape[0])
    weights[weights == 0] = 1.0
    sk = GeneralizedFrequentDirections(A.shape[1], m, fast=fast)
    sk.extend(A, weights)
    G = (A * weights[:, None]).T @ A
    error = np.linalg.norm(G - sk.gram(), 2)
    positive = A[weights > 0] * np.sqrt(weights[weights > 0])[:, None]
    negative = A[weights < 0] * np.sqrt(-weights[weights < 0])[:, None]
    tol = relative_tol(A) * 4
    assert error <= sk.delta_total + tol
    for k in range(m):
        tails = sum(tail_energy(H, k) if H.shape[0] else 0.0 for H in (positive, negative))
        assert sk.delta_total <= tails / (m - k) + tol


def test_gfd_forwards_shrinks_with_part_and_stream_time():
    sk = GeneralizedFrequentDirections(4, 2)
    recorder = Recorder()
    sk.add_hook(recorder)
    X = np.random.default_rng(5).standard_normal((8, 4))
    sk.extend(X, [1, -1, 1, -1, 1, -1, 1, -1])
    columns = recorder.columns("shrink")
    assert columns["part"].tolist() == ["+", "-", "+", "-", "+", "-"]
    assert columns["t"].tolist() == [3, 4, 5, 6, 7, 8]


def bad_rows(d):
    return [np.full(d, np.nan), np.r_[np.ones(d - 1), np.inf], np.ones(d + 1), np.ones((2, d)),
            "not a row", None]


@pytest.mark.parametrize("make", [
    lambda: FrequentDirections(4, 3),
    lambda: FrequentDirections(4, 3, fast=True),
    lambda: RobustFrequentDirections(4, 3, alpha0=0.1),
    lambda: RandomProjectionSketch(4, 3, seed=0),
])
def test_bad_rows_raise_and_leave_the_state_unchanged(make):
    sk = make()
    sk.extend(np.random.default_rng(6).standard_normal((7, 4)))
    before = sk.state_dict()
    for x in bad_rows(4):
        with pytest.raises(ValueError):
            sk.update(x)
    poisoned = np.ones((5, 4))
    poisoned[4, 2] = np.nan  # nothing half-applied: the good rows before it are not added
    with pytest.raises(ValueError, match="row 4"):
        sk.extend(poisoned)
    with pytest.raises(ValueError, match="4 columns"):
        sk.extend(np.ones((3, 5)))
    assert_same_state(before, sk.state_dict())


def test_gfd_rejects_bad_weights_unchanged():
    sk = GeneralizedFrequentDirections(3, 2)
    sk.extend(np.eye(3), [1.0, -1.0, 2.0])
    before = sk.state_dict()
    for s in (0.0, np.nan, np.inf, "x"):
        with pytest.raises(ValueError, match="s "):
            sk.update(np.ones(3), s)
    with pytest.raises(ValueError, match="one weight per row"):
        sk.extend(np.ones((3, 3)), [1.0, 2.0])
    with pytest.raises(ValueError):
        sk.extend(np.ones((2, 3)), [1.0, 0.0])
    assert_same_state(before, sk.state_dict())


@pytest.mark.parametrize("kwargs, message", [
    (dict(d=4, m=1), "m must be an integer >= 2"),
    (dict(d=0, m=3), "d must be an integer >= 1"),
    (dict(d=4, m=2.5), "m must be an integer"),
    (dict(d=4, m=3, alpha0=-1.0), r"alpha0 must be a finite number in \[0.0"),
    (dict(d=4, m=3, alpha0=np.nan), "alpha0"),
    (dict(d=4, m=3, fast="yes"), "fast must be True or False"),
])
def test_bad_parameters_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RobustFrequentDirections(**kwargs)


@pytest.mark.parametrize("make", [
    lambda: FrequentDirections(6, 3),
    lambda: RobustFrequentDirections(6, 3, alpha0=0.3, fast=True),
    lambda: GeneralizedFrequentDirections(6, 3, fast=True),
    lambda: RandomProjectionSketch(6, 3, seed=11),
])
@pytest.mark.blas_kernels
def test_save_load_continue_equals_never_stopping(make):
    rng = np.random.default_rng(8)
    A, B = rng.standard_normal((20, 6)), rng.standard_normal((20, 6))
    weights = rng.choice([-1.0, 2.0], size=20)
    args = (lambda X: (X, weights)) if isinstance(make(), GeneralizedFrequentDirections) \
        else (lambda X: (X,))
    straight = make()
    straight.extend(*args(A))
    stopped = make()
    stopped.extend(*args(A))
    resumed = through_a_file(stopped)
    straight.extend(*args(B))
    resumed.extend(*args(B))
    assert_same_state(straight.state_dict(), resumed.state_dict())


def test_load_state_refuses_unknown_or_foreign_state():
    with pytest.raises(ValueError, match="cannot build"):
        RobustFrequentDirections.from_state_dict(FrequentDirections(3, 2).state_dict())
    file = io.BytesIO()
    np.savez(file, kind="Nonsense")
    file.seek(0)
    with pytest.raises(ValueError, match="unknown state kind"):
        load_state(file)


@pytest.mark.blas_kernels
def test_random_projection_is_deterministic_by_seed_and_unbiased():
    A = np.random.default_rng(9).standard_normal((30, 5))
    first, second = (sketch_of_rp(A, seed=3) for _ in range(2))
    np.testing.assert_array_equal(first.sketch, second.sketch)
    assert not np.array_equal(first.sketch, sketch_of_rp(A, seed=4).sketch)
    average = np.mean([sketch_of_rp(A, seed=s).gram() for s in range(400)], axis=0)
    assert np.linalg.norm(average - A.T @ A) < 0.15 * np.linalg.norm(A.T @ A)


def sketch_of_rp(A, seed):
    sk = RandomProjectionSketch(A.shape[1], 8, seed=seed)
    sk.extend(A)
    return sk




# -- hyper-parameters: get_params / with_params (explorer.params.Tunable) ------------------

SKETCHES = [
    lambda: FrequentDirections(6, 3, fast=True),
    lambda: RobustFrequentDirections(6, 3, alpha0=0.3),
    lambda: GeneralizedFrequentDirections(6, 3),
    lambda: RandomProjectionSketch(6, 3, seed=11),
]


@pytest.mark.parametrize("make", SKETCHES)
def test_get_params_rebuilds_the_same_sketch(make):
    sk = make()
    twin = type(sk)(**sk.get_params())
    assert twin.get_params() == sk.get_params()
    assert_same_state(twin.state_dict(), make().state_dict())


@pytest.mark.parametrize("make, change", [
    (SKETCHES[0], dict(m=4)), (SKETCHES[1], dict(fast=True)),
    (SKETCHES[2], dict(d=5)), (SKETCHES[3], dict(seed=2)),
])
def test_with_params_refuses_what_fixes_the_buffer(make, change):
    sk = make()
    with pytest.raises(ValueError, match=f"cannot change {next(iter(change))} mid-stream"):
        sk.with_params(**change)


def test_rfd_alpha0_is_hot_and_continues_the_stream():
    """alpha0 changes alpha = alpha0 + Delta/2 and nothing else: B and Delta carry over,
    the original is untouched, and the stream goes on as for an RFD built with it."""
    rng = np.random.default_rng(4)
    A, C = rng.standard_normal((30, 6)), rng.standard_normal((10, 6))
    sk = RobustFrequentDirections(6, 3, alpha0=0.3)
    sk.extend(A)
    before = sk.state_dict()
    moved = sk.with_params(alpha0=2.0)
    assert_same_state(sk.state_dict(), before)
    assert moved.alpha0 == 2.0 and moved.alpha == 2.0 + sk.delta_total / 2
    np.testing.assert_array_equal(moved.rows, sk.rows)
    built = RobustFrequentDirections(6, 3, alpha0=2.0)
    built.extend(A)
    moved.extend(C)
    built.extend(C)
    assert_same_state(moved.state_dict(), built.state_dict())
    with pytest.raises(ValueError, match="alpha0"):
        sk.with_params(alpha0=-1.0)
    assert_same_state(sk.state_dict(), before)
