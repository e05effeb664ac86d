"""The AdaGrad race without Panel (explorer.experiments.adagrad): its numbers against the
learners of explorer.adagrad run directly; hot values through with_params; a learner that
diverges stops alone; Back (state_dict / load_state_dict) gives the numbers of never going
back; the spectra and the last shrink are what the learners hold."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.adagrad import LEARNERS, VARIANTS, make_learner
from explorer.experiments.adagrad import AdaGradRace, targets
from explorer.losses import get_loss
from explorer.streams import decaying_spectrum

D, TAU, ETA = 12, 3, 0.1


@pytest.fixture(scope="module")
def X():
    return decaying_spectrum(80, D, seed=40)


def race_on(X, **options) -> AdaGradRace:
    return AdaGradRace(X, **{"eta": ETA, "tau": TAU, "seed": 41, **options})


@pytest.mark.parametrize("loss", ["absolute", "squared_hinge"])
def test_the_race_equals_the_learners_run_directly(X, loss):
    race = race_on(X, loss=loss, method="pds")
    assert race.step(30) == 30 and race.step(25) == 25
    y, comparator = targets(X, loss, 41)
    np.testing.assert_array_equal(race.y, y)
    point = race.measure()
    for key in LEARNERS:
        learner = make_learner(key, D, eta=ETA, loss=loss, method="pds", tau=TAU)
        losses, ranks = [], []
        for x, label in zip(X[:55], y[:55]):
            losses.append(learner.learn(x, label))
            ranks.append(getattr(learner, "rank", 0))
        assert race.cumulative_loss(key) == pytest.approx(sum(losses), rel=1e-12)
        np.testing.assert_array_equal(race.learners[key].beta, learner.beta)
        best = get_loss(loss).value(X[:55] @ comparator, y[:55]).sum()
        assert point[f"regret_{key}"] == pytest.approx(sum(losses) - best, rel=1e-10, abs=1e-10)
        assert point[f"ms_{key}"] > 0
        if key in ("fd", "ffd"):
            np.testing.assert_array_equal(race.ranks[key][:55], ranks)
            assert point[f"rank_{key}"] == ranks[-1]


def test_the_last_shrink_and_the_spectra_are_the_learners_own(X):
    race = race_on(X)
    assert race.last_shrink("ffd") is None and race.spectra()["ffd_before"].size == 0
    race.step(40)
    shrink, spectra = race.last_shrink("ffd"), race.spectra()
    ffd = race.learners["ffd"]
    assert shrink.t <= 40 and (shrink.rank_before, shrink.rank_after) == (2 * TAU, TAU - 1)
    np.testing.assert_array_equal(spectra["ffd_before"], shrink.sigma ** 2)
    np.testing.assert_array_equal(spectra["ffd"], ffd.proximal.eigenvalues())
    exact = np.linalg.eigvalsh(race.learners["full"].gram())[::-1]
    np.testing.assert_allclose(spectra["full"], np.maximum(exact, 0), atol=1e-9 * exact[0])
    assert race.last_shrink("fd").t == 40  # ADA-FD's sketch shrinks on every row once full


def test_tune_applies_hot_values_through_with_params(X):
    race, twin = race_on(X), race_on(X)
    race.step(20)
    twin.step(20)
    untouched = dict(race.learners)
    race.tune(eta=ETA, delta=None)  # today's values: nothing changes, not even the objects
    assert all(race.learners[key] is untouched[key] for key in LEARNERS)
    race.tune(eta=0.02, delta=0.5)
    for key in LEARNERS:
        assert race.learners[key] is not untouched[key] and race.learners[key].eta == 0.02
        if key != "ogd":  # Adam keeps its own delta
            assert race.learners[key].delta == (0.5 if key in VARIANTS else 1e-8)
        np.testing.assert_array_equal(race.learners[key].beta, untouched[key].beta)
    race.step(30)
    assert race.ranks["ffd"][49] == race.learners["ffd"].rank  # the hooks followed the new learners
    assert race.last_shrink("ffd").t > 20
    expected = make_learner("ffd", D, eta=ETA, tau=TAU)
    expected.learn_many(X[:20], twin.y[:20])
    expected = expected.with_params(eta=0.02, delta=0.5)
    losses = expected.learn_many(X[20:50], twin.y[20:50])
    assert race.cumulative_loss("ffd") == pytest.approx(twin.cumulative_loss("ffd") + losses.sum(), rel=1e-12)
    race.tune(eta=0.02, delta=None)  # back to the paper's: 1 for CMD, 1e-8 for ADA-DIAG
    assert race.learners["ffd"].delta == 1.0 and race.learners["diag"].delta == 1e-8


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_a_diverging_learner_stops_and_the_others_go_on(X):
    race = race_on(X, loss="squared_hinge", eta=1e30)  # four of the six overflow
    race.step(80)
    assert race.t == 80 and race.diverged
    point = race.measure()
    for key, t in race.diverged.items():
        assert 1 <= t <= 80 and np.isnan(point[f"regret_{key}"]) and race.learners[key].t == t - 1
    for key in set(LEARNERS) - set(race.diverged):
        assert race.learners[key].t == 80 and np.isfinite(point[f"regret_{key}"])


def test_back_gives_the_numbers_of_never_going_back(X):
    straight, back = race_on(X), race_on(X)
    straight.step(60)
    back.step(25)
    snapshot = back.state_dict()
    back.tune(eta=0.3, delta=2.0)
    back.step(20)
    back.load_state_dict(snapshot)
    back.tune(eta=ETA, delta=None)
    back.step(35)
    for key in LEARNERS:
        assert back.cumulative_loss(key) == straight.cumulative_loss(key)
        np.testing.assert_array_equal(back.learners[key].beta, straight.learners[key].beta)
    np.testing.assert_array_equal(back.ranks["ffd"][:60], straight.ranks["ffd"][:60])
    assert back.last_shrink("ffd").t == straight.last_shrink("ffd").t


def test_ada_full_sits_out_past_full_max_d_and_bad_losses_are_refused(X):
    race = race_on(X, full_max_d=D - 1)
    race.step(5)
    assert "full" not in race.learners and np.isnan(race.measure()["regret_full"])
    assert race.spectra()["full"].size == 0
    with pytest.raises(ValueError, match="loss must be one of 'absolute', 'squared_hinge'"):
        targets(X, "squared", 0)
