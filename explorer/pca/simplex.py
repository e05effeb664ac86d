r"""The capped simplex: capping, mixture decomposition and fixed share.

The capped simplex is :math:`B_d^n = \{w \in R^n : \sum_i w_i = 1,\ 0 \le w_i \le 1/d\}`
(docs/algorithms.md section 5). Its corners have exactly d entries equal to 1/d; a corner is
a choice of d items out of n. Online adaptive PCA keeps its weights in this set with
``d = n - k``: the corner it samples names the n - k directions it *discards*.

The learners of :mod:`explorer.pca` run one round with the unchecked kernels below the
public functions, on log-weights: :func:`cap_log`, :func:`decompose`, :func:`sample_corner`,
:func:`fixed_share_log`; they return what happened, and :func:`mixing_events` turns that
into the round's hook events, which the learner emits (only when a hook listens).

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
from .compiled import compiled_decompose

__all__ = ["cap", "mixture_decomposition", "fixed_share", "cap_log", "decompose", "corners_of",
           "sample_corner", "fixed_share_log", "mixing_events"]

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
    log_q, _ = cap_log(log_w, d)
    return np.exp(log_q)


def cap_log(log_w: np.ndarray, d: int) -> tuple[np.ndarray, int]:
    """:func:`cap` on log-weights (entries may be -inf), with how many entries were set to 1/d.

    Working with logs keeps eigenvalues as small as e^-6000 exact (static online PCA
    drives unused directions that low; docs/algorithms.md section 5.1). Unchecked: the
    caller guarantees a 1-D float array with >= d finite entries.

    >>> log_q, n_capped = cap_log(np.log([0.7, 0.2, 0.1]), 2)
    >>> np.exp(log_q).round(4).tolist(), n_capped
    ([0.5, 0.3333, 0.1667], 1)
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
    probs, supports = decompose(np.minimum(w, 1.0 / d), d)
    return probs, corners_of(supports, w.size, d)


def decompose(w: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mixture_decomposition` (Algorithm 2) of an already valid ``w`` (a point of
    :math:`B_d^n`, unchecked), with each corner given by its support: returns ``probs``
    (m,) and ``supports`` (m, d), the sorted indices of each corner's d entries 1/d.

    Compiled (:func:`~explorer.pca.compiled.compiled_decompose`, the same numbers) once numba
    is ready; this is the rule it follows.

    >>> probs, supports = decompose(np.array([0.5, 0.3, 0.2]), 2)
    >>> probs.round(3).tolist(), supports.tolist()
    ([0.6, 0.4], [[0, 1], [0, 2]])
    """
    done = compiled_decompose(w, d)
    if done is not None:
        return done
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


def corners_of(supports: np.ndarray, n: int, d: int) -> np.ndarray:
    """The corners (m, n) of :math:`B_d^n` whose supports (m, d) :func:`decompose` returned."""
    corners = np.zeros((supports.shape[0], n))
    np.put_along_axis(corners, supports, 1.0 / d, axis=1)
    return corners


def sample_corner(rng: np.random.Generator, probs: np.ndarray) -> int:
    """Index j with probability ``probs[j]`` (one uniform draw from ``rng``): the corner a
    randomized learner plays (Algorithms 1, 4 and 5)."""
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


def fixed_share_log(log_v: np.ndarray, alpha: float) -> np.ndarray:
    """:func:`fixed_share` on log-weights (exact for alpha = 0: tiny weights keep their
    logs; docs/algorithms.md section 5.3). Unchecked: ``log_v`` the logs of a probability
    vector, alpha in [0, 1].

    >>> np.exp(fixed_share_log(np.log([0.7, 0.2, 0.1]), 0.3)).round(4).tolist()
    [0.59, 0.24, 0.17]
    """
    n = log_v.size
    if alpha == 0.0:
        return log_v.copy()
    if alpha == 1.0:
        return np.full(n, -np.log(n))
    return np.logaddexp(np.log(alpha / n), np.log1p(-alpha) + log_v)


# -- what a round did, as hook events -------------------------------------------------------

def mixing_events(t: int, alpha: float, probs: np.ndarray, supports: np.ndarray, n: int,
                  chosen: int, log_v: np.ndarray, log_w_hat: np.ndarray, log_w_next: np.ndarray,
                  n_capped: int) -> tuple[DecomposeEvent, FixedShareEvent, CapEvent]:
    """One round's ``"decompose"``, ``"fixed_share"`` and ``"cap"`` events, in that order.

    What the experts and the PCA learners (Yuan & Lamperski, Algorithms 1 and 4) did on the
    capped simplex :math:`B_d^n` (d = ``supports.shape[1]``): decompose into corners and play
    corner ``chosen``, mix (``log_v`` -> ``log_w_hat``), cap (-> ``log_w_next``,
    ``n_capped`` entries at 1/d). The learner emits them; build them only when a hook listens.
    """
    d = supports.shape[1]
    return (DecomposeEvent(t=t, probs=probs, corners=corners_of(supports, n, d), chosen=chosen),
            FixedShareEvent(t=t, v=np.exp(log_v), w_hat=np.exp(log_w_hat), alpha=alpha),
            CapEvent(t=t, before=np.exp(log_w_hat), after=np.exp(log_w_next), n_capped=n_capped))


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
