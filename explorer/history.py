"""The one table of per-step numbers: :class:`History`, columns of floats by name.

:func:`explorer.run.run`, a learner's ``progressive``, :class:`explorer.race.Race` and the
dashboard's live curves all return or keep one.

>>> History({"t": [1, 2, 3], "loss": [1.0, 0.5, 0.25]})["loss"][-1]
np.float64(0.25)
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from ._validation import check_int

__all__ = ["History"]


class History:
    """Per-step columns of numbers: ``history[name]`` -> a read-only numpy array.

    The one table of per-step numbers, for :func:`run`, :class:`explorer.race.Race` and the
    dashboard's live curves. Like a pandas DataFrame, ``len(history)`` is the number of
    recorded steps (rows) and iterating gives the column names; column ``"t"`` holds the
    1-based step numbers of the recorded rows. :meth:`to_dict` gives writable copies
    (``pandas.DataFrame(history.to_dict())`` makes a frame).

    Built whole (``History(columns)``) or point by point (:meth:`append`). With a
    ``capacity``, a full history drops every other point (the oldest is kept) before it
    appends, so the curves still span the whole run at half the resolution: memory stays
    O(capacity) however long the stream. :meth:`truncate` forgets the points after a step
    (the dashboard's Back).

    >>> h = History({"t": [1, 2], "loss": [0.5, 0.25]})
    >>> len(h), list(h), h["loss"].tolist()
    (2, ['t', 'loss'], [0.5, 0.25])
    >>> h = History(capacity=4)
    >>> for t in range(6):
    ...     h.append(t=t, loss=10.0 * t)
    >>> h["t"].tolist(), h["loss"].tolist()
    ([0.0, 2.0, 4.0, 5.0], [0.0, 20.0, 40.0, 50.0])
    """

    def __init__(self, columns: dict[str, Any] | None = None, *, capacity: int | None = None):
        if capacity is not None:
            capacity = check_int("capacity", capacity, minimum=2)
        self.capacity = capacity
        arrays = {name: np.array(values) for name, values in (columns or {}).items()}
        lengths = {name: array.shape[0] if array.ndim else None for name, array in arrays.items()}
        if len(set(lengths.values())) > 1 or None in lengths.values():
            raise ValueError(f"History columns must be 1-D and of equal length, got lengths {lengths}")
        self._columns = arrays
        self._size = next(iter(lengths.values())) if lengths else 0
        if capacity is not None and self._size > capacity:
            raise ValueError(f"{self._size} rows do not fit in capacity {capacity}")

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._columns:
            raise KeyError(f"no column {name!r}; columns are {list(self._columns)}")
        view = self._columns[name][:self._size]
        view.flags.writeable = False
        return view

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __len__(self) -> int:
        return self._size

    @property
    def names(self) -> list[str]:
        """The column names, in order."""
        return list(self._columns)

    def keys(self):
        return self._columns.keys()

    def values(self):
        return [self[name] for name in self._columns]

    def items(self):
        return [(name, self[name]) for name in self._columns]

    def last(self) -> dict[str, float]:
        """The latest row as ``{column: value}``."""
        if not self._size:
            raise ValueError("the history is empty: there is no last row")
        return {name: column[self._size - 1].item() for name, column in self._columns.items()}

    def append(self, **values: float) -> None:
        """Add one row of numbers (stored as floats); its columns must be those of the rows
        before (any, for the first)."""
        if not self._columns:
            self._columns = {name: np.empty(self.capacity or 16) for name in values}
        if values.keys() != self._columns.keys():
            raise ValueError(f"history columns are {list(self._columns)}, got {list(values)}")
        if self.capacity is not None and self._size == self.capacity:
            self._halve()
        elif self._size == next(iter(self._columns.values())).shape[0]:
            self._columns = {name: np.concatenate([column, np.empty_like(column)])
                             for name, column in self._columns.items()}
        for name, value in values.items():
            self._columns[name][self._size] = value
        self._size += 1

    def _halve(self) -> None:
        keep = np.arange(0, self._size, 2)
        for column in self._columns.values():
            column[:keep.size] = column[keep]
        self._size = keep.size

    def truncate(self, t: float) -> None:
        """Drop the rows whose ``t`` is greater than ``t``."""
        if self._size:
            self._size = int(np.searchsorted(self["t"], t, side="right"))

    def clear(self) -> None:
        """Forget every row and column."""
        self._columns = {}
        self._size = 0

    def to_dict(self) -> dict[str, np.ndarray]:
        """``{name: writable copy of the column}``."""
        return {name: self[name].copy() for name in self._columns}

    def __repr__(self) -> str:
        names = ", ".join(self._columns)
        if not len(self):
            return f"History(0 steps; columns {names})"
        last = ", ".join(f"{name}={value:.4g}" for name, value in self.last().items())
        return f"History({len(self)} steps; columns {names}; last: {last})"
