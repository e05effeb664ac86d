r"""Frequent Directions against Robust FD on one stream: the sketching page's experiment.

Four sketches read every row (docs/algorithms.md sections 1-2; Luo et al. 2017,
Algorithms 1-4): FD and RFD, each exact (one shrink per row once full) and fast (doubling
space). FD and RFD hold the same ``B``; RFD adds :math:`\alpha = \alpha_0 + \Delta/2`.
:meth:`SketchComparison.measure` reads, from a running :math:`A^T A` (d x d, O(d^2) per
row, so O(d^3) per measurement whatever the number of rows):

- the spectral errors :math:`\|A^T A - B^T B\|_2` (FD) and
  :math:`\|A^T A + \alpha_0 I - (B^T B + \alpha I)\|_2` (RFD), the quantity of
  :func:`explorer.metrics.covariance_error`, against the FD bound
  :math:`\min_{k<m} \|A - A_k\|_F^2 / (m - k)` and RFD's half of it (Theorem 3);
- the condition numbers of :math:`B^T B + \alpha_0 I` and :math:`B^T B + \alpha I`
  (:func:`explorer.metrics.sketch_condition_numbers`, Theorem 4) and of the exact
  :math:`A^T A + \alpha_0 I`;
- alpha; a :class:`~explorer.hooks.Recorder` on each RFD sketch keeps its last shrink.

``alpha0`` is hot: ``B`` does not depend on it, so :meth:`SketchComparison.with_params`
applies a new one mid-stream (through each RFD's own ``with_params``).

>>> import numpy as np
>>> race = SketchComparison(d=3, m=2, alpha0=0.5)
>>> race.extend(np.diag([3.0, 2.0, 1.0]))
>>> point = race.measure()
>>> point["error_rfd_exact"] <= point["bound_rfd"] <= point["bound_fd"], point["alpha_exact"]
(True, 3.0)
>>> race.with_params(alpha0=1.0).measure()["alpha_exact"], race.alpha0
(3.5, 0.5)
"""

from __future__ import annotations

import numpy as np

from ..hooks import Recorder
from ..metrics import (ROUNDING_LEVEL, best_fd_bound_from_eigenvalues,
                       condition_number_from_eigenvalues,
                       gram_covariance_error, gram_eigenvalues, sketch_condition_numbers)
from ..params import Tunable
from ..race import Curves, EventTimes
from ..history import History
from ..sketch import FrequentDirections, RobustFrequentDirections
from ..state import StateReader, all_or_nothing, copy_array

__all__ = ["SketchComparison", "SKETCH_VARIANTS"]

SKETCH_VARIANTS = ("exact", "fast")
"""FD's two variants: one shrink per row once full (Algorithm 1), doubling space (Algorithm 2)."""


class SketchComparison(Tunable, Curves):
    """FD and RFD, exact and fast, on the same rows, with the exact ``A^T A`` beside them.

    ``fd[variant]`` and ``rfd[variant]`` are the sketches (``variant`` in :data:`SKETCH_VARIANTS`: the exact one-shrink-per-row algorithm and the fast doubling-space one),
    ``gram`` the running ``A^T A``, ``history`` the curves (a point, :meth:`measure`, per
    :meth:`~explorer.race.Curves.record`; ``t`` is :attr:`n_seen`). All or nothing: rows a sketch refuses (``ValueError``)
    leave every sketch, the Gram matrix and the recorded shrinks as they were.
    """

    HOT = ("alpha0",)

    def __init__(self, d: int, m: int, *, alpha0: float = 0.0):
        self.fd = {v: FrequentDirections(d, m, fast=v == "fast") for v in SKETCH_VARIANTS}
        self.rfd = {v: RobustFrequentDirections(d, m, alpha0=alpha0, fast=v == "fast") for v in SKETCH_VARIANTS}
        first = self.rfd[SKETCH_VARIANTS[0]]  # the sketches validated d, m and alpha0
        self.d, self.m, self.alpha0 = first.d, first.m, first.alpha0
        self.recorders = {v: Recorder(kinds=("shrink",), limit=1) for v in SKETCH_VARIANTS}
        self.event_times = EventTimes()
        """The rows at which each variant shrank (kind ``"shrink <variant>"``), the latest ones."""
        for v in SKETCH_VARIANTS:
            self._listen(self.rfd[v], v)
        self.gram = np.zeros((self.d, self.d))
        self._eigenvalues: np.ndarray | None = None
        self.history = History()

    def _listen(self, rfd: RobustFrequentDirections, variant: str) -> None:
        """Keep ``variant``'s last shrink (its recorder) and the row of every shrink (FD's
        sketch of the same variant keeps the same ``B``, so it shrinks at the same rows)."""
        rfd.add_hook(self.recorders[variant])
        rfd.add_hook(lambda event: self.event_times.add(f"shrink {variant}", event.t)
                     if event.kind == "shrink" else None)

    @property
    def n_seen(self) -> int:
        """Rows read so far."""
        return self.fd[SKETCH_VARIANTS[0]].n_seen

    t = n_seen

    def extend(self, rows) -> None:
        """Feed the rows (n x d) to the four sketches and add them to ``A^T A``.

        ``A^T A`` grows one row at a time (not ``rows.T @ rows``, whose sums BLAS orders by
        the block's size), so it is the same to the last bit however the stream is cut
        into calls: one Step at a time, Play, or a shared link's seek.
        """
        with all_or_nothing(self):
            for v in SKETCH_VARIANTS:
                self.fd[v].extend(rows)
                self.rfd[v].extend(rows)
        for row in np.asarray(rows, dtype=float):
            self.gram += np.outer(row, row)
        self._eigenvalues = None

    def eigenvalues(self) -> np.ndarray:
        """The eigenvalues of ``A^T A``, descending, rounding-level ones exactly 0
        (:func:`explorer.metrics.gram_eigenvalues`; computed once per state)."""
        if self._eigenvalues is None:
            self._eigenvalues = gram_eigenvalues(self.gram)
        return self._eigenvalues

    def measure(self) -> dict[str, float]:
        r"""One point of the page's curves: ``bound_fd``, ``kappa_exact``, ``bound_rfd``, and
        for each variant ``error_fd_*``, ``error_rfd_*``, ``kappa_fd_*``, ``kappa_rfd_*``,
        ``alpha_*``.

        An error at the level of rounding, at most :data:`~explorer.metrics.ROUNDING_LEVEL`
        (1e-12) times :math:`\|A\|_2^2`, is reported as exactly 0: the same rule that sets
        rounding-level eigenvalues of :math:`A^T A` to 0 for the bound, so error and bound
        are compared at one resolution. Before the first shrink (``delta_total == 0``) the
        sketch is exact, error <= Delta = 0 (Theorem 3), and the ~1e-16 that the dense
        error matrix gives is noise, not a violated bound. A real error after a
        shrink is of the order of delta, far above this level."""
        lam = self.eigenvalues()
        noise = ROUNDING_LEVEL * max(float(lam[0]), 0.0) if lam.size else 0.0
        point = {"bound_fd": best_fd_bound_from_eigenvalues(lam, self.m),
                 "kappa_exact": condition_number_from_eigenvalues(lam, self.alpha0)}
        point["bound_rfd"] = point["bound_fd"] / 2
        for v in SKETCH_VARIANTS:
            fd, rfd = self.fd[v], self.rfd[v]
            for name, sketch in (("fd", fd), ("rfd", rfd)):
                error = gram_covariance_error(self.gram, sketch)
                point[f"error_{name}_{v}"] = 0.0 if error <= noise else error
            kappa = sketch_condition_numbers(rfd)
            point[f"kappa_fd_{v}"], point[f"kappa_rfd_{v}"] = kappa["fd"], kappa["rfd"]
            point[f"alpha_{v}"] = rfd.alpha
        return point

    def last_shrink(self, variant: str) -> dict[str, np.ndarray]:
        """The recorded columns (t, sigma, delta, alpha) of the last shrink of the ``variant``
        RFD sketch, ``{}`` before the first."""
        return self.recorders[variant].columns("shrink")

    def shrink_times(self, variant: str) -> np.ndarray:
        """The rows at which the ``variant`` sketches shrank, oldest first: the latest
        :data:`~explorer.race.EVENTS_KEPT` of them (empty before the first)."""
        return self.event_times.times(f"shrink {variant}")

    # -- state ----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The sketches' state dicts, the last shrinks, the rows of the shrinks and ``A^T A``:
        a snapshot for Back."""
        return {"kind": type(self).__name__, "d": self.d, "m": self.m, "alpha0": self.alpha0,
                "fd": {v: self.fd[v].state_dict() for v in SKETCH_VARIANTS},
                "rfd": {v: self.rfd[v].state_dict() for v in SKETCH_VARIANTS},
                "shrink": {v: self.recorders[v].events("shrink") for v in SKETCH_VARIANTS},
                "event_times": self.event_times.state_dict(),
                "gram": copy_array(self.gram)}

    @classmethod
    def from_state_dict(cls, state: dict) -> "SketchComparison":
        reader = StateReader(state, cls)
        comparison = cls(reader.count("d", minimum=1), reader.count("m", minimum=2),
                         alpha0=reader.number("alpha0", minimum=0.0))
        comparison.load_state_dict(state)
        return comparison

    def load_state_dict(self, state: dict) -> None:
        """Become the comparison ``state`` describes (same d, m, alpha0); every part is
        checked (by the sketches' own ``load_state_dict``) before any is stored."""
        reader = StateReader(state, type(self))
        for key in ("d", "m", "alpha0"):
            reader.same(key, getattr(self, key))
        gram, events = reader.array("gram", self.gram.shape), reader.raw("event_times")
        fd = {v: FrequentDirections(self.d, self.m, fast=v == "fast") for v in SKETCH_VARIANTS}
        rfd = {v: RobustFrequentDirections(self.d, self.m, alpha0=self.alpha0, fast=v == "fast")
               for v in SKETCH_VARIANTS}
        for v in SKETCH_VARIANTS:
            fd[v].load_state_dict(reader.raw("fd")[v])
            rfd[v].load_state_dict(reader.raw("rfd")[v])
        for v in SKETCH_VARIANTS:
            self._listen(rfd[v], v)
            self.recorders[v].replace(reader.raw("shrink")[v])
        self.event_times.load_state_dict(events)
        self.fd, self.rfd, self.gram[:] = fd, rfd, gram
        self._eigenvalues = None

    def _continue_state(self, state: dict, fresh, changes: dict) -> dict:
        """A new alpha0 goes to the comparison and to both RFD sketches (their ``B`` and
        ``Delta`` stay: alpha = alpha0 + Delta / 2 follows)."""
        return {**state, "alpha0": fresh.alpha0,
                "rfd": {v: {**sketch, "alpha0": fresh.alpha0} for v, sketch in state["rfd"].items()}}
