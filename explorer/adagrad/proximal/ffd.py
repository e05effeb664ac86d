"""ADA-FFD's proximal matrix: the doubling trick with an incremental eigen-update (Wan & Zhang,
Algorithms 3-4)."""

from __future__ import annotations

import numpy as np

from ...sketch import ShrinkRecord, shrink_amounts
from ...state import StateReader, copy_array
from .checks import PREFIX, check_gram, check_orthonormal, check_spectrum
from .numerics import TINY_SCALE, TINY_SQUARE, condition, eigh, woodbury_weights

__all__ = ["FFDProximal", "ORTHOGONALITY_EPS"]

ORTHOGONALITY_EPS = 1e-10
"""ADA-FFD opens a new column of ``V`` only when ``||g - V V^T g|| > eps ||g||``.

The paper's literal test ``g' != g`` would add rounding noise as new directions once the
columns of ``V`` span every gradient (for example once ``r = d``); docs/algorithms.md section 4.
"""


class FFDProximal:
    r"""ADA-FFD: the doubling trick with an incremental eigen-update (Algorithms 3-4).

    State: ``V`` (d x 2 tau) whose first ``r`` columns are orthonormal (the rest zero) and
    ``M`` (2 tau x 2 tau, symmetric), with :math:`S^T S = V M V^T`. Round t, steps 4-15:

    1. :math:`c = V^T g`, :math:`g' = V c`; if :math:`\|g - g'\| > \epsilon \|g\|`
       (:data:`ORTHOGONALITY_EPS`), ``r <- r + 1`` and column r of ``V`` is
       :math:`(g - g') / \|g - g'\|`, orthogonalized a second time (one classical
       Gram-Schmidt pass loses orthogonality over long streams);
    2. :math:`M \leftarrow M + c c^T` (with ``c`` in the grown basis), so that
       :math:`V M V^T` gains exactly :math:`g g^T`;
    3. :math:`M = U \Lambda U^T` (an r x r eigendecomposition, O(tau^3)) and
       :math:`H^{-1} v = \frac{1}{\delta}(v - V U (\delta I + \Lambda^{1/2})^{-1}
       \Lambda^{1/2} U^T V^T v)`;
    4. (:meth:`compress`, after the learner's update) if ``r = 2 tau``: :math:`s = \lambda_\tau`,
       :math:`M \leftarrow \mathrm{diag}(\max(\lambda - s, 0))`, :math:`V \leftarrow V U`;
       keep the first tau - 1 columns and zero the rest, ``r = tau - 1``.

    So the rank cycles between tau - 1 and 2 tau. Per round O(tau d) for ``V^T g``, the new
    column and ``H^{-1} v``, plus O(r^3) for the small eigendecomposition; every tau + 1
    rounds O(tau^2 d) for ``V U``: O(tau d) on average when tau <= sqrt(d) (the paper's
    assumption; beyond it the r^3 term dominates). With ``2 tau > d`` the rank stops at
    ``d``, nothing is ever shrunk, and ADA-FFD equals ADA-FULL (the paper's footnote 1).

    >>> H = FFDProximal(5, tau=2, delta=1.0)
    >>> for g in np.diag([1.0, 2.0, 3.0, 4.0]):
    ...     H.add(np.append(g, 0.0)); shrink = H.compress()
    >>> shrink.squared.tolist(), shrink.delta, H.rank  # r = 2 tau: minus lambda_tau
    ([16.0, 9.0, 4.0, 1.0], 9.0, 1)
    >>> H.eigenvalues().tolist()  # 16 - 9, in tau - 1 = 1 column
    [7.0]
    """

    def __init__(self, d: int, tau: int, delta: float):
        self.d, self.tau, self.delta = d, tau, delta
        self.capacity = 2 * tau  # the rank at which compress shrinks
        self.V = np.zeros((d, 2 * tau))
        self.M = np.zeros((2 * tau, 2 * tau))
        self.r = 0
        self._values = np.zeros(0)        # eigenvalues of M[:r, :r], descending
        self._vectors = np.zeros((0, 0))  # and its eigenvectors U (r x r)

    def add(self, g: np.ndarray) -> None:
        r = self.r
        V = self.V[:, :r]
        squared = g @ g
        tiny = squared < TINY_SQUARE and g.any()  # projected scaled, see TINY_SQUARE
        if tiny:
            g = g * TINY_SCALE
            squared = g @ g
        c = V.T @ g
        residual = g - V @ c
        norm = np.sqrt(residual @ residual)
        if r < self.d and norm > ORTHOGONALITY_EPS * np.sqrt(squared):
            correction = V.T @ residual  # second Gram-Schmidt pass
            residual -= V @ correction
            norm = np.sqrt(residual @ residual)
            self.V[:, r] = residual / norm
            c = np.concatenate((c + correction, (norm,)))
            r += 1
        if tiny:
            c = c / TINY_SCALE
        self.M[:r, :r] += c[:, None] * c
        self.r = r
        self._values, self._vectors = eigh(self.M[:r, :r])

    def checkpoint(self) -> tuple:
        """What ``add`` and ``compress`` overwrite: the rank, the leading r x r block of
        ``M`` (a copy, at most 2 tau x 2 tau), the eigendecomposition (``add`` makes new
        arrays for it) and, when the next ``add`` may fill ``V`` (a ``compress`` rewrites
        its columns), the first r columns of ``V``. Columns r and beyond of ``V`` and the
        rest of ``M`` are zero, so need no copy."""
        r = self.r
        columns = self.V[:, :r].copy() if r >= self.capacity - 1 else None
        return r, self.M[:r, :r].copy(), self._values, self._vectors, columns

    def rollback(self, saved: tuple) -> None:
        r, block, self._values, self._vectors, columns = saved
        if columns is not None:
            self.V[:, :r] = columns
        self.V[:, r:] = 0.0
        self.M[:] = 0.0
        self.M[:r, :r] = block
        self.r = r

    def solve(self, v: np.ndarray, delta: float | None = None) -> np.ndarray:
        delta = self.delta if delta is None else delta
        V, U = self.V[:, :self.r], self._vectors
        return (v - V @ (U @ (woodbury_weights(np.sqrt(self._values), delta) * (U.T @ (V.T @ v))))) / delta

    def compress(self) -> ShrinkRecord | None:
        """The doubling-trick shrink (steps 12-15) when ``r = 2 tau``: FD's rule on the
        eigenvalues of ``M`` (the squared singular values of ``S``;
        :func:`explorer.sketch.shrink_amounts` with ``m = tau``), keeping tau - 1 columns
        of ``V`` (a zero eigenvalue's too: the rank after is always tau - 1). Returns the
        :class:`~explorer.sketch.ShrinkRecord` (``squared``: the 2 tau eigenvalues before,
        ``delta = lambda_tau``, ``kept = tau - 1``), else None."""
        tau = self.tau
        if self.r < self.capacity:
            return None
        values, U = self._values, self._vectors
        shift, positive = shrink_amounts(values, tau)
        kept = np.zeros(tau - 1)
        kept[:positive.size] = positive
        self.V[:, :tau - 1] = self.V @ U[:, :tau - 1]
        self.V[:, tau - 1:] = 0.0
        self.M[:] = 0.0
        self.M[np.arange(tau - 1), np.arange(tau - 1)] = kept
        self.r = tau - 1
        self._values, self._vectors = kept, np.eye(tau - 1)
        return ShrinkRecord(values, shift, tau - 1)

    @property
    def rank(self) -> int:
        return self.r

    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues of ``S^T S = V M V^T`` (those of ``M[:r, :r]``), descending."""
        return self._values.copy()

    def condition_number(self) -> float:
        values = self._values
        largest = values[0] if values.size else 0.0
        smallest = values[-1] if values.size == self.d else 0.0
        return condition(self.delta, largest, smallest)

    def orthonormality_error(self) -> float:
        """``max |V_r^T V_r - I|``: how far the kept columns are from orthonormal."""
        V = self.V[:, :self.r]
        return float(np.max(np.abs(V.T @ V - np.eye(self.r)), initial=0.0))

    def gram(self) -> np.ndarray:
        V = self.V[:, :self.r]
        return V @ self.M[:self.r, :self.r] @ V.T

    def matrix(self) -> np.ndarray:
        W = self.V[:, :self.r] @ self._vectors
        return self.delta * np.eye(self.d) + (W * np.sqrt(self._values)) @ W.T

    def state_dict(self) -> dict:
        return {"V": copy_array(self.V), "M": copy_array(self.M), "r": self.r,
                "values": self._values.copy(), "vectors": copy_array(self._vectors)}

    def read_state(self, state: dict, owner: str) -> dict:
        """See :meth:`FullProximal.read_state`. The rank ``r`` is below 2 tau (a round that
        reaches 2 tau shrinks) and at most d; ``V`` is zero after its first r columns, which
        are orthonormal (:data:`ORTHONORMALITY_TOLERANCE`); ``M`` is zero outside its leading
        r x r block, which is symmetric with eigenvalues ``values``. ``"trace"``: ``tr(M)``."""
        reader = StateReader(state, owner, prefix=PREFIX)
        V = reader.array("V", self.V.shape)
        M = reader.array("M", self.M.shape)
        r = reader.count("r", maximum=min(2 * self.tau - 1, self.d))
        if V[:, r:].any():
            raise reader.refuse("V", f"zero after its first r = {r} columns", "non-zero columns")
        check_orthonormal(reader, "V", V[:, :r])
        if M[r:].any() or M[:, r:].any():
            raise reader.refuse("M", f"zero outside its leading r x r block (r = {r})", "non-zero entries")
        check_gram(reader, "M", M)
        values = reader.array("values", (r,))
        check_spectrum(reader, "values", values, float(np.trace(M)))
        vectors = reader.array("vectors", (r, r))
        check_orthonormal(reader, "vectors", vectors)
        return {"V": V, "M": M, "r": r, "values": values, "vectors": vectors, "trace": float(np.trace(M))}

    def restore(self, staged: dict) -> None:
        self.V, self.M, self.r = staged["V"], staged["M"], staged["r"]
        self._values, self._vectors = staged["values"], staged["vectors"]

