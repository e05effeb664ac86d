"""Merging sketches in a tree, and the byte format that carries them between processes.

Frequent Directions is mergeable (Ghashami, Liberty, Phillips, Woodruff 2016, section on
parallelization; Agarwal et al. 2012): sketch each part of a stream, merge the sketches, and
the FD guarantee holds for the union with ``delta_total`` the sum of every shrink's delta.
``a.merge(b)`` (:class:`~explorer.sketch.FrequentDirections`, Robust FD, Generalized FD)
merges two; :func:`merge` merges a list in a tree. ``to_bytes`` / ``from_bytes`` write a
sketch's state as an npz archive in memory, with a format name, version and kind checked on
the way back and nothing ever unpickled. docs/merging.md gives the proofs and the format.

>>> import numpy as np
>>> from explorer import FrequentDirections
>>> X = np.random.default_rng(0).standard_normal((40, 5))
>>> parts = [FrequentDirections(d=5, m=3) for _ in range(4)]
>>> for part, rows in zip(parts, np.array_split(X, 4)):
...     part.extend(rows)
>>> union = merge(parts, split_every=2)
>>> union.n_seen, union.delta_total >= sum(part.delta_total for part in parts)
(40, True)
>>> type(union).from_bytes(union.to_bytes()).n_seen
40
"""

from __future__ import annotations

import io
from typing import Any, Iterable, NamedTuple

import numpy as np

from ._validation import check_int
from .archive import ArchiveError, read_npz
from .hooks import MergeEvent
from .state import check_plain

__all__ = ["Mergeable", "merge", "merge_levels", "MergeLevels", "pack_state", "unpack_state", "FORMAT",
           "FORMAT_VERSION", "check_members"]

#: The name stored under ``"format"`` in every archive :func:`pack_state` writes.
FORMAT = "sketch-explorer"
#: The version of the byte format; :func:`unpack_state` reads this version only.
FORMAT_VERSION = 1
_HEADER_KEYS = ("format", "format_version")


class Mergeable:
    """Mixin of the mergeable sketches: ``merge(other)``, ``to_bytes()`` and ``from_bytes``.

    The class provides ``_merged(other)``: the new sketch of both streams, the sum of the
    deltas of the merge's own shrinks, how many it did, and the occupied rows each part
    brought (docs/merging.md). It is also :class:`~explorer.hooks.Observable` and
    :class:`~explorer.params.Tunable` (its settings are its ``get_params()``).
    """

    def merge(self, other):
        """A new sketch of the same class and settings summarizing both streams, this one's
        and ``other``'s; both are unchanged. ``n_seen``, ``delta_total`` and the Frobenius
        mass ``||A||_F^2`` add up (the merge's own shrinks included), so every guarantee of
        the class holds for the union (Ghashami et al. 2016; docs/merging.md). The hooks of
        both sketches receive a :class:`~explorer.hooks.MergeEvent`.

        Refuses (``ValueError`` naming both values) a sketch of another class or with other
        settings (``d``, ``m``, ``fast``, RFD's ``alpha0``), and a union whose ``||A||_F^2``
        passes :data:`explorer.sketch.MAX_SQUARED_MASS`.
        """
        name = type(self).__name__
        if type(other) is not type(self):
            raise ValueError(f"{name}.merge needs another {name}, got a {type(other).__name__}")
        mine, theirs = self.get_params(), other.get_params()
        for key, value in mine.items():
            if theirs[key] != value:
                raise ValueError(f"cannot merge two {name} sketches with different {key}: "
                                 f"{value!r} and {theirs[key]!r}")
        merged, delta, n_shrinks, ranks = self._merged(other)
        listeners = [part for part in ((self,) if other is self else (self, other)) if part._listening()]
        if listeners:
            event = MergeEvent(t=merged.n_seen, sizes=(self.n_seen, other.n_seen), ranks=ranks,
                               delta=delta, n_shrinks=n_shrinks, delta_total=merged.delta_total,
                               alpha=getattr(merged, "alpha", None))
            for part in listeners:
                part._announce(event)
        return merged

    def _listening(self) -> bool:
        return bool(self._hooks)

    def _announce(self, event: MergeEvent) -> None:
        self._emit(event)

    def to_bytes(self) -> bytes:
        """The sketch's state as bytes (an npz archive, format :data:`FORMAT_VERSION`),
        read back by ``from_bytes`` (bit-identical: continuing after it is the same as
        never stopping)."""
        return pack_state(self.state_dict())

    @classmethod
    def from_bytes(cls, data: bytes):
        """The sketch ``to_bytes`` wrote. Refuses (``ValueError`` saying what is wrong) data
        that is not such an archive, a truncated or altered one, another format version,
        a sketch of another kind, and a state no run could have written (NaN, ...)."""
        state = unpack_state(data, (cls.__name__,))
        check_members(cls, state)
        return cls.from_state_dict(state)


class MergeLevels(NamedTuple):
    """Every level of :func:`merge`'s tree, leaves first (``levels[-1]`` holds the root),
    and ``own[level][j]``: the delta node ``j`` of that level added by its own shrinks
    (for a leaf, its ``delta_total``)."""

    levels: list[list[Mergeable]]
    own: list[list[float]]


def merge_levels(sketches: Iterable[Mergeable], split_every: int = 8) -> MergeLevels:
    """:func:`merge`, keeping every node of the tree: what a picture of the tree needs
    (lesson 07, ``explorer.plots.merge_tree``). Groups of ``split_every`` consecutive
    sketches are merged into one (left to right: ``s0.merge(s1).merge(s2)...``), level by
    level, until one is left; a single sketch gives a level of its copy. Each node's own
    delta is the sum of the deltas its merges reported (:class:`~explorer.hooks.MergeEvent`).
    None of the sketches changes, and their hooks hear each merge as ``merge`` makes it.

    >>> import numpy as np
    >>> from explorer import FrequentDirections
    >>> parts = [FrequentDirections(d=4, m=2) for _ in range(3)]
    >>> for part, rows in zip(parts, np.array_split(np.eye(4).repeat(3, axis=0), 3)):
    ...     part.extend(rows)
    >>> tree = merge_levels(parts, split_every=2)
    >>> [[node.n_seen for node in level] for level in tree.levels]
    [[4, 4, 4], [8, 4], [12]]
    """
    split_every = check_int("split_every", split_every, minimum=2)
    if isinstance(sketches, (str, bytes)) or not isinstance(sketches, Iterable):
        raise ValueError(f"sketches must be a sequence of sketches, got {type(sketches).__name__}")
    level = list(sketches)
    if not level:
        raise ValueError("sketches is empty: merge needs at least one sketch")
    for i, sketch in enumerate(level):
        if not isinstance(sketch, Mergeable):
            raise ValueError(f"sketches[{i}] is a {type(sketch).__name__}, not a mergeable sketch "
                             "(FrequentDirections, RobustFrequentDirections, "
                             "GeneralizedFrequentDirections)")
    levels, own = [level], [[sketch.delta_total for sketch in level]]
    if len(level) == 1:
        copy = type(level[0]).from_state_dict(level[0].state_dict())
        return MergeLevels([*levels, [copy]], [*own, [0.0]])
    while len(level) > 1:
        groups = [_merge_group(level[start:start + split_every])
                  for start in range(0, len(level), split_every)]
        level = [node for node, _ in groups]
        levels.append(level)
        own.append([delta for _, delta in groups])
    return MergeLevels(levels, own)


def merge(sketches: Iterable[Mergeable], split_every: int = 8) -> Mergeable:
    """Merge sketches in a tree: groups of ``split_every`` consecutive sketches are merged
    into one (left to right: ``s0.merge(s1).merge(s2)...``), level by level, until one is
    left. The result depends only on the sketches and their order; none of them changes.
    A single sketch gives a copy of it (:func:`merge_levels` keeps every node).

    Every sketch must be of the same class and settings (``ValueError`` from ``merge``
    otherwise); ``split_every`` is an integer >= 2.
    """
    return merge_levels(sketches, split_every).levels[-1][0]


def _merge_group(group: list[Mergeable]) -> tuple[Mergeable, float]:
    """The merge of ``group`` (left to right) and the delta its own shrinks added."""
    merged, own = group[0], 0.0
    for sketch in group[1:]:
        merged, delta = _merge_two(merged, sketch)
        own += delta
    return merged, own


def _merge_two(left: Mergeable, right: Mergeable) -> tuple[Mergeable, float]:
    """``left.merge(right)`` and its own delta, heard as a :class:`MergeEvent` by a hook
    added to ``right`` for the call only."""
    heard: list[MergeEvent] = []
    handle = right.add_hook(heard.append)
    try:
        merged = left.merge(right)
    finally:
        handle.remove()
    return merged, sum(event.delta for event in heard if event.kind == "merge")


def pack_state(state: dict[str, Any]) -> bytes:
    """A state dict as the bytes of an npz archive (uncompressed), with :data:`FORMAT` and
    :data:`FORMAT_VERSION` added. A value numpy could only store pickled (an object array,
    an integer past 64 bits) is refused (``ValueError``): :func:`unpack_state` would refuse it."""
    check_plain(state)
    buffer = io.BytesIO()
    np.savez(buffer, format=FORMAT, format_version=FORMAT_VERSION, **state)
    return buffer.getvalue()


def unpack_state(data: bytes, kinds: tuple[str, ...]) -> dict[str, Any]:
    """The state dict :func:`pack_state` wrote, if its ``kind`` is one of ``kinds``.

    Checked before anything is read as an array, by :func:`explorer.archive.read_npz`:
    ``data`` is bytes, a zip archive whose directory lists every member its end record
    counts, whose members are stored (not compressed), do not overlap, are intact (CRC)
    and are ``.npy`` arrays whose headers announce exactly the bytes they hold (no header
    may make numpy allocate more than the archive carries), and no object arrays. Then the
    format name, its version and the kind. The state's values are left to the class's
    ``from_state_dict`` (its ``StateReader``); :func:`check_members` checks that every
    member the format version writes is there.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValueError(f"data must be bytes (what to_bytes returns), got {type(data).__name__}")
    data = bytes(data)
    try:
        state = read_npz(data, "data", limit=len(data), stored_only=True)
    except ArchiveError as error:
        raise ValueError(f"data is not a sketch's bytes: not an intact npz archive ({error.reason})") from None
    if str(state.get("format", "")) != FORMAT:
        raise ValueError(f"data is not a sketch's bytes: its 'format' is {str(state.get('format'))!r}, "
                         f"not {FORMAT!r}")
    version = state.get("format_version")
    if (version is None or version.dtype.kind not in "iu" or version.shape != ()
            or int(version) != FORMAT_VERSION):
        shown = None if version is None else version.tolist()
        raise ValueError(f"data has byte format version {shown!r}; this version of explorer reads "
                         f"version {FORMAT_VERSION} only")
    kind = str(state.get("kind", ""))
    if kind not in kinds:
        raise ValueError(f"data holds a {kind or 'sketch of no kind'}, not a {' or '.join(kinds)}"
                         + ("; explorer.sketch.from_bytes reads any sketch" if len(kinds) == 1 else ""))
    return {key: value for key, value in state.items() if key not in _HEADER_KEYS}


def check_members(cls: type, state: dict[str, Any]) -> None:
    """Refuse a state of format version :data:`FORMAT_VERSION` that lacks a member
    ``cls.state_dict()`` always writes (the keys of a fresh ``cls(1, 2)``'s state). A
    ``load_state_dict`` may fill in a key that states written before it existed lack;
    bytes of this format version were never written without it, so here its absence
    means a damaged archive.

    >>> from explorer import FrequentDirections
    >>> state = FrequentDirections(2, 2).state_dict(); del state["frobenius_squared"]
    >>> check_members(FrequentDirections, state)
    Traceback (most recent call last):
    ...
    ValueError: data holds a FrequentDirections without 'frobenius_squared', which byte format version 1 always writes (a damaged archive)
    """
    missing = [key for key in cls(1, 2).state_dict() if key not in state]
    if missing:
        raise ValueError(f"data holds a {cls.__name__} without {', '.join(map(repr, missing))}, which byte "
                         f"format version {FORMAT_VERSION} always writes (a damaged archive)")
