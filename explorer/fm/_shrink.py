"""The shrink of an S-FTRL sketch part: Frequent Directions' shrink, fast for wide sparse buffers.

S-FTRL keeps its gradient sum in a :class:`~explorer.sketch.GeneralizedFrequentDirections`
(two :class:`~explorer.sketch.FrequentDirections` parts) and adds its rows, a few columns
each, through :meth:`~explorer.sketch.FrequentDirections.insert` with a shrink rule
from this module: Frequent Directions' shrink of a full buffer, with FD's result
(docs/algorithms.md section 1), but without LAPACK's SVD of the whole (2m) x (d+1) buffer,
which would dominate a round at MovieLens's d (benchmarks/README.md, "Figures behind the
code"). :class:`PartMemo` keeps what the rule needs to know about a part's rows, and reads
it back from a state (validated).
"""

from __future__ import annotations

import numpy as np

from ..sketch import ShrinkRecord, gram_shrink, power_of_two_scale, svd_shrink
from ..state import StateReader

__all__ = ["PartMemo", "sparse_shrink", "GRAM_TOLERANCE", "GRAM_FLOOR"]

GRAM_TOLERANCE = 1e-8
"""How far a loaded memo's ``diag(gram_diag)`` may be from the kept rows' ``C C^T``, relative
to their largest entry (runs give at most ~3e-15: 500 random streams, scales 1e-100..1e60,
near-equal singular values), plus :data:`GRAM_FLOOR`; a value farther off (hand-edited)
makes the memo "unknown"."""

GRAM_FLOOR = 2.0 ** -1020
"""Differences below this (about 1e-307, under the smallest normal double) are not compared:
squares of rows below ~1e-154 are subnormal and lose digits, in the run as on reload."""


class PartMemo:
    """What S-FTRL knows about one part's buffer beyond the buffer itself.

    ``gram_diag``: ``C C^T`` of the ``k`` rows kept by the last shrink, which is
    ``diag(sigma_i^2 - delta)`` (their directions are orthogonal). ``sparse``: the column
    indices of each row added since, or None ("unknown") once a dense row was added; the
    next shrink then forms ``B B^T`` in full, which is Frequent Directions' own shrink, so
    an unknown memo costs time, never accuracy.
    """

    __slots__ = ("gram_diag", "sparse")

    def __init__(self) -> None:
        self.gram_diag: np.ndarray = np.zeros(0)
        self.sparse: list[np.ndarray] | None = []

    def shrink_rule(self, columns: np.ndarray | None, m: int):
        """The rule that shrinks the part's buffer once the row at ``columns`` (None: a
        dense row) has filled it (:meth:`~explorer.sketch.FrequentDirections.insert`)."""
        sparse = None if self.sparse is None or columns is None else [*self.sparse, columns]
        return lambda B: sparse_shrink(B, m, sparse, self.gram_diag)

    def after_insert(self, columns: np.ndarray | None, shrink: ShrinkRecord | None) -> None:
        """Account for the row just inserted, and for the shrink it caused, if any."""
        if shrink is not None:
            self.gram_diag = shrink.squared[:shrink.kept] - shrink.delta
            self.sparse = []
        elif columns is None:
            self.sparse = None
        elif self.sparse is not None:
            self.sparse.append(columns)

    def state_dict(self) -> dict:
        sparse = self.sparse or []
        return {"gram_diag": self.gram_diag.copy(),
                "gram_diag_known": True,  # kept for states of earlier versions, which may say False
                "sparse_known": self.sparse is not None,
                "sparse_lengths": np.array([idx.size for idx in sparse], dtype=np.int64),
                "sparse_indices": (np.concatenate(sparse) if sparse else np.zeros(0, dtype=np.int64))}

    @classmethod
    def read(cls, reader: StateReader, rows: np.ndarray) -> "PartMemo":
        """The memo :meth:`state_dict` saved, for a part whose occupied rows are ``rows``
        (already validated, ``filled`` x ``d+1``).

        A memo no run could have written is refused with a ``ValueError`` naming the key:
        a non-finite or negative ``gram_diag``, lengths below 1 (every row holds the bias
        column), indices outside ``[0, d]``, lengths that do not add up to the indices, or
        ``k`` kept rows plus the rows added since that differ from ``filled``. A well-formed
        memo that does not describe ``rows`` (``C C^T`` off ``diag(gram_diag)`` beyond
        :data:`GRAM_TOLERANCE` and :data:`GRAM_FLOOR`, a row with a non-zero outside its
        listed columns, or ``gram_diag_known`` False, which no version writes) loads as
        "unknown". That is provably safe: the next shrink then forms ``B B^T`` in full,
        which is Frequent Directions' own shrink. Every state a run writes describes its
        rows, so its memo is kept and save, load and continue stays bit-identical.
        """
        filled, columns = rows.shape
        gram_known = reader.flag("gram_diag_known")
        sparse_known = reader.flag("sparse_known")
        gram_diag = _vector(reader, "gram_diag", integer=False)
        if (gram_diag < 0).any():
            raise reader.refuse("gram_diag", "entries >= 0 (squared norms of the kept rows)",
                                float(gram_diag.min()))
        lengths = _vector(reader, "sparse_lengths", integer=True)
        indices = _vector(reader, "sparse_indices", integer=True)
        if lengths.size and lengths.min() < 1:
            raise reader.refuse("sparse_lengths", "entries >= 1 (every row holds the bias column)",
                                int(lengths.min()))
        if indices.size and (indices.min() < 0 or indices.max() >= columns):
            raise reader.refuse("sparse_indices", f"column indices in [0, {columns - 1}]",
                                int(indices.min() if indices.min() < 0 else indices.max()))
        if int(lengths.sum()) != indices.size:
            raise reader.refuse("sparse_lengths", f"lengths adding up to the {indices.size} sparse_indices",
                                int(lengths.sum()))
        k = gram_diag.size
        if sparse_known and k + lengths.size != filled:
            raise reader.refuse("sparse_lengths", f"one length per row added since the last shrink "
                                f"({filled} occupied rows - {k} kept = {filled - k})", lengths.size)
        if not sparse_known and (lengths.size or k > filled):
            raise reader.refuse("sparse_lengths", f"empty with sparse_known False, and at most "
                                f"{filled} kept rows", f"{lengths.size} lengths, {k} kept rows")
        memo = cls()
        memo.gram_diag = gram_diag
        sparse = np.split(indices, np.cumsum(lengths)[:-1]) if lengths.size else []
        known = gram_known and sparse_known and _describes(rows, gram_diag, lengths, indices)
        memo.sparse = sparse if known else None
        return memo


def _vector(reader: StateReader, key: str, *, integer: bool) -> np.ndarray:
    """A 1-D array of integers (``integer``) or of finite real numbers, copied."""
    value = np.asarray(reader.raw(key))
    kinds, what = ("iu", "integers") if integer else ("iuf", "finite real numbers")
    if value.ndim != 1 or value.dtype.kind not in kinds:
        raise reader.refuse(key, f"a 1-D array of {what}", f"{value.dtype} array of shape {value.shape}")
    return value.astype(np.intp) if integer else reader.array(key, value.shape)


def _describes(rows: np.ndarray, gram_diag: np.ndarray, lengths: np.ndarray,
               indices: np.ndarray) -> bool:
    """Whether a memo matches the buffer: the rows added since the last shrink are zero
    outside their columns, and the ``k`` kept rows ``C`` have ``C C^T = diag(gram_diag)``
    to :data:`GRAM_TOLERANCE` and :data:`GRAM_FLOOR` (computed scaled by a power of two: no
    over- or underflow)."""
    k = gram_diag.size
    added = rows[k:]
    listed = np.zeros(added.shape, dtype=bool)
    listed[np.repeat(np.arange(lengths.size), lengths.astype(np.intp)), indices] = True
    if added[~listed].any():
        return False
    C = rows[:k]
    if not C.any():
        return not gram_diag.any()
    with np.errstate(over="ignore", invalid="ignore"):
        scale = power_of_two_scale(C)  # exact, at most 2^1000
        target = gram_diag * scale * scale
        gram = (C * scale) @ (C * scale).T
        size = max(float(target.max()), float(np.diag(gram).max()))
        floor = GRAM_FLOOR * scale * scale
        return bool(np.isfinite(target).all()
                    and np.abs(gram - np.diag(target)).max() <= GRAM_TOLERANCE * size + floor)


def sparse_shrink(B: np.ndarray, m: int, sparse: list[np.ndarray] | None,
                  gram_diag: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """Frequent Directions' shrink of a full buffer (docs/algorithms.md section 1), fast for wide B.

    Returns ``(squared, delta, kept_rows)`` as :func:`~explorer.sketch.svd_shrink` does,
    with FD's result: ``delta = sigma_m^2``; rows ``sqrt(max(sigma_i^2 - delta, 0)) v_i^T``
    for i < m. A buffer with no more columns than rows uses LAPACK's SVD. A wide one (the
    usual case) shrinks through the small Gram matrix ``B B^T``
    (:func:`~explorer.sketch.gram_shrink`). When the rows added since the last shrink are
    sparse (``sparse``: their column indices), ``B = [C; S]`` with ``C`` the kept rows
    (``C C^T = diag(gram_diag)``) and ``S`` touching few columns, so building ``B B^T``
    costs O(m nnz) and the only O(m^2 d) work is ``U_C^T C``.
    """
    rows, columns = B.shape
    if columns <= rows:
        return svd_shrink(B, m)
    k = rows - len(sparse) if sparse is not None else rows
    if sparse and gram_diag.size == k:  # (not so only if rows reached the sketch another way)
        lengths = [idx.size for idx in sparse]
        touched = np.concatenate(sparse)
        columns_used = np.unique(touched)
        position = np.searchsorted(columns_used, touched)
        which = np.repeat(np.arange(len(sparse)), lengths)
        S = np.zeros((len(sparse), columns_used.size))
        S[which, position] = B[k + which, touched]
        C = B[:k]
        CS = C[:, columns_used] @ S.T
        gram = np.empty((rows, rows))
        gram[:k, :k] = np.diag(gram_diag)
        gram[:k, k:] = CS
        gram[k:, :k] = CS.T
        gram[k:, k:] = S @ S.T
    else:
        gram = B @ B.T
        sparse = None
    squared, delta, W = gram_shrink(gram, columns, m)
    if sparse is None:
        return squared, delta, W @ B
    kept_rows = W[:, :k] @ B[:k] if k else np.zeros((W.shape[0], columns))
    kept_rows[:, columns_used] += W[:, k:] @ S
    return squared, delta, kept_rows
