"""explorer.run: History and run() on sketches and on a minimal online learner."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer import (
    FrequentDirections,
    GeneralizedFrequentDirections,
    RandomProjectionSketch,
    Recorder,
    RobustFrequentDirections,
)
from explorer.hooks import Observable, StepRecord
from explorer.metrics import covariance_error
from explorer.history import History
from explorer.run import lead_since, run


class MeanRegressor(Observable):
    """A tiny online learner: predicts the running mean of the labels, squared loss."""

    def __init__(self):
        super().__init__()
        self.total, self.count = 0.0, 0

    def predict(self, x):
        return self.total / self.count if self.count else 0.0

    def learn(self, x, y=None):
        loss = (self.predict(x) - y) ** 2
        self.total += y
        self.count += 1
        if self._hooks:
            self._emit(StepRecord(t=self.count, loss=loss))
        return loss


def stream(n=20, d=4, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


# -- sketches --------------------------------------------------------------------------------

@given(seed=st.integers(0, 1000), n=st.integers(1, 30), m=st.integers(2, 5))
def test_sketch_columns_match_row_by_row_updates(seed, n, m):
    X = stream(n, 4, seed)
    history = run(RobustFrequentDirections(4, m, alpha0=0.1), X)
    by_hand = RobustFrequentDirections(4, m, alpha0=0.1)
    expected = {"n_seen": [], "delta_total": [], "alpha": []}
    for x in X:
        by_hand.update(x)
        for name in expected:
            expected[name].append(getattr(by_hand, name))
    assert list(history) == ["t", "n_seen", "delta_total", "alpha"]
    assert len(history) == n and history["t"].tolist() == list(range(1, n + 1))
    for name, values in expected.items():
        assert history[name].tolist() == values


def test_plain_fd_has_no_alpha_column():
    assert "alpha" not in run(FrequentDirections(4, 2), stream())


def test_hooks_see_every_shrink_and_are_removed_afterwards():
    X = stream(30)
    sk = FrequentDirections(4, 3)
    recorder = Recorder(kinds=("shrink",))
    run(sk, X, hooks=[recorder])
    events = recorder.columns("shrink")
    assert events["t"].tolist() == list(range(3, 31))  # exact FD shrinks on every row once full
    assert np.sum(events["delta"]) == pytest.approx(sk.delta_total)
    sk.update(X[0])
    assert len(recorder) == 28  # detached


def test_a_single_callable_hook_is_accepted():
    recorder = Recorder()
    run(FrequentDirections(4, 2), stream(5), hooks=recorder)
    assert len(recorder) == 4


def test_hooks_are_removed_when_the_run_fails():
    X = stream(10)
    X[6, 2] = np.nan
    sk = FrequentDirections(4, 2)
    recorder = Recorder()
    with pytest.raises(ValueError, match="NaN"):
        run(sk, X, hooks=[recorder])
    seen = len(recorder)
    sk.update(X[0])
    assert len(recorder) == seen and sk.n_seen == 7


def test_observe_and_every():
    X = stream(25)
    history = run(FrequentDirections(4, 3), X, every=10,
                  observe={"error": lambda sk: covariance_error(X[:sk.n_seen], sk)})
    assert history["t"].tolist() == [10, 20, 25]  # the last step is always recorded
    assert history["n_seen"].tolist() == [10, 20, 25]
    expected = []
    for t in (10, 20, 25):
        sk = FrequentDirections(4, 3)
        sk.extend(X[:t])
        expected.append(covariance_error(X[:t], sk))
    assert history["error"] == pytest.approx(expected)


def test_weighted_stream_into_generalized_fd():
    X, s = stream(12), np.where(np.arange(12) % 3, 1.0, -2.0)
    gfd = GeneralizedFrequentDirections(4, 3)
    history = run(gfd, (X, s))
    reference = GeneralizedFrequentDirections(4, 3)
    reference.extend(X, s)
    assert np.allclose(gfd.gram(), reference.gram())
    assert history["delta_total"][-1] == pytest.approx(reference.delta_total)


def test_labels_for_a_plain_sketch_are_refused():
    with pytest.raises(ValueError, match="update takes rows only"):
        run(FrequentDirections(4, 2), (stream(5), np.ones(5)))


# -- learners and stream forms ---------------------------------------------------------------

def test_learner_loss_columns():
    y = np.array([1.0, 3.0, 2.0, 0.0])
    history = run(MeanRegressor(), (np.zeros((4, 1)), y))
    assert list(history) == ["t", "loss", "cumulative_loss"]
    assert history["loss"].tolist() == [1.0, 4.0, 0.0, 4.0]
    assert history["cumulative_loss"].tolist() == [1.0, 5.0, 5.0, 9.0]


@pytest.mark.parametrize("make_stream", [
    lambda X, y: list(zip(X, y)),
    lambda X, y: ((x, label) for x, label in zip(X, y)),  # a generator: no length
    lambda X, y: (X.tolist(), y.tolist()),
])
def test_stream_forms_give_the_same_history(make_stream):
    X, y = np.zeros((6, 2)), np.arange(6.0)
    reference = run(MeanRegressor(), (X, y))
    history = run(MeanRegressor(), make_stream(X, y))
    assert history["loss"].tolist() == reference["loss"].tolist()


def test_every_thins_learner_rows_but_cumulative_loss_counts_all_steps():
    y = np.arange(7.0)
    full = run(MeanRegressor(), (np.zeros((7, 1)), y))
    thin = run(MeanRegressor(), (np.zeros((7, 1)), y), every=3)
    assert thin["t"].tolist() == [3, 6, 7]
    assert thin["cumulative_loss"].tolist() == full["cumulative_loss"][[2, 5, 6]].tolist()


def test_learner_hooks_and_progress_bar(capsys):
    recorder = Recorder()
    run(MeanRegressor(), (np.zeros((5, 1)), np.ones(5)), hooks=[recorder], progress=True)
    assert recorder.columns("step")["t"].tolist() == [1, 2, 3, 4, 5]
    assert "5/5" in capsys.readouterr().err


def test_progress_bar_without_a_known_length(capsys):
    run(FrequentDirections(2, 2), (x for x in np.eye(2)), progress=True)
    assert "2it" in capsys.readouterr().err


def test_empty_stream():
    history = run(FrequentDirections(3, 2), np.zeros((0, 3)))
    assert len(history) == 0 and history["t"].dtype == np.int64
    assert repr(history) == "History(0 steps; columns t, n_seen, delta_total)"


# -- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    ({"every": 0}, "every must be an integer >= 1"),
    ({"every": 2.0}, "every must be an integer"),
    ({"observe": {"t": len}}, "observe name 't' is taken"),
    ({"observe": {"delta_total": len}}, "observe name 'delta_total' is taken"),
    ({"observe": {"error": 3.0}}, "must be a callable"),
    ({"observe": {"rows": lambda sk: sk.rows}}, "must return a number"),
    ({"hooks": [print, 3]}, "every hook must be callable"),
])
def test_run_refuses_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run(FrequentDirections(4, 2), stream(), **kwargs)


@pytest.mark.parametrize("algorithm, data, match", [
    (object(), stream(), "online learner \\(with learn\\) or a sketch"),
    (FrequentDirections(4, 2), np.ones(4), "must be 2-D"),
    (FrequentDirections(4, 2), 5, "stream must be an array X"),
    (FrequentDirections(4, 2), (stream(), np.ones(3)), "one entry per row of X \\(20\\)"),
    (MeanRegressor(), [(np.zeros(1), 1.0, 2.0)], "must be \\(x, y\\)"),
])
def test_run_refuses_bad_algorithms_and_streams(algorithm, data, match):
    with pytest.raises(ValueError, match=match):
        run(algorithm, data)


def test_hooks_need_an_observable_algorithm():
    class Plain:
        def update(self, x):
            pass

    with pytest.raises(ValueError, match="Plain has no add_hook"):
        run(Plain(), stream(), hooks=[print])
    assert list(run(Plain(), stream())) == ["t"]


def test_random_projection_records_what_it_has():
    history = run(RandomProjectionSketch(4, 3, seed=0), stream(5))
    assert list(history) == ["t", "n_seen"] and history["n_seen"].tolist() == [1, 2, 3, 4, 5]


# -- History -----------------------------------------------------------------------------------

def test_history_is_read_only_and_copies_out():
    history = History({"t": [1, 2, 3], "loss": [0.5, 0.25, 0.125]})
    with pytest.raises(ValueError):
        history["loss"][0] = 9.0
    with pytest.raises(TypeError):
        history["loss"] = np.zeros(3)
    copy = history.to_dict()
    copy["loss"][0] = 9.0
    assert history["loss"][0] == 0.5
    assert dict(history.items()).keys() == {"t", "loss"} and "loss" in history and len(history) == 3


def test_history_repr_and_missing_column():
    history = History({"t": [1, 2], "loss": [0.5, 0.123456]})
    assert repr(history) == "History(2 steps; columns t, loss; last: t=2, loss=0.1235)"
    with pytest.raises(KeyError, match="no column 'regret'; columns are \\['t', 'loss'\\]"):
        history["regret"]


def test_history_refuses_ragged_columns():
    with pytest.raises(ValueError, match="equal length"):
        History({"t": [1, 2], "loss": [0.5]})


# -- learn_until_divergence and running_average ---------------------------------------------

def test_learn_until_divergence_keeps_the_rows_before_the_divergence_and_removes_its_hooks():
    from explorer.adagrad import OGD
    from explorer.run import learn_until_divergence

    X, y = np.full((5, 1), 1e100), np.ones(5)
    recorder = Recorder(kinds=("step",))
    learner = OGD(1, eta=1.0, loss="squared")
    losses = learn_until_divergence(learner, X, y, hooks=recorder)
    assert losses.tolist() == [1.0] + [np.inf] * 4
    assert learner.t == 1  # where it stood before the failing row
    replayed = OGD(1, eta=1.0, loss="squared")
    replayed.learn_many(X[:1], y[:1])
    assert np.array_equal(learner.beta, replayed.beta)
    seen = len(recorder.events("step"))
    learner.learn_many(np.ones((2, 1)), y[:2])
    assert len(recorder.events("step")) == seen  # the hook was removed


def test_learn_until_divergence_is_learn_many_when_nothing_diverges():
    from explorer.adagrad import OGD
    from explorer.run import learn_until_divergence

    X = stream(30, 3)
    y = np.sign(X[:, 0])
    expected = OGD(3, eta=0.1, loss="squared").learn_many(X, y)
    assert np.array_equal(learn_until_divergence(OGD(3, eta=0.1, loss="squared"), X, y), expected)


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=50))
def test_running_average_is_the_mean_of_each_prefix(values):
    from explorer.run import running_average

    averages = running_average(values)
    assert averages.shape == (len(values),)
    for t in range(1, len(values) + 1):
        assert averages[t - 1] == pytest.approx(np.mean(values[:t]), rel=1e-9, abs=1e-6)


@given(st.lists(st.tuples(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3)), min_size=1, max_size=40))
def test_running_rmse_is_the_rmse_of_each_prefix(pairs):
    from explorer.run import running_rmse

    z, y = np.array(pairs).T
    curve = running_rmse(z, y)
    for t in range(1, len(y) + 1):
        assert curve[t - 1] == pytest.approx(np.sqrt(np.mean((z[:t] - y[:t]) ** 2)), rel=1e-9, abs=1e-6)


def test_lead_since_is_the_start_of_the_last_run_below():
    t = [0, 4, 8, 12, 16]
    assert lead_since(t, [0, 1, 3, 3, 4], [0, 2, 2, 5, 6]) == 12  # below, above at 8, below from 12
    assert lead_since(t, [0, 1, 1, 1, 1], [0, 2, 2, 2, 2]) == 4  # t = 0 (0 against 0) does not count
    assert lead_since(t, [0, 1, 1, 1, 2], [0, 2, 2, 2, 2]) is None  # level at the end: not ahead
    assert lead_since([], [], []) is None


# -- step_history -----------------------------------------------------------------------------

def test_step_history_is_learn_many_with_each_rounds_record():
    from explorer.newton import SketchedOnlineNewton
    from explorer.run import step_history

    X = stream(60, 4)
    y = np.sign(X[:, 0] + 0.1)
    recorder = Recorder(kinds=("step",))
    expected = SketchedOnlineNewton(4, sketch="rfd", m=2, alpha0=0.1, eta=0.0, C=1.0)
    expected.add_hook(recorder)
    losses = expected.learn_many(X, y)
    learner = SketchedOnlineNewton(4, sketch="rfd", m=2, alpha0=0.1, eta=0.0, C=1.0)
    history = step_history(learner, X, y, fields=("alpha", "condition_number", "rank"))
    columns = recorder.columns("step")
    assert history.names == ["t", "loss", "alpha", "condition_number", "rank"]
    assert history["t"].tolist() == list(range(1, 61))
    assert np.array_equal(history["loss"], losses)
    for name in ("alpha", "condition_number", "rank"):
        assert np.array_equal(history[name], columns[name])


def test_step_history_of_round_outputs_is_the_records_without_hooks():
    """Fields among the learner's ROUND_OUTPUTS come from ``progressive`` (no record, no hook,
    the compiled path if any): the same columns as the records give, divergence included."""
    from explorer.newton import SketchedOnlineNewton
    from explorer.run import step_history

    X = stream(80, 5)
    y = np.sign(X[:, 0] + 0.1)
    X[50:] *= 1e150  # round 51 overflows: rounds 1-50 are played again, the rest inf / NaN
    make = lambda: SketchedOnlineNewton(5, sketch="fd", m=3, alpha0=0.01, eta=0.0, mu=1.0, C=1e100, loss="squared")
    fields = ("alpha", "condition_number")
    kept = step_history(make(), X, y, fields=fields)
    recorded = step_history(make(), X, y, fields=(*fields, "rank"))  # rank is no round output: records
    assert kept.names == ["t", "loss", *fields] and len(kept) == 80
    assert np.isinf(kept["loss"][50:]).all() and np.isnan(kept["condition_number"][50:]).all()
    for name in ("t", "loss", *fields):
        assert np.array_equal(kept[name], recorded[name], equal_nan=True), name


def test_step_history_counts_each_round_once_after_a_divergence():
    from explorer.adagrad import OGD
    from explorer.run import step_history

    X, y = np.ones((6, 1)), np.ones(6)
    X[3:] = 1e100  # round 4 overflows: the call is undone and rounds 1-3 are played again
    learner = OGD(1, eta=0.1, loss="squared")
    history = step_history(learner, X, y, fields=("gradient_scale", "prediction"))
    replayed = OGD(1, eta=0.1, loss="squared")
    recorder = Recorder(kinds=("step",))
    replayed.add_hook(recorder)
    replayed.learn_many(X[:3], y[:3])
    assert len(history) == 6 and learner.t == 3
    assert history["loss"][3:].tolist() == [np.inf] * 3
    assert np.array_equal(history["gradient_scale"][:3], recorder.columns("step")["gradient_scale"])
    assert np.array_equal(history["prediction"][:3], recorder.columns("step")["prediction"])
    assert np.isnan(history["gradient_scale"][3:]).all()


@pytest.mark.parametrize("fields", [("t",), ("loss",), ("kappa",), (3,)])
def test_step_history_refuses_an_unknown_field_and_leaves_the_learner_as_it_was(fields):
    from explorer.adagrad import OGD
    from explorer.run import step_history

    learner = OGD(2, eta=0.1, loss="squared")
    with pytest.raises(ValueError, match="fields must name StepRecord fields .*condition_number"):
        step_history(learner, np.ones((3, 2)), np.ones(3), fields=fields)
    assert learner.t == 0


# -- kept_runs --------------------------------------------------------------------------------

def test_kept_runs_computes_each_key_once_and_uses_runs_given_to_it():
    from explorer.run import kept_runs

    calls = []

    def compute(sketch, m, eta):
        calls.append((sketch, m, eta))
        return np.full(3, m * eta)

    runs = kept_runs(compute, key=lambda sketch, m, eta: (sketch, None if sketch == "full" else m, eta))
    first = runs("fd", 5, 0.1)
    assert runs("fd", 5, 0.1) is first  # the kept array, not a recomputed one
    runs("full", 5, 0.1)
    runs("full", 9, 0.1)  # FULL-ON's key has no m: kept
    runs("fd", 6, 0.1)
    assert calls == [("fd", 5, 0.1), ("full", 5, 0.1), ("fd", 6, 0.1)]
    runs.runs["rfd", 5, 0.1] = "made elsewhere"
    assert runs("rfd", 5, 0.1) == "made elsewhere" and len(calls) == 3
    plain = kept_runs(lambda a, b: a + b)
    assert plain(1, 2) == 3 and plain.runs == {(1, 2): 3}


@pytest.mark.parametrize("compute, key", [(None, None), (len, "sketch")])
def test_kept_runs_refuses_what_it_cannot_call(compute, key):
    from explorer.run import kept_runs

    with pytest.raises(ValueError, match="kept_runs needs compute"):
        kept_runs(compute, key)
