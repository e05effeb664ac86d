"""Pieces shared by the learners of :mod:`explorer.pca`: the step event with an expected
loss, seeded randomness that can be saved, the symmetric eigensolver, and the density
matrix kept as eigenvectors plus log-eigenvalues."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.linalg

from .._validation import as_rows, check_float, check_int
from ..hooks import Observable, StepEvent
from ..state import copy_array


@dataclass(frozen=True)
class RandomizedStepEvent(StepEvent):
    """A ``"step"`` of a randomized learner: ``loss`` is the loss of the sampled decision,
    ``expected_loss`` its expectation over the learner's own randomness (the quantity the
    regret bounds are about). A :class:`~explorer.hooks.StepEvent` with one more field, so
    :class:`~explorer.hooks.Recorder` hands it back as one more column."""

    kind: ClassVar[str] = "step"
    expected_loss: float | None = None


def rng_state(rng: np.random.Generator) -> str:
    """The generator's state as a JSON string (a plain scalar for ``np.savez``)."""
    return json.dumps(rng.bit_generator.state)


def restore_rng(rng: np.random.Generator, state) -> None:
    rng.bit_generator.state = json.loads(str(state))


def eigh(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (ascending) and orthonormal eigenvectors of the symmetric matrix ``M``.

    LAPACK's divide and conquer (evd: on these matrices, with many equal eigenvalues, faster
    and more accurately orthonormal than evr) first; on its rare failure, the slower but
    sturdier QR algorithm (ev).
    """
    M = (M + M.T) / 2.0
    try:
        return scipy.linalg.eigh(M, check_finite=False, driver="evd")
    except (np.linalg.LinAlgError, ValueError):
        return scipy.linalg.eigh(M, check_finite=False, driver="ev")


def log_normalize(log_v: np.ndarray) -> np.ndarray:
    """``log_v - ln sum exp(log_v)``: log-weights of the normalized vector, without overflow."""
    top = log_v.max()
    return log_v - (top + np.log(np.sum(np.exp(log_v - top))))


def check_learning_rates(eta, alpha) -> tuple[float, float]:
    eta = check_float("eta", eta, minimum=0.0)
    alpha = check_float("alpha", alpha, minimum=0.0, maximum=1.0)
    return eta, alpha


class DensityMatrixLearner(Observable):
    r"""A density matrix :math:`W = D\,\mathrm{diag}(w)\,D^T` kept as ``D`` and ``ln w``.

    The matrix exponentiated-gradient step of Warmuth & Kuzmin,

    .. math:: V = \exp(\ln W - \eta G) / \operatorname{tr}(\cdot),

    is computed as ``eigh(D diag(ln w) D^T - eta G)`` followed by a softmax of the
    eigenvalues: ``ln W`` comes from the stored logs, never from a matrix logarithm of
    ``W`` (whose tiny eigenvalues, e^-80 and below without fixed share, an
    eigensolver cannot resolve; docs/algorithms.md section 5).
    """

    def __init__(self, n: int, *, eta: float, alpha: float, seed: int | None, minimum_n: int = 1):
        super().__init__()
        self.n = check_int("n", n, minimum=minimum_n)
        self.eta, self.alpha = check_learning_rates(eta, alpha)
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        self._vectors = np.eye(self.n)
        self._log_w = np.full(self.n, -np.log(self.n))
        self.t = 0
        self.last_loss: float | None = None
        self.last_expected_loss: float | None = None

    # -- what the learner holds ------------------------------------------------------------
    @property
    def eigenvalues(self) -> np.ndarray:
        """The eigenvalues ``w`` of the current density matrix (a probability vector)."""
        return np.exp(self._log_w)

    @property
    def log_eigenvalues(self) -> np.ndarray:
        """``ln w``, exact even where ``w`` underflows to 0."""
        return self._log_w.copy()

    @property
    def eigenvectors(self) -> np.ndarray:
        """The columns of ``D`` (n x n, orthonormal), in the order of :attr:`eigenvalues`."""
        return self._vectors.copy()

    @property
    def W(self) -> np.ndarray:
        """The current density matrix (n x n, for inspection)."""
        return (self._vectors * self.eigenvalues) @ self._vectors.T

    def _exponentiated_step(self, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvectors and log-eigenvalues of ``exp(ln W - eta G) / tr``."""
        M = (self._vectors * self._log_w) @ self._vectors.T - self.eta * G
        mu, U = eigh(M)
        return U, log_normalize(mu)

    def _spectrum_summary(self, log_w: np.ndarray) -> tuple[float, int]:
        """Condition number of ``W`` and its numerical rank (eigenvalues > 1e-12 * largest)."""
        spread = float(log_w.max() - log_w.min())
        condition = float(np.exp(spread)) if spread < 700 else float("inf")
        rank = int(np.count_nonzero(log_w > log_w.max() + np.log(1e-12)))
        return condition, rank

    # -- persistence ---------------------------------------------------------------------------
    def _common_state(self) -> dict:
        return {"kind": type(self).__name__, "n": self.n, "eta": self.eta, "alpha": self.alpha,
                "t": self.t, "vectors": copy_array(self._vectors), "log_w": self._log_w.copy(),
                "rng": rng_state(self._rng),
                "last_loss": np.nan if self.last_loss is None else self.last_loss,
                "last_expected_loss": (np.nan if self.last_expected_loss is None
                                       else self.last_expected_loss)}

    def _restore_common(self, state: dict) -> None:
        vectors = np.asarray(state["vectors"], dtype=float)
        log_w = np.asarray(state["log_w"], dtype=float)
        if vectors.shape != (self.n, self.n) or log_w.shape != (self.n,):
            raise ValueError(f"state_dict arrays of shapes {vectors.shape} and {log_w.shape} "
                             f"do not fit n = {self.n}")
        self._vectors, self._log_w = copy_array(vectors), log_w.copy()
        self.t = int(state["t"])
        restore_rng(self._rng, state["rng"])
        self.last_loss = optional_float(state["last_loss"])
        self.last_expected_loss = optional_float(state["last_expected_loss"])


def optional_float(value) -> float | None:
    value = float(value)
    return None if np.isnan(value) else value


def as_loss_matrix(C, n: int, name: str = "C") -> np.ndarray:
    """A symmetric finite n x n matrix; a vector x of length n stands for ``x x^T``."""
    try:
        C = np.asarray(C, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be numeric, got {type(C).__name__}: {error}") from None
    if C.shape == (n,):
        C = np.outer(C, C)
    if C.shape != (n, n):
        raise ValueError(f"{name} must be an n x n matrix with n = {n} (or a vector x of length n "
                         f"meaning x x^T), got shape {C.shape}")
    if not np.isfinite(C).all():
        raise ValueError(f"{name} contains NaN or inf; only finite values are allowed")
    scale = max(1.0, float(np.abs(C).max()))
    if np.abs(C - C.T).max() > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric (a covariance matrix), got max |C - C^T| = "
                         f"{np.abs(C - C.T).max():.3g}")
    return (C + C.T) / 2.0


def as_stream(X, name: str = "X") -> np.ndarray:
    """A non-empty finite float matrix (T rows of length n)."""
    if X is None or isinstance(X, (str, bytes)):
        raise ValueError(f"{name} must be a numeric matrix (T rows of length n), got {X!r}")
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be numeric, got {type(X).__name__}: {error}") from None
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty matrix (T rows of length n), got shape {X.shape}")
    return as_rows(X, X.shape[1], name)
