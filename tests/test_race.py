"""explorer.race.Race: several learners in lock step, the one run loop of pages and notebooks."""

from __future__ import annotations

import numpy as np
import pytest

from explorer import OGD, AdaGrad, SketchedOnlineNewton
from explorer.errors import Diverged
from explorer.hooks import StepRecord
from explorer.race import Race
from state_checks import assert_same_state, snapshot


def stream(n=60, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, np.sign(X @ np.arange(1.0, d + 1) + 0.1)


def learners():
    return {"diag": AdaGrad(4, variant="diag"), "rfd": SketchedOnlineNewton(4, m=2, alpha0=1.0, eta=0.5),
            "ogd": OGD(4, eta=0.1)}


def test_a_race_plays_every_learner_as_learn_would():
    X, y = stream()
    race = Race(learners(), X, y)
    race.run(every=7)
    for name, alone in learners().items():
        losses = [alone.learn(x, b) for x, b in zip(X, y)]
        assert race.totals[name] == pytest.approx(sum(losses), rel=1e-12)
        assert_same_state(snapshot(race.learners[name]), snapshot(alone))
        assert isinstance(race.records[name], StepRecord) and race.records[name].t == len(X)
    assert race.history["t"].tolist() == [*range(7, 60, 7), 60]
    assert race.history["total.rfd"][-1] == race.totals["rfd"]


def test_resuming_from_a_snapshot_is_bit_identical_to_never_stopping():
    X, y = stream()
    never, resumed = Race(learners(), X, y), Race(learners(), X, y)
    never.step(25)
    state = never.state_dict()
    never.step(35)
    resumed.step(40)  # somewhere else, then back to t = 25
    resumed.load_state_dict(state)
    assert resumed.t == 25
    resumed.step(35)
    for name in never.learners:
        assert_same_state(snapshot(resumed.learners[name]), snapshot(never.learners[name]))
        assert resumed.totals[name] == never.totals[name]


def test_a_learner_that_diverges_stops_and_the_others_go_on():
    X, y = stream()
    X[30:32] = 1e140  # OGD's step on row 31 makes beta^T x overflow on row 32; AdaGrad's is normalized
    race = Race({"ogd": OGD(4, eta=0.1, loss="squared"), "diag": AdaGrad(4, variant="diag")}, X, y)
    race.run()
    assert race.done and race.t == 60
    assert list(race.stopped) == ["ogd"] and isinstance(race.stopped["ogd"], Diverged)
    assert race.running == ["diag"] and race.records["diag"].t == 60
    stopped_at = race.stopped["ogd"].t
    assert stopped_at in (31, 32) and race.learners["ogd"].t == stopped_at - 1  # as before that row
    assert np.isnan(race.history["loss.ogd"][-1]) and np.isfinite(race.history["total.ogd"][-1])


def test_with_params_continues_the_learner_and_refuses_bad_values_unchanged():
    X, y = stream()
    race = Race(learners(), X, y)
    race.step(10)
    before = snapshot(race.learners["diag"])
    with pytest.raises(ValueError, match="eta"):
        race.with_params("diag", eta=-1.0)
    assert_same_state(snapshot(race.learners["diag"]), before)
    with pytest.raises(ValueError, match="no learner 'nope'"):
        race.with_params("nope", eta=1.0)
    race.with_params("diag", eta=0.5)
    assert race.learners["diag"].eta == 0.5 and race.learners["diag"].t == 10


def test_history_is_bounded_and_measure_adds_columns():
    X, y = stream(n=200)
    race = Race({"ogd": OGD(4, eta=0.1)}, X, y, capacity=8,
                measure=lambda r: {"norm": float(np.linalg.norm(r.learners["ogd"].beta))})
    race.run()
    assert len(race.history) <= 8 and race.history["t"][-1] == 200 and race.history["t"][0] == 1
    assert race.history.names == ["t", "loss.ogd", "total.ogd", "norm"]


def test_no_learners_still_advances_and_bad_streams_are_refused():
    X, y = stream(n=5)
    race = Race({}, X, y)
    assert race.step(3) == 3 and race.t == 3 and race.history.names == ["t"]
    with pytest.raises(ValueError, match="one entry per row"):
        Race(learners(), X, y[:3])
    with pytest.raises(ValueError, match="has no step"):
        Race({"sketch": object()}, X, y)
    with pytest.raises(ValueError, match="2-D"):
        Race(learners(), X[0], y)


def test_a_family_race_extends_the_loop_in_after_round_only():
    """One loop over the rows: Race.step calls after_round once per row, after every learner
    played it; the family races book their rounds there and do not re-loop (no step of their own)."""
    from explorer.experiments.newton import NewtonRace
    from explorer.experiments.pca import AdaptivePCARace

    class Counting(Race):
        def after_round(self, x, y):
            seen.append((self.t, float(x[0]), y, self.records["ogd"].t))

    seen = []
    X = np.arange(12.0).reshape(6, 2)
    race = Counting({"ogd": OGD(2, eta=0.01)}, X, X[:, 0])
    assert race.step(4, record=False) == 4 and race.step(5) == 2
    assert seen == [(t, X[t - 1, 0], X[t - 1, 0], t) for t in range(1, 7)]
    assert "step" not in vars(NewtonRace) and "step" not in vars(AdaptivePCARace)


def test_no_race_of_the_package_writes_its_own_step():
    """Every subclass of Race in explorer (the families' races) plays rows through
    Race.step: none defines step."""
    import explorer.experiments.adagrad  # noqa: F401  (the families' races, loaded)
    import explorer.experiments.newton  # noqa: F401
    import explorer.experiments.pca  # noqa: F401

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    races = [cls for cls in subclasses(Race) if cls.__module__.startswith("explorer.")]
    assert {cls.__name__ for cls in races} >= {"AdaGradRace", "NewtonRace", "AdaptivePCARace"}
    assert [cls.__name__ for cls in races if "step" in vars(cls)] == []


def test_a_race_times_each_learners_step():
    """``seconds``: each learner's wall time per round, a moving average; NaN for a learner
    that has not played a round."""
    race = Race({"ogd": OGD(2, eta=0.01), "son": SketchedOnlineNewton(2, m=2)}, np.eye(2)[[0, 1, 0]], [1.0, -1.0, 1.0])
    assert all(np.isnan(v) for v in race.seconds.values())
    race.step(3)
    assert all(0 < v < 60 for v in race.seconds.values()), race.seconds


def test_record_appends_t_the_measure_and_the_callers_columns():
    race = Race({"ogd": OGD(2, eta=0.01)}, np.eye(2), [1.0, -1.0], measure=lambda race: {"two": 2.0})
    race.step(1, record=False)
    race.record(setting=0.5)
    assert race.history.names == ["t", "loss.ogd", "total.ogd", "two", "setting"]
    assert race.history.last()["setting"] == 0.5 and race.history.last()["t"] == 1.0
