r"""Sketched FTRL against full FTRL and OGD on one stream: the factorization-machine experiment.

What the dashboard's FM page (:mod:`explorer.dashboard.pages.fm`) shows, without Panel
(Luo, Zhang, Zhang, Zhu, Zhang, Pei, KDD 2018; docs/algorithms.md section 6). The convex FM
``z = a_hat^T Theta a_hat`` gets the rank-one, sign-indefinite gradient ``q a_hat a_hat^T``
(``q = phi'(z)``) every round; FTRL keeps their sum in a full (d+1) x (d+1) ``Theta``,
S-FTRL in Generalized FD, ``Theta = -eta (B+^T B+ - B-^T B-)``. One module per concern:

- :mod:`.lineup`: :func:`make_learners`, the three learners of :data:`LEARNERS` on one
  stream's settings, and when a learner counts as diverged (:data:`DIVERGED`).
- :mod:`.race`: :class:`FactorizationRace` plays them in lock step, a chunk of rows at a
  time through each learner's progressive loop, and keeps the exact sums S-FTRL's two
  halves sketch while ``d + 1 <=`` :data:`ORACLE_MAX`.
- :mod:`.metrics`: :func:`progressive_auc`, :func:`rmse`, :func:`running_mean`: the page's
  metrics (each label predicted before it is learnt) and the ratings' reference.
- :mod:`.tasks`: :func:`task_stream`, the stream of one of the page's :data:`TASKS`
  (through :func:`synthetic_stream`, :func:`movielens_stream`, :func:`binary_stream`).
- :mod:`.protocol`: the paper's protocol (``notebooks/sftrl_paper.ipynb``): :func:`online_run`
  (the average loss against time of its Figures 1-2), :func:`frozen_predictions` (the final
  model on held-out rows) and :func:`tune` (:func:`grid_walk` on a validation split).

>>> from explorer.fm import synthetic_ratings
>>> data = synthetic_ratings(2000, n_users=40, n_items=80, seed=0)
>>> race = FactorizationRace(make_learners(data.X.shape[1], m=4), data.X, data.y)
>>> race.step(2000), race.stopped
(2000, {})
>>> point = race.measure()   # progressive RMSE of each learner, and of the running mean
>>> [round(point[key], 2) for key in ("metric_sftrl", "metric_ftrl", "metric_ogd", "reference")]
[1.14, 1.09, 1.07, 1.15]
"""

from __future__ import annotations

from .lineup import DIVERGED, LEARNER_NAMES, LEARNERS, ORACLE_MAX, make_learners
from .metrics import progressive_auc, rmse, running_mean
from .protocol import frozen_predictions, grid_walk, online_run, tune, validation_error
from .race import FactorizationRace
from .tasks import (BINARY, MOVIELENS, RATING_NOISE, SYNTHETIC, TASKS, TASTE_RANK, binary_stream, movielens_by_time,
                    movielens_stream, synthetic_stream, task_stream)

__all__ = ["LEARNERS", "LEARNER_NAMES", "ORACLE_MAX", "DIVERGED", "SYNTHETIC", "MOVIELENS", "BINARY",
           "TASKS", "RATING_NOISE", "TASTE_RANK", "FactorizationRace", "make_learners", "progressive_auc", "rmse", "running_mean",
           "task_stream", "synthetic_stream", "movielens_stream", "binary_stream", "movielens_by_time",
           "online_run", "frozen_predictions", "grid_walk", "tune", "validation_error"]
