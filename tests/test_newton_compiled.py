"""The compiled round of the sketched online Newton step against the numpy rule.

:mod:`explorer.newton.compiled` plays ``learn`` / ``learn_many`` of RFD-SON and FD-SON with
numba; the numpy round (:meth:`SketchedOnlineNewton._round`) is the reference. The same
streams go through both paths side by side (hypothesis: sizes, scales from 1e-150 to 1e150,
shrinks, refusals, non-finite input, the ``"auto"`` settings), and the losses, predictions,
refusals (type and message) and every array of ``state_dict()`` must agree within 1e-12
relative; states move between the paths (resume). Skipped only when numba is not installed
(the test extra installs it, so CI runs it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.hooks import Recorder
from explorer.newton import FDSON, RFDSON, SketchedOnlineNewton, compiled

pytestmark = pytest.mark.timeout(300)

RELATIVE = 1e-12
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)


def test_the_test_extra_installs_numba():
    """So CI (``make test`` installs ``.[test,torch]``) runs every test below: the skip when
    numba is missing only ever applies to a hand-made environment."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as file:
        text = file.read()  # tomllib only from Python 3.11; the extras are plain lists
    for extra in ("test", "fast"):
        block = (re.search(rf"^{extra} = \[$(.*?)^\]$", text, re.M | re.S)
                 or re.search(rf"^{extra} = \[(.*)\]$", text, re.M))
        assert block and re.search(r'^\s*"numba>=|^"numba>=', block.group(1).strip(), re.M), extra


@pytest.fixture(autouse=True)
def kernel_ready(request):
    """The kernel compiled (or loaded from numba's cache) before any comparison."""
    if request.function is not test_the_test_extra_installs_numba:
        request.getfixturevalue("compiled_ready")


def close(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return False
    if a.size == 0:
        return True
    if not np.array_equal(np.isfinite(a), np.isfinite(b)):
        return False
    scale = max(float(np.abs(b[np.isfinite(b)]).max(initial=0.0)), 1e-300)
    return bool(np.abs(a - b)[np.isfinite(b)].max(initial=0.0) <= RELATIVE * scale)


def assert_states_close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], str) or isinstance(b[key], str):
            assert a[key] == b[key], key
        else:
            assert close(a[key], b[key]), (key, a[key], b[key])


def outcome(call):
    """``("ok", result)`` or ``("refused", type, message)``."""
    try:
        return ("ok", call())
    except ValueError as error:
        return ("refused", type(error), str(error))


def both(learner, action):
    """``action(twin)`` on a compiled learner and on its numpy twin (same state): both outcomes
    and both learners."""
    twin = type(learner).from_state_dict(learner.state_dict())
    twin.last_prediction = learner.last_prediction  # not part of the state
    rows_before = compiled.COUNTS["rows"]
    fast = outcome(lambda: action(learner))
    played = compiled.COUNTS["rows"] - rows_before
    with compiled.numpy_only():
        slow = outcome(lambda: action(twin))
    return fast, slow, learner, twin, played


def assert_same(fast, slow, learner, twin):
    assert fast[0] == slow[0], (fast, slow)
    if fast[0] == "refused":
        assert fast[1:] == slow[1:]
    else:
        for a, b in zip(np.atleast_1d(fast[1]) if not isinstance(fast[1], tuple) else fast[1],
                        np.atleast_1d(slow[1]) if not isinstance(slow[1], tuple) else slow[1]):
            assert close(a, b)
    assert_states_close(learner.state_dict(), twin.state_dict())
    assert learner.t == twin.t and learner.sketch.n_seen == twin.sketch.n_seen
    assert learner.last_prediction == pytest.approx(twin.last_prediction, rel=RELATIVE, abs=1e-300)


LEARNERS = st.fixed_dictionaries({
    "sketch": st.sampled_from(["rfd", "fd"]),
    "d": st.integers(1, 24),
    "m": st.integers(2, 6),
    "fast": st.booleans(),
    "loss": st.sampled_from(["squared", "logistic"]),
    "alpha0": st.sampled_from(["auto", 0.0, 1e-6, 1.0, 50.0]),
    "eta": st.sampled_from(["auto", 0.0, 0.1, 2.0]),
    "C": st.sampled_from(["auto", 0.5, 10.0]),
    "eta_schedule": st.sampled_from(["constant", "inverse_t"]),
})


def make(spec: dict) -> SketchedOnlineNewton:
    spec = dict(spec)
    d, sketch = spec.pop("d"), spec.pop("sketch")
    if spec["alpha0"] == 0.0 and spec["eta"] == 0.0:
        spec["eta"] = 0.1  # mu + eta > 0 needs one of them when mu follows C
    return SketchedOnlineNewton(d, sketch=sketch, **spec)


def stream(seed: int, n: int, d: int, scale_exponent: int, loss: str, zeros: bool):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(2.0, 0.1, d) * 10.0 ** scale_exponent
    if zeros and n > 2:
        X[rng.integers(0, n, 2)] = 0.0
    y = np.sign(X @ rng.standard_normal(d)) if loss == "logistic" else rng.standard_normal(n) * 3
    if loss == "logistic":
        y[y == 0] = 1.0
    return X, y


@settings(max_examples=60, deadline=None)
@given(LEARNERS, st.integers(0, 2 ** 32 - 1), st.integers(1, 70),
       st.sampled_from([0, 0, 0, -3, 3, -60, 60, -150, 150, 155]), st.booleans(), st.integers(1, 4))
def test_learn_many_chunks_agree_with_the_numpy_rule(spec, seed, n, scale_exponent, zeros, chunks):
    learner = make(spec)
    X, y = stream(seed, n, spec["d"], scale_exponent, spec["loss"], zeros)
    for part in np.array_split(np.arange(n), chunks):
        fast, slow, learner, twin, _ = both(
            learner, lambda l, part=part: l.learn_many(X[part], y[part], return_predictions=True))
        assert_same(fast, slow, learner, twin)


@settings(max_examples=40, deadline=None)
@given(LEARNERS, st.integers(0, 2 ** 32 - 1), st.integers(1, 70),
       st.sampled_from([0, 0, -3, 3, -60, 60, -150, 150]), st.booleans())
def test_progressive_keeps_alpha_and_kappa_as_the_numpy_rule(spec, seed, n, scale_exponent, zeros):
    """``progressive`` on the compiled path writes each round's alpha_t and kappa(H_t) too
    (kappa by numpy's eigvalsh LAPACK call): every column as the numpy rule's."""
    learner = make(spec)
    X, y = stream(seed, n, spec["d"], scale_exponent, spec["loss"], zeros)
    fast, slow, learner, twin, played = both(learner, lambda l: l.progressive(X, y))
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        assert fast[1].names == slow[1].names
        for name in ("loss", "prediction", "alpha", "condition_number"):
            assert close(fast[1][name], slow[1][name]), name
    else:
        assert fast[1:] == slow[1:]
    assert_states_close(learner.state_dict(), twin.state_dict())


def test_progressive_takes_the_compiled_path_with_kappa():
    """On an ordinary stream (lesson 03's kind), every row is compiled and the kept columns
    agree with the numpy rule's (to the last bit where numpy's and scipy's LAPACK are one
    build, as here; within 1e-12 relative by the check)."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 12)) * np.logspace(0, -2, 12)
    y = np.sign(X @ rng.standard_normal(12))
    for sketch in ("rfd", "fd"):
        learner = SketchedOnlineNewton(12, sketch=sketch, m=4, alpha0=1e-3, eta=0.0, C=1.0, loss="logistic")
        fast, slow, _, _, played = both(learner, lambda l: l.progressive(X, y))
        assert played == 400
        for name in ("loss", "prediction", "alpha", "condition_number"):
            assert close(fast[1][name], slow[1][name]), (sketch, name)


@settings(max_examples=30, deadline=None)
@given(LEARNERS, st.integers(0, 2 ** 32 - 1), st.integers(1, 30), st.sampled_from([0, 2, -2, 150, -150]))
def test_learn_row_by_row_agrees_with_the_numpy_rule(spec, seed, n, scale_exponent):
    learner = make(spec)
    X, y = stream(seed, n, spec["d"], scale_exponent, spec["loss"], True)
    for x, label in zip(X, y):
        fast, slow, learner, twin, _ = both(learner, lambda l, x=x, label=label: l.learn(x, label))
        assert_same(fast, slow, learner, twin)


@settings(max_examples=30, deadline=None)
@given(LEARNERS, st.integers(0, 2 ** 32 - 1), st.sampled_from([np.nan, np.inf, -np.inf, 1e300]),
       st.integers(0, 19))
def test_bad_rows_are_refused_alike_and_change_nothing(spec, seed, bad, where):
    learner = make(spec)
    X, y = stream(seed, 20, spec["d"], 0, spec["loss"], False)
    learner.learn_many(X[:10], y[:10])
    before = learner.state_dict()
    X[where, 0] = bad
    fast, slow, learner, twin, _ = both(learner, lambda l: l.learn_many(X, y))
    assert fast[0] == slow[0] == ("ok" if bad == 1e300 and fast[0] == "ok" else "refused")
    assert_same(fast, slow, learner, twin)
    if fast[0] == "refused":
        assert_states_close(learner.state_dict(), before)


def trained(cls=RFDSON, d=40, m=5, n=300, seed=0, **kw):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sign(X @ rng.standard_normal(d))
    return cls(d, m=m, loss="logistic", **kw), X, y


@pytest.mark.parametrize("cls, kw", [(RFDSON, {}), (FDSON, {"alpha0": 1.0})])
def test_the_compiled_path_is_used(cls, kw):
    """Every round, shrinks included, is compiled (but the first, which resolves the "auto"
    settings): it cannot silently fall back. (FD-SON's auto alpha0 would also leave the rows
    that raise it to the numpy rule.)"""
    learner, X, y = trained(cls, **kw)
    rows = compiled.COUNTS["rows"]
    learner.learn_many(X, y)
    played = compiled.COUNTS["rows"] - rows
    assert played >= len(y) - 2 and learner.sketch.n_shrinks > 40
    rows = compiled.COUNTS["rows"]
    learner.learn(X[0], y[0])
    assert compiled.COUNTS["rows"] - rows == (0 if learner.sketch.rank == 0 else 1)


def test_numpy_only_hooks_and_records_take_the_numpy_rule():
    learner, X, y = trained()
    learner.learn_many(X[:50], y[:50])
    rows = compiled.COUNTS["rows"]
    with compiled.numpy_only():
        learner.learn_many(X[50:100], y[50:100])
    learner.step(X[100], y[100])  # a record: the numpy round
    handle = learner.add_hook(Recorder())
    learner.learn_many(X[101:150], y[101:150])
    handle.remove()
    assert compiled.COUNTS["rows"] == rows
    learner.learn_many(X[150:], y[150:])
    assert compiled.COUNTS["rows"] > rows


def test_importing_explorer_does_not_import_numba():
    """numba is imported by the compiling thread, at the first round that wants it: a process
    that never learns (the dashboard's start-up, the CLI) does not pay for it."""
    code = "import sys, explorer, explorer.newton; print('numba' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          check=True).stdout.split() == ["False"]


@pytest.mark.slow
def test_a_script_that_ends_while_compiling_waits_and_leaves_the_kernel_cached(tmp_path):
    """A short script (a few rounds, then exit) starts the background compile and ends at
    once: the process waits for the compiler, exits 0, and the next process finds the kernel
    in numba's cache (``NUMBA_CACHE_DIR``, empty at the start). Ending while LLVM compiles in
    a daemon thread aborted the process now and then ("UNREACHABLE executed", exit -6 or
    -11), and the kernel never reached the cache."""
    code = ("import numpy as np; from explorer.newton import RFDSON, compiled; "
            "RFDSON(3, m=2).learn_many(np.eye(3), [1.0, 2.0, 3.0]); print(compiled.enabled())")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "EXPLORER_COMPILED": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=280, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False"]  # it ended before the kernel was ready
    assert list(tmp_path.rglob("*kernel*.nbi")), sorted(path.name for path in tmp_path.rglob("*"))


def test_the_environment_switch_turns_it_off():
    code = ("from explorer.newton import compiled, RFDSON; import numpy as np; "
            "print(compiled.enabled(), compiled.wait(1)); RFDSON(3, m=2).learn_many(np.eye(3), [1, 2, 3]); "
            "print(compiled.COUNTS['rows'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "EXPLORER_COMPILED": "0"}, check=True).stdout.split()
    assert out == ["False", "False", "0"]


def test_states_resume_across_the_paths():
    """A state written by the compiled path continues on the numpy rule, and the other way
    round, exactly like an uninterrupted run."""
    learner, X, y = trained(RFDSON, d=30, m=4, n=200, seed=3)
    learner.learn_many(X[:90], y[:90])
    with compiled.numpy_only():
        resumed = RFDSON.from_state_dict(learner.state_dict())
        resumed.learn_many(X[90:150], y[90:150])
    learner.learn_many(X[90:150], y[90:150])
    assert_states_close(resumed.state_dict(), learner.state_dict())
    back = RFDSON.from_state_dict(resumed.state_dict())
    losses = back.learn_many(X[150:], y[150:])
    with compiled.numpy_only():
        expected = resumed.learn_many(X[150:], y[150:])
    assert close(losses, expected)
    assert_states_close(back.state_dict(), resumed.state_dict())


def test_a_refusal_mid_call_is_the_numpy_rules_and_undone():
    """A row whose curvature row would take ``||A||_F^2`` past its limit, after rows the
    compiled path played: the same Diverged (message, row, t), the whole call undone."""
    learner, X, y = trained(RFDSON, d=8, m=3, n=40, seed=4, alpha0=1.0, eta=1.0, C=50.0)
    X[25] *= 1e200
    learner.learn_many(X[:5], y[:5])
    before = learner.state_dict()
    rows = compiled.COUNTS["rows"]
    fast, slow, learner, twin, played = both(learner, lambda l: l.learn_many(X, y))
    assert fast[0] == "refused" and "too large" in fast[2] and "X row 25" in fast[2]
    assert_same(fast, slow, learner, twin)
    assert_states_close(learner.state_dict(), before)
    assert played >= 15 and compiled.COUNTS["rows"] > rows


def test_a_watched_sketch_shrinks_by_the_numpy_rule():
    """A hook on the sketch itself: its shrinks (and their events) are the numpy rule's, the
    other rounds still compiled, the numbers the same."""
    learner, X, y = trained(RFDSON, d=30, m=3, n=120, seed=2)
    learner.learn_many(X[:10], y[:10])
    twin = RFDSON.from_state_dict(learner.state_dict())
    recorder = Recorder()
    handle = learner.sketch.add_hook(recorder)
    rows, shrinks = compiled.COUNTS["rows"], learner.sketch.n_shrinks
    losses = learner.learn_many(X[10:], y[10:])
    handle.remove()
    with compiled.numpy_only():
        expected = twin.learn_many(X[10:], y[10:])
    made = learner.sketch.n_shrinks - shrinks
    assert made > 10 and len(recorder.events("shrink")) == made
    assert compiled.COUNTS["rows"] - rows == len(losses) - made
    assert close(losses, expected)
    assert_states_close(learner.state_dict(), twin.state_dict())


def test_the_benchmark_runs_and_checks_the_numbers():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import newton_compiled
    finally:
        sys.path.pop(0)
    row = newton_compiled.compare("rfd", 30, 4, budget=0.002, repeats=2)
    assert row["pass"] and row["max_relative_gap"] <= 1e-12 and row["rounds"] % 5 == 0
    assert newton_compiled.compare("fd", 30, 4, budget=0.002, repeats=1, by_row=True)["pass"]
