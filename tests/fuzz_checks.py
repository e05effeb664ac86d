"""What the entry-point fuzz suite observes and accepts (tests/fuzz_registry.py uses these).

- :func:`files_in`: the state a refusal must leave alone on disk (every path under a
  folder, with its kind, mode, bytes or link target);
- :func:`sound_sketch`: what a sketch read from bytes or a file must satisfy: finite state,
  the certified bounds coherent (``delta_total <= tail_bound``, ``||B||_F^2 <= ||A||_F^2``),
  ``to_bytes`` and back bit-identical, and it keeps working on ordinary rows;
- :func:`sound_object`: any object :func:`explorer.state.load_state` rebuilt (a sketch as
  above; every other kind through the stateful suite's ``keeps_working_as``);
- :func:`sound_rows`: the rows a data reader gave (finite, the declared shape);
- :func:`sound_sketch_of`: a sketch of known rows ``A``, with FD's guarantee on them
  (the stateful suite's ``check_fd_guarantee``) and ``n_seen == A.shape[0]``.
"""

from __future__ import annotations

import os
import stat
from types import SimpleNamespace
from pathlib import Path

import numpy as np

from explorer.distributed import certified_bounds
from explorer.sketch import MAX_SQUARED_MASS, from_bytes
from explorer.state import nonfinite_entries
from state_checks import same_state, snapshot
from stateful_zoo import D
from test_fuzz_stateful import check_fd_guarantee, keeps_working_as

__all__ = ["fingerprint", "files_in", "sound_sketch", "sound_object", "sound_rows", "sound_sketch_of", "load_rows"]

_SKETCH_KINDS = ("FrequentDirections", "RobustFrequentDirections", "GeneralizedFrequentDirections")


def fingerprint(obj) -> tuple:
    """``obj``'s state (:func:`state_checks.snapshot`) as a comparable tuple: each key with
    its string, or its array's dtype, shape and bytes (bit-identical states compare equal)."""
    return tuple((key, value) if isinstance(value, str) else (key, str(value.dtype), value.shape, value.tobytes())
                 for key, value in sorted(snapshot(obj).items()))


def files_in(folder: Path) -> dict:
    """Every path under ``folder`` (symlinks not followed): its kind and mode, and a regular
    file's bytes and mtime or a link's target."""
    seen = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if stat.S_ISREG(info.st_mode):
            seen[str(path)] = ("file", info.st_mode, info.st_mtime_ns, path.read_bytes())
        elif stat.S_ISLNK(info.st_mode):
            seen[str(path)] = ("link", os.readlink(path))
        else:
            seen[str(path)] = ("other", info.st_mode)
    return seen


def _parts(sketch):
    return [sketch.positive, sketch.negative] if type(sketch).__name__ == "GeneralizedFrequentDirections" else [sketch]


def sound_sketch(sketch) -> None:
    """A sketch read from untrusted bytes: see the module docstring."""
    assert type(sketch).__name__ in _SKETCH_KINDS, f"read a {type(sketch).__name__}, not a sketch"
    assert nonfinite_entries(sketch.state_dict()) == [], "non-finite state"
    for part in _parts(sketch):
        bounds = certified_bounds(part)
        held = float(np.sum(part.rows.astype(float) ** 2)) if part.rows.size else 0.0
        assert held <= bounds["frobenius_squared"] * (1 + 1e-9) + 1e-300, (
            f"||B||_F^2 = {held:.6g} exceeds the ||A||_F^2 = {bounds['frobenius_squared']:.6g} it claims to summarize")
        assert bounds["spectral_error"] <= bounds["tail_bound"] * (1 + 1e-9) + 1e-300, (
            f"delta_total = {bounds['spectral_error']:.6g} exceeds the certified tail bound "
            f"{bounds['tail_bound']:.6g} (impossible for an FD sketch)")
        assert bounds["frobenius_squared"] <= MAX_SQUARED_MASS, "||A||_F^2 past MAX_SQUARED_MASS"
    again = from_bytes(sketch.to_bytes())
    assert same_state(snapshot(again), snapshot(sketch)), "to_bytes then from_bytes is not bit-identical"
    if sketch.d <= 512:
        X = np.random.default_rng(3).standard_normal((4, sketch.d))
        if type(sketch).__name__ == "GeneralizedFrequentDirections":
            sketch.extend(X, np.array([1.0, -1.0, 1.0, -1.0]))
        else:
            sketch.extend(X)
        assert nonfinite_entries(sketch.state_dict()) == [], "non-finite state after ordinary rows"


def sound_object(obj) -> None:
    """An object :func:`explorer.state.load_state` rebuilt: see the module docstring."""
    name = type(obj).__name__
    if name in _SKETCH_KINDS:
        sound_sketch(obj)
    elif getattr(obj, "d", D) == D:
        keeps_working_as(obj, name)
    else:
        assert nonfinite_entries(obj.state_dict()) == [], f"{name}: non-finite state"


def load_rows(path: Path, key: str | None = None):
    """The rows a small data file holds, read with numpy (None if numpy cannot, or they are large)."""
    try:
        if path.stat().st_size > 64 << 20:
            return None
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        with np.load(path, allow_pickle=False) as archive:
            names = archive.files
            return archive[key if key is not None else names[0]] if (key or len(names) == 1) else None
    except Exception:  # noqa: BLE001 (numpy cannot read it either: nothing to compare with)
        return None


def sound_rows(X, path: Path | None = None) -> None:
    """A lazily opened array: 2-D, real, and (when small) its values what numpy reads."""
    assert X.ndim == 2 and X.dtype.kind in "biuf", f"not 2-D real rows: {X.dtype} {X.shape}"
    assert X.shape[0] >= 1 and X.shape[1] >= 1, f"no rows or no columns: {X.shape}"
    if path is not None and path.suffix == ".npy" and path.is_file():
        assert X.nbytes <= path.stat().st_size, (
            f"declares {X.nbytes} bytes of rows in a file of {path.stat().st_size} bytes")
    if X.nbytes <= 64 << 20:
        values = np.asarray(X.compute())
        assert values.shape == X.shape, f"computed {values.shape}, declared {X.shape}"
    else:
        raise AssertionError(f"accepted {X.nbytes} bytes of rows from a test file of at most a few MB")


def sound_sketch_of(sketch, A) -> None:
    """A sketch of the rows ``A``: FD's guarantee on them, every row counted, finite state."""
    assert nonfinite_entries(sketch.state_dict()) == [], "non-finite state"
    if A is None:
        return
    A = np.asarray(A, dtype=float).reshape(A.shape[0], -1)
    assert sketch.n_seen == A.shape[0], f"n_seen = {sketch.n_seen}, but the data has {A.shape[0]} rows"
    assert sketch.d == A.shape[1], f"d = {sketch.d}, but the data has {A.shape[1]} columns"
    lift = 2.0 ** 600 if A.any() and np.abs(A).max() < 2.0 ** -600 else 1.0  # subnormal rows: check_fd_guarantee's own scale would overflow
    scaled = SimpleNamespace(rows=sketch.rows * lift, delta_total=sketch.delta_total * lift * lift)
    try:
        check_fd_guarantee(scaled, A * lift)
    except AssertionError:
        raise AssertionError(f"FD's guarantee fails on the rows (A^T A - B^T B not PSD, or its norm past "
                             f"delta_total = {sketch.delta_total:.3g}); max |A| = {np.abs(A).max():.3g}") from None

