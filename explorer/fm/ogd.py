"""Online gradient descent on the compact convex FM with a full ``Theta`` (:class:`OGDFM`).

The paper's OGD baseline (Luo et al., KDD 2018, section 5; Zinkevich 2003):
``Theta_{t+1} = Theta_t - (eta / sqrt(t)) q_t a_hat_t a_hat_t^T``. With a constant step it
would *be* FTRL here: without a constraint the two coincide; the decaying step is what makes
it a different baseline.
"""

from __future__ import annotations

import math

from ..state import stateful
from .full_matrix import FullMatrixFM

__all__ = ["OGDFM", "OGD_DEFAULT_ETA"]

OGD_DEFAULT_ETA = {"squared": 0.5, "logistic": 4.0}
"""OGD's ``eta`` in ``eta / sqrt(t)``: hand-picked starting values (the paper gives none);
``notebooks/sftrl_paper.ipynb`` tunes it on a validation split."""


@stateful
class OGDFM(FullMatrixFM):
    r"""Online gradient descent on the compact convex FM (Zinkevich 2003; the paper's OGD).

    .. math:: \Theta_{t+1} = \Theta_t - \frac{\eta}{\sqrt t}\, q_t\, \hat a_t \hat a_t^T .

    Unconstrained, like :class:`~explorer.fm.FTRLFM` (the paper's OGD of Lin et al. 2018 also
    projects onto a nuclear-norm ball, an O(d^3) eigen-decomposition per round, not done here).
    Default ``eta``: 0.5 ("squared") and 4.0 ("logistic"), tuned on this repository's
    streams (the paper gives none). ``eta`` is hot: ``with_params(eta=...)`` changes the
    steps ``eta / sqrt(t)`` to come, ``Theta`` stays as it is.

    >>> fm = OGDFM(d=2, eta=1.0)
    >>> fm.learn(([0], [1.0]), 2.0), float(fm.theta()[0, 0])  # loss (0-2)^2/2; Theta -= 1 * (-2)
    (2.0, 2.0)
    """

    _default_eta = OGD_DEFAULT_ETA

    def __init__(self, d: int, *, eta: float | None = None, loss: str = "squared"):
        super().__init__(d, eta=eta, loss=loss)

    def _step_size(self) -> float:
        return self.eta / math.sqrt(self.t + 1)  # this is round t + 1
