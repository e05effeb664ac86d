"""Argument and input checks shared by every algorithm.

Each check raises ``ValueError`` naming the parameter, the value it got and what is
allowed, and returns the cleaned value; callers check everything *before* touching
their state, so a rejected input leaves the algorithm exactly as it was.

The row and matrix checks (:func:`as_row`, :func:`as_rows`, :func:`as_matrix`) are also
where data enter the package, so they apply :func:`explorer.perturb.perturb` (a no-op
unless ``EXPLORER_PERTURB`` is set).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.linalg.blas import ddot as _ddot

from .perturb import perturb

__all__ = [
    "MAX_ENTRIES", "MAX_SQUARED_MASS", "SCALES",
    "all_finite", "as_labeled_rows", "as_matrix", "as_reals", "as_row", "as_row_and_norm", "as_rows",
    "as_rows_and_norms",
    "check_choice", "check_float", "check_int", "check_mass", "check_matrix_size",
    "check_row_mass", "check_scale", "squared_norms",
]


def check_int(name: str, value, *, minimum: int) -> int:
    """An integer >= minimum (bools are refused: ``m=True`` is a mistake, not 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def check_float(name: str, value, *, minimum: float = -np.inf, maximum: float = np.inf,
                strict_minimum: bool = False) -> float:
    """A finite real number in [minimum, maximum] (or (minimum, maximum] if strict)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    try:
        value = float(value)
    except OverflowError:  # an integer past float's range (10**400)
        raise ValueError(f"{name} must be a finite number in [{minimum}, {maximum}], got an "
                         f"integer of {len(str(abs(value)))} digits") from None
    low_ok = value > minimum if strict_minimum else value >= minimum
    if not np.isfinite(value) or not low_ok or value > maximum:
        bracket = "(" if strict_minimum else "["
        raise ValueError(f"{name} must be a finite number in {bracket}{minimum}, {maximum}], got {value}")
    return value


SCALES = (1e-100, 1e100)
"""The range of a learner's step sizes and regularizers (eta, delta, alpha0, mu, C): with
input rows of squared norm at most 1e300 it keeps every round's numbers finite."""

MAX_ENTRIES = 10 ** 8
"""The largest matrix a learner may keep, in entries (800 MB of float64)."""


def check_scale(name: str, value, *, zero: bool = False) -> float:
    """A step size or regularizer in :data:`SCALES` (or 0 when ``zero``), as a float."""
    value = check_float(name, value, minimum=0.0, strict_minimum=not zero)
    if (zero and value == 0.0) or SCALES[0] <= value <= SCALES[1]:
        return value
    raise ValueError(f"{name} must be {'0 or ' if zero else ''}a number in [{SCALES[0]:.0e}, "
                     f"{SCALES[1]:.0e}] (wider settings overflow a learner's step), got {value!r}")


def check_choice(name: str, value, allowed: tuple[str, ...]) -> str:
    """One of the ``allowed`` strings (a loss, a variant, a sketch kind)."""
    if not isinstance(value, str) or value not in allowed:
        valid = ", ".join(repr(choice) for choice in allowed)
        raise ValueError(f"{name} must be one of {valid}, got {value!r}")
    return value


def check_matrix_size(what: str, rows: int, columns: int) -> None:
    """Refuse settings that would keep a matrix of more than :data:`MAX_ENTRIES` entries."""
    if rows * columns > MAX_ENTRIES:
        raise ValueError(f"{what} would need a {rows} x {columns} matrix; at most "
                         f"{MAX_ENTRIES:.0e} entries (800 MB) are allowed")


def all_finite(v: np.ndarray) -> bool:
    """Whether every entry of a float vector is finite: one BLAS dot product when its square
    sum is finite (the usual case), the entry-by-entry check only when that overflows."""
    return math.isfinite(_ddot(v, v)) or bool(np.isfinite(v).all())


def as_row(x, d: int, name: str = "x") -> np.ndarray:
    """``x`` as a finite float vector of shape (d,)."""
    return as_row_and_norm(x, d, name)[0]


def as_row_and_norm(x, d: int, name: str = "x") -> tuple[np.ndarray, float]:
    """:func:`as_row` and ``||x||^2``, the one dot product that also checks finiteness: a
    NaN or inf entry makes it NaN or inf, and only then are the entries searched (a finite
    row whose square overflows is left to :func:`check_row_mass`)."""
    x = as_reals(x, name)
    if x.shape != (d,):
        raise ValueError(f"{name} must be a vector of length d = {d}, got shape {x.shape}")
    x = perturb(x)  # keeps NaN and inf as they are
    squared = _ddot(x, x)
    if not math.isfinite(squared) and not np.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or inf; only finite values are allowed")
    return x, squared


def as_rows(X, d: int, name: str = "X") -> np.ndarray:
    """``X`` as a finite float matrix of shape (n, d); a single vector counts as one row."""
    return as_rows_and_norms(X, d, name)[0]


def as_rows_and_norms(X, d: int, name: str = "X") -> tuple[np.ndarray, np.ndarray]:
    """:func:`as_rows` and the rows' squared norms ``||x_i||^2`` in one pass over ``X``.

    A NaN or inf entry makes its row's squared norm NaN or inf, so the finiteness check
    reads the n norms instead of the n x d entries; only then is ``X`` itself searched, for
    :func:`as_rows`' message (a finite row whose square overflows is left to
    :func:`check_mass`).
    """
    X = as_reals(X, name)
    if X.ndim == 1 and X.shape == (d,):
        X = X[None, :]
    if X.ndim != 2 or X.shape[1] != d:
        raise ValueError(f"{name} must be a matrix with d = {d} columns, got shape {X.shape}")
    X = perturb(X)  # keeps NaN and inf as they are
    squared = squared_norms(X)
    if not np.isfinite(squared).all():
        _check_finite_rows(X, name)
    return X, squared


def as_labeled_rows(X, y, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``X`` as finite rows (n, d) and ``y`` as n finite labels, for ``learn_many``."""
    X = as_rows(X, d)
    try:
        y = as_reals(y, "y")
    except ValueError:
        y = np.full(1, np.nan)
    if y.shape != (X.shape[0],) or not np.isfinite(y).all():
        raise ValueError(f"y must be {X.shape[0]} finite numbers (one per row of X), "
                         f"got shape {y.shape} (or non-finite values)")
    return X, y


def as_matrix(X, name: str = "X") -> np.ndarray:
    """``X`` as a finite 2-D float matrix with at least one column (any number of rows)."""
    X = as_reals(X, name)
    if X.ndim != 2 or X.shape[1] == 0:
        raise ValueError(f"{name} must be a 2-D matrix (n rows, d >= 1 columns), got shape {X.shape}")
    _check_finite_rows(X, name)
    return perturb(X)


def _check_finite_rows(X: np.ndarray, name: str) -> None:
    if not np.isfinite(X).all():
        bad = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
        raise ValueError(f"{name} row {bad} contains NaN or inf; only finite values are allowed")


def as_reals(value, name: str) -> np.ndarray:
    """Real numbers only: strings (even "1.5"), complex numbers and objects are refused
    rather than converted, so nothing is silently dropped (an imaginary part) or parsed."""
    if type(value) is np.ndarray and value.dtype == np.float64:  # the common case, at no cost
        return value
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be numeric, got {type(value).__name__}: {error}") from None
    if array.dtype.kind not in "biuf":
        what = {"c": "complex numbers", "U": "strings", "S": "bytes", "O": "objects"}.get(
            array.dtype.kind, f"dtype {array.dtype}")
        raise ValueError(f"{name} must be numeric (real numbers: int, float or bool), got {what}")
    return array.astype(float, copy=False)


#: The largest total squared Frobenius norm ``||A||_F^2`` a sketch accepts. Everything a
#: shrink computes (``B B^T``, ``sigma^2``, ``delta``, ``Delta``) is bounded by it, so with
#: this headroom below float64's 1.8e308 no shrink can overflow into inf (an
#: overflowing row once stored inf rows and hung the next LAPACK call). Entries up to about
#: 1e150 are fine; larger data must be rescaled first.
MAX_SQUARED_MASS = 1e300


def squared_norms(X: np.ndarray) -> np.ndarray:
    """``||x_i||^2`` of every row, inf where it overflows (no warning: it is checked)."""
    with np.errstate(over="ignore"):
        return np.einsum("ij,ij->i", X, X)


def check_mass(mass_before: float, X: np.ndarray, name: str = "x",
               row_numbers: np.ndarray | None = None, squared: np.ndarray | None = None) -> float:
    """The total squared Frobenius norm after adding the rows of ``X``, or ``ValueError``
    naming the first row that takes it past :data:`MAX_SQUARED_MASS` (nothing changes).

    ``row_numbers``: the caller's numbers for the rows of ``X`` (when ``X`` is a subset of
    what the caller was given), used in the message instead of their positions in ``X``.
    ``squared``: the rows' :func:`squared_norms`, when the caller has them already.
    """
    if squared is None:
        squared = squared_norms(X)
    with np.errstate(over="ignore"):
        running = mass_before + np.cumsum(squared)
    over = np.flatnonzero(~(running <= MAX_SQUARED_MASS))
    if over.size:
        row = int(over[0] if row_numbers is None else row_numbers[over[0]])
        raise ValueError(
            f"{name} row {row} is too large: the sketch's total squared norm ||A||_F^2 would "
            f"exceed {MAX_SQUARED_MASS:.0e}, beyond which its shrink overflows (entries up to "
            f"about 1e150 are fine); rescale the data, e.g. divide it by its largest entry")
    return float(running[-1]) if running.size else float(mass_before)


def check_row_mass(mass_before: float, row: np.ndarray, name: str = "x", *, squared: float | None = None) -> float:
    """:func:`check_mass` for one row, at the cost of one dot product (a learner's round), or
    none when its ``squared`` norm ``||x||^2`` is known (:func:`as_row_and_norm`'s)."""
    # BLAS directly: an overflow gives inf, no warning
    mass = mass_before + (_ddot(row, row) if squared is None else squared)
    if mass <= MAX_SQUARED_MASS:
        return mass
    return check_mass(mass_before, row[None, :], name)  # raises, with the message
