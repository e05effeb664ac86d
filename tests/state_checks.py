"""Comparing algorithm states bit for bit: the one home of the tests' state helpers.

A refused call must leave an object's ``state_dict()`` exactly as it was, and a resumed or
twin object must hold exactly the same numbers: the same keys and, for every value, the same
dtype, shape and bytes (so ``-0.0`` is not ``0.0`` and NaN payloads count). Also here: the
one way the fuzz tests break a state dict (:func:`tamper`) and write their tallies.
"""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest


def snapshot(obj) -> dict:
    """``obj.state_dict()`` with every array copied (the object may keep changing)."""
    return {key: (value if isinstance(value, str) else np.array(value, copy=True))
            for key, value in obj.state_dict().items()}


def through_a_file(obj):
    """``obj`` saved with :func:`explorer.save_state` and loaded back (a resumed run)."""
    from explorer import load_state, save_state

    file = io.BytesIO()
    save_state(obj, file)
    file.seek(0)
    return load_state(file)


def differing_keys(a: dict, b: dict) -> list[str]:
    """The keys whose values differ in dtype, shape or bytes (and the keys only one side has)."""
    differ = sorted(set(a) ^ set(b))
    for key in sorted(set(a) & set(b)):
        x, y = a[key], b[key]
        if isinstance(x, str) or isinstance(y, str):
            if x != y:
                differ.append(key)
            continue
        x, y = np.asarray(x), np.asarray(y)
        if (x.dtype, x.shape, x.tobytes()) != (y.dtype, y.shape, y.tobytes()):
            differ.append(key)
    return differ


def same_state(a: dict, b: dict) -> bool:
    """Bit-identical state dicts."""
    return not differing_keys(a, b)


def assert_same_state(a: dict, b: dict) -> None:
    """Bit-identical state dicts; the assertion names the keys that differ."""
    differ = differing_keys(a, b)
    assert not differ, f"state differs at {differ}"


def tamper(state: dict, key: str, how: str, *, other_kind: str = "NotAKind") -> dict:
    """A copy of ``state`` with ``key`` broken in the way ``how`` names (a state no run wrote).

    Whole values: ``"drop"`` (the key is missing), ``"kind"`` (``other_kind`` in place of
    the class's own), ``"string"``, ``"bool"``, ``"shape"`` (one entry more), ``"transpose"``
    (a square matrix made asymmetric, else a wrong shape), ``"float"`` (every entry + 0.5: a
    counter no longer an integer), ``"scale"`` (x 10; integers + 1), ``"reverse"``.
    The middle entry: ``"nan"``, ``"inf"``, ``"huge"`` (1e308), ``"minus huge"`` (-1e300),
    ``"tiny"`` (1e-300), ``"negative"`` (-|v| - 1; integers stay integers), ``"double"``
    (2 v + 1). An empty array becomes ``[3]`` (integers) or ``[nan]``.
    """
    state = dict(state)
    value = state[key]
    array = None if isinstance(value, str) else np.array(value)
    if how == "drop":
        del state[key]
    elif how == "kind":
        state["kind"] = other_kind
    elif how == "string" or array is None:
        state[key] = "junk"
    elif how == "bool":
        state[key] = np.array(True)
    elif how == "shape":
        state[key] = np.append(array.ravel(), 1).astype(array.dtype)
    elif how == "transpose":
        square = array.ndim == 2 and array.shape[0] == array.shape[1]
        state[key] = array.T + (np.triu(np.ones_like(array), 1) if square else 0)
    elif how == "float":
        state[key] = array.astype(float) + 0.5
    elif array.size == 0:
        state[key] = np.array([3], dtype=array.dtype) if array.dtype.kind in "iu" else np.array([np.nan])
    else:
        flat = array.ravel().astype(np.int64 if array.dtype.kind in "bu" else array.dtype)
        middle = flat.size // 2
        if how == "negative":
            flat[middle] = -abs(flat[middle]) - 1
        elif how == "scale":
            flat = flat * 10 if flat.dtype.kind == "f" else flat + 1
        elif how == "reverse":
            flat = flat[::-1].copy()
        else:  # an integer counter becomes a float array: refused as not an integer
            flat = flat.astype(float)
            flat[middle] = (2 * flat[middle] + 1 if how == "double" else
                            {"nan": np.nan, "inf": np.inf, "huge": 1e308, "minus huge": -1e300,
                             "tiny": 1e-300}[how])
        state[key] = flat.reshape(array.shape)
    return state


def tally_report(tally: dict, variable: str):
    """A module-scoped autouse fixture (assign it to a module-level name) that writes a fuzz
    tally ``{category: Counter}`` as JSON to the path in the environment variable
    ``variable``, if set, once the module's tests are done."""
    @pytest.fixture(scope="module", autouse=True)
    def report():
        yield
        path = os.environ.get(variable)
        if path:
            with open(path, "w") as f:
                json.dump({category: dict(counts) for category, counts in sorted(tally.items())}, f,
                          indent=1, sort_keys=True)
    return report
