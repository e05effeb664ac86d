"""The dashboard in a real headless browser: Debian's chromium driven by Playwright.

One server for the module, started the way ``explorer serve`` starts it
(``explorer.dashboard.serve`` on a free localhost port, in its own process: the
conftest's ``pn.state.reset()`` after each browser test would stop an in-process
server). Each test opens fresh pages and asserts on what the browser renders: the
Plotly figures' data, the text, the URL, the alerts. The browser and its launch flags
come from pytest-playwright's fixtures and ``tests/conftest.py``.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from conftest import VIEWPORT
from playwright.sync_api import expect

from explorer.dashboard.app import PAGES

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TIMEOUT_MS = 60_000  # a loaded 2-core machine can take a while to render four figures
SMALL = "n=300&d=20&m=5"  # a short stream keeps the tests quick
FIGURES = {"spectrum": 0, "alpha": 1, "error": 2, "condition": 3}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """``serve(port, show=False)`` in a child process; yields its base URL and pid."""
    port = free_port()
    code = f"from explorer.dashboard import serve; serve(port={port}, show=False, liveness=True)"
    process = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parent.parent,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        try:
            if requests.get(f"http://localhost:{port}/liveness", timeout=1).ok:
                break
        except requests.ConnectionError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the dashboard server did not start: {process.stderr.read().decode()[-2000:]}")
        time.sleep(0.2)
    yield {"url": f"http://localhost:{port}/", "port": port, "pid": process.pid}
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def open_page(page, url: str, figures: int = len(FIGURES)):
    """Load the dashboard, wait for its ``figures`` figures (the sketching page's four),
    and collect console errors."""
    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    wait_loaded(page, figures)
    return errors


def wait_loaded(page, figures: int = len(FIGURES)) -> None:
    plots = page.locator(".js-plotly-plot .plot-container.plotly")
    plots.first.wait_for()
    expect(plots).to_have_count(figures, timeout=TIMEOUT_MS)


def traces(page, figure: str) -> dict[str, list]:
    """{trace name: y values} of one figure, read from the Plotly graph div in the page."""
    return page.locator(".js-plotly-plot").nth(FIGURES[figure]).evaluate(
        "el => Object.fromEntries(el.data.map(d => [d.uid || d.name, Array.from(d.y || [])]))")


def button(page, label: str):
    """A transport button (exact name: Plotly's toolbar has a "Reset axes" button too)."""
    return page.get_by_role("button", name=label, exact=True)


def counter(page, t: int):
    return page.get_by_text(f"t = {t}", exact=True)


def query(page) -> dict[str, str]:
    return dict(re.findall(r"[?&]([^=&]+)=([^&]*)", page.url))


def real_errors(errors: list[str]) -> list[str]:
    return [e for e in errors if "favicon" not in e]


def test_step_play_pause_back_update_the_plots_and_the_url(server, page):
    errors = open_page(page, server["url"] + "?" + SMALL)
    assert query(page)["m"] == "5" and query(page)["dataset"] == "low+rank+%2B+noise"
    counter(page, 0).wait_for()
    before = traces(page, "error")["RFD error (exact)"]
    button(page, "Step").click()
    counter(page, 1).wait_for()
    page.wait_for_function("() => /[?&]t=1(&|$)/.test(location.search)")
    wait_until(lambda: len(traces(page, "error")["RFD error (exact)"]) == len(before) + 1, page)

    button(page, "Play").click()
    wait_until(lambda: shown_t(page) >= 8, page)
    button(page, "Pause").click()
    expect(button(page, "Play")).to_be_enabled()
    stopped = shown_t(page)
    page.wait_for_function(f"() => /[?&]t={stopped}(&|$)/.test(location.search)")  # URL on pause
    page.wait_for_timeout(700)
    assert shown_t(page) == stopped
    alpha = traces(page, "alpha")["RFD α (exact)"]
    assert len(alpha) >= 3 and alpha[-1] > alpha[0]  # shrinks happened: alpha grew

    button(page, "Back").click()
    counter(page, stopped - 1).wait_for()
    button(page, "Reset").click()
    counter(page, 0).wait_for()
    assert real_errors(errors) == []


def shown_t(page) -> int:
    """The t the counter shows."""
    return int(page.get_by_text(re.compile(r"^t = \d+$")).first.inner_text().split("=")[1])


def step_twice_and_see_plots_change(page, figures) -> None:
    """From t = 0, press Step twice (the counter says 1, then 2) and wait until
    ``figures(page)`` differs from what it was before."""
    counter(page, 0).wait_for()
    before = figures(page)
    for t in (1, 2):
        button(page, "Step").click()
        counter(page, t).wait_for()
    wait_until(lambda: figures(page) != before, page)


def wait_until(condition, page, timeout_ms: int = TIMEOUT_MS) -> None:
    """Poll ``condition`` (Panel's ``wait_until``: the browser's clock, never time.sleep)."""
    waited = 0
    while not condition():
        if waited > timeout_ms:
            raise AssertionError("condition not met in time")
        page.wait_for_timeout(100)
        waited += 100


def test_moving_the_m_slider_resets_and_goes_into_the_url(server, page):
    errors = open_page(page, server["url"] + "?" + SMALL + "&t=12")
    counter(page, 12).wait_for()
    bars = len(traces(page, "spectrum")["FD after"])
    page.locator(".noUi-touch-area").first.click()  # the first slider of the sidebar is m
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => /[?&]m=6(&|$)/.test(location.search)")
    counter(page, 0).wait_for()  # m is structural: the stream restarted
    assert query(page)["t"] == "0"
    button(page, "Step").click()
    counter(page, 1).wait_for()
    wait_until(lambda: len(traces(page, "spectrum")["FD after"]) == bars + 1, page)  # m + 4 directions
    assert real_errors(errors) == []


def test_the_log_scale_toggle_reaches_the_plot(server, page):
    """A nested layout change (``yaxis.type``) is sent to the browser (LivePlot.update).
    A click on the words "log scale" switches it (a Checkbox's label did nothing)."""
    errors = open_page(page, server["url"] + "?" + SMALL)
    spectrum = page.locator(".js-plotly-plot").nth(FIGURES["spectrum"])
    axes = "el => [el.layout.yaxis.type, el.layout.yaxis2.type]"
    log_scale = page.get_by_text("log scale", exact=True).first
    wait_until(lambda: spectrum.evaluate(axes) == ["log", "log"], page)
    log_scale.click()
    wait_until(lambda: spectrum.evaluate(axes) == ["linear", "linear"], page)
    page.wait_for_function("() => /[?&]log_spectrum=false(&|$)/.test(location.search)")
    log_scale.click()
    wait_until(lambda: spectrum.evaluate(axes) == ["log", "log"], page)
    assert real_errors(errors) == []


def test_a_shared_link_reproduces_the_view_and_a_bad_one_is_explained(server, page):
    open_page(page, server["url"] + "?" + SMALL + "&alpha0=0.1&t=40&spectrum_of=fast")
    counter(page, 40).wait_for()
    first = traces(page, "error")
    page.goto(server["url"] + "?" + SMALL + "&alpha0=0.1&t=40&spectrum_of=fast")
    wait_loaded(page)
    counter(page, 40).wait_for()
    assert traces(page, "error") == first  # same link, same numbers
    page.goto(server["url"] + "?m=1000&seed=3")
    wait_loaded(page)
    page.get_by_text("URL: m = 1000 was ignored (m must be at most 50); using m = 10.").wait_for()
    assert query(page)["seed"] == "3"


def test_uploads_a_bad_file_shows_a_message_a_good_one_streams(server, page):
    errors = open_page(page, server["url"] + "?" + SMALL)
    upload = page.locator('input[type="file"]')
    upload.set_input_files(files=[{"name": "bad.csv", "mimeType": "text/csv",
                                   "buffer": b"1,2,3\n4,five,6\n"}])
    page.get_by_text("Upload refused: bad.csv: line 2, column 2 is not a number ('five')").wait_for()
    wait_until(lambda: upload.input_value() == "", page)  # the box does not name a refused file
    upload.set_input_files(files=[{"name": "evil.npz", "mimeType": "application/octet-stream",
                                   "buffer": b"PK\x03\x04 not a zip"}])
    page.get_by_text(re.compile("Upload refused: evil.npz: not a NumPy .npz archive")).wait_for()
    rows = "\n".join(",".join(str((i * j) % 7 - 3) for j in range(6)) for i in range(40))
    upload.set_input_files(files=[{"name": "mine.csv", "mimeType": "text/csv", "buffer": rows.encode()}])
    page.get_by_text("of 40 rows").wait_for()
    page.wait_for_function("() => /[?&]dataset=your\\+upload(&|$)/.test(location.search)")
    button(page, "Step").click()
    counter(page, 1).wait_for()
    assert real_errors(errors) == []


def test_ten_sessions_at_once_keep_their_own_state(server, browser):
    contexts = [browser.new_context(viewport=VIEWPORT) for _ in range(10)]
    pages = [context.new_page() for context in contexts]
    errors = []
    try:
        for i, page in enumerate(pages):  # all ten load at the same time
            page.set_default_timeout(TIMEOUT_MS * 2)
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            page.goto(server["url"] + f"?n=300&d=20&m={3 + i}&t={10 + i}", wait_until="commit")
        for i, page in enumerate(pages):
            wait_loaded(page)
            counter(page, 10 + i).wait_for()
        for page in pages:
            button(page, "Step").click()
        for i, page in enumerate(pages):
            counter(page, 11 + i).wait_for()
            assert query(page)["m"] == str(3 + i)
            page.wait_for_function(f"() => /[?&]t={11 + i}(&|$)/.test(location.search)")
            bars = traces(page, "spectrum")["FD after"]
            assert len(bars) == min(20, 3 + i + 4)  # m + 4 directions: this session's m
    finally:
        for context in contexts:
            context.close()
    assert real_errors(errors) == []


def test_the_server_listens_on_localhost_only(server):
    local = {f"{int(line.split()[1].split(':')[1], 16)}": line.split()[1].split(":")[0]
             for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
             if line.split()[3] == "0A"}  # state LISTEN
    assert local.get(str(server["port"])) == "0100007F"  # 127.0.0.1, little-endian hex


FAMILY_PAGES = [cls.key for cls in PAGES if cls.key != "sketching"]


def all_figures(page) -> str:
    """Every rendered Plotly figure's data (x, y, z of each trace), as one JSON string.

    Playwright's locator reaches into Panel's shadow DOM (``document.querySelectorAll`` does not).
    """
    return page.locator(".js-plotly-plot").evaluate_all(
        "els => JSON.stringify(els.map(el => el.data.map(d => [d.x, d.y, d.z])))")


@pytest.mark.parametrize("key", FAMILY_PAGES)
def test_each_family_page_loads_steps_and_redraws(server, page, key):
    """Each algorithm family's tab, opened from a link: it renders, Step advances, plots change."""
    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server["url"] + f"?page={key}&n=300&d=20")
    page.locator(".js-plotly-plot .plot-container.plotly").first.wait_for()
    step_twice_and_see_plots_change(page, all_figures)
    page.wait_for_function("() => /[?&]t=2(&|$)/.test(location.search)")
    assert query(page)["page"] == key
    button(page, "Play").click()  # past the first event of every family (t = 3 to 23 here)
    wait_until(lambda: shown_t(page) >= 30, page)
    button(page, "Pause").click()
    expect(button(page, "Play")).to_be_enabled()
    wait_until(lambda: len(event_marks_drawn(page)) > 0, page)
    assert max(event_marks_drawn(page)) <= shown_t(page)
    assert real_errors(errors) == []


def event_marks_drawn(page) -> list[float]:
    """The x of every event mark (a named shape: :func:`explorer.plots.event_marks`) in the
    rendered figures."""
    return page.locator(".js-plotly-plot").evaluate_all(
        "els => els.flatMap(el => (el.layout.shapes || []).filter(s => s.name).map(s => s.x0))")


def test_the_newton_pages_slab_comes_from_the_link_and_its_input_restarts_the_race(server, page):
    """The slab C of the sketched Newton page (lesson 3, "How wide a slab?") round-trips
    through the URL, and typing a new one restarts the race with it."""
    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server["url"] + "?page=newton&n=300&d=20&son_loss=logistic&slab=10&t=5")
    page.locator(".js-plotly-plot .plot-container.plotly").first.wait_for()
    counter(page, 5).wait_for()
    page.get_by_text("clip(wᵀx, −10, 10)").wait_for()
    slab = page.locator(".bk-input-group", has_text="slab C").locator("input")
    assert slab.input_value() == "10"
    slab.fill("5")
    slab.press("Enter")
    page.get_by_text("clip(wᵀx, −5, 5)").wait_for()
    page.wait_for_function("() => /[?&]slab=5(\\.0)?(&|$)/.test(location.search)")
    counter(page, 0).wait_for()  # a restart option: back to t = 0
    assert real_errors(errors) == []


def test_a_crafted_link_or_file_name_runs_nothing_and_shows_its_text(server, page):
    """User text is data: script in a query value or an upload's file name is shown as
    the characters typed and never runs (issue 13: `?m=<script>` ran in chromium). After a
    bad link, an upload's refusal still shows (it used to vanish), and a complaint once."""
    script = "<script>window.__x=1</script>"
    image = '<img src=x onerror="window.__y=1">'
    from urllib.parse import quote
    open_page(page, server["url"] + f"?m={quote(script)}&dataset={quote(image)}")
    page.get_by_text(re.compile(re.escape(f"URL: m = {script} was ignored"))).wait_for()
    page.get_by_text(re.compile(re.escape(f"URL: dataset = {image} was ignored"))).wait_for()
    assert page.get_by_text(re.compile(re.escape(f"URL: m = {script} was ignored"))).count() == 1
    page.locator('input[type="file"]').set_input_files(files=[{
        "name": '<img src=x onerror="window.__z=1">.csv', "mimeType": "text/csv", "buffer": b"1,x\n"}])
    page.get_by_text(re.compile(re.escape('Upload refused: <img src=x onerror="window.__z=1">.csv'))).wait_for()
    page.wait_for_timeout(500)
    assert page.evaluate("() => [window.__x, window.__y, window.__z]") == [None, None, None]


def big_value_csv() -> bytes:
    """60 x 5 numbers with one row of 1e200 (issue 13: uploading it and pressing Play broke
    the sketching page, and the server stopped answering)."""
    rows = [[((i * 7 + j * 3) % 11 - 5) / 3 for j in range(5)] for i in range(60)]
    rows[30] = [1e200] * 5
    return "\n".join(",".join(repr(v) for v in row) for row in rows).encode()


def test_an_upload_of_huge_values_is_explained_and_other_sessions_keep_answering(server, page, browser):
    """Session A uploads the 1e200 CSV and presses Play; session B, meanwhile, steps and
    its counter moves within seconds; A shows why the file was refused and plays on."""
    errors = open_page(page, server["url"] + "?" + SMALL)
    other = browser.new_context(viewport=VIEWPORT).new_page()
    try:
        other_errors = open_page(other, server["url"] + "?" + SMALL)
        counter(other, 0).wait_for()
        page.locator('input[type="file"]').set_input_files(files=[{
            "name": "big.csv", "mimeType": "text/csv", "buffer": big_value_csv()}])
        button(page, "Play").click()
        button(other, "Step").click()
        counter(other, 1).wait_for(timeout=10_000)
        page.get_by_text(re.compile(r"Upload refused: big\.csv: the values are too large")).wait_for()
        page.get_by_text(re.compile(r"Values up to about 1e150 work; rescale the data")).wait_for()
        wait_until(lambda: shown_t(page) >= 3, page)  # A plays on (the data it had)
        button(page, "Pause").click()
        button(other, "Step").click()
        counter(other, 2).wait_for(timeout=10_000)
        assert real_errors(errors) == [] and real_errors(other_errors) == []
    finally:
        other.context.close()
