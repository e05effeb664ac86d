"""ADA-FD's proximal matrix: a Frequent Directions sketch of the gradients (Wan & Zhang,
Algorithms 1-2)."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ...sketch import FrequentDirections, ShrinkRecord
from ...state import StateReader, copy_array, state_part
from .checks import ORTHONORMALITY_TOLERANCE, PREFIX
from .numerics import TINY_SCALE, TINY_SQUARE, condition, woodbury_weights

__all__ = ["FDProximal"]


class FDProximal:
    r"""ADA-FD: a Frequent Directions sketch ``S`` (tau rows) of the gradients.

    Wan & Zhang, Algorithms 1-2, steps 4-6: insert ``g`` into ``S``; with
    :math:`S = U \Sigma V^T` and :math:`\sigma_t = \Sigma_{\tau\tau}^2`, shrink to
    :math:`S = \Sigma' V^T`, :math:`\Sigma' = \sqrt{\Sigma^2 - \sigma_t I}`. Then
    :math:`(S^T S)^{1/2} = V \Sigma' V^T` and (Woodbury)

    .. math:: H^{-1} v = \frac{1}{\delta}\left(v - V (\delta I + \Sigma')^{-1} \Sigma' V^T v\right).

    The sketch is :class:`explorer.sketch.FrequentDirections` with ``m = tau`` (exact
    variant): it shrinks on every row once full, which is the paper's step 5-6 (before
    it is full, ``Sigma_{tau tau} = 0`` and the paper's shrink changes nothing). Right after
    a shrink the rows of ``S`` are orthogonal, so ``Sigma'`` and ``V`` are read off the row
    norms; otherwise (the first tau - 1 rounds) one SVD of the r x d rows. Either way one
    SVD per round, O(tau^2 d).

    >>> H = FDProximal(3, tau=2, delta=1.0)
    >>> [H.add(g) is not None for g in np.diag([1.0, 2.0, 3.0])]  # shrinks once full
    [False, True, True]
    >>> H.rank, H.eigenvalues().tolist()  # (4, 1) - 1 keeps 3; (9, 3) - 3 keeps 6
    (1, [6.0])
    """

    def __init__(self, d: int, tau: int, delta: float):
        self.d, self.tau, self.delta = d, tau, delta
        self.capacity = tau  # the rank at which the sketch shrinks
        self.sketch = FrequentDirections(d, tau)
        self._sigma = np.zeros(0)      # Sigma' (descending)
        self._basis = np.zeros((0, d))  # V^T, one row per singular direction

    def add(self, g: np.ndarray) -> ShrinkRecord | None:
        """The sketch takes ``g``; returns its shrink (the ``ShrinkRecord`` of
        :meth:`FrequentDirections.insert`) when ``g`` filled it, else None."""
        shrink = self.sketch.insert(g) if g.any() else None  # a zero row takes no row
        rows = self.sketch.rows
        if shrink is not None:  # rows = Sigma' V^T, orthogonal
            squared = np.einsum("ij,ij->i", rows, rows)
            if (squared < TINY_SQUARE).any():  # tiny rows: normalized scaled, see TINY_SQUARE
                scales = np.where(squared < TINY_SQUARE, TINY_SCALE, 1.0)
                rows = rows * scales[:, None]
                sigma = np.sqrt(np.einsum("ij,ij->i", rows, rows))
                basis = rows / sigma[:, None]
                sigma = sigma / scales
            else:
                sigma = np.sqrt(squared)
                basis = rows / sigma[:, None]
        else:
            _, sigma, basis = scipy.linalg.svd(rows, full_matrices=False, check_finite=False)
            keep = sigma > 0
            sigma, basis = sigma[keep], basis[keep]
        self._sigma, self._basis = sigma, basis
        return shrink

    def checkpoint(self) -> tuple:
        """The sketch's state (``add`` writes into its buffer) and the current factors."""
        return self.sketch.state_dict(), self._sigma, self._basis

    def rollback(self, saved: tuple) -> None:
        sketch_state, self._sigma, self._basis = saved
        self.sketch.load_state_dict(sketch_state)

    def solve(self, v: np.ndarray, delta: float | None = None) -> np.ndarray:
        delta = self.delta if delta is None else delta
        Vt = self._basis
        return (v - Vt.T @ (woodbury_weights(self._sigma, delta) * (Vt @ v))) / delta

    def compress(self) -> None:
        return None

    @property
    def rank(self) -> int:
        return self.sketch.rank

    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues of ``S^T S`` (the squares of Sigma'), descending, without the zeros."""
        return self._sigma ** 2

    def condition_number(self) -> float:
        largest = self._sigma[0] ** 2 if self._sigma.size else 0.0
        smallest = self._sigma[-1] ** 2 if self._sigma.size == self.d else 0.0
        return condition(self.delta, largest, smallest)

    def gram(self) -> np.ndarray:
        return self.sketch.gram()

    def matrix(self) -> np.ndarray:
        Vt = self._basis
        return self.delta * np.eye(self.d) + (Vt.T * self._sigma) @ Vt

    def state_dict(self) -> dict:
        return {"sigma": self._sigma.copy(), "basis": copy_array(self._basis),
                **{f"sketch.{k}": v for k, v in self.sketch.state_dict().items()}}

    def read_state(self, state: dict, owner: str) -> dict:
        """See :meth:`FullProximal.read_state`. The sketch is checked by
        :meth:`FrequentDirections.load_state_dict` (on a scratch sketch; ``"sketch"`` in the
        result); ``sigma`` holds at most as many positive values as the sketch has rows, and
        ``basis`` one row of length d for each. ``"trace"``: the sketch's ``||A||_F^2``."""
        reader = StateReader(state, owner, prefix=PREFIX)
        sketch = FrequentDirections(self.d, self.tau)
        sketch.load_state_dict(state_part(state, "sketch."))
        shape = reader.shape("sigma")
        if len(shape) != 1 or shape[0] > sketch.rank:
            raise reader.refuse("sigma", f"a vector of at most {sketch.rank} values (the sketch's rows)",
                                f"shape {shape}")
        sigma = reader.array("sigma", shape)
        if not (sigma > 0).all():
            raise reader.refuse("sigma", "positive (the non-zero singular values of the sketch)",
                                float(sigma.min()))
        held = float(np.sum(sketch.rows ** 2))
        if not float(np.sum(sigma ** 2)) <= held * (1 + ORTHONORMALITY_TOLERANCE):
            raise reader.refuse("sigma", f"singular values of the sketch (squares summing to "
                                f"||B||_F^2 = {held:.6g})", float(np.sum(sigma ** 2)))
        basis = reader.array("basis", (shape[0], self.d))
        error = float(np.max(np.abs(np.einsum("ij,ij->i", basis, basis) - 1.0), initial=0.0))
        if not error <= ORTHONORMALITY_TOLERANCE:
            raise reader.refuse("basis", "rows of norm 1 (singular vectors)", error)
        return {"sketch": sketch, "sigma": sigma, "basis": basis, "trace": sketch.frobenius_squared}

    def restore(self, staged: dict) -> None:
        self.sketch.load_state_dict(staged["sketch"].state_dict())
        self._sigma, self._basis = staged["sigma"], staged["basis"]

