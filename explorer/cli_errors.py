r"""How the ``explorer`` command reports what went wrong: one line on stderr, exit status 2.

Every bad input (an argument argparse refuses, a ``ValueError`` from a reader, an
``OSError`` from the file system, a ``MemoryError``) ends the command with one line,
``explorer <command>: error: <what was wrong>``; :mod:`explorer.cli` routes them here.
Text that came from the user (file names, argument values) is data: :func:`printable`
puts it on one line, escapes control characters and shortens very long words, so a file
name cannot move the cursor, colour the terminal or push the message off the screen.

>>> import contextlib, sys
>>> with contextlib.redirect_stderr(sys.stdout):  # (so that this example shows the line)
...     report_error("sketch", OSError(28, "No space left on device", "big.npz"))
explorer sketch: error: big.npz: No space left on device
2
"""

from __future__ import annotations

import argparse
import os
import re
import sys

__all__ = ["OneLineParser", "printable", "os_reason", "report_error", "silence_stdout"]


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr and exit status 2:
    ``explorer sketch: error: the following arguments are required: --m (explorer sketch
    --help shows the usage)``, where argparse prints its usage block first. The parsers
    of its subcommands (``add_subparsers``) are of the same class."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {printable(message)} ({self.prog} --help shows the usage)\n")


def printable(text: str, longest: int = 120) -> str:
    r"""``text`` on one line, as data: line breaks become spaces, other control characters
    are escaped (``\x1b``), and a word longer than ``longest`` characters is shortened (its
    length said, the punctuation after it kept).

    >>> print(printable("bad\nname\x1b[31m.npy"))
    bad name\x1b[31m.npy
    >>> printable("x" * 300 + ": too long", longest=20)
    'xxxxxxxxxxx...xxx (300 characters): too long'
    """
    text = re.sub(r"\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]\s*", " ", str(text)).strip()
    text = "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)

    def shorten(match: re.Match) -> str:
        word, tail = re.fullmatch(r"(.*?)([:;,.)\]]{0,3})", match[0]).groups()
        return f"{word[:max(longest - 9, 1)]}...{word[-3:]} ({len(word)} characters){tail}"

    return re.sub(r"\S{%d,}" % (longest + 1), shorten, text)


def os_reason(error: OSError) -> str:
    """What went wrong in an ``OSError``, without its ``[Errno N]`` prefix.

    >>> os_reason(PermissionError(13, "Permission denied", "/etc/shadow"))
    '/etc/shadow: Permission denied'
    """
    if error.strerror and error.filename is not None:
        names = [name if isinstance(name, str) else os.fsdecode(name) if isinstance(name, bytes) else str(name)
                 for name in (error.filename, error.filename2) if name is not None]
        return f"{' -> '.join(names)}: {error.strerror}"
    return error.strerror or str(error) or type(error).__name__


def report_error(command: str, error: BaseException) -> int:
    """Print ``error`` as the one stderr line of ``explorer <command>``; return the exit
    status: 130 for ``KeyboardInterrupt`` (Ctrl-C), 2 for anything else (a ``ValueError``
    says what was wrong and what is allowed; an ``OSError`` its reason and file; a
    ``MemoryError`` that the input needs more memory than there is)."""
    code = 2
    if isinstance(error, KeyboardInterrupt):
        text, code = "interrupted", 130
    elif isinstance(error, MemoryError):
        text = (f"out of memory ({error or 'a large allocation failed'}); the input declares more than "
                "this machine can hold (a smaller --m or --chunk-rows needs less)")
    elif isinstance(error, OSError):
        text = os_reason(error)
    else:
        text = str(error) or type(error).__name__
    print(f"explorer {command}: error: {printable(text)}", file=sys.stderr, flush=True)
    return code


def silence_stdout() -> None:
    """Point stdout at the null device once its reader has gone (``explorer sketch ... |
    head``), so the interpreter's last flush does not print a second error (the recipe in
    Python's ``signal`` documentation, "Note on SIGPIPE")."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (captured output): nothing to silence
        pass
