"""plotly.js's partial bundle (explorer.dashboard.bundle): served only when it is the
pinned file and Panel's plotly.js has its version; fetched only from the pinned tarball,
written atomically; the dashboard's own server answers Panel's plotly.js address with it."""

from __future__ import annotations

import hashlib
import io
import stat
import tarfile

import pytest
import requests
from test_dashboard_browser import server  # noqa: F401  (the module-scoped fixture)

from explorer.dashboard import bundle


def tarball(tmp_path, content: bytes = b"window.Plotly = {};", member: str = bundle.MEMBER):
    """A gzipped tarball holding ``content`` as ``member``, as a file:// URL and its sha256."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo(member)
        info.size = len(content)
        archive.addfile(info, io.BytesIO(content))
    path = tmp_path / "bundle.tgz"
    path.write_bytes(buffer.getvalue())
    return path.as_uri(), hashlib.sha256(buffer.getvalue()).hexdigest()


def test_a_route_only_for_the_pinned_file_of_panels_version(tmp_path, monkeypatch):
    path = tmp_path / "plotly.min.js"
    assert bundle.routes(installed=path) == []  # not installed
    path.write_bytes(b"not the bundle")
    assert bundle.routes(installed=path) == []  # another file
    monkeypatch.setattr(bundle, "FILE_SHA256", hashlib.sha256(b"not the bundle").hexdigest())
    monkeypatch.setattr(bundle, "panel_plotly_version", lambda: bundle.VERSION)
    [(pattern, handler, settings)] = bundle.routes(installed=path)
    assert "plotlyplot/plotly-" in pattern and settings == {"path": str(tmp_path), "file": path.name}
    monkeypatch.setattr(bundle, "panel_plotly_version", lambda: "9.9.9")
    assert bundle.routes(installed=path) == []  # Panel's plotly.js is another version


def test_panels_plotly_version_is_read_from_its_file():
    assert bundle.panel_plotly_version() == bundle.VERSION  # when Panel moves on, so must the pin


def test_fetch_refuses_anything_but_the_pinned_tarball_and_writes_nothing(tmp_path):
    target = tmp_path / "out" / "plotly.min.js"
    url, _ = tarball(tmp_path)
    with pytest.raises(bundle.BundleError, match="sha256"):
        bundle.fetch(url, target)
    with pytest.raises(bundle.BundleError, match="could not download"):
        bundle.fetch((tmp_path / "missing.tgz").as_uri(), target)
    (tmp_path / "huge.tgz").write_bytes(b"\0" * (bundle.MAX_BYTES + 1))
    with pytest.raises(bundle.BundleError, match="larger than"):
        bundle.fetch((tmp_path / "huge.tgz").as_uri(), target)
    assert not target.parent.exists() or list(target.parent.iterdir()) == []


def test_fetch_writes_the_bundle_whole_and_readable(tmp_path, monkeypatch):
    url, digest = tarball(tmp_path, b"window.Plotly = {version: 'x'};")
    monkeypatch.setattr(bundle, "TARBALL_SHA256", digest)
    target = tmp_path / "share" / "plotly.min.js"
    assert bundle.fetch(url, target) == target
    assert target.read_bytes() == b"window.Plotly = {version: 'x'};"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["plotly.min.js"]  # no partial file left


def test_main_says_why_and_fails_without_the_registry(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")  # nothing listens there
    monkeypatch.setattr(bundle, "installed_path", lambda: tmp_path / "share" / "plotly.min.js")
    assert bundle.main() == 1
    assert "127.0.0.1:9" in capsys.readouterr().err and not (tmp_path / "share").exists()


@pytest.mark.browser
def test_the_server_answers_panels_plotly_address_with_the_installed_bundle(server):
    """With the bundle installed (``make`` fetches it) the page's plotly.js is the partial
    bundle; without it, Panel's own file, whole."""
    url = server["url"] + f"static/extensions/panel/bundled/plotlyplot/plotly-{bundle.VERSION}.min.js"
    served = requests.get(url, timeout=30)
    assert served.ok
    digest = hashlib.sha256(served.content).hexdigest()
    if bundle.routes():
        assert digest == bundle.FILE_SHA256
    else:
        whole = bundle.PANEL_PLOTLY / f"plotly-{bundle.VERSION}.min.js"
        assert served.content == whole.read_bytes()
