"""The dashboard in the static site (explorer/site_dashboard.py), driven in headless chromium.

The browser test opens ``dashboard/index.html`` of the site tests/test_site.py builds (same
fixtures, same skip rule: ``EXPLORER_SITE_TESTS=1``), waits for the first figure (its time is
printed for benchmarks/README.md), then Step, Play, Pause and Back change the figures and the
URL, a lesson link and a docs link open the site's own lesson and docs (200, same folder),
with every request not to 127.0.0.1 aborted and counted (0) and no page error. The unit
tests need no browser: the upload path without threads, the page's local URLs, the wheels.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
import threading
import time
import zipfile

import pytest

from explorer import site_dashboard
from test_site import SITE_TESTS, _guard, site_browser, site_dir, site_url  # noqa: F401

SMALL = "n=200&d=12&m=5"


def run_alone(coroutine):
    """Run ``coroutine`` to its end on an event loop of its own, in a thread: after a browser
    test, Playwright's sync API leaves a loop running in the main thread, where
    ``run_until_complete`` refuses to start another."""
    done = {}

    def target():
        loop = asyncio.new_event_loop()
        try:
            done["value"] = loop.run_until_complete(coroutine)
        except BaseException as error:  # handed to the test's thread
            done["error"] = error
        finally:
            loop.close()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "the coroutine did not finish within 120 s"
    if "error" in done:
        raise done["error"]
    return done["value"]


def test_in_the_browser_an_upload_is_parsed_without_a_thread(monkeypatch):
    """Pyodide has no threads: ``asyncio.to_thread`` fails there, so the upload is parsed in
    place when ``sys.platform == "emscripten"``."""
    from explorer.dashboard.app import Dashboard
    from explorer.dashboard.settings import UPLOAD

    def no_threads(*args, **kwargs):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(asyncio, "to_thread", no_threads)
    monkeypatch.setattr(sys, "platform", "emscripten")
    app = Dashboard()
    app.settings.param.update(n=200, d=12, m=4)
    accepted = run_alone(app.upload_in_background("mine.csv", b"1,2\n3,4\n5,7\n"))
    assert accepted and app.settings.dataset == UPLOAD and app.active.n_rows == 3
    refused = run_alone(app.upload_in_background("bad.csv", b"1,2\n3,x\n"))
    assert refused is False and app.messages[0].startswith("Upload refused: bad.csv")


def test_in_the_browser_the_page_says_what_differs(monkeypatch):
    from explorer.dashboard import app as app_module

    assert app_module.platform_notes() == []
    monkeypatch.setattr(sys, "platform", "emscripten")
    assert app_module.platform_notes() == [app_module.BROWSER_NOTE]
    app = app_module.Dashboard()
    assert app.notes[-1] == app_module.BROWSER_NOTE
    app.settings.m = 7  # the page's notes change; the browser's stays
    assert app.notes[-1] == app_module.BROWSER_NOTE


def test_in_the_browser_the_links_lead_to_the_sites_lessons_and_docs(monkeypatch, tmp_path):
    """In Pyodide the package is a wheel (no docs/ next to it); the links lead to the site's
    JupyterLite lesson and to its rendered docs, relative to dashboard/index.html."""
    from explorer.dashboard import references

    monkeypatch.setattr(references, "ROOT", tmp_path)  # as installed: no docs/ beside it
    assert references.reference_links("sketching") == []
    monkeypatch.setattr(sys, "platform", "emscripten")
    links = references.reference_links("sketching")
    assert links[0] == ("Lesson 1 · Frequent Directions",
                        "../lab/index.html?path=lessons/01_frequent_directions.ipynb")
    assert links[-1] == ("docs/algorithms.md § 2. Robust Frequent Directions",
                         "../docs/algorithms.html#2-robust-frequent-directions-rfd")
    assert references.docs_href("0. Notation") == "../docs/algorithms.html#0-notation"


def test_the_sites_docs_link_to_the_sites_copies(monkeypatch):
    from explorer.dashboard import references

    page = references.render_docs(site=True)
    assert 'href="#1-frequent-directions-fd"' in page and 'href="datasets.md"' in page
    assert 'href="/' not in page and page == references.render_docs(site=True)


def test_the_page_points_at_the_sites_own_files_and_is_reproducible():
    page = ('<script src="https://cdn.holoviz.org/panel/1.9.4/dist/panel.min.js"></script>'
            '<div id="fe5cffa7-0891-4915-9823-1729c2114690"></div>'
            '<div id="d5145a1c-d8a0-4d17-a056-9301854b9eff"></div>'
            '<x ref="fe5cffa7-0891-4915-9823-1729c2114690">')
    out = site_dashboard.local_urls(page)
    assert 'src="panel/1.9.4/dist/panel.min.js"' in out and "https://" not in out
    ids = re.findall(r'"([0-9a-f-]{36})"', out)
    assert ids[0] == ids[2] != ids[1]  # the same id stays the same, another gets another
    other = page.replace("fe5cffa7", "0123abcd").replace("d5145a1c", "89abcdef")
    assert site_dashboard.local_urls(other) == out  # random ids in, the same page out


def test_the_slim_wheel_drops_the_javascript_and_its_record_lists_what_is_left(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    wheel = src / "panel-1.9.4-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("panel/__init__.py", "x = 1\n")
        zf.writestr("panel/dist/bundled/big.js", "y" * 1000)
        zf.writestr("panel/io/a.js.map", "{}")
        zf.writestr(site_dashboard.KEEP[0], "css")  # else Panel asks its CDN for it
        zf.writestr("panel-1.9.4.dist-info/RECORD", "stale\n")
    slim = site_dashboard.slim_wheel(wheel, tmp_path, site_dashboard.SLIM["panel"])
    with zipfile.ZipFile(slim) as zf:
        names = set(zf.namelist())
        record = zf.read("panel-1.9.4.dist-info/RECORD").decode()
        info = zf.getinfo("panel/__init__.py")
    assert names == {"panel/__init__.py", site_dashboard.KEEP[0], "panel-1.9.4.dist-info/RECORD"}
    assert record.startswith("panel/__init__.py,sha256=") and "stale" not in record
    assert info.compress_type == zipfile.ZIP_DEFLATED  # a ZipInfo alone would store it
    first = slim.read_bytes()
    assert site_dashboard.slim_wheel(wheel, tmp_path, site_dashboard.SLIM["panel"]).read_bytes() == first


def test_the_nh3_stand_in_lets_no_markup_through(tmp_path):
    wheel = site_dashboard.source_wheel("nh3", *site_dashboard.NH3_STAND_IN, tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        source = zf.read("nh3/__init__.py").decode()
    module = {}
    exec(compile(source, "nh3/__init__.py", "exec"), module)
    cleaned = module["clean"]('<img src=x onerror="alert(1)">a & b')
    assert "<" not in cleaned and '"' not in cleaned and cleaned.endswith("a &amp; b")


def _build_site_module():
    spec = importlib.util.spec_from_file_location("build_site_h1", site_dashboard.__file__.replace(
        "explorer/site_dashboard.py", "tools/build_site.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_build_refuses_to_replace_a_folder_that_is_not_a_site(tmp_path):
    bs = _build_site_module()
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit, match="not a site built before"):
        bs.build(tmp_path, tmp_path / "cache")
    assert (tmp_path / "notes.txt").read_text() == "mine"
    with pytest.raises(SystemExit, match="is a file"):
        bs.build(tmp_path / "notes.txt", tmp_path / "cache")


def open_link(page, name: str):
    """Click the link ``name`` (it opens a new tab); the new tab once its page answered 200."""
    with page.context.expect_page() as opened:
        page.get_by_role("link", name=name, exact=True).click()
    tab = opened.value
    tab.wait_for_load_state()
    response = tab.evaluate("() => performance.getEntriesByType('navigation')[0].responseStatus")
    assert response == 200, f"{name}: {tab.url} answered {response}"
    return tab


def _shown_t(page) -> int:
    text = page.get_by_text(re.compile(r"^t = \d+$")).first.text_content()
    return int(text.split("=")[1])


def _figure_data(page) -> str:
    return page.locator(".js-plotly-plot").evaluate_all(
        "els => JSON.stringify(els.map(el => el.data.map(d => [d.x, d.y])))")


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not SITE_TESTS, reason="the static site's tests run with `make site-test`")
@pytest.mark.timeout(900)
def test_the_dashboard_steps_and_plays_in_the_static_site(site_browser, site_url, tmp_path):
    context = site_browser.new_context(viewport={"width": 1400, "height": 900})
    outside: list[str] = []
    _guard(context, outside)
    page = context.new_page()
    page_errors: list[str] = []
    page.on("pageerror", lambda e: page_errors.append(str(e)))
    page.set_default_timeout(120_000)
    t0 = time.monotonic()
    page.goto(f"{site_url}/dashboard/index.html?{SMALL}")
    page.locator(".js-plotly-plot .plot-container.plotly").first.wait_for(timeout=300_000)
    first_render = time.monotonic() - t0
    page.get_by_text("t = 0", exact=True).wait_for()
    page.screenshot(path=str(tmp_path / "dashboard_first.png"))
    print(f"\ndashboard: first figure {first_render:.1f} s after the page was opened")
    assert "m=5" in page.url  # the link's settings were read
    page.get_by_text(re.compile("This dashboard runs in your browser")).wait_for()

    before = _figure_data(page)
    page.get_by_role("button", name="Step", exact=True).click()
    page.get_by_text("t = 1", exact=True).wait_for()
    page.wait_for_function("() => /[?&]t=1(&|$)/.test(location.search)")
    deadline = time.monotonic() + 60
    while _figure_data(page) == before and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    stepped = _figure_data(page)
    assert stepped != before, "Step did not change the figures"

    page.get_by_role("button", name="Play", exact=True).click()
    deadline = time.monotonic() + 120
    while _shown_t(page) < 10 and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    page.get_by_role("button", name="Pause", exact=True).click()
    stopped, shown = -1, _shown_t(page)
    while shown != stopped:  # the page may still be showing the frames sent before the pause
        page.wait_for_timeout(1500)
        stopped, shown = shown, _shown_t(page)
    assert stopped >= 10, f"Play reached only t = {stopped}"
    page.wait_for_function(f"() => /[?&]t={stopped}(&|$)/.test(location.search)")
    assert _figure_data(page) != stepped, "Play did not change the figures"

    page.get_by_role("button", name="Back", exact=True).click()
    page.get_by_text(f"t = {stopped - 1}", exact=True).wait_for()
    page.screenshot(path=str(tmp_path / "dashboard_played.png"))
    print(f"dashboard: Step, Play to t = {stopped}, Back; screenshots in {tmp_path}")

    # the links of the page's "Learn more": the lesson opens in the site's JupyterLite, the docs
    # section in the site's copy of docs/algorithms.md
    lesson, docs = open_link(page, "Lesson 1 · Frequent Directions"), open_link(
        page, "docs/algorithms.md § 1. Frequent Directions")
    assert lesson.url.startswith(f"{site_url}/lab/index.html?path=lessons/01_frequent_directions")
    lesson.locator(".jp-Notebook .jp-Cell").first.wait_for()
    lesson.get_by_role("tab", name=re.compile("01_frequent_directions.ipynb")).wait_for()
    lesson.screenshot(path=str(tmp_path / "lesson_from_dashboard.png"))
    assert docs.url == f"{site_url}/docs/algorithms.html#1-frequent-directions-fd"
    assert docs.locator('[id="1-frequent-directions-fd"]').is_visible()
    lesson.close()
    docs.close()
    print(f"dashboard: the lesson and docs links open {lesson.url} and {docs.url}")

    # uploads: parsed in the worker without a thread; a bad file is explained, a good one streams
    upload = page.locator('input[type="file"]')
    upload.set_input_files(files=[{"name": "bad.csv", "mimeType": "text/csv",
                                   "buffer": b"1,2,3\n4,five,6\n"}])
    page.get_by_text("Upload refused: bad.csv: line 2, column 2 is not a number ('five')").wait_for()
    rows = "\n".join(",".join(str((i * j) % 7 - 3) for j in range(6)) for i in range(40))
    upload.set_input_files(files=[{"name": "mine.csv", "mimeType": "text/csv", "buffer": rows.encode()}])
    # the transport's line (the live region below repeats it inside a longer sentence)
    page.get_by_text(re.compile(r"^t = \d+ of 40 rows$")).wait_for()
    page.wait_for_function("() => /[?&]dataset=your\\+upload(&|$)/.test(location.search)")
    assert outside == [], f"requests to hosts other than 127.0.0.1: {sorted(set(outside))[:5]}"
    assert page_errors == [], page_errors
    context.close()
