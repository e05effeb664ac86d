r"""Adaptive regret: the worst regret over all contiguous intervals of a stream.

.. math:: R_a = \max_{[r, s] \subseteq [1, T]} \Big( \sum_{t=r}^{s} \ell_t
          - \min_{u} \sum_{t=r}^{s} \ell_t(u) \Big)

(Hazan & Seshadhri 2009; Eq. 3 of Yuan & Lamperski). Static regret is the single
interval [1, T]; adaptive regret also asks "how well did you track the best decision
*since the last change*?", which is what matters when the data switch.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .._validation import as_row, check_int
from ._base import MAX_LOSS, as_stream

__all__ = ["adaptive_regret", "AdaptiveRegret", "interval_regret"]

#: Interval endpoints considered at most (per side) when ``stride`` is chosen automatically.
MAX_GRID_POINTS = 1000
#: Memory budget, in float64 numbers, for the prefix sums of x x^T kept by ``adaptive_regret``.
MAX_PREFIX_FLOATS = 12_500_000  # 100 MB


def adaptive_regret(losses, X, k: int, *, stride: int | None = None,
                    return_interval: bool = False):
    r"""Adaptive regret of a PCA learner's ``losses`` on the stream ``X`` (rank-k projections).

    On an interval the comparator is the best fixed rank-k projection for that interval,
    whose loss is the sum of the n - k smallest eigenvalues of
    :math:`C_{rs} = \sum_{t=r}^{s} x_t x_t^T` (:math:`\operatorname{tr} C_{rs}` minus the
    top-k eigenvalues). Pass the *expected* losses of a randomized learner
    (``last_expected_loss`` or the ``"step"`` events' ``expected_loss``), as in the
    paper's definition.

    ``AdaptiveRegret(X, k, stride=stride)(losses, return_interval=return_interval)``: to
    score several learners on one stream, build :class:`AdaptiveRegret` once (its
    comparators are the whole cost) and call it per learner.

    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0]] * 3 + [[0.0, 1.0]] * 3)
    >>> fixed = np.r_[np.zeros(3), np.ones(3)]    # always projects onto e_1
    >>> adaptive_regret(fixed, X, 1)              # static regret would say 0: it is optimal on [1, 6]
    3.0
    >>> adaptive_regret(fixed, X, 1, return_interval=True)
    (3.0, (3, 5))
    """
    X = as_stream(X)
    losses = _as_losses(losses, X.shape[0])
    return AdaptiveRegret(X, k, stride=stride)(losses, return_interval=return_interval)


class AdaptiveRegret:
    r"""The adaptive regret of any learner's losses on one stream ``X`` against rank-k
    projections: the comparators are computed once, each call only adds up losses.

    .. math:: R_a = \max_{0 \le i < j \le G} \Big( L_{p_j} - L_{p_i}
              - \operatorname{best}(p_i, p_j - 1) \Big), \qquad L_s = \sum_{t \le s} \ell_t,

    with :math:`\operatorname{best}(r, s)` the sum of the n - k smallest eigenvalues of
    :math:`C_{rs}` over the intervals whose ends lie on the grid :math:`0 = p_0 < \dots <
    p_G = T`. Exact for ``stride=1``: all T(T+1)/2 intervals, one r x r eigenvalue problem
    each (batched; r <= n is the rank of ``X``, the problem being solved in the span of
    the rows), O(T^2 r^3) time once, O(T^2) numbers kept; the toy stream (T = 600,
    r = 6) takes about a second. ``stride = s`` only considers intervals whose start and
    end+1 lie on ``0, s, 2s, ..., T``: a lower bound on the exact value that misses at most
    s - 1 rounds at either end of the worst interval. ``stride=None`` (default) is exact
    when T <= 1000 and the prefix sums fit in 100 MB, else the smallest stride that keeps at
    most 1000 grid points within that budget (so at most 500,500 comparators are kept).

    Calling it with T losses returns the regret (a float), or ``(regret, (r, s))`` with the
    worst interval as 0-based inclusive round indices if ``return_interval``; the numbers
    are those of :func:`adaptive_regret`, bit for bit.

    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0]] * 3 + [[0.0, 1.0]] * 3)
    >>> regret = AdaptiveRegret(X, 1)
    >>> regret(np.r_[np.zeros(3), np.ones(3)]), regret(np.r_[np.ones(3), np.zeros(3)])
    (3.0, 3.0)

    Reference: Hazan & Seshadhri 2009; Eq. 3 of Yuan & Lamperski.
    """

    def __init__(self, X, k: int, *, stride: int | None = None):
        X = as_stream(X)
        self.k = _check_rank(k, X.shape[1])
        self.T, self.points, best = _interval_best(X, (self.k,), stride)
        self._best = best[self.k]

    @classmethod
    def for_ranks(cls, X, ks, *, stride: int | None = None) -> dict[int, AdaptiveRegret]:
        """One :class:`AdaptiveRegret` per rank k in ``ks`` (a slider's range), from one pass
        of eigenproblems: an interval's eigenvalues do not depend on k, only how many of them
        the comparator pays. Each is the one ``AdaptiveRegret(X, k, stride=stride)`` builds.

        >>> import numpy as np
        >>> X = np.array([[1.0, 0.0, 0.0]] * 3 + [[0.0, 1.0, 0.0]] * 3)
        >>> kept = AdaptiveRegret.for_ranks(X, [1, 2])
        >>> kept[1](np.r_[np.zeros(3), np.ones(3)]), kept[2](np.zeros(6))
        (3.0, 0.0)
        """
        X = as_stream(X)
        ranks = sorted({_check_rank(k, X.shape[1]) for k in ks})
        if not ranks:
            raise ValueError("ks must name at least one rank k in [1, n]")
        T, points, best = _interval_best(X, ranks, stride)
        return {k: cls._kept(T, k, points, best[k]) for k in ranks}

    @classmethod
    def _kept(cls, T: int, k: int, points: np.ndarray, best: list) -> AdaptiveRegret:
        kept = cls.__new__(cls)
        kept.T, kept.k, kept.points, kept._best = T, k, points, best
        return kept

    def __call__(self, losses, *, return_interval: bool = False):
        losses = _as_losses(losses, self.T)
        loss_prefix = np.r_[0.0, np.cumsum(losses)][self.points]
        best_value, best_interval = -np.inf, (0, 0)
        for i, j, comparator in self._best:
            regret = loss_prefix[j] - loss_prefix[i] - comparator
            top = int(np.argmax(regret))
            if regret[top] > best_value:
                best_value = float(regret[top])
                best_interval = (int(self.points[i]), int(self.points[j[top]]) - 1)
        return (best_value, best_interval) if return_interval else best_value


def _check_rank(k, n: int) -> int:
    k = check_int("k", k, minimum=1)
    if k > n:
        raise ValueError(f"k must be an integer in [1, n] = [1, {n}], got {k}")
    return k


def _interval_best(X: np.ndarray, ranks, stride: int | None) -> tuple[int, np.ndarray, dict]:
    """``(T, points, best)``: the grid, and per rank k the ``(i, j, best)`` chunks of the best
    fixed projection's loss on the intervals ``[points[i], points[j] - 1]`` (the r - k
    smallest eigenvalues of their covariance in the span coordinates), each chunk's
    eigenproblems batched and shared by the ranks."""
    T = X.shape[0]
    Z = _span_coordinates(X)
    r = Z.shape[1]
    points = _grid(T, stride, MAX_GRID_POINTS, max(2, MAX_PREFIX_FLOATS // max(r * r, 1)))
    blocks = [Z[a:b].T @ Z[a:b] for a, b in zip(points[:-1], points[1:])]
    prefix = np.concatenate([np.zeros((1, r, r)), np.cumsum(blocks, axis=0)])
    chunk = max(1, (1 << 22) // max(r * r, 1))
    best = {k: [] for k in ranks}
    for i in range(points.size - 1):
        for j0 in range(i + 1, points.size, chunk):
            j = np.arange(j0, min(j0 + chunk, points.size))
            if r > min(ranks):
                eigenvalues = np.linalg.eigvalsh(prefix[j] - prefix[i])  # ascending
            for k in ranks:
                discard = max(r - k, 0)
                comparator = (np.maximum(eigenvalues[:, :discard].sum(axis=1), 0.0) if discard > 0
                              else np.zeros(j.size))
                best[k].append((i, j, comparator))
    return T, points, best


def _span_coordinates(X: np.ndarray) -> np.ndarray:
    """Coordinates of the rows in an orthonormal basis of their span (T x r).

    Every :math:`C_{rs}` lives in the row space of ``X`` (dimension r <= n), so its n - k
    smallest eigenvalues are n - r zeros plus the r - k smallest in that space: the same
    value from r x r eigenproblems (r = 6 instead of n = 20 on the toy stream).
    """
    _, sigma, Vt = np.linalg.svd(X, full_matrices=False)
    r = int(np.count_nonzero(sigma > sigma[0] * 1e-10)) if sigma.size and sigma[0] > 0 else 0
    return X @ Vt[:r].T


def interval_regret(losses, best_on_interval: Callable[[int, int], float], *,
                    stride: int | None = None, return_interval: bool = False):
    r"""Adaptive regret of ``losses`` against any comparator: ``best_on_interval(r, s)``
    returns the best fixed decision's total loss on rounds r..s (0-based, inclusive).

    Calls ``best_on_interval`` once per interval: T(T+1)/2 times for ``stride=1``, so
    pass a stride (same grid as :func:`adaptive_regret`) when each call is expensive.
    ``stride=None`` is exact for T <= 1000. For subset-of-experts losses ``L`` (T x n)
    the comparator is the sum of the n - k smallest column sums of ``L[r:s+1]``.

    >>> import numpy as np
    >>> L = np.array([[0.0, 1.0]] * 2 + [[1.0, 0.0]] * 2)   # expert 0 first, then expert 1
    >>> learner = L[:, 0]                                    # always follows expert 0
    >>> interval_regret(learner, lambda r, s: L[r:s + 1].sum(axis=0).min())
    2.0
    """
    if not callable(best_on_interval):
        raise ValueError(f"best_on_interval must be callable (r, s) -> float, got {best_on_interval!r}")
    losses = _as_losses(losses, None)
    T = losses.size
    points = _grid(T, stride, MAX_GRID_POINTS, MAX_GRID_POINTS)
    loss_prefix = np.r_[0.0, np.cumsum(losses)]
    best_value, best_interval = -np.inf, (0, 0)
    for i, start in enumerate(points[:-1]):
        for stop in points[i + 1:]:
            best = float(best_on_interval(int(start), int(stop) - 1))
            if not abs(best) <= MAX_LOSS:
                raise ValueError(f"best_on_interval({int(start)}, {int(stop) - 1}) returned {best!r}; "
                                 f"a finite loss of size at most {MAX_LOSS:.0e} is needed")
            regret = loss_prefix[stop] - loss_prefix[start] - best
            if regret > best_value:
                best_value, best_interval = float(regret), (int(start), int(stop) - 1)
    return (best_value, best_interval) if return_interval else best_value


def _grid(T: int, stride: int | None, max_points: int, memory_points: int) -> np.ndarray:
    """Interval boundaries 0 = p_0 < p_1 < ... < p_G = T, every ``stride`` rounds."""
    if stride is None:
        stride = max(1, math.ceil(T / min(max_points, memory_points)))
    stride = check_int("stride", stride, minimum=1)
    return np.unique(np.r_[np.arange(0, T, stride), T])


def _as_losses(losses, T: int | None) -> np.ndarray:
    """Finite real losses, one per round, whose absolute sum is at most MAX_LOSS (so no
    prefix sum overflows)."""
    try:
        shape = np.shape(losses) if not isinstance(losses, (str, bytes)) else ()
    except ValueError:  # a ragged list
        shape = ()
    if len(shape) != 1 or shape[0] == 0 or (T is not None and shape[0] != T):
        expected = "a non-empty 1-D array" if T is None else f"one loss per row of X ({T})"
        raise ValueError(f"losses must be {expected}, got shape {shape}")
    losses = as_row(losses, shape[0], "losses")
    largest = float(np.abs(losses).max())
    if largest > 0 and not largest * float(np.sum(np.abs(losses) / largest)) <= MAX_LOSS:
        raise ValueError(f"losses are too large: their absolute sum exceeds {MAX_LOSS:.0e}; rescale them")
    return losses
