"""The AdaGrad dashboard page without a browser: its numbers against explorer.adagrad directly.

Covers: losses and regrets equal learners run on the same stream; the ADA-FFD rank cycle
and the recorded shrinks; eta and delta are hot, m, method and loss restart; Back
(snapshot/restore) gives the numbers of never going back, also across a restart; the
views build and change after a step; bad knob values are refused by param.
"""

from __future__ import annotations

import numpy as np
import pytest

from explorer.adagrad import LABELS, LEARNERS, OGD, AdaGrad, Adam
from explorer.dashboard.app import Dashboard
from explorer.dashboard.pages.adagrad import AdaGradPage
from explorer.experiments.adagrad import FULL_MAX_D
from explorer.dashboard.settings import Settings, apply_query
from explorer.losses import get_loss
from explorer.streams import linear_classification_labels, linear_regression_targets, load_stream

SMALL = dict(dataset="decaying spectrum", n=150, d=16, m=3, seed=4, eta=0.1)
DETERMINISTIC = [f"regret_{key}" for key in LEARNERS] + ["rank_fd", "rank_ffd", "t"]


def small_page(**options) -> AdaGradPage:
    return AdaGradPage(Settings(**SMALL), **options)


def direct(key: str, X, y, *, method="cmd", eta=0.1, tau=3, loss="absolute", delta=None):
    """The learner the page runs as ``key``, built from the public API."""
    d = X.shape[1]
    if key == "ogd":
        return OGD(d, eta=eta, loss=loss)
    if key == "adam":
        return Adam(d, eta=eta, loss=loss)
    return AdaGrad(d, variant=key, method=method, eta=eta, delta=delta, tau=tau, loss=loss)


def stream():
    X = load_stream("decaying spectrum", n=150, d=16, seed=4)
    y, beta_star = linear_regression_targets(X, seed=4)
    return X, y, beta_star


def columns(history, names=DETERMINISTIC):
    return {name: history[name].copy() for name in names}


@pytest.mark.parametrize("method", ["cmd", "pds"])
def test_losses_and_regret_equal_the_learners_run_directly(method):
    view = small_page(method=method)
    for _ in range(5):
        view.step()
    view.step(40)
    X, y, beta_star = stream()
    assert view.t == 45 and np.allclose(view.comparator, beta_star)
    for key in LEARNERS:
        learner = direct(key, X, y, method=method)
        losses = learner.learn_many(X[:45], y[:45])
        assert view.cumulative_loss(key) == pytest.approx(losses.sum(), rel=1e-12)
        np.testing.assert_allclose(view.learners[key].beta, learner.beta, rtol=1e-10, atol=1e-12)
        # absolute loss on y = beta_*^T x: the comparator suffers 0, regret = cumulative loss
        assert view.history.last()[f"regret_{key}"] == pytest.approx(losses.sum(), abs=1e-9)
    ffd = direct("ffd", X, y, method=method)
    ranks = []
    for x, label in zip(X[:45], y[:45]):
        ffd.learn(x, label)
        ranks.append(ffd.rank)
    np.testing.assert_array_equal(view.experiment.ranks["ffd"][:45], ranks)
    assert view.history.last()["rank_ffd"] == ffd.rank


def test_squared_hinge_uses_classification_labels_and_regret_against_w_star():
    view = small_page(loss="squared_hinge")
    view.step(60)
    X, _, _ = stream()
    y, w_star = linear_classification_labels(X, flip=0.05, seed=4)
    comparator = get_loss("squared_hinge").value(X[:60] @ w_star, y[:60]).sum()
    learner = direct("ffd", X, y, loss="squared_hinge")
    losses = learner.learn_many(X[:60], y[:60])
    assert view.history.last()["regret_ffd"] == pytest.approx(losses.sum() - comparator, rel=1e-10)
    assert "Labels sign(w*ᵀx)" in view.notes[0]


def test_the_ffd_rank_cycles_between_tau_minus_one_and_two_tau():
    view = small_page()
    view.step(100)
    ranks = view.experiment.ranks["ffd"][:100]
    tau = 3
    assert ranks.max() == 2 * tau - 1  # reaching 2 tau, it shrinks within the same round
    assert ranks[20:].min() == tau - 1
    shrink = view.experiment.last_shrink("ffd")
    assert shrink.rank_before == 2 * tau and shrink.rank_after == tau - 1
    assert view.learners["ffd"].n_shrinks > 5
    assert view.experiment.ranks["fd"][:100].max() <= tau
    # with 2 tau > d, ADA-FFD never shrinks: a note says it equals ADA-FULL
    wide = AdaGradPage(Settings(**{**SMALL, "m": 9}))
    wide.step(50)
    assert wide.learners["ffd"].n_shrinks == 0
    assert any("never" in note and "ADA-FULL" in note for note in wide.notes)
    assert wide.history.last()["regret_ffd"] == pytest.approx(wide.history.last()["regret_full"],
                                                             rel=1e-6)


def test_eta_and_delta_are_hot():
    view = small_page()
    view.step(30)
    view.settings.eta = 0.01
    view.apply_hot("eta")
    view.delta = 0.5
    assert view.t == 30 and all(learner.eta == 0.01 for learner in view.learners.values())
    assert view.learners["ffd"].delta == 0.5 and view.learners["ffd"].proximal.delta == 0.5
    view.step(20)
    X, y, _ = stream()
    learner = direct("ffd", X, y)
    losses = list(learner.learn_many(X[:30], y[:30]))
    learner = learner.with_params(eta=0.01, delta=0.5)
    losses += list(learner.learn_many(X[30:50], y[30:50]))
    assert view.cumulative_loss("ffd") == pytest.approx(sum(losses), rel=1e-12)
    assert any("δ = 0.5" in note for note in view.notes)
    view.delta = 0.0  # back to the paper's: 1 for CMD, 1e-8 for ADA-DIAG
    assert view.learners["ffd"].proximal.delta == 1.0 and view.learners["diag"].delta == 1e-8


def test_method_and_loss_restart_and_the_frame_routes_settings():
    app = Dashboard(pages=(AdaGradPage,))
    app.settings.param.update(**SMALL)
    view, transport = app.active, app.transport
    transport.step(25)
    assert view.t == 25 and transport.t == 25
    assert set(AdaGradPage.hot) == {"eta"} and "m" in AdaGradPage.uses
    app.settings.eta = 0.01  # hot: the stream goes on
    assert view.t == 25 and view.learners["fd"].eta == 0.01
    app.settings.m = 4  # structural: tau = m, restart
    assert view.t == 0 and view.learners["ffd"].tau == 4 and transport.t == 0
    transport.step(10)
    view.method = "pds"
    assert view.t == 0 and view.learners["ffd"].method == "pds" and len(view.history) == 1
    transport.step(10)
    view.loss = "squared_hinge"
    assert view.t == 0 and view.learners["ogd"].loss == "squared_hinge"


def test_back_gives_the_numbers_of_never_going_back():
    straight = small_page()
    for _ in range(9):
        straight.step(7)
    view = small_page()
    for _ in range(3):
        view.step(7)
    snap = view.snapshot()
    for _ in range(4):
        view.step(7)
    view.restore(snap)
    view.history.truncate(snap["t"])
    for _ in range(6):
        view.step(7)
    for name, values in columns(straight.history).items():
        np.testing.assert_array_equal(columns(view.history)[name], values, err_msg=name)
    for key in LEARNERS:
        np.testing.assert_array_equal(view.learners[key].beta, straight.learners[key].beta)
    shrink, straight_shrink = view.experiment.last_shrink("ffd"), straight.experiment.last_shrink("ffd")
    assert (shrink.t, shrink.delta) == (straight_shrink.t, straight_shrink.delta)
    np.testing.assert_array_equal(shrink.sigma, straight_shrink.sigma)


def test_back_through_the_transport_and_across_a_restart():
    app = Dashboard(pages=(AdaGradPage,))
    app.settings.param.update(**SMALL)
    view, transport = app.active, app.transport
    transport.step(70)
    before = columns(view.history)
    transport.back(33)
    transport.step(33)
    after = columns(view.history)
    for name in before:
        np.testing.assert_array_equal(after[name][-1], before[name][-1], err_msg=name)
    # a method change restarts through the transport: the old learners' snapshots are dropped
    view.method = "pds"
    assert transport.t == 0 and [s["t"] for s in transport._snapshots] == [0]
    transport.step(45)
    transport.back(5)
    fresh = small_page(method="pds")
    fresh.step(40)
    assert view.t == 40
    for key in LEARNERS:
        np.testing.assert_allclose(view.learners[key].beta, fresh.learners[key].beta, rtol=1e-12)
        assert view.cumulative_loss(key) == pytest.approx(fresh.cumulative_loss(key), rel=1e-12)


def test_views_build_and_change_after_a_step():
    view = small_page()
    panes = view.views
    assert panes is not None and set(view.plots) == {"regret", "rank", "eigen", "time"}
    regret = view.plots["regret"].trace(LABELS["ffd"])
    assert len(regret.x) == 1
    view.step(30)
    view.refresh()
    assert list(view.plots["regret"].trace(LABELS["ffd"]).x) == view.history["t"].tolist() == list(range(31))
    assert view.plots["regret"].trace(LABELS["ffd"]).y[-1] == pytest.approx(view.cumulative_loss("ffd"))
    rank = view.plots["rank"].trace("ADA-FFD rank r")
    np.testing.assert_array_equal(rank.y, view.experiment.ranks["ffd"][:30])
    eigen = view.plots["eigen"].trace("ADA-FFD: eigenvalues of M now")
    values = view.learners["ffd"].proximal.eigenvalues()
    np.testing.assert_allclose(eigen.y[np.isfinite(eigen.y)], values[values > 0])
    assert view.plots["eigen"].trace("s = λ_τ (last shrink)").y[0] == pytest.approx(
        view.experiment.last_shrink("ffd").delta)
    assert np.all(np.asarray(view.plots["time"].trace(LABELS["full"]).y[1:]) > 0)
    assert view.summary.object.startswith("**Latest:** ADA-FFD rank r =")
    assert view.plots["regret"].figure.layout.yaxis.type == "log"
    view.log_regret = False
    assert view.plots["regret"].figure.layout.yaxis.type == "linear"
    view.baselines = False
    assert view.plots["regret"].trace("OGD").visible is False
    assert view.plots["regret"].trace(LABELS["fd"]).visible is True


def test_large_d_skips_ada_full():
    view = AdaGradPage(Settings(dataset="decaying spectrum", n=60, d=FULL_MAX_D + 2, m=5))
    view.views
    view.step(10)
    view.refresh()
    assert "full" not in view.learners and np.isnan(view.history.last()["regret_full"])
    assert any("ADA-FULL" in note and "not run" in note for note in view.notes)
    assert "ADA-FULL" not in view.summary.object.split("regret")[1]


def test_out_of_range_knobs_are_refused_by_param():
    view = small_page()
    for bad in ({"delta": -1.0}, {"delta": 1e9}, {"method": "newton"}, {"loss": "hinge"}):
        with pytest.raises(ValueError):
            view.param.update(**bad)
    assert view.delta == 0.0 and view.method == "cmd" and view.loss == "absolute"
    messages = apply_query(view, {"delta": -3, "method": "pds"})
    assert len(messages) == 1 and "delta" in messages[0]
    assert view.method == "pds"
    with pytest.raises(ValueError):
        Settings(m=1000)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_a_diverging_learner_is_stopped_and_explained():
    view = small_page(loss="squared_hinge")
    view.settings.eta = 100.0
    view.apply_hot("eta")
    view.step(150)
    assert view.diverged and view.t == 150
    view.views
    view.refresh()  # never a traceback, whatever diverged
    for key, t in view.diverged.items():
        assert np.isnan(view.history.last()[f"regret_{key}"])
        assert any(f"{LABELS[key]} diverged at t = {t}" in note for note in view.notes)


# -- what the page's words say (issue 30) -------------------------------------------------------

def test_a_negative_regret_is_explained_when_it_happens():
    view = AdaGradPage(Settings(n=300, d=12, m=3, seed=4), loss="squared_hinge")
    view.step(5)
    assert "Regret < 0" not in view._summary()  # every regret still positive
    view.step(295)
    assert min(view.history.last()[f"regret_{key}"] for key in ("full", "ffd")) < 0
    assert ("Regret < 0: it is measured against w*, the unit vector that drew the labels, not "
            "the best fixed β in hindsight for the squared hinge loss") in view._summary()
    absolute = small_page()
    absolute.step(150)
    assert "Regret < 0" not in absolute._summary()  # β* suffers 0: regret = cumulative loss


def test_eta_is_named_the_step_size():
    from explorer.dashboard.pages.adagrad import EXPLAIN
    assert "All learners share η, the step size." in EXPLAIN["regret"]
