r"""Adaptive subgradient learners on a linear model: AdaGrad (FULL, DIAG, FD, FFD), OGD, Adam.

All of them play ``beta_t`` in R^d, suffer ``f_t(beta_t) = l(beta_t^T x_t, y_t)`` and use the
(sub)gradient ``g_t = l'(beta_t^T x_t, y_t) x_t`` (docs/algorithms.md section 4). ``learn(x, y)``
returns the loss of the current ``beta`` on ``(x, y)`` and then updates; ``step(x, y)`` plays
the same round and returns its :class:`~explorer.hooks.StepRecord` (the loss, the prediction
``beta^T x``, the gradient scale ``l'``, AdaGrad's shrink, rank and condition number: what
hooks receive as "step"); ``predict(x)`` is ``beta^T x``. Hyper-parameters are the
constructor's arguments under their own names (``get_params()``); ``eta`` (and ``delta``
for AdaGrad and Adam) change mid-stream through ``with_params`` (:mod:`explorer.params`),
which returns a new learner continuing this one's state.

Scale limits and all-or-nothing rounds. What a learner accepts, it computes with
finite numbers; what it cannot, it refuses with a ``ValueError`` before anything changes:

- every row: finite, with ``||x||^2 <= MAX_SQUARED_MASS = 1e300`` (entries up to about
  1e150; :data:`explorer.sketch.MAX_SQUARED_MASS`, the FD sketches' limit); every label:
  finite, and -1 or +1 for the classification losses ("logistic", "squared_hinge");
- every round: a finite prediction, loss and gradient with ``||g||^2 <= 1e300`` (so Adam's
  ``g * g`` and AdaGrad's ``g g^T`` are finite); for AdaGrad also the running
  ``tr(G_t) = sum_s ||g_s||^2`` (``gradient_mass``) at most 1e300, which bounds every entry
  of ``G``, of ADA-FFD's ``M`` and of the ADA-FD sketch, so LAPACK never sees an overflow;
- settings: ``eta`` and ``delta`` in [1e-100, 1e100] (:data:`explorer._validation.SCALES`), and
  no kept matrix past :data:`explorer._validation.MAX_ENTRIES` = 1e8 entries (ADA-FULL's d x d,
  ADA-FFD's d x 2 tau and 2 tau x 2 tau, ADA-FD's tau x d);
- a round that still fails (``LinAlgError``, a non-finite ``beta``: ``eta`` far too large
  for ``delta``) is rolled back.

No numpy warning is raised for an overflow that is refused: the round runs with numpy's
warnings off, and the prediction and ``||x||^2`` are BLAS dot products.

A refusal names the row (``X row i`` within a ``learn_many`` call) and the round ``t``, says
why, and ends with "nothing was updated"; a round that fails (the last two items above)
raises :class:`explorer.errors.Diverged`, a ``ValueError`` carrying ``row`` and ``t``. A
round computes its new ``beta`` (and ``m``, ``v``, ``g_bar``) into fresh arrays and stores
them only after checking them, so ``learn`` takes no snapshot; the proximal matrix keeps a
checkpoint of only what it overwrites in place (ADA-FFD's small ``M`` block, ADA-FD's sketch
buffer; see :mod:`explorer.adagrad.proximal`). ``learn_many`` takes one snapshot per call
(:func:`explorer.state.all_or_nothing`) and restores it if any row fails: the call is all or
nothing. Events already sent to hooks (the "step" and "shrink" of the rows before the one
that failed) are not taken back; a failed round itself sends none.

A diverged learner (``beta`` so large that ``beta^T x`` overflows, or ``tr(G)`` at the
limit) refuses the rows it cannot learn and stays as it was: lower ``eta`` and start again.

References
----------
- Wan & Zhang (TPAMI 2022; IJCAI 2018), *Efficient adaptive online learning via frequent
  directions*: ADA-FD (Algorithms 1-2), ADA-FFD (Algorithms 3-4), experiments section 5.
- Duchi, Hazan & Singer (JMLR 2011), *Adaptive subgradient methods*: ADA-FULL, ADA-DIAG.
- Zinkevich (ICML 2003): OGD with step ``eta / sqrt(t)``; Kingma & Ba (ICLR 2015): Adam.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg.blas import ddot

from .._validation import (
    SCALES, as_labeled_rows, as_row, as_rows, check_choice, check_float, check_int, check_matrix_size,
    check_scale, squared_norms,
)
from ..errors import Diverged
from ..hooks import Observable, ShrinkEvent, StepRecord
from ..losses import LOSSES, check_label, check_labels, get_loss
from ..params import Tunable
from ..sketch import MAX_SQUARED_MASS, ShrinkRecord
from ..state import StateReader, all_or_nothing, state_part, stateful
from .proximal import PREFIX, kept_shapes, make_proximal

__all__ = ["AdaGrad", "OGD", "Adam", "RankShrinkEvent", "VARIANTS", "METHODS", "BASELINES", "LEARNERS",
           "RANDOMIZED", "LABELS", "DEFAULT_ETA", "default_delta", "make_learner"]

VARIANTS = ("full", "diag", "fd", "ffd")
"""AdaGrad's proximal matrices: exact ``G``, its diagonal, an FD sketch, the doubling trick."""
METHODS = ("cmd", "pds")
"""AdaGrad's update forms: composite mirror descent, primal-dual (dual averaging)."""
BASELINES = ("ogd", "adam")
"""The paper's first-order baselines (Wan & Zhang, section 5): :class:`OGD`, :class:`Adam`."""
LEARNERS = VARIANTS + BASELINES
"""Every learner of this module by key, in the order figures list them (:func:`make_learner`);
what the dashboard's race (:class:`explorer.experiments.adagrad.AdaGradRace`) runs."""
RANDOMIZED = ("lr", "radagrad")
"""The paper's randomized baselines by key (their ``variant``): ADA-LR and RADAGRAD, the
classes of :mod:`explorer.adagrad.randomized` (Krummenacher et al. 2016). :func:`make_learner`
builds them too; they are not in :data:`LEARNERS`, whose race would pay ADA-LR's O(tau d^2)
round at every step."""
LABELS = {"full": "ADA-FULL", "diag": "ADA-DIAG", "fd": "ADA-FD", "ffd": "ADA-FFD",
          "ogd": "OGD", "adam": "Adam", "lr": "ADA-LR", "radagrad": "RADAGRAD"}
"""The paper's name of each key of :data:`LEARNERS` and :data:`RANDOMIZED`."""
DEFAULT_ETA = 0.01
"""Default step size. The paper picks eta from {1e-4, ..., 1} per experiment; 0.01 is what
that search picks for ADA-FD and ADA-FFD (CMD and PDS) on its synthetic regression in
our runs (d = 500, T from 600 to 10000)."""

_QUIET = {"over": "ignore", "invalid": "ignore", "divide": "ignore"}
"""numpy's error state inside a round and a state check: an overflow there is found by
a check and refused with a message, which numpy's warning would only repeat."""

_NUMERICAL_FAILURES = (ValueError, ArithmeticError)
"""What a failed update raises: LinAlgError, FD's ShrinkFailed and :class:`Diverged` (from
:func:`~explorer.adagrad.proximal._eigh`) are ValueErrors; numpy's FloatingPointError an
ArithmeticError."""


class _RoundFailed(Exception):
    """A round could not be computed; nothing of it was stored. The message says why
    (the learner raises it as :class:`explorer.errors.Diverged`)."""


def default_delta(variant: str, method: str) -> float:
    """The paper's delta (Wan & Zhang, section 5.1).

    ADA-FD and ADA-FFD: 1 with mirror descent (CMD), 10 with dual averaging (PDS);
    ADA-DIAG: 1e-8. The paper tunes ADA-FULL's delta over {1e-4, ..., 10}; we give it the
    FD/FFD value so that ADA-FFD with 2 tau > d equals ADA-FULL with default arguments.

    >>> default_delta("ffd", "cmd"), default_delta("fd", "pds"), default_delta("diag", "cmd")
    (1.0, 10.0, 1e-08)
    """
    if variant == "diag":
        return 1e-8
    return 1.0 if method == "cmd" else 10.0


@dataclass(frozen=True)
class RankShrinkEvent(ShrinkEvent):
    """A "shrink" of an AdaGrad sketch, with the sketch's rank before and after it.

    ``sigma`` holds the singular values of ``S`` before the shrink (descending), so
    ``sigma**2`` are the eigenvalues of ``S^T S`` (of ``M`` for ADA-FFD); ``delta`` is the
    amount subtracted from each of them. ADA-FFD: rank 2 tau -> tau - 1; ADA-FD: tau -> at
    most tau - 1.
    """

    rank_before: int | None = None
    rank_after: int | None = None


def make_learner(key: str, d: int, *, eta: float, loss: str = "absolute", method: str = "cmd",
                 delta: float | None = None, tau: int = 20, seed: int | None = None):
    """The learner of :data:`LEARNERS` or :data:`RANDOMIZED` called ``key``, fresh:
    :class:`AdaGrad` with ``variant=key`` (``delta`` None: the paper's, :func:`default_delta`),
    :class:`OGD` / :class:`Adam`, which take ``eta`` and ``loss`` only (their own ``delta``),
    or :class:`~explorer.adagrad.AdaLR` / :class:`~explorer.adagrad.RadaGrad` ("lr",
    "radagrad"), whose random projection is drawn from ``seed`` (the others ignore it).

    >>> make_learner("ffd", 5, eta=0.1, tau=2)
    AdaGrad(d=5, variant='ffd', method='cmd', eta=0.1, delta=1, tau=2, loss='absolute') t=0
    >>> make_learner("adam", 5, eta=0.1, delta=3.0).delta
    1e-08
    >>> make_learner("radagrad", 5, eta=0.1, tau=2, seed=0)
    RadaGrad(d=5, method='cmd', eta=0.1, delta=1, tau=2, loss='absolute', seed=0) t=0
    """
    if key == "ogd":
        return OGD(d, eta=eta, loss=loss)
    if key == "adam":
        return Adam(d, eta=eta, loss=loss)
    if key in RANDOMIZED:
        from .randomized import AdaLR, RadaGrad  # imported here: randomized.py builds on this module

        cls = AdaLR if key == "lr" else RadaGrad
        return cls(d, method=method, eta=eta, delta=delta, tau=tau, loss=loss, seed=seed)
    check_choice("key", key, LEARNERS + RANDOMIZED)
    return AdaGrad(d, variant=key, method=method, eta=eta, delta=delta, tau=tau, loss=loss)


def _beta_overflow(eta: float, delta: float | None = None) -> str:
    """Why a round's new ``beta`` is not finite, for the refusal."""
    small = "" if delta is None else f" or delta = {delta:g} too small"
    return f"the new beta is not finite (eta = {eta:g} too large{small})"


def _too_large(name: str, squared: float) -> ValueError:
    return ValueError(f"{name} is too large: ||x||^2 = {squared:.3g} exceeds {MAX_SQUARED_MASS:.0e} "
                      f"(entries up to about 1e150 are fine); rescale the data, e.g. divide it by "
                      f"its largest entry")


class _LinearLearner(Observable, Tunable):
    """Shared plumbing: validation, the loss and its gradient, ``predict``, ``learn``,
    ``step``, ``learn_many``, the all-or-nothing round, and the state every learner keeps
    (``d``, ``loss``, ``beta``, ``t``, ``eta``).

    Subclasses implement ``_update(slope, x, squared_gradient)``: compute the update for the
    gradient ``slope * x`` (``self.t`` already counts this round), check it, and store it --
    or raise :class:`_RoundFailed` with nothing stored. It returns the round's
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

    def learn(self, x, y) -> float:
        """Suffer ``l(beta^T x, y)`` with the current ``beta``, then update; returns that loss
        (``step(x, y).loss``, without building the record unless hooks listen).

        All or nothing: a row or label out of bounds (module docstring) raises
        ``ValueError``, a round that fails :class:`~explorer.errors.Diverged`, with the
        learner unchanged.
        """
        x, y, squared = self._checked(x, y)
        with np.errstate(**_QUIET):
            return self._learn_row(x, y, squared, None)

    def step(self, x, y) -> StepRecord:
        """:meth:`learn`'s round, returning its :class:`~explorer.hooks.StepRecord`: ``loss``,
        ``prediction`` (``beta^T x`` before the update), ``gradient_scale`` (``l'``: the
        gradient is ``gradient_scale * x``), and for AdaGrad the round's ``shrink``
        (:class:`~explorer.sketch.ShrinkRecord` or None), ``rank`` and ``condition_number``.
        Hooks receive this same record."""
        x, y, squared = self._checked(x, y)
        with np.errstate(**_QUIET):
            record = self._record(*self._round(x, y, squared, None))
        if self._hooks:
            self._emit(record)
        return record

    def _checked(self, x, y) -> tuple[np.ndarray, float, float]:
        """One row and its label as a round takes them, with ``||x||^2``, or ``ValueError``."""
        x = as_row(x, self.d)
        y = check_label(y, self.loss)
        squared = ddot(x, x)  # BLAS directly: an overflow gives inf, no warning
        if not squared <= MAX_SQUARED_MASS:
            raise _too_large("x", squared)
        return x, y, squared

    def learn_many(self, X, y) -> np.ndarray:
        """``learn`` on each row of ``X`` with labels ``y`` in order; returns the losses.

        All or nothing: every row and label is checked first, and if a round then fails,
        the learner is put back as it was before the call (one snapshot per call) and the
        :class:`~explorer.errors.Diverged` names the row.
        """
        X, y = as_labeled_rows(X, y, self.d)
        check_labels(y, self.loss)
        squared = squared_norms(X)
        over = np.flatnonzero(~(squared <= MAX_SQUARED_MASS))
        if over.size:
            raise _too_large(f"X row {over[0]}", float(squared[over[0]]))
        losses = np.empty(X.shape[0])
        with all_or_nothing(self), np.errstate(**_QUIET):
            for i, (x, label, row_squared) in enumerate(zip(X, y, squared)):
                losses[i] = self._learn_row(x, float(label), float(row_squared), i)
        return losses

    def _learn_row(self, x: np.ndarray, y: float, squared: float, row: int | None) -> float:
        """One round of ``learn``: its loss; the record is built only for listening hooks."""
        result = self._round(x, y, squared, row)
        if self._hooks:
            self._emit(self._record(*result))
        return result[0]

    def _round(self, x: np.ndarray, y: float, squared: float,
               row: int | None) -> tuple[float, float, float, ShrinkRecord | None]:
        """One round on a checked row with ``||x||^2 = squared``: ``(loss, prediction,
        gradient scale, shrink)``. ``row``: its number in a ``learn_many`` call (None for
        ``learn`` and ``step``), for the message of a refusal."""
        z = ddot(x, self.beta)  # the bits of x @ beta (for a contiguous x), and no warning
        loss = float(self._loss_function.value(z, y))
        slope = float(self._loss_function.derivative(z, y))
        if not (math.isfinite(z) and math.isfinite(loss) and math.isfinite(slope)):
            raise self._diverged(row, f"the loss or its gradient overflowed (beta^T x = {z:.3g}, "
                                      f"y = {y:.3g}): beta has diverged (lower eta) or the data is "
                                      f"too large (rescale it)")
        squared_gradient = slope * (slope * squared) if slope else 0.0
        if not squared_gradient <= MAX_SQUARED_MASS:
            raise self._diverged(row, f"the gradient is too large: ||g||^2 = {squared_gradient:.3g} "
                                      f"exceeds {MAX_SQUARED_MASS:.0e} (beta^T x = {z:.3g}, "
                                      f"y = {y:.3g}); rescale the data, or lower eta if beta has diverged")
        self.t += 1  # the round's number, which OGD's step and Adam's bias correction use
        try:
            shrink = self._update(slope, x, squared_gradient)
        except BaseException as error:  # _update stored nothing
            self.t -= 1
            if isinstance(error, _RoundFailed):
                raise self._diverged(row, str(error)) from None
            raise
        return loss, z, slope, shrink

    def _record(self, loss: float, z: float, slope: float, shrink: ShrinkRecord | None) -> StepRecord:
        return StepRecord(t=self.t, loss=loss, prediction=z, gradient_scale=slope, shrink=shrink,
                          **self._step_fields())

    def _diverged(self, row: int | None, why: str) -> Diverged:
        where = "x" if row is None else f"X row {row}"
        return Diverged(f"{where} (round t = {self.t + 1}): {why}; nothing was updated",
                        row=row or 0, t=self.t + 1)

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


@stateful
class AdaGrad(_LinearLearner):
    r"""Adaptive subgradient method with a full, diagonal or sketched proximal matrix.

    Wan & Zhang (TPAMI 2022), *Efficient adaptive online learning via frequent
    directions*: ADA-FD (Algorithms 1-2) and ADA-FFD (Algorithms 3-4); ADA-FULL and
    ADA-DIAG from Duchi, Hazan & Singer (2011). docs/algorithms.md section 4 notation: with
    :math:`G_t = \sum_{s \le t} g_s g_s^T` and :math:`\bar g_t = \sum_{s \le t} g_s`,

    .. math:: H_t = \delta I + G_t^{1/2}\ (\text{full}),\quad
              \delta I + \mathrm{diag}(G_t)^{1/2}\ (\text{diag}),\quad
              \delta I + (S_t^T S_t)^{1/2}\ (\text{fd, ffd}),

    where :math:`S_t` is a Frequent Directions sketch of the gradients: ``tau`` rows for
    "fd", ``2 tau`` with the doubling trick for "ffd". Two update forms:

    - ``method="cmd"`` (composite mirror descent):
      :math:`\beta_{t+1} = \beta_t - \eta H_t^{-1} g_t`;
    - ``method="pds"`` (primal-dual / dual averaging):
      :math:`\beta_{t+1} = -\eta H_t^{-1} \bar g_t`.

    Costs per round: full O(d^3) time and O(d^2) memory (one d x d eigendecomposition);
    diag O(d); fd O(tau^2 d); ffd O(tau d) on average (plus an O(tau^3) eigendecomposition
    of the small matrix ``M``). The sketched variants never form a d x d matrix. With
    ``2 tau > d`` ADA-FFD never shrinks and equals ADA-FULL (for d = 500: tau = 251).

    Parameters
    ----------
    d : int
        Dimension of ``x`` and ``beta``.
    variant : {"ffd", "fd", "full", "diag"}
    method : {"cmd", "pds"}
    eta : float > 0
        Step size (default 0.01, see :data:`DEFAULT_ETA`; the paper searches {1e-4, ..., 1}).
    delta : float > 0 or None
        Regularizer of ``H``; None means the paper's value (:func:`default_delta`:
        1 for CMD, 10 for PDS, 1e-8 for ADA-DIAG).
    tau : int >= 2
        Sketch size of "fd" and "ffd" (ignored by "full" and "diag"); the paper's default 20.
    loss : {"absolute", "squared_hinge", "squared", "logistic"}
        ``l(z, y)``; the paper's regression uses "absolute", its classification
        "squared_hinge" (labels -1 or +1, as for "logistic").

    Rounds: ``learn(x, y)`` returns the loss, ``step(x, y)`` the round's
    :class:`~explorer.hooks.StepRecord`: t, loss, prediction, gradient scale, ``shrink``
    (the :class:`~explorer.sketch.ShrinkRecord` of ADA-FD's or ADA-FFD's shrink in this
    round, else None), the rank of the sketch -- of ``G`` for "full", the non-zero
    coordinates for "diag" -- and the condition number of ``H``.

    Hooks: that record as "step" every round, and "shrink" (:class:`RankShrinkEvent`: t,
    the singular values of the sketch before the shrink, delta, rank before and after)
    whenever ADA-FD or ADA-FFD shrinks.

    Attributes: ``beta`` (the current decision), ``t`` (rounds played), ``rank``,
    ``delta_total`` (``Delta_T``: the sum of the shrink amounts, 0 for full and diag),
    ``n_shrinks``, ``gradient_mass`` (``tr(G_t) = sum_s ||g_s||^2``, at most 1e300: see the
    module docstring). ``eta`` and ``delta`` are :data:`HOT`: ``with_params(eta=...,
    delta=...)`` continues the stream with new values (``G`` and the sketch stay).

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 10)); beta_star = np.ones(10) / np.sqrt(10)
    >>> learner = AdaGrad(10, variant="ffd", tau=3, eta=0.1)
    >>> losses = learner.learn_many(X, X @ beta_star)  # absolute loss: y = beta_*^T x
    >>> round(float(losses[:20].mean()), 3), round(float(losses[-20:].mean()), 3)
    (0.68, 0.126)
    >>> learner.rank, learner.n_shrinks  # the rank cycles between tau - 1 = 2 and 2 tau = 6
    (4, 49)
    """

    HOT = ("eta", "delta")
    """``H_t = delta I + G_t^{1/2}`` (or its sketch) and the update's ``eta`` are applied
    afresh every round from ``G_t``, which neither changes: both may change mid-stream."""

    def __init__(self, d: int, *, variant: str = "ffd", method: str = "cmd",
                 eta: float = DEFAULT_ETA, delta: float | None = None, tau: int = 20,
                 loss: str = "absolute"):
        self.variant = check_choice("variant", variant, VARIANTS)
        self.method = check_choice("method", method, METHODS)
        delta = default_delta(variant, method) if delta is None else check_scale("delta", delta)
        self.tau = check_int("tau", tau, minimum=2)
        super().__init__(d, loss, eta)
        for rows, columns in kept_shapes(variant, self.d, self.tau):
            check_matrix_size(f"variant {variant!r} with d = {self.d}, tau = {self.tau}", rows, columns)
        self.g_bar = np.zeros(self.d)
        self.delta_total = 0.0
        self.n_shrinks = 0
        self.gradient_mass = 0.0
        self._proximal = self._make_proximal(delta)

    def _make_proximal(self, delta: float):
        return make_proximal(self.variant, self.d, self.tau, delta)

    @property
    def delta(self) -> float:
        """The regularizer of ``H = delta I + ...`` (> 0): the proximal matrix's own, the one
        home of the value (``with_params(delta=...)`` changes ``H``; ``G`` and the sketch stay)."""
        return self._proximal.delta

    def __repr__(self) -> str:
        tau = f", tau={self.tau}" if self.variant in ("fd", "ffd") else ""
        return (f"AdaGrad(d={self.d}, variant={self.variant!r}, method={self.method!r}, "
                f"eta={self.eta:g}, delta={self.delta:g}{tau}, loss={self.loss!r}) t={self.t}")

    # -- one round ---------------------------------------------------------------------
    def _update(self, slope: float, x: np.ndarray, squared_gradient: float) -> ShrinkRecord | None:
        """``G`` takes ``g`` (ADA-FD's sketch may shrink), then the CMD or PDS update, then
        ADA-FFD's shrink; the new ``beta`` is checked before anything but the proximal
        matrix changes, and the proximal matrix is rolled back if the round fails. Returns
        the round's shrink, if any."""
        if slope == 0.0:  # G, g_bar and so H and beta are all unchanged
            return None
        mass = self.gradient_mass + squared_gradient
        if not mass <= MAX_SQUARED_MASS:
            raise _RoundFailed(f"the gradients' total squared norm tr(G) = sum ||g_s||^2 would reach "
                               f"{mass:.3g}, past {MAX_SQUARED_MASS:.0e}, beyond which H overflows; "
                               f"rescale the data, or lower eta if beta has diverged")
        g = slope * x
        proximal = self._proximal
        saved = proximal.checkpoint()
        try:
            shrink = proximal.add(g)  # ADA-FD's sketch shrinks here
            if self.method == "cmd":
                g_bar = self.g_bar
                beta = self.beta - self._eta * proximal.solve(g)
            else:
                g_bar = self.g_bar + g
                beta = -self._eta * proximal.solve(g_bar)
            if not np.isfinite(beta).all():
                raise _RoundFailed(_beta_overflow(self._eta, self.delta))
        except BaseException as error:
            proximal.rollback(saved)
            if isinstance(error, _NUMERICAL_FAILURES):
                raise _RoundFailed(f"the update of H or beta failed ({error})") from None
            raise
        if shrink is None:
            shrink = proximal.compress()  # ADA-FFD's; cannot fail: orthonormal V times orthonormal U
        self.beta, self.g_bar, self.gradient_mass = beta, g_bar, mass
        if shrink is not None:
            self.delta_total += shrink.delta
            self.n_shrinks += 1
            if self._hooks:
                self._emit(RankShrinkEvent(t=self.t, sigma=np.sqrt(shrink.squared), delta=shrink.delta,
                                           rank_before=proximal.capacity, rank_after=shrink.kept))
        return shrink

    def _step_fields(self) -> dict:
        return {"rank": self.rank, "condition_number": self._proximal.condition_number()}

    # -- what the learner holds ---------------------------------------------------------
    @property
    def rank(self) -> int:
        """Rank of the sketch (ffd: r; fd: rows kept), of ``G`` (full), non-zero h_i (diag)."""
        return self._proximal.rank

    def solve(self, v) -> np.ndarray:
        """``H^{-1} v`` for the current ``H`` (by the Woodbury formulas for fd and ffd)."""
        return self._proximal.solve(as_row(v, self.d, "v"))

    def condition_number(self) -> float:
        """``kappa(H) = (delta + sqrt(lambda_max)) / (delta + sqrt(lambda_min))``, cheap."""
        return self._proximal.condition_number()

    def proximal_matrix(self) -> np.ndarray:
        """The current ``H`` as a dense d x d array (for inspection and tests: O(d^2))."""
        return self._proximal.matrix()

    def gram(self) -> np.ndarray:
        """What ``H`` is built from (d x d): ``G``, ``S^T S`` (fd, ffd) or ``diag(G)`` (diag)."""
        return self._proximal.gram()

    @property
    def proximal(self):
        """The proximal-matrix object (:mod:`explorer.adagrad.proximal`), for inspection."""
        return self._proximal

    # -- persistence --------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Plain arrays and scalars; ``from_state_dict`` continues exactly from here."""
        return {**self._common_state(), "variant": self.variant, "method": self.method,
                "delta": self.delta, "tau": self.tau,
                "g_bar": self.g_bar.copy(), "delta_total": self.delta_total,
                "n_shrinks": self.n_shrinks, "gradient_mass": self.gradient_mass,
                **{PREFIX + k: v for k, v in self._proximal.state_dict().items()}}

    @classmethod
    def from_state_dict(cls, state: dict) -> "AdaGrad":
        reader = StateReader(state, cls)
        d, arguments = cls._read_arguments(reader)
        learner = cls(d, variant=reader.text("variant", VARIANTS), method=reader.text("method", METHODS),
                      delta=reader.number("delta", minimum=SCALES[0], maximum=SCALES[1]),
                      tau=reader.count("tau", minimum=2), **arguments)
        learner.load_state_dict(state)
        return learner

    def load_state_dict(self, state: dict) -> None:
        """Become the learner ``state`` describes, in place (hooks stay).

        Everything is checked before anything is stored, and a state no run could have
        written is refused with a ``ValueError`` naming the key: ``d``, ``loss``,
        ``variant``, ``method`` and ``tau`` must be this learner's own; ``eta`` and
        ``delta`` in [1e-100, 1e100] are loaded; arrays finite and of their shapes;
        counters >= 0 with ``n_shrinks <= t``; ``delta_total >= 0`` and 0 before the first
        shrink (and for "full" and "diag", which never shrink; ADA-FD's equal its
        sketch's); the proximal matrix as :meth:`FullProximal.read_state` and its siblings
        check it; ``gradient_mass`` at most 1e300 and at least what the proximal matrix
        holds (``tr(G)``; ``tr(M) + delta_total`` for ADA-FFD); ``g_bar`` zero under CMD
        and ``||g_bar||^2 <= t * gradient_mass`` (Cauchy-Schwarz) under PDS. A state saved
        before ``gradient_mass`` was kept loads with that lower bound in its place.
        """
        with np.errstate(**_QUIET):  # a huge tampered entry overflows a check: refused, silently
            checked = self._read_state(StateReader(state, type(self)), state)
        self._proximal.restore(checked.pop("proximal"))
        self._proximal.delta = checked.pop("delta")
        self._restore_common(checked.pop("common"))
        for key, value in checked.items():
            setattr(self, key, value)

    def _read_state(self, reader: StateReader, state: dict) -> dict:
        for key in ("variant", "method", "tau"):
            reader.same(key, getattr(self, key))
        common = self._read_common(reader)
        t = common["t"]
        delta = reader.number("delta", minimum=SCALES[0], maximum=SCALES[1])
        n_shrinks = reader.count("n_shrinks", maximum=t)
        delta_total = reader.number("delta_total", minimum=0.0)
        if delta_total > 0 and n_shrinks == 0:
            raise reader.refuse("delta_total", "0 before the first shrink (n_shrinks = 0)", delta_total)
        if self.variant in ("full", "diag") and n_shrinks:
            raise reader.refuse("n_shrinks", f"0 (ADA-{self.variant.upper()} never shrinks)", n_shrinks)
        staged = self._proximal.read_state(state_part(state, PREFIX), type(self).__name__)
        if self.variant == "fd":
            sketch = staged["sketch"]
            if (n_shrinks, delta_total) != (sketch.n_shrinks, sketch.delta_total):
                raise reader.refuse("n_shrinks", f"the sketch's own count and total ({sketch.n_shrinks}, "
                                    f"{sketch.delta_total:.6g})", (n_shrinks, delta_total))
            if sketch.n_seen > t:
                raise reader.refuse("t", f">= the gradients the sketch has seen ({sketch.n_seen})", t)
        floor = staged["trace"] + (delta_total if self.variant == "ffd" else 0.0)
        if reader.has("gradient_mass"):
            mass = reader.number("gradient_mass", minimum=0.0, maximum=MAX_SQUARED_MASS)
            if not mass >= floor * (1 - 1e-9):
                raise reader.refuse("gradient_mass", f">= {floor:.6g}, what the proximal matrix holds", mass)
        elif floor <= MAX_SQUARED_MASS:
            mass = floor  # a state saved before the total was kept
        else:
            raise reader.refuse("proximal", f"a matrix of trace at most {MAX_SQUARED_MASS:.0e}", floor)
        g_bar = reader.array("g_bar", (self.d,))
        if self.method == "cmd" and g_bar.any():
            raise reader.refuse("g_bar", "zero under CMD (only dual averaging sums the gradients)",
                                "non-zero entries")
        if not ddot(g_bar, g_bar) <= t * mass * (1 + 1e-9):
            raise reader.refuse("g_bar", f"of squared norm at most t * gradient_mass = {t * mass:.6g} "
                                "(a sum of t gradients)", float(ddot(g_bar, g_bar)))
        return {"common": common, "proximal": staged, "delta": delta, "g_bar": g_bar,
                "n_shrinks": n_shrinks, "delta_total": delta_total, "gradient_mass": mass}


@stateful
class OGD(_LinearLearner):
    r"""Online gradient descent (Zinkevich 2003), the baseline of Wan & Zhang section 5.

    .. math:: \beta_{t+1} = \beta_t - \frac{\eta}{\sqrt t}\, g_t

    Default ``eta = 1e-3``: the best of the paper's grid {1e-4, ..., 1} on its synthetic
    regression in our runs.

    >>> learner = OGD(2, eta=0.5, loss="squared")
    >>> [round(learner.learn([1.0, 0.0], 1.0), 3) for _ in range(3)]
    [1.0, 0.0, 0.0]
    """

    def __init__(self, d: int, *, eta: float = 1e-3, loss: str = "absolute"):
        super().__init__(d, loss, eta)

    def __repr__(self) -> str:
        return f"OGD(d={self.d}, eta={self.eta:g}, loss={self.loss!r}) t={self.t}"

    def _update(self, slope: float, x: np.ndarray, squared_gradient: float) -> None:
        if slope == 0.0:
            return
        beta = self.beta - (self._eta / np.sqrt(self.t)) * (slope * x)
        if not np.isfinite(beta).all():
            raise _RoundFailed(_beta_overflow(self._eta))
        self.beta = beta

    def state_dict(self) -> dict:
        return self._common_state()

    @classmethod
    def from_state_dict(cls, state: dict) -> "OGD":
        d, arguments = cls._read_arguments(StateReader(state, cls))
        learner = cls(d, **arguments)
        learner.load_state_dict(state)
        return learner

    def load_state_dict(self, state: dict) -> None:
        """In place, checked before anything is stored: ``d`` and ``loss`` must be this
        learner's own, ``eta`` in [1e-100, 1e100], ``beta`` finite of length d, ``t >= 0``."""
        self._restore_common(self._read_common(StateReader(state, type(self))))


@stateful
class Adam(_LinearLearner):
    r"""Adam (Kingma & Ba 2015) with the paper's constants delta = 1e-8, 0.9, 0.999.

    .. math:: m_t = b_1 m_{t-1} + (1 - b_1) g_t,\quad v_t = b_2 v_{t-1} + (1 - b_2) g_t^2,

    .. math:: \beta_{t+1} = \beta_t
              - \eta\, \frac{m_t / (1 - b_1^t)}{\sqrt{v_t / (1 - b_2^t)} + \delta}

    (``beta1``/``beta2`` are the decay rates ``b_1``/``b_2``; ``beta`` is the decision.)
    Default ``eta = 1e-3``, Kingma & Ba's recommendation. ``eta`` and ``delta`` (> 0) are
    :data:`HOT`: ``with_params`` changes them between rounds.

    >>> learner = Adam(1, eta=0.1, loss="squared")
    >>> [round(learner.learn([1.0], 1.0), 3) for _ in range(3)]
    [1.0, 0.81, 0.64]
    """

    def __init__(self, d: int, *, eta: float = 1e-3, beta1: float = 0.9,
                 beta2: float = 0.999, delta: float = 1e-8, loss: str = "absolute"):
        beta1 = check_float("beta1", beta1, minimum=0.0, maximum=1.0)
        beta2 = check_float("beta2", beta2, minimum=0.0, maximum=1.0)
        for name, value in (("beta1", beta1), ("beta2", beta2)):
            if value == 1.0:
                raise ValueError(f"{name} must be in [0, 1) (the bias correction divides by "
                                 f"1 - {name}^t), got 1.0")
        self._delta = check_scale("delta", delta)
        super().__init__(d, loss, eta)
        self.beta1, self.beta2 = beta1, beta2
        self.m = np.zeros(self.d)
        self.v = np.zeros(self.d)

    HOT = ("eta", "delta")
    """Both scale the next update only: ``m`` and ``v`` do not depend on them."""

    @property
    def delta(self) -> float:
        """The constant added to ``sqrt(v_hat)`` (> 0)."""
        return self._delta

    def __repr__(self) -> str:
        return (f"Adam(d={self.d}, eta={self.eta:g}, beta1={self.beta1:g}, beta2={self.beta2:g}, "
                f"delta={self.delta:g}, loss={self.loss!r}) t={self.t}")

    def _update(self, slope: float, x: np.ndarray, squared_gradient: float) -> None:
        """Runs on a zero gradient too: ``m`` decays and ``beta`` keeps moving. ``||g||^2 <=
        1e300`` keeps ``g * g`` and so ``v`` finite; only ``beta`` needs a check."""
        g = slope * x
        m = self.beta1 * self.m + (1.0 - self.beta1) * g
        v = self.beta2 * self.v + (1.0 - self.beta2) * g * g
        m_hat = m / (1.0 - self.beta1 ** self.t)
        v_hat = v / (1.0 - self.beta2 ** self.t)
        beta = self.beta - self._eta * m_hat / (np.sqrt(v_hat) + self._delta)
        if not np.isfinite(beta).all():
            raise _RoundFailed(_beta_overflow(self._eta, self._delta))
        self.m, self.v, self.beta = m, v, beta

    def state_dict(self) -> dict:
        return {**self._common_state(), "beta1": self.beta1, "beta2": self.beta2,
                "delta": self.delta, "m": self.m.copy(), "v": self.v.copy()}

    @classmethod
    def from_state_dict(cls, state: dict) -> "Adam":
        reader = StateReader(state, cls)
        d, arguments = cls._read_arguments(reader)
        learner = cls(d, beta1=reader.number("beta1", minimum=0.0, maximum=1.0),
                      beta2=reader.number("beta2", minimum=0.0, maximum=1.0),
                      delta=reader.number("delta", minimum=SCALES[0], maximum=SCALES[1]), **arguments)
        learner.load_state_dict(state)
        return learner

    def load_state_dict(self, state: dict) -> None:
        """In place, checked before anything is stored: ``d``, ``loss``, ``beta1`` and
        ``beta2`` must be this learner's own; ``eta``, ``delta`` in [1e-100, 1e100];
        ``beta``, ``m``, ``v`` finite of length d; ``t >= 0``. ``m`` and ``v`` are decaying
        averages of ``g`` and ``g * g`` with ``||g||^2 <= 1e300``: ``|m| <= 1e150`` and
        ``0 <= v <= 1e300``."""
        reader = StateReader(state, type(self))
        reader.same("beta1", self.beta1)
        reader.same("beta2", self.beta2)
        common = self._read_common(reader)
        delta = reader.number("delta", minimum=SCALES[0], maximum=SCALES[1])
        m, v = reader.array("m", (self.d,)), reader.array("v", (self.d,))
        if not np.abs(m).max() <= math.sqrt(MAX_SQUARED_MASS):
            raise reader.refuse("m", "at most 1e150 in size (an average of gradients)", float(np.abs(m).max()))
        if not (v.min() >= 0 and v.max() <= MAX_SQUARED_MASS):
            raise reader.refuse("v", "in [0, 1e300] (an average of squared gradients)",
                                (float(v.min()), float(v.max())))
        self._restore_common(common)
        self._delta, self.m, self.v = delta, m, v
