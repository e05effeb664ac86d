"""The S-FTRL paper's protocol: train online, validate or test frozen, tune on a grid.

Luo et al. (KDD 2018, section 5; docs/algorithms.md section 6), as
``notebooks/sftrl_paper.ipynb`` runs it: :func:`online_run` learns rows online in timed
chunks (the average loss against running time of the paper's Figures 1-2),
:func:`frozen_predictions` scores the final model on held-out rows, and :func:`tune` picks a
hyperparameter on a grid by :func:`grid_walk` on a validation split, the same way for every
learner.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
import scipy.sparse

from ...errors import Diverged
from ...fm import progressive
from .metrics import progressive_auc, rmse

__all__ = ["frozen_predictions", "online_run", "validation_error", "grid_walk", "tune"]


def frozen_predictions(learner, X) -> np.ndarray:
    """The predictions of ``learner`` as it is now (no update) for every row of ``X``
    (dense rows, or CSR rows passed as ``(indices, values)``: never densified)."""
    if scipy.sparse.issparse(X):
        X = scipy.sparse.csr_array(X)
        return np.array([learner.predict((X.indices[lo:hi], X.data[lo:hi]))
                         for lo, hi in zip(X.indptr[:-1], X.indptr[1:])])
    return np.array([learner.predict(x) for x in X])


def online_run(learner, X, y, *, chunks: int = 1, before: Mapping | None = None) -> dict:
    """Learn the rows ``(X, y)`` online (each predicted before its update) in ``chunks``
    timed calls of :func:`explorer.fm.progressive`; ``before``: a run of the rounds just
    before these, which this one continues (its predictions, losses, time and curve come
    first). Returns ``predictions``, ``losses`` (the learner's own), ``seconds`` (of the
    learning loops only) and ``curve``, rows ``(seconds so far, average loss so far)`` after
    each chunk: the paper's "average loss against running time" (its Figures 1-2).

    >>> from explorer.fm import FTRLFM, synthetic_ratings
    >>> data = synthetic_ratings(300, n_users=20, n_items=20, seed=0)
    >>> run = online_run(FTRLFM(40), data.X, data.y, chunks=3)
    >>> run["predictions"].shape, run["curve"].shape, bool(run["curve"][-1, 1] == run["losses"].mean())
    ((300,), (3, 2), True)
    """
    chunks = int(chunks)
    if not 1 <= chunks <= max(1, len(y)):
        raise ValueError(f"chunks must lie in [1, {max(1, len(y))}], got {chunks}")
    predictions = [before["predictions"]] if before else []
    losses = [before["losses"]] if before else []
    seconds = before["seconds"] if before else 0.0
    curve = list(before["curve"]) if before else []
    edges = np.linspace(0, len(y), chunks + 1).astype(int)
    for lo, hi in zip(edges[:-1], edges[1:]):
        run = progressive(learner, X[lo:hi], y[lo:hi])
        predictions.append(run["prediction"])
        losses.append(run["loss"])
        seconds += float(run["seconds"][-1]) if hi > lo else 0.0
        curve.append((seconds, float(np.concatenate(losses).mean())))
    return {"predictions": np.concatenate(predictions), "losses": np.concatenate(losses),
            "seconds": seconds, "curve": np.array(curve)}


def validation_error(z: np.ndarray, y: np.ndarray) -> float:
    """What :func:`tune` minimizes: the RMSE for ratings, ``1 - AUC`` for labels in
    {-1, +1}; ``inf`` for a prediction that is not finite.

    >>> validation_error(np.array([3.0, 5.0]), np.array([4.0, 4.0]))
    1.0
    >>> validation_error(np.array([0.2, -0.1, 0.5]), np.array([1.0, -1.0, 1.0]))
    0.0
    """
    binary = bool(np.isin(y, (-1.0, 1.0)).all()) and 0 < np.sum(y > 0) < len(y)
    value = (1.0 - progressive_auc(z, y)) if binary else rmse(z, y)
    return value if np.isfinite(value) else np.inf


def grid_walk(score: Callable[[float], float], grid, start) -> dict:
    """Tune one value on a ``grid`` without trying all of it: from ``start`` (on the grid),
    score both neighbours and step toward the lower ``score(value)`` (lower is better,
    ``inf`` for a failed run) until both neighbours of the best are worse or off the grid.
    Assumes one minimum along the grid. Returns ``{value: score}`` of every value tried,
    in grid order; ``score`` is called once per value.

    >>> tried = grid_walk(lambda v: (v - 5) ** 2, [1, 2, 5, 10, 20], start=20)
    >>> tried, min(tried, key=tried.get)
    ({2: 9, 5: 0, 10: 25, 20: 225}, 5)
    """
    grid = list(grid)
    if start not in grid:
        raise ValueError(f"start must be on the grid {grid}, got {start!r}")
    tried: dict = {}

    def at(j: int) -> float:
        if not 0 <= j < len(grid):
            return np.inf
        if grid[j] not in tried:
            tried[grid[j]] = score(grid[j])
        return tried[grid[j]]

    i = grid.index(start)
    while True:
        here, left, right = at(i), at(i - 1), at(i + 1)
        if here <= min(left, right):
            break
        i = i - 1 if left < right else i + 1
    return {value: tried[value] for value in grid if value in tried}


def tune(make: Callable[[float], Any], grid, start, X, y, *, n_fit: int, n_valid: int,
         chunks: int = 1) -> dict:
    """The same tuning for every learner: for a value on ``grid`` (walked by
    :func:`grid_walk` from ``start``), learn rows ``[0, n_fit)`` online with ``make(value)``
    (:func:`online_run`, ``chunks`` timed calls) and score the frozen model on rows
    ``[n_fit, n_fit + n_valid)`` by :func:`validation_error`; a run that diverges scores
    ``inf``. Returns ``tried`` (``{value: validation error}``), ``value`` (the best) and
    ``run``, the best value's :func:`online_run` with its ``learner``, which can go on
    learning the validation rows (:func:`online_run` with ``before``).
    """
    runs: dict = {}

    def score(value) -> float:
        learner = make(value)
        try:
            run = online_run(learner, X[:n_fit], y[:n_fit], chunks=chunks)
            error = validation_error(frozen_predictions(learner, X[n_fit:n_fit + n_valid]),
                                     y[n_fit:n_fit + n_valid])
        except Diverged:
            return np.inf
        best = min((r["error"] for r in runs.values()), default=np.inf)
        if error < best or not runs:  # keep only the best run (its learner is large)
            runs.clear()
            runs[value] = {**run, "learner": learner, "error": error}
        return error

    tried = grid_walk(score, grid, start)
    value = min(tried, key=tried.get)
    if value not in runs:  # every run diverged
        raise Diverged(f"every value tried diverged: {list(tried)}", row=0, t=0)
    return {"tried": tried, "value": value, "run": runs[value]}
