"""Tests for the ``explorer`` command line (explorer/cli.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer import cli


def test_console_script_points_at_main():
    (script,) = entry_points(group="console_scripts", name="explorer")
    assert script.value == "explorer.cli:main"


def test_help_lists_the_subcommands():
    result = subprocess.run(
        [sys.executable, "-m", "explorer.cli", "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    assert "lab" in result.stdout and "bench" in result.stdout


def test_a_subcommand_is_required(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([])
    assert exit_info.value.code == 2
    assert "COMMAND" in capsys.readouterr().err


def test_lab_defaults():
    args = cli.build_parser().parse_args(["lab"])
    assert args.port is None
    assert args.ip == "127.0.0.1"
    assert args.no_browser is False
    assert Path(args.notebook_dir) == cli.REPO_ROOT


def test_lessons_dir_is_the_repository_folder():
    assert cli.LESSONS_DIR == Path(cli.__file__).resolve().parent.parent / "lessons"


@pytest.mark.parametrize("port", ["0", "65536", "-1", "eighty"])
def test_lab_rejects_a_bad_port(port, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["lab", "--port", port])
    assert exit_info.value.code == 2
    assert "port must be" in capsys.readouterr().err


def test_lab_command_binds_localhost_and_uses_this_python(tmp_path):
    command = cli.lab_command(tmp_path, port=8900, open_browser=False)
    assert command[:3] == [sys.executable, "-m", "jupyterlab"]
    assert f"--notebook-dir={tmp_path}" in command
    assert "--ip=127.0.0.1" in command
    assert "--port=8900" in command
    assert "--no-browser" in command


def test_lab_command_without_port_opens_a_browser(tmp_path):
    command = cli.lab_command(tmp_path)
    assert not any(part.startswith("--port") for part in command)
    assert "--no-browser" not in command
    assert "--allow-root" not in command


def test_lab_command_allows_root_only_when_asked(tmp_path):
    assert "--allow-root" in cli.lab_command(tmp_path, allow_root=True)


def test_lab_without_its_folder_says_why(tmp_path, monkeypatch, capsys):
    missing = tmp_path / "checkout"
    monkeypatch.setattr(cli, "REPO_ROOT", missing)
    monkeypatch.setattr(cli, "_run_until_done", lambda *a, **k: pytest.fail("must not start JupyterLab"))
    assert cli.main(["lab", "--no-browser", "--notebook-dir", str(missing)]) == 2
    message = capsys.readouterr().err
    assert str(missing) in message
    assert "make lab" in message


def test_lab_runs_jupyterlab_on_the_repository(tmp_path, monkeypatch):
    calls = []
    (tmp_path / "lessons").mkdir()
    monkeypatch.setattr(cli, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(cli, "_run_until_done", lambda command, cwd=None: calls.append(command) or 0)
    assert cli.main(["lab", "--port", "8911", "--no-browser"]) == 0
    (command,) = calls
    assert command == cli.lab_command(tmp_path, start_in="lessons", port=8911, open_browser=False,
                                      allow_root=cli._running_as_root())


def test_bench_without_script_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "BENCHMARKS_SCRIPT", tmp_path / "benchmarks" / "run_all.py")
    assert cli.main(["bench"]) == 2
    assert "no benchmark script" in capsys.readouterr().err


def test_site_help_names_its_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["site", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert all(option in out for option in ("--out", "--cache", "--pyodide-dir", "make site"))


def test_site_without_a_checkout_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "SITE_SCRIPT", tmp_path / "tools" / "build_site.py")
    monkeypatch.setattr(cli, "_run_until_done", lambda *a, **k: pytest.fail("must not build"))
    assert cli.main(["site", "--out", str(tmp_path / "site")]) == 2
    assert "no site build script" in capsys.readouterr().err


@pytest.mark.parametrize("case", ["file", "other folder", "unknown option", "missing pyodide dir"])
def test_site_refuses_bad_arguments_before_building(tmp_path, monkeypatch, capsys, case):
    """A folder that is not a site is never replaced (the build deletes --out first)."""
    monkeypatch.setattr(cli, "_run_until_done", lambda *a, **k: pytest.fail("must refuse first"))
    (tmp_path / "notes.txt").write_text("mine")
    argv, message = {
        "file": (["--out", str(tmp_path / "notes.txt")], "is a file"),
        "other folder": (["--out", str(tmp_path)], "not a site built before"),
        "unknown option": (["--outt", "x"], "unrecognized arguments"),
        "missing pyodide dir": (["--out", str(tmp_path / "new"), "--pyodide-dir",
                                 str(tmp_path / "none")], "is not a folder"),
    }[case]
    try:
        code = cli.main(["site", *argv])
    except SystemExit as exit_info:  # argparse's own errors
        code = exit_info.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_site_runs_the_build_script_from_the_checkout(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(cli, "_run_until_done", lambda command, cwd=None: calls.append((command, cwd)) or 0)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "jupyter-lite.json").write_text("{}")  # a site built before: replaced
    assert cli.main(["site", "--out", str(tmp_path / "old"), "--cache", str(tmp_path / "c")]) == 0
    (command, cwd), = calls
    assert command == [sys.executable, str(cli.SITE_SCRIPT), "--out", str(tmp_path / "old"),
                       "--cache", str(tmp_path / "c")] and cwd == cli.REPO_ROOT


def test_bench_runs_the_script_from_the_repository_root(tmp_path, monkeypatch):
    script = tmp_path / "benchmarks" / "run_all.py"
    script.parent.mkdir()
    script.write_text("import os, sys\nopen('cwd.txt', 'w').write(os.getcwd())\nsys.exit(3)\n")
    monkeypatch.setattr(cli, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(cli, "BENCHMARKS_SCRIPT", script)
    assert cli.main(["bench"]) == 3
    assert Path((tmp_path / "cwd.txt").read_text()) == tmp_path


def test_bench_passes_arguments_after_double_dash(tmp_path, monkeypatch):
    script = tmp_path / "run_all.py"
    script.write_text("import json, sys\nopen('argv.json', 'w').write(json.dumps(sys.argv[1:]))\n")
    monkeypatch.setattr(cli, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(cli, "BENCHMARKS_SCRIPT", script)
    assert cli.main(["bench", "--", "--quick", "--output", "out.json"]) == 0
    assert json.loads((tmp_path / "argv.json").read_text()) == ["--quick", "--output", "out.json"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, response.read()


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="stops the server with a POSIX process-group signal")
def test_lab_serves_the_notebook_folder(tmp_path):
    """Start the real `explorer lab` briefly, check it answers over http, then stop it."""
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    (lessons / "01_hello.ipynb").write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    port, token = _free_port(), "explorer-test-token"
    env = {
        **os.environ,
        "JUPYTER_TOKEN": token,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    command = [
        sys.executable,
        "-m",
        "explorer.cli",
        "lab",
        "--no-browser",
        "--port",
        str(port),
        "--notebook-dir",
        str(lessons),
    ]
    log = (tmp_path / "lab.log").open("wb")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert server.poll() is None, (tmp_path / "lab.log").read_text()
            try:
                status, body = _get(f"{base}/api")
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, (tmp_path / "lab.log").read_text()
                time.sleep(0.5)
        assert status == 200 and "version" in json.loads(body)

        status, body = _get(f"{base}/api/contents?token={token}")
        assert status == 200
        assert [item["name"] for item in json.loads(body)["content"]] == ["01_hello.ipynb"]

        status, body = _get(f"{base}/lab?token={token}")
        assert status == 200 and b"JupyterLab" in body
    finally:
        _stop_process_group(server)
        log.close()


def _stop_process_group(process: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM the group `process` leads (the wrapper and JupyterLab), SIGKILL it if it lingers."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:  # the whole group is gone already
        return
    process.wait(timeout=grace)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)  # is any member of the group still alive?
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)


def test_serve_defaults_to_localhost_and_parses_its_options():
    from explorer.cli import build_parser

    args = build_parser().parse_args(["serve"])
    assert (args.port, args.address, args.no_show) == (5006, "127.0.0.1", False)
    args = build_parser().parse_args(["serve", "--port", "5100", "--no-show"])
    assert (args.port, args.no_show) == (5100, True)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--port", "0"])


def test_lab_opens_the_repository_root_at_the_lessons(tmp_path, monkeypatch):
    """make lab: JupyterLab's root is the repository (notebooks/ and benchmarks/ reachable),
    and the browser opens on lessons/ (issue 12)."""
    (tmp_path / "lessons").mkdir()
    started = []
    monkeypatch.setattr(cli, "_run_until_done", lambda command, cwd=None: started.append(command) or 0)
    assert cli.main(["lab", "--notebook-dir", str(tmp_path), "--no-browser"]) == 0
    command = started[0]
    assert f"--notebook-dir={tmp_path}" in command
    assert "--ServerApp.default_url=/lab/tree/lessons" in command


# -- explorer sketch ----------------------------------------------------------------------
@pytest.fixture
def rows_npy(tmp_path):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3000, 3)) @ rng.standard_normal((3, 12)) * 10 + rng.standard_normal((3000, 12))
    np.save(tmp_path / "rows.npy", A)
    return tmp_path / "rows.npy", A


def test_sketch_prints_what_the_sketch_certifies_and_saves_it(rows_npy, tmp_path, capsys):
    from explorer.distributed import certified_bounds, sketch_array
    from explorer.sketch import from_bytes

    path, A = rows_npy
    out = tmp_path / "sketch.npz"
    code = cli.main(["sketch", str(path), "--m", "6", "--workers", "2", "--chunk-rows", "500",
                     "--split-every", "3", "--out", str(out), "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0
    saved = from_bytes(out.read_bytes())
    expected = sketch_array(A, 6, chunk_rows=500, split_every=3)
    assert np.array_equal(saved.sketch, expected.sketch) and saved.n_seen == 3000
    bounds = certified_bounds(saved)
    assert "3,000 rows x 12 columns of float64, 6 chunks of up to 500 rows" in printed
    assert f"mass captured ||B||_F^2 / ||A||_F^2 = {bounds['mass_captured']:.4f}" in printed
    assert f"Delta = {saved.delta_total:.6g}" in printed
    assert f"<= {bounds['tail_bound']:.6g}" in printed
    assert f"1  {saved.singular_values()[0]:.6g}" in printed
    assert "Completed" not in printed  # --no-progress


def test_sketch_robust_fd_exact_prints_alpha(rows_npy, capsys):
    path, _ = rows_npy
    assert cli.main(["sketch", str(path), "--m", "4", "--rfd", "--alpha0", "2", "--exact", "--top", "2",
                     "--progress"]) == 0
    printed = capsys.readouterr().out
    assert "Robust FD, m = 4 (exact)" in printed and "alpha = " in printed
    assert "100% Completed" in printed
    assert "top 2 singular values" in printed


def test_sketch_overwrites_only_with_force(rows_npy, tmp_path, capsys):
    path, _ = rows_npy
    out = tmp_path / "sketch.npz"
    out.write_bytes(b"keep me")
    assert cli.main(["sketch", str(path), "--m", "3", "--out", str(out)]) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert out.read_bytes() == b"keep me"
    assert cli.main(["sketch", str(path), "--m", "3", "--out", str(out), "--force"]) == 0
    assert out.read_bytes() != b"keep me"


@pytest.mark.parametrize("name, content, extra, message", [
    ("missing.npy", None, [], "no file or folder at"),
    ("rows.csv", b"1,2\n", [], "unknown format .csv"),
    ("nan.npy", "nan", ["--chunk-rows", "10"], r"rows 10\.\.19 \(a chunk\): row 12 contains NaN"),
    ("rows.npy", "ok", ["--m", "1"], "m must be an integer >= 2"),
    ("rows.npy", "ok", ["--out", "no/such/folder/sk.npz"], "no folder"),
])
def test_sketch_refuses_bad_input_in_one_line(tmp_path, capsys, name, content, extra, message):
    path = tmp_path / name
    if content == "nan":
        A = np.ones((30, 4))
        A[12, 1] = np.nan
        np.save(path, A)
    elif content == "ok":
        np.save(path, np.ones((30, 4)))
    elif content is not None:
        path.write_bytes(content)
    extra = [part.replace("no/such", str(tmp_path / "no/such")) for part in extra]
    m = [] if "--m" in extra else ["--m", "3"]
    assert cli.main(["sketch", str(path), *m, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("explorer sketch: error: ") and err.count("\n") == 1
    assert re.search(message, err)


def test_sketch_command_shows_no_traceback(tmp_path):
    result = subprocess.run([sys.executable, "-m", "explorer.cli", "sketch", str(tmp_path / "x.npz"), "--m", "3"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip() == f"explorer sketch: error: no file or folder at {tmp_path / 'x.npz'}"


def test_sketch_progress_follows_the_terminal_by_default():
    args = cli.build_parser().parse_args(["sketch", "data.npy", "--m", "5"])
    assert args.progress is None and args.workers is None and args.split_every == 8 and not args.rfd


# -- the error discipline: exit status 2 and one line on stderr --------------------------
def _one_line(err: str, prefix: str = "explorer sketch: error: ") -> str:
    """The single stderr line, checked: the prefix, one newline, no traceback."""
    assert err.startswith(prefix), err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err
    return err


def _lying_npz(path: Path) -> None:
    """An .npz whose only member declares 10^8 x 100 float64 (80 GB) and holds 800 bytes."""
    import zipfile

    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000, 100), }".ljust(117) + "\n"
    member = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + bytes(800)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("rows.npy", member)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", ["garbage", "zip-garbage", "lying", "huge-m", "out-dir-force",
                                  "out-unwritable", "out-name-too-long", "out-in-a-file"])
def test_sketch_bad_input_is_one_line_and_exit_2(tmp_path, capsys, case):
    data, out, extra = tmp_path / "rows.npy", None, []
    np.save(data, np.ones((30, 4)))
    if case == "garbage":
        data = tmp_path / "garbage.npz"
        data.write_bytes(b"hello world" * 10)
    elif case == "zip-garbage":
        data = tmp_path / "garbage.npz"
        data.write_bytes(b"PK\x03\x04" + bytes(100))
    elif case == "lying":
        data = tmp_path / "lying.npz"
        _lying_npz(data)
    elif case == "huge-m":
        extra = ["--m", str(10**7)]
    elif case == "out-dir-force":
        out, extra = tmp_path / "folder", ["--force"]
        out.mkdir()
    elif case == "out-unwritable":
        out = Path("/proc") / "explorer-test-sketch.npz"  # no file can be created there, not even by root
    elif case == "out-name-too-long":
        out = tmp_path / ("s" * 300 + ".npz")
    elif case == "out-in-a-file":
        out = data / "sketch.npz"
    if out is not None:
        extra += ["--out", str(out)]
    if "--m" not in extra:
        extra += ["--m", "3"]
    assert cli.main(["sketch", str(data), "--no-progress", *extra]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "pickle" not in err and "out of memory" not in err  # the readers refuse; nothing is attempted
    assert {p.name for p in tmp_path.iterdir()} <= {"rows.npy", "garbage.npz", "lying.npz", "folder"}


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes in read-only folders")
def test_sketch_refuses_an_unwritable_folder_before_sketching(rows_npy, tmp_path, capsys, monkeypatch):
    path, _ = rows_npy
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    monkeypatch.setattr("explorer.distributed.sketch_array", lambda *a, **k: pytest.fail("must refuse first"))
    try:
        assert cli.main(["sketch", str(path), "--m", "3", "--out", str(folder / "sk.npz")]) == 2
    finally:
        folder.chmod(0o700)
    assert "cannot write" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("dangling", [False, True])
def test_sketch_never_writes_through_a_symlink(rows_npy, tmp_path, capsys, force, dangling):
    path, _ = rows_npy
    target = tmp_path / "elsewhere.npz"
    if not dangling:
        target.write_bytes(b"keep me")
    link = tmp_path / "sketch.npz"
    link.symlink_to(target)
    assert cli.main(["sketch", str(path), "--m", "3", "--out", str(link), *(["--force"] if force else [])]) == 2
    assert "symbolic link" in _one_line(capsys.readouterr().err)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == b"keep me" if not dangling else not target.exists()


_FSIZE_LIMITED = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))
from explorer.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.timeout(300)
@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE is POSIX")
@pytest.mark.parametrize("old", [True, False])
def test_sketch_failed_write_keeps_the_old_file_and_leaves_no_truncated_one(rows_npy, tmp_path, old):
    """A write that fails half way (a full disk, here a 512-byte file size limit) leaves
    the good sketch that was there bit for bit, and no partial file under any name."""
    path, _ = rows_npy
    out = tmp_path / "sketch.npz"
    if old:
        assert cli.main(["sketch", str(path), "--m", "2", "--out", str(out), "--no-progress"]) == 0
        good = out.read_bytes()
    before = sorted(tmp_path.iterdir())
    result = subprocess.run([sys.executable, "-c", _FSIZE_LIMITED, "sketch", str(path), "--m", "6", "--out",
                             str(out), "--no-progress", *(["--force"] if old else [])],
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 2, result.stderr
    assert f"cannot write {out}" in _one_line(result.stderr)
    assert sorted(tmp_path.iterdir()) == before  # no temporary file left, no truncated sketch
    if old:
        assert out.read_bytes() == good
    else:
        assert not out.exists()


def test_sketch_force_replaces_a_sketch_with_a_complete_one(rows_npy, tmp_path):
    from explorer.sketch import from_bytes

    path, _ = rows_npy
    out = tmp_path / "sketch.npz"
    assert cli.main(["sketch", str(path), "--m", "2", "--out", str(out), "--no-progress"]) == 0
    assert cli.main(["sketch", str(path), "--m", "5", "--out", str(out), "--no-progress", "--force"]) == 0
    assert from_bytes(out.read_bytes()).m == 5
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("argv, says", [
    ([], "COMMAND"),
    (["nope"], "invalid choice"),
    (["sketch"], "required"),
    (["sketch", "rows.npy", "--m", "three"], "invalid int value"),
    (["sketch", "rows.npy", "--m", "3", "--bogus"], "unrecognized arguments"),
    (["sketch", "rows.npy", "--m", "9" * 5000], "invalid int value"),
    (["serve", "--port", "0"], "port must be"),
])
def test_argument_errors_are_one_line(capsys, argv, says):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert re.match(r"explorer( \w+)?: error: ", err) and err.count("\n") == 1, err
    assert says in err and "usage:" not in err and len(err) < 400


def test_argument_error_exits_2_in_a_real_process():
    result = subprocess.run([sys.executable, "-m", "explorer.cli", "sketch", "x.npy"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == ("explorer sketch: error: the following arguments are required: --m "
                             "(explorer sketch --help shows the usage)\n")


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_shows_the_traceback(tmp_path, where):
    missing = str(tmp_path / "missing.npy")
    argv = ["sketch", missing, "--m", "3"]
    argv = ["--debug", *argv] if where == "before" else [*argv, "--debug"]
    with pytest.raises(ValueError, match="no file or folder"):
        cli.main(argv)


@pytest.mark.parametrize("error, says, code", [
    (MemoryError(), "out of memory", 2),
    (OSError(28, "No space left on device"), "No space left on device", 2),
    (KeyboardInterrupt(), "interrupted", 130),
])
def test_errors_outside_the_readers_are_one_line(rows_npy, capsys, monkeypatch, error, says, code):
    path, _ = rows_npy

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr("explorer.distributed.sketch_array", fail)
    assert cli.main(["sketch", str(path), "--m", "3"]) == code
    assert says in _one_line(capsys.readouterr().err)


def test_file_names_are_printed_as_data(tmp_path, capsys):
    name = tmp_path / "bad\nname\x1b[31m\r.npy"
    assert cli.main(["sketch", str(name), "--m", "3"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "\x1b" not in err and "\r" not in err and "\\x1b[31m" in err


# -- the sketch's size is bounded by the data's ------------------------------------------
@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape, limit", [((290, 20), 21), ((5, 400), 5), ((1, 3), 2), ((40, 1), 2)])
def test_sketch_m_is_bounded_by_what_the_data_declares(tmp_path, capsys, shape, limit):
    """A sketch with m = min(n, d + 1) already keeps every row exactly: a larger m is
    refused before anything is allocated (it would only make the sketch bigger: --m 10^6
    on a 47 kB file wrote 305 MiB and peaked at 1 GB)."""
    import tracemalloc

    from explorer.sketch import from_bytes

    data, out = tmp_path / "rows.npy", tmp_path / "sketch.npz"
    np.save(data, np.random.default_rng(1).standard_normal(shape))
    tracemalloc.start()
    try:
        code = cli.main(["sketch", str(data), "--m", str(10**6), "--out", str(out), "--no-progress"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 2 and peak < 20 * 2**20
    assert f"allowed: 2 <= m <= {limit}" in _one_line(capsys.readouterr().err)
    assert not out.exists()
    assert cli.main(["sketch", str(data), "--m", str(limit + 1), "--no-progress"]) == 2
    capsys.readouterr()
    assert cli.main(["sketch", str(data), "--m", str(limit), "--out", str(out), "--no-progress"]) == 0
    sketch = from_bytes(out.read_bytes())
    assert sketch.m == limit and sketch.n_seen == shape[0]
    assert sketch.delta_total == 0.0  # m = min(n, d + 1) is exact
    n, d = shape
    assert out.stat().st_size <= 2 * max(n, 2) * d * 8 + 4096  # at most the 2m x d buffer of m <= n


@pytest.mark.parametrize("command", ["lab", "bench"])
def test_lab_and_bench_without_their_folder_are_one_line(tmp_path, monkeypatch, capsys, command):
    monkeypatch.setattr(cli, "REPO_ROOT", tmp_path / "checkout")
    monkeypatch.setattr(cli, "BENCHMARKS_SCRIPT", tmp_path / "checkout" / "benchmarks" / "run_all.py")
    monkeypatch.setattr(cli, "_run_until_done", lambda *a, **k: pytest.fail("must not start anything"))
    argv = ["lab", "--no-browser", "--notebook-dir", str(tmp_path / "checkout")] if command == "lab" else ["bench"]
    assert cli.main(argv) == 2
    _one_line(capsys.readouterr().err, f"explorer {command}: error: ")


@pytest.mark.skipif(os.name != "posix", reason="a pipe with no reader")
def test_a_closed_stdout_ends_the_command_quietly(rows_npy):
    """`explorer sketch ... | head -1`: the reader left; no traceback, no second error at exit."""
    path, _ = rows_npy
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first print fails with EPIPE
    try:
        result = subprocess.run([sys.executable, "-m", "explorer.cli", "sketch", str(path), "--m", "3",
                                 "--no-progress"], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (1, "")


def test_sketch_out_may_not_replace_the_data(rows_npy, capsys):
    path, A = rows_npy
    before = path.read_bytes()
    assert cli.main(["sketch", str(path), "--m", "3", "--out", str(path), "--force", "--no-progress"]) == 2
    assert "is DATA itself" in _one_line(capsys.readouterr().err)
    assert path.read_bytes() == before


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=1, max_value=200))
def test_printable_puts_any_text_on_one_line_of_bounded_words(text, longest):
    from explorer.cli_errors import printable

    shown = printable(text, longest=longest)
    assert all(c.isprintable() for c in shown)  # no line break, no escape sequence
    assert max(map(len, shown.split(" ")), default=0) <= max(longest, 12) + 3
    assert printable(shown, longest=max(longest, 12) + 3) == shown  # already printable: unchanged
