"""The online-learner protocol every family shares: one round, its refusal and its record.

An online learner plays rounds. ``learn(x, y)`` plays one and returns its loss;
``step(x, y)`` plays the same round and returns its :class:`~explorer.hooks.StepRecord`
(``step(x, y).loss == learn(x, y)``, same state after); hooks receive that very record;
``learn_many(X, y)`` plays the rows of ``X`` in order and returns their losses (with
``return_predictions`` also each prediction they were suffered on); ``progressive(X, y)``
plays them the same and keeps every round's numbers as a :class:`~explorer.history.History`.
Those four are written once, in :class:`OnlineLearner`; a family writes its round:

- ``_check_round(x, y)`` / ``_check_rounds(X, y)``: the arguments of its round(s), checked
  (a ``ValueError`` names what is wrong before anything runs);
- ``_round(*arguments, record)``: the paper's update, returning ``(loss, prediction,
  StepRecord or None, ...)``; it raises :class:`RoundRefused` having stored nothing;
- ``_refused(refusal, row)``: that refusal as :class:`~explorer.errors.Diverged` in the
  family's words (by :func:`refused`, with the ``row`` of the call and the round ``t``).

A record's fields are fixed per class: whether it is built for ``step`` or for a hook, it
holds the same. The families: :class:`~explorer.newton.SketchedOnlineNewton`,
:class:`~explorer.adagrad.linear.LinearLearner` (AdaGrad, OGD, Adam),
:class:`~explorer.fm.convex.ConvexFM` and :class:`~explorer.pca._base.RoundLearner`.

>>> error = refused("x", RoundRefused("the prediction overflows"), t=3)
>>> print(error, error.row, error.t)
x: the prediction overflows; nothing was updated 0 3
"""

from __future__ import annotations

import time
from typing import Any, Callable, ClassVar, Iterable

import numpy as np

from .errors import Diverged
from .hooks import Observable, StepRecord
from .history import History
from .state import all_or_nothing

__all__ = ["RoundRefused", "refused", "OnlineLearner", "Rounds"]


class RoundRefused(ValueError):
    """This round cannot be taken; nothing of it was stored. The message says why; the
    learner raises it as :class:`~explorer.errors.Diverged` (:func:`refused`)."""


def refused(where: str, why: Any, *, row: int = 0, t: int, after: str = "") -> Diverged:
    """``Diverged(f"{where}: {why}; nothing was updated{after}", row=row, t=t)``: the
    error a learner raises for a refused round (``why``, usually a :class:`RoundRefused`)
    at ``where`` (the row of its call and the round, in the family's words)."""
    return Diverged(f"{where}: {why}; nothing was updated{after}", row=row, t=t)


class Rounds(list):
    """A batch's checked rounds in order: ``rounds[i]`` is the tuple of arguments of round
    ``i``'s ``_round``; ``arrays``, what a compiled path reads instead (the family's own).

    >>> rounds = Rounds(zip([[1.0], [2.0]], [1.0, -1.0]))
    >>> len(rounds), rounds[1]
    (2, ([2.0], -1.0))
    """

    def __init__(self, rounds: Iterable[tuple] = (), arrays: tuple = ()):
        super().__init__(rounds)
        self.arrays = arrays


class OnlineLearner(Observable):
    """The round protocol: :meth:`learn`, :meth:`step` and :meth:`learn_many` on top of a
    family's ``_check_round``, ``_check_rounds``, ``_round`` and ``_refused``.

    A round, once stored, ends with::

        if not (record or self._hooks):
            return loss, prediction, None        # learn without listeners: no record
        return loss, prediction, self._emit_step(StepRecord(...))

    so the record is built only for ``step`` (``record``) or a listening hook, and is the
    same whoever asked for it. ``last_prediction``: the prediction of the last round played
    (learners that make one: ``PREDICTS``).

    All or nothing: a refused ``learn`` or ``step`` stores nothing; a refused
    ``learn_many`` is undone whole (``_transaction``: one snapshot per call), its
    :class:`~explorer.errors.Diverged` naming the row; records already sent stay sent.
    """

    PREDICTS: ClassVar[bool] = True
    """Whether a round makes a scalar prediction (``learn_many(return_predictions=True)``)."""

    last_prediction: float = 0.0

    ROUND_OUTPUTS: ClassVar[dict[str, int]] = {}
    """What :meth:`progressive` keeps of each round besides its loss and prediction: column
    (a :class:`~explorer.hooks.StepRecord` field) -> position in ``_round``'s result."""

    REFUSALS: ClassVar[tuple[type[BaseException], ...]] = (RoundRefused,)
    """What a round raises having stored nothing, turned into ``Diverged`` by ``_refused``."""

    def learn(self, x, y=None) -> float:
        """Play one round on ``(x, y)``: suffer its loss (returned), then update.
        ``step(x, y).loss``, without building the record unless a hook listens."""
        return self._play(self._check_round(x, y), False)[0]

    def step(self, x, y=None) -> StepRecord:
        """:meth:`learn`'s round, returning its :class:`~explorer.hooks.StepRecord` (hooks
        receive this same record)."""
        return self._play(self._check_round(x, y), True)[2]

    def learn_many(self, X, y=None, *, return_predictions: bool = False):
        """:meth:`learn` on each row of ``X`` (with its label in ``y``) in order: the losses,
        with ``return_predictions`` also each prediction they were suffered on.

        Every row and label is checked first; if a round is then refused, the whole call
        is undone and the :class:`~explorer.errors.Diverged` names its ``row`` and ``t``.
        """
        if return_predictions and not self.PREDICTS:
            raise ValueError(f"{type(self).__name__} makes no scalar prediction: "
                             f"return_predictions must be False")
        rounds = self._check_rounds(X, y)
        losses, predictions = np.empty(len(rounds)), np.empty(len(rounds))
        self._play_rounds(rounds, losses, predictions)
        return (losses, predictions) if return_predictions else losses

    def progressive(self, X, y=None) -> History:
        """:meth:`learn_many`'s rounds, each one's numbers kept: a
        :class:`~explorer.history.History`, one row per round, its columns named as
        :class:`~explorer.hooks.StepRecord`'s fields: ``t`` (this learner's round),
        ``prediction`` (learners that make one), ``loss``, the class's
        :attr:`ROUND_OUTPUTS`, and ``seconds``, the wall time from the loop's start to the
        end of that round (``["seconds"][-1]`` is the whole loop's; rounds a compiled path
        played in one block share the block's end). All or nothing, as :meth:`learn_many`;
        no record is built (no hook is called).

        >>> from explorer import OGD
        >>> run = OGD(2, eta=0.5).progressive([[1.0, 0.0], [1.0, 0.0]], [1.0, 1.0])
        >>> run["t"].tolist(), run["prediction"].tolist(), run["loss"].tolist()
        ([1, 2], [0.0, 0.5], [1.0, 0.5])
        """
        rounds = self._check_rounds(X, y)
        n, t0, outputs = len(rounds), self.t, self.ROUND_OUTPUTS
        losses, predictions, clock = np.empty(n), np.empty(n), np.empty(n)
        kept = {name: np.empty(n) for name in outputs}
        now = time.perf_counter

        done = [0]  # rows whose clock is set

        def keep(i: int, result: tuple | None) -> None:
            """Round i's outputs from its result; None: rows up to i were played by a
            compiled path, which wrote their outputs into ``kept``."""
            if result is not None:
                for name, position in outputs.items():
                    kept[name][i] = result[position]  # a Deferred value is computed here
            clock[done[0]:i + 1] = now()
            done[0] = i + 1

        def history() -> History:
            made = {"prediction": predictions} if self.PREDICTS else {}
            return History({"t": np.arange(t0 + 1, t0 + n + 1), **made, "loss": losses, **kept,
                            "seconds": clock - start})

        start = now()
        return self._play_rounds(rounds, losses, predictions, keep, finish=history, outputs=kept)

    # -- what the protocol runs ---------------------------------------------------------
    def _play(self, arguments: tuple, record: bool) -> tuple:
        """One checked round: ``_round``'s tuple, a refusal raised as ``Diverged``."""
        done = None if record else self._fast_round(arguments)
        if done is None:
            try:
                with self._round_guard():
                    done = self._round(*arguments, record)
            except self.REFUSALS as refusal:
                raise self._refused(refusal, None) from None
        if self.PREDICTS:
            self.last_prediction = done[1]
        return done

    def _play_rounds(self, rounds: Rounds, losses: np.ndarray, predictions: np.ndarray,
                     keep: Callable[[int, tuple | None], None] | None = None,
                     finish: Callable[[], Any] | None = None, outputs: dict[str, np.ndarray] | None = None):
        """Play checked ``rounds`` in order into ``losses`` and ``predictions``, all or
        nothing; returns ``finish()`` (the call's result, built before the rounds are
        committed: an interrupt there undoes them too). ``keep(i, result)`` after each
        round ``_round`` played; ``keep(j, None)`` after a block of rows up to ``j`` that the
        compiled path played, having written their ``outputs`` (:attr:`ROUND_OUTPUTS` columns)."""
        n, i = len(rounds), 0
        if not n:
            return finish() if finish is not None else None
        play = self._round
        with self._transaction(), self._quiet():
            while i < n:
                fast = self._fast_rounds(rounds, i, losses, predictions, outputs)
                if fast > i:
                    if keep is not None:
                        keep(fast - 1, None)
                    i = fast
                    continue
                try:
                    result = play(*rounds[i], False)
                except self.REFUSALS as refusal:
                    raise self._refused(refusal, i) from None
                losses[i], predictions[i] = result[0], result[1]
                if keep is not None:
                    keep(i, result)
                i += 1
            done = finish() if finish is not None else None
        if self.PREDICTS:
            self.last_prediction = float(predictions[-1])
        return done

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

    # -- what a family writes (defaults) -------------------------------------------------
    def _check_round(self, x, y) -> tuple:
        raise NotImplementedError

    def _check_rounds(self, X, y) -> Rounds:
        raise NotImplementedError

    def _round(self, *arguments) -> tuple:
        raise NotImplementedError

    def _refused(self, refusal: RoundRefused, row: int | None) -> Diverged:
        """The refusal of round ``row`` of a ``learn_many`` call (None: ``learn``/``step``)."""
        where = "x" if row is None else f"X row {row}"
        return refused(where, refusal, row=row or 0, t=self.t + 1)

    def _quiet(self):
        """Around rounds: numpy's overflow warnings off (a round checks and refuses)."""
        return np.errstate(over="ignore", invalid="ignore", divide="ignore")

    def _transaction(self):
        """Around a ``learn_many`` call: put the learner back if it raises."""
        return all_or_nothing(self)

    def _round_guard(self):
        """Around one ``learn``/``step`` round: ``_quiet`` (a family may add a snapshot of
        what the round resolves, or leave warnings on when its round avoids them itself)."""
        return self._quiet()

    def _fast_round(self, arguments: tuple) -> tuple | None:
        """``learn``'s round by a compiled path, or None to take ``_round``."""
        return None

    def _fast_rounds(self, rounds: Rounds, start: int, losses: np.ndarray, predictions: np.ndarray,
                     outputs: dict[str, np.ndarray] | None = None) -> int:
        """Rounds ``start, ...`` by a compiled path, writing each row's ``outputs`` columns
        too (:attr:`ROUND_OUTPUTS`; the path plays nothing when it cannot); the first row
        left to ``_round``."""
        return start
