"""ADA-DIAG's proximal matrix ``H = delta I + diag(G)^{1/2}`` (Duchi, Hazan & Singer 2011)."""

from __future__ import annotations

import numpy as np

from ...state import StateReader
from .checks import PREFIX
from .numerics import condition

__all__ = ["DiagonalProximal"]


class DiagonalProximal:
    r"""ADA-DIAG: :math:`H = \delta I + \mathrm{diag}(G)^{1/2}`, i.e. per-coordinate
    :math:`h_i = \delta + \sqrt{\sum_s g_{s,i}^2}`; O(d) per round.

    >>> H = DiagonalProximal(2, delta=1.0)
    >>> H.add(np.array([3.0, 4.0]))  # h = (1 + 3, 1 + 4)
    >>> H.solve(np.array([4.0, 5.0])).tolist()
    [1.0, 1.0]
    """

    def __init__(self, d: int, delta: float):
        self.d, self.delta = d, delta
        self.squares = np.zeros(d)

    def add(self, g: np.ndarray) -> None:
        self.squares = self.squares + g * g

    def checkpoint(self) -> np.ndarray:
        return self.squares  # add builds a new array

    def rollback(self, saved: np.ndarray) -> None:
        self.squares = saved

    def solve(self, v: np.ndarray, delta: float | None = None) -> np.ndarray:
        delta = self.delta if delta is None else delta
        return v / (delta + np.sqrt(self.squares))

    def compress(self) -> None:
        return None

    @property
    def rank(self) -> int:
        return int(np.count_nonzero(self.squares))

    def condition_number(self) -> float:
        return condition(self.delta, self.squares.max(), self.squares.min())

    def gram(self) -> np.ndarray:
        return np.diag(self.squares)

    def matrix(self) -> np.ndarray:
        return np.diag(self.delta + np.sqrt(self.squares))

    def state_dict(self) -> dict:
        return {"squares": self.squares.copy()}

    def read_state(self, state: dict, owner: str) -> dict:
        """See :meth:`FullProximal.read_state`; ``squares`` (the diagonal of ``G``) >= 0."""
        reader = StateReader(state, owner, prefix=PREFIX)
        squares = reader.array("squares", (self.d,))
        if (squares < 0).any():
            raise reader.refuse("squares", "non-negative (sums of squared gradients)", float(squares.min()))
        return {"squares": squares, "trace": float(squares.sum())}

    def restore(self, staged: dict) -> None:
        self.squares = staged["squares"]

