"""Fuzz entries of explorer.anatomy (tests/fuzz_registry.py): opening a round reads the row
(and label) it is given, so hostile rows must be refused as ``update`` / ``step`` refuse
them (a ValueError, the sketch or learner bit-identical) or accepted with a finite state and
finite parts."""

from __future__ import annotations

import numpy as np

from explorer import RFDSON
from explorer.anatomy import OpenedRound, open_sketch_round, open_son_round
from explorer.sketch import RobustFrequentDirections
from explorer.state import nonfinite_entries
from fuzz_checks import fingerprint

D = 4


def _rows() -> list:
    rng = np.random.default_rng(7)
    scaled = [("sketch", rng.standard_normal(D) * 10.0 ** k) for k in (-320, -160, 0, 150, 160, 300)]
    hostile = [np.full(D, np.nan), np.full(D, np.inf), np.ones(D + 1), np.ones((2, D)), "abcd", None,
               [1, "a", 2, 3], np.array([1 + 1j] * D), [], object()]
    return [*scaled, *(("sketch", x) for x in hostile), *(("son", x) for x in hostile),
            *(("son", x) for _, x in scaled)]


def _setup(value, scratch):
    if value[0] == "sketch":
        sketch = RobustFrequentDirections(D, 2, alpha0=0.5)
        sketch.update(np.arange(1.0, D + 1))
        return sketch
    learner = RFDSON(D, m=2, alpha0=1.0, eta=0.1)
    learner.learn(np.arange(1.0, D + 1), 1.0)
    return learner


def _call(subject, value, scratch):
    if value[0] == "sketch":
        return subject, open_sketch_round(subject, value[1])
    return subject, open_son_round(subject, value[1], 1.0)


def _accept(subject, value, result, scratch):
    obj, opened = result
    assert isinstance(opened, OpenedRound)
    assert nonfinite_entries(obj.state_dict()) == [], "non-finite state"
    for part in opened.parts:
        if part.value is not None:
            assert np.all(np.isfinite(np.asarray(part.value, dtype=float))), f"non-finite {part.symbol}"


def anatomy_entries(Entry, Family) -> list:
    return [Entry("explorer.anatomy:open_sketch_round", "learners", _call, _accept,
                  setup=_setup, observe=lambda subject, scratch: fingerprint(subject),
                  valid=lambda: [("sketch", np.ones(D)), ("son", np.ones(D))],
                  families={"rows at scale extremes and malformed": Family(values=_rows)},
                  covers=("explorer.anatomy:open_son_round",))]
