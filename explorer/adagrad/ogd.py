"""OGD, online gradient descent (Zinkevich, ICML 2003): the first-order baseline of Wan & Zhang."""

from __future__ import annotations

import numpy as np

from ..learner import RoundRefused
from ..state import StateReader, stateful
from .linear import LinearLearner, beta_overflow

__all__ = ["OGD"]


@stateful
class OGD(LinearLearner):
    r"""Online gradient descent (Zinkevich 2003), the baseline of Wan & Zhang section 5.

    .. math:: \beta_{t+1} = \beta_t - \frac{\eta}{\sqrt t}\, g_t

    Default ``eta = 1e-3``: the best of the paper's grid {1e-4, ..., 1} on its synthetic
    regression in our runs.

    >>> learner = OGD(2, eta=0.5, loss="squared")
    >>> [round(learner.learn([1.0, 0.0], 1.0), 3) for _ in range(3)]
    [1.0, 0.0, 0.0]
    """

    def __init__(self, d: int, *, eta: float = 1e-3, loss: str = "absolute"):
        super().__init__(d, loss, eta)

    def __repr__(self) -> str:
        return f"OGD(d={self.d}, eta={self.eta:g}, loss={self.loss!r}) t={self.t}"

    def _update(self, slope: float, x: np.ndarray, squared_gradient: float) -> None:
        if slope == 0.0:
            return
        beta = self.beta - (self._eta / np.sqrt(self.t)) * (slope * x)
        if not np.isfinite(beta).all():
            raise RoundRefused(beta_overflow(self._eta))
        self.beta = beta

    def state_dict(self) -> dict:
        return self._common_state()

    @classmethod
    def from_state_dict(cls, state: dict) -> "OGD":
        d, arguments = cls._read_arguments(StateReader(state, cls))
        learner = cls(d, **arguments)
        learner.load_state_dict(state)
        return learner

    def load_state_dict(self, state: dict) -> None:
        """In place, checked before anything is stored: ``d`` and ``loss`` must be this
        learner's own, ``eta`` in [1e-100, 1e100], ``beta`` finite of length d, ``t >= 0``."""
        self._restore_common(self._read_common(StateReader(state, type(self))))
