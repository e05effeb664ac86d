"""What the dashboard shows agrees with what the algorithms did (no browser).

Notes, sidebar values and axis ranges are checked against the sketch API and the page's
own history, so a note cannot claim "nothing is shrunk" while FD shrinks.
"""

from __future__ import annotations

import numpy as np
import param
import pytest

from explorer import FrequentDirections
from explorer.dashboard import Dashboard
from explorer.streams import load_stream

NO_SHRINK = "nothing is ever shrunk away"


def small_app(**settings) -> Dashboard:
    """A dashboard on a short stream (d = 12), fast enough to run to the end in a test."""
    app = Dashboard()
    app.settings.param.update({"n": 200, "d": 12, "m": 4, **settings})
    return app


@pytest.mark.timeout(60)
@pytest.mark.parametrize("m", [11, 12, 13])
def test_the_no_shrink_note_shows_exactly_when_fd_never_shrinks(m):
    """FD's shrink takes away sigma_m^2, which is 0 only while the rank is below m: at
    m = d it shrinks (delta > 0), at m = d + 1 it never does."""
    app = small_app(m=m)
    X = load_stream("low rank + noise", n=200, d=12, seed=0)
    for fast in (False, True):
        fd = FrequentDirections(12, m, fast=fast)
        fd.extend(X)
        assert (fd.delta_total == 0.0) == (m > 12)
    assert any(NO_SHRINK in note for note in app.notes) == (m > 12)
    app.transport.seek(200)
    sketches = app.active.sketches
    for variant in ("exact", "fast"):
        assert (sketches.fd[variant].delta_total > 0) == (m <= 12)
        assert (sketches.rfd[variant].delta_total > 0) == (m <= 12)


def csv_of(rows: np.ndarray) -> bytes:
    return "\n".join(",".join(f"{v:.6f}" for v in row) for row in rows).encode()


@pytest.mark.timeout(60)
def test_an_upload_with_d_equal_to_m_is_not_called_shrink_free():
    app = Dashboard()  # the default m = 10
    rows = np.random.default_rng(3).standard_normal((200, 10))
    assert app.upload("mine.csv", csv_of(rows))
    assert app.settings.m == 10 and not any(NO_SHRINK in note for note in app.notes)
    app.transport.seek(200)
    assert app.active.sketches.fd["exact"].delta_total > 0


def sidebar_widgets(app: Dashboard) -> tuple:
    """The n and d sliders and the Markdown lines of the sidebar of a session of ``app``."""
    import panel as pn

    from explorer.dashboard.layout import layout

    sidebar = list(layout(app).sidebar)
    by_label = {getattr(w, "label", "").split(":")[0]: w for w in sidebar}
    lines = [w.object for w in sidebar if isinstance(w, pn.pane.Markdown)]
    return by_label["n"], by_label["d"], lines


@pytest.mark.timeout(60)
def test_the_sidebar_shows_the_shape_of_an_uploaded_file():
    app = Dashboard()
    n, d, _ = sidebar_widgets(app)
    assert (n.value, d.value) == (1000, 50)
    assert app.upload("mine.csv", csv_of(np.random.default_rng(3).standard_normal((200, 10))))
    n, d, lines = sidebar_widgets(app)  # a session opened after the upload
    assert (n.value, d.value) == (200, 10) and d.disabled
    assert "Streaming **200** rows × **10** columns." in lines
    assert (app.settings.n, app.settings.d) == (1000, 50)  # a synthetic stream uses them again


@pytest.mark.timeout(60)
def test_the_sidebar_follows_uploads_and_data_sets_while_open():
    app = Dashboard()
    n, d, lines = sidebar_widgets(app)
    assert app.upload("mine.csv", csv_of(np.random.default_rng(3).standard_normal((200, 10))))
    assert (n.value, d.value) == (200, 10)
    assert app.upload("small.csv", csv_of(np.random.default_rng(4).standard_normal((30, 4))))
    assert (n.value, d.value) == (30, 4)
    with param.edit_constant(n):
        n.value_throttled = 150  # released at 150: the file's 30 rows are all streamed
    assert app.settings.n == 150 and n.value == 30 and app.active.n_rows == 30
    app.settings.param.update(dataset="breast cancer", n=1000)
    assert (n.value, d.value) == (569, 30) and app.active.n_rows == 569
    app.settings.dataset = "low rank + noise"
    assert (n.value, d.value) == (1000, 50) and not d.disabled
    assert app.active.n_rows == 1000


# -- axes at the first and the last row ------------------------------------------------------

TIME_TITLES = ("t (rows seen)", "t (rounds)")
WINDOWED = {("adagrad", "rank")}
"""Figures whose t axis shows a recent window of the stream, not all of it."""


def axes_shown(plot) -> dict[str, tuple[list | None, str, str | None]]:
    """Each ranged axis of ``plot``: (the range sent to the browser, its type, its title)."""
    layout = plot.figure.layout.to_plotly_json()
    shown = {}
    for key, value in plot.pane.ranges.items():
        axis = layout.get(key) or {}
        title = axis.get("title", {}).get("text")
        if title is None and axis.get("matches"):  # a shared axis: the title of the one it matches
            title = (layout.get(f"xaxis{axis['matches'][1:]}") or {}).get("title", {}).get("text")
        shown[key] = (value, axis.get("type") or "linear", title)
    return shown


@pytest.mark.timeout(300)
def test_time_axes_span_the_stream_and_nothing_is_negative_at_t_0():
    """At t = 0 the axes ran from -0.6 to 0.6 (one point at 0), empty axes were left to
    Plotly (-1 to 4); at t = 1000 of 1000 the time axes ran to 1200. (n = 400: the 3%
    padding rounds 400 up to 450.)"""
    app = Dashboard()
    app.settings.n = 400
    for key in app.param.page.objects:
        app.page = key
        page = app.active
        page.views  # builds the figures
        assert page.t == 0 and page.n_rows == 400
        for name, plot in page.plots.items():
            for axis, (shown, kind, title) in axes_shown(plot).items():
                where = f"{key} {name} {axis} at t = 0: {shown}"
                assert shown is not None, where
                if kind == "linear":
                    assert shown[0] >= 0, where
                if title in TIME_TITLES and (key, name) not in WINDOWED:
                    assert shown[0] == 0.0 and 0 < shown[1] <= 400.0, where
        app.transport.seek(page.n_rows)
        page.settle()
        for name, plot in page.plots.items():
            for axis, (shown, kind, title) in axes_shown(plot).items():
                if title in TIME_TITLES and (key, name) not in WINDOWED:
                    assert shown == [0.0, 400.0], f"{key} {name} {axis} at the end: {shown}"


# -- curves drawn where things happened -----------------------------------------------------

def drawn_at(trace, t: float) -> float:
    """The value a Plotly line trace draws at ``t`` (linear: joined by lines; hv: held)."""
    x, y = np.asarray(trace.x, dtype=float), np.asarray(trace.y, dtype=float)
    i = int(np.searchsorted(x, t, side="right")) - 1
    if i < 0 or i >= x.size - 1 or x[i] == t or trace.line.shape in ("hv",):
        return float(y[max(i, 0)])
    return float(y[i] + (y[i + 1] - y[i]) * (t - x[i]) / (x[i + 1] - x[i]))


@pytest.mark.timeout(120)
def test_the_error_curves_stay_at_zero_until_the_first_shrink():
    """Points every 4 rows joined by lines drew the error rising from row 8, before FD's
    first shrink at row 10 (default n = 1000, m = 10)."""
    app = Dashboard()
    page = app.active
    page.views  # builds the figures
    app.transport.seek(40)
    m, X = app.settings.m, page.settings.stream()[0]
    first = {}
    for fast in (False, True):
        fd = FrequentDirections(X.shape[1], m, fast=fast)
        for t, row in enumerate(X[:40], start=1):
            fd.update(row)
            if fd.delta_total > 0:
                first["fast" if fast else "exact"] = t
                break
    assert page.resolution > 1 and 0 < first["exact"] < 40
    error = page.plots["error"]
    for variant, row in first.items():
        for name in (f"FD error ({variant})", f"RFD error ({variant})"):
            trace = error.trace(name)
            assert max(np.asarray(trace.y, dtype=float)) > 0, name
            for t in range(row):
                assert drawn_at(trace, t) == 0.0, (name, t, row)


@pytest.mark.timeout(120)
def test_each_variant_draws_its_own_delta_and_its_errors_stay_below_it():
    """Only the a-priori bound (the same for both variants) was drawn; the fast variant's
    Δ, its own certified bound, was not."""
    from explorer import RobustFrequentDirections

    app = small_app()
    page = app.active
    page.views  # builds the figures
    app.transport.seek(150)
    X = load_stream("low rank + noise", n=200, d=12, seed=0)[:150]
    error = page.plots["error"]
    h = page.history
    for variant, name in (("exact", "Δ of the exact run"), ("fast", "Δ of the fast run")):
        fd = FrequentDirections(12, 4, fast=variant == "fast")
        fd.extend(X)
        trace = error.trace(name)
        assert np.asarray(trace.x)[-1] == 150 and np.asarray(trace.y)[-1] == pytest.approx(fd.delta_total, rel=1e-12)
        deltas = np.asarray(trace.y, dtype=float)
        assert np.all(h[f"error_fd_{variant}"] <= deltas * (1 + 1e-9) + 1e-9)
        assert np.all(h[f"error_rfd_{variant}"] <= deltas / 2 * (1 + 1e-9) + 1e-9)
        assert np.all(deltas <= h["bound_fd"] * (1 + 1e-9) + 1e-9)
        assert trace.line.color == error.trace("FD bound").line.color
    assert error.trace("Δ of the fast run").y[-1] != error.trace("Δ of the exact run").y[-1]
    rfd = RobustFrequentDirections(12, 4, fast=True)
    rfd.extend(X)
    assert rfd.delta_total == pytest.approx(error.trace("Δ of the fast run").y[-1], rel=1e-12)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("m", [5, 10, 20, 50])
def test_the_spectrum_writes_a_readable_number_of_direction_labels(m):
    """At m = 50 the spectrum's 54 directions each had a label (dtick 1): unreadable."""
    app = Dashboard()
    app.settings.m = m
    page = app.active
    page.views  # builds the figures
    app.transport.seek(120)
    spectrum = page.plots["spectrum"]
    bars = len(spectrum.trace("FD after").x)
    assert bars >= min(m, 50)
    layout = spectrum.figure.layout
    for axis in (layout.xaxis, layout.xaxis2):
        assert axis.dtick is not None and bars / axis.dtick <= 15, (m, bars, axis.dtick)
