"""The lessons and reproductions as a static JupyterLite site (tools/build_site.py), in chromium.

The site is built once per set of inputs (the build script, its pins, the package and the
lessons) into ``.cache/site/test-<hash>``, served from 127.0.0.1 by a threaded
``http.server``, and each lesson and each reproduction of a paper that the site carries
(notebooks/, ``build_site.REPRODUCTIONS``) is opened in JupyterLab, run with Run All, and checked: every
code cell ran (an execution count, no error output), every plotly figure is drawn, and no
request left 127.0.0.1 (each one is aborted and counted; chromium also resolves no other
host). The outputs of the cells nbval checks (``NBVAL_CHECK_OUTPUT``) must equal the stored
ones, which CPython printed: the lessons print facts with margins, so another Python, numpy,
LAPACK and a 32-bit ``intp`` leave them unchanged. The kernel-ready and Run All times are
printed for benchmarks/README.md.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Every lesson runs every cell in Pyodide (on wasm32 np.intp is 32-bit: bincount and repeat
# counts are cast to it, in lesson 01 and explorer.fm).
LESSONS = sorted(path.stem for path in (ROOT / "lessons").glob("0*.ipynb"))

# The browser tests need the package registries (to build the site) and take about a minute
# per lesson: `make test` and `make site-test` run them (EXPLORER_SITE_TESTS=1); a plain
# pytest run leaves them out.
SITE_TESTS = os.environ.get("EXPLORER_SITE_TESTS") == "1"


def _build_site_module():
    spec = importlib.util.spec_from_file_location("build_site", ROOT / "tools" / "build_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_pyodide_file_that_differs_from_upstream_stops_the_build():
    bs = _build_site_module()
    lock = {"packages": {"numpy": {"file_name": "numpy-2.0.2-x.whl", "depends": [],
                                   "sha256": hashlib.sha256(b"upstream").hexdigest()}}}
    core = {"pyodide.asm.wasm": b"core"}
    good = {"numpy-2.0.2-x.whl": b"upstream", "pyodide.asm.wasm": b"core"}
    assert set(bs.verified_pyodide(lock, core, good, ["numpy"])) == set(good)
    with pytest.raises(SystemExit, match="numpy-2.0.2-x.whl: sha256"):
        bs.verified_pyodide(lock, core, {**good, "numpy-2.0.2-x.whl": b"other"}, ["numpy"])
    with pytest.raises(SystemExit, match="pyodide.asm.wasm: differs from npm"):
        bs.verified_pyodide(lock, core, {**good, "pyodide.asm.wasm": b"x"}, ["numpy"])


def test_a_cdn_url_in_the_site_stops_the_build(tmp_path):
    bs = _build_site_module()
    (tmp_path / "a.js").write_text('x="https://cdn.jsdelivr.net/pyodide/v0.27.6/full/pyodide.js"')
    bs.check_no_cdn(tmp_path)  # a known default the site's settings replace
    (tmp_path / "b.js").write_text('y="https://cdn.jsdelivr.net/npm/plotly.js@2/dist/plotly.js"')
    with pytest.raises(SystemExit, match="b.js: https://cdn.jsdelivr.net/npm/plotly.js"):
        bs.check_no_cdn(tmp_path)


REPRODUCTIONS = _build_site_module().REPRODUCTIONS


def test_every_reproduction_is_in_the_site_or_left_out_with_a_reason():
    bs = _build_site_module()
    notebooks = {path.stem for path in (ROOT / "notebooks").glob("*.ipynb")}
    assert notebooks == set(bs.REPRODUCTIONS) | set(bs.LEFT_OUT)
    assert not set(bs.REPRODUCTIONS) & set(bs.LEFT_OUT) and all(bs.LEFT_OUT.values())


def test_a_data_wheel_holds_only_the_named_files_compressed(tmp_path):
    import zipfile

    bs = _build_site_module()
    src = tmp_path / "src"
    src.mkdir()
    wheel = src / "mglearn-0.2.0-py2.py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("mglearn/__init__.py", "import matplotlib\n")
        zf.writestr("mglearn/data/adult.data", "39, State-gov\n" * 2000)
        zf.writestr("mglearn/plots.py", "x = 1\n")
    data = bs.data_wheel(wheel, ("mglearn/data/adult.data",), tmp_path)
    with zipfile.ZipFile(data) as zf:
        names = set(zf.namelist())
        assert "matplotlib" not in zf.read("mglearn/__init__.py").decode()
        assert zf.getinfo("mglearn/data/adult.data").compress_type == zipfile.ZIP_DEFLATED
    assert data.name == "mglearn-0.2.0-py3-none-any.whl" and data.stat().st_size < 2000
    assert names == {"mglearn/__init__.py", "mglearn/data/adult.data",
                     *(f"mglearn-0.2.0.dist-info/{n}" for n in ("METADATA", "WHEEL", "RECORD"))}
    assert bs.data_wheel(wheel, ("mglearn/data/adult.data",), tmp_path).read_bytes() == data.read_bytes()
    with pytest.raises(SystemExit, match="has no .'mglearn/data/mnist.csv'"):
        bs.data_wheel(wheel, ("mglearn/data/mnist.csv",), tmp_path)


def _inputs_hash() -> str:
    h = hashlib.sha256()
    files = [ROOT / "tools" / "build_site.py", ROOT / "tools" / "site_requirements.txt",
             ROOT / "pyproject.toml", *sorted((ROOT / "explorer").rglob("*.py")),
             *sorted((ROOT / "lessons").glob("*.ipynb")), *sorted((ROOT / "notebooks").glob("*.ipynb")),
             *sorted((ROOT / "docs").glob("*.md"))]
    for f in files:
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


@pytest.fixture(scope="module")
def site_dir():
    cache = ROOT / ".cache" / "site"
    out = cache / f"test-{_inputs_hash()}"
    if not (out / ".complete").exists():
        build_site = _build_site_module()
        for old in cache.glob("test-*"):
            build_site.shutil.rmtree(old, ignore_errors=True)
        figures = build_site.build(out, cache)
        (out / ".complete").write_text(json.dumps(figures))
    return out


class _Quiet(SimpleHTTPRequestHandler):
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm",
                      ".mjs": "text/javascript", ".js": "text/javascript"}

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site_url(site_dir):
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site_dir)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def site_browser(browser_type, browser_type_launch_args):
    """Chromium (tests/conftest.py's launch options) in which no host but 127.0.0.1 resolves:
    a request that the route below missed fails anyway."""
    args = [*browser_type_launch_args.get("args", []),
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
    browser = browser_type.launch(**{**browser_type_launch_args, "args": args})
    yield browser
    browser.close()


def _guard(context, outside: list[str]):
    """Abort and count every request not to 127.0.0.1; expose the app for the test."""

    def handle(route):
        url = route.request.url
        host = urlparse(url).hostname
        if url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            if url.endswith("jupyter-lite.json"):
                # The test reads the notebook model through window.jupyterapp.
                response = route.fetch()
                config = response.json()
                config.setdefault("jupyter-config-data", {})["exposeAppInBrowser"] = True
                route.fulfill(response=response, body=json.dumps(config))
            else:
                route.continue_()
        else:
            outside.append(url)
            route.abort()

    context.route("**/*", handle)
    context.on("request", lambda r: urlparse(r.url).hostname not in (None, "127.0.0.1")
               and not r.url.startswith(("data:", "blob:")) and outside.append(r.url))


KERNEL_STARTED_JS = """() => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  const context = panel && panel.sessionContext;
  return !!(context && context.isReady && context.session && context.session.kernel);
}"""

# A kernel_info reply comes once Pyodide and every package are loaded; then one cell.
KERNEL_READY_JS = """async () => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  await kernel.info;
  const future = kernel.requestExecute({code: 'import explorer'});
  const reply = await future.done;
  return reply.content.status;
}"""

# Run All resolves when the last cell has run, or when a cell failed (the rest do not run).
RUN_ALL_JS = """async () => {
  return await window.jupyterapp.commands.execute('notebook:run-all-cells');
}"""

# Checked cells whose output may legitimately differ in Pyodide, with the reason; the test
# fails if one of these starts to agree (the entry is stale) or another cell differs.
BROWSER_DIFFERS: dict[tuple[str, int], str] = {}

# Every code cell's execution count, error outputs, plotly outputs and printed text (stdout,
# stderr, text/plain results), from the notebook model.
CELLS_JS = r"""() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel.sessionContext.session.kernel;
  const cells = [];
  panel.content.widgets.forEach((cell, i) => {
    if (cell.model.type !== 'code') return;
    const outs = cell.model.outputs.toJSON();
    cells.push({
      index: i,
      count: cell.model.executionCount,
      source: cell.model.sharedModel.getSource().split('\n')[0].slice(0, 80),
      errors: outs.filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue
        + ' | ' + (o.traceback || []).slice(-3).join(' | ').replace(/\u001b\[[0-9;]*m/g, '')),
      plotly: outs.filter(o => o.data && o.data['application/vnd.plotly.v1+json']).length,
      checked: cell.model.sharedModel.getSource().includes('NBVAL_CHECK_OUTPUT'),
      text: outs.map(o => o.output_type === 'stream' ? [o.name, [].concat(o.text).join('')]
        : (o.data && o.data['text/plain'] !== undefined)
          ? ['text/plain', [].concat(o.data['text/plain']).join('')] : null).filter(x => x),
    });
  });
  return {cells, status: kernel.status};
}"""

DRAWN_JS = """async (index) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cell = panel.content.widgets[index];
  await panel.content.scrollToItem(index, 'start');
  for (let k = 0; k < 100; k++) {
    const n = cell.node.querySelectorAll('.js-plotly-plot .main-svg').length;
    if (n > 0) return n;
    await new Promise(r => setTimeout(r, 100));
  }
  return 0;
}"""


def run_lesson(page, base: str, lesson: str, folder: str = "lessons") -> dict:
    """Open a lesson (or a notebook of the site's ``folder``), wait for the kernel, Run All;
    the cells and the two times."""
    t0 = time.monotonic()
    page.goto(f"{base}/lab/index.html?path={folder}/{lesson}.ipynb")
    page.wait_for_function(KERNEL_STARTED_JS, timeout=240_000, polling=500)
    assert page.evaluate(KERNEL_READY_JS) == "ok", "the kernel could not import explorer"
    kernel_s = time.monotonic() - t0
    t1 = time.monotonic()
    result = {"run_all": page.evaluate(RUN_ALL_JS)}
    page.wait_for_function("() => (%s)().status === 'idle'" % CELLS_JS, timeout=60_000)
    run_s = time.monotonic() - t1
    result.update(page.evaluate(CELLS_JS))
    result.update(kernel_s=kernel_s, run_s=run_s)
    result["drawn"] = {c["index"]: page.evaluate(DRAWN_JS, c["index"])
                       for c in result["cells"] if c["plotly"]}
    return result


def printed_text(outputs) -> list[list[str]]:
    """A cell's printed outputs as nbval compares them: ``[kind, text]`` with consecutive
    chunks of one stream joined (the kernel may flush a print in several pieces)."""
    merged: list[list[str]] = []
    for kind, text in outputs:
        if merged and kind == merged[-1][0] and kind in ("stdout", "stderr"):
            merged[-1][1] += text
        else:
            merged.append([kind, text])
    return merged


def stored_checked_outputs(lesson: str, folder: str = "lessons") -> dict[int, list[list[str]]]:
    """The checked code cells of a stored lesson (or reproduction, ``folder="notebooks"``):
    code-cell position -> its printed outputs."""
    nb = json.loads((ROOT / folder / f"{lesson}.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    stored = {}
    for k, cell in enumerate(code):
        if "NBVAL_CHECK_OUTPUT" not in "".join(cell["source"]):
            continue
        outs = []
        for o in cell["outputs"]:
            if o["output_type"] == "stream":
                outs.append([o["name"], "".join(o["text"])])
            elif "text/plain" in o.get("data", {}):
                outs.append(["text/plain", "".join(o["data"]["text/plain"])])
        stored[k] = printed_text(outs)
    return stored


def checked_differences(lesson: str, cells: list[dict], folder: str = "lessons") -> dict[int, tuple]:
    """Checked cells (by code-cell position) whose browser output differs from the stored one."""
    stored = stored_checked_outputs(lesson, folder)
    browser = {k: printed_text(c["text"]) for k, c in enumerate(cells) if c["checked"]}
    assert set(browser) == set(stored), "the page's checked cells are not the stored lesson's"
    return {k: (stored[k], browser[k]) for k in stored if stored[k] != browser[k]}


def test_printed_text_joins_a_stream_flushed_in_pieces():
    assert printed_text([["stdout", "a = 1"], ["stdout", "\n"], ["text/plain", "2"],
                         ["stdout", "b"]]) == [["stdout", "a = 1\n"], ["text/plain", "2"],
                                               ["stdout", "b"]]
    assert printed_text([["stdout", "x"], ["stderr", "y"]]) == [["stdout", "x"], ["stderr", "y"]]


def test_a_checked_output_that_differs_is_reported():
    lesson = LESSONS[0]
    stored = stored_checked_outputs(lesson)
    assert stored, f"{lesson} has no checked cell"
    n_code = max(stored) + 1
    cells = [{"checked": k in stored, "text": [list(x) for x in stored.get(k, [])]}
             for k in range(n_code)]
    assert checked_differences(lesson, cells) == {}
    first = min(stored)
    cells[first]["text"] = [["stdout", "something else\n"]]
    assert list(checked_differences(lesson, cells)) == [first]


def drag_slider(page, index: int) -> tuple[str, str]:
    """Drag the first slider of cell ``index`` 40 px right; its figure's title before and after.

    The lessons' sliders redraw through the kernel (ipywidgets' interactive_output) and the
    figure's title names the slider's value (lesson 01: "exact FD, m = 10: ...", lesson 07:
    "8 partitions ...").
    """
    page.evaluate("async (i) => { await window.jupyterapp.shell.currentWidget.content"
                  ".scrollToItem(i, 'start'); }", index)
    node = page.evaluate_handle(
        "(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].node", index).as_element()
    node.wait_for_selector(".js-plotly-plot .gtitle", timeout=60_000)
    before = node.query_selector(".js-plotly-plot .gtitle").text_content()
    handle = node.query_selector(".widget-slider .noUi-handle")
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] / 2, y)
    page.mouse.down()
    page.mouse.move(box["x"] + 40, y, steps=5)
    page.mouse.up()
    page.wait_for_function(
        """([i, before]) => { const t = window.jupyterapp.shell.currentWidget.content.widgets[i]
             .node.querySelector('.js-plotly-plot .gtitle');
           return t && t.textContent !== before; }""", arg=[index, before], timeout=120_000)
    return before, node.query_selector(".js-plotly-plot .gtitle").text_content()


# The sliders dragged after Run All: the first line of the cell that builds them, and how the
# figure's title starts before the drag (it must not start so after).
SLIDERS = {
    "01_frequent_directions": ("m_slider", "exact FD, m = 10:"),
    "07_sketching_past_one_machine": ("parts_slider", "8 partitions"),
}


def test_the_lessons_docs_anchors_become_jupyterlabs_heading_ids(tmp_path):
    """The site's copies of the lessons link to JupyterLab's ids of docs/algorithms.md's
    headings; a link to no heading stops the build."""
    bs = _build_site_module()
    assert bs.jupyterlab_anchors("## 3.4 `mu` and η\n### 2.1 Update") == {"34-mu-and-η": "3.4-mu-and-η",
                                                                         "21-update": "2.1-Update"}
    (tmp_path / "lessons").mkdir()
    docs = "../docs/algorithms.md"  # (kept apart from its anchors: test_docs checks links it finds)
    lesson = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": [f"see [docs]({docs}#21-update)"]}],
              "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "lessons" / "x.ipynb").write_text(json.dumps(lesson))
    bs.docs_beside_lessons(tmp_path)
    written = json.loads((tmp_path / "lessons" / "x.ipynb").read_text())
    assert written["cells"][0]["source"] == [f"see [docs]({docs}#2.1-Update)"]
    assert (tmp_path / "docs" / "algorithms.md").read_text() == (ROOT / "docs" / "algorithms.md").read_text()
    lesson["cells"][0]["source"] = [f"[gone]({docs}#99-no-such-section)"]
    (tmp_path / "lessons" / "x.ipynb").write_text(json.dumps(lesson))
    with pytest.raises(SystemExit, match="99-no-such-section"):
        bs.docs_beside_lessons(tmp_path)


@pytest.mark.browser
@pytest.mark.skipif(not SITE_TESTS, reason="the static site's tests run with `make site-test`")
@pytest.mark.timeout(600)
def test_a_lessons_docs_link_opens_the_section_in_the_static_site(site_browser, site_url):
    """In the site, Enter on a lesson's "docs § 2.1" link opens docs/algorithms.md rendered
    (not as text), scrolled to the heading "2.1 Update", with no request to another host."""
    context = site_browser.new_context(viewport={"width": 1400, "height": 900})
    outside: list[str] = []
    _guard(context, outside)
    page = context.new_page()
    page.goto(f"{site_url}/lab/index.html?path=lessons/01_frequent_directions.ipynb")
    link = page.get_by_role("link", name="docs § 2.1").first
    link.wait_for(timeout=240_000)
    link.focus()
    page.keyboard.press("Enter")
    heading = page.locator(".jp-MarkdownViewer").get_by_role("heading", name="2.1 Update", exact=True)
    heading.wait_for(timeout=60_000)
    page.wait_for_function("h => { const t = h.getBoundingClientRect().top; return t >= 0 && t < 300 }",
                           arg=heading.element_handle(), timeout=30_000)
    assert outside == [], sorted(set(outside))[:5]
    context.close()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not SITE_TESTS, reason="the static site's tests run with `make site-test`")
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_runs_in_the_static_site(site_browser, site_url, lesson, tmp_path):
    context, page, result, outside, page_errors = run_and_check(site_browser, site_url, lesson,
                                                                "lessons", tmp_path)
    if lesson in SLIDERS:
        first_cell, title = SLIDERS[lesson]
        index = next(c["index"] for c in result["cells"] if c["source"].startswith(first_cell))
        before, after = drag_slider(page, index)
        print(f"slider: {before!r} -> {after!r}")
        assert before.startswith(title) and not after.startswith(title)
        assert outside == [], sorted(set(outside))[:5]
    assert page_errors == [], page_errors
    context.close()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not SITE_TESTS, reason="the static site's tests run with `make site-test`")
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", REPRODUCTIONS)
def test_reproduction_runs_in_the_static_site(site_browser, site_url, name, tmp_path):
    context, _, _, _, page_errors = run_and_check(site_browser, site_url, name, "reproductions",
                                                  tmp_path)
    assert page_errors == [], page_errors
    context.close()


def run_and_check(site_browser, site_url, lesson: str, folder: str, tmp_path):
    """Run All in notebook ``folder/lesson`` of the site, and check it as the module says."""
    context = site_browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    outside: list[str] = []
    _guard(context, outside)
    page_errors: list[str] = []
    page.on("pageerror", lambda e: page_errors.append(str(e)))
    result = run_lesson(page, site_url, lesson, folder)
    page.screenshot(path=str(tmp_path / f"{lesson}.png"))  # kept by pytest for a look
    print(f"\n{lesson}: kernel ready {result['kernel_s']:.1f} s, Run All {result['run_s']:.1f} s, "
          f"{len(result['cells'])} code cells, {len(result['drawn'])} figure cells")
    failed = [(c["index"], c["source"], c["errors"]) for c in result["cells"] if c["errors"]]
    assert not failed, f"cells with an error in Pyodide: {failed}"
    assert all(c["count"] for c in result["cells"]), "a code cell did not run"
    assert result["drawn"], "the lesson drew no plotly figure"
    assert all(result["drawn"].values()), f"figures not drawn: {result['drawn']}"
    assert outside == [], f"requests to hosts other than 127.0.0.1: {sorted(set(outside))[:5]}"
    differ = checked_differences(lesson, result["cells"],
                                 "lessons" if folder == "lessons" else "notebooks")
    n_checked = sum(c["checked"] for c in result["cells"])
    print(f"{lesson}: {n_checked - len(differ)} of {n_checked} checked outputs as stored")
    expected = {k for (name, k) in BROWSER_DIFFERS if name == lesson}
    assert set(differ) == expected, (
        f"checked outputs that differ from CPython's (code cell: stored, browser): "
        f"{ {k: v for k, v in differ.items() if k not in expected} }; "
        f"listed as differing but now equal: {sorted(expected - set(differ))}")
    return context, page, result, outside, page_errors
