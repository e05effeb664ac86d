"""Feed a stream to an algorithm and keep per-step numbers: :func:`run` (a :class:`~explorer.history.History`).

Compute and view stay apart: :func:`run` returns arrays, plotting code only reads them.

>>> import numpy as np
>>> from explorer import RobustFrequentDirections, Recorder
>>> sk = RobustFrequentDirections(d=3, m=2)
>>> recorder = Recorder(kinds=("shrink",))
>>> history = run(sk, np.diag([3.0, 2.0, 1.0]), hooks=[recorder])
>>> history
History(3 steps; columns t, n_seen, delta_total, alpha; last: t=3, n_seen=3, delta_total=5, alpha=2.5)
>>> history["alpha"].tolist(), recorder.columns("shrink")["delta"].tolist()
([0.0, 2.0, 2.5], [4.0, 1.0])
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterable

import numpy as np

from ._validation import check_int
from .errors import Diverged
from .history import History
from .hooks import StepRecord

__all__ = ["History", "run", "learn_until_divergence", "step_history", "kept_runs", "running_average",
           "running_rmse", "lead_since", "progress_bar"]


def run(algorithm, stream, *, hooks=(), progress: bool = False,
        observe: dict[str, Callable[[Any], float]] | None = None, every: int = 1) -> History:
    """Feed ``stream`` to ``algorithm`` one example at a time and record what happens.

    Online learners (they have ``learn(x, y=None) -> loss``; DESIGN.md "Public API")
    get ``learn(x)`` or ``learn(x, y)``, recorded as columns ``"loss"`` (that step's
    loss) and ``"cumulative_loss"`` (the sum over *all* steps so far, recorded or not).
    Sketches (they have ``update``) get ``update(x)``, or ``update(x, s)`` for a
    weighted stream into Generalized FD, one row per step so hooks see every step;
    recorded: those of ``"n_seen"``, ``"delta_total"`` and ``"alpha"`` (Robust FD) that
    the sketch has (a random projection has no ``delta_total``).

    Parameters
    ----------
    algorithm
        An online learner or a sketch from :mod:`explorer` (anything with ``learn`` or
        ``update``; ``add_hook`` is needed only when ``hooks`` are given).
    stream
        An array ``X`` (n, d); a pair ``(X, y)`` of arrays with one label (or weight) per
        row; or any iterable of rows ``x`` or of tuples ``(x, y)``.
    hooks : iterable of callables, or one callable
        Attached with ``algorithm.add_hook`` for this run only and removed afterwards,
        also when the run fails (e.g. a :class:`explorer.hooks.Recorder`).
    progress : bool
        Show a ``tqdm.auto`` progress bar (with a total when the stream has a length).
    observe : dict name -> callable(algorithm) -> float, optional
        Extra columns, each evaluated on the algorithm after the recorded steps, e.g.
        ``{"error": lambda sk: covariance_error(X[:sk.n_seen], sk)}``.
    every : int >= 1
        Record every ``every``-th step, and always the last one; column ``"t"`` says
        which steps were recorded.

    Returns
    -------
    History

    Examples
    --------
    >>> import numpy as np
    >>> from explorer import FrequentDirections
    >>> X = np.random.default_rng(0).standard_normal((100, 5))
    >>> h = run(FrequentDirections(d=5, m=3), X, every=40,
    ...         observe={"rows": lambda sk: sk.rows.shape[0]})
    >>> h["t"].tolist(), h["rows"].tolist()
    ([40, 80, 100], [2.0, 2.0, 2.0])
    """
    step = _stepper(algorithm)
    every = check_int("every", every, minimum=1)
    observe = _check_observe(observe, reserved=("t", *step.columns))
    items, total = _items(stream)
    hooks = _check_hooks(algorithm, hooks)
    columns: dict[str, list] = {name: [] for name in ("t", *step.columns, *observe)}

    def record(t: int) -> None:
        columns["t"].append(t)
        for name, value in step.values().items():
            columns[name].append(value)
        for name, fn in observe.items():
            columns[name].append(_observed_value(name, fn, algorithm))

    handles = []
    bar = progress_bar(progress, total, type(algorithm).__name__)
    try:
        for fn in hooks:
            handles.append(algorithm.add_hook(fn))
        t = 0
        for t, item in enumerate(items, start=1):
            step(*_split(item))
            if t % every == 0:
                record(t)
            bar.update()
        if t % every:
            record(t)
    finally:
        bar.close()
        for handle in handles:
            handle.remove()
    return History({**columns, "t": np.array(columns["t"], dtype=np.int64)})


def learn_until_divergence(learner, X, y=None, *, hooks=()) -> np.ndarray:
    """The loss of every row of ``learner.learn_many(X, y)``, ``inf`` from a divergence on.

    A learner's ``learn_many`` is all or nothing: when round ``i`` diverges it raises
    :class:`~explorer.errors.Diverged` with ``row = i`` and undoes the call. Here the rows
    before ``i`` are then played again, so the learner ends where it stood just before the
    failing row, and the losses of rows ``i, i+1, ...`` are ``inf``. ``hooks`` are attached
    for this call only, as in :func:`run` (they also see the undone call's events).

    >>> from explorer.adagrad import OGD
    >>> learner = OGD(1, eta=1.0, loss="squared")  # its second prediction overflows
    >>> learn_until_divergence(learner, np.full((4, 1), 1e100), np.ones(4)).tolist(), learner.t
    ([1.0, inf, inf, inf], 1)
    """
    hooks = _check_hooks(learner, hooks)
    handles = []
    try:
        for fn in hooks:
            handles.append(learner.add_hook(fn))
        done = _replaying(learner.learn_many, X, y)
        losses = np.full(len(X), np.inf)
        losses[:len(done)] = done
        return losses
    finally:
        for handle in handles:
            handle.remove()


def step_history(learner, X, y=None, *, fields=()) -> History:
    r""":func:`learn_until_divergence` with the named fields of each round's
    :class:`~explorer.hooks.StepRecord`: one row per row of ``X``, columns ``t`` (1, 2, ...),
    ``loss`` (``inf`` from a divergence on) and each field (NaN from a divergence on, and
    where the record holds None), e.g. ``fields=("alpha", "condition_number")`` for
    :math:`\alpha_t` and :math:`\kappa(H_t)` of a sketched online Newton learner (its "step"
    event, docs/architecture.md). The records of a call undone by a divergence are those
    of the replay: each round counts once. ``learner`` needs ``add_hook``, unless every
    field is among its :attr:`~explorer.learner.OnlineLearner.ROUND_OUTPUTS`: then its
    ``progressive`` keeps them, with no record built (and by its compiled path, if any).

    >>> from explorer.adagrad import OGD
    >>> h = step_history(OGD(1, eta=1.0, loss="squared"), np.full((3, 1), 1e100), np.ones(3),
    ...                  fields=("gradient_scale",))
    >>> h.names, h["loss"].tolist(), h["gradient_scale"].tolist()
    (['t', 'loss', 'gradient_scale'], [1.0, inf, inf], [-2.0, nan, nan])
    """
    fields, allowed = tuple(fields), [name for name in StepRecord.__dataclass_fields__ if name not in ("t", "loss")]
    for name in fields:
        if name not in allowed:
            raise ValueError(f"fields must name StepRecord fields ({', '.join(allowed)}), got {name!r}")
    if fields and set(fields) <= set(getattr(learner, "ROUND_OUTPUTS", ())):
        kept = _replaying(learner.progressive, X, y)
        columns = {"t": np.arange(1, len(X) + 1), **{name: np.full(len(X), np.inf if name == "loss" else np.nan)
                                                     for name in ("loss", *fields)}}
        for name in ("loss", *fields):
            columns[name][:len(kept)] = kept[name]
        return History(columns)
    start, records = getattr(learner, "t", 0), {}

    def keep(event) -> None:  # a replayed round overwrites the undone call's record of it
        if event.kind == "step":
            records[event.t - start] = event

    losses = learn_until_divergence(learner, X, y, hooks=keep)
    columns = {"t": np.arange(1, len(losses) + 1), "loss": losses}
    for name in fields:
        values = (getattr(records[t], name) if t in records and np.isfinite(losses[t - 1]) else None
                  for t in columns["t"].tolist())
        columns[name] = np.array([np.nan if value is None else value for value in values], dtype=float)
    return History(columns)


def _replaying(call: Callable, X, y):
    """``call(X, y)`` (an all-or-nothing batch); after a :class:`~explorer.errors.Diverged` at
    row i, which undid it, ``call`` on the rows before i."""
    try:
        return call(X) if y is None else call(X, y)
    except Diverged as error:
        return call(X[:error.row]) if y is None else call(X[:error.row], y[:error.row])


def kept_runs(compute: Callable, key: Callable | None = None) -> Callable:
    """``compute(*setting)``, computed once per ``key(*setting)`` and kept: a lesson's slider
    step recomputes only the runs its setting changed. ``key`` (default: the setting
    itself) drops what a run does not depend on, e.g. the sketch size of a learner without
    a sketch. The kept results are the returned function's ``runs`` dict (key -> result),
    open to runs made elsewhere. Like :func:`functools.cache`, with a key of one's own.

    >>> calls = []
    >>> square = kept_runs(lambda kind, m: calls.append(m) or m * m,
    ...                    key=lambda kind, m: (kind, None if kind == "full" else m))
    >>> square("fd", 3), square("fd", 3), square("full", 2), square("full", 5), calls
    (9, 9, 4, 4, [3, 2])
    """
    if not callable(compute) or not (key is None or callable(key)):
        raise ValueError("kept_runs needs compute(*setting) and key(*setting) callables, got "
                         f"{type(compute).__name__} and {type(key).__name__}")
    runs: dict = {}

    def run_once(*setting):
        kept = setting if key is None else key(*setting)
        if kept not in runs:
            runs[kept] = compute(*setting)
        return runs[kept]

    run_once.runs = runs
    return run_once


def running_average(values) -> np.ndarray:
    r"""The average so far, :math:`\frac{1}{t} \sum_{s \le t} v_s`, at every ``t``: an online
    learner's average loss after each round.

    >>> running_average([4.0, 2.0, 3.0]).tolist()
    [4.0, 3.0, 3.0]
    """
    return np.cumsum(values) / np.arange(1, len(values) + 1)


def running_rmse(predictions, y) -> np.ndarray:
    r"""The progressive RMSE after each round, :math:`\sqrt{\frac{1}{t} \sum_{s \le t} (z_s - y_s)^2}`
    for predictions ``z`` (each made before its label ``y`` was seen).

    >>> running_rmse(np.array([3.0, 5.0]), np.array([4.0, 4.0])).tolist()
    [1.0, 1.0]
    """
    return np.sqrt(running_average((predictions - y) ** 2))


# -- one step of a learner or a sketch ------------------------------------------------------

class _LearnerStep:
    """``learn(x[, y])``; keeps that step's loss and the running total."""

    columns = ("loss", "cumulative_loss")

    def __init__(self, algorithm):
        self.learn = algorithm.learn
        self.loss = np.nan
        self.cumulative_loss = 0.0

    def __call__(self, x, y) -> None:
        self.loss = float(self.learn(x) if y is None else self.learn(x, y))
        self.cumulative_loss += self.loss

    def values(self) -> dict[str, float]:
        return {"loss": self.loss, "cumulative_loss": self.cumulative_loss}


class _SketchStep:
    """``update(x)``, or ``update(x, s)`` for a sketch that takes a weight (GFD)."""

    recorded = ("n_seen", "delta_total", "alpha")

    def __init__(self, algorithm):
        self.algorithm = algorithm
        self.columns = tuple(name for name in self.recorded if hasattr(algorithm, name))
        self.takes_weight = _accepts_two_arguments(algorithm.update)

    def __call__(self, x, y) -> None:
        if y is None:
            self.algorithm.update(x)
        elif self.takes_weight:
            self.algorithm.update(x, y)
        else:
            raise ValueError(f"{type(self.algorithm).__name__}.update takes rows only, but the "
                             "stream has labels: pass X alone")

    def values(self) -> dict[str, float]:
        return {name: getattr(self.algorithm, name) for name in self.columns}


def lead_since(t, ours, theirs) -> int | None:
    """The first recorded round ``t[i] > 0`` from which ``ours`` (a learner's total loss at
    each recorded round) stays strictly below ``theirs`` up to the last record; None if it
    is not below at the last one.

    >>> lead_since([0, 4, 8, 12], [0, 3, 5, 6], [0, 2, 6, 9])
    8
    >>> lead_since([0, 4], [0, 3], [0, 2]) is None
    True
    """
    t, ours, theirs = (np.asarray(a, dtype=float) for a in (t, ours, theirs))
    below = (ours < theirs) & (t > 0)
    if below.size == 0 or not below[-1]:
        return None
    behind = np.flatnonzero(~below)
    return int(t[behind[-1] + 1] if behind.size else t[0])


def _stepper(algorithm) -> _LearnerStep | _SketchStep:
    if callable(getattr(algorithm, "learn", None)):
        return _LearnerStep(algorithm)
    if callable(getattr(algorithm, "update", None)):
        return _SketchStep(algorithm)
    raise ValueError(f"algorithm must be an online learner (with learn) or a sketch (with "
                     f"update), got {type(algorithm).__name__}")


def _accepts_two_arguments(method) -> bool:
    try:
        inspect.signature(method).bind(None, None)
    except TypeError:
        return False
    return True


# -- arguments ------------------------------------------------------------------------------

def _items(stream) -> tuple[Iterable, int | None]:
    """The stream as an iterable of ``x`` or ``(x, y)``, and its length when known."""
    if isinstance(stream, np.ndarray):
        if stream.ndim != 2:
            raise ValueError(f"an array stream must be 2-D (n rows, d columns), got shape {stream.shape}")
        return stream, stream.shape[0]
    if isinstance(stream, tuple) and len(stream) == 2 and np.ndim(stream[0]) == 2:
        X, y = np.asarray(stream[0]), stream[1]
        if np.ndim(y) != 1 or len(y) != X.shape[0]:
            raise ValueError(f"in a stream (X, y), y must have one entry per row of X "
                             f"({X.shape[0]}), got shape {np.shape(y)}")
        return zip(X, y), X.shape[0]
    try:
        items = iter(stream)
    except TypeError:
        raise ValueError(f"stream must be an array X, a pair (X, y) or an iterable of rows, "
                         f"got {type(stream).__name__}") from None
    return items, len(stream) if hasattr(stream, "__len__") else None


def _split(item) -> tuple[Any, Any]:
    """``(x, y)`` from a tuple item, ``(x, None)`` from a row."""
    if isinstance(item, tuple):
        if len(item) != 2:
            raise ValueError(f"a tuple in the stream must be (x, y), got {len(item)} elements")
        return item
    return item, None


def _check_observe(observe, reserved: tuple[str, ...]) -> dict[str, Callable]:
    observe = {} if observe is None else dict(observe)
    for name, fn in observe.items():
        if name in reserved:
            raise ValueError(f"observe name {name!r} is taken by a built-in column; "
                             f"built-in columns are {list(reserved)}")
        if not callable(fn):
            raise ValueError(f"observe[{name!r}] must be a callable(algorithm) -> float, "
                             f"got {type(fn).__name__}")
    return observe


def _check_hooks(algorithm, hooks) -> tuple[Callable, ...]:
    hooks = (hooks,) if callable(hooks) else tuple(hooks)
    if hooks and not callable(getattr(algorithm, "add_hook", None)):
        raise ValueError(f"hooks were given but {type(algorithm).__name__} has no add_hook")
    for fn in hooks:
        if not callable(fn):
            raise ValueError(f"every hook must be callable, got {type(fn).__name__}")
    return hooks


def _observed_value(name: str, fn: Callable, algorithm) -> float:
    value = fn(algorithm)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"observe[{name!r}] must return a number, got {type(value).__name__}") from None


class _NoProgressBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(progress: bool, total: int | None, description: str):
    """A ``tqdm.auto`` bar (``update(n)``, ``close()``) when ``progress``, else one that does nothing."""
    if not progress:
        return _NoProgressBar()
    from tqdm.auto import tqdm  # imported only when asked for: it costs ~0.1 s

    return tqdm(total=total, desc=description)
