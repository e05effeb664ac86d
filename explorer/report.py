"""Printing the numbers a lesson checks: stable digits and decided comparisons only.

A lesson's checked output must be the same on every CPU and BLAS kernel, so it prints
facts (orderings, bounds) and values rounded to a few significant digits, never the
last bits that move with the summation order. Two things can still flip with the last
bit, and both are refused here at authoring time rather than printed:

- a rounded value within rounding noise of a rounding edge (``0.12345`` to four digits
  prints ``0.1234`` or ``0.1235`` depending on the kernel): :func:`sig` and
  :func:`rounded` raise :class:`Undecided` when the value lies within ``guard`` of an edge;
- a comparison whose two sides are within rounding noise of each other:
  :func:`decide` returns the truth of ``a < b`` (or ``>``, ``<=``, ``>=``) only when
  ``|a - b|`` exceeds the stated ``margin``, and raises :class:`Undecided` otherwise.

``make test`` runs every notebook under ``EXPLORER_PERTURB`` (``explorer.perturb``), which
moves every input by about 1e-13; a value or comparison that a run amplifies past its
margin then changes and fails there, on any machine.

>>> sig(0.123456), sig(123456.7, 3), sig(-2.5e-7, 2)
(0.1235, 123000.0, -2.5e-07)
>>> decide(0.52, "<", 0.533, margin=0.005)
True
>>> decide(0.5, "<", 0.5 + 1e-15, margin=1e-9)
Traceback (most recent call last):
...
explorer.report.Undecided: 0.5 < 0.50... is within the margin 1e-09 ...
>>> rounded(29.14, 1, guard=0.01)
29.1
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping

import numpy as np

__all__ = ["Undecided", "decide", "decide_all", "lowest", "perturbed", "rounded", "sig", "verdict"]

RELATIVE_GUARD = 1e-9
"""The least distance from a rounding edge, relative to the value, that :func:`sig` and
:func:`rounded` require by default: far above last-bit noise (1e-16), far below any
difference a lesson talks about."""

_OPERATORS = {"<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge}


class Undecided(ValueError):
    """A checked output that could print differently on another machine: a comparison
    within its margin or a value within its guard of a rounding edge."""


def decide(a, op: str, b, *, margin: float) -> bool:
    """The truth of ``a op b`` (``op`` one of ``<``, ``>``, ``<=``, ``>=``), only when the
    two sides differ by more than ``margin`` (so that no last-bit change can flip it).

    Parameters
    ----------
    a, b: the two numbers.
    op: the comparison.
    margin: the least ``|a - b|`` for which the answer is a fact (> 0, in the units of
        ``a`` and ``b``). State what the text needs: "clearly lower" means a margin the
        reader would call clear, not one just above rounding.

    Raises :class:`Undecided` when ``|a - b| <= margin``: print something stable instead
    (the fact that they are close, or the values rounded).
    """
    if op not in _OPERATORS:
        raise ValueError(f"op must be one of {', '.join(_OPERATORS)}, got {op!r}")
    a, b, margin = float(a), float(b), float(margin)
    if not margin > 0 or not math.isfinite(margin):
        raise ValueError(f"margin must be a finite number > 0, got {margin}")
    if not (math.isfinite(a) and math.isfinite(b)):
        raise Undecided(f"{a!r} {op} {b!r}: a side is not finite")
    if abs(a - b) <= margin:
        raise Undecided(f"{a!r} {op} {b!r} is within the margin {margin!r} (they differ by "
                        f"{abs(a - b):.3g}): print that they are close, not which is {op}")
    return bool(_OPERATORS[op](a, b))


def decide_all(a, op: str, b, *, margin: float) -> bool:
    """:func:`decide` for every pair of entries of ``a`` and ``b`` (broadcast): True when
    ``a op b`` holds for all of them, False at the first pair where it does not. Every pair
    decided before that one must differ by more than ``margin``, so that no rounding can
    flip the answer (:class:`Undecided` otherwise).

    >>> decide_all([1.0, 2.0], "<", 3.0, margin=0.5)
    True
    >>> decide_all([1.0, 2.0], ">", [0.0, 2.5], margin=0.1)
    False
    """
    return all(decide(x, op, y, margin=margin) for x, y in np.broadcast(a, b))


def lowest(values, *, margin: float):
    r"""The key of the smallest of ``values`` (a dict; of a sequence, its index),
    :math:`\arg\min_i v_i`, only when every other value is larger by more than ``margin``
    (:func:`decide`): the best setting of a grid, printed without a coin flip on a near tie.

    Raises :class:`Undecided` when the runner-up is within ``margin`` of the smallest (or a
    value is not finite), ``ValueError`` when there is no value.

    >>> lowest({0.01: 5.0, 0.1: 3.0, 1.0: 9.0}, margin=0.5), lowest([2.0, 1.0], margin=0.5)
    (0.1, 1)
    >>> lowest([2.0, 2.0 + 1e-12], margin=1e-9)
    Traceback (most recent call last):
    ...
    explorer.report.Undecided: 2.000000000001 > 2.0 is within the margin 1e-09 ...
    """
    if not float(margin) > 0 or not math.isfinite(margin):
        raise ValueError(f"margin must be a finite number > 0, got {margin}")
    items = list(values.items()) if isinstance(values, Mapping) else list(enumerate(values))
    if not items:
        raise ValueError("lowest needs at least one value, got none")
    best, smallest = min(items, key=lambda item: item[1])
    for key, value in items:
        if key != best:
            decide(value, ">", smallest, margin=margin)
    return best


def verdict(a, b, *, margin: float) -> str:
    """How ``a`` compares with ``b``, in a word a checked cell can print: ``"lower"`` or
    ``"higher"`` when they differ by more than ``margin`` (:func:`decide`), ``"tied"`` when
    by less than ``margin / 2``; in between :class:`Undecided` is raised (not a fact on
    every machine).

    >>> verdict(0.50, 0.60, margin=0.05), verdict(0.60, 0.50, margin=0.05), verdict(0.50, 0.51, margin=0.05)
    ('lower', 'higher', 'tied')
    """
    try:
        return "lower" if decide(a, "<", b, margin=margin) else "higher"
    except Undecided:
        if decide(abs(a - b), "<", margin, margin=margin / 2):
            return "tied"
        raise


def perturbed(X, seed: int) -> np.ndarray:
    """``X`` with every entry multiplied by ``1 + 1e-15 z``, ``z`` standard normal drawn from
    ``np.random.default_rng(seed)``: a copy changed by about one rounding error per entry,
    to see what a lesson's numbers owe to rounding.

    >>> X = np.ones((2, 3))
    >>> bool(np.all(np.abs(perturbed(X, seed=1) / X - 1) < 1e-14)), bool(np.array_equal(perturbed(X, 1), perturbed(X, 1)))
    (True, True)
    """
    return X * (1 + 1e-15 * np.random.default_rng(seed).standard_normal(X.shape))


def _check_edge(x: float, step: float, guard: float | None, shown: str) -> None:
    """Raise :class:`Undecided` if ``x`` lies within ``guard`` of a rounding edge
    ``(k + 1/2) step``."""
    guard = RELATIVE_GUARD * abs(x) if guard is None else float(guard)
    if guard < 0 or not math.isfinite(guard):
        raise ValueError(f"guard must be a finite number >= 0, got {guard}")
    distance = abs(abs(x) / step - math.floor(abs(x) / step) - 0.5) * step
    if distance <= guard:
        raise Undecided(f"{x!r} lies {distance:.3g} from a rounding edge of {shown}, within "
                        f"the guard {guard:.3g}: another machine may print the other side; "
                        "print fewer digits or a bound")


def sig(x, digits: int = 4, *, guard: float | None = None) -> float:
    """``x`` rounded to ``digits`` significant digits, as a float (for printing stable key
    numbers in checked notebook cells).

    ``guard``: the least distance from a rounding edge (in the units of ``x``) at which the
    rounding is trusted; by default ``1e-9 |x|``. Closer, :class:`Undecided` is raised.
    """
    x = float(x)
    if x == 0.0 or not math.isfinite(x):
        return x
    step = 10.0 ** (math.floor(math.log10(abs(x))) - digits + 1)
    _check_edge(x, step, guard, f"{digits} significant digits")
    return float(f"{x:.{digits}g}")


def rounded(x, decimals: int = 0, *, guard: float | None = None) -> float:
    """``x`` rounded to ``decimals`` decimal places, refused within ``guard`` of a rounding
    edge (by default ``1e-9 |x|``), as :func:`sig` does for significant digits.

    >>> rounded(0.25, 1)
    Traceback (most recent call last):
    ...
    explorer.report.Undecided: 0.25 lies 0 from a rounding edge of 1 decimals, ...
    """
    x = float(x)
    if not math.isfinite(x):
        return x
    _check_edge(x, 10.0 ** -decimals, guard, f"{decimals} decimals")
    return round(x, decimals)
