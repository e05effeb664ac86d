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

import json
import math
import re
from urllib.parse import parse_qsl, urlencode

import numpy as np
import param

from ..streams import DATASETS, load_stream
from .upload import MAX_COLUMNS, UploadedData

__all__ = ["Settings", "UPLOAD", "DEFAULT_DATASET", "URL_NAMES", "apply_query", "clean_query",
           "MAX_QUERY_VALUE", "ALPHA0_CHOICES", "ETA_CHOICES"]

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
    eta = param.Number(default=0.1, bounds=(1e-6, 100.0), doc=(
        "η of the learner pages: SON's curvature weight (Newton), the step size (AdaGrad, FM)."))
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
        if (isinstance(target.param[name], param.Integer) and isinstance(value, float)
                and value.is_integer()):
            value = int(value)  # Panel reads -4490 as -4490.0: say the bounds, not "an integer"
        try:
            target.param.update(**{name: value})
        except Exception as error:  # param says why: "... parameter 'Settings.m' must be ..."
            reason = re.sub(r"^.*?parameter '[^']*'\s*", "", str(error)).split(", not ")[0]
            key = names[name] if isinstance(names, dict) else name  # as the URL spells it
            messages.append(f"URL: {key} = {value} was ignored ({key} {reason.rstrip('.')}); "
                            f"using {key} = {getattr(target, name)}.")
    return messages


MAX_QUERY_VALUE = 200
"""The most characters a query value may have: the longest a setting needs is a JSON list
of a few learner names. Longer values are dropped, so Panel's parser never meets a number
past Python's limit of 4300 digits for ``int()``."""


def clean_query(search: str, parameters: dict) -> tuple[str, list[str]]:
    """A link's query string with every value the dashboard cannot use dropped, and one
    message for each, naming the key and what it allows.

    ``parameters`` maps a query key to the ``param`` parameters it may set (several pages
    may share a name). Panel's own parser (``panel.util.parse_query``) raises on a digit
    string past 4300 digits or one of digits ``int()`` refuses (``²``), reads ``true`` as a
    bool (which ``param.Integer`` and ``param.Number`` accept and Bokeh's widgets refuse),
    and silently drops an empty value or unreadable JSON; and Panel splits the address at
    each ``?``. So, before Panel reads the query, a value is dropped when it is longer than
    :data:`MAX_QUERY_VALUE` characters, holds digits other than 0-9, is empty or not valid
    JSON (``[`` or ``{``), or, for a known key, is ``true``/``false`` or not a finite number
    where the parameter takes a number. A value of the right kind but out of range is
    left for :func:`apply_query` to refuse. Unknown keys are kept (Panel ignores them)
    unless their value could break the parser. Returns the query (``"?..."``, or ``""``),
    unchanged when nothing was dropped and no ``?`` or ``#`` needs escaping.

    >>> search, messages = clean_query("?seed=true&m=7&n=", {"seed": [Settings.param.seed],
    ...                                "m": [Settings.param.m], "n": [Settings.param.n]})
    >>> search
    '?m=7'
    >>> print("\\n".join(messages))
    URL: seed = true was ignored (seed must be an integer in [0, 2147483647]); using seed = 0.
    URL: n has no value and was ignored (n must be an integer in [50, 5000]); using n = 1000.
    """
    raw = search[1:] if search.startswith("?") else search
    kept, messages = [], []
    for key, value in parse_qsl(raw, keep_blank_values=True):
        known = list(parameters.get(key, ()))
        problem = _unreadable(value) or (_wrong_kind(value, known) if known else None)
        if problem is None:
            kept.append((key, value))
            continue
        shown = value if len(value) <= 40 else f"{value[:20]}… ({len(value)} characters)"
        if not known:
            messages.append(f"URL: {key} = {shown} was ignored ({key} is not a setting of this "
                            f"dashboard, and {problem}).")
        elif problem == "empty":
            messages.append(f"URL: {key} has no value and was ignored ({key} must be "
                            f"{_allowed(known[0])}); using {key} = {_shown_default(known[0])}.")
        else:
            messages.append(f"URL: {key} = {shown} was ignored ({key} must be {_allowed(known[0])}"
                            f"{'' if problem == 'kind' else '; ' + problem}); using {key} = "
                            f"{_shown_default(known[0])}.")
    if not messages and "?" not in raw and "#" not in raw:
        return search, []
    return ("?" + urlencode(kept)) if kept else "", messages


def _unreadable(value: str) -> str | None:
    """Why Panel's parser could not read ``value`` (None: it can)."""
    if len(value) > MAX_QUERY_VALUE:
        return f"a value may have at most {MAX_QUERY_VALUE} characters"
    if value.isdigit() and not value.isascii():
        return "numbers are written with the digits 0-9"
    if value.startswith(("[", "{")):
        try:
            json.loads(value)
        except ValueError:
            return "this is not valid JSON"
    return None


def _parsed(value: str):
    """``value`` as Panel's ``parse_query`` reads it (after :func:`_unreadable` passed)."""
    if value.isdigit():
        return int(value)
    try:
        return float(value)
    except ValueError:
        pass
    if value.startswith(("[", "{")):
        return json.loads(value)
    return value.lower() == "true" if value.lower() in ("true", "false") else value


def _wrong_kind(value: str, known: list) -> str | None:
    """"empty", "kind" or None: whether ``value`` is of a kind one of ``known`` accepts."""
    if value == "":
        return "empty"
    parsed = _parsed(value)
    for parameter in known:
        if isinstance(parameter, param.Boolean):
            if isinstance(parsed, bool):
                return None
        elif isinstance(parameter, (param.Integer, param.Number)):
            if (isinstance(parsed, (int, float)) and not isinstance(parsed, bool)
                    and math.isfinite(parsed)):
                return None
        elif isinstance(parameter, param.ListSelector):
            if isinstance(parsed, list):
                return None
        elif not isinstance(parsed, (bool, dict, list)):  # a selector or text: param checks it
            return None
    return "kind"


def _allowed(parameter) -> str:
    """What ``parameter`` accepts, in words."""
    low, high = getattr(parameter, "bounds", None) or (None, None)
    span = f" in [{low}, {high}]" if low is not None and high is not None else ""
    if isinstance(parameter, param.Boolean):
        return "true or false"
    if isinstance(parameter, param.Integer):
        return f"an integer{span}"
    if isinstance(parameter, param.Number):
        return f"a number{span}"
    if isinstance(parameter, param.ListSelector):
        return "a JSON list of " + ", ".join(json.dumps(choice) for choice in parameter.objects)
    if isinstance(parameter, param.Selector):
        return "one of " + ", ".join(str(choice) for choice in parameter.objects)
    return "text"


def _shown_default(parameter) -> str:
    default = parameter.default
    return json.dumps(default) if isinstance(default, (bool, list)) else str(default)
