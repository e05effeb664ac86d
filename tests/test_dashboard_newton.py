"""The sketched online Newton page without a browser: its numbers against the learners' own API.

Every recorded number is checked against :class:`explorer.newton.SketchedOnlineNewton` and
:class:`explorer.adagrad.AdaGrad` run directly on the same rows and labels; then reset,
hot versus restarting changes, Back, the views and refused knob values.
"""

from __future__ import annotations

import time

import numpy as np
import panel as pn
import pytest
from panel.io.location import Location

from explorer.adagrad import AdaGrad
from explorer.dashboard.app import Dashboard
from explorer.dashboard.pages.newton import NewtonPage
from explorer.dashboard.settings import Settings, apply_query
from explorer.errors import Diverged
from explorer.experiments.newton import KEYS, LEARNERS, best_fixed_predictor, planted_labels
from explorer.losses import get_loss
from explorer.newton import SketchedOnlineNewton
from explorer.streams import linear_classification_labels, load_stream

SMALL = dict(n=200, d=12, m=4)


def small_page(**options) -> NewtonPage:
    settings = options.pop("settings", None) or Settings(**SMALL, alpha0=0.5)
    return NewtonPage(settings, **options)


def small_app(**settings) -> Dashboard:
    app = Dashboard(pages=(NewtonPage,))
    app.settings.param.update(**{**SMALL, **settings})
    return app


def direct_run(name, X, y, *, m=4, alpha0=0.5, eta=0.1, loss="squared", seed=0, fast=True,
               adagrad_eta=0.1, C=1.0):
    """The learner run by hand: (learner, cumulative loss, correct signs)."""
    d = X.shape[1]
    if name == "ADAGRAD":
        learner = AdaGrad(d, variant="diag", method="cmd", eta=adagrad_eta, loss=loss)
    else:
        kind = {"RFD-SON": "rfd", "FD-SON": "fd", "RP-SON": "rp", "FULL-ON": "full"}[name]
        learner = SketchedOnlineNewton(d, sketch=kind, m=m, alpha0=alpha0, eta=eta, loss=loss,
                                       seed=seed, fast=fast, C=C)
    total, correct = 0.0, 0
    for x, label in zip(X, y):
        correct += learner.predict(x) * label > 0
        total += learner.learn(x, label)
    return learner, total, correct


# -- numbers ----------------------------------------------------------------------------------

@pytest.mark.parametrize("loss, slab", [("squared", 1.0), ("logistic", 1.0), ("logistic", 10.0)])
def test_recorded_numbers_match_the_learners_run_directly(loss, slab):
    page = small_page(son_loss=loss, slab=slab)
    for _ in range(7):
        page.step()
    page.step(40)
    assert page.t == 47
    X = load_stream("low rank + noise", n=200, d=12, seed=0)
    y, _ = planted_labels(X, flip=0.05, seed=0)  # the page's default: whitened
    w_star = best_fixed_predictor(X, y, loss)
    star = get_loss(loss).value(np.clip(X[:47] @ w_star, -slab, slab), y[:47]).sum()
    point = page.history.last()
    assert point["loss_star"] == pytest.approx(star)
    for name in LEARNERS:
        learner, total, correct = direct_run(name, X[:47], y[:47], loss=loss, C=slab)
        key = KEYS[name]
        assert point[f"loss_{key}"] == pytest.approx(total, rel=1e-9)
        assert point[f"regret_{key}"] == pytest.approx(total - star, rel=1e-9)
        assert point[f"accuracy_{key}"] == pytest.approx(correct / 47)
        assert point[f"kappa_{key}"] == pytest.approx(learner.condition_number(), rel=1e-9)
        if name != "ADAGRAD":
            assert point[f"alpha_{key}"] == pytest.approx(learner.alpha)
            np.testing.assert_allclose(page.race.learners[name].u, learner.u, rtol=1e-9, atol=1e-12)
        else:
            np.testing.assert_allclose(page.race.learners[name].beta, learner.beta, rtol=1e-9, atol=1e-12)
    # one point per row at n = 200 (resolution 1), however the 47 rows were stepped
    assert page.resolution == 1 and page.history["t"].tolist() == list(range(48))


def test_spectrum_lies_within_rfds_two_sided_bound_of_the_exact_one():
    page = small_page(settings=Settings(n=200, d=12, m=4, alpha0=0.5))
    page.step(150)
    sketch, exact, alpha = page.race.spectrum("RFD-SON")
    assert alpha == pytest.approx(page.race.learners["RFD-SON"].alpha) and alpha > 0.5
    full_sketch = np.full(12, alpha)
    full_sketch[:sketch.size] = sketch
    # RFD (Luo et al. 2017, Theorem 3): |lambda_i(B^T B + alpha I) - lambda_i(A^T A + alpha0 I)|
    # <= alpha - alpha0, A the rows sqrt(mu + eta) g_t (Weyl), the oracle built from the
    # learner's own step records (gradient scale, curvature weight): exact up to rounding.
    assert np.all(np.abs(full_sketch - exact) <= (alpha - 0.5) * (1 + 1e-9) + 1e-9)
    assert 0 < page.race.last_shrink("RFD-SON")[0] <= 150


# -- reset, hot and restarting changes -------------------------------------------------------

def test_eta_and_alpha0_are_hot_m_is_structural():
    app = small_app(alpha0=1.0)
    page, transport = app.active, app.transport
    transport.seek(60)
    reference = {name: page.race.learners[name].state_dict() for name in page.race.learners}
    app.settings.eta = 0.5
    learners = page.race.learners
    assert page.t == 60 and all(learners[n].eta == 0.5 for n in learners if n != "ADAGRAD")
    app.settings.alpha0 = 3.0
    assert page.t == transport.t == 60
    rfd = page.race.learners["RFD-SON"]
    delta = reference["RFD-SON"]["curvature.sketch.delta_total"]
    assert rfd.alpha == pytest.approx(3.0 + delta / 2)
    assert page.history["alpha_rfd"][-1] == pytest.approx(3.0 + delta / 2)
    assert page.history["alpha_fd"][-1] == 3.0
    # FULL-ON continues with H + 2 I: its solve equals the dense inverse of that matrix
    before = SketchedOnlineNewton.from_state_dict(reference["FULL-ON"])
    H = np.linalg.inv(reference["FULL-ON"]["curvature.inverse"]) + 2.0 * np.eye(12)
    v = np.arange(12.0)
    np.testing.assert_allclose(page.race.learners["FULL-ON"].solve(v), np.linalg.solve(H, v), rtol=1e-8)
    np.testing.assert_array_equal(page.race.learners["FULL-ON"].u, before.u)
    transport.step(5)  # and it keeps learning
    assert page.t == 65 and page.race.learners["FULL-ON"].t == 65
    app.settings.m = 6
    assert page.t == transport.t == 0 and page.race.learners["RFD-SON"].m == 6


def test_page_options_restart_or_apply_hot():
    app = small_app()
    page, transport = app.active, app.transport
    transport.seek(40)
    page.adagrad_eta = 0.3  # hot
    page.eta_schedule = "inverse_t"  # hot
    assert page.t == transport.t == 40
    learners = page.race.learners
    assert learners["ADAGRAD"].eta == 0.3 and learners["RFD-SON"].eta_schedule == "inverse_t"
    app.messages = ["an earlier message"]
    page.son_loss = "logistic"  # restarts through the transport: t, the URL's t and Back follow
    assert page.t == transport.t == transport.shared_t == 0
    assert [s["t"] for s in transport._snapshots] == [0] and transport._snapshots[0]["run"] == page.run
    assert app.messages == ["an earlier message"]  # a page option is not a settings change
    assert page.race.learners["FD-SON"].loss == "logistic"
    transport.seek(30)
    page.learners = ["RFD-SON", "ADAGRAD"]
    assert page.t == transport.t == 0 and list(page.race.learners) == ["RFD-SON", "ADAGRAD"]
    transport.step(10)
    assert np.isnan(page.history["loss_fd"][-1]) and np.isfinite(page.history["loss_rfd"][-1])
    page.label_noise = 0.2
    assert page.t == 0 and page.race.y.shape == (200,)
    transport.step(10)
    page.slab = 10.0
    assert page.t == 0 and page.race.learners["RFD-SON"].C == 10.0
    assert any("clip(wᵀx, −10, 10)" in note for note in page.notes)
    # without a dashboard the page restarts itself
    alone = small_page()
    alone.step(20)
    alone.fast = False
    assert alone.t == 0 and not alone.race.learners["RFD-SON"].fast and len(alone.history) == 1


def test_label_space_restarts_on_the_planted_labels_of_that_space():
    X = load_stream("low rank + noise", n=200, d=12, seed=0)
    page = small_page()
    page.step(30)
    assert page.label_space == "whitened"
    np.testing.assert_array_equal(page.race.y, planted_labels(X, flip=0.05, seed=0)[0])
    page.label_space = "raw"  # restarts, on linear_classification_labels of the raw rows
    assert page.t == 0
    np.testing.assert_array_equal(page.race.y, linear_classification_labels(X, flip=0.05, seed=0)[0])
    assert page.notes[0].startswith("Labels: y = sign(vᵀx) for a random unit vector v (seed 0)")
    page.label_space = "whitened"
    assert "every principal direction of the stream weighs the same" in page.notes[0]
    assert "of the label's signal (the mean square of the planted wᵀx) lies outside the stream's top 4" in page.notes[0]


def test_hot_option_mid_stream_equals_a_learner_changed_by_hand():
    page = small_page()
    page.step(30)
    page.adagrad_eta = 0.3
    page.step(30)
    X = load_stream("low rank + noise", n=200, d=12, seed=0)
    y, _ = planted_labels(X, flip=0.05, seed=0)  # the page's default: whitened
    learner = AdaGrad(12, variant="diag", method="cmd", eta=0.1, loss="squared")
    total = sum(learner.learn(x, label) for x, label in zip(X[:30], y[:30]))
    learner = learner.with_params(eta=0.3)
    total += sum(learner.learn(x, label) for x, label in zip(X[30:60], y[30:60]))
    assert page.history["loss_adagrad"][-1] == pytest.approx(total, rel=1e-9)


def test_alpha0_zero_sends_full_on_out_and_back_in():
    app = small_app(alpha0=1.0)
    page = app.active
    app.transport.seek(30)
    app.settings.alpha0 = 0.0  # FULL-ON cannot run: a restart without it
    assert page.t == 0 and "FULL-ON" not in page.race.learners
    assert any("FULL-ON sits out" in note for note in app.notes)
    app.transport.step(20)
    assert np.isnan(page.history["kappa_full"][-1])
    assert np.isinf(page.history["kappa_fd"][-1]) or page.history["kappa_fd"][-1] > 0
    app.settings.alpha0 = 0.01
    assert page.t == 0 and "FULL-ON" in page.race.learners


def test_a_learner_that_overflows_leaves_the_race_with_a_note():
    app = small_app()
    page = app.active
    app.transport.seek(20)

    def overflow(x, y):  # what AdaGrad raises when beta diverges (a too large eta)
        raise Diverged("the loss or its gradient overflowed (beta has diverged: lower eta)", t=21)
    page.race.learners["ADAGRAD"].step = overflow
    app.transport.step(5)
    assert page.t == 25 and page.race.diverged == {"ADAGRAD": 21}
    assert any("ADAGRAD left the race at t = 21 (the loss or its gradient overflowed" in note
               for note in app.notes)
    assert np.isnan(page.history["loss_adagrad"][-1]) and np.isfinite(page.history["loss_rfd"][-1])
    page.views  # noqa: B018
    app.transport.step()
    assert "ADAGRAD stopped" in page.summary.object


# -- Back ---------------------------------------------------------------------------------------

def test_back_gives_the_same_numbers_as_never_going_back():
    app = small_app(alpha0=0.2)
    transport, page = app.transport, app.active
    transport.seek(57)
    reference = {name: model.state_dict() for name, model in page.race.learners.items()}
    point = page.history.last()
    transport.seek(130)
    transport.back(73)  # 130 -> 57 through a snapshot and a replay
    assert page.t == transport.t == 57
    for name, model in page.race.learners.items():
        state = model.state_dict()
        for key, value in reference[name].items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(state[key], value, err_msg=f"{name} {key}")
            else:
                assert state[key] == value, (name, key)
    assert page.history.last() == pytest.approx(point, nan_ok=True)
    transport.seek(130)
    straight = small_page(settings=Settings(**SMALL, alpha0=0.2))
    straight.step(130)
    np.testing.assert_array_equal(page.race.learners["RP-SON"].u, straight.race.learners["RP-SON"].u)
    assert page.history.last() == pytest.approx(straight.history.last(), nan_ok=True)


def test_back_after_a_page_option_restarted_the_race():
    app = small_app(alpha0=0.5)
    page, transport = app.active, app.transport
    transport.step(45)  # snapshots of the squared-loss race
    page.son_loss = "logistic"  # the transport restarts: those snapshots are dropped
    transport.step(30)
    transport.back(5)
    fresh = small_page(son_loss="logistic")
    fresh.step(25)
    assert page.t == transport.t == 25 and page.race.learners["RFD-SON"].loss == "logistic"
    assert page.race.totals == pytest.approx(fresh.race.totals, rel=1e-12)
    assert page.history.last() == pytest.approx(fresh.history.last(), rel=1e-12, nan_ok=True)
    # a page on its own refuses a snapshot of the race before the restart
    snapshot = (fresh.step(5), fresh.snapshot())[1]
    fresh.fast = False
    with pytest.raises(ValueError, match="stream restarted"):
        fresh.restore(snapshot)


# -- views --------------------------------------------------------------------------------------

def test_views_build_and_change_after_a_step():
    app = small_app()
    page = app.active
    page.views  # noqa: B018 (built on first use)
    before = {name: np.asarray(plot.trace("RFD-SON").y, dtype=float).copy()
              for name, plot in page.plots.items() if name != "spectrum"}
    app.transport.step(30)
    for name, plot in page.plots.items():
        if name != "spectrum":
            assert list(plot.trace("RFD-SON").x) == page.history["t"].tolist()
            assert len(before[name]) == 1 and plot.trace("RFD-SON").x[-1] == 30
    assert len(page.plots["spectrum"].trace("sketch").y) == 10  # m + 6 directions
    assert page.summary.object.startswith("**Latest:**") and "RFD-SON" in page.summary.object
    page.loss_view = "average loss"
    loss_y = np.asarray(page.plots["loss"].trace("FD-SON").y, dtype=float)
    assert loss_y[-1] == pytest.approx(page.history["loss_fd"][-1] / 30)
    assert page.plots["loss"].figure.layout.yaxis.title.text == "average loss so far"
    page.spectrum_learner = "RP-SON"
    assert page.plots["spectrum"].trace("sketch").name.startswith("RP-SON")
    page.learners = ["FD-SON"]
    assert page.plots["loss"].trace("RFD-SON").visible is False
    assert page.plots["spectrum"].trace("sketch").name.startswith("FD-SON")


def test_page_options_go_in_the_url_and_bad_values_are_refused():
    app = small_app()
    location = Location()
    app.sync_url(location)
    location.update_query(**app.url_query())
    assert {"son_loss", "slab", "learners", "fast", "label_noise", "label_space", "eta_schedule",
            "adagrad_eta", "loss_view", "spectrum_learner"} <= set(app.url_query())
    location.update_query(son_loss="logistic", adagrad_eta=0.2)
    assert app.active.son_loss == "logistic" and app.active.race.learners["ADAGRAD"].eta == 0.2
    page = app.active
    for name, value in (("label_noise", 2.0), ("adagrad_eta", 0.0), ("son_loss", "hinge"), ("slab", 0.0),
                        ("learners", ["OJA-SON"]), ("spectrum_learner", "FULL-ON"), ("label_space", "pca")):
        with pytest.raises(ValueError):
            setattr(page, name, value)
    messages = apply_query(page, {"label_noise": 3, "son_loss": "squared"})
    assert page.son_loss == "squared" and page.label_noise == 0.05
    assert messages and messages[0].startswith("URL: label_noise = 3 was ignored")


def test_timing_of_step_and_refresh(capsys):
    """Reports (does not assert) the wall time of one Step at the defaults (d = 50, m = 10)."""
    page = NewtonPage(Settings())
    page.views  # noqa: B018
    for _ in range(3):
        page.step()
        page.refresh()
    start, count = time.perf_counter(), 50
    for _ in range(count):
        page.step()
        page.refresh()
    seconds = (time.perf_counter() - start) / count
    with capsys.disabled():
        print(f"\nnewton page, d = 50, m = 10: step + refresh {1e3 * seconds:.1f} ms "
              f"({1 / seconds:.0f} updates/s)")
    assert page.t == 53


def test_the_two_etas_are_named_by_what_they_are():
    """The sidebar's η is SON's curvature weight here; ADAGRAD has a step size of its own."""
    page = small_page()
    assert "**η** (here SON's curvature weight)" in page.intro
    names = [widget.name for widget in page.views.select(pn.widgets.FloatInput)]
    assert "ADAGRAD η (step size) ⚡" in names
