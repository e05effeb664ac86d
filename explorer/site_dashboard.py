"""The dashboard in the static site: ``explorer serve``'s Panel app run by Pyodide in a web worker.

``dashboard/index.html`` is the page ``panel convert --to pyodide-worker --skip-embed`` writes
for the app, with every URL pointed at the site's own files: Bokeh's JavaScript (from Bokeh's
wheel) in ``dashboard/bokeh/``, the files of Panel's ``dist/`` the page uses (from Panel's
wheel) in ``dashboard/panel/<version>/dist/``. Its worker (``dashboard/worker.js``, written
here) loads the site's one Pyodide (``static/pyodide/``) and, from the site's lock, the
packages of :data:`PACKAGES`; it sets ``PANEL_CDN_ROOT`` to ``dashboard/panel/`` before
Panel is imported (else Panel's models ask its CDN for their stylesheets) and gives
``pyodide.ffi`` the ``jsnull`` that Panel expects from Pyodide >= 0.28 (earlier Pyodide
converts JavaScript's null to None, which is what the shim says).

Panel and Bokeh go into Pyodide as slimmed copies of their pinned wheels (:func:`slim_wheel`):
the Python code without the JavaScript the page loads itself. Pure stand-ins
(:data:`STAND_INS`) replace compiled wheels: MarkupSafe (Jinja2 imports it) and tornado (the
dashboard's link routes import it) both fall back to pure Python without their C extension.
Panel's ``nh3`` (an HTML sanitizer in Rust, which Panel applies to the text parameters of its
``ReactiveHTML`` components) has no wasm wheel: :data:`NH3_STAND_IN` escapes all markup instead,
stricter than nh3 (no tag passes; the text shows as written).

Example (``tools/build_site.py`` calls it after the lessons)::

    figures = build_dashboard(site, pypi_dir, work)   # site/dashboard/...

Reference: Panel's "Converting Panel applications" guide (``panel convert``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

__all__ = ["PACKAGES", "PURE", "SLIM", "KEEP", "STAND_INS", "NH3_STAND_IN", "APP_SCRIPT", "WORKER_JS",
           "build_dashboard", "slim_wheel", "source_wheel", "local_urls"]

PANEL_VERSION, BOKEH_VERSION = "1.9.4", "3.9.2"
PURE = {  # distribution -> (import names, dependencies), for the site's pyodide-lock.json
    "panel": (["panel"], ["bokeh", "param", "pyviz-comms", "markdown", "markdown-it-py",
                          "mdit-py-plugins", "linkify-it-py", "packaging", "pandas", "tqdm",
                          "typing-extensions", "narwhals", "nh3"]),
    "bokeh": (["bokeh"], ["contourpy", "jinja2", "numpy", "packaging", "pandas", "pillow",
                          "pyyaml", "xyzservices", "narwhals"]),
    "param": (["param"], []),
    "pyviz-comms": (["pyviz_comms"], ["param"]),
    "markdown": (["markdown"], []),
    "markdown-it-py": (["markdown_it"], ["mdurl"]),
    "mdit-py-plugins": (["mdit_py_plugins"], ["markdown-it-py"]),
    "mdurl": (["mdurl"], []),
    "linkify-it-py": (["linkify_it"], ["uc-micro-py"]),
    "uc-micro-py": (["uc_micro"], []),
    "jinja2": (["jinja2"], ["markupsafe"]),
    "markupsafe": (["markupsafe"], []),
    "typing-extensions": (["typing_extensions"], []),
    "xyzservices": (["xyzservices"], []),
    "tornado": (["tornado"], ["ssl"]),  # tornado.netutil imports ssl
    "nh3": (["nh3"], []),
}
# (distribution, version, sdist sha256, package folder in the sdist): whole package, no tests
STAND_INS = (
    ("MarkupSafe", "3.0.3", "722695808f4b6457b320fdc131280796bdceb04ab50fe1795cd540799ebe1698",
     "src/markupsafe"),
    ("tornado", "6.5.2", "ab53c8f9a0fa351e2c0741284e06c7a45da86afb544133201c5cc8578eb076a0",
     "tornado"),
)
NH3_STAND_IN = ("0+escape", '''"""Stand-in for nh3 in the browser: no markup passes, all of it is escaped (shown as text)."""

import html

__all__ = ["clean", "clean_text", "is_html"]


def clean(html_text, **kwargs):
    """``html_text`` with every ``&``, ``<``, ``>`` and quote escaped: nothing is markup."""
    return html.escape(html_text, quote=True)


def clean_text(html_text):
    return html.escape(html_text, quote=True)


def is_html(html_text):
    return "<" in html_text or "&" in html_text
''')
"""nh3's version here and its ``nh3/__init__.py``, for :func:`source_wheel`."""
PACKAGES = ("sketch-explorer", "panel", "tornado")
"""What the worker loads (their dependencies follow from the site's lock)."""
# Kept in the slimmed Panel wheel although under a dropped folder: Panel's ``bundled_files``
# points a model's resource at ``PANEL_CDN_ROOT`` (the site's copy) only when the file is in
# its package, else at the public CDN (the Plotly pane's maplibre stylesheet, 64 KiB).
KEEP = ("panel/dist/bundled/plotlyplot/maplibre-gl@4.4.1/dist/maplibre-gl.css",)
# Of Panel's wheel: the Python package without the JavaScript the page loads from the site
SLIM = {"panel": ("panel/dist/bundled/", "panel/dist/lib/", "panel/dist/dts/", "panel/tests/",
                  "panel/dist/panel.js", "panel/dist/panel.json", ".map"),
        "bokeh": ("bokeh/server/static/", ".map")}
# Of Panel's dist/: what the page and the dashboard's models load (no source maps)
DIST_FILES = ("panel.min.js", "css/", "images/", "assets/", "bundled/theme/", "bundled/bootstraptemplate/",
              "bundled/bootstrap5/css/bootstrap.min.css",
              "bundled/bootstrap5/js/bootstrap.bundle.min.js",
              "bundled/plotlyplot/plotly-3.1.0.min.js", "bundled/plotlyplot/maplibre-gl@4.4.1/",
              "bundled/reactiveesm/")
BOKEH_JS = ("bokeh", "bokeh-gl", "bokeh-widgets", "bokeh-tables", "bokeh-mathjax")
APP_SCRIPT = """from explorer.dashboard.app import create_app

create_app().servable(title="Sketch Explorer")
"""
WORKER_JS = r"""// The dashboard's Pyodide worker: the site's Pyodide, its packages, then the Panel app.
importScripts("../static/pyodide/pyodide.js");
const PACKAGES = %(packages)s;

function sendPatch(patch, buffers, msg_id) {
  self.postMessage({type: 'patch', patch: patch, buffers: buffers});
}

async function startApplication() {
  self.postMessage({type: 'status', msg: 'Loading Pyodide'});
  self.pyodide = await loadPyodide({indexURL: new URL('../static/pyodide/', self.location.href).href});
  self.pyodide.globals.set("sendPatch", sendPatch);
  self.postMessage({type: 'status', msg: 'Loading numpy, scipy, Panel and the explorer'});
  await self.pyodide.loadPackage(PACKAGES);
  self.postMessage({type: 'status', msg: 'Starting the dashboard'});
  self.pyodide.globals.set("PANEL_CDN_ROOT", new URL('./panel/', self.location.href).href);
  try {
    const [docs_json, render_items, root_ids] = await self.pyodide.runPythonAsync(`
import os
os.environ["PANEL_CDN_ROOT"] = PANEL_CDN_ROOT  # before Panel is imported
import pyodide.ffi
if not hasattr(pyodide.ffi, "jsnull"):  # Pyodide < 0.28 converts JavaScript's null to None
    pyodide.ffi.jsnull = None
from panel.io.pyodide import init_doc, write_doc
init_doc()
%(app)s
result = await write_doc()
# The page renders this snapshot: the events held before it are in it already. Sent again
# once linked, they would name roots added and dropped meanwhile, which Bokeh refuses.
from panel.io.state import state
state.curdoc.unhold()
state.curdoc.hold()
result`);
    self.postMessage({type: 'render', docs_json: docs_json, render_items: render_items,
                      root_ids: root_ids});
  } catch (e) {
    const lines = `${e}`.split('\n');
    self.postMessage({type: 'status', msg: 'The dashboard could not start: ' + lines[lines.length - 2]});
    throw e;
  }
}

self.onmessage = async (event) => {
  const msg = event.data;
  if (msg.type === 'rendered') {
    self.pyodide.runPythonAsync(`
from panel.io.state import state
from panel.io.pyodide import _link_docs_worker
_link_docs_worker(state.curdoc, sendPatch, setter='js')`);
  } else if (msg.type === 'patch') {
    self.pyodide.globals.set('patch', msg.patch);
    await self.pyodide.runPythonAsync(`
from panel.io.pyodide import _convert_json_patch
state.curdoc.apply_json_patch(_convert_json_patch(patch), setter='js')`);
    self.postMessage({type: 'idle'});
  } else if (msg.type === 'location') {
    self.pyodide.globals.set('location', msg.location);
    self.pyodide.runPythonAsync(`
import json
from panel.io.state import state
from panel.util import edit_readonly
if state.location:
    loc_data = json.loads(location)
    with edit_readonly(state.location):
        state.location.param.update({k: v for k, v in loc_data.items() if k in state.location.param})`);
  }
};

startApplication();
"""


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(path: Path, files: dict[str, bytes]) -> Path:
    """``files`` as the wheel ``path`` (every member dated 1980-01-01: reproducible bytes)."""
    record = next(n for n in files if n.endswith(".dist-info/RECORD"))
    files[record] = ("\n".join([_record_line(n, d) for n, d in sorted(files.items())
                                if n != record] + [f"{record},,"]) + "\n").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, d in sorted(files.items()):
            zf.writestr(zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0)), d,
                        compress_type=zipfile.ZIP_DEFLATED)  # a ZipInfo alone means stored
    return path


def source_wheel(name: str, version: str, source: str, out_dir: Path) -> Path:
    """A py3-none-any wheel of the one module ``name/__init__.py`` holding ``source``.

    Example: ``source_wheel("nh3", *NH3_STAND_IN, out_dir)``.
    """
    dist = f"{name}-{version}.dist-info"
    return _write_wheel(out_dir / f"{name}-{version}-py3-none-any.whl", {
        f"{name}/__init__.py": source.encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: build_site\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
        f"{dist}/RECORD": b""})


def slim_wheel(wheel: Path, out_dir: Path, drop: tuple[str, ...]) -> Path:
    """A copy of ``wheel`` without the members that start or end with an entry of ``drop``
    (those of :data:`KEEP` stay).

    Its RECORD lists what is left; every member is dated 1980-01-01, so the same wheel gives
    the same bytes. Example: ``slim_wheel(panel_whl, out, ("panel/dist/bundled/", ".map"))``.
    """
    def dropped(name: str) -> bool:
        return name not in KEEP and any(name.startswith(d) or name.endswith(d) for d in drop)

    with zipfile.ZipFile(wheel) as zf:
        files = {n: zf.read(n) for n in zf.namelist() if not n.endswith("/") and not dropped(n)}
    return _write_wheel(out_dir / wheel.name, files)


def _extract(wheel: Path, prefix: str, keep: tuple[str, ...], dest: Path) -> int:
    """The members ``prefix + k...`` of ``wheel`` for ``k`` in ``keep``, into ``dest``; bytes."""
    size = 0
    with zipfile.ZipFile(wheel) as zf:
        for n in sorted(zf.namelist()):
            rest = n[len(prefix):]
            if n.startswith(prefix) and not n.endswith(("/", ".map")) and rest.startswith(keep):
                (dest / rest).parent.mkdir(parents=True, exist_ok=True)
                (dest / rest).write_bytes(data := zf.read(n))
                size += len(data)
    return size


def local_urls(page: str) -> str:
    """``page`` with Panel's and Bokeh's CDN URLs pointed at the site's copies, and its
    random element ids replaced by ids derived from their order (a reproducible page).

    >>> local_urls('<script src="https://cdn.bokeh.org/bokeh/release/bokeh-gl-3.9.2.min.js">')
    '<script src="bokeh/bokeh-gl-3.9.2.min.js">'
    """
    page = page.replace("https://cdn.holoviz.org/panel/", "panel/")
    page = page.replace("https://cdn.bokeh.org/bokeh/release/", "bokeh/")
    ids: dict[str, str] = {}
    pattern = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    return pattern.sub(lambda m: ids.setdefault(
        m.group(0), str(uuid.uuid5(uuid.NAMESPACE_URL, f"sketch-explorer-{len(ids)}"))), page)


def _converted_page(work: Path) -> str:
    """The page ``panel convert`` writes for :data:`APP_SCRIPT` (its worker is replaced)."""
    work.mkdir(parents=True, exist_ok=True)
    script = work / "dashboard.py"
    script.write_text(APP_SCRIPT)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "BOKEH_LOG_LEVEL": "error"}
    subprocess.run([sys.executable, "-m", "panel", "convert", script, "--to", "pyodide-worker",
                    "--skip-embed", "--title", "Sketch Explorer", "--out", work / "out"],
                   check=True, env=env, cwd=work, capture_output=True)
    page = (work / "out" / "dashboard.html").read_text()
    return page.replace('new Worker("./dashboard.js")', 'new Worker("./worker.js")')


def build_dashboard(site: Path, pypi_dir: Path, work: Path) -> dict:
    """Write ``site/dashboard/``: the page, its worker, Bokeh's JS and Panel's dist files.

    ``pypi_dir`` holds the pinned (hash-checked) Panel and Bokeh wheels. Returns the
    dashboard's size in bytes (``size``). The packages go into the site's Pyodide folder
    separately (``slim_wheel``, the lock); this writes only what the page itself loads.
    """
    out = site / "dashboard"
    out.mkdir(parents=True)
    panel = next(pypi_dir.glob(f"panel-{PANEL_VERSION}-*.whl"))
    bokeh = next(pypi_dir.glob(f"bokeh-{BOKEH_VERSION}-*.whl"))
    dist = out / "panel" / PANEL_VERSION / "dist"
    _extract(panel, "panel/dist/", DIST_FILES, dist)
    js = out / "bokeh"
    _extract(bokeh, "bokeh/server/static/js/", tuple(f"{n}.min.js" for n in BOKEH_JS), js)
    for name in BOKEH_JS:  # the names the page asks for carry the version
        (js / f"{name}.min.js").rename(js / f"{name}-{BOKEH_VERSION}.min.js")
    (out / "index.html").write_text(local_urls(_converted_page(work)))
    _extract(panel, "panel/dist/images/", ("favicon.ico",), out)  # the page's ./favicon.ico
    (out / "worker.js").write_text(WORKER_JS % {"packages": list(PACKAGES),
                                                "app": APP_SCRIPT.strip()})
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {"size": size}
