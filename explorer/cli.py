"""The ``explorer`` command line.

Subcommands:

``explorer serve [--port N] [--no-show] [--address A]``
    Serve the dashboard (:mod:`explorer.dashboard`) on 127.0.0.1 unless ``--address``
    says otherwise, and open it in the browser unless ``--no-show``.
``explorer lab [--port N] [--no-browser]``
    Open JupyterLab at the repository's root with its ``lessons/`` folder shown first,
    listening on 127.0.0.1 unless ``--ip`` says otherwise.
``explorer bench [-- ARGS ...]``
    Run ``benchmarks/run_all.py`` with the same Python, passing ``ARGS`` on
    (``explorer bench -- --quick`` for a smoke run).
``explorer site [--out DIR] [--cache DIR] [--pyodide-dir DIR]``
    Build the static site of the lessons and the dashboard (Pyodide) as ``make site`` does.
``explorer sketch DATA --m M [--rfd] [--exact] [--workers N] [--out FILE] ...``
    Sketch the rows of ``DATA`` (``.npy``, ``.npz``, zarr, ``.parquet``; read lazily)
    with Frequent Directions on Dask (:func:`explorer.distributed.sketch_array`), print
    what the sketch certifies and save it (``to_bytes``) with ``--out``.

``lab``, ``bench`` and ``site`` need a source checkout (``make lab`` sets one up); a wheel alone
says so. Bad input (arguments, a file that cannot be read or written, any ``OSError``,
running out of memory) ends the command with exit status 2 and one line on stderr,
``explorer <command>: error: <what was wrong>``, the user's text shown as data
(:mod:`explorer.cli_errors`); ``--debug`` (before or after the subcommand) shows the
traceback instead. Ctrl-C exits with status 130.

>>> args = build_parser().parse_args(["lab", "--port", "8900", "--no-browser"])
>>> args.port, args.no_browser, args.ip
(8900, True, '127.0.0.1')
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from .cli_errors import OneLineParser, os_reason, printable, report_error, silence_stdout

__all__ = ["REPO_ROOT", "LESSONS_DIR", "BENCHMARKS_SCRIPT", "SITE_SCRIPT", "lab_command", "build_parser",
           "main"]

#: The source checkout this package was imported from (editable install or repository).
REPO_ROOT = Path(__file__).resolve().parent.parent
#: The lesson notebooks ``explorer lab`` shows first.
LESSONS_DIR = REPO_ROOT / "lessons"
#: The script ``explorer bench`` runs.
BENCHMARKS_SCRIPT = REPO_ROOT / "benchmarks" / "run_all.py"
#: The script ``explorer site`` runs (``make site`` runs it too).
SITE_SCRIPT = REPO_ROOT / "tools" / "build_site.py"


def lab_command(
    notebook_dir: Path,
    *,
    start_in: str | None = None,
    port: int | None = None,
    ip: str = "127.0.0.1",
    open_browser: bool = True,
    allow_root: bool = False,
) -> list[str]:
    """Return the argument list that starts JupyterLab on ``notebook_dir``.

    ``start_in``, a folder inside ``notebook_dir``, is where the browser opens: its file
    browser shows that folder, and the rest of ``notebook_dir`` stays one click up.

    JupyterLab runs as ``python -m jupyterlab`` with this interpreter, so its kernels see
    the same environment (and the same ``explorer``) as this command. Without ``port``,
    JupyterLab picks its default (8888, or the next free port). JupyterLab refuses to run
    as root unless ``allow_root`` (containers and CI machines often are root).

    >>> lab_command(Path("repo"), start_in="lessons", port=8900, open_browser=False)[1:]
    ['-m', 'jupyterlab', '--notebook-dir=repo', '--ServerApp.default_url=/lab/tree/lessons', '--ip=127.0.0.1', '--port=8900', '--no-browser']
    """
    command = [sys.executable, "-m", "jupyterlab", f"--notebook-dir={notebook_dir}"]
    if start_in:
        command.append(f"--ServerApp.default_url=/lab/tree/{start_in}")
    command.append(f"--ip={ip}")
    if port is not None:
        command.append(f"--port={port}")
    if not open_browser:
        command.append("--no-browser")
    if allow_root:
        command.append("--allow-root")
    return command


def _run_until_done(command: list[str], cwd: Path | None = None) -> int:
    """Run ``command`` in the foreground and return its exit code.

    Ctrl-C in the terminal reaches the child too (same process group); the child decides
    when to stop (JupyterLab asks for confirmation), so we keep waiting for it rather than
    leaving it orphaned.
    """
    with subprocess.Popen(command, cwd=cwd) as process:
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:
                continue


def _running_as_root() -> bool:
    """True on POSIX when the effective user is root."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _port(text: str) -> int:
    """Parse a TCP port number (1-65535) for argparse."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port must be an integer, got {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be in 1..65535, got {port}")
    return port


def _lab(args: argparse.Namespace) -> int:
    notebook_dir = Path(args.notebook_dir)
    if not notebook_dir.is_dir():
        raise ValueError(
            f"no folder at {notebook_dir}. The lessons ship with the source repository, not with an "
            "installed package: clone the repository and run `make lab` in it (or pass --notebook-dir DIR)"
        )
    start_in = LESSONS_DIR.name if (notebook_dir / LESSONS_DIR.name).is_dir() else None
    command = lab_command(
        notebook_dir, start_in=start_in, port=args.port, ip=args.ip, open_browser=not args.no_browser, allow_root=_running_as_root()
    )
    return _run_until_done(command)


def _add_lab(subparsers) -> None:  # what ArgumentParser.add_subparsers() returns
    parser = subparsers.add_parser(
        "lab",
        help="open the lesson notebooks in JupyterLab",
        description="Open JupyterLab at the repository root, showing lessons/ first (Ctrl-C twice to stop).",
    )
    parser.add_argument("--port", type=_port, default=None, help="port to listen on (default: JupyterLab's, 8888)")
    parser.add_argument("--ip", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a web browser")
    parser.add_argument(
        "--notebook-dir", default=str(REPO_ROOT), metavar="DIR",
        help="JupyterLab's root folder (default: the repository, %(default)s); its lessons/ opens first"
    )
    parser.set_defaults(run=_lab)


def _bench(args: argparse.Namespace) -> int:
    if not BENCHMARKS_SCRIPT.is_file():
        raise ValueError(f"no benchmark script at {BENCHMARKS_SCRIPT}. The benchmarks ship with the "
                         "source repository: run this from a checkout")
    return _run_until_done([sys.executable, str(BENCHMARKS_SCRIPT), *args.script_args], cwd=REPO_ROOT)


def _add_bench(subparsers) -> None:  # what ArgumentParser.add_subparsers() returns
    parser = subparsers.add_parser(
        "bench",
        help="run the benchmarks (benchmarks/run_all.py)",
        description="Run benchmarks/run_all.py with this Python, from the repository root.",
    )
    parser.add_argument(
        "script_args",
        nargs="*",
        metavar="ARGS",
        help="arguments for benchmarks/run_all.py, after --, e.g. `explorer bench -- --quick`",
    )
    parser.set_defaults(run=_bench)


def _site(args: argparse.Namespace) -> int:
    if not SITE_SCRIPT.is_file() or not LESSONS_DIR.is_dir():
        raise ValueError(f"no site build script at {SITE_SCRIPT}. The site is built from the source "
                         "repository (its tools/ and lessons/): run this from a checkout")
    out = Path(args.out).expanduser().resolve()
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file: give a new or empty folder (the build replaces it)")
    if out.is_dir() and any(out.iterdir()) and not (out / "jupyter-lite.json").is_file():
        raise ValueError(f"--out {out} holds other files and is not a site built before: give a new "
                         "or empty folder (the build replaces it)")
    command = [sys.executable, str(SITE_SCRIPT), "--out", str(out),
               "--cache", str(Path(args.cache).expanduser().resolve())]
    if args.pyodide_dir is not None:
        if not Path(args.pyodide_dir).is_dir():
            raise ValueError(f"--pyodide-dir {args.pyodide_dir} is not a folder")
        command += ["--pyodide-dir", str(Path(args.pyodide_dir).resolve())]
    return _run_until_done(command, cwd=REPO_ROOT)


def _add_site(subparsers) -> None:  # what ArgumentParser.add_subparsers() returns
    parser = subparsers.add_parser(
        "site",
        help="build the static site: the lessons and the dashboard in the browser (Pyodide)",
        description="Build the lessons (JupyterLite) and the dashboard (a Pyodide worker) as one "
        "static folder, from pinned, hash-checked npm and PyPI packages (tools/build_site.py, "
        "as `make site`). Serve it with `python -m http.server -d DIR`.",
    )
    parser.add_argument("--out", default=str(REPO_ROOT / "site"), metavar="DIR",
                        help="the site's folder, new, empty or a site built before (default: %(default)s)")
    parser.add_argument("--cache", default=str(REPO_ROOT / ".cache" / "site"), metavar="DIR",
                        help="where downloads are kept between builds (default: %(default)s)")
    parser.add_argument("--pyodide-dir", default=None, metavar="DIR",
                        help="Pyodide 0.27.7's own distribution, instead of the PyPI copy")
    parser.set_defaults(run=_site)


def _serve(args: argparse.Namespace) -> int:
    from .dashboard import serve  # Panel loads only for this subcommand

    print(f"Sketch Explorer dashboard on http://{args.address}:{args.port}/ (Ctrl-C to stop)")
    serve(port=args.port, show=not args.no_show, address=args.address)
    return 0


def _add_serve(subparsers) -> None:  # what ArgumentParser.add_subparsers() returns
    parser = subparsers.add_parser(
        "serve",
        help="serve the dashboard (Panel) on localhost",
        description="Serve the Sketch Explorer dashboard: one page per algorithm family, "
        "on built-in data, each browser tab with its own state.",
    )
    parser.add_argument("--port", type=_port, default=5006, help="port to listen on (default: %(default)s)")
    parser.add_argument(
        "--address", default="127.0.0.1", help="address to bind (default: %(default)s, this machine only)"
    )
    parser.add_argument("--no-show", action="store_true", help="do not open a web browser")
    parser.set_defaults(run=_serve)


def _sketch(args: argparse.Namespace) -> int:
    import dask  # Dask loads only for this subcommand

    from .atomic import write_atomic
    from .distributed import certified_bounds, open_rows, sketch_array

    out = Path(args.out) if args.out else None
    if out is not None:
        _check_out(out, force=args.force)
        if _same_file(out, Path(args.data)):
            raise ValueError(f"--out {out} is DATA itself; name another file (the sketch would replace the rows)")
    progress = sys.stdout.isatty() if args.progress is None else args.progress
    kind = "rfd" if args.rfd else "fd"
    X = open_rows(args.data, key=args.key, chunk_rows=args.chunk_rows)
    chunks = len(X.chunks[0])
    print(f"{printable(args.data)}: {X.shape[0]:,} rows x {X.shape[1]:,} columns of {X.dtype}, "
          f"{chunks} chunk{'s' * (chunks > 1)} of up to {max(X.chunks[0]):,} rows", flush=True)
    _check_m(args.m, *X.shape)
    with dask.config.set(scheduler="threads", num_workers=args.workers):
        sketch = sketch_array(X, args.m, kind=kind, fast=not args.exact, split_every=args.split_every,
                              alpha0=args.alpha0, progress=progress)
    print(f"{'Robust FD' if args.rfd else 'FD'}, m = {args.m} ({'exact' if args.exact else 'fast'}), "
          f"merged {args.split_every} at a time on {args.workers or os.cpu_count()} threads")
    print(_sketch_report(sketch, certified_bounds(sketch), top=args.top))
    if out is not None:
        try:
            write_atomic(out, sketch.to_bytes(), overwrite=args.force)
        except OSError as error:  # a full disk, a size limit, a file or link that appeared meanwhile
            raise _cannot_write(out, error) from error
        print(f"saved to {printable(str(out))} (read it back with "
              f"explorer.sketch.from_bytes(Path({str(out)!r}).read_bytes()))")
    return 0


def _check_out(out: Path, *, force: bool) -> None:
    """Refuse, before any sketching, an ``--out`` the atomic write would refuse or fail on:
    a symbolic link (dangling or not, even with ``--force``: the file would land where the
    link points), a folder or other non-regular file, an existing file without ``--force``,
    a missing folder, a folder this user may not write in, or a name the file system cannot
    hold (``OSError``, e.g. a name over 255 bytes)."""
    try:
        if out.is_symlink():
            raise ValueError(f"{out} is a symbolic link; --out never writes through a link, even with "
                             "--force: name the file itself")
        if out.exists():
            if out.is_dir():
                raise ValueError(f"{out} is a folder; --out names the file to write")
            if not out.is_file():
                raise ValueError(f"{out} is not a regular file; --out writes only regular files")
            if not force:
                raise ValueError(f"{out} exists; pass --force to overwrite it")
        if not out.parent.is_dir():
            raise ValueError(f"no folder {out.parent} to write {out.name} in")
    except OSError as error:
        raise _cannot_write(out, error) from error
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise OSError(13, f"cannot write {out}: no permission to create files in {out.parent}")


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` both exist and are one file (or folder)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # one is missing or unreadable: they are not one file
        return False


def _cannot_write(out: Path, error: OSError) -> OSError:
    """``error`` (same ``errno``) as ``cannot write <out>: <reason>``, naming ``out`` once."""
    same = isinstance(error.filename, (str, bytes)) and os.fsdecode(error.filename) == str(out)
    return OSError(error.errno, f"cannot write {out}: {error.strerror if same else os_reason(error)}")


def _check_m(m: int, n: int, d: int) -> None:
    """Refuse an ``m`` larger than ``n`` rows x ``d`` columns can use, before anything is
    allocated: with ``m = min(n, d + 1)`` (at least 2) FD keeps every row exactly (no row
    is ever shrunk once ``m >= n``; the shrink ``sigma_m^2`` is 0 once ``m > d``), so a
    larger ``m`` only makes each sketch bigger (a ``2m x d`` buffer) and the saved file
    with it. Bounded this way, a sketch holds at most ``2 max(n, 2) d`` numbers: twice
    the data's (a sketch of one row, 4 rows).

    >>> _check_m(21, 290, 20)
    >>> _check_m(10**6, 290, 20)
    Traceback (most recent call last):
    ...
    ValueError: m = 1000000 is more than 290 rows x 20 columns can use: ... allowed: 2 <= m <= 21
    """
    limit = max(2, min(n, d + 1))
    if m > limit:
        rows, columns = f"{n:,} row{'s' * (n != 1)}", f"{d:,} column{'s' * (d != 1)}"
        raise ValueError(f"m = {m} is more than {rows} x {columns} can use: m = min(n, d + 1) = {limit} "
                         "already sketches them exactly (delta = 0) and a larger m only makes the sketch "
                         f"bigger (2m x d numbers); allowed: 2 <= m <= {limit}")


def _sketch_report(sketch, bounds: dict, *, top: int) -> str:
    """The lines ``explorer sketch`` prints: what the sketch certifies about the rows A."""
    sigma = sketch.singular_values()[:top]
    delta, total = bounds["spectral_error"], bounds["frobenius_squared"]
    relative = delta / total if total > 0 else 0.0
    lines = [f"rows sketched: {sketch.n_seen:,}; ||A||_F^2 = {total:.6g}; shrinks: {sketch.n_shrinks:,}",
             f"top {sigma.size} singular values of B; sigma_i(A) lies in [sigma_i(B), sqrt(sigma_i(B)^2 + Delta)]:"]
    lines += [f"  {i:3d}  {s:.6g}  [{s:.6g}, {np.sqrt(s * s + delta):.6g}]" for i, s in enumerate(sigma, 1)]
    lines += [f"Frobenius mass captured ||B||_F^2 / ||A||_F^2 = {bounds['mass_captured']:.4f}",
              f"delta_total Delta = {delta:.6g} ({relative:.3g} of ||A||_F^2): ||A^T A - B^T B||_2 <= Delta"]
    if hasattr(sketch, "alpha"):
        lines.append(f"Robust FD: alpha = {sketch.alpha:.6g}; ||A^T A + alpha0 I - (B^T B + alpha I)||_2 <= "
                     f"Delta / 2 = {delta / 2:.6g}")
    lines.append(f"FD guarantee: Delta <= min_k ||A - A_k||_F^2 / (m - k) <= {bounds['tail_bound']:.6g} "
                 "(= min_k (||A||_F^2 - sum_{i<=k} sigma_i(B)^2) / (m - k), what the sketch certifies)")
    return "\n".join(lines)


def _positive(text: str) -> int:
    """Parse an integer >= 1 for argparse."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value}")
    return value


def _add_sketch(subparsers) -> None:  # what ArgumentParser.add_subparsers() returns
    parser = subparsers.add_parser(
        "sketch",
        help="sketch a file too large for memory (Frequent Directions on Dask)",
        description="Sketch the rows of DATA with Frequent Directions, chunk by chunk on Dask's threads, "
        "merging the chunks' sketches in a tree (explorer.distributed.sketch_array). Prints the top "
        "singular values of the sketch B, the Frobenius mass it captured, delta_total Delta (the "
        "certified spectral error: ||A^T A - B^T B||_2 <= Delta) and the FD guarantee's bound "
        "min_k ||A - A_k||_F^2 / (m - k), which needs A's spectrum: printed is the upper estimate "
        "min_k (||A||_F^2 - sum_{i<=k} sigma_i(B)^2) / (m - k), which the sketch certifies "
        "(sigma_i(A) >= sigma_i(B)). --out is written atomically (a temporary file, then a rename): "
        "a failed write leaves what was there. Bad input: one line on stderr, exit status 2.",
    )
    parser.add_argument("data", metavar="DATA",
                        help="a .npy (memory-mapped), .npz, zarr store (needs zarr) or .parquet (needs pyarrow)")
    parser.add_argument("--m", type=int, required=True,
                        help="sketch size m (rows of B): 2 <= m <= min(rows, columns + 1), "
                             "where the sketch is already exact")
    parser.add_argument("--rfd", action="store_true", help="Robust Frequent Directions instead of FD")
    parser.add_argument("--alpha0", type=float, default=0.0, help="Robust FD's starting alpha (default: 0)")
    parser.add_argument("--exact", action="store_true",
                        help="shrink on every row once full (default: fast FD, a 2m-row buffer)")
    parser.add_argument("--workers", type=_positive, default=None, metavar="N",
                        help="threads of Dask's local scheduler (default: one per core)")
    parser.add_argument("--split-every", type=int, default=8, metavar="K",
                        help="sketches per merge in the tree (>= 2; default: %(default)s)")
    parser.add_argument("--chunk-rows", type=_positive, default=None, metavar="R",
                        help="rows per chunk (default: the file's chunks, or about 128 MiB)")
    parser.add_argument("--key", default=None, metavar="NAME", help="the array to read in an .npz or zarr group")
    parser.add_argument("--top", type=_positive, default=5, help="singular values to print (default: %(default)s)")
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="save the sketch here (to_bytes: an npz archive; default: not saved)")
    parser.add_argument("--force", action="store_true",
                        help="replace --out if it exists (only once the new sketch is written whole; "
                             "never through a symbolic link)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show a progress bar (default: when the output is a terminal)")
    parser.set_defaults(run=_sketch)


_SUBCOMMANDS = (_add_serve, _add_lab, _add_bench, _add_site, _add_sketch)


_DEBUG_HELP = "show the traceback of an error (default: one line on stderr)"


def build_parser() -> argparse.ArgumentParser:
    """Return the ``explorer`` argument parser with every subcommand registered.

    Its errors are one line (``explorer sketch: error: the following arguments are
    required: --m ...``) with exit status 2; ``--debug`` goes before or after the
    subcommand.

    >>> build_parser().parse_args(["sketch", "rows.npy", "--m", "5", "--debug"]).debug
    True
    """
    parser = OneLineParser(
        prog="explorer", description="Sketch Explorer: lessons and tools for sketched online learning."
    )
    parser.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in _SUBCOMMANDS:
        add(subparsers)
    for subparser in subparsers.choices.values():
        subparser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP)
    return parser


def _one_blas_thread_by_default() -> None:
    """Use one BLAS thread here and in child processes (kernels), unless the user set one.

    Every algorithm here factors many small (m x d) matrices, where a multi-threaded
    OpenBLAS only adds synchronisation: on a busy 2-core machine one such SVD was 10-100x
    slower with two threads (benchmarks/README.md). The environment variable reaches
    JupyterLab's kernels; numpy is already loaded in this process, so threadpoolctl
    applies the same limit here (for ``explorer serve``).
    """
    threads = os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if threads.isdigit() and int(threads) > 0:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=int(threads), user_api="blas")


def main(argv: list[str] | None = None) -> int:
    """Run the ``explorer`` command with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    An argument error exits (``SystemExit(2)``) after one line on stderr. Any ``ValueError``
    (bad input), ``OSError`` or ``MemoryError`` while the subcommand runs becomes one line
    on stderr and exit status 2, Ctrl-C status 130; with ``--debug`` they propagate (the
    traceback). When the reader of stdout goes away (``explorer sketch ... | head``), the
    command stops quietly with status 1.
    """
    args = build_parser().parse_args(argv)
    _one_blas_thread_by_default()
    try:
        code = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:
        if args.debug:
            raise
        silence_stdout()
        return 1
    except (ValueError, OSError, MemoryError, KeyboardInterrupt) as error:
        if args.debug:
            raise
        return report_error(args.command, error)


if __name__ == "__main__":
    sys.exit(main())
