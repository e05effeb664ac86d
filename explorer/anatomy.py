r"""Open one update: a round taken apart into its paper's steps, each with this round's numbers.

:func:`open_sketch_round` (FD, RFD) plays ``sketch.update(x)``: ``x_t`` enters the buffer
``B``; when it fills, the singular values ``sigma``, ``delta = sigma_m^2``, every
``sigma_i^2 - delta``, the rows freed, RFD's ``alpha += delta / 2``. :func:`open_son_round`
(RFD-SON, FD-SON; Luo et al. 2017, Algorithm 5): ``w_t^T x_t``, the loss, ``g_t = l' x_t``,
the sketched row ``sqrt(mu + eta_t) g_t``, the shrink, ``alpha``, the Newton step.
:func:`open_adagrad_round` (ADA-FFD and every variant): the gradient, the shrink of ``S_t``,
``kappa(H_t)``, the step on ``beta``. :func:`open_pca_round` (adaptive PCA, best subset):
the corners and the one sampled, the loss, the exponentiated step, fixed share, capping.
:func:`open_sftrl_round` (S-FTRL): ``z_t``, ``q_t``, the sign split into ``B+`` or ``B-``,
the shrink. Each reads the round's record and events and the public state before and after,
and returns an :class:`OpenedRound`: :meth:`~OpenedRound.lines` to print, ``before`` /
``row`` / ``after`` for :func:`explorer.plots.anatomy.round_heatmaps`. :func:`open_round`
picks by type.

>>> import numpy as np
>>> from explorer.sketch import RobustFrequentDirections
>>> sk = RobustFrequentDirections(3, 2)
>>> sk.update([3.0, 0.0, 0.0])
>>> opened = open_sketch_round(sk, [0.0, 4.0, 0.0])  # the second row fills the 2-row buffer
>>> print("\n".join(opened.lines()))
round t = 2 of RFD (m = 2): x_t enters B as row 2 of 2
the buffer is full: its singular values sigma = [4, 3]
delta = sigma_m^2 = 3^2 = 9
sigma_i^2 - delta = [7, 0]: 1 row kept, 1 row freed (now zero)
alpha += delta / 2: 0 -> 4.5

References: Liberty (KDD 2013); Luo et al. (2017), Algorithms 1-5; Wan & Zhang (TPAMI 2022);
Yuan & Lamperski (ICML 2019), Algorithms 1 and 4; Luo et al. (KDD 2018), Algorithm 4.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .adagrad import AdaGrad
from .fm import SketchedFTRL, as_fm_row
from .hooks import CapEvent, DecomposeEvent, FixedShareEvent, ShrinkEvent
from .newton import SketchedOnlineNewton
from .pca import AdaptiveBestSubset, OnlineAdaptivePCA
from .sketch import FrequentDirections, RobustFrequentDirections

__all__ = ["Part", "OpenedRound", "can_open", "open_round", "open_sketch_round", "open_son_round",
           "open_adagrad_round", "open_pca_round", "open_sftrl_round"]


@dataclasses.dataclass(frozen=True)
class Part:
    """One step of a round: its ``symbol`` in the paper's notation, its ``value`` this round
    (a number or an array) and ``text``, the line that states it with the number."""

    symbol: str
    value: object
    text: str


@dataclasses.dataclass(frozen=True)
class OpenedRound:
    """A round taken apart: ``algorithm`` and round ``t``; ``parts`` in the paper's order;
    ``before`` (the occupied rows of ``B`` before the round), ``row`` (what entered it, None
    if nothing did) and ``after`` (the occupied rows after)."""

    algorithm: str
    t: int
    parts: tuple[Part, ...]
    before: np.ndarray
    row: np.ndarray | None
    after: np.ndarray

    def lines(self) -> list[str]:
        """The parts' texts, in order."""
        return [part.text for part in self.parts]

    def part(self, symbol: str) -> Part:
        """The part named ``symbol`` (``KeyError`` naming the symbols there are)."""
        for part in self.parts:
            if part.symbol == symbol:
                return part
        raise KeyError(f"no part {symbol!r} in this round; there are {[p.symbol for p in self.parts]}")


def _number(value: float) -> str:
    """A number as a lesson prints it: 4 significant digits, integers without a point."""
    return f"{value + 0.0:.4g}"  # -0.0 prints as 0


def _rows(k: int) -> str:
    return f"{k} row{'s' * (k != 1)}"


def _numbers(values: np.ndarray) -> str:
    return "[" + ", ".join(_number(float(v)) for v in values) + "]"


def open_sketch_round(sketch: FrequentDirections, x) -> OpenedRound:
    """Play ``sketch.update(x)`` and take the round apart (module docstring).

    ``sketch``: a :class:`~explorer.sketch.FrequentDirections` or
    :class:`~explorer.sketch.RobustFrequentDirections` (fast or not); ``x``: a row of length
    d. The sketch ends as ``update`` alone leaves it (a bad row is ``update``'s
    ``ValueError``, the sketch unchanged). Only the sketch's public state and its
    :class:`~explorer.hooks.ShrinkEvent` are read.
    """
    if not isinstance(sketch, FrequentDirections):
        raise ValueError(f"sketch must be a FrequentDirections or RobustFrequentDirections, "
                         f"got {type(sketch).__name__}")
    robust = isinstance(sketch, RobustFrequentDirections)
    name = "RFD" if robust else "FD"
    before, filled, alpha = sketch.rows.copy(), sketch.rank, sketch.alpha if robust else None
    heard: list = []
    hook = sketch.add_hook(heard.append)
    try:
        sketch.update(x)
    finally:
        hook.remove()
    t, after = sketch.n_seen, sketch.rows.copy()
    entered = sketch.rank > filled or bool(heard)
    row = np.asarray(x, dtype=float).copy() if entered else None
    intro = (f"round t = {t} of {name} (m = {sketch.m}): x_t enters B as row {filled + 1} of "
             f"{sketch.capacity}" if entered else
             f"round t = {t} of {name} (m = {sketch.m}): x_t = 0 adds nothing to B")
    parts = [Part("x_t", row, intro)]
    shrinks = [event for event in heard if isinstance(event, ShrinkEvent)]
    if not shrinks:
        if entered:
            parts.append(Part("room", sketch.capacity - sketch.rank,
                              f"no shrink: {_rows(sketch.capacity - sketch.rank)} free before "
                              f"the buffer is full"))
        return OpenedRound(name, t, tuple(parts), before, row, after)
    event = shrinks[-1]
    sigma, delta = np.asarray(event.sigma), float(event.delta)
    kept = sketch.rank
    shrunk = np.maximum(sigma ** 2 - delta, 0.0)
    shrunk[kept:] = 0.0  # exactly, as the sketch computed them (squaring sigma again leaves ~1e-16)
    parts += [
        Part("sigma", sigma, f"the buffer is full: its singular values sigma = {_numbers(sigma)}"),
        Part("delta", delta, f"delta = sigma_m^2 = {_number(math.sqrt(delta))}^2 = {_number(delta)}"
             if sigma.size >= sketch.m else f"delta = 0: fewer than m = {sketch.m} singular values"),
        Part("sigma^2 - delta", shrunk,
             f"sigma_i^2 - delta = {_numbers(shrunk[:sketch.m])}: {_rows(kept)} kept, "
             f"{_rows(filled + 1 - kept)} freed (now zero)"),
    ]
    if robust:
        parts.append(Part("alpha", sketch.alpha, f"alpha += delta / 2: {_number(alpha)} -> "
                                                 f"{_number(sketch.alpha)}"))
    return OpenedRound(name, t, tuple(parts), before, row, after)


def open_son_round(learner: SketchedOnlineNewton, x, y) -> OpenedRound:
    """Play ``learner.step(x, y)`` and take the sketched Newton round apart (module docstring).

    ``learner``: a :class:`~explorer.newton.SketchedOnlineNewton` with an FD or RFD sketch
    (RFD-SON, FD-SON); ``x``, ``y``: a row and its label. The learner ends as ``step`` alone
    leaves it; refusals are ``step``'s. Read: the step record (with its ``curvature_weight``
    ``mu + eta_t``) and the learner's public ``u`` and ``sketch.rows`` (``B`` before and
    after; ``row`` is the sketched row ``sqrt(mu + eta_t) g_t``).
    """
    if not isinstance(learner, SketchedOnlineNewton) or learner.sketch_kind not in ("rfd", "fd"):
        raise ValueError(f"learner must be RFD-SON or FD-SON (a SketchedOnlineNewton with "
                         f"sketch 'rfd' or 'fd'), got {learner!r}")
    name = "RFD-SON" if learner.sketch_kind == "rfd" else "FD-SON"
    u_before, before = learner.u.copy(), learner.sketch.rows.copy()
    record = learner.step(x, y)
    x = np.asarray(x, dtype=float)
    g = record.gradient_scale * x
    weight = record.curvature_weight
    parts = [
        Part("w_t^T x_t", record.prediction,
             f"round t = {record.t} of {name} (m = {learner.m}): predict w_t^T x_t = "
             f"{_number(record.prediction)} (w_t: u_t projected on the slab |w^T x_t| <= C)"),
        Part("loss", record.loss, f"suffer l(w_t^T x_t, y_t) = {_number(record.loss)} with "
                                  f"y_t = {_number(float(y))}"),
        Part("g_t", g, f"g_t = l' x_t with l' = {_number(record.gradient_scale)}: "
                       f"||g_t|| = {_number(float(np.linalg.norm(g)))}"),
        Part("row", math.sqrt(weight) * g,
             f"sketch the row sqrt(mu + eta_t) g_t, sqrt(mu + eta_t) = {_number(math.sqrt(weight))}"
             if record.gradient_scale else "g_t = 0: nothing enters the sketch, u_{t+1} = w_t"),
    ]
    if record.shrink is not None:
        shrink = record.shrink
        parts.append(Part("delta", shrink.delta,
                          f"the buffer filled and shrank: delta = sigma_m^2 = {_number(shrink.delta)}, "
                          f"{_rows(shrink.kept)} kept"))
    if record.alpha is not None:
        parts.append(Part("alpha", record.alpha, f"H_t = alpha I + B^T B with alpha = {_number(record.alpha)}"))
    step = learner.u - u_before
    parts.append(Part("u_{t+1}", learner.u.copy(),
                      f"Newton step u_(t+1) = w_t - H_t^-1 g_t: u moved by {_number(float(np.linalg.norm(step)))}"
                      f", kappa(H_t) = {_number(record.condition_number)}"))
    row = math.sqrt(weight) * g if record.gradient_scale else None
    return OpenedRound(name, record.t, tuple(parts), before, row, learner.sketch.rows.copy())


def _heard(observable, play) -> tuple[object, list]:
    """``play()``'s result and the events ``observable`` sent meanwhile (the hook is removed
    whatever happens)."""
    heard: list = []
    hook = observable.add_hook(heard.append)
    try:
        return play(), heard
    finally:
        hook.remove()


def _step_parts(record, x) -> list[Part]:
    """A labelled learner's first parts from its record: prediction, loss, gradient."""
    g = record.gradient_scale * np.asarray(x, dtype=float)
    return [Part("prediction", record.prediction, f"predict {_number(record.prediction)}"),
            Part("loss", record.loss, f"suffer the loss {_number(record.loss)}"),
            Part("g_t", g, f"g_t = l' x_t with l' = {_number(record.gradient_scale)}: "
                           f"||g_t|| = {_number(float(np.linalg.norm(g)))}")]


def open_adagrad_round(learner: AdaGrad, x, y) -> OpenedRound:
    """Play ``learner.step(x, y)`` and take the AdaGrad round apart: ``beta^T x_t``, the loss,
    ``g_t``, the sketch of the gradients and its shrink (``fd``, ``ffd``: ``delta``, rows
    kept), ``H_t``'s condition number and the step ``beta_{t+1} - beta_t``. ``before`` /
    ``after``: ``beta`` (one row); ``row``: ``g_t``. Read: the record and the public ``beta``."""
    if not isinstance(learner, AdaGrad):
        raise ValueError(f"learner must be an AdaGrad learner, got {type(learner).__name__}")
    before = learner.beta.copy()
    record = learner.step(x, y)
    parts = _step_parts(record, x)
    parts[0] = Part("prediction", record.prediction, f"round t = {record.t} of ADA-{learner.variant.upper()}: "
                                                     f"predict beta_t^T x_t = {_number(record.prediction)}")
    if record.shrink is not None:
        parts.append(Part("delta", record.shrink.delta,
                          f"S_t, the sketch of the gradients, filled and shrank: delta = sigma_tau^2 = "
                          f"{_number(record.shrink.delta)}, {_rows(record.shrink.kept)} kept"))
    if record.rank is not None:
        parts.append(Part("rank", record.rank, f"H_t = delta I + (S_t^T S_t)^(1/2): rank of S_t = {record.rank}, "
                                               f"kappa(H_t) = {_number(record.condition_number)}"))
    step = learner.beta - before
    parts.append(Part("beta_{t+1}", learner.beta.copy(), f"the step moved beta by {_number(float(np.linalg.norm(step)))}"))
    g = parts[2].value
    return OpenedRound(f"ADA-{learner.variant.upper()}", record.t, tuple(parts), before[None, :],
                       g if record.gradient_scale else None, learner.beta[None, :].copy())


def open_pca_round(learner: OnlineAdaptivePCA | AdaptiveBestSubset, x) -> OpenedRound:
    """Play ``learner.step(x)`` and take the round apart from its events: the decomposition
    of the capped weights into corners and the corner sampled, the loss and its expectation,
    the exponentiated step (``v``), fixed share (``w_hat``) and capping. ``before`` /
    ``after``: the weights (one row); ``row``: ``x`` (PCA) or the experts' losses."""
    if not isinstance(learner, (OnlineAdaptivePCA, AdaptiveBestSubset)):
        raise ValueError(f"learner must be OnlineAdaptivePCA or AdaptiveBestSubset, got {type(learner).__name__}")
    def weights() -> np.ndarray:  # W's eigenvalues, or the experts' weights
        return (learner.eigenvalues if isinstance(learner, OnlineAdaptivePCA) else learner.weights).copy()

    before = weights()
    record, heard = _heard(learner, lambda: learner.step(x))
    events = {type(event): event for event in heard}
    decompose, share, cap = events[DecomposeEvent], events[FixedShareEvent], events[CapEvent]
    name = type(learner).__name__
    parts = [
        Part("corners", decompose.probs, f"round t = {record.t} of {name}: the capped weights are a mixture of "
                                         f"{decompose.probs.size} corners; corner {decompose.chosen + 1} sampled "
                                         f"(probability {_number(float(decompose.probs[decompose.chosen]))})"),
        Part("loss", record.loss, f"suffer the loss {_number(record.loss)} (in expectation "
                                  f"{_number(record.expected_loss)})"),
        Part("v", share.v, ("exponentiated step: exp(ln W_t - eta x_t x_t^T) / tr, eigenvalues v"
                            if isinstance(learner, OnlineAdaptivePCA) else
                            "exponentiated step: v_i = w_i exp(-eta l_i) / sum_j w_j exp(-eta l_j)")
             + f", largest {_number(float(share.v.max()))}"),
        Part("w_hat", share.w_hat, f"fixed share: w_hat = (1 - alpha) v + alpha / n with alpha = "
                                   f"{_number(share.alpha)}: smallest weight {_number(float(share.w_hat.min()))}"),
        Part("cap", cap.n_capped, f"capping at 1 / (n - k): {cap.n_capped} weight"
                                  f"{'s' * (cap.n_capped != 1)} capped"),
    ]
    return OpenedRound(name, record.t, tuple(parts), before[None, :],
                       np.asarray(x, dtype=float).ravel(), weights()[None, :])


def open_sftrl_round(learner: SketchedFTRL, x, y) -> OpenedRound:
    """Play ``learner.step(x, y)`` and take S-FTRL's round apart: ``z_t = a_hat^T Theta_t
    a_hat``, the loss, ``q_t``, the sign split (``sqrt(|q_t|) a_hat`` into ``B+`` if
    ``q_t > 0``, ``B-`` if below), the shrink and the parts' ranks. ``before`` / ``after``:
    the rows of the part the row entered; ``row``: ``sqrt(|q_t|) a_hat`` (dense)."""
    if not isinstance(learner, SketchedFTRL):
        raise ValueError(f"learner must be SketchedFTRL, got {type(learner).__name__}")
    parts_before = (learner.sketch.positive.rows.copy(), learner.sketch.negative.rows.copy())
    record = learner.step(x, y)
    q = record.gradient_scale
    sign = "+" if q > 0 else "-"
    part = learner.sketch.positive if q > 0 else learner.sketch.negative
    parts = [
        Part("z_t", record.prediction, f"round t = {record.t} of S-FTRL (m = {learner.m}): predict "
                                       f"z_t = a_hat^T Theta_t a_hat = {_number(record.prediction)}"),
        Part("loss", record.loss, f"suffer the loss {_number(record.loss)}"),
        Part("q_t", q, f"q_t = phi'(z_t) = {_number(q)}: the gradient is q_t a_hat a_hat^T"),
        Part("split", sign, f"q_t {'>' if q > 0 else '<'} 0: sqrt(|q_t|) a_hat enters B{sign}" if q
             else "q_t = 0: nothing enters the sketch"),
    ]
    if record.shrink is not None:
        parts.append(Part("delta", record.shrink.delta, f"B{sign} filled and shrank: delta = "
                                                        f"{_number(record.shrink.delta)}, {_rows(record.shrink.kept)} kept"))
    parts.append(Part("ranks", record.part_ranks, f"rows in B+ and B-: {record.part_ranks[0]} and "
                                                  f"{record.part_ranks[1]}; Theta_(t+1) = -eta (B+^T B+ - B-^T B-)"))
    row = None
    if q:
        idx, val = as_fm_row(x, learner.d)  # a dense, (indices, values) or sparse row
        row = np.zeros(learner.d + 1)
        row[slice(None, learner.d) if idx is None else idx] = val
        row[learner.d] = 1.0
        row *= math.sqrt(abs(q))
    before = parts_before[0] if q >= 0 else parts_before[1]
    return OpenedRound("S-FTRL", record.t, tuple(parts), before, row, part.rows.copy())


OPENABLE = (FrequentDirections, AdaGrad, OnlineAdaptivePCA, AdaptiveBestSubset, SketchedFTRL)


def can_open(algorithm) -> bool:
    """Whether :func:`open_round` takes ``algorithm`` apart (RFD-SON and FD-SON among the
    sketched Newton learners)."""
    return isinstance(algorithm, OPENABLE) or (isinstance(algorithm, SketchedOnlineNewton)
                                                and algorithm.sketch_kind in ("rfd", "fd"))


def open_round(algorithm, x, y=None) -> OpenedRound:
    """The opened round of ``algorithm`` on ``x`` (and ``y``), by its type: a sketch, RFD-SON or
    FD-SON, an AdaGrad learner, online adaptive PCA or the best subset, S-FTRL."""
    if isinstance(algorithm, FrequentDirections):
        return open_sketch_round(algorithm, x)
    if isinstance(algorithm, SketchedOnlineNewton) and can_open(algorithm):
        return open_son_round(algorithm, x, y)
    if isinstance(algorithm, AdaGrad):
        return open_adagrad_round(algorithm, x, y)
    if isinstance(algorithm, (OnlineAdaptivePCA, AdaptiveBestSubset)):
        return open_pca_round(algorithm, x)
    if isinstance(algorithm, SketchedFTRL):
        return open_sftrl_round(algorithm, x, y)
    raise ValueError(f"no opened round for {type(algorithm).__name__}: FD, RFD, RFD-SON, FD-SON, "
                     f"AdaGrad, OnlineAdaptivePCA, AdaptiveBestSubset or SketchedFTRL")
