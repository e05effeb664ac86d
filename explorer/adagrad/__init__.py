"""Adaptive gradient on a sketch: ADA-FULL, ADA-DIAG, ADA-FD, ADA-FFD (PDS and CMD), OGD, Adam.

Wan & Zhang, *Efficient adaptive online learning via frequent directions* (TPAMI 2022),
docs/algorithms.md section 4. :class:`AdaGrad` is the learner (``variant`` in "full", "diag",
"fd", "ffd"; ``method`` in "cmd", "pds"); :mod:`explorer.adagrad.proximal` holds the four
proximal matrices ``H_t`` and how each applies ``H_t^{-1}``; :class:`OGD` and
:class:`Adam` are the paper's baselines. :data:`LEARNERS` names all six by key (the
variants, then :data:`BASELINES`) and :func:`make_learner` builds one from its key.
:mod:`explorer.adagrad.randomized` adds the paper's randomized baselines :class:`AdaLR` and
:class:`RadaGrad` (Krummenacher et al. 2016), AdaGrad learners with their own proximal matrices;
:func:`make_learner` builds them by their keys, :data:`RANDOMIZED` ("lr", "radagrad").
``AdaFD`` (:mod:`explorer.adagrad.torch_optim`, the optional ``torch`` extra) is ADA-FD /
ADA-FFD as a ``torch.optim.Optimizer``; it is imported on first use, so this package
imports without torch.

>>> from explorer.adagrad import AdaGrad
>>> learner = AdaGrad(3, variant="ffd", method="pds", tau=2)
>>> round(learner.learn([1.0, 2.0, 0.0], 1.0), 3), learner.rank
(1.0, 1)
"""

from .learners import (
    BASELINES, LABELS, LEARNERS, METHODS, RANDOMIZED, VARIANTS, OGD, AdaGrad, Adam, RankShrinkEvent,
    default_delta, make_learner,
)
from .proximal import DiagonalProximal, FDProximal, FFDProximal, FullProximal
from .randomized import AdaLR, FourierProjection, LowRankProximal, RadaGrad, RandomizedQRProximal

__all__ = [
    "AdaGrad",
    "OGD",
    "Adam",
    "RankShrinkEvent",
    "default_delta",
    "make_learner",
    "VARIANTS",
    "METHODS",
    "BASELINES",
    "LEARNERS",
    "LABELS",
    "FullProximal",
    "DiagonalProximal",
    "FDProximal",
    "FFDProximal",
    "AdaLR",
    "RadaGrad",
    "RANDOMIZED",
    "FourierProjection",
    "LowRankProximal",
    "RandomizedQRProximal",
]


def __getattr__(name: str):
    """``AdaFD`` (explorer.adagrad.torch_optim, the optional torch extra), imported on first use."""
    if name == "AdaFD":
        from .torch_optim import AdaFD

        return AdaFD
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
