"""The dashboard's logic without a browser: pages, transport, settings, URL and uploads.

The browser tests (test_dashboard_browser.py) check what is rendered; these check the
numbers behind it against the sketch API and explorer.metrics directly.
"""

from __future__ import annotations

import io
import re
import time

import numpy as np
import panel as pn
import param
import pytest
from panel.io.location import Location

from explorer import FrequentDirections, RobustFrequentDirections
from explorer.dashboard import Dashboard, create_app
from explorer.race import Curves
from explorer.history import History
from explorer.dashboard.live import LivePlot
from explorer.dashboard.page import Page
from explorer.dashboard.pages.sketching import SketchingPage
from explorer.dashboard.settings import DEFAULT_DATASET, UPLOAD, Settings, apply_query
from explorer.dashboard.transport import MAX_FRAMES_AHEAD, STALL_SECONDS, Transport
from explorer.dashboard.upload import MAX_BYTES, MAX_COLUMNS, UploadedData, parse_upload
from explorer.metrics import best_fd_bound, covariance_error, sketch_condition_numbers
from explorer.plots import line_chart
from explorer.streams import load_stream


def small_app(**settings) -> Dashboard:
    """A dashboard on a short stream (d = 12), fast enough to step through in a test."""
    app = Dashboard()
    app.settings.param.update(n=200, d=12, m=4, **settings)
    return app


# -- the sketching page against the sketch API ---------------------------------------------

def test_page_numbers_match_the_sketch_api_and_metrics():
    app = small_app(alpha0=0.5)
    page, transport = app.active, app.transport
    for _ in range(7):
        transport.step()
    transport.step(40)
    X = load_stream("low rank + noise", n=200, d=12, seed=0)[:page.t]
    assert page.t == 47 and transport.t == 47
    for fast, variant in ((False, "exact"), (True, "fast")):
        rfd = RobustFrequentDirections(12, 4, alpha0=0.5, fast=fast)
        fd = FrequentDirections(12, 4, fast=fast)
        rfd.extend(X)
        fd.extend(X)
        assert page.sketches.rfd[variant].alpha == pytest.approx(rfd.alpha)
        np.testing.assert_allclose(page.sketches.fd[variant].gram(), fd.gram(), atol=1e-9)
        point = page.history.last()
        assert point[f"alpha_{variant}"] == pytest.approx(rfd.alpha)
        assert point[f"error_fd_{variant}"] == pytest.approx(covariance_error(X, fd), rel=1e-9)
        assert point[f"error_rfd_{variant}"] == pytest.approx(covariance_error(X, rfd), rel=1e-9)
        kappa = sketch_condition_numbers(rfd)
        assert point[f"kappa_fd_{variant}"] == pytest.approx(kappa["fd"], rel=1e-9)
        assert point[f"kappa_rfd_{variant}"] == pytest.approx(kappa["rfd"], rel=1e-9)
    assert page.history["bound_fd"][-1] == pytest.approx(best_fd_bound(X, 4), rel=1e-9)
    assert page.history["bound_rfd"][-1] == pytest.approx(best_fd_bound(X, 4) / 2, rel=1e-9)


def test_the_papers_guarantees_hold_along_the_whole_stream():
    app = small_app(alpha0=0.1)
    app.transport.seek(200)
    h = app.active.history
    for variant in ("exact", "fast"):
        assert np.all(h[f"error_fd_{variant}"] <= h["bound_fd"] * (1 + 1e-9) + 1e-9)
        assert np.all(h[f"error_rfd_{variant}"] <= h["bound_rfd"] * (1 + 1e-9) + 1e-9)
        assert np.all(h[f"kappa_rfd_{variant}"] <= h[f"kappa_fd_{variant}"] * (1 + 1e-9))  # Theorem 4


D3_FORMAT = re.compile(r"^(?:(.)?([<>=^]))?([+\-( ])?([$#])?(0)?(\d+)?(,)?(\.\d+)?(~)?([efgrs%pbodxXc])?$")
"""d3-format's specifier grammar (github.com/d3/d3-format, ``formatSpecifier``)."""


def test_before_the_first_shrink_errors_are_zero_and_error_ticks_have_a_d3_format():
    """Issue 17: "error FD 3.36e-16 <= 0" and curves above the zero bounds before the
    first shrink; the error axis labelled 0.5e-15 "0.5f" (Plotly's SI prefix)."""
    app = small_app()
    page = app.active
    page.views
    for _ in range(3):
        app.transport.step()
    assert page.sketches.fd["exact"].delta_total == 0.0
    assert "error FD 0 ≤ 0, RFD 0 ≤ 0" in page.summary.object
    plot = page.plots["error"]
    for name in ("FD error (exact)", "RFD error (exact)", "FD error (fast)", "RFD error (fast)"):
        y, bound = np.asarray(plot.trace(name).y), np.asarray(plot.trace("FD bound").y)
        assert np.all(y <= bound), name
    tickformat = plot.figure.layout.yaxis.tickformat
    assert tickformat and D3_FORMAT.match(tickformat) and not tickformat.endswith("s")
    assert plot.pane.layout["yaxis"]["tickformat"] == tickformat  # what the browser gets


def test_last_shrink_comes_from_a_recorder_and_shows_in_the_spectrum():
    app = small_app()
    page = app.active
    views = page.views  # build the figures
    assert page.sketches.last_shrink("exact") == {}
    app.transport.step(10)
    shrink = page.sketches.last_shrink("exact")
    assert int(shrink["t"][0]) == 10 and shrink["delta"][0] >= 0
    after = page.plots["spectrum"].trace("RFD after").y
    sigma2 = np.sort(shrink["sigma"][0] ** 2)[::-1]
    expected = np.maximum(sigma2 - shrink["delta"][0], 0.0) + page.sketches.rfd["exact"].alpha
    np.testing.assert_allclose(after[:sigma2.size], expected)
    assert views is page.views  # built once, then only patched


def test_the_exact_spectrum_after_back_is_that_of_the_rows_seen():
    """The grey exact spectrum came from the last measurement, so after Back it still
    showed A^T A of the rows before Back when t had a recorded point (it is now read from
    the restored A^T A)."""
    app = small_app(alpha0=0.2)
    page = app.active
    page.views  # build the figures
    for _ in range(30):
        app.transport.step()  # a point at every t: Back to 27 records nothing new
    app.transport.back(3)
    assert page.t == 27
    seen = load_stream("low rank + noise", n=200, d=12, seed=0)[:27]
    exact = np.linalg.eigvalsh(seen.T @ seen)[::-1][:page.plots["spectrum"].trace("FD exact").y.size]
    np.testing.assert_allclose(page.plots["spectrum"].trace("FD exact").y, exact + 0.2, rtol=1e-9, atol=1e-9)


def test_a_hot_alpha0_goes_through_with_params_and_keeps_the_shrinks_recorded():
    app = small_app(alpha0=1.0)
    page = app.active
    app.transport.seek(30)
    before = page.sketches
    app.settings.alpha0 = 4.0
    assert page.sketches is not before and before.rfd["exact"].alpha0 == 1.0  # not mutated
    assert page.sketches.last_shrink("exact")["t"].tolist() == [30]
    app.transport.step(5)
    assert page.sketches.last_shrink("exact")["t"].tolist() == [35]


# -- transport ---------------------------------------------------------------------------

def test_back_returns_exactly_to_the_earlier_state():
    app = small_app(alpha0=0.2)
    transport, page = app.transport, app.active
    transport.seek(57)
    reference = {v: page.sketches.rfd[v].state_dict() for v in ("exact", "fast")}
    reference_point = page.history["error_rfd_fast"][-1]
    transport.seek(120)
    transport.back(63)  # 120 -> 57 through a snapshot and a replay
    assert page.t == transport.t == transport.shared_t == 57
    for v in ("exact", "fast"):
        state = page.sketches.rfd[v].state_dict()
        np.testing.assert_array_equal(state["buffer"], reference[v]["buffer"])
        assert state["delta_total"] == reference[v]["delta_total"]
    assert page.history["t"][-1] == 57
    assert page.history["error_rfd_fast"][-1] == pytest.approx(reference_point)
    transport.back()
    assert page.t == 56
    transport.back(1000)
    assert page.t == 0


def test_snapshots_are_thinned_not_lost():
    app = small_app()
    transport = app.transport
    transport.param.update(snapshot_every=1, max_snapshots=8)
    for _ in range(30):
        transport.step()
    assert len(transport._snapshots) <= 8 and transport._snapshots[0]["t"] == 0
    transport.back(29)
    assert app.active.t == 1


def test_tick_paces_itself_to_the_browser_and_stops_at_the_end():
    app = small_app()
    transport = app.transport
    transport.speed = 60
    assert transport.period == 67 and transport.rows_per_tick == 4
    transport.tick()
    assert app.active.t == 4
    transport.paced = True
    for _ in range(MAX_FRAMES_AHEAD):  # the browser has shown nothing yet: frames may be in flight
        transport.tick()
    assert app.active.t == 4 * (1 + MAX_FRAMES_AHEAD)
    transport.tick()
    assert app.active.t == 4 * (1 + MAX_FRAMES_AHEAD)  # too far ahead: wait
    transport.frames_shown = transport.frames_sent
    transport.tick()
    t = app.active.t
    assert t == 4 * (2 + MAX_FRAMES_AHEAD)
    transport._sent_at = time.monotonic() - STALL_SECONDS - 1  # the browser went quiet
    transport.tick()  # goes on, with the rows due since the last frame (capped at 1 s)
    assert app.active.t == t + 60
    transport.paced = False
    transport.playing = True  # as if Play had started the callback
    transport.seek(199)
    transport.tick()
    assert app.active.t == 200 and not transport.playing
    transport.play()
    assert not transport.playing and "End of the stream" in transport.status


def test_a_held_tick_is_fed_as_soon_as_the_browser_shows_a_frame():
    """Not a period later: waiting for the next tick left the browser idle (fewer frames/s)."""
    app = small_app()
    transport = app.transport
    transport.param.update(speed=15, paced=True)
    transport.playing = True  # as if Play had started the callback
    for _ in range(MAX_FRAMES_AHEAD + 2):
        transport.tick()
    held_at = app.active.t
    assert transport._held and transport.frames_sent == MAX_FRAMES_AHEAD + 1
    transport.frames_shown = 1  # a frame painted, but less than a period after the last tick
    assert app.active.t == held_at
    transport._sent_at -= transport.period / 1000
    transport.frames_shown = 2  # painted, a period on: the held tick goes now
    assert app.active.t > held_at and not transport._held
    transport.playing = False
    t = app.active.t
    transport.frames_shown = transport.frames_sent  # paused: a late report feeds nothing
    assert app.active.t == t


def test_step_and_back_pause_play_first():
    app = small_app()
    transport = app.transport
    transport.play()
    assert transport.playing and transport._callback.running
    transport.step()
    assert not transport.playing and not transport._callback.running and app.active.t == 1
    transport.play()
    transport.back()
    assert not transport.playing and app.active.t == 0
    transport.play()
    transport.stop()
    assert not transport._callback.running


# -- settings: hot and structural, explained not raised ------------------------------------

def test_alpha0_is_hot_and_m_is_structural():
    app = small_app(alpha0=1.0)
    page = app.active
    app.transport.seek(50)
    delta_total = page.sketches.rfd["exact"].delta_total
    app.settings.alpha0 = 10.0
    assert page.t == 50  # applied mid-stream
    assert page.sketches.rfd["exact"].alpha == pytest.approx(10.0 + delta_total / 2)
    assert page.history["alpha_exact"][-1] == pytest.approx(10.0 + delta_total / 2)
    app.transport.back(20)  # a snapshot taken with the old alpha0 follows today's
    assert page.sketches.rfd["exact"].alpha0 == 10.0
    app.settings.m = 6
    assert page.t == 0 and page.sketches.rfd["exact"].m == 6 and app.transport.t == 0


def test_impossible_combinations_are_explained():
    app = small_app()
    app.settings.m = 20  # m > d = 12
    assert any("m = 20 > d = 12" in note for note in app.notes)
    app.settings.alpha0 = 0.0  # hot: the notes are rebuilt, not appended to
    assert any("α₀ = 0" in note for note in app.notes)
    assert sum("m = 20 > d = 12" in note for note in app.notes) == 1
    app.settings.param.update(dataset="breast cancer", n=5000)
    assert app.active.n_rows == 569 and app.settings.fixed_d
    assert any("only 569 rows" in note for note in app.notes)
    assert any("d = 30 columns of its own" in note for note in app.notes)
    app.settings.dataset = UPLOAD  # nothing uploaded: refused with a message
    assert app.settings.dataset == "breast cancer" and "no uploaded file" in app.messages[0]


def test_apply_query_keeps_good_values_and_explains_bad_ones():
    settings = Settings()
    messages = apply_query(settings, {"m": 1, "seed": 5, "alpha0": -3.0, "dataset": "mnist"})
    assert settings.seed == 5 and settings.m == 10 and settings.alpha0 == 1.0
    assert [m.split(" was")[0] for m in messages] == ["URL: m = 1", "URL: alpha0 = -3.0",
                                                       "URL: dataset = mnist"]


# -- the URL -------------------------------------------------------------------------------

def test_url_round_trip_through_a_location():
    app = small_app()
    location = Location()
    app.sync_url(location)
    query = app.url_query()
    location.update_query(**query)  # what create_app does once the page has loaded
    assert {"dataset", "n", "d", "seed", "m", "alpha0", "eta", "page", "t", "speed",
            "spectrum_of", "log_spectrum"} <= set(query)
    location.update_query(m=7, alpha0=0.01, seed=3, t=30, spectrum_of="fast")  # a link edited by hand
    assert (app.settings.m, app.settings.alpha0, app.settings.seed) == (7, 0.01, 3)
    assert app.active.t == 30 and app.active.spectrum_of == "fast"
    app.settings.m = 5  # and back into the URL, t restarting at 0
    assert location.query_params["m"] == 5 and location.query_params["t"] == 0
    app.transport.step(3)
    assert location.query_params["t"] == 3
    other = Dashboard()
    other.sync_url(Location(search=location.search))  # a shared link reproduces the view
    assert other.settings.m == 5 and other.active.t == 3
    np.testing.assert_array_equal(other.active.sketches.rfd["exact"].rows, app.active.sketches.rfd["exact"].rows)


def test_a_bad_url_is_explained_not_raised():
    app = Dashboard()
    app.sync_url(Location(search="?m=1000&seed=4&page=nope&t=-4"))
    assert app.settings.seed == 4 and app.settings.m == 10 and app.page == "sketching"
    assert len(app.messages) == 3 and all(m.startswith("URL:") for m in app.messages)


# -- sessions ------------------------------------------------------------------------------

def test_sessions_share_nothing_and_close_frees_them():
    first, second = small_app(), small_app()
    first.settings.m = 6
    first.transport.step(5)
    assert second.settings.m == 4 and second.active.t == 0
    assert first.settings is not second.settings and first.active is not second.active
    first.close()
    assert first.pages == {} and not first.transport._callback.running
    assert create_app() is not create_app()


# -- uploads -------------------------------------------------------------------------------

def npz_bytes(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


@pytest.mark.parametrize("name, content, shape, labels", [
    ("a.csv", b"x1,x2,label\n1,2,1\n3,4,-1\n5,6,1\n", (3, 2), [1.0, -1.0, 1.0]),
    ("a.csv", b"1;2;3\n4;5;6\n", (2, 3), None),
    ("a.txt", b"1 2\n3 4\n\n5 6\n", (3, 2), None),
    ("a.tsv", b"a\tb\n1\t2\n3\t4\n", (2, 2), None),
    ("a.npz", npz_bytes(X=np.arange(12.0).reshape(4, 3), y=np.ones(4)), (4, 3), [1.0] * 4),
    ("a.npz", npz_bytes(data=np.eye(3)), (3, 3), None),
    ("a.npy", None, (5, 2), None),
    ("a.svm", b"1 1:0.5 3:2\n-1 2:1\n", (2, 3), [1.0, -1.0]),
])
def test_valid_uploads(name, content, shape, labels):
    if content is None:
        buffer = io.BytesIO()
        np.save(buffer, np.ones((5, 2)))
        content = buffer.getvalue()
    data = parse_upload(name, content)
    assert data.X.shape == shape and data.X.dtype == float
    assert (data.y is None and labels is None) or data.y.tolist() == labels


@pytest.mark.parametrize("name, content, message", [
    ("a.csv", b"1,2\n3\n", "line 2 has 1 values, expected 2"),
    ("a.csv", b"1,2\n3,x\n", "line 2, column 2 is not a number"),
    ("a.csv", b"1,2\n3,\n", "line 2, column 2 is empty"),
    ("a.csv", b"1,2\nnan,4\n", "row 2 holds NaN"),
    ("a.csv", b"\xff\xfe\x00garbage", "not a UTF-8 text file"),
    ("a.csv", b"", "the file is empty"),
    ("a.csv", b"x,y\n", "only a header row"),
    ("a.csv", b"1,2\n", "need a table of at least 2 rows"),
    ("a.csv", b"0,0\n0,0\n", "every value is zero"),
    ("a.csv", b"1," * (MAX_COLUMNS + 1) + b"1\n" + b"1," * (MAX_COLUMNS + 1) + b"1\n", "which is too many"),
    ("a.csv", b"1" * (MAX_BYTES + 1), "at most 5 MB"),
    ("a.npz", npz_bytes(X=np.array([{"a": 1}, None], dtype=object)), "object arrays are refused"),
    ("a.npz", npz_bytes(a=np.eye(2), b=np.eye(2)), "name the data array 'X'"),
    ("a.npz", b"PK\x03\x04 not really a zip", "not a NumPy .npz archive"),
    ("a.npy", b"\x93NUMPY garbage", "not a NumPy .npy array"),
    ("a.npz", npz_bytes(X=np.array(["a", "b"])), "must be numbers"),
    ("a.svm", b"1 a:b\n", "not a valid LIBSVM file"),
    ("a.exe", b"MZ", "unknown file type .exe"),
])
def test_malformed_uploads_raise_a_clear_value_error(name, content, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("(", r"\(")):
        parse_upload(name, content)


def test_upload_through_the_app_streams_it_or_says_why_not():
    app = small_app()
    assert not app.upload("bad.csv", b"1,2\n3,oops\n")
    assert app.messages == ["Upload refused: bad.csv: line 2, column 2 is not a number ('oops')"]
    app.transport.step()  # still alive
    rows = np.random.default_rng(1).standard_normal((30, 5))
    content = "\n".join(",".join(f"{v:.6f}" for v in row) for row in rows).encode()
    assert app.upload("mine.csv", content)
    assert app.settings.dataset == UPLOAD and app.messages == []
    assert app.active.n_rows == 30 and app.active.t == 0
    app.transport.seek(30)
    assert app.active.sketches.rfd["exact"].n_seen == 30


def test_history_thins_and_truncates():
    h = History(capacity=4)
    for t in range(10):
        h.append(t=float(t), v=2.0 * t)
    assert len(h) == 4 and h["t"][0] == 0 and h["t"][-1] == 9 and h.names == ["t", "v"]
    assert h.last() == {"t": 9.0, "v": 18.0}
    h.truncate(5)
    assert h["t"].tolist() == [t for t in h["t"].tolist() if t <= 5]
    with pytest.raises(ValueError, match="history columns"):
        h.append(t=1.0)


def test_page_protocol_is_small():
    """What a family implements: the hooks Page calls (SketchingPage is the example)."""
    hooks = {"_build", "_advance", "_tune", "_columns", "_load", "_make_views", "_update_views"}
    assert hooks <= set(vars(SketchingPage))
    # what a family's race gives every page
    assert {"_advance", "_state", "_load", "apply_hot", "record"} <= set(vars(Page))
    assert SketchingPage.key == "sketching" and set(SketchingPage.hot) <= set(SketchingPage.uses)
    assert Transport.param.speed.default in Transport.param.speed.objects


def test_page_options_do_not_clash_in_the_url():
    """Every page's own options share the query string with the settings and the frame."""
    from explorer.dashboard.app import PAGES
    from explorer.dashboard.page import Page
    from explorer.dashboard.settings import URL_NAMES

    taken = {*URL_NAMES, "page", "t", "speed"}
    for cls in PAGES:
        own = {name for name in cls.param if name not in Page.param and name != "name"}
        assert not own & taken, (cls.__name__, own & taken)
        taken |= own


# -- what the frame gives every page: restart options, own uses, live layouts ----------------

def test_a_page_restart_option_restarts_through_the_transport_or_on_the_next_visit():
    from explorer.dashboard.pages.adagrad import AdaGradPage

    assert AdaGradPage.restart == ("method", "loss")
    app = small_app()
    app.page = "adagrad"
    adagrad, transport = app.active, app.transport
    transport.step(30)
    app.messages = ["an earlier message"]
    adagrad.method = "pds"  # the page shown: the transport restarts (t, the URL's t, Back)
    assert adagrad.t == transport.t == transport.shared_t == 0
    assert adagrad.learners["ffd"].method == "pds" and len(adagrad.history) == 1
    assert [s["t"] for s in transport._snapshots] == [0] and transport._snapshots[0]["run"] == adagrad.run
    assert app.messages == ["an earlier message"] and app._stale == set()  # nothing else restarts
    transport.step(20)
    app.page = "sketching"
    transport.step(10)
    adagrad.loss = "squared_hinge"  # a page not shown (a URL edit): restarted on its next visit
    assert transport.page is app.active and app.active.t == transport.t == 10
    assert app._stale == {"adagrad"} and adagrad.t == 20
    app.page = "adagrad"
    assert adagrad.t == transport.t == 0 and adagrad.learners["ogd"].loss == "squared_hinge"
    transport.step(40)
    transport.back(15)  # Back works on the new run's snapshots
    assert adagrad.t == 25
    alone = AdaGradPage(Settings(n=100, d=8, m=3))  # a page on its own restarts itself
    alone.step(10)
    alone.method = "pds"
    assert alone.t == 0 and alone.learners["fd"].method == "pds"


def test_a_reset_without_the_transport_drops_its_snapshots():
    app = small_app()
    page, transport = app.active, app.transport
    transport.step(50)
    page.apply_hot("m")  # not hot on this page: the page restarts itself (Page.apply_hot)
    transport.step(30)
    transport.back(10)  # no snapshot of the earlier run is restored into this one
    assert page.t == 20 and all(s["run"] == page.run for s in transport._snapshots)
    with pytest.raises(ValueError, match="stream restarted"):
        page.restore({"t": 10, "run": page.run - 1, "state": {}})


def test_the_sidebar_follows_a_page_whose_task_decides_the_settings_it_uses():
    from explorer.dashboard.layout import _sidebar
    from explorer.dashboard.pages.fm import BINARY

    app = small_app()
    sidebar = _sidebar(app)
    dataset = next(w for w in sidebar if getattr(w, "label", "").startswith("data set"))
    app.page = "fm"  # the ratings task streams its own data: the data set does not apply
    fm = app.active
    assert "dataset" not in fm.uses and dataset.disabled and dataset.label == "data set"
    fm.fm_task = BINARY  # Page.set_uses: uses_changed, and the sidebar re-labels
    assert "dataset" in fm.uses and not dataset.disabled and dataset.label == "data set ↻"
    assert fm.t == app.transport.t == 0


def test_a_nested_layout_change_reaches_the_browser():
    """A change inside ``yaxis`` (the sketching page's log-scale toggle) is sent, once."""
    page = small_app().active
    page.views  # noqa: B018
    plot = page.plots["spectrum"]
    sent = []
    plot.pane.param.watch(lambda event: sent.append((event.new["yaxis"]["type"],
                                                     event.new["yaxis2"]["type"])), "layout")
    page.log_spectrum = False
    assert sent == [("linear", "linear")] and plot.figure.layout.yaxis.type == "linear"
    page.refresh()  # the same layout again: not re-sent
    assert len(sent) == 1
    page.log_spectrum = True
    assert sent[-1] == ("log", "log")
    plot.update({}, layout={"yaxis": {"title": {"text": "σ²"}}})  # deeper still
    assert plot.pane.layout["yaxis"]["title"]["text"] == "σ²" and len(sent) == 3


def test_live_plot_sends_every_update_and_holds_the_whole_current_state():
    """Each update is one ``values`` event, and ``values`` holds every trace set so far, so a
    view rendered late (or again) draws the current state. Editing the held dicts in
    place sent nothing while playing: param saw an equal value."""
    plot = LivePlot(line_chart([0.0], {"a": [np.nan], "b": [np.nan]}))
    events = []
    plot.pane.param.watch(lambda event: events.append(event.new), "values")
    plot.update({"a": {"x": [0, 1], "y": [1.0, 2.0]}})
    plot.update({"b": {"x": [0, 1], "y": [3.0, 4.0]}})
    plot.update({"a": {"x": [0, 1, 2], "y": [1.0, 2.0, 5.0]}})
    assert len(events) == 3
    a, b = (plot._index[name] for name in ("a", "b"))
    assert list(plot.pane.trace_values(a)["y"]) == [1.0, 2.0, 5.0]
    assert list(plot.pane.trace_values(b)["y"]) == [3.0, 4.0]
    assert list(plot.trace("a").y) == [1.0, 2.0, 5.0]  # the Python figure follows too
    with pytest.raises(ValueError, match="own name"):
        LivePlot(line_chart([0.0], {"a": [np.nan]}).add_scatter(name="a", y=[1.0]))


def test_live_plot_sends_nothing_when_nothing_changed():
    """A figure whose data did not change is not redrawn (issue 17, defect 9: the sketching
    page's spectrum, unchanged between shrinks, cost a Plotly.react on every tick)."""
    plot = LivePlot(line_chart([0.0], {"a": [np.nan], "b": [np.nan]}))
    events = []
    plot.pane.param.watch(lambda *batch: events.append(batch), ["values", "arrays"])
    plot.update({"a": {"x": np.arange(3.0), "y": np.array([1.0, np.nan, 2.0])}})
    plot.update({"a": {"x": np.arange(3.0), "y": np.array([1.0, np.nan, 2.0])}})  # same: not sent
    assert len(events) == 1
    plot.update({"a": {"x": np.arange(3.0), "y": np.array([1.0, np.nan, 2.5])}, "b": {"y": [1.0]}})
    plot.update({"a": {"x": np.arange(3), "y": [1.0, np.nan, 2.5]}})  # ints, a list: other values
    plot.update({"b": {"y": [1.0]}})  # same list: not sent
    assert len(events) == 3 and list(plot.trace("a").x) == [0, 1, 2]
    assert plot.trace("b").y == (1.0,)


def test_live_plot_sends_a_view_whose_buffer_changed_in_place():
    """A history column is a view of a buffer whose last point is rewritten in place (the
    current row's point is replaced by the next step): the values kept for comparison were
    that view, changed along with it, so the new point was never sent and the figure stayed
    at t = 1 while stepping on."""
    plot = LivePlot(line_chart([0.0], {"a": [np.nan]}))
    buffer = np.array([0.0, 1.0, 0.0])
    plot.update({"a": {"x": buffer[:2], "y": np.zeros(2)}})
    buffer[1] = 2.0  # the current point replaced
    plot.update({"a": {"x": buffer[:2], "y": np.zeros(2)}})
    index = plot._index["a"]
    assert list(plot.pane.trace_values(index)["x"]) == [0.0, 2.0] and list(plot.trace("a").x) == [0.0, 2.0]


def test_live_plot_packs_its_arrays_in_one_buffer_each_distinct_array_once():
    """Bokeh sends every array as websocket frames of its own: the sketching page's 44 arrays
    an update (14 of them the same t) were about 70 frames (issue 17, defect 9). Packed,
    each distinct array goes once; a property that stops being an array leaves the buffer."""
    plot = LivePlot(line_chart([0.0], {"a": [np.nan], "b": [np.nan], "c": [np.nan]}))
    arrays = []
    plot.pane.param.watch(lambda event: arrays.append(event.new), "arrays")
    t = np.arange(4)
    plot.update({"a": {"x": t, "y": np.array([1.0, np.nan, -np.inf, 2.0])},
                 "b": {"x": t.copy(), "y": np.array([1.0, np.nan, -np.inf, 2.0])},
                 "c": {"x": t, "y": np.array([0.5, 1.5, 2.5, 3.5])}})
    a, b, c = (plot._index[name] for name in ("a", "b", "c"))
    assert len(arrays) == 1 and arrays[0]["numbers"].size == 12  # t, a's y (= b's), c's y
    for index, name in ((a, "a"), (b, "b"), (c, "c")):
        sent = plot.pane.trace_values(index)
        np.testing.assert_array_equal(sent["x"], t)
        np.testing.assert_array_equal(sent["y"], plot.trace(name).y)
    plot.update({"c": {"y": [7.0, 8.0, 9.0, 10.0]}})  # a list now: plain, and gone from the buffer
    assert len(arrays) == 2 and plot.pane.trace_values(c)["y"] == [7.0, 8.0, 9.0, 10.0]
    assert "y" not in plot.pane.arrays["slices"][str(c)] and arrays[1]["numbers"].size == 8
    plot.update({"c": {"name": "renamed"}})  # no array changed: the buffer is not sent again
    assert len(arrays) == 2 and plot.pane.trace_values(c)["name"] == "renamed"

# -- failures are messages, never a dead transport (issue 13) -------------------------------

class RowSum(Curves):
    """PickyPage's race: the sum of the rows it was fed (its history: one column, ``sum``)."""

    def __init__(self, d: int):
        self.total, self.t, self.history = np.zeros(d), 0, History()

    def measure(self):
        return {"sum": float(self.total.sum())}


class PickyPage(Page):
    """A page that fails on purpose: it cannot build on 3 columns (or when ``strict``), a
    row whose first value is 13 fails its step after the rows before it in the call were
    taken, and alpha0 over 100 fails its hot change after half applying it."""

    key, title = "picky", "Picky page"
    uses = ("dataset", "n", "d", "seed", "m", "alpha0")
    hot = ("alpha0",)
    restart = ("strict",)
    strict = param.Boolean(default=False)

    def _build(self, X):
        self.race = RowSum(X.shape[1])
        if self.strict or X.shape[1] == 3:
            raise ValueError("three columns are refused")
        self.scale = 1.0

    def _advance(self, rows):
        for row in rows:
            if row[0] == 13:
                raise ValueError("13 is unlucky")
            self.race.total = self.race.total + row
            self.race.t += 1

    @property
    def total(self):
        return self.race.total

    def apply_hot(self, name):
        self.scale = self.settings.alpha0
        if self.scale > 100:
            raise ValueError("alpha0 over 100 is refused")

    def _state(self):
        return {"total": self.total.copy(), "t": self.race.t}

    def _load(self, state):
        self.race.total, self.race.t = state["total"].copy(), state["t"]

    def _make_views(self):
        return pn.Column()

    def _update_views(self):
        pass


def picky_app(X) -> Dashboard:
    app = Dashboard(pages=(PickyPage, SketchingPage))
    app.settings.param.update(n=200, d=12, m=4)
    app.settings.upload = UploadedData("rows.csv", np.asarray(X, dtype=float))
    return app


def test_a_failed_step_stops_at_the_last_row_learned_and_says_why():
    """A learner refusing a row raised out of Step and Play (silently, in the browser), and
    left the page with some rows taken and t not moved; now play pauses at the row before
    it, the page is exactly as if stepped there, and the message names the row."""
    X = np.ones((50, 4))
    X[23, 0] = 13
    app = picky_app(X)
    app.settings.dataset = UPLOAD
    page, transport = app.active, app.transport
    transport.speed = 300  # 20 rows a tick: the failing row is inside a tick's rows
    transport.play()
    for _ in range(3):
        transport.tick()
    assert not transport.playing and page.t == transport.t == transport.shared_t == 23
    assert np.array_equal(page.total, X[:23].sum(axis=0))  # the rows of the failed call undone
    assert app.messages == ["Picky page: row 24 of the stream could not be learned, so play "
                            "stopped at t = 23: 13 is unlucky"]
    assert page.history["t"][-1] == 23 and page.history["sum"][-1] == X[:23].sum()
    transport.step(5)  # the same again, announced again; Back still works
    assert page.t == 23 and len(app.messages) == 1 and transport.failure == app.messages[0]
    transport.back(10)
    assert page.t == 13 and np.array_equal(page.total, X[:13].sum(axis=0))
    transport.seek(40)
    assert page.t == 23


def test_a_row_a_sketch_refuses_stops_the_sketching_page_with_the_sketchs_message():
    """The 1e200 row that parse_upload now refuses, had it reached the sketching page
    (e.g. from a notebook): play stops before it with FD's message, the sketches as
    if stepped there."""
    X = np.random.default_rng(0).standard_normal((60, 5))
    X[30] = 1e200
    app = Dashboard()
    app.settings.param.update(n=200, m=4)
    app.settings.upload = UploadedData("big.csv", X)
    app.settings.dataset = UPLOAD
    page = app.active
    app.transport.step(45)
    assert page.t == 30 and "row 31 of the stream could not be learned" in app.messages[0]
    assert "too large" in app.messages[0] and "rescale" in app.messages[0]
    straight = SketchingPage(Settings(n=200, m=4, upload=UploadedData("big.csv", X), dataset=UPLOAD))
    straight.step(30)
    assert np.array_equal(page.sketches.fd["exact"].sketch, straight.sketches.fd["exact"].sketch)
    assert np.array_equal(page.sketches.gram, straight.sketches.gram)


def test_a_restart_the_page_cannot_run_on_is_undone_and_explained():
    """An upload (or any structural change) the active page cannot build on raised out of
    the upload callback and left the page half built; now the page keeps its stream
    (Page.reset is all or nothing) and the settings go back."""
    app = picky_app(np.ones((30, 3)))
    page, transport = app.active, app.transport
    transport.step(7)
    total, history, run = page.total, page.history, page.run
    assert not app.upload("three.csv", b"1,2,3\n4,5,6\n")
    assert app.settings.dataset == DEFAULT_DATASET and app.settings.upload.name == "rows.csv"
    assert page.t == transport.t == 7 and page.total is total and page.history is history
    assert page.run == run and page.n_rows == 200
    assert app.messages == ["Picky page: cannot run on these settings: three columns are refused",
                            "Back to dataset = low rank + noise."]
    transport.step()
    assert page.t == 8
    app.messages = []
    page.strict = True  # a restart option it cannot run on: set back, nothing restarts
    assert not page.strict and page.t == 8 and page.total is not total
    assert app.messages == ["Picky page: cannot run on these settings: three columns are refused"]
    app.settings.alpha0 = 1000.0  # a hot change that fails half way: set back, restarted
    assert app.settings.alpha0 == 1.0 and page.scale == 1.0 and page.t == 0
    assert app.messages == ["Picky page: the change could not be applied: alpha0 over 100 is refused",
                            "Back to alpha0 = 1.0."]


def test_a_page_that_cannot_open_on_the_data_opens_on_the_default_data_set():
    app = Dashboard(pages=(SketchingPage, PickyPage))
    app.settings.param.update(n=200, m=4)
    assert app.upload("three.csv", b"1,2,3\n4,5,6\n7,8,10\n")  # the sketching page takes it
    app.transport.step(2)
    app.page = "picky"  # Picky cannot: it opens on the default data set, and says so
    assert app.active.key == "picky" and app.transport.page is app.active
    assert app.settings.dataset == DEFAULT_DATASET and app.active.n_rows == 200
    assert app.messages == ["Picky page cannot run on 'your upload': three columns are refused. "
                            f"It shows '{DEFAULT_DATASET}' instead."]
    app.page = "sketching"  # restarted on the default data set too
    assert app.active.n_rows == 200 and app.active.t == 0


def test_page_reset_is_all_or_nothing():
    page = PickyPage(Settings(n=100, upload=UploadedData("four.csv", np.ones((30, 4))), dataset=UPLOAD))
    page.step(9)
    before = dict(vars(page))
    values = (page.t, page.n_rows, list(page.notes), page.run)
    page.settings.upload = UploadedData("three.csv", np.ones((30, 3)))
    with pytest.raises(ValueError, match="three columns"):
        page.reset()
    assert vars(page).keys() == before.keys()
    assert all(vars(page)[name] is value for name, value in before.items())
    assert (page.t, page.n_rows, page.notes, page.run) == values


def run_in_a_fresh_loop(coroutine):
    """``asyncio.run`` on a thread of its own: in the full suite an earlier test (Playwright's
    sync API) can leave an event loop running on this thread, where asyncio.run refuses."""
    import asyncio
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_an_upload_is_parsed_off_the_event_loop():
    """The upload callback parsed on the server's only thread: nothing else was answered
    meanwhile (5-9 s for a 5 MB file in the issue). Now a worker thread parses, and the
    event loop runs other callbacks while it does."""
    import asyncio

    import explorer.dashboard.app as app_module

    def slow_parse(filename, content):
        time.sleep(0.6)
        return parse_upload(filename, content)

    async def upload_while_ticking(app):
        ticks = []

        async def heartbeat():
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.02)
        beating = asyncio.ensure_future(heartbeat())
        await asyncio.sleep(0)
        accepted = await app.upload_in_background("mine.csv", b"1,2\n3,4\n5,7\n")
        beating.cancel()
        return accepted, ticks

    app = small_app()
    original = app_module.parse_upload
    app_module.parse_upload = slow_parse
    try:
        accepted, ticks = run_in_a_fresh_loop(upload_while_ticking(app))
    finally:
        app_module.parse_upload = original
    assert accepted and app.settings.dataset == UPLOAD and app.active.n_rows == 3
    assert len(ticks) >= 10 and np.diff(ticks).max() < 0.3


def test_overlapping_uploads_the_last_one_wins():
    import asyncio

    async def two(app):
        return await asyncio.gather(app.upload_in_background("first.csv", b"1,2\n3,4\n"),
                                    app.upload_in_background("second.csv", b"1,2,3\n4,5,6\n"))
    app = small_app()
    assert run_in_a_fresh_loop(two(app)) == [None, True]  # the first: neither used nor refused
    assert app.settings.upload.name == "second.csv"


def test_file_names_and_headers_reach_the_page_only_as_plain_text():
    """The upload's name goes into the notes ("Streaming the first n = ..."): the alert
    shows it escaped, so it is text, never HTML or Markdown."""
    from markdown_it import MarkdownIt

    from explorer.dashboard.layout import _alerts, plain_text

    app = small_app()
    app.settings.n = 50
    alerts = _alerts(app)
    name = '<img src=x onerror="alert(1)">*bold*.csv'
    rows = "\n".join(f"{i},{i % 7}" for i in range(60))
    assert app.upload(name, f"<b>x</b>,[y](javascript:alert(1))\n{rows}".encode())
    notes = alerts.objects[1].object
    assert plain_text(f"Streaming the first n = 50 of the 60 rows of {name}.") in notes
    html = MarkdownIt("commonmark").render(notes)  # what Panel's Markdown pane renders
    assert "<img" not in html and "<em>" not in html and "&lt;img src=x" in html
    assert app.settings.upload.X.shape == (60, 2)  # the header row, whatever it says, is only a header


def test_the_url_stays_json_after_a_change():
    """Panel wrote the whole query back with str() after a change: learners=["RFD-SON"]
    became ['RFD-SON'] and fast=true True (issue 17, defect 7)."""
    from urllib.parse import parse_qsl

    app = Dashboard()
    app.page = "newton"
    location = Location()
    app.sync_url(location)
    location.update_query(**app.url_query())
    app.settings.m = 7  # a change of another value
    app.active.learners = ["RFD-SON", "FD-SON"]
    raw = dict(parse_qsl(location.search[1:]))
    assert raw["learners"] == '["RFD-SON", "FD-SON"]' and raw["fast"] == "true" and raw["m"] == "7"
    other = Dashboard()
    other.sync_url(Location(search=location.search))
    assert other.active.learners == ["RFD-SON", "FD-SON"] and other.settings.m == 7


def test_play_is_disabled_at_the_end_of_the_stream():
    from explorer.dashboard.layout import layout

    app = Dashboard()
    app.settings.n = 50
    template = layout(app)
    play, pause = (widget for widget in template.main[0].select(pn.widgets.Button)
                   if widget.label in ("Play", "Pause"))
    assert not play.disabled and pause.disabled
    app.transport.shared_t = 50
    assert play.disabled and pause.disabled
    app.transport.back()
    assert not play.disabled


def test_the_help_for_eta_and_d_is_shown_in_the_sidebar():
    """It was set as a widget ``description`` (a hover icon the sliders never drew)."""
    from explorer.dashboard.layout import HELP, layout

    shown = [pane.object for pane in layout(Dashboard()).sidebar if isinstance(pane, pn.pane.Markdown)]
    assert HELP["eta"] in shown and HELP["d"] in shown


def test_a_refused_file_clears_the_upload_box():
    from explorer.dashboard.layout import FileUpload

    async def refuse(name, content):
        return False

    async def accept(name, content):
        return True
    for on_file, cleared in ((refuse, 1), (accept, 0)):
        box = FileUpload(on_file=on_file, on_refused=lambda name, size: None)
        run_in_a_fresh_loop(box._receive("a.csv", b"1,2\n"))
        assert box.cleared == cleared


# -- uploaded labels (issue 17, defect 7: parsed, then never used) ---------------------------

def labelled_upload(app, y) -> None:
    X = np.random.default_rng(1).standard_normal((len(y), 6))
    assert app.upload("mine.csv", "\n".join(
        ["x1,x2,x3,x4,x5,x6,y"] + [",".join(map(repr, [*row, label])) for row, label in zip(X.tolist(), y)]
    ).encode())


@pytest.mark.parametrize("key", ["newton", "adagrad"])
def test_the_learner_pages_learn_an_uploads_labels(key):
    from explorer.streams import binary_labels

    y = np.random.default_rng(2).integers(0, 2, 80).astype(float) * 3 + 2  # classes 2 and 5
    app = Dashboard()
    app.page = key
    labelled_upload(app, y.tolist())
    page = app.active
    race = page.race if key == "newton" else page.experiment
    expected = np.where(y == 5, 1.0, -1.0)
    if key == "adagrad" and page.loss == "absolute":
        expected = y  # regression targets, as given
    np.testing.assert_array_equal(race.y, expected)
    assert binary_labels(y)[1] == "2 is -1, 5 is +1"
    assert any("uploaded" in note for note in page.notes)
    app.transport.step(10)
    assert page.t == 10


def test_an_upload_without_labels_keeps_the_planted_ones():
    app = Dashboard()
    app.page = "newton"
    X = np.random.default_rng(1).standard_normal((60, 5))
    assert app.upload("plain.npy", _npy_bytes(X))
    assert app.settings.labels() is None
    assert set(np.unique(app.active.race.y)) == {-1.0, 1.0}
    assert not any("uploaded" in note for note in app.active.notes)


def _npy_bytes(X) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, X)
    return buffer.getvalue()


def test_play_never_marks_the_server_busy():
    """Panel counted every periodic callback in its one server-wide busy state, whose every
    change updates the busy indicator of every session: ten sessions playing sent thousands
    of updates a second and stalled each other for seconds (issue 17, defect 8)."""
    import asyncio

    changes = []
    watcher = pn.state.param.watch(lambda event: changes.append(event.new), "busy")

    async def play(app):
        app.transport.play()
        await asyncio.sleep(0.6)
        app.transport.pause()
        return app.active.t
    try:
        app = small_app()
        assert run_in_a_fresh_loop(play(app)) > 0  # it played
    finally:
        pn.state.param.unwatch(watcher)
    assert changes == []


def test_while_playing_the_axes_run_ahead_and_a_pause_fits_them():
    """Playing, an axis from zero ends on a rung of the ladder, so it rarely changes (and
    the browser only moves the curves); at rest it fits the data: a shared link at t = 120
    drew its curves on [0, 150], a fifth of every t axis empty (issue 17, defect 9). A t
    axis never runs past the stream's last row (n = 200)."""
    app = small_app()
    page = app.active
    page.views  # noqa: B018  (build the figures)
    error = page.plots["error"]
    app.transport.seek(120)
    assert error.pane.ranges["xaxis"] == [0.0, 140.0]
    app.transport.play()
    app.transport.tick()
    assert error.growing and error.pane.ranges["xaxis"] == [0.0, 150.0]
    app.transport.pause()
    assert not error.growing and error.pane.ranges["xaxis"][1] == 140.0
    app.transport.step()  # a step is at rest too
    assert error.pane.ranges["xaxis"][1] == 140.0
    app.transport.seek(200)
    assert error.pane.ranges["xaxis"] == [0.0, 200.0]  # not 240


def test_a_frame_the_browser_reports_never_marks_the_server_busy():
    """The frame clock's report of a painted frame went through Panel's server-wide busy
    state too: every frame of every session playing updated every session's busy indicator
    twice (issue 17, defects 8 and 9)."""
    from explorer.dashboard.layout import FrameClock

    clock, changes = FrameClock(), []
    watcher = pn.state.param.watch(lambda event: changes.append(event.new), "busy")
    try:
        clock._process_events({"shown": 3})  # what Panel calls with a browser's change
    finally:
        pn.state.param.unwatch(watcher)
    assert clock.shown == 3 and changes == []


def test_the_sidebar_eta_says_what_it_is_on_each_page():
    """η is SON's curvature weight on the Newton page, a step size on AdaGrad's and FTRL's on
    the FM page, and the pages without one say it is unused: no page calls it a bare
    "learning rate" that means three things."""
    from explorer.dashboard.app import PAGES
    from explorer.dashboard.layout import label_of
    labels = {page.key: label_of("eta", page) for page in PAGES}
    assert labels == {"sketching": "η: not used on this page", "newton": "η: SON curvature weight",
                      "adagrad": "η: step size", "pca": "η: not used on this page",
                      "fm": "η: FTRL step size"}


@pytest.mark.parametrize("key", ["sketching", "newton", "adagrad", "pca", "fm"])
def test_the_curves_a_page_draws_are_its_races_history(key):
    """One owner of the curves: page.history is the race's History (the race records every
    point, the page adds its own columns), through a step, a hot change and a Back."""
    from explorer.dashboard.app import PAGES

    page = next(cls for cls in PAGES if cls.key == key)(Settings(n=120, d=8, m=3, alpha0=0.5))
    page.step(50)
    assert page.history is page.race.history and page.history.last()["t"] == 50
    state = page.snapshot()
    page.step(20)
    page.truncate(50)
    page.restore(state)
    page.record_current()
    assert page.history is page.race.history and page.history["t"][-1] == 50
    if page.hot:
        before = len(page.history)
        setattr(page.settings, page.hot[0], 0.25 if page.hot[0] != "eta" else 0.05)
        page.apply_hot(page.hot[0])
        assert page.history is page.race.history and len(page.history) == before + page.hot_point


def test_pages_of_a_race_declare_data_and_inherit_the_protocol():
    """Playing, snapshotting, restoring and retuning a race are written once, in Page: a page
    of online learners declares which settings are hot and whether a change is drawn."""
    from explorer.dashboard.app import PAGES

    for cls in PAGES:
        if cls.key != "sketching":
            assert not {"_advance", "_state", "_load", "_measure", "apply_hot_options"} & set(vars(cls)), cls
    assert {cls.key: (cls.hot_point, cls.hot_options_point) for cls in PAGES if cls.key in ("newton", "fm")} \
        == {"newton": (True, False), "fm": (False, False)}
