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

The learner calls, every round with a non-zero gradient ``g``: ``checkpoint()``, ``add(g)``
(``G`` or its sketch takes ``g``; returns ADA-FD's shrink, an
:class:`explorer.sketch.ShrinkRecord`, or None), ``solve(v)`` (``H_t^{-1} v`` for the update
of ``beta``; ``solve(v, delta)`` uses another delta with the same ``G``, so one
eigendecomposition can serve several learners), then ``compress()`` (ADA-FFD's shrink,
*after* the update as in the paper's step 12, returning its ``ShrinkRecord``; a no-op
elsewhere). Both shrinks follow FD's one rule (:func:`explorer.sketch.shrink_amounts`:
subtract the tau-th squared singular value, keep the first tau - 1 directions). If ``add``
fails (``LinAlgError``, a non-finite result) or the learner finds the new ``beta`` not
finite, ``rollback(checkpoint)`` puts the matrix back as it was before ``add``: the
checkpoint holds only what ``add`` overwrites in place (nothing for ADA-FULL and ADA-DIAG,
whose ``add`` builds new arrays; the small ``M`` block for ADA-FFD; the sketch for ADA-FD),
so a round needs no copy of the state. ``compress`` cannot fail (a product of orthonormal
matrices), so it runs after the checks.

LAPACK never sees a non-finite matrix: :func:`_eigh` refuses one
(:class:`~explorer.errors.Diverged`), and the learner keeps ``tr(G) = sum ||g||^2`` at most
:data:`explorer.sketch.MAX_SQUARED_MASS`, which bounds every entry of ``G``, ``M`` and the
FD sketch. Loading a state (``read_state`` then ``restore``) checks what a run keeps true:
finite arrays of the right shapes, symmetric ``G`` and ``M``, non-negative eigenvalues in
descending order, ranks within tau, ADA-FFD's ``V`` orthonormal in its first ``r`` columns.

The sketched classes never form a d x d matrix except in :meth:`gram` and :meth:`matrix`,
which exist for inspection and tests.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ..errors import Diverged
from ..sketch import FrequentDirections, ShrinkRecord, shrink_amounts
from ..state import StateReader, copy_array, state_part

__all__ = ["FullProximal", "DiagonalProximal", "FDProximal", "FFDProximal", "ORTHOGONALITY_EPS",
           "make_proximal", "kept_shapes"]

ORTHOGONALITY_EPS = 1e-10
"""ADA-FFD opens a new column of ``V`` only when ``||g - V V^T g|| > eps ||g||``.

The paper's literal test ``g' != g`` would add rounding noise as new directions once the
columns of ``V`` span every gradient (for example once ``r = d``); docs/algorithms.md section 4.
"""


ORTHONORMALITY_TOLERANCE = 1e-6
"""How far a loaded state's orthonormal matrices (ADA-FFD's ``V``, the eigenvectors) may be
from orthonormal, ``max |Q^T Q - I|``, and ADA-FD's basis rows from norm 1: runs keep them
near 1e-15 (tests/test_adagrad.py checks ADA-FFD's 1e-10 over 100,000 rounds)."""

_TINY_SQUARE = 2.0 ** -600
"""A vector with a squared norm below this is normalized after scaling it by
:data:`_TINY_SCALE`: the squares of entries below ~1e-154 fall among the subnormal numbers
or underflow to 0, so ADA-FFD's new column of ``V`` would not have norm 1 and ADA-FD's
basis row would be divided by 0."""

_TINY_SCALE = 2.0 ** 600
"""Exact (a power of two); the entries of a vector with ``||v||^2 < 2^-600`` are below
2^-300, so scaled they stay below 2^300, and even the smallest subnormal becomes ~2e-143."""


def _eigh(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending, clamped at 0) and eigenvectors of a symmetric PSD matrix.

    LAPACK's divide and conquer (``numpy.linalg.eigh``: syevd, the lightest call for the
    small matrices of ADA-FFD); on its rare non-convergence, scipy's QR algorithm (syev).
    A matrix with NaN or inf never reaches LAPACK: :class:`~explorer.errors.Diverged` (the
    learner then rolls the round back).
    """
    if not np.isfinite(M).all():
        raise Diverged("the matrix to decompose is not finite")
    try:
        values, vectors = np.linalg.eigh(M)
    except np.linalg.LinAlgError:
        values, vectors = scipy.linalg.eigh(M, check_finite=False, driver="ev")
    # descending order as a contiguous copy: a reversed view is a strided operand, which BLAS
    # cannot take and a saved state could not reproduce (tests/test_resume_layout.py)
    return np.maximum(values[::-1], 0.0), np.ascontiguousarray(vectors[:, ::-1])


def _woodbury_weights(roots: np.ndarray, delta: float) -> np.ndarray:
    """``s / (delta + s)`` for each square root ``s`` of an eigenvalue of ``G`` (ADA-FD: the
    singular values Sigma'; ADA-FFD: ``sqrt(lambda)``): the weights of the Woodbury formula.

    With orthonormal ``W`` and ``L = diag(s)``:
    ``(delta I + W L W^T)^{-1} v = (v - W diag(L / (delta + L)) W^T v) / delta``.
    """
    return roots / (delta + roots)


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
        return _condition(self.delta, self._values[0], self._values[-1])

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
        _check_gram(reader, "G", G)
        values = reader.array("values", (self.d,))
        _check_spectrum(reader, "values", values, float(np.trace(G)))
        vectors = reader.array("vectors", (self.d, self.d))
        _check_orthonormal(reader, "vectors", vectors)
        return {"G": G, "values": values, "vectors": vectors, "trace": float(np.trace(G))}

    def restore(self, staged: dict) -> None:
        self.G, self._values, self._vectors = staged["G"], staged["values"], staged["vectors"]


class DiagonalProximal:
    r"""ADA-DIAG: :math:`H = \delta I + \mathrm{diag}(G)^{1/2}`, i.e. per-coordinate
    :math:`h_i = \delta + \sqrt{\sum_s g_{s,i}^2}`; O(d) per round."""

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
        return _condition(self.delta, self.squares.max(), self.squares.min())

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
            if (squared < _TINY_SQUARE).any():  # tiny rows: normalized scaled, see _TINY_SQUARE
                scales = np.where(squared < _TINY_SQUARE, _TINY_SCALE, 1.0)
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
        return (v - Vt.T @ (_woodbury_weights(self._sigma, delta) * (Vt @ v))) / delta

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
        tiny = squared < _TINY_SQUARE and g.any()  # projected scaled, see _TINY_SQUARE
        if tiny:
            g = g * _TINY_SCALE
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
            c = c / _TINY_SCALE
        self.M[:r, :r] += c[:, None] * c
        self.r = r
        self._values, self._vectors = _eigh(self.M[:r, :r])

    def checkpoint(self) -> tuple:
        """What ``add`` overwrites: the rank, the leading r x r block of ``M`` (a copy, at
        most 2 tau x 2 tau) and the eigendecomposition (``add`` makes new arrays for it).
        Columns r and beyond of ``V`` and the rest of ``M`` are zero, so need no copy."""
        r = self.r
        return r, self.M[:r, :r].copy(), self._values, self._vectors

    def rollback(self, saved: tuple) -> None:
        r, block, self._values, self._vectors = saved
        self.V[:, r:] = 0.0
        self.M[:] = 0.0
        self.M[:r, :r] = block
        self.r = r

    def solve(self, v: np.ndarray, delta: float | None = None) -> np.ndarray:
        delta = self.delta if delta is None else delta
        V, U = self.V[:, :self.r], self._vectors
        return (v - V @ (U @ (_woodbury_weights(np.sqrt(self._values), delta) * (U.T @ (V.T @ v))))) / delta

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
        _check_orthonormal(reader, "V", V[:, :r])
        if M[r:].any() or M[:, r:].any():
            raise reader.refuse("M", f"zero outside its leading r x r block (r = {r})", "non-zero entries")
        _check_gram(reader, "M", M)
        values = reader.array("values", (r,))
        _check_spectrum(reader, "values", values, float(np.trace(M)))
        vectors = reader.array("vectors", (r, r))
        _check_orthonormal(reader, "vectors", vectors)
        return {"V": V, "M": M, "r": r, "values": values, "vectors": vectors, "trace": float(np.trace(M))}

    def restore(self, staged: dict) -> None:
        self.V, self.M, self.r = staged["V"], staged["M"], staged["r"]
        self._values, self._vectors = staged["values"], staged["vectors"]


def kept_shapes(variant: str, d: int, tau: int) -> list[tuple[int, int]]:
    """The shapes of the matrices the proximal matrix of ``variant`` keeps for dimension d:
    ADA-FULL's ``G`` (d x d), ADA-FD's sketch (tau x d), ADA-FFD's ``V`` (d x 2 tau) and
    ``M`` (2 tau x 2 tau); none for ADA-DIAG (a vector). Callers refuse sizes past
    :data:`explorer._validation.MAX_ENTRIES` before building one.

    >>> kept_shapes("ffd", 1152, 20)
    [(1152, 40), (40, 40)]
    """
    return {"full": [(d, d)], "diag": [], "fd": [(tau, d)],
            "ffd": [(d, 2 * tau), (2 * tau, 2 * tau)]}[variant]


def make_proximal(variant: str, d: int, tau: int, delta: float):
    """A fresh proximal matrix ``H_0 = delta I`` of ``variant`` ("full", "diag", "fd",
    "ffd") for gradients of dimension d; ``tau`` is the sketch size of "fd" and "ffd"
    (ignored by the others). The arguments are taken as checked.

    >>> make_proximal("fd", 5, 2, 1.0).solve(np.ones(5))
    array([1., 1., 1., 1., 1.])
    """
    if variant == "full":
        return FullProximal(d, delta)
    if variant == "diag":
        return DiagonalProximal(d, delta)
    if variant == "fd":
        return FDProximal(d, tau, delta)
    if variant == "ffd":
        return FFDProximal(d, tau, delta)
    raise ValueError(f"variant must be one of ['full', 'diag', 'fd', 'ffd'], got {variant!r}")


PREFIX = "proximal."
"""Where the proximal matrix's entries sit in the learner's state dict."""


def _check_gram(reader: StateReader, key: str, G: np.ndarray) -> None:
    """A sum of outer products ``g g^T`` is exactly symmetric (``g_i g_j = g_j g_i`` in
    floating point too) with a non-negative diagonal."""
    if not np.array_equal(G, G.T):
        raise reader.refuse(key, "symmetric (a sum of g g^T)", "an asymmetric matrix")
    if (np.diag(G) < 0).any():
        raise reader.refuse(key, "with a non-negative diagonal (a sum of g g^T)", float(np.diag(G).min()))


def _check_orthonormal(reader: StateReader, key: str, Q: np.ndarray) -> None:
    """Orthonormal columns, to :data:`ORTHONORMALITY_TOLERANCE`."""
    error = float(np.max(np.abs(Q.T @ Q - np.eye(Q.shape[1])), initial=0.0))
    if not error <= ORTHONORMALITY_TOLERANCE:
        raise reader.refuse(key, f"orthonormal columns (max |Q^T Q - I| <= {ORTHONORMALITY_TOLERANCE:g})",
                            error)


def _check_spectrum(reader: StateReader, key: str, values: np.ndarray, trace: float) -> None:
    """Eigenvalues of a PSD matrix as :func:`_eigh` keeps them: >= 0, descending, summing to
    its (finite) trace, up to rounding: 1e-6 relative, plus the subnormal range."""
    if not np.isfinite(trace):
        raise reader.refuse(key, "eigenvalues of a matrix with a finite trace", trace)
    if (values < 0).any() or (values[:-1] < values[1:]).any():
        raise reader.refuse(key, "non-negative and descending (eigenvalues of a PSD matrix)",
                            values.tolist()[:8])
    if not abs(float(values.sum()) - trace) <= 1e-6 * trace + 1e-290:
        raise reader.refuse(key, f"eigenvalues summing to the matrix's trace {trace:.6g}",
                            float(values.sum()))
