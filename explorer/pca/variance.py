r"""Online adaptive variance minimization on the unit sphere and on the simplex
(Yuan & Lamperski, Algorithms 5 and 6), with their best fixed comparators."""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_float
from ..hooks import DecomposeEvent, FixedShareEvent, StepRecord
from ..state import StateReader, stateful
from ._base import (DensityMatrixLearner, RoundLearner, as_loss_matrix, check_dimension,
                    check_learning_rates, eigh, log_normalize, read_last, read_learning_rates,
                    read_log_weights, stored)
from .simplex import fixed_share_log, sample_corner

__all__ = ["VarianceMinSphere", "VarianceMinSimplex", "best_fixed_unit_vector",
           "best_fixed_portfolio", "as_covariance", "PSD_TOLERANCE"]

PSD_TOLERANCE = 1e-10
"""How negative an eigenvalue of a covariance ``C`` may be, relative to ``max |C_ij|``:
rounding in a computed covariance (``x x^T``, a sample covariance) stays far below it."""


def as_covariance(C, n: int, eta: float | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    r"""The input of a variance minimizer: :func:`~explorer.pca._base.as_loss_matrix`'s checks
    (symmetric, finite, size; a vector x stands for :math:`x x^T`) and, for a matrix, positive
    semidefinite: its smallest eigenvalue at least ``-PSD_TOLERANCE * max |C_ij|`` (less
    ``4 n`` subnormal steps, 5e-324 each: a matrix of subnormal entries is PSD only up to
    their absolute rounding). The loss
    :math:`y^T C y` is a variance; a C with a negative direction would pay a negative one
    (``-I`` paid -0.5). Else a ``ValueError`` naming the eigenvalue. The check is one Cholesky
    factorization of :math:`C / \max|C_{ij}| + 10^{-10} I` (a sixth of an eigensolve).

    >>> as_covariance(np.diag([1.0, 0.0]), 2)[0].tolist()
    [[1.0, 0.0], [0.0, 0.0]]
    >>> as_covariance(-np.eye(2), 2)
    Traceback (most recent call last):
    ValueError: C must be positive semidefinite (a covariance matrix: a variance y^T C y is never negative), up to 1e-10 max |C_ij|; got an eigenvalue -1 (max |C_ij| = 1); nothing was updated
    """
    C, x = as_loss_matrix(C, n, eta)
    largest = float(np.abs(C).max()) if x is None else 0.0
    if largest > 0.0:
        scaled = C / largest  # entries in [-1, 1]: nothing overflows, tiny matrices included
        try:
            shift = PSD_TOLERANCE + 4 * n * np.finfo(float).smallest_subnormal / largest
            np.linalg.cholesky(scaled + shift * np.eye(n))
        except np.linalg.LinAlgError:
            smallest = float(np.linalg.eigvalsh(scaled)[0]) * largest
            raise ValueError(f"C must be positive semidefinite (a covariance matrix: a variance "
                             f"y^T C y is never negative), up to {PSD_TOLERANCE:g} max |C_ij|; got "
                             f"an eigenvalue {smallest:.3g} (max |C_ij| = {largest:.3g}); nothing "
                             f"was updated") from None
    return C, x


@stateful
class VarianceMinSphere(DensityMatrixLearner):
    r"""Online adaptive variance minimization over the unit sphere (Yuan & Lamperski, ICML 2019,
    Algorithm 5).

    Each round pick a unit vector :math:`y_t`, then see a covariance matrix
    :math:`0 \preceq C_t \preceq I` and pay the variance :math:`y_t^T C_t y_t`. The
    learner keeps a density matrix :math:`Y_t = D\,\mathrm{diag}(\sigma)\,D^T`
    (:math:`Y_1 = I/n`) and plays eigenvector j with probability :math:`\sigma_j`; the
    expected loss is :math:`\operatorname{tr}(Y_t C_t)`. Update:

    .. math:: V = \exp(\ln Y_t - \eta C_t)/\operatorname{tr}(\cdot) = U\,\mathrm{diag}(v)\,U^T,
              \qquad Y_{t+1} = U\,\mathrm{diag}(\alpha/n + (1-\alpha) v)\,U^T.

    This is online adaptive PCA with n - k = 1 (the cap 1/(n-k) = 1 never binds), so
    the decomposition is just "eigenvector j with probability sigma_j". The comparator
    on an interval is the smallest eigenvalue of :math:`\sum C_t`
    (:func:`best_fixed_unit_vector`). Theory settings: :func:`~explorer.pca.sphere_theory_settings`.

    ``learn(C)`` takes an n x n covariance matrix (symmetric, positive semidefinite), or a
    vector x meaning :math:`x x^T` (:func:`as_covariance`; a C with a negative eigenvalue,
    :math:`\|C\|_F > 10^{300}` or :math:`\eta\|C\|_F > 10^6` is refused, nothing changed).
    ``step(C)`` plays the same round as ``learn(C)`` and returns its
    :class:`~explorer.hooks.StepRecord` (with ``expected_loss``); ``with_params(eta=...,
    alpha=...)`` continues with other settings; a failing eigensolver raises
    :class:`~explorer.errors.Diverged`, nothing changed. Hooks: ``"decompose"``
    (probabilities sigma, the corners e_j as rows of the identity, the index j played),
    ``"fixed_share"``, ``"step"`` (the record ``step`` returns).

    >>> import numpy as np
    >>> vm = VarianceMinSphere(2, eta=1.0, alpha=0.0, seed=0)
    >>> for _ in range(5):
    ...     _ = vm.learn(np.diag([1.0, 0.0]))       # direction e_1 always costs 1
    >>> np.round(vm.eigenvalues, 4).tolist()          # the weight moves to e_2
    [0.0067, 0.9933]
    """

    def __init__(self, n: int, *, eta: float, alpha: float, seed: int | None = None):
        super().__init__(n, eta=eta, alpha=alpha, seed=seed, minimum_n=1)
        self.last_direction: np.ndarray | None = None

    def __repr__(self) -> str:
        return f"VarianceMinSphere(n={self.n}, eta={self.eta:g}, alpha={self.alpha:g}) t={self.t}"

    _INPUT = "one covariance matrix"

    def _round(self, C, record: bool) -> tuple[float, float, StepRecord | None, float]:
        """Play a random eigenvector y of ``Y``, pay ``y^T C y``, then update."""
        C, x = as_covariance(C, self.n, self.eta)
        t = self.t + 1
        sigma = np.exp(self._log_w)
        if x is not None:  # C = x x^T: d_j^T C d_j = (d_j^T x)^2, never negative by rounding
            variances = (self._vectors.T @ x) ** 2
        else:
            variances = np.einsum("ij,ik,kj->j", self._vectors, C, self._vectors)  # d_j^T C d_j
        expected = float(sigma @ variances)
        U, log_v = self._exponentiated_step(C)
        log_next = fixed_share_log(log_v, self.alpha)
        chosen = sample_corner(self._rng, sigma)
        loss = float(variances[chosen])
        self.last_direction = self._vectors[:, chosen].copy()
        self._vectors, self._log_w = U, log_next
        self.t = t
        self.last_loss, self.last_expected_loss = loss, expected
        if not (record or self._hooks):
            return loss, math.nan, None, expected
        condition, rank = self._spectrum_summary(log_next)
        step = StepRecord(t=t, loss=loss, alpha=self.alpha, condition_number=condition, rank=rank,
                          expected_loss=expected)
        return loss, math.nan, self._emit_step(step, lambda: (
            DecomposeEvent(t=t, probs=sigma, corners=np.eye(self.n), chosen=chosen),
            FixedShareEvent(t=t, v=np.exp(log_v), w_hat=np.exp(log_next), alpha=self.alpha))), expected

    def expected_loss(self, C) -> float:
        r""":math:`\operatorname{tr}(Y_t C)` for the current ``Y`` (no update; ``C`` as ``learn``'s)."""
        C, _ = as_covariance(C, self.n)
        return float(np.trace(self.W @ C))


@stateful
class VarianceMinSimplex(RoundLearner):
    r"""Online adaptive variance minimization over the simplex (Yuan & Lamperski, ICML 2019,
    Algorithm 6).

    Portfolio risk: hold :math:`y_t` in the probability simplex (:math:`y_1` uniform),
    see the covariance :math:`C_t` of the assets' returns and pay the variance
    :math:`y_t^T C_t y_t`. Exponentiated gradient plus fixed share:

    .. math:: v_i = \frac{y_i\, e^{-\eta (C_t y_t)_i}}{\sum_j y_j\, e^{-\eta (C_t y_t)_j}},
              \qquad y_{t+1} = \alpha/n + (1-\alpha)\, v.

    Deterministic (no sampling, no seed). ``C`` as for :class:`VarianceMinSphere`
    (a covariance: symmetric, positive semidefinite, :func:`as_covariance`; refused,
    nothing changed, when it has a negative eigenvalue, or when
    :math:`\|C\|_F > 10^{300}` or :math:`\eta\|C\|_F > 10^6`: then
    :math:`|\eta (C y)_i| \le \eta \|C\|_F` bounds every exponent). The comparator on an interval is the
    minimum-variance portfolio of :math:`\sum C_t` (:func:`best_fixed_portfolio`).
    ``step(C)`` returns the round's :class:`~explorer.hooks.StepRecord`;
    ``with_params(eta=..., alpha=...)`` continues with other settings.
    Hooks: ``"fixed_share"`` and ``"step"``. Theory settings:
    :func:`~explorer.pca.simplex_theory_settings`.

    >>> import numpy as np
    >>> vm = VarianceMinSimplex(2, eta=1.0, alpha=0.0)
    >>> round(vm.learn(np.diag([1.0, 0.25])), 4)      # (1/2)^2 * 1 + (1/2)^2 * 0.25
    0.3125
    >>> vm.portfolio.round(4).tolist()                # weight moves to the calmer asset
    [0.4073, 0.5927]
    """

    def __init__(self, n: int, *, eta: float, alpha: float):
        super().__init__()
        self.n = check_dimension(n, 1)
        self.eta, self.alpha = check_learning_rates(eta, alpha)
        self._log_y = np.full(self.n, -np.log(self.n))
        self.t = 0
        self.last_loss: float | None = None

    def __repr__(self) -> str:
        return f"VarianceMinSimplex(n={self.n}, eta={self.eta:g}, alpha={self.alpha:g}) t={self.t}"

    @property
    def portfolio(self) -> np.ndarray:
        """:math:`y_t`, the current point of the simplex."""
        return np.exp(self._log_y)

    HOT = ("eta", "alpha")
    _INPUT = "one covariance matrix"

    def _round(self, C, record: bool) -> tuple[float, float, StepRecord | None]:
        """Pay ``y_t^T C y_t``, then update the portfolio."""
        C, _ = as_covariance(C, self.n, self.eta)
        t = self.t + 1
        portfolio = np.exp(self._log_y)
        gradient = C @ portfolio
        loss = float(portfolio @ gradient)
        log_v = log_normalize(self._log_y - self.eta * gradient)
        log_next = fixed_share_log(log_v, self.alpha)
        self._log_y = log_next
        self.t = t
        self.last_loss = loss
        if not (record or self._hooks):
            return loss, math.nan, None
        step = StepRecord(t=t, loss=loss, alpha=self.alpha)
        return loss, math.nan, self._emit_step(step, lambda: (
            FixedShareEvent(t=t, v=np.exp(log_v), w_hat=np.exp(log_next), alpha=self.alpha),))

    def state_dict(self) -> dict:
        """Plain arrays and scalars; ``from_state_dict`` continues exactly from here."""
        return {"kind": type(self).__name__, "n": self.n, "eta": self.eta, "alpha": self.alpha,
                "t": self.t, "log_y": self._log_y.copy(), "last_loss": stored(self.last_loss)}

    @classmethod
    def from_state_dict(cls, state: dict) -> "VarianceMinSimplex":
        reader = StateReader(state, cls)
        vm = cls(reader.count("n", minimum=1), **read_learning_rates(reader))
        vm.load_state_dict(state)
        return vm

    def load_state_dict(self, state: dict) -> None:
        """In place (same n; eta and alpha are loaded): the portfolio must be the logs of a
        point of the simplex that t rounds could reach (:func:`~explorer.pca._base.read_log_weights`),
        t >= 0, the last loss finite (0 before the first round); checked before anything
        is stored."""
        reader = StateReader(state, type(self))
        reader.same("n", self.n)
        rates, t = read_learning_rates(reader), reader.count("t")
        log_y = read_log_weights(reader, "log_y", self.n, t)
        last_loss = read_last(reader, "last_loss", t)
        self.eta, self.alpha = rates["eta"], rates["alpha"]
        self.t, self._log_y, self.last_loss = t, log_y, last_loss


def best_fixed_unit_vector(C) -> tuple[np.ndarray, float]:
    r"""The unit vector minimizing :math:`u^T C u`: the eigenvector of the smallest eigenvalue.

    ``C`` is usually :math:`\sum_t C_t` over an interval. Returns ``(u, u^T C u)``.

    >>> u, value = best_fixed_unit_vector([[2.0, 0.0], [0.0, 1.0]])
    >>> np.abs(u).tolist(), value
    ([0.0, 1.0], 1.0)
    """
    C = _square(C)
    values, vectors = eigh(C)
    return vectors[:, 0], float(values[0])


def best_fixed_portfolio(C, *, tol: float = 1e-12) -> tuple[np.ndarray, float]:
    r"""The minimum-variance portfolio :math:`\arg\min_{u \in \Delta_n} u^T C u` (a small QP).

    Solved with SLSQP from ``scipy.optimize`` (fine for the tens of assets of the
    lessons), started from the uniform portfolio. Returns ``(u, u^T C u)``.

    >>> u, value = best_fixed_portfolio([[1.0, 0.0], [0.0, 0.25]])
    >>> u.round(4).tolist(), round(value, 4)        # weights proportional to 1 / variance
    ([0.2, 0.8], 0.2)
    """
    C = _square(C)
    tol = check_float("tol", tol, minimum=0.0, strict_minimum=True)
    n = C.shape[0]
    import scipy.optimize  # here, not at import: only this comparator needs it

    result = scipy.optimize.minimize(
        lambda u: u @ C @ u, np.full(n, 1.0 / n), jac=lambda u: 2.0 * C @ u, method="SLSQP",
        bounds=[(0.0, 1.0)] * n,
        constraints=[{"type": "eq", "fun": lambda u: u.sum() - 1.0, "jac": lambda u: np.ones(n)}],
        options={"ftol": tol, "maxiter": 500})
    u = np.clip(result.x, 0.0, None)
    u /= u.sum()
    return u, float(u @ C @ u)


def _square(C) -> np.ndarray:
    n = np.shape(C)[0] if np.ndim(C) == 2 else -1
    if n < 1 or np.shape(C) != (n, n):
        raise ValueError(f"C must be a square matrix, got shape {np.shape(C)}")
    return as_loss_matrix(C, n)[0]
