"""FTRL on the compact convex FM with a full ``Theta`` (:class:`FTRLFM`).

Luo et al. (KDD 2018), Algorithm 1 with ``R(Theta) = ||Theta||_F^2 / 2`` and no constraint
(docs/algorithms.md section 6.3): ``Theta_{t+1} = -eta sum_{s<=t} q_s a_hat_s a_hat_s^T``,
O(d^2) per round. :class:`~explorer.fm.SketchedFTRL` keeps the same sum in a sketch.
"""

from __future__ import annotations

from ..state import stateful
from .convex import MAX_THETA_ENTRY
from .full_matrix import FullMatrixFM, largest_magnitude

__all__ = ["FTRLFM"]


@stateful
class FTRLFM(FullMatrixFM):
    r"""Full-matrix FTRL on the compact convex FM (Luo et al., KDD 2018, Algorithm 1).

    With ``R(Theta) = ||Theta||_F^2 / 2`` and no constraint, FTRL's argmin is explicit:

    .. math:: \Theta_{t+1} = -\eta \sum_{s \le t} q_s\, \hat a_s \hat a_s^T ,
              \qquad q_s = \phi'(\hat a_s^T \Theta_s \hat a_s),

    kept incrementally as ``Theta -= eta q_t a_hat_t a_hat_t^T``. Regret (Theorem 1):
    ``2 eta sum_t ||grad_t||_F^2 + (R(Theta_*) - R(Theta_1)) / eta``. O(d^2) memory;
    per round O(d^2) for a dense row, O(nnz^2) for a sparse one.

    ``eta`` is hot: ``with_params(eta=...)`` plays ``-eta_new sum_s q_s a_hat_s a_hat_s^T``
    from then on, so the stored ``Theta`` is rescaled by ``eta_new / eta`` (as S-FTRL's
    sketch, which holds the sum itself, does at no cost).

    >>> fm = FTRLFM(d=4, eta=0.1)
    >>> for user, item, rating in [(0, 2, 4.0), (1, 3, 2.0), (0, 3, 3.0)]:
    ...     _ = fm.learn(([user, item], [1.0, 1.0]), rating)
    >>> round(fm.predict(([0, 2], [1.0, 1.0])), 4), fm.theta().shape
    (4.064, (5, 5))
    >>> round(fm.with_params(eta=0.05).predict(([0, 2], [1.0, 1.0])), 4)   # half of it
    2.032
    """

    def __init__(self, d: int, *, eta: float | None = None, loss: str = "squared"):
        super().__init__(d, eta=eta, loss=loss)

    def _step_size(self) -> float:
        return self.eta

    def _continue_state(self, state: dict, fresh: "FTRLFM", changes: dict) -> dict:
        """``Theta = -eta * (sum of past gradients)``: a new eta rescales it by new / old
        (refused, ``ValueError``, if an entry would pass :data:`MAX_THETA_ENTRY`)."""
        state = super()._continue_state(state, fresh, changes)
        theta = state["theta"] * (fresh.eta / self.eta)
        if not largest_magnitude(theta) <= MAX_THETA_ENTRY:
            raise ValueError(f"FTRLFM.with_params(eta={fresh.eta:g}): Theta = -eta * (sum of past "
                             f"gradients) would have an entry past {MAX_THETA_ENTRY:.0e}; choose a "
                             f"smaller eta")
        state["theta"] = theta
        return state
