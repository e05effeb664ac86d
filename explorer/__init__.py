"""Sketch Explorer: see inside sketched online learning.

The algorithms of five papers, each observable step by step through hooks
(:mod:`explorer.hooks`), in the notation of ``docs/algorithms.md``:

- :mod:`explorer.sketch`: Frequent Directions, Robust FD, Generalized FD, random projection;
- :mod:`explorer.newton`: the sketched online Newton step (RFD-SON, FD-SON, RP-SON, FULL-ON);
- :mod:`explorer.adagrad`: ADA-FULL, ADA-DIAG, ADA-FD, ADA-FFD, OGD, Adam;
- :mod:`explorer.pca`: capping, mixture decomposition, fixed share, online adaptive PCA,
  variance minimization;
- :mod:`explorer.fm`: sketched FTRL for factorization machines.

:func:`explorer.run.run` streams data through any of them and returns a ``History``;
:func:`explorer.merge` merges sketches of the parts of a stream in a tree (docs/merging.md).
"""

from .adagrad import OGD, AdaGrad, Adam, AdaLR, RadaGrad
from .fm import FTRLFM, OCGFM, OGDFM, SketchedFTRL
from .hooks import Recorder
from .merging import merge
from .newton import FDSON, RFDSON, RPSON, FullON, OjaSON, SketchedOnlineNewton
from .pca import (
    AdaptiveBestSubset,
    FollowTheLeaderPCA,
    OnlineAdaptivePCA,
    VarianceMinSimplex,
    VarianceMinSphere,
    adaptive_regret,
    cap,
    fixed_share,
    mixture_decomposition,
)
from .oja import OjaSketch
from .history import History
from .run import run
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
    "OjaSketch",
    "merge",
    "SketchedOnlineNewton",
    "RFDSON",
    "FDSON",
    "RPSON",
    "OjaSON",
    "FullON",
    "AdaGrad",
    "OGD",
    "Adam",
    "AdaLR",
    "RadaGrad",
    "OnlineAdaptivePCA",
    "AdaptiveBestSubset",
    "VarianceMinSphere",
    "VarianceMinSimplex",
    "FollowTheLeaderPCA",
    "adaptive_regret",
    "cap",
    "fixed_share",
    "mixture_decomposition",
    "SketchedFTRL",
    "FTRLFM",
    "OGDFM",
    "OCGFM",
    "Recorder",
    "run",
    "History",
    "save_state",
    "load_state",
]
