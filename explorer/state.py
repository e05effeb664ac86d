"""Saving and loading algorithm state with plain arrays (``np.savez``, never pickle).

Every algorithm has ``state_dict()`` (a dict of numpy arrays, numbers and strings, with
its class name under ``"kind"``) and ``from_state_dict(state)``. Stop, save, load and
continue gives the same numbers as never stopping.

>>> import io, numpy as np
>>> from explorer import RobustFrequentDirections
>>> sk = RobustFrequentDirections(d=4, m=2, alpha0=0.5)
>>> sk.extend(np.eye(4))
>>> buffer = io.BytesIO(); save_state(sk, buffer); _ = buffer.seek(0)
>>> load_state(buffer).alpha == sk.alpha
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

_REGISTRY: dict[str, type] = {}


def stateful(cls: type) -> type:
    """Class decorator: make ``cls`` loadable by :func:`load_state` under its name."""
    _REGISTRY[cls.__name__] = cls
    return cls


def registered_kinds() -> list[str]:
    """The class names :func:`load_state` can rebuild, sorted."""
    return sorted(_REGISTRY)


def copy_array(array) -> np.ndarray:
    """A copy of ``array`` in the same memory layout: C order stays C, Fortran order stays
    Fortran (and a strided view becomes the contiguous layout closest to it).

    Every ``state_dict`` copies its matrices with this, and every ``from_state_dict``
    restores them with it. BLAS takes another code path for a Fortran-ordered operand than
    for a C-ordered one, and on some CPUs' kernels (OpenBLAS's Sandybridge, Nehalem and
    SkylakeX) the two round differently in the last bit. LAPACK hands back Fortran-ordered
    results; had a save turned them into C order, a resumed learner would multiply the same
    numbers along another path than one that never stopped (issue 12). ``np.savez`` keeps
    the order, so with this copy save, load and continue is bit-identical on every kernel.

    >>> a = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    >>> b = copy_array(a)
    >>> bool(b.flags.f_contiguous), bool(np.shares_memory(a, b)), bool(np.array_equal(a, b))
    (True, False, True)
    """
    return np.array(array, dtype=float, order="K", copy=True)


def save_state(obj: Any, file) -> None:
    """Write ``obj.state_dict()`` to a path or file object with ``np.savez``."""
    np.savez(file, **obj.state_dict())


def load_state(file) -> Any:
    """Rebuild the object saved by :func:`save_state` (no pickle is ever loaded)."""
    with np.load(file, allow_pickle=False) as archive:
        state = {name: archive[name] for name in archive.files}
    kind = str(state.get("kind", ""))
    if kind not in _REGISTRY:
        raise ValueError(f"unknown state kind {kind!r}; known kinds: {sorted(_REGISTRY)}")
    return _REGISTRY[kind].from_state_dict(state)


def check_kind(state: dict, cls: type) -> None:
    """Refuse a state dict written by another class."""
    kind = str(state.get("kind", ""))
    if kind != cls.__name__:
        raise ValueError(f"state_dict of kind {kind!r} cannot build a {cls.__name__}")
