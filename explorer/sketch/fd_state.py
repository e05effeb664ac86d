"""Saving, restoring and undoing a Frequent Directions sketch (docs/algorithms.md section 1).

:class:`FrequentDirectionsState` is the mixin that gives
:class:`~explorer.sketch.FrequentDirections` (and Robust FD) its ``state_dict``,
``from_state_dict``, the in-place ``load_state_dict`` that checks everything before it
stores anything, and ``undo_point``, which a learner uses to undo a refused round.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._validation import MAX_SQUARED_MASS
from ..state import StateReader, copy_array
from .shrink import SHRINK_ERRORS, ShrinkFailed, mass_bounds

__all__ = ["FrequentDirectionsState"]


class FrequentDirectionsState:
    """Mixin of :class:`~explorer.sketch.FrequentDirections`: its state dict and undo.

    The state holds the settings (``d``, ``m``, ``fast`` and a subclass's
    :meth:`_extra_state`), the buffer, ``filled``, ``n_seen``, ``n_shrinks``,
    ``delta_total`` and ``frobenius_squared``.
    """

    def undo_point(self) -> Callable[[], None]:
        """A function that puts the sketch back as it is now, whatever one ``insert``
        does to it: a learner's refused round is undone with it. A row that does not fill
        the buffer only takes the next free row, so the counters undo it (the cheap common
        case); a row that fills it (a shrink) needs a copy of the occupied rows.

        >>> from explorer.sketch import FrequentDirections
        >>> sk = FrequentDirections(d=2, m=2)
        >>> undo = sk.undo_point()
        >>> _ = sk.insert(np.array([1.0, 2.0]))
        >>> undo(); sk.n_seen, sk.rank, sk.frobenius_squared
        (0, 0, 0.0)
        """
        saved = self._checkpoint()
        return lambda: self._rollback(saved)

    def _checkpoint(self, shrinks: bool | None = None) -> tuple:
        """What :meth:`_rollback` needs to undo rows written from now on: the counters, and
        a copy of the occupied rows if a shrink may overwrite them (``shrinks``; by default
        when the next row fills the buffer)."""
        if shrinks is None:
            shrinks = self._filled == self.capacity - 1
        rows = self._buffer[:self._filled].copy() if shrinks else None
        return (rows, self._filled, self.n_seen, self.n_shrinks, self.delta_total, self._frobenius_squared)

    def _undone(self, saved: tuple, error: BaseException, failed: Callable[[], str]) -> BaseException:
        """The sketch back at ``saved`` (:meth:`_checkpoint`) after rows being written raised
        ``error``; what to raise: ``ShrinkFailed(failed())`` for a failed shrink, else
        ``error`` itself (an interrupt, a hook's error)."""
        self._rollback(saved)
        return ShrinkFailed(failed()) if isinstance(error, SHRINK_ERRORS) else error

    def _rollback(self, saved: tuple) -> None:
        """The sketch as it was at :meth:`_checkpoint` (rows written since are zeroed)."""
        rows, filled, *counters = saved
        if rows is not None:
            self._buffer[:filled] = rows
        self._buffer[filled:] = 0.0
        self._filled = filled
        self.n_seen, self.n_shrinks, self.delta_total, self._frobenius_squared = counters

    def writable_buffer(self) -> np.ndarray:
        """The whole buffer ``B`` (capacity x d) itself, writable: for a compiled round that
        writes rows into free rows (:mod:`explorer.newton.compiled`); it then reports them
        with :meth:`rows_written`. Anything else reads :attr:`rows`."""
        return self._buffer

    def rows_written(self, filled: int, n_seen: int, frobenius_squared: float, *,
                     n_shrinks: int | None = None, delta_total: float | None = None) -> None:
        """Account for rows a compiled round wrote into :meth:`writable_buffer` by FD's rule
        (and the shrinks it made, with no hook watching: :attr:`observed`): the occupied
        rows, the rows seen, ``||A||_F^2``, and the shrinks and ``Delta`` as they now are."""
        self._filled, self.n_seen, self._frobenius_squared = filled, n_seen, frobenius_squared
        if n_shrinks is not None:
            self.n_shrinks, self.delta_total = n_shrinks, delta_total

    @property
    def observed(self) -> bool:
        """Whether a hook listens to this sketch (its shrinks then send events)."""
        return bool(self._hooks)

    def state_dict(self) -> dict:
        """Plain arrays and scalars; ``from_state_dict`` continues exactly from here."""
        return {"kind": type(self).__name__, "d": self.d, "m": self.m, "fast": self.fast,
                "buffer": copy_array(self._buffer), "filled": self._filled, "n_seen": self.n_seen,
                "n_shrinks": self.n_shrinks, "delta_total": self.delta_total,
                "frobenius_squared": self._frobenius_squared, **self._extra_state()}

    def _extra_state(self) -> dict:
        return {}

    @classmethod
    def from_state_dict(cls, state: dict) -> "FrequentDirectionsState":
        """The sketch ``state`` describes; its ``buffer`` must have the shape ``d``, ``m``
        and ``fast`` give, checked before the sketch's own buffer is allocated (so a state
        claiming ``d = m = 10**6`` is a ``ValueError``, not a ``MemoryError``)."""
        reader = StateReader(state, cls)
        d, m, fast = reader.count("d", minimum=1), reader.count("m", minimum=2), reader.flag("fast")
        reader.check_shape("buffer", (2 * m if fast else m, d), f"d = {d}, m = {m}, fast = {fast}")
        sk = cls(d, m, fast=fast, **cls._extra_arguments(reader))
        sk.load_state_dict(state)
        return sk

    @classmethod
    def _extra_arguments(cls, reader: StateReader) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Become the sketch ``state`` describes, in place (same d, m, fast; a learner's
        sketch keeps its identity and hooks). Everything is checked before anything is
        stored: a state no run could have written (wrong shape, NaN, a negative counter,
        rows past ``filled``, a total below what ``B`` holds) is refused with a
        ``ValueError`` naming the key, and the sketch stays as it was."""
        reader = StateReader(state, type(self))
        for key, value in self._settings().items():
            reader.same(key, value)
        buffer = reader.array("buffer", self._buffer.shape)
        filled = reader.count("filled", maximum=self.capacity - 1)
        if buffer[filled:].any():
            raise reader.refuse("buffer", f"zero after its first {filled} rows ('filled')", "non-zero rows")
        n_seen = reader.count("n_seen", minimum=filled)
        n_shrinks = reader.count("n_shrinks")
        delta_total = reader.number("delta_total", minimum=0.0)
        if delta_total > 0 and n_shrinks == 0:
            raise reader.refuse("delta_total", "0 before the first shrink (n_shrinks = 0)", delta_total)
        with np.errstate(over="ignore"):  # a tampered huge buffer gives inf: refused below
            held = float(np.sum(buffer ** 2)) if filled else 0.0
        if not held + delta_total <= MAX_SQUARED_MASS:
            raise reader.refuse("buffer", f"of total squared norm at most {MAX_SQUARED_MASS:.0e}", held)
        low, high = mass_bounds(held, delta_total, self.m, min(self.capacity, self.d), n_shrinks * self.capacity * self.d)
        # A state saved before the total was kept: ||B||_F^2 + m Delta (less its rounding
        # slack) is a lower bound of it. Bytes of the format always have it (check_members).
        total = (reader.number("frobenius_squared", minimum=0.0, maximum=MAX_SQUARED_MASS)
                 if reader.has("frobenius_squared") else max(held + delta_total, low))
        if not low <= total <= high:
            raise reader.refuse("frobenius_squared", f"within [{low:.6g}, {high:.6g}]: ||B||_F^2 + m delta_total "
                                f"<= ||A||_F^2 <= ||B||_F^2 + min(capacity, d) delta_total (each shrink removes "
                                f"between m and min(capacity, d) times its delta; none: exactly ||B||_F^2)", total)
        self._buffer[:] = buffer
        self._filled, self.n_seen, self.n_shrinks = filled, n_seen, n_shrinks
        self.delta_total, self._frobenius_squared = delta_total, total

    def _settings(self) -> dict:
        """The constructor's arguments as a state dict stores them."""
        return {"d": self.d, "m": self.m, "fast": self.fast}
