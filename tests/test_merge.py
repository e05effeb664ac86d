"""Merging sketches and their byte format (docs/merging.md): the FD, RFD and GFD guarantees
for the union of any split of a stream merged in any tree, and the refusals of both."""

import io
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import explorer
import explorer.merging
import explorer.sketch
from explorer import (
    FrequentDirections,
    GeneralizedFrequentDirections,
    RandomProjectionSketch,
    Recorder,
    RobustFrequentDirections,
)
from explorer.merging import FORMAT, FORMAT_VERSION, pack_state
from explorer.state import nonfinite_entries
from state_checks import assert_same_state, snapshot
from test_sketch import check_fd_guarantees, relative_tol, streams, tail_energy

ALPHA0 = 0.25
MAKERS = {
    "fd": lambda d, m, fast: FrequentDirections(d, m, fast=fast),
    "rfd": lambda d, m, fast: RobustFrequentDirections(d, m, alpha0=ALPHA0, fast=fast),
    "gfd": lambda d, m, fast: GeneralizedFrequentDirections(d, m, fast=fast),
}


@st.composite
def splits(draw, n):
    """Cut points of a stream of n rows into 1 to 7 parts (some of them may be empty)."""
    parts = draw(st.integers(1, 7))
    return sorted(draw(st.lists(st.integers(0, n), min_size=parts - 1, max_size=parts - 1)))


@st.composite
def merged_streams(draw, kind):
    """A stream, its sketch's parts merged in a random tree, and the weights (GFD) or None.

    The parts are sketched separately, shuffled (the union is the same rows in any order)
    and merged by :func:`explorer.merge` with a random ``split_every``."""
    A, m, fast = draw(streams())
    weights = None
    if kind == "gfd":
        weights = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).uniform(-2, 2, A.shape[0])
        weights[weights == 0] = 1.0
    cuts = draw(splits(A.shape[0]))
    pieces = np.split(np.arange(A.shape[0]), cuts)
    order = draw(st.permutations(range(len(pieces))))
    parts = []
    for i in order:
        part = MAKERS[kind](A.shape[1], m, fast)
        if pieces[i].size:
            part.extend(A[pieces[i]], *(() if weights is None else (weights[pieces[i]],)))
        parts.append(part)
    states = [snapshot(part) for part in parts]
    merged = explorer.merge(parts, split_every=draw(st.integers(2, 5)))
    for part, state in zip(parts, states):
        assert_same_state(snapshot(part), state)  # no part changes
    return A, m, weights, parts, merged


@given(merged_streams("fd"))
def test_a_merge_tree_keeps_fd_guarantees(case):
    A, m, _, parts, merged = case
    assert type(merged) is FrequentDirections and merged.n_seen == A.shape[0]
    assert merged.n_shrinks >= sum(part.n_shrinks for part in parts)
    assert merged.delta_total >= sum(part.delta_total for part in parts)
    check_fd_guarantees(A, m, merged, merged.gram())


@given(merged_streams("rfd"))
def test_a_merge_tree_keeps_rfd_two_sided_bound_with_alpha0_counted_once(case):
    A, m, _, parts, merged = case
    assert merged.alpha0 == ALPHA0 and merged.alpha == ALPHA0 + merged.delta_total / 2
    check_fd_guarantees(A, m, merged, merged.gram() - merged.alpha * np.eye(A.shape[1]))
    error = A.T @ A + ALPHA0 * np.eye(A.shape[1]) - merged.gram()
    eigenvalues = np.linalg.eigvalsh(error)
    tol = relative_tol(A)
    assert eigenvalues.min() >= -(merged.alpha - ALPHA0) - tol  # Theorem 3, two-sided
    assert eigenvalues.max() <= (merged.alpha - ALPHA0) + tol
    for k in range(m):
        assert np.abs(eigenvalues).max() <= tail_energy(A, k) / (2 * (m - k)) + tol


@given(merged_streams("gfd"))
def test_a_merge_tree_keeps_gfd_bound(case):
    A, m, weights, parts, merged = case
    assert merged.n_seen == A.shape[0]
    assert merged.positive.n_seen + merged.negative.n_seen == A.shape[0]
    G = (A * weights[:, None]).T @ A
    positive = A[weights > 0] * np.sqrt(weights[weights > 0])[:, None]
    negative = A[weights < 0] * np.sqrt(-weights[weights < 0])[:, None]
    tol = relative_tol(A) * 4
    assert np.linalg.norm(G - merged.gram(), 2) <= merged.delta_total + tol
    for k in range(m):
        tails = sum(tail_energy(H, k) if H.shape[0] else 0.0 for H in (positive, negative))
        assert merged.delta_total <= tails / (m - k) + tol
    for H, part in ((positive, merged.positive), (negative, merged.negative)):
        if H.shape[0]:
            check_fd_guarantees(H, m, part, part.gram())


@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("fast", [False, True])
def test_merge_is_a_new_sketch_and_leaves_both_parts_bit_identical(kind, fast):
    rng = np.random.default_rng(3)
    a, b = MAKERS[kind](5, 3, fast), MAKERS[kind](5, 3, fast)
    feed(a, rng, 13)
    feed(b, rng, 9)
    before = snapshot(a), snapshot(b)
    merged = a.merge(b)
    assert merged is not a and merged is not b and type(merged) is type(a)
    assert merged.get_params() == a.get_params()
    assert_same_state(snapshot(a), before[0])
    assert_same_state(snapshot(b), before[1])
    assert merged.n_seen == 22
    assert merged.delta_total >= a.delta_total + b.delta_total > 0
    assert_same_state(snapshot(a.merge(b)), snapshot(merged))  # deterministic
    feed(merged, rng, 4)  # the merged sketch is an ordinary sketch that goes on
    assert merged.n_seen == 26
    assert_same_state(snapshot(a), before[0])


def feed(sk, rng, n):
    X = rng.standard_normal((n, sk.d))
    if isinstance(sk, GeneralizedFrequentDirections):
        sk.extend(X, rng.choice([-1.0, 2.0], size=n))
    else:
        sk.extend(X)


@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("fast", [False, True])
def test_merging_with_an_empty_sketch_changes_nothing(kind, fast):
    a = MAKERS[kind](4, 3, fast)
    feed(a, np.random.default_rng(1), 11)
    empty = MAKERS[kind](4, 3, fast)
    for merged in (a.merge(empty), empty.merge(a)):
        np.testing.assert_allclose(merged.gram(), a.gram(), rtol=0, atol=1e-12 * a.delta_total)
        assert (merged.n_seen, merged.delta_total) == (a.n_seen, a.delta_total)
    assert_same_state(snapshot(a.merge(empty)), snapshot(a))  # the rows are copied, no shrink


def test_rfd_alpha0_is_counted_once():
    a = RobustFrequentDirections(3, 3, alpha0=10.0)
    b = RobustFrequentDirections(3, 3, alpha0=10.0)
    a.update([3.0, 0.0, 0.0])
    b.update([0.0, 2.0, 0.0])  # no shrink anywhere: the union's B^T B + alpha I is exact
    merged = a.merge(b)
    assert merged.delta_total == 0.0 and merged.alpha == 10.0
    np.testing.assert_array_equal(merged.gram(), np.diag([9.0, 4.0, 0.0]) + 10.0 * np.eye(3))
    a, b = RobustFrequentDirections(3, 2, alpha0=1.0), RobustFrequentDirections(3, 2, alpha0=1.0)
    a.extend(np.diag([3.0, 2.0, 1.0]))
    b.extend(np.diag([1.0, 2.0, 3.0]))
    merged = a.merge(b)
    assert (merged.alpha0, merged.alpha) == (1.0, 1.0 + merged.delta_total / 2)
    A = np.vstack([np.diag([3.0, 2.0, 1.0]), np.diag([1.0, 2.0, 3.0])])
    error = np.linalg.eigvalsh(A.T @ A + np.eye(3) - merged.gram())
    assert np.abs(error).max() <= merged.delta_total / 2 + 1e-12


@pytest.mark.parametrize("other, message", [
    (FrequentDirections(4, 3), r"RobustFrequentDirections\.merge needs another RobustFrequentDirections, "
                               r"got a FrequentDirections"),
    (RobustFrequentDirections(5, 3, alpha0=0.5), "different d: 4 and 5"),
    (RobustFrequentDirections(4, 2, alpha0=0.5), "different m: 3 and 2"),
    (RobustFrequentDirections(4, 3, alpha0=0.5, fast=True), "different fast: False and True"),
    (RobustFrequentDirections(4, 3, alpha0=0.25), "different alpha0: 0.5 and 0.25"),
    (RandomProjectionSketch(4, 3, seed=0), "got a RandomProjectionSketch"),
    (np.ones((2, 4)), "got a ndarray"),
    (None, "got a NoneType"),
])
def test_merge_refuses_another_kind_or_other_settings_unchanged(other, message):
    a = RobustFrequentDirections(4, 3, alpha0=0.5)
    a.extend(np.random.default_rng(2).standard_normal((6, 4)))
    before = snapshot(a)
    others = snapshot(other) if hasattr(other, "state_dict") else None
    with pytest.raises(ValueError, match=message):
        a.merge(other)
    assert_same_state(snapshot(a), before)
    if others is not None:
        assert_same_state(snapshot(other), others)


def test_gfd_refuses_other_settings_and_fd():
    a = GeneralizedFrequentDirections(3, 2)
    with pytest.raises(ValueError, match="different fast: False and True"):
        a.merge(GeneralizedFrequentDirections(3, 2, fast=True))
    with pytest.raises(ValueError, match="got a FrequentDirections"):
        a.merge(FrequentDirections(3, 2))
    with pytest.raises(ValueError, match="got a GeneralizedFrequentDirections"):
        FrequentDirections(3, 2).merge(a)


def test_merge_refuses_a_union_too_large_to_shrink_unchanged():
    a, b = FrequentDirections(2, 2), FrequentDirections(2, 2)
    a.update([7e149, 0.0])  # ||A||_F^2 = 4.9e299 each: 9.8e299 together, still accepted
    b.update([0.0, 7e149])
    assert a.merge(b).frobenius_squared == pytest.approx(9.8e299)
    c = FrequentDirections(2, 2)
    c.update([8e149, 0.0])  # 6.4e299 + 4.9e299 > 1e300
    before = snapshot(a), snapshot(c)
    with pytest.raises(ValueError, match="would exceed 1e\\+300"):
        a.merge(c)
    assert_same_state(snapshot(a), before[0])
    assert_same_state(snapshot(c), before[1])


def test_merging_tiny_sketches_loses_no_row():
    a, b = FrequentDirections(3, 2), FrequentDirections(3, 2)
    a.update([2e-200, 0.0, 0.0])
    b.update([0.0, 3e-200, 0.0])  # the merge's shrink squares them to 4e-400, 9e-400: rescaled first
    merged = a.merge(b)
    assert (merged.n_shrinks, merged.rank) == (1, 1)
    assert np.linalg.norm(merged.rows) == pytest.approx(np.sqrt(5.0) * 1e-200, rel=1e-12)


# -- explorer.merge -----------------------------------------------------------------------
def test_tree_merge_of_one_sketch_is_a_copy():
    a = FrequentDirections(3, 2)
    a.extend(np.eye(3))
    copy = explorer.merge([a])
    assert copy is not a
    assert_same_state(snapshot(copy), snapshot(a))
    copy.update([1.0, 1.0, 1.0])
    assert a.n_seen == 3


def test_tree_merge_is_deterministic_and_follows_split_every():
    rng = np.random.default_rng(4)
    parts = []
    for _ in range(5):
        part = FrequentDirections(4, 2)
        part.extend(rng.standard_normal((5, 4)))
        parts.append(part)
    assert_same_state(snapshot(explorer.merge(parts, split_every=2)),
                      snapshot(explorer.merge(parts, split_every=2)))
    # split_every=2 on 5 parts: ((p0 p1) (p2 p3) p4), then (((p0 p1) (p2 p3)) p4)
    by_hand = parts[0].merge(parts[1]).merge(parts[2].merge(parts[3])).merge(parts[4])
    assert_same_state(snapshot(explorer.merge(parts, split_every=2)), snapshot(by_hand))
    flat = parts[0].merge(parts[1]).merge(parts[2]).merge(parts[3]).merge(parts[4])
    assert_same_state(snapshot(explorer.merge(parts, split_every=8)), snapshot(flat))
    assert_same_state(snapshot(explorer.merge(iter(parts), split_every=5)), snapshot(flat))


@pytest.mark.parametrize("sketches, split_every, message", [
    ([], 8, "sketches is empty"),
    ([FrequentDirections(3, 2)], 1, "split_every must be an integer >= 2"),
    ([FrequentDirections(3, 2)], 2.0, "split_every must be an integer"),
    ([FrequentDirections(3, 2)], True, "split_every must be an integer"),
    ([FrequentDirections(3, 2), "sketch"], 2, r"sketches\[1\] is a str, not a mergeable sketch"),
    ([RandomProjectionSketch(3, 2)], 2, r"sketches\[0\] is a RandomProjectionSketch"),
    (FrequentDirections(3, 2), 2, "sketches must be a sequence"),
    ([FrequentDirections(3, 2), FrequentDirections(3, 3)], 2, "different m: 2 and 3"),
])
def test_tree_merge_refusals(sketches, split_every, message):
    with pytest.raises(ValueError, match=message):
        explorer.merge(sketches, split_every=split_every)


# -- hooks --------------------------------------------------------------------------------
def test_a_merge_event_reaches_both_parts():
    a, b = RobustFrequentDirections(4, 2, alpha0=0.1), RobustFrequentDirections(4, 2, alpha0=0.1)
    rng = np.random.default_rng(7)
    a.extend(rng.standard_normal((5, 4)))
    b.extend(rng.standard_normal((3, 4)))
    seen_a, seen_b = Recorder(kinds=("merge",)), Recorder()
    a.add_hook(seen_a)
    b.add_hook(seen_b)
    merged = a.merge(b)
    (event,) = seen_a.events("merge")
    assert seen_b.events("merge") == [event] and len(seen_b) == 1  # no shrink event: the parts did not shrink
    assert (event.t, event.sizes, event.ranks) == (8, (5, 3), (a.rank, b.rank))
    assert event.n_shrinks == merged.n_shrinks - a.n_shrinks - b.n_shrinks >= 1
    assert event.delta == pytest.approx(merged.delta_total - a.delta_total - b.delta_total)
    assert (event.delta_total, event.alpha) == (merged.delta_total, merged.alpha)
    a.merge(a)
    assert len(seen_a.events("merge")) == 2  # once for a sketch merged with itself
    assert seen_a.columns("merge")["t"].tolist() == [8, 10]


def test_gfd_merge_event_sums_both_parts():
    a, b = GeneralizedFrequentDirections(3, 2), GeneralizedFrequentDirections(3, 2)
    rng = np.random.default_rng(8)
    a.extend(rng.standard_normal((6, 3)), [1, -1, 1, -1, 1, -1])
    b.extend(rng.standard_normal((4, 3)), [1, 1, -1, -1])
    events = []
    b.add_hook(events.append)
    merged = a.merge(b)
    (event,) = events
    assert event.kind == "merge" and event.alpha is None and event.t == 10
    assert event.ranks == (a.positive.rank + a.negative.rank, b.positive.rank + b.negative.rank)
    assert event.delta_total == merged.delta_total


def test_no_merge_event_is_built_without_a_listener(monkeypatch):
    def refuse(**fields):
        raise AssertionError("an event was built")

    monkeypatch.setattr(explorer.merging, "MergeEvent", refuse)
    a = FrequentDirections(3, 2)
    a.extend(np.eye(3))
    a.merge(a)
    a.add_hook(lambda event: None)
    with pytest.raises(AssertionError, match="an event was built"):
        a.merge(a)


# -- bytes --------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.blas_kernels
def test_bytes_round_trip_and_continue_equals_never_stopping(kind, fast):
    straight, stopped = MAKERS[kind](6, 3, fast), MAKERS[kind](6, 3, fast)
    feed(straight, np.random.default_rng(5), 17)
    feed(stopped, np.random.default_rng(5), 17)
    data = stopped.to_bytes()
    assert isinstance(data, bytes)
    for resumed in (type(stopped).from_bytes(data), explorer.sketch.from_bytes(data)):
        assert type(resumed) is type(stopped)
        assert_same_state(snapshot(resumed), snapshot(stopped))
        feed(resumed, np.random.default_rng(6), 9)
    feed(straight, np.random.default_rng(6), 9)
    assert_same_state(snapshot(resumed), snapshot(straight))
    assert resumed.to_bytes() == straight.to_bytes()  # the bytes are a function of the state


def test_the_archive_holds_the_state_format_and_version():
    sk = RobustFrequentDirections(3, 2, alpha0=0.5)
    sk.extend(np.eye(3))
    with np.load(io.BytesIO(sk.to_bytes()), allow_pickle=False) as archive:
        stored = {name: archive[name] for name in archive.files}
    assert str(stored.pop("format")) == FORMAT and int(stored.pop("format_version")) == FORMAT_VERSION == 1
    assert_same_state(stored, snapshot(sk))


def sound_bytes():
    sk = GeneralizedFrequentDirections(3, 2)
    sk.extend(np.random.default_rng(0).standard_normal((7, 3)), [1, -1, 1, 1, -1, 1, -1])
    return sk.to_bytes()


def archive(**arrays):
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def state_of(sk, **changes):
    return {"format": FORMAT, "format_version": FORMAT_VERSION, **sk.state_dict(), **changes}


FD = FrequentDirections(3, 2)
FD.extend(np.eye(3))


@pytest.mark.parametrize("data, message", [
    (b"", "not an intact npz archive"),
    (b"garbage bytes, not an archive", "not an intact npz archive"),
    (sound_bytes()[:-10], "not an intact npz archive"),
    (sound_bytes()[:len(sound_bytes()) // 2], "not an intact npz archive"),
    ("a string", "data must be bytes"),
    (None, "data must be bytes"),
    (archive(kind="FrequentDirections"), "its 'format' is 'None'"),
    (archive(**state_of(FD, format="another-format")), "its 'format' is 'another-format'"),
    (archive(**state_of(FD, format_version=2)), "byte format version .*2.* reads version 1 only"),
    (archive(**state_of(FD, format_version=1.0)), "byte format version"),
    (archive(**state_of(RandomProjectionSketch(3, 2, seed=0))), "holds a RandomProjectionSketch"),
    (archive(**state_of(FD, kind="Nonsense")), "holds a Nonsense"),
    (archive(**state_of(FD, buffer=np.full((2, 3), np.nan))), "'buffer' contains NaN"),
    (archive(**state_of(FD, delta_total=np.inf)), "'delta_total' must be a finite number"),
    (archive(**state_of(FD, n_seen=-1)), "'n_seen' must be an integer"),
    (archive(**{**state_of(FD), "n_seen": np.array([object()], dtype=object)}), "not an intact npz"),
])
def test_from_bytes_refuses_what_to_bytes_never_wrote(data, message):
    with pytest.raises(ValueError, match=message):
        explorer.sketch.from_bytes(data)


def test_class_from_bytes_refuses_another_kind():
    data = FD.to_bytes()
    with pytest.raises(ValueError, match="holds a FrequentDirections, not a RobustFrequentDirections; "
                                         "explorer.sketch.from_bytes reads any sketch"):
        RobustFrequentDirections.from_bytes(data)
    with pytest.raises(ValueError, match="not a GeneralizedFrequentDirections"):
        GeneralizedFrequentDirections.from_bytes(data)
    assert type(FrequentDirections.from_bytes(data)) is FrequentDirections


def test_a_header_announcing_more_than_its_member_holds_is_refused():
    """A crafted archive (CRCs intact) whose array header claims 10^12 entries must not make
    numpy allocate them."""
    npy = io.BytesIO()
    np.save(npy, np.zeros(3))
    raw = npy.getvalue()
    header, data = raw[:raw.index(b"\n") + 1], raw[raw.index(b"\n") + 1:]
    crafted = header.replace(b"(3,)", b"(1000000000000,)").replace(b" " * 12 + b"\n", b"\n") + data
    assert len(crafted) == len(raw)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("buffer.npy", crafted)
    with pytest.raises(ValueError, match="announces"):
        explorer.sketch.from_bytes(buffer.getvalue())


def test_a_compressed_archive_is_refused():
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **state_of(FD))
    with pytest.raises(ValueError, match="is compressed"):
        explorer.sketch.from_bytes(buffer.getvalue())


def load_or_refuse(data):
    """from_bytes either refuses with a ValueError or gives a sound sketch."""
    try:
        sk = explorer.sketch.from_bytes(data)
    except ValueError:
        return None
    assert not nonfinite_entries(sk.state_dict())
    type(sk).from_state_dict(sk.state_dict())  # its own checks pass
    return sk


@given(st.binary(max_size=600))
def test_fuzz_random_bytes_are_refused(data):
    assert load_or_refuse(data) is None


@given(st.data())
def test_fuzz_mutated_bytes_are_refused_or_sound(data):
    sound = bytearray(sound_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(sound) - 1))
        sound[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(sound)))
    load_or_refuse(bytes(sound[:cut]) if data.draw(st.booleans()) else bytes(sound))


def test_packing_keeps_the_state_untouched():
    sk = FrequentDirections(3, 2, fast=True)
    sk.extend(np.eye(3))
    before = snapshot(sk)
    assert pack_state(sk.state_dict()) == sk.to_bytes()
    assert_same_state(snapshot(sk), before)


# -- merge_levels: every node of the tree (lesson 07 draws it) -------------------------------

@settings(max_examples=25, deadline=None)
@given(parts=st.integers(1, 9), split_every=st.integers(2, 4), kind=st.sampled_from(["fd", "rfd"]),
       seed=st.integers(0, 2**16))
def test_merge_levels_keeps_every_node_of_merges_tree(parts, split_every, kind, seed):
    from explorer.merging import merge_levels

    rng = np.random.default_rng(seed)
    make = (lambda: FrequentDirections(6, 3, fast=True)) if kind == "fd" else (
        lambda: RobustFrequentDirections(6, 3, alpha0=0.5, fast=True))
    sketches = []
    for _ in range(parts):
        sketch = make()
        sketch.extend(rng.standard_normal((int(rng.integers(1, 12)), 6)))
        sketches.append(sketch)
    before = [s.state_dict() for s in sketches]
    tree = merge_levels(sketches, split_every)
    root = explorer.merge(sketches, split_every)
    assert_same_state(tree.levels[-1][0].state_dict(), root.state_dict())
    assert tree.levels[0] == sketches and len(tree.levels[-1]) == 1
    for below, level in zip(tree.levels, tree.levels[1:]):
        assert len(level) == -(-len(below) // split_every)
        assert [node.n_seen for node in level] == [
            sum(s.n_seen for s in below[j:j + split_every]) for j in range(0, len(below), split_every)]
    own = sum(sum(level) for level in tree.own)
    assert own == pytest.approx(root.delta_total, rel=1e-12, abs=1e-300)
    assert all(delta >= 0 for level in tree.own for delta in level)
    for sketch, state in zip(sketches, before):
        assert_same_state(sketch.state_dict(), state)
        assert not sketch._hooks  # the hooks it lent for the merges are gone
