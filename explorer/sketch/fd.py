"""Frequent Directions (Liberty 2013; Luo et al. 2017, Algorithms 1-2): the round.

Each row takes a free row of the buffer ``B``; a full buffer shrinks by FD's rule
(:mod:`explorer.sketch.shrink`). Saving, loading and undoing are
:class:`~explorer.sketch.fd_state.FrequentDirectionsState`'s; :func:`merge_into` merges two
sketches through the stream's own path (docs/merging.md).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .. import compiled
from .._validation import (MAX_SQUARED_MASS, as_row_and_norm, as_rows_and_norms, check_int, check_mass, check_row_mass,
                           squared_norms)
from ..hooks import Observable, ShrinkEvent
from ..merging import Mergeable
from ..params import Tunable
from ..state import stateful
from .fd_state import FrequentDirectionsState
from .shrink import TINY_SQUARE, ShrinkFailed, ShrinkRecord, ShrinkRule, fd_shrink, power_of_two_scale

__all__ = ["FrequentDirections", "merge_into"]

_SMALLEST_NORMAL = float(np.finfo(float).tiny)


@stateful
class FrequentDirections(Observable, Tunable, Mergeable, FrequentDirectionsState):
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

    Parameters: ``d`` (row length), ``m`` (rows kept), ``fast``; none may change mid-stream
    (``HOT`` is empty: they fix the buffer). Rows come in through :meth:`update` /
    :meth:`extend` (checked input) or :meth:`insert` (a learner's checked row); sketches of
    the parts of a stream ``merge`` into a sketch of the union with the same guarantees and
    travel as bytes (``to_bytes``, ``from_bytes``): docs/algorithms.md section 1,
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
        row, squared = as_row_and_norm(x, self.d)
        if squared > 0.0 or row.any():  # entries below ~1e-162 square to 0
            self.insert(row, squared=squared)
        else:
            self.n_seen += 1  # an all-zero row would occupy no row

    def insert(self, row: np.ndarray, *, columns: np.ndarray | None = None, rule: "ShrinkRule | None" = None,
               squared: float | None = None) -> "ShrinkRecord | None":
        """Add one row the caller has already checked (finite, not all zero): the fast path
        of a learner's round, without :meth:`update`'s conversion and checks of the input.

        ``columns``: the row is sparse, ``row`` holding its values at these column indices
        (S-FTRL's rows touch few of the d columns). ``rule``: how a full buffer's shrink is
        computed from the occupied rows, ``rule(B) -> (squared, delta, kept_rows)`` like
        :func:`~explorer.sketch.svd_shrink` (S-FTRL's sparse Gram shrink); FD's own when
        None. Returns the :class:`~explorer.sketch.ShrinkRecord` when the row filled the
        buffer (the kept rows are then orthogonal), else None. ``squared``: the row's
        ``||x||^2``, if the caller has it (one dot product fewer).

        All or nothing: a row that would take ``||A||_F^2`` past :data:`MAX_SQUARED_MASS`
        is refused (``ValueError``), and a failed shrink raises
        :class:`~explorer.sketch.ShrinkFailed` with the sketch as it was before the row.
        """
        mass = check_row_mass(self._frobenius_squared, row, squared=squared)
        saved = self._checkpoint()
        try:
            self.n_seen += 1
            if columns is None:
                self._buffer[self._filled] = row
            else:
                self._buffer[self._filled, columns] = row
            self._filled += 1
            shrink = self._shrink(rule) if self._filled == self.capacity else None
            self._frobenius_squared = mass
        except BaseException as error:  # a failed shrink, an interrupt, a hook's error: undone
            raise self._undone(saved, error, lambda: f"this row filled the buffer and the shrink failed "
                                                     f"({error}); the sketch is as it was before the row") from None
        return shrink

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
        X, squared = as_rows_and_norms(X, self.d)
        self._insert(X, check_mass(self._frobenius_squared, X, name="X", squared=squared), squared)

    def _insert(self, X: np.ndarray, mass: float | None = None,
                squared: np.ndarray | None = None) -> None:
        """Copy validated rows into free buffer rows, shrinking whenever it fills up.

        ``squared``: the rows' squared norms, if known (they find the all-zero rows).
        A shrink that fails (LAPACK, or a non-finite result) restores the sketch as it was
        before the call and raises ``ShrinkFailed``, a ``ValueError`` naming the row.
        """
        if squared is None:
            squared = squared_norms(X)
        if mass is None:
            mass = check_mass(self._frobenius_squared, X, squared=squared)
        nonzero = _nonzero_rows(X, squared)
        # a copy of the occupied rows only when a shrink may overwrite them
        saved = self._checkpoint(shrinks=nonzero.size >= self.capacity - self._filled)
        seen_before, start, block = self.n_seen, 0, nonzero[:0]
        try:
            while start < nonzero.size:
                block = nonzero[start:start + self.capacity - self._filled]
                free = self._buffer[self._filled:self._filled + block.size]
                if block[-1] - block[0] == block.size - 1:
                    free[:] = X[block[0]:block[-1] + 1]  # consecutive rows: one copy, no gather
                else:
                    np.take(X, block, axis=0, out=free, mode="clip")  # indices are in range
                self._filled += block.size
                start += block.size
                if self._filled == self.capacity:
                    self.n_seen = seen_before + int(block[-1]) + 1
                    self._shrink()
            self.n_seen = seen_before + X.shape[0]
            self._frobenius_squared = mass
        except BaseException as error:  # a failed shrink, an interrupt, a hook's error: undone
            raise self._undone(saved, error, lambda: f"row {int(block[-1])} of this call: the shrink failed "
                                                     f"({error}); the sketch is as it was before the call") from None

    def _shrink(self, rule: "ShrinkRule | None" = None) -> "ShrinkRecord":
        """Shrink the full buffer (:func:`_shrink_of`) and store the result."""
        squared, delta, kept_rows = _shrink_of(self._buffer[:self._filled], self.m, rule)
        self._commit_shrink(squared, delta, kept_rows)
        return ShrinkRecord(squared, delta, kept_rows.shape[0])

    def _commit_shrink(self, squared: np.ndarray, delta: float, kept_rows: np.ndarray) -> None:
        """Store the rows a shrink keeps (zeroing the rest), account for delta, tell hooks."""
        keep = kept_rows.shape[0]
        self._buffer[:keep] = kept_rows
        self._buffer[keep:] = 0.0  # exactly zero: no "ghost" rows from rounding
        self._filled = keep
        self.n_shrinks += 1
        self.delta_total += delta
        self._after_shrink(delta)
        if self._hooks:
            self._emit(ShrinkEvent(t=self.n_seen, sigma=np.sqrt(squared), delta=delta,
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
        delta, n_shrinks = merge_into(merged, self, other)
        return merged, delta, n_shrinks, (self._filled, other._filled)


def _shrink_of(B: np.ndarray, m: int, rule: "ShrinkRule | None") -> tuple[np.ndarray, float, np.ndarray]:
    """FD's shrink of the occupied rows ``B``: a wide buffer through ``B B^T``, a tall one
    through LAPACK's SVD (:func:`~explorer.sketch.shrink.fd_shrink`, compiled when it can be:
    :func:`explorer.compiled.fd_shrink`; or by ``rule``, see :meth:`FrequentDirections.insert`).
    Both square the singular values: if the largest square is near underflow (entries below
    ~1e-90), the shrink is redone on the buffer scaled up by a power of two (exact), so no row
    is lost. ``ShrinkFailed`` unless the result is finite."""
    fast = compiled.fd_shrink(B, m) if rule is None else None
    if fast is not None and fast[0][0] >= TINY_SQUARE:
        return fast  # finite: the compiled shrink checked it
    squared, delta, kept_rows = fast or (fd_shrink(B, m) if rule is None else rule(B))
    if squared[0] < TINY_SQUARE:
        scale = power_of_two_scale(B)
        squared, delta, kept_rows = fd_shrink(B * scale, m)
        scaled_delta = delta
        squared, delta, kept_rows = squared / scale / scale, delta / scale / scale, kept_rows / scale
        if scaled_delta > 0 and delta < _SMALLEST_NORMAL:
            # Delta itself underflows (entries below ~1e-154): store the smallest normal
            # number instead, an upper bound of the true delta, so ||A^T A - B^T B||_2 <=
            # delta_total stays true (a delta rounded to 0 would claim an exact sketch).
            delta = _SMALLEST_NORMAL
    if not (np.isfinite(delta) and np.isfinite(squared).all() and np.isfinite(kept_rows).all()):
        raise ShrinkFailed("the shrink's result is not finite")
    return squared, delta, kept_rows


def _nonzero_rows(X: np.ndarray, squared: np.ndarray) -> np.ndarray:
    """Indices of the rows of ``X`` that are not all zero, from their squared norms: a
    positive norm is a non-zero row; a zero norm is searched entrywise (entries below
    ~1e-162 square to 0)."""
    zero = np.flatnonzero(squared == 0.0)
    if zero.size == 0:
        return np.arange(X.shape[0])
    tiny = zero[X[zero].any(axis=1)]
    return np.sort(np.concatenate([np.flatnonzero(squared > 0.0), tiny]))


def merge_into(merged: FrequentDirections, first: FrequentDirections,
               second: FrequentDirections) -> tuple[float, int]:
    """Fill the fresh sketch ``merged`` with the occupied rows of ``first``, then of
    ``second``, through the stream's own path (a shrink whenever the buffer fills), and
    add up the counts, deltas and masses. Returns the merge's own (delta, shrinks)."""
    mass = first._frobenius_squared + second._frobenius_squared
    if not mass <= MAX_SQUARED_MASS:
        raise ValueError(f"the merged sketch's total squared norm ||A||_F^2 = {mass:.3g} would exceed "
                         f"{MAX_SQUARED_MASS:.0e}, beyond which its shrink overflows; rescale the data")
    try:
        merged._insert(np.concatenate([first.rows, second.rows]), mass)
    except ShrinkFailed as error:
        raise ShrinkFailed(f"the merge's shrink failed ({error}); both sketches are unchanged") from None
    delta, n_shrinks = merged.delta_total, merged.n_shrinks
    merged.n_seen = first.n_seen + second.n_seen
    merged.n_shrinks = first.n_shrinks + second.n_shrinks + n_shrinks
    merged.delta_total = first.delta_total + second.delta_total + delta
    return delta, n_shrinks
