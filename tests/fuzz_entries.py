"""Fuzz registry entries for the readers of bytes and files: a sketch's byte format, state
files, data files (``open_rows``, ``sketch_array``) and dashboard uploads.

Each ``*_entries(Entry, Family)`` returns its entries (tests/fuzz_registry.py collects them).
The valid samples are built lazily, once per child process.
"""

from __future__ import annotations

import functools
import io

import numpy as np
from hypothesis import strategies as st

from explorer import FrequentDirections, GeneralizedFrequentDirections, RobustFrequentDirections, load_state
from explorer import save_state
from explorer.dashboard.app import Dashboard
from explorer.dashboard.upload import MAX_COLUMNS, MAX_ROWS, parse_upload
from explorer.distributed import open_rows, sketch_array
from explorer.sketch import from_bytes
from fuzz_checks import load_rows, sound_object, sound_rows, sound_sketch, sound_sketch_of
from fuzz_inputs import (
    Payload, Special, SPECIALS, hide_last_member, materialize, huge_shape_npy, inflating_member, mutations, npy_bytes, npz_bytes,
    overlapping_npz, random_bytes, scaled_rows,
)
from state_checks import tamper
from stateful_zoo import FEEDS, fed

__all__ = ["format_entries", "data_entries", "sketch_samples", "state_samples", "data_samples"]

SKETCH_CLASSES = {cls.__name__: cls for cls in (FrequentDirections, RobustFrequentDirections,
                                                 GeneralizedFrequentDirections)}
SCALES = (1e300, 1e200, 1e155, 1e150, 1e-150, 1e-300, 5e-324, 1e308)


# -- valid samples --------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def sketch_samples() -> tuple[bytes, ...]:
    """A fed FD, Robust FD and Generalized FD, and an empty FD, as bytes."""
    return tuple(sketch.to_bytes() for sketch in
                 (fed("FrequentDirections"), fed("RobustFrequentDirections"),
                  fed("GeneralizedFrequentDirections"), FrequentDirections(4, 2)))


def _state_file(obj) -> bytes:
    buffer = io.BytesIO()
    save_state(obj, buffer)
    return buffer.getvalue()


@functools.lru_cache(maxsize=1)
def state_samples() -> tuple[bytes, ...]:
    """Every zoo kind after 20 rounds, as a state file."""
    return tuple(_state_file(fed(name)) for name in sorted(FEEDS))


@functools.lru_cache(maxsize=1)
def data_samples() -> tuple[Payload, ...]:
    X = scaled_rows(40, 5, 1.0)
    return (Payload(npy_bytes(X), ".npy", "rows.npy"), Payload(npz_bytes(X=X), ".npz", "rows.npz"),
            Payload(npy_bytes(np.asfortranarray(X.astype(np.float32))), ".npy", "float32 fortran"),
            Payload(npz_bytes(X=X[:7], y=np.ones(7)), ".npz", "X and y"))


def _members(data: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def _tampered_bytes(data: bytes, key: str, value) -> bytes:
    state = _members(data)
    state[key] = value
    return npz_bytes(**state)


def _zip_attacks(samples, suffix: str, label: str) -> list[Payload]:
    """The archive attacks on each valid sample: overlapping stored members (a bomb), one
    deflated member of 512 MiB of zeros, the last member hidden by a comment length,
    the same archive compressed (np.savez_compressed), and two members of one name."""
    attacks = [Payload(overlapping_npz(samples[0]), suffix, f"{label}: 2000 overlapping members"),
               Payload(inflating_member(samples[0]), suffix, f"{label}: + 512 MiB deflated member")]
    for k, sample in enumerate(samples):
        members = _members(sample)
        if len(members) >= 2:
            attacks.append(Payload(hide_last_member(sample), suffix, f"{label} {k}: last member hidden"))
        compressed = io.BytesIO()
        np.savez_compressed(compressed, **members)
        attacks.append(Payload(compressed.getvalue(), suffix, f"{label} {k}: compressed"))
    attacks.append(Payload(_duplicate_member(samples[0]), suffix, f"{label}: a member named twice"))
    members = {key: npy_bytes(value) for key, value in _members(samples[0]).items()}
    first = next(iter(members))
    pickled = {**members, first: huge_shape_npy((2,), "|O", data=b"\x80\x04\x95" + bytes(40))}
    attacks.append(Payload(_raw_npz(pickled), suffix, f"{label}: {first} an object (pickled) array"))
    return attacks


def _duplicate_member(data: bytes) -> bytes:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(buffer, "w") as target:
        infos = source.infolist()
        for info in infos:
            target.writestr(info, source.read(info))
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Duplicate name": the point
            target.writestr(infos[-1].filename, npy_bytes(np.full(3, 7.0)))
    return buffer.getvalue()


def _huge_members(sample: bytes, suffix: str, label: str) -> list[Payload]:
    """Each member of ``sample`` replaced by a header declaring 10^12 entries (64 bytes behind it)."""
    out = []
    for name in list(_members(sample))[:8]:
        state = {key: npy_bytes(value) for key, value in _members(sample).items()}
        state[name] = huge_shape_npy((10 ** 6, 10 ** 6))
        out.append(Payload(_raw_npz(state), suffix, f"{label}: {name} declares 10^6 x 10^6"))
    return out


def _raw_npz(members: dict[str, bytes]) -> bytes:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(f"{name}.npy", data)
    return buffer.getvalue()


def _impossible_sketches() -> list[Payload]:
    """Sketch bytes whose state no run wrote: each key tampered (state_checks.tamper), sizes
    of 10^6, n_seen = 2^64 - 1, ||A||_F^2 = 1e300 with unit rows."""
    out = []
    for k, sample in enumerate(sketch_samples()[:3]):
        state = _members(sample)
        keys = sorted(key for key in state if state[key].dtype.kind != "U" and key not in ("format", "format_version"))
        for i, key in enumerate(keys):
            for how in ("huge", "negative", "nan", "drop", "double", "tiny")[i % 2::2]:
                out.append(Payload(npz_bytes(**tamper(state, key, how)), ".sketch", f"sketch {k}: {key} {how}"))
    fd = _members(sketch_samples()[0])
    for key, value in (("d", 10 ** 6), ("m", 10 ** 6), ("n_seen", np.uint64(2 ** 64 - 1)),
                       ("frobenius_squared", 1e300), ("n_seen", 2 ** 62)):
        out.append(Payload(_tampered_bytes(sketch_samples()[0], key, np.array(value)), ".sketch", f"FD: {key} = {value}"))
    out.append(Payload(npz_bytes(**{**fd, "d": np.array(10 ** 6), "m": np.array(10 ** 6)}), ".sketch", "FD: d = m = 10^6"))
    return out


# -- the byte format -----------------------------------------------------------------------

def _from_bytes(subject, value, scratch):
    return from_bytes(value.data)


def _class_from_bytes(subject, value, scratch):
    name, payload = value
    return SKETCH_CLASSES[name].from_bytes(payload.data)


def _as_payload(how_data, suffix=".sketch"):
    how, data = how_data
    return Payload(data, suffix, f"mutated ({how})")


def format_entries(Entry, Family) -> list:
    samples = lambda: list(sketch_samples())  # noqa: E731
    attacks = lambda: [*_zip_attacks(sketch_samples(), ".sketch", "sketch"),  # noqa: E731
                       *_huge_members(sketch_samples()[0], ".sketch", "FD")]
    return [
        Entry("explorer.sketch:from_bytes", "byte format", _from_bytes, lambda s, v, r, d: sound_sketch(r),
              valid=lambda: [Payload(b, ".sketch", "valid") for b in sketch_samples()],
              covers=("explorer.merging:unpack_state", "explorer.merging:check_members"),
              families={
                  "random bytes": Family(strategy=lambda: random_bytes().map(lambda b: Payload(b, ".sketch", "random")),
                                         examples=60),
                  "mutations": Family(strategy=lambda: mutations(samples()).map(_as_payload), examples=120),
                  "zip attacks": Family(values=attacks),
                  "impossible states": Family(values=_impossible_sketches),
              }),
        Entry("explorer.merging:Mergeable.from_bytes", "byte format", _class_from_bytes,
              lambda s, v, r, d: sound_sketch(r),
              valid=lambda: [(type(from_bytes(b)).__name__, Payload(b, ".sketch", "valid")) for b in sketch_samples()],
              families={
                  "mutations": Family(strategy=lambda: st.tuples(st.sampled_from(sorted(SKETCH_CLASSES)),
                                                                 mutations(samples()).map(_as_payload)), examples=60),
                  "zip attacks": Family(values=lambda: [(name, attack) for attack in attacks()[:6]
                                                        for name in sorted(SKETCH_CLASSES)]),
              }),
    ]


# -- state files ---------------------------------------------------------------------------

def _materialized(stem: str):
    """A setup that puts the input in place as ``<stem><suffix>`` (before the state is
    observed); the subject is the path (None for an input that is no file)."""
    def setup(value, scratch):
        if isinstance(value, (Payload, Special)):
            return materialize(value, scratch, stem)
        if isinstance(value, tuple) and value and value[0] == "rewritten":
            path = materialize(value[1], scratch, stem)
            X = open_rows(str(path))
            path.write_bytes(value[2].data)  # after open_rows, before the sketch
            return path, X
        return None
    return setup


def _load_state(path, value, scratch):
    if isinstance(value, tuple):  # ("file object", bytes)
        return load_state(io.BytesIO(value[1]))
    return load_state(path)


def _state_attacks() -> list:
    samples = state_samples()
    fd = samples[sorted(FEEDS).index("FrequentDirections")]
    out = [*_zip_attacks(samples, ".npz", "state"), *_huge_members(fd, ".npz", "FD state")]
    out += [Special(kind, ".npz") for kind in SPECIALS]
    out += [Payload(npy_bytes(np.eye(3)), ".npz", "a .npy, not an archive"),
            Payload(npz_bytes(**{**_members(fd), "d": np.array(10 ** 6), "m": np.array(10 ** 6)}), ".npz",
                    "FD state: d = m = 10^6")]
    return out


def _integer_settings() -> list:
    """Every zoo kind's state file with one integer scalar set to 10^9 (iterations, sizes, counters)."""
    out = []
    for name in sorted(FEEDS):
        state = fed(name).state_dict()
        for key, value in state.items():
            if not isinstance(value, str) and np.ndim(value) == 0 and np.asarray(value).dtype.kind in "iu":
                out.append(Payload(npz_bytes(**{**state, key: np.array(10 ** 9)}), ".npz", f"{name}: {key} = 10^9"))
    return out


def state_entries(Entry, Family) -> list:
    samples = lambda: list(state_samples())  # noqa: E731
    return [
        Entry("explorer.state:load_state", "state files", _load_state, lambda s, v, r, d: sound_object(r),
              setup=_materialized("state"),
              valid=lambda: [Payload(b, ".npz", "valid") for b in state_samples()],
              families={
                  "random bytes": Family(strategy=lambda: random_bytes().map(lambda b: Payload(b, ".npz", "random")),
                                         examples=40),
                  "mutations": Family(strategy=lambda: mutations(samples()).map(lambda hd: _as_payload(hd, ".npz")),
                                      examples=120),
                  "file objects": Family(strategy=lambda: mutations(samples()).map(lambda hd: ("file object", hd[1])),
                                         examples=30),
                  "zip attacks and special files": Family(values=_state_attacks),
                  "integer settings of 10^9": Family(values=_integer_settings),
              }),
    ]


# -- data files ------------------------------------------------------------------------------

def _data_attacks() -> list:
    npz = [p.data for p in data_samples() if p.suffix == ".npz"]
    out = [*_zip_attacks(npz, ".npz", "data"), *_huge_members(npz[0], ".npz", "data")]
    out += [Special(kind, suffix) for kind in SPECIALS for suffix in (".npy", ".npz")]
    out += [Payload(huge_shape_npy(shape, descr), ".npy", f"declares {shape} {descr}")
            for shape, descr in (((10 ** 12, 5), "<f8"), ((10 ** 6, 10 ** 6), "<f8"), ((200, 5), "<f8"),
                                 ((5, 10 ** 12), "<f4"), ((-1, 5), "<f8"), ((2 ** 62, 2 ** 62), "<f8"),
                                 ((40, 5), "|O"), ((40, 5), "<c16"), ((40, 5), "<U8"))]
    return out


def _scale_extremes() -> list:
    out = []
    for scale in SCALES:
        out.append(Payload(npy_bytes(scaled_rows(40, 5, scale)), ".npy", f"rows x {scale:g}"))
    mixed = scaled_rows(40, 5, 1.0)
    mixed[::2] *= 1e300
    mixed[1::2] *= 1e-300
    out.append(Payload(npy_bytes(mixed), ".npy", "rows of 1e300 and 1e-300"))
    for bad in (np.nan, np.inf):
        X = scaled_rows(40, 5, 1.0)
        X[17, 2] = bad
        out.append(Payload(npy_bytes(X), ".npy", f"one {bad}"))
    return out


def _open_rows(path, value, scratch):
    return open_rows(str(path))


def _sketch_array(path, value, scratch):
    if isinstance(value, tuple):  # ("rewritten", first, second): the file changed after open_rows
        return sketch_array(path[1], 3)
    return sketch_array(str(path), 3)


def _rewrites() -> list:
    X = scaled_rows(200, 5, 1.0)
    first = Payload(npy_bytes(X), ".npy", "200 x 5")
    return [("rewritten", first, Payload(npy_bytes(X[:120]), ".npy", "120 x 5")),
            ("rewritten", first, Payload(npy_bytes(scaled_rows(200, 10, 1.0)), ".npy", "200 x 10")),
            ("rewritten", first, Payload(b"", ".npy", "empty"))]


def _sketch_accept(path, value, sketch, scratch):
    if isinstance(value, tuple):
        path, X = path
        assert sketch.n_seen == X.shape[0], f"n_seen = {sketch.n_seen} for {X.shape[0]} rows declared"
    sound_sketch_of(sketch, load_rows(path))


def _data_mutations():
    return mutations([p.data for p in data_samples()]).flatmap(
        lambda hd: st.sampled_from([".npy", ".npz"]).map(lambda suffix: _as_payload(hd, suffix)))


def _upload(subject, value, scratch):
    return parse_upload(f"upload{value.suffix}", value.data)


def _upload_accept(subject, value, data, scratch):
    X, y = data.X, data.y
    assert X.ndim == 2 and X.dtype == float and np.isfinite(X).all(), "rows not finite 2-D floats"
    assert 1 <= X.shape[0] <= MAX_ROWS and 1 <= X.shape[1] <= MAX_COLUMNS, f"shape {X.shape} out of the limits"
    with np.errstate(over="ignore"):
        assert np.isfinite(np.sum(X * X)), "the rows' squared norms overflow"
    assert y is None or (y.shape == (X.shape[0],) and np.isfinite(y).all()), "labels not finite or not one per row"


_TEXT = (b"x1,x2,y\n1,2,1\n3,4,-1\n5,6,1\n", b"1 1:0.5 3:2\n-1 2:1.5\n1 1:1 2:1 3:1\n", b"1\t2\n3\t4\n")


def _upload_samples() -> list[Payload]:
    out = [Payload(_TEXT[0], ".csv", "csv"), Payload(_TEXT[1], ".svm", "libsvm"), Payload(_TEXT[2], ".tsv", "tsv")]
    return out + list(data_samples())


def _upload_mutations():
    samples = _upload_samples()
    return st.sampled_from(range(len(samples))).flatmap(
        lambda i: mutations([samples[i].data]).map(lambda hd: Payload(hd[1], samples[i].suffix, f"{samples[i].label} {hd[0]}")))


def _upload_extremes() -> list:
    out = [p for p in _scale_extremes()]
    for scale in ("1e300", "1e-300", "5e-324", "1e308", "1e309", "-1e308", "nan", "inf", "0x10", "1_000"):
        out.append(Payload(f"a,b\n1,{scale}\n{scale},2\n".encode(), ".csv", f"csv with {scale}"))
    out.append(Payload(b"1," * 10 ** 5 + b"\n", ".csv", "100000 columns"))
    out.append(Payload(b"1\n" * 30000, ".csv", "30000 rows"))
    out.append(Payload(b"1 999999999999:1\n", ".svm", "libsvm index 10^12"))
    return out


def _dashboard(value, scratch):
    return Dashboard()


def _dashboard_state(app, scratch):
    settings = app.settings
    return ({name: getattr(settings, name) for name in ("dataset", "n", "d", "seed", "m", "alpha0", "eta")},
            id(settings.upload), app.page)


def _dashboard_upload(app, value, scratch):
    if app.upload(f"upload{value.suffix}", value.data):
        return app
    assert app.messages and all("could not be read (" not in m for m in app.messages), (
        f"refused with a parser failure: {app.messages}")
    raise ValueError(app.messages[0])


def _dashboard_accept(app, value, result, scratch):
    _upload_accept(None, value, app.settings.upload, scratch)


def _archive_call(reader):
    def call(path, value, scratch):
        return reader(str(path), limit=ARCHIVE_LIMIT)
    return call


def _archive_accept(subject, value, result, scratch):
    arrays = list(result.values()) if isinstance(result, dict) else [result]
    assert all(isinstance(a, np.ndarray) and not a.dtype.hasobject for a in arrays), "not plain arrays"
    total = sum(a.nbytes for a in arrays)
    assert total <= ARCHIVE_LIMIT, f"read {total} bytes past the limit {ARCHIVE_LIMIT}"


ARCHIVE_LIMIT = 64 << 20
"""The ``limit`` the archive entries pass (what a caller of the shared reader chooses)."""


def archive_entries(Entry, Family) -> list:
    """The shared bounded reader (explorer.archive), when the tree has it."""
    import importlib.util

    if importlib.util.find_spec("explorer.archive") is None:
        return []
    from explorer.archive import read_npy, read_npz

    archives = lambda: [*sketch_samples(), *state_samples()[:4], *[p.data for p in data_samples() if p.suffix == ".npz"]]  # noqa: E731
    npys = [p.data for p in data_samples() if p.suffix == ".npy"]
    return [
        Entry("explorer.archive:read_npz", "byte format", _archive_call(read_npz), _archive_accept,
              setup=_materialized("archive"),
              valid=lambda: [Payload(b, ".npz", "valid") for b in archives()],
              covers=("explorer.archive:open_npz", "explorer.archive:open_regular", "explorer.archive:read_header"),
              families={"random bytes": Family(strategy=lambda: random_bytes().map(lambda b: Payload(b, ".npz", "random")),
                                               examples=30),
                        "mutations": Family(strategy=lambda: mutations(archives()).map(lambda hd: _as_payload(hd, ".npz")),
                                            examples=80),
                        "attacks and special files": Family(values=_state_attacks)}),
        Entry("explorer.archive:read_npy", "data files", _archive_call(read_npy), _archive_accept,
              setup=_materialized("archive"),
              valid=lambda: [Payload(b, ".npy", "valid") for b in npys], covers=("explorer.archive:npy_header",),
              families={"mutations": Family(strategy=lambda: mutations(npys).map(lambda hd: _as_payload(hd, ".npy")),
                                            examples=60),
                        "attacks and special files": Family(values=lambda: [a for a in _data_attacks()
                                                                             if a.suffix == ".npy"])}),
    ]


def data_entries(Entry, Family) -> list:
    data = lambda: list(data_samples()[:3])  # noqa: E731 (the fourth holds X and y: open_rows needs a key)
    return [
        *archive_entries(Entry, Family),
        *state_entries(Entry, Family),
        Entry("explorer.distributed:open_rows", "data files", _open_rows,
              lambda s, v, X, d: sound_rows(X, s), valid=data, setup=_materialized("data"),
              families={"random bytes": Family(strategy=lambda: st.tuples(random_bytes(), st.sampled_from([".npy", ".npz"]))
                                               .map(lambda bs: Payload(bs[0], bs[1], "random")), examples=30),
                        "mutations": Family(strategy=_data_mutations, examples=60),
                        "attacks and special files": Family(values=_data_attacks)}),
        Entry("explorer.distributed:sketch_array", "data files", _sketch_array, _sketch_accept, valid=data,
              setup=_materialized("data"),
              covers=("explorer.distributed:sketch_graph",),
              families={"mutations": Family(strategy=_data_mutations, examples=40),
                        "attacks and special files": Family(values=_data_attacks),
                        "scale extremes": Family(values=_scale_extremes),
                        "rewritten after open_rows": Family(values=_rewrites)}),
        Entry("explorer.dashboard.upload:parse_upload", "data files", _upload, _upload_accept,
              valid=_upload_samples,
              families={"random bytes": Family(strategy=lambda: st.tuples(random_bytes(), st.sampled_from(
                            [".csv", ".npz", ".npy", ".svm"])).map(lambda bs: Payload(bs[0], bs[1], "random")), examples=60),
                        "mutations": Family(strategy=_upload_mutations, examples=100),
                        "attacks": Family(values=lambda: [a for a in _data_attacks() if isinstance(a, Payload)]),
                        "scale extremes": Family(values=_upload_extremes)}),
        Entry("explorer.dashboard.app:Dashboard.upload", "data files", _dashboard_upload, _dashboard_accept,
              valid=lambda: _upload_samples()[:1], setup=_dashboard, observe=_dashboard_state,
              covers=("explorer.dashboard.app:Dashboard.upload_in_background",
                      "explorer.dashboard.app:Dashboard.refuse_upload", "explorer.dashboard.upload:check_size"),
              families={"mutations": Family(strategy=_upload_mutations, examples=25),
                        "attacks": Family(values=lambda: [a for a in _data_attacks() if isinstance(a, Payload)][:8])}),
    ]
