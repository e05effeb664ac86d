"""explorer.metrics against brute-force numpy, and the papers' guarantees read through it."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer import (
    FrequentDirections,
    GeneralizedFrequentDirections,
    RandomProjectionSketch,
    RobustFrequentDirections,
)
from explorer.metrics import (
    best_fd_bound,
    best_fd_bound_from_eigenvalues,
    condition_number,
    condition_number_from_eigenvalues,
    covariance_error,
    exact_condition_number,
    fd_bound,
    gram_covariance_error,
    gram_eigenvalues,
    relative_spectral_error,
    rfd_bound,
    sketch_condition_numbers,
    tail_energy,
)

seeds = st.integers(0, 2**32 - 1)


def random_stream(seed, n, d, rank=None):
    rng = np.random.default_rng(seed)
    if rank is None:
        return rng.standard_normal((n, d)) * rng.uniform(0.1, 3.0, size=d)
    return rng.standard_normal((n, rank)) @ rng.standard_normal((rank, d))


def spectral_norm(M):
    return np.max(np.abs(np.linalg.eigvalsh(M)))


def sketched(cls, X, m, **kwargs):
    sk = cls(X.shape[1], m, **kwargs)
    sk.extend(X)
    return sk


# -- covariance_error --------------------------------------------------------------------

@given(seed=seeds, n=st.integers(1, 40), d=st.integers(1, 12), m=st.integers(2, 8),
       alpha0=st.sampled_from([0.0, 1e-3, 2.0]), fast=st.booleans())
def test_covariance_error_matches_dense_error(seed, n, d, m, alpha0, fast):
    X = random_stream(seed, n, d)
    fd = sketched(FrequentDirections, X, m, fast=fast)
    rfd = sketched(RobustFrequentDirections, X, m, alpha0=alpha0, fast=fast)
    target = X.T @ X
    assert covariance_error(X, fd) == pytest.approx(spectral_norm(target - fd.gram()), rel=1e-9, abs=1e-9)
    assert covariance_error(X, rfd) == pytest.approx(
        spectral_norm(target + alpha0 * np.eye(d) - rfd.gram()), rel=1e-9, abs=1e-9)


@given(seed=seeds, n=st.integers(1, 40), d=st.integers(1, 12), m=st.integers(2, 8))
def test_fd_and_rfd_guarantees(seed, n, d, m):
    """FD: error <= Delta <= bound for every k; RFD: error <= Delta / 2 <= half the bound."""
    X = random_stream(seed, n, d)
    fd = sketched(FrequentDirections, X, m)
    rfd = sketched(RobustFrequentDirections, X, m, alpha0=0.5)
    slack = 1e-9 * (1 + np.sum(X**2))
    assert covariance_error(X, fd) <= fd.delta_total + slack
    assert covariance_error(X, rfd) <= rfd.delta_total / 2 + slack
    assert fd.delta_total <= best_fd_bound(X, m) + slack
    for k in range(m):
        assert fd.delta_total <= fd_bound(X, m, k) + slack
        assert rfd.delta_total / 2 <= rfd_bound(X, m, k) + slack


@given(seed=seeds, n=st.integers(1, 30), d=st.integers(1, 10), m=st.integers(2, 6))
def test_covariance_error_for_generalized_fd(seed, n, d, m):
    X = random_stream(seed, n, d)
    s = np.random.default_rng(seed).choice([-2.0, -0.5, 1.0, 3.0], size=n)
    gfd = GeneralizedFrequentDirections(d, m)
    gfd.extend(X, s)
    target = (X.T * s) @ X
    assert covariance_error(X, gfd, weights=s) == pytest.approx(
        spectral_norm(target - gfd.gram()), rel=1e-9, abs=1e-9)


def test_covariance_error_for_random_projection():
    X = random_stream(3, 50, 8)
    rp = sketched(RandomProjectionSketch, X, 4, seed=0)
    assert covariance_error(X, rp) == pytest.approx(spectral_norm(X.T @ X - rp.gram()), rel=1e-10)


@pytest.mark.parametrize("make", [
    lambda X: sketched(FrequentDirections, X, 20),
    lambda X: sketched(RobustFrequentDirections, X, 20, alpha0=0.3),
    lambda X: sketched(RobustFrequentDirections, X, 15, fast=True),
])
def test_lanczos_agrees_with_exact_at_d_600(make):
    X = random_stream(7, 250, 600)
    sk = make(X)
    exact = covariance_error(X, sk, method="exact")
    assert covariance_error(X, sk, method="lanczos") == pytest.approx(exact, rel=1e-6)
    assert covariance_error(X, sk) == pytest.approx(exact, rel=1e-6)  # auto: Lanczos above d = 500


def test_lanczos_agrees_with_exact_for_generalized_fd():
    X = random_stream(8, 200, 600)
    s = np.random.default_rng(8).choice([-1.0, 2.0], size=200)
    gfd = GeneralizedFrequentDirections(600, 10)
    gfd.extend(X, s)
    exact = covariance_error(X, gfd, weights=s, method="exact")
    assert covariance_error(X, gfd, weights=s, method="lanczos") == pytest.approx(exact, rel=1e-6)


def test_lanczos_of_an_exact_sketch_is_zero():
    """No shrink yet: the error matrix is exactly 0, which ARPACK alone would refuse."""
    X = random_stream(1, 5, 600)
    assert covariance_error(X, sketched(FrequentDirections, X, 10), method="lanczos") == 0.0


def test_relative_spectral_error_is_the_papers_measure():
    X = random_stream(2, 60, 9)
    for sk in (sketched(FrequentDirections, X, 4), sketched(RobustFrequentDirections, X, 4, alpha0=5.0)):
        expected = covariance_error(X, sk) / np.linalg.norm(X.T @ X, 2)
        assert relative_spectral_error(X, sk) == pytest.approx(expected, rel=1e-10)
        assert relative_spectral_error(X, sk, method="lanczos") == pytest.approx(expected, rel=1e-8)


def test_relative_spectral_error_of_zero_rows_is_refused():
    with pytest.raises(ValueError, match="undefined"):
        relative_spectral_error(np.zeros((3, 4)), sketched(FrequentDirections, np.zeros((3, 4)), 2))


# -- validation ------------------------------------------------------------------------------

@pytest.fixture
def fd_and_rows():
    X = random_stream(0, 12, 5)
    return X, sketched(FrequentDirections, X, 3)


@pytest.mark.parametrize("A, match", [
    (np.ones((12, 4)), "d = 5 columns"),
    (np.ones((2, 3, 5)), "d = 5 columns"),
    (np.ones((11, 5)), "has 11 rows but the sketch has seen 12"),
    (np.full((12, 5), np.nan), "NaN"),
    ("rows", "numeric"),
])
def test_covariance_error_refuses_bad_rows(fd_and_rows, A, match):
    _, sk = fd_and_rows
    with pytest.raises(ValueError, match=match):
        covariance_error(A, sk)


def test_covariance_error_refuses_bad_method_and_weights(fd_and_rows):
    X, sk = fd_and_rows
    with pytest.raises(ValueError, match="method must be one of"):
        covariance_error(X, sk, method="svd")
    with pytest.raises(ValueError, match="weights must be 12 finite numbers"):
        covariance_error(X, sk, weights=np.ones(3))
    with pytest.raises(ValueError, match="weights must be 12 finite numbers"):
        covariance_error(X, sk, weights=np.full(12, np.inf))
    with pytest.raises(ValueError, match="sketch with a dimension d"):
        covariance_error(X, object())


def test_generalized_fd_needs_its_weights():
    gfd = GeneralizedFrequentDirections(3, 2)
    gfd.extend(np.eye(3), [1.0, -1.0, 2.0])
    with pytest.raises(ValueError, match="pass weights=s"):
        covariance_error(np.eye(3), gfd)


# -- bounds ----------------------------------------------------------------------------------

@given(seed=seeds, n=st.integers(1, 20), d=st.integers(1, 10), k=st.integers(0, 12))
def test_tail_energy_is_the_truncated_svd_residual(seed, n, d, k):
    A = random_stream(seed, n, d)
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    A_k = (U[:, :k] * s[:k]) @ Vt[:k]
    assert tail_energy(A, k) == pytest.approx(np.sum((A - A_k) ** 2), rel=1e-9, abs=1e-9)


@given(seed=seeds, n=st.integers(1, 20), d=st.integers(1, 10), m=st.integers(1, 8))
def test_best_fd_bound_is_the_minimum_over_k(seed, n, d, m):
    A = random_stream(seed, n, d)
    bounds = [fd_bound(A, m, k) for k in range(m)]
    assert best_fd_bound(A, m) == pytest.approx(min(bounds), rel=1e-12, abs=1e-12)
    assert all(rfd_bound(A, m, k) == pytest.approx(b / 2) for k, b in enumerate(bounds))


def test_bounds_are_positive_below_the_rank():
    A = random_stream(4, 30, 8)
    assert all(fd_bound(A, 5, k) > 0 and rfd_bound(A, 5, k) > 0 for k in range(5))
    assert tail_energy(A, 8) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("m, k", [(3, 3), (3, 4), (3, -1), (0, 0), (2.5, 1), (3, True)])
def test_bounds_refuse_bad_sizes(m, k):
    with pytest.raises(ValueError, match="must"):
        fd_bound(np.eye(3), m, k)


def test_bounds_refuse_bad_matrices():
    with pytest.raises(ValueError, match="2-D"):
        tail_energy(np.ones(4), 1)
    with pytest.raises(ValueError, match="NaN"):
        best_fd_bound(np.array([[1.0, np.nan]]), 2)


# -- condition numbers -----------------------------------------------------------------------

@given(seed=seeds, r=st.integers(1, 12), d=st.integers(1, 8), shift=st.sampled_from([1e-2, 1.0, 30.0]))
def test_condition_number_equals_numpy_cond(seed, r, d, shift):
    B = random_stream(seed, r, d)
    dense = B.T @ B + shift * np.eye(d)
    assert condition_number(B, shift) == pytest.approx(np.linalg.cond(dense), rel=1e-8)


def test_condition_number_without_shift():
    B = random_stream(5, 10, 4)
    assert condition_number(B, 0.0) == pytest.approx(np.linalg.cond(B.T @ B), rel=1e-8)
    assert condition_number(B[:3], 0.0) == np.inf  # 3 rows in d = 4: singular
    assert condition_number(np.zeros((0, 4)), 2.0) == 1.0  # shift * I
    assert condition_number(np.zeros((0, 4)), 0.0) == np.inf


def test_condition_number_refuses_bad_input():
    with pytest.raises(ValueError, match="shift must be a finite number in \\[0.0"):
        condition_number(np.eye(2), -1.0)
    with pytest.raises(ValueError, match="NaN"):
        condition_number(np.array([[np.inf, 0.0]]), 1.0)
    with pytest.raises(ValueError, match="alpha0"):
        exact_condition_number(np.eye(2), np.nan)


@given(seed=seeds, n=st.integers(1, 40), d=st.integers(1, 10), m=st.integers(2, 6),
       alpha0=st.sampled_from([0.0, 1e-3, 1.0]))
def test_sketch_condition_numbers_and_theorem_4(seed, n, d, m, alpha0):
    """kappa(B^T B + alpha I) <= kappa(B^T B + alpha0 I), and both match numpy."""
    X = random_stream(seed, n, d)
    rfd = sketched(RobustFrequentDirections, X, m, alpha0=alpha0)
    kappa = sketch_condition_numbers(rfd)
    assert kappa["rfd"] <= kappa["fd"] * (1 + 1e-9)
    if rfd.alpha > 0:
        assert kappa["rfd"] == pytest.approx(np.linalg.cond(rfd.gram()), rel=1e-6)
    if alpha0 > 0:
        B = rfd.rows
        assert kappa["fd"] == pytest.approx(np.linalg.cond(B.T @ B + alpha0 * np.eye(d)), rel=1e-6)


@given(seed=seeds, n=st.integers(5, 40), d=st.integers(4, 10), m=st.integers(2, 4),
       alpha0=st.sampled_from([1e-3, 1.0]))
def test_theorem_4_against_the_exact_matrix_when_a_is_rank_deficient(seed, n, d, m, alpha0):
    X = random_stream(seed, n, d, rank=d - 1)
    rfd = sketched(RobustFrequentDirections, X, m, alpha0=alpha0)
    assert sketch_condition_numbers(rfd)["rfd"] <= exact_condition_number(X, alpha0) * (1 + 1e-9)


def test_exact_condition_number_equals_numpy_cond():
    A = random_stream(6, 20, 5)
    assert exact_condition_number(A, 0.5) == pytest.approx(
        np.linalg.cond(A.T @ A + 0.5 * np.eye(5)), rel=1e-8)


def test_sketch_condition_numbers_needs_robust_fd():
    with pytest.raises(ValueError, match="RobustFrequentDirections"):
        sketch_condition_numbers(FrequentDirections(3, 2))


# -- from a running A^T A --------------------------------------------------------------------

@given(seed=seeds, n=st.integers(1, 40), d=st.integers(2, 10), m=st.integers(2, 6),
       alpha0=st.sampled_from([0.0, 1e-3, 2.0]), rank=st.sampled_from([None, 1]))
def test_the_gram_route_gives_the_numbers_of_the_rows_route(seed, n, d, m, alpha0, rank):
    """From A^T A (what the sketching page keeps) the same errors, bound and condition
    number as from A (up to rounding), whatever the sketch."""
    X = random_stream(seed, n, d, rank=rank)
    gram, lam = X.T @ X, gram_eigenvalues(X.T @ X)
    scale = max(lam[0], 1e-300)
    for sk in (sketched(FrequentDirections, X, m), sketched(RobustFrequentDirections, X, m, alpha0=alpha0),
               sketched(RandomProjectionSketch, X, m, seed=1)):
        assert gram_covariance_error(gram, sk) == pytest.approx(covariance_error(X, sk), rel=1e-9, abs=1e-9 * scale)
    assert best_fd_bound_from_eigenvalues(lam, m) == pytest.approx(best_fd_bound(X, m), rel=1e-9, abs=1e-9 * scale)
    if alpha0 > 0:
        assert condition_number_from_eigenvalues(lam, alpha0) == pytest.approx(
            exact_condition_number(X, alpha0), rel=1e-6)
    s = np.random.default_rng(seed).choice([-1.0, 2.0], size=n)
    gfd = GeneralizedFrequentDirections(d, m)
    gfd.extend(X, s)
    assert gram_covariance_error((X.T * s) @ X, gfd) == pytest.approx(
        covariance_error(X, gfd, weights=s), rel=1e-9, abs=1e-9 * scale)


def test_the_gram_route_on_a_small_example_is_exact():
    A = np.diag([3.0, 2.0, 1.0])
    sk = sketched(RobustFrequentDirections, A, 2)
    assert gram_covariance_error(A.T @ A, sk) == covariance_error(A, sk) == 2.5
    assert best_fd_bound_from_eigenvalues(gram_eigenvalues(A.T @ A), 3) == best_fd_bound(A, 3) == 1.0


def test_a_rank_deficient_gram_is_exactly_singular():
    A = random_stream(2, 3, 6)  # rank 3 < d = 6
    lam = gram_eigenvalues(A.T @ A)
    assert np.all(lam[3:] == 0.0) and np.all(lam[:3] > 0.0)
    assert condition_number_from_eigenvalues(lam, 0.0) == np.inf


@pytest.mark.parametrize("call, match", [
    (lambda: gram_eigenvalues(np.ones((2, 3))), "square"),
    (lambda: gram_eigenvalues(np.array([[np.nan]])), "finite"),
    (lambda: gram_covariance_error(np.eye(2), FrequentDirections(3, 2)), "d x d"),
    (lambda: best_fd_bound_from_eigenvalues([1.0, 2.0], 2), "descending"),
    (lambda: best_fd_bound_from_eigenvalues([2.0, -1.0], 2), "non-negative"),
    (lambda: condition_number_from_eigenvalues([], 1.0), "got none"),
    (lambda: condition_number_from_eigenvalues([1.0], -1.0), "shift"),
])
def test_the_gram_route_refuses_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=30), st.floats(min_value=0.1, max_value=10))
def test_relative_gap_is_the_largest_difference_over_the_largest_reference_entry(values, scale):
    from explorer.metrics import relative_gap

    b = np.array(values)
    if not np.any(b):
        return
    assert relative_gap(b, b) == 0.0
    assert relative_gap(scale * b, b) == pytest.approx(abs(scale - 1), rel=1e-9, abs=1e-12)
