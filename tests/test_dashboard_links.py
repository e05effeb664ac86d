"""Issue 17, defect 4 and the α plot of defect 7: the curves at row t do not depend on how
the stream got there.

A shared link carries the settings and ``t``; the receiver's transport seeks to ``t`` in
large chunks, while the sender stepped, played or went back. The curves had one point per
step (the receiver: one every 20 rows, and an empty accuracy plot at t = 12). Now a page
records a point at every ``resolution``-th row and at the current row, so the history at
row ``t`` is the same for every path (``Page.step``). Only wall-clock columns (ADA-*'s ms
per round, the FM page's microseconds) differ between two runs, and are left out.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.dashboard.app import PAGES, Dashboard

pytestmark = pytest.mark.timeout(300)

KEYS = [cls.key for cls in PAGES]
CLOCK_COLUMNS = ("ms_", "time_")
"""Columns measured with a clock: never equal between two runs."""


def dashboard(key: str, n: int = 400) -> Dashboard:
    app = Dashboard()
    app.settings.n = n
    app.page = key
    return app


def comparable(history) -> dict[str, np.ndarray]:
    return {name: history[name].copy() for name in history if not name.startswith(CLOCK_COLUMNS)}


def assert_same_curves(sender, receiver) -> None:
    a, b = comparable(sender.history), comparable(receiver.history)
    assert list(a) == list(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("key", KEYS)
def test_a_link_at_t_draws_the_curves_the_sender_stepped_through(key):
    """Steps of 1-8 rows, a Back and a Play tick on one side; a link's seek on the other."""
    sender, receiver = dashboard(key), dashboard(key)
    rng = np.random.default_rng(0)
    while sender.transport.t < 97:
        sender.transport.step(int(rng.integers(1, 9)))
    sender.transport.back(5)
    sender.transport.tick()  # one Play round (15 rows/s: one row)
    t = sender.transport.t
    receiver.transport.shared_t = t
    assert receiver.transport.t == t and sender.active.resolution == 2  # n = 400: every 2nd row
    assert_same_curves(sender.active, receiver.active)
    # and the plots: the points drawn are the history's (a link at t = 12 had an empty plot)
    assert sender.active.history["t"][-1] == t and len(sender.active.history) == 1 + t // 2 + t % 2


def test_a_newton_link_at_t_12_has_its_accuracy_points():
    receiver = dashboard("newton", n=1000)
    receiver.transport.shared_t = 12
    page = receiver.active
    page.views  # noqa: B018 (built on first use)
    accuracy = page.plots["accuracy"].trace("RFD-SON")
    assert list(accuracy.x) == [0, 4, 8, 12] and np.isfinite(accuracy.y[1:]).all()


@settings(max_examples=15, deadline=None)
@given(steps=st.lists(st.integers(1, 40), min_size=1, max_size=8), n=st.integers(50, 700))
def test_the_sketching_curves_at_t_are_the_same_for_any_steps(steps, n):
    sender, receiver = dashboard("sketching", n=n), dashboard("sketching", n=n)
    for k in steps:
        sender.transport.step(k)
    receiver.transport.shared_t = sender.transport.t
    assert_same_curves(sender.active, receiver.active)
    t = sender.active.history["t"]
    assert np.all(np.diff(t) > 0) and t[-1] == sender.transport.t


@pytest.mark.parametrize("key, line", [("sketching", "FD: α₀ (fixed)"),
                                       ("newton", "α₀ (FD-SON, RP-SON, FULL-ON)")])
def test_an_alpha0_change_mid_stream_is_drawn_as_a_step_where_it_happened(key, line):
    """The α₀ line was redrawn from today's α₀ over the whole stream; now the earlier rows
    keep the α₀ they ran with, and the change is a vertical step at its row."""
    app = dashboard(key)
    page = app.active
    page.views  # noqa: B018
    app.transport.step(13)
    app.settings.alpha0 = 10.0
    app.transport.step(4)
    drawn = page.plots["alpha"].trace(line)
    x, y = np.asarray(drawn.x), np.asarray(drawn.y)
    assert set(y[x < 13]) == {1.0} and set(y[x > 13]) == {10.0}
    assert list(y[x == 13]) == [1.0, 10.0]  # before and after, at the row of the change


# -- links that cannot break a session: every bad value dropped with a message ------------
from urllib.parse import parse_qsl, quote, urlencode  # noqa: E402

import param  # noqa: E402
from panel.io.location import Location  # noqa: E402
from panel.util import parse_query  # noqa: E402

from explorer.dashboard.app import clean_request_query  # noqa: E402,F401 (the served path's)
from explorer.dashboard.settings import MAX_QUERY_VALUE, clean_query  # noqa: E402

URL_KEYS = sorted(Dashboard().url_parameters())
BAD_VALUES = st.one_of(
    st.integers(4301, 6000).map(lambda n: "7" * n),  # past int()'s 4300 digits
    st.integers(MAX_QUERY_VALUE + 1, 400).map(lambda n: "x" * n),
    st.sampled_from(["true", "false", "TRUE", "False", "", "[", "{", "[1,", '{"a":', "[RFD-SON]",
                     "²", "١٢", "𝟗", "nan", "inf", "-Infinity", "1e999", "1?2", "a#b", "?", "#"]),
)


def _synced(query: str) -> Dashboard:
    app = Dashboard()
    app.sync_url(Location(search=query))
    return app


def _assert_sound(app: Dashboard) -> None:
    """No numeric setting holds a bool or a non-finite number; the active page builds."""
    app.active.views  # noqa: B018 (built on first use)
    for target in (app.settings, app.transport, *app.pages.values()):
        for name, parameter in target.param.objects().items():
            value = getattr(target, name)
            if isinstance(parameter, (param.Integer, param.Number)) and value is not None:
                assert not isinstance(value, bool), f"{type(target).__name__}.{name} = {value!r}"
                assert np.isfinite(value), f"{type(target).__name__}.{name} = {value!r}"


@settings(max_examples=40, deadline=None)
@given(key=st.sampled_from([*URL_KEYS, "nope"]), bad=BAD_VALUES,
       page=st.sampled_from(KEYS), good=st.sampled_from(["", "n=300", "m=7"]))
def test_a_bad_value_under_any_key_is_dropped_with_a_message_naming_it(key, bad, page, good):
    """Every key x a value Panel's parser raises on (4301+ digits, '²'), reads wrongly (true,
    nan, 1e999) or drops silently (empty, broken JSON): the cleaned query parses, the value
    is gone with a message naming the key and, for a setting, what it allows; a synced
    dashboard builds its page with no bool in a number and keeps the good values."""
    first = "" if key == "page" else f"page={page}"
    query = "?" + "&".join(part for part in (first, good, f"{quote(key)}={quote(bad)}") if part)
    parameters = Dashboard().url_parameters()
    search, messages = clean_query(query, parameters)
    parse_query(search)  # raises on nothing left
    assert all(len(value) <= MAX_QUERY_VALUE for _, value in parse_qsl(search[1:]))
    kept = dict(parse_qsl(search[1:], keep_blank_values=True))
    known = parameters.get(key, [])
    numeric = bool(known) and all(isinstance(p, (param.Integer, param.Number)) for p in known)
    must_drop = (len(bad) > MAX_QUERY_VALUE or bad in ("[", "{", "[1,", '{"a":', "[RFD-SON]", "²", "١٢")
                 or (known and bad == "")
                 or (known and bad.lower() in ("true", "false")
                     and not any(isinstance(p, param.Boolean) for p in known))
                 or (numeric and bad in ("nan", "inf", "-Infinity", "1e999")))
    dropped = key not in kept
    assert dropped or not must_drop, f"{key}={bad[:30]!r} kept"
    assert [text for text in messages if text.startswith(f"URL: {key} ")] == messages
    assert len(messages) == (1 if dropped and (known or bad) else 0), messages
    if dropped and known:
        assert " must be " in messages[0]
    if good:
        assert good.split("=")[0] in kept
    app = _synced(query)
    _assert_sound(app)
    for text in messages:
        assert text in app.messages
    if good == "m=7" and key != "m":
        assert app.settings.m == 7


@pytest.mark.parametrize("query, key", [
    ("?seed=" + "1" * 5000, "seed"), ("?seed=true", "seed"), ("?page=newton&adagrad_eta=true", "adagrad_eta"),
    ("?page=pca&k=true", "k"), ("?page=pca&rank=true", "rank"), ("?seed=", "seed"),
    ('?page=newton&learners=["RFD-SON"', "learners"), ("?m=²", "m"), ("?t=1e999", "t"),
    ("?nope=" + "9" * 4301, "nope")])
def test_the_reported_links_build_their_page_and_say_what_was_dropped(query, key):
    """The campaign's cases: each page builds, and the message names the key and what is allowed."""
    app = _synced(query)
    _assert_sound(app)
    said = [text for text in app.messages if text.startswith(f"URL: {key} ")]
    assert len(said) == 1, app.messages
    assert ("must be" in said[0]) != (key == "nope")
    assert len(said[0]) < 300  # a 5000-digit value is quoted by its first 20 characters


def test_a_clean_query_is_left_as_it_is_and_question_marks_are_escaped():
    """Nothing to drop: the very same string (no re-encoding the browser would then send
    back); a '?' inside a value (Panel splits the address at each '?') is escaped."""
    parameters = Dashboard().url_parameters()
    query = '?page=newton&learners=["RFD-SON"]&fast=true&m=7&theme=dark'
    assert clean_query(query, parameters) == (query, [])
    search, messages = clean_query("?dataset=a?b#c&m=7", parameters)
    assert messages == [] and "?" not in search[1:] and "#" not in search
    assert dict(parse_qsl(search[1:])) == {"dataset": "a?b#c", "m": "7"}
    assert clean_query("", parameters) == ("", [])


def test_every_value_a_session_writes_fits_in_a_link():
    """The longest value the dashboard itself puts in its URL (every learner selected, ...)
    is within MAX_QUERY_VALUE, so no shared link is ever cut."""
    app = Dashboard()
    for cls in PAGES:
        app.page = cls.key
        for name, parameter in cls.param.objects().items():
            if isinstance(parameter, param.ListSelector):
                setattr(app.active, name, list(parameter.objects))
    app.sync_url(Location())
    longest = max(app.url_query().values(), key=len)
    assert len(longest) <= MAX_QUERY_VALUE
    assert clean_query("?" + urlencode(app.url_query()), app.url_parameters())[1] == []


def test_a_later_query_from_the_browser_is_cleaned_before_panel_reads_it():
    """The browser sends its address bar's query when the page loads: cleaned too."""
    app = _synced("?m=7")
    app._location.search = "?m=9&seed=" + "3" * 5000  # noqa: SLF001 (what the browser sends)
    assert app.settings.m == 9 and app.settings.seed == 0
    assert any(text.startswith("URL: seed = 33333333333333333333… (5000 characters)") for text in app.messages)
    assert "seed" not in dict(parse_qsl(app._location.search[1:]))  # noqa: SLF001


from test_dashboard_browser import server  # noqa: E402,F401 (the fixture: a served dashboard in a child process)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("query, said", [
    ("?n=300&d=20&m=5&seed=true", "URL: seed = true was ignored (seed must be an integer in [0, 2147483647])"),
    ("?n=300&d=20&m=5&seed=" + "1" * 5000, "URL: seed = 11111111111111111111… (5000 characters) was ignored"),
    ("?page=pca&n=300&d=20&k=true&rank=true", "URL: rank = true was ignored (rank must be an integer"),
])
def test_a_broken_link_opens_the_page_with_its_step_button_and_the_message(server, page, query, said):
    """In chromium: the page builds (a 5000-digit value was an HTTP 500, ``seed=true`` a page
    that never built), Step works, the message names the key, and the address bar shows the
    value in use instead."""
    from test_dashboard_browser import TIMEOUT_MS, button, counter

    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(TIMEOUT_MS)
    response = page.goto(server["url"] + query)
    assert response.status == 200
    page.get_by_text(said).wait_for()
    button(page, "Step").click()
    counter(page, 1).wait_for()
    key = said.split()[1]
    bad = dict(parse_qsl(query[1:]))[key]
    page.wait_for_function(f"() => /[?&]t=1(&|$)/.test(location.search)")  # the URL follows Step
    assert dict(parse_qsl(page.url.split("?", 1)[1]))[key] != bad  # the default, written back
    assert [e for e in errors if "favicon" not in e] == []


def test_a_link_past_the_streams_end_says_so_and_shows_the_last_row():
    """Before: ?n=200&t=5000 silently showed t = 200 (found by the entry-point fuzz)."""
    from panel.io.location import Location

    from explorer.dashboard import Dashboard

    for page in ("sketching", "newton", "pca"):
        app = Dashboard()
        app.sync_url(Location(search=f"?page={page}&n=200&t=5000"))
        assert app.transport.page.t == 200
        assert "URL: t = 5000 is past the end of the stream (200 rows); showing t = 200." in app.messages
    app = Dashboard()
    app.sync_url(Location(search="?n=200&t=200"))
    assert app.transport.page.t == 200 and not app.messages


def test_a_whole_number_out_of_range_names_the_range_not_its_type():
    """Before: ?seed=-4490 said 'seed = -4490.0 was ignored (seed must be an integer)'."""
    from panel.io.location import Location

    from explorer.dashboard import Dashboard

    app = Dashboard()
    app.sync_url(Location(search="?seed=-4490"))
    assert app.messages == ["URL: seed = -4490 was ignored (seed must be at least 0); using seed = 0."]
