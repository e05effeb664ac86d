"""Adam (Kingma & Ba, ICLR 2015): the adaptive first-order baseline of Wan & Zhang."""

from __future__ import annotations

import math

import numpy as np

from .._validation import SCALES, check_float, check_scale
from ..learner import RoundRefused
from ..sketch import MAX_SQUARED_MASS
from ..state import StateReader, stateful
from .linear import LinearLearner, beta_overflow

__all__ = ["Adam"]


@stateful
class Adam(LinearLearner):
    r"""Adam (Kingma & Ba 2015) with the paper's constants delta = 1e-8, 0.9, 0.999.

    .. math:: m_t = b_1 m_{t-1} + (1 - b_1) g_t,\quad v_t = b_2 v_{t-1} + (1 - b_2) g_t^2,

    .. math:: \beta_{t+1} = \beta_t
              - \eta\, \frac{m_t / (1 - b_1^t)}{\sqrt{v_t / (1 - b_2^t)} + \delta}

    (``beta1``/``beta2`` are the decay rates ``b_1``/``b_2``; ``beta`` is the decision.)
    Default ``eta = 1e-3``, Kingma & Ba's recommendation. ``eta`` and ``delta`` (> 0) are
    :data:`HOT`: ``with_params`` changes them between rounds.

    >>> learner = Adam(1, eta=0.1, loss="squared")
    >>> [round(learner.learn([1.0], 1.0), 3) for _ in range(3)]
    [1.0, 0.81, 0.64]
    """

    def __init__(self, d: int, *, eta: float = 1e-3, beta1: float = 0.9,
                 beta2: float = 0.999, delta: float = 1e-8, loss: str = "absolute"):
        beta1 = check_float("beta1", beta1, minimum=0.0, maximum=1.0)
        beta2 = check_float("beta2", beta2, minimum=0.0, maximum=1.0)
        for name, value in (("beta1", beta1), ("beta2", beta2)):
            if value == 1.0:
                raise ValueError(f"{name} must be in [0, 1) (the bias correction divides by "
                                 f"1 - {name}^t), got 1.0")
        self._delta = check_scale("delta", delta)
        super().__init__(d, loss, eta)
        self.beta1, self.beta2 = beta1, beta2
        self.m = np.zeros(self.d)
        self.v = np.zeros(self.d)

    HOT = ("eta", "delta")
    """Both scale the next update only: ``m`` and ``v`` do not depend on them."""

    @property
    def delta(self) -> float:
        """The constant added to ``sqrt(v_hat)`` (> 0)."""
        return self._delta

    def __repr__(self) -> str:
        return (f"Adam(d={self.d}, eta={self.eta:g}, beta1={self.beta1:g}, beta2={self.beta2:g}, "
                f"delta={self.delta:g}, loss={self.loss!r}) t={self.t}")

    def _update(self, slope: float, x: np.ndarray, squared_gradient: float) -> None:
        """Runs on a zero gradient too: ``m`` decays and ``beta`` keeps moving. ``||g||^2 <=
        1e300`` keeps ``g * g`` and so ``v`` finite; only ``beta`` needs a check."""
        g = slope * x
        m = self.beta1 * self.m + (1.0 - self.beta1) * g
        v = self.beta2 * self.v + (1.0 - self.beta2) * g * g
        m_hat = m / (1.0 - self.beta1 ** self.t)
        v_hat = v / (1.0 - self.beta2 ** self.t)
        beta = self.beta - self._eta * m_hat / (np.sqrt(v_hat) + self._delta)
        if not np.isfinite(beta).all():
            raise RoundRefused(beta_overflow(self._eta, self._delta))
        self.m, self.v, self.beta = m, v, beta

    def state_dict(self) -> dict:
        return {**self._common_state(), "beta1": self.beta1, "beta2": self.beta2,
                "delta": self.delta, "m": self.m.copy(), "v": self.v.copy()}

    @classmethod
    def from_state_dict(cls, state: dict) -> "Adam":
        reader = StateReader(state, cls)
        d, arguments = cls._read_arguments(reader)
        learner = cls(d, beta1=reader.number("beta1", minimum=0.0, maximum=1.0),
                      beta2=reader.number("beta2", minimum=0.0, maximum=1.0),
                      delta=reader.number("delta", minimum=SCALES[0], maximum=SCALES[1]), **arguments)
        learner.load_state_dict(state)
        return learner

    def load_state_dict(self, state: dict) -> None:
        """In place, checked before anything is stored: ``d``, ``loss``, ``beta1`` and
        ``beta2`` must be this learner's own; ``eta``, ``delta`` in [1e-100, 1e100];
        ``beta``, ``m``, ``v`` finite of length d; ``t >= 0``. ``m`` and ``v`` are decaying
        averages of ``g`` and ``g * g`` with ``||g||^2 <= 1e300``: ``|m| <= 1e150`` and
        ``0 <= v <= 1e300``."""
        reader = StateReader(state, type(self))
        reader.same("beta1", self.beta1)
        reader.same("beta2", self.beta2)
        common = self._read_common(reader)
        delta = reader.number("delta", minimum=SCALES[0], maximum=SCALES[1])
        m, v = reader.array("m", (self.d,)), reader.array("v", (self.d,))
        if not np.abs(m).max() <= math.sqrt(MAX_SQUARED_MASS):
            raise reader.refuse("m", "at most 1e150 in size (an average of gradients)", float(np.abs(m).max()))
        if not (v.min() >= 0 and v.max() <= MAX_SQUARED_MASS):
            raise reader.refuse("v", "in [0, 1e300] (an average of squared gradients)",
                                (float(v.min()), float(v.max())))
        self._restore_common(common)
        self._delta, self.m, self.v = delta, m, v
