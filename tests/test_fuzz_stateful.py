"""Fuzz every class registered with ``@stateful`` (issue 13): bad input never half-applies.

Generic over the registry (tests/stateful_zoo.py has one ordinary instance of each class),
four categories of attack, each run by hypothesis under a time limit (a hang fails):

- **rounds**: one call (``update``/``learn``) with an extreme or broken row or label:
  NaN, inf, 1e+-300, subnormals, a whole row scaled by 10^-320 .. 10^320, wrong shapes,
  strings, complex numbers, zero rows, labels out of range;
- **batches**: the class's batch calls (``extend``, ``learn_many``, ``progressive``) with one
  such row among ordinary ones (all or nothing);
- **states**: a tampered state dict (NaN, inf, huge or negative values, a missing key, a
  wrong shape, a string or a bool in place of a number, another class's kind), loaded both
  with ``from_state_dict`` and in place with ``load_state_dict``;
- **constructors**: one argument replaced by junk (0, -1, 1e+-300, NaN, inf, True, a
  string, None, a complex number, a list).

Every outcome is either a refusal, a ``ValueError`` with the state bit-identical after
which the object continues exactly like a twin that never saw the bad input, or an
acceptance, after which the state is finite, the object keeps working on ordinary data,
and for Frequent Directions the paper's guarantee holds (``A^T A - B^T B`` PSD, spectral
error <= ``delta_total``). Any other exception fails.

``FUZZ_REPORT=path.json`` writes the tally per category (tried, refused, accepted with a
finite state, state changed on a refusal, other exceptions) for the closing note.
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.state import registered_kinds
from learner_checks import continues_like_a_twin, keeps_working, outcomes
from stateful_zoo import BATCHES, D, FEEDS, KEPT_BATCHES, ROUNDS, fed, labels, rows
from state_checks import same_state, snapshot, tally_report, tamper

# The library must not leak numpy's overflow/invalid warnings to a student either.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

KINDS = sorted(FEEDS)
TALLY: dict[str, Counter] = defaultdict(Counter)
_report = tally_report(TALLY, "FUZZ_REPORT")

SPECIAL = [np.nan, np.inf, -np.inf, 1e308, 1e300, 1e200, 1e155, 1e150, 1e-150, 1e-300,
           5e-324, 0.0, -1e300]
LABELS = [1.0, -1.0, 0.0, 0.5, 3.0, np.nan, np.inf, -np.inf, 1e200, -1e300, 1e-300, "1",
          1 + 1j, None]


def test_every_stateful_class_is_fuzzed():
    assert sorted(FEEDS) == registered_kinds()


# -- what every outcome must satisfy ----------------------------------------------------------

def ordinary_rounds(obj, name, seed: int, n: int) -> list:
    """``n`` ordinary rounds of ``obj`` (one call each), from a seeded stream."""
    rng = np.random.default_rng(seed)
    return [functools.partial(ROUNDS[name], obj, x, y) for x, y in zip(rows(rng, n), labels(rng, n))]


def keeps_working_as(obj, name) -> None:
    """``obj`` (a ``name`` from ``FEEDS``) keeps a finite state through three ordinary rounds,
    each learned or refused with the state bit-identical."""
    keeps_working(obj, ordinary_rounds(obj, name, seed=12, n=3))


def playing(name):
    """What :func:`learner_checks.continues_like_a_twin` plays on an object and its twin."""
    return lambda obj: outcomes(ordinary_rounds(obj, name, seed=11, n=5))


def check_fd_guarantee(sketch, A: np.ndarray) -> None:
    """FD's two facts (docs/algorithms.md section 1), computed on ``A`` and ``B`` scaled by
    the same power of two so neither over- nor underflows: ``A^T A - B^T B`` is PSD and its
    largest eigenvalue is at most ``delta_total``."""
    scale = 2.0 ** -np.frexp(np.abs(A).max())[1] if A.any() else 1.0
    As, Bs = A * scale, sketch.rows * scale
    error = np.linalg.eigvalsh(As.T @ As - Bs.T @ Bs)
    mass = float(np.sum(As ** 2))
    assert error[0] >= -1e-9 * mass
    assert error[-1] <= sketch.delta_total * scale * scale + 1e-9 * mass


def attempt(category: str, name: str, obj, call, rows_added=None) -> None:
    """Run ``call()`` on ``obj``. A refusal must leave the state as it was; after an
    acceptance, a Frequent Directions sketch must keep its guarantee for the warm-up rows
    plus ``rows_added()``, and every object must keep working."""
    before = snapshot(obj)
    TALLY[category]["tried"] += 1
    try:
        call()
    except ValueError:
        TALLY[category]["refused"] += 1
        if not same_state(before, snapshot(obj)):
            TALLY[category]["state changed on refusal"] += 1
            pytest.fail(f"{name}: a refused call changed the state")
        continues_like_a_twin(obj, before, playing(name))
        return
    except Exception as error:  # the point of the suite: nothing but ValueError
        TALLY[category]["other exception"] += 1
        pytest.fail(f"{name}: {type(error).__name__}: {error}")
    TALLY[category]["accepted, finite state"] += 1
    if rows_added is not None and name in ("FrequentDirections", "RobustFrequentDirections"):
        check_fd_guarantee(obj, np.vstack([rows(np.random.default_rng(5), 20), rows_added()]))
    keeps_working_as(obj, name)


# -- extreme and broken rows -----------------------------------------------------------------

@st.composite
def broken_rows(draw):
    """A row (and label) an ordinary one turned extreme or broken in one way."""
    x = rows(np.random.default_rng(draw(st.integers(0, 2 ** 16))), 1)[0]
    how = draw(st.sampled_from(["entry", "scale", "scale", "shape", "text", "complex", "zero", "label"]))
    label = draw(st.sampled_from([1.0, -1.0])) if how != "label" else draw(st.sampled_from(LABELS))
    if how == "entry":
        x[draw(st.integers(0, D - 1))] = draw(st.sampled_from(SPECIAL))
    elif how == "scale":
        with np.errstate(over="ignore", under="ignore"):
            x = x * np.power(10.0, draw(st.integers(-320, 320)))
    elif how == "shape":
        x = draw(st.sampled_from([x[:-1], np.append(x, 1.0), x[None, :], x.reshape(2, -1)]))
    elif how == "text":
        x = [repr(float(v)) for v in x]
    elif how == "complex":
        x = x + 1j
    elif how == "zero":
        x = np.zeros(D)
    return how, x, label


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", KINDS)
@settings(max_examples=80)
@given(case=broken_rows())
def test_a_round_on_bad_input_is_refused_cleanly_or_kept_finite(name, case):
    how, x, label = case
    obj = fed(name)
    attempt("rounds", name, obj, lambda: ROUNDS[name](obj, x, label),
                rows_added=lambda: np.asarray(x, dtype=float))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name, batches", [(name, BATCHES) for name in sorted(BATCHES)]
                         + [(name, KEPT_BATCHES) for name in sorted(KEPT_BATCHES)],
                         ids=[*sorted(BATCHES), *(f"{name}-progressive" for name in sorted(KEPT_BATCHES))])
@settings(max_examples=60)
@given(case=broken_rows(), position=st.integers(0, 3))
def test_a_batch_with_one_bad_row_is_all_or_nothing(name, batches, case, position):
    how, x, label = case
    rng = np.random.default_rng(position)
    X = list(rows(rng, 3))
    y = list(labels(rng, 3))
    X.insert(position, x)
    y.insert(position, label)
    obj = fed(name)
    try:
        X = np.array(X, dtype=float) if how not in ("text", "complex") else np.array(X)
    except ValueError:
        pass  # ragged on purpose (a wrong-length row): the call gets the list
    attempt("batches", name, obj, lambda: batches[name](obj, X, y), rows_added=lambda: X)


# -- tampered state files ----------------------------------------------------------------------

@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", KINDS)
@settings(max_examples=80)
@given(data=st.data())
def test_a_tampered_state_is_refused_or_loads_a_working_object(name, data):
    original = fed(name).state_dict()
    key = data.draw(st.sampled_from(sorted(k for k in original if k != "kind")))
    how = data.draw(st.sampled_from(["nan", "inf", "huge", "negative", "drop", "shape", "string",
                                     "bool", "kind"]))
    state = tamper(original, key, how,
                   other_kind=next(kind for kind in registered_kinds() if kind != original["kind"]))
    TALLY["states"]["tried"] += 1
    cls = type(fed(name, n=0))
    try:
        loaded = cls.from_state_dict(state)
    except ValueError:
        TALLY["states"]["refused"] += 1
    except Exception as error:
        TALLY["states"]["other exception"] += 1
        pytest.fail(f"{name}.from_state_dict, {key!r} tampered ({how}): {type(error).__name__}: {error}")
    else:
        TALLY["states"]["accepted, finite state"] += 1
        keeps_working_as(loaded, name)
    live = fed(name)
    attempt("states in place", name, live, lambda: live.load_state_dict(state))


def test_a_missing_key_is_named():
    """Defect 8: a state without one of its keys was a bare ``KeyError``."""
    for name in KINDS:
        state = fed(name).state_dict()
        key = sorted(k for k in state if k != "kind")[0]
        del state[key]
        with pytest.raises(ValueError, match=repr(key).replace("[", r"\[").replace(".", r"\.")):
            type(fed(name, n=0)).from_state_dict(state)


# -- constructors -------------------------------------------------------------------------

JUNK = [0, -1, 1, 2, 10 ** 6, 0.0, -0.5, 1e-300, 1e300, np.nan, np.inf, True, "no", None, 1 + 1j, [1]]


def constructor_arguments(obj) -> dict:
    """The arguments that rebuild ``obj``: its saved settings, else its attributes."""
    state = obj.state_dict()
    arguments = {}
    for parameter in list(inspect.signature(type(obj).__init__).parameters.values())[1:]:
        if parameter.name in state and np.ndim(state[parameter.name]) == 0:
            value = state[parameter.name]
            value = value.item() if isinstance(value, np.ndarray) else value
            # a state stores seed=None as -1
            arguments[parameter.name] = None if parameter.name == "seed" and value == -1 else value
        elif hasattr(obj, parameter.name):
            arguments[parameter.name] = getattr(obj, parameter.name)
        elif parameter.default is not inspect.Parameter.empty:
            arguments[parameter.name] = parameter.default
    return arguments


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", KINDS)
def test_a_constructor_refuses_junk_or_builds_a_working_object(name):
    ordinary = fed(name, n=0)
    cls, arguments = type(ordinary), constructor_arguments(ordinary)
    for parameter in arguments:
        for junk in JUNK:
            TALLY["constructors"]["tried"] += 1
            try:
                obj = cls(**{**arguments, parameter: junk})
            except ValueError:
                TALLY["constructors"]["refused"] += 1
                continue
            except Exception as error:
                TALLY["constructors"]["other exception"] += 1
                pytest.fail(f"{name}({parameter}={junk!r}): {type(error).__name__}: {error}")
            TALLY["constructors"]["accepted, finite state"] += 1
            keeps_working_as(obj, name)
