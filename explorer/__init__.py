"""Sketch Explorer: see inside sketched online learning.

The algorithms of five papers (Frequent Directions and Robust FD; sketched online Newton;
adaptive gradient on a sketch; online adaptive PCA with fixed share; sketched FTRL for
factorization machines), each observable step by step through hooks
(:mod:`explorer.hooks`). See ``../shared/ALGORITHMS.md`` for the notation.
"""

from .hooks import Recorder
from .sketch import (
    FrequentDirections,
    GeneralizedFrequentDirections,
    RandomProjectionSketch,
    RobustFrequentDirections,
)
from .state import load_state, save_state

__all__ = [
    "FrequentDirections",
    "RobustFrequentDirections",
    "GeneralizedFrequentDirections",
    "RandomProjectionSketch",
    "Recorder",
    "save_state",
    "load_state",
]
