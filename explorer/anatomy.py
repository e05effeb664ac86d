r"""Open one update: a round of FD, RFD or RFD-SON taken apart into the paper's steps, each
with this round's numbers.

:func:`open_sketch_round` plays ``sketch.update(x)`` and reports it from the round's record
(the sketch's :class:`~explorer.hooks.ShrinkEvent`) and the sketch's public state before and
after: the row entering the buffer ``B``; when the buffer fills, its singular values
``sigma_1 >= ... >= sigma_l``, ``delta = sigma_m^2``, every ``sigma_i^2 - delta``, the rows
that become zero (freed), and for RFD ``alpha += delta / 2``. :func:`open_son_round` plays
``learner.step(x, y)`` and reports RFD-SON's round (Luo et al. 2017, Algorithm 5) from its
:class:`~explorer.hooks.StepRecord`: the prediction ``w_t^T x_t``, the loss, the gradient
``g_t = l' x_t``, the sketched row ``sqrt(mu + eta_t) g_t``, the shrink and ``alpha``, and
the Newton step ``u_{t+1} = w_t - H_t^{-1} g_t``. Both return an :class:`OpenedRound`,
whose :meth:`~OpenedRound.lines` a lesson prints and whose ``before`` / ``row`` / ``after``
:func:`explorer.plots.anatomy.round_heatmaps` draws.

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

References: Liberty (KDD 2013), *Simple and deterministic matrix sketching*; Luo, Chen,
Zhang, Li (2017), *Robust frequent directions with application in online learning*,
Algorithms 1-5.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .hooks import ShrinkEvent
from .newton import SketchedOnlineNewton
from .sketch import FrequentDirections, RobustFrequentDirections

__all__ = ["Part", "OpenedRound", "open_sketch_round", "open_son_round"]


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
    return f"{value:.4g}"


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
    shrunk = np.maximum(sigma ** 2 - delta, 0.0)
    kept = sketch.rank
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
    leaves it; refusals are ``step``'s. Read: the step record and the learner's public
    ``u``, ``curvature_weight`` and ``sketch.rows`` (``B`` before and after; ``row`` is the
    sketched row ``sqrt(mu + eta_t) g_t``).
    """
    if not isinstance(learner, SketchedOnlineNewton) or learner.sketch_kind not in ("rfd", "fd"):
        raise ValueError(f"learner must be RFD-SON or FD-SON (a SketchedOnlineNewton with "
                         f"sketch 'rfd' or 'fd'), got {learner!r}")
    name = "RFD-SON" if learner.sketch_kind == "rfd" else "FD-SON"
    u_before, before = learner.u.copy(), learner.sketch.rows.copy()
    record = learner.step(x, y)
    x = np.asarray(x, dtype=float)
    g = record.gradient_scale * x
    weight = learner.curvature_weight(record.t)
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
