"""The online-learner protocol every family shares: one round, its refusal and its record.

An online learner plays rounds. ``learn(x, y)`` plays one and returns its loss;
``step(x, y)`` plays the same round and returns its :class:`~explorer.hooks.StepRecord`
(``step(x, y).loss == learn(x, y)``, same state after); hooks receive that very record.
A round that cannot be taken raises :class:`RoundRefused` inside the learner, having
stored nothing; the learner's public call turns it into :class:`~explorer.errors.Diverged`
(with the ``row`` of the call and the round ``t``) by :func:`refused`. A record's fields
are fixed per class: whether it is built for ``step`` or for a hook, it holds the same.

The families: :class:`~explorer.newton.SketchedOnlineNewton`,
:class:`~explorer.adagrad.linear.LinearLearner` (AdaGrad, OGD, Adam),
:class:`~explorer.fm.convex.ConvexFM` and :class:`~explorer.pca._base.RoundLearner`.
Each ends its round with :meth:`OnlineLearner._emit_step` (docs/architecture.md).

>>> error = refused("x", RoundRefused("the prediction overflows"), t=3)
>>> print(error, error.row, error.t)
x: the prediction overflows; nothing was updated 0 3
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .errors import Diverged
from .hooks import Observable, StepRecord

__all__ = ["RoundRefused", "refused", "OnlineLearner"]


class RoundRefused(ValueError):
    """This round cannot be taken; nothing of it was stored. The message says why; the
    learner raises it as :class:`~explorer.errors.Diverged` (:func:`refused`)."""


def refused(where: str, why: Any, *, row: int = 0, t: int, after: str = "") -> Diverged:
    """``Diverged(f"{where}: {why}; nothing was updated{after}", row=row, t=t)``: the
    error a learner raises for a refused round (``why``, usually a :class:`RoundRefused`)
    at ``where`` (the row of its call and the round, in the family's words)."""
    return Diverged(f"{where}: {why}; nothing was updated{after}", row=row, t=t)


class OnlineLearner(Observable):
    """An :class:`~explorer.hooks.Observable` whose rounds end in a step record.

    A round, once stored, ends with::

        if not (record or self._hooks):
            return loss, None                    # learn without listeners: no record
        return loss, self._emit_step(StepRecord(...))

    so the record is built only for ``step`` (``record``) or a listening hook, and is
    the same whoever asked for it.
    """

    def _emit_step(self, step: StepRecord,
                   events: Callable[[], Iterable[Any]] | None = None) -> StepRecord:
        """Send ``events()`` (the round's other events, in order) and then ``step`` to the
        hooks, if any listen; return ``step``."""
        if self._hooks:
            if events is not None:
                for event in events():
                    self._emit(event)
            self._emit(step)
        return step
