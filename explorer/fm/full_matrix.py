"""The full-matrix learners' shared state: ``Theta`` as a dense (d+1) x (d+1) array.

:class:`FullMatrixFM` is the base of :class:`~explorer.fm.FTRLFM` (:mod:`.ftrl`) and
:class:`~explorer.fm.OGDFM` (:mod:`.ogd`), the paper's baselines (Luo et al., KDD 2018,
section 5; docs/algorithms.md section 6): both play ``Theta -= step q_t a_hat_t a_hat_t^T``
and differ only in ``step``.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
import scipy.linalg

from ..learner import RoundRefused
from ..state import StateReader, copy_array
from .convex import MAX_THETA_ENTRY, ConvexFM

__all__ = ["FullMatrixFM", "largest_magnitude"]


class FullMatrixFM(ConvexFM):
    """``Theta`` stored as a dense (d+1) x (d+1) array; ``Theta -= step q a_hat a_hat^T``.

    A sparse row costs O(nnz^2) (only the entries it touches), a dense row O(d^2) (one
    BLAS rank-one update, in place). Memory is always O(d^2): 55 MB at d = 2625,
    800 MB at d = 10,000, 54 GB at MovieLens-10M's d = 82,248.

    Finite by construction: ``_bound`` is an upper bound on ``max |Theta_ij|``, grown by
    ``|step q| ||a_hat||^2`` each round (no entry of the update is larger); only when it
    would pass :data:`MAX_THETA_ENTRY` is the true maximum taken (O(d^2)), and a round
    that would still pass it is refused before anything is stored. A subclass gives the
    step: ``eta`` (:class:`~explorer.fm.FTRLFM`), ``eta / sqrt(t)`` (:class:`~explorer.fm.OGDFM`).
    """

    def __init__(self, d: int, *, eta: float | None, loss: str):
        super().__init__(d, eta=eta, loss=loss)
        try:
            self._theta = np.zeros((self.d + 1, self.d + 1))
        except MemoryError:
            raise ValueError(f"{type(self).__name__}(d={d}) needs a ({d} + 1)^2 matrix of floats, "
                             "more memory than there is; SketchedFTRL needs O(m d)") from None
        self._ger = scipy.linalg.get_blas_funcs("ger", (self._theta,))
        self._bound = 0.0
        self._undo: list | None = None  # set by _transaction: what each round overwrote

    def __repr__(self) -> str:
        return f"{type(self).__name__}(d={self.d}, eta={self.eta:g}, loss={self.loss!r}) t={self.t}"

    def _step_size(self) -> float:
        raise NotImplementedError

    def _z_bound(self, val, squared_norm: float) -> float:
        # |sum_ij Theta_ij a_i a_j| <= max|Theta_ij| (sum_i |a_i|)^2 <= _bound n ||a||^2
        return self._bound * val.size * squared_norm

    def _z(self, idx, val) -> float:
        if idx is None:
            return float(val @ (self._theta @ val))
        return float(val @ self._theta[np.ix_(idx, idx)] @ val)

    def _update(self, idx, val, q: float, squared_norm: float) -> None:
        if q == 0.0:
            return None
        scale = -self._step_size() * q
        growth = abs(scale) * squared_norm  # >= every |scale a_i a_j|
        bound = self._bound + growth
        if not bound <= MAX_THETA_ENTRY:
            bound = largest_magnitude(self._theta) + growth
            if not bound <= MAX_THETA_ENTRY:
                raise RoundRefused(f"an entry of Theta would pass {MAX_THETA_ENTRY:.0e} (step * q * "
                                   f"||a_hat||^2 = {growth:.3g}): the learner diverged; lower eta "
                                   f"(now {self.eta:g}) or rescale the data")
        if idx is None:
            if self._undo is not None:  # one copy of Theta, which costs what this round costs
                self._undo.append((None, self._theta.copy()))
                self._undo = None
            # Theta is C-ordered and symmetric: its transpose is a Fortran view of it.
            self._ger(scale, val, val, a=self._theta.T, overwrite_a=True)
        else:
            entries = np.ix_(idx, idx)
            block = self._theta[entries]
            if self._undo is not None:
                self._undo.append((entries, block))
            self._theta[entries] = block + scale * np.outer(val, val)
        self._bound = bound
        return None  # no sketch, no shrink

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """All or nothing without copying ``Theta`` per call (55 MB at d = 2625, more than a
        call of a few sparse rows costs): each sparse round keeps the O(nnz^2) entries it
        overwrites, the first dense round of the call a copy of ``Theta``; a failure puts
        them back, last first."""
        undo, t, bound = [], self.t, self._bound
        self._undo = undo
        try:
            yield
        except BaseException:
            for entries, block in reversed(undo):
                if entries is None:
                    self._theta[...] = block
                else:
                    self._theta[entries] = block
            self.t, self._bound = t, bound
            raise
        finally:
            self._undo = None

    def theta(self) -> np.ndarray:
        """A copy of ``Theta`` ((d+1) x (d+1))."""
        return self._theta.copy()

    def state_dict(self) -> dict:
        return {**self._base_state(), "theta": copy_array(self._theta)}

    @classmethod
    def from_state_dict(cls, state: dict):
        """A learner that continues exactly where the saved one stopped (checked:
        :meth:`load_state_dict`)."""
        reader = StateReader(state, cls)
        d = reader.count("d", minimum=1)
        reader.check_shape("theta", (d + 1, d + 1), f"d = {d}")  # before allocating (d+1)^2 floats
        fm = cls(d, **cls._read_settings(reader))
        fm.load_state_dict(state)
        return fm

    def load_state_dict(self, state: dict) -> None:
        """Become the learner ``state`` describes, in place (same d, eta, loss). Checked
        before anything is stored: ``theta`` of shape (d+1, d+1), finite, entries within
        :data:`MAX_THETA_ENTRY`, all zero at ``t = 0``; ``t`` a count. (A ``Theta`` that is
        not symmetric is accepted: predictions and updates only see its symmetric part.)"""
        reader = StateReader(state, type(self))
        self._check_settings(reader)
        t = reader.count("t")
        theta = reader.array("theta", self._theta.shape)
        largest = largest_magnitude(theta)
        if not largest <= MAX_THETA_ENTRY:
            raise reader.refuse("theta", f"entries within +-{MAX_THETA_ENTRY:.0e}", largest)
        if t == 0 and largest > 0:
            raise reader.refuse("theta", "all zero at t = 0 (nothing learnt yet)", f"|entry| {largest:.3g}")
        self._theta[...] = theta
        self.t, self._bound = t, largest


def largest_magnitude(theta: np.ndarray) -> float:
    """``max |theta_ij|`` without an O(d^2) temporary."""
    return float(max(theta.max(), -theta.min()))
