"""Every sketch a learner drives owns its undo: ``undo_point()`` before an ``insert`` puts the
sketch back bit for bit, whether the row shrank the buffer, folded into Oja's rows or moved
every row of a random projection. (A learner once edited the sketch's state dict to do this.)"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.oja import OjaSketch
from explorer.sketch import FrequentDirections, RandomProjectionSketch, RobustFrequentDirections

MAKERS = {
    "fd": lambda d, m: FrequentDirections(d, m),
    "fast fd": lambda d, m: FrequentDirections(d, m, fast=True),
    "rfd": lambda d, m: RobustFrequentDirections(d, m, alpha0=0.5, fast=True),
    "rp": lambda d, m: RandomProjectionSketch(d, m, seed=3),
    "oja": lambda d, m: OjaSketch(d, m, seed=3),
}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k] for k in a)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(sorted(MAKERS)), before=st.integers(0, 12), m=st.integers(2, 4),
       seed=st.integers(0, 2 ** 16))
def test_undo_point_restores_the_sketch_after_one_insert(kind, before, m, seed):
    rng = np.random.default_rng(seed)
    d = 5
    sketch = MAKERS[kind](d, m)
    for row in rng.standard_normal((before, d)):
        sketch.insert(row)
    saved = sketch.state_dict()
    undo = sketch.undo_point()
    sketch.insert(rng.standard_normal(d))
    assert not _same(sketch.state_dict(), saved)
    undo()
    assert _same(sketch.state_dict(), saved)
    # and the restored sketch continues as one that never took the row
    twin = MAKERS[kind](d, m)
    twin.load_state_dict(saved)
    row = rng.standard_normal(d)
    sketch.insert(row)
    twin.insert(row)
    assert _same(sketch.state_dict(), twin.state_dict())
