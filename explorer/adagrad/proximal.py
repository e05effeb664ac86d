r"""The proximal matrices ``H_t`` of adaptive subgradient methods (docs/algorithms.md section 4).

Each class keeps what it needs to apply ``H_t^{-1}`` to a vector, with ``G_t = sum g g^T``:

- :class:`FullProximal` (ADA-FULL): ``H = delta I + G^{1/2}``; keeps ``G`` (d x d) and
  takes one d x d eigendecomposition per round, O(d^3) time and O(d^2) memory -- the cost
  that motivates everything else in this module.
- :class:`DiagonalProximal` (ADA-DIAG): ``H = delta I + diag(G)^{1/2}``; O(d).
- :class:`FDProximal` (ADA-FD, Wan & Zhang Algorithms 1-2): a Frequent Directions sketch
  ``S`` (tau rows) of the gradients, ``H = delta I + (S^T S)^{1/2}``; O(tau^2 d) per round.
- :class:`FFDProximal` (ADA-FFD, Algorithms 3-4): ``S = M^{1/2} V^T`` with ``V``
  (d x 2 tau, ``r`` orthonormal columns) and ``M`` (2 tau x 2 tau); the rank ``r`` cycles
  between tau - 1 and 2 tau; O(tau d + tau^3) per round on average.

The learner calls, every round with a non-zero gradient ``g``: ``add(g)`` (``G`` or its
sketch takes ``g``), ``solve(v)`` (``H_t^{-1} v`` for the update of ``beta``; ``solve(v,
delta)`` uses another delta with the same ``G``, so one eigendecomposition can serve
several learners), then
``compress()`` (ADA-FFD's shrink, *after* the update as in the paper's step 12; a no-op
elsewhere). The sketched classes never form a d x d matrix except in :meth:`gram`
and :meth:`matrix`, which exist for inspection and tests.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.linalg

from ..sketch import FrequentDirections
from ..state import copy_array

__all__ = ["FullProximal", "DiagonalProximal", "FDProximal", "FFDProximal", "ShrinkInfo",
           "ORTHOGONALITY_EPS"]

ORTHOGONALITY_EPS = 1e-10
"""ADA-FFD opens a new column of ``V`` only when ``||g - V V^T g|| > eps ||g||``.

The paper's literal test ``g' != g`` would add rounding noise as new directions once the
columns of ``V`` span every gradient (for example once ``r = d``); docs/algorithms.md section 4.
"""


class ShrinkInfo(NamedTuple):
    """What one ADA-FFD shrink did: eigenvalues of ``M`` before it (descending), the
    amount ``delta`` subtracted from them, and the rank before and after."""

    eigenvalues: np.ndarray
    delta: float
    rank_before: int
    rank_after: int


def _eigh(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending, clamped at 0) and eigenvectors of a symmetric PSD matrix.

    LAPACK's divide and conquer (``numpy.linalg.eigh``: syevd, the lightest call for the
    small matrices of ADA-FFD); on its rare non-convergence, scipy's QR algorithm (syev).
    """
    try:
        values, vectors = np.linalg.eigh(M)
    except np.linalg.LinAlgError:
        values, vectors = scipy.linalg.eigh(M, check_finite=False, driver="ev")
    # descending order as a contiguous copy: a reversed view is a strided operand, which BLAS
    # cannot take and a saved state could not reproduce (tests/test_resume_layout.py)
    return np.maximum(values[::-1], 0.0), np.ascontiguousarray(vectors[:, ::-1])


def _root_weights(eigenvalues: np.ndarray, delta: float) -> np.ndarray:
    """``sqrt(l) / (delta + sqrt(l))``: Woodbury weights of ``(delta I + W diag(sqrt l) W^T)^{-1}``.

    With orthonormal ``W``:
    ``(delta I + W L W^T)^{-1} v = (v - W diag(L / (delta + L)) W^T v) / delta``.
    """
    root = np.sqrt(eigenvalues)
    return root / (delta + root)


def _condition(delta: float, largest: float, smallest: float) -> float:
    """``(delta + sqrt(largest)) / (delta + sqrt(smallest))``: kappa(H) from G's extreme
    eigenvalues."""
    return float((delta + np.sqrt(largest)) / (delta + np.sqrt(smallest)))


class FullProximal:
    r"""ADA-FULL: :math:`H = \delta I + G^{1/2}`, with :math:`G` kept exactly (d x d).

    ``add(g)`` adds :math:`g g^T` and takes the eigendecomposition
    :math:`G = U \Lambda U^T` (``scipy.linalg.eigh``, O(d^3)); then
    :math:`H^{-1} v = U (\delta I + \Lambda^{1/2})^{-1} U^T v`. Eigenvalues below
    ``d * eps * lambda_max`` are rounding noise of a rank-deficient ``G`` and are set to 0
    (their square roots, ~1e-6, would otherwise perturb ``H``), as a pseudo-inverse does.
    """

    def __init__(self, d: int, delta: float):
        self.d, self.delta = d, delta
        self.G = np.zeros((d, d))
        self._values = np.zeros(d)
        self._vectors = np.eye(d)

    def add(self, g: np.ndarray) -> None:
        G = self.G + np.outer(g, g)
        values, vectors = _eigh(G)
        values[values <= self.d * np.finfo(float).eps * values[0]] = 0.0
        self.G, self._values, self._vectors = G, values, vectors

    def solve(self, v: np.ndarray, delta: float | None = None) -> np.ndarray:
        delta = self.delta if delta is None else delta
        U = self._vectors
        return U @ ((U.T @ v) / (delta + np.sqrt(self._values)))

    def compress(self) -> None:
        return None

    @property
    def rank(self) -> int:
        return int(np.count_nonzero(self._values))

    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues of ``G`` (descending)."""
        return self._values.copy()

    def condition_number(self) -> float:
        return _condition(self.delta, self._values[0], self._values[-1])

    def gram(self) -> np.ndarray:
        return self.G.copy()

    def matrix(self) -> np.ndarray:
        U = self._vectors
        return self.delta * np.eye(self.d) + (U * np.sqrt(self._values)) @ U.T

    def state_dict(self) -> dict:
        return {"G": copy_array(self.G), "values": self._values.copy(), "vectors": copy_array(self._vectors)}

    def load(self, state: dict) -> None:
        self.G = _array(state, "G", (self.d, self.d))
        self._values = _array(state, "values", (self.d,))
        self._vectors = _array(state, "vectors", (self.d, self.d))


class DiagonalProximal:
    r"""ADA-DIAG: :math:`H = \delta I + \mathrm{diag}(G)^{1/2}`, i.e. per-coordinate
    :math:`h_i = \delta + \sqrt{\sum_s g_{s,i}^2}`; O(d) per round."""

    def __init__(self, d: int, delta: float):
        self.d, self.delta = d, delta
        self.squares = np.zeros(d)

    def add(self, g: np.ndarray) -> None:
        self.squares = self.squares + g * g

    def solve(self, v: np.ndarray, delta: float | None = None) -> np.ndarray:
        delta = self.delta if delta is None else delta
        return v / (delta + np.sqrt(self.squares))

    def compress(self) -> None:
        return None

    @property
    def rank(self) -> int:
        return int(np.count_nonzero(self.squares))

    def condition_number(self) -> float:
        return _condition(self.delta, self.squares.max(), self.squares.min())

    def gram(self) -> np.ndarray:
        return np.diag(self.squares)

    def matrix(self) -> np.ndarray:
        return np.diag(self.delta + np.sqrt(self.squares))

    def state_dict(self) -> dict:
        return {"squares": self.squares.copy()}

    def load(self, state: dict) -> None:
        self.squares = _array(state, "squares", (self.d,))


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
    """

    def __init__(self, d: int, tau: int, delta: float):
        self.d, self.tau, self.delta = d, tau, delta
        self.sketch = FrequentDirections(d, tau)
        self._sigma = np.zeros(0)      # Sigma' (descending)
        self._basis = np.zeros((0, d))  # V^T, one row per singular direction

    def add(self, g: np.ndarray) -> None:
        shrink = self.sketch.insert_row(g) if g.any() else None  # a zero row takes no row
        rows = self.sketch.rows_view
        if shrink is not None:  # rows = Sigma' V^T, orthogonal
            sigma = np.sqrt(np.einsum("ij,ij->i", rows, rows))
            basis = rows / sigma[:, None]
        else:
            _, sigma, basis = scipy.linalg.svd(rows, full_matrices=False, check_finite=False)
            keep = sigma > 0
            sigma, basis = sigma[keep], basis[keep]
        self._sigma, self._basis = sigma, basis

    def solve(self, v: np.ndarray, delta: float | None = None) -> np.ndarray:
        delta = self.delta if delta is None else delta
        Vt = self._basis
        return (v - Vt.T @ (_ratio(self._sigma, delta) * (Vt @ v))) / delta

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
        return _condition(self.delta, largest, smallest)

    def gram(self) -> np.ndarray:
        return self.sketch.gram()

    def matrix(self) -> np.ndarray:
        Vt = self._basis
        return self.delta * np.eye(self.d) + (Vt.T * self._sigma) @ Vt

    def state_dict(self) -> dict:
        return {"sigma": self._sigma.copy(), "basis": copy_array(self._basis),
                **{f"sketch.{k}": v for k, v in self.sketch.state_dict().items()}}

    def load(self, state: dict) -> None:
        self.sketch.load_state_dict({k[len("sketch."):]: v for k, v in state.items()
                              if k.startswith("sketch.")})
        self._sigma = np.asarray(state["sigma"], dtype=float).reshape(-1).copy()
        self._basis = copy_array(np.asarray(state["basis"], dtype=float).reshape(-1, self.d))
        if self._basis.shape[0] != self._sigma.size:
            raise ValueError("state_dict basis and sigma disagree on the sketch's rank")


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
    """

    def __init__(self, d: int, tau: int, delta: float):
        self.d, self.tau, self.delta = d, tau, delta
        self.V = np.zeros((d, 2 * tau))
        self.M = np.zeros((2 * tau, 2 * tau))
        self.r = 0
        self._values = np.zeros(0)        # eigenvalues of M[:r, :r], descending
        self._vectors = np.zeros((0, 0))  # and its eigenvectors U (r x r)

    def add(self, g: np.ndarray) -> None:
        r = self.r
        V = self.V[:, :r]
        c = V.T @ g
        residual = g - V @ c
        norm = np.sqrt(residual @ residual)
        if r < self.d and norm > ORTHOGONALITY_EPS * np.sqrt(g @ g):
            correction = V.T @ residual  # second Gram-Schmidt pass
            residual -= V @ correction
            norm = np.sqrt(residual @ residual)
            self.V[:, r] = residual / norm
            c = np.concatenate((c + correction, (norm,)))
            r += 1
        self.M[:r, :r] += c[:, None] * c
        self.r = r
        self._values, self._vectors = _eigh(self.M[:r, :r])

    def solve(self, v: np.ndarray, delta: float | None = None) -> np.ndarray:
        delta = self.delta if delta is None else delta
        V, U = self.V[:, :self.r], self._vectors
        return (v - V @ (U @ (_root_weights(self._values, delta) * (U.T @ (V.T @ v))))) / delta

    def compress(self) -> ShrinkInfo | None:
        """The doubling-trick shrink (steps 12-15) when ``r = 2 tau``; returns what it did."""
        tau = self.tau
        if self.r < 2 * tau:
            return None
        values, U = self._values, self._vectors
        shift = float(values[tau - 1])
        kept = np.maximum(values[:tau - 1] - shift, 0.0)
        self.V[:, :tau - 1] = self.V @ U[:, :tau - 1]
        self.V[:, tau - 1:] = 0.0
        self.M[:] = 0.0
        self.M[np.arange(tau - 1), np.arange(tau - 1)] = kept
        self.r = tau - 1
        self._values, self._vectors = kept, np.eye(tau - 1)
        return ShrinkInfo(eigenvalues=values, delta=shift, rank_before=2 * tau,
                          rank_after=tau - 1)

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
        return _condition(self.delta, largest, smallest)

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

    def load(self, state: dict) -> None:
        self.V = _array(state, "V", self.V.shape)
        self.M = _array(state, "M", self.M.shape)
        r = int(state["r"])
        if not 0 <= r <= min(2 * self.tau, self.d):
            raise ValueError(f"state_dict rank r = {r} does not fit tau = {self.tau}, d = {self.d}")
        self.r = r
        self._values = _array(state, "values", (r,))
        self._vectors = _array(state, "vectors", (r, r))


def _ratio(sigma: np.ndarray, delta: float) -> np.ndarray:
    """``Sigma' / (delta + Sigma')``: ADA-FD's Woodbury weights (Sigma' are singular values)."""
    return sigma / (delta + sigma)


def _array(state: dict, name: str, shape: tuple) -> np.ndarray:
    """``state[name]`` as a float array of the given shape (a copy in the same memory layout,
    :func:`explorer.state.copy_array`), else ValueError."""
    array = np.asarray(state[name], dtype=float)
    if array.shape != tuple(shape):
        raise ValueError(f"state_dict entry {name!r} has shape {array.shape}, "
                         f"expected {tuple(shape)}")
    return copy_array(array)
