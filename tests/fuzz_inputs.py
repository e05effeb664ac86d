"""Hostile inputs for the entry-point fuzz suite (tests/test_fuzz_entry_points.py).

Inputs are plain descriptions, built into bytes or files only inside the child process that
runs them (tests/fuzz_runner.py), so one family's memory is measured on its own:

- :class:`Payload`: bytes, with the suffix they travel under (a file name's or a key's);
- :class:`Special`: a path that is not a regular file with data: a FIFO (``os.mkfifo``),
  a directory, a dangling symlink, an empty file, a symlink to ``/dev/zero``.

Builders of valid samples (a sketch's bytes, a state file, data files) and of the archive
attacks: stored members that overlap (each one's data spans the later ones: a zip bomb that
every per-member check passes), a compressed member that inflates to 512 MiB, a central
directory whose comment length hides the last member, ``.npy`` headers that declare huge
shapes, and the hypothesis strategies of random and mutated bytes (bit flips, truncations,
splices of a valid sample).
"""

from __future__ import annotations

import functools
import io
import os
import struct
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

__all__ = ["Payload", "Special", "SPECIALS", "materialize", "npy_bytes", "npy_header_bytes", "npz_bytes",
           "overlapping_npz", "hide_last_member", "inflating_member", "mutations", "random_bytes",
           "huge_shape_npy", "scaled_rows"]


@dataclass(frozen=True)
class Payload:
    """Bytes to read, as a file named ``*<suffix>`` or given directly; ``label`` says what they are."""

    data: bytes
    suffix: str = ".npz"
    label: str = ""

    def __repr__(self) -> str:  # tallies and failure messages name the input, not 500 kB of it
        return f"Payload({self.label or 'bytes'}, {len(self.data)} B, {self.suffix})"


@dataclass(frozen=True)
class Special:
    """A path that is not a regular file with data: ``kind`` in :data:`SPECIALS`."""

    kind: str
    suffix: str = ".npy"


SPECIALS = ("fifo", "directory", "dangling symlink", "empty file", "dev zero", "missing")


def materialize(value, folder: Path, stem: str = "input") -> Path:
    """``value`` (a :class:`Payload` or :class:`Special`) as a path in ``folder``."""
    path = folder / f"{stem}{value.suffix}"
    if isinstance(value, Payload):
        path.write_bytes(value.data)
    elif value.kind == "fifo":
        os.mkfifo(path)
    elif value.kind == "directory":
        path.mkdir()
    elif value.kind == "dangling symlink":
        path.symlink_to(folder / "nothing-here.npy")
    elif value.kind == "empty file":
        path.write_bytes(b"")
    elif value.kind == "dev zero":
        path.symlink_to("/dev/zero")
    elif value.kind != "missing":
        raise AssertionError(f"unknown special file {value.kind!r}")
    return path


# -- valid samples -------------------------------------------------------------------------

def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def npz_bytes(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def scaled_rows(n: int, d: int, scale: float, seed: int = 0) -> np.ndarray:
    """n x d ordinary rows times ``scale`` (1e-300 .. 1e300: the scale extremes)."""
    with np.errstate(over="ignore", under="ignore"):
        return np.random.default_rng(seed).standard_normal((n, d)) * np.linspace(2.0, 0.2, d) * scale


def npy_header_bytes(descr: str, shape: tuple, fortran: bool = False, total: int = 128) -> bytes:
    """A version 1.0 ``.npy`` header of exactly ``total`` bytes, declaring what it is told
    (no data is checked against it: the point is a header that lies)."""
    text = repr({"descr": descr, "fortran_order": fortran, "shape": tuple(shape)}).encode()
    padding = total - 10 - len(text) - 1
    assert padding >= 0, "header too long for its block"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", total - 10) + text + b" " * padding + b"\n"


def huge_shape_npy(shape: tuple, descr: str = "<f8", data: bytes = b"\0" * 64) -> bytes:
    """A ``.npy`` whose header declares ``shape`` with only ``data`` behind it."""
    return npy_header_bytes(descr, shape) + data


# -- zip attacks -----------------------------------------------------------------------------

_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
_END = struct.Struct("<4sHHHHIIH")


def _zip(records: list[tuple[str, int, int, int, int, int]], body: bytes) -> bytes:
    """``body`` (local headers and data) followed by a central directory listing
    ``records``: (name, local header offset, crc, compressed size, size, method)."""
    central = b""
    for name, offset, crc, compressed, size, method in records:
        central += _CENTRAL.pack(b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, compressed, size,
                                 len(name), 0, 0, 0, 0, 0, offset) + name.encode()
    end = _END.pack(b"PK\x05\x06", 0, 0, len(records), len(records), len(central), len(body), 0)
    return body + central + end


def _local(name: str, crc: int, compressed: int, size: int, method: int = 0) -> bytes:
    return _LOCAL.pack(b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, compressed, size, len(name), 0) + name.encode()


def _members(valid: bytes) -> list[tuple[str, bytes]]:
    """The (name, stored bytes) of every member of a valid ``np.savez`` archive."""
    import zipfile

    with zipfile.ZipFile(io.BytesIO(valid)) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


@functools.lru_cache(maxsize=4)
def overlapping_npz(valid: bytes, copies: int = 2000, filler: int = 100_000) -> bytes:
    """``valid``'s members, then ``copies`` stored ``.npy`` members of uint8 whose data each
    spans every later member (a local header and an ``.npy`` header each) and ``filler``
    zero bytes: every member's CRC, size and header are right, the members overlap. About
    ``copies * 170 + filler`` bytes that a naive reader inflates to ``copies / 2`` times that."""
    body, records = b"", []
    for name, data in _members(valid):
        crc = zlib.crc32(data)
        records.append((name, len(body), crc, len(data), len(data), 0))
        body += _local(name, crc, len(data), len(data)) + data
    names = [f"b{k:05d}.npy" for k in range(copies)]
    rest = bytes(filler)  # what follows the k-th member's .npy header, built back to front
    chain = []
    for name in reversed(names):
        data = npy_header_bytes("|u1", (len(rest),)) + rest
        crc = zlib.crc32(data)
        chain.append((name, crc, len(data)))
        rest = _local(name, crc, len(data), len(data)) + data
    offset = len(body)
    body += rest
    for name, crc, size in reversed(chain):
        records.append((name, offset, crc, size, size, 0))
        offset += _LOCAL.size + len(name) + 128  # the next member starts inside this one's data
    return _zip(records, body)


def hide_last_member(valid: bytes) -> bytes:
    """``valid`` with the comment length of its next-to-last central directory record raised
    to cover the last record: ``zipfile`` reads one member fewer, and nothing else differs."""
    end = valid.rindex(b"PK\x05\x06")
    _, _, _, _, count, size, start, _ = _END.unpack_from(valid, end)
    offsets, position = [], start
    for _ in range(count):
        offsets.append(position)
        fields = _CENTRAL.unpack_from(valid, position)
        position += _CENTRAL.size + fields[10] + fields[11] + fields[12]
    last_size = end - offsets[-1]
    patched = bytearray(valid)
    struct.pack_into("<H", patched, offsets[-2] + 32, last_size)
    return bytes(patched)


_CACHE = Path(tempfile.gettempdir()) / f"explorer-fuzz-cache-{os.getuid()}"


def _zero_deflate(size: int) -> tuple[bytes, int]:
    """The raw deflate stream of ``size`` zero bytes and its CRC, computed once per machine
    (2-3 s of CPU for 512 MiB) and kept in the temporary folder."""
    path = _CACHE / f"zeros-{size}.deflate"
    if not path.exists():
        _CACHE.mkdir(exist_ok=True)
        compressor, crc, chunk, parts = zlib.compressobj(9, zlib.DEFLATED, -15), 0, bytes(1 << 20), []
        for _ in range(size >> 20):
            parts.append(compressor.compress(chunk))
            crc = zlib.crc32(chunk, crc)
        parts.append(compressor.flush())
        scratch = path.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_bytes(struct.pack("<I", crc) + b"".join(parts))
        os.replace(scratch, path)
    blob = path.read_bytes()
    return blob[4:], struct.unpack("<I", blob[:4])[0]


def inflating_member(valid: bytes, name: str = "padding.npy", size: int = 512 << 20) -> bytes:
    """``valid``'s members (stored) plus one deflated ``.npy`` member of ``size`` bytes of
    zeros (about 1/1000 of that on disk): what ``np.savez_compressed`` writes for a huge
    zero array."""
    header = npy_header_bytes("|u1", (size,))
    zeros, crc_zeros = _zero_deflate(size)
    # the member is the header (a stored deflate block) followed by the zeros' stream
    stored = b"\x00" + struct.pack("<HH", len(header), 0xFFFF ^ len(header)) + header
    compressed = stored + zeros
    crc = zlib.crc32(header)
    crc = _crc_combine(crc, crc_zeros, size)
    body, records = b"", []
    for member, data in _members(valid):
        member_crc = zlib.crc32(data)
        records.append((member, len(body), member_crc, len(data), len(data), 0))
        body += _local(member, member_crc, len(data), len(data)) + data
    records.append((name, len(body), crc, len(compressed), len(header) + size, 8))
    body += _local(name, crc, len(compressed), len(header) + size, method=8) + compressed
    return _zip(records, body)


def _crc_combine(crc1: int, crc2: int, length2: int) -> int:
    """zlib's crc32_combine (the CRC of A + B from those of A and B and B's length)."""
    def times(matrix, vector):
        total, i = 0, 0
        while vector:
            if vector & 1:
                total ^= matrix[i]
            vector >>= 1
            i += 1
        return total

    def square(matrix):
        return [times(matrix, matrix[n]) for n in range(32)]

    odd = [0xEDB88320] + [1 << n for n in range(31)]
    even = square(odd)
    odd = square(even)
    while True:
        even = square(odd)
        if length2 & 1:
            crc1 = times(even, crc1)
        length2 >>= 1
        if not length2:
            break
        odd = square(even)
        if length2 & 1:
            crc1 = times(odd, crc1)
        length2 >>= 1
        if not length2:
            break
    return crc1 ^ crc2


# -- random and mutated bytes ---------------------------------------------------------------

MAGICS = [b"", b"PK\x03\x04", b"PK\x05\x06", b"\x93NUMPY\x01\x00", b"\x93NUMPY\x02\x00", b"\x93NUMPY\x03\x00"]


def random_bytes(max_size: int = 2000):
    """Random bytes, some behind a zip or ``.npy`` magic number."""
    return st.builds(lambda magic, tail: magic + tail, st.sampled_from(MAGICS), st.binary(max_size=max_size))


@st.composite
def mutations(draw, samples: list[bytes]):
    """One of ``samples`` with bit flips, a truncation, an overwritten byte run, or spliced
    with another sample (or itself at another offset)."""
    data = bytearray(draw(st.sampled_from(samples)))
    how = draw(st.sampled_from(["flip", "flip", "truncate", "splice", "overwrite", "flip header"]))
    if how in ("flip", "flip header"):
        top = min(len(data), 200) if how == "flip header" else len(data)
        for _ in range(draw(st.integers(1, 8))):
            data[draw(st.integers(0, top - 1))] ^= 1 << draw(st.integers(0, 7))
    elif how == "truncate":
        data = data[:draw(st.integers(0, len(data) - 1))]
    elif how == "overwrite":
        start = draw(st.integers(0, len(data) - 1))
        run = draw(st.binary(min_size=1, max_size=16))
        data[start:start + len(run)] = run
    else:
        other = draw(st.sampled_from(samples))
        cut, join = draw(st.integers(0, len(data))), draw(st.integers(0, len(other)))
        data = data[:cut] + other[join:]
    return how, bytes(data)
