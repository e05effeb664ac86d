r"""The sketched online Newton step: :class:`SketchedOnlineNewton` and its round.

One round (docs/algorithms.md section 3.2) is :meth:`SketchedOnlineNewton._round`, written
beside Algorithm 5 of Luo et al. (2017): the slab projection :func:`project_on_slab`, the
loss and gradient, the curvature row added to ``H`` and the Newton step. The curvature
``H_t`` and its solves are in :mod:`explorer.newton.curvature`, the ``"auto"`` settings in
:mod:`explorer.newton.defaults`, saving and loading in :mod:`explorer.newton.persistence`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import numbers
from typing import Callable

import numpy as np

from .._validation import SCALES, all_finite, as_labeled_rows, as_row, check_choice, check_int
from ..errors import Diverged
from ..hooks import StepRecord
from ..learner import OnlineLearner, RoundRefused, Rounds, refused
from ..losses import check_label, check_labels, get_loss
from ..params import Tunable
from ..state import all_or_nothing, stateful
from .compiled import CompiledRounds
from .curvature import SKETCHES, check_row, check_size
from .defaults import AUTO, ETA_SCHEDULES, SUPPORTED_LOSSES, AutoDefaults
from .persistence import NewtonState

__all__ = ["SketchedOnlineNewton", "project_on_slab", "FACE_MISS"]

#: How far (relative to ``|u^T x|``) the H-norm slab projection may land from the face
#: ``w^T x = +-C`` before it counts as lost to rounding and the Euclidean one is used.
FACE_MISS = 1e-3


def _moved(u: np.ndarray, excess: float, direction: np.ndarray, norm: float) -> np.ndarray | None:
    """``u - excess * direction / norm`` (a slab projection), or None if it is not finite;
    ``excess * direction`` may overflow where ``direction * (excess / norm)`` does not."""
    w = u - excess * direction / norm
    if not all_finite(w):
        w = u - direction * (excess / norm)
    return w if all_finite(w) else None


def project_on_slab(u: np.ndarray, x: np.ndarray, C: float, alpha: float,
                    solve: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, float, float]:
    """``(w_t, a_t, z_t)``: step 1, the projection of ``u`` onto the slab ``|w^T x| <= C`` in
    the norm of ``H`` (``solve(v) = H^{-1} v``, ``alpha`` its shift), the point ``a_t`` the loss is
    taken at and the prediction ``z_t = clip(u_t^T x, -C, C)`` (:meth:`predict`'s, never
    outside ``[-C, C]``); ``a_t = w_t^T x = z_t`` but for rounding.

    When H is ill-conditioned (alpha tiny next to ``B^T B``) ``H^{-1} x`` can lose every
    digit and the H-norm projection miss the face ``w^T x = +-C`` by far: such a ``w``
    (off by more than :data:`FACE_MISS` of ``|u^T x|``) is replaced by the Euclidean
    projection. ``a_t = w_t^T x`` as computed, unless even that misses the face by more
    than ``FACE_MISS * C`` (then ``a_t = z_t``)."""
    z = float(u @ x)
    if abs(z) <= C:
        return u, z, z
    if not math.isfinite(z):
        raise RoundRefused("the prediction u^T x overflows")
    excess = np.sign(z) * (abs(z) - C)
    squared = float(x @ x)
    w = None
    if alpha > 0:
        try:
            solved = solve(x)
        except (ArithmeticError, np.linalg.LinAlgError) as error:
            raise RoundRefused(f"the slab projection failed ({error})") from None
        # x^T H^{-1} x >= |x|^2 / lambda_max(H); next to its largest possible value
        # |x|^2 / alpha it is numerically zero only when rounding ate it (scale-free)
        norm = float(x @ solved)
        if norm > 1e-12 * squared / alpha:
            w = _moved(u, excess, solved, norm)
            if w is not None and not abs(float(w @ x) - math.copysign(C, z)) <= FACE_MISS * abs(z):
                w = None
    if w is None:  # the Euclidean projection, with the pseudo-inverse or as the fallback
        w = _moved(u, excess, x, squared)
    at = float(w @ x) if w is not None else math.nan
    if not math.isfinite(at):
        raise RoundRefused("the slab projection overflows")
    face = math.copysign(C, z)
    return w, (at if abs(at - face) <= FACE_MISS * C else face), face


@stateful
class SketchedOnlineNewton(CompiledRounds, AutoDefaults, NewtonState, Tunable, OnlineLearner):
    r"""Sketched online Newton step: RFD-SON, FD-SON, RP-SON, Oja-SON, FULL-ON.

    Round t, with ``f_t(w) = l(w^T x_t, y_t)`` and ``H_{t-1}`` the curvature so far:

    1. ``w_t = u_t - tau(u_t^T x_t) H_{t-1}^{-1} x_t / (x_t^T H_{t-1}^{-1} x_t)``, the
       projection onto the slab ``|w^T x_t| <= C``, ``tau(z) = sign(z) max(|z| - C, 0)``;
    2. suffer ``l(w_t^T x_t, y_t)``; ``g_t = l'(w_t^T x_t, y_t) x_t``;
    3. add the row ``sqrt(mu + eta_t) g_t`` to the sketch ``B`` (none when ``g_t = 0``);
    4. ``u_{t+1} = w_t - H_t^{-1} g_t``,

    with ``H_t = alpha I + B^T B`` (RFD-SON: RFD's growing alpha), ``alpha_0 I + B^T B``
    (FD-SON, RP-SON, Oja-SON) or ``alpha_0 I + sum_s (mu + eta_s) g_s g_s^T`` (FULL-ON).
    The paper names :class:`~explorer.newton.RFDSON`, ... fix ``sketch``.

    Parameters: ``d``; ``sketch`` "rfd", "fd", "rp", "oja" (``m <= d``) or "full"
    (``alpha0 > 0``); ``m`` the sketch size; ``alpha0`` (``H_0 = alpha0 I``), ``eta``
    (``eta_t = eta``, or ``eta / t`` with ``eta_schedule="inverse_t"``) and the slab ``C``,
    each a number or ``"auto"`` (resolved at the first non-zero gradient,
    :mod:`explorer.newton.defaults`); ``mu`` (None: :func:`~explorer.newton.default_mu`);
    ``fast`` (the doubling-space sketch); ``loss`` in :data:`SUPPORTED_LOSSES`; ``seed``
    (RP, Oja). ``learn``, ``step`` and ``learn_many`` (:class:`~explorer.learner.OnlineLearner`;
    ``last_prediction``: the ``w_t^T x_t`` of the last round) are all or nothing (a refused round is
    a :class:`~explorer.errors.Diverged`); ``with_params`` changes :data:`HOT` settings. With
    numba, ``learn`` / ``learn_many`` run compiled (:mod:`explorer.newton.compiled`: same numbers).
    Allowed values, refusals, records and hooks: docs/algorithms.md sections 3.2 and 3.8.

    >>> learner = SketchedOnlineNewton(3, sketch="rfd", m=2, alpha0=0.0, eta=0.0, C=1.0)
    >>> [round(learner.learn(x, y), 3) for x, y in [([1, 0, 0], 1), ([1, 0, 0], 1)]]
    [1.0, 0.0]
    >>> learner.last_prediction, float(learner.predict([1, 0, 0]))  # the last round's, the next
    (1.0, 1.0)
    >>> rec = SketchedOnlineNewton(2, m=2).step([2.0, 0.0], 1.0)
    >>> rec.t, rec.loss, rec.prediction, rec.gradient_scale, rec.shrink, rec.rank, rec.condition_number
    (1, 1.0, 0.0, -2.0, None, 1, 2.0)

    References: Luo, Agarwal, Cesa-Bianchi, Langford (NIPS 2016), *Efficient second order
    online learning by sketching* (SON, the slab, FD-SON, RP-SON, Oja-SON); Luo, Chen, Zhang,
    Li (2017), *Online learning via regularized frequent directions*, Algorithms 5-6
    (RFD-SON); JMLR 2019, Algorithm 3 (``alpha_0 = 0``, the pseudo-inverse).
    """

    HOT = ("eta", "alpha0", "eta_schedule")
    #: :meth:`progressive` keeps alpha_t and kappa(H_t) of every round (after (loss, z_t, record)).
    ROUND_OUTPUTS = {"alpha": 3, "condition_number": 4}

    def __init__(self, d: int, *, sketch: str = "rfd", m: int = 10, alpha0: float | str = AUTO,
                 eta: float | str = AUTO, mu: float | None = None, C: float | str = AUTO,
                 fast: bool = True, loss: str = "squared", eta_schedule: str = "constant",
                 seed: int | None = None):
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        self.sketch_kind = check_choice("sketch", sketch, SKETCHES)
        self._eta_schedule = check_choice("eta_schedule", eta_schedule, ETA_SCHEDULES)
        self.loss = check_choice("loss", loss, SUPPORTED_LOSSES)
        self.m = check_int("m", m, minimum=2)
        if not isinstance(fast, (bool, np.bool_)):
            raise ValueError(f"fast must be True or False, got {fast!r}")
        self.fast = bool(fast)
        check_size(self.sketch_kind, self.d, self.m, self.fast)
        self._take_settings(alpha0, eta, mu, C)
        if seed is not None and (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral)
                                 or not 0 <= seed < 2 ** 63):
            raise ValueError(f"seed must be None or an integer in [0, 2^63), got {seed!r}")
        self.seed = None if seed is None else int(seed)
        self._loss_function = get_loss(self.loss)
        self.u = np.zeros(self.d)
        self.t = 0
        self.last_prediction = 0.0
        # a shrink happens inside round self.t + 1 (self.t counts the rounds done)
        self._use_curvature(self._make_curvature())

    def __repr__(self) -> str:
        sketch = f"sketch={self.sketch_kind!r}, " if "sketch" in self.param_names() else ""
        return (f"{type(self).__name__}(d={self.d}, {sketch}m={self.m}, "
                f"alpha0={self.alpha0:g}, eta={self.eta:g}, loss={self.loss!r}) t={self.t}")

    def _use_curvature(self, curvature) -> None:
        """Keep ``curvature`` (built for the alpha0 now in use), its sketch's events forwarded
        (and the replaced curvature's sketch no longer)."""
        replaced = getattr(self, "_curvature", None)
        if replaced is not None and replaced.sketch is not None:
            self._stop_forwarding(replaced.sketch)
        self._curvature = curvature
        if self._curvature.sketch is not None:
            self._forward_events(self._curvature.sketch,
                                 lambda event: dataclasses.replace(event, t=self.t + 1))

    @property
    def sketch(self):
        """The sketch object (None for FULL-ON)."""
        return self._curvature.sketch

    @property
    def alpha0(self) -> float:
        """``H_0 = alpha0 I`` (read-only: ``with_params(alpha0=...)`` continues with another)."""
        return self._alpha0

    @property
    def eta(self) -> float:
        """The extra curvature weight (read-only: ``with_params(eta=...)``)."""
        return self._eta

    @property
    def eta_schedule(self) -> str:
        """``eta_t = eta`` ("constant") or ``eta / t`` (read-only: ``with_params``)."""
        return self._eta_schedule

    @property
    def alpha(self) -> float:
        """The current regularizer of ``H``: RFD's alpha, else alpha_0."""
        return self._curvature.shift

    def solve(self, v) -> np.ndarray:
        """``H^{-1} v`` for the current curvature matrix (Woodbury; pseudo-inverse if alpha = 0)."""
        return self._curvature.solve(as_row(v, self.d, "v"))

    def condition_number(self) -> float:
        """Condition number of the current ``H`` (O(m^3) for sketches, O(d^3) for FULL-ON)."""
        return self._curvature.condition_number()

    def curvature_weight(self, t: int) -> float:
        """``mu + eta_t``, the weight of round ``t``'s gradient in ``H`` (its row in the
        sketch is ``sqrt(mu + eta_t) g_t``): ``eta_t = eta``, or ``eta / t`` with
        ``eta_schedule="inverse_t"``. With a step record ``rec``, round t added
        ``rec.curvature_weight * rec.gradient_scale ** 2 * x x^T`` to ``H``.

        >>> SketchedOnlineNewton(2, eta=0.5, mu=0.25, eta_schedule="inverse_t").curvature_weight(2)
        0.5
        """
        return self.mu + (self._eta / t if self._eta_schedule == "inverse_t" else self._eta)

    def predict(self, x) -> float:
        """The prediction ``w^T x`` after the slab projection: ``clip(u^T x, -C, C)``.

        :class:`~explorer.errors.Diverged` if ``u^T x`` overflows (``learn`` refuses such a
        row too)."""
        x = as_row(x, self.d)
        with self._quiet():
            z = float(self.u @ x)
        if not math.isfinite(z):
            raise Diverged("x: the prediction u^T x overflows; rescale x", t=self.t + 1)
        return min(max(z, -self.C), self.C)

    # -- the protocol's parts (explorer.learner) ----------------------------------------
    def _check_round(self, x, y) -> tuple:
        return as_row(x, self.d), check_label(y, self.loss, bound=SCALES[1]), True

    def _check_rounds(self, X, y) -> Rounds:
        X, y = as_labeled_rows(X, y, self.d)
        check_labels(y, self.loss, bound=SCALES[1])
        # rows the compiled round leaves take the numpy one, not undoable: the call is
        return Rounds(zip(X, y.tolist(), itertools.repeat(False)), arrays=(X, y))

    def _refused(self, refusal: RoundRefused, row: int | None):
        if row is None:
            return refused("x", refusal, t=self.t + 1)
        return refused(f"X row {row}", refusal, row=row, t=self.t + 1, after=" (the call is undone)")

    def _round_guard(self):
        if self._pending or self._anchor is not None:
            return self._provisional_round()
        return self._quiet()

    @contextlib.contextmanager
    def _provisional_round(self):
        """A round that resolves "auto" settings is undone whole, settings included."""
        with self._quiet(), all_or_nothing(self):
            yield

    def _fast_round(self, arguments: tuple) -> tuple | None:
        return self._compiled_learn(arguments[0], arguments[1], FACE_MISS)  # the same numbers

    def _fast_rounds(self, rounds: Rounds, start: int, losses: np.ndarray, predictions: np.ndarray,
                     outputs: dict[str, np.ndarray] | None = None) -> int:
        X, y = rounds.arrays
        return self._compiled_rounds(X, y, start, losses, predictions, FACE_MISS, outputs)

    def _project(self, x: np.ndarray) -> tuple[np.ndarray, float, float]:
        """:func:`project_on_slab` of ``u_t`` for ``x``: ``(w_t, a_t, z_t)``."""
        return project_on_slab(self.u, x, self.C, self.alpha, self._curvature.solve)

    def _round(self, x: np.ndarray, y: float, undoable: bool,
               record: bool = False) -> tuple[float, float, StepRecord | None]:
        """One round (Algorithm 5) on a checked row and label: ``(loss, w_t^T x, record)``,
        or :class:`~explorer.learner.RoundRefused` with nothing of the learner's stored
        (the curvature is put back if ``undoable``; ``learn_many`` restores its own snapshot).
        The :class:`~explorer.hooks.StepRecord` is built only for ``step`` or a hook."""
        self._check_anchor(x, y)
        w, at, z = self._project(x)  # 1. w_t, the slab projection of u_t
        loss, slope = self._loss_function.value_and_derivative(at, y)  # 2. l(w_t^T x), l'
        if not (math.isfinite(loss) and math.isfinite(slope)):
            raise RoundRefused(f"the loss at the prediction {z:.6g} and the label {y:.6g} overflows")
        t, shrink, u = self.t + 1, None, w  # u_{t+1} = w_t when g_t = 0
        if slope != 0.0:
            if self._pending and x.any():
                self._resolve(x, y, slope, t)
            scale = math.sqrt(self.curvature_weight(t))
            g = slope * x  # g_t
            row = scale * g  # sqrt(mu + eta_t) g_t
            if check_row(row, g, self._curvature.mass):  # g_t = 0 adds nothing and leaves u = w
                raised = self._raise_alpha0(x)
                undo = self._curvature.undo_point() if undoable else None
                try:
                    shrink = self._curvature.add(row)  # 3. H_t = H_{t-1} + row row^T
                    u = w - self._curvature.solve_gradient(g, scale)  # 4. u_{t+1} = w_t - H_t^{-1} g_t
                    if not all_finite(u):
                        raise Diverged("the step H^{-1} g overflows")
                except BaseException as error:  # an interrupt is undone too
                    if undo is not None:
                        undo()
                        if raised is not None:
                            raised()
                    if not isinstance(error, (ValueError, ArithmeticError, np.linalg.LinAlgError)):
                        raise
                    raise RoundRefused(f"the Newton step failed ({error})") from None
        self.u, self.t = u, t
        alpha, kappa = self.alpha, self._curvature.deferred_condition_number()
        if not (record or self._hooks):
            return loss, z, None, alpha, kappa
        return loss, z, self._emit_step(StepRecord(
            t=t, loss=loss, prediction=z, gradient_scale=slope, shrink=shrink, alpha=alpha,
            rank=self._curvature.rank, condition_number=kappa,
            curvature_weight=self.curvature_weight(t))), alpha, kappa
