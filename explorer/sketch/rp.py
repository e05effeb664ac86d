"""Gaussian random projection (the RP-SON baseline of Luo et al. 2017).

``B <- B + r_t a_t^T`` with ``r_t ~ N(0, I_m / m)``: an unbiased sketch of ``A^T A`` with no
shrink (docs/algorithms.md section 1.5).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._validation import as_row, as_rows, check_int, check_mass
from ..hooks import Observable
from ..params import Tunable
from ..perturb import perturb
from ..state import StateReader, copy_array, generator_json, stateful

__all__ = ["RandomProjectionSketch"]


@stateful
class RandomProjectionSketch(Observable, Tunable):
    r"""Gaussian random-projection sketch (the RP-SON baseline of Luo et al. 2017).

    ``B <- B + r_t a_t^T`` with ``r_t ~ N(0, I_m / m)``, so ``E[B^T B] = A^T A``.
    No shrink ever happens; the error is random rather than one-sided.

    >>> import numpy as np
    >>> sk = RandomProjectionSketch(d=3, m=4, seed=0)
    >>> sk.extend(np.eye(3))
    >>> sk.sketch.shape, sk.n_seen
    ((4, 3), 3)
    """

    def __init__(self, d: int, m: int, *, seed: int | None = None):
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        self.m = check_int("m", m, minimum=1)
        self.seed = None if seed is None else check_int("seed", seed, minimum=0)
        self._rng = np.random.default_rng(self.seed)
        self._buffer = np.zeros((self.m, self.d))
        self.n_seen = 0

    def __repr__(self) -> str:
        return f"RandomProjectionSketch(d={self.d}, m={self.m}) n_seen={self.n_seen}"

    def update(self, x) -> None:
        """Add one row ``x``."""
        self._insert(as_row(x, self.d)[None, :])

    def extend(self, X) -> None:
        """Add the rows of ``X`` in order (same random draws as row by row)."""
        self._insert(as_rows(X, self.d))

    def _insert(self, X: np.ndarray) -> np.ndarray:
        """All or nothing: rows whose squared norms sum past :data:`MAX_SQUARED_MASS` are
        refused before any draw, and a sum that still overflows leaves ``B`` and the
        generator as they were. Returns the draws ``R`` (n x m)."""
        check_mass(0.0, X, name="X")
        generator = self._rng.bit_generator.state
        try:
            R = perturb(self._rng.standard_normal((X.shape[0], self.m)) / np.sqrt(self.m))
            updated = self._buffer + R.T @ X
        except BaseException:  # an interrupt after the draw: the generator as it was
            self._rng.bit_generator.state = generator
            raise
        if not np.isfinite(updated).all():
            self._rng.bit_generator.state = generator
            raise ValueError(f"the sketch B would overflow (its entries pass 1e308); rescale "
                             f"the data, e.g. divide it by its largest entry; nothing was added")
        self._buffer[:] = updated
        self.n_seen += X.shape[0]
        return R

    def undo_point(self) -> Callable[[], None]:
        """A function that puts the sketch back as it is now (``B`` and the generator),
        whatever one :meth:`insert` does to it: every insert changes every row of ``B``."""
        state = self.state_dict()
        return lambda: self.load_state_dict(state)

    def insert(self, row: np.ndarray) -> np.ndarray:
        """Add one row the caller has already checked (a learner's round); returns the
        random direction ``r`` drawn for it (``B <- B + r row^T``), which RP-SON needs to
        keep ``B B^T`` up to date."""
        return self._insert(row[None, :])[0]

    @property
    def sketch(self) -> np.ndarray:
        """A copy of ``B`` (m x d)."""
        return self._buffer.copy()

    @property
    def rows(self) -> np.ndarray:
        """``B`` (m x d) as a read-only view (no copy; ``.copy()`` to keep one)."""
        view = self._buffer[:]
        view.flags.writeable = False
        return view

    def gram(self) -> np.ndarray:
        """``B^T B``, an unbiased estimate of ``A^T A``."""
        return self._buffer.T @ self._buffer

    def state_dict(self) -> dict:
        return {"kind": type(self).__name__, "d": self.d, "m": self.m,
                "seed": -1 if self.seed is None else self.seed,
                "buffer": copy_array(self._buffer), "n_seen": self.n_seen,
                "rng": generator_json(self._rng)}

    @classmethod
    def from_state_dict(cls, state: dict) -> "RandomProjectionSketch":
        reader = StateReader(state, cls)
        d, m = reader.count("d", minimum=1), reader.count("m", minimum=1)
        reader.check_shape("buffer", (m, d), f"d = {d}, m = {m}")  # before allocating B
        sk = cls(d, m)
        sk.load_state_dict(state)
        return sk

    def load_state_dict(self, state: dict) -> None:
        """In place (same d and m); the buffer, the count and the generator's state are all
        checked before any is stored."""
        reader = StateReader(state, type(self))
        reader.same("d", self.d)
        reader.same("m", self.m)
        buffer = reader.array("buffer", self._buffer.shape)
        n_seen = reader.count("n_seen")
        seed = reader.seed()
        generator = reader.generator_state()
        self._buffer[:] = buffer
        self.n_seen = n_seen
        self.seed = seed  # where the draws came from; the generator's state is what counts
        self._rng.bit_generator.state = generator
