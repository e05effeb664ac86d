"""Matrix sketches: Frequent Directions, Robust FD, Generalized FD, random projection.

All of them summarize a stream of rows ``a_t`` in R^d by a small matrix ``B`` whose
Gram matrix approximates ``A^T A`` (docs/algorithms.md sections 1, 2 and 6). Memory is O(md):
no d x d array is ever formed, except by :meth:`gram`, which exists for inspection.

A learner drives its sketch through the public incremental API only: ``insert(row)``
(returning the :class:`ShrinkRecord` of the shrink the row caused, or None), the
read-only view ``rows`` and the in-place ``load_state_dict``. Every sketch is
:class:`~explorer.params.Tunable` (``get_params()`` / ``with_params(**changes)``); only
Robust FD's ``alpha0`` may change mid-stream.

References
----------
- Liberty (2013); Ghashami, Liberty, Phillips, Woodruff (2016): Frequent Directions and
  its doubling-space variant ("fast FD").
- Luo, Chen, Zhang, Li (2017), *Online learning via regularized frequent directions*,
  Algorithms 1-4; Luo et al. (JMLR 2019), *Robust frequent directions*, Theorems 1-4.
- Luo et al. (KDD 2018), *Sketched follow-the-regularized-leader for online factorization
  machine*, Algorithm 2 (Generalized FD).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple

import numpy as np
import scipy.linalg

from ._validation import (MAX_SQUARED_MASS, as_reals, as_row, as_rows, check_float, check_int,
                          check_mass, check_row_mass)
from .hooks import Observable, ShrinkEvent
from .merging import Mergeable, check_members, unpack_state
from .params import Tunable
from .perturb import perturb
from .state import StateReader, all_or_nothing, copy_array, generator_json, state_part, stateful

__all__ = [
    "FrequentDirections",
    "RobustFrequentDirections",
    "GeneralizedFrequentDirections",
    "RandomProjectionSketch",
    "MAX_SQUARED_MASS",
    "ShrinkRecord",
    "ShrinkFailed",
    "from_bytes",
]


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


def svd_shrink(B: np.ndarray, m: int) -> tuple[np.ndarray, float, np.ndarray]:
    """FD's shrink of a tall buffer ``B`` through its SVD (:func:`gram_shrink` for a wide one).

    Returns ``(squared, delta, kept_rows)``: the squared singular values (descending),
    FD's delta and the rows ``sqrt(sigma_i^2 - delta) v_i^T`` that the shrink keeps.
    """
    sigma, Vt = _svd(B)
    squared = sigma ** 2
    delta, shrunk = shrink_amounts(squared, m)
    return squared, delta, np.sqrt(shrunk)[:, None] * Vt[:shrunk.size]


_EPS = np.finfo(float).eps
_ddot = scipy.linalg.blas.ddot

#: A shrink whose largest squared singular value is below this is redone on the buffer
#: scaled up by a power of two (exact): squares below ~1e-308 underflow to 0, and the
#: shrink would drop rows that hold all of the data (FD is scale-equivariant, float is not).
_TINY_SQUARE = 2.0 ** -600
_SMALLEST_NORMAL = float(np.finfo(float).tiny)


def power_of_two_scale(B: np.ndarray) -> float:
    """The power of two that brings the largest entry of a non-zero ``B`` into [0.5, 1)
    (multiplying by it is exact), at most ``2^1000``: a subnormal largest entry (below
    ~2e-308) would need more than a float holds, and ``2^1000`` already lifts it past 1e-24.

    >>> power_of_two_scale(np.array([[3.0]])), power_of_two_scale(np.array([[1e-320]])) == 2.0 ** 1000
    (0.25, True)
    """
    return float(np.ldexp(1.0, min(-int(np.frexp(float(np.abs(B).max()))[1]), 1000)))


def _shrink_of(B: np.ndarray, m: int) -> tuple[np.ndarray, float, np.ndarray]:
    """FD's shrink of the occupied rows ``B``: ``(squared, delta, kept_rows)`` through
    :func:`gram_shrink` for a wide buffer, :func:`svd_shrink` for a tall one."""
    if B.shape[0] < B.shape[1]:
        squared, delta, weights = gram_shrink(B @ B.T, B.shape[1], m)
        return squared, delta, weights @ B
    return svd_shrink(B, m)


class ShrinkRecord(NamedTuple):
    """What one shrink did (returned by :meth:`FrequentDirections.insert`)."""

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


def gram_shrink(gram: np.ndarray, columns: int, m: int) -> tuple[np.ndarray, float, np.ndarray]:
    """FD's shrink of a wide buffer ``B`` (fewer rows than columns) from ``B B^T`` alone.

    ``B B^T = U Lambda U^T`` gives ``v_i^T = u_i^T B / sigma_i``, so the kept row
    ``sqrt(sigma_i^2 - delta) v_i^T`` is ``w_i^T B`` with ``w_i = sqrt(1 - delta /
    lambda_i) u_i``: no division by a small singular value. Eigenvalues below ``columns *
    eps * lambda_max`` are rounding, not rank, and count as 0. An r x r eigenproblem
    instead of the SVD of the r x columns buffer: 28 against 134 us at 20 x 500.

    Returns ``(squared, delta, W)``: the squared singular values (descending), FD's delta
    and the weights whose product ``W @ B`` is the kept rows.
    """
    lam, U = np.linalg.eigh(gram)  # numpy's: far less overhead than scipy's at 20 x 20
    lam, U = lam[::-1], U[:, ::-1]
    lam = np.where(lam > columns * _EPS * max(lam[0], 0.0), lam, 0.0)
    delta, shrunk = shrink_amounts(lam, m)
    keep = shrunk.size
    return lam, delta, (U[:, :keep] * np.sqrt(shrunk / lam[:keep])).T


def shrink_amounts(squared: np.ndarray, m: int) -> tuple[float, np.ndarray]:
    """FD's shrink from the squared singular values (descending) of a full buffer.

    Returns ``delta = sigma_m^2`` (0 when there are fewer than m values: rank < m, e.g.
    d < m, and the shrink only compacts) and ``max(sigma_i^2 - delta, 0)`` for the rows
    kept: the first m-1 at most, and only the positive ones, so every kept row is non-zero.
    """
    delta = float(squared[m - 1]) if squared.size >= m else 0.0
    shrunk = np.maximum(squared[:m - 1] - delta, 0.0)
    return delta, shrunk[:int(np.count_nonzero(shrunk > 0.0))]


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


@stateful
class FrequentDirections(Observable, Tunable, Mergeable):
    r"""Frequent Directions (Liberty 2013; Luo et al. 2017, Algorithm 1; fast: Algorithm 2).

    Keeps ``B`` with m rows (``fast=True``: a 2m-row buffer). Each row goes into an
    all-zero row of ``B``; when none is left, the shrink

    .. math:: B = U \Sigma V^T,\quad \delta = \sigma_m^2,\quad
              B \leftarrow \sqrt{\max(\Sigma^2 - \delta I, 0)}\, V^T

    zeroes row m and beyond. The exact variant shrinks on every row once full
    (O(m^2 d) per row), the fast one every m+1 rows (O(md) amortized). Both guarantee,
    with ``Delta = delta_total``:

    - ``A^T A - B^T B`` is positive semidefinite;
    - ``||A^T A - B^T B||_2 <= Delta <= ||A - A_k||_F^2 / (m - k)`` for every k < m.

    All-zero input rows change nothing but ``n_seen`` (they would occupy no row).

    The stream comes in through :meth:`update` / :meth:`extend` (checked input) or
    :meth:`insert` (a learner's checked row; it returns the :class:`ShrinkRecord` of the
    shrink the row caused, if any); :attr:`rows` is a read-only view of the occupied rows
    and :meth:`load_state_dict` restores a saved state in place (docs/algorithms.md
    section 1). ``get_params()`` gives ``d``, ``m`` and ``fast``; none of them may change
    mid-stream (``HOT`` is empty: they fix the buffer). Sketches of the parts of a stream
    merge into a sketch of the union with the same guarantees (``merge``,
    :func:`explorer.merge`) and travel as bytes (``to_bytes``, ``from_bytes``):
    docs/merging.md.

    >>> import numpy as np
    >>> sk = FrequentDirections(d=3, m=2)
    >>> sk.extend(np.diag([3.0, 2.0, 1.0]))
    >>> np.round(np.diag(sk.gram()), 3).tolist(), sk.delta_total
    ([4.0, 0.0, 0.0], 5.0)
    >>> other = FrequentDirections(d=3, m=2)
    >>> other.update([0.0, 0.0, 1.0])
    >>> union = sk.merge(other)
    >>> union.n_seen, union.delta_total, np.round(np.diag(union.gram()), 3).tolist()
    (4, 6.0, [3.0, 0.0, 0.0])
    """

    def __init__(self, d: int, m: int, *, fast: bool = False):
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        self.m = check_int("m", m, minimum=2)
        if not isinstance(fast, (bool, np.bool_)):
            raise ValueError(f"fast must be True or False, got {fast!r}")
        self.fast = bool(fast)
        self._buffer = np.zeros((self.capacity, self.d))
        self._filled = 0
        self.n_seen = 0
        self.n_shrinks = 0
        self.delta_total = 0.0
        self._frobenius_squared = 0.0

    @property
    def capacity(self) -> int:
        """Rows in the buffer: m (exact) or 2m (fast)."""
        return 2 * self.m if self.fast else self.m

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(d={self.d}, m={self.m}, fast={self.fast}) "
                f"n_seen={self.n_seen} delta_total={self.delta_total:.4g}")

    # -- the stream ---------------------------------------------------------------
    @property
    def frobenius_squared(self) -> float:
        """``||A||_F^2``: the total squared norm of every row seen (what ``B`` summarizes)."""
        return self._frobenius_squared

    def update(self, x) -> None:
        """Add one row ``x`` (length d).

        All or nothing: a row that is not finite, or that would take ``||A||_F^2`` past
        :data:`MAX_SQUARED_MASS`, raises ``ValueError`` and changes nothing.
        """
        row = as_row(x, self.d)
        if row.any():
            self.insert(row)
        else:
            self.n_seen += 1  # an all-zero row would occupy no row

    def insert(self, row: np.ndarray, *, columns: np.ndarray | None = None,
               rule: "ShrinkRule | None" = None) -> "ShrinkRecord | None":
        """Add one row the caller has already checked (finite, not all zero): the fast path
        of a learner's round, without :meth:`update`'s conversion and checks of the input.

        ``columns``: the row is sparse, ``row`` holding its values at these column indices
        (S-FTRL's rows touch few of the d columns). ``rule``: how a full buffer's shrink is
        computed from the occupied rows, ``rule(B) -> (squared, delta, kept_rows)`` like
        :func:`svd_shrink` (S-FTRL's sparse Gram shrink); FD's own when None. Returns the
        :class:`ShrinkRecord` when the row filled the buffer (the kept rows are then orthogonal),
        else None.

        All or nothing: a row that would take ``||A||_F^2`` past :data:`MAX_SQUARED_MASS`
        is refused (``ValueError``), and a failed shrink raises :class:`ShrinkFailed` with
        the sketch as it was before the row.
        """
        mass = check_row_mass(self._frobenius_squared, row)
        self.n_seen += 1
        if columns is None:
            self._buffer[self._filled] = row
        else:
            self._buffer[self._filled, columns] = row
        self._filled += 1
        shrink = None
        if self._filled == self.capacity:
            try:
                shrink = self._shrink(rule)  # stores nothing unless it succeeds
            except (np.linalg.LinAlgError, FloatingPointError, ValueError) as error:
                self._filled -= 1
                self._buffer[self._filled] = 0.0
                self.n_seen -= 1
                raise ShrinkFailed(f"this row filled the buffer and the shrink failed ({error}); the sketch "
                                   f"is as it was before the row") from None
        self._frobenius_squared = mass
        return shrink

    def undo_point(self) -> Callable[[], None]:
        """A function that puts the sketch back as it is now, whatever one :meth:`insert`
        does to it: a learner's refused round is undone with it. A row that does not fill
        the buffer only takes the next free row, so three numbers undo it (the cheap common
        case); a row that fills it (a shrink) needs a copy of the whole state.

        >>> sk = FrequentDirections(d=2, m=2)
        >>> undo = sk.undo_point()
        >>> _ = sk.insert(np.array([1.0, 2.0]))
        >>> undo(); sk.n_seen, sk.rank, sk.frobenius_squared
        (0, 0, 0.0)
        """
        if self._filled == self.capacity - 1:
            state = self.state_dict()
            return lambda: self.load_state_dict(state)
        filled, n_seen, mass = self._filled, self.n_seen, self._frobenius_squared

        def undo_row() -> None:
            self._buffer[filled:] = 0.0
            self._filled, self.n_seen, self._frobenius_squared = filled, n_seen, mass
        return undo_row

    @property
    def rows(self) -> np.ndarray:
        """The occupied (non-zero) rows of ``B``, shape (r, d) with r < capacity, as a
        read-only view: no copy, so it follows the sketch as rows arrive (``.copy()`` to
        keep one); :attr:`sketch` is a copy of the whole buffer."""
        view = self._buffer[:self._filled]
        view.flags.writeable = False
        return view

    def extend(self, X) -> None:
        """Add the rows of ``X`` (n x d) in order; same result as ``update`` row by row.

        All or nothing: if any row is refused (non-finite, or ``||A||_F^2`` past
        :data:`MAX_SQUARED_MASS`), ``ValueError`` names it and nothing changes.
        """
        X = as_rows(X, self.d)
        self._insert(X, check_mass(self._frobenius_squared, X, name="X"))

    def _insert(self, X: np.ndarray, mass: float | None = None) -> None:
        """Copy validated rows into free buffer rows, shrinking whenever it fills up.

        A shrink that fails (LAPACK, or a non-finite result) restores the sketch as it was
        before the call and raises :class:`ShrinkFailed`, a ``ValueError`` naming the row.
        """
        if mass is None:
            mass = check_mass(self._frobenius_squared, X)
        before = (self._filled, self.n_seen, self.n_shrinks, self.delta_total, self._frobenius_squared)
        nonzero = np.flatnonzero(X.any(axis=1))
        # A shrink stores nothing unless it succeeds, so a failed first shrink leaves the
        # occupied rows as they were; only a call that may shrink twice keeps a copy of them.
        kept_before = (self._buffer[:before[0]].copy()
                       if nonzero.size > self.capacity - before[0] else None)
        seen_before = self.n_seen
        start = 0
        while start < nonzero.size:
            block = nonzero[start:start + self.capacity - self._filled]
            self._buffer[self._filled:self._filled + block.size] = X[block]
            self._filled += block.size
            start += block.size
            if self._filled == self.capacity:
                self.n_seen = seen_before + int(block[-1]) + 1
                try:
                    self._shrink()
                except (np.linalg.LinAlgError, FloatingPointError, ValueError) as error:
                    if kept_before is not None:
                        self._buffer[:before[0]] = kept_before
                    self._buffer[before[0]:] = 0.0
                    self._filled, self.n_seen, self.n_shrinks, self.delta_total, self._frobenius_squared = before
                    raise ShrinkFailed(f"row {int(block[-1])} of this call: the shrink failed "
                                       f"({error}); the sketch is as it was before the call") from None
        self.n_seen = seen_before + X.shape[0]
        self._frobenius_squared = mass

    def _shrink(self, rule: "ShrinkRule | None" = None) -> "ShrinkRecord":
        """A wide buffer shrinks through ``B B^T`` (:func:`gram_shrink`, 3-4x faster), a
        tall one through LAPACK's SVD (or by ``rule``, see :meth:`insert`). Both square
        the singular values: if the largest square is near underflow (entries below
        ~1e-90), the shrink is redone on the buffer scaled up by a power of two
        (:func:`power_of_two_scale`, exact), so no row is lost. Nothing is stored unless
        the result is finite (else :class:`ShrinkFailed`)."""
        B = self._buffer[:self._filled]
        squared, delta, kept_rows = _shrink_of(B, self.m) if rule is None else rule(B)
        if squared[0] < _TINY_SQUARE:
            scale = power_of_two_scale(B)
            squared, delta, kept_rows = _shrink_of(B * scale, self.m)
            scaled_delta = delta
            squared, delta, kept_rows = squared / scale / scale, delta / scale / scale, kept_rows / scale
            if scaled_delta > 0 and delta < _SMALLEST_NORMAL:
                # Delta itself underflows (entries below ~1e-154): store the smallest normal
                # number instead, an upper bound of the true delta, so ||A^T A - B^T B||_2 <=
                # delta_total stays true (a delta rounded to 0 would claim an exact sketch).
                delta = _SMALLEST_NORMAL
        if not (np.isfinite(delta) and np.isfinite(squared).all() and np.isfinite(kept_rows).all()):
            raise ShrinkFailed("the shrink's result is not finite")
        self._commit_shrink(np.sqrt(squared), delta, kept_rows)
        return ShrinkRecord(squared, delta, kept_rows.shape[0])

    def _commit_shrink(self, sigma: np.ndarray, delta: float, kept_rows: np.ndarray) -> None:
        """Store the rows a shrink keeps (zeroing the rest), account for delta, tell hooks."""
        keep = kept_rows.shape[0]
        self._buffer[:keep] = kept_rows
        self._buffer[keep:] = 0.0  # exactly zero: no "ghost" rows from rounding
        self._filled = keep
        self.n_shrinks += 1
        self.delta_total += delta
        self._after_shrink(delta)
        if self._hooks:
            self._emit(ShrinkEvent(t=self.n_seen, sigma=sigma, delta=delta,
                                   alpha=self._regularizer()))

    def _after_shrink(self, delta: float) -> None:
        """Subclass hook: RFD grows alpha here."""

    def _regularizer(self) -> float | None:
        """The alpha reported in events: None for plain FD."""
        return None

    # -- what the sketch holds ------------------------------------------------------
    @property
    def sketch(self) -> np.ndarray:
        """A copy of the whole buffer ``B`` (capacity x d); its zero rows are free rows."""
        return self._buffer.copy()

    @property
    def rank(self) -> int:
        """Number of occupied rows (an upper bound on rank(B))."""
        return self._filled

    def singular_values(self) -> np.ndarray:
        """Singular values of the current ``B``, descending (O(r^2 d))."""
        if self._filled == 0:
            return np.zeros(0)
        return scipy.linalg.svdvals(self._buffer[:self._filled], check_finite=False)

    def gram(self) -> np.ndarray:
        """``B^T B``, the d x d approximation of ``A^T A`` (for inspection: O(d^2) memory)."""
        B = self._buffer[:self._filled]
        return B.T @ B

    # -- merging (docs/merging.md) ----------------------------------------------------
    def _merged(self, other: "FrequentDirections"
                ) -> tuple["FrequentDirections", float, int, tuple[int, int]]:
        """What :meth:`~explorer.merging.Mergeable.merge` needs: a fresh sketch holding both
        sketches' rows, the merge's own delta and shrinks, and the rows each part brought."""
        merged = type(self)(**self.get_params())
        delta, n_shrinks = self._merge_into(merged, other)
        return merged, delta, n_shrinks, (self._filled, other._filled)

    def _merge_into(self, merged: "FrequentDirections", other: "FrequentDirections") -> tuple[float, int]:
        """Fill the fresh sketch ``merged`` with the occupied rows of ``self``, then of
        ``other``, through the stream's own path (a shrink whenever the buffer fills), and
        add up the counts, deltas and masses. Returns the merge's own (delta, shrinks)."""
        mass = self._frobenius_squared + other._frobenius_squared
        if not mass <= MAX_SQUARED_MASS:
            raise ValueError(f"the merged sketch's total squared norm ||A||_F^2 = {mass:.3g} would exceed "
                             f"{MAX_SQUARED_MASS:.0e}, beyond which its shrink overflows; rescale the data")
        try:
            merged._insert(np.concatenate([self.rows, other.rows]), mass)
        except ShrinkFailed as error:
            raise ShrinkFailed(f"the merge's shrink failed ({error}); both sketches are unchanged") from None
        delta, n_shrinks = merged.delta_total, merged.n_shrinks
        merged.n_seen = self.n_seen + other.n_seen
        merged.n_shrinks = self.n_shrinks + other.n_shrinks + n_shrinks
        merged.delta_total = self.delta_total + other.delta_total + delta
        return delta, n_shrinks

    # -- persistence ------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Plain arrays and scalars; ``from_state_dict`` continues exactly from here."""
        return {"kind": type(self).__name__, "d": self.d, "m": self.m, "fast": self.fast,
                "buffer": copy_array(self._buffer), "filled": self._filled, "n_seen": self.n_seen,
                "n_shrinks": self.n_shrinks, "delta_total": self.delta_total,
                "frobenius_squared": self._frobenius_squared, **self._extra_state()}

    def _extra_state(self) -> dict:
        return {}

    @classmethod
    def from_state_dict(cls, state: dict) -> "FrequentDirections":
        """The sketch ``state`` describes; its ``buffer`` must have the shape ``d``, ``m``
        and ``fast`` give, checked before the sketch's own buffer is allocated (so a state
        claiming ``d = m = 10**6`` is a ``ValueError``, not a ``MemoryError``)."""
        reader = StateReader(state, cls)
        d, m, fast = reader.count("d", minimum=1), reader.count("m", minimum=2), reader.flag("fast")
        reader.check_shape("buffer", (2 * m if fast else m, d), f"d = {d}, m = {m}, fast = {fast}")
        sk = cls(d, m, fast=fast, **cls._extra_arguments(reader))
        sk.load_state_dict(state)
        return sk

    @classmethod
    def _extra_arguments(cls, reader: StateReader) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Become the sketch ``state`` describes, in place (same d, m, fast; a learner's
        sketch keeps its identity and hooks). Everything is checked before anything is
        stored: a state no run could have written (wrong shape, NaN, a negative counter,
        rows past ``filled``, a total below what ``B`` holds) is refused with a
        ``ValueError`` naming the key, and the sketch stays as it was."""
        reader = StateReader(state, type(self))
        for key, value in self._settings().items():
            reader.same(key, value)
        buffer = reader.array("buffer", self._buffer.shape)
        filled = reader.count("filled", maximum=self.capacity - 1)
        if buffer[filled:].any():
            raise reader.refuse("buffer", f"zero after its first {filled} rows ('filled')", "non-zero rows")
        n_seen = reader.count("n_seen", minimum=filled)
        n_shrinks = reader.count("n_shrinks")
        delta_total = reader.number("delta_total", minimum=0.0)
        if delta_total > 0 and n_shrinks == 0:
            raise reader.refuse("delta_total", "0 before the first shrink (n_shrinks = 0)", delta_total)
        with np.errstate(over="ignore"):  # a tampered huge buffer gives inf: refused below
            held = float(np.sum(buffer ** 2)) if filled else 0.0
        if not held + delta_total <= MAX_SQUARED_MASS:
            raise reader.refuse("buffer", f"of total squared norm at most {MAX_SQUARED_MASS:.0e}", held)
        low, high = mass_bounds(held, delta_total, self.m, min(self.capacity, self.d), n_shrinks * self.capacity * self.d)
        # A state saved before the total was kept: ||B||_F^2 + m Delta (less its rounding
        # slack) is a lower bound of it. Bytes of the format always have it (check_members).
        total = (reader.number("frobenius_squared", minimum=0.0, maximum=MAX_SQUARED_MASS)
                 if reader.has("frobenius_squared") else max(held + delta_total, low))
        if not low <= total <= high:
            raise reader.refuse("frobenius_squared", f"within [{low:.6g}, {high:.6g}]: ||B||_F^2 + m delta_total "
                                f"<= ||A||_F^2 <= ||B||_F^2 + min(capacity, d) delta_total (each shrink removes "
                                f"between m and min(capacity, d) times its delta; none: exactly ||B||_F^2)", total)
        self._buffer[:] = buffer
        self._filled, self.n_seen, self.n_shrinks = filled, n_seen, n_shrinks
        self.delta_total, self._frobenius_squared = delta_total, total

    def _settings(self) -> dict:
        """The constructor's arguments as a state dict stores them."""
        return {"d": self.d, "m": self.m, "fast": self.fast}


@stateful
class RobustFrequentDirections(FrequentDirections):
    r"""Robust Frequent Directions (Luo et al. 2017, Algorithms 3-4; JMLR 2019, Algorithm 2).

    Frequent Directions plus one scalar: at every shrink ``alpha += delta / 2``,
    starting from ``alpha0 >= 0``; ``B^T B + alpha I`` approximates ``A^T A + alpha0 I``.
    ``B`` is exactly the FD matrix for the same rows. Guarantees (Theorems 3-4):

    - ``-(alpha - alpha0) I <= A^T A + alpha0 I - (B^T B + alpha I) <= (alpha - alpha0) I``,
      so the spectral error is at most ``Delta / 2`` -- half of FD's bound;
    - ``kappa(B^T B + alpha I) <= kappa(B^T B + alpha0 I)``.

    Each shrink is the spectral-norm-optimal rank-(m-1)-plus-scaled-identity
    approximation of ``B_hat^T B_hat + alpha I`` (Theorems 1-2).

    ``alpha0`` is hot (``HOT``): ``B`` and ``Delta`` do not depend on it, so
    ``with_params(alpha0=...)`` continues the stream with ``alpha = alpha0 + Delta / 2``
    for the new ``alpha0`` (what the dashboard's alpha0 slider does).

    >>> import numpy as np
    >>> sk = RobustFrequentDirections(d=3, m=2, alpha0=0.0)
    >>> sk.extend(np.diag([3.0, 2.0, 1.0]))
    >>> sk.alpha, np.round(np.diag(sk.gram()), 3).tolist()
    (2.5, [6.5, 2.5, 2.5])
    >>> sk.with_params(alpha0=1.0).alpha, sk.alpha
    (3.5, 2.5)
    """

    HOT = ("alpha0",)

    def __init__(self, d: int, m: int, *, alpha0: float = 0.0, fast: bool = False):
        super().__init__(d, m, fast=fast)
        self.alpha0 = check_float("alpha0", alpha0, minimum=0.0)

    @property
    def alpha(self) -> float:
        """``alpha0 + Delta / 2``: the regularizer that makes RFD's error two-sided."""
        return self.alpha0 + self.delta_total / 2

    def _regularizer(self) -> float:
        return self.alpha

    def __repr__(self) -> str:
        return (f"RobustFrequentDirections(d={self.d}, m={self.m}, alpha0={self.alpha0:g}, "
                f"fast={self.fast}) n_seen={self.n_seen} alpha={self.alpha:.4g}")

    def gram(self) -> np.ndarray:
        """``B^T B + alpha I``, the approximation of ``A^T A + alpha0 I``."""
        return super().gram() + self.alpha * np.eye(self.d)

    def _extra_state(self) -> dict:
        return {"alpha0": self.alpha0}

    @classmethod
    def _extra_arguments(cls, reader: StateReader) -> dict:
        return {"alpha0": reader.number("alpha0", minimum=0.0)}

    def _settings(self) -> dict:
        return {**super()._settings(), "alpha0": self.alpha0}


@stateful
class GeneralizedFrequentDirections(Observable, Tunable, Mergeable):
    r"""Generalized FD for indefinite sums (Luo et al., KDD 2018, Algorithm 2).

    Approximates ``G = sum_t s_t g_t g_t^T`` by ``B+^T B+ - B-^T B-``: a row with weight
    ``s > 0`` goes into the FD sketch ``positive`` as ``sqrt(s) g``, one with ``s < 0``
    into ``negative`` as ``sqrt(-s) g``. With ``H+``/``H-`` the matrices of those scaled
    rows, ``||G - (B+^T B+ - B-^T B-)||_2 <= Delta+ + Delta- <=
    (||H+ - H+_k||_F^2 + ||H- - H-_k||_F^2) / (m - k)``.
    Shrink events of the two parts are re-emitted with ``part`` "+" or "-". ``merge``
    merges the positive parts and the negative parts of two sketches (docs/merging.md
    section 4).

    >>> import numpy as np
    >>> sk = GeneralizedFrequentDirections(d=2, m=2)
    >>> sk.extend(np.eye(2), [2.0, -1.0])
    >>> sk.gram().tolist()
    [[2.0, 0.0], [0.0, -1.0]]
    """

    def __init__(self, d: int, m: int, *, fast: bool = False):
        super().__init__()
        self.positive = FrequentDirections(d, m, fast=fast)
        self.negative = FrequentDirections(d, m, fast=fast)
        self.d, self.m, self.fast = self.positive.d, self.positive.m, self.positive.fast
        self.n_seen = 0
        self._forward_events(self.positive, self._relabel("+"))
        self._forward_events(self.negative, self._relabel("-"))

    def _relabel(self, part: str):
        return lambda event: dataclasses.replace(event, t=self.n_seen, part=part)

    def __repr__(self) -> str:
        return (f"GeneralizedFrequentDirections(d={self.d}, m={self.m}, fast={self.fast}) "
                f"n_seen={self.n_seen} delta_total={self.delta_total:.4g}")

    def update(self, x, s: float) -> None:
        """Add ``s x x^T`` (``s`` a finite non-zero weight)."""
        self._insert(as_row(x, self.d)[None, :], np.array([_check_weight(s)]))

    def extend(self, X, s) -> None:
        """Add ``sum_i s_i x_i x_i^T`` in order; ``s`` a scalar or one weight per row."""
        X = as_rows(X, self.d)
        weights = as_reals(s, "s")
        if weights.ndim == 0:
            weights = np.full(X.shape[0], float(weights))
        if weights.shape != (X.shape[0],):
            raise ValueError(f"s must be a scalar or have one weight per row ({X.shape[0]}), "
                             f"got shape {weights.shape}")
        for weight in weights:
            _check_weight(weight)
        self._insert(X, weights)

    def insert(self, row: np.ndarray, positive: bool, *, columns: np.ndarray | None = None,
               rule: "ShrinkRule | None" = None) -> "ShrinkRecord | None":
        """Add a row the caller has already checked and scaled (``sqrt(|s|) g``) to the part
        of its weight's sign: the fast path of S-FTRL's round, with
        :meth:`FrequentDirections.insert`'s ``columns`` (a sparse row) and ``rule`` (how
        that part shrinks). Returns that part's :class:`ShrinkRecord`, or None; all or
        nothing as the part's own ``insert``."""
        shrink = (self.positive if positive else self.negative).insert(row, columns=columns, rule=rule)
        self.n_seen += 1
        return shrink

    def _insert(self, X: np.ndarray, weights: np.ndarray) -> None:
        """All or nothing: both parts' totals are checked first, and a failed shrink in
        either part puts both back as they were before the call."""
        scaled = np.sqrt(np.abs(weights))[:, None] * X
        for part, rows in ((self.positive, np.flatnonzero(weights > 0)),
                           (self.negative, np.flatnonzero(weights < 0))):
            check_mass(part.frobenius_squared, scaled[rows], name="X", row_numbers=rows)
        if len(X) == 1:  # one row: its part's own extend is all or nothing
            self.n_seen += 1
            try:
                (self.positive if weights[0] > 0 else self.negative).extend(scaled)
            except ShrinkFailed:
                self.n_seen -= 1
                raise
            return
        with all_or_nothing(self):
            for row, weight in zip(scaled, weights):
                self.n_seen += 1
                (self.positive if weight > 0 else self.negative).extend(row[None, :])

    @property
    def delta_total(self) -> float:
        """Sum of the shrink amounts of both parts."""
        return self.positive.delta_total + self.negative.delta_total

    def gram(self) -> np.ndarray:
        """``B+^T B+ - B-^T B-`` (d x d, for inspection)."""
        return self.positive.gram() - self.negative.gram()

    def _merged(self, other: "GeneralizedFrequentDirections"
                ) -> tuple["GeneralizedFrequentDirections", float, int, tuple[int, int]]:
        """What :meth:`~explorer.merging.Mergeable.merge` needs: the positive parts merged,
        and the negative parts (``B+`` summarizes the positive rows of both streams)."""
        merged = type(self)(self.d, self.m, fast=self.fast)
        delta, n_shrinks = 0.0, 0
        for mine, into, theirs in ((self.positive, merged.positive, other.positive),
                                   (self.negative, merged.negative, other.negative)):
            part_delta, part_shrinks = mine._merge_into(into, theirs)
            delta, n_shrinks = delta + part_delta, n_shrinks + part_shrinks
        merged.n_seen = self.n_seen + other.n_seen
        ranks = (self.positive.rank + self.negative.rank, other.positive.rank + other.negative.rank)
        return merged, delta, n_shrinks, ranks

    def state_dict(self) -> dict:
        parts = {f"{name}.{key}": value
                 for name, sketch in (("positive", self.positive), ("negative", self.negative))
                 for key, value in sketch.state_dict().items()}
        return {"kind": type(self).__name__, "d": self.d, "m": self.m, "fast": self.fast,
                "n_seen": self.n_seen, **parts}

    @classmethod
    def from_state_dict(cls, state: dict) -> "GeneralizedFrequentDirections":
        reader = StateReader(state, cls)
        d, m, fast = reader.count("d", minimum=1), reader.count("m", minimum=2), reader.flag("fast")
        for part in ("positive", "negative"):  # before the parts' buffers are allocated
            reader.check_shape(f"{part}.buffer", (2 * m if fast else m, d), f"d = {d}, m = {m}, fast = {fast}")
        sk = cls(d, m, fast=fast)
        sk.load_state_dict(state)
        return sk

    def load_state_dict(self, state: dict) -> None:
        """In place (same d, m, fast), both parts checked before either is stored."""
        reader = StateReader(state, type(self))
        for key in ("d", "m", "fast"):
            reader.same(key, getattr(self, key))
        parts = [state_part(state, f"{name}.") for name in ("positive", "negative")]
        checks = [FrequentDirections(self.d, self.m, fast=self.fast) for _ in parts]
        for check, part in zip(checks, parts):
            check.load_state_dict(part)  # refuses a bad part before anything is stored
        n_seen = reader.count("n_seen", minimum=checks[0].n_seen + checks[1].n_seen)
        self.positive.load_state_dict(parts[0])
        self.negative.load_state_dict(parts[1])
        self.n_seen = n_seen


_MERGEABLE = {cls.__name__: cls for cls in (FrequentDirections, RobustFrequentDirections,
                                             GeneralizedFrequentDirections)}


def from_bytes(data: bytes) -> "FrequentDirections | GeneralizedFrequentDirections":
    """The sketch ``to_bytes`` wrote, of whichever mergeable kind it is (FD, Robust FD,
    Generalized FD); ``Class.from_bytes`` reads one kind only. docs/merging.md section 5
    describes the format; everything it refuses is a ``ValueError`` saying what is wrong.

    >>> import numpy as np
    >>> sk = RobustFrequentDirections(d=3, m=2, alpha0=0.5)
    >>> sk.extend(np.eye(3))
    >>> copy = from_bytes(sk.to_bytes())
    >>> type(copy).__name__, copy.alpha == sk.alpha
    ('RobustFrequentDirections', True)
    """
    state = unpack_state(data, tuple(_MERGEABLE))
    cls = _MERGEABLE[str(state["kind"])]
    check_members(cls, state)
    return cls.from_state_dict(state)


def _check_weight(s) -> float:
    s = check_float("s", s)
    if s == 0.0:
        raise ValueError("s must be a non-zero weight (positive rows go to B+, negative to B-), got 0")
    return s


@stateful
class RandomProjectionSketch(Observable, Tunable):
    r"""Gaussian random-projection sketch (the RP-SON baseline of Luo et al. 2017).

    ``B <- B + r_t a_t^T`` with ``r_t ~ N(0, I_m / m)``, so ``E[B^T B] = A^T A``.
    No shrink ever happens; the error is random rather than one-sided.

    >>> import numpy as np
    >>> sk = RandomProjectionSketch(d=3, m=4, seed=0)
    >>> sk.extend(np.eye(3))
    >>> sk.sketch.shape, sk.n_seen
    ((4, 3), 3)
    """

    def __init__(self, d: int, m: int, *, seed: int | None = None):
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        self.m = check_int("m", m, minimum=1)
        self.seed = None if seed is None else check_int("seed", seed, minimum=0)
        self._rng = np.random.default_rng(self.seed)
        self._buffer = np.zeros((self.m, self.d))
        self.n_seen = 0

    def __repr__(self) -> str:
        return f"RandomProjectionSketch(d={self.d}, m={self.m}) n_seen={self.n_seen}"

    def update(self, x) -> None:
        """Add one row ``x``."""
        self._insert(as_row(x, self.d)[None, :])

    def extend(self, X) -> None:
        """Add the rows of ``X`` in order (same random draws as row by row)."""
        self._insert(as_rows(X, self.d))

    def _insert(self, X: np.ndarray) -> np.ndarray:
        """All or nothing: rows whose squared norms sum past :data:`MAX_SQUARED_MASS` are
        refused before any draw, and a sum that still overflows leaves ``B`` and the
        generator as they were. Returns the draws ``R`` (n x m)."""
        check_mass(0.0, X, name="X")
        generator = self._rng.bit_generator.state
        R = perturb(self._rng.standard_normal((X.shape[0], self.m)) / np.sqrt(self.m))
        updated = self._buffer + R.T @ X
        if not np.isfinite(updated).all():
            self._rng.bit_generator.state = generator
            raise ValueError(f"the sketch B would overflow (its entries pass 1e308); rescale "
                             f"the data, e.g. divide it by its largest entry; nothing was added")
        self._buffer[:] = updated
        self.n_seen += X.shape[0]
        return R

    def undo_point(self) -> Callable[[], None]:
        """A function that puts the sketch back as it is now (``B`` and the generator),
        whatever one :meth:`insert` does to it: every insert changes every row of ``B``."""
        state = self.state_dict()
        return lambda: self.load_state_dict(state)

    def insert(self, row: np.ndarray) -> np.ndarray:
        """Add one row the caller has already checked (a learner's round); returns the
        random direction ``r`` drawn for it (``B <- B + r row^T``), which RP-SON needs to
        keep ``B B^T`` up to date."""
        return self._insert(row[None, :])[0]

    @property
    def sketch(self) -> np.ndarray:
        """A copy of ``B`` (m x d)."""
        return self._buffer.copy()

    @property
    def rows(self) -> np.ndarray:
        """``B`` (m x d) as a read-only view (no copy; ``.copy()`` to keep one)."""
        view = self._buffer[:]
        view.flags.writeable = False
        return view

    def gram(self) -> np.ndarray:
        """``B^T B``, an unbiased estimate of ``A^T A``."""
        return self._buffer.T @ self._buffer

    def state_dict(self) -> dict:
        return {"kind": type(self).__name__, "d": self.d, "m": self.m,
                "seed": -1 if self.seed is None else self.seed,
                "buffer": copy_array(self._buffer), "n_seen": self.n_seen,
                "rng": generator_json(self._rng)}

    @classmethod
    def from_state_dict(cls, state: dict) -> "RandomProjectionSketch":
        reader = StateReader(state, cls)
        d, m = reader.count("d", minimum=1), reader.count("m", minimum=1)
        reader.check_shape("buffer", (m, d), f"d = {d}, m = {m}")  # before allocating B
        sk = cls(d, m)
        sk.load_state_dict(state)
        return sk

    def load_state_dict(self, state: dict) -> None:
        """In place (same d and m); the buffer, the count and the generator's state are all
        checked before any is stored."""
        reader = StateReader(state, type(self))
        reader.same("d", self.d)
        reader.same("m", self.m)
        buffer = reader.array("buffer", self._buffer.shape)
        n_seen = reader.count("n_seen")
        seed = reader.seed()
        generator = reader.generator_state()
        self._buffer[:] = buffer
        self.n_seen = n_seen
        self.seed = seed  # where the draws came from; the generator's state is what counts
        self._rng.bit_generator.state = generator
