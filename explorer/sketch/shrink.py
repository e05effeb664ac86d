r"""Frequent Directions' shrink (Liberty 2013; Luo et al. 2017, Algorithm 1).

A full buffer ``B`` (its occupied rows) shrinks by

.. math:: B = U \Sigma V^T,\quad \delta = \sigma_m^2,\quad
          B \leftarrow \sqrt{\max(\Sigma^2 - \delta I, 0)}\, V^T

which keeps at most m - 1 rows. :func:`shrink_amounts` is the rule on the squared singular
values; :func:`svd_shrink` applies it to a tall buffer through its SVD, :func:`gram_shrink`
to a wide one through ``B B^T`` alone, and :func:`fd_shrink` picks between them. Every FD
sketch (FD, Robust FD, both parts of Generalized FD), ADA-FFD and S-FTRL shrink by it.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import scipy.linalg

__all__ = ["ShrinkRecord", "ShrinkRule", "ShrinkFailed", "SHRINK_ERRORS", "shrink_amounts", "svd_shrink", "gram_shrink",
           "fd_shrink", "power_of_two_scale", "mass_bounds", "TINY_SQUARE"]

_EPS = np.finfo(float).eps
#: A shrink whose largest squared singular value is below this is redone on the buffer
#: scaled up by a power of two (exact): squares below ~1e-308 underflow to 0, and the
#: shrink would drop rows that hold all of the data (FD is scale-equivariant, float is not).
TINY_SQUARE = 2.0 ** -600


class ShrinkRecord(NamedTuple):
    """What one shrink did (returned by :meth:`~explorer.sketch.FrequentDirections.insert`)."""

    squared: np.ndarray
    """The buffer's squared singular values before the shrink, descending."""
    delta: float
    """FD's delta, subtracted from each of them."""
    kept: int
    """Rows kept: ``sqrt(squared[i] - delta) v_i^T`` for i < kept."""


ShrinkRule = Callable[[np.ndarray], "tuple[np.ndarray, float, np.ndarray]"]
"""How a full buffer's shrink is computed from its occupied rows ``B``: ``(squared singular
values descending, delta, kept rows)``, as :func:`svd_shrink` returns."""


class ShrinkFailed(ValueError):
    """A shrink's LAPACK call failed or gave a non-finite result; the sketch was restored."""


#: What a failing shrink raises (LAPACK, a non-finite result, a refused row): the sketch is
#: restored and :class:`ShrinkFailed` raised instead. Anything else (an interrupt, a hook's
#: error) is raised as it is, with the sketch restored all the same.
SHRINK_ERRORS = (np.linalg.LinAlgError, FloatingPointError, ValueError)


def shrink_amounts(squared: np.ndarray, m: int) -> tuple[float, np.ndarray]:
    """FD's shrink from the squared singular values (descending) of a full buffer.

    Returns ``delta = sigma_m^2`` (0 when there are fewer than m values: rank < m, e.g.
    d < m, and the shrink only compacts) and ``max(sigma_i^2 - delta, 0)`` for the rows
    kept: the first m-1 at most, and only the positive ones, so every kept row is non-zero.
    """
    delta = float(squared[m - 1]) if squared.size >= m else 0.0
    shrunk = np.maximum(squared[:m - 1] - delta, 0.0)
    return delta, shrunk[:int(np.count_nonzero(shrunk > 0.0))]


def svd_shrink(B: np.ndarray, m: int) -> tuple[np.ndarray, float, np.ndarray]:
    """FD's shrink of a tall buffer ``B`` through its SVD (:func:`gram_shrink` for a wide one).

    Returns ``(squared, delta, kept_rows)``: the squared singular values (descending),
    FD's delta and the rows ``sqrt(sigma_i^2 - delta) v_i^T`` that the shrink keeps.
    """
    sigma, Vt = _svd(B)
    squared = sigma ** 2
    delta, shrunk = shrink_amounts(squared, m)
    return squared, delta, np.sqrt(shrunk)[:, None] * Vt[:shrunk.size]


def _svd(B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Singular values (descending) and right singular vectors (rows of ``Vt``) of ``B``.

    LAPACK's divide and conquer (gesdd) first; on its rare non-convergence, the slower
    but more robust gesvd. The sketches call it for tall buffers only (no more columns
    than rows); a wide one shrinks through :func:`gram_shrink`.
    """
    try:
        _, sigma, Vt = scipy.linalg.svd(B, full_matrices=False, check_finite=False,
                                        lapack_driver="gesdd")
    except np.linalg.LinAlgError:
        _, sigma, Vt = scipy.linalg.svd(B, full_matrices=False, check_finite=False,
                                        lapack_driver="gesvd")
    return sigma, Vt


def gram_shrink(gram: np.ndarray, columns: int, m: int) -> tuple[np.ndarray, float, np.ndarray]:
    """FD's shrink of a wide buffer ``B`` (fewer rows than columns) from ``B B^T`` alone.

    ``B B^T = U Lambda U^T`` gives ``v_i^T = u_i^T B / sigma_i``, so the kept row
    ``sqrt(sigma_i^2 - delta) v_i^T`` is ``w_i^T B`` with ``w_i = sqrt(1 - delta /
    lambda_i) u_i``: no division by a small singular value. Eigenvalues below ``columns *
    eps * lambda_max`` are rounding, not rank, and count as 0. An r x r eigenproblem
    instead of the SVD of the r x columns buffer.

    Returns ``(squared, delta, W)``: the squared singular values (descending), FD's delta
    and the weights whose product ``W @ B`` is the kept rows.
    """
    lam, U = np.linalg.eigh(gram)  # numpy's: far less overhead than scipy's at 20 x 20
    lam, U = lam[::-1], U[:, ::-1]
    lam = np.where(lam > columns * _EPS * max(lam[0], 0.0), lam, 0.0)
    delta, shrunk = shrink_amounts(lam, m)
    keep = shrunk.size
    return lam, delta, (U[:, :keep] * np.sqrt(shrunk / lam[:keep])).T


def fd_shrink(B: np.ndarray, m: int) -> tuple[np.ndarray, float, np.ndarray]:
    """FD's shrink of the occupied rows ``B``: ``(squared, delta, kept_rows)`` through
    :func:`gram_shrink` for a wide buffer, :func:`svd_shrink` for a tall one."""
    if B.shape[0] < B.shape[1]:
        squared, delta, weights = gram_shrink(B @ B.T, B.shape[1], m)
        return squared, delta, weights @ B
    return svd_shrink(B, m)


def power_of_two_scale(B: np.ndarray) -> float:
    """The power of two that brings the largest entry of a non-zero ``B`` into [0.5, 1)
    (multiplying by it is exact), at most ``2^1000``: a subnormal largest entry (below
    ~2e-308) would need more than a float holds, and ``2^1000`` already lifts it past 1e-24.

    >>> power_of_two_scale(np.array([[3.0]])), power_of_two_scale(np.array([[1e-320]])) == 2.0 ** 1000
    (0.25, True)
    """
    return float(np.ldexp(1.0, min(-int(np.frexp(float(np.abs(B).max()))[1]), 1000)))


def mass_bounds(held: float, delta_total: float, m: int, rank: int, work: int) -> tuple[float, float]:
    """The range a sketch's ``||A||_F^2`` can have, given ``||B||_F^2 = held``.

    A shrink of squared singular values ``s_1 >= s_2 >= ...`` with ``delta = s_m`` keeps
    ``s_i - delta`` for ``i < m`` and drops the rest: it removes ``(m - 1) delta + sum_{i >= m}
    s_i``, between ``m delta`` and ``rank delta`` (at most ``rank = min(capacity, d)``
    values). So ``held + m Delta <= ||A||_F^2 <= held + rank Delta`` for every stream and
    merge tree (before any shrink both ends are ``held``). ``work``: ``n_shrinks x capacity
    x d``, which bounds the rounding (eigenvalues below ``d eps lambda_max`` count as 0),
    as a relative slack of ``4 eps work`` (at most 1e-3), plus 1e-12 and 1e-300 absolute.

    >>> mass_bounds(4.0, 0.0, 2, 3, 0) == (4.0 * (1 - 1e-12) - 1e-300, 4.0 * (1 + 1e-12) + 1e-300)
    True
    """
    slack = 1e-12 + min(1e-3, 4 * _EPS * work)
    return ((held + m * delta_total) * (1 - slack) - 1e-300, (held + rank * delta_total) * (1 + slack) + 1e-300)
