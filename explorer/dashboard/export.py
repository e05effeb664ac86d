r"""Every dashboard view as code, and its curves as CSV.

:func:`script` writes a short Python script, public ``explorer`` API only, that rebuilds
what a page shows at its row ``t``: the same stream (data set or generator with ``n``,
``d`` and ``seed``), the same algorithms with the page's settings, plays rows
:math:`x_1, \dots, x_t` and prints the numbers the page's curves show at ``t`` (the last
point of ``page.history``), one ``name = value`` line a column, values as Python's
``repr`` of a float (the shortest text that reads back as the same bits). The script
replays the stream with today's settings from row 1, as a shared link does: a hot change
made mid-stream is replayed as if it had been set from the start. Wall-time columns
(AdaGrad's ``ms_*``, FM's ``time_*``) are this machine's clock, not numbers of the run:
the script leaves them out (:data:`CLOCK_COLUMNS`).

An uploaded file cannot be rebuilt from a seed: the script of a page streaming an upload
says so in a comment and raises ``ValueError`` at once, naming the file.

:func:`csv` gives ``page.history`` as CSV: a header of the column names, then one line a
point, every float as its ``repr`` (so the file reads back bit for bit).

Both read the page only through ``page.key``, ``page.t``, ``page.n_rows``,
``page.resolution`` (the FM race is played in the page's chunks), ``page.settings``,
``page.history`` and the page's ``param`` values.

>>> from explorer.dashboard.pages.sketching import SketchingPage
>>> from explorer.dashboard.settings import Settings
>>> page = SketchingPage(Settings(n=100, d=8, m=4))
>>> _ = page.step(30)
>>> "sketches.extend(X[:30])" in script(page), csv(page).splitlines()[0][:14]
(True, 't,bound_fd,kap')
"""

from __future__ import annotations

from ..experiments.fm import BINARY
from .settings import DEFAULT_DATASET, UPLOAD

__all__ = ["script", "csv", "filename", "CLOCK_COLUMNS"]

CLOCK_COLUMNS = {"adagrad": "ms_", "fm": "time_"}
"""Per page key, the prefix of its wall-time columns (left out of the script's numbers)."""

_PRINT = '''
for name, value in point.items():
    print(f"{{name}} = {{float(value)!r}}")
'''


def script(page) -> str:
    """A Python script reproducing the numbers ``page`` shows at its row ``t``.

    Parameters: ``page``, a dashboard page (:class:`~explorer.dashboard.page.Page`) whose
    ``key`` is one of ``sketching``, ``newton``, ``adagrad``, ``pca``, ``fm``.

    >>> from explorer.dashboard.pages.pca import AdaptivePCAPage
    >>> from explorer.dashboard.settings import Settings
    >>> page = AdaptivePCAPage(Settings(n=100, d=6), segment_length=50)
    >>> "toy_stream(100, 6, segment_length=50, rank=2, seed=0)" in script(page)
    True
    """
    if page.key not in _BODIES:
        raise ValueError(f"no script for page {page.key!r}; pages with one: {', '.join(_BODIES)}")
    s = page.settings
    title = page.title.replace('"', "'").replace("\\", "/")  # a class constant, not user text
    head = (f'"""Sketch Explorer, page "{title}" at t = {page.t} of {page.n_rows} rows.\n\n'
            f"Rebuilds the page's stream and algorithms with its settings, plays rows 1..t and\n"
            f"prints the numbers its curves show at t, one 'name = value' line each. Today's\n"
            f"settings apply from row 1, as when the page's link is opened.\n"
            f'"""\n')
    body = _BODIES[page.key](page, s)
    clock = CLOCK_COLUMNS.get(page.key)
    tail = _PRINT.format()
    if clock:
        tail = (f"\n# {clock}* columns (wall time per round) are this machine's clock, not numbers "
                f"of the run: left out.\npoint = {{name: value for name, value in point.items() "
                f"if not name.startswith({clock!r})}}" + tail)
    return head + body + tail


def _stream_lines(page, s) -> str:
    """The lines that load the shared stream as ``X`` (a ValueError for an upload)."""
    if s.dataset == UPLOAD and s.upload is not None:
        name = getattr(s.upload, "name", None)  # user text: only ever inside a string literal
        what = f"the uploaded file {name!r}" if name else "an uploaded file"
        message = f"the stream is {what}, which a script cannot rebuild from a seed: load it as X yourself"
        return ("# This view streams a file uploaded to the dashboard: a script cannot rebuild\n"
                "# it from a seed. Load your file as X (one row a line) and remove the raise.\n"
                f"raise ValueError({message!r})\n")
    dataset = DEFAULT_DATASET if s.dataset == UPLOAD else s.dataset  # no file: the page's fallback
    n = s.n if page.n_rows >= s.n else None  # a data set with fewer rows streams all of them
    return f"X = load_stream({dataset!r}, n={n!r}, d={s.d!r}, seed={s.seed!r})\n"


def _sketching(page, s) -> str:
    return ("from explorer.experiments.sketching import SKETCH_VARIANTS, SketchComparison\n"
            "from explorer.streams import load_stream\n\n"
            + _stream_lines(page, s)
            + f"sketches = SketchComparison(X.shape[1], m={s.m!r}, alpha0={s.alpha0!r})\n"
            f"sketches.extend(X[:{page.t}])\n"
            f"point = {{\"t\": {float(page.t)!r}, **sketches.measure(), \"alpha0\": {s.alpha0!r},\n"
            "         **{f\"delta_{v}\": sketches.fd[v].delta_total for v in SKETCH_VARIANTS}}\n")


def _newton(page, s) -> str:
    return ("from explorer.experiments.newton import NewtonRace, make_learners, planted_labels\n"
            "from explorer.streams import load_stream\n\n"
            + _stream_lines(page, s)
            + f"y, w = planted_labels(X, flip={page.label_noise!r}, seed={s.seed!r}, "
            f"space={page.label_space!r})\n"
            f"learners = make_learners({list(page.learners)!r}, X.shape[1], m={s.m!r}, "
            f"alpha0={s.alpha0!r}, eta={s.eta!r},\n"
            f"                         C={page.slab!r}, fast={page.fast!r}, loss={page.son_loss!r}, "
            f"eta_schedule={page.eta_schedule!r},\n"
            f"                         seed={s.seed!r}, adagrad_eta={page.adagrad_eta!r})\n"
            f"race = NewtonRace(learners, X, y, loss={page.son_loss!r}, C={page.slab!r})\n"
            f"race.step({page.t}, record=False)\n"
            f"point = {{\"t\": float(race.t), **race.measure(), \"alpha0\": {s.alpha0!r}}}\n")


def _adagrad(page, s) -> str:
    delta = float(page.delta) if page.delta else None  # 0 on the page: the paper's
    paper = "  # None: the paper's delta" if delta is None else ""
    return ("from explorer.experiments.adagrad import AdaGradRace\n"
            "from explorer.streams import load_stream\n\n"
            + _stream_lines(page, s)
            + f"race = AdaGradRace(X, loss={page.loss!r}, method={page.method!r}, eta={s.eta!r}, "
            f"delta={delta!r}, tau={s.m!r}, seed={s.seed!r}){paper}\n"
            f"race.step({page.t}, record=False)\n"
            "point = {\"t\": float(race.t), **race.measure()}\n")


def _pca(page, s) -> str:
    return ("from explorer.experiments.pca import AdaptivePCARace, toy_stream\n\n"
            f"X, segment = toy_stream({s.n!r}, {s.d!r}, segment_length={page.segment_length!r}, "
            f"rank={page.rank!r}, seed={s.seed!r})\n"
            f"k = min({page.k!r}, X.shape[1] - 1)  # a rank-d projection loses nothing\n"
            f"race = AdaptivePCARace(X, segment, k, eta={page.eta_pca!r}, alpha={page.alpha!r}, "
            f"seed={s.seed!r})\n"
            f"race.step({page.t}, record=False)\n"
            "point = {\"t\": float(race.t), **race.measure()}\n")


def _fm(page, s) -> str:
    binary = page.fm_task == BINARY  # the shared stream, rows scaled, labels planted
    imports = ("from explorer.experiments.fm import FactorizationRace, make_learners, task_stream\n"
               + ("from explorer.streams import load_stream\n" if binary else "") + "\n")
    shared = ""
    if binary:
        shared = _stream_lines(page, s)
    return (imports + shared
            + f"X, y, notes, reads = task_stream({page.fm_task!r}, {s.n!r}, seed={s.seed!r}, "
            f"n_users={page.fm_users!r}, n_items={page.fm_items!r},\n"
            f"                                 noise={page.fm_noise!r}"
            + (", shared=lambda: (X, []))\n" if binary else ")\n")
            + f"learners = make_learners(X.shape[1], m={s.m!r}, eta={s.eta!r}, "
            f"ogd_eta={page.ogd_eta!r},\n"
            f"                         loss={'logistic' if binary else 'squared'!r}, "
            f"fast={page.fm_variant == 'fast'!r})\n"
            "race = FactorizationRace(learners, X, y)\n"
            f"# {page.resolution} row(s) at a time, as the page plays them: a learner whose prediction\n"
            "# runs away stops at the end of the rows played with it\n"
            f"while race.t < {page.t}:\n"
            f"    race.step(min({page.resolution}, {page.t} - race.t))\n"
            "point = {\"t\": float(race.t), **race.measure()}\n")


_BODIES = {"sketching": _sketching, "newton": _newton, "adagrad": _adagrad, "pca": _pca, "fm": _fm}


def csv(page) -> str:
    """``page.history`` as CSV: the column names, then one line a point, each value the
    ``repr`` of its float (``nan``, ``inf`` and ``-inf`` as Python writes them).

    >>> from explorer.history import History
    >>> class Shown: history = History({"t": [0.0, 1.0], "loss": [float("nan"), 0.1]})
    >>> print(csv(Shown()), end="")
    t,loss
    0.0,nan
    1.0,0.1
    """
    h = page.history
    names = list(h.names)
    columns = [h[name] for name in names]
    lines = [",".join(_quoted(name) for name in names)]
    lines += [",".join(repr(float(column[i])) for column in columns) for i in range(len(h))]
    return "\n".join(lines) + "\n"


def _quoted(name: str) -> str:
    """A column name as a CSV field (quoted when it holds a comma, a quote or a line break)."""
    return f'"{name.replace(chr(34), chr(34) * 2)}"' if any(c in name for c in ',"\n\r') else name


def filename(page, extension: str) -> str:
    """The file name offered for a download of ``page`` at its row t: ``explorer-<key>-t<t>.<ext>``.

    >>> class Shown: key, t = "pca", 120
    >>> filename(Shown(), "py")
    'explorer-pca-t120.py'
    """
    return f"explorer-{page.key}-t{int(page.t)}.{extension}"
