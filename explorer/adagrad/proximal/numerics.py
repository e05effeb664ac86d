"""The linear algebra the proximal matrices share: a guarded eigendecomposition, the Woodbury
weights of ``H^{-1}``, ``kappa(H)``, and the rescaling of tiny vectors before normalizing them.

>>> values, vectors = eigh(np.diag([1.0, 4.0]))
>>> values.tolist(), condition(1.0, 4.0, 1.0)
([4.0, 1.0], 1.5)
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ...errors import Diverged

__all__ = ["TINY_SQUARE", "TINY_SCALE", "eigh", "woodbury_weights", "condition"]

TINY_SQUARE = 2.0 ** -600
"""A vector with a squared norm below this is normalized after scaling it by
:data:`TINY_SCALE`: the squares of entries below ~1e-154 fall among the subnormal numbers
or underflow to 0, so ADA-FFD's new column of ``V`` would not have norm 1 and ADA-FD's
basis row would be divided by 0."""

TINY_SCALE = 2.0 ** 600
"""Exact (a power of two); the entries of a vector with ``||v||^2 < 2^-600`` are below
2^-300, so scaled they stay below 2^300, and even the smallest subnormal becomes ~2e-143."""


def eigh(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending, clamped at 0) and eigenvectors of a symmetric PSD matrix.

    LAPACK's divide and conquer (``numpy.linalg.eigh``: syevd, the lightest call for the
    small matrices of ADA-FFD); on its rare non-convergence, scipy's QR algorithm (syev).
    A matrix with NaN or inf never reaches LAPACK: :class:`~explorer.errors.Diverged` (the
    learner then rolls the round back).
    """
    if not np.isfinite(M).all():
        raise Diverged("the matrix to decompose is not finite")
    try:
        values, vectors = np.linalg.eigh(M)
    except np.linalg.LinAlgError:
        values, vectors = scipy.linalg.eigh(M, check_finite=False, driver="ev")
    # descending order as a contiguous copy: a reversed view is a strided operand, which BLAS
    # cannot take and a saved state could not reproduce (tests/test_resume_layout.py)
    return np.maximum(values[::-1], 0.0), np.ascontiguousarray(vectors[:, ::-1])


def woodbury_weights(roots: np.ndarray, delta: float) -> np.ndarray:
    """``s / (delta + s)`` for each square root ``s`` of an eigenvalue of ``G`` (ADA-FD: the
    singular values Sigma'; ADA-FFD: ``sqrt(lambda)``): the weights of the Woodbury formula.

    With orthonormal ``W`` and ``L = diag(s)``:
    ``(delta I + W L W^T)^{-1} v = (v - W diag(L / (delta + L)) W^T v) / delta``.
    """
    return roots / (delta + roots)


def condition(delta: float, largest: float, smallest: float) -> float:
    """``(delta + sqrt(largest)) / (delta + sqrt(smallest))``: kappa(H) from G's extreme
    eigenvalues."""
    return float((delta + np.sqrt(largest)) / (delta + np.sqrt(smallest)))

