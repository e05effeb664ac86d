"""Tests for explorer.plots.graphs: the merge tree and the task graph draw what they are given."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from explorer import FrequentDirections, merge
from explorer.plots import merge_tree, task_graph


def _edges(trace) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The segments of a lines trace drawn as x0, x1, None, ... (one pair of points each)."""
    xs, ys = list(trace.x), list(trace.y)
    return [((xs[i], ys[i]), (xs[i + 1], ys[i + 1])) for i in range(0, len(xs), 3)]


# -- merge_tree ------------------------------------------------------------------------------

def test_merge_tree_draws_one_node_per_sketch_with_its_rows_and_delta():
    fig = merge_tree([[5, 5, 5, 5, 5], [15, 10], [25]], [[1, 2, 3, 4, 5], [0.5, 0.25], [0.125]],
                     split_every=3, delta_total=[[1, 2, 3, 4, 5], [6.5, 9.25], [15.875]], title="T")
    assert isinstance(fig, go.Figure) and fig.layout.title.text == "T"
    edges, leaves, inner = fig.data
    assert list(leaves.x) == [0.0, 1.0, 2.0, 3.0, 4.0] and list(leaves.y) == [0.0] * 5
    assert list(inner.x) == [1.0, 3.5, 2.25] and list(inner.y) == [1.0, 1.0, 2.0]
    assert leaves.text[4] == "n = 5<br>δ = 5" and inner.text[2] == "n = 25<br>δ = 0.125"
    assert "delta_total = 15.875" in inner.hovertext[2]
    # every child is joined to its parent: 5 leaves and 2 level-1 nodes below a parent
    assert sorted(_edges(edges)) == sorted(
        [((float(j), 0.0), ((1.0 if j < 3 else 3.5), 1.0)) for j in range(5)]
        + [((1.0, 1.0), (2.25, 2.0)), ((3.5, 1.0), (2.25, 2.0))])


def test_merge_tree_of_the_sketches_explorer_merge_builds():
    """Levels built group by group as explorer.merge does, drawn with their deltas."""
    rng = np.random.default_rng(0)
    leaves = []
    for _ in range(6):
        sketch = FrequentDirections(d=4, m=2)
        sketch.extend(rng.standard_normal((10, 4)))
        leaves.append(sketch)
    levels = [leaves]
    while len(levels[-1]) > 1:
        below = levels[-1]
        levels.append([merge(below[j:j + 4], split_every=4) for j in range(0, len(below), 4)])
    assert np.array_equal(levels[-1][0].rows, merge(leaves, split_every=4).rows)
    own = [[s.delta_total for s in levels[0]]] + [
        [max(0.0, s.delta_total - sum(c.delta_total for c in levels[l - 1][4 * j:4 * j + 4]))
         for j, s in enumerate(level)] for l, level in enumerate(levels[1:], start=1)]
    fig = merge_tree([[s.n_seen for s in level] for level in levels], own, split_every=4)
    assert list(fig.data[2].y) == [1.0, 1.0, 2.0]
    assert [t.split("<br>")[0] for t in fig.data[2].text] == ["n = 40", "n = 20", "n = 60"]


def test_merge_tree_of_a_single_sketch_is_one_leaf():
    fig = merge_tree([[7]], [[0.0]], split_every=2)
    assert [t.name for t in fig.data] == ["merge", "partition sketch"]
    assert list(fig.data[1].text) == ["n = 7<br>δ = 0"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(n_seen=[[1, 1, 1], [3]], delta=[[0, 0, 0], [0]], split_every=2), "ceil"),
    (dict(n_seen=[[1, 1], [1, 1]], delta=[[0, 0], [0, 0]], split_every=2), "ceil"),
    (dict(n_seen=[[1, 1, 1, 1, 1], [4, 1]], delta=[[0] * 5, [0, 0]], split_every=4), "root"),
    (dict(n_seen=[[1, 1], [2]], delta=[[0, 0]], split_every=2), "shape of n_seen"),
    (dict(n_seen=[[1, 1], [2]], delta=[[0, -1], [0]], split_every=2), ">= 0"),
    (dict(n_seen=[[1, 1], [2]], delta=[[0, np.nan], [0]], split_every=2), "finite"),
    (dict(n_seen=[[1, 1], [2]], delta=[[0, 0], [0]], split_every=1), "split_every"),
    (dict(n_seen=[], delta=[], split_every=2), "at least one level"),
    (dict(n_seen="ab", delta=[[0]], split_every=2), "sequence of levels"),
    (dict(n_seen=[[1, 1], [2]], delta=[[0, 0], [0]], delta_total=[[0], [0]], split_every=2), "delta_total"),
])
def test_merge_tree_rejects_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        merge_tree(**kwargs)


# -- task_graph ------------------------------------------------------------------------------

def test_task_graph_puts_each_task_above_its_highest_dependency():
    deps = {"x0": [], "x1": [], "s0": ["x0"], "s1": ["x1"], "m": ["s0", "s1"], "late": ["x0", "m"]}
    fig = task_graph(deps, groups={"x0": "chunk", "x1": "chunk", "s0": "sketch", "s1": "sketch",
                                   "m": "merge", "late": "merge"}, labels={"m": "the root"}, title="G")
    edges, *groups = fig.data
    assert [t.name for t in groups] == ["chunk", "sketch", "merge"]
    layers = {name: y for t in groups for name, y in zip(t.hovertext, t.y)}
    assert layers == {"x0": 0.0, "x1": 0.0, "s0": 1.0, "s1": 1.0, "the root": 2.0, "late": 3.0}
    assert len(_edges(edges)) == 6  # one segment per dependency
    assert fig.layout.title.text == "G"


def test_task_graph_orders_a_layer_by_its_dependencies():
    # b depends on the right source, a on the left one: a is drawn left of b
    fig = task_graph({"L": [], "R": [], "b": ["R"], "a": ["L"]})
    (nodes,) = fig.data[1:]
    x = dict(zip(nodes.hovertext, nodes.x))
    assert x["L"] < x["R"] and x["a"] < x["b"]


def test_task_graph_orders_the_first_layer_by_number_not_text():
    deps = {"top": [("chunk", i, 0) for i in (1, 2, 10)]} | {("chunk", i, 0): [] for i in (10, 2, 1)}
    fig = task_graph(deps, groups={"top": "merge"} | {key: "chunk" for key in deps if key != "top"})
    assert [t.name for t in fig.data[1:]] == ["chunk", "merge"]  # bottom up, though "top" came last
    chunks = fig.data[1]
    x = {label: px for label, px in zip(chunks.hovertext, chunks.x)}
    assert x[str(("chunk", 1, 0))] < x[str(("chunk", 2, 0))] < x[str(("chunk", 10, 0))]


def test_task_graph_draws_dask_s_own_graph():
    dask = pytest.importorskip("dask")
    a = dask.delayed(sum, pure=True)([1, 2])
    b = dask.delayed(max, pure=True)(a, 5)
    deps = b.__dask_graph__().get_all_dependencies()
    fig = task_graph(deps)
    assert sorted(fig.data[1].y) == [0.0, 1.0]


@pytest.mark.parametrize("deps, message", [
    ({}, "at least one task"),
    ({"a": ["b"]}, "not a task"),
    ({"a": ["b"], "b": ["a"]}, "cycle"),
])
def test_task_graph_rejects_bad_graphs(deps, message):
    with pytest.raises(ValueError, match=message):
        task_graph(deps)
