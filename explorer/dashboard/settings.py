"""The settings every page shares: the data stream and the hyper-parameters m, alpha0, eta.

One :class:`Settings` per browser session; its values live in the URL query string (see
:func:`apply_query`), so a link reproduces exactly what a student sees. As in the
TensorFlow Playground (UX.md), settings are *structural* (a new data set, stream length
n, dimension d, seed or sketch size m restarts the stream) or *hot* (alpha0 and eta apply
mid-stream on the pages where the maths allows it; each page lists its hot ones).

``stream()`` loads the rows through :func:`explorer.streams.load_stream` (or the user's
upload) and explains, rather than fails, when a combination cannot be honoured (n larger
than a real data set, d for a data set whose d is fixed, an upload that is gone).
"""

from __future__ import annotations

import re

import numpy as np
import param

from ..streams import DATASETS, load_stream
from .upload import MAX_COLUMNS, UploadedData

__all__ = ["Settings", "UPLOAD", "DEFAULT_DATASET", "URL_NAMES", "apply_query"]

DEFAULT_DATASET = "low rank + noise"
UPLOAD = "your upload"
"""The data-set choice that streams the file the user uploaded."""
URL_NAMES = ("dataset", "n", "d", "seed", "m", "alpha0", "eta")
ALPHA0_CHOICES = (0.0, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
ETA_CHOICES = (0.0001, 0.001, 0.01, 0.1, 1.0, 10.0)


class Settings(param.Parameterized):
    """The shared controls, with ranges that make sense for a laptop-sized teaching stream."""

    dataset = param.Selector(default=DEFAULT_DATASET, objects=[*DATASETS, UPLOAD],
                             doc="The stream of rows (explorer.streams, or your upload).")
    n = param.Integer(default=1000, bounds=(50, 5000), doc="Stream length (rows).")
    d = param.Integer(default=50, bounds=(2, MAX_COLUMNS),
                      doc="Dimension of the synthetic streams (real data sets fix their own).")
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), doc="Seed of the data (and of sampling).")
    m = param.Integer(default=10, bounds=(2, 50), doc="Sketch size: rows the sketch keeps.")
    alpha0 = param.Number(default=1.0, bounds=(0.0, 1e6), doc="Initial regularizer alpha0 >= 0.")
    eta = param.Number(default=0.1, bounds=(1e-6, 100.0), doc="Learning rate of the learner pages.")
    upload = param.ClassSelector(class_=UploadedData, default=None, allow_None=True,
                                 doc="The parsed file the user uploaded, if any.")
    fixed_d = param.Boolean(default=False, doc="True when the current data set fixes d itself.")

    def __init__(self, **params):
        super().__init__(**params)
        self._cache: tuple[tuple, np.ndarray, list[str]] | None = None

    def stream(self) -> tuple[np.ndarray, list[str]]:
        """The rows to stream (n x d floats) and notes on how the settings were honoured."""
        key = (self.dataset, self.n, self.d, self.seed, id(self.upload))
        if self._cache is None or self._cache[0] != key:
            X, notes = self._load()
            self._cache = (key, X, notes)
        _, X, notes = self._cache
        return X, list(notes)

    def labels(self) -> np.ndarray | None:
        """The labels of the rows :meth:`stream` gives: the uploaded file's label column
        (a CSV column y/label/target, a LIBSVM file's first field), else None."""
        if self.dataset != UPLOAD or self.upload is None or self.upload.y is None:
            return None
        X, _ = self.stream()
        return self.upload.y[:X.shape[0]]

    def _load(self) -> tuple[np.ndarray, list[str]]:
        if self.dataset == UPLOAD:
            if self.upload is not None:
                self.fixed_d = True
                X = self.upload.X
                if X.shape[0] > self.n:
                    return X[:self.n], [f"Streaming the first n = {self.n} of the "
                                        f"{X.shape[0]} rows of {self.upload.name}."]
                return X, _shorter(X.shape[0], self.n, self.upload.name)
            X, notes = self._load_named(DEFAULT_DATASET)
            return X, ["There is no uploaded file in this session (an upload is not part of "
                       f"a shared link): streaming '{DEFAULT_DATASET}' instead.", *notes]
        return self._load_named(self.dataset)

    def _load_named(self, name: str) -> tuple[np.ndarray, list[str]]:
        notes = []
        try:
            X = load_stream(name, n=self.n, d=self.d, seed=self.seed)
        except ValueError:  # a real data set with fewer than n rows: stream all of them
            X = load_stream(name, n=None, d=self.d, seed=self.seed)
            notes = _shorter(X.shape[0], self.n, f"'{name}'")
        self.fixed_d = X.shape[1] != self.d
        if self.fixed_d:
            notes.insert(0, f"'{name}' has d = {X.shape[1]} columns of its own; "
                            f"the d control applies to the synthetic streams.")
        return X, notes


def _shorter(rows: int, n: int, what: str) -> list[str]:
    return [f"{what} has only {rows} rows: streaming all of them (n = {n} asked)."] if rows < n else []


def apply_query(target: param.Parameterized, values: dict, names=None) -> list[str]:
    """Set each value from a URL query on ``target`` separately; return messages for the refused.

    ``names`` limits the parameters set (a dict maps them to their names in the URL).

    ``pn.state.location.sync`` applies a query all at once and gives up on the first bad
    value; this is its ``on_error`` fallback, so a hand-edited link (``?m=1000``) keeps
    every good value and explains the bad one instead of raising.

    >>> s = Settings()
    >>> apply_query(s, {"m": 1000, "seed": 7})
    ['URL: m = 1000 was ignored (m must be at most 50); using m = 10.']
    >>> s.seed
    7
    """
    messages = []
    for name, value in values.items():
        if names is not None and name not in names:
            continue
        try:
            target.param.update(**{name: value})
        except Exception as error:  # param says why: "... parameter 'Settings.m' must be ..."
            reason = re.sub(r"^.*?parameter '[^']*'\s*", "", str(error)).split(", not ")[0]
            key = names[name] if isinstance(names, dict) else name  # as the URL spells it
            messages.append(f"URL: {key} = {value} was ignored ({key} {reason.rstrip('.')}); "
                            f"using {key} = {getattr(target, name)}.")
    return messages
