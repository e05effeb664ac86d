"""Files a user keeps are written whole or not at all.

:func:`write_atomic` writes the bytes to a temporary file in the destination's directory,
flushes and ``fsync``\\ s it, then renames it over the destination (``os.replace``, atomic
on POSIX and Windows). A failure at any point (a full disk, a size limit, an interrupt)
removes the temporary file and leaves the destination exactly as it was: a good file that
was there stays there, and no truncated file ever appears under the destination's name.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "sketch.npz")
>>> write_atomic(path, b"first")
>>> write_atomic(path, b"second", overwrite=False)
Traceback (most recent call last):
...
FileExistsError: ...sketch.npz already exists (pass overwrite=True to replace it)
>>> write_atomic(path, b"second"); open(path, "rb").read()
b'second'
>>> oct(os.stat(path).st_mode & 0o777) == oct(0o666 & ~_umask())
True
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def write_atomic(path, data: bytes, *, overwrite: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename.

    Parameters
    ----------
    path:
        Destination file. A symbolic link is refused (writing through a link, dangling or
        not, would put the file somewhere the caller did not name), and so is a directory or
        any other non-regular file.
    data:
        The complete contents.
    overwrite:
        Replace an existing regular file (only once the new one is complete). When false,
        an existing destination raises ``FileExistsError`` and nothing is written.

    Raises ``OSError`` (``FileExistsError``, ``IsADirectoryError``, ...) on failure, with
    the destination untouched and no temporary file left behind.
    """
    path = Path(path)
    if path.is_symlink():
        raise FileExistsError(f"{path} is a symbolic link; name the file itself")
    if path.exists():
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory, not a file")
        if not path.is_file():
            raise FileExistsError(f"{path} is not a regular file")
        if not overwrite:
            raise FileExistsError(f"{path} already exists (pass overwrite=True to replace it)")
    folder = path.parent if str(path.parent) else Path(".")
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".tmp",
                                             dir=folder)
    try:
        # mkstemp makes the file private (0600); give it the mode a plain open() would
        # (0666 less the umask), or the mode of the file it replaces.
        if path.is_file():
            mode = path.stat().st_mode & 0o7777
        else:
            mode = 0o666 & ~_umask()
        os.chmod(temporary, mode)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if not overwrite:
            # link() fails if the destination appeared meanwhile, so nothing is replaced;
            # where the file system has no hard links, a last check and a rename.
            try:
                os.link(temporary, path)
            except FileExistsError:
                raise FileExistsError(f"{path} already exists (pass overwrite=True to "
                                      "replace it)") from None
            except OSError:
                if path.exists() or path.is_symlink():
                    raise FileExistsError(f"{path} already exists (pass overwrite=True to "
                                          "replace it)") from None
                os.replace(temporary, path)
            else:
                os.unlink(temporary)
        else:
            os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
