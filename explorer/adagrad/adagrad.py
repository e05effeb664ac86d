"""AdaGrad with a full, diagonal or sketched proximal matrix: ADA-FULL, ADA-DIAG, ADA-FD, ADA-FFD
(Wan & Zhang, TPAMI 2022; Duchi, Hazan & Singer, JMLR 2011). The round is
:meth:`AdaGrad._update`; the four proximal matrices are :mod:`explorer.adagrad.proximal`'s.

>>> AdaGrad(3, variant="fd", tau=2).learn([1.0, 0.0, 0.0], 1.0)
1.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg.blas import ddot

from .._validation import SCALES, as_row, check_choice, check_int, check_matrix_size, check_scale
from ..hooks import ShrinkEvent
from ..learner import RoundRefused
from ..sketch import MAX_SQUARED_MASS, ShrinkRecord
from ..state import StateReader, all_or_nothing, state_part, stateful
from .linear import NUMERICAL_FAILURES, QUIET, LinearLearner, beta_overflow
from .proximal import PREFIX, kept_shapes, make_proximal
from .settings import DEFAULT_ETA, METHODS, VARIANTS, default_delta

__all__ = ["AdaGrad", "RankShrinkEvent"]


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


@stateful
class AdaGrad(LinearLearner):
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

    Costs per round: full O(d^3) time and O(d^2) memory; diag O(d); fd O(tau^2 d); ffd
    O(tau d) on average. With ``2 tau > d`` ADA-FFD never shrinks and equals ADA-FULL.

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

    Rounds and hooks: ``step(x, y)`` returns the :class:`~explorer.hooks.StepRecord` hooks
    receive as "step", with the round's ``shrink`` (ADA-FD's or ADA-FFD's
    :class:`~explorer.sketch.ShrinkRecord`, else None), ``rank`` and the condition number of
    ``H``; each shrink is also sent as "shrink", a :class:`RankShrinkEvent`.

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
            raise RoundRefused(f"the gradients' total squared norm tr(G) = sum ||g_s||^2 would reach "
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
                raise RoundRefused(beta_overflow(self._eta, self.delta))
            if shrink is None:
                shrink = proximal.compress()  # ADA-FFD's; cannot fail: orthonormal V times orthonormal U
        except BaseException as error:  # an interrupt too: the proximal matrix as it was
            proximal.rollback(saved)
            if isinstance(error, NUMERICAL_FAILURES) and not isinstance(error, RoundRefused):
                raise RoundRefused(f"the update of H or beta failed ({error})") from None
            raise
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
        with np.errstate(**QUIET):  # a huge tampered entry overflows a check: refused, silently
            checked = self._read_state(StateReader(state, type(self)), state)
        with all_or_nothing(self):  # the stores as one: interrupted, the learner is put back as it was
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
