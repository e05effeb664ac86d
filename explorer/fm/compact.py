"""The compact convex factorization machine: ``Theta``, ``a_hat`` and the input rows.

A factorization machine predicts ``z = w0 + w^T a + a^T X a`` (Rendle 2010). Luo et al.
(KDD 2018, section 2.2, after Lin et al. 2018) fold its three parameters into one
symmetric matrix and the input into one vector (docs/algorithms.md section 6):

.. math:: \\Theta = \\begin{bmatrix} X & w/2 \\\\ w^T/2 & w_0 \\end{bmatrix}
          \\in \\mathbb{R}^{(d+1)\\times(d+1)},\\qquad
          \\hat a = \\begin{bmatrix} a \\\\ 1 \\end{bmatrix},\\qquad
          z = \\hat a^T \\Theta \\hat a .

The loss ``phi(z)`` is then convex in ``Theta`` whenever ``phi`` is convex, and its
gradient ``phi'(z) a_hat a_hat^T`` is a rank-one matrix whose sign is the sign of
``phi'(z)``: a sum of such gradients is indefinite, which is why S-FTRL needs Generalized
FD rather than plain FD.

Input rows (:func:`as_fm_row`) may be dense or sparse, so a one-hot row with d = 80,000
is never expanded to d numbers:

- a dense vector of length d;
- a pair ``(indices, values)`` of two 1-D arrays (integer column indices in [0, d), no
  index twice, finite values);
- a scipy.sparse row of shape (1, d) (any format; duplicate entries are summed) or a 1-D
  sparse array of shape (d,).

>>> import numpy as np
>>> w0, w, X = 0.5, np.array([1.0, -2.0]), np.array([[0.0, 1.5], [1.5, 0.0]])
>>> Theta = compact_theta(w0, w, X)
>>> a = np.array([1.0, 1.0])
>>> float(augment(a) @ Theta @ augment(a)), fm_predict(w0, w, X, a)
(2.5, 2.5)
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse

from .._validation import as_row, as_rows, check_float

__all__ = ["augment", "compact_theta", "split_theta", "fm_predict", "as_fm_row"]

_SMALL = 64
"""Rows with at most this many non-zeros are checked with Python builtins (faster)."""


def augment(a) -> np.ndarray:
    """``a_hat = [a; 1]``: the input with the constant feature that carries ``w0`` and ``w``."""
    a = np.asarray(a, dtype=float)
    return np.append(a, 1.0)


def compact_theta(w0: float, w, X) -> np.ndarray:
    """``Theta = [[X, w/2], [w^T/2, w0]]``, shape (d+1, d+1); ``X`` is symmetrized.

    Only ``(X + X^T)/2`` matters in ``a^T X a``, so a non-symmetric ``X`` gives the same
    predictions as the symmetric ``Theta`` returned here.
    """
    w = np.asarray(w, dtype=float)
    X = np.asarray(X, dtype=float)
    d = w.shape[0]
    if w.ndim != 1 or X.shape != (d, d):
        raise ValueError(f"w must be a vector (d,) and X a matrix (d, d), got shapes {w.shape} and {X.shape}")
    Theta = np.empty((d + 1, d + 1))
    Theta[:d, :d] = (X + X.T) / 2
    Theta[:d, d] = Theta[d, :d] = w / 2
    Theta[d, d] = float(w0)
    return Theta


def split_theta(Theta) -> tuple[float, np.ndarray, np.ndarray]:
    """The inverse of :func:`compact_theta`: ``(w0, w, X)`` with ``w = 2 Theta[:d, d]``.

    >>> w0, w, X = split_theta(compact_theta(1.0, [2.0, 4.0], np.eye(2)))
    >>> w0, w.tolist(), X.tolist()
    (1.0, [2.0, 4.0], [[1.0, 0.0], [0.0, 1.0]])
    """
    Theta = np.asarray(Theta, dtype=float)
    if Theta.ndim != 2 or Theta.shape[0] != Theta.shape[1] or Theta.shape[0] < 2:
        raise ValueError(f"Theta must be a square matrix of size d+1 >= 2, got shape {Theta.shape}")
    d = Theta.shape[0] - 1
    w = Theta[:d, d] + Theta[d, :d]  # = w for a symmetric Theta
    return float(Theta[d, d]), w, Theta[:d, :d].copy()


def fm_predict(w0: float, w, X, a) -> float:
    """``w0 + w^T a + a^T X a`` for one dense input ``a`` (the textbook FM formula)."""
    a = np.asarray(a, dtype=float)
    return float(w0 + np.dot(w, a) + a @ np.asarray(X, dtype=float) @ a)


def as_fm_row(x, d: int, name: str = "x") -> tuple[np.ndarray | None, np.ndarray]:
    """Validate one input row: ``(indices, values)`` if sparse, ``(None, values)`` if dense.

    Raises ``ValueError`` naming ``name`` for a wrong length, out-of-range or repeated
    index, non-integer indices, or a NaN/inf value. Nothing is densified: a sparse row
    costs O(nnz), a dense one O(d).

    >>> as_fm_row(([4, 1], [1.0, 1.0]), d=5)
    (array([4, 1]), array([1., 1.]))
    >>> as_fm_row(([5], [1.0]), d=5)
    Traceback (most recent call last):
    ...
    ValueError: x indices must lie in [0, 4] (d = 5), got 5
    """
    if type(x) is tuple and len(x) == 2 and np.ndim(x[0]) == 1 and np.ndim(x[1]) == 1:
        return _from_pair(x[0], x[1], d, name)
    if scipy.sparse.issparse(x):
        return _from_scipy(x, d, name)
    return None, as_row(x, d, name)


def _from_pair(indices, values, d: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        idx = np.asarray(indices)
        val = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be an (indices, values) pair of numeric arrays: {error}") from None
    if idx.dtype.kind not in "iu":
        if idx.size:
            raise ValueError(f"{name} indices must be integers, got dtype {idx.dtype}")
        idx = idx.astype(np.intp)
    if idx.shape != val.shape:
        raise ValueError(f"{name} indices and values must have the same length, "
                         f"got {idx.shape[0]} and {val.shape[0] if val.ndim else val.shape}")
    if idx.size:
        if idx.size <= _SMALL:  # Python builtins beat numpy calls on a handful of entries
            listed = idx.tolist()
            low, high, unique = min(listed), max(listed), len(set(listed)) == len(listed)
            finite = all(map(math.isfinite, val.tolist()))
        else:
            ordered = np.sort(idx)
            low, high = int(ordered[0]), int(ordered[-1])
            unique = not bool((ordered[1:] == ordered[:-1]).any())
            finite = bool(np.isfinite(val).all())
        if low < 0 or high >= d:
            raise ValueError(f"{name} indices must lie in [0, {d - 1}] (d = {d}), "
                             f"got {low if low < 0 else high}")
        if not unique:
            raise ValueError(f"{name} indices must not repeat (sum the values of a repeated index)")
        if not finite:
            raise ValueError(f"{name} contains NaN or inf; only finite values are allowed")
    return idx, val


def _from_scipy(x, d: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    if x.shape not in ((1, d), (d,)):
        raise ValueError(f"{name} must be a sparse row of shape (1, {d}) or ({d},), got shape {x.shape}")
    coo = x.tocoo(copy=True)
    coo.sum_duplicates()
    idx = np.asarray(coo.coords[-1], dtype=np.intp)
    val = np.asarray(coo.data, dtype=float)
    if not np.isfinite(val).all():
        raise ValueError(f"{name} contains NaN or inf; only finite values are allowed")
    return idx, val


def as_fm_rows(X, d: int, name: str = "X"):
    """Validate a whole stream at once: a CSR matrix (n x d) or a dense array (n x d).

    Returns ``("csr", X)`` with canonical CSR (sorted, summed duplicates, finite) or
    ``("dense", X)``; used by :func:`explorer.fm.progressive` so rows need no re-check.
    """
    if scipy.sparse.issparse(X):
        if X.ndim != 2 or X.shape[1] != d:
            raise ValueError(f"{name} must have d = {d} columns, got shape {X.shape}")
        X = scipy.sparse.csr_array(X, dtype=float, copy=True)
        X.sum_duplicates()
        if not np.isfinite(X.data).all():
            raise ValueError(f"{name} contains NaN or inf; only finite values are allowed")
        return "csr", X
    return "dense", as_rows(X, d, name)


def check_label(y, loss_name: str, name: str = "y") -> float:
    """A finite label; -1 or +1 for the logistic loss."""
    if type(y) is float and math.isfinite(y):  # the common case, without the generic checks
        pass
    else:
        y = check_float(name, y)
    if loss_name == "logistic" and y not in (-1.0, 1.0):
        raise ValueError(f"{name} must be -1 or +1 for the logistic loss, got {y}")
    return y
