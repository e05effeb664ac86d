"""The plotly.js the dashboard serves: the "cartesian" partial bundle when it is installed.

Panel serves plotly.js's whole bundle (4.8 MB: every trace type, maps and 3-D included),
and a first visit spends more time starting it than on anything else in the page (about
a second of the browser's CPU before the first figure; benchmarks/README.md). The pages
draw scatter, bar and heatmap traces only, all in npm's ``plotly.js-cartesian-dist-min``
(1.3 MB) of the same plotly.js version. ``make`` fetches it once into the environment
(:func:`main`: from the npm registry, ``npm_config_registry``
honoured, the tarball's sha256 pinned, the file written atomically), and :func:`routes`
serves it at the address of Panel's bundle, so Panel's own Plotly pane takes it too.
Without it, or when Panel's plotly.js is another version, Panel's whole bundle is served
as before: nothing else changes.

>>> route = routes(installed=Path("/nowhere/plotly.min.js"))
>>> route
[]
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

import panel as pn
from tornado.web import StaticFileHandler

from ..atomic import write_atomic

__all__ = ["VERSION", "installed_path", "panel_plotly_version", "routes", "fetch", "main", "BundleError"]

PACKAGE = "plotly.js-cartesian-dist-min"
VERSION = "3.1.0"
"""The plotly.js version of the partial bundle: Panel's (1.9) own, or the bundle is not served."""
TARBALL_SHA256 = "302ec08495529f7d1ac815b97cfe06ee24eaca48d07e1f3edf6d80894642a8cc"
FILE_SHA256 = "c462b40a1a542e16c3533f97d39fbbb91af4f5267f3cbf23bd70d785efc44c38"
MEMBER = "package/plotly-cartesian.min.js"
MAX_BYTES = 8 * 2**20
"""The most read from the registry or from the tarball (the bundle is 1.3 MB)."""
PANEL_PLOTLY = Path(pn.__file__).parent / "dist" / "bundled" / "plotlyplot"


class BundleError(ValueError):
    """The bundle could not be fetched or is not the pinned one: the message says which."""


def installed_path() -> Path:
    """Where ``fetch`` puts the bundle: this environment's ``share/sketch-explorer``."""
    return Path(sys.prefix) / "share" / "sketch-explorer" / f"plotly-cartesian-{VERSION}.min.js"


def panel_plotly_version() -> str | None:
    """The version of the plotly.js Panel serves (its file's name), None if not found."""
    names = sorted(PANEL_PLOTLY.glob("plotly-*.min.js")) if PANEL_PLOTLY.is_dir() else []
    found = [re.fullmatch(r"plotly-(\d+\.\d+\.\d+)\.min\.js", path.name) for path in names]
    versions = [match.group(1) for match in found if match]
    return versions[0] if len(versions) == 1 else None


def routes(installed: Path | None = None) -> list[tuple]:
    """The Tornado route serving the partial bundle at Panel's plotly.js address, when
    ``installed`` (default :func:`installed_path`) holds the pinned file and Panel's
    plotly.js is :data:`VERSION`; else none (Panel serves its whole bundle)."""
    path = installed_path() if installed is None else installed
    if panel_plotly_version() != VERSION or not path.is_file() or path.stat().st_size > MAX_BYTES:
        return []
    if hashlib.sha256(path.read_bytes()).hexdigest() != FILE_SHA256:
        return []
    address = r"/static/extensions/panel/bundled/plotlyplot/plotly-" + re.escape(VERSION) + r"\.min\.js"
    return [(f"({address})", _Bundle, {"path": str(path.parent), "file": path.name})]


class _Bundle(StaticFileHandler):
    """Panel's plotly.js address answered with the partial bundle (caching as Tornado's
    static files: ETag and Last-Modified)."""

    def initialize(self, path: str, file: str) -> None:
        super().initialize(path)
        self._file = file

    def get(self, _address: str, include_body: bool = True):
        return super().get(self._file, include_body)


def tarball_url() -> str:
    """The npm registry's tarball of :data:`PACKAGE` at :data:`VERSION`."""
    registry = os.environ.get("npm_config_registry") or "https://registry.npmjs.org/"
    return f"{registry.rstrip('/')}/{PACKAGE}/-/{PACKAGE}-{VERSION}.tgz"


def fetch(url: str | None = None, target: Path | None = None) -> Path:
    """Download the tarball (``url``, default :func:`tarball_url`), check its pinned sha256,
    and write its bundle to ``target`` (default :func:`installed_path`) atomically
    (:func:`~explorer.atomic.write_atomic`). Anything else raises
    :class:`BundleError` and writes nothing."""
    import io  # only here: serving the dashboard needs none of these
    import tarfile
    import urllib.request

    url = url or tarball_url()
    target = installed_path() if target is None else target
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            tarball = response.read(MAX_BYTES + 1)
    except OSError as error:
        raise BundleError(f"could not download {url}: {error}") from None
    if len(tarball) > MAX_BYTES:
        raise BundleError(f"{url} is larger than {MAX_BYTES} bytes: not the pinned tarball")
    if (digest := hashlib.sha256(tarball).hexdigest()) != TARBALL_SHA256:
        raise BundleError(f"{url} has sha256 {digest}, pinned {TARBALL_SHA256}")
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        bundle = archive.extractfile(MEMBER).read()  # the pinned tarball: known to hold it
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, bundle)
    os.chmod(target, 0o644)  # readable as Panel's own files are
    return target


def main() -> int:
    """Fetch the bundle (``make`` runs this once per environment); 0 when done, else 1
    with the reason on stderr (the dashboard then serves Panel's whole plotly.js)."""
    try:
        print(f"plotly.js partial bundle: {fetch()}")
    except BundleError as error:
        print(f"explorer.dashboard.bundle: {error}; the dashboard serves Panel's whole plotly.js",
              file=sys.stderr)
        return 1
    return 0
