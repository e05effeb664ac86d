"""Extreme and broken input for the FM learners (issue 13): all or nothing, or finite.

S-FTRL (Luo et al., KDD 2018, Algorithm 5 on Generalized FD), FTRLFM and OGDFM, through
``learn``, ``progressive``, ``from_state_dict`` and the in-place ``load_state_dict``.
Every outcome is either a refusal -- a ``ValueError`` with every array of ``state_dict()``
bit-identical, after which the learner continues exactly like a twin that never saw the
bad input -- or an acceptance with a finite state that keeps working.

The first block holds one reproducer per defect (each failed before the fix); the
second, hypothesis fuzz over scales 1e-320..1e320, NaN/inf, label junk, sparse junk and
tampered states, each under a time limit. A RuntimeWarning (numpy's overflow warning) is
an error: a refusal says what is wrong once, as a ValueError.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer import Recorder
from explorer.errors import Diverged
from explorer.fm import (
    FTRLFM,
    OGDFM,
    SketchedFTRL,
    as_fm_row,
    augment,
    progressive,
    synthetic_ratings,
)
import learner_checks as checks
from learner_checks import outcomes, refused_cleanly
from state_checks import assert_same_state, same_state, snapshot, tamper

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")  # refusals are quiet, too

D = 6

LEARNERS = {
    "sftrl": lambda eta=0.1: SketchedFTRL(D, m=2, eta=eta),
    "sftrl-exact": lambda eta=0.1: SketchedFTRL(D, m=3, eta=eta, fast=False),
    "sftrl-logistic": lambda eta=0.25: SketchedFTRL(D, m=2, eta=eta, loss="logistic"),
    "ftrl": lambda eta=0.1: FTRLFM(D, eta=eta),
    "ogd": lambda eta=0.5: OGDFM(D, eta=eta),
    "ogd-logistic": lambda eta=0.5: OGDFM(D, eta=eta, loss="logistic"),
}
NAMES = sorted(LEARNERS)
SPECIAL = [np.nan, np.inf, -np.inf, 1e308, 1e200, 1e160, 1e150, 1e-150, 1e-300, 5e-324, 0.0]
LABELS = [np.nan, np.inf, -np.inf, 1e308, 1e200, 1e151, 1e150, -1e150, 1e-300, 0.0, 2.0, "1",
          1 + 1j, None, True, [1.0]]


# -- helpers ------------------------------------------------------------------------------------

def labels_for(fm, rng, n):
    return rng.choice([-1.0, 1.0], n) if fm.loss == "logistic" else rng.normal(1.0, 2.0, n)


def _pair(rng):
    nnz = int(rng.integers(1, 4))
    return rng.choice(D, size=nnz, replace=False), rng.choice([1.0, -0.5, 2.0], size=nnz)


def sparse_rows(rng, n):
    """n ordinary rows as (indices, values) pairs of 1-3 entries."""
    return [_pair(rng) for _ in range(n)]


def warmed(name, seed=0, n=15, **kwargs):
    """The learner ``name`` after n ordinary rounds, dense and sparse rows alternating."""
    fm = LEARNERS[name](**kwargs)
    rng = np.random.default_rng(seed)
    labels = labels_for(fm, rng, n)
    for t in range(n):
        fm.learn(_pair(rng) if t % 2 else rng.standard_normal(D), labels[t])
    return fm


def with_eta(fm, eta):
    """``fm`` with another eta and the same ``Theta`` (or sketch): a state whose eta and
    ``Theta`` are independent, so a huge eta starts from an ordinary ``Theta``. (FTRLFM's
    ``with_params(eta=...)`` rescales ``Theta`` with eta, as FTRL plays it.)"""
    return type(fm).from_state_dict({**fm.state_dict(), "eta": eta})


def ordinary_rounds(fm, seed=7, n=12) -> list:
    """Ordinary rounds through learn and progressive: each loss, or the refusal's message
    (a learner with a huge eta diverges on them)."""
    rng = np.random.default_rng(seed)
    X = scipy.sparse.csr_array(rng.standard_normal((n, D)) * (rng.random((n, D)) < 0.5))
    calls = [lambda x=x, y=y: fm.learn(x, y) for x, y in zip(sparse_rows(rng, n), labels_for(fm, rng, n))]
    calls.append(lambda y=labels_for(fm, rng, n): progressive(fm, X, y)["loss"].tolist())
    return outcomes(calls)


#: after a refusal, ``fm`` and a twin loaded from its earlier state play ordinary rounds alike
continues_like_a_twin = partial(checks.continues_like_a_twin, play=ordinary_rounds)


def keeps_working(fm) -> None:
    """An accepted input left a finite state; ordinary rounds then run or are refused cleanly."""
    rng = np.random.default_rng(3)
    checks.keeps_working(fm, [lambda x=x, y=y: fm.learn(x, y)
                              for x, y in zip(sparse_rows(rng, 4), labels_for(fm, rng, 4))])


def refused_cleanly_or_finite(fm, call) -> None:
    """Run ``call()``: refused with the state unchanged, or accepted and still working."""
    checks.accepted_or_refused_cleanly(fm, call, play=ordinary_rounds, check=keeps_working)


def dense(x, d=D):
    if isinstance(x, tuple):
        row = np.zeros(d)
        row[x[0]] = x[1]
        return row
    return np.asarray(x, dtype=float)


def check_fd_parts(fm, loaded_rows: dict, rows, q, delta_before: dict) -> None:
    """Each part of S-FTRL's sketch is an FD sketch of (its rows when loaded, then the rows
    it received): ``A^T A - B^T B`` PSD with largest eigenvalue <= the delta it shrank by."""
    for sign, part in (("+", fm.sketch.positive), ("-", fm.sketch.negative)):
        mask = q > 0 if sign == "+" else q < 0
        H = np.array([np.sqrt(abs(s)) * augment(dense(x, fm.d)) for s, x, keep in zip(q, rows, mask) if keep])
        A = np.vstack([loaded_rows[sign], H.reshape(-1, fm.d + 1)])
        gap = np.linalg.eigvalsh(A.T @ A - part.rows.T @ part.rows)
        mass = max(1.0, float(np.sum(A ** 2)))
        assert gap[0] >= -1e-9 * mass
        assert gap[-1] <= part.delta_total - delta_before[sign] + 1e-9 * mass


# -- reproducers: each failed before the fix -------------------------------------------------------

DIVERGING_ETA = {"sftrl": 1e3, "sftrl-exact": 1e3, "ftrl": 1e3, "ogd": 1e3,
                 "sftrl-logistic": 1e149, "ogd-logistic": 1e149}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_progressive_that_diverges_midway_changes_nothing(name, sparse):
    """Defect 5: progressive raised FloatingPointError after learning the rows before it."""
    fm = with_eta(warmed(name, eta=DIVERGING_ETA[name] / 1e6), DIVERGING_ETA[name])
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, D))
    X = scipy.sparse.csr_array(X) if sparse else X
    before = snapshot(fm)
    with pytest.raises(ValueError, match="diverged; lower eta") as error:
        progressive(fm, X, labels_for(fm, rng, 80))
    assert isinstance(error.value, Diverged) and isinstance(error.value, FloatingPointError)
    assert 0 < error.value.row < 80 and error.value.t == 15 + error.value.row + 1
    assert f"row {error.value.row} of this call" in str(error.value)
    assert_same_state(before, snapshot(fm))
    continues_like_a_twin(fm, before)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", NAMES)
def test_numpy_set_to_raise_gives_the_same_refusal(name):
    """Under np.errstate(all="raise") numpy's own FloatingPointError (an overflowing
    prediction) is the same Diverged refusal, with the round not counted."""
    squared = LEARNERS[name]().loss == "squared"
    fm = LEARNERS[name](eta=1.0 if squared else 1e150)
    fm.learn(np.full(D, 1e70), 1e150 if squared else 1.0)  # Theta's entries near 1e290
    before = snapshot(fm)
    with np.errstate(all="raise"), pytest.raises(Diverged, match="row 0 of this call"):
        fm.learn(np.full(D, 1e10), 1.0)  # z = a^T Theta a overflows
    assert_same_state(before, snapshot(fm))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", NAMES)
def test_labels_beyond_1e150_are_refused_before_anything_changes(name):
    """The lead's fuzz: a label of 1e200 made the loss overflow, a FloatingPointError."""
    fm = warmed(name)
    for label in (1e200, -1e151, np.inf):
        refused_cleanly(fm, lambda: fm.learn(np.ones(D), label),
                        r"y must be a finite number in \[-1e\+150, 1e\+150\]" if fm.loss == "squared" else "y")
        refused_cleanly(fm, lambda: progressive(fm, np.ones((3, D)), [1.0, 1.0, label]), r"y\[2\]")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", NAMES)
def test_a_row_whose_square_overflows_is_refused(name):
    """A row of 1e160s: FTRL stored inf in Theta; S-FTRL counted the round (t) and then
    had FD refuse the row. Now ``||a_hat||^2 <= 1e300`` is checked first."""
    fm = warmed(name)
    for x in (np.full(D, 1e160), ([0, 3], [1e151, 1e151]), scipy.sparse.csr_array(np.full((1, D), 1e155))):
        refused_cleanly(fm, lambda: fm.learn(x, 1.0), "too large")
    refused_cleanly(fm, lambda: progressive(fm, np.vstack([np.ones(D), np.full(D, 1e160)]), [1.0, 1.0]),
                    "X row 1 is too large")


@pytest.mark.timeout(60)
def test_theta_stays_finite_when_a_step_would_overflow_it():
    """A legal row and label whose update overflows: FTRL stored inf; now refused."""
    for fm in (FTRLFM(1, eta=1.0), OGDFM(1, eta=1.0)):
        before = snapshot(fm)
        with pytest.raises(Diverged, match="an entry of Theta would pass 1e\\+300"):
            fm.learn([1e149], 1e150)
        assert_same_state(before, snapshot(fm))
        fm.learn([1.0], 1.0)
        checks.assert_finite_state(fm)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", NAMES)
def test_a_corrupted_sparse_matrix_is_refused_before_the_first_round(name):
    """A hand-built CSR with a column index past d: an IndexError after learning row 0."""
    fm = warmed(name)
    out_of_range = scipy.sparse.csr_array((np.ones(2), np.array([1, D + 3]), np.array([0, 1, 2])), shape=(2, D))
    falling = scipy.sparse.csr_array((np.ones(2), np.array([1, 2]), np.array([0, 2, 1])), shape=(2, D))
    for X in (out_of_range, falling):
        refused_cleanly(fm, lambda: progressive(fm, X, [1.0, 1.0]), "not a valid sparse matrix")
    with_nan = scipy.sparse.csr_array(np.array([[1.0, 0, 0, 0, 0, 0], [0, np.nan, 0, 0, 0, 0]]))
    refused_cleanly(fm, lambda: progressive(fm, with_nan, [1.0, 1.0]), "row 1 contains NaN")


def _corrupted(kind):
    """Sparse matrices whose index structure was changed after scipy checked it."""
    if kind == "csc row past n":
        return scipy.sparse.csc_array((np.ones(2), np.array([0, 5_000_000]), np.array([0, 1, 2, 2, 2, 2, 2])),
                                      shape=(2, D))
    if kind == "coo column past d":
        X = scipy.sparse.coo_array((np.ones(2), (np.array([0, 1]), np.array([0, 1]))), shape=(2, D))
        X.coords[1][1] = 10 ** 7
        return X
    X = scipy.sparse.csr_array(np.ones((2, D)))
    if kind == "csr column past d":
        X.indices[3] = 10 ** 7
    else:  # "csr falling indptr"
        X.indptr[1] = X.indptr[2] + 1
    return X


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["csc row past n", "coo column past d", "csr column past d",
                                  "csr falling indptr"])
def test_a_sparse_matrix_changed_after_scipy_checked_it_is_refused(kind):
    """Before the fix, progressive converted such a matrix with scipy's compiled code, which
    trusts the indices: a segmentation fault (csc), an IndexError or a RuntimeError."""
    fm = warmed("ftrl")
    refused_cleanly(fm, lambda: progressive(fm, _corrupted(kind), [1.0, 1.0]),
                    "not a valid sparse matrix|exceeds matrix dimension")
    if kind == "csr column past d":
        row = scipy.sparse.csr_array(np.ones((1, D)))
        row.indices[-1] = 10 ** 7
        refused_cleanly(fm, lambda: fm.learn(row, 1.0), "not a valid sparse matrix")


@pytest.mark.timeout(60)
def test_complex_and_string_input_is_refused_not_converted():
    """Complex sparse values lost their imaginary part (a warning only), strings were parsed."""
    fm = warmed("sftrl")
    complex_X = scipy.sparse.csr_array(np.full((2, D), 1.0 + 1.0j))
    refused_cleanly(fm, lambda: progressive(fm, complex_X, [1.0, 1.0]), "real numbers")
    refused_cleanly(fm, lambda: fm.learn(complex_X[[0]], 1.0), "real numbers")
    refused_cleanly(fm, lambda: fm.learn(([0, 1], ["1.5", "2"]), 1.0), "real numbers")
    refused_cleanly(fm, lambda: progressive(fm, np.ones((2, D)), [1.0, "2"]), r"y\[1\] must be a real number")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fast", [True, False])
def test_a_failed_shrink_midway_puts_everything_back(fast, monkeypatch):
    """S-FTRL's round counted itself before FD refused; progressive kept the earlier rows."""
    import explorer.fm._shrink as shrink_module

    fm = SketchedFTRL(40, m=2, eta=0.05, fast=fast)
    rng = np.random.default_rng(1)
    X = scipy.sparse.csr_array((np.ones(120), rng.integers(0, 40, 120), np.arange(0, 121, 2)), shape=(60, 40))
    X.sum_duplicates()
    progressive(fm, X[:10], rng.normal(3, 1, 10))
    before = snapshot(fm)
    calls = []
    real = shrink_module.gram_shrink

    def failing(*args):
        calls.append(1)
        if len(calls) == 3:
            raise np.linalg.LinAlgError("eigh did not converge")
        return real(*args)

    monkeypatch.setattr(shrink_module, "gram_shrink", failing)
    with pytest.raises(Diverged, match="shrink failed") as error:
        progressive(fm, X[10:], rng.normal(3, 1, 50))
    assert error.value.row > 0 and same_state(before, snapshot(fm))
    monkeypatch.undo()
    continues_like_a_twin(fm, before)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", NAMES)
def test_bad_states_are_refused_naming_the_key(name):
    """Defect 8: NaN, a negative counter and a wrong shape loaded; a missing key was a KeyError."""
    fm = warmed(name)
    cls = type(fm)
    state = fm.state_dict()
    matrix = "theta" if "theta" in state else "sketch.negative.buffer"
    cases = {"drop t": ({k: v for k, v in state.items() if k != "t"}, "'t'"),
             "negative t": ({**state, "t": -3}, "'t' must be an integer >= "),
             "NaN": ({**state, matrix: np.where(np.arange(state[matrix].size).reshape(state[matrix].shape) == 3,
                                                np.nan, state[matrix])}, "NaN or inf"),
             "shape": ({**state, matrix: state[matrix][:-1]}, "shape"),
             "eta": ({**state, "eta": -1.0}, "'eta'"),
             "loss": ({**state, "loss": "hinge"}, "'loss'")}
    if name.startswith("sftrl"):
        cases["t below the rows seen"] = ({**state, "t": 0}, "'t' must be an integer >= ")
        cases["memo NaN"] = ({**state, "memo.+.gram_diag": np.array([np.nan])}, "memo")
        cases["memo index past d"] = ({**state, "memo.-.sparse_known": True, "memo.-.sparse_lengths":
                                       np.array([1]), "memo.-.sparse_indices": np.array([D + 1])}, "memo.-.")
    else:
        cases["huge theta"] = ({**state, "theta": state["theta"] + 1e305}, "'theta' must be entries within")
        cases["theta at t = 0"] = ({**state, "t": 0}, "all zero at t = 0")
    live = warmed(name)
    for case, (bad, message) in cases.items():
        with pytest.raises(ValueError, match=message):
            cls.from_state_dict(bad)
        before = snapshot(live)
        with pytest.raises(ValueError, match=message):
            live.load_state_dict(bad)
        assert same_state(before, snapshot(live)), case
    live.load_state_dict(warmed(name, seed=1).state_dict())  # in place, keeping the object
    assert same_state(snapshot(live), snapshot(warmed(name, seed=1)))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["gram times 10", "gram over 10", "gram reversed", "column dropped"])
def test_a_tampered_memo_cannot_break_the_sketch(how):
    """S-FTRL's memo (what its sparse shrink knows about a part's rows) loaded as saved,
    true or not: a wrong gram_diag or a missing column made the next shrinks violate
    Frequent Directions' guarantee. Now a memo that does not describe the rows is dropped
    (the shrink forms B B^T in full, FD's own), and the guarantee holds."""
    d = 40
    for seed in range(6):
        rng = np.random.default_rng(seed)
        rows = [(rng.choice(d, 2, replace=False), np.ones(2)) for _ in range(120)]
        labels = rng.normal(3, 1, 120)
        fm = SketchedFTRL(d, m=3, eta=0.05)
        for t0 in range(1, 120):
            fm.learn(rows[t0 - 1], labels[t0 - 1])
            state = fm.state_dict()
            if t0 > 10 and state["memo.-.sparse_lengths"].size >= 2 and state["memo.-.gram_diag"].size >= 2:
                break
        gram, lengths = state["memo.-.gram_diag"], state["memo.-.sparse_lengths"]
        if how == "gram times 10":
            state["memo.-.gram_diag"] = gram * 10
        elif how == "gram over 10":
            state["memo.-.gram_diag"] = gram / 10
        elif how == "gram reversed":
            state["memo.-.gram_diag"] = gram[::-1].copy()
        else:
            state["memo.-.sparse_indices"] = state["memo.-.sparse_indices"][1:]
            state["memo.-.sparse_lengths"] = lengths - np.eye(lengths.size, dtype=lengths.dtype)[0]
        loaded = SketchedFTRL.from_state_dict(state)
        assert not loaded.state_dict()["memo.-.sparse_known"]  # dropped: "unknown"
        parts = {"+": loaded.sketch.positive, "-": loaded.sketch.negative}
        start = {sign: part.rows.copy() for sign, part in parts.items()}
        delta = {sign: part.delta_total for sign, part in parts.items()}
        recorder = Recorder(kinds=("step",))
        loaded.add_hook(recorder)
        for x, y in zip(rows[t0:], labels[t0:]):
            loaded.learn(x, y)
        check_fd_parts(loaded, start, rows[t0:], recorder.columns("step")["gradient_scale"], delta)


@pytest.mark.timeout(60)
def test_constructors_and_eta_refuse_junk():
    """FTRLFM(d=10**6) raised MemoryError; eta could be set to NaN after construction (it
    cannot be set at all now: with_params(eta=...) checks it like the constructor)."""
    with pytest.raises(ValueError, match="more memory than there is"):
        FTRLFM(10 ** 6)
    for fm in (SketchedFTRL(3), FTRLFM(3), OGDFM(3)):
        for junk in (np.nan, 0.0, -1.0, np.inf, "0.1", True, 1 + 1j):
            with pytest.raises(ValueError, match="eta"):
                fm.with_params(eta=junk)
            with pytest.raises(ValueError, match="eta"):
                type(fm)(3, eta=junk)
        with pytest.raises(AttributeError):
            fm.eta = np.nan
        assert fm.eta == 0.02 or fm.eta == 0.5
        assert fm.with_params(eta=None).eta == fm.eta  # None: the loss's default, as constructed
    for kwargs in (dict(m=True), dict(m=2.0), dict(fast=1), dict(loss=None), dict(loss=["squared"]),
                   dict(d=np.int64(0)), dict(eta=1 + 1j)):
        with pytest.raises(ValueError):
            SketchedFTRL(**{"d": 3, **kwargs})


@pytest.mark.timeout(60)
def test_synthetic_ratings_refuses_a_seed_that_is_not_an_integer():
    """A string seed reached numpy's default_rng: a TypeError, not a ValueError."""
    for seed in ("x", -1, 1.5, True):
        with pytest.raises(ValueError, match="seed must be an integer >= 0"):
            synthetic_ratings(10, n_users=5, n_items=5, seed=seed)
    assert synthetic_ratings(10, n_users=5, n_items=5, seed=None).X.shape == (10, 10)


@pytest.mark.timeout(60)
def test_a_state_from_an_earlier_version_still_loads():
    """States saved before FD kept ``frobenius_squared``, and a memo saying
    gram_diag_known False (the format allows it): both load and continue."""
    fm = warmed("sftrl", n=30)
    state = {key: value for key, value in fm.state_dict().items() if not key.endswith("frobenius_squared")}
    state["memo.+.gram_diag_known"] = False
    loaded = SketchedFTRL.from_state_dict(state)
    assert not loaded.state_dict()["memo.+.sparse_known"]
    ordinary_rounds(loaded)
    checks.assert_finite_state(loaded)


# -- fuzz ---------------------------------------------------------------------------------------------

@st.composite
def extreme_rows(draw):
    """One row, ordinary but for one extreme or broken thing, and a label."""
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    how = draw(st.sampled_from(["entry", "scale", "pair", "pair junk", "scipy", "scipy junk", "label"]))
    x = rng.standard_normal(D)
    label = draw(st.sampled_from([1.0, -1.0]))
    if how == "entry":
        x[draw(st.integers(0, D - 1))] = draw(st.sampled_from(SPECIAL))
    elif how == "scale":
        with np.errstate(over="ignore", under="ignore"):
            x = x * np.power(10.0, draw(st.integers(-320, 320)))
    elif how == "pair":
        idx, val = _pair(rng)
        with np.errstate(over="ignore", under="ignore"):
            x = (idx, val * np.power(10.0, draw(st.integers(-320, 320))))
    elif how == "pair junk":
        x = draw(st.sampled_from([([0, D], [1.0, 1.0]), ([-1], [1.0]), ([1, 1], [1.0, 2.0]),
                                  ([0.0], [1.0]), ([0, 1], [1.0]), ([0], [np.nan]), ([0], ["1"]),
                                  ([0], [1 + 1j]), (np.array([], dtype=float), []), ([True], [1.0])]))
    elif how == "scipy":
        with np.errstate(over="ignore", under="ignore"):
            x = scipy.sparse.csr_array(x[None, :] * np.power(10.0, draw(st.integers(-320, 320))))
    elif how == "scipy junk":
        x = draw(st.sampled_from([
            scipy.sparse.csr_array((np.ones(1), np.array([D + 2]), np.array([0, 1])), shape=(1, D)),
            scipy.sparse.csr_array(np.full((1, D), np.inf)), scipy.sparse.csr_array(np.ones((2, D))),
            scipy.sparse.csr_array(np.full((1, D), 1j)), scipy.sparse.coo_array(np.ones(D)),
            scipy.sparse.csr_array((1, D))]))
    else:
        label = draw(st.sampled_from(LABELS))
    return how, x, label


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=50)
@given(case=extreme_rows())
def test_learn_refuses_cleanly_or_stays_finite(name, case):
    _, x, label = case
    fm = warmed(name)
    refused_cleanly_or_finite(fm, lambda: fm.learn(x, label))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=40)
@given(case=extreme_rows(), position=st.integers(0, 5), sparse=st.booleans(),
       eta_scale=st.sampled_from([1.0, 1.0, 1e3, 1e150]))
def test_progressive_is_all_or_nothing(name, case, position, sparse, eta_scale):
    """A stream with one extreme row or label at ``position``, sometimes with an eta that
    makes it diverge: either every round is learnt or none is."""
    how, x, label = case
    fm = warmed(name)
    fm = with_eta(fm, fm.eta * eta_scale)
    rng = np.random.default_rng(position)
    rows = list(rng.standard_normal((6, D)))
    labels = list(labels_for(fm, rng, 6))
    if isinstance(x, tuple) or scipy.sparse.issparse(x):
        try:  # (scipy's toarray writes out of bounds on an index past the shape: check first)
            x = dense(x) if isinstance(x, tuple) else as_fm_row(x, D) and x.toarray().ravel()
        except (ValueError, IndexError, TypeError):
            x = np.full(D, np.nan)  # junk that cannot even be densified
    rows[position], labels[position] = x, label
    try:
        X = np.array(rows, dtype=float)
    except (ValueError, TypeError):
        X = rows  # ragged or non-numeric on purpose: progressive gets the list
    if sparse and isinstance(X, np.ndarray) and X.ndim == 2:
        X = scipy.sparse.csr_array(X)
    refused_cleanly_or_finite(fm, lambda: progressive(fm, X, labels))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60)
@given(data=st.data())
def test_a_tampered_state_is_refused_or_loads_a_sound_learner(name, data):
    """From a file or in place: refused with the live learner untouched, or loaded finite
    and working; an S-FTRL sketch then keeps Frequent Directions' guarantee on what it
    was loaded with plus what it learns."""
    original = warmed(name, n=int(data.draw(st.integers(5, 25)))).state_dict()
    key = data.draw(st.sampled_from(sorted(k for k in original if k != "kind")))
    how = data.draw(st.sampled_from(["nan", "inf", "huge", "negative", "scale", "reverse", "drop",
                                     "shape", "string", "bool", "float"]))
    state = tamper(original, key, how)
    cls = type(LEARNERS[name]())
    try:
        loaded = cls.from_state_dict(state)
    except ValueError:
        pass
    else:
        keeps_working(loaded)
        if name.startswith("sftrl"):
            loaded = cls.from_state_dict(state)
            parts = {"+": loaded.sketch.positive, "-": loaded.sketch.negative}
            start = {sign: part.rows.copy() for sign, part in parts.items()}
            delta = {sign: part.delta_total for sign, part in parts.items()}
            recorder = Recorder(kinds=("step",))
            loaded.add_hook(recorder)
            rng = np.random.default_rng(4)
            learnt = []
            for x, y in zip(sparse_rows(rng, 20), labels_for(loaded, rng, 20)):
                try:
                    loaded.learn(x, y)
                    learnt.append(x)
                except ValueError:  # diverged on a legal but wild state: refused, unchanged
                    pass
            if learnt:
                check_fd_parts(loaded, start, learnt, recorder.columns("step")["gradient_scale"], delta)
    live = warmed(name)
    refused_cleanly_or_finite(live, lambda: live.load_state_dict(state))


@pytest.mark.timeout(300)
@settings(max_examples=40)
@given(seed=st.integers(0, 2 ** 16), log_scale=st.integers(-160, 70), logistic=st.booleans(),
       fast=st.booleans())
def test_every_state_a_run_writes_loads_back_bit_for_bit(seed, log_scale, logistic, fast):
    """S-FTRL's memo is kept on reload for every state a run writes, at every scale (the
    check of C C^T against gram_diag must never drop a true memo): state_dict ->
    from_state_dict -> state_dict is the identity, and the in-place rollback relies on it."""
    rng = np.random.default_rng(seed)
    fm = SketchedFTRL(30, m=2, eta=0.05, loss="logistic" if logistic else "squared", fast=fast)
    for t in range(60):
        x = (rng.choice(30, 2, replace=False), np.ones(2) * 10.0 ** log_scale) if t % 3 else \
            rng.standard_normal(30) * 10.0 ** log_scale
        try:
            fm.learn(x, float(rng.choice([-1.0, 1.0])) if logistic else float(rng.normal(0, 10.0 ** log_scale)))
        except ValueError:
            pass
        state = snapshot(fm)
        assert same_state(state, snapshot(SketchedFTRL.from_state_dict(state)))
