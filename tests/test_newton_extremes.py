"""The sketched online Newton step on extreme but finite input (issue 13, defects 4, 5, 8, 9).

Every call either learns, leaving a finite state, or is refused with a ``ValueError`` and
the state bit-identical (every array of ``state_dict()``), after which the learner goes on
exactly like a twin that never saw the bad input. RFD-SON with ``alpha0 = 0`` is
scale-equivariant (``x -> s x`` gives ``u -> u / s``, the same predictions), and so is the
code for rows of norm 1e-120 to 1e120; outside that, rows are refused before anything
changes. Tests named ``test_issue_*`` reproduce the issue's reports and failed before the
fix. Every test runs under a time limit, so a hang fails instead of blocking the suite.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.errors import Diverged
from explorer.newton import SketchedOnlineNewton
import learner_checks as checks
from learner_checks import QUIET, outcomes
from state_checks import assert_same_state, snapshot, tally_report, tamper
from stateful_zoo import labels

pytestmark = pytest.mark.timeout(120)

#: outcomes of the fuzz tests per category; ``NEWTON_FUZZ_REPORT=path.json`` writes them
TALLY: dict[str, Counter] = defaultdict(Counter)
_report = tally_report(TALLY, "NEWTON_FUZZ_REPORT")


D = 6
#: one learner of each kind, in the settings the lessons use (and a logistic one)
SETTINGS = {
    "rfd": dict(sketch="rfd", m=3),
    "rfd-exact": dict(sketch="rfd", m=3, alpha0=0.5, fast=False),
    "fd": dict(sketch="fd", m=3, alpha0=1e-3),
    "fd-exact": dict(sketch="fd", m=3, alpha0=0.1, fast=False),
    "rp": dict(sketch="rp", m=3, alpha0=0.1, seed=3),
    "full": dict(sketch="full", alpha0=1.0),
    "rfd-logistic": dict(sketch="rfd", m=3, loss="logistic", eta=0.5, eta_schedule="inverse_t"),
}


def rows(rng, n, d=D):
    return rng.standard_normal((n, d)) * np.linspace(2.0, 0.2, d)


def trained(name, n=20, seed=5):
    learner = SketchedOnlineNewton(D, **SETTINGS[name])
    rng = np.random.default_rng(seed)
    learner.learn_many(rows(rng, n), labels(rng, n))
    return learner


def ordinary_outcomes(learner) -> list:
    """Four rounds and a batch of ordinary rows: each loss, or the refusal's message."""
    rng = np.random.default_rng(11)
    X, y = rows(rng, 8, learner.d), labels(rng, 8)
    return outcomes([lambda x=x, label=label: learner.learn(x, label) for x, label in zip(X[:4], y[:4])]
                    + [lambda: learner.learn_many(X[4:], y[4:])], quiet=True)


#: the learner protocol's checks (tests/learner_checks.py), playing SON's ordinary rounds
continues_like_a_twin = partial(checks.continues_like_a_twin, play=ordinary_outcomes, cls=SketchedOnlineNewton)
refused_cleanly = partial(checks.refused_cleanly, play=ordinary_outcomes, cls=SketchedOnlineNewton, quiet=True)


# -- the issue's reports ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["rfd", "full", "fd", "rp"])
@pytest.mark.parametrize("x, y", [([1e160, 0.0, 1.0, 0.0, 0.0, 0.0], 1.0),
                                  ([1.0, 0.0, 1.0, 0.0, 0.0, 0.0], 1e200)])
def test_issue_4_a_huge_row_or_label_is_refused_with_the_state_unchanged(name, x, y):
    """RFD-SON and FULL-ON took ``[1e160, 0, 1]`` (or a label 1e200) and ``u`` became NaN for
    good; after the sketch's mass check, RFD-SON refused it but had already counted the round."""
    learner = trained(name)
    refused_cleanly(learner, lambda: learner.learn(x, y))
    assert np.isfinite(learner.u).all()


def unit_stream(n=300, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(2.0, 0.1, d)
    return X, np.sign(X @ rng.standard_normal(d))


def test_issue_4_rfd_son_with_defaults_learns_rows_of_norm_1e_80():
    """It learned 16 rows of norm 1e-80, then refused one with the state changed. RFD-SON with
    alpha0 = 0 is scale-equivariant: rows of norm 1e-80 are learned like rows of norm 1."""
    X, y = unit_stream()
    tiny = X / np.linalg.norm(X, axis=1)[:, None] * 1e-80
    unit = X / np.linalg.norm(X, axis=1)[:, None]
    learner, reference = SketchedOnlineNewton(12), SketchedOnlineNewton(12)
    _, made = learner.learn_many(tiny, y, return_predictions=True)
    _, expected = reference.learn_many(unit, y, return_predictions=True)
    checks.assert_finite_state(learner)
    np.testing.assert_allclose(made[:8], expected[:8], rtol=1e-6, atol=1e-9)  # before rounding piles up
    assert abs(np.mean(np.sign(made) != y) - np.mean(np.sign(expected) != y)) <= 0.02


@pytest.mark.parametrize("power", [-400, -266, 266, 400])
def test_rfd_son_is_scale_equivariant(power):
    """x -> 2^power x (exact) gives u -> u / 2^power and the same predictions (logistic loss:
    to 1e-9 on all 300 rounds; squared loss: the same mistakes)."""
    X, y = unit_stream()
    scale = 2.0 ** power
    for loss in ("logistic", "squared"):
        scaled, reference = (SketchedOnlineNewton(12, m=4, loss=loss) for _ in range(2))
        _, made = scaled.learn_many(X * scale, y, return_predictions=True)
        _, expected = reference.learn_many(X, y, return_predictions=True)
        if loss == "logistic":
            np.testing.assert_allclose(made, expected, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(scaled.u * scale, reference.u, rtol=1e-9,
                                       atol=1e-12 * np.abs(reference.u).max())
        else:
            np.testing.assert_allclose(made[:8], expected[:8], rtol=1e-9, atol=1e-12)
            assert np.mean(np.sign(made) != y) == np.mean(np.sign(expected) != y)


@pytest.mark.parametrize("kwargs, name", [(dict(mu=1e-300), "mu"), (dict(C=1e100), "mu"),
                                          (dict(C=1e300), "C"), (dict(C=1e-300), "C")])
def test_issue_4_and_9_settings_whose_steps_overflow_are_refused(kwargs, name):
    """``mu=1e-300`` and ``C=1e100`` (default mu 1e-201) broke on the first rows; ``C=1e300``
    raised OverflowError and ``C=1e-300`` ZeroDivisionError."""
    with pytest.raises(ValueError, match=name):
        SketchedOnlineNewton(D, **kwargs)


def test_a_wide_slab_with_its_own_mu_still_learns():
    """With eta given; an auto eta follows the labels (1 / (8 y^2) = 1e-181 here, outside
    the scales) and is refused with a message naming it, nothing changed."""
    learner = SketchedOnlineNewton(D, C=1e100, mu=1.0, eta=0.0)
    rng = np.random.default_rng(0)
    X, y = rows(rng, 50), labels(rng, 50) * 1e90
    learner.learn_many(X, y)
    checks.assert_finite_state(learner)
    auto = SketchedOnlineNewton(D, C=1e100, mu=1.0)
    checks.refused_cleanly(auto, lambda: auto.learn_many(X, y), "auto eta")


def test_issue_4_rp_son_on_a_row_of_norm_1e_300_is_refused():
    """RP-SON divided by ``row @ row`` = 0 and stored NaN."""
    learner = trained("rp")
    x = rows(np.random.default_rng(1), 1)[0] * 1e-300
    refused_cleanly(learner, lambda: learner.learn(x, 1.0), match="too small")


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_issue_5_learn_many_is_all_or_nothing(name):
    """A batch refused at its third row had learned the first two ("nothing was updated")."""
    learner = trained(name)
    rng = np.random.default_rng(2)
    X = rows(rng, 4)
    X[2] *= 1e160
    refused_cleanly(learner, lambda: learner.learn_many(X, labels(rng, 4)), match="X row 2")


@pytest.mark.parametrize("name", ["rfd", "full", "rp"])
def test_issue_14_a_round_that_leaves_the_finite_range_raises_diverged(name):
    """One exception for divergence (explorer.errors.Diverged, a ValueError) naming the row
    of the call and the round; bad input stays a plain ValueError."""
    learner = trained(name)
    rng = np.random.default_rng(2)
    X = rows(rng, 4)
    X[2] *= 1e160
    with pytest.raises(Diverged, match="X row 2") as refused, np.errstate(**QUIET):
        learner.learn_many(X, labels(rng, 4))
    assert (refused.value.row, refused.value.t) == (2, 23)
    for call in (learner.learn, learner.step):
        with pytest.raises(Diverged, match="x: ") as refused, np.errstate(**QUIET):
            call(X[2], 1.0)
        assert (refused.value.row, refused.value.t) == (0, 21)
    with pytest.raises(ValueError) as refused:
        learner.step(np.full(D, np.nan), 1.0)
    assert not isinstance(refused.value, Diverged)
    assert learner.t == 20


class FailingSolve:
    """Wraps a learner's solve so that its ``n``-th call raises (or returns inf)."""

    def __init__(self, solve, n, how):
        self.solve, self.n, self.how, self.calls = solve, n, how, 0

    def __call__(self, v):
        self.calls += 1
        if self.calls != self.n:
            return self.solve(v)
        if self.how == "inf":
            return np.full_like(v, np.inf)
        raise np.linalg.LinAlgError("Singular matrix")


@pytest.mark.parametrize("how", ["linalg", "inf"])
@pytest.mark.parametrize("name, rounds", [
    ("rfd", 2),        # the row goes into a free row of B: undone from a few numbers
    ("rfd", 5),        # the row fills the buffer (capacity 6): a shrink, undone from a copy
    ("fd-exact", 30),  # full: every row shrinks
    ("rp", 3),         # every row of B changes
])
def test_a_newton_step_that_fails_after_the_sketch_took_the_row_is_undone(name, rounds, how, monkeypatch):
    """The sketch takes the row before the solve; a failed solve (LinAlgError, or a
    non-finite step) must put the sketch, K and the Cholesky factor back."""
    learner = SketchedOnlineNewton(D, **SETTINGS[name])
    rng = np.random.default_rng(4)
    learner.learn_many(rows(rng, rounds), labels(rng, rounds))
    x = rows(rng, 1)[0] * 1e-3  # |u^T x| <= C: no projection, so the one solve is the step's
    assert abs(learner.predict(x)) < learner.C
    monkeypatch.setattr(learner._curvature, "solve", FailingSolve(learner._curvature.solve, 1, how))
    before = snapshot(learner)
    with pytest.raises(ValueError, match="Newton step failed"):
        learner.learn(x, 1.0)
    assert_same_state(snapshot(learner), before)
    monkeypatch.undo()
    continues_like_a_twin(learner, before)


@pytest.mark.parametrize("name", ["rfd", "fd", "rp"])
def test_learn_many_undoes_the_rows_before_a_failed_step(name, monkeypatch):
    learner = trained(name)
    monkeypatch.setattr(learner._curvature, "solve", FailingSolve(learner._curvature.solve, 3, "linalg"))
    rng = np.random.default_rng(6)
    X = rows(rng, 5) * 1e-3
    before = snapshot(learner)
    with pytest.raises(ValueError, match=r"X row \d: the Newton step failed"):
        learner.learn_many(X, labels(rng, 5))
    assert_same_state(snapshot(learner), before)
    monkeypatch.undo()
    continues_like_a_twin(learner, before)


def tampered(state: dict, key: str, value) -> dict:
    return {**state, key: value}


def asymmetric(matrix):
    changed = np.array(matrix, copy=True)
    changed[0, 1] += 1.0
    return changed


STATE_DEFECTS = [
    ("rfd", lambda s: tampered(s, "u", np.full(D, np.nan)), "'u'"),
    ("rfd", lambda s: tampered(s, "u", np.zeros(D + 1)), "'u'"),
    ("rfd", lambda s: tampered(s, "t", -1), "'t'"),
    ("rfd", lambda s: tampered(s, "t", 0), "'t'"),  # fewer rounds than rows in the sketch
    ("rfd", lambda s: tampered(s, "curvature.inner", np.zeros((3, 3))), "curvature.inner"),
    ("rfd", lambda s: tampered(s, "curvature.inner", asymmetric(s["curvature.inner"])), "curvature.inner"),
    ("rfd", lambda s: tampered(s, "curvature.inner", 2 * s["curvature.inner"]), "curvature.inner"),
    ("rfd", lambda s: tampered(s, "curvature.factor", 2 * s["curvature.factor"]), "curvature.factor"),
    ("rp", lambda s: tampered(s, "curvature.factored", True), "curvature.factored"),
    ("rfd", lambda s: tampered(s, "curvature.sketch.buffer", np.full((6, D), np.inf)), "buffer"),
    ("rfd", lambda s: tampered(s, "curvature.sketch.filled", -3), "filled"),
    ("rfd", lambda s: tampered(s, "sketch", "sketchy"), "'sketch'"),
    ("rfd", lambda s: tampered(s, "mu", np.nan), "'mu'"),
    ("rfd", lambda s: tampered(s, "fast", "yes"), "'fast'"),
    ("rfd", lambda s: tamper(s, "curvature.inner", "drop"), "curvature.inner"),
    ("rfd", lambda s: tamper(s, "u", "drop"), "'u'"),
    ("full", lambda s: tampered(s, "curvature.inverse", asymmetric(s["curvature.inverse"])), "inverse"),
    ("full", lambda s: tampered(s, "curvature.inverse", 2 * s["curvature.inverse"]), "inverse"),
    ("full", lambda s: tampered(s, "curvature.inverse", -s["curvature.inverse"]), "inverse"),
]


@pytest.mark.parametrize("name, change, key", STATE_DEFECTS)
def test_issue_8_a_tampered_state_is_refused_naming_the_key(name, change, key):
    """``from_state_dict`` loaded NaN, negative counters and wrong shapes without complaint;
    a missing key was a bare ``KeyError``. In place, a refusal leaves the learner as it was."""
    state = change(trained(name).state_dict())
    with pytest.raises(ValueError, match=key):
        SketchedOnlineNewton.from_state_dict(state)
    learner = trained(name, seed=8)
    refused_cleanly(learner, lambda: learner.load_state_dict(state), match=key)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_a_state_loads_in_place_and_continues_bit_for_bit(name):
    source, target = trained(name), trained(name, seed=9)
    target.load_state_dict(source.state_dict())
    assert_same_state(snapshot(target), snapshot(source))
    continues_like_a_twin(target, source.state_dict())


def test_a_state_saved_without_the_seed_still_loads():
    state = tamper(trained("rp").state_dict(), "seed", "drop")
    resumed = SketchedOnlineNewton.from_state_dict(state)
    assert resumed.seed is None and resumed.t == 20


def test_issue_14_the_state_keeps_the_seed():
    for seed in (None, 0, 7):
        learner = SketchedOnlineNewton(D, sketch="rp", seed=seed)
        assert SketchedOnlineNewton.from_state_dict(learner.state_dict()).seed == seed


@pytest.mark.parametrize("kwargs, name", [
    (dict(fast="no"), "fast"), (dict(fast=1), "fast"), (dict(fast=None), "fast"),
    (dict(seed=-1), "seed"), (dict(seed="a"), "seed"), (dict(seed=1.5), "seed"),
    (dict(seed=True), "seed"), (dict(seed=2 ** 64), "seed"),
    (dict(sketch=None), "sketch"), (dict(sketch=["rfd"]), "sketch"),
    (dict(loss="absolute", mu=1.0), "loss"), (dict(eta_schedule=None), "eta_schedule"),
    (dict(alpha0=1e-300), "alpha0"), (dict(alpha0=1e300), "alpha0"), (dict(alpha0=np.nan), "alpha0"),
    (dict(eta=1e300), "eta"), (dict(eta=1e-300), "eta"), (dict(mu=1e300), "mu"),
    (dict(C=np.inf), "C"), (dict(C=True), "C"),
    (dict(m=10 ** 6), "m = 1000000"), (dict(sketch="full", alpha0=1.0, d=10 ** 5), "d = 100000"),
    (dict(loss="logistic", C=300.0), "default mu"),
])
def test_issue_9_every_argument_is_checked(kwargs, name):
    """``C=1e300`` raised OverflowError, ``C=1e-300`` ZeroDivisionError, ``fast="no"`` became
    True, ``seed`` was not checked; a huge m or d ran out of memory."""
    kwargs = {"d": D, **kwargs}
    with pytest.raises(ValueError, match=name):
        SketchedOnlineNewton(kwargs.pop("d"), **kwargs)


@pytest.mark.parametrize("label", [0.0, 3.0, 0.5, np.nan, "1", 1 + 1j, None, True])
def test_issue_9_classification_labels_are_checked(label):
    """The logistic loss takes classes -1 and +1; SON took any number."""
    learner = trained("rfd-logistic")
    x = rows(np.random.default_rng(3), 1)[0]
    refused_cleanly(learner, lambda: learner.learn(x, label))
    if isinstance(label, float):
        refused_cleanly(learner, lambda: learner.learn_many([x, x], [1.0, label]),
                        match=r"y\[1\]" if np.isfinite(label) else "finite")


def test_regression_labels_beyond_1e100_are_refused():
    learner = trained("rfd")
    x = rows(np.random.default_rng(3), 1)[0]
    refused_cleanly(learner, lambda: learner.learn(x, 1e101), match="y must be")
    refused_cleanly(learner, lambda: learner.learn_many([x, x], [1.0, -1e150]), match=r"y\[1\]")


def test_a_prediction_that_overflows_is_refused():
    learner = trained("full")
    state = learner.state_dict()
    state["u"] = np.full(D, 1e300)
    learner.load_state_dict(state)  # finite, so loadable; every prediction overflows
    x = np.ones(D) * 1e10
    with pytest.raises(ValueError, match="overflows"), np.errstate(**QUIET):
        learner.predict(x)
    checks.refused_cleanly(learner, lambda: learner.learn(x, 1.0), "overflows", quiet=True)


@pytest.mark.parametrize("sketch", ["rfd", "fd", "full"])
def test_with_params_alpha0_continues_with_the_new_regularizer(sketch):
    """The dashboard's hot alpha0: B is kept, H = alpha0' I + B^T B (RFD: + Delta / 2)."""
    learner = SketchedOnlineNewton(D, sketch=sketch, m=3, alpha0=0.5)
    rng = np.random.default_rng(0)
    learner.learn_many(rows(rng, 20), labels(rng, 20))
    moved = learner.with_params(alpha0=2.0)
    v = np.arange(1.0, D + 1)
    if sketch == "full":
        H = np.linalg.inv(learner.state_dict()["curvature.inverse"]) + 1.5 * np.eye(D)
    else:
        B = learner.sketch.rows
        H = B.T @ B + (learner.alpha + 1.5) * np.eye(D)
    np.testing.assert_allclose(moved.solve(v), np.linalg.solve(H, v), rtol=1e-8)
    assert moved.alpha == pytest.approx(learner.alpha + 1.5)
    moved.learn_many(rows(rng, 10), labels(rng, 10))
    checks.assert_finite_state(moved)


# -- fuzz ---------------------------------------------------------------------------------------

SPECIAL = [np.nan, np.inf, -np.inf, 1e308, 1e300, 1e200, 1e160, 1e150, 1e-150, 1e-300, 5e-324,
           0.0, -1e300]
JUNK_LABELS = [1.0, -1.0, 0.0, 0.5, 3.0, np.nan, np.inf, 1e99, 1e101, -1e300, 1e-300, "1", None]


@st.composite
def extreme_rows(draw):
    """An ordinary row made extreme in one way: an entry, a scale 10^-320..10^320, all zero."""
    x = rows(np.random.default_rng(draw(st.integers(0, 2 ** 16))), 1)[0]
    how = draw(st.sampled_from(["entry", "scale", "scale", "scale", "zero"]))
    if how == "entry":
        x[draw(st.integers(0, D - 1))] = draw(st.sampled_from(SPECIAL))
    elif how == "scale":
        with np.errstate(over="ignore", under="ignore"):
            x = x * np.power(10.0, draw(st.integers(-320, 320)))
    else:
        x = np.zeros(D)
    return x


def finite_with_a_finite_prediction(learner) -> None:
    checks.assert_finite_state(learner)
    assert np.isfinite(learner.last_prediction)


def accepted_or_refused_cleanly(learner, call, category: str) -> None:
    """Run ``call``: either it is refused (``ValueError``, state bit-identical, the learner
    then runs like a twin) or it leaves a finite state (tallied under ``category``)."""
    TALLY[category]["tried"] += 1
    result = checks.accepted_or_refused_cleanly(learner, call, play=ordinary_outcomes, cls=SketchedOnlineNewton,
                                                check=finite_with_a_finite_prediction, quiet=True)
    TALLY[category]["refused" if isinstance(result, ValueError) else "accepted, finite state"] += 1


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SETTINGS))
@settings(max_examples=40, deadline=None)
@given(x=extreme_rows(), label=st.sampled_from(JUNK_LABELS))
def test_fuzz_one_round_learns_or_is_refused_cleanly(name, x, label):
    learner = trained(name)
    accepted_or_refused_cleanly(learner, lambda: learner.learn(x, label), "rounds")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SETTINGS))
@settings(max_examples=30, deadline=None)
@given(x=extreme_rows(), label=st.sampled_from([1.0, -1.0, 0.0, 1e101, np.nan]),
       position=st.integers(0, 4))
def test_fuzz_a_batch_with_one_extreme_row_is_all_or_nothing(name, x, label, position):
    learner = trained(name)
    rng = np.random.default_rng(position)
    X, y = list(rows(rng, 4)), list(labels(rng, 4))
    X.insert(position, x)
    y.insert(position, label)
    accepted_or_refused_cleanly(learner, lambda: learner.learn_many(np.array(X), np.array(y)), "batches")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SETTINGS))
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2 ** 16), powers=st.lists(st.integers(-160, 160), min_size=5, max_size=25))
def test_fuzz_scale_jumps_never_leave_a_non_finite_state(name, seed, powers):
    """A stream whose rows jump between scales 1e-160 and 1e160: every round is learned or
    refused cleanly, and ordinary rounds keep being learned or refused cleanly after it."""
    learner = SketchedOnlineNewton(D, **SETTINGS[name])
    rng = np.random.default_rng(seed)
    for power, x, label in zip(powers, rows(rng, len(powers)), labels(rng, len(powers))):
        accepted_or_refused_cleanly(learner, lambda: learner.learn(x * 10.0 ** power, label), "scale jumps")
    for x, label in zip(rows(rng, 3), labels(rng, 3)):
        accepted_or_refused_cleanly(learner, lambda: learner.learn(x, label), "after scale jumps")


TAMPERINGS = ["nan", "inf", "huge", "tiny", "negative", "double", "drop", "shape", "string", "bool",
              "transpose"]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SETTINGS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_fuzz_a_tampered_state_is_refused_or_loads_a_working_learner(name, data):
    original = trained(name).state_dict()
    key = data.draw(st.sampled_from(sorted(k for k in original if k != "kind")))
    state = tamper(original, key, data.draw(st.sampled_from(TAMPERINGS)))
    TALLY["states"]["tried"] += 1
    try:
        loaded = SketchedOnlineNewton.from_state_dict(state)
    except ValueError:
        TALLY["states"]["refused"] += 1
    else:
        TALLY["states"]["accepted, finite state"] += 1
        checks.assert_finite_state(loaded)
        rng = np.random.default_rng(12)
        for x, label in zip(rows(rng, 3), labels(rng, 3)):
            accepted_or_refused_cleanly(loaded, lambda: loaded.learn(x, label), "rounds after a loaded state")
    live = trained(name, seed=8)
    accepted_or_refused_cleanly(live, lambda: live.load_state_dict(state), "states in place")


JUNK = [0, -1, 1, 2, 10 ** 6, 0.0, -0.5, 1e-300, 1e-100, 1e100, 1e300, np.nan, np.inf, True,
        "no", None, 1 + 1j, [1], "squared", "logistic", "full"]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_fuzz_every_argument_refuses_junk_or_builds_a_working_learner(name):
    arguments = {"d": D, "m": 10, "alpha0": 0.0, "eta": 0.0, "mu": None, "C": 1.0, "fast": True,
                 "loss": "squared", "eta_schedule": "constant", "seed": None, **SETTINGS[name]}
    for parameter in arguments:
        for junk in JUNK:
            if parameter == "d" and junk == 10 ** 6:
                continue  # a legal learner, too large to fuzz quickly
            kwargs = {**arguments, parameter: junk}
            TALLY["constructors"]["tried"] += 1
            try:
                learner = SketchedOnlineNewton(kwargs.pop("d"), **kwargs)
            except ValueError:
                TALLY["constructors"]["refused"] += 1
                continue
            TALLY["constructors"]["accepted"] += 1
            rng = np.random.default_rng(0)
            for x, label in zip(rows(rng, 12, learner.d), labels(rng, 12)):
                accepted_or_refused_cleanly(learner, lambda: learner.learn(x, label),
                                            "rounds after a constructor")
            checks.assert_finite_state(learner)
