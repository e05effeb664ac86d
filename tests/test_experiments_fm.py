"""The factorization-machine experiment without Panel (explorer.experiments.fm).

Its numbers are the learners' own (each round's prediction and gradient scale as the
learner computed it, in chunks or in one go), the exact sums it keeps are H+^T H+ and
H-^T H- of those gradients, a learner that diverges stops while the others go on, hot
values go through with_params, and a snapshot resumes bit for bit. The paper's protocol
(online_run, frozen_predictions, grid_walk, tune: notebooks/sftrl_paper.ipynb) plays the
same rounds as progressive and tunes every learner the same way.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from explorer.errors import Diverged
from explorer.dashboard.pages.fm import race_notes, race_summary, race_watch
from explorer.experiments.fm import (BINARY, DIVERGED, LEARNERS, MOVIELENS, ORACLE_MAX, SYNTHETIC,
                                     FactorizationRace, binary_stream, make_learners, movielens_stream,
                                     frozen_predictions, grid_walk, online_run, progressive_auc, rmse,
                                     running_mean, synthetic_stream, task_stream, tune, validation_error,
                                     RATING_NOISE, TASTE_RANK)
from explorer.fm import FTRLFM, OCGFM, SketchedFTRL, progressive, synthetic_ratings


def ratings(n=150, seed=3):
    return synthetic_ratings(n, n_users=10, n_items=15, seed=seed)


def race_on(data, **settings):
    return FactorizationRace(make_learners(data.X.shape[1], **{"m": 4, "eta": 0.1, **settings}),
                             data.X, data.y)


def test_the_race_records_each_learners_own_rounds():
    data = ratings()
    race = race_on(data)
    for k in (7, 40, 1000):  # uneven chunks; the last one stops at the end of the stream
        race.step(k)
    assert race.t == race.n == 150 and race.done and race.step(5) == 0
    for name, make in make_learners(data.X.shape[1], m=4, eta=0.1).items():
        run = progressive(make, data.X, data.y)  # the whole stream in one call
        np.testing.assert_array_equal(race.predictions[name], run["prediction"])
        np.testing.assert_array_equal(race.gradient_scales[name], run["gradient_scale"])
        assert race.rows_timed[name] == 150 and race.seconds[name] > 0
    q = race.gradient_scales["sftrl"]
    hat = np.hstack([data.X.toarray(), np.ones((150, 1))])
    for part, mask in (("+", q > 0), ("-", q < 0)):
        H = np.sqrt(np.abs(q[mask]))[:, None] * hat[mask]
        np.testing.assert_allclose(race.gram[part], H.T @ H, atol=1e-10)
    point = race.measure()
    assert point["metric_ftrl"] == pytest.approx(rmse(race.predictions["ftrl"], data.y))
    assert point["reference"] == pytest.approx(rmse(running_mean(data.y), data.y))
    assert point["share_plus"] == pytest.approx(np.mean(q > 0))
    sketch = race.learners["sftrl"].sketch
    assert (point["rank_plus"], point["rank_minus"]) == (sketch.positive.rank, sketch.negative.rank)
    assert race.last_shrink is not None and race.last_shrink.t <= 150


def test_binary_labels_are_measured_by_auc():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((120, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X @ rng.standard_normal(6) > 0, 1.0, -1.0)
    race = FactorizationRace(make_learners(6, m=3, eta=0.25, loss="logistic"), X, y)
    race.step(120)
    point = race.measure()
    assert point["metric_sftrl"] == pytest.approx(roc_auc_score(y, race.predictions["sftrl"]))
    assert point["reference"] == 0.5


def test_a_learner_that_diverges_stops_and_the_others_go_on():
    data = ratings()
    race = race_on(data, eta=10.0, ogd_eta=0.1)  # FTRL and S-FTRL overshoot; OGD does not
    while not race.done:
        race.step(10)
    assert set(race.stopped) == {"sftrl", "ftrl"}
    for name, error in race.stopped.items():
        assert isinstance(error, Diverged) and 1 <= error.t <= 150
        start = error.t - 1 - error.row  # the first round of the chunk it stopped in
        assert start % 10 == 0 and np.isnan(race.predictions[name][error.t - 1:]).all()
        assert np.isfinite(race.predictions[name][:start]).all()
        assert np.all(np.abs(race.predictions[name][:start]) <= DIVERGED)
    point = race.measure()
    assert np.isnan(point["metric_sftrl"]) and np.isnan(point["time_ftrl"])
    assert np.isfinite(point["metric_ogd"]) and np.isfinite(point["time_ogd"])


def test_a_round_that_overflows_stops_its_learner_as_before_the_chunk():
    data = ratings()
    race = race_on(data)
    race.step(30)
    race.tune(eta=1e3, ogd_eta=0.5)
    before = race.learners["ftrl"].state_dict()
    race.step(120)  # |z| passes 1e150 within this chunk: progressive undoes it
    error = race.stopped["ftrl"]
    assert 30 < error.t <= 150 and "diverged" in str(error)
    assert np.isnan(race.predictions["ftrl"][30:]).all()
    state = race.learners["ftrl"].state_dict()
    assert state["t"] == 30 and np.array_equal(state["theta"], before["theta"])
    assert "ogd" not in race.stopped


def test_tune_goes_through_with_params_and_keeps_the_shrink_hook():
    data = ratings()
    race = race_on(data)
    race.step(60)
    learners = dict(race.learners)
    race.tune(eta=0.1, ogd_eta=0.5)  # the values they have: nothing changes
    assert all(race.learners[name] is learners[name] for name in LEARNERS)
    theta = learners["ftrl"].theta()
    race.tune(eta=0.05, ogd_eta=1.0)
    assert all(race.learners[name] is not learners[name] for name in LEARNERS)
    assert learners["ftrl"].eta == 0.1  # the old learners are untouched
    np.testing.assert_allclose(race.learners["ftrl"].theta(), theta / 2, rtol=1e-15)
    assert race.learners["ogd"].eta == 1.0 and race.learners["ogd"].t == 60
    shrink = race.last_shrink
    race.step(90)
    assert race.last_shrink is not shrink and race.last_shrink.t > 60  # the hook followed
    with pytest.raises(ValueError, match="cannot change m mid-stream"):
        race.with_params("sftrl", m=5)
    with pytest.raises(ValueError, match="no learner 'adam'"):
        race.with_params("adam", eta=1.0)


def test_a_snapshot_resumes_bit_for_bit():
    data = ratings()
    straight, resumed = race_on(data), race_on(data)
    straight.step(50)
    state = straight.state_dict()
    straight.step(100)
    resumed.step(120)
    resumed.load_state_dict(state)
    assert resumed.t == 50
    resumed.step(100)
    for name in LEARNERS:
        np.testing.assert_array_equal(resumed.predictions[name], straight.predictions[name])
        assert resumed.learners[name].state_dict().keys() == straight.learners[name].state_dict().keys()
    np.testing.assert_array_equal(resumed.gram["-"], straight.gram["-"])
    last = resumed.last_shrink, straight.last_shrink
    assert (last[0].t, last[0].part) == (last[1].t, last[1].part)
    np.testing.assert_array_equal(last[0].sigma, last[1].sigma)
    timeless = [{key: value for key, value in race.measure().items() if not key.startswith("time_")}
                for race in (resumed, straight)]
    assert timeless[0] == timeless[1]


def test_the_race_refuses_learners_it_cannot_measure():
    learners = make_learners(5)
    with pytest.raises(ValueError, match="learners must be sftrl, ftrl, ogd"):
        FactorizationRace({"sftrl": learners["sftrl"]}, np.zeros((3, 5)), np.zeros(3))
    mixed = {**learners, "ogd": make_learners(5, loss="logistic")["ogd"]}
    with pytest.raises(ValueError, match="share one loss"):
        FactorizationRace(mixed, np.zeros((3, 5)), np.zeros(3))


def test_metrics():
    rng = np.random.default_rng(0)
    z, y = rng.normal(size=50), np.where(rng.random(50) < 0.4, 1.0, -1.0)
    z[:5] = z[5]  # ties
    assert progressive_auc(z, y) == pytest.approx(roc_auc_score(y, z))
    assert np.isnan(progressive_auc(z[:3], np.ones(3)))
    assert np.isnan(progressive_auc(np.r_[z[:9], np.nan], y[:10]))
    assert np.isnan(rmse(np.zeros(0), np.zeros(0))) and np.isnan(rmse(np.array([np.inf]), np.ones(1)))
    assert running_mean(np.array([3.0])).tolist() == [0.0]


def test_the_three_streams():
    X, y, notes = synthetic_stream(500, n_users=10, n_items=12, seed=3)
    assert X.shape == (120, 22) and y.shape == (120,) and "only 120" in notes[0]
    # the page's noise and taste rank (cleaner than synthetic_ratings' own defaults), said in the note
    assert np.array_equal(y, synthetic_ratings(120, n_users=10, n_items=12, seed=3, noise=RATING_NOISE,
                                               rank=TASTE_RANK).y)
    assert f"noise σ = {RATING_NOISE:g}, taste of rank {TASTE_RANK}" in notes[1]
    y9 = synthetic_stream(120, n_users=10, n_items=12, seed=3, noise=0.9)[1]
    assert np.array_equal(y9, synthetic_ratings(120, n_users=10, n_items=12, seed=3, noise=0.9, rank=TASTE_RANK).y)
    rows = np.random.default_rng(0).standard_normal((30, 4))
    A, labels, note = binary_stream(rows, seed=1)
    np.testing.assert_allclose(np.linalg.norm(A, axis=1), 1.0)
    assert set(labels.tolist()) <= {-1.0, 1.0} and "unit norm" in note
    data = ratings(100)
    X, y, note = movielens_stream(data, 40)  # any Ratings: the columns its first rows use
    assert X.shape[0] == 40 and X.shape[1] < data.X.shape[1] and "first n = 40" in note
    np.testing.assert_array_equal(np.diff(X.indptr), 2)


def test_task_stream_picks_the_stream_and_says_what_it_reads():
    settings = dict(seed=3, n_users=10, n_items=12)
    X, y, notes, reads = task_stream(SYNTHETIC, 50, **settings)
    assert X.shape == (50, 22) and reads == ("n", "seed") and "synthetic_ratings, seed 3" in notes[0]
    X, y, notes, reads = task_stream(MOVIELENS, 40, **settings, movielens=lambda: ratings(100))
    assert X.shape[0] == 40 and reads == ("n",) and notes[0].startswith("MovieLens-100K: its first")

    def missing():
        raise FileNotFoundError("no ml-100k here")
    X, y, notes, reads = task_stream(MOVIELENS, 50, **settings, movielens=missing)
    assert X.shape == (50, 22) and reads == ("n", "seed") and "no ml-100k here" in notes[0]
    rows = np.random.default_rng(0).standard_normal((30, 4))
    A, y, notes, reads = task_stream(BINARY, 30, **settings, shared=lambda: (rows, ["shared"]))
    assert reads == ("dataset", "n", "d", "seed") and notes[0] == "shared" and "unit norm" in notes[1]
    np.testing.assert_array_equal(A, binary_stream(rows, seed=3)[0])
    with pytest.raises(ValueError, match="needs shared"):
        task_stream(BINARY, 30, **settings)
    with pytest.raises(ValueError, match="task must be one of"):
        task_stream("ratings", 30, **settings)


def test_notes_name_a_sketch_with_room_for_everything_and_who_diverged():
    data = ratings()
    race = race_on(data)
    assert race_notes(race, eta=0.1, ogd_eta=0.5) == []
    roomy = race_on(data, m=data.X.shape[1] + 2)
    assert race_notes(roomy, eta=0.1, ogd_eta=0.5)[0].startswith(f"m = {data.X.shape[1] + 2} ≥ d + 2")
    wild = race_on(data, eta=10.0, ogd_eta=0.1)
    wild.step(150)
    notes = race_notes(wild, eta=10.0, ogd_eta=0.1)
    assert [note.split(" diverged")[0] for note in notes] == ["S-FTRL (sketch)", "FTRL (full Θ)"]
    assert f"round {wild.stopped['ftrl'].t} with η = 10" in notes[1]
    wide = FactorizationRace(make_learners(ORACLE_MAX, m=4), np.zeros((3, ORACLE_MAX)), np.zeros(3))
    assert "exact spectra (grey) are not computed" in race_notes(wide, eta=0.1, ogd_eta=0.5)[0]


def test_summary_is_the_latest_point_in_words():
    data = ratings()
    race = race_on(data)
    assert "t = 0 · RMSE S-FTRL – · FTRL – · OGD – · no gradient yet" in race_summary(race, race.measure())
    race.step(150)
    point = race.measure()
    line = race_summary(race, point)
    shrink = race.last_shrink
    assert line.startswith(f"**Latest:** t = 150 · RMSE S-FTRL {point['metric_sftrl']:.4g} · ")
    assert f"at t = {shrink.t}, δ = {shrink.delta:.3g}" in line and "(m = 4)" in line
    assert f"memory {2 * 8 * 26:,} floats for the sketch, {26 ** 2:,} for a full Θ" in line


# -- the paper's protocol (notebooks/sftrl_paper.ipynb) -----------------------------------------

@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.floats(0.01, 10), min_size=1, max_size=12), data=st.data())
def test_grid_walk_finds_the_minimum_of_a_unimodal_score_scoring_each_value_once(steps, data):
    grid = [0.5 * k for k in range(len(steps))]
    best = data.draw(st.integers(0, len(grid) - 1))
    start = data.draw(st.sampled_from(grid))
    # unimodal along the grid: rising by the drawn (positive) steps on each side of `best`
    score_of = {grid[best]: 0.0}
    for j in range(best - 1, -1, -1):
        score_of[grid[j]] = score_of[grid[j + 1]] + steps[j]
    for j in range(best + 1, len(grid)):
        score_of[grid[j]] = score_of[grid[j - 1]] + steps[j]
    calls = []
    tried = grid_walk(lambda v: calls.append(v) or score_of[v], grid, start)
    assert min(tried, key=tried.get) == grid[best]
    assert sorted(calls) == sorted(set(calls)) == list(tried)  # each value once, in grid order
    assert all(tried[v] == score_of[v] for v in tried)


def test_grid_walk_refuses_a_start_off_the_grid():
    with pytest.raises(ValueError, match="start must be on the grid"):
        grid_walk(abs, [1, 2, 3], 5)


def test_online_run_in_chunks_equals_one_call_and_continues_a_run():
    data = ratings(n=150)
    X, y = data.X, data.y
    whole = progressive(FTRLFM(X.shape[1], eta=0.1), X, y)
    learner = FTRLFM(X.shape[1], eta=0.1)
    first = online_run(learner, X[:100], y[:100], chunks=4)
    both = online_run(learner, X[100:], y[100:], chunks=2, before=first)
    np.testing.assert_array_equal(both["predictions"], whole["prediction"])
    np.testing.assert_array_equal(both["losses"], whole["loss"])
    assert both["curve"].shape == (6, 2) and np.all(np.diff(both["curve"][:, 0]) >= 0)
    assert both["curve"][-1, 1] == whole["loss"].mean()
    with pytest.raises(ValueError, match="chunks"):
        online_run(learner, X[:10], y[:10], chunks=0)


def test_frozen_predictions_do_not_learn_and_match_predict():
    data = ratings(n=120)
    learner = SketchedFTRL(data.X.shape[1], m=4, eta=0.1)
    progressive(learner, data.X[:100], data.y[:100])
    before = learner.state_dict()
    z = frozen_predictions(learner, data.X[100:])
    dense = frozen_predictions(learner, data.X[100:].toarray())
    np.testing.assert_allclose(z, dense, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(learner.state_dict()["t"], before["t"])
    assert z[0] == learner.predict(data.X[[100]])


def test_validation_error_is_rmse_for_ratings_and_one_minus_auc_for_labels():
    z, y = np.array([0.3, -0.2, 0.1, 0.4]), np.array([1.0, -1.0, -1.0, 1.0])
    assert validation_error(z, y) == pytest.approx(1 - roc_auc_score(y, z))
    assert validation_error(np.array([3.0, 4.0]), np.array([3.0, 5.0])) == pytest.approx(np.sqrt(0.5))
    assert validation_error(np.array([np.nan, 4.0]), np.array([3.0, 5.0])) == np.inf


def test_tune_picks_the_best_validated_value_and_scores_divergence_as_inf():
    data = ratings(n=150)
    d = data.X.shape[1]
    grid = [0.01, 0.1, 1.0, 1e6]
    result = tune(lambda eta: FTRLFM(d, eta=eta), grid, 1.0, data.X, data.y, n_fit=100, n_valid=25)
    for eta, error in result["tried"].items():  # each score is a fresh run's validation error
        fresh = FTRLFM(d, eta=eta)
        try:
            progressive(fresh, data.X[:100], data.y[:100])
            expected = validation_error(frozen_predictions(fresh, data.X[100:125]), data.y[100:125])
        except Diverged:
            expected = np.inf
        assert error == expected
    assert result["value"] == min(result["tried"], key=result["tried"].get)
    assert result["run"]["learner"].t == 100 and result["run"]["predictions"].shape == (100,)
    assert np.isinf(result["tried"].get(1e6, np.inf))


def test_tune_works_for_ocg_with_its_radius():
    data = ratings(n=120)
    d = data.X.shape[1]
    result = tune(lambda tau: OCGFM(d, tau=tau, seed=0), [1.0, 5.0, 20.0], 5.0, data.X, data.y,
                  n_fit=80, n_valid=20)
    assert result["value"] in result["tried"]
    assert result["run"]["learner"].nuclear_norm() <= result["value"] * (1 + 1e-9)


def test_race_watch_says_whether_s_ftrl_beats_the_reference_from_the_recorded_curves():
    from explorer.history import History
    data = ratings()
    race = FactorizationRace(make_learners(data.X.shape[1], m=4, eta=0.1), data.X, data.y)
    history = History()
    history.append(t=0.0, **race.measure())
    assert "whether S-FTRL's progressive RMSE gets better than the running mean rating's" in race_watch(race, history)
    race.step(3)
    curves = {"metric_sftrl": [1.0, 0.8, 0.7], "metric_ftrl": [1.1, 0.9, 0.75], "metric_ogd": [1.2, 1.0, 0.9],
              "reference": [0.9, 0.85, 0.8]}
    for i, t in enumerate((1, 2, 3)):
        history.append(t=float(t), **{**race.measure(), **{key: value[i] for key, value in curves.items()}})
    said = race_watch(race, history)
    assert "has been better than the running mean rating's since round 2 (0.7 against 0.8)" in said
    assert said.endswith("Now, best first: S-FTRL (sketch) 0.7, FTRL (full Θ) 0.75, OGD (full Θ) 0.9 (the paper's order).")
    history.append(t=3.0, **{**race.measure(), "metric_sftrl": 0.85, "metric_ftrl": 0.75, "metric_ogd": 0.9,
                             "reference": 0.8})
    said = race_watch(race, history)
    assert "is not better than the running mean rating's (0.85 against 0.8)" in said
    users, items = (np.unique(column[:3]).size for column in (data.users, data.items))
    assert f"(3 ratings, {3 / users:.1f} per user and {3 / items:.1f} per item on average so far)" in said
    assert said.endswith("Now, best first: FTRL (full Θ) 0.75, S-FTRL (sketch) 0.85, OGD (full Θ) 0.9.")
    race.stopped["sftrl"] = Diverged("wild", row=2, t=3)
    assert "S-FTRL stopped" in race_watch(race, history)
