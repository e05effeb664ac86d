"""The round every linear learner of the family plays: validation, the loss and its gradient,
``predict``, ``learn``, ``step``, ``learn_many``, and the all-or-nothing update.

Subclasses (:class:`~explorer.adagrad.AdaGrad`, :class:`~explorer.adagrad.OGD`,
:class:`~explorer.adagrad.Adam`) give the update rule, ``_update``. The scale limits and
what a refused or failed round leaves: :mod:`explorer.adagrad.learners` and
docs/algorithms.md section 4.1.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg.blas import ddot

from .._validation import (
    SCALES, as_labeled_rows, as_row, as_rows, check_choice, check_int, check_matrix_size, check_scale,
    squared_norms,
)
from ..errors import Diverged
from ..hooks import StepRecord
from ..learner import OnlineLearner, RoundRefused, Rounds, refused
from ..losses import LOSSES, check_label, check_labels, get_loss
from ..params import Tunable
from ..sketch import MAX_SQUARED_MASS, ShrinkRecord
from ..state import StateReader

__all__ = ["LinearLearner", "QUIET", "NUMERICAL_FAILURES", "beta_overflow", "too_large"]

QUIET = {"over": "ignore", "invalid": "ignore", "divide": "ignore"}
"""numpy's error state inside a round and a state check: an overflow there is found by
a check and refused with a message, which numpy's warning would only repeat."""

NUMERICAL_FAILURES = (ValueError, ArithmeticError)
"""What a failed update raises: LinAlgError, FD's ShrinkFailed and :class:`Diverged` (from
:func:`~explorer.adagrad.proximal._eigh`) are ValueErrors; numpy's FloatingPointError an
ArithmeticError."""


def beta_overflow(eta: float, delta: float | None = None) -> str:
    """Why a round's new ``beta`` is not finite, for the refusal."""
    small = "" if delta is None else f" or delta = {delta:g} too small"
    return f"the new beta is not finite (eta = {eta:g} too large{small})"


def too_large(name: str, squared: float) -> ValueError:
    return ValueError(f"{name} is too large: ||x||^2 = {squared:.3g} exceeds {MAX_SQUARED_MASS:.0e} "
                      f"(entries up to about 1e150 are fine); rescale the data, e.g. divide it by "
                      f"its largest entry")


class LinearLearner(OnlineLearner, Tunable):
    """Shared plumbing: validation, the loss and its gradient, ``predict``, ``learn``,
    ``step``, ``learn_many``, the all-or-nothing round, and the state every learner keeps
    (``d``, ``loss``, ``beta``, ``t``, ``eta``).

    Subclasses implement ``_update(slope, x, squared_gradient)``: compute the update for the
    gradient ``slope * x`` (``self.t`` already counts this round), check it, and store it --
    or raise :class:`~explorer.learner.RoundRefused` with nothing stored. It returns the round's
    :class:`~explorer.sketch.ShrinkRecord` (AdaGrad's sketches) or None.
    """

    HOT = ("eta",)
    """``eta`` scales the next update only: nothing kept depends on it."""

    def __init__(self, d: int, loss: str, eta: float):
        super().__init__()
        self._eta = check_scale("eta", eta)
        self.d = check_int("d", d, minimum=1)
        check_matrix_size(f"d = {d}", 1, self.d)
        self.loss = check_choice("loss", loss, tuple(LOSSES))
        self._loss_function = get_loss(loss)
        self.beta = np.zeros(self.d)
        self.t = 0

    @property
    def eta(self) -> float:
        """Step size (> 0); ``with_params(eta=...)`` changes it between rounds."""
        return self._eta

    def predict(self, x):
        """``beta^T x`` for one row (a float) or for each row of a matrix (an array)."""
        try:
            ndim = np.ndim(x)
        except (TypeError, ValueError):
            ndim = 1  # ragged input: as_row names the problem
        if ndim == 2:
            return as_rows(x, self.d) @ self.beta
        return float(as_row(x, self.d) @ self.beta)

    # -- the protocol's parts (explorer.learner: learn, step, learn_many) ---------------
    def _check_round(self, x, y) -> tuple[np.ndarray, float, float]:
        """One row and its label as a round takes them, with ``||x||^2``, or ``ValueError``."""
        x = as_row(x, self.d)
        y = check_label(y, self.loss)
        squared = ddot(x, x)  # BLAS directly: an overflow gives inf, no warning
        if not squared <= MAX_SQUARED_MASS:
            raise too_large("x", squared)
        return x, y, squared

    def _check_rounds(self, X, y) -> Rounds:
        X, y = as_labeled_rows(X, y, self.d)
        check_labels(y, self.loss)
        squared = squared_norms(X)
        over = np.flatnonzero(~(squared <= MAX_SQUARED_MASS))
        if over.size:
            raise too_large(f"X row {over[0]}", float(squared[over[0]]))
        return Rounds(zip(X, y.tolist(), squared.tolist()))

    def _refused(self, refusal: RoundRefused, row: int | None) -> Diverged:
        where = "x" if row is None else f"X row {row}"
        return refused(f"{where} (round t = {self.t + 1})", refusal, row=row or 0, t=self.t + 1)

    def _round(self, x: np.ndarray, y: float, squared: float,
               record: bool) -> tuple[float, float, StepRecord | None]:
        """One round on a checked row with ``||x||^2 = squared``: ``(loss, prediction,
        record)``, the :class:`~explorer.hooks.StepRecord` built only for ``step`` or a
        listening hook; :class:`~explorer.learner.RoundRefused` with nothing stored."""
        z = ddot(x, self.beta)  # the bits of x @ beta (for a contiguous x), and no warning
        loss = float(self._loss_function.value(z, y))
        slope = float(self._loss_function.derivative(z, y))
        if not (math.isfinite(z) and math.isfinite(loss) and math.isfinite(slope)):
            raise RoundRefused(f"the loss or its gradient overflowed (beta^T x = {z:.3g}, "
                               f"y = {y:.3g}): beta has diverged (lower eta) or the data is "
                               f"too large (rescale it)")
        squared_gradient = slope * (slope * squared) if slope else 0.0
        if not squared_gradient <= MAX_SQUARED_MASS:
            raise RoundRefused(f"the gradient is too large: ||g||^2 = {squared_gradient:.3g} "
                               f"exceeds {MAX_SQUARED_MASS:.0e} (beta^T x = {z:.3g}, "
                               f"y = {y:.3g}); rescale the data, or lower eta if beta has diverged")
        self.t += 1  # the round's number, which OGD's step and Adam's bias correction use
        try:
            shrink = self._update(slope, x, squared_gradient)
        except BaseException:  # _update stored nothing
            self.t -= 1
            raise
        if not (record or self._hooks):
            return loss, z, None
        return loss, z, self._emit_step(StepRecord(
            t=self.t, loss=loss, prediction=z, gradient_scale=slope, shrink=shrink,
            **self._step_fields()))

    def _update(self, slope: float, x: np.ndarray, squared_gradient: float) -> ShrinkRecord | None:
        raise NotImplementedError

    def _step_fields(self) -> dict:
        return {}

    # -- persistence --------------------------------------------------------------------
    def _common_state(self) -> dict:
        return {"kind": type(self).__name__, "d": self.d, "loss": self.loss,
                "beta": self.beta.copy(), "t": self.t, "eta": self.eta}

    def _read_common(self, reader: StateReader) -> dict:
        """Check the keys every learner keeps: ``d`` and ``loss`` must be this learner's
        own (an in-place load keeps the structure); ``eta`` (hot, see :attr:`eta`) is loaded."""
        reader.same("d", self.d)
        reader.same("loss", self.loss)
        return {"beta": reader.array("beta", (self.d,)), "t": reader.count("t"),
                "eta": reader.number("eta", minimum=SCALES[0], maximum=SCALES[1])}

    def _restore_common(self, common: dict) -> None:
        self.beta, self.t, self._eta = common["beta"], common["t"], common["eta"]

    @staticmethod
    def _read_arguments(reader: StateReader) -> tuple[int, dict]:
        """``d`` and the keyword arguments every learner's constructor takes, from a state."""
        d = reader.count("d", minimum=1)
        reader.array("beta", (d,))  # d is backed by an array in the file before anything is allocated
        return d, {"eta": reader.number("eta", minimum=SCALES[0], maximum=SCALES[1]),
                   "loss": reader.text("loss", tuple(LOSSES))}
