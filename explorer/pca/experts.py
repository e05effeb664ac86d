r"""Adaptive best subset of experts (Yuan & Lamperski, Algorithm 1): Hedge on the capped
simplex with a fixed-share step."""

from __future__ import annotations

import math

import numpy as np

from .._validation import as_row
from ..hooks import StepRecord
from ..state import stateful
from ._base import RandomizedLogWeights, check_loss, check_subset, log_normalize
from .simplex import cap_log, decompose, fixed_share_log, mixing_events, sample_corner

__all__ = ["AdaptiveBestSubset"]


@stateful
class AdaptiveBestSubset(RandomizedLogWeights):
    r"""Adaptive best subset of experts (Yuan & Lamperski, Algorithm 1).

    n experts; each round choose n - k of them and pay the sum of their losses
    :math:`\ell_t \in [0, 1]^n`. The learner keeps :math:`w_t` in the capped simplex
    :math:`B_{n-k}^n` (:math:`w_1` uniform). Round t:

    1. decompose :math:`w_t` into corners (:func:`~explorer.pca.mixture_decomposition`,
       d = n - k) and sample one, r; the chosen experts are the n - k in its support
       (its k zero entries are the experts left out);
    2. loss :math:`(n-k)\, r^T \ell_t`, expected loss :math:`(n-k)\, w_t^T \ell_t`;
    3. Hedge :math:`v_i = w_i e^{-\eta \ell_i} / \sum_j w_j e^{-\eta \ell_j}` (the paper
       prints the denominator without :math:`w_j`; normalizing is its meaning), fixed
       share :math:`\hat w = \alpha/n + (1-\alpha) v`, capping
       :math:`w_{t+1} = \operatorname{cap}_{n-k}(\hat w)`.

    ``alpha = 0`` is the static algorithm of Warmuth & Kuzmin (2008). It is online PCA
    restricted to diagonal matrices (loss vector = the diagonal of :math:`x x^T`).
    Weights are kept as logarithms, so nothing underflows on long streams. Hooks, in
    order: ``"decompose"``, ``"fixed_share"``, ``"cap"``, ``"step"`` (with
    ``expected_loss``), all after the round is committed.

    Losses: the regret bound (Theorem 3) takes :math:`\ell_t \in [0, 1]^n`, but Hedge in
    logs is exact for any real losses, so any finite vector is learned, unless
    :math:`\max_i |\ell_i| > 10^{300}` or :math:`\eta \max_i |\ell_i| > 10^6`
    (:mod:`explorer.pca._base`): then it is refused with nothing changed.

    ``learn(losses)`` returns the sampled loss; ``step(losses)`` plays the same round and
    returns its :class:`~explorer.hooks.StepRecord` (with ``expected_loss``);
    ``with_params(eta=..., alpha=...)`` continues with other settings.

    >>> learner = AdaptiveBestSubset(4, 2, eta=1.0, alpha=0.01, seed=0)
    >>> loss = learner.learn([1.0, 0.0, 0.0, 1.0])   # experts 0 and 3 did badly
    >>> round(learner.last_expected_loss, 3), learner.weights.round(3).tolist()
    (1.0, [0.136, 0.364, 0.364, 0.136])
    """

    def __init__(self, n: int, k: int, *, eta: float, alpha: float, seed: int | None = None):
        n, self.k = check_subset(n, k)
        super().__init__(n, eta=eta, alpha=alpha, seed=seed, minimum_n=2)
        self.last_subset: np.ndarray | None = None

    def __repr__(self) -> str:
        return (f"AdaptiveBestSubset(n={self.n}, k={self.k}, eta={self.eta:g}, "
                f"alpha={self.alpha:g}) t={self.t}")

    @property
    def weights(self) -> np.ndarray:
        """:math:`w_t`, a point of the capped simplex :math:`B_{n-k}^n`."""
        return np.exp(self._log_w)

    _INPUT = "one loss vector"

    def _round(self, losses, record: bool) -> tuple[float, float, StepRecord | None, float]:
        """Sample n - k experts, pay their summed ``losses``, then update."""
        losses = self._as_losses(losses, self.eta)
        d = self.n - self.k
        t = self.t + 1
        w = np.exp(self._log_w)
        probs, supports = decompose(np.minimum(w, 1.0 / d), d)
        expected = float(d * w @ losses)
        log_v = log_normalize(self._log_w - self.eta * losses)
        log_w_hat = fixed_share_log(log_v, self.alpha)
        log_w_next, n_capped = cap_log(log_w_hat, d)
        chosen = sample_corner(self._rng, probs)
        loss = float(losses[supports[chosen]].sum())
        self.last_subset = supports[chosen].copy()
        self._log_w = log_w_next
        self.t = t
        self.last_loss, self.last_expected_loss = loss, expected
        if not (record or self._hooks):
            return loss, math.nan, None, expected
        step = StepRecord(t=t, loss=loss, alpha=self.alpha, expected_loss=expected)
        return loss, math.nan, self._emit_step(step, lambda: mixing_events(
            t, self.alpha, probs, supports, self.n, chosen, log_v, log_w_hat, log_w_next, n_capped)), expected

    def expected_loss(self, losses) -> float:
        r""":math:`(n-k)\, w_t^T \ell` for the current weights (no update)."""
        losses = self._as_losses(losses, None)
        return float((self.n - self.k) * self.weights @ losses)

    def _as_losses(self, losses, eta: float | None) -> np.ndarray:
        losses = as_row(losses, self.n, name="losses")
        check_loss(float(np.abs(losses).max()), eta, "max |losses_i|")
        return losses

    # -- persistence (RandomizedLogWeights): weights on the capped simplex B_{n-k}^n ------------
    _setting_keys = ("n", "k")

    def _cap_size(self) -> int:
        return self.n - self.k
