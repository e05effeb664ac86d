"""The shrink of an S-FTRL sketch part: Frequent Directions' shrink, fast for wide sparse buffers.

S-FTRL keeps its gradient sum in a :class:`~explorer.sketch.GeneralizedFrequentDirections`
(two :class:`~explorer.sketch.FrequentDirections` parts) and fills their buffers itself, a
few columns per row; this module does what ``FrequentDirections._shrink`` does when a
buffer is full, with the same result (docs/algorithms.md section 1) but without LAPACK's SVD of
the whole (2m) x (d+1) buffer, which costs ~1 ms at d = 2625 and would dominate a round.
"""

from __future__ import annotations

import numpy as np

from ..sketch import FrequentDirections, gram_shrink, svd_shrink


class _PartMemo:
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


def _shrink(part: FrequentDirections, memo: _PartMemo) -> None:
    """Frequent Directions' shrink of a full buffer (docs/algorithms.md section 1), fast for wide B.

    The result is FD's: ``delta = sigma_m^2``; rows become ``sqrt(max(sigma_i^2 - delta, 0))
    v_i^T`` for i < m, the rest exactly zero. A buffer with no more columns than rows
    uses LAPACK's SVD (:func:`~explorer.sketch.svd_shrink`), as
:class:`~explorer.sketch.FrequentDirections` does. A wide one
    (the usual case) shrinks through the small Gram matrix ``B B^T``
    (:func:`~explorer.sketch.gram_shrink`).
    When the rows added since the last shrink are sparse, ``B = [C; S]`` with ``C`` the
    kept rows (``C C^T`` known from the memo) and ``S`` touching few columns, so building
    ``B B^T`` costs O(m nnz) and the only O(m^2 d) work is ``U_C^T C``.
    """
    B = part._buffer[:part._filled]
    rows, columns = B.shape
    m = part.m
    if columns <= rows:
        squared, delta, new_rows = svd_shrink(B, m)
    else:
        sparse = memo.sparse
        k = rows - len(sparse) if sparse is not None else rows
        if sparse and memo.gram_diag is not None and memo.gram_diag.size == k:
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
            gram[:k, :k] = np.diag(memo.gram_diag)
            gram[:k, k:] = CS
            gram[k:, :k] = CS.T
            gram[k:, k:] = S @ S.T
        else:
            gram = B @ B.T
            sparse = None
        squared, delta, W = gram_shrink(gram, columns, m)
        if sparse is None:
            new_rows = W @ B
        else:
            new_rows = W[:, :k] @ B[:k] if k else np.zeros((W.shape[0], columns))
            new_rows[:, columns_used] += W[:, k:] @ S
    part._commit_shrink(np.sqrt(squared), delta, new_rows)
    memo.gram_diag = squared[:new_rows.shape[0]] - delta
    memo.sparse = []
