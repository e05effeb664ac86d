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

import contextlib
import io
import json
import numbers
import os
from typing import Any, Iterator

import numpy as np

from .archive import ArchiveError, open_npz
from .atomic import write_atomic

__all__ = [
    "MAX_COUNT", "MAX_STATE_BYTES", "StateReader", "all_or_nothing", "check_kind", "check_plain",
    "copy_array", "generator_json", "load_state", "nonfinite_entries", "registered_kinds",
    "save_state", "state_part", "stateful",
]

_REGISTRY: dict[str, type] = {}

#: The largest counter a state may hold (``n_seen``, ``t``, ...): 2^53, so it stays exact
#: as a float and is stored as a plain int64, never as a pickled Python integer.
MAX_COUNT = 2 ** 53
#: The most bytes of array data :func:`load_state` reads from one file (2 GiB).
MAX_STATE_BYTES = 2 ** 31


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
    numbers along another path than one that never stopped. ``np.savez`` keeps
    the order, so with this copy save, load and continue is bit-identical on every kernel.

    >>> a = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    >>> b = copy_array(a)
    >>> bool(b.flags.f_contiguous), bool(np.shares_memory(a, b)), bool(np.array_equal(a, b))
    (True, False, True)
    """
    return np.array(array, dtype=float, order="K", copy=True)


def check_plain(state: dict[str, Any]) -> None:
    """Refuse (``ValueError``) a state value that numpy could only store pickled (an object
    array, an integer past 64 bits): no reader of this package ever unpickles, so such a
    file could not be loaded back."""
    for key, value in state.items():
        if np.asarray(value).dtype.hasobject:  # np.savez would pickle it
            raise ValueError(f"the state's {key!r} = {str(value)[:60]} is not a plain number or "
                             "array (a value past int64, say); a state file never stores a "
                             "pickled object")


def save_state(obj: Any, file) -> None:
    """Write ``obj.state_dict()`` with ``np.savez`` to a file object, or to a path
    atomically (:func:`explorer.atomic.write_atomic`: a failed save leaves the file that was
    there). A value numpy could only pickle is refused first (:func:`check_plain`)."""
    state = obj.state_dict()
    check_plain(state)
    if hasattr(file, "write"):
        np.savez(file, **state)
        return
    path = os.fspath(file)
    if not path.endswith(".npz"):  # what np.savez does with a path
        path += ".npz"
    buffer = io.BytesIO()
    np.savez(buffer, **state)
    write_atomic(path, buffer.getvalue())


def load_state(file) -> Any:
    """Rebuild the object saved by :func:`save_state` (no pickle is ever loaded).

    ``file``: a path or a binary file object. The archive goes through
    :func:`explorer.archive.open_npz` (a regular file, an intact zip whose members do not
    overlap, ``.npy`` headers declaring at most :data:`MAX_STATE_BYTES` of data in all,
    no objects), and each array is read only when the class asks for it, after its
    declared shape is checked (:meth:`StateReader.array`): an extra or oversized member
    costs nothing. Everything refused is a ``ValueError`` naming the file and the reason.
    """
    with open_npz(file, limit=MAX_STATE_BYTES) as archive:
        if "kind" not in archive or archive.header("kind").nbytes > 4096:
            raise ArchiveError(archive.name, "holds no state: no 'kind' naming its class "
                                             "(save_state writes one)")
        kind = str(archive["kind"])
        if kind not in _REGISTRY:
            raise ValueError(f"{archive.name}: unknown state kind {kind[:100]!r}; known kinds: "
                             f"{sorted(_REGISTRY)}")
        return _REGISTRY[kind].from_state_dict(archive)


def check_kind(state: dict, cls: type | str) -> None:
    """Refuse a state dict written by another class."""
    name = cls if isinstance(cls, str) else cls.__name__
    kind = str(state.get("kind", ""))
    if kind != name:
        raise ValueError(f"state_dict of kind {kind!r} cannot build a {name}")


class StateReader:
    """Reads a state dict for one class, value by value, refusing anything a run could not
    have written: a missing key, a non-finite number, a wrong shape, a negative counter, a
    string that is not one of the allowed ones. Every refusal is a ``ValueError`` that names
    the class and the key (a tampered file must not load and run).

    ``prefix``: the state is a part of a larger one (:func:`state_part`); the prefix is put
    back in front of the keys the messages name, and the kind is not checked.

    >>> reader = StateReader({"kind": "Demo", "t": -1}, "Demo")
    >>> reader.count("t")
    Traceback (most recent call last):
    ...
    ValueError: Demo state: 't' must be an integer >= 0, got -1
    """

    def __init__(self, state: dict, owner: type | str, prefix: str = ""):
        self.owner = owner if isinstance(owner, str) else owner.__name__
        self.prefix = prefix
        self._state = state
        if not prefix:
            check_kind(state, self.owner)

    def has(self, key: str) -> bool:
        return key in self._state

    def raw(self, key: str):
        """The stored value as it is (a 0-d array as its Python scalar; a missing key is refused)."""
        if key not in self._state:
            raise ValueError(f"{self.owner} state has no {self.prefix + key!r} (every "
                             f"state_dict() of this version has it)")
        value = self._state[key]
        return value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value

    def refuse(self, key: str, allowed: str, value) -> ValueError:
        """The error for a value that is not what ``allowed`` says (for a class's own invariants)."""
        return ValueError(f"{self.owner} state: {self.prefix + key!r} must be {allowed}, got {value!r}")

    def shape(self, key: str) -> tuple[int, ...]:
        """The shape of the stored value, without reading it when the state is an archive
        (:class:`explorer.archive.NpzArchive`: its header's shape); a missing key is
        refused. What a class checks before allocating from the state's sizes."""
        if key not in self._state:
            self.raw(key)  # refuses
        header = getattr(self._state, "header", None)
        return tuple(header(key).shape) if header is not None else np.shape(self._state[key])

    def check_shape(self, key: str, shape: tuple[int, ...], settings: str) -> None:
        """Refuse the state if ``key`` does not have the ``shape`` its ``settings`` give (a
        text such as ``"d = 4, m = 2"`` for the message), read from the header alone
        (:meth:`shape`): what a class checks before it allocates from the state's sizes."""
        declared = self.shape(key)
        if declared != tuple(shape):
            raise self.refuse(key, f"an array of shape {tuple(shape)} ({settings})",
                              f"an array of shape {declared}")

    def count(self, key: str, *, minimum: int = 0, maximum: int | None = MAX_COUNT) -> int:
        """An integer in [minimum, maximum] (a counter, a size, a position; at most
        :data:`MAX_COUNT` unless ``maximum`` says otherwise, None for no bound)."""
        value = self.raw(key)
        allowed = (f"an integer >= {minimum}" if maximum is None
                   else f"an integer in [{minimum}, {maximum}]" if maximum != MAX_COUNT
                   else f"an integer >= {minimum}")
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise self.refuse(key, allowed, value)
        if value < minimum:
            raise self.refuse(key, allowed, int(value))
        if maximum is not None and value > maximum:
            shown = "2**53 (a count past it is no run's)" if maximum == MAX_COUNT else maximum
            raise self.refuse(key, f"an integer in [{minimum}, {shown}]", int(value))
        return int(value)

    def number(self, key: str, *, minimum: float = -np.inf, maximum: float = np.inf,
               strict_minimum: bool = False) -> float:
        """A finite real number in [minimum, maximum] ((minimum, maximum] if strict)."""
        value = self.raw(key)
        bracket = "(" if strict_minimum else "["
        allowed = f"a finite number in {bracket}{minimum}, {maximum}]"
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise self.refuse(key, allowed, value)
        value = float(value)
        low_ok = value > minimum if strict_minimum else value >= minimum
        if not (np.isfinite(value) and low_ok and value <= maximum):
            raise self.refuse(key, allowed, value)
        return value

    def flag(self, key: str) -> bool:
        value = self.raw(key)
        if not isinstance(value, (bool, np.bool_)):
            raise self.refuse(key, "True or False", value)
        return bool(value)

    def text(self, key: str, allowed: tuple[str, ...] | None = None) -> str:
        value = self.raw(key)
        if not isinstance(value, str) or (allowed is not None and value not in allowed):
            raise self.refuse(key, "a string" if allowed is None else f"one of {list(allowed)}", value)
        return value

    def same(self, key: str, expected) -> None:
        """Refuse a setting that differs from the object's own (an in-place load keeps them)."""
        value = self.raw(key)
        if isinstance(value, (bool, np.bool_)) != isinstance(expected, bool) or value != expected:
            raise self.refuse(key, f"{expected!r} (this object's own setting)", value)

    def seed(self, key: str = "seed") -> int | None:
        """The seed an object was built with, stored as -1 for None (a state written before
        seeds were kept has none: None)."""
        value = self.count(key, minimum=-1, maximum=2 ** 63 - 1) if self.has(key) else -1
        return None if value < 0 else value

    def generator_state(self, key: str = "rng") -> dict:
        """A numpy generator's state stored as JSON, checked by loading it into a scratch
        PCG64 generator (what numpy refuses is a ValueError naming the key)."""
        scratch = np.random.default_rng()
        try:
            scratch.bit_generator.state = json.loads(self.text(key))
        except (TypeError, ValueError, KeyError, OverflowError) as error:
            raise self.refuse(key, "the JSON of a numpy PCG64 generator's state", str(error)[:80]) from None
        return scratch.bit_generator.state

    def array(self, key: str, shape: tuple[int, ...]) -> np.ndarray:
        """A finite float array of exactly ``shape``, copied in its layout (:func:`copy_array`).
        The shape is checked before the array is read (:meth:`shape`)."""
        declared = self.shape(key)  # refuses a missing key
        if declared != tuple(shape):
            raise self.refuse(key, f"a real array of shape {tuple(shape)}", f"an array of shape {declared}")
        array = np.asarray(self._state[key])
        if array.dtype.kind not in "fiu" or array.shape != tuple(shape):
            raise self.refuse(key, f"a real array of shape {tuple(shape)}",
                              f"{array.dtype} array of shape {array.shape}")
        if not np.isfinite(array).all():
            raise ValueError(f"{self.owner} state: {self.prefix + key!r} contains NaN or inf")
        return copy_array(array)


def generator_json(rng: np.random.Generator) -> str:
    """A generator's state as a JSON string (a plain scalar for ``np.savez``), read back by
    :meth:`StateReader.generator_state`."""
    return json.dumps(rng.bit_generator.state)


def state_part(state: dict, prefix: str) -> dict:
    """The entries of ``state`` under ``prefix`` (``"positive."``), with the prefix removed."""
    return {key[len(prefix):]: state[key] for key in state if key.startswith(prefix)}


def nonfinite_entries(state: dict) -> list[str]:
    """The keys of a state dict whose numbers are not all finite (empty for a sound state)."""
    bad = []
    for key, value in state.items():
        array = np.asarray(value) if not isinstance(value, str) else None
        if array is not None and array.dtype.kind in "fc" and not np.isfinite(array).all():
            bad.append(key)
    return bad


@contextlib.contextmanager
def all_or_nothing(obj: Any) -> Iterator[None]:
    """Run a block that changes ``obj``; if it raises, put ``obj`` back as it was.

    The snapshot is ``obj.state_dict()`` and the way back ``obj.load_state_dict`` (in
    place, so the caller's references and hooks stay). Events already sent to hooks are
    not taken back. One snapshot per call: ``learn_many`` pays it once for a whole batch.
    """
    snapshot = obj.state_dict()
    try:
        yield
    except BaseException:
        obj.load_state_dict(snapshot)
        raise
