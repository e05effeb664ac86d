"""Streams of rows to feed the algorithms: seeded synthetic generators and bundled real data.

Every synthetic generator draws from ``numpy.random.default_rng(seed)``, so the same seed
gives the same array bit for bit. The real datasets ship inside scikit-learn (nothing is
downloaded; see docs/datasets.md). :func:`load_stream` picks a stream by name, which is what
the lessons and the dashboard use.

>>> X = load_stream("decaying spectrum", n=100, d=10, seed=0)
>>> X.shape
(100, 10)
>>> bool((X == decaying_spectrum(100, 10, seed=0)).all())
True
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from ._validation import as_matrix, check_float, check_int
from .perturb import perturb

__all__ = [
    "binary_labels",
    "low_rank_plus_noise",
    "decaying_spectrum",
    "linear_regression_targets",
    "linear_classification_labels",
    "changing_subspace",
    "digits",
    "breast_cancer",
    "rows",
    "DATASETS",
    "load_stream",
]


# -- synthetic streams ---------------------------------------------------------------------

def low_rank_plus_noise(n: int, d: int, *, rank: int = 5, noise: float = 0.1,
                        seed: int | None = 0) -> np.ndarray:
    r"""Rows near a random ``rank``-dimensional subspace: :math:`X = Z Q^T + \text{noise}\, E`.

    ``Q`` (d x rank) has random orthonormal columns, ``Z`` (n x rank) and ``E`` (n x d)
    standard normal entries, so each row has covariance
    :math:`Q Q^T + \text{noise}^2 I`: ``rank`` eigenvalues ``1 + noise**2``, the other
    ``d - rank`` equal to ``noise**2``. A sketch with m > rank rows captures almost all
    of it, the easy case for Frequent Directions (docs/algorithms.md section 1).

    >>> low_rank_plus_noise(500, 20, rank=3, seed=1).shape
    (500, 20)
    """
    n, d = check_int("n", n, minimum=1), check_int("d", d, minimum=1)
    rank = check_int("rank", rank, minimum=1)
    if rank > d:
        raise ValueError(f"rank must be at most d = {d}, got {rank}")
    noise = check_float("noise", noise, minimum=0.0)
    rng = np.random.default_rng(seed)
    basis = _orthonormal_columns(rng, d, rank)
    return perturb(rng.standard_normal((n, rank)) @ basis.T + noise * rng.standard_normal((n, d)))


def decaying_spectrum(n: int, d: int, *, seed: int | None = 0, mean: float = 1.0,
                      scale: float = 100.0, power: float = 2.0) -> np.ndarray:
    r"""Rows :math:`x_t \sim N(\text{mean}\,\mathbf{1}, \Sigma)`, eigenvalues of Sigma ``scale * j**-power``.

    The synthetic regression data of Wan & Zhang (ADA-FD/FFD), docs/algorithms.md section 4:
    ``mean = 1``, eigenvalues ``100 j^-2`` (j = 1..d) in a random orthonormal basis.
    The basis comes from a QR factorization of a d x d Gaussian matrix: O(d^3) time and
    O(d^2) memory once, then O(n d^2) for the rows (d = 500, n = 10000: well under a
    second; d = 5000 takes a few seconds and 200 MB).

    >>> X = decaying_spectrum(2000, 5, mean=0.0, power=1.0, seed=3)
    >>> np.round(np.linalg.eigvalsh(np.cov(X.T))[::-1] / 100, 1).tolist()
    [1.0, 0.5, 0.3, 0.2, 0.2]
    """
    n, d = check_int("n", n, minimum=1), check_int("d", d, minimum=1)
    mean = check_float("mean", mean)
    scale = check_float("scale", scale, minimum=0.0)
    power = check_float("power", power, minimum=0.0)
    rng = np.random.default_rng(seed)
    eigenvalues = scale * np.arange(1, d + 1, dtype=float) ** -power
    basis = _orthonormal_columns(rng, d, d)
    return perturb(mean + (rng.standard_normal((n, d)) * np.sqrt(eigenvalues)) @ basis.T)


def linear_regression_targets(X, *, seed: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    r"""Noise-free targets :math:`y = X \beta_*` with :math:`\beta_*` a random unit vector.

    The regression task of Wan & Zhang (docs/algorithms.md section 4): with the absolute
    loss ``|beta^T x - y|`` the comparator ``beta_*`` suffers 0, so regret equals the
    cumulative loss. Returns ``(y, beta_star)``.

    >>> X = decaying_spectrum(50, 4, seed=0)
    >>> y, beta_star = linear_regression_targets(X, seed=1)
    >>> y.shape, round(float(np.linalg.norm(beta_star)), 6)
    ((50,), 1.0)
    """
    X = as_matrix(X)
    beta_star = _unit_vector(np.random.default_rng(seed), X.shape[1])
    return X @ beta_star, beta_star


def linear_classification_labels(X, *, flip: float = 0.05,
                                 seed: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    r"""Labels :math:`y = \mathrm{sign}(w_*^T x) \in \{-1, +1\}`, each flipped with probability ``flip``.

    ``w_*`` is a random unit vector (``w_*^T x = 0`` counts as +1). A linearly separable
    task plus label noise for the sketched online Newton step (docs/algorithms.md section 3,
    labels in {-1, +1}). The classes are balanced only if the rows are centred (e.g.
    ``decaying_spectrum(..., mean=0.0)``). Returns ``(y, w_star)``, y as floats.

    >>> X = low_rank_plus_noise(1000, 10, seed=0)
    >>> y, w_star = linear_classification_labels(X, flip=0.0)
    >>> sorted(set(y.tolist())), bool((y == np.where(X @ w_star >= 0, 1.0, -1.0)).all())
    ([-1.0, 1.0], True)
    """
    X = as_matrix(X)
    flip = check_float("flip", flip, minimum=0.0, maximum=1.0)
    rng = np.random.default_rng(seed)
    w_star = _unit_vector(rng, X.shape[1])
    y = np.where(X @ w_star >= 0, 1.0, -1.0)
    y[rng.random(X.shape[0]) < flip] *= -1.0
    return y, w_star


def binary_labels(y) -> tuple[np.ndarray, str]:
    """Labels ``y`` as classes in {-1, +1} for the classification learners, and how.

    Two distinct values: the smaller is -1, the larger +1 (0/1, -1/+1, 2/4 ...); more:
    +1 above the median, -1 otherwise (a regression target split in two). Returns the
    labels and one sentence saying which rule was used (the dashboard shows it).

    >>> binary_labels([0, 1, 1])[0].tolist(), binary_labels([0.5, 2.0, 7.0, 9.0])
    ([-1.0, 1.0, 1.0], (array([-1., -1.,  1.,  1.]), 'y > 4.5 (the median) is +1, the rest -1'))
    """
    y = np.asarray(y, dtype=float)
    if y.ndim != 1 or y.size == 0 or not np.isfinite(y).all():
        raise ValueError(f"labels must be a non-empty 1-D array of finite numbers, got shape {y.shape}")
    values = np.unique(y)
    if values.size <= 2:
        return np.where(y == values[-1], 1.0, -1.0) if values.size == 2 else np.ones_like(y), (
            f"{values[0]:g} is -1, {values[-1]:g} is +1" if values.size == 2 else "one class only")
    median = float(np.median(y))
    return np.where(y > median, 1.0, -1.0), f"y > {median:g} (the median) is +1, the rest -1"


def changing_subspace(*, n_segments: int = 3, segment_length: int = 200, n: int = 20,
                      rank: int = 2, seed: int | None = 0) -> tuple[np.ndarray, np.ndarray]:
    """The toy stream of Yuan & Lamperski (Fig. 1), docs/algorithms.md section 5.

    ``n_segments`` segments of ``segment_length`` rows in dimension ``n``; the rows of
    a segment are ``W z`` with ``z ~ N(0, I_rank)`` and ``W`` (n x rank) drawn per segment
    with N(0, 1/n) entries: zero mean and a random rank-``rank`` covariance ``W W^T``,
    so every segment lives in its own subspace. Rows with norm above 1 are scaled to
    norm 1 (the paper's ``||x_t|| <= 1``). Returns ``(X, segment)`` with ``segment[t]``
    the segment index of row t.

    >>> X, segment = changing_subspace(seed=0)
    >>> X.shape, np.bincount(segment).tolist(), bool(np.linalg.norm(X, axis=1).max() <= 1 + 1e-12)
    ((600, 20), [200, 200, 200], True)
    """
    n_segments = check_int("n_segments", n_segments, minimum=1)
    segment_length = check_int("segment_length", segment_length, minimum=1)
    n = check_int("n", n, minimum=1)
    rank = check_int("rank", rank, minimum=1)
    if rank > n:
        raise ValueError(f"rank must be at most n = {n}, got {rank}")
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(n_segments):
        W = rng.standard_normal((n, rank)) / np.sqrt(n)
        blocks.append(rng.standard_normal((segment_length, rank)) @ W.T)
    X = np.concatenate(blocks)
    X /= np.maximum(np.linalg.norm(X, axis=1), 1.0)[:, None]
    return perturb(X), np.repeat(np.arange(n_segments), segment_length)


def _orthonormal_columns(rng: np.random.Generator, d: int, k: int) -> np.ndarray:
    """A uniformly random d x k matrix with orthonormal columns (QR with the sign fix)."""
    Q, R = np.linalg.qr(rng.standard_normal((d, k)))
    return Q * np.where(np.diag(R) < 0, -1.0, 1.0)


def _unit_vector(rng: np.random.Generator, d: int) -> np.ndarray:
    v = rng.standard_normal(d)
    return v / np.linalg.norm(v)


# -- real data bundled in scikit-learn ---------------------------------------------------

def digits(*, normalize: bool = True, by_class: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The UCI optical digits, 1797 images of 8 x 8 pixels: ``(X (1797, 64), y (1797,))``.

    Loaded with ``sklearn.datasets.load_digits`` from the file inside scikit-learn
    (nothing is downloaded). ``normalize`` divides the 0..16 pixel counts by 16, into
    [0, 1]. ``by_class`` reorders the rows into ten contiguous blocks by digit (stable),
    a stream whose subspace changes between blocks: the stand-in for the per-person face
    blocks of Yuan & Lamperski (docs/algorithms.md section 5; no package ships those).

    Source: Alpaydin & Kaynak, UCI Machine Learning Repository, licence CC BY 4.0;
    scikit-learn is BSD-3-Clause.

    >>> X, y = digits(by_class=True)
    >>> X.shape, float(X.max()), y[:3].tolist(), y[-1].item()
    ((1797, 64), 1.0, [0, 0, 0], 9)
    """
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X.astype(float) / 16.0 if normalize else X.astype(float)
    if by_class:
        order = np.argsort(y, kind="stable")
        X, y = X[order], y[order]
    return perturb(X), y


def breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    """Wisconsin diagnostic breast cancer: ``(X (569, 30), y (569,) in {-1, +1})``.

    Loaded with ``sklearn.datasets.load_breast_cancer`` (bundled, nothing downloaded).
    Each column is standardized to mean 0 and standard deviation 1; ``y = +1`` for
    benign, ``-1`` for malignant. Small: a test fixture for the online classifiers.

    Source: Street, Wolberg & Mangasarian, UCI Machine Learning Repository, licence
    CC BY 4.0; scikit-learn is BSD-3-Clause.

    >>> X, y = breast_cancer()
    >>> X.shape, np.round(X.std(axis=0)[:2], 6).tolist(), int((y == 1).sum())
    ((569, 30), [1.0, 1.0], 357)
    """
    from sklearn.datasets import load_breast_cancer

    X, target = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return perturb(X), np.where(target == 1, 1.0, -1.0)


# -- streaming and the registry ------------------------------------------------------------

def rows(X, y=None) -> Iterator:
    """Stream the rows of ``X`` one by one: ``x``, or ``(x, y_t)`` when ``y`` is given.

    >>> [x.tolist() for x in rows(np.eye(2))]
    [[1.0, 0.0], [0.0, 1.0]]
    >>> [(x.tolist(), label) for x, label in rows(np.eye(2), [1, -1])]
    [([1.0, 0.0], 1), ([0.0, 1.0], -1)]
    """
    X = as_matrix(X)  # checked now, not at the first next()
    if y is None:
        return iter(X)
    if len(y) != X.shape[0]:
        raise ValueError(f"y must have one entry per row of X ({X.shape[0]}), got {len(y)}")
    return zip(X, y)


def _low_rank_stream(n, d, seed):
    return low_rank_plus_noise(_default(n, 1000), _default(d, 50), seed=seed)


def _decaying_stream(n, d, seed):
    return decaying_spectrum(_default(n, 1000), _default(d, 50), seed=seed)


def _changing_subspace_stream(n, d, seed):
    n = check_int("n", _default(n, 600), minimum=1)
    X, _ = changing_subspace(segment_length=-(-n // 3), n=_default(d, 20), seed=seed)
    return X[:n]


def _digits_stream(n, d, seed):
    return _subsample(digits()[0], n, seed)


def _digits_by_class_stream(n, d, seed):
    return _subsample(digits(by_class=True)[0], n, seed)


def _breast_cancer_stream(n, d, seed):
    return _subsample(breast_cancer()[0], n, seed)


DATASETS: dict[str, Callable[[int | None, int | None, int | None], np.ndarray]] = {
    "low rank + noise": _low_rank_stream,
    "decaying spectrum": _decaying_stream,
    "changing subspace": _changing_subspace_stream,
    "digits": _digits_stream,
    "digits by class": _digits_by_class_stream,
    "breast cancer": _breast_cancer_stream,
}
"""Stream name -> ``loader(n, d, seed) -> X``; None picks the default size.

Synthetic streams default to n = 1000, d = 50 ("changing subspace": n = 600 rows in
three equal segments, d = 20). Real datasets ignore ``d`` and, given ``n``, keep a
seeded random subset of n rows in their original order. Add an entry to offer a new
stream to the lessons and the dashboard.
"""


def load_stream(name: str, *, n: int | None = None, d: int | None = None,
                seed: int | None = 0) -> np.ndarray:
    """The rows ``X`` (n x d) of the stream registered as ``name`` in :data:`DATASETS`.

    >>> load_stream("digits", n=10).shape
    (10, 64)
    >>> load_stream("mnist")
    Traceback (most recent call last):
    ...
    ValueError: unknown stream 'mnist'; valid names: 'low rank + noise', ...
    """
    if name not in DATASETS:
        valid = ", ".join(repr(key) for key in DATASETS)
        raise ValueError(f"unknown stream {name!r}; valid names: {valid}")
    return DATASETS[name](n, d, seed)


def _default(value, default: int):
    return default if value is None else value


def _subsample(X: np.ndarray, n: int | None, seed: int | None) -> np.ndarray:
    """All rows (n None) or a seeded random subset of n rows, kept in stream order."""
    if n is None:
        return X
    n = check_int("n", n, minimum=1)
    if n > X.shape[0]:
        raise ValueError(f"n must be at most {X.shape[0]} (the rows of this dataset), got {n}")
    chosen = np.random.default_rng(seed).choice(X.shape[0], size=n, replace=False)
    return X[np.sort(chosen)]


