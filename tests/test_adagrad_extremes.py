"""AdaGrad (FULL, DIAG, FD, FFD; CMD and PDS), OGD and Adam on extreme input (issue 13).

The rules (explorer/adagrad/learners.py, module docstring): a row, label or round the
learner cannot compute with finite numbers is refused with a ``ValueError`` that names it,
and the learner is bit-identical to what it was (every array of ``state_dict()``); a call
that fails midway (``learn_many``) is undone as a whole; what is accepted leaves a finite
state; a state file no run could have written is refused, naming the key. After a refusal
the learner continues exactly like a twin that never saw the bad input.
"""

import warnings

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from explorer import Recorder
from explorer.adagrad import OGD, AdaGrad, Adam, FFDProximal
from explorer.errors import Diverged
from explorer.streams import decaying_spectrum, linear_regression_targets
from learner_checks import (
    accepted_or_refused_cleanly, assert_finite_state, continues_like_a_twin, keeps_working,
    learned_or_refused_cleanly, refused_cleanly,
)
from state_checks import assert_same_state, snapshot

VARIANTS = ("full", "diag", "fd", "ffd")
METHODS = ("cmd", "pds")
D = 4


def make(name: str, loss: str = "absolute", d: int = D):
    if name == "ogd":
        return OGD(d, eta=0.1, loss=loss)
    if name == "adam":
        return Adam(d, eta=0.1, loss=loss)
    variant, method = name.split("-")
    return AdaGrad(d, variant=variant, method=method, tau=2, eta=0.1, loss=loss)


NAMES = [f"{variant}-{method}" for variant in VARIANTS for method in METHODS] + ["ogd", "adam"]


def warmed_up(name: str, n: int = 15, loss: str = "absolute"):
    learner = make(name, loss)
    X = decaying_spectrum(n, D, seed=21)
    y, _ = linear_regression_targets(X, seed=22)
    learner.learn_many(X, np.sign(y) if loss in ("logistic", "squared_hinge") else y)
    return learner


def learn_each_or_refuse(learner, X, y) -> None:
    """Learn the rows one by one: each is learned with a finite state, or refused
    (ValueError) with the state exactly as before it."""
    keeps_working(learner, [lambda x=x, label=label: learner.learn(x, label) for x, label in zip(X, y)])


# -- the reproducers ---------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_learn_many_is_all_or_nothing(name):
    """Issue 13, item 5: OGD.learn_many([[1, 0], [1e200, 0]], [1, 1]) said "nothing was
    updated" with t = 1 and beta changed (the same for AdaGrad and Adam). Now the 1e200 row
    is refused before anything (||x||^2 > 1e300), and a row that passes the checks but
    fails in its round (row 1 here: ||g||^2 overflows) undoes the rows before it."""
    learner = make(name, "squared", d=2)
    refused_cleanly(learner, lambda: learner.learn_many([[1.0, 0.0], [1e200, 0.0]], [1.0, 1.0]),
                    r"X row 1 is too large")
    refused_cleanly(learner, lambda: learner.learn_many([[1.0, 0.0], [1e149, 0.0]], [1.0, 1.0]),
                    r"X row 1 \(round t = 2\): .*nothing was updated")
    assert learner.t == 0


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("variant, rows", [("fd", 2), ("ffd", 5)])
def test_a_round_whose_beta_overflows_is_rolled_back(variant, rows):
    """eta = 1e100 and delta = 1e-100 (both allowed): once the sketch has shrunk the first
    gradients away, dual averaging's H^{-1} g_bar is g_bar / delta = 1e210 and beta would be
    1e310. Before, beta became inf and stayed. Now the round is refused after the sketch
    took g, and the checkpoint puts the sketch back (ADA-FD: FD's buffer; ADA-FFD: V, M, r);
    learn_many undoes the whole call; the learner then runs like a twin that never saw it.
    The refusal is a Diverged naming the row and the round (issue 14: it was a bare
    ValueError), and the refused round sends no "shrink" event (before, ADA-FD's sketch sent
    the shrink of the row it then took back)."""
    def fresh():
        return AdaGrad(6, variant=variant, method="pds", tau=2, eta=1e100, delta=1e-100)

    X = 1e110 * np.eye(6)[:rows]
    learner = fresh()
    learner.learn_many(X[:-1], np.ones(rows - 1))
    before = snapshot(learner)
    recorder = Recorder()
    learner.add_hook(recorder)
    refusal = r"x \(round t = \d+\): .*beta is not finite.*nothing was updated"
    for play in (learner.learn, learner.step):
        with pytest.raises(Diverged, match=refusal) as error:
            play(X[-1], 1.0)
        assert (error.value.row, error.value.t) == (0, rows)
        assert_same_state(before, learner.state_dict())
    assert len(recorder) == 0
    whole = fresh()
    with pytest.raises(Diverged, match=f"X row {rows - 1} ") as error:
        whole.learn_many(X, np.ones(rows))
    assert (error.value.row, error.value.t) == (rows - 1, rows)
    assert_same_state(fresh().state_dict(), whole.state_dict())
    ordinary = np.eye(6)[::-1] * 1e-3
    continues_like_a_twin(learner, before, lambda a: a.learn_many(ordinary, np.zeros(6)).tolist(), AdaGrad)


@pytest.mark.timeout(120)
@pytest.mark.filterwarnings("error::RuntimeWarning")  # overflows are refused, not warned about
@pytest.mark.parametrize("loss", ["squared", "absolute"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_a_scale_jump_never_breaks_the_learner(variant, method, loss):
    """Issue 13, item 4: ADA-FFD after 50 rows scaled by 1e10 (squared loss: beta diverges,
    as ADA-FULL's does) got a non-finite M and raised LinAlgError, then IndexError, on every
    later row. Now the rounds that would take tr(G) past 1e300 are refused one by one with
    the state unchanged, and the ordinary rows after the jump are learned again."""
    d, tau = 40, 5
    X = decaying_spectrum(250, d, seed=23)
    y, _ = linear_regression_targets(X, seed=24)
    learner = AdaGrad(d, variant=variant, method=method, tau=tau, loss=loss)
    learner.learn_many(X[:100], y[:100])
    refused = 0
    for x, label in zip(X[100:150] * 1e10, y[100:150]):
        result = learned_or_refused_cleanly(learner, lambda: learner.learn(x, label))
        if isinstance(result, ValueError):
            assert "nothing was updated" in str(result)
            refused += 1
        assert_finite_state(learner)
    losses = learner.learn_many(X[150:], y[150:])  # ordinary rows: every one is learned
    assert np.isfinite(losses).all()
    assert_finite_state(learner)
    if variant == "ffd":
        assert learner.proximal.orthonormality_error() < 1e-10
    if loss == "absolute":  # a Lipschitz loss: AdaGrad's steps stay eta-sized, nothing diverges
        assert refused == 0


@pytest.mark.parametrize("scale", [1e10, 1e-10, 1e100, 1e-100, 1e-200, 1e-300])
@pytest.mark.parametrize("name", NAMES)
def test_jumps_in_scale_are_learned_or_refused_up_front(name, scale):
    """x1e10, x1e-10 and x1e100 jumps (and tiny scales): every row is learned with a finite
    state or refused with the state unchanged; the ordinary rows after the jump are learned."""
    learner = warmed_up(name)
    X = decaying_spectrum(30, D, seed=25)
    y, _ = linear_regression_targets(X, seed=26)
    learn_each_or_refuse(learner, X[:10] * scale, y[:10] * scale)
    assert np.isfinite(learner.learn_many(X[10:], y[10:])).all()
    assert_finite_state(learner)


@pytest.mark.parametrize("scale", [1e-160, 1e-200, 1e-300])
def test_tiny_gradients_keep_the_sketches_sound(scale):
    """Squares of entries below ~1e-154 underflow. Before: ADA-FD's row norms after a shrink
    came out 0 and its basis NaN (beta NaN at t = 4); ADA-FFD's new columns of V were off
    norm 1 by 2e-4 at 1e-160 (and at 1e-170 no column was ever opened)."""
    X = decaying_spectrum(40, 8, seed=27) * scale
    y, _ = linear_regression_targets(X, seed=28)
    fd = AdaGrad(8, variant="fd", tau=3)
    fd.learn_many(X, y)
    assert_finite_state(fd)
    ffd = AdaGrad(8, variant="ffd", tau=3)
    ffd.learn_many(X, y)
    assert ffd.rank > 0 and ffd.proximal.orthonormality_error() < 1e-12
    assert_finite_state(ffd)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("name", NAMES)
def test_subnormal_gradients_are_learned_or_refused(name):
    """Squared loss at scale 1e-160: g = 2 (z - y) x is subnormal (~1e-320). ADA-FFD
    projects it scaled by 2^600 (an earlier draft scaled by 2^1063 = inf and fed LAPACK NaN).
    Every row is learned with a finite state or refused with the state unchanged (ADA-FD's
    sketch refuses a shrink of subnormal rows: explorer.sketch.power_of_two_scale)."""
    X = decaying_spectrum(40, D, seed=31) * 1e-160
    y, _ = linear_regression_targets(X, seed=32)
    learner = make(name, "squared")
    learn_each_or_refuse(learner, X, y)
    if name.startswith("ffd"):
        assert learner.rank > 0 and learner.proximal.orthonormality_error() < 1e-12


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
@pytest.mark.parametrize("name", NAMES)
def test_classification_labels_must_be_plus_or_minus_one(name, loss):
    """Issue 13, item 9: labels of the classification losses were not checked."""
    learner = warmed_up(name, loss=loss)
    for label in (0.0, 0.5, 2.0, -3.0):
        refused_cleanly(learner, lambda: learner.learn(np.ones(D), label),
                        f"y must be -1 or \\+1 for the {loss} loss")
    refused_cleanly(learner, lambda: learner.learn_many(np.ones((3, D)), [1.0, -1.0, 0.0]),
                    r"y\[2\] must be -1 or \+1")
    learner.learn(np.ones(D), -1)  # an integer label is fine


def test_eta_and_delta_are_checked_whenever_they_change():
    """Issue 13, item 9: every argument validated, also between rounds. Issue 14: they change
    only through with_params (a new learner, validated by the constructor); assigning one is
    refused, so no value bypasses the check."""
    adagrad, adam, ogd = AdaGrad(3), Adam(3), OGD(3)
    for learner, name in ((adagrad, "eta"), (adagrad, "delta"), (adam, "eta"), (adam, "delta"),
                          (ogd, "eta")):
        for value in (0.0, -1.0, 1e-101, 1e101, np.nan, np.inf, "1", True):
            with pytest.raises(ValueError, match=name):
                learner.with_params(**{name: value})
        with pytest.raises(AttributeError):
            setattr(learner, name, 0.5)
    assert adagrad.with_params(delta=0.5).proximal.delta == 0.5 and adagrad.delta == 1.0


@pytest.mark.parametrize("kwargs, message", [
    (dict(variant=["ffd"]), "variant must be one of"),
    (dict(variant=np.array("ffd")), "variant must be one of"),
    (dict(method=None), "method must be one of"),
    (dict(loss=np.str_("hinge")), "loss must be one of"),
    (dict(tau=np.float64(3.0)), "tau must be an integer"),
    (dict(eta=np.complex128(1.0)), "eta must be a real number"),
    (dict(delta=0.0), "delta"),
    (dict(eta=1e300), r"eta must be a number in \[1e-100, 1e\+100\]"),
    (dict(d=10 ** 5, variant="full"), "at most 1e\\+08 entries"),
    (dict(d=6, tau=10 ** 6), "at most 1e\\+08 entries"),
    (dict(d=10 ** 9, variant="diag"), "at most 1e\\+08 entries"),
])
def test_constructor_arguments_are_checked(kwargs, message):
    """Including sizes: a matrix past 1e8 entries was a MemoryError (tau = 10^6: 29 TiB)."""
    arguments = {"d": 3, **kwargs}
    with pytest.raises(ValueError, match=message):
        AdaGrad(arguments.pop("d"), **arguments)


# -- state files ------------------------------------------------------------------------------------

def array_keys(state: dict) -> list[str]:
    return [key for key, value in state.items() if isinstance(value, np.ndarray) and value.size]


# keys a state of an older version may lack: they load with a lower bound in their place
OPTIONAL = ("gradient_mass", "proximal.sketch.frobenius_squared")


@pytest.mark.parametrize("name", NAMES)
def test_tampered_states_are_refused_naming_the_key(name):
    """Issue 13, item 8: NaN, a wrong shape, a negative counter loaded and ran; a missing
    key was a bare KeyError. Each is now a ValueError naming the key, from_state_dict and
    in-place load_state_dict alike, and the learner is left as it was."""
    learner = warmed_up(name)
    state = learner.state_dict()
    cls = type(learner)
    tampered = []
    for key in array_keys(state):
        for value in (np.nan, np.inf):
            bad = dict(state)
            bad[key] = state[key].copy()
            bad[key].flat[0] = value
            tampered.append((key, bad))
        tampered.append((key, {**state, key: np.append(state[key], 1.0)}))
    for key in state:
        if key not in OPTIONAL:
            tampered.append((key, {k: v for k, v in state.items() if k != key}))
    for key in ("t", "n_shrinks", "proximal.r", "proximal.sketch.n_seen", "eta", "delta",
                "delta_total", "gradient_mass"):
        if key in state:
            tampered.append((key, {**state, key: -1}))
    for key, bad in tampered:
        with pytest.raises(ValueError, match=repr(key).replace(".", r"\.") + "|" + key.split(".")[-1]):
            cls.from_state_dict(bad)
        refused_cleanly(learner, lambda: learner.load_state_dict(bad))


@pytest.mark.parametrize("key, value, name", [
    ("proximal.squares", lambda s: -s, "diag-cmd"),
    ("v", lambda v: -v - 1.0, "adam"),
    ("proximal.values", lambda v: v - v.max() - 1.0, "ffd-cmd"),
    ("proximal.values", lambda v: v[::-1], "full-cmd"),
    ("proximal.values", lambda v: v * 2.0, "full-pds"),
    ("proximal.M", lambda M: M + np.eye(len(M), k=1), "ffd-pds"),
    ("proximal.V", lambda V: V * 2.0, "ffd-cmd"),
    ("proximal.G", lambda G: G - 2 * np.diag(np.diag(G)), "full-cmd"),
    ("proximal.sigma", lambda s: -s, "fd-cmd"),
    ("g_bar", lambda g: g + 1.0, "diag-cmd"),
    ("g_bar", lambda g: g + 1e200, "diag-pds"),
    ("m", lambda m: m + 1e200, "adam"),
    ("v", lambda v: v + 1e301, "adam"),
    ("proximal.vectors", lambda U: U * 2.0, "full-cmd"),
    ("proximal.vectors", lambda U: U * 2.0, "ffd-pds"),
    ("proximal.basis", lambda B: B * 2.0, "fd-cmd"),
    ("proximal.sigma", lambda s: s * 1e3, "fd-pds"),
    ("eta", lambda eta: 1e200, "ogd"),
    ("gradient_mass", lambda m: 0.0, "ffd-cmd"),
    ("gradient_mass", lambda m: 1e301, "diag-pds"),
    ("n_shrinks", lambda n: n + 1, "fd-pds"),
    ("n_shrinks", lambda n: 1, "full-cmd"),
    ("proximal.r", lambda r: 2 * 2, "ffd-cmd"),
    ("tau", lambda tau: 3, "ffd-cmd"),
    ("variant", lambda v: "fd", "ffd-cmd"),
    ("beta1", lambda b: 0.5, "adam"),
])
def test_states_that_break_an_invariant_are_refused(key, value, name):
    """Finite numbers of the right shapes that no run could have written: negative sums of
    squares, unsorted or inconsistent eigenvalues, an asymmetric M, a V that is not
    orthonormal, a gradient total below what G holds, a rank of 2 tau, another setting."""
    learner = warmed_up(name)
    state = learner.state_dict()
    bad = {**state, key: value(np.asarray(state[key]) if isinstance(state[key], np.ndarray) else state[key])}
    refused_cleanly(learner, lambda: learner.load_state_dict(bad), key.split(".")[-1])


@pytest.mark.parametrize("name", [name for name in NAMES if name not in ("ogd", "adam")])
def test_a_state_saved_before_gradient_mass_was_kept_still_loads(name):
    learner = warmed_up(name)
    state = learner.state_dict()
    old = {key: value for key, value in state.items() if key != "gradient_mass"}
    resumed = AdaGrad.from_state_dict(old)
    assert 0 < resumed.gradient_mass <= learner.gradient_mass * (1 + 1e-12)
    X = decaying_spectrum(10, D, seed=29)
    y, _ = linear_regression_targets(X, seed=30)
    np.testing.assert_array_equal(learner.learn_many(X, y), resumed.learn_many(X, y))
    np.testing.assert_array_equal(learner.beta, resumed.beta)


def test_ffd_never_gives_lapack_a_non_finite_matrix():
    """_eigh refuses NaN/inf (FloatingPointError) before LAPACK; rollback undoes the add."""
    proximal = FFDProximal(3, 2, 1.0)
    proximal.add(np.array([1.0, 0.0, 0.0]))
    before = proximal.state_dict()
    saved = proximal.checkpoint()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(FloatingPointError, match="not finite"):
            proximal.add(np.array([np.inf, 1.0, 0.0]))
    proximal.rollback(saved)
    assert_same_state(before, proximal.state_dict())


# -- fuzz --------------------------------------------------------------------------------------------

SCALES = [0.0, -300.0, -200.0, -160.0, -100.0, -10.0, 0.0, 0.0, 0.0, 10.0, 100.0, 140.0, 149.0, 151.0, 200.0]
JUNK = [np.nan, np.inf, -np.inf, 0.0, 0.5, 2.0, -1.0, 1.0, 1e300, -1e300, 1e150]


@st.composite
def operations(draw, classification: bool):
    """A few ``learn`` / ``learn_many`` calls with rows scaled by 10^k, sometimes NaN or
    inf in a row, sometimes a junk label."""
    ops = []
    for _ in range(draw(st.integers(1, 8))):
        n = draw(st.integers(1, 4))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        X = rng.standard_normal((n, D)) * 10.0 ** np.array(draw(st.lists(
            st.sampled_from(SCALES), min_size=n, max_size=n)))[:, None]
        y = np.where(rng.standard_normal(n) > 0, 1.0, -1.0) if classification else \
            X @ rng.standard_normal(D)
        if draw(st.integers(0, 5)) == 0:
            X[draw(st.integers(0, n - 1)), draw(st.integers(0, D - 1))] = draw(
                st.sampled_from([np.nan, np.inf, -np.inf]))
        if draw(st.integers(0, 4)) == 0:
            y[draw(st.integers(0, n - 1))] = draw(st.sampled_from(JUNK))
        ops.append(("learn", X[0], y[0]) if n == 1 and draw(st.booleans()) else ("learn_many", X, y))
    return ops


def apply(learner, op):
    kind, X, y = op
    return getattr(learner, kind)(X, y)


@pytest.mark.timeout(300)
@pytest.mark.filterwarnings("error::RuntimeWarning")
@settings(max_examples=120)
@given(st.sampled_from(NAMES), st.sampled_from(["absolute", "squared", "logistic", "squared_hinge"]),
       st.data())
def test_fuzz_refused_input_changes_nothing_and_the_rest_runs_like_a_twin(name, loss, data):
    learner, twin = warmed_up(name, loss=loss), warmed_up(name, loss=loss)
    for op in data.draw(operations(loss in ("logistic", "squared_hinge"))):
        result = accepted_or_refused_cleanly(learner, lambda: apply(learner, op))
        if isinstance(result, ValueError):
            event(f"refused: {str(result).split(': ')[1][:40] if ': ' in str(result) else str(result)[:40]}")
            continue
        event("accepted")
        np.testing.assert_array_equal(result, apply(twin, op))
    assert_same_state(snapshot(learner), snapshot(twin))


@st.composite
def tampers(draw, state: dict):
    """A change to a state dict that no run could have written."""
    arrays = array_keys(state)
    numbers = [key for key, value in state.items()
               if key != "kind" and not isinstance(value, (str, np.ndarray))]
    kind = draw(st.sampled_from(["entry", "shape", "missing", "number", "type"]))
    bad = dict(state)
    if kind == "entry":
        key = draw(st.sampled_from(arrays))
        bad[key] = state[key].copy()
        bad[key].flat[draw(st.integers(0, state[key].size - 1))] = draw(
            st.sampled_from([np.nan, np.inf, -np.inf]))
    elif kind == "shape":
        key = draw(st.sampled_from(arrays))
        bad[key] = draw(st.sampled_from([state[key].ravel()[:-1], np.append(state[key], 0.0),
                                         state[key][None], np.zeros(0)]))
    elif kind == "missing":
        del bad[draw(st.sampled_from([key for key in state if key not in OPTIONAL]))]
    elif kind == "number":
        key = draw(st.sampled_from(numbers))
        bad[key] = draw(st.sampled_from([-1, np.nan, np.inf, -np.inf]))
    else:
        key = draw(st.sampled_from(numbers + ["kind"]))
        bad[key] = draw(st.sampled_from(["3", None, [1, 2], 1.5 if isinstance(state[key], int) else "x"]))
    return bad


@pytest.mark.timeout(300)
@settings(max_examples=200)
@given(st.sampled_from(NAMES), st.data())
def test_fuzz_tampered_states_are_refused_and_change_nothing(name, data):
    learner = warmed_up(name, n=data.draw(st.integers(1, 12)))
    state = learner.state_dict()
    if not array_keys(state):
        return
    bad = data.draw(tampers(state))
    with pytest.raises(ValueError):
        type(learner).from_state_dict(bad)
    refused_cleanly(learner, lambda: learner.load_state_dict(bad))
