"""Fuzz entries of explorer.anatomy (tests/fuzz_registry.py): opening a round reads the row
(and label) it is given, so hostile rows must be refused as ``update`` / ``step`` refuse
them (a ValueError, the sketch or learner bit-identical) or accepted with a finite state and
finite parts."""

from __future__ import annotations

import numpy as np

from explorer import RFDSON, AdaGrad, OnlineAdaptivePCA, SketchedFTRL
from explorer.anatomy import OpenedRound, open_round
from explorer.sketch import RobustFrequentDirections
from explorer.state import nonfinite_entries
from fuzz_checks import fingerprint

D = 4


def _rows() -> list:
    rng = np.random.default_rng(7)
    scaled = [("sketch", rng.standard_normal(D) * 10.0 ** k) for k in (-320, -160, 0, 150, 160, 300)]
    hostile = [np.full(D, np.nan), np.full(D, np.inf), np.ones(D + 1), np.ones((2, D)), "abcd", None,
               [1, "a", 2, 3], np.array([1 + 1j] * D), [], object()]
    return [*scaled, *((kind, x) for kind in KINDS[1:] for _, x in scaled),
            *((kind, x) for kind in KINDS for x in hostile)]


MAKE = {"sketch": lambda: RobustFrequentDirections(D, 2, alpha0=0.5),
        "son": lambda: RFDSON(D, m=2, alpha0=1.0, eta=0.1),
        "adagrad": lambda: AdaGrad(D, variant="ffd", tau=2, loss="logistic"),
        "pca": lambda: OnlineAdaptivePCA(D, 2, alpha=0.01, seed=0),
        "sftrl": lambda: SketchedFTRL(D, m=2, loss="logistic")}
KINDS = tuple(MAKE)
UNLABELLED = ("sketch", "pca")


def _setup(value, scratch):
    algorithm = MAKE[value[0]]()
    first = np.arange(1.0, D + 1) / D
    algorithm.update(first) if value[0] == "sketch" else (
        algorithm.learn(first) if value[0] == "pca" else algorithm.learn(first, 1.0))
    return algorithm


def _call(subject, value, scratch):
    if value[0] in UNLABELLED:
        return subject, open_round(subject, value[1])
    return subject, open_round(subject, value[1], 1.0)


def _accept(subject, value, result, scratch):
    obj, opened = result
    assert isinstance(opened, OpenedRound)
    assert nonfinite_entries(obj.state_dict()) == [], "non-finite state"
    for part in opened.parts:
        if part.value is not None and not isinstance(part.value, str):
            assert np.all(np.isfinite(np.asarray(part.value, dtype=float))), f"non-finite {part.symbol}"


def anatomy_entries(Entry, Family) -> list:
    return [Entry("explorer.anatomy:open_sketch_round", "learners", _call, _accept,
                  setup=_setup, observe=lambda subject, scratch: fingerprint(subject),
                  valid=lambda: [(kind, np.ones(D) / D) for kind in KINDS],
                  families={"rows at scale extremes and malformed": Family(values=_rows)},
                  covers=tuple(f"explorer.anatomy:{name}" for name in (
                      "open_round", "open_son_round", "open_adagrad_round", "open_pca_round",
                      "open_sftrl_round")))]
