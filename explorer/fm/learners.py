"""The online learners of the compact convex FM and :func:`progressive`, by paper name.

Luo et al. (KDD 2018; docs/algorithms.md section 6). One module per learner:

- :class:`SketchedFTRL` (:mod:`.sftrl`, Algorithms 4-5): FTRL's gradient sum kept by
  Generalized FD, ``Theta_{t+1} = -eta (B+^T B+ - B-^T B-)``, never formed.
- :class:`FTRLFM` (:mod:`.ftrl`, Algorithm 1 with ``R = ||Theta||_F^2 / 2``):
  ``Theta_{t+1} = -eta sum_{s<=t} q_s a_hat_s a_hat_s^T``, a full (d+1) x (d+1) matrix.
- :class:`OGDFM` (:mod:`.ogd`): ``Theta_{t+1} = Theta_t - eta_t q_t a_hat_t a_hat_t^T``
  with ``eta_t = eta / sqrt(t)``.

Their shared game, round and guarantees are :class:`ConvexFM`'s (:mod:`.convex`); the two
full-matrix baselines share :class:`~explorer.fm.full_matrix.FullMatrixFM`.
"""

from __future__ import annotations

from ..history import History
from .convex import (FTRL_DEFAULT_ETA, LOSS_NAMES, MAX_PREDICTION, MAX_THETA_ENTRY, ConvexFM,
                     RoundFailed)
from .ftrl import FTRLFM
from .ogd import OGD_DEFAULT_ETA, OGDFM
from .sftrl import SketchedFTRL

__all__ = ["SketchedFTRL", "FTRLFM", "OGDFM", "progressive", "LOSS_NAMES", "MAX_PREDICTION",
           "MAX_THETA_ENTRY", "ConvexFM", "RoundFailed", "FTRL_DEFAULT_ETA", "OGD_DEFAULT_ETA"]


def progressive(learner: ConvexFM, X, y) -> History:
    """Run ``learner`` over the stream ``(X, y)``: predict each row, then learn it (the
    protocol's :meth:`~explorer.learner.OnlineLearner.progressive`, which for these learners
    keeps each round's ``gradient_scale`` q_t too).

    >>> import scipy.sparse
    >>> X = scipy.sparse.csr_array(([1.0, 1.0, 1.0, 1.0], [0, 2, 1, 3], [0, 2, 4]), shape=(2, 4))
    >>> run = progressive(FTRLFM(d=4, eta=0.1), X, [4.0, 2.0])
    >>> run["t"].tolist(), run["prediction"].round(3).tolist(), run["loss"].round(3).tolist()
    ([1, 2], [0.0, 0.4], [8.0, 1.28])
    >>> run["gradient_scale"].round(3).tolist(), bool(run["seconds"][-1] > 0)
    ([-4.0, -1.6], True)
    """
    if not isinstance(learner, ConvexFM):
        raise ValueError(f"learner must be SketchedFTRL, FTRLFM or OGDFM, got {type(learner).__name__}")
    return learner.progressive(X, y)
