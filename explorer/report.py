"""Printing the numbers a lesson checks: stable digits only (docs/architecture.md).

A lesson's checked output must be the same on every CPU and BLAS kernel, so it prints
facts (orderings, bounds) and values rounded to a few significant digits, never the
last bits that move with the summation order.

>>> sig(0.123456), sig(123456.7, 3), sig(-2.5e-7, 2)
(0.1235, 123000.0, -2.5e-07)
"""

from __future__ import annotations

__all__ = ["sig"]


def sig(x, digits: int = 4) -> float:
    """``x`` rounded to ``digits`` significant digits, as a float (for printing stable key
    numbers in checked notebook cells)."""
    return float(f"{float(x):.{digits}g}")
