"""One bounded reader for every ``.npy`` file and ``.npz`` archive the package opens.

A sketch's bytes (``from_bytes``), a state file (:func:`explorer.state.load_state`), a data
file (:func:`explorer.distributed.open_rows`) and a dashboard upload all come through here
(docs/robustness.md, section 7). Nothing is unpickled, and everything is checked before any
array data is read or inflated:

- a path must name a regular file (opened non-blocking, checked with ``fstat``): a FIFO,
  a device, a socket or a directory is refused before a byte is read;
- an archive is an honest zip of ``.npy`` members: its central directory lists exactly the
  entries its end record counts, names are distinct, local headers agree with the
  directory, and no member's bytes overlap another's (a zip bomb);
- every ``.npy`` header is parsed by numpy's own reader (``max_header_size``), object
  dtypes are refused, the bytes a header declares must be exactly the member's size, and
  the total declared by all members must be at most ``limit``, named in the message;
- members are read lazily (:class:`NpzArchive`), into a buffer of the declared size, with
  the zip's CRC checked.

Every refusal is an :class:`ArchiveError`, a ``ValueError`` whose message names the file
and the reason (never numpy's advice about pickled data).

>>> import io, numpy as np
>>> buffer = io.BytesIO(); np.savez(buffer, X=np.eye(2)); data = buffer.getvalue()
>>> read_npz(data, name="eye.npz")["X"].tolist()
[[1.0, 0.0], [0.0, 1.0]]
>>> read_npz(data, name="eye.npz", limit=16)
Traceback (most recent call last):
...
explorer.archive.ArchiveError: eye.npz: its arrays declare 32 bytes of data; at most 16 bytes are read from such a file
"""

from __future__ import annotations

import io
import math
import os
import stat
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["ArchiveError", "ArrayHeader", "NpzArchive", "MappedArray", "MAX_ARCHIVE_BYTES", "MAX_HEADER_BYTES",
           "open_regular", "read_header", "npy_header", "read_npy", "open_npz", "read_npz"]

#: The most bytes of array data one archive or ``.npy`` file may declare, unless the caller
#: gives another ``limit`` (2 GiB).
MAX_ARCHIVE_BYTES = 2 ** 31
#: The longest ``.npy`` header read (numpy's own default; ``np.save`` writes 128 bytes or so).
MAX_HEADER_BYTES = 10_000

_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_END = struct.Struct("<4sHHHHIIH")
_END64 = struct.Struct("<4sQHHIIQQQQ")
_LOCATOR64 = struct.Struct("<4sIQI")


class ArchiveError(ValueError):
    """A file the reader refuses: ``str(error)`` is ``"<name>: <reason>"``; ``name`` and
    ``reason`` are kept apart for callers that phrase their own message."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name, self.reason = name, reason


class ArrayHeader(NamedTuple):
    """What an ``.npy`` header declares: ``offset`` is where the data start, counted from
    the start of the ``.npy`` bytes; ``nbytes`` is the data's size (shape x item size)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    offset: int
    nbytes: int


def open_regular(path, name: str | None = None) -> io.BufferedReader:
    """``path`` opened for reading, if it is a regular file (``ArchiveError`` otherwise:
    missing, a directory, a FIFO, a device, a socket, unreadable). The file is opened
    non-blocking and checked with ``fstat`` before anything is read, so a FIFO never
    blocks, even one put in place after a check of the name."""
    name = str(path) if name is None else name
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ArchiveError(name, "no such file") from None
    except OSError as error:
        raise ArchiveError(name, f"cannot be opened ({error.strerror or error})") from None
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        what = ("a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise ArchiveError(name, f"is {what}; only a regular file is read")
    if hasattr(os, "set_blocking"):
        os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "rb")


def read_header(stream, name: str, what: str = "the array") -> ArrayHeader:
    """The header of the ``.npy`` bytes at ``stream``'s position (left just after it).

    numpy's reader with ``max_header_size`` parses it; versions 1.0 and 2.0 only; object
    dtypes and negative sizes are refused. Everything refused is an :class:`ArchiveError`.
    """
    fmt = np.lib.format
    start = stream.tell()
    readers = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}
    try:
        version = fmt.read_magic(stream)
        if version not in readers:
            raise ValueError(f"unsupported .npy format version {version}")
        shape, fortran_order, dtype = readers[version](stream, max_header_size=MAX_HEADER_BYTES)
        offset = stream.tell() - start
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as error:  # the zip member, not the header
        raise ArchiveError(name, f"{what} cannot be read (a damaged member: {type(error).__name__}: "
                                 f"{str(error)[:120]})") from None
    except Exception as error:  # noqa: BLE001 - numpy raises ValueError, SyntaxError, TokenError...
        raise ArchiveError(name, f"{what} is not a NumPy .npy array with a readable header "
                                 f"({type(error).__name__}: {str(error)[:120]})") from None
    if dtype.hasobject:
        raise ArchiveError(name, f"{what} holds Python objects (never unpickled); "
                                 f"only arrays of numbers or text are read")
    if any(not isinstance(size, int) or size < 0 for size in shape):
        raise ArchiveError(name, f"{what} declares an invalid shape {shape}")
    return ArrayHeader(tuple(shape), dtype, bool(fortran_order), offset,
                       math.prod(shape) * dtype.itemsize)


def _check_total(name: str, total: int, limit: int) -> None:
    if total > limit:
        raise ArchiveError(name, f"its arrays declare {total} bytes of data; at most {limit} "
                                 f"bytes are read from such a file")


def _array(name: str, what: str, stream, header: ArrayHeader) -> np.ndarray:
    """The data of ``header`` read from ``stream`` into a buffer of exactly its size
    (the stream must then be at its end)."""
    try:
        buffer = bytearray(header.nbytes)
    except MemoryError:
        raise ArchiveError(name, f"{what} needs {header.nbytes} bytes, more memory than is free") from None
    view, done = memoryview(buffer), 0
    try:
        while done < header.nbytes:
            got = stream.readinto(view[done:])
            if not got:
                break
            done += got
        extra = stream.read(1)
    except Exception as error:  # noqa: BLE001 - zipfile: BadZipFile (CRC), zlib.error, EOFError...
        raise ArchiveError(name, f"{what} cannot be read ({type(error).__name__}: {str(error)[:120]})") from None
    if done != header.nbytes or extra:
        raise ArchiveError(name, f"{what} holds {'fewer' if done < header.nbytes else 'more'} bytes "
                                 f"than its header declares (a damaged file)")
    if header.dtype.itemsize == 0:
        return np.zeros(header.shape, header.dtype)
    order = "F" if header.fortran_order else "C"
    return np.frombuffer(buffer, dtype=header.dtype).reshape(header.shape, order=order)


def _source(source, name: str | None) -> tuple[object, str, bool]:
    """``(file object, name, opened here)`` for a path, bytes or a binary file object."""
    if isinstance(source, (str, os.PathLike)):
        return open_regular(source, name), str(source) if name is None else name, True
    if isinstance(source, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(source)), name or "data", False
    if hasattr(source, "read") and hasattr(source, "seek"):
        return source, name or str(getattr(source, "name", "the file")), False
    raise ArchiveError(name or "data", f"is a {type(source).__name__}; expected a path, bytes or a "
                                       "binary file object")


def npy_header(source, name: str | None = None, *, limit: int = MAX_ARCHIVE_BYTES,
               accept: Callable[[ArrayHeader], None] | None = None) -> ArrayHeader:
    """The header of an ``.npy`` file (path, bytes or file object), checked: its data
    exactly fill the rest of the file and are at most ``limit`` bytes; ``accept(header)``
    may add the caller's own checks (raising ``ValueError``)."""
    stream, name, opened = _source(source, name)
    try:
        return _npy_header(stream, name, limit, accept)
    finally:
        if opened:
            stream.close()


def _npy_header(stream, name: str, limit: int, accept) -> ArrayHeader:
    try:
        start, end = stream.tell(), stream.seek(0, io.SEEK_END)
        stream.seek(start)
    except (OSError, ValueError) as error:
        raise ArchiveError(name, f"cannot be read ({error})") from None
    if end - start == 0:
        raise ArchiveError(name, "is empty")
    header = read_header(stream, name)
    if accept is not None:
        accept(header)
    _check_total(name, header.nbytes, limit)
    if end - start != header.offset + header.nbytes:
        more = "more" if end - start > header.offset + header.nbytes else "fewer"
        raise ArchiveError(name, f"holds {more} bytes than its header declares ({end - start - header.offset} "
                                 f"where it declares {header.nbytes}: a damaged or rewritten file)")
    return header


def read_npy(source, name: str | None = None, *, limit: int = MAX_ARCHIVE_BYTES,
             accept: Callable[[ArrayHeader], None] | None = None) -> np.ndarray:
    """The array of an ``.npy`` file (path, bytes or file object), read as
    :func:`npy_header` checks it: nothing is allocated before the header passes."""
    stream, name, opened = _source(source, name)
    try:
        header = _npy_header(stream, name, limit, accept)
        return _array(name, "the array", stream, header)
    finally:
        if opened:
            stream.close()


class MappedArray:
    """The array ``header`` declares, whose ``.npy`` bytes start at ``offset`` in the file
    ``path`` (a ``.npy`` file: 0; a stored ``.npz`` member: :meth:`NpzArchive.data_offset`
    less ``header.offset``), as ``dask.array.from_array`` reads it: ``shape``, ``dtype``,
    and ``__getitem__`` through a fresh memory map of the file, each time checked to be the
    regular file first opened, unchanged (size, modification time, inode): a rewritten
    file is refused (``ValueError``), never read as other rows."""

    def __init__(self, path: Path, offset: int, header: ArrayHeader):
        self.path = str(path.resolve())
        self.offset = offset + header.offset
        self.shape, self.dtype, self.ndim = header.shape, header.dtype, len(header.shape)
        self.order = "F" if header.fortran_order else "C"
        with open_regular(self.path, str(path)) as handle:
            self.identity = _identity(os.fstat(handle.fileno()))

    def __getitem__(self, index) -> np.ndarray:
        with open_regular(self.path) as handle:
            if _identity(os.fstat(handle.fileno())) != self.identity:
                raise ValueError(f"{self.path} changed since open_rows opened it (its size, time or inode "
                                 f"differ); open it again")
            mapped = np.memmap(handle, dtype=self.dtype, mode="r", offset=self.offset, shape=self.shape,
                               order=self.order)
            try:
                return np.array(mapped[index])
            finally:
                del mapped


def _identity(status: os.stat_result) -> tuple[int, int, int, int]:
    return (status.st_size, status.st_mtime_ns, status.st_ino, status.st_dev)


class _Entry(NamedTuple):
    info: zipfile.ZipInfo
    header: ArrayHeader
    data_start: int  # where the member's stored bytes start in the file


class NpzArchive(Mapping):
    """An ``.npz`` archive checked by :func:`open_npz`; a mapping from each array's name
    (its member's name without ``.npy``) to the array, read when asked for (at most the
    bytes its header declared). :meth:`header` gives what an array declares without
    reading it; :meth:`data_offset` where a stored member's data lie in the file.
    Close it (or use ``with``) when done; reading after that is an :class:`ArchiveError`."""

    def __init__(self, zip_file: zipfile.ZipFile, stream, name: str, entries: dict[str, _Entry], opened: bool):
        self.name = name
        self._zip, self._stream, self._entries, self._opened = zip_file, stream, entries, opened

    def __getitem__(self, key: str) -> np.ndarray:
        entry = self._entries[key]  # KeyError for a missing name, as a Mapping does
        if self._zip is None:
            raise ArchiveError(self.name, f"array {key!r} asked for after the archive was closed")
        what = f"array {key!r}"
        try:
            member = self._zip.open(entry.info)
            member.read(entry.header.offset)
        except Exception as error:  # noqa: BLE001 - BadZipFile, zlib.error, OSError...
            raise ArchiveError(self.name, f"{what} cannot be read ({type(error).__name__}: "
                                          f"{str(error)[:120]})") from None
        with member:
            return _array(self.name, what, member, entry.header)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __contains__(self, key) -> bool:  # Mapping's own would read the array
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def header(self, key: str) -> ArrayHeader:
        """What the array ``key`` declares (shape, dtype, size), nothing read."""
        return self._entries[key].header

    def compressed(self, key: str) -> bool:
        return self._entries[key].info.compress_type != zipfile.ZIP_STORED

    def data_offset(self, key: str) -> int | None:
        """Where the array's data start in the file (a stored member: it can be memory
        mapped), or None for a compressed one."""
        entry = self._entries[key]
        return None if self.compressed(key) else entry.data_start + entry.header.offset

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
            if self._opened:
                self._stream.close()
            self._zip = None

    def __enter__(self) -> "NpzArchive":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_npz(source, name: str | None = None, *, limit: int = MAX_ARCHIVE_BYTES, stored_only: bool = False,
             accept: Callable[[str, ArrayHeader], None] | None = None) -> NpzArchive:
    """An ``.npz`` archive (path, bytes or binary file object) as an :class:`NpzArchive`,
    after every check of the module docstring; nothing but headers is read.

    ``limit``: the most bytes of array data all members may declare together.
    ``stored_only``: refuse compressed members (``np.savez`` never compresses).
    ``accept(key, header)``: the caller's own checks of each array before any is read.
    """
    stream, name, opened = _source(source, name)
    try:
        zip_file, entries = _check_zip(stream, name, limit, stored_only, accept)
    except BaseException:
        if opened:
            stream.close()
        raise
    return NpzArchive(zip_file, stream, name, entries, opened)


def read_npz(source, name: str | None = None, **options) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive, as :func:`open_npz` checks it (same options)."""
    with open_npz(source, name, **options) as archive:
        return {key: archive[key] for key in archive}


def _check_zip(stream, name: str, limit: int, stored_only: bool, accept) -> tuple[zipfile.ZipFile, dict]:
    try:
        size = stream.seek(0, io.SEEK_END)
        stream.seek(0)
    except (OSError, ValueError) as error:
        raise ArchiveError(name, f"cannot be read ({error})") from None
    if size == 0:
        raise ArchiveError(name, "is empty")
    head = stream.read(6)
    stream.seek(0)
    if head.startswith(b"\x93NUMPY"):
        raise ArchiveError(name, "is a single .npy array, not an .npz archive")
    count, directory = _end_record(stream, size, name)
    try:
        zip_file = zipfile.ZipFile(stream)
    except Exception as error:  # noqa: BLE001 - BadZipFile, LargeZipFile, OSError, EOFError...
        raise ArchiveError(name, f"not an .npz archive (a zip of .npy arrays) or a damaged one "
                                 f"({type(error).__name__}: {str(error)[:120]})") from None
    try:
        return zip_file, _check_members(zip_file, stream, name, count, directory, limit, stored_only, accept)
    except BaseException:
        zip_file.close()
        raise


def _end_record(stream, size: int, name: str) -> tuple[int, int]:
    """The entry count and central directory offset the end record declares."""
    tail_start = max(0, size - (_END.size + 65535))
    stream.seek(tail_start)
    tail = stream.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _END.size:
        raise ArchiveError(name, "not an .npz archive (a zip of .npy arrays): no zip end record")
    _, disk, _, _, count, _, directory, _ = _END.unpack_from(tail, at)
    if count == 0xFFFF or directory == 0xFFFFFFFF:  # zip64: the locator precedes the end record
        where = tail_start + at - _LOCATOR64.size
        if where < 0:
            raise ArchiveError(name, "a zip64 archive without its zip64 end record (damaged)")
        stream.seek(where)
        signature, _, end64, _ = _LOCATOR64.unpack(stream.read(_LOCATOR64.size))
        stream.seek(min(end64, size))
        record = stream.read(_END64.size)
        if signature != b"PK\x06\x07" or len(record) < _END64.size or record[:4] != b"PK\x06\x06":
            raise ArchiveError(name, "a zip64 archive with a damaged zip64 end record")
        _, _, _, _, _, _, _, count, _, directory = _END64.unpack(record)
    if disk:
        raise ArchiveError(name, "a multi-disk zip archive; only a single file is read")
    return count, directory


def _check_members(zip_file, stream, name, count, directory, limit, stored_only, accept) -> dict:
    infos = zip_file.infolist()
    if len(infos) != count:
        raise ArchiveError(name, f"its zip directory lists {len(infos)} members where its end record "
                                 f"counts {count} (a damaged archive that would hide a member)")
    spans, names = [], set()
    for info in infos:
        if not info.filename.endswith(".npy"):
            raise ArchiveError(name, f"member {info.filename!r} is not an .npy array")
        if info.filename in names:
            raise ArchiveError(name, f"member {info.filename!r} appears twice")
        names.add(info.filename)
        if info.flag_bits & 0x1:
            raise ArchiveError(name, f"member {info.filename!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ArchiveError(name, f"member {info.filename!r} uses zip compression method "
                                     f"{info.compress_type}; only stored or deflated members are read")
        if stored_only and info.compress_type != zipfile.ZIP_STORED:
            raise ArchiveError(name, f"member {info.filename!r} is compressed (np.savez never compresses)")
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            raise ArchiveError(name, f"member {info.filename!r} is stored with two different sizes")
        if info.header_offset < 0:
            raise ArchiveError(name, f"member {info.filename!r} starts before the archive (damaged)")
        try:
            spans.append((info.header_offset, *_local_span(stream, name, info), info))
        except (OSError, ValueError, struct.error) as error:
            if isinstance(error, ArchiveError):
                raise
            raise ArchiveError(name, f"member {info.filename!r} cannot be read ({error})") from None
    ordered = list(spans)
    spans.sort(key=lambda span: span[:2])
    for first, second in zip(spans, spans[1:]):
        if second[0] < first[2]:
            raise ArchiveError(name, f"members {first[3].filename!r} and {second[3].filename!r} overlap "
                                     "(the same bytes would be read twice: a zip bomb)")
    if spans and spans[-1][2] > directory:
        raise ArchiveError(name, f"member {spans[-1][3].filename!r} runs into the zip directory")
    entries, total = {}, 0
    for _, data_start, _, info in ordered:
        key, what = info.filename[:-4], f"array {info.filename[:-4]!r}"
        try:
            with zip_file.open(info) as member:
                header = read_header(member, name, what)
        except ArchiveError:
            raise
        except Exception as error:  # noqa: BLE001 - zipfile's own checks of the local header
            raise ArchiveError(name, f"{what} cannot be read ({type(error).__name__}: {str(error)[:120]})") from None
        if accept is not None:
            accept(key, header)
        if header.offset + header.nbytes != info.file_size:
            raise ArchiveError(name, f"{what}: its header announces {header.offset + header.nbytes} bytes, "
                                     f"its member holds {info.file_size}")
        total += header.nbytes
        entries[key] = _Entry(info, header, data_start)
    _check_total(name, total, limit)
    return entries


def _local_span(stream, name: str, info: zipfile.ZipInfo) -> tuple[int, int]:
    """Where the member's stored bytes start, and where its record ends (after its data and
    data descriptor), from its local header, checked against the directory."""
    stream.seek(info.header_offset)
    raw = stream.read(_LOCAL.size)
    if len(raw) < _LOCAL.size or raw[:4] != b"PK\x03\x04":
        raise ArchiveError(name, f"member {info.filename!r} has no local header where the directory says")
    (_, _, flags, method, _, _, _, compressed, _, name_length, extra_length) = _LOCAL.unpack(raw)
    local_name = stream.read(name_length)
    extra = stream.read(extra_length)
    if method != info.compress_type or local_name != info.orig_filename.encode(
            "utf-8" if info.flag_bits & 0x800 else "cp437", errors="replace"):
        raise ArchiveError(name, f"member {info.filename!r}: its local header disagrees with the directory")
    data_start = info.header_offset + _LOCAL.size + name_length + extra_length
    if not flags & 0x8 and compressed != 0xFFFFFFFF and compressed != info.compress_size:
        raise ArchiveError(name, f"member {info.filename!r}: its local header disagrees with the directory")
    end = data_start + info.compress_size
    if flags & 0x8:  # a data descriptor follows the data
        stream.seek(end)
        signed = stream.read(4) == b"PK\x07\x08"
        end += 4 * signed + 4 + (16 if _has_zip64(extra) else 8)
    return data_start, end


def _has_zip64(extra: bytes) -> bool:
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<HH", extra, at)
        if kind == 0x0001:
            return True
        at += 4 + length
    return False
