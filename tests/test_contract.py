"""One contract for every algorithm registered with ``@stateful`` (river's estimator checks
are the model): what the notebooks, the dashboard and :class:`explorer.race.Race` rely on.

For every class of ``tests/stateful_zoo.py`` (the zoo fails until a new class is added):
- its constructor's arguments are its ``get_params()``, and a bad value is refused with a
  ``ValueError`` naming the parameter;
- ``with_params`` changes only the ``HOT`` parameters, leaves the original bit-identical,
  and refuses the rest naming what may change;
- the same seed gives the same numbers; save (``np.savez``), load and continue is
  bit-identical to never stopping, and so is ``to_bytes``/``from_bytes`` where a class has it;
- learners: ``step(x, y)`` returns a :class:`~explorer.hooks.StepRecord` whose ``loss`` is
  what ``learn`` returns, with the same state after; hooks receive that record; a row with
  NaN is refused with the state bit-identical.
- a learner that diverges raises :class:`explorer.errors.Diverged` and is left as it was
  before the call; no module raises a bare ``FloatingPointError``.
"""

from __future__ import annotations

import ast
import io
import math
import pathlib

import numpy as np
import pytest

from explorer import FTRLFM, OGD, OGDFM, AdaGrad, Adam, SketchedFTRL, SketchedOnlineNewton
from explorer import FDSON, OCGFM, RFDSON, RPSON, AdaLR, FullON, OjaSON, RadaGrad
from explorer.errors import Diverged
from explorer.hooks import StepRecord
from explorer.params import Tunable
from explorer.state import load_state, registered_kinds, save_state
from stateful_zoo import DIVERGING, UNLABELLED, D, FEEDS, ROUNDS, covariance, fed, labels, rows
from state_checks import assert_same_state, snapshot

KINDS = registered_kinds()
LEARNERS = [name for name in KINDS if callable(getattr(FEEDS[name][0](), "learn", None))]
PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "explorer"


def test_the_zoo_has_every_registered_class():
    assert sorted(FEEDS) == KINDS


@pytest.mark.parametrize("name", KINDS)
def test_get_params_rebuilds_a_fresh_twin(name):
    obj = FEEDS[name][0]()
    assert isinstance(obj, Tunable)
    params = obj.get_params()
    assert list(params) == list(type(obj).param_names())
    assert_same_state(snapshot(type(obj)(**params)), snapshot(obj))


@pytest.mark.parametrize("name", KINDS)
def test_a_bad_constructor_value_is_refused_naming_the_parameter(name):
    obj = FEEDS[name][0]()
    for param, value in obj.get_params().items():
        if value is None:  # an optional seed: any value but None is checked below
            continue
        for bad in (math.nan, -math.inf, "not a value", object()):
            if isinstance(value, str) and isinstance(bad, float):
                continue  # a string setting (loss, variant) given a float: refused too, tested by str
            with pytest.raises(ValueError, match=param):
                type(obj)(**{**obj.get_params(), param: bad})


@pytest.mark.parametrize("name", KINDS)
def test_with_params_changes_only_hot_parameters(name):
    obj = fed(name)
    before = snapshot(obj)
    for param in obj.param_names():
        if param not in obj.HOT:
            with pytest.raises(ValueError, match=f"cannot change {param} mid-stream"):
                obj.with_params(**{param: obj.get_params()[param]})
    with pytest.raises(ValueError, match="has no parameter"):
        obj.with_params(no_such_parameter=1.0)
    for param in obj.HOT:
        value = obj.get_params()[param]
        if not isinstance(value, str):  # a number: doubled (or 0.5 from 0), and NaN refused
            new = value * 2 if value else 0.5
            changed = obj.with_params(**{param: new})
            assert changed is not obj and changed.get_params()[param] == new
            assert getattr(changed, "t", None) == getattr(obj, "t", None)
        with pytest.raises(ValueError, match=param):
            obj.with_params(**{param: math.nan if not isinstance(value, str) else "no such choice"})
        same = obj.with_params(**{param: value})
        assert_same_state(snapshot(same), before)
    assert_same_state(snapshot(obj), before)


def resumed_copies(obj) -> list:
    """``obj`` saved and loaded by every route it has: ``save_state``/``load_state`` and,
    for a mergeable sketch, ``to_bytes``/``from_bytes`` (docs/merging.md)."""
    buffer = io.BytesIO()
    save_state(obj, buffer)
    buffer.seek(0)
    copies = [load_state(buffer)]
    if callable(getattr(obj, "to_bytes", None)):
        copies.append(type(obj).from_bytes(obj.to_bytes()))
    return copies


@pytest.mark.parametrize("name", KINDS)
def test_same_seed_same_numbers_and_resume_is_bit_identical(name):
    assert_same_state(snapshot(fed(name, n=15)), snapshot(fed(name, n=15)))
    never = fed(name, n=10)
    feed = FEEDS[name][1]
    copies = resumed_copies(fed(name, n=10))
    feed(never, np.random.default_rng(9), 5)
    for resumed in copies:
        feed(resumed, np.random.default_rng(9), 5)
        assert_same_state(snapshot(resumed), snapshot(never))


def step_args(name, x, y) -> tuple:
    """The arguments of ``step`` for the round ``ROUNDS[name](obj, x, y)`` plays."""
    x = covariance(x) if name.startswith("VarianceMin") else x
    return (x,) if name in UNLABELLED else (x, y)


@pytest.mark.parametrize("name", LEARNERS)
def test_step_is_learn_with_its_record(name):
    a, b = fed(name), fed(name)
    events = []
    b.add_hook(events.append)
    rng = np.random.default_rng(11)
    for x, y in zip(rows(rng, 8) / 10, labels(rng, 8)):
        loss = ROUNDS[name](a, x, y)
        record = b.step(*step_args(name, x, y))
        assert isinstance(record, StepRecord)
        assert record.loss == loss
        assert [e for e in events if e.kind == "step"][-1] is record
    assert_same_state(snapshot(a), snapshot(b))


@pytest.mark.parametrize("name", LEARNERS)
def test_a_row_with_nan_is_refused_with_the_state_unchanged(name):
    obj = fed(name)
    before = snapshot(obj)
    x = np.full(D, np.nan)
    with pytest.raises(ValueError):
        ROUNDS[name](obj, x, 1.0)
    with pytest.raises(ValueError):
        obj.step(*step_args(name, x, 1.0))
    assert_same_state(snapshot(obj), before)


def test_no_learner_raises_a_bare_floating_point_error():
    """Divergence has one type: every ``raise`` of a FloatingPointError (or a subclass other
    than Diverged) in the package is a Diverged."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                call = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(call, ast.Name) and call.id in ("FloatingPointError", "OverflowError"):
                    offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert offenders == []
    assert issubclass(Diverged, ValueError) and issubclass(Diverged, FloatingPointError)




def test_every_labelled_learner_has_a_diverging_recipe():
    assert sorted(DIVERGING) == sorted(name for name in LEARNERS if name not in UNLABELLED)


@pytest.mark.parametrize("name", sorted(DIVERGING))
@pytest.mark.parametrize("call", ["learn", "step"])
def test_divergence_is_diverged_with_the_state_as_before_the_call(name, call):
    """The PCA family diverges only when its eigensolver fails: tests/test_pca.py checks
    that it is a Diverged too."""
    learner = DIVERGING[name]()
    rng = np.random.default_rng(0)
    with pytest.raises(Diverged) as raised:
        for _ in range(50):
            x = rng.standard_normal(D) * 1e100
            before = snapshot(learner)
            getattr(learner, call)(x, 1.0)
    assert_same_state(snapshot(learner), before)
    assert raised.value.t == learner.t + 1
