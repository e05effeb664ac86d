"""The online adaptive PCA page without a browser: its numbers against explorer.pca run
directly on the same stream, hot and restart knobs, Back, the views and refused values."""

from __future__ import annotations

import time

import numpy as np
import panel as pn
import pytest

from explorer.dashboard import Dashboard
from explorer.dashboard.pages.pca import AdaptivePCAPage
from explorer.dashboard.settings import Settings, apply_query
from explorer.experiments.pca import captured_share
from explorer.hooks import Recorder
from explorer.pca import (
    FollowTheLeaderPCA,
    OnlineAdaptivePCA,
    best_fixed_projection,
    pca_theory_settings,
)
from explorer.streams import changing_subspace


def small_page(**knobs) -> AdaptivePCAPage:
    """A page on a short stream: 240 rows in d = 12, segments of 60."""
    knobs = {"segment_length": 60, **knobs}
    return AdaptivePCAPage(Settings(n=240, d=12, seed=3), **knobs)


def learner(page, name):
    """The page's current learner ``name`` ("adaptive", "static" or "ftl")."""
    return page.race.learners[name]


def small_app(**settings) -> Dashboard:
    app = Dashboard(pages=(AdaptivePCAPage,))
    app.settings.param.update(n=240, d=12, seed=3, **settings)
    app.active.segment_length = 60
    app.transport.reset()
    return app


def direct_run(X, k, eta, alpha, seed, rows):
    """The four methods run by hand on X[:rows]; returns totals and the learners."""
    adaptive = OnlineAdaptivePCA(X.shape[1], k, eta=eta, alpha=alpha, seed=seed)
    static = OnlineAdaptivePCA(X.shape[1], k, eta=eta, alpha=0.0, seed=seed)
    ftl = FollowTheLeaderPCA(X.shape[1], k)
    recorder = Recorder(kinds=("fixed_share", "cap"))
    adaptive.add_hook(recorder)
    totals = dict.fromkeys(("ftl", "static", "adaptive", "sampled"), 0.0)
    for x in X[:rows]:
        totals["ftl"] += ftl.learn(x)
        totals["sampled"] += adaptive.learn(x)
        totals["adaptive"] += adaptive.last_expected_loss
        static.learn(x)
        totals["static"] += static.last_expected_loss
    return totals, adaptive, static, ftl, recorder


def test_page_numbers_match_the_pca_api_on_the_same_stream():
    page = small_page(k=2, eta_pca=2.0, alpha=1e-3)
    for _ in range(5):
        page.step()
    page.step(92)  # into the second segment
    X, segment = changing_subspace(n_segments=4, segment_length=60, n=12, rank=2, seed=3)
    np.testing.assert_array_equal(page._X, X)
    totals, adaptive, static, ftl, recorder = direct_run(X, 2, 2.0, 1e-3, 3, 97)
    point = page.history.last()
    assert point["t"] == 97 and point["segment"] == 1
    for name in ("ftl", "static", "adaptive", "sampled"):
        assert point[f"loss_{name}"] == pytest.approx(totals[name], rel=1e-12)
    basis, best = best_fixed_projection(X, 2)
    assert point["loss_best"] == pytest.approx(best[:97].sum(), rel=1e-12)
    rows = X[segment == 1]
    C = rows.T @ rows
    top = np.linalg.eigvalsh(C)[-2:].sum()
    assert point["overlap_adaptive"] == pytest.approx(captured_share(adaptive.subspace(), C, top))
    assert point["overlap_static"] == pytest.approx(captured_share(static.subspace(), C, top))
    assert point["overlap_ftl"] == pytest.approx(captured_share(ftl.basis, C, top))
    assert point["overlap_best"] == pytest.approx(captured_share(basis, C, top))
    shared = recorder.events("fixed_share")[-1]
    assert point["fs_mass"] == pytest.approx(0.5 * np.abs(shared.w_hat - shared.v).sum())
    assert point["fs_mass"] <= 1e-3 + 1e-12  # fixed share moves at most alpha
    assert point["capped_adaptive"] == recorder.events("cap")[-1].n_capped
    np.testing.assert_allclose(page.eigenvalue_log10("adaptive")[:, -1],
                               np.sort(adaptive.log_eigenvalues) / np.log(10))
    np.testing.assert_allclose(page.eigenvalue_log10("static")[:, -1],
                               np.sort(static.log_eigenvalues) / np.log(10))
    # fixed share keeps every weight above alpha / n (up to the capping's rescaling)
    assert page.history["w_adaptive_0"][-1] >= np.log10(1e-3 / 12) - 1e-9


def test_the_papers_picture_on_the_default_stream():
    page = AdaptivePCAPage(Settings())  # n = 1000, d = 50, 5 segments of 200
    page.step(1000)
    p = page.history.last()
    assert p["loss_adaptive"] < p["loss_static"] < p["loss_best"] < p["loss_ftl"] * 1.01
    assert p["overlap_adaptive"] > 0.99  # adaptive PCA found the last segment's subspace
    _ = page.views  # build the panes (the frame does it on first display)
    assert page.heatmap_rows() == 16  # of d = 50: the smallest 3k + 10
    z = np.array(page.plots["weights"].trace("eigenvalues").z)
    assert z.shape[0] == 16 and z[:2, -1].max() < -3 < z[2:, -1].min()  # two kept directions


def test_alpha_zero_is_static_online_pca():
    page = small_page(alpha=0.0)
    page.step(240)
    assert page.history["loss_adaptive"][-1] == pytest.approx(page.history["loss_static"][-1])
    assert any("α = 0" in note for note in page.notes)


def test_reset_and_shared_settings():
    app = small_app()
    page, transport = app.active, app.transport
    transport.step(30)
    assert page.t == 30 and transport.t == 30
    app.settings.eta = 1.0  # the shared eta is not this page's: nothing happens
    assert page.t == 30 and learner(page, "adaptive").eta == 1.0 and page.eta_pca == 1.0
    app.settings.seed = 4  # structural: restart on the new stream
    assert page.t == 0 and transport.t == 0 and len(page.history) == 1
    np.testing.assert_array_equal(page._X, changing_subspace(n_segments=4, segment_length=60, n=12,
                                                             rank=2, seed=4)[0])
    app.settings.d = 7
    assert page._X.shape == (240, 7) and learner(page, "adaptive").n == 7
    transport.step(240)
    assert page.finished and page.history.last()["t"] == 240


def test_hot_knobs_apply_mid_stream():
    page = small_page()
    page.step(50)
    before = learner(page, "adaptive")
    page.param.update(eta_pca=5.0, alpha=1e-2)
    adaptive, static = learner(page, "adaptive"), learner(page, "static")
    assert page.t == 50 and adaptive.eta == 5.0 and static.eta == 5.0
    assert adaptive.alpha == 1e-2 and static.alpha == 0.0  # static PCA keeps alpha = 0
    assert before.eta == 1.0 and adaptive is not before  # with_params: a new learner, the old untouched
    assert page.history["t"][-2:].tolist() == [50.0, 50.0]  # a point at the change
    page.step(40)
    X = page._X
    adaptive = OnlineAdaptivePCA(12, 2, eta=1.0, alpha=1e-5, seed=3)
    expected = 0.0
    for i, x in enumerate(X[:90]):
        if i == 50:
            adaptive = adaptive.with_params(eta=5.0, alpha=1e-2)
        expected += adaptive.step(x).expected_loss
    assert page.history["loss_adaptive"][-1] == expected  # the same numbers, bit for bit
    assert page.history["fs_mass"][-1] > 0  # the recorder followed the new learner


def test_restart_knobs_rebuild_the_stream():
    page = small_page()
    page.step(70)
    page.k = 3
    assert page.t == 0 and learner(page, "adaptive").k == 3 and learner(page, "ftl").k == 3
    assert len(page.history) == 1
    page.segment_length = 100
    assert page.t == 0 and page.race.hindsight.boundaries.tolist() == [100, 200]
    page.rank = 4
    page.step(240)
    X, _ = changing_subspace(n_segments=3, segment_length=100, n=12, rank=4, seed=3)
    totals, *_ = direct_run(X[:240], 3, 1.0, 1e-5, 3, 240)
    assert page.history.last()["loss_adaptive"] == pytest.approx(totals["adaptive"], rel=1e-12)


def test_notes_explain_what_cannot_be_honoured():
    page = AdaptivePCAPage(Settings(n=100, d=3), k=5, rank=6, segment_length=500)
    assert page.k_used == 2 and learner(page, "adaptive").k == 2
    text = " ".join(page.notes)
    assert "using k = 2" in text and "rank 3" in text and "one segment" in text
    assert "data-set choice does not apply" in text
    page.step(100)  # runs to the end without complaint
    assert page.finished


def test_back_gives_the_same_numbers_as_never_going_back():
    straight = small_app()
    for _ in range(13):
        straight.transport.step(10)
    app = small_app()
    for _ in range(15):
        app.transport.step(10)
    app.transport.back(40)
    assert app.active.t == 110
    app.transport.seek(130)
    a, b = straight.active, app.active
    for name in ("loss_ftl", "loss_static", "loss_adaptive", "loss_sampled", "overlap_adaptive",
                 "fs_mass", "capped_adaptive", "capped_static", "w_adaptive_0", "w_static_5"):
        assert b.history.last()[name] == pytest.approx(a.history.last()[name], rel=1e-12, nan_ok=True)
    np.testing.assert_allclose(learner(b, "adaptive").W, learner(a, "adaptive").W, atol=1e-14)
    common, i, j = np.intersect1d(a.history["t"], b.history["t"], return_indices=True)
    assert common.size >= 12  # the points kept before going back are those of the straight run
    np.testing.assert_allclose(b.history["loss_adaptive"][j], a.history["loss_adaptive"][i])


def test_back_after_a_restart_knob_replays_the_new_stream():
    app = small_app()
    app.transport.step(100)  # snapshots of the old stream
    app.active.k = 3  # restarts through the transport: the old stream's snapshots are dropped
    page = app.active
    assert app.transport.t == 0 and [s["t"] for s in app.transport._snapshots] == [0]
    app.transport.step(80)
    app.transport.seek(50)  # back through a snapshot of the new stream
    assert page.t == 50 and learner(page, "adaptive").k == 3
    totals, *_ = direct_run(page._X, 3, 1.0, 1e-5, 3, 50)
    assert page.history.last()["loss_adaptive"] == pytest.approx(totals["adaptive"], rel=1e-12)


def test_views_build_and_change_after_a_step():
    app = small_app()
    page = app.active
    views = page.views
    assert views is not None and set(page.plots) == {"loss", "overlap", "weights", "fixed_share"}
    before = np.array(page.plots["loss"].trace("adaptive PCA").y)
    z_before = np.array(page.plots["weights"].trace("eigenvalues").z)
    app.transport.step(5)
    after = np.array(page.plots["loss"].trace("adaptive PCA").y)
    assert before.size == 1 and after.size == len(page.history) == 6 and after[-1] > 0  # t = 0..5
    assert page.heatmap_rows() == 12  # d = 12 <= 3k + 10: every eigenvalue is drawn
    assert np.array(page.plots["weights"].trace("eigenvalues").z).shape == (12, z_before.shape[1] + 5)
    assert np.array(page.plots["fixed_share"].trace("capped (static)").y).size == after.size
    assert page.summary.object.startswith("**Latest:**") and "segment 1 of 4" in page.summary.object
    def switches():
        return [shape.x0 for shape in page.plots["loss"].figure.layout.shapes
                if shape.name == "stream switches subspace"]
    assert switches() == []  # no switch streamed yet
    app.transport.step(120)
    assert switches() == [60, 120]  # the switches at 60 and 120
    assert "segment 3 of 4" in page.summary.object
    page.heatmap_of = "static"
    np.testing.assert_allclose(np.array(page.plots["weights"].trace("eigenvalues").z),
                               np.maximum(page.eigenvalue_log10("static"), -12.0))


def test_knob_buttons_and_theory_setting():
    page = small_page()
    setting = page.theory_setting()
    _, best = best_fixed_projection(page._X, 2)
    eta, alpha = pca_theory_settings(240, 12, 2, best.sum())
    assert setting == pytest.approx({"eta_pca": eta, "alpha": alpha})
    page.param.update(**setting)
    assert learner(page, "adaptive").alpha == pytest.approx(alpha)


@pytest.mark.parametrize("name, value", [("k", 0), ("k", 100), ("segment_length", 5),
                                         ("rank", 0), ("alpha", 1.5), ("alpha", -0.1),
                                         ("eta_pca", 0.0), ("heatmap_of", "ftl")])
def test_out_of_range_knobs_are_refused_by_param(name, value):
    page = small_page()
    page.step(10)
    with pytest.raises(ValueError):
        setattr(page, name, value)
    assert page.t == 10  # nothing restarted
    messages = apply_query(page, {name: value})  # what a hand-edited URL gets: a message
    assert len(messages) == 1 and messages[0].startswith(f"URL: {name} = {value} was ignored")


def test_step_and_refresh_time_at_the_defaults(capsys):
    page = AdaptivePCAPage(Settings())  # d = 50 (m is not used by this page)
    _ = page.views  # build the panes (the frame does it on first display)
    start = time.perf_counter()
    for _ in range(50):
        page.step()
        page.refresh()
    per_update = (time.perf_counter() - start) / 50
    with capsys.disabled():
        print(f"\n[pca page] step + refresh at d = 50: {1e3 * per_update:.1f} ms "
              f"({1 / per_update:.0f} updates/s)")


def test_back_keeps_todays_hot_values():
    """Back restores the learners' states, then gives them today's eta and alpha (the
    snapshot's were older), through with_params."""
    app = small_app()
    app.transport.step(100)
    page = app.active
    page.param.update(eta_pca=5.0, alpha=1e-2)
    app.transport.back(40)
    assert page.t == 60
    assert learner(page, "adaptive").eta == 5.0 and learner(page, "adaptive").alpha == 1e-2
    assert learner(page, "static").eta == 5.0 and learner(page, "static").alpha == 0.0


def test_a_learner_whose_eigensolver_fails_leaves_the_race(monkeypatch):
    import explorer.pca._base
    from explorer.errors import Diverged

    page = small_page()
    page.step(10)

    def broken(M):
        raise Diverged("the symmetric eigensolver failed (a test); nothing was updated")

    monkeypatch.setattr(explorer.pca._base, "eigh", broken)  # the density learners', not FTL's
    page.step(5)
    assert page.t == 15 and learner(page, "ftl").t == 15 and learner(page, "adaptive").t == 10
    assert any(note.startswith("adaptive left the race: OnlineAdaptivePCA, round 11") for note in page.notes)
    h = page.history
    assert h.last()["loss_ftl"] > h["loss_ftl"][h["t"] == 10][0]


# -- what the page's words say (issue 30) -------------------------------------------------------

def test_the_pages_eta_is_named_and_the_sidebars_is_explained():
    page = small_page()
    labels = [widget.name for widget in page.views.select(pn.widgets.DiscreteSlider)]
    assert "η (PCA update) ⚡" in labels and not any("learning rate" in label for label in labels)
    assert any("the sidebar's η, a gradient step size, is greyed" in note for note in page.notes)


def test_the_theory_setting_says_it_uses_hindsight():
    page = small_page()
    [theory] = [button for button in page.views.select(pn.widgets.Button)
                if button.name.startswith("Theory setting")]
    assert "hindsight" in theory.name
    assert "in hindsight: computed from the whole stream" in theory.description.content


def test_the_overlap_share_is_shown_once_a_row_was_learned():
    page = small_page()
    assert "keeps" not in page._summary()  # t = 0: no subspace learned yet
    page.step(5)
    assert "adaptive keeps" in page._summary()
