"""The sketched online Newton race without Panel (explorer/experiments/newton.py).

Every measured number against the learners run by hand on the same rows; the exact
curvature built from the step records against one rebuilt from the predictions; hot
values through ``with_params``; divergence; snapshots for Back.
"""

from __future__ import annotations

import numpy as np
import pytest

from explorer.adagrad import AdaGrad
from explorer.errors import Diverged
from explorer.dashboard.pages.newton import notes, summary, watch
from explorer.experiments.newton import (
    KEYS, LEARNERS, ORACLE_MAX_D, SKETCH_OF, NewtonRace, best_fixed_predictor, faint_share, hindsight,
    make_learners, planted_labels,
)
from explorer.history import History
from explorer.losses import get_loss
from explorer.newton import SketchedOnlineNewton
from explorer.streams import linear_classification_labels, load_stream

SETTINGS = dict(m=4, alpha0=0.5, eta=0.1, seed=0)


def stream(n=150, d=10, seed=0):
    X = load_stream("low rank + noise", n=n, d=d, seed=seed)
    y, _ = linear_classification_labels(X, flip=0.05, seed=seed)
    return X, y


def race_of(X, y, names=LEARNERS, loss="squared", C=1.0, **settings):
    learners = make_learners(names, X.shape[1], **{**SETTINGS, **settings}, loss=loss, C=C)
    return NewtonRace(learners, X, y, loss=loss, C=C)


def by_hand(name, X, y, loss="squared", C=1.0, **settings):
    """(learner, cumulative loss, correct signs) of ``name`` run directly."""
    s = {**SETTINGS, **settings}
    if name == "ADAGRAD":
        learner = AdaGrad(X.shape[1], variant="diag", method="cmd", eta=0.1, loss=loss)
    else:
        learner = SketchedOnlineNewton(X.shape[1], sketch=SKETCH_OF[name], m=s["m"], alpha0=s["alpha0"],
                                       eta=s["eta"], seed=s["seed"], loss=loss, C=C)
    total, correct = 0.0, 0
    for x, label in zip(X, y):
        correct += learner.predict(x) * label > 0
        total += learner.learn(x, label)
    return learner, total, correct


@pytest.mark.parametrize("loss, C", [("squared", 1.0), ("logistic", 10.0)])
def test_measured_numbers_are_the_learners_own(loss, C):
    X, y = stream()
    race = race_of(X, y, loss=loss, C=C)
    assert race.step(60) == 60 and race.t == 60
    point = race.measure()
    star = float(hindsight(X, y, loss, C).loss[59])
    assert point["loss_star"] == star
    for name in LEARNERS:
        learner, total, correct = by_hand(name, X[:60], y[:60], loss=loss, C=C)
        key = KEYS[name]
        assert point[f"loss_{key}"] == pytest.approx(total, rel=1e-12)
        assert point[f"regret_{key}"] == point[f"loss_{key}"] - star
        assert point[f"accuracy_{key}"] == correct / 60
        assert point[f"kappa_{key}"] == pytest.approx(learner.condition_number(), rel=1e-9)
        if name != "ADAGRAD":
            assert point[f"alpha_{key}"] == learner.alpha
            np.testing.assert_array_equal(race.learners[name].u, learner.u)


def test_the_comparators():
    X, y = stream(n=300, d=8, seed=1)
    for loss in ("squared", "logistic"):
        w = best_fixed_predictor(X, y, loss)
        gradient = X.T @ get_loss(loss).derivative(X @ w, y) + 2e-6 * len(y) * w
        assert np.linalg.norm(gradient) < 1e-3 * len(y)
    h = hindsight(X, y, "squared", 0.5)
    z = np.clip(X @ best_fixed_predictor(X, y, "squared"), -0.5, 0.5)
    np.testing.assert_allclose(h.loss, np.cumsum((z - y) ** 2))
    assert h.correct[-1] == np.sum(z * y > 0)
    assert h.majority[-1] == max(np.sum(y > 0), np.sum(y < 0)) and h.majority[0] == 1


@pytest.mark.parametrize("schedule", ["constant", "inverse_t"])
def test_the_exact_curvature_is_the_sum_of_the_sketched_rows(schedule):
    """From the records (gradient scale, curvature weight): the sum of ``(mu + eta_t) g_t
    g_t^T`` that the page once rebuilt from each learner's prediction and its own copy of
    eta_t; FD-SON with m > d keeps every row, so its H is that sum plus alpha0 I exactly."""
    X, y = stream(n=80, d=6)
    race = race_of(X, y, names=("RFD-SON", "FD-SON", "FULL-ON"), m=8, eta_schedule=schedule)
    race.step(80)
    learner = SketchedOnlineNewton(6, sketch="fd", m=8, alpha0=0.5, eta=0.1, C=1.0, eta_schedule=schedule)
    expected = np.zeros((6, 6))
    f = get_loss("squared")
    for t, (x, label) in enumerate(zip(X, y), start=1):
        slope = f.derivative(learner.predict(x), label)
        eta_t = 0.1 / t if schedule == "inverse_t" else 0.1
        expected += (learner.mu + eta_t) * slope ** 2 * np.outer(x, x)
        learner.learn(x, label)
    np.testing.assert_allclose(race.curvatures["FD-SON"], expected, rtol=1e-9, atol=1e-12)
    assert "FULL-ON" not in race.curvatures  # FULL-ON is exact: nothing to compare
    sketch, exact, alpha = race.spectrum("FD-SON")
    np.testing.assert_allclose(sketch, exact, rtol=1e-8)  # m > d: nothing dropped
    assert alpha == 0.5


def test_no_exact_curvature_above_oracle_max_d():
    X, y = stream(n=20, d=ORACLE_MAX_D + 1)
    race = race_of(X, y, names=("RFD-SON",))
    race.step(20)
    assert race.curvatures == {} and race.spectrum("RFD-SON")[1] is None


def test_tune_changes_only_what_differs_through_with_params():
    X, y = stream()
    race, reference = race_of(X, y), race_of(X, y)
    race.step(40)
    reference.step(40)
    before = dict(race.learners)
    race.tune(eta=0.1, alpha0=0.5, eta_schedule="constant", adagrad_eta=0.1)  # today's values
    assert all(race.learners[name] is before[name] for name in LEARNERS)
    race.tune(eta=0.1, alpha0=0.5, eta_schedule="constant", adagrad_eta=0.3)
    assert race.learners["ADAGRAD"] is not before["ADAGRAD"] and race.learners["ADAGRAD"].eta == 0.3
    assert all(race.learners[name] is before[name] for name in LEARNERS if name != "ADAGRAD")
    race.tune(eta=0.7, alpha0=2.0, eta_schedule="inverse_t", adagrad_eta=0.3)
    for name in LEARNERS[:-1]:
        params = race.learners[name].get_params()
        assert (params["eta"], params["alpha0"], params["eta_schedule"]) == (0.7, 2.0, "inverse_t")
        assert race.learners[name].t == 40
    race.step(20)
    hand = reference.learners["RFD-SON"].with_params(eta=0.7, alpha0=2.0, eta_schedule="inverse_t")
    for x, label in zip(X[40:60], y[40:60]):
        hand.learn(x, label)
    np.testing.assert_array_equal(race.learners["RFD-SON"].u, hand.u)


def test_a_learner_that_diverges_leaves_the_race_and_the_others_go_on():
    X, y = stream()
    race = race_of(X, y, names=("RFD-SON", "ADAGRAD"))
    race.step(10)

    def overflow(x, label):
        raise Diverged("beta overflowed", t=11)
    race.learners["ADAGRAD"].step = overflow
    race.step(5)
    assert race.diverged == {"ADAGRAD": 11} and race.t == 15 and race.learners["RFD-SON"].t == 15
    point = race.measure()
    assert np.isnan(point["loss_adagrad"]) and np.isnan(point["accuracy_adagrad"])
    assert np.isfinite(point["loss_rfd"])


def test_back_through_a_snapshot_is_bit_identical_and_keeps_todays_hot_values():
    X, y = stream()
    race, straight = race_of(X, y), race_of(X, y)
    race.step(30)
    snapshot = race.state_dict()
    race.step(50)
    adagrad = race.learners["ADAGRAD"]
    race.tune(eta=0.4, alpha0=1.0, eta_schedule="constant", adagrad_eta=0.1)
    race.load_state_dict(snapshot)  # the learners as they were, with their values then
    assert race.t == 30 and race.learners["FD-SON"].eta == 0.1 and race.learners["FD-SON"].alpha0 == 0.5
    assert race.learners["ADAGRAD"] is adagrad  # its hot value did not change: loaded in place
    race.step(50)
    straight.step(80)
    for name in LEARNERS:
        for key, value in straight.learners[name].state_dict().items():
            np.testing.assert_array_equal(race.learners[name].state_dict()[key], value,
                                          err_msg=f"{name} {key}")
    assert race.measure() == pytest.approx(straight.measure(), nan_ok=True)
    assert race.last_shrink("RFD-SON") == straight.last_shrink("RFD-SON") is not None
    for name, matrix in straight.curvatures.items():
        np.testing.assert_array_equal(race.curvatures[name], matrix)


def test_make_learners():
    learners = make_learners(LEARNERS, 5, alpha0=0.0)
    assert list(learners) == ["RFD-SON", "FD-SON", "RP-SON", "ADAGRAD"]  # FULL-ON needs alpha0 > 0
    assert learners["RP-SON"].get_params()["sketch"] == "rp"
    with pytest.raises(ValueError, match="learners must be among"):
        make_learners(["OJA-SON"], 5)


def test_a_race_of_no_learner_still_counts_rounds():
    X, y = stream(n=20)
    race = NewtonRace({}, X, y)
    assert race.step(30) == 20 and race.t == 20 and race.learners == {} and race.diverged == {}
    point = race.measure()
    assert np.isnan(point["loss_rfd"]) and point["accuracy_majority"] >= 0.5
    snapshot = race.state_dict()
    race.load_state_dict(snapshot)
    assert race.t == 20


def test_spectrum_bars_fall_back_to_a_racing_sketched_learner_and_pad_with_alpha():
    X, y = stream(d=8)
    race = race_of(X, y, names=("FD-SON", "ADAGRAD"))
    race.step(50)
    name, bars, exact, alpha = race.spectrum_bars("RFD-SON", 7)  # RFD-SON is not racing
    sketch, full, _ = race.spectrum("FD-SON")
    assert name == "FD-SON" and bars.size == 7 and alpha == 0.5
    np.testing.assert_array_equal(bars, np.concatenate([sketch, np.full(7 - sketch.size, alpha)]))
    np.testing.assert_array_equal(exact, full[:7])
    assert race_of(X, y, names=("ADAGRAD",)).spectrum_bars("RFD-SON", 7) is None


NOTE_SETTINGS = dict(d=10, m=4, alpha0=0.5, seed=3, label_noise=0.05, C=2.0, loss="squared", adagrad_eta=0.1)


def test_notes_say_what_applies():
    X, y = stream()
    race = race_of(X, y)
    said = notes(race, selected=LEARNERS, **NOTE_SETTINGS)
    assert said == [said[0]] and "seed 3" in said[0] and "5% of them flipped" in said[0] and "−2, 2" in said[0]
    said = notes(race, selected=LEARNERS, **{**NOTE_SETTINGS, "m": 10, "alpha0": 0.0, "loss": "logistic"})
    assert [note.split(" ")[0] for note in said[1:]] == ["Logistic", "m", "α₀"]
    assert said[-1].endswith("FULL-ON sits out (H₀ = α₀I must be invertible).")
    empty = NewtonRace({}, X, y)
    assert notes(empty, selected=(), **{**NOTE_SETTINGS, "d": ORACLE_MAX_D + 1})[1:] == [
        "No learner is selected: tick at least one above the plots.",
        f"d = {ORACLE_MAX_D + 1} > {ORACLE_MAX_D}: the exact spectrum (grey) is not computed."]
    race.stopped["ADAGRAD"] = Diverged("overflow", t=7)
    assert notes(race, selected=LEARNERS, **NOTE_SETTINGS)[-1] == "ADAGRAD left the race at t = 7 (overflow): lower its η."
    # The note says what happened (rows of 1e-150 underflow: FULL-ON did not overflow).
    race.stopped["FULL-ON"] = Diverged("the curvature row is too small (underflow)", t=9)
    assert notes(race, selected=LEARNERS, **NOTE_SETTINGS)[-1] == (
        "FULL-ON left the race at t = 9 (the curvature row is too small (underflow)).")


def test_summary_reads_the_measured_point():
    X, y = stream()
    race = race_of(X, y, names=("RFD-SON", "ADAGRAD"))
    assert summary(NewtonRace({}, X, y), {}, 150) == "**Latest:** no learner selected."
    assert summary(race, race.measure(), 150).startswith("**Latest:** t = 0, 2 learners ready · w* has average loss")
    race.step(100)
    point = race.measure()
    line = summary(race, point, 150)
    assert f"RFD-SON {point['loss_rfd'] / 100:.3g} ({100 * point['accuracy_rfd']:.0f}%)" in line
    assert "leader: **" in line and f"RFD-SON α = {race.learners['RFD-SON'].alpha:.3g}" in line
    t, delta = race.last_shrink("RFD-SON")
    assert f"(last shrink at t = {t}, δ = {delta:.3g})" in line


# -- the labels the page plants, and what it says about the race ------------------------------

def test_whitened_labels_weigh_every_principal_direction_the_same():
    X = load_stream("low rank + noise", n=400, d=12, seed=2)
    y, w = planted_labels(X, flip=0.0, seed=2)
    # independently: S^{-1/2} from the SVD of X (S = X^T X / n = V diag(s^2 / n) V^T)
    _, sv, Vt = np.linalg.svd(X, full_matrices=False)
    _, v = linear_classification_labels(X, flip=0.0, seed=2)  # the same draw of v
    expected = Vt.T @ ((Vt @ v) * np.sqrt(X.shape[0]) / sv)
    np.testing.assert_allclose(w, expected, rtol=1e-8, atol=1e-10)
    margins = X @ w
    np.testing.assert_array_equal(y[np.abs(margins) > 1e-9], np.sign(margins[np.abs(margins) > 1e-9]))
    # each principal direction carries (v_j)^2 of the label's mean square: v is a unit vector
    share = (X @ Vt.T * (Vt @ w)) ** 2
    np.testing.assert_allclose(share.mean(axis=0), (Vt @ v) ** 2, rtol=1e-8)
    # the same seed flips the same rows in both spaces
    flipped = planted_labels(X, flip=0.3, seed=2)[0] != y
    raw = linear_classification_labels(X, flip=0.3, seed=2)[0] != linear_classification_labels(X, flip=0.0, seed=2)[0]
    np.testing.assert_array_equal(flipped, raw)
    with pytest.raises(ValueError, match="space must be one of whitened, raw"):
        planted_labels(X, space="pca")
    assert planted_labels(np.zeros((5, 3)), seed=0)[0].shape == (5,)  # no direction at all: identity


def test_faint_share_against_a_projection_by_hand():
    X = load_stream("low rank + noise", n=300, d=10, seed=1)
    w = np.random.default_rng(0).standard_normal(10)
    _, _, Vt = np.linalg.svd(X, full_matrices=False)
    strong = X @ Vt[:3].T @ Vt[:3] @ w
    assert faint_share(X, w, 3) == pytest.approx(1 - strong @ strong / ((X @ w) @ (X @ w)))
    assert faint_share(X, w, 10) == pytest.approx(0.0, abs=1e-12) and faint_share(X, np.zeros(10), 3) == 0.0


def test_watch_says_whether_rfd_son_leads_from_the_recorded_totals():
    X, y = stream()
    race = race_of(X, y, names=("RFD-SON", "FD-SON", "ADAGRAD"))
    history = History()
    assert watch(race, history).startswith("**What to look for:** whether RFD-SON's total loss falls below")
    assert "tick RFD-SON" in watch(race_of(X, y, names=("RFD-SON",)), history)
    history.append(t=0.0, **race.measure())
    totals = {"loss_rfd": [0, 5, 7, 9], "loss_adagrad": [0, 4, 8, 12], "loss_fd": [0, 6, 8, 8.5]}
    race.step(3)
    for i, t in enumerate((1, 2, 3), start=1):
        history.append(t=float(t), **{**race.measure(), **{key: value[i] for key, value in totals.items()}})
    said = watch(race, history)
    assert "RFD-SON leads ADAGRAD since row 2 (average loss 3 against 4)" in said
    assert "FD-SON is ahead of RFD-SON (average loss 2.83 against RFD-SON's 3)" in said
    assert "The papers' effect: the sketched second-order learner beats the first-order one." in said
    history.append(t=3.0, **{**race.measure(), "loss_rfd": 9, "loss_adagrad": 8, "loss_fd": 8.5})
    said = watch(race, history, faint=0.05, label_space="raw", k=4)
    assert "ADAGRAD is ahead of RFD-SON" in said and "does not show in this run so far" in said
    assert "Only 5% of the raw labels' signal lies outside the stream's top 4 directions" in said
    assert "Only" not in watch(race, history, faint=0.05, label_space="whitened", k=4)
    race.stopped["RFD-SON"] = Diverged("overflow", t=2)
    assert watch(race, history) == "**What to look for:** RFD-SON left the race (the notes above say when and why)."
