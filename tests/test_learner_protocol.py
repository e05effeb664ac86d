"""The online-learner protocol (explorer/learner.py), checked once for every learner of the
zoo (tests/stateful_zoo.py): one base class, one internal refusal, one record per round
whoever asked for it, and a refused round that is a Diverged naming its row and round with
the learner bit for bit as before the call."""

from __future__ import annotations

import ast
import dataclasses
import math
import pathlib

import numpy as np
import pytest

from explorer import FTRLFM, OGD, OGDFM, AdaGrad, Adam, SketchedFTRL, SketchedOnlineNewton
from explorer import FDSON, OCGFM, RFDSON, RPSON, AdaLR, FullON, OjaSON, RadaGrad
from explorer.errors import Diverged
from explorer.hooks import StepRecord
from explorer.learner import OnlineLearner, RoundRefused, refused
from state_checks import assert_same_state, snapshot
from stateful_zoo import BATCHES, DIVERGING, UNLABELLED, D, FEEDS, covariance, fed, labels, rows

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "explorer"
LEARNERS = [name for name in FEEDS if callable(getattr(FEEDS[name][0](), "step", None))]


def round_args(name, x, y) -> tuple:
    """The arguments of ``learn``/``step`` for a round on the row ``x`` with label ``y``."""
    if name == "AdaptiveBestSubset":
        return (np.abs(x),)
    x = covariance(x) if name.startswith("VarianceMin") else x
    return (x,) if name in UNLABELLED else (x, y)


def same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


def test_the_zoo_has_every_family():
    assert len(LEARNERS) == 20
    assert set(UNLABELLED) < set(LEARNERS)


@pytest.mark.parametrize("name", LEARNERS)
def test_every_learner_is_an_online_learner(name):
    assert isinstance(fed(name), OnlineLearner)


@pytest.mark.parametrize("name", LEARNERS)
def test_a_record_holds_the_same_fields_with_or_without_a_hook(name):
    """``step`` without hooks, ``step`` with a hook and the hook's record agree field for
    field; ``learn`` on a twin without hooks suffers the same loss and ends in the same state."""
    quiet, heard, learned = fed(name), fed(name), fed(name)
    events = []
    heard.add_hook(events.append)
    rng = np.random.default_rng(3)
    for x, y in zip(rows(rng, 12) / 10, labels(rng, 12)):
        args = round_args(name, x, y)
        loss = learned.learn(*args)
        alone, told = quiet.step(*args), heard.step(*args)
        assert [e for e in events if e.kind == "step"][-1] is told
        assert isinstance(alone, StepRecord) and alone.loss == loss
        for field in dataclasses.fields(StepRecord):
            a, b = getattr(alone, field.name), getattr(told, field.name)
            if field.name == "shrink":
                assert (a is None) == (b is None)
            else:
                assert same(a, b), (field.name, a, b)
    assert_same_state(snapshot(quiet), snapshot(heard))
    assert_same_state(snapshot(quiet), snapshot(learned))


@pytest.mark.parametrize("name", LEARNERS)
def test_a_record_reads_the_same_whenever_it_is_read(name):
    """A field computed when first read (:class:`explorer.hooks.Deferred`, SON's kappa) is
    the value at its round: records read at once and records read after 12 more rounds agree
    field for field, and a learner's ``condition_number()`` right after the round is the
    record's."""
    prompt, late = fed(name), fed(name)
    rng = np.random.default_rng(5)
    stream = [round_args(name, x, y) for x, y in zip(rows(rng, 12) / 10, labels(rng, 12))]
    read_at_once, kappas = [], []
    for args in stream:
        record = prompt.step(*args)
        read_at_once.append({f.name: getattr(record, f.name) for f in dataclasses.fields(StepRecord)})
        kappas.append(prompt.condition_number() if hasattr(prompt, "condition_number") else None)
    kept = [late.step(*args) for args in stream]
    for args in stream:
        late.step(*args)  # the learner moves on before the records are read
    for record, fields, kappa in zip(kept, read_at_once, kappas):
        for field, value in fields.items():
            if field != "shrink":
                assert same(getattr(record, field), value), (field, getattr(record, field), value)
        if kappa is not None and record.condition_number is not None:
            assert same(record.condition_number, kappa)




def test_every_labelled_learner_diverges_here():
    assert sorted(DIVERGING) == sorted(name for name in LEARNERS if name not in UNLABELLED)


@pytest.mark.parametrize("name", sorted(DIVERGING))
def test_a_refused_batch_is_diverged_naming_its_row_and_round(name):
    """The batch call (``learn_many``, ``progressive``) is undone whole; its Diverged says at
    which row and round; replaying the rows before it one by one, the next ``learn`` and
    ``step`` are refused at that same round, each leaving the learner as it was."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((50, D)) * 1e100, np.ones(50)
    learner = DIVERGING[name]()
    before = snapshot(learner)
    with pytest.raises(Diverged) as raised:
        BATCHES[name](learner, X, y)
    assert_same_state(snapshot(learner), before)
    row = raised.value.row
    assert raised.value.t == learner.t + row + 1 and f"{row}" in str(raised.value)
    for i in range(row):
        learner.learn(X[i], y[i])
    for call in ("learn", "step"):
        before = snapshot(learner)
        with pytest.raises(Diverged) as single:
            getattr(learner, call)(X[row], y[row])
        assert (single.value.row, single.value.t) == (0, raised.value.t)
        assert_same_state(snapshot(learner), before)


def test_a_refusal_is_one_type():
    """No learner family defines its own exception: a round refuses with RoundRefused, which
    the learner turns into Diverged through refused()."""
    families = [PACKAGE / "newton", PACKAGE / "adagrad", PACKAGE / "fm", PACKAGE / "pca"]
    own = [f"{path.relative_to(PACKAGE)}:{node.name}"
           for family in families for path in sorted(family.rglob("*.py"))
           for node in ast.walk(ast.parse(path.read_text()))
           if isinstance(node, ast.ClassDef)
           and any(isinstance(base, ast.Name) and base.id.endswith(("Error", "Exception", "Refused", "Failed"))
                   for base in node.bases)]
    assert own == []
    assert issubclass(RoundRefused, ValueError) and not issubclass(RoundRefused, Diverged)
    error = refused("X row 2", RoundRefused("why"), row=2, t=7, after=" (the call is undone)")
    assert (str(error), error.row, error.t) == ("X row 2: why; nothing was updated (the call is undone)", 2, 7)


def test_one_round_skeleton():
    """``learn``, ``step``, ``learn_many`` and ``progressive`` are written once, in
    OnlineLearner: no class of any learner of the zoo defines its own (a family writes its
    round, not the loop)."""
    own = sorted(f"{cls.__name__}.{method}" for name in LEARNERS
                 for cls in type(fed(name)).__mro__ if cls is not OnlineLearner
                 for method in ("learn", "step", "learn_many", "progressive") if method in vars(cls))
    assert own == []


@pytest.mark.parametrize("name", LEARNERS)
def test_learn_many_is_a_loop_of_learn(name):
    """One batch entry for every family, with one return type: ``learn_many`` gives the
    losses of ``learn`` row by row, bit for bit, and ends in the same state; with
    ``return_predictions`` also each prediction (``last_prediction`` after each ``learn``),
    or, for a learner that makes none, a ValueError that changes nothing."""
    rng = np.random.default_rng(3)
    inputs = [round_args(name, x, y) for x, y in zip(rows(rng, 12), labels(rng, 12))]
    batch, looped = fed(name), fed(name)
    X = np.array([args[0] for args in inputs])
    y = None if name in UNLABELLED else np.array([args[1] for args in inputs])
    expected, made = [], []
    for args in inputs:
        expected.append(looped.learn(*args))
        made.append(getattr(looped, "last_prediction", None))
    if not batch.PREDICTS:
        before = snapshot(batch)
        with pytest.raises(ValueError, match="makes no scalar prediction"):
            batch.learn_many(X, y, return_predictions=True)
        assert_same_state(snapshot(batch), before)
        losses = batch.learn_many(X, y)
    else:
        losses, predictions = batch.learn_many(X, y, return_predictions=True)
        assert predictions.tolist() == made
    assert isinstance(losses, np.ndarray) and losses.tolist() == expected
    assert_same_state(snapshot(batch), snapshot(looped))


@pytest.mark.parametrize("name", LEARNERS)
def test_progressive_is_learn_many_with_every_round_kept(name):
    """``progressive`` plays ``learn_many``'s rounds (same losses and predictions, bit for
    bit, same state after) and keeps, per round, ``t`` and the class's ``ROUND_OUTPUTS``,
    each equal to the field of that round's ``step`` record, and the loop's clock."""
    rng = np.random.default_rng(4)
    inputs = [round_args(name, x, y) for x, y in zip(rows(rng, 12), labels(rng, 12))]
    kept, batch, stepped = fed(name), fed(name), fed(name)
    X = np.array([args[0] for args in inputs])
    y = None if name in UNLABELLED else np.array([args[1] for args in inputs])
    t0 = kept.t
    run = kept.progressive(X, y)
    if batch.PREDICTS:
        losses, predictions = batch.learn_many(X, y, return_predictions=True)
        assert run["prediction"].tolist() == predictions.tolist()
    else:
        losses = batch.learn_many(X, y)
        assert "prediction" not in run.names
    assert run["loss"].tolist() == losses.tolist()
    assert run["t"].tolist() == list(range(t0 + 1, t0 + 13))
    assert run.names[-1] == "seconds" and np.all(np.diff(run["seconds"]) >= 0) and run["seconds"][0] >= 0
    records = [stepped.step(*args) for args in inputs]
    for column in type(kept).ROUND_OUTPUTS:
        assert run[column].tolist() == [getattr(record, column) for record in records]
    assert_same_state(snapshot(kept), snapshot(batch))
