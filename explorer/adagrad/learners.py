r"""Adaptive subgradient learners on a linear model: AdaGrad (FULL, DIAG, FD, FFD), OGD, Adam.

All of them play ``beta_t`` in R^d, suffer ``f_t(beta_t) = l(beta_t^T x_t, y_t)`` and use the
(sub)gradient ``g_t = l'(beta_t^T x_t, y_t) x_t`` (docs/algorithms.md section 4). ``learn(x, y)``
returns the loss of the current ``beta`` on ``(x, y)`` and then updates; ``predict(x)``
is ``beta^T x``.

References
----------
- Wan & Zhang (TPAMI 2022; IJCAI 2018), *Efficient adaptive online learning via frequent
  directions*: ADA-FD (Algorithms 1-2), ADA-FFD (Algorithms 3-4), experiments section 5.
- Duchi, Hazan & Singer (JMLR 2011), *Adaptive subgradient methods*: ADA-FULL, ADA-DIAG.
- Zinkevich (ICML 2003): OGD with step ``eta / sqrt(t)``; Kingma & Ba (ICLR 2015): Adam.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .._validation import as_labeled_rows, as_row, as_rows, check_float, check_int
from ..hooks import Observable, ShrinkEvent, StepEvent
from ..losses import LOSSES, get_loss
from ..state import check_kind, stateful
from .proximal import DiagonalProximal, FDProximal, FFDProximal, FullProximal

__all__ = ["AdaGrad", "OGD", "Adam", "RankShrinkEvent", "VARIANTS", "METHODS", "default_delta"]

VARIANTS = ("full", "diag", "fd", "ffd")
METHODS = ("cmd", "pds")
DEFAULT_ETA = 0.01
"""Default step size. The paper picks eta from {1e-4, ..., 1} per experiment; 0.01 is what
that search picks for ADA-FD and ADA-FFD (CMD and PDS) on its synthetic regression in
our runs (d = 500, T from 600 to 10000)."""


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


class _LinearLearner(Observable):
    """Shared plumbing: validation, the loss and its gradient, ``predict``, ``learn_many``."""

    def __init__(self, d: int, loss: str):
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        if not isinstance(loss, str) or loss not in LOSSES:
            valid = ", ".join(repr(name) for name in LOSSES)
            raise ValueError(f"loss must be one of {valid}, got {loss!r}")
        self.loss_name = loss
        self._loss = get_loss(loss)
        self.beta = np.zeros(self.d)
        self.t = 0

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
        """Suffer ``l(beta^T x, y)`` with the current ``beta``, then update; returns that loss."""
        x = as_row(x, self.d)
        y = check_float("y", y)
        return self._learn_row(x, y)

    def learn_many(self, X, y) -> np.ndarray:
        """``learn`` on each row of ``X`` with labels ``y`` in order; returns the losses.

        Every row and label is checked first: on bad input nothing is learned.
        """
        X, y = as_labeled_rows(X, y, self.d)
        return np.array([self._learn_row(x, float(label)) for x, label in zip(X, y)])

    def _learn_row(self, x: np.ndarray, y: float) -> float:
        z = float(x @ self.beta)
        loss = float(self._loss.value(z, y))
        slope = float(self._loss.derivative(z, y))
        if not (np.isfinite(loss) and np.isfinite(slope) and np.isfinite(slope * x).all()):
            raise ValueError(f"the loss or its gradient overflowed at t = {self.t + 1} "
                             f"(beta has diverged: lower eta); nothing was updated")
        self.t += 1
        self._update(slope * x, slope != 0.0)
        if self._hooks:
            self._emit(StepEvent(t=self.t, loss=loss, **self._step_fields()))
        return loss

    def _update(self, g: np.ndarray, nonzero: bool) -> None:
        raise NotImplementedError

    def _step_fields(self) -> dict:
        return {}

    def _common_state(self) -> dict:
        return {"kind": type(self).__name__, "d": self.d, "loss": self.loss_name,
                "beta": self.beta.copy(), "t": self.t}

    def _restore_common(self, state: dict) -> None:
        beta = np.asarray(state["beta"], dtype=float)
        if beta.shape != (self.d,):
            raise ValueError(f"state_dict beta has shape {beta.shape}, expected ({self.d},)")
        self.beta = beta.copy()
        self.t = int(state["t"])


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
        ``l(z, y)``; the paper's regression uses "absolute", its classification "squared_hinge".

    Hooks: "shrink" (:class:`RankShrinkEvent`: t, the singular values of the sketch before
    the shrink, delta, rank before and after) whenever ADA-FD or ADA-FFD shrinks, and
    "step" every round (t, loss, the rank of the sketch -- of ``G`` for "full", the
    non-zero coordinates for "diag" -- and the condition number of ``H``).

    Attributes: ``beta`` (the current decision), ``t`` (rounds played), ``rank``,
    ``delta_total`` (``Delta_T``: the sum of the shrink amounts, 0 for full and diag),
    ``n_shrinks``.

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

    def __init__(self, d: int, *, variant: str = "ffd", method: str = "cmd",
                 eta: float = DEFAULT_ETA, delta: float | None = None, tau: int = 20,
                 loss: str = "absolute"):
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        eta = check_float("eta", eta, minimum=0.0, strict_minimum=True)
        delta = default_delta(variant, method) if delta is None else \
            check_float("delta", delta, minimum=0.0, strict_minimum=True)
        tau = check_int("tau", tau, minimum=2)
        super().__init__(d, loss)
        self.variant, self.method, self.eta, self.delta, self.tau = variant, method, eta, delta, tau
        self.g_bar = np.zeros(self.d)
        self.delta_total = 0.0
        self.n_shrinks = 0
        self._proximal = self._make_proximal()
        if variant == "fd":
            self._forward_events(self._proximal.sketch, self._fd_shrink_event)

    def _make_proximal(self):
        if self.variant == "full":
            return FullProximal(self.d, self.delta)
        if self.variant == "diag":
            return DiagonalProximal(self.d, self.delta)
        if self.variant == "fd":
            return FDProximal(self.d, self.tau, self.delta)
        return FFDProximal(self.d, self.tau, self.delta)

    def __repr__(self) -> str:
        tau = f", tau={self.tau}" if self.variant in ("fd", "ffd") else ""
        return (f"AdaGrad(d={self.d}, variant={self.variant!r}, method={self.method!r}, "
                f"eta={self.eta:g}, delta={self.delta:g}{tau}, loss={self.loss_name!r}) t={self.t}")

    # -- one round ---------------------------------------------------------------------
    def _update(self, g: np.ndarray, nonzero: bool) -> None:
        if not nonzero:  # G, g_bar and so H and beta are all unchanged
            return
        proximal = self._proximal
        proximal.add(g)
        if self.method == "cmd":
            self.beta = self.beta - self.eta * proximal.solve(g)
        else:
            self.g_bar = self.g_bar + g
            self.beta = -self.eta * proximal.solve(self.g_bar)
        if self.variant == "fd":
            sketch = proximal.sketch
            self.delta_total, self.n_shrinks = sketch.delta_total, sketch.n_shrinks
        shrink = proximal.compress()
        if shrink is not None:
            self.delta_total += shrink.delta
            self.n_shrinks += 1
            if self._hooks:
                self._emit(RankShrinkEvent(t=self.t, sigma=np.sqrt(shrink.eigenvalues),
                                           delta=shrink.delta, rank_before=shrink.rank_before,
                                           rank_after=shrink.rank_after))

    def _fd_shrink_event(self, event: ShrinkEvent) -> RankShrinkEvent:
        return RankShrinkEvent(**{**dataclasses.asdict(event), "t": self.t},
                               rank_before=self.tau, rank_after=self._proximal.sketch.rank)

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
                "eta": self.eta, "delta": self.delta, "tau": self.tau,
                "g_bar": self.g_bar.copy(), "delta_total": self.delta_total,
                "n_shrinks": self.n_shrinks,
                **{f"proximal.{k}": v for k, v in self._proximal.state_dict().items()}}

    @classmethod
    def from_state_dict(cls, state: dict) -> "AdaGrad":
        check_kind(state, cls)
        learner = cls(int(state["d"]), variant=str(state["variant"]), method=str(state["method"]),
                      eta=float(state["eta"]), delta=float(state["delta"]), tau=int(state["tau"]),
                      loss=str(state["loss"]))
        learner._restore_common(state)
        learner.g_bar = np.asarray(state["g_bar"], dtype=float).reshape(learner.d).copy()
        learner.delta_total = float(state["delta_total"])
        learner.n_shrinks = int(state["n_shrinks"])
        learner._proximal.load({k[len("proximal."):]: v for k, v in state.items()
                                if k.startswith("proximal.")})
        return learner


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
        eta = check_float("eta", eta, minimum=0.0, strict_minimum=True)
        super().__init__(d, loss)
        self.eta = eta

    def __repr__(self) -> str:
        return f"OGD(d={self.d}, eta={self.eta:g}, loss={self.loss_name!r}) t={self.t}"

    def _update(self, g: np.ndarray, nonzero: bool) -> None:
        if nonzero:
            self.beta = self.beta - (self.eta / np.sqrt(self.t)) * g

    def state_dict(self) -> dict:
        return {**self._common_state(), "eta": self.eta}

    @classmethod
    def from_state_dict(cls, state: dict) -> "OGD":
        check_kind(state, cls)
        learner = cls(int(state["d"]), eta=float(state["eta"]), loss=str(state["loss"]))
        learner._restore_common(state)
        return learner


@stateful
class Adam(_LinearLearner):
    r"""Adam (Kingma & Ba 2015) with the paper's constants delta = 1e-8, 0.9, 0.999.

    .. math:: m_t = b_1 m_{t-1} + (1 - b_1) g_t,\quad v_t = b_2 v_{t-1} + (1 - b_2) g_t^2,

    .. math:: \beta_{t+1} = \beta_t
              - \eta\, \frac{m_t / (1 - b_1^t)}{\sqrt{v_t / (1 - b_2^t)} + \delta}

    (``beta1``/``beta2`` are the decay rates ``b_1``/``b_2``; ``beta`` is the decision.)
    Default ``eta = 1e-3``, Kingma & Ba's recommendation.

    >>> learner = Adam(1, eta=0.1, loss="squared")
    >>> [round(learner.learn([1.0], 1.0), 3) for _ in range(3)]
    [1.0, 0.81, 0.64]
    """

    def __init__(self, d: int, *, eta: float = 1e-3, beta1: float = 0.9,
                 beta2: float = 0.999, delta: float = 1e-8, loss: str = "absolute"):
        eta = check_float("eta", eta, minimum=0.0, strict_minimum=True)
        beta1 = check_float("beta1", beta1, minimum=0.0, maximum=1.0)
        beta2 = check_float("beta2", beta2, minimum=0.0, maximum=1.0)
        for name, value in (("beta1", beta1), ("beta2", beta2)):
            if value == 1.0:
                raise ValueError(f"{name} must be in [0, 1) (the bias correction divides by "
                                 f"1 - {name}^t), got 1.0")
        delta = check_float("delta", delta, minimum=0.0, strict_minimum=True)
        super().__init__(d, loss)
        self.eta, self.beta1, self.beta2, self.delta = eta, beta1, beta2, delta
        self.m = np.zeros(self.d)
        self.v = np.zeros(self.d)

    def __repr__(self) -> str:
        return (f"Adam(d={self.d}, eta={self.eta:g}, beta1={self.beta1:g}, beta2={self.beta2:g}, "
                f"delta={self.delta:g}, loss={self.loss_name!r}) t={self.t}")

    def _update(self, g: np.ndarray, nonzero: bool) -> None:
        self.m = self.beta1 * self.m + (1.0 - self.beta1) * g
        self.v = self.beta2 * self.v + (1.0 - self.beta2) * g * g
        m_hat = self.m / (1.0 - self.beta1 ** self.t)
        v_hat = self.v / (1.0 - self.beta2 ** self.t)
        self.beta = self.beta - self.eta * m_hat / (np.sqrt(v_hat) + self.delta)

    def state_dict(self) -> dict:
        return {**self._common_state(), "eta": self.eta, "beta1": self.beta1,
                "beta2": self.beta2, "delta": self.delta, "m": self.m.copy(), "v": self.v.copy()}

    @classmethod
    def from_state_dict(cls, state: dict) -> "Adam":
        check_kind(state, cls)
        learner = cls(int(state["d"]), eta=float(state["eta"]), beta1=float(state["beta1"]),
                      beta2=float(state["beta2"]), delta=float(state["delta"]),
                      loss=str(state["loss"]))
        learner._restore_common(state)
        learner.m = np.asarray(state["m"], dtype=float).reshape(learner.d).copy()
        learner.v = np.asarray(state["v"], dtype=float).reshape(learner.d).copy()
        return learner
