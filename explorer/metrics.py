"""How good is a sketch? Spectral errors, the papers' bounds and condition numbers.

Every function here is pure: it reads arrays and a sketch's public attributes and
changes nothing. Notation of docs/algorithms.md section 0: ``A`` (n x d) holds the rows
a sketch has seen, ``B`` the sketch's rows, ``alpha`` the RFD regularizer started at ``alpha0``.

- :func:`covariance_error`, :func:`relative_spectral_error`: the spectral norm of the
  approximation error (docs/algorithms.md sections 1, 2, 6; Luo et al. 2017, section 5.1).
- :func:`tail_energy`, :func:`fd_bound`, :func:`rfd_bound`, :func:`best_fd_bound`:
  the right-hand sides of the FD and RFD error bounds (section 1; RFD Theorem 3).
- :func:`condition_number`, :func:`sketch_condition_numbers`,
  :func:`exact_condition_number`: conditioning of the regularized Gram matrices that
  the sketched Newton step inverts (section 2; RFD Theorem 4).
- :func:`gram_eigenvalues`, :func:`gram_covariance_error`,
  :func:`best_fd_bound_from_eigenvalues`, :func:`condition_number_from_eigenvalues`: the
  same numbers from a running ``A^T A`` (d x d, O(d^2) per row) instead of ``A``, so a
  live measurement costs O(d^3) whatever the number of rows (the dashboard's sketching
  page, :mod:`explorer.experiments.sketching`).

>>> import numpy as np
>>> from explorer import RobustFrequentDirections
>>> A = np.diag([3.0, 2.0, 1.0])
>>> sk = RobustFrequentDirections(d=3, m=2)
>>> sk.extend(A)
>>> covariance_error(A, sk), rfd_bound(A, m=2, k=1)
(2.5, 2.5)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ._validation import as_matrix, as_rows, check_float, check_int

__all__ = [
    "ROUNDING_LEVEL",
    "covariance_error",
    "relative_spectral_error",
    "tail_energy",
    "fd_bound",
    "rfd_bound",
    "best_fd_bound",
    "condition_number",
    "sketch_condition_numbers",
    "exact_condition_number",
    "gram_eigenvalues",
    "gram_covariance_error",
    "best_fd_bound_from_eigenvalues",
    "condition_number_from_eigenvalues",
    "relative_gap",
]

METHODS = ("auto", "exact", "lanczos")
EXACT_MAX_DIMENSION = 500
"""``method="auto"`` forms the dense d x d error matrix up to this d, else uses Lanczos."""
LANCZOS_TOLERANCE = 1e-10
"""Relative accuracy asked of ARPACK for the largest-magnitude eigenvalue."""


# -- spectral error of a sketch ----------------------------------------------------------

def covariance_error(A, sketch, *, weights=None, method: str = "auto") -> float:
    r"""Spectral norm of the sketch's approximation error.

    The target is :math:`T = A^T W A + \alpha_0 I` with :math:`W = \mathrm{diag}(w)`
    (``weights``; all ones by default, so :math:`T = A^T A + \alpha_0 I`), and the
    approximation is the sketch's Gram matrix, built from its rows, never from
    ``gram()``:

    - Frequent Directions (docs/algorithms.md section 1): :math:`\|A^T A - B^T B\|_2`;
    - Robust FD (section 2): :math:`\|A^T A + \alpha_0 I - (B^T B + \alpha I)\|_2`,
      at most :math:`\Delta / 2` (Luo et al. 2017, Theorem 3);
    - Generalized FD (section 6; Luo et al. KDD 2018): pass the weights ``s_t`` the
      sketch was fed; the error is :math:`\|\sum_t s_t a_t a_t^T - (B_+^T B_+ - B_-^T B_-)\|_2`;
    - a random-projection sketch: :math:`\|A^T A - B^T B\|_2`.

    Parameters
    ----------
    A : array (n, d)
        The rows the sketch has seen, in any order (n must equal ``sketch.n_seen``).
    sketch : FrequentDirections, RobustFrequentDirections, GeneralizedFrequentDirections
        or RandomProjectionSketch (anything with ``d`` and ``rows``, or ``positive`` and
        ``negative`` parts; ``alpha`` and ``alpha0`` are read when present).
    weights : array (n,), optional
        The weight of each row; required for Generalized FD.
    method : {"auto", "exact", "lanczos"}
        "exact" forms the d x d error matrix and takes its eigenvalues (O(nd^2 + d^3));
        "lanczos" runs ARPACK's Lanczos (``scipy.sparse.linalg.eigsh``) on matrix-vector
        products with ``A`` and ``B`` only (O(nd + md) per product, no d x d array);
        "auto" is "exact" for d <= 500, else "lanczos".

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from explorer import FrequentDirections
    >>> A = np.diag([3.0, 2.0, 1.0])
    >>> sk = FrequentDirections(d=3, m=2)
    >>> sk.extend(A)
    >>> covariance_error(A, sk), sk.delta_total
    (5.0, 5.0)
    """
    method = _check_method(method)
    _, error = _target_and_error(A, sketch, weights)
    return error.spectral_norm(method)


def relative_spectral_error(A, sketch, *, weights=None, method: str = "auto") -> float:
    r"""The error measure of Figure 1 in Luo et al. (2017), section 5.1.

    The paper defines

    .. math:: \text{Error-FD} = \frac{\|A^T A - B^T B\|_2}{\|A^T A\|_2},\qquad
              \text{Error-RFD} = \frac{\|A^T A - B^T B - \alpha I\|_2}{\|A^T A\|_2},

    and notes that ``alpha0`` does not change the numerator; here the numerator is
    :func:`covariance_error` (which subtracts ``alpha - alpha0``, so it is the paper's
    numerator for any ``alpha0``) and the denominator is :math:`\|A^T W A\|_2`
    (:math:`\|A^T A\|_2` unless ``weights`` are given). Arguments as in
    :func:`covariance_error`; a zero ``A^T W A`` raises ``ValueError``.

    Examples
    --------
    >>> import numpy as np
    >>> from explorer import FrequentDirections
    >>> A = np.diag([3.0, 2.0, 1.0])
    >>> sk = FrequentDirections(d=3, m=2)
    >>> sk.extend(A)
    >>> round(relative_spectral_error(A, sk), 4)  # 5 / 9
    0.5556
    """
    method = _check_method(method)
    target, error = _target_and_error(A, sketch, weights)
    scale = target.spectral_norm(method)
    if scale == 0.0:
        raise ValueError("A^T A is zero (no non-zero rows yet): the relative error is undefined")
    return error.spectral_norm(method) / scale


@dataclass(frozen=True)
class _SymmetricSum:
    """``S = sum_j M_j^T diag(c_j) M_j + shift I`` (d x d), formed only by :meth:`dense`."""

    d: int
    terms: tuple[tuple[np.ndarray, np.ndarray], ...]
    shift: float

    def matvec(self, v: np.ndarray) -> np.ndarray:
        v = np.ravel(v)
        out = self.shift * v
        for M, c in self.terms:
            out += M.T @ (c * (M @ v))
        return out

    def dense(self) -> np.ndarray:
        out = self.shift * np.eye(self.d)
        for M, c in self.terms:
            out += (M.T * c) @ M
        return out

    def spectral_norm(self, method: str) -> float:
        """Largest absolute eigenvalue; d < 3 is always exact (too small for ARPACK)."""
        if method == "exact" or (method == "auto" and self.d <= EXACT_MAX_DIMENSION) or self.d < 3:
            return float(np.max(np.abs(scipy.linalg.eigvalsh(self.dense()))))
        from scipy.sparse.linalg import LinearOperator, eigsh  # here: only large d needs ARPACK

        operator = LinearOperator((self.d, self.d), matvec=self.matvec, dtype=float)
        start = np.random.default_rng(0).standard_normal(self.d)  # deterministic answer
        if not np.any(self.matvec(start)):
            return 0.0  # S = 0 (e.g. no shrink yet); ARPACK refuses a zero Krylov space
        # The residual test |S v - l v| <= tol |l| bounds the relative error of l by tol.
        (largest,) = eigsh(operator, k=1, which="LM", v0=start, tol=LANCZOS_TOLERANCE,
                           return_eigenvectors=False)
        return float(abs(largest))


def _target_and_error(A, sketch, weights) -> tuple[_SymmetricSum, _SymmetricSum]:
    """``A^T W A`` and the error ``A^T W A + alpha0 I - (sketch's Gram matrix)``, unformed."""
    A, weights = _rows_and_weights(A, sketch, weights)
    target = _SymmetricSum(d=sketch.d, terms=((A, weights),), shift=0.0)
    error = _SymmetricSum(d=sketch.d, terms=((A, weights), *_negated_sketch_terms(sketch)),
                          shift=_regularizer_shift(sketch))
    return target, error


def _regularizer_shift(sketch) -> float:
    """``alpha0 - alpha``: what the error matrix adds to its diagonal (0 but for Robust FD)."""
    return getattr(sketch, "alpha0", 0.0) - getattr(sketch, "alpha", 0.0)


def _negated_sketch_terms(sketch) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Minus the sketch's Gram matrix as ``(rows, signs)`` terms: ``-B^T B`` or ``-B+^T B+ + B-^T B-``."""
    if hasattr(sketch, "positive") and hasattr(sketch, "negative"):
        parts = ((sketch.positive.rows, -1.0), (sketch.negative.rows, 1.0))
    else:
        parts = ((sketch.rows, -1.0),)
    return tuple((B, np.full(B.shape[0], sign)) for B, sign in parts)


def _rows_and_weights(A, sketch, weights) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``A`` against the sketch (d, n_seen) and ``weights`` against ``A``."""
    d = getattr(sketch, "d", None)
    if d is None:
        raise ValueError(f"sketch must be a sketch with a dimension d, got {type(sketch).__name__}")
    A = as_rows(A, d, "A")
    n_seen = getattr(sketch, "n_seen", None)
    if n_seen is not None and A.shape[0] != n_seen:
        raise ValueError(f"A has {A.shape[0]} rows but the sketch has seen {n_seen}; "
                         f"pass exactly the rows it was fed")
    if weights is None:
        if hasattr(sketch, "positive"):
            raise ValueError("a GeneralizedFrequentDirections sketch approximates "
                             "sum_t s_t a_t a_t^T: pass weights=s, the weights it was fed")
        return A, np.ones(A.shape[0])
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (A.shape[0],) or not np.isfinite(weights).all():
        raise ValueError(f"weights must be {A.shape[0]} finite numbers (one per row of A), "
                         f"got shape {weights.shape}")
    return A, weights


def _check_method(method) -> str:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


# -- the bounds --------------------------------------------------------------------------

def tail_energy(A, k: int) -> float:
    r"""Energy outside the best rank-k approximation: :math:`\|A - A_k\|_F^2 = \sum_{i>k} \sigma_i^2`.

    ``A_k`` is the truncated SVD of ``A`` (docs/algorithms.md section 1); ``k`` may exceed
    the rank (the tail is then 0).

    >>> import numpy as np
    >>> tail_energy(np.diag([3.0, 2.0, 1.0]), k=1)
    5.0
    """
    k = check_int("k", k, minimum=0)
    return float(np.sum(_singular_values(A)[k:] ** 2))


def fd_bound(A, m: int, k: int) -> float:
    r"""Frequent Directions' error bound :math:`\|A - A_k\|_F^2 / (m - k)` for ``0 <= k < m``.

    Bounds both ``||A^T A - B^T B||_2`` and ``delta_total`` (docs/algorithms.md section 1;
    Ghashami et al. 2016; Luo et al. 2017, eq. (1)).

    >>> import numpy as np
    >>> fd_bound(np.diag([3.0, 2.0, 1.0]), m=2, k=1)
    5.0
    """
    m, k = _check_sketch_size(m, k)
    return tail_energy(A, k) / (m - k)


def rfd_bound(A, m: int, k: int) -> float:
    r"""Robust FD's error bound :math:`\|A - A_k\|_F^2 / (2(m - k))`: half of :func:`fd_bound`.

    Luo et al. (2017) Theorem 3 / JMLR (2019) eq. (10); docs/algorithms.md section 2.

    >>> import numpy as np
    >>> rfd_bound(np.diag([3.0, 2.0, 1.0]), m=2, k=1)
    2.5
    """
    return fd_bound(A, m, k) / 2


def best_fd_bound(A, m: int) -> float:
    r"""The tightest FD bound, :math:`\min_{0 \le k < m} \|A - A_k\|_F^2 / (m - k)`.

    One SVD for all k; halve it for Robust FD (docs/algorithms.md sections 1-2).

    >>> import numpy as np
    >>> A = np.diag([3.0, 2.0, 1.0])
    >>> [fd_bound(A, m=3, k=k) for k in range(3)], best_fd_bound(A, m=3)
    ([4.666666666666667, 2.5, 1.0], 1.0)
    """
    m = check_int("m", m, minimum=1)
    return _best_bound(_singular_values(A) ** 2, m)


def _best_bound(squared: np.ndarray, m: int) -> float:
    """``min_{0 <= k < m} sum_{i >= k} squared_i / (m - k)`` for ``squared`` descending."""
    padded = np.zeros(max(m, squared.size))
    padded[:squared.size] = squared
    tails = np.cumsum(padded[::-1])[::-1][:m]  # tails[k] = sum_{i >= k} sigma_i^2
    return float(np.min(tails / (m - np.arange(m))))


def _check_sketch_size(m, k) -> tuple[int, int]:
    m = check_int("m", m, minimum=1)
    k = check_int("k", k, minimum=0)
    if k >= m:
        raise ValueError(f"k must satisfy 0 <= k < m = {m}, got k = {k}")
    return m, k


# -- conditioning ------------------------------------------------------------------------

def condition_number(B, shift: float) -> float:
    r"""Condition number of :math:`B^T B + \text{shift}\, I` from the singular values of ``B``.

    Its eigenvalues are :math:`\sigma_i(B)^2 + \text{shift}`, plus ``shift`` itself when
    B has fewer than d singular values (r < d rows); so the cost is one SVD of ``B``,
    O(r^2 d), and no d x d matrix. Infinite when the smallest eigenvalue is exactly 0
    (``shift == 0`` and B has fewer rows than columns). docs/algorithms.md section 2.

    Parameters
    ----------
    B : array (r, d)
        Rows of a sketch (``sk.rows``) or any matrix; r = 0 is allowed.
    shift : float >= 0

    >>> import numpy as np
    >>> condition_number(np.array([[3.0, 0.0], [0.0, 1.0]]), shift=1.0)
    5.0
    >>> condition_number(np.array([[3.0, 0.0]]), shift=0.0)
    inf
    """
    shift = check_float("shift", shift, minimum=0.0)
    largest, smallest = _gram_eigenvalue_range(B, "B")
    return _ratio(largest + shift, smallest + shift)


def sketch_condition_numbers(sketch) -> dict[str, float]:
    r"""Theorem 4 of Luo et al. (2017) / JMLR (2019), read off one Robust FD sketch.

    Returns ``{"fd": kappa(B^T B + alpha0 I), "rfd": kappa(B^T B + alpha I)}``: the
    matrix FD-SON would invert and the one RFD-SON inverts (docs/algorithms.md section 2).
    Theorem 4 says ``rfd <= fd`` always. One SVD of the sketch's rows.

    >>> import numpy as np
    >>> from explorer import RobustFrequentDirections
    >>> sk = RobustFrequentDirections(d=3, m=2, alpha0=0.5)
    >>> sk.extend(np.diag([3.0, 2.0, 1.0]))
    >>> {name: round(kappa, 3) for name, kappa in sketch_condition_numbers(sk).items()}
    {'fd': 9.0, 'rfd': 2.333}
    """
    if not hasattr(sketch, "alpha") or not hasattr(sketch, "rows"):
        raise ValueError("sketch_condition_numbers needs a RobustFrequentDirections sketch "
                         f"(with rows, alpha and alpha0), got {type(sketch).__name__}")
    largest, smallest = _gram_eigenvalue_range(sketch.rows, "sketch.rows")
    return {name: _ratio(largest + shift, smallest + shift)
            for name, shift in (("fd", sketch.alpha0), ("rfd", sketch.alpha))}


def exact_condition_number(A, alpha0: float) -> float:
    r"""Condition number of the exact regularized covariance :math:`A^T A + \alpha_0 I`.

    The ``M`` of RFD Theorem 4 (docs/algorithms.md section 2), which the sketches approximate;
    computed like :func:`condition_number`, from the singular values of ``A``.

    >>> import numpy as np
    >>> exact_condition_number(np.diag([3.0, 2.0, 1.0]), alpha0=1.0)
    5.0
    """
    alpha0 = check_float("alpha0", alpha0, minimum=0.0)
    largest, smallest = _gram_eigenvalue_range(A, "A")
    return _ratio(largest + alpha0, smallest + alpha0)


# -- from a running Gram matrix A^T A ----------------------------------------------------------

ROUNDING_LEVEL = 1e-12
"""An eigenvalue of ``A^T A`` at most this times the largest is rounding, not rank."""


def gram_eigenvalues(gram) -> np.ndarray:
    r"""Eigenvalues of a Gram matrix :math:`A^T A` (d x d), descending, those at the level
    of rounding (at most ``1e-12`` times the largest, and the tiny negative ones LAPACK
    gives a singular :math:`A^T A`) set to exactly 0: a rank-deficient :math:`A^T A` is
    then exactly singular, as it is in exact arithmetic (its condition number is inf).

    The squared singular values of ``A`` (docs/algorithms.md section 0), from the d x d
    matrix a stream keeps up to date in O(d^2) per row, for :func:`best_fd_bound_from_eigenvalues`
    and :func:`condition_number_from_eigenvalues`.

    >>> import numpy as np
    >>> A = np.array([[3.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    >>> gram_eigenvalues(A.T @ A).tolist()
    [9.0, 4.0, 0.0]
    """
    gram = _square(gram, "gram")
    lam = scipy.linalg.eigvalsh(gram, check_finite=False)[::-1]
    lam[lam <= ROUNDING_LEVEL * max(lam[0], 0.0)] = 0.0
    return lam


def gram_covariance_error(gram, sketch) -> float:
    r""":func:`covariance_error` from :math:`A^T A` rather than ``A``: the spectral norm of
    ``gram + alpha0 I - (B^T B + alpha I)`` (FD, RFD, random projection) or of
    ``gram - (B+^T B+ - B-^T B-)`` (Generalized FD, with ``gram`` the weighted
    :math:`\sum_t s_t a_t a_t^T`), from the dense d x d error matrix: O(r d^2 + d^3)
    whatever the number of rows (docs/algorithms.md sections 1, 2, 6).

    >>> import numpy as np
    >>> from explorer import RobustFrequentDirections
    >>> A = np.diag([3.0, 2.0, 1.0])
    >>> sk = RobustFrequentDirections(d=3, m=2)
    >>> sk.extend(A)
    >>> gram_covariance_error(A.T @ A, sk) == covariance_error(A, sk) == 2.5
    True
    """
    gram = _square(gram, "gram")
    if gram.shape[0] != getattr(sketch, "d", None):
        raise ValueError(f"gram must be d x d for the sketch's d = {getattr(sketch, 'd', None)}, "
                         f"got shape {gram.shape}")
    if hasattr(sketch, "positive") and hasattr(sketch, "negative"):
        positive, negative = sketch.positive.rows, sketch.negative.rows
        error = gram - positive.T @ positive + negative.T @ negative
    else:
        B = sketch.rows
        error = gram - B.T @ B
    error[np.diag_indices_from(error)] += _regularizer_shift(sketch)
    ends = scipy.linalg.eigvalsh(error, check_finite=False)[[0, -1]]
    return float(np.max(np.abs(ends)))


def best_fd_bound_from_eigenvalues(eigenvalues, m: int) -> float:
    r""":func:`best_fd_bound` from the eigenvalues :math:`\lambda_i = \sigma_i(A)^2` of
    :math:`A^T A` (descending, non-negative: :func:`gram_eigenvalues`), the same number:
    :math:`\min_{0 \le k < m} \sum_{i > k} \lambda_i / (m - k)`.

    >>> best_fd_bound_from_eigenvalues([9.0, 4.0, 1.0], m=3)
    1.0
    """
    m = check_int("m", m, minimum=1)
    return _best_bound(_spectrum(eigenvalues), m)


def condition_number_from_eigenvalues(eigenvalues, shift: float) -> float:
    r"""Condition number of :math:`A^T A + 	ext{shift}\, I` from all d eigenvalues of
    :math:`A^T A` (descending, non-negative: :func:`gram_eigenvalues`): what
    :func:`exact_condition_number` computes from ``A``; inf when the smallest plus
    ``shift`` is 0.

    >>> condition_number_from_eigenvalues([9.0, 4.0, 1.0], shift=1.0)
    5.0
    """
    shift = check_float("shift", shift, minimum=0.0)
    lam = _spectrum(eigenvalues)
    if lam.size == 0:
        raise ValueError("eigenvalues must hold the d >= 1 eigenvalues of A^T A, got none")
    return _ratio(float(lam[0]) + shift, float(lam[-1]) + shift)


def _square(gram, name: str) -> np.ndarray:
    gram = as_matrix(gram, name)
    if gram.shape[0] != gram.shape[1]:
        raise ValueError(f"{name} must be a square d x d matrix (A^T A), got shape {gram.shape}")
    return gram


def _spectrum(eigenvalues) -> np.ndarray:
    """``eigenvalues`` as finite, non-negative, descending floats, or ``ValueError``."""
    lam = np.asarray(eigenvalues, dtype=float)
    if lam.ndim != 1 or not np.isfinite(lam).all() or (lam < 0).any() or (np.diff(lam) > 0).any():
        raise ValueError("eigenvalues must be the eigenvalues of A^T A: a 1-D array of finite, "
                         "non-negative numbers in descending order (gram_eigenvalues gives them)")
    return lam


def _gram_eigenvalue_range(B, name: str) -> tuple[float, float]:
    """Largest and smallest eigenvalue of ``B^T B`` (0 when B has fewer rows than columns)."""
    B = as_matrix(B, name)
    sigma = _singular_values(B)
    largest = float(sigma[0] ** 2) if sigma.size else 0.0
    smallest = float(sigma[-1] ** 2) if sigma.size == B.shape[1] else 0.0
    return largest, smallest


def _ratio(largest: float, smallest: float) -> float:
    return np.inf if smallest == 0.0 else largest / smallest


def _singular_values(A) -> np.ndarray:
    """Singular values of ``A``, descending (empty for a matrix with no rows)."""
    A = as_matrix(A, "A")
    if A.shape[0] == 0:
        return np.zeros(0)
    return scipy.linalg.svdvals(A, check_finite=False)


def relative_gap(a, b) -> float:
    r"""How far ``a`` is from the reference ``b``, relative to ``b``'s size:
    :math:`\max_i |a_i - b_i| / \max_i |b_i|` (largest entries; arrays of any shape).

    >>> relative_gap(np.array([1.0, 2.1]), np.array([1.0, 2.0]))
    0.05...
    """
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
