"""The bounded archive reader (explorer.archive) and every reader that goes through it:
the byte format (from_bytes), state files (load_state), data files (open_rows,
sketch_array) and uploads. Each attack is an archive built by hand (small: the reader
must refuse it before reading what it declares), and each must be a ValueError naming the
file and the reason, never another exception, a hang or numpy's pickle advice.

``ARCHIVE_REPORT=path.json`` writes the tally per category (inputs, refused, accepted,
other exceptions, worst traced peak).
"""

from __future__ import annotations

import io
import json
import os
import re
import struct
import tracemalloc
import zlib
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import given, strategies as st

import explorer
from explorer import FrequentDirections, GeneralizedFrequentDirections, RobustFrequentDirections, merge
from explorer.archive import ArchiveError, open_npz, read_npy, read_npz
from explorer.dashboard.upload import parse_upload
from explorer.distributed import certified_bounds, open_rows, sketch_array
from explorer.merging import FORMAT, FORMAT_VERSION
from explorer.state import load_state, save_state

TALLY: dict[str, Counter] = defaultdict(Counter)
PEAK: dict[str, int] = defaultdict(int)


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    path = os.environ.get("ARCHIVE_REPORT")
    if path:
        with open(path, "w") as handle:
            json.dump({kind: {**tally, "peak_bytes": PEAK[kind]} for kind, tally in TALLY.items()}, handle, indent=1)


def outcome(category: str, call, *, peak_at_most: int | None = None):
    """Run ``call``: a clean ValueError (returned) or a value; anything else fails the test.
    Traces the peak of Python and numpy allocations."""
    tracemalloc.start()
    try:
        result = call()
    except ValueError as error:
        result = error
    except BaseException as error:  # noqa: BLE001 - the point of the test
        TALLY[category]["other exceptions"] += 1
        raise AssertionError(f"{category}: {type(error).__name__} escaped: {error}") from error
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    TALLY[category]["inputs"] += 1
    TALLY[category]["refused" if isinstance(result, ValueError) else "accepted"] += 1
    PEAK[category] = max(PEAK[category], peak)
    if isinstance(result, ValueError):
        message = str(result)
        assert "allow_pickle" not in message and "trust" not in message, message
    if peak_at_most is not None:
        assert peak <= peak_at_most, f"{category}: peak {peak} bytes > {peak_at_most}"
    return result


def refused(category: str, call, match: str, **options) -> str:
    result = outcome(category, call, **options)
    assert isinstance(result, ValueError), f"accepted: {result!r}"
    assert match in str(result), str(result)
    return str(result)


# -- building archives by hand ------------------------------------------------------------------

def npy_header(shape, descr="|u1", body: str | None = None) -> bytes:
    buffer = io.BytesIO()
    if body is None:
        np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
        return buffer.getvalue()
    raw = body.encode("latin1")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(raw)) + raw


def local_header(name: bytes, crc: int, compressed: int, size: int, method: int = 0) -> bytes:
    return struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0, crc, compressed, size,
                       len(name), 0) + name


def central(name: bytes, crc: int, compressed: int, size: int, offset: int, method: int = 0,
            comment_length: int = 0) -> bytes:
    return struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc, compressed, size,
                       len(name), 0, comment_length, 0, 0, 0, offset) + name


def end_record(count: int, size: int, offset: int) -> bytes:
    return struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count, count, size, offset, 0)


def zip_of(members) -> bytes:
    """A zip of ``(name, stored bytes, crc, declared size, method)`` laid out one after another."""
    body, directory = b"", b""
    for name, data, crc, size, method in members:
        name = name.encode()
        directory += central(name, crc, len(data), size, len(body), method)
        body += local_header(name, crc, len(data), size, method) + data
    return body + directory + end_record(len(members), len(directory), len(body))


def stored(name: str, data: bytes):
    return (name, data, zlib.crc32(data), len(data), 0)


def npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def overlapping_zip(members: int, tail: int) -> tuple[bytes, int]:
    """``members`` stored uint8 arrays, each one's data running over every later member to
    the end of a ``tail`` of zeros: CRCs and headers all true, the file about ``tail``
    bytes, what a reader that trusts the directory materializes about ``members * tail``.
    Returns the archive and that sum."""
    blob, sizes = bytes(tail), []
    headers = []
    for i in reversed(range(members)):
        data = npy_header((len(blob),)) + blob
        name = f"a{i}.npy".encode()
        header = local_header(name, zlib.crc32(data), len(data), len(data))
        headers.append((name, zlib.crc32(data), len(data), len(header) + len(data) - len(blob)))
        sizes.append(len(data))
        blob = header + data
    directory, offset = b"", 0
    for name, crc, size, step in reversed(headers):
        directory += central(name, crc, size, size, offset)
        offset += step
    return blob + directory + end_record(members, len(directory), len(blob)), sum(sizes)


def deflated_header_only(name: str, shape, descr: str) -> tuple:
    """A deflated member whose header declares ``shape`` of ``descr`` but whose stream holds
    only the header: nothing beyond it may be inflated or allocated."""
    header = npy_header(shape, descr)
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
    noise = np.random.default_rng(0).bytes(2 ** 15)  # more than a header's read inflates
    data = squeeze.compress(header + noise) + squeeze.flush(zlib.Z_SYNC_FLUSH)
    size = len(header) + int(np.prod(shape)) * np.dtype(descr).itemsize
    return (name, data, 0, size, 8)


def flip_comment_length(data: bytes) -> bytes:
    """Make the second-to-last central record's comment swallow the last record (zipfile then
    lists one member less: the last one, frobenius_squared for a sketch)."""
    start = struct.unpack_from("<I", data, len(data) - 6)[0]
    records, at = [], start
    while data[at:at + 4] == b"PK\x01\x02":
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", data, at + 28)
        records.append(at)
        at += 46 + name_length + extra_length + comment_length
    last = records[-1]
    swallowed = records[-1] - 0
    length = (at - last)
    out = bytearray(data)
    struct.pack_into("<H", out, records[-2] + 32, length)
    assert swallowed
    return bytes(out)


def fd(d=3, m=2, rows=8, seed=0, cls=FrequentDirections, **options):
    sk = cls(d, m, **options)
    sk.extend(np.random.default_rng(seed).standard_normal((rows, d)))
    return sk


def savez(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def byte_state(sk, **changes) -> bytes:
    return savez(**{"format": FORMAT, "format_version": FORMAT_VERSION, **sk.state_dict(), **changes})


# -- the byte format ---------------------------------------------------------------------------

def test_overlapping_stored_members_are_refused_before_any_is_read():
    data, materialized = overlapping_zip(members=24, tail=2 ** 20)
    assert materialized > 20 * len(data)  # what the old reader read: 24 MB from a 1 MB archive
    refused("byte format", lambda: explorer.sketch.from_bytes(data), "overlap", peak_at_most=len(data) + 2 ** 20)


def test_a_flipped_comment_length_that_hides_the_last_member_is_refused():
    data = FrequentDirections.from_bytes(fd().to_bytes()).to_bytes()
    damaged = flip_comment_length(data)
    assert len(np.load(io.BytesIO(damaged)).files) == len(np.load(io.BytesIO(data)).files) - 1
    refused("byte format", lambda: explorer.sketch.from_bytes(damaged), "end record counts")


def test_a_format_version_1_archive_without_frobenius_squared_is_refused():
    """The old-state fallback (||B||^2 + m Delta) is for state dicts, never for these bytes."""
    sk = fd(rows=30, d=5, m=3, seed=3)
    state = {"format": FORMAT, "format_version": FORMAT_VERSION, **sk.state_dict()}
    del state["frobenius_squared"]
    refused("byte format", lambda: explorer.sketch.from_bytes(savez(**state)), "without 'frobenius_squared'")
    refused("byte format", lambda: FrequentDirections.from_bytes(savez(**state)), "always writes")
    gfd = GeneralizedFrequentDirections(3, 2)
    gfd.extend(np.eye(3), [1.0, -1.0, 1.0])
    state = {"format": FORMAT, "format_version": FORMAT_VERSION, **gfd.state_dict()}
    del state["negative.frobenius_squared"]
    refused("byte format", lambda: explorer.sketch.from_bytes(savez(**state)), "'negative.frobenius_squared'")


def test_a_state_without_the_total_loads_with_bounds_that_agree():
    """A state dict saved before the total was kept: its lower bound keeps the tail bound
    at least the spectral error (||B||^2 + Delta gave 13.46 below 26.43)."""
    sk = fd(rows=30, d=5, m=3, seed=3)
    state = sk.state_dict()
    del state["frobenius_squared"]
    loaded = FrequentDirections.from_state_dict(state)
    bounds = certified_bounds(loaded)
    assert bounds["tail_bound"] >= bounds["spectral_error"] * (1 - 1e-9)
    assert loaded.frobenius_squared <= sk.frobenius_squared


def test_a_header_numpy_cannot_tokenize_is_a_value_error(tmp_path):
    header = npy_header(None, body="{'descr': '<f8', 'fortran_order': False, 'shape': (3,\n")
    member = header + bytes(24)
    data = zip_of([stored("format.npy", npy(np.array(FORMAT))), stored("buffer.npy", member)])
    refused("byte format", lambda: explorer.sketch.from_bytes(data), "readable header")
    (tmp_path / "bad.npz").write_bytes(data)
    refused("state files", lambda: load_state(tmp_path / "bad.npz"), "readable header")
    (tmp_path / "bad.npy").write_bytes(member)
    refused("data files", lambda: open_rows(tmp_path / "bad.npy"), "readable header")
    refused("uploads", lambda: parse_upload("bad.npy", member), "not a NumPy .npy array")


def test_huge_settings_in_a_small_archive_are_refused_before_allocating():
    for cls in (FrequentDirections, RobustFrequentDirections):
        data = byte_state(fd(cls=cls), d=10 ** 6, m=10 ** 6)
        assert len(data) < 4000
        refused("byte format", lambda: explorer.sketch.from_bytes(data), "'buffer' must be an array of shape",
                peak_at_most=2 ** 20)
    gfd = GeneralizedFrequentDirections(3, 2)
    data = byte_state(gfd, d=10 ** 6, m=10 ** 6)
    refused("byte format", lambda: explorer.sketch.from_bytes(data), "'positive.buffer' must be",
            peak_at_most=2 ** 20)


def test_impossible_totals_and_counters_are_refused():
    sk = FrequentDirections(3, 4)
    sk.extend(np.eye(3))  # no shrink: ||A||^2 is exactly ||B||^2 = 3
    for changes, match in [({"frobenius_squared": 1e300}, "frobenius_squared"),
                           ({"frobenius_squared": 3.5}, "frobenius_squared"),
                           ({"n_seen": 2 ** 64 - 1}, "2**53"),
                           ({"n_seen": 2 ** 53 + 1}, "2**53"),
                           ({"n_shrinks": 2 ** 63 - 1}, "2**53")]:
        refused("byte format", lambda: explorer.sketch.from_bytes(byte_state(sk, **changes)), match)
        with pytest.raises(ValueError, match=re.escape(match)):
            FrequentDirections.from_state_dict({**sk.state_dict(), **changes})
    shrunk = fd(d=4, m=2, rows=20)  # with shrinks: within ||B||^2 + [m, min(capacity, d)] Delta
    high = np.sum(shrunk.rows ** 2) + 2 * shrunk.delta_total
    for total in (high * 1.01, 1e300, np.sum(shrunk.rows ** 2) + 1.5 * shrunk.delta_total):
        refused("byte format", lambda: explorer.sketch.from_bytes(byte_state(shrunk, frobenius_squared=total)),
                "frobenius_squared")


def test_to_bytes_never_writes_a_pickled_member():
    sk = fd()
    sk.n_seen = 2 ** 64  # past int64: numpy would store it as a pickled object
    with pytest.raises(ValueError, match="never stores a pickled object"):
        sk.to_bytes()


@given(st.data())
def test_every_state_a_run_writes_is_within_the_bounds(data):
    """Streams (exact and fast, tiny to huge scales, low rank) and merge trees: every state
    loads back (the mass invariant holds with its rounding slack)."""
    d = data.draw(st.integers(1, 7))
    m = data.draw(st.integers(2, 6))
    fast = data.draw(st.booleans())
    scale = 10.0 ** data.draw(st.sampled_from([-150, -40, 0, 40, 140]))
    rank = data.draw(st.integers(1, d))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    parts = []
    for _ in range(data.draw(st.integers(1, 4))):
        rows = rng.standard_normal((data.draw(st.integers(0, 40)), rank)) @ rng.standard_normal((rank, d))
        noise = data.draw(st.sampled_from([0.0, 1e-9, 1e-14]))
        sk = FrequentDirections(d, m, fast=fast)
        sk.extend(scale * (rows + noise * rng.standard_normal(rows.shape)))
        parts.append(sk)
    for sk in [*parts, merge(parts, split_every=2)]:
        copy = outcome("byte format", lambda: explorer.sketch.from_bytes(sk.to_bytes()))
        assert not isinstance(copy, ValueError), copy
        assert copy.frobenius_squared == sk.frobenius_squared


def test_the_merge_message_names_the_class_once():
    with pytest.raises(ValueError) as error:
        FrequentDirections(3, 2).merge(FrequentDirections(3, 3))
    assert "FrequentDirectionss" not in str(error.value)
    assert "cannot merge two FrequentDirections sketches with different m: 2 and 3" in str(error.value)


@given(st.binary(min_size=1, max_size=400), st.integers(0, 10 ** 6))
def test_mutated_bytes_are_refused_or_sound(patch, where):
    sound = bytearray(fd().to_bytes())
    at = where % len(sound)
    sound[at:at + len(patch)] = patch[:len(sound) - at]
    result = outcome("byte format", lambda: explorer.sketch.from_bytes(bytes(sound)))
    if not isinstance(result, ValueError):
        assert FrequentDirections.from_state_dict(result.state_dict()).n_seen == result.n_seen


# -- state files -------------------------------------------------------------------------------

def test_an_extra_huge_compressed_member_is_never_inflated(tmp_path):
    path = tmp_path / "state.npz"
    np.savez_compressed(path, **fd().state_dict(), junk=np.zeros(2 ** 23))  # 64 MiB of zeros
    assert path.stat().st_size < 2 ** 20
    loaded = outcome("state files", lambda: load_state(path), peak_at_most=2 ** 20)
    assert loaded.n_seen == 8


def test_a_member_declaring_more_than_its_class_reads_is_refused_unread(tmp_path):
    path = tmp_path / "state.npz"
    state = fd().state_dict()
    np.savez_compressed(path, **{**state, "buffer": np.zeros((2 ** 21, 3))})  # 48 MiB declared
    refused("state files", lambda: load_state(path), "'buffer' must be", peak_at_most=2 ** 20)


def test_a_member_declaring_past_the_global_cap_is_refused(tmp_path):
    path = tmp_path / "state.npz"
    path.write_bytes(zip_of([stored("kind.npy", npy(np.array("FrequentDirections"))),
                             deflated_header_only("buffer.npy", (2 ** 28 + 1,), "<f8")]))
    refused("state files", lambda: load_state(path), "at most 2147483648 bytes", peak_at_most=2 ** 20)


@pytest.mark.timeout(30)
def test_special_files_and_non_archives_are_value_errors(tmp_path):
    fifo = tmp_path / "state.npz"
    os.mkfifo(fifo)
    refused("state files", lambda: load_state(fifo), "FIFO")
    refused("state files", lambda: load_state(tmp_path), "directory")
    refused("state files", lambda: load_state(tmp_path / "missing.npz"), "no such file")
    (tmp_path / "empty.npz").write_bytes(b"")
    refused("state files", lambda: load_state(tmp_path / "empty.npz"), "empty")
    np.save(tmp_path / "array.npy", np.eye(2))
    refused("state files", lambda: load_state(tmp_path / "array.npy"), "not an .npz archive")
    (tmp_path / "garbage.npz").write_bytes(b"PK\x03\x04 not really a zip")
    refused("state files", lambda: load_state(tmp_path / "garbage.npz"), "not an .npz archive")
    np.savez(tmp_path / "objects.npz", kind=np.array([object()], dtype=object), allow_pickle=True)
    refused("state files", lambda: load_state(tmp_path / "objects.npz"), "Python objects")
    np.savez(tmp_path / "nokind.npz", a=np.eye(2))
    refused("state files", lambda: load_state(tmp_path / "nokind.npz"), "no 'kind'")


def test_overlapping_and_hidden_members_in_a_state_file(tmp_path):
    data, _ = overlapping_zip(members=8, tail=2 ** 18)
    (tmp_path / "bomb.npz").write_bytes(data)
    refused("state files", lambda: load_state(tmp_path / "bomb.npz"), "overlap", peak_at_most=2 ** 20)
    buffer = io.BytesIO()
    save_state(fd(), buffer)
    (tmp_path / "hidden.npz").write_bytes(flip_comment_length(buffer.getvalue()))
    refused("state files", lambda: load_state(tmp_path / "hidden.npz"), "end record counts")


def test_sound_state_files_load(tmp_path):
    for i, sk in enumerate([fd(), fd(cls=RobustFrequentDirections, alpha0=0.5), fd(d=5, m=3, rows=40)]):
        save_state(sk, tmp_path / f"s{i}.npz")
        loaded = outcome("state files", lambda: load_state(tmp_path / f"s{i}.npz"))
        assert loaded.state_dict().keys() == sk.state_dict().keys()
        assert np.array_equal(loaded.sketch, sk.sketch)
    buffer = io.BytesIO()
    save_state(fd(), buffer)
    buffer.seek(0)
    assert outcome("state files", lambda: load_state(buffer)).n_seen == 8


@given(st.binary(min_size=1, max_size=300), st.integers(0, 10 ** 6))
def test_mutated_state_files_are_refused_or_sound(patch, where):
    buffer = io.BytesIO()
    save_state(fd(), buffer)
    sound = bytearray(buffer.getvalue())
    at = where % len(sound)
    sound[at:at + len(patch)] = patch[:len(sound) - at]
    result = outcome("state files", lambda: load_state(io.BytesIO(bytes(sound))))
    if not isinstance(result, ValueError):
        type(result).from_state_dict(result.state_dict())


# -- data files --------------------------------------------------------------------------------

@pytest.mark.timeout(30)
def test_a_fifo_named_npy_is_refused_without_blocking(tmp_path):
    for name in ("rows.npy", "rows.npz"):
        os.mkfifo(tmp_path / name)
        refused("data files", lambda: open_rows(tmp_path / name), "FIFO")
        refused("data files", lambda: sketch_array(tmp_path / name, 3), "FIFO")


def test_a_data_archive_bomb_is_refused_before_reading(tmp_path):
    data, _ = overlapping_zip(members=8, tail=2 ** 18)
    (tmp_path / "bomb.npz").write_bytes(data)
    refused("data files", lambda: open_rows(tmp_path / "bomb.npz", key="a0"), "overlap", peak_at_most=2 ** 20)
    (tmp_path / "zeros.npz").write_bytes(zip_of([deflated_header_only("X.npy", (2 ** 25, 5), "<f8")]))
    refused("data files", lambda: open_rows(tmp_path / "zeros.npz"), "at most 268435456 bytes",
            peak_at_most=2 ** 20)
    (tmp_path / "lying.npz").write_bytes(zip_of([stored("X.npy", npy_header((10 ** 9, 5), "<f8") + bytes(40))]))
    refused("data files", lambda: open_rows(tmp_path / "lying.npz"), "announces", peak_at_most=2 ** 20)
    (tmp_path / "notzip.npz").write_bytes(b"garbage")
    refused("data files", lambda: open_rows(tmp_path / "notzip.npz"), "not a readable .npz archive")


def test_a_huge_m_is_refused_before_the_buffer_is_allocated():
    for m in (10 ** 8, 10 ** 12):
        refused("data files", lambda: sketch_array(np.ones((10, 5)), m), "entries (800 MB) are allowed",
                peak_at_most=2 ** 20)


def test_a_short_block_is_refused_not_sketched():
    import dask
    import dask.array as da

    short = da.from_delayed(dask.delayed(np.ones)((120, 5)), shape=(200, 5), dtype=float)
    refused("data files", lambda: sketch_array(short, 3), "declares 200 rows x 5 columns")
    wide = da.from_delayed(dask.delayed(np.ones)((200, 10)), shape=(200, 5), dtype=float)
    refused("data files", lambda: sketch_array(wide, 3), "declares 200 rows x 5 columns")


def test_a_file_rewritten_after_open_rows_is_refused(tmp_path):
    path = tmp_path / "rows.npy"
    np.save(path, np.ones((200, 5)))
    X = open_rows(path, chunk_rows=50)
    np.save(path, np.ones((200, 10)))
    refused("data files", lambda: sketch_array(X, 3), "changed since open_rows")
    np.save(path, np.ones((120, 5)))
    refused("data files", lambda: sketch_array(X, 3), "changed since open_rows")


def test_sound_data_files_are_read_and_a_stored_member_is_memory_mapped(tmp_path):
    A = np.random.default_rng(0).standard_normal((400, 6))
    np.save(tmp_path / "a.npy", A)
    np.savez(tmp_path / "a.npz", X=A, y=np.ones(3))
    np.savez_compressed(tmp_path / "c.npz", X=np.asfortranarray(A))
    expected = sketch_array(A, 4, chunk_rows=100)
    for name, key in (("a.npy", None), ("a.npz", "X"), ("c.npz", None)):
        sk = outcome("data files", lambda: sketch_array(tmp_path / name, 4, chunk_rows=100, key=key))
        assert sk.n_seen == 400 and np.array_equal(sk.sketch, expected.sketch)
    big = tmp_path / "big.npz"
    np.savez(big, X=np.ones((2 ** 19, 8)))  # 32 MiB stored: mapped, never read whole
    X = outcome("data files", lambda: open_rows(big), peak_at_most=2 ** 20)
    assert X.shape == (2 ** 19, 8) and float(X[-1].sum().compute()) == 8.0


@given(st.binary(min_size=1, max_size=200), st.integers(0, 10 ** 6))
def test_mutated_data_files_are_refused_or_sound(tmp_path_factory, patch, where):
    folder = tmp_path_factory.mktemp("mutated")
    sound = bytearray(savez(X=np.arange(12.0).reshape(4, 3)))
    at = where % len(sound)
    sound[at:at + len(patch)] = patch[:len(sound) - at]
    (folder / "x.npz").write_bytes(bytes(sound))
    result = outcome("data files", lambda: sketch_array(folder / "x.npz", 2))
    if not isinstance(result, ValueError):
        assert result.n_seen == 4


# -- the reader itself -------------------------------------------------------------------------

def test_the_reader_names_the_file_and_the_reason():
    with pytest.raises(ArchiveError) as error:
        read_npz(b"\x93NUMPY", name="x.npz")
    assert error.value.name == "x.npz" and str(error.value).startswith("x.npz: ")
    data = zip_of([stored("a.npy", npy(np.eye(2))), stored("a.npy", npy(np.eye(2)))])
    with pytest.raises(ValueError, match="appears twice"):
        read_npz(data)
    with pytest.raises(ValueError, match="Python objects"):
        read_npy(npy(np.array([object()], dtype=object)))
    with open_npz(savez(X=np.eye(3), k="text")) as archive:
        assert archive.header("X").shape == (3, 3) and str(archive["k"]) == "text"
    with pytest.raises(ValueError, match="after the archive was closed"):
        archive["X"]
