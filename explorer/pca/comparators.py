r"""The comparators of the paper's experiments: Follow the Leader and the best fixed
projection in hindsight (Yuan & Lamperski, section 6)."""

from __future__ import annotations

import math

import numpy as np

from .._validation import as_matrix, check_int
from ..errors import Diverged
from ..hooks import StepRecord
from ..state import StateReader, copy_array, stateful
from ._base import (MAX_LOSS, RoundLearner, as_loss_row, as_stream, check_subset,
                    refused_in_round, eigh, orthonormality_error, read_last, read_orthonormal,
                    stored)

__all__ = ["FollowTheLeaderPCA", "best_fixed_projection", "compression_losses"]


@stateful
class FollowTheLeaderPCA(RoundLearner):
    r"""Follow the Leader for PCA (Kalai & Vempala 2005; a comparator in Yuan & Lamperski).

    Projects onto the top-k eigenvectors of the past covariance
    :math:`C_{t-1} = \sum_{s<t} x_s x_s^T`, pays :math:`\|x_t - P_t x_t\|^2 = \|x_t\|^2 - \|B_t^T x_t\|^2`,
    then adds :math:`x_t x_t^T`. Deterministic. It converges to the best projection
    *for the whole past*, so after the data switch subspace it keeps projecting onto the
    old one until the new data outweigh the old: the worst method on the toy stream.
    O(n^2) memory and one n x n eigendecomposition per round. ``step(x)`` returns the
    round's :class:`~explorer.hooks.StepRecord`, which the ``"step"`` hooks receive. No
    hyper-parameter may change mid-stream (``HOT`` is empty). A failing eigensolver raises
    :class:`~explorer.errors.Diverged`, nothing changed.

    While :math:`C_{t-1}` has rank below k (at t = 1 it is 0) the top-k eigenvectors are
    not unique; the missing directions are then the first coordinate axes orthogonalized
    against the seen ones, so the losses do not depend on the LAPACK build.

    Scale: FTL's projection does not depend on the scale of the data, and its loss scales
    with :math:`\|x\|^2`. A row is refused, nothing changed, when :math:`\|x\|^2` or the
    covariance's trace :math:`\sum_s \|x_s\|^2` would pass :math:`10^{300}` (the
    covariance would overflow). Rows so tiny that :math:`x x^T` underflows add nothing to
    the covariance, and their losses (at most :math:`\|x\|^2`) underflow to 0 as well.

    >>> ftl = FollowTheLeaderPCA(3, 1)
    >>> _ = ftl.learn([1.0, 0.0, 0.0])
    >>> ftl.learn([0.8, 0.6, 0.0])        # now projects onto e_1: loses 0.6^2
    0.36
    """

    def __init__(self, n: int, k: int):
        super().__init__()
        self.n, self.k = check_subset(n, k)
        self._covariance = np.zeros((self.n, self.n))
        self._basis = _top_subspace(self._covariance, self.k)
        self.t = 0
        self.last_loss: float | None = None

    def __repr__(self) -> str:
        return f"FollowTheLeaderPCA(n={self.n}, k={self.k}) t={self.t}"

    @property
    def basis(self) -> np.ndarray:
        """The k orthonormal columns projected onto in the next round (n x k)."""
        return self._basis.copy()

    def _round(self, x, record: bool) -> tuple[float, float, StepRecord | None]:
        """Pay ``||x - P_t x||^2``, then add ``x x^T`` to the covariance."""
        x = as_loss_row(x, self.n, None)
        trace = float(np.trace(self._covariance)) + float(x @ x)
        if not trace <= MAX_LOSS:
            raise ValueError(f"x is too large: the covariance's trace sum ||x_s||^2 would reach "
                             f"{trace:.3g}, beyond {MAX_LOSS:.0e} (it would overflow); rescale the "
                             f"data; nothing was updated")
        loss = float(max(x @ x - np.sum((self._basis.T @ x) ** 2), 0.0))
        covariance = self._covariance + np.outer(x, x)
        try:
            basis = _top_subspace(covariance, self.k)
        except Diverged as error:
            raise refused_in_round(error) from None
        self._covariance, self._basis = covariance, basis
        self.t += 1
        self.last_loss = loss
        if not (record or self._hooks):
            return loss, math.nan, None
        return loss, math.nan, self._emit_step(StepRecord(t=self.t, loss=loss))

    def state_dict(self) -> dict:
        """Plain arrays and scalars; ``from_state_dict`` continues exactly from here."""
        return {"kind": type(self).__name__, "n": self.n, "k": self.k, "t": self.t,
                "covariance": copy_array(self._covariance), "basis": copy_array(self._basis),
                "last_loss": stored(self.last_loss)}

    @classmethod
    def from_state_dict(cls, state: dict) -> "FollowTheLeaderPCA":
        reader = StateReader(state, cls)
        ftl = cls(reader.count("n", minimum=2), reader.count("k", minimum=1))
        ftl.load_state_dict(state)
        return ftl

    def load_state_dict(self, state: dict) -> None:
        """In place (same n and k). Checked before anything is stored: the covariance
        symmetric, PSD (eigenvalues >= -1e-10 trace) with trace at most 1e300 and 0 before
        the first round, the basis n x k orthonormal, t >= 0, the last loss >= 0 (0
        before the first round). A refusal is a ``ValueError`` naming the key."""
        reader = StateReader(state, type(self))
        reader.same("n", self.n)
        reader.same("k", self.k)
        t = reader.count("t")
        covariance = reader.array("covariance", (self.n, self.n))
        if not np.array_equal(covariance, covariance.T):
            raise reader.refuse("covariance", "symmetric (a sum of x x^T)", "an asymmetric matrix")
        trace, largest = float(np.trace(covariance)), float(np.abs(covariance).max())
        if not (largest <= trace <= MAX_LOSS) or (t == 0 and trace > 0):
            raise reader.refuse("covariance", f"a sum of x x^T: entries at most its trace, trace at "
                                f"most {MAX_LOSS:.0e}, 0 at t = 0", f"max |entry| {largest:.3g}, "
                                f"trace {trace:.3g} at t = {t}")
        smallest = float(eigh(covariance)[0][0]) if trace > 0 else 0.0
        if smallest < -1e-10 * trace:
            raise reader.refuse("covariance", "positive semidefinite (a sum of x x^T)",
                                f"an eigenvalue {smallest:.3g}")
        basis = read_orthonormal(reader, "basis", (self.n, self.k))
        last_loss = read_last(reader, "last_loss", t, 0.0)
        self._covariance, self._basis, self.t, self.last_loss = covariance, basis, t, last_loss


def _top_subspace(C: np.ndarray, k: int) -> np.ndarray:
    """Orthonormal top-k eigenvectors of the PSD ``C`` (n x k); null directions, when
    needed, are the first coordinate axes orthogonalized against the range of ``C``."""
    n = C.shape[0]
    values, vectors = eigh(C)
    if values[n - k] > 1e-12 * max(values[-1], 0.0):
        return vectors[:, n - k:]
    seen = vectors[:, values > 1e-12 * values[-1]] if values[-1] > 0 else np.zeros((n, 0))
    Q, _ = np.linalg.qr(np.column_stack([seen, np.eye(n)]))
    return Q[:, :k]


def best_fixed_projection(X, k: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The best rank-k projection in hindsight and its loss on every round.

    Solves :math:`\min_{P} \sum_t \|x_t - P x_t\|^2` over rank-k projections: P projects
    onto the top-k eigenvectors of :math:`X^T X` (Eq. 2 of the paper; what static regret
    compares against). Returns ``(basis (n, k), losses (T,))``; ``losses.sum()`` is the
    sum of the n - k smallest eigenvalues of :math:`X^T X`.

    >>> basis, losses = best_fixed_projection([[1.0, 0.0], [0.0, 0.5]], 1)
    >>> np.abs(basis[:, 0]).tolist(), losses.tolist()
    ([1.0, 0.0], [0.0, 0.25])
    """
    X = as_stream(X)
    n = X.shape[1]
    k = check_int("k", k, minimum=1)
    if k > n:
        raise ValueError(f"k must be an integer in [1, n] = [1, {n}], got {k}")
    _, vectors = eigh(X.T @ X)
    basis = vectors[:, n - k:]
    return basis, compression_losses(X, basis)


def compression_losses(X, basis) -> np.ndarray:
    r"""Per-round losses :math:`\|x_t - B B^T x_t\|^2` of projecting onto the orthonormal
    columns of ``basis`` (n x k).

    >>> compression_losses([[3.0, 4.0]], [[1.0], [0.0]]).tolist()
    [16.0]
    """
    X = as_stream(X)
    basis = as_matrix(basis, "basis")
    if basis.shape[0] != X.shape[1]:
        raise ValueError(f"basis must be an n x k matrix with n = {X.shape[1]}, got shape {basis.shape}")
    error = orthonormality_error(basis)
    if error > 1e-8:
        raise ValueError(f"basis must have orthonormal columns, got max |B^T B - I| = {error:.3g}")
    return np.maximum(np.sum(X ** 2, axis=1) - np.sum((X @ basis) ** 2, axis=1), 0.0)
