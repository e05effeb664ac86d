r"""Algorithm 2 (the mixture decomposition) compiled: :func:`~explorer.pca.simplex.decompose`'s twin.

Every randomized round of the family writes its weights :math:`w \in B_d^n` as a mixture of
at most n corners before it samples one; with weights near uniform that takes up to n passes
of a sort, the largest part of an online PCA round in numpy. :func:`mixture` plays the same
passes in numba: the same sort (stable), the same sums (:func:`explorer.compiled.numpy_sum`,
numpy's order), the same arithmetic, so it gives the numpy rule's numbers bit for bit (tests:
``tests/test_compiled_pca.py``). :func:`compiled_decompose` is the rule's entry: None while
the compiled paths are not ready (:func:`explorer.compiled.enabled`), and the numpy rule plays.

>>> import numpy as np
>>> from explorer.compiled import wait
>>> _ = wait(120)
>>> probs, supports = compiled_decompose(np.array([0.5, 0.3, 0.2]), 2)
>>> probs.round(3).tolist(), supports.tolist()
([0.6, 0.4], [[0, 1], [0, 2]])

Reference: Yuan & Lamperski, *Online adaptive principal component analysis and its
extensions*, ICML 2019, Algorithm 2.
"""

from __future__ import annotations

import numpy as np

from ..compiled import COUNTS, EPS, enabled, entry, numpy_sum

__all__ = ["compiled_decompose", "mixture"]


@entry("int64(float64[::1], int64, float64[::1], int64[:, ::1])")
def mixture(w, d, probs, supports):
    """Algorithm 2 on ``w`` (overwritten): the unnormalized probabilities into ``probs`` and
    the sorted supports into ``supports``, one row per corner; returns the number of corners."""
    n = w.size
    start = numpy_sum(w)
    corners = 0
    for _ in range(n):
        total = numpy_sum(w)
        if total <= 1e-12 * start:
            break
        order = np.argsort(-w, kind="mergesort")  # stable, as the numpy rule's
        s = w[order[d - 1]]
        l = w[order[d]] if d < n else 0.0
        p = min(d * s, total - d * l)
        if p <= 0.0:
            break
        probs[corners] = p
        supports[corners] = np.sort(order[:d])
        share = p / d
        for i in order[:d]:
            remaining = max(w[i] - share, 0.0)
            w[i] = 0.0 if remaining <= 8 * EPS * share else remaining
        corners += 1
    return corners


def compiled_decompose(w: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`~explorer.pca.simplex.decompose` by :func:`mixture` (same arguments, same
    result), or None when the compiled paths are not ready or ``w`` cannot be a point of
    :math:`B_d^n` (not 1-D, ``d`` outside [1, n], a non-finite entry): the kernel reads
    ``w`` unchecked."""
    if not enabled():  # the numpy rule's round pays nothing more than this question
        return None
    w = np.array(w, dtype=float)
    if not (w.ndim == 1 and 1 <= d <= w.size and np.isfinite(w).all()):
        return None  # not a point of B_d^n: the numpy rule's, and its errors
    probs, supports = np.empty(w.size), np.empty((w.size, d), dtype=np.int64)
    corners = mixture(w, d, probs, supports)
    COUNTS["decompositions"] += 1
    probs = probs[:corners]
    return probs / probs.sum(), supports[:corners]
