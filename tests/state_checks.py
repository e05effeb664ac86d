"""Comparing algorithm states bit for bit: the one home of the tests' state helpers.

A refused call must leave an object's ``state_dict()`` exactly as it was, and a resumed or
twin object must hold exactly the same numbers: the same keys and, for every value, the same
dtype, shape and bytes (so ``-0.0`` is not ``0.0`` and NaN payloads count).
"""

from __future__ import annotations

import numpy as np


def snapshot(obj) -> dict:
    """``obj.state_dict()`` with every array copied (the object may keep changing)."""
    return {key: (value if isinstance(value, str) else np.array(value, copy=True))
            for key, value in obj.state_dict().items()}


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
