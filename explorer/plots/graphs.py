"""Drawing trees of merged sketches and Dask task graphs (docs/merging.md; lesson 7).

Two builders, arrays in and Plotly figures out, like the rest of :mod:`explorer.plots`:

- :func:`merge_tree`: the tree :func:`explorer.merge` builds with ``split_every``, one node
  per sketch. The leaves are the sketches of the partitions; every other node is the merge
  of up to ``split_every`` consecutive nodes of the level below. Each node is labelled with
  the rows it summarizes (``n_seen``) and the delta it added: a leaf's own shrinks, a merge
  node's own shrinks (``MergeEvent.delta``); hovering shows the node's ``delta_total``.
- :func:`task_graph`: any task graph given as ``{task: tasks it depends on}`` (for example
  ``dask``'s ``graph.__dask_graph__().get_all_dependencies()``), drawn in layers: a task
  sits one layer above the highest task it depends on. No graphviz needed.

>>> fig = merge_tree([[10, 10, 10], [20, 10], [30]], [[1.0, 2.0, 3.0], [0.5, 0.0], [0.25]],
...                  split_every=2)
>>> [trace.name for trace in fig.data]
['merge', 'partition sketch', 'merge node']
>>> list(fig.data[1].x), list(fig.data[2].x), list(fig.data[2].y)
([0.0, 1.0, 2.0], [0.5, 2.0, 1.25], [1.0, 1.0, 2.0])
>>> fig = task_graph({"a": [], "b": [], "c": ["a", "b"]}, groups={"a": "load", "b": "load", "c": "add"})
>>> [(trace.name, list(trace.y)) for trace in fig.data[1:]]
[('load', [0.0, 0.0]), ('add', [1.0])]
"""

from __future__ import annotations

import math
from typing import Hashable, Iterable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .._validation import check_int
from .charts import as_vector
from .style import BACKGROUND, COLORS, EXACT_GREY, LAYOUT

__all__ = ["merge_tree", "task_graph"]


def merge_tree(n_seen: Sequence[Iterable[float]], delta: Sequence[Iterable[float]], *,
               split_every: int, delta_total: Sequence[Iterable[float]] | None = None,
               title: str | None = None, height: int = 420) -> go.Figure:
    """The merge tree of :func:`explorer.merge` (``split_every`` consecutive sketches per
    merge, level by level), one marker per sketch, the leaves at the bottom.

    ``n_seen`` and ``delta``: one 1-D sequence per level, the leaves first and the root
    last; level ``l + 1`` has ``ceil(len(level l) / split_every)`` nodes and the last level
    one. ``delta[l][j]`` is what node ``j`` of level ``l`` itself added to the total shrink
    (a leaf: the deltas of its own stream; a merge: those of the merge's own shrinks).
    ``delta_total`` (same shape, optional) is each node's ``sketch.delta_total``, shown on
    hover. A parent is drawn above the middle of its children.

    Raises ``ValueError`` for levels of the wrong sizes, a ``split_every`` below 2, or a
    negative or non-finite delta or row count.
    """
    split_every = check_int("split_every", split_every, minimum=2)
    seen = _levels("n_seen", n_seen)
    own = _levels("delta", delta)
    totals = _levels("delta_total", delta_total) if delta_total is not None else None
    for name, other in (("delta", own), ("delta_total", totals)):
        if other is not None and [v.size for v in other] != [v.size for v in seen]:
            raise ValueError(f"{name} must have the shape of n_seen (levels of sizes "
                             f"{[v.size for v in seen]}), got {[v.size for v in other]}")
    for l in range(1, len(seen)):
        expected = math.ceil(seen[l - 1].size / split_every)
        if seen[l].size != expected:
            raise ValueError(f"level {l} must have ceil({seen[l - 1].size} / {split_every}) = {expected} "
                             f"nodes (one per group of split_every nodes of level {l - 1}), got {seen[l].size}")
    if seen[-1].size != 1:
        raise ValueError(f"the last level is the root and must have 1 node, got {seen[-1].size}; "
                         "give every level up to the root")

    x = [np.arange(seen[0].size, dtype=float)]
    for l in range(1, len(seen)):
        below = x[-1]
        x.append(np.array([below[j * split_every:(j + 1) * split_every].mean() for j in range(seen[l].size)]))

    fig = go.Figure()
    fig.add_trace(_edges("merge", [((cx, l - 1), (px, l)) for l in range(1, len(seen)) for j, px in enumerate(x[l])
                                   for cx in x[l - 1][j * split_every:(j + 1) * split_every]]))
    for name, levels, color in (("partition sketch", [0], COLORS[0]),
                                ("merge node", range(1, len(seen)), COLORS[3])):
        levels = list(levels)
        if not levels:
            continue
        nx = np.concatenate([x[l] for l in levels])
        ny = np.concatenate([np.full(x[l].size, float(l)) for l in levels])
        text = [f"n = {int(n)}<br>δ = {_short(d)}" for l in levels for n, d in zip(seen[l], own[l])]
        hover = [f"level {l}, node {j}: n_seen = {int(n)}, own δ = {d:.6g}"
                 + (f", delta_total = {totals[l][j]:.6g}" if totals is not None else "")
                 for l in levels for j, (n, d) in enumerate(zip(seen[l], own[l]))]
        fig.add_trace(go.Scatter(x=nx.tolist(), y=ny.tolist(), mode="markers+text", name=name, text=text,
                                 textposition="bottom center" if levels == [0] else "top center",
                                 hovertext=hover, hoverinfo="text",
                                 marker=dict(size=16, color=color, line=dict(width=1, color=BACKGROUND))))
    _finish(fig, title, height, "merge level (0 = partitions)")
    fig.update_xaxes(range=[-0.6, seen[0].size - 0.4])
    fig.update_yaxes(range=[-0.7, len(seen) - 0.4])
    return fig


def task_graph(dependencies: Mapping[Hashable, Iterable[Hashable]], *,
               groups: Mapping[Hashable, str] | None = None,
               labels: Mapping[Hashable, str] | None = None,
               title: str | None = None, height: int = 420) -> go.Figure:
    """A task graph drawn in layers: tasks with no dependencies at the bottom (layer 0),
    every other task one layer above the highest task it depends on, an edge from each
    task to each of its dependencies. Within a layer, tasks are ordered by the mean
    position of their dependencies, the first layer (and ties) in the natural order of the
    task names (Dask's ``("array-...", 2, 0)`` before ``("array-...", 10, 0)``). The groups'
    legend entries appear bottom up.

    ``dependencies``: task -> the tasks it needs (every one of them also a key).
    ``groups``: task -> a group name; one coloured marker trace per group, ordered by the
    lowest layer it reaches (default: one group, "task"). ``labels``: task -> hover text (default
    ``str(task)``).

    Raises ``ValueError`` for an empty graph, a dependency that is not a task, or a cycle.
    """
    deps = {task: list(needs) for task, needs in dependencies.items()}
    if not deps:
        raise ValueError("dependencies must hold at least one task")
    for task, needs in deps.items():
        missing = [need for need in needs if need not in deps]
        if missing:
            raise ValueError(f"task {task!r} depends on {missing[0]!r}, which is not a task of the graph")
    layer = _layers(deps)
    n_layers = max(layer.values()) + 1
    x: dict = {}
    for level in range(n_layers):
        tasks = sorted((task for task in deps if layer[task] == level), key=_natural)
        if level:
            tasks.sort(key=lambda task: sum(x[need] for need in deps[task]) / len(deps[task]))
        width = len(tasks)
        for i, task in enumerate(tasks):
            x[task] = float(i - (width - 1) / 2)
    fig = go.Figure()
    fig.add_trace(_edges("depends on", [((x[need], layer[need]), (x[task], layer[task]))
                                        for task, needs in deps.items() for need in needs]))
    groups = dict(groups or {})
    labels = dict(labels or {})
    order = sorted(deps, key=lambda task: layer[task])  # stable: the groups appear bottom up
    names = list(dict.fromkeys(groups.get(task, "task") for task in order))
    for i, name in enumerate(names):
        tasks = [task for task in deps if groups.get(task, "task") == name]
        fig.add_trace(go.Scatter(
            x=[x[task] for task in tasks], y=[float(layer[task]) for task in tasks], mode="markers",
            name=name, hovertext=[labels.get(task, str(task)) for task in tasks], hoverinfo="text",
            marker=dict(size=12, color=COLORS[i % len(COLORS)], line=dict(width=1, color=BACKGROUND))))
    return _finish(fig, title, height, "layer (0 = no dependencies)")


def _edges(name: str, segments) -> go.Scatter:
    """One grey lines trace of the segments ``((x0, y0), (x1, y1))``, each drawn x0, x1, None."""
    xs, ys = [], []
    for (x0, y0), (x1, y1) in segments:
        xs += [float(x0), float(x1), None]
        ys += [float(y0), float(y1), None]
    return go.Scatter(x=xs, y=ys, mode="lines", name=name, line=dict(color=EXACT_GREY, width=1.5),
                      hoverinfo="skip")


def _finish(fig: go.Figure, title: str | None, height: int, y_title: str) -> go.Figure:
    """The shared layout, integer layers on the y axis, no x axis (positions carry no value)."""
    fig.update_layout(**LAYOUT, height=height,
                      title=dict(text=title, y=0.98, yanchor="top") if title else None)
    if title:  # room for the title above the horizontal legend, as in charts.py
        fig.update_layout(margin=dict(t=80), legend=dict(y=1.02))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(title_text=y_title, tickmode="linear", dtick=1, zeroline=False)
    return fig


def _levels(name: str, levels) -> list[np.ndarray]:
    if isinstance(levels, (str, bytes)) or not isinstance(levels, Iterable):
        raise ValueError(f"{name} must be a sequence of levels (1-D sequences), got {type(levels).__name__}")
    arrays = [as_vector(f"{name}[{l}]", level) for l, level in enumerate(levels)]
    if not arrays or any(array.size == 0 for array in arrays):
        raise ValueError(f"{name} must have at least one level and no empty level")
    for l, array in enumerate(arrays):
        if not np.all(np.isfinite(array)) or np.any(array < 0):
            raise ValueError(f"{name}[{l}] must hold finite numbers >= 0, got {array.tolist()}")
    return arrays


def _layers(deps: dict) -> dict:
    """Each task's layer: 0 without dependencies, else one above its highest dependency
    (Kahn's topological order, so a long chain needs no recursion)."""
    waiting = {task: len(set(needs)) for task, needs in deps.items()}
    needed_by: dict = {task: [] for task in deps}
    for task, needs in deps.items():
        for need in set(needs):
            needed_by[need].append(task)
    ready = [task for task, count in waiting.items() if count == 0]
    layer = {task: 0 for task in ready}
    while ready:
        task = ready.pop()
        for user in needed_by[task]:
            layer[user] = max(layer.get(user, 0), layer[task] + 1)
            waiting[user] -= 1
            if waiting[user] == 0:
                ready.append(user)
    if any(waiting.values()):
        stuck = next(task for task, count in waiting.items() if count)
        raise ValueError(f"the graph has a cycle through {stuck!r}; a task graph must be acyclic")
    return layer


def _natural(task) -> tuple:
    """A sort key for task names of any kind: tuples element by element, numbers by value
    (before text), anything else as text."""
    parts = task if isinstance(task, tuple) else (task,)
    key = []
    for part in parts:
        if isinstance(part, (int, float, np.integer, np.floating)) and not isinstance(part, bool):
            key.append((0, float(part), ""))
        else:
            key.append((1, 0.0, str(part)))
    return tuple(key)


def _short(value: float) -> str:
    """A node label's number: 3 significant digits, 0 printed as 0."""
    return "0" if value == 0 else f"{value:.3g}"
