"""The learner protocol's promises on bad input, checked one way for every family.

Every online learner of the package (FD and its sketches, the sketched Newton step, AdaGrad
and its kin, the FM learners, the adaptive PCA family) makes the same promise about one call
(a round ``learn``, a batch ``learn_many``/``extend``/``progressive``, an in-place
``load_state_dict``): it is either

- **refused**: a ``ValueError`` and every entry of ``state_dict()`` bit-identical to before
  (:func:`learned_or_refused_cleanly`, :func:`refused_cleanly`), after which the learner
  plays exactly like a twin loaded from its earlier state, a twin that never saw the bad input
  (:func:`continues_like_a_twin`); or
- **accepted**: the state is finite (:func:`assert_finite_state`) and ordinary rounds go on
  being learned or refused cleanly (:func:`keeps_working`).

How a learner plays ordinary rounds differs by family (``learn(x, y)``, ``learn(x)`` with a
row, a loss vector or a covariance, ``update(x)``), so the checks take it as an argument:
``play(learner) -> list``, the outcomes of a fixed sequence of ordinary rounds (it must draw
its input afresh on every call, from a fixed seed), or ``calls``, a list of zero-argument
callables. :func:`outcomes` turns calls into a comparable list (a loss, or a refusal's message).
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np
import pytest

from explorer.state import nonfinite_entries
from state_checks import assert_same_state, snapshot

#: numpy's errstate that lets a call overflow quietly (for learners that refuse the overflow)
QUIET = dict(over="ignore", invalid="ignore", divide="ignore")


def assert_finite_state(learner) -> None:
    """Every number of ``learner.state_dict()`` is finite (no NaN, no inf anywhere)."""
    bad = nonfinite_entries(learner.state_dict())
    assert bad == [], f"non-finite entries in the state: {bad}"


def outcomes(calls: Iterable[Callable], *, quiet: bool = False) -> list:
    """What each call does, in order: its result as a list or number, or, if it raised a
    ``ValueError``, the refusal's message (a learner that went wild on legal input may refuse
    ordinary rounds; refusing them alike is then part of running alike). With ``quiet``, under
    :data:`QUIET`."""
    done = []
    for call in calls:
        try:
            with np.errstate(**(QUIET if quiet else {})):
                done.append(np.asarray(call()).tolist())
        except ValueError as error:
            done.append(str(error))
    return done


def runs_alike(learner, twin, play: Callable) -> None:
    """``play`` gives the same outcomes on both, and afterwards their states are bit-identical."""
    assert play(learner) == play(twin), "the learner and its twin played differently"
    assert_same_state(snapshot(learner), snapshot(twin))


def continues_like_a_twin(learner, before: dict, play: Callable, cls=None) -> None:
    """After a refused call, ``learner`` runs exactly like a twin loaded (by
    ``cls.from_state_dict``, by default the learner's own class) from ``before``, its state
    before the call: same outcomes of ``play``, then bit-identical states. This is what
    "nothing was updated" means beyond the state dict: no hidden attribute (a cache, a
    generator, a memo) kept a trace of the refused input."""
    twin = (cls or type(learner)).from_state_dict(before)
    runs_alike(learner, twin, play)


def learned_or_refused_cleanly(learner, call: Callable, *, quiet: bool = False):
    """Run ``call()`` on ``learner``: its result if accepted; if refused (``ValueError``), the
    error, after checking that the state is bit-identical to before the call (all or nothing)."""
    before = snapshot(learner)
    try:
        with np.errstate(**(QUIET if quiet else {})):
            return call()
    except ValueError as error:
        assert_same_state(before, snapshot(learner))
        return error


def refused_cleanly(learner, call: Callable, match: str | None = None, *, play: Callable | None = None,
                    cls=None, quiet: bool = False) -> ValueError:
    """``call()`` must be refused: a ``ValueError`` (matching ``match``) with the state
    bit-identical to before; with ``play``, the learner then continues like a twin of its
    earlier state (:func:`continues_like_a_twin`). Returns the error."""
    before = snapshot(learner)
    with pytest.raises(ValueError, match=match) as refusal, np.errstate(**(QUIET if quiet else {})):
        call()
    assert_same_state(before, snapshot(learner))
    if play is not None:
        continues_like_a_twin(learner, before, play, cls)
    return refusal.value


def keeps_working(learner, calls: Iterable[Callable], check: Callable = assert_finite_state, *,
                  quiet: bool = False) -> None:
    """``check(learner)`` holds (by default: a finite state), and after each of ``calls`` (ordinary
    rounds) it still holds; each call is learned or refused with the state bit-identical (a legal
    but wild setting, eta = 1e308, may refuse ordinary rounds)."""
    check(learner)
    for call in calls:
        learned_or_refused_cleanly(learner, call, quiet=quiet)
        check(learner)


def accepted_or_refused_cleanly(learner, call: Callable, *, play: Callable | None = None,
                                check: Callable = assert_finite_state, cls=None, quiet: bool = False):
    """The whole promise for one call: refused with the state bit-identical (and, with ``play``,
    then running like a twin of the earlier state), or accepted with ``check(learner)`` holding
    (by default: a finite state). Returns the call's result, or the ``ValueError`` if refused."""
    before = snapshot(learner)
    result = learned_or_refused_cleanly(learner, call, quiet=quiet)
    if isinstance(result, ValueError):
        if play is not None:
            continues_like_a_twin(learner, before, play, cls)
    else:
        check(learner)
    return result
