r"""The capped simplex: capping, mixture decomposition and fixed share.

The capped simplex is :math:`B_d^n = \{w \in R^n : \sum_i w_i = 1,\ 0 \le w_i \le 1/d\}`
(docs/algorithms.md section 5). Its corners have exactly d entries equal to 1/d; a corner is
a choice of d items out of n. Online adaptive PCA keeps its weights in this set with
``d = n - k``: the corner it samples names the n - k directions it *discards*.

References
----------
- Warmuth & Kuzmin (JMLR 2008), *Randomized online PCA algorithms with regret bounds
  that are logarithmic in the dimension*: capping and mixture decomposition.
- Yuan & Lamperski, *Online adaptive PCA and its extensions*, Algorithms 2 and 3 (as
  corrected in docs/algorithms.md section 5), and the fixed-share step (4b), after
  Herbster & Warmuth (1998), *Tracking the best expert*.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import as_row, check_float, check_int
from ..hooks import CapEvent, DecomposeEvent, FixedShareEvent

__all__ = ["cap", "mixture_decomposition", "fixed_share"]

_EPS = np.finfo(float).eps


# -- capping ----------------------------------------------------------------------------------

def cap(w, d: int) -> np.ndarray:
    r"""Relative-entropy projection of ``w`` onto the capped simplex :math:`B_d^n` (Algorithm 3).

    .. math:: \operatorname{cap}_d(w) = \arg\min_{q \in B_d^n} \sum_i q_i \ln(q_i / w_i)
              = \min(1/d,\; c\, w) \ \text{(entrywise)},

    with the one constant c > 0 that makes the result sum to 1. Equivalently (the
    paper's recipe): if ``max w <= 1/d`` return ``w``; otherwise set the i largest
    entries to 1/d and rescale the others proportionally so the total is 1, with the
    smallest i for which no rescaled entry exceeds 1/d. O(n log n).

    ``w`` needs non-negative entries, at least d of them positive (the result is only
    supported where ``w`` is). It need not sum to 1: the projection does not depend on
    the scale of ``w``, so ``cap(3 * w, d) == cap(w, d)``.

    >>> cap([0.7, 0.2, 0.1], 2).round(4).tolist()
    [0.5, 0.3333, 0.1667]
    >>> cap([0.4, 0.4, 0.2], 2).tolist()   # already in the capped simplex
    [0.4, 0.4, 0.2]
    """
    d = check_int("d", d, minimum=1)
    w = _as_weights(w, "w")
    positive = int(np.count_nonzero(w > 0))
    if positive < d:
        raise ValueError(f"w must have at least d = {d} positive entries to be capped at 1/d "
                         f"(the result lives on the support of w), got {positive} of {w.size}")
    with np.errstate(divide="ignore"):
        log_w = np.log(w)
    log_q, _ = _cap_log(log_w, d)
    return np.exp(log_q)


def _cap_log(log_w: np.ndarray, d: int) -> tuple[np.ndarray, int]:
    """``cap`` on log-weights (entries may be -inf), with how many entries were set to 1/d.

    Working with logs keeps eigenvalues as small as e^-6000 exact (static online PCA
    drives unused directions that low). The caller guarantees >= d finite entries.
    """
    order = np.argsort(-log_w, kind="stable")
    s = log_w[order]                                      # descending
    tail = np.logaddexp.accumulate(s[::-1])[::-1]         # tail[i] = ln sum_{j >= i} w_(j)
    i = np.arange(d)                                      # candidate numbers of capped entries
    log_c = np.log((d - i) / d) - tail[:d]                # rescaling of the uncapped rest
    fits = log_c + s[:d] <= -np.log(d) + 1e-12            # largest uncapped entry <= 1/d?
    n_capped = int(np.argmax(fits)) if fits.any() else d - 1  # i = d - 1 always fits exactly
    log_q = np.minimum(log_w + log_c[n_capped], -np.log(d))
    return log_q, n_capped


# -- mixture decomposition ----------------------------------------------------------------

def mixture_decomposition(w, d: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Write ``w`` in :math:`B_d^n` as a convex combination of at most n corners (Algorithm 2).

    Repeat until nothing is left: take the corner ``r`` on the d largest entries of the
    remaining ``w`` (it contains every entry equal to :math:`|w|/d`); with s the smallest
    of those d entries and l the largest of the others,

    .. math:: p = \min(d\,s,\ |w| - d\,l), \qquad \text{output } (p, r), \qquad w \leftarrow w - p\,r.

    Each pass zeroes an entry or brings one more entry up to :math:`|w|/d`, so there are
    at most n passes. Returns ``(probs, corners)``: ``probs`` (m,) sums to 1 and
    ``corners`` (m, n) has d entries equal to 1/d per row, zeros elsewhere;
    ``probs @ corners`` reconstructs ``w``. Sampling a corner with these probabilities
    picks d items out of n, each item i with probability :math:`d\,w_i`.

    >>> probs, corners = mixture_decomposition([0.5, 0.3, 0.2], 2)
    >>> probs.round(3).tolist()
    [0.6, 0.4]
    >>> (corners * 2).tolist()   # corners have two entries 1/2
    [[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]]
    """
    d = check_int("d", d, minimum=1)
    w = _as_weights(w, "w")
    if d > w.size:
        raise ValueError(f"d must be at most the length of w ({w.size}), got {d}")
    if w.max() > 1.0 / d + 1e-8:  # checked first: then the sum cannot overflow
        raise ValueError(f"w must have entries at most 1/d = {1.0 / d:.6g} (use cap(w, d) first), "
                         f"got max {w.max()!r}")
    total = float(w.sum())
    if abs(total - 1.0) > 1e-8:
        raise ValueError(f"w must sum to 1 (a point of the capped simplex), got sum {total!r}")
    probs, supports = _decompose(np.minimum(w, 1.0 / d), d)
    return probs, _corners(supports, w.size, d)


def _decompose(w: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2 on a validated ``w``; returns probabilities and supports (m, d) of indices."""
    w = np.array(w, dtype=float)
    n = w.size
    start = float(w.sum())
    probs, supports = [], []
    for _ in range(n):
        total = float(w.sum())
        if total <= 1e-12 * start:
            break
        order = np.argsort(-w, kind="stable")
        chosen = order[:d]
        s = w[order[d - 1]]
        l = w[order[d]] if d < n else 0.0
        p = min(d * s, total - d * l)
        if p <= 0.0:  # only rounding is left (exact arithmetic never gets here)
            break
        probs.append(p)
        supports.append(np.sort(chosen))
        remaining = np.maximum(w[chosen] - p / d, 0.0)
        remaining[remaining <= 8 * _EPS * (p / d)] = 0.0  # entries that hit zero up to rounding
        w[chosen] = remaining
    probs = np.asarray(probs)
    return probs / probs.sum(), np.asarray(supports, dtype=np.int64).reshape(len(probs), d)


def _corners(supports: np.ndarray, n: int, d: int) -> np.ndarray:
    corners = np.zeros((supports.shape[0], n))
    np.put_along_axis(corners, supports, 1.0 / d, axis=1)
    return corners


def _draw(rng: np.random.Generator, probs: np.ndarray) -> int:
    """Index j with probability probs[j] (one uniform draw from ``rng``)."""
    cumulative = np.cumsum(probs)
    j = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
    return min(j, probs.size - 1)


# -- fixed share ----------------------------------------------------------------------------

def fixed_share(v, alpha: float) -> np.ndarray:
    r"""Mix a little uniform weight back in: :math:`\hat w = \alpha / n + (1 - \alpha)\, v`.

    "Never forget anyone completely": after the step every weight is at least
    :math:`\alpha/n`, so an item that did badly for a long time can win again within a
    few rounds once it starts doing well. This floor is what turns a static-regret
    algorithm into one with low *adaptive* regret (Herbster & Warmuth 1998; Yuan &
    Lamperski, step 4b). ``alpha = 0`` changes nothing; ``alpha = 1`` forgets everything.
    A probability vector stays one.

    >>> fixed_share([1.0, 0.0, 0.0, 0.0], 0.2).tolist()
    [0.85, 0.05, 0.05, 0.05]
    """
    alpha = check_float("alpha", alpha, minimum=0.0, maximum=1.0)
    v = _as_weights(v, "v")
    return alpha / v.size + (1.0 - alpha) * v


def _fixed_share_log(log_v: np.ndarray, alpha: float) -> np.ndarray:
    """``fixed_share`` on log-weights (exact for alpha = 0: tiny weights keep their logs)."""
    n = log_v.size
    if alpha == 0.0:
        return log_v.copy()
    if alpha == 1.0:
        return np.full(n, -np.log(n))
    return np.logaddexp(np.log(alpha / n), np.log1p(-alpha) + log_v)


# -- validation -----------------------------------------------------------------------------

def _as_weights(w, name: str) -> np.ndarray:
    """A non-empty 1-D array of finite, non-negative real numbers."""
    if isinstance(w, (str, bytes)) or w is None or isinstance(w, numbers.Number):
        raise ValueError(f"{name} must be a 1-D array of non-negative weights, got {w!r}")
    try:
        shape = np.shape(w)
    except ValueError:  # a ragged list
        shape = ()
    if len(shape) != 1 or shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {shape}")
    w = as_row(w, shape[0], name)
    if (w < 0).any():
        raise ValueError(f"{name} must have non-negative entries, got min {w.min()!r}")
    return w


def emit_capped_mixing(learner, t: int, probs: np.ndarray, supports: np.ndarray, d: int,
                       chosen: int, log_v: np.ndarray, log_w_hat: np.ndarray,
                       log_w_next: np.ndarray, n_capped: int) -> None:
    """Emit one round's "decompose", "fixed_share" and "cap" events, in that order.

    Shared by the experts and the PCA learners (Yuan & Lamperski, Algorithms 1 and 4),
    whose rounds decompose, mix and cap the same way; call only when hooks listen.
    """
    learner._emit(DecomposeEvent(t=t, probs=probs, corners=_corners(supports, learner.n, d),
                                 chosen=chosen))
    learner._emit(FixedShareEvent(t=t, v=np.exp(log_v), w_hat=np.exp(log_w_hat),
                                  alpha=learner.alpha))
    learner._emit(CapEvent(t=t, before=np.exp(log_w_hat), after=np.exp(log_w_next),
                           n_capped=n_capped))
