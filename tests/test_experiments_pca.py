"""The online adaptive PCA race without Panel (explorer.experiments.pca): its numbers against
explorer.pca run by hand, hot changes through with_params, snapshots, divergence."""

from __future__ import annotations

import numpy as np
import pytest

import explorer.pca._base
from explorer.errors import Diverged
from explorer.experiments.pca import (AdaptivePCARace, captured_share, expected_losses, hindsight,
                                      make_learners, toy_stream)
from explorer.pca import (FollowTheLeaderPCA, OnlineAdaptivePCA, best_fixed_projection,
                          pca_theory_settings)
from explorer.race import Race
from explorer.streams import changing_subspace


def small_race(**changes) -> AdaptivePCARace:
    """240 rows in d = 12, segments of 60, k = 2."""
    X, segment = toy_stream(240, 12, segment_length=60, rank=2, seed=3)
    settings = {"eta": 2.0, "alpha": 1e-3, "seed": 3, **changes}
    return AdaptivePCARace(X, segment, 2, **settings)


def test_toy_stream_is_the_papers_stream_cut_to_n_rows():
    X, segment = toy_stream(130, 6, segment_length=50, rank=9, seed=1)
    full, parts = changing_subspace(n_segments=3, segment_length=50, n=6, rank=6, seed=1)
    np.testing.assert_array_equal(X, full[:130])
    np.testing.assert_array_equal(segment, parts[:130])


def test_captured_share_is_a_share_of_the_best_rank_k_variance():
    C = np.diag([4.0, 1.0, 0.0])
    assert captured_share(np.eye(3)[:, :2], C, 5.0) == 1.0
    assert captured_share(np.eye(3)[:, 2:], C, 5.0) == 0.0
    assert np.isnan(captured_share(np.eye(3)[:, :1], np.zeros((3, 3)), 0.0))


def test_hindsight_knows_the_best_projection_and_each_segment():
    X, segment = toy_stream(150, 5, segment_length=60, rank=2, seed=0)
    h = hindsight(X, segment, 2)
    basis, losses = best_fixed_projection(X, 2)
    np.testing.assert_array_equal(h.basis, basis)
    np.testing.assert_array_equal(h.cumulative, np.r_[0.0, np.cumsum(losses)])
    assert h.boundaries.tolist() == [60, 120] and len(h.covariances) == 3
    rows = X[120:]
    assert h.best_variance[2] == pytest.approx(np.linalg.eigvalsh(rows.T @ rows)[-2:].sum(), rel=1e-12)


def test_the_race_gives_the_numbers_of_the_learners_run_by_hand():
    race = small_race()
    assert race.step(97) == 97 and race.t == 97
    X = race.X
    adaptive, static, ftl = (make_learners(12, 2, eta=2.0, alpha=1e-3, seed=3)[name]
                             for name in ("adaptive", "static", "ftl"))
    totals = dict.fromkeys(("ftl", "static", "adaptive", "sampled"), 0.0)
    for x in X[:97]:
        totals["ftl"] += ftl.learn(x)
        totals["sampled"] += adaptive.learn(x)
        totals["adaptive"] += adaptive.last_expected_loss
        static.learn(x)
        totals["static"] += static.last_expected_loss
    point = race.measure()
    for name, total in totals.items():
        assert point[f"loss_{name}"] == total  # bit for bit: the same sums in the same order
    assert point["segment"] == 1.0 and race.segment_now() == 1
    C, best = race.hindsight.covariances[1], race.hindsight.best_variance[1]
    assert point["overlap_adaptive"] == captured_share(adaptive.subspace(), C, best)
    assert point["overlap_ftl"] == captured_share(ftl.basis, C, best)
    np.testing.assert_array_equal([point[f"w_static_{i}"] for i in range(12)],
                                  np.sort(static.log_eigenvalues) / np.log(10.0))
    assert 0 < point["fs_mass"] <= 1e-3 + 1e-12  # fixed share moves at most alpha
    assert point["capped_static"] >= 0
    assert race.step(1000) == 240 - 97 and race.step() == 0


def test_before_the_first_round_nothing_was_mixed_or_capped():
    point = small_race().measure()
    assert point["loss_adaptive"] == 0.0 and point["loss_best"] == 0.0
    assert np.isnan(point["fs_mass"]) and np.isnan(point["capped_adaptive"])


def test_tune_changes_eta_and_alpha_through_with_params():
    race = small_race()
    race.step(50)
    same = dict(race.learners)
    race.tune(eta=2.0, alpha=1e-3)  # already these: nothing is rebuilt
    assert all(race.learners[name] is same[name] for name in same)
    race.tune(eta=5.0, alpha=1e-2)
    adaptive, static = race.learners["adaptive"], race.learners["static"]
    assert adaptive is not same["adaptive"] and same["adaptive"].eta == 2.0
    assert (adaptive.eta, adaptive.alpha, static.eta, static.alpha) == (5.0, 1e-2, 5.0, 0.0)
    assert race.learners["ftl"] is same["ftl"]
    race.step(1)
    events = race.recorders["adaptive"].events("fixed_share")
    assert events[-1].t == 51 and events[-1].alpha == 1e-2  # the recorder listens to the new learner
    by_hand = same["adaptive"].with_params(eta=5.0, alpha=1e-2)  # the old learner is untouched
    assert race.records["adaptive"] == by_hand.step(race.X[50])


def test_back_to_a_snapshot_replays_the_same_numbers():
    straight, back = small_race(), small_race()
    straight.step(150)
    back.step(80)
    snapshot = back.state_dict()
    back.step(40)
    back.tune(eta=7.0, alpha=0.1)
    back.step(10)
    back.load_state_dict(snapshot)
    assert back.t == 80 and back.learners["adaptive"].eta == 2.0  # the snapshot's settings
    back.step(70)
    a, b = straight.measure(), back.measure()
    assert a.keys() == b.keys()
    np.testing.assert_array_equal(list(b.values()), list(a.values()))


def test_a_diverging_learner_leaves_the_race_and_the_others_go_on(monkeypatch):
    race = small_race()
    race.step(20)
    before = race.learners["adaptive"].state_dict()

    def broken(M):
        raise Diverged("the symmetric eigensolver failed (a test); nothing was updated")

    monkeypatch.setattr(explorer.pca._base, "eigh", broken)  # the density learners' solver, not FTL's
    race.step(5)
    assert set(race.stopped) == {"adaptive", "static"} and race.stopped["adaptive"].t == 21
    assert race.learners["ftl"].t == 25 and race.learners["adaptive"].t == 20
    assert race.learners["adaptive"].state_dict()["t"] == before["t"]
    point = race.measure()
    assert np.isfinite(point["loss_adaptive"]) and np.isfinite(point["loss_ftl"])


def test_theory_setting_uses_the_best_fixed_loss():
    race = small_race()
    eta, alpha = race.theory_setting()
    _, best = best_fixed_projection(race.X, 2)
    assert (eta, alpha) == pytest.approx(tuple(pca_theory_settings(240, 12, 2, best.sum())))


def test_make_learners_plays_ftl_then_adaptive_then_static():
    learners = make_learners(6, 2, eta=1.0, alpha=1e-5, seed=0)
    assert list(learners) == ["ftl", "adaptive", "static"]
    assert isinstance(learners["ftl"], FollowTheLeaderPCA)
    assert isinstance(learners["static"], OnlineAdaptivePCA) and learners["static"].alpha == 0.0


def test_expected_losses_is_a_race_measure_of_every_rounds_expected_loss():
    X, _ = toy_stream(60, 6, segment_length=30, rank=2, seed=2)
    learners = make_learners(6, 2, eta=1.0, alpha=1e-3, seed=0)
    history = Race(learners, X, measure=expected_losses).run()
    pca = OnlineAdaptivePCA(6, 2, eta=1.0, alpha=1e-3, seed=0)
    sampled = [pca.learn(x) for x in X[:30]]
    expected = [pca.step(x).expected_loss for x in X[30:]]
    np.testing.assert_array_equal(history["loss.adaptive"][:30], sampled)
    np.testing.assert_array_equal(history["expected.adaptive"][30:], expected)
    assert np.isnan(expected_losses(Race(make_learners(6, 2, eta=1.0, alpha=0.0, seed=0), X))["expected.ftl"])
