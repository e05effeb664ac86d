"""explorer.streams: determinism by seed, documented shapes, norms and spectra, the registry."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.streams import (
    DATASETS,
    breast_cancer,
    changing_subspace,
    decaying_spectrum,
    digits,
    linear_classification_labels,
    linear_regression_targets,
    load_stream,
    low_rank_plus_noise,
    rows,
)

seeds = st.integers(0, 2**32 - 1)
sizes = st.integers(1, 30)


def empirical_eigenvalues(X):
    """Eigenvalues of the sample covariance, descending."""
    return np.linalg.eigvalsh(np.cov(X.T))[::-1]


@given(seed=seeds, n=sizes, d=sizes)
@pytest.mark.blas_kernels
def test_synthetic_generators_are_deterministic_by_seed(seed, n, d):
    for make in (lambda s: low_rank_plus_noise(n, d, rank=1, seed=s),
                 lambda s: decaying_spectrum(n, d, seed=s),
                 lambda s: changing_subspace(segment_length=n, n=d, rank=1, seed=s)[0]):
        first, again, other = make(seed), make(seed), make(seed + 1)
        assert np.array_equal(first, again)
        assert not np.array_equal(first, other)


@given(seed=seeds, n=sizes, d=sizes)
@pytest.mark.blas_kernels
def test_labels_are_deterministic_by_seed(seed, n, d):
    X = decaying_spectrum(n, d, seed=0)
    y1, beta1 = linear_regression_targets(X, seed=seed)
    y2, beta2 = linear_regression_targets(X, seed=seed)
    assert np.array_equal(y1, y2) and np.array_equal(beta1, beta2)
    c1, w1 = linear_classification_labels(X, seed=seed)
    c2, w2 = linear_classification_labels(X, seed=seed)
    assert np.array_equal(c1, c2) and np.array_equal(w1, w2)


def test_low_rank_plus_noise_spectrum():
    X = low_rank_plus_noise(20000, 12, rank=3, noise=0.2, seed=0)
    assert X.shape == (20000, 12)
    eigenvalues = empirical_eigenvalues(X)
    assert eigenvalues[:3] == pytest.approx(1.04, rel=0.05)
    assert eigenvalues[3:] == pytest.approx(0.04, rel=0.1)


def test_decaying_spectrum_mean_and_spectrum():
    X = decaying_spectrum(20000, 8, seed=1)
    assert X.shape == (20000, 8)
    assert X.mean(axis=0) == pytest.approx(1.0, abs=0.2)
    eigenvalues = empirical_eigenvalues(X)
    assert np.all(np.diff(eigenvalues) < 0)
    assert eigenvalues == pytest.approx(100.0 * np.arange(1, 9) ** -2.0, rel=0.06)


def test_decaying_spectrum_parameters():
    X = decaying_spectrum(20000, 4, seed=2, mean=-3.0, scale=10.0, power=0.0)
    assert X.mean(axis=0) == pytest.approx(-3.0, abs=0.1)
    assert empirical_eigenvalues(X) == pytest.approx(10.0, rel=0.05)


def test_regression_targets_are_linear_in_a_unit_vector():
    X = decaying_spectrum(100, 6, seed=0)
    y, beta_star = linear_regression_targets(X, seed=3)
    assert y.shape == (100,) and np.linalg.norm(beta_star) == pytest.approx(1.0)
    assert y == pytest.approx(X @ beta_star)


def test_classification_labels_and_flip_rate():
    X = low_rank_plus_noise(20000, 10, seed=0)
    clean, w_star = linear_classification_labels(X, flip=0.0, seed=4)
    noisy, w_again = linear_classification_labels(X, flip=0.2, seed=4)
    assert set(np.unique(clean)) == {-1.0, 1.0}
    assert np.array_equal(clean, np.where(X @ w_star >= 0, 1.0, -1.0))
    assert np.array_equal(w_star, w_again)
    assert np.mean(clean != noisy) == pytest.approx(0.2, abs=0.02)


def test_changing_subspace_segments():
    X, segment = changing_subspace(n_segments=4, segment_length=50, n=10, rank=2, seed=0)
    assert X.shape == (200, 10) and segment.tolist() == np.repeat(np.arange(4), 50).tolist()
    assert np.linalg.norm(X, axis=1).max() <= 1 + 1e-12
    assert np.any(np.isclose(np.linalg.norm(X, axis=1), 1.0))  # some rows were scaled down
    blocks = [X[segment == s] for s in range(4)]
    assert all(np.linalg.matrix_rank(block) == 2 for block in blocks)
    assert np.linalg.matrix_rank(np.vstack(blocks[:2])) == 4  # each segment its own subspace


def test_paper_toy_stream_defaults():
    X, segment = changing_subspace()
    assert X.shape == (600, 20) and np.bincount(segment).tolist() == [200, 200, 200]


@pytest.mark.parametrize("call, match", [
    (lambda: low_rank_plus_noise(0, 5), "n must be an integer >= 1"),
    (lambda: low_rank_plus_noise(10, 5, rank=6), "rank must be at most d = 5"),
    (lambda: low_rank_plus_noise(10, 5, noise=-1.0), "noise"),
    (lambda: decaying_spectrum(10, 2.5), "d must be an integer"),
    (lambda: decaying_spectrum(10, 3, power=np.nan), "power"),
    (lambda: changing_subspace(n=2, rank=3), "rank must be at most n = 2"),
    (lambda: linear_classification_labels(np.ones((3, 2)), flip=1.5), "flip"),
    (lambda: linear_regression_targets(np.ones(3)), "2-D"),
    (lambda: linear_regression_targets([[1.0, np.nan]]), "NaN"),
])
def test_generators_refuse_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# -- real data -------------------------------------------------------------------------------

def test_digits():
    X, y = digits()
    assert X.shape == (1797, 64) and y.shape == (1797,)
    assert X.min() == 0.0 and X.max() == 1.0
    raw, _ = digits(normalize=False)
    assert raw.max() == 16.0 and np.array_equal(raw / 16.0, X)
    grouped, labels = digits(by_class=True)
    assert np.all(np.diff(labels) >= 0) and np.bincount(labels).tolist() == np.bincount(y).tolist()
    assert grouped[labels == 3].tolist() == X[y == 3].tolist()  # stable: same order within a class


def test_breast_cancer():
    X, y = breast_cancer()
    assert X.shape == (569, 30)
    assert X.mean(axis=0) == pytest.approx(0.0, abs=1e-12)
    assert X.std(axis=0) == pytest.approx(1.0)
    assert set(np.unique(y)) == {-1.0, 1.0} and int((y == 1).sum()) == 357


# -- rows and the registry ---------------------------------------------------------------------

def test_rows_streams_rows_and_pairs():
    X = np.arange(6.0).reshape(3, 2)
    assert [x.tolist() for x in rows(X)] == X.tolist()
    assert [(x.tolist(), label) for x, label in rows(X, [1, -1, 1])] == list(zip(X.tolist(), [1, -1, 1]))


def test_rows_checks_eagerly():
    with pytest.raises(ValueError, match="one entry per row of X"):
        rows(np.ones((3, 2)), [1, 2])
    with pytest.raises(ValueError, match="2-D"):
        rows(np.ones(3))


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_every_registered_stream_loads(name):
    X = load_stream(name, n=60, seed=1)
    assert X.ndim == 2 and X.shape[0] == 60 and np.isfinite(X).all()
    assert np.array_equal(X, load_stream(name, n=60, seed=1))


def test_load_stream_sizes():
    assert load_stream("low rank + noise").shape == (1000, 50)
    assert load_stream("decaying spectrum", n=30, d=7).shape == (30, 7)
    assert load_stream("changing subspace").shape == (600, 20)
    assert load_stream("changing subspace", n=100, d=5).shape == (100, 5)
    assert load_stream("digits").shape == (1797, 64)
    assert load_stream("digits", n=20, d=3).shape == (20, 64)  # real data ignore d
    assert load_stream("breast cancer").shape == (569, 30)


def test_real_subsample_keeps_stream_order():
    full = load_stream("digits by class")
    part = load_stream("digits by class", n=100, seed=5)
    positions = [int(np.flatnonzero((full == row).all(axis=1))[0]) for row in part]
    assert positions == sorted(positions)
    assert not np.array_equal(part, load_stream("digits by class", n=100, seed=6))


def test_load_stream_refuses_unknown_names_and_sizes():
    with pytest.raises(ValueError, match="unknown stream 'mnist'; valid names: 'low rank \\+ noise'"):
        load_stream("mnist")
    with pytest.raises(ValueError, match="n must be at most 569"):
        load_stream("breast cancer", n=570)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        load_stream("digits", n=0)
