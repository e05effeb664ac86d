"""The shrink of an S-FTRL sketch part: Frequent Directions' shrink, fast for wide sparse buffers.

S-FTRL keeps its gradient sum in a :class:`~explorer.sketch.GeneralizedFrequentDirections`
(two :class:`~explorer.sketch.FrequentDirections` parts) and fills their buffers itself, a
few columns per row; this module does what ``FrequentDirections._shrink`` does when a
buffer is full, with the same result (docs/algorithms.md section 1) but without LAPACK's SVD of
the whole (2m) x (d+1) buffer, which costs ~1 ms at d = 2625 and would dominate a round.
"""

from __future__ import annotations

import numpy as np

from ..sketch import Shrink, gram_shrink, svd_shrink


class PartMemo:
    """What S-FTRL knows about one part's buffer beyond the buffer itself.

    ``gram_diag``: ``C C^T`` of the rows kept by the last shrink, which is exactly
    ``diag(sigma_i^2 - delta)`` (their directions are orthogonal); None when unknown
    (a state saved without it). ``sparse``: the column indices of each row added since,
    or None once a dense row was added. Either being unknown only means that the next
    shrink forms ``B B^T`` in full.
    """

    __slots__ = ("gram_diag", "sparse")

    def __init__(self) -> None:
        self.gram_diag: np.ndarray | None = np.zeros(0)
        self.sparse: list[np.ndarray] | None = []

    def shrink_rule(self, columns: np.ndarray | None, m: int):
        """The rule that shrinks the part's buffer once the row at ``columns`` (None: a
        dense row) has filled it (:meth:`~explorer.sketch.FrequentDirections.insert_row`)."""
        sparse = None if self.sparse is None or columns is None else [*self.sparse, columns]
        return lambda B: sparse_shrink(B, m, sparse, self.gram_diag)

    def after_insert(self, columns: np.ndarray | None, shrink: Shrink | None) -> None:
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
        return {"gram_diag": np.zeros(0) if self.gram_diag is None else self.gram_diag.copy(),
                "gram_diag_known": self.gram_diag is not None,
                "sparse_known": self.sparse is not None,
                "sparse_lengths": np.array([idx.size for idx in sparse], dtype=np.int64),
                "sparse_indices": (np.concatenate(sparse) if sparse else np.zeros(0, dtype=np.int64))}

    def restore(self, state: dict) -> None:
        """Load :meth:`state_dict`; a state without memo (or a broken one) means "unknown"."""
        try:
            self.gram_diag = (np.asarray(state["gram_diag"], dtype=float).copy()
                              if bool(state["gram_diag_known"]) else None)
            if bool(state["sparse_known"]):
                lengths = np.asarray(state["sparse_lengths"], dtype=np.int64)
                indices = np.asarray(state["sparse_indices"], dtype=np.intp)
                self.sparse = np.split(indices, np.cumsum(lengths)[:-1]) if lengths.size else []
            else:
                self.sparse = None
        except (KeyError, ValueError, TypeError):
            self.gram_diag, self.sparse = None, None  # safe: the next shrink forms B B^T in full


def sparse_shrink(B: np.ndarray, m: int, sparse: list[np.ndarray] | None,
                  gram_diag: np.ndarray | None) -> tuple[np.ndarray, float, np.ndarray]:
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
    if sparse and gram_diag is not None and gram_diag.size == k:
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
