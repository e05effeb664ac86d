"""The FM page's streams: one of :data:`TASKS` as rows, labels, notes and the settings it reads.

Luo et al. (KDD 2018, section 5; docs/algorithms.md section 6) race on one-hot ratings
(user, item) and on binary labels: :func:`task_stream` picks :func:`synthetic_stream`,
:func:`movielens_stream` or :func:`binary_stream` (unit-norm rows with -1/+1 labels).
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from ...fm import Ratings, movielens_100k, one_hot, synthetic_ratings
from ...streams import linear_classification_labels

__all__ = ["SYNTHETIC", "MOVIELENS", "BINARY", "TASKS", "RATING_NOISE", "TASTE_RANK", "task_stream",
           "movielens_by_time", "synthetic_stream", "movielens_stream", "binary_stream"]

SYNTHETIC, MOVIELENS, BINARY = "ratings: synthetic", "ratings: MovieLens-100K", "binary: shared stream"
TASKS = (SYNTHETIC, MOVIELENS, BINARY)
"""The tasks of :func:`task_stream`: seeded synthetic ratings, MovieLens-100K's, or binary labels."""
RATING_NOISE = 0.3
"""The synthetic ratings' noise (:func:`explorer.fm.synthetic_ratings`'s ``noise``, 0.9 there):
lower than MovieLens', so that the users' and items' biases stand out of the noise within a
stream of a few thousand ratings."""
TASTE_RANK = 1
"""The rank of the synthetic ratings' taste ``p_u^T q_i`` (4 in :func:`explorer.fm.synthetic_ratings`):
the taste of a pair never rated before cannot be learnt from one-hot rows, so it acts as noise."""


def task_stream(task: str, n: int, *, seed: int, n_users: int, n_items: int,
                shared: Callable[[], tuple] | None = None,
                movielens: Callable[[], Ratings] | None = None, noise: float = RATING_NOISE):
    """``(X, y, notes, reads)`` of one of :data:`TASKS`, ``reads`` the stream settings it
    depends on: :func:`synthetic_stream` (``n``, ``seed``; rating ``noise``), :func:`movielens_stream` of
    ``movielens()`` (default :func:`movielens_by_time`; ``n`` only; when it is not available,
    the synthetic ratings with a note why), or :func:`binary_stream` of ``shared()``'s
    ``(X, notes)`` (the shared stream: ``dataset``, ``n``, ``d``, ``seed``)."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(map(repr, TASKS))}, got {task!r}")
    if task == BINARY:
        if shared is None:
            raise ValueError("the binary task needs shared, a callable returning the shared stream (X, notes)")
        X, notes = shared()
        A, y, note = binary_stream(X, seed=seed)
        return A, y, [*notes, note], ("dataset", "n", "d", "seed")
    notes = []
    if task == MOVIELENS:
        try:
            X, y, note = movielens_stream((movielens or movielens_by_time)(), n)
            return X, y, [note], ("n",)
        except (ModuleNotFoundError, FileNotFoundError) as error:
            notes.append(f"MovieLens-100K is not available ({error}); streaming the synthetic "
                         "ratings instead.")
    X, y, more = synthetic_stream(n, n_users=n_users, n_items=n_items, seed=seed, noise=noise)
    return X, y, [*notes, *more], ("n", "seed")


@functools.cache
def movielens_by_time() -> Ratings:
    """MovieLens-100K in time order (:func:`explorer.fm.movielens_100k`), loaded once per process."""
    return movielens_100k(order="time")


def synthetic_stream(n: int, *, n_users: int, n_items: int, seed: int, noise: float = RATING_NOISE):
    """``(X, y, notes)``: ``n`` seeded MovieLens-shaped ratings as one-hot rows
    ``[e_user; e_item]`` (:func:`explorer.fm.synthetic_ratings` with this ``noise`` and
    :data:`TASTE_RANK`), at most one per (user, item) pair (``n`` is capped at
    ``n_users * n_items``, and a note says so)."""
    notes = []
    pairs = n_users * n_items
    if n > pairs:
        notes.append(f"{n_users} users × {n_items} items give only {pairs} "
                     f"(user, item) pairs, each rated once: streaming {pairs} rows (n = {n} asked).")
        n = pairs
    data = synthetic_ratings(n, n_users=n_users, n_items=n_items, seed=seed, noise=noise, rank=TASTE_RANK)
    notes.append(f"Ratings task: this page streams its own seeded MovieLens-shaped ratings "
                 f"(synthetic_ratings, seed {seed}, noise σ = {noise:g}, taste of rank "
                 f"{TASTE_RANK}): one-hot rows [e_user; e_item], "
                 f"d = {n_users} + {n_items} = {data.X.shape[1]}. The shared "
                 "data set and d apply to the binary task only.")
    return data.X, data.y, notes


def movielens_stream(data: Ratings, n: int):
    """``(X, y, note)``: the first ``n`` ratings of ``data`` as one-hot rows over only the
    users and items they mention (renumbered in order of id). Columns never seen leave
    ``Theta`` unchanged, so the predictions are those of the model on all columns."""
    users = np.unique(data.users[:n], return_inverse=True)[1]
    items = np.unique(data.items[:n], return_inverse=True)[1]
    n_users, n_items = int(users.max()) + 1, int(items.max()) + 1
    X = one_hot(users, items, n_users, n_items)
    return X, data.y[:n].copy(), (
        f"MovieLens-100K: its first n = {n} ratings in time order, as one-hot rows over "
        f"the {n_users} users and {n_items} items they mention (d = {n_users + n_items}). "
        "Columns never seen leave Θ unchanged, so the predictions are those of the full "
        "d = 2625 model. The seed does not apply.")


def binary_stream(X: np.ndarray, *, seed: int):
    """``(A, y, note)``: the rows of ``X`` scaled to unit norm (the FM's ``z`` is quadratic in
    the row) and the labels :func:`~explorer.streams.linear_classification_labels` of ``X``."""
    y, _ = linear_classification_labels(X, seed=seed)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    A = X / np.where(norms > 0, norms, 1.0)
    return A, y, (f"Binary task on the shared stream (d = {X.shape[1]}): labels "
                  f"y = sign(w*ᵀx), 5% flipped (linear_classification_labels, seed {seed}); "
                  "each row is scaled to unit norm, since the FM's z is quadratic in the row.")
