r"""Online adaptive PCA (Yuan & Lamperski, Algorithm 4); alpha = 0 is static online PCA."""

from __future__ import annotations

import math

import numpy as np

from ..hooks import StepRecord
from ..state import stateful
from ._base import DensityMatrixLearner, as_loss_row, check_subset
from .simplex import cap_log, decompose, fixed_share_log, mixing_events, sample_corner

__all__ = ["OnlineAdaptivePCA"]


@stateful
class OnlineAdaptivePCA(DensityMatrixLearner):
    r"""Online adaptive PCA (Yuan & Lamperski, *Online adaptive PCA and its extensions*, Algorithm 4).

    Each round the learner commits to a rank-k projection :math:`P_t`, then sees
    :math:`x_t` (:math:`\|x_t\| \le 1` for the guarantees) and suffers the compression
    loss :math:`\|x_t - P_t x_t\|^2`. It keeps a density matrix :math:`W_t` (PSD, trace 1,
    eigenvalues at most :math:`1/(n-k)`) that spreads weight over the directions to
    *discard*; :math:`W_1 = I/n`. Round t:

    1. :math:`W_t = D\,\mathrm{diag}(w)\,D^T`; decompose w into corners of
       :math:`B_{n-k}^n` (:func:`~explorer.pca.mixture_decomposition`) and sample one, r;
    2. :math:`R = (n-k)\,D\,\mathrm{diag}(r)\,D^T` (rank n-k), :math:`P_t = I - R` (rank k);
    3. loss :math:`\|x_t - P_t x_t\|^2 = \|R x_t\|^2`, expected loss
       :math:`(n-k)\operatorname{tr}(W_t x_t x_t^T)`;
    4. :math:`V = \exp(\ln W_t - \eta\, x_t x_t^T)/\operatorname{tr}(\cdot) = U\,\mathrm{diag}(v)\,U^T`;
       fixed share :math:`\hat w = \alpha/n + (1-\alpha) v`; capping
       :math:`W_{t+1} = U\,\mathrm{diag}(\operatorname{cap}_{n-k}(\hat w))\,U^T`.

    ``alpha = 0`` is the static online PCA of Warmuth & Kuzmin (2008), which the paper
    compares against. Defaults are the paper's toy-example settings (eta = 1,
    alpha = 1e-5). The sampled decision only changes the loss you see, never
    :math:`W_{t+1}`: the expected-loss sequence is the same for every seed.

    ``W`` is kept as its eigenvectors and log-eigenvalues, and ``ln W`` is never
    recomputed from the matrix (without fixed share eigenvalues fall to e^-80 on the toy
    stream, and a recomputed log is wrong: cumulative expected loss 75.9 instead of 102.1).
    One round costs two n x n products and one symmetric eigendecomposition, O(n^3).

    Extreme input: a row is refused, with nothing changed, when
    :math:`\|x\|^2 > 10^{300}` or :math:`\eta\|x\|^2 > 10^6` (the eigensolver could no
    longer resolve the weights: :mod:`explorer.pca._base`); a tiny row is learned exactly
    (its loss and its update round to 0). ``learn`` computes the whole round before it
    stores anything, so a failure anywhere leaves the learner as it was.

    ``step(x)`` plays the same round as ``learn(x)`` and returns its
    :class:`~explorer.hooks.StepRecord`: the sampled ``loss``, the ``expected_loss``,
    alpha, the condition number and numerical rank of :math:`W_{t+1}`. ``with_params(eta=...,
    alpha=...)`` continues the stream with other settings (``alpha = 0`` there too is
    static online PCA). If the eigensolver fails, :class:`~explorer.errors.Diverged`.

    Hooks, in order each round: ``"decompose"`` (corner probabilities, corners, the index
    chosen), ``"fixed_share"`` (v and w_hat), ``"cap"`` (before, after, n_capped) and
    ``"step"`` (the :class:`~explorer.hooks.StepRecord` ``step`` returns). Hooks run after
    the round is committed, so ``pca.W`` in a hook is :math:`W_{t+1}`.

    >>> import numpy as np
    >>> pca = OnlineAdaptivePCA(n=3, k=1, seed=0)
    >>> x = np.array([0.6, 0.8, 0.0])
    >>> round(pca.expected_loss(x), 4)      # (n - k) tr(W_1 x x^T) = 2/3
    0.6667
    >>> loss = pca.learn(x)
    >>> round(pca.last_expected_loss, 4), round(pca.expected_loss(x), 4)   # it learned x
    (0.6667, 0.3107)
    >>> np.round(pca.eigenvalues, 3).tolist()        # e^-1 : 1 : 1, normalized
    [0.155, 0.422, 0.422]
    >>> record = pca.step(x)
    >>> record.t, round(record.expected_loss, 4), record.rank
    (2, 0.3107, 3)
    """

    def __init__(self, n: int, k: int, *, eta: float = 1.0, alpha: float = 1e-5,
                 seed: int | None = None):
        n, self.k = check_subset(n, k)
        super().__init__(n, eta=eta, alpha=alpha, seed=seed, minimum_n=2)
        self.last_basis: np.ndarray | None = None

    def __repr__(self) -> str:
        return (f"OnlineAdaptivePCA(n={self.n}, k={self.k}, eta={self.eta:g}, alpha={self.alpha:g}) "
                f"t={self.t}")

    # -- the round ------------------------------------------------------------------------
    def _round(self, x, record: bool) -> tuple[float, float, StepRecord | None, float]:
        """Sample :math:`P_t`, suffer ``||x - P_t x||^2``, then update ``W`` (everything that
        can fail runs before anything is stored)."""
        x = as_loss_row(x, self.n, self.eta)
        d = self.n - self.k
        t = self.t + 1
        w = np.exp(self._log_w)
        energy = (self._vectors.T @ x) ** 2                 # ||x||^2 split over the eigenvectors
        probs, supports = decompose(np.minimum(w, 1.0 / d), d)
        expected = float(d * w @ energy)
        U, log_v = self._exponentiated_step(np.outer(x, x))
        log_w_hat = fixed_share_log(log_v, self.alpha)
        log_w_next, n_capped = cap_log(log_w_hat, d)
        # Everything that can fail has run: draw, then commit.
        chosen = sample_corner(self._rng, probs)
        loss = float(energy[supports[chosen]].sum())
        kept = np.ones(self.n, dtype=bool)
        kept[supports[chosen]] = False
        self.last_basis = self._vectors[:, kept]
        self._vectors, self._log_w = U, log_w_next
        self.t = t
        self.last_loss, self.last_expected_loss = loss, expected
        if not (record or self._hooks):
            return loss, math.nan, None, expected
        condition, rank = self._spectrum_summary(log_w_next)
        step = StepRecord(t=t, loss=loss, alpha=self.alpha, condition_number=condition, rank=rank,
                          expected_loss=expected)
        return loss, math.nan, self._emit_step(step, lambda: mixing_events(
            t, self.alpha, probs, supports, self.n, chosen, log_v, log_w_hat, log_w_next, n_capped)), expected

    def expected_loss(self, x) -> float:
        """:math:`(n-k)\\operatorname{tr}(W_t x x^T)` for the current ``W`` (no update)."""
        x = as_loss_row(x, self.n, None)
        return float((self.n - self.k) * self.eigenvalues @ (self._vectors.T @ x) ** 2)

    def subspace(self) -> np.ndarray:
        """The k eigenvectors of ``W`` with the least weight (n x k): the most likely kept
        subspace, the one a deterministic "mean" learner would project onto."""
        return self._vectors[:, np.argsort(self._log_w, kind="stable")[:self.k]].copy()

    # -- persistence ------------------------------------------------------------------------
    _setting_keys = ("n", "k")

    def _cap_size(self) -> int:
        return self.n - self.k

    def _smallest_loss(self) -> float:
        return 0.0
