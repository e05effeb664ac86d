r"""ADA-LR and RADAGRAD: AdaGrad with a randomized low-rank ``G_t^{1/2}`` (the paper's baselines).

Krummenacher, McWilliams, Kilcher, Buhmann & Meinshausen (NeurIPS 2016), *Scalable adaptive
stochastic optimization using random projections*, as Wan & Zhang (TPAMI 2022) state them in
their section 2.1, equations (3) and (4); docs/algorithms.md section 4.9. Both approximate
ADA-FULL's ``H_t = delta I + G_t^{1/2}`` by a fast randomized SVD (Halko, Martinsson & Tropp
2011) with a subsampled randomized Fourier transform ``Pi`` (tau x d,
:class:`FourierProjection`: ``Pi = sqrt(d / tau) S F D``, with the orthonormal DCT-II as
``F``, a real transform for any d), drawn once from ``seed``:

- :class:`AdaLR` (equation 3) keeps ``G_t`` (d x d) exactly and, every round, takes the
  range finder ``Q R = G_t Pi^T``, ``B = Q^T G_t = U Sigma V^T`` and steps
  ``beta <- beta - eta V (Sigma^{1/2} + delta I)^{-1} V^T g``: O(d^2) memory and
  O(tau d^2) time per round.
- :class:`RadaGrad` (equation 4) never forms ``G_t``: it keeps the projected
  ``G~_t = sum_s g_s (Pi g_s)^T`` (d x tau) and its QR factors, updated by one rank-one QR
  update per round (``scipy.linalg.qr_update``); ``B = G~_t^T Q = W' Sigma W^T`` (tau x tau),
  ``V = Q W`` and ``beta <- beta - eta V (Sigma^{1/2} + delta I)^{-1} V^T g - eta (g - V V^T g)``:
  O(tau d) memory and O(tau^2 d) time per round.

Both are :class:`~explorer.adagrad.AdaGrad` learners with their own proximal matrices
(:class:`LowRankProximal`, :class:`RandomizedQRProximal`; :mod:`explorer.adagrad.proximal`),
so the round is AdaGrad's own code; ``method="pds"`` applies the same ``H^{-1}`` to ``g_bar``
(an extension: the papers state only CMD). With ``tau >= d`` both equal ADA-FULL.

>>> from explorer.adagrad import AdaLR, RadaGrad
>>> learner = RadaGrad(4, tau=2, eta=0.5, seed=0)
>>> learner.learn([1.0, 2.0, 0.0, 0.0], 1.0), learner.rank
(1.0, 1)
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.linalg.blas import dnrm2

from .._validation import SCALES, check_choice, check_int, check_matrix_size
from ..errors import Diverged
from ..state import StateReader, copy_array, stateful, state_part
from .adagrad import AdaGrad
from .proximal import ORTHONORMALITY_TOLERANCE, PREFIX
from .settings import DEFAULT_ETA, LABELS, METHODS, default_delta

__all__ = ["AdaLR", "RadaGrad", "FourierProjection", "LowRankProximal", "RandomizedQRProximal"]


class FourierProjection:
    r"""A subsampled randomized Fourier transform ``Pi = sqrt(d / k) S F D`` (k x d).

    ``D``: d random signs; ``F``: the orthonormal DCT-II (``scipy.fft.dct``, norm "ortho"),
    O(d log d) per vector; ``S``: k of the d rows, drawn without replacement. So
    ``E[Pi^T Pi] = I``, and with ``k = d``, ``Pi`` is orthogonal. Drawn once from ``seed``
    (a fixed ``Pi``, as Krummenacher et al. use it). ``k = min(tau, d)``.

    >>> P = FourierProjection(5, 5, seed=0).matrix()
    >>> bool(np.allclose(P @ P.T, np.eye(5)))
    True
    """

    def __init__(self, d: int, k: int, seed: int | None):
        rng = np.random.default_rng(seed)
        self.d, self.k, self.seeded = d, k, seed is not None
        self.signs = np.where(rng.random(d) < 0.5, -1.0, 1.0)
        self.rows = rng.choice(d, size=k, replace=False).astype(np.int64)
        self.scale = float(np.sqrt(d / k))

    def apply(self, A: np.ndarray) -> np.ndarray:
        """``Pi A`` for a vector (length d, gives k) or a matrix (d x n, gives k x n)."""
        signed = self.signs * A if A.ndim == 1 else self.signs[:, None] * A
        import scipy.fft  # here, not at import: only RADAGRAD's projection needs it

        return self.scale * scipy.fft.dct(signed, type=2, norm="ortho", axis=0)[self.rows]

    def matrix(self) -> np.ndarray:
        """``Pi`` as a dense k x d array (for inspection and tests)."""
        return self.apply(np.eye(self.d))

    def state_dict(self) -> dict:
        return {"signs": self.signs.copy(), "rows": self.rows.copy()}

    def read_state(self, reader: StateReader) -> dict:
        """``signs`` (d entries, each -1 or +1) and ``rows`` (k distinct integers in [0, d));
        for a seeded projection, exactly the ones the seed draws (this object's own)."""
        signs = reader.array("signs", (self.d,))
        if not (np.abs(signs) == 1.0).all():
            raise reader.refuse("signs", "-1 or +1 (random signs)", signs.tolist()[:8])
        rows = reader.array("rows", (self.k,))
        if not (np.array_equal(rows, np.round(rows)) and rows.min() >= 0 and rows.max() < self.d
                and np.unique(rows).size == self.k):
            raise reader.refuse("rows", f"{self.k} distinct integers in [0, {self.d})", rows.tolist()[:8])
        rows = rows.astype(np.int64)
        if self.seeded and not (np.array_equal(signs, self.signs) and np.array_equal(rows, self.rows)):
            raise reader.refuse("signs", "the projection this learner's seed draws", "another projection")
        return {"signs": signs, "rows": rows}

    def restore(self, staged: dict) -> None:
        self.signs, self.rows = staged["signs"], staged["rows"]


def _svd(B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Singular values (descending; those below ``n eps sigma_max`` set to 0, rounding noise
    of a rank-deficient matrix, as :class:`~explorer.adagrad.FullProximal` does with
    eigenvalues) and right singular vectors as columns: gesdd, falling back to gesvd."""
    if not np.isfinite(B).all():
        raise Diverged("the matrix to decompose is not finite")
    try:
        _, sigma, Vt = scipy.linalg.svd(B, full_matrices=False, check_finite=False)
    except np.linalg.LinAlgError:
        _, sigma, Vt = scipy.linalg.svd(B, full_matrices=False, check_finite=False, lapack_driver="gesvd")
    sigma[sigma <= max(B.shape) * np.finfo(float).eps * sigma[0]] = 0.0
    return sigma, np.ascontiguousarray(Vt.T)


class _LowRankFactors:
    """What both proximal matrices share: the factors ``V`` (d x k, orthonormal) and
    ``sqrt(Sigma)`` of the randomized SVD, and what is read off them. Empty before the
    first gradient."""

    def __init__(self, d: int, delta: float, projection: FourierProjection):
        self.d, self.delta, self.projection = d, delta, projection
        self.k = projection.k
        self._roots = np.zeros(0)       # Sigma^{1/2}, descending
        self._basis = np.zeros((d, 0))  # V

    def compress(self) -> None:
        return None

    @property
    def rank(self) -> int:
        return int(np.count_nonzero(self._roots))

    def eigenvalues(self) -> np.ndarray:
        """``Sigma``: the randomized SVD's estimates of the top eigenvalues of ``G``."""
        return self._roots ** 2

    def gram(self) -> np.ndarray:
        """``V Sigma V^T``: the rank-k approximation of ``G`` that ``H`` is built from."""
        return (self._basis * self._roots ** 2) @ self._basis.T

    def _factored(self, make) -> tuple[np.ndarray, np.ndarray]:
        """``make()`` gives ``(Sigma, V)``; empty factors while nothing has been added."""
        if not self._holds_gradients():
            return np.zeros(0), np.zeros((self.d, 0))
        sigma, V = make()
        return np.sqrt(sigma), V


class LowRankProximal(_LowRankFactors):
    r"""ADA-LR's ``H``: ``G`` kept exactly, its square root from a randomized SVD each round.

    Wan & Zhang equation (3): :math:`G \leftarrow G + g g^T`, :math:`QR = G \Pi^T` (the
    range finder, d x k), :math:`B = Q^T G = U \Sigma V^T`, and

    .. math:: H^{-1} v = V (\Sigma^{1/2} + \delta I)^{-1} V^T v,

    which acts on the span of ``V`` only (the rest of ``v`` is dropped, as in the paper).
    ``G Pi^T`` is the DCT of G's columns (G is symmetric), O(d^2 log d); ``Q^T G``
    O(k d^2); the QR and SVD O(k^2 d). Memory O(d^2). With ``k = d``, ``V`` is a full
    eigenbasis of ``G`` and ``H`` is ADA-FULL's. The factors are recomputed from ``G`` when a
    state is loaded (nothing but ``G`` and ``Pi`` is stored).
    """

    def __init__(self, d: int, delta: float, projection: FourierProjection):
        super().__init__(d, delta, projection)
        self.G = np.zeros((d, d))

    def _holds_gradients(self) -> bool:
        return bool(self.G.any())

    def _factor(self) -> tuple[np.ndarray, np.ndarray]:
        G = self.G
        if not np.isfinite(G).all():
            raise Diverged("G is not finite")
        Q, _ = scipy.linalg.qr(self.projection.apply(G).T, mode="economic", check_finite=False)
        return _svd(Q.T @ G)

    def add(self, g: np.ndarray) -> None:
        previous = self.G
        self.G = previous + np.outer(g, g)
        try:
            self._roots, self._basis = self._factored(self._factor)
        except BaseException:
            self.G = previous
            raise

    def checkpoint(self) -> tuple:
        """``add`` builds new arrays: references suffice."""
        return self.G, self._roots, self._basis

    def rollback(self, saved: tuple) -> None:
        self.G, self._roots, self._basis = saved

    def solve(self, v: np.ndarray, delta: float | None = None) -> np.ndarray:
        delta = self.delta if delta is None else delta
        V = self._basis
        return V @ ((V.T @ v) / (delta + self._roots))

    def condition_number(self) -> float:
        """``kappa`` of ``H`` on the span of ``V`` (where ``H^{-1}`` acts):
        ``(delta + sqrt(sigma_1)) / (delta + sqrt(sigma_k))``."""
        roots = self._roots
        return float((self.delta + roots[0]) / (self.delta + roots[-1])) if roots.size else 1.0

    def matrix(self) -> np.ndarray:
        """``V (Sigma^{1/2} + delta I) V^T``: ``H`` on the span of ``V`` (its pseudo-inverse is
        what :meth:`solve` applies); ADA-FULL's ``H`` when ``k = d``."""
        V = self._basis
        return (V * (self.delta + self._roots)) @ V.T

    def state_dict(self) -> dict:
        return {"G": copy_array(self.G), **{f"projection.{k}": v for k, v in self.projection.state_dict().items()}}

    def read_state(self, state: dict, owner: str) -> dict:
        """``G`` symmetric with a non-negative diagonal; the projection as
        :meth:`FourierProjection.read_state` checks it. ``"trace"``: ``tr(G)``."""
        reader = StateReader(state, owner, prefix=PREFIX)
        G = reader.array("G", (self.d, self.d))
        if not np.array_equal(G, G.T) or (np.diag(G) < 0).any():
            raise reader.refuse("G", "symmetric with a non-negative diagonal (a sum of g g^T)", "another matrix")
        projection = self.projection.read_state(
            StateReader(state_part(state, "projection."), owner, prefix=PREFIX + "projection."))
        return {"G": G, "projection": projection, "trace": float(np.trace(G))}

    def restore(self, staged: dict) -> None:
        self.projection.restore(staged["projection"])
        self.G = staged["G"]
        self._roots, self._basis = self._factored(self._factor)


class RandomizedQRProximal(_LowRankFactors):
    r"""RADAGRAD's ``H``: a projected ``G~ = G Pi^T`` (d x k) and its QR factors.

    Wan & Zhang equation (4): :math:`\tilde g = \Pi g`, :math:`\tilde G \leftarrow \tilde G +
    g \tilde g^T`, :math:`Q, R \leftarrow` the QR factors of the updated :math:`\tilde G`
    by a rank-one update (``scipy.linalg.qr_update``, economic, O(k d)),
    :math:`B = \tilde G^T Q = U \Sigma W^T` (k x k), :math:`V = Q W`, and

    .. math:: H^{-1} v = V (\Sigma^{1/2} + \delta I)^{-1} V^T v + (v - V V^T v):

    the paper's extra step ``gamma_t = eta (g - V V^T g)`` is a plain gradient step on the
    part outside ``V``, i.e. ``H = I`` there. O(k^2 d) per round (``B`` and ``Q W``),
    O(k d) memory. With ``k = d``, ``Pi`` is orthogonal, ``V`` a full eigenbasis of ``G``
    and ``H`` ADA-FULL's. ``V`` and ``Sigma`` are recomputed from ``G~`` and ``Q`` when a
    state is loaded.
    """

    def __init__(self, d: int, delta: float, projection: FourierProjection):
        super().__init__(d, delta, projection)
        k = projection.k
        self.Y = np.zeros((d, k))   # G~
        self.Q = np.eye(d, k)       # a QR factorization of the zero matrix
        self.R = np.zeros((k, k))

    def _holds_gradients(self) -> bool:
        return bool(self.Y.any())

    def _factor(self) -> tuple[np.ndarray, np.ndarray]:
        if not (np.isfinite(self.Q).all() and np.isfinite(self.R).all()):
            raise Diverged("the QR factors are not finite")
        sigma, W = _svd(self.Y.T @ self.Q)
        return sigma, self.Q @ W

    def add(self, g: np.ndarray) -> None:
        """``G~`` gains ``g (Pi g)^T``; ``Q R`` the same product as ``(g / s)(s Pi g)^T`` with
        ``s = ||g||`` (BLAS's scaled norm): LAPACK-style updates of a subnormal ``g`` give
        NaN, of a unit vector never. A zero ``g`` changes nothing."""
        scale = float(dnrm2(g))
        if scale == 0.0:
            return
        previous = self.Y, self.Q, self.R
        projected = self.projection.apply(g)
        self.Y = self.Y + np.outer(g, projected)
        try:
            self.Q, self.R = scipy.linalg.qr_update(self.Q, self.R, g / scale, projected * scale,
                                                    check_finite=False)
            self._roots, self._basis = self._factored(self._factor)
        except BaseException:
            self.Y, self.Q, self.R = previous
            raise

    def checkpoint(self) -> tuple:
        """``add`` builds new arrays: references suffice."""
        return self.Y, self.Q, self.R, self._roots, self._basis

    def rollback(self, saved: tuple) -> None:
        self.Y, self.Q, self.R, self._roots, self._basis = saved

    def solve(self, v: np.ndarray, delta: float | None = None) -> np.ndarray:
        delta = self.delta if delta is None else delta
        V = self._basis
        c = V.T @ v
        return v + V @ (c / (delta + self._roots) - c)

    def condition_number(self) -> float:
        """``kappa(H)``: ``H`` has eigenvalues ``delta + sqrt(sigma_i)`` on ``V`` and 1 on the
        rest of R^d (when ``V`` does not span it)."""
        values = self.delta + self._roots
        if self._roots.size < self.d:
            values = np.append(values, 1.0)
        return float(values.max() / values.min())

    def matrix(self) -> np.ndarray:
        V = self._basis
        return np.eye(self.d) + (V * (self.delta + self._roots - 1.0)) @ V.T

    def orthonormality_error(self) -> float:
        """``max |Q^T Q - I|``: how far the updated QR factor is from orthonormal."""
        return float(np.max(np.abs(self.Q.T @ self.Q - np.eye(self.Q.shape[1]))))

    def state_dict(self) -> dict:
        return {"Y": copy_array(self.Y), "Q": copy_array(self.Q), "R": copy_array(self.R),
                **{f"projection.{k}": v for k, v in self.projection.state_dict().items()}}

    def read_state(self, state: dict, owner: str) -> dict:
        """``Q`` orthonormal (:data:`~explorer.adagrad.proximal.ORTHONORMALITY_TOLERANCE`),
        ``R`` upper triangular, ``Q R = Y`` to 1e-6 relative; the projection as
        :meth:`FourierProjection.read_state` checks it. ``"trace"``: ``||Y||_F sqrt(k / d)``,
        a lower bound of ``sum ||g||^2`` (``||Pi g|| <= sqrt(d / k) ||g||``)."""
        reader = StateReader(state, owner, prefix=PREFIX)
        k = self.projection.k
        Y, Q, R = reader.array("Y", (self.d, k)), reader.array("Q", (self.d, k)), reader.array("R", (k, k))
        error = float(np.max(np.abs(Q.T @ Q - np.eye(k))))
        if not error <= ORTHONORMALITY_TOLERANCE:
            raise reader.refuse("Q", f"orthonormal columns (max |Q^T Q - I| <= {ORTHONORMALITY_TOLERANCE:g})", error)
        if np.tril(R, -1).any():
            raise reader.refuse("R", "upper triangular", "entries below the diagonal")
        norm = float(np.linalg.norm(Y))
        if not float(np.linalg.norm(Q @ R - Y)) <= 1e-6 * norm + 1e-290:
            raise reader.refuse("Y", "Q R (the QR factors kept with it)", "another matrix")
        projection = self.projection.read_state(
            StateReader(state_part(state, "projection."), owner, prefix=PREFIX + "projection."))
        return {"Y": Y, "Q": Q, "R": R, "projection": projection, "trace": norm / self.projection.scale}

    def restore(self, staged: dict) -> None:
        self.projection.restore(staged["projection"])
        self.Y, self.Q, self.R = staged["Y"], staged["Q"], staged["R"]
        self._roots, self._basis = self._factored(self._factor)


class _RandomizedAdaGrad(AdaGrad):
    """AdaGrad with a randomized proximal matrix: the settings, ``seed`` and persistence
    of :class:`AdaLR` and :class:`RadaGrad` (the round is AdaGrad's)."""

    VARIANT = ""
    LABEL = ""

    def __init__(self, d: int, *, method: str = "cmd", eta: float = DEFAULT_ETA,
                 delta: float | None = None, tau: int = 20, loss: str = "absolute", seed: int | None = None):
        self.seed = None if seed is None else check_int("seed", seed, minimum=0)
        size, k = check_int("d", d, minimum=1), check_int("tau", tau, minimum=2)
        for rows, columns in self._shapes(size, min(k, size)):  # before anything is allocated
            check_matrix_size(f"{self.LABEL} with d = {size}, tau = {k}", rows, columns)
        method = check_choice("method", method, METHODS)
        delta = default_delta("full", method) if delta is None else delta
        # AdaGrad's constructor checks and stores the common settings; its variant names a
        # built-in proximal matrix, so it is given one that allocates nothing ("diag" with an
        # explicit delta) and ours replaces it: _make_proximal below builds ours.
        super().__init__(d, variant="diag", method=method, eta=eta, delta=delta, tau=tau, loss=loss)
        self.variant = self.VARIANT

    @staticmethod
    def _shapes(d: int, k: int) -> list[tuple[int, int]]:
        raise NotImplementedError

    def _projection(self) -> FourierProjection:
        return FourierProjection(self.d, min(self.tau, self.d), self.seed)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(d={self.d}, method={self.method!r}, eta={self.eta:g}, "
                f"delta={self.delta:g}, tau={self.tau}, loss={self.loss!r}, seed={self.seed}) t={self.t}")

    def state_dict(self) -> dict:
        return {**super().state_dict(), "seed": -1 if self.seed is None else self.seed}

    @classmethod
    def from_state_dict(cls, state: dict):
        reader = StateReader(state, cls)
        d, arguments = cls._read_arguments(reader)
        learner = cls(d, method=reader.text("method", METHODS),
                      delta=reader.number("delta", minimum=SCALES[0], maximum=SCALES[1]),
                      tau=reader.count("tau", minimum=2), seed=reader.seed(), **arguments)
        learner.load_state_dict(state)
        return learner

    def _read_state(self, reader: StateReader, state: dict) -> dict:
        """AdaGrad's checks, plus: the same ``seed``, and no shrink ever (n_shrinks and
        delta_total 0)."""
        reader.same("seed", -1 if self.seed is None else self.seed)
        checked = super()._read_state(reader, state)
        if checked["n_shrinks"] or checked["delta_total"]:
            raise reader.refuse("n_shrinks", f"0 ({self.LABEL} never shrinks)", checked["n_shrinks"])
        return checked


@stateful
class AdaLR(_RandomizedAdaGrad):
    r"""ADA-LR (Krummenacher et al. 2016, Algorithm 1; Wan & Zhang equation 3).

    ADA-FULL with ``G_t^{1/2}`` replaced by a rank-tau randomized SVD of the exact ``G_t``
    (:class:`LowRankProximal`): ``Q R = G_t Pi^T``, ``B = Q^T G_t = U Sigma V^T``,

    .. math:: \beta_{t+1} = \beta_t - \eta V (\Sigma^{1/2} + \delta I)^{-1} V^T g_t

    (CMD; ``method="pds"`` applies the same matrix to ``g_bar``). O(d^2) memory and
    O(tau d^2) time per round: slower than every method but ADA-FULL. ``Pi`` is a
    subsampled randomized Fourier transform (:class:`FourierProjection`) drawn from
    ``seed``; with ``tau >= d`` ADA-LR equals ADA-FULL. ``delta`` None: ADA-FULL's default
    (1 for CMD, 10 for PDS; the paper tunes it over {1e-4, ..., 10}). Other arguments,
    attributes, hooks and the round are :class:`~explorer.adagrad.AdaGrad`'s;
    docs/algorithms.md section 4.9.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 4)); y = X @ np.ones(4)
    >>> lr, full = AdaLR(4, tau=4, eta=0.1, seed=0), AdaGrad(4, variant="full", eta=0.1)
    >>> bool(np.allclose(lr.learn_many(X, y), full.learn_many(X, y)))  # tau >= d: ADA-FULL
    True
    >>> learner = AdaLR(100, tau=5, seed=0)
    >>> learner.proximal.G.shape, learner.learn(np.ones(100), 1.0), learner.rank
    ((100, 100), 1.0, 1)
    """

    VARIANT = "lr"
    LABEL = LABELS[VARIANT]

    @staticmethod
    def _shapes(d: int, k: int) -> list[tuple[int, int]]:
        return [(d, d), (d, k)]

    def _make_proximal(self, delta: float) -> LowRankProximal:
        return LowRankProximal(self.d, delta, self._projection())


@stateful
class RadaGrad(_RandomizedAdaGrad):
    r"""RADAGRAD (Krummenacher et al. 2016, Algorithm 2; Wan & Zhang equation 4).

    Keeps only the projection ``G~_t = G_t Pi^T`` (d x tau) and its QR factors, updated by
    a rank-one QR update each round (:class:`RandomizedQRProximal`); with ``B = G~_t^T Q =
    U Sigma W^T`` and ``V = Q W``,

    .. math:: \beta_{t+1} = \beta_t - \eta V (\Sigma^{1/2} + \delta I)^{-1} V^T g_t
              - \eta (g_t - V V^T g_t)

    (CMD; ``method="pds"`` applies the same matrix to ``g_bar``). O(tau d) memory and
    O(tau^2 d) time per round, like ADA-FD; a heuristic without a regret bound (Wan &
    Zhang section 2.1). ``Pi`` (:class:`FourierProjection`) is drawn from ``seed``; with
    ``tau >= d`` RADAGRAD equals ADA-FULL. ``delta`` None: ADA-FULL's default. Other
    arguments, attributes, hooks and the round are :class:`~explorer.adagrad.AdaGrad`'s;
    docs/algorithms.md section 4.9.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 4)); y = X @ np.ones(4)
    >>> rada, full = RadaGrad(4, tau=4, eta=0.1, seed=0), AdaGrad(4, variant="full", eta=0.1)
    >>> bool(np.allclose(rada.learn_many(X, y), full.learn_many(X, y)))  # tau >= d: ADA-FULL
    True
    >>> learner = RadaGrad(100, tau=5, seed=0)  # no d x d matrix: G~ and Q are d x tau
    >>> learner.proximal.Y.shape, learner.proximal.Q.shape, learner.learn(np.ones(100), 1.0)
    ((100, 5), (100, 5), 1.0)
    """

    VARIANT = "radagrad"
    LABEL = LABELS[VARIANT]

    @staticmethod
    def _shapes(d: int, k: int) -> list[tuple[int, int]]:
        return [(d, k), (d, k)]

    def _make_proximal(self, delta: float) -> RandomizedQRProximal:
        return RandomizedQRProximal(self.d, delta, self._projection())
