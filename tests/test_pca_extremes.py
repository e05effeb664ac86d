"""The online adaptive PCA family on extreme but finite input and on tampered state files
(issue 13, defects 8 and 9; docs/algorithms.md section 5).

The policy (explorer/pca/_base.py): every learner multiplies weights by
``exp(-eta * loss)``, kept as logarithms. A round whose loss (||x||^2, ||C||_F or
max |loss_i|) passes ``MAX_LOSS = 1e300``, or whose step ``eta * loss`` passes
``MAX_STEP = 1e6`` (beyond it the eigensolver's rounding, not the data, decides the
weights), is refused with a ``ValueError`` before anything changes; tiny input is learned
exactly (its loss and its update round to 0). A state file is checked entirely before
anything is stored: shapes, finiteness, counters, and the invariants (orthonormal
eigenvectors, log-weights of a point of the capped simplex, a valid generator state, a
PSD covariance for Follow the Leader).

Every test runs under a time limit, and numpy's overflow warnings are errors here: the
library must not produce them.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import scipy.linalg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer import load_state
from explorer.errors import Diverged
from explorer.pca import (
    AdaptiveBestSubset,
    FollowTheLeaderPCA,
    OnlineAdaptivePCA,
    VarianceMinSimplex,
    VarianceMinSphere,
    adaptive_regret,
    best_fixed_projection,
    compression_losses,
    interval_regret,
    mixture_decomposition,
    pca_theory_settings,
    sphere_theory_settings,
)
from explorer.pca._base import MAX_LOSS, MAX_N, MAX_STEP
from explorer.state import all_or_nothing
import learner_checks as checks
from state_checks import assert_same_state, snapshot, tamper, through_a_file

pytestmark = [pytest.mark.timeout(120), pytest.mark.filterwarnings("error::RuntimeWarning")]

N = 6


# -- the family, fed with ordinary data --------------------------------------------------------

def ordinary_row(rng):
    x = rng.standard_normal(N)
    return x * rng.uniform(0.1, 1.0) / np.linalg.norm(x)


def ordinary_covariance(rng):
    x = ordinary_row(rng)
    return np.outer(x, x)


# name -> (factory, one ordinary input from rng)
LEARNERS = {
    "pca": (lambda: OnlineAdaptivePCA(N, 2, eta=1.0, alpha=1e-3, seed=3), ordinary_row),
    "static pca": (lambda: OnlineAdaptivePCA(N, 2, eta=2.0, alpha=0.0, seed=3), ordinary_row),
    "experts": (lambda: AdaptiveBestSubset(N, 2, eta=1.0, alpha=0.05, seed=3),
                lambda rng: rng.uniform(0.0, 1.0, N)),
    "sphere": (lambda: VarianceMinSphere(N, eta=1.0, alpha=0.05, seed=3), ordinary_covariance),
    "simplex": (lambda: VarianceMinSimplex(N, eta=1.0, alpha=0.05), ordinary_covariance),
    "ftl": (lambda: FollowTheLeaderPCA(N, 2), ordinary_row),
}


def fed(name, rounds=8, seed=0):
    make, draw = LEARNERS[name]
    learner = make()
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        learner.learn(draw(rng))
    return learner


def ordinary_losses(name):
    """How learner ``name`` plays: the losses of four ordinary rounds (a refusal fails)."""
    draw = LEARNERS[name][1]

    def play(learner) -> list:
        rng = np.random.default_rng(99)
        return [learner.learn(draw(rng)) for _ in range(4)]
    return play


def continues_like_a_twin(name, learner, before: dict) -> None:
    checks.continues_like_a_twin(learner, before, ordinary_losses(name))


def assert_refused_cleanly(learner, call, match, name=None) -> None:
    """``call()`` is a ValueError matching ``match`` and leaves the state bit-identical;
    with ``name`` (a key of LEARNERS), the learner then runs exactly like its twin."""
    checks.refused_cleanly(learner, call, match, play=ordinary_losses(name) if name else None)


def assert_invariants(learner) -> None:
    """A finite state that the validating loader accepts, plus the class's own facts."""
    checks.assert_finite_state(learner)
    type(learner).from_state_dict(learner.state_dict())  # the loader checks every invariant again
    if isinstance(learner, (OnlineAdaptivePCA, VarianceMinSphere)):
        cap = 1.0 / (learner.n - learner.k) if isinstance(learner, OnlineAdaptivePCA) else 1.0
        W = learner.W
        np.testing.assert_allclose(W, W.T, atol=1e-14)
        eigenvalues = np.linalg.eigvalsh(W)
        assert eigenvalues.min() >= -1e-14 and eigenvalues.max() <= cap + 1e-12
        assert np.trace(W) == pytest.approx(1.0, abs=1e-12)
    elif isinstance(learner, AdaptiveBestSubset):
        w = learner.weights
        assert w.sum() == pytest.approx(1.0, abs=1e-12) and w.max() <= 1 / (learner.n - learner.k) + 1e-12
    elif isinstance(learner, VarianceMinSimplex):
        assert learner.portfolio.sum() == pytest.approx(1.0, abs=1e-12)
    else:
        B = learner.basis
        np.testing.assert_allclose(B.T @ B, np.eye(learner.k), atol=1e-10)


# -- defect 9 and the constructors ---------------------------------------------------------------

@pytest.mark.parametrize("make, message", [
    (lambda: OnlineAdaptivePCA(5, 2, eta=0.0), r"eta must be a finite number in \(0.0"),
    (lambda: AdaptiveBestSubset(5, 2, eta=0, alpha=0.1), "eta"),
    (lambda: VarianceMinSphere(5, eta=0.0, alpha=0.1), "eta"),
    (lambda: VarianceMinSimplex(5, eta=0.0, alpha=0.1), "eta"),
    (lambda: OnlineAdaptivePCA(5, 2, seed=-1), "seed must be an integer >= 0"),
    (lambda: OnlineAdaptivePCA(5, 2, seed=1.5), "seed must be an integer >= 0"),
    (lambda: AdaptiveBestSubset(5, 2, eta=1.0, alpha=0.1, seed="a"), "seed"),
    (lambda: VarianceMinSphere(3, eta=1.0, alpha=0.1, seed=True), "seed"),
    (lambda: OnlineAdaptivePCA(10 ** 6, 2), f"n must be an integer in \\[2, {MAX_N}\\]"),
    (lambda: FollowTheLeaderPCA(10 ** 6, 2), "n must be"),
    (lambda: AdaptiveBestSubset(10 ** 6, 2, eta=1.0, alpha=0.1), "n must be"),
    (lambda: VarianceMinSimplex(10 ** 6, eta=1.0, alpha=0.1), "n must be"),
    (lambda: OnlineAdaptivePCA(5, 2, alpha=1.0 + 1e-9), "alpha"),
    (lambda: FollowTheLeaderPCA(4, 4), r"k must be an integer in \[1, n - 1\]"),
])
def test_constructors_refuse_settings_out_of_range(make, message):
    """Before: eta = 0 was accepted (AdaGrad and S-FTRL refuse it), a float or string seed
    was numpy's TypeError, and n = 10**6 tried to allocate an n x n matrix (MemoryError)."""
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("name", LEARNERS)
def test_a_fresh_state_holds_no_nan(name):
    """Before: "no loss yet" was stored as NaN, so every fresh state was non-finite."""
    learner = LEARNERS[name][0]()
    checks.assert_finite_state(learner)
    loaded = type(learner).from_state_dict(learner.state_dict())
    assert loaded.last_loss is None


# -- extreme rows ---------------------------------------------------------------------------------

def test_an_overflowing_row_is_refused_before_any_lapack_call(monkeypatch):
    """Before: x x^T overflowed to inf and the eigensolver ran on it (LinAlgError or NaN)."""
    pca = fed("pca")
    before = snapshot(pca)
    calls = []
    real = scipy.linalg.eigh
    monkeypatch.setattr(scipy.linalg, "eigh", lambda *a, **k: calls.append(1) or real(*a, **k))
    with pytest.raises(ValueError, match=r"\|\|x\|\|\^2 = inf is too large.*nothing was updated"):
        pca.learn(np.linspace(0.1, 1, N) * 1e155)
    assert calls == []
    monkeypatch.undo()
    assert_same_state(before, snapshot(pca))
    continues_like_a_twin("pca", pca, before)


def test_a_step_the_eigensolver_cannot_resolve_is_refused():
    """Before: eta ||x||^2 = 2e16 was accepted, and the eigensolver's rounding (about 2)
    decided the weights: three directions the data treat alike came out unequal."""
    pca = OnlineAdaptivePCA(5, 2, seed=0)
    pca.learn(np.full(5, 0.3))
    assert_refused_cleanly(pca, lambda: pca.learn(np.linspace(0.1, 1, 5) * 1e8), "too large a step")


def test_the_largest_accepted_step_is_still_resolved():
    """At eta ||C|| = MAX_STEP the weights keep the data's symmetry to 1e-8: after the rows
    (0.3, ..., 0.3) and 1000 e_1, the three directions orthogonal to both keep equal
    weights, and e_1's log-weight drops by the step, exactly (no underflow to -inf)."""
    sphere = VarianceMinSphere(5, eta=1.0, alpha=0.0, seed=0)
    sphere.learn(np.full(5, 0.3))
    sphere.learn(np.eye(5)[0] * np.sqrt(MAX_STEP))
    log_w, D = sphere.log_eigenvalues, sphere.eigenvectors
    ones = np.full(5, 1 / np.sqrt(5))
    other = [j for j in range(5) if abs(D[:, j] @ ones) < 0.5 and abs(D[0, j]) < 0.5]
    assert len(other) == 3
    assert np.ptp(log_w[other]) < 1e-8
    assert log_w.min() == pytest.approx(-MAX_STEP, rel=1e-5)
    assert_invariants(sphere)
    pca = OnlineAdaptivePCA(5, 1, alpha=0.0, seed=0)
    pca.learn(np.eye(5)[0] * np.sqrt(MAX_STEP))  # accepted, at the limit
    assert_invariants(pca)


@pytest.mark.parametrize("name", ["pca", "static pca", "ftl", "sphere", "simplex", "experts"])
@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e-160, 5e-324])
def test_tiny_input_is_learned_exactly(name, scale):
    """A tiny row (or covariance, or loss vector) is learned like a zero one, bit for bit
    (its update rounds away); its loss is about ||x||^2 (a loss vector's: about |x|)."""
    learner = fed(name)
    twin = type(learner).from_state_dict(learner.state_dict())
    x = np.linspace(-1, 1, N) * scale
    value = {"sphere": np.outer(x, x), "simplex": np.outer(x, x), "experts": np.abs(x)}.get(name, x)
    loss = learner.learn(value)
    twin.learn(np.zeros_like(value))
    size = N * scale if name == "experts" else N * scale * scale  # linear / quadratic in x
    assert abs(loss) <= 10 * size
    assert_invariants(learner)
    state, zero = learner.state_dict(), twin.state_dict()
    assert_same_state({k: v for k, v in state.items() if not k.startswith("last_")},
                      {k: v for k, v in zero.items() if not k.startswith("last_")})


@pytest.mark.parametrize("name, make_input, message", [
    ("ftl", lambda: np.full(N, 1e151), r"\|\|x\|\|\^2 = 6e\+302 is too large"),
    ("sphere", lambda: np.full((N, N), 1e300), r"\|\|C\|\|_F = 6e\+300 is too large"),
    ("sphere", lambda: np.full((N, N), 1e308), r"max \|C_ij\| = 1e\+308 is too large"),
    ("simplex", lambda: np.full((N, N), 1e7), "too large a step"),
    ("simplex", lambda: np.full(N, 1e160), r"\|\|C\|\|\^2 = inf"),
    ("experts", lambda: np.r_[np.zeros(N - 1), 2e6], "too large a step"),
    ("experts", lambda: np.r_[np.zeros(N - 1), -1e301], "too large"),
    ("sphere", lambda: np.triu(np.ones((N, N))) * 1e-200, "symmetric"),
])
def test_inputs_out_of_range_are_refused_cleanly(name, make_input, message):
    """Before: FTL's covariance overflowed to inf; a matrix of 1e308 overflowed in
    ``C - C^T``; a tiny asymmetric matrix passed the absolute symmetry tolerance."""
    learner = fed(name)
    assert_refused_cleanly(learner, lambda: learner.learn(make_input()), message, name)


def test_follow_the_leader_refuses_a_covariance_trace_past_max_loss():
    """FTL is scale-invariant up to the covariance's overflow: six rows of squared norm
    1.6e299 are learned (and projected onto correctly), the seventh is refused."""
    ftl = FollowTheLeaderPCA(3, 1)
    for i in range(6):
        ftl.learn(np.eye(3)[i % 2] * 4e149 * (1.0 if i % 2 else 1.01))
    np.testing.assert_allclose(np.abs(ftl.basis[:, 0]), [1.0, 0.0, 0.0], atol=1e-12)
    assert_refused_cleanly(ftl, lambda: ftl.learn([0.0, 0.0, 4e149]), "covariance's trace")
    assert ftl.t == 6
    checks.assert_finite_state(ftl)


def test_experts_learn_any_real_losses_in_logs():
    """Hedge in logs is exact for negative and large losses (within the step): an expert
    that lost 5e5 keeps the log-weight -5e5 + O(1), not -inf, and the others, capped at
    1/(n - k) = 1/3, share the rest."""
    learner = AdaptiveBestSubset(4, 1, eta=1.0, alpha=0.0, seed=0)
    learner.learn([-3.0, 0.0, 5e5, 1.0])
    assert_invariants(learner)
    np.testing.assert_allclose(learner.weights[[0, 1, 3]], 1 / 3, rtol=1e-12)
    log_w = learner.state_dict()["log_w"]
    assert -5e5 - 10 < log_w[2] < -5e5 + 10


@pytest.mark.parametrize("name", ["pca", "sphere"])
def test_a_failing_eigensolver_is_diverged_and_changes_nothing(monkeypatch, name):
    """One exception, :class:`~explorer.errors.Diverged` (a ValueError), for both ways LAPACK
    can fail: an error, or NaN in its result."""
    learner = fed(name)

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("did not converge")

    monkeypatch.setattr(scipy.linalg, "eigh", broken)
    x = ordinary_row(np.random.default_rng(1))
    value = x if name == "pca" else np.outer(x, x)
    refusal = checks.refused_cleanly(learner, lambda: learner.learn(value),
                                     "eigensolver failed.*nothing was updated")
    assert isinstance(refusal, Diverged)
    monkeypatch.setattr(scipy.linalg, "eigh", lambda M, **k: (np.full(M.shape[0], np.nan), np.eye(M.shape[0])))
    refusal = checks.refused_cleanly(learner, lambda: learner.learn(value), "NaN or inf; nothing was updated")
    assert isinstance(refusal, Diverged)


# -- hypothesis: extreme, broken and wrong-shaped input ------------------------------------------

SPECIAL = [np.nan, np.inf, -np.inf, 1e308, 1e300, 1e155, 1e150, 1e-150, 1e-300, 5e-324, -1e300, 0.0]


@st.composite
def extreme_inputs(draw, name):
    """An ordinary input of learner ``name`` made extreme or broken in one way."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    value = np.array(LEARNERS[name][1](rng), dtype=float)
    how = draw(st.sampled_from(["scale", "scale", "entry", "shape", "vector form", "negative"]))
    if how == "scale":
        with np.errstate(over="ignore", under="ignore"):
            value = value * np.power(10.0, draw(st.integers(-320, 320)))
    elif how == "entry":  # in a matrix, often at both (i, j) and (j, i): still symmetric
        i, j = draw(st.integers(0, N - 1)), draw(st.integers(0, N - 1))
        special = draw(st.sampled_from(SPECIAL))
        if value.ndim == 2:
            value[i, j] = special
            if draw(st.booleans()):
                value[j, i] = special
        else:
            value[i] = special
    elif how == "shape":
        value = draw(st.sampled_from([value[..., :-1], np.append(value, 1.0), value[None], np.zeros(0)]))
    elif how == "vector form" and value.ndim == 2:
        value = ordinary_row(rng) * np.power(10.0, draw(st.integers(-200, 200)))
    elif how == "negative":
        value = -value * np.power(10.0, draw(st.integers(0, 7)))
    return value


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", LEARNERS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_extreme_input_is_refused_cleanly_or_learned_with_the_invariants(name, data):
    value = data.draw(extreme_inputs(name))
    learner = fed(name)
    loss = checks.accepted_or_refused_cleanly(learner, lambda: learner.learn(value), play=ordinary_losses(name),
                                              check=assert_invariants)
    if not isinstance(loss, ValueError):
        assert np.isfinite(loss)
        keeps_working(name, learner)


def keeps_working(name, learner) -> None:
    """Ordinary rounds run (or, for a legal but wild setting such as eta = 1e308, are
    refused with nothing changed), and the invariants hold after each."""
    rng = np.random.default_rng(5)
    checks.keeps_working(learner, [lambda: learner.learn(LEARNERS[name][1](rng)) for _ in range(3)],
                         assert_invariants)


# -- defect 8: tampered state files ---------------------------------------------------------------

@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", LEARNERS)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_tampered_state_is_refused_or_loads_a_learner_with_the_invariants(name, data):
    """Before: NaN, negative counters and wrong shapes loaded without complaint (and then
    ran: a NaN log-weight made the next round a LinAlgError), a missing key was a bare
    KeyError. In place, a refusal leaves the learner bit-identical."""
    original = fed(name).state_dict()
    key = data.draw(st.sampled_from(sorted(k for k in original if k != "kind")))
    how = data.draw(st.sampled_from(["nan", "inf", "huge", "negative", "minus huge", "drop", "shape",
                                     "string", "bool"]))
    state = tamper(original, key, how)
    cls = type(fed(name, rounds=0))
    try:
        loaded = cls.from_state_dict(state)
    except ValueError as error:
        if how == "drop":
            assert repr(key) in str(error)
    else:
        assert how not in ("nan", "inf", "shape", "string") and (how != "drop" or key == "seed")
        assert_invariants(loaded)
        keeps_working(name, loaded)
    live = fed(name)
    checks.accepted_or_refused_cleanly(live, lambda: live.load_state_dict(state), play=ordinary_losses(name),
                                       check=assert_invariants)


def rotated(V):
    """V with two columns replaced by non-orthogonal ones."""
    V = V.copy()
    V[:, 1] = (V[:, 0] + V[:, 1]) / np.sqrt(2) * 1.1
    return V


def unnormalized(log_w):
    return log_w + 0.1


# (learner, key, how to break it, message): states no run could have written.
BROKEN_INVARIANTS = [
    ("pca", "vectors", rotated, "orthonormal"),
    ("pca", "vectors", lambda V: V * 1e200, "orthonormal"),
    ("pca", "log_w", unnormalized, "summing to 1"),
    ("pca", "log_w", lambda w: np.r_[np.log(0.9), np.full(w.size - 1, np.log(0.1 / (w.size - 1)))],
     "at most 1/4"),
    ("pca", "log_w", lambda w: np.r_[np.full(4, -np.log(4)), -1e300, -1e300], "after t = 8 rounds"),
    ("pca", "rng", lambda s: "junk", "PCG64"),
    ("pca", "rng", lambda s: json.dumps({**json.loads(s), "bit_generator": "MT19937"}), "PCG64"),
    ("pca", "t", lambda t: -1, "integer >= 0"),
    ("pca", "t", lambda t: 2.5, "integer >= 0"),
    ("pca", "last_loss", lambda v: -1.0, r"in \[0.0, inf\]"),
    ("pca", "eta", lambda v: 0.0, "eta"),
    ("pca", "alpha", lambda v: 1.5, "alpha"),
    ("pca", "n", lambda v: 7, r"'n' must be 6|of shape \(7,"),
    ("pca", "k", lambda v: 6, r"'k' must be 2|k must be an integer in \[1, n - 1\]"),
    ("pca", "seed", lambda v: -2, "seed"),
    ("static pca", "log_w", lambda w: np.full(w.size, -np.log(w.size)) + 0.01, "summing to 1"),
    ("experts", "log_w", unnormalized, "summing to 1"),
    ("experts", "log_w", lambda w: np.r_[np.log(0.5), np.full(w.size - 1, np.log(0.5 / (w.size - 1)))],
     "at most 1/4"),
    ("sphere", "vectors", rotated, "orthonormal"),
    ("simplex", "log_y", unnormalized, "summing to 1"),
    ("simplex", "t", lambda t: np.int64(-3), "integer >= 0"),
    ("ftl", "covariance", lambda C: C + np.triu(np.ones_like(C), 1), "symmetric"),
    ("ftl", "covariance", lambda C: C - 10 * np.eye(C.shape[0]), "a sum of x x.T|semidefinite"),
    ("ftl", "covariance", lambda C: C + 5 * (np.ones_like(C) - np.eye(C.shape[0])), "semidefinite|a sum"),
    ("ftl", "covariance", lambda C: C * 1e306, "a sum of x x"),
    ("ftl", "basis", lambda B: B * 2, "orthonormal"),
    ("ftl", "last_loss", lambda v: -1.0, r"in \[0.0, inf\]"),
]


@pytest.mark.parametrize("name, key, breaking, message", BROKEN_INVARIANTS)
def test_states_breaking_an_invariant_are_refused(name, key, breaking, message):
    state = fed(name).state_dict()
    state[key] = breaking(state[key])
    cls = type(fed(name, rounds=0))
    with pytest.raises(ValueError, match=message):
        cls.from_state_dict(state)
    live = fed(name, seed=4)
    assert_refused_cleanly(live, lambda: live.load_state_dict(state), message, name)


def test_a_fresh_state_must_say_no_round_yet():
    state = OnlineAdaptivePCA(4, 1).state_dict()
    state["last_loss"] = 0.5
    with pytest.raises(ValueError, match="before the first round"):
        OnlineAdaptivePCA.from_state_dict(state)
    state = FollowTheLeaderPCA(4, 1).state_dict()
    state["covariance"] = np.eye(4)
    with pytest.raises(ValueError, match="0 at t = 0"):
        FollowTheLeaderPCA.from_state_dict(state)


@pytest.mark.parametrize("name", LEARNERS)
def test_every_missing_key_is_named(name):
    state = fed(name).state_dict()
    for key in state:
        if key == "kind":
            continue
        if key == "seed":  # states written before the seed was kept still load
            continue
        broken = {k: v for k, v in state.items() if k != key}
        with pytest.raises(ValueError, match=repr(key)):
            type(fed(name, rounds=0)).from_state_dict(broken)


@pytest.mark.parametrize("name", LEARNERS)
@pytest.mark.parametrize("rounds", [0, 8])
def test_states_written_before_issue_13_still_load(name, rounds):
    """Older states: no "seed" key and NaN for "no loss yet". They load and continue
    exactly like the learner they came from."""
    learner = fed(name, rounds=rounds)
    state = learner.state_dict()
    state.pop("seed", None)
    if rounds == 0:
        state = {k: (np.nan if k.startswith("last_") else v) for k, v in state.items()}
    buffer = io.BytesIO()
    np.savez(buffer, **state)
    buffer.seek(0)
    resumed = load_state(buffer)
    rng_a, rng_b = np.random.default_rng(99), np.random.default_rng(99)
    draw = LEARNERS[name][1]
    for _ in range(4):
        assert learner.learn(draw(rng_a)) == resumed.learn(draw(rng_b))
    a, b = snapshot(learner), snapshot(resumed)
    assert b.get("seed", -1) == -1  # the seed an older state did not keep is unknown
    assert_same_state({k: v for k, v in a.items() if k != "seed"},
                      {k: v for k, v in b.items() if k != "seed"})


@pytest.mark.parametrize("name", LEARNERS)
def test_load_state_dict_in_place_keeps_hooks_and_continues_exactly(name):
    """The in-place load (used by explorer.state.all_or_nothing) restores a snapshot."""
    learner = fed(name)
    events = []
    learner.add_hook(events.append)
    saved = learner.state_dict()
    rng = np.random.default_rng(7)
    inputs = [LEARNERS[name][1](rng) for _ in range(3)]
    first = [learner.learn(x) for x in inputs]
    after_first = snapshot(learner)
    learner.load_state_dict(saved)
    assert [learner.learn(x) for x in inputs] == first
    assert_same_state(after_first, snapshot(learner))
    assert len(events) == 2 * (len(events) // 2) > 0  # the hook heard both passes alike


@pytest.mark.parametrize("name", LEARNERS)
def test_all_or_nothing_puts_a_learner_back_in_place(name):
    """explorer.state.all_or_nothing works on every learner of the family: a block that
    learned two rounds and then failed leaves the learner bit-identical."""
    learner = fed(name)
    before = snapshot(learner)
    rng = np.random.default_rng(2)
    with pytest.raises(RuntimeError, match="a later failure"):
        with all_or_nothing(learner):
            learner.learn(LEARNERS[name][1](rng))
            learner.learn(LEARNERS[name][1](rng))
            raise RuntimeError("a later failure")
    assert_same_state(before, snapshot(learner))
    continues_like_a_twin(name, learner, before)


def test_a_saved_learner_round_trips_through_a_file():
    pca = fed("pca")
    assert_same_state(snapshot(through_a_file(pca)), snapshot(pca))


# -- the comparators and the theory settings ------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: adaptive_regret(np.ones(4), np.ones((4, 3)) * 1e200, 1), "total squared norm"),
    (lambda: best_fixed_projection(np.ones((4, 3)) * 1e155, 1), "total squared norm"),
    (lambda: compression_losses(np.ones((2, 2)), [[1e200], [1e200]]), "orthonormal"),
    (lambda: interval_regret(np.full(3, 1e308), lambda r, s: 0.0), "too large"),
    (lambda: interval_regret(np.ones(3), lambda r, s: float("nan")), "returned nan"),
    (lambda: mixture_decomposition([1e308, 1e308], 1), "at most 1/d"),
    (lambda: adaptive_regret(np.ones(2) + 1j, np.ones((2, 2)), 1), "real numbers"),
    (lambda: sphere_theory_settings(T=10 ** 400, n=5), r"T must be an integer in \[1, 1e\+12\]"),
])
def test_comparators_refuse_what_would_overflow(call, message):
    """Before: X^T X overflowed and LAPACK ran on inf; sums of 1e308 overflowed with a
    warning; a T of 10**400 was an OverflowError."""
    with pytest.raises(ValueError, match=message):
        call()


def test_theory_settings_stay_finite_for_a_tiny_comparator_loss():
    """Before: L = 1e-320 gave eta = inf (2D/L overflowed)."""
    eta, _ = pca_theory_settings(T=10, n=5, k=2, L=1e-320)
    D = 3 * np.log(5 * 31) + 1
    assert np.isfinite(eta) and eta == pytest.approx(0.5 * (np.log(2 * D) - np.log(1e-320)))
    assert pca_theory_settings(T=600, n=20, k=2, L=600 * 18).eta == pytest.approx(0.18465, abs=1e-5)


def test_max_loss_and_max_step_are_the_documented_values():
    assert (MAX_LOSS, MAX_STEP, MAX_N) == (1e300, 1e6, 4096)
