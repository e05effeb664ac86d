"""Convex factorization machines learned online: S-FTRL, FTRL, OGD (docs/algorithms.md section 6).

Luo, Zhang, Zhang, Zhu, Zhang, Pei (KDD 2018), *Sketched follow-the-regularized-leader
for online factorization machine*. The FM ``z = w0 + w^T a + a^T X a`` is written as
``z = a_hat^T Theta a_hat`` with one symmetric ``Theta`` (:mod:`.compact`), so every loss
gradient is the rank-one, sign-indefinite ``phi'(z) a_hat a_hat^T``. FTRL sums those
gradients in a full (d+1) x (d+1) matrix; S-FTRL sums them in Generalized Frequent
Directions (two FD sketches, ``B+`` and ``B-``) and never forms ``Theta``
(:mod:`.learners`). Streams: one-hot ratings (MovieLens-100K, MovieLens latest-small,
synthetic) and a binary data set (:mod:`.data`).

- :class:`SketchedFTRL` ``(d, *, m=10, eta=None, loss="squared", fast=True)``
- :class:`FTRLFM` ``(d, *, eta=None, loss="squared")``, :class:`OGDFM` (same arguments)
- ``learn(x, y) -> loss``, ``step(x, y) -> StepRecord`` (:mod:`explorer.hooks`: the
  prediction, ``gradient_scale`` q, S-FTRL's shrink and ranks), ``predict(x) -> z``; ``x``
  dense, ``(indices, values)`` or scipy.sparse; :func:`progressive` runs a whole stream
  and returns its per-round numbers as a :class:`~explorer.history.History`.
- ``eta`` is hot: ``with_params(eta=...)`` continues the stream (:mod:`explorer.params`).
- All or nothing: bad input is a ``ValueError`` before anything changes, and a round that
  diverges raises :class:`~explorer.errors.Diverged` (a ``ValueError``, naming the row)
  with the learner as it was before the call; the scale limits are ``MAX_SQUARED_NORM``
  (rows), ``MAX_LABEL``, ``MAX_PREDICTION`` and ``MAX_THETA_ENTRY``.

>>> from explorer.fm import SketchedFTRL, FTRLFM, progressive, synthetic_ratings
>>> data = synthetic_ratings(2000, n_users=40, n_items=60, seed=1)
>>> d = data.X.shape[1]
>>> exact = progressive(FTRLFM(d), data.X, data.y)
>>> sketched = progressive(SketchedFTRL(d, m=d + 2), data.X, data.y)   # m >= d + 2: exact
>>> bool(abs(sketched["prediction"] - exact["prediction"]).max() < 1e-8)
True
"""

from .compact import MAX_LABEL, MAX_SQUARED_NORM, as_fm_row, augment, compact_theta, fm_predict, split_theta
from .data import (Ratings, most_active, movielens_100k, movielens_latest_small, one_hot, spambase,
                   synthetic_ratings)
from .learners import (
    FTRLFM,
    LOSS_NAMES,
    MAX_PREDICTION,
    MAX_THETA_ENTRY,
    OGDFM,
    SketchedFTRL,
    progressive,
)
from .ocg import OCGFM

__all__ = [
    "SketchedFTRL",
    "FTRLFM",
    "OGDFM",
    "OCGFM",
    "progressive",
    "LOSS_NAMES",
    "MAX_SQUARED_NORM",
    "MAX_LABEL",
    "MAX_PREDICTION",
    "MAX_THETA_ENTRY",
    "augment",
    "compact_theta",
    "split_theta",
    "fm_predict",
    "as_fm_row",
    "Ratings",
    "one_hot",
    "movielens_100k",
    "movielens_latest_small",
    "most_active",
    "synthetic_ratings",
    "spambase",
]
