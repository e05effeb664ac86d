"""ADA-FULL's proximal matrix ``H = delta I + G^{1/2}`` (Duchi, Hazan & Singer 2011)."""

from __future__ import annotations

import numpy as np

from ...state import StateReader, copy_array
from .checks import PREFIX, check_gram, check_orthonormal, check_spectrum
from .numerics import condition, eigh

__all__ = ["FullProximal"]


class FullProximal:
    r"""ADA-FULL: :math:`H = \delta I + G^{1/2}`, with :math:`G` kept exactly (d x d).

    ``add(g)`` adds :math:`g g^T` and takes the eigendecomposition
    :math:`G = U \Lambda U^T` (``scipy.linalg.eigh``, O(d^3)); then
    :math:`H^{-1} v = U (\delta I + \Lambda^{1/2})^{-1} U^T v`. Eigenvalues below
    ``d * eps * lambda_max`` are rounding noise of a rank-deficient ``G`` and are set to 0
    (their square roots, ~1e-6, would otherwise perturb ``H``), as a pseudo-inverse does.

    >>> H = FullProximal(2, delta=1.0)
    >>> H.add(np.array([3.0, 4.0]))  # G = g g^T: g is an eigenvector, eigenvalue 25
    >>> H.solve(np.array([3.0, 4.0])).round(3).tolist()  # g / (delta + 5)
    [0.5, 0.667]
    """

    def __init__(self, d: int, delta: float):
        self.d, self.delta = d, delta
        self.G = np.zeros((d, d))
        self._values = np.zeros(d)
        self._vectors = np.eye(d)

    def add(self, g: np.ndarray) -> None:
        G = self.G + np.outer(g, g)
        values, vectors = eigh(G)
        values[values <= self.d * np.finfo(float).eps * values[0]] = 0.0
        self.G, self._values, self._vectors = G, values, vectors

    def checkpoint(self) -> tuple:
        """What :meth:`rollback` needs: ``add`` builds new arrays, so references suffice."""
        return self.G, self._values, self._vectors

    def rollback(self, saved: tuple) -> None:
        self.G, self._values, self._vectors = saved

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
        return condition(self.delta, self._values[0], self._values[-1])

    def gram(self) -> np.ndarray:
        return self.G.copy()

    def matrix(self) -> np.ndarray:
        U = self._vectors
        return self.delta * np.eye(self.d) + (U * np.sqrt(self._values)) @ U.T

    def state_dict(self) -> dict:
        return {"G": copy_array(self.G), "values": self._values.copy(), "vectors": copy_array(self._vectors)}

    def read_state(self, state: dict, owner: str) -> dict:
        """The arrays of ``state`` (this object's ``state_dict()`` keys), checked; nothing is
        stored (:meth:`restore` does). ``"trace"``: ``tr(G)``, which the learner's
        ``gradient_mass`` must cover."""
        reader = StateReader(state, owner, prefix=PREFIX)
        G = reader.array("G", (self.d, self.d))
        check_gram(reader, "G", G)
        values = reader.array("values", (self.d,))
        check_spectrum(reader, "values", values, float(np.trace(G)))
        vectors = reader.array("vectors", (self.d, self.d))
        check_orthonormal(reader, "vectors", vectors)
        return {"G": G, "values": values, "vectors": vectors, "trace": float(np.trace(G))}

    def restore(self, staged: dict) -> None:
        self.G, self._values, self._vectors = staged["G"], staged["values"], staged["vectors"]

