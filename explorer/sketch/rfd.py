"""Robust Frequent Directions (Luo et al. 2017, Algorithms 3-4; JMLR 2019, Algorithm 2).

FD's sketch ``B`` plus the regularizer ``alpha = alpha0 + Delta / 2``, grown at every shrink
(docs/algorithms.md section 2).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_float
from ..state import StateReader, stateful
from .fd import FrequentDirections

__all__ = ["RobustFrequentDirections"]


@stateful
class RobustFrequentDirections(FrequentDirections):
    r"""Robust Frequent Directions (Luo et al. 2017, Algorithms 3-4; JMLR 2019, Algorithm 2).

    Frequent Directions plus one scalar: at every shrink ``alpha += delta / 2``,
    starting from ``alpha0 >= 0``; ``B^T B + alpha I`` approximates ``A^T A + alpha0 I``.
    ``B`` is exactly the FD matrix for the same rows. Guarantees (Theorems 3-4):

    - ``-(alpha - alpha0) I <= A^T A + alpha0 I - (B^T B + alpha I) <= (alpha - alpha0) I``,
      so the spectral error is at most ``Delta / 2`` -- half of FD's bound;
    - ``kappa(B^T B + alpha I) <= kappa(B^T B + alpha0 I)``.

    Each shrink is the spectral-norm-optimal rank-(m-1)-plus-scaled-identity
    approximation of ``B_hat^T B_hat + alpha I`` (Theorems 1-2).

    ``alpha0`` is hot (``HOT``): ``B`` and ``Delta`` do not depend on it, so
    ``with_params(alpha0=...)`` continues the stream with ``alpha = alpha0 + Delta / 2``
    for the new ``alpha0`` (what the dashboard's alpha0 slider does).

    >>> import numpy as np
    >>> sk = RobustFrequentDirections(d=3, m=2, alpha0=0.0)
    >>> sk.extend(np.diag([3.0, 2.0, 1.0]))
    >>> sk.alpha, np.round(np.diag(sk.gram()), 3).tolist()
    (2.5, [6.5, 2.5, 2.5])
    >>> sk.with_params(alpha0=1.0).alpha, sk.alpha
    (3.5, 2.5)
    """

    HOT = ("alpha0",)

    def __init__(self, d: int, m: int, *, alpha0: float = 0.0, fast: bool = False):
        super().__init__(d, m, fast=fast)
        self.alpha0 = check_float("alpha0", alpha0, minimum=0.0)

    @property
    def alpha(self) -> float:
        """``alpha0 + Delta / 2``: the regularizer that makes RFD's error two-sided."""
        return self.alpha0 + self.delta_total / 2

    def _regularizer(self) -> float:
        return self.alpha

    def __repr__(self) -> str:
        return (f"RobustFrequentDirections(d={self.d}, m={self.m}, alpha0={self.alpha0:g}, "
                f"fast={self.fast}) n_seen={self.n_seen} alpha={self.alpha:.4g}")

    def gram(self) -> np.ndarray:
        """``B^T B + alpha I``, the approximation of ``A^T A + alpha0 I``."""
        return super().gram() + self.alpha * np.eye(self.d)

    def _extra_state(self) -> dict:
        return {"alpha0": self.alpha0}

    @classmethod
    def _extra_arguments(cls, reader: StateReader) -> dict:
        return {"alpha0": reader.number("alpha0", minimum=0.0)}

    def _settings(self) -> dict:
        return {**super()._settings(), "alpha0": self.alpha0}
