"""The compact convex factorization machine: ``Theta``, ``a_hat`` and the input rows.

A factorization machine predicts ``z = w0 + w^T a + a^T X a`` (Rendle 2010). Luo et al.
(KDD 2018, section 2.2, after Lin et al. 2018) fold its three parameters into one
symmetric matrix and the input into one vector (docs/algorithms.md section 6.2):

.. math:: \\Theta = \\begin{bmatrix} X & w/2 \\\\ w^T/2 & w_0 \\end{bmatrix}
          \\in \\mathbb{R}^{(d+1)\\times(d+1)},\\qquad
          \\hat a = \\begin{bmatrix} a \\\\ 1 \\end{bmatrix},\\qquad
          z = \\hat a^T \\Theta \\hat a .

The loss ``phi(z)`` is then convex in ``Theta`` whenever ``phi`` is convex, and its
gradient ``phi'(z) a_hat a_hat^T`` is rank one with the sign of ``phi'(z)``: a sum of such
gradients is indefinite, hence Generalized FD in S-FTRL.

Input rows (:func:`as_fm_row`) are never expanded to d numbers: a dense vector of length d;
a pair ``(indices, values)`` of 1-D arrays (integer indices in [0, d), none twice, finite
values); or a scipy.sparse row of shape (1, d) (any format; duplicates summed) or 1-D
sparse array of shape (d,). Scale limits, checked before a learner changes anything:
``||a_hat||^2 = ||a||^2 + 1 <= MAX_SQUARED_NORM`` (1e300), so every entry of
``a_hat a_hat^T`` is finite, and ``|label| <= MAX_LABEL`` (1e150), so ``(z - b)^2`` is
finite for every prediction the learners accept (``|z| <= 1e150``, :mod:`.learners`).

>>> import numpy as np
>>> w0, w, X = 0.5, np.array([1.0, -2.0]), np.array([[0.0, 1.5], [1.5, 0.0]])
>>> Theta = compact_theta(w0, w, X)
>>> a = np.array([1.0, 1.0])
>>> float(augment(a) @ Theta @ augment(a)), fm_predict(w0, w, X, a)
(2.5, 2.5)
"""

from __future__ import annotations

import numpy as np
import scipy.sparse

from .._validation import as_reals, as_row, as_rows, squared_norms
from ..losses import check_label
from ..losses import check_labels as check_labels_of

__all__ = ["augment", "compact_theta", "split_theta", "fm_predict", "as_fm_row", "as_fm_rows",
           "check_labels", "MAX_SQUARED_NORM", "MAX_LABEL"]

MAX_SQUARED_NORM = 1e300
"""The largest ``||a_hat||^2 = ||a||^2 + 1`` of an input row: below it every entry
``a_i a_j`` of the rank-one gradient is a finite float (and S-FTRL's sketch row
``sqrt(|q|) a_hat`` stays within Frequent Directions' own limit for ``|q| <= 1``)."""

MAX_LABEL = 1e150
"""The largest label magnitude: with predictions kept within the same bound, the squared
loss ``(z - b)^2 / 2`` and its derivative ``z - b`` are finite floats."""

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
    index, non-integer indices, values that are not real numbers (strings, complex), a
    NaN/inf value, or ``||x||^2 + 1 > MAX_SQUARED_NORM``. Nothing is densified: a sparse
    row costs O(nnz), a dense one O(d).

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
    val = as_row(x, d, name)
    _check_norm(float(squared_norms(val[None, :])[0]), val, name)
    return None, val


def _check_norm(squared_norm: float, values: np.ndarray, name: str) -> None:
    """Refuse a row with NaN or inf (``squared_norm`` is then not finite), or whose
    ``||x||^2 + 1`` exceeds :data:`MAX_SQUARED_NORM`."""
    if squared_norm + 1.0 <= MAX_SQUARED_NORM:
        return
    if not np.isfinite(values).all():
        raise ValueError(f"{name} contains NaN or inf; only finite values are allowed")
    raise ValueError(f"{name} is too large: ||{name}||^2 + 1 = {squared_norm + 1.0:.3g} exceeds "
                     f"{MAX_SQUARED_NORM:.0e}, beyond which the FM's rank-one gradient a_hat a_hat^T "
                     "overflows (entries up to about 1e150 are fine); rescale the data")


def _from_pair(indices, values, d: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        idx = np.asarray(indices)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be an (indices, values) pair of numeric arrays: {error}") from None
    val = as_reals(values, f"{name} values")  # strings, complex, objects refused
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
            squared_norm = sum(v * v for v in val.tolist())  # inf on overflow, NaN from NaN
        else:
            ordered = np.sort(idx)
            low, high = int(ordered[0]), int(ordered[-1])
            unique = not bool((ordered[1:] == ordered[:-1]).any())
            squared_norm = float(squared_norms(val[None, :])[0])
        if low < 0 or high >= d:
            raise ValueError(f"{name} indices must lie in [0, {d - 1}] (d = {d}), "
                             f"got {low if low < 0 else high}")
        if not unique:
            raise ValueError(f"{name} indices must not repeat (sum the values of a repeated index)")
        _check_norm(squared_norm, val, name)
    return idx, val


def _checked_sparse(x, name: str):
    """A copy of a scipy.sparse matrix, in CSR, CSC, BSR or COO format, with real values and
    an index structure checked in full before any compiled scipy code reads it: scipy's
    conversions (``tocoo``, ``tocsr``, ``toarray``) trust the indices, and write out of
    bounds on a hand-built matrix whose index exceeds its shape or whose ``indptr`` falls."""
    if x.dtype.kind not in "biuf":  # scipy would drop an imaginary part with only a warning
        raise ValueError(f"{name} must hold real numbers (int, float or bool), got dtype {x.dtype}")
    try:
        # lil, dok and dia become COO in Python and numpy code; the others are copied by numpy
        x = x.copy() if x.format in ("csr", "csc", "bsr", "coo") else x.tocoo()
        if x.format == "coo":
            for axis, coords in enumerate(x.coords):
                if coords.shape != x.data.shape:
                    raise ValueError("coords and data differ in length")
                if coords.size and (coords.min() < 0 or coords.max() >= x.shape[axis]):
                    raise ValueError(f"axis {axis} index out of range [0, {x.shape[axis] - 1}]")
        else:
            x.check_format(full_check=True)
    except (ValueError, IndexError, TypeError) as error:
        raise ValueError(f"{name} is not a valid sparse matrix: {error}") from None
    return x


def _from_scipy(x, d: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    if x.shape not in ((1, d), (d,)):
        raise ValueError(f"{name} must be a sparse row of shape (1, {d}) or ({d},), got shape {x.shape}")
    coo = _checked_sparse(x, name).tocoo()
    coo.sum_duplicates()
    idx = np.asarray(coo.coords[-1], dtype=np.intp)
    val = np.asarray(coo.data, dtype=float)
    _check_norm(float(squared_norms(val[None, :])[0]), val, name)
    return idx, val


def as_fm_rows(X, d: int, name: str = "X"):
    """Validate a whole stream at once: a CSR matrix (n x d) or a dense array (n x d).

    Returns ``("csr", X)`` with canonical CSR (sorted, summed duplicates, finite) or
    ``("dense", X)``; used by :func:`explorer.fm.progressive` so rows need no re-check.
    A sparse matrix is checked in full (indices in range, a non-decreasing ``indptr``,
    before scipy converts it), as are its values (real, finite), and every row's
    ``||x||^2 + 1 <= MAX_SQUARED_NORM``; the first bad row is named.
    """
    if scipy.sparse.issparse(X):
        if X.ndim != 2 or X.shape[1] != d:
            raise ValueError(f"{name} must have d = {d} columns, got shape {X.shape}")
        X = _checked_sparse(X, name)
        if X.format != "csr" or X.dtype != float:
            X = scipy.sparse.csr_array(X, dtype=float)
        X.sum_duplicates()
        if not np.isfinite(X.data).all():
            bad = int(np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0], side="right")) - 1
            raise ValueError(f"{name} row {bad} contains NaN or inf; only finite values are allowed")
        row_of_entry = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr).astype(np.intp))  # intp: 32-bit in wasm
        norms = np.bincount(row_of_entry, weights=squared_norms(X.data[:, None]), minlength=X.shape[0])
        _check_norms(norms, name)
        return "csr", X
    X = as_rows(X, d, name)
    _check_norms(squared_norms(X), name)
    return "dense", X


def _check_norms(squared: np.ndarray, name: str) -> None:
    """:func:`_check_norm` for every row of a stream, naming the first one refused."""
    with np.errstate(over="ignore"):
        over = np.flatnonzero(~(squared + 1.0 <= MAX_SQUARED_NORM))
    if over.size:  # (the values are finite: checked before)
        _check_norm(float(squared[over[0]]), np.zeros(0), f"{name} row {int(over[0])}")


def check_labels(y, n: int, loss: str, name: str = "y") -> np.ndarray:
    """n labels as :func:`explorer.losses.check_label` accepts them (``|y| <= MAX_LABEL``), as a
    float array; the first bad one is named."""
    try:
        labels = np.asarray(y)
    except (TypeError, ValueError):
        labels = None
    if labels is None or labels.shape != (n,):
        shape = None if labels is None else labels.shape
        raise ValueError(f"{name} must hold one label per row ({n}), got shape {shape}")
    if labels.dtype.kind not in "biuf":  # strings, complex, objects: name the first one refused
        for t, label in enumerate(y if isinstance(y, (list, tuple)) else labels.tolist()):
            check_label(label, loss, name=f"{name}[{t}]", bound=MAX_LABEL)
    labels = labels.astype(float)
    check_labels_of(labels, loss, name, bound=MAX_LABEL)
    return labels
