"""The factorization-machine page without a browser: its numbers against explorer.fm itself.

Every number the page records is checked against the learners run directly on the same
stream (progressive validation), plus reset, hot versus restarting options, Back, the
views and refused values.
"""

from __future__ import annotations

import time

import numpy as np
import panel as pn
import pytest
import scipy.linalg
from sklearn.metrics import roc_auc_score

from explorer.dashboard.app import Dashboard
from explorer.dashboard.pages.fm import BINARY, MOVIELENS, SYNTHETIC, FactorizationPage
from explorer.dashboard.pages.fm_figures import spectra_update
from explorer.dashboard.settings import Settings, apply_query
from explorer.experiments.fm import RATING_NOISE, TASTE_RANK
from explorer.fm import FTRLFM, OGDFM, SketchedFTRL, movielens_100k, progressive, synthetic_ratings
from explorer.hooks import Recorder
from explorer.streams import linear_classification_labels, load_stream

SMALL = dict(fm_users=10, fm_items=12)


def small_app(task=SYNTHETIC, **settings) -> Dashboard:
    app = Dashboard(pages=(FactorizationPage,))
    app.settings.param.update(**{"n": 200, "d": 12, "m": 4, "seed": 3, **settings})
    app.active.param.update(fm_task=task, **SMALL)
    return app


def ratings(n=200, seed=3):
    """The page's synthetic ratings: its rating noise and taste rank."""
    return synthetic_ratings(n, n_users=10, n_items=12, seed=seed, noise=RATING_NOISE, rank=TASTE_RANK)


# -- numbers against the learners' own API ----------------------------------------------------

def test_ratings_numbers_match_the_learners_run_directly():
    app = small_app(eta=0.1)
    page, transport = app.active, app.transport
    assert page.n_rows == 120  # 10 x 12 pairs, each rated once: n = 200 is capped (and said so)
    assert any("only 120" in note for note in app.notes)
    for _ in range(7):
        transport.step()
    transport.step(40)
    assert page.t == transport.t == 47
    data = ratings(120)
    X, y = data.X[:47], data.y[:47]
    d = X.shape[1]
    runs = {"sftrl": progressive(SketchedFTRL(d, m=4, eta=0.1), X, y),
            "ftrl": progressive(FTRLFM(d, eta=0.1), X, y),
            "ogd": progressive(OGDFM(d, eta=0.5), X, y)}
    point = page.history.last()
    for key, run in runs.items():
        np.testing.assert_allclose(page.race.predictions[key][:47], run["prediction"], rtol=1e-10, atol=1e-12)
        assert point[f"metric_{key}"] == pytest.approx(np.sqrt(2 * run["loss"].mean()), rel=1e-10)
        assert point[f"time_{key}"] > 0
    running_mean = np.r_[0.0, np.cumsum(y)[:-1] / np.arange(1, 47)]
    assert point["reference"] == pytest.approx(np.sqrt(np.mean((running_mean - y) ** 2)))
    # q, the sign balance and the sketch against S-FTRL's own step events
    sftrl, recorder = SketchedFTRL(d, m=4, eta=0.1), Recorder(kinds=("step",))
    sftrl.add_hook(recorder)
    progressive(sftrl, X, y)
    steps = recorder.columns("step")
    q = steps["gradient_scale"]
    np.testing.assert_allclose(page.race.gradient_scales["sftrl"][:47], q, rtol=1e-10, atol=1e-12)
    assert point["share_plus"] == pytest.approx(np.mean(q > 0))
    assert point["share_minus"] == pytest.approx(np.mean(q < 0))
    mass = np.abs(q) * 3.0  # ||a_hat||^2 = 3 for a one-hot (user, item) row
    assert point["mass_plus"] == pytest.approx(mass[q > 0].sum() / mass.sum())
    assert (point["rank_plus"], point["rank_minus"]) == steps["part_ranks"][-1]
    assert point["delta_plus"] + point["delta_minus"] == pytest.approx(sftrl.sketch.delta_total)
    np.testing.assert_allclose(page.race.learners["sftrl"].theta(), sftrl.theta(), atol=1e-10)


def test_binary_task_auc_matches_sklearn_on_the_shared_stream():
    app = small_app(BINARY, eta=0.1)
    page = app.active
    assert page.n_rows == 200 and page._X.shape[1] == 12 and "dataset" in page.uses
    app.transport.seek(150)
    X = load_stream("low rank + noise", n=200, d=12, seed=3)
    y, _ = linear_classification_labels(X, seed=3)
    A = X / np.linalg.norm(X, axis=1, keepdims=True)
    run = progressive(SketchedFTRL(12, m=4, eta=0.1, loss="logistic"), A[:150], y[:150])
    np.testing.assert_allclose(page.race.predictions["sftrl"][:150], run["prediction"], rtol=1e-10,
                               atol=1e-12)
    assert page.history.last()["metric_sftrl"] == pytest.approx(roc_auc_score(y[:150], run["prediction"]))
    ftrl = progressive(FTRLFM(12, eta=0.1, loss="logistic"), A[:150], y[:150])
    assert page.history.last()["metric_ftrl"] == pytest.approx(roc_auc_score(y[:150], ftrl["prediction"]))
    assert page.history.last()["reference"] == 0.5


def test_spectra_are_fd_of_the_exact_sums_within_delta():
    app = small_app(eta=0.1)
    page = app.active
    app.transport.seek(100)
    q = page.race.gradient_scales["sftrl"][:100]
    data = ratings(120)
    hat = np.hstack([data.X[:100].toarray(), np.ones((100, 1))])
    sketch = page.race.learners["sftrl"].sketch
    for part, mask, fd in (("+", q > 0, sketch.positive), ("-", q < 0, sketch.negative)):
        H = np.sqrt(np.abs(q[mask]))[:, None] * hat[mask]
        np.testing.assert_allclose(page.race.gram[part], H.T @ H, atol=1e-9)
        values = page.race.spectra(page.settings.m)[part]
        exact = np.sort(scipy.linalg.eigvalsh(H.T @ H))[::-1][:values["size"]]
        np.testing.assert_allclose(values["exact"], np.maximum(exact, 0), atol=1e-8)
        np.testing.assert_allclose(values["sketch"], np.sort(np.linalg.svd(fd.rows, compute_uv=False) ** 2)[::-1]
                                   [:values["size"]], atol=1e-9)
        k = values["sketch"].size
        assert fd.delta_total > 0  # m = 4 on d + 1 = 23 columns: shrinks happened
        assert np.all(values["sketch"] <= values["exact"][:k] + 1e-8)  # FD never over-estimates
        assert np.all(values["sketch"] >= values["exact"][:k] - fd.delta_total - 1e-8)


def test_a_large_sketch_is_ftrl():
    app = small_app(m=50)  # m >= d + 2 = 24
    page = app.active
    app.transport.seek(120)
    h = page.history
    np.testing.assert_allclose(h["metric_sftrl"], h["metric_ftrl"], rtol=1e-8)
    assert any("S-FTRL equals FTRL" in note for note in app.notes)


# -- reset, hot and restarting changes --------------------------------------------------------

def test_eta_is_hot_and_rescales_theta_of_ftrl_and_sftrl_alike():
    app = small_app(m=50, eta=0.1)  # S-FTRL == FTRL, so a hot change must keep them equal
    page, transport = app.active, app.transport
    page.param.update(fm_items=20, fm_noise=0.9)  # 200 ratings: B₋ fills up and shrinks after t = 60
    transport.seek(60)
    learners = dict(page.race.learners)
    theta = learners["ftrl"].theta()
    app.settings.eta = 0.01
    assert page.t == 60 and transport.t == 60
    assert learners["sftrl"].eta == learners["ftrl"].eta == 0.1  # with_params: new learners
    learners = page.race.learners
    assert learners["sftrl"].eta == learners["ftrl"].eta == 0.01
    np.testing.assert_allclose(learners["ftrl"].theta(), theta / 10, atol=1e-12)
    np.testing.assert_allclose(learners["sftrl"].theta(), theta / 10, atol=1e-10)
    transport.seek(200)
    np.testing.assert_allclose(page.race.predictions["sftrl"], page.race.predictions["ftrl"], rtol=1e-8,
                               atol=1e-10)
    assert page.race.last_shrink.t > 60  # the shrink hook is on the new S-FTRL
    page.ogd_eta = 2.0  # OGD's own step: hot as well
    assert page.t == 200 and page.race.learners["ogd"].eta == 2.0


def test_structural_settings_and_page_options_restart_through_the_frame():
    app = small_app()
    page, transport = app.active, app.transport
    transport.seek(50)
    app.settings.d = 20  # not used by the ratings task: nothing happens
    assert page.t == 50
    app.settings.m = 6
    assert page.t == transport.t == 0 and page.race.learners["sftrl"].m == 6
    transport.seek(30)
    page.fm_users = 20  # a page option that restarts: Transport restarts too (t, n, Back)
    assert page.t == transport.t == 0 and page.n_rows == transport.n_rows == 200
    assert page._X.shape[1] == 20 + 12
    assert transport._snapshots and all(s["t"] == 0 for s in transport._snapshots)
    page.fm_task = BINARY
    assert page.t == 0 and page._X.shape == (200, 20) and page.uses[0] == "dataset"
    transport.seek(40)
    app.settings.d = 8  # used now
    assert page.t == 0 and page._X.shape == (200, 8)
    page.fm_variant = "exact"
    assert page.t == transport.t == 0 and not page.race.learners["sftrl"].fast


def test_page_alone_restarts_itself():
    page = FactorizationPage(Settings(n=100, m=4), **SMALL)
    page.step(30)
    page.fm_items = 5
    assert page.t == 0 and page.n_rows == 50 and len(page.history) == 1


def test_back_gives_the_numbers_of_never_going_back():
    app = small_app(eta=0.1)
    transport, page = app.transport, app.active
    transport.seek(57)
    reference = {k: v.state_dict() for k, v in page.race.learners.items()}
    transport.seek(110)
    transport.back(53)
    assert page.t == transport.t == 57 and page.history["t"][-1] == 57
    for key, learner in page.race.learners.items():
        state = learner.state_dict()
        for name, value in reference[key].items():
            np.testing.assert_array_equal(state[name], value)
    transport.seek(120)
    straight = small_app(eta=0.1)  # the same record points (57, then every 20), never back
    straight.transport.seek(57)
    straight.transport.seek(120)
    for name in page.history.names:
        if not name.startswith("time_"):
            np.testing.assert_allclose(page.history[name], straight.active.history[name], rtol=1e-12,
                                       err_msg=name)
    np.testing.assert_allclose(page.race.gram["+"], straight.active.race.gram["+"], atol=1e-12)
    shrinks = [page.race.last_shrink, straight.active.race.last_shrink]
    assert shrinks[0].t == shrinks[1].t and shrinks[0].part == shrinks[1].part
    np.testing.assert_allclose(shrinks[0].sigma, shrinks[1].sigma, rtol=1e-12)


def test_a_learner_that_diverges_after_back_shows_nothing_of_the_abandoned_run():
    """Back, then a hot eta with which S-FTRL and FTRL overflow within one long step: that
    step is undone for them, and its rounds used to keep the predictions of the run before
    Back (a finite RMSE at t = 400 for learners that stopped at round 112)."""
    app = small_app(n=400, eta=0.1)
    page, transport = app.active, app.transport
    page.param.update(fm_users=30, fm_items=40)
    transport.seek(400)
    transport.back(360)
    assert page.t == 40
    app.settings.eta = 100.0
    transport.step(360)
    assert page.t == 400 and {"sftrl", "ftrl"} <= set(page.race.stopped)
    point = page.history.last()
    assert np.isnan(point["metric_sftrl"]) and np.isnan(point["metric_ftrl"])
    for name, error in page.race.stopped.items():
        start = error.t - 1 - error.row  # the first round of the step it stopped in
        assert 40 <= start and np.isnan(page.race.predictions[name][error.t - 1:]).all()


def test_too_large_eta_diverges_with_a_note_not_a_traceback():
    app = small_app(eta=10.0)
    app.transport.seek(120)
    page = app.active
    assert "sftrl" in page.race.stopped and "ogd" not in page.race.stopped
    assert any("diverged" in note for note in app.notes)
    assert np.isnan(page.history.last()["metric_sftrl"])
    page.views  # the views still draw
    page.refresh()


# -- views and refused values -------------------------------------------------------------------

def test_spectra_update_patches_each_half_and_the_axes():
    half = {"sketch": np.array([4.0, 1.0]), "exact": np.array([5.0, 2.0, 0.5]), "band": np.zeros(0), "size": 14}
    traces, layout = spectra_update({"+": half, "-": {**half, "size": 30}}, log=True)
    assert list(traces) == ["+ sketch", "+ exact", "+ band", "- sketch", "- exact", "- band"]
    assert traces["+ exact"]["x"].tolist() == [1, 2, 3] and traces["- band"]["x"].size == 0
    assert layout["xaxis"]["dtick"] == 5 and layout["yaxis2"]["type"] == "log"  # 30 directions: every 5th
    traces, layout = spectra_update({"+": half}, log=False)
    assert layout["xaxis"]["dtick"] == 2 and layout["yaxis"] == {"type": "linear", "rangemode": "tozero",
                                                                 "dtick": None}


def test_views_build_once_and_their_data_change_after_a_step():
    app = small_app()
    page = app.active
    views = page.views
    metric = page.plots["metric"].trace("S-FTRL (sketch)")
    before = np.array(metric.y, dtype=float).copy()
    app.transport.step(30)
    after = np.array(page.plots["metric"].trace("S-FTRL (sketch)").y, dtype=float)
    assert before.size == 1 and after.size == len(page.history) and np.isfinite(after[-1])
    assert page.history["t"][-1] == 30
    assert len(page.plots["spectra"].trace("+ sketch").y) > 0
    assert len(page.plots["balance"].trace("rounds → B₊ (q > 0)").y) == after.size
    assert "**Latest:** t = 30" in page.summary.object
    page.fm_task = BINARY
    assert page.plots["metric"].figure.layout.yaxis.title.text == "progressive AUC"
    assert views is page.views


@pytest.mark.parametrize("name, value", [("fm_users", 1000), ("fm_items", 1), ("ogd_eta", 0.0), ("fm_noise", -0.1),
                                         ("fm_task", "ratings: netflix"), ("fm_variant", "slow")])
def test_out_of_range_options_are_refused(name, value):
    app = small_app()
    page = app.active
    with pytest.raises(ValueError):
        setattr(page, name, value)
    messages = apply_query(page, {name: value})  # what a hand-edited URL gets: a message
    assert len(messages) == 1 and name in messages[0]


@pytest.mark.skipif(pytest.importorskip("importlib.util").find_spec("recbole") is None,
                    reason="MovieLens-100K ships in recbole (pip install --no-deps recbole==1.2.1)")
def test_movielens_columns_are_reindexed_without_changing_predictions():
    app = small_app(MOVIELENS, n=150, m=5, eta=0.05)
    page = app.active
    assert "seed" not in page.uses
    app.transport.seek(150)
    data = movielens_100k()
    run = progressive(SketchedFTRL(data.X.shape[1], m=5, eta=0.05), data.X[:150], data.y[:150])
    np.testing.assert_allclose(page.race.predictions["sftrl"], run["prediction"], rtol=1e-8, atol=1e-10)
    assert page._X.shape[1] < 2625 and any("d = 2625" in note for note in app.notes)


def test_step_and_refresh_time_at_the_defaults(capsys):
    page = FactorizationPage(Settings())  # n = 1000, m = 10, 30 + 40 = 70 one-hot columns
    page.views
    for task in (SYNTHETIC, BINARY):  # the binary task on d = 50
        page.fm_task = task
        start = time.perf_counter()
        for _ in range(100):
            page.step()
            page.refresh()
        with capsys.disabled():
            print(f"\n{task}: step + refresh {1e3 * (time.perf_counter() - start) / 100:.1f} ms")


# -- what the page's words say (issue 30) -------------------------------------------------------

def test_a_large_eta_is_warned_before_and_the_divergence_said_when_it_happens():
    app = small_app(eta=1.0)
    page = app.active
    assert "**η** (the FTRL step size)" in page.intro
    warning = "η = 1 is above the default 0.1: FTRL and S-FTRL play Θ = −η · (sum of past gradients)"
    assert any(note.startswith(warning) for note in app.notes)  # before any row
    app.transport.seek(200)
    assert "sftrl" in page.race.stopped
    assert not any(note.startswith(warning) for note in app.notes)  # replaced by what happened
    assert any(note.startswith(f"S-FTRL (sketch) diverged at round {page.race.stopped['sftrl'].t} "
                               "with η = 1") for note in app.notes)
    quiet = small_app()
    assert not any("above the default" in note for note in quiet.notes)


def test_b_plus_b_minus_and_a_hat_are_defined_on_the_page():
    app = small_app()
    page = app.active
    texts = [pane.object for pane in page.views.select(pn.pane.Markdown)]
    assert any(text.startswith("B₊, B₋: S-FTRL's two Frequent Directions sketches") and
               "2m (fast)" in text and "â = [aₜ; 1]" in text for text in texts)
    app.transport.step(20)
    assert "of at most 8 rows each (m = 4)" in page.summary.object  # fast: 2m rows
