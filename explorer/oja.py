r"""Oja's sketch: the sketch of Oja-SON (docs/algorithms.md section 3.7).

Oja's algorithm (Oja 1982; Oja and Karhunen 1985) tracks the top eigenvectors of the
covariance of a stream of rows by stochastic power iteration. Luo, Agarwal, Cesa-Bianchi
and Langford (2016), *Efficient second order online learning by sketching*, Algorithm 4
and its equation (6), turn it into a sketch for the sketched online Newton step:
with ``V`` (m x d, orthonormal rows), eigenvalue estimates ``Lambda`` (m x m, diagonal)
and a learning rate ``Gamma_t``, each row ``g_t`` does

.. math:: \Lambda_t = (I - \Gamma_t)\Lambda_{t-1} + \Gamma_t\,\mathrm{diag}(V_{t-1} g_t)^2,
          \qquad V_t = \mathrm{orth}(V_{t-1} + \Gamma_t V_{t-1} g_t g_t^T),

and the sketch is ``S_t = (t Lambda_t)^{1/2} V_t`` (Oja-SON: ``H_t = alpha_0 I + S_t^T S_t``);
``t Lambda_t`` estimates the eigenvalues of ``A^T A``: :attr:`OjaSketch.eigenvalues`.

The paper leaves ``Gamma_t`` open (a diagonal matrix of learning rates). Here
``Gamma_t = min(c / t, 1) I`` with ``c = learning_rate = 2``, the rule of the authors' own
implementation (Vowpal Wabbit's ``--OjaNewton``, ``--learning_rate_cnt 2``). ``orth`` is
Gram-Schmidt on the rows, in order (QR with the signs of R's diagonal made positive), and
``V_0`` is a random orthonormal matrix drawn from ``seed`` (VW's ``--random_init``).
Oja's step is not scale-free; as VW normalizes its features (``--normalize``),
``normalize=True`` (Oja-SON's auto defaults) turns V by ``gamma_t / s_t``, ``s_t`` the mean
squared row norm so far (``Lambda_t`` keeps ``gamma_t``): V no longer depends on the rows' scale.

References
----------
- Luo, Agarwal, Cesa-Bianchi, Langford (2016), NIPS, Algorithm 4 (Oja's sketch) and
  Algorithm 3 (Oja-SON's update), equation (6).
- Oja (1982), *Simplified neuron model as a principal component analyzer*; Oja and Karhunen (1985),
  *On stochastic approximation of the eigenvectors and eigenvalues of the expectation of a random matrix*.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.linalg.lapack import dgeqrf, dorgqr

from ._validation import (MAX_SQUARED_MASS, as_row, as_rows, check_float, check_int, check_mass,
                          check_matrix_size, check_row_mass)
from .hooks import Observable
from .params import Tunable
from .perturb import perturb
from .sketch import ShrinkRecord
from .state import StateReader, copy_array, stateful

__all__ = ["OjaSketch", "ORTHONORMAL_TOLERANCE", "oja_rotation"]

#: How far a loaded ``V V^T`` may be from the identity (entrywise): QR keeps it within a
#: few 1e-16 over any run, a tampered file does not.
ORTHONORMAL_TOLERANCE = 1e-8


def _orthonormal_rows(M: np.ndarray) -> np.ndarray:
    """Gram-Schmidt on the rows of a finite ``M`` (m x d, m <= d), in order: ``Q^T`` of
    ``M^T = QR`` with R's diagonal made non-negative, so row i spans what rows 0..i of M
    span beyond rows 0..i-1. Householder QR (LAPACK's dgeqrf and dorgqr, called directly:
    a fifth of ``np.linalg.qr``'s time on Oja-SON's small matrices): the result is
    orthonormal even when M is not full rank."""
    factored, tau, _, info = dgeqrf(M.T)
    Q, _, info_q = dorgqr(factored, tau)
    if info or info_q:
        raise np.linalg.LinAlgError(f"QR failed (LAPACK info {info or info_q})")
    signs = np.where(np.diagonal(factored) < 0, -1.0, 1.0)
    return (Q * signs).T


def oja_rotation(V: np.ndarray, projected: np.ndarray, row: np.ndarray, gamma: float) -> np.ndarray:
    """``orth(V + gamma p g^T)`` (Gram-Schmidt on the rows) for orthonormal ``V`` (m x d),
    ``g = row`` and ``p = V g``, in O(m^2 d) with one small QR instead of a d x m one.

    ``g = V^T c + r`` with ``r`` orthogonal to V's rows (projected out twice: "twice is
    enough" keeps ``r`` orthogonal when g nearly lies in V's span), so
    ``V + gamma p g^T = C [V; r / |r|]`` with ``C = [I + gamma p c^T, gamma |r| p]``
    (m x (m+1)) and ``[V; r / |r|]`` orthonormal: Gram-Schmidt of C's rows, applied to it,
    is Gram-Schmidt of ``V + gamma p g^T``'s rows."""
    m = V.shape[0]
    residual = row - projected @ V
    correction = V @ residual
    residual -= correction @ V
    norm = float(np.linalg.norm(residual))
    C = np.empty((m, m + 1))
    C[:, :m] = gamma * np.outer(projected, projected + correction)
    C[np.arange(m), np.arange(m)] += 1.0
    C[:, m] = gamma * norm * projected
    if not np.isfinite(C).all():  # no LAPACK call on non-finite numbers
        raise ValueError("Oja's step overflows")
    rotation = _orthonormal_rows(C)
    rotated = rotation[:, :m] @ V
    if norm > 0:
        rotated += np.outer(rotation[:, m], residual / norm)
    return rotated


@stateful
class OjaSketch(Observable, Tunable):
    r"""Oja's sketch (Luo et al. 2016, Algorithm 4, equation (6)): ``B = diag(sqrt(e)) V``.

    ``V`` (m x d) holds m orthonormal eigenvector estimates (:attr:`components`) and ``e``
    their eigenvalue estimates ``t Lambda_t`` of ``A^T A`` (:attr:`eigenvalues`); the
    rows of ``B`` are orthogonal at every moment, so ``B B^T = diag(e)``. Each row
    ``g`` (round t, ``gamma = min(learning_rate / t, 1)``, ``p = V g``):

    - ``e <- (1 - gamma) t / (t - 1) e + gamma t p^2`` (``e = p^2`` at t = 1);
    - ``V <- orth(V + gamma p g^T)`` (Gram-Schmidt on the rows, in order).

    Unlike Frequent Directions there is no deterministic error bound (the paper gives Oja-SON
    no regret bound either); what holds at every step: ``V`` has orthonormal rows, ``e >= 0``
    and, for ``learning_rate = c >= 1``, ``sum(e) <= c ||A||_F^2`` (by induction:
    ``(t - c) / (t - 1) <= 1`` and ``|p|^2 <= |g|^2``). On a stream whose covariance has rank
    ``k <= m`` the span of ``V`` converges to hold its range (tests/test_oja.py measures the
    angle). Oja's step ``gamma p g^T`` is not scale-free: rows of norm far from 1 turn V
    faster or slower (VW normalizes its features for this).

    In a learner's terms (what :class:`~explorer.newton.SketchedOnlineNewton` reads): every
    row changes all of ``B`` at once, like a Frequent Directions shrink, so :meth:`insert`
    always returns a :class:`~explorer.sketch.ShrinkRecord` (``squared``: the new ``e``
    descending, ``delta`` 0, ``kept`` m), ``rank`` is m and ``capacity`` m + 1 (a new row
    fills the (m+1)-th slot and is folded in at once). Needs ``1 <= m <= d``;
    ``learning_rate`` in [1, 100]; ``seed`` None or an integer >= 0 (``V_0``); ``normalize``
    True or False (V turns by ``gamma / s_t``, ``s_t`` the mean squared row norm: scale-free).

    >>> sk = OjaSketch(d=3, m=2, seed=0)
    >>> sk.extend([[3.0, 0.0, 0.0]] * 20)
    >>> sk.n_seen, round(float(abs(sk.components[0, 0])), 6), round(float(sk.eigenvalues.max()))
    (20, 1.0, 180)
    >>> bool(np.allclose(sk.components @ sk.components.T, np.eye(2)))
    True
    """

    def __init__(self, d: int, m: int, *, learning_rate: float = 2.0, seed: int | None = None,
                 normalize: bool = False):
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        self.m = check_int("m", m, minimum=1)
        if self.m > self.d:
            raise ValueError(f"m must be <= d for Oja's sketch (m orthonormal rows in R^d), "
                             f"got m = {self.m} and d = {self.d}")
        check_matrix_size(f"d = {self.d} and m = {self.m}", self.m + 1, self.d)
        self.learning_rate = check_float("learning_rate", learning_rate, minimum=1.0, maximum=100.0)
        self.seed = None if seed is None else check_int("seed", seed, minimum=0)
        if not isinstance(normalize, (bool, np.bool_)):
            raise ValueError(f"normalize must be True or False, got {normalize!r}")
        self.normalize = bool(normalize)
        start = perturb(np.random.default_rng(self.seed).standard_normal((self.m, self.d)))
        self._components = _orthonormal_rows(start)
        self._eigenvalues = np.zeros(self.m)
        self._rows = np.zeros((self.m, self.d))
        self.n_seen = 0
        self._frobenius_squared = 0.0

    def __repr__(self) -> str:
        scaled = ", normalize=True" if self.normalize else ""
        return (f"OjaSketch(d={self.d}, m={self.m}, learning_rate={self.learning_rate:g}{scaled}) "
                f"n_seen={self.n_seen}")

    # -- what a learner reads ----------------------------------------------------------------
    @property
    def capacity(self) -> int:
        """m + 1: every new row fills the last slot and is folded into the m rows at once."""
        return self.m + 1

    @property
    def rank(self) -> int:
        """The rows of ``B``: always m (zero before the first row)."""
        return self.m

    @property
    def frobenius_squared(self) -> float:
        """``||A||_F^2``: the total squared norm of every row seen."""
        return self._frobenius_squared

    @property
    def rows(self) -> np.ndarray:
        """``B = diag(sqrt(e)) V`` (m x d) as a read-only view (``.copy()`` to keep one)."""
        view = self._rows[:]
        view.flags.writeable = False
        return view

    @property
    def sketch(self) -> np.ndarray:
        """A copy of ``B`` (m x d)."""
        return self._rows.copy()

    @property
    def components(self) -> np.ndarray:
        """A copy of ``V`` (m x d): the eigenvector estimates, orthonormal rows."""
        return self._components.copy()

    @property
    def eigenvalues(self) -> np.ndarray:
        """A copy of ``e = t Lambda_t``: the estimates of ``A^T A``'s eigenvalues along ``V``'s rows."""
        return self._eigenvalues.copy()

    def gram(self) -> np.ndarray:
        """``B^T B = V^T diag(e) V`` (d x d, for inspection)."""
        return self._rows.T @ self._rows

    # -- the stream ------------------------------------------------------------------------
    def update(self, x) -> None:
        """Add one row ``x`` (length d). All or nothing: a non-finite row, or one that takes
        ``||A||_F^2`` past :data:`~explorer.sketch.MAX_SQUARED_MASS`, is a ``ValueError``."""
        self.insert(as_row(x, self.d))

    def extend(self, X) -> None:
        """Add the rows of ``X`` in order (same result as ``update`` row by row); all or
        nothing: a refused row (named) leaves the sketch as it was."""
        X = as_rows(X, self.d)
        check_mass(self._frobenius_squared, X, name="X")
        state = self.state_dict()
        try:
            for row in X:
                self.insert(row)
        except BaseException:
            self.load_state_dict(state)
            raise

    def undo_point(self) -> Callable[[], None]:
        """A function that puts the sketch back as it is now, whatever one :meth:`insert`
        does to it (every row changes all of ``B``: a copy of the state)."""
        state = self.state_dict()
        return lambda: self.load_state_dict(state)

    def insert(self, row: np.ndarray) -> ShrinkRecord:
        """Add one row the caller has already checked (finite): one step of equation (6).

        Returns the :class:`~explorer.sketch.ShrinkRecord` of the fold (every row changes
        all of ``B``). All or nothing: a row that would take ``||A||_F^2`` past
        :data:`~explorer.sketch.MAX_SQUARED_MASS`, or whose step is not finite, is a
        ``ValueError`` with nothing stored.
        """
        mass = check_row_mass(self._frobenius_squared, row)
        t = self.n_seen + 1
        gamma = min(self.learning_rate / t, 1.0)
        # normalize: the turn of V on rows scaled to mean squared norm 1 (s_t = mass / t)
        turn = gamma * (t / mass) if self.normalize and mass > 0 else gamma
        refusal = ValueError("Oja's step overflows for this row (rows of squared norm near "
                             f"{MAX_SQUARED_MASS:.0e}); rescale the data; nothing was added")
        with np.errstate(over="ignore", invalid="ignore"):
            projected = self._components @ row
            kept = (1.0 - gamma) * t / (t - 1) * self._eigenvalues if t > 1 else 0.0
            eigenvalues = kept + gamma * t * projected ** 2
            try:
                components = oja_rotation(self._components, projected, row, turn)
            except ValueError:
                raise refusal from None
        if not (np.isfinite(eigenvalues).all() and np.isfinite(components).all()):
            raise refusal
        self._components, self._eigenvalues = components, eigenvalues
        self._rows = np.sqrt(eigenvalues)[:, None] * components
        self.n_seen, self._frobenius_squared = t, mass
        return ShrinkRecord(squared=np.sort(eigenvalues)[::-1], delta=0.0, kept=self.m)

    # -- persistence -------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Plain arrays and scalars; ``from_state_dict`` continues exactly from here."""
        return {"kind": type(self).__name__, **self._settings(),
                "components": copy_array(self._components),
                "eigenvalues": copy_array(self._eigenvalues), "n_seen": self.n_seen,
                "frobenius_squared": self._frobenius_squared}

    def _settings(self) -> dict:
        """The constructor's arguments as a state dict stores them (seed None as -1)."""
        return {"d": self.d, "m": self.m, "learning_rate": self.learning_rate,
                "seed": -1 if self.seed is None else self.seed, "normalize": self.normalize}

    @classmethod
    def from_state_dict(cls, state: dict) -> "OjaSketch":
        reader = StateReader(state, cls)
        sk = cls(reader.count("d", minimum=1), reader.count("m", minimum=1),
                 learning_rate=reader.number("learning_rate", minimum=1.0, maximum=100.0),
                 seed=reader.seed(), normalize=reader.flag("normalize") if reader.has("normalize") else False)
        sk.load_state_dict(state)
        return sk

    def load_state_dict(self, state: dict) -> None:
        """Become the sketch ``state`` describes, in place (same settings). Everything is
        checked before anything is stored: ``V`` finite with orthonormal rows (up to
        :data:`ORTHONORMAL_TOLERANCE`), ``e`` finite and >= 0, zero before the first row
        and with ``sum(e) <= learning_rate ||A||_F^2``; a refusal is a ``ValueError``
        naming the key, with the sketch as it was. States saved without ``normalize``
        (older versions) load into either rule."""
        reader = StateReader(state, type(self))
        for key, value in self._settings().items():
            if key != "normalize" or reader.has(key):
                reader.same(key, value)
        components = reader.array("components", self._components.shape)
        with np.errstate(over="ignore", invalid="ignore"):  # a tampered huge V gives inf: refused
            error = np.abs(components @ components.T - np.eye(self.m)).max()
        if not error <= ORTHONORMAL_TOLERANCE:
            raise reader.refuse("components", "a matrix with orthonormal rows", "another matrix")
        eigenvalues = reader.array("eigenvalues", self._eigenvalues.shape)
        n_seen = reader.count("n_seen")
        total = reader.number("frobenius_squared", minimum=0.0, maximum=MAX_SQUARED_MASS)
        bound = self.learning_rate * total * (1 + 1e-9)
        with np.errstate(over="ignore"):
            held = float(eigenvalues.sum())
        if (eigenvalues < 0).any() or not held <= bound or (n_seen == 0 and eigenvalues.any()):
            raise reader.refuse("eigenvalues", f">= 0, summing to at most learning_rate * "
                                f"frobenius_squared = {bound:.6g} (0 before the first row)",
                                eigenvalues.tolist())
        self._components, self._eigenvalues = components, eigenvalues
        self._rows = np.sqrt(eigenvalues)[:, None] * components
        self.n_seen, self._frobenius_squared = n_seen, total
