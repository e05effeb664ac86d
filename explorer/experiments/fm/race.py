"""The FM race: S-FTRL, full FTRL and OGD in lock step on one stream (:class:`FactorizationRace`).

Luo et al. (KDD 2018; docs/algorithms.md section 6). Each learner plays a chunk of rows at a
time through its :meth:`~explorer.learner.OnlineLearner.progressive` (the timed fast path; one-hot
rows stay sparse); the race keeps what the rounds computed -- each learner's predictions and
gradient scales ``q_t`` (the :class:`~explorer.history.History` progressive returns: nothing
is recomputed), its loop time -- plus the exact sums S-FTRL's two halves sketch,
``H+^T H+ = sum_{q>0} |q| a_hat a_hat^T`` and ``H-^T H-``, while ``d + 1 <=``
:data:`~explorer.experiments.fm.lineup.ORACLE_MAX` (FD guarantees
``lambda_i - Delta <= sigma_i^2(B) <= lambda_i``). A learner that diverges
(:class:`~explorer.errors.Diverged`, or a prediction past
:data:`~explorer.experiments.fm.lineup.DIVERGED`) stops and the others go on; ``eta``
changes through ``with_params`` (:class:`~explorer.race.HotLearners`: hooks kept).

It has the interface of :class:`explorer.race.Race` (``learners``, ``t``, ``n``, ``done``,
``step``, ``stopped``, ``with_params``, ``history``/``record``, ``state_dict``/``load_state_dict``) but not its
per-row loop: ``Race`` plays ``learner.step`` on dense rows, which for one-hot rows would turn
FTRL's O(nnz^2) round into an O(d^2) one, and has no loop time to show.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import scipy.linalg
import scipy.sparse

from ...errors import Diverged
from ...fm import progressive
from ...hooks import Recorder
from ...race import Curves, EventTimes, HotLearners
from ...history import History
from .lineup import DIVERGED, LEARNERS, ORACLE_MAX
from .metrics import progressive_auc, rmse, running_mean

__all__ = ["FactorizationRace"]


class FactorizationRace(HotLearners, Curves):
    """``learners`` (:data:`LEARNERS` -> learner, all on the same loss) on the stream ``(X, y)``.

    ``X``: n x d, a dense array or one-hot CSR rows (two non-zeros each, as
    :func:`explorer.fm.one_hot` builds them); ``y``: ratings ("squared" loss, measured by
    RMSE against :func:`running_mean`) or -1/+1 labels ("logistic", by AUC against chance).
    Per learner ``name``, entry ``t - 1`` of ``predictions[name]`` and ``gradient_scales[name]``
    is round t's ``z_t`` and ``q_t`` (NaN from the round a learner stopped at on);
    ``stopped[name]`` is the :class:`~explorer.errors.Diverged` that stopped it;
    ``last_shrink`` the :class:`~explorer.hooks.ShrinkEvent` of S-FTRL's latest shrink;
    ``history`` the curves, a point (:meth:`measure`) per :meth:`~explorer.race.Curves.record`.
    """

    def __init__(self, learners: Mapping[str, Any], X, y):
        if tuple(learners) != LEARNERS:
            raise ValueError(f"learners must be {', '.join(LEARNERS)} (in this order), got {list(learners)}")
        losses = {learner.loss for learner in learners.values()}
        if len(losses) != 1:
            raise ValueError(f"the learners must share one loss, got {sorted(losses)}")
        self.learners = dict(learners)
        self.loss = losses.pop()
        self.X, self.y = X, np.asarray(y, dtype=float)
        n, d = X.shape
        self.t = 0
        self.stopped: dict[str, Diverged] = {}
        self.predictions = {name: np.full(n, np.nan) for name in LEARNERS}
        self.gradient_scales = {name: np.full(n, np.nan) for name in LEARNERS}
        # wall time of each learner's loop and the rounds it covered (replays after Back too)
        self.seconds, self.rows_timed = dict.fromkeys(LEARNERS, 0.0), dict.fromkeys(LEARNERS, 0)
        self.recorder = Recorder(kinds=("shrink",), limit=1)  # S-FTRL's last shrink (either half)
        self.add_hook("sftrl", self.recorder)
        self.event_times = EventTimes()  # the rounds of S-FTRL's shrinks, per half: "shrink +", "shrink -"
        self.add_hook("sftrl", lambda event: self.event_times.add(f"shrink {event.part}", event.t)
                      if event.kind == "shrink" else None)
        if scipy.sparse.issparse(X):  # a_hat of a one-hot row: (user, n_users + item, d), all ones
            self._hat_idx = np.column_stack([X.indices.reshape(-1, 2), np.full(n, d)])
            self._hat_norm2 = np.full(n, 3.0)
        else:
            self._hat = np.hstack([X, np.ones((n, 1))])
            self._hat_norm2 = np.einsum("ij,ij->i", self._hat, self._hat)
        self.oracle = d + 1 <= ORACLE_MAX
        self.gram = {part: np.zeros((d + 1, d + 1)) if self.oracle else None for part in "+-"}
        self.reference = running_mean(self.y) if self.ratings else None
        self.history = History()

    @property
    def ratings(self) -> bool:
        """Ratings (squared loss, RMSE) rather than binary labels (logistic loss, AUC)."""
        return self.loss == "squared"

    @property
    def n(self) -> int:
        """Rows in the stream."""
        return self.X.shape[0]

    @property
    def done(self) -> bool:
        return self.t >= self.n

    @property
    def last_shrink(self):
        """S-FTRL's latest shrink event (``part``, ``t``, ``delta``), None before the first."""
        events = self.recorder.events("shrink")
        return events[-1] if events else None

    def shrink_times(self, part: str) -> np.ndarray:
        """The rounds at which S-FTRL's half ``part`` (``"+"``: B+, ``"-"``: B-) shrank, oldest
        first: the latest :data:`~explorer.race.EVENTS_KEPT` of them (empty before the first)."""
        return self.event_times.times(f"shrink {part}")

    # -- playing ---------------------------------------------------------------------------
    def step(self, k: int = 1, *, record: bool = True) -> int:
        """Play the next ``k`` rows (fewer at the end) on every learner still racing, then
        record one history point unless told not to; returns the rows played."""
        t0 = self.t
        t1 = min(t0 + max(int(k), 0), self.n)
        rows, labels = self.X[t0:t1], self.y[t0:t1]
        for name, learner in self.learners.items():
            if t1 > t0 and name not in self.stopped:
                self._play(name, learner, rows, labels, t0)
        if self.oracle:
            self._add_to_gram(t0, t1)
        self.t = t1
        if record and t1 > t0:
            self.record()
        return t1 - t0

    def _play(self, name: str, learner, rows, labels, t0: int) -> None:
        """Rounds ``t0 + 1 ..`` of one learner through its progressive loop (timed)."""
        try:
            run = progressive(learner, rows, labels)
        except Diverged as error:  # eta too large: the learner is as before the chunk; it stops
            self._stop(name, error, t0 + error.row)
            return
        t1 = t0 + len(run)
        self.predictions[name][t0:t1] = run["prediction"]
        self.gradient_scales[name][t0:t1] = run["gradient_scale"]
        self.seconds[name] += float(run["seconds"][-1])
        self.rows_timed[name] += t1 - t0
        wild = np.flatnonzero(np.abs(run["prediction"]) > DIVERGED)
        if wild.size:  # finite, but no longer a prediction: stop here too
            row = int(wild[0])
            z = abs(run["prediction"][row])
            self._stop(name, Diverged(f"{type(learner).__name__}: |z| = {z:.3g} > {DIVERGED:g} at round "
                                      f"{t0 + row + 1}", row=row, t=t0 + row + 1), t0 + row)

    def _stop(self, name: str, error: Diverged, at: int) -> None:
        """Learner ``name`` stops at round ``at + 1``: its numbers from there on are NaN (also
        entries another timeline left there before a Back)."""
        self.stopped[name] = error
        self.predictions[name][at:] = np.nan
        self.gradient_scales[name][at:] = np.nan

    def _add_to_gram(self, t0: int, t1: int) -> None:
        """Add ``|q| a_hat a_hat^T`` of S-FTRL's rounds t0 + 1 .. t1 to the exact H+^T H+ or H-^T H-."""
        q = self.gradient_scales["sftrl"][t0:t1]
        for part, mask in (("+", q > 0), ("-", q < 0)):
            if not mask.any():
                continue
            w = np.abs(q[mask])
            if scipy.sparse.issparse(self.X):
                idx = self._hat_idx[t0:t1][mask]
                rows, cols = np.broadcast_arrays(idx[:, :, None], idx[:, None, :])
                np.add.at(self.gram[part], (rows, cols), np.broadcast_to(w[:, None, None], rows.shape))
            else:
                A = self._hat[t0:t1][mask]
                self.gram[part] += (A * w[:, None]).T @ A

    # -- hyper-parameters ------------------------------------------------------------------
    def tune(self, *, eta: float, ogd_eta: float) -> None:
        """The hot values: ``eta`` for S-FTRL and FTRL (a new eta rescales the ``Theta`` both
        play, ``-eta`` times the gradient sum), ``ogd_eta`` for OGD's steps to come. A learner
        that stopped, or whose value is already this one, is left as it is (bit for bit)."""
        for name, value in (("sftrl", eta), ("ftrl", eta), ("ogd", ogd_eta)):
            if name not in self.stopped:
                self.retune(name, eta=value)

    # -- measurements -----------------------------------------------------------------------
    def measure(self) -> dict[str, float]:
        """One point of the page's curves after round ``t``: per learner (``<name>`` of
        :data:`LEARNERS`) ``metric_`` (progressive RMSE or AUC) and ``time_`` (µs per round,
        amortized); ``reference`` (the running mean's RMSE, or chance); S-FTRL's sign
        balance ``share_plus``/``share_minus`` (rounds with q > 0 / q < 0) and
        ``mass_plus``/``mass_minus`` (their share of ``|q| ||a_hat||^2``); and its sketch's
        ``rank_plus``/``rank_minus`` (occupied rows) and ``delta_plus``/``delta_minus``."""
        t = self.t
        y = self.y[:t]
        point = {}
        for name in LEARNERS:
            z = self.predictions[name][:t]
            point[f"metric_{name}"] = rmse(z, y) if self.ratings else progressive_auc(z, y)
            point[f"time_{name}"] = (1e6 * self.seconds[name] / self.rows_timed[name]
                                     if self.rows_timed[name] and name not in self.stopped else np.nan)
        if self.ratings:
            point["reference"] = rmse(self.reference[:t], y)
        else:
            point["reference"] = 0.5 if t and 0 < np.sum(y > 0) < t else np.nan
        q = self.gradient_scales["sftrl"][:t]
        mass = np.abs(np.nan_to_num(q)) * self._hat_norm2[:t]
        total = mass.sum()
        for part, mask in (("plus", q > 0), ("minus", q < 0)):
            point[f"share_{part}"] = mask.sum() / t if t else np.nan
            point[f"mass_{part}"] = mass[mask].sum() / total if total > 0 else np.nan
        sketch = self.learners["sftrl"].sketch
        point.update(rank_plus=sketch.positive.rank, rank_minus=sketch.negative.rank,
                     delta_plus=sketch.positive.delta_total, delta_minus=sketch.negative.delta_total)
        return point

    def spectra(self, m: int) -> dict[str, dict[str, np.ndarray]]:
        """Per half ("+", "-"): the sketch's ``sigma_i^2`` (``"sketch"``), the exact eigenvalues
        of the sum it sketches (``"exact"``, empty without the oracle) and FD's lower band
        ``lambda_i - Delta`` (``"band"``), the ``"size"`` leading ones (about ``m``)."""
        sketch = self.learners["sftrl"].sketch
        out = {}
        for part, fd in (("+", sketch.positive), ("-", sketch.negative)):
            sigma2 = fd.singular_values() ** 2 if np.isfinite(fd.rows).all() else np.zeros(0)
            sigma2 = _drop_rounding(sigma2)
            size = min(fd.d, max(sigma2.size, m) + 2)
            exact = band = np.zeros(0)
            gram = self.gram[part]
            if self.oracle and np.isfinite(gram).all():
                exact = scipy.linalg.eigvalsh(gram, check_finite=False,
                                              subset_by_index=[fd.d - size, fd.d - 1])[::-1]
                exact = _drop_rounding(exact)
                band = np.maximum(exact - fd.delta_total, 0.0)
            out[part] = {"sketch": sigma2[:size], "exact": exact, "band": band, "size": size}
        return out

    # -- snapshots (Back) -----------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The learners' ``state_dict`` (a full ``Theta`` stored sparse for one-hot rows),
        ``t``, who stopped and why, S-FTRL's last shrink and the rounds of its shrinks.

        The per-round arrays (predictions, q) are not copied: the stream is deterministic,
        so their entries before any snapshot's t stay valid, and later ones are replayed.
        """
        states = {}
        for name, learner in self.learners.items():
            state = learner.state_dict()
            if "theta" in state and scipy.sparse.issparse(self.X):
                state["theta"] = scipy.sparse.csr_array(state["theta"])
            states[name] = state
        return {"t": self.t, "learners": states, "shrink": self.recorder.events("shrink"),
                "event_times": self.event_times.state_dict(),
                "stopped": {name: (str(error), error.row, error.t) for name, error in self.stopped.items()}}

    def load_state_dict(self, state: dict) -> None:
        """Go back to a :meth:`state_dict` of this race: the learners are rebuilt as they were
        then (their ``eta`` included: :meth:`tune` gives them today's), the exact sums are
        rebuilt from the rounds before ``t``."""
        learners = {}
        for name in LEARNERS:
            saved = dict(state["learners"][name])
            if scipy.sparse.issparse(saved.get("theta")):
                saved["theta"] = saved["theta"].toarray()
            learners[name] = type(self.learners[name]).from_state_dict(saved)
        self.learners = learners
        self.recorder.replace(state["shrink"])
        self.event_times.load_state_dict(state["event_times"])
        for name in self.learners:
            self.attach_hooks(name)
        self.t = int(state["t"])
        self.stopped = {name: Diverged(message, row=row, t=at)
                        for name, (message, row, at) in state["stopped"].items()}
        if self.oracle:
            self.gram = {part: np.zeros_like(gram) for part, gram in self.gram.items()}
            self._add_to_gram(0, self.t)


def _drop_rounding(values: np.ndarray) -> np.ndarray:
    """Eigenvalues below ``1e-10`` of the largest are rounding: 0 (a log axis leaves them out)."""
    values = np.asarray(values, dtype=float).copy()
    if values.size:
        values[values <= 1e-10 * max(values.max(), 0.0)] = 0.0
    return values
