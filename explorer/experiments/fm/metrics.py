"""The FM page's metrics: progressive AUC and RMSE, and the ratings' reference predictor.

Each label is predicted before it is learnt (Luo et al., KDD 2018, section 5;
docs/algorithms.md section 6): :func:`progressive_auc` for -1/+1 labels, :func:`rmse` for
ratings, measured against :func:`running_mean`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["progressive_auc", "rmse", "running_mean"]


def progressive_auc(z: np.ndarray, y: np.ndarray) -> float:
    """Area under the ROC curve of scores ``z`` for labels ``y`` in {-1, +1} (ties count half).

    NaN while one class is missing or a score is not finite (a diverged learner).

    >>> progressive_auc(np.array([0.1, 0.9, 0.4, 0.8]), np.array([-1.0, 1.0, -1.0, 1.0]))
    1.0
    """
    z, y = np.asarray(z, dtype=float), np.asarray(y, dtype=float)
    positive = y > 0
    n_pos = int(positive.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0 or not np.isfinite(z).all():
        return np.nan
    import scipy.stats  # here, not at import: 0.4 s that no dashboard page needs

    ranks = scipy.stats.rankdata(z)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def rmse(z: np.ndarray, y: np.ndarray) -> float:
    """``sqrt(mean((z - y)^2))``; NaN when there is nothing yet or a prediction is not finite.

    >>> rmse(np.array([3.0, 5.0]), np.array([4.0, 4.0]))
    1.0
    """
    if z.size == 0 or not np.isfinite(z).all():
        return np.nan
    return float(np.sqrt(np.mean((z - y) ** 2)))


def running_mean(y: np.ndarray) -> np.ndarray:
    """The reference predictor of ratings: before round t, the mean of the ratings seen so
    far (0 at first).

    >>> running_mean(np.array([4.0, 2.0, 3.0])).tolist()
    [0.0, 4.0, 3.0]
    """
    seen = np.arange(y.size)
    reference = np.r_[0.0, np.cumsum(y)[:-1]] / np.maximum(seen, 1)
    reference[0] = 0.0
    return reference
