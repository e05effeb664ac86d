r"""The ``"auto"`` defaults of the sketched online Newton step (docs/algorithms.md section 3.4).

:class:`~explorer.newton.SketchedOnlineNewton` takes ``alpha0``, ``eta`` and ``C`` as
``"auto"`` by default and resolves them at the first round whose gradient
``g = l'(0, y) x`` is not zero (every earlier round leaves ``u = 0``). The rules live here:

- the label scale ``Y`` (1 for the logistic loss's -1/+1 labels, ``|y|`` of that round for
  the squared loss) gives ``C = 10 Y``, ``eta = default_mu(loss, Y)`` and
  ``mu = default_mu(loss, C)`` (:func:`auto_settings`), each only where it was asked for:
  a ``C`` given as a number still leaves ``eta`` to the label scale;
- RFD-SON and FULL-ON: ``alpha_0 = ||sqrt(mu + eta) g||^2``, the squared norm of that round's
  curvature row (RFD's own ``alpha = alpha_0 + Delta / 2`` then grows with the rows to come);
- FD-SON, RP-SON, Oja-SON: ``alpha_0 = 2 l''_max ||x||^2`` (:func:`unsketched_alpha0`), raised
  whenever a later row asks for more. Outside the sketch's span ``H = alpha_0 I``, a gradient
  step of rate ``1 / alpha_0`` that overshoots the label once ``alpha_0 < l''_max ||x||^2 / 2``;
  with this rule it goes at most half way to the label on its own row.

>>> auto_settings("squared", 2.0)
{'C': 20.0, 'eta': 0.03125, 'mu': 0.0003125}
>>> unsketched_alpha0("squared", 25.0), unsketched_alpha0("logistic", 25.0)
(100.0, 12.5)

References
----------
- Luo, Chen, Zhang, Li (2017), *Online learning via regularized frequent directions*,
  Assumption 2 (exp-concavity on the slab), Theorem 5, and section 5: FD-SON, RP-SON and
  Oja-SON "only achieve good result when alpha_0 is set appropriately" (tuned over
  1e-10 ... 1e10 there).
- Luo, Agarwal, Cesa-Bianchi, Langford (2016), *Efficient second order online learning by
  sketching*: FD-SON, RP-SON and Oja-SON with a fixed ``alpha_0 > 0``.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy.linalg.blas import ddot as _ddot

from .._validation import SCALES, check_scale
from ..learner import RoundRefused
from ..sketch import MAX_SQUARED_MASS
from ..state import StateReader
from .curvature import check_row, make_curvature

__all__ = ["AUTO", "AUTO_SLAB", "AUTO_NAMES", "PLACEHOLDERS", "MAX_CURVATURE", "UNSKETCHED_SAFETY",
           "FIXED_SHIFT_SKETCHES", "SCALE_AGREEMENT", "default_mu", "auto_settings", "unsketched_alpha0",
           "scales_agree", "given_setting", "auto_names", "ETA_SCHEDULES", "SUPPORTED_LOSSES", "AutoDefaults"]

ETA_SCHEDULES = ("constant", "inverse_t")
#: The losses the online Newton step is defined for: exp-concave on the slab (section 3.4).
SUPPORTED_LOSSES = ("squared", "logistic")

#: The default of ``alpha0``, ``eta`` and ``C``: resolved from the data.
AUTO = "auto"
#: The auto slab ``C`` is this many times the label scale (1 for the logistic loss).
AUTO_SLAB = 10.0
#: The settings ``AUTO`` may stand for (``mu`` follows ``C`` when not given).
AUTO_NAMES = ("alpha0", "eta", "C", "mu")
#: Where a pending setting holds while no round has had a non-zero gradient (nothing reads
#: them then: ``u = 0``, every prediction is 0 and no row reaches the curvature).
PLACEHOLDERS = {"alpha0": 0.0, "eta": 0.0, "C": 1.0, "mu": 0.0}
#: ``l''_max``, the largest second derivative of the loss in the prediction:
#: ``(z - y)^2`` has 2, the logistic loss ``1/4`` (at ``z = 0``).
MAX_CURVATURE = {"squared": 2.0, "logistic": 0.25}
#: ``alpha_0 = UNSKETCHED_SAFETY * l''_max ||x||^2`` for the sketches with a fixed shift.
UNSKETCHED_SAFETY = 2.0
#: The sketches whose ``H = alpha_0 I + B^T B`` keeps ``alpha_0`` fixed and whose auto
#: ``alpha_0`` follows :func:`unsketched_alpha0`.
FIXED_SHIFT_SKETCHES = ("fd", "rp", "oja")


def default_mu(loss: str, C: float) -> float:
    """The exp-concavity constant ``mu`` of Assumption 2 on the slab ``|w^T x| <= C``.

    squared ``(z - y)^2`` with ``|z|, |y| <= C``: ``l'' = 2`` and ``l'^2 <= 16 C^2``, so
    ``mu = 1 / (8 C^2)`` (JMLR 2019); logistic: ``l'' / l'^2 >= e^{-C}``, so ``mu = e^{-C}``.

    >>> default_mu("squared", 1.0), round(default_mu("logistic", 1.0), 4)
    (0.125, 0.3679)
    """
    if loss == "squared":
        return 1.0 / (8.0 * C ** 2)
    if loss == "logistic":
        return float(np.exp(-C))
    raise ValueError(f"loss must be 'squared' or 'logistic', got {loss!r}")


def auto_settings(loss: str, label_scale: float, *, slab: bool = True, eta: bool = True,
                  mu: bool = True) -> dict:
    """The label-scale part of the ``"auto"`` defaults: ``C``, ``eta`` and ``mu``, those asked for.

    ``Y = label_scale`` (1 for the logistic loss's -1/+1 labels, ``|y|`` of the first round
    with a non-zero gradient for the squared loss). The slab is ``C = AUTO_SLAB * Y``, wide
    enough that predictions are rarely capped; ``mu`` stays the exp-concavity constant of
    Assumption 2 on that slab (:func:`default_mu`), and ``eta = default_mu(loss, Y)``: the
    constant of Assumption 2 on the labels' own slab ``|w^T x| <= Y``, the curvature weight
    Theorem 5's bound (JMLR 2019, eq. 11) would use for comparators that fit the labels.
    Both scale as ``1 / Y^2`` for the squared loss, so the steps scale with the labels.
    ``slab=False``: ``C`` was given (not returned, not checked); ``eta`` still follows ``Y``.
    A value outside :data:`~explorer._validation.SCALES` is a ``ValueError``.

    >>> auto_settings("logistic", 1.0)["C"], round(auto_settings("logistic", 1.0)["eta"], 4)
    (10.0, 0.3679)
    >>> auto_settings("squared", 0.5, slab=False, mu=False)
    {'eta': 0.5}
    """
    C = AUTO_SLAB * label_scale
    settings = {"C": C} if slab else {}
    if eta:
        settings["eta"] = default_mu(loss, label_scale)
    if mu:
        settings["mu"] = default_mu(loss, C)
    for name, value in settings.items():
        if not SCALES[0] <= value <= SCALES[1]:
            raise ValueError(f"the auto {name} for the {loss} loss and the label scale "
                             f"{label_scale:.3g} is {value:.3g}, outside [{SCALES[0]:.0e}, "
                             f"{SCALES[1]:.0e}]; give C and eta")
    return settings


def unsketched_alpha0(loss: str, squared_norm: float) -> float:
    r"""The auto ``alpha_0`` of FD-SON, RP-SON and Oja-SON for a row with ``||x||^2 = squared_norm``:
    ``UNSKETCHED_SAFETY * l''_max * ||x||^2``.

    Outside the sketch's span these learners have ``H = alpha_0 I``, so a round moves ``u``
    there by ``-l'(z, y) x_\perp / alpha_0``, changing the prediction on ``x`` by
    ``-l' ||x_\perp||^2 / alpha_0``; the one-dimensional Newton step would be
    ``-l' / l''``. With ``alpha_0 >= 2 l''_max ||x||^2`` the move is at most half of that:
    no overshoot, whatever the sketch missed. A smaller ``alpha_0`` (FD-SON's tiny ones)
    overshoots by ``l'' ||x||^2 / alpha_0 - 1`` and the predictions oscillate out to ``+-C``.
    Scale-equivariant: ``x -> s x`` gives ``alpha_0 -> s^2 alpha_0``.

    >>> unsketched_alpha0("squared", 1.0)
    4.0
    """
    return UNSKETCHED_SAFETY * MAX_CURVATURE[loss] * squared_norm


#: How far (as a ratio of squared row norms ``|x|^2``, and of labels ``|y|`` squared) a
#: later row may be from the row the auto settings were resolved from and still confirm them.
SCALE_AGREEMENT = 1e8


def scales_agree(anchor: tuple[float, float], squared_norm: float, label: float) -> bool:
    """Whether a row confirms the auto settings resolved from the row ``anchor =
    (|x_1|^2, |y_1|)`` (``|y_1| = 0``: labels not compared): ``|x|^2`` within a factor
    :data:`SCALE_AGREEMENT` of ``|x_1|^2`` and, if compared and ``y != 0``, ``y^2`` within
    that factor of ``y_1^2`` (a factor 1e4 in norm either way).

    >>> scales_agree((1.0, 1.0), 4.0, -3.0), scales_agree((1.0, 1.0), 1e-280, 1.0)
    (True, False)
    >>> scales_agree((1.0, 0.0), 1.0, 1e-90), scales_agree((1.0, 2.0), 1.0, 1e-90)
    (True, False)
    """
    row, labels = anchor
    if not row / SCALE_AGREEMENT <= squared_norm <= row * SCALE_AGREEMENT:
        return False
    ratio = abs(label) / labels if labels > 0 and label != 0 else 1.0
    return 1.0 / SCALE_AGREEMENT <= ratio * ratio <= SCALE_AGREEMENT


def given_setting(name: str, value, *, zero: bool):
    """A constructor's ``alpha0``, ``eta`` or ``C``: :data:`AUTO` or a number (check_scale)."""
    if isinstance(value, str):
        if value == AUTO:
            return AUTO
        raise ValueError(f"{name} must be 'auto' or a number, got {value!r}")
    return check_scale(name, value, zero=zero)


def auto_names(reader: StateReader, key: str) -> tuple[str, ...]:
    """A state's comma-separated list of :data:`AUTO_NAMES` (missing, in older states: none)."""
    if not reader.has(key):
        return ()
    names = tuple(name for name in reader.text(key).split(",") if name)
    if not set(names) <= set(AUTO_NAMES) or len(set(names)) < len(names):
        raise reader.refuse(key, f"comma-separated names among {', '.join(AUTO_NAMES)}", reader.raw(key))
    return names


class AutoDefaults:
    """Mixin of :class:`~explorer.newton.SketchedOnlineNewton`: the ``"auto"`` settings,
    taken by the constructor, resolved from the first row with a non-zero gradient
    (:meth:`_resolve`, :meth:`_raise_alpha0`) and confirmed by the next (:meth:`_check_anchor`)."""

    def _take_settings(self, alpha0, eta, mu, C) -> None:
        """The constructor's ``alpha0``, ``eta``, ``mu``, ``C``: checked, the ``"auto"`` ones
        noted (``_auto``, ``_pending``) and holding their placeholders, or, for the logistic
        loss (``Y = 1``), the label-scale ones resolved now."""
        given = {"alpha0": given_setting("alpha0", alpha0, zero=True), "eta": given_setting("eta", eta, zero=True),
                 "C": given_setting("C", C, zero=False)}
        if mu is None and given["C"] == AUTO:
            given["mu"] = AUTO
        #: the settings given as "auto", and those still waiting for data (see _resolve)
        self._auto = tuple(name for name in AUTO_NAMES if given.get(name) == AUTO)
        self._pending = self._auto if self.loss == "squared" else tuple(
            name for name in self._auto if name == "alpha0")  # logistic: Y = 1 is known
        self._pending_at_start = self._pending
        #: (|x|^2, |y|) of the row the auto settings came from, until a later row confirms them
        self._anchor: tuple[float, float] | None = None
        if self.sketch_kind == "full" and given["alpha0"] == 0:
            raise ValueError("alpha0 must be > 0 for sketch='full' (H_0 = alpha0 I is inverted), got 0")
        if self.loss == "logistic":
            labels = auto_settings(self.loss, 1.0)
            given.update({name: labels[name] for name in ("eta", "C") if given[name] == AUTO})
            given.pop("mu", None)  # the default for the resolved C, below
        given = {name: PLACEHOLDERS[name] if value == AUTO else value for name, value in given.items()}
        # FULL-ON keeps H^{-1} = I / alpha0 from the start: 1 until alpha0 is known
        self._alpha0 = 1.0 if "alpha0" in self._pending and self.sketch_kind == "full" else given["alpha0"]
        self._eta = given["eta"]
        self.C = given["C"]
        if "mu" in given:
            mu = given["mu"]
        elif mu is None:
            mu = default_mu(self.loss, self.C)
            if not SCALES[0] <= mu <= SCALES[1]:
                raise ValueError(f"the default mu for the {self.loss} loss with C = {self.C:g} is "
                                 f"{mu:.3g}, outside [{SCALES[0]:.0e}, {SCALES[1]:.0e}]; choose a C "
                                 f"nearer 1 or give mu")
        self.mu = check_scale("mu", mu, zero=True)
        if self.mu + self.eta <= 0 and not {"eta", "mu"} & set(self._pending):
            raise ValueError("mu + eta must be > 0 (the weight of each gradient in H)")

    @property
    def pending_defaults(self) -> tuple[str, ...]:
        """The ``"auto"`` settings still waiting for the first round with a non-zero gradient
        (until then ``alpha0``, ``eta``, ``C``, ``mu`` read placeholders no round uses).

        >>> from explorer.newton import SketchedOnlineNewton
        >>> learner = SketchedOnlineNewton(3)
        >>> learner.pending_defaults, learner.get_params()["alpha0"]
        (('alpha0', 'eta', 'C', 'mu'), 'auto')
        >>> _ = learner.learn([3.0, 0.0, 4.0], 2.0)  # |y| = 2, |x|^2 = 25, l'(0, y) = -4
        >>> learner.pending_defaults, learner.C, learner.eta, round(learner.alpha0, 9)
        ((), 20.0, 0.03125, 12.625)
        """
        return self._pending

    def _make_curvature(self):
        """The curvature for the settings in use; Oja-SON with an auto alpha0 also scales Oja's
        step to the rows (:class:`~explorer.oja.OjaSketch` ``normalize``), a given one keeps the paper's."""
        return make_curvature(self.sketch_kind, self.d, self.m, self.alpha0, self.fast, self.seed,
                              normalize="alpha0" in self._auto)

    def _placeholder(self, name: str) -> float:
        """What a pending setting holds (FULL-ON's alpha0 is 1: it keeps ``I / alpha0``)."""
        return 1.0 if name == "alpha0" and self.sketch_kind == "full" else PLACEHOLDERS[name]

    def _resolve(self, x: np.ndarray, y: float, slope: float, t: int) -> None:
        """Resolve the pending ``"auto"`` settings at the first round whose gradient
        ``g = l'(0, y) x`` is not zero (earlier rounds changed nothing but ``t``), by the
        rules of :mod:`explorer.newton.defaults`: each pending one of ``C``, ``eta``, ``mu``
        from ``Y = |y|``; ``alpha0 = ||sqrt(mu + eta_t) g||^2`` (RFD-SON, FULL-ON) or
        ``2 l''_max ||x||^2`` (FD, RP, Oja-SON, raised by later rows: :meth:`_raise_alpha0`).
        Raises :class:`~explorer.learner.RoundRefused` for settings out of range; the caller undoes everything."""
        pending = set(self._pending)
        if pending & {"C", "eta", "mu"}:
            try:
                labels = auto_settings(self.loss, abs(y), slab="C" in pending, eta="eta" in pending,
                                       mu="mu" in pending)
            except ValueError as error:
                raise RoundRefused(str(error)) from None
            self.C = labels.get("C", self.C)
            self._eta = labels.get("eta", self._eta)
            self.mu = labels.get("mu", self.mu)
        if "alpha0" in pending:
            row = math.sqrt(self.curvature_weight(t)) * slope * x
            check_row(row, x, self._curvature.mass)  # refuses a row the curvature cannot take
            self._alpha0 = self._needed_alpha0(x) if self.sketch_kind in FIXED_SHIFT_SKETCHES else _ddot(row, row)
        self._pending = ()
        squared = _ddot(x, x)
        self._anchor = (squared, abs(y) if self.loss == "squared" else 0.0) if squared > 0 else None
        self._use_curvature(self._make_curvature())

    def _check_anchor(self, x: np.ndarray, y: float) -> None:
        """Auto settings resolved from one row are provisional: the next non-zero row that
        :func:`scales_agree` with it confirms them; one that does not
        (the first row was 1e-140 where the rest are 1, or the other way round) discards the
        provisional start, ``u``, the sketch and the settings, and this round resolves them
        again from its own row: one degenerate first row cannot fix the scale for ever."""
        if self._anchor is None or not x.any():
            return
        if scales_agree(self._anchor, _ddot(x, x), y):
            self._anchor = None
            return
        for name in self._pending_at_start:
            value = self._placeholder(name)
            if name in ("alpha0", "eta"):
                setattr(self, f"_{name}", value)
            else:
                setattr(self, name, value)
        self._pending, self._anchor, self.u = self._pending_at_start, None, np.zeros(self.d)
        self._use_curvature(self._make_curvature())

    def _needed_alpha0(self, x: np.ndarray) -> float:
        """FD/RP/Oja-SON's auto alpha0 for the row x (:func:`unsketched_alpha0`)."""
        alpha0 = unsketched_alpha0(self.loss, _ddot(x, x))
        if not 0.0 < alpha0 <= MAX_SQUARED_MASS:
            raise RoundRefused(f"the auto alpha0 2 l''_max |x|^2 = {alpha0:.3g} for this row is outside "
                           f"(0, {MAX_SQUARED_MASS:.0e}]; rescale the data")
        return alpha0

    def _raise_alpha0(self, x: np.ndarray) -> Callable[[], None] | None:
        """FD/RP/Oja-SON with an auto alpha0: raise it to this row's :meth:`_needed_alpha0`
        if larger (the largest over the rows seen); returns a function that undoes the raise
        exactly, or None if nothing changed."""
        if self.sketch_kind not in FIXED_SHIFT_SKETCHES or "alpha0" not in self._auto:
            return None
        needed = self._needed_alpha0(x)
        if not needed > self._alpha0:
            return None
        curvature = self._curvature
        kept = (self._alpha0, curvature.factor.copy(order="K"), curvature.factored, curvature.shift)

        def undo() -> None:
            self._alpha0 = curvature.alpha0 = kept[0]
            curvature.factor[:], curvature.factored, curvature.shift = kept[1:]
        self._alpha0 = curvature.alpha0 = needed
        curvature.refactor()
        return undo
