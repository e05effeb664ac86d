r"""The step sizes eta and fixed-share rates alpha under which Yuan & Lamperski prove their
adaptive regret bounds (Theorems 1 and 3 to 6).

The experiments tune instead (toy: eta = 1, alpha = 1e-5; faces: eta = 5, alpha = 1e-4):
the theory values are safe for any data, and slow on friendly data.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .._validation import check_float, check_int
from ._base import check_dimension, check_subset

#: The longest stream the settings are computed for (T(n - k) stays an exact float).
MAX_ROUNDS = 10 ** 12

__all__ = ["TheorySettings", "pca_theory_settings", "sphere_theory_settings",
           "simplex_theory_settings"]


class TheorySettings(NamedTuple):
    """A step size and a fixed-share rate."""

    eta: float
    alpha: float


def pca_theory_settings(T: int, n: int, k: int, L: float) -> TheorySettings:
    r"""Theorems 1 and 3: online adaptive PCA and the adaptive best subset of experts.

    .. math:: \alpha = \frac{1}{T(n-k)+1},\quad D = (n-k)\ln\big(n(1+(n-k)T)\big) + 1,\quad
              \eta = \ln\big(1 + \sqrt{2D/L}\big),

    where L bounds the best comparator's loss on every interval, e.g. the best fixed
    projection's loss on the whole stream. Then :math:`R_a = O(\sqrt{2LD} + D)`.

    >>> eta, alpha = pca_theory_settings(T=600, n=20, k=2, L=600 * 18)
    >>> round(eta, 3), f"{alpha:.3g}"     # L = T (n - k): about the paper's toy eta = 0.19
    (0.185, '9.26e-05')
    """
    T, (n, k) = _rounds(T), check_subset(n, k)
    L = check_float("L", L, minimum=0.0, strict_minimum=True)
    alpha = 1.0 / (T * (n - k) + 1)
    D = (n - k) * math.log(n * (1 + (n - k) * T)) + 1
    return TheorySettings(eta=_log1p_sqrt(2 * D, L), alpha=alpha)


def sphere_theory_settings(T: int, n: int, L: float | None = None) -> TheorySettings:
    r"""Theorems 4 and 5: variance minimization over the unit sphere.

    :math:`\alpha = 1/(T+1)`. With a bound L on the comparator's loss (Theorem 4):
    :math:`D = \ln(n(1+T)) + 1`, :math:`\eta = \ln(1 + \sqrt{2D/L})`. Without one
    (Theorem 5): :math:`\eta = \sqrt{\ln(n(1+T)) / T}`, and
    :math:`R_a = O(\sqrt{T \ln(n(1+T))})`.

    >>> [round(value, 4) for value in sphere_theory_settings(T=100, n=5)]
    [0.2495, 0.0099]
    """
    T, n = _rounds(T), check_dimension(n, 1)
    alpha = 1.0 / (T + 1)
    if L is None:
        return TheorySettings(eta=math.sqrt(math.log(n * (1 + T)) / T), alpha=alpha)
    L = check_float("L", L, minimum=0.0, strict_minimum=True)
    D = math.log(n * (1 + T)) + 1
    return TheorySettings(eta=_log1p_sqrt(2 * D, L), alpha=alpha)


def simplex_theory_settings(T: int, n: int, L: float) -> TheorySettings:
    r"""Theorem 6: variance minimization over the simplex (portfolio risk).

    .. math:: \alpha = \frac{1}{T+1},\quad c = \frac{\sqrt{2\ln((1+T)n) + 2}}{\sqrt{L}},\quad
              b = c/2,\quad a = \frac{b}{2b+1},\quad \eta = 2a,

    giving :math:`R_a \le 2\sqrt{2L(\ln((1+T)n)+1)} + 2\ln((1+T)n)`.

    >>> [round(value, 4) for value in simplex_theory_settings(T=100, n=5, L=10.0)]
    [0.5459, 0.0099]
    """
    T, n = _rounds(T), check_dimension(n, 1)
    L = check_float("L", L, minimum=0.0, strict_minimum=True)
    c = math.sqrt(2 * math.log((1 + T) * n) + 2) / math.sqrt(L)
    b = c / 2
    a = b / (2 * b + 1)
    return TheorySettings(eta=2 * a, alpha=1.0 / (T + 1))


def _rounds(T) -> int:
    T = check_int("T", T, minimum=1)
    if T > MAX_ROUNDS:
        raise ValueError(f"T must be an integer in [1, {MAX_ROUNDS:.0e}], got {T}")
    return T


def _log1p_sqrt(numerator: float, L: float) -> float:
    r""":math:`\ln(1 + \sqrt{\text{numerator}/L})`, also when the ratio overflows (tiny L):
    then it is :math:`\tfrac12 \ln(\text{numerator}/L)` to double precision."""
    ratio = numerator / L
    if math.isfinite(ratio):
        return math.log1p(math.sqrt(ratio))
    return 0.5 * (math.log(numerator) - math.log(L))
