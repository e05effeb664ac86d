r"""The online adaptive PCA race: fixed share against static online PCA, FTL and hindsight.

What the dashboard's PCA page (:mod:`explorer.dashboard.pages.pca`) shows, without Panel
(Yuan & Lamperski, *Online adaptive PCA and its extensions*, ICML 2019, Algorithm 4 and
Fig. 1; docs/algorithms.md section 5). Each round every method projects :math:`x_t` onto a
rank-k subspace and pays :math:`\|x_t - P_t x_t\|^2`:

- **adaptive PCA** (:class:`~explorer.pca.OnlineAdaptivePCA`, fixed share alpha > 0) and
  **static online PCA** (the same class with alpha = 0; Warmuth & Kuzmin 2008), measured
  by their *expected* loss :math:`(n-k)\operatorname{tr}(W_t x x^T)` (the step records'
  ``expected_loss``: what the regret bounds are about, the same for every seed of the
  sampling); adaptive PCA's sampled loss is kept beside it;
- **Follow the Leader** (:class:`~explorer.pca.FollowTheLeaderPCA`: top-k of the past);
- **the best fixed projection** in hindsight (:func:`~explorer.pca.best_fixed_projection`
  on the whole stream: it knows the future).

Pieces: :func:`expected_losses` (a :class:`~explorer.race.Race` measure), :func:`toy_stream`
(the paper's toy data), :func:`hindsight` (the comparator and each segment's best rank-k
variance), :func:`captured_share`, :func:`make_learners` and :class:`AdaptivePCARace`
(:meth:`AdaptivePCARace.measure` gives one point of the page's curves).

>>> X, segment = toy_stream(400, 20, segment_length=100, rank=2, seed=0)
>>> race = AdaptivePCARace(X, segment, 2, eta=1.0, alpha=1e-5, seed=0)
>>> race.step(400)
400
>>> point = race.measure()
>>> bool(point["loss_adaptive"] < point["loss_static"] < point["loss_ftl"])
True
>>> bool(point["overlap_adaptive"] > 0.99)   # adaptive PCA found the last segment's subspace
True
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg

from ..hooks import Recorder
from ..pca import (FollowTheLeaderPCA, OnlineAdaptivePCA, TheorySettings, best_fixed_projection,
                   pca_theory_settings)
from ..race import Race
from ..streams import changing_subspace

__all__ = ["DENSITY_LEARNERS", "Hindsight", "AdaptivePCARace", "captured_share", "expected_losses",
           "hindsight", "make_learners", "toy_stream"]

DENSITY_LEARNERS = ("adaptive", "static")
"""The learners with a density matrix :math:`W_t` (whose eigenvalues the page draws)."""
_EVENTS = ("fixed_share", "cap")


def toy_stream(rows: int, d: int, *, segment_length: int, rank: int,
               seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` rows of the paper's toy stream in dimension ``d``
    (:func:`~explorer.streams.changing_subspace`): segments of ``segment_length`` rows,
    each Gaussian in its own random rank-``min(rank, d)`` subspace. Returns ``(X, segment)``,
    ``segment[t]`` the segment of row t.

    >>> X, segment = toy_stream(250, 5, segment_length=100, rank=2, seed=0)
    >>> X.shape, np.bincount(segment).tolist()
    ((250, 5), [100, 100, 50])
    """
    X, segment = changing_subspace(n_segments=math.ceil(rows / segment_length),
                                   segment_length=segment_length, n=d, rank=min(rank, d), seed=seed)
    return X[:rows], segment[:rows]


def captured_share(basis: np.ndarray, C: np.ndarray, best: float) -> float:
    """``tr(B^T C B) / best``: the share of the best rank-k variance ``best`` of ``C`` that the
    orthonormal columns ``B`` keep (1: B spans a top-k eigenspace of C; NaN when C is 0).

    >>> C = np.diag([4.0, 1.0, 0.0])
    >>> captured_share(np.eye(3)[:, :1], C, 4.0), captured_share(np.eye(3)[:, 1:2], C, 4.0)
    (1.0, 0.25)
    """
    if best <= 0.0:
        return float("nan")
    return float(np.einsum("ij,ij->", basis, C @ basis) / best)


class Hindsight(NamedTuple):
    """What is known of a stream in hindsight, for rank-k projections."""

    basis: np.ndarray
    """The best fixed projection's k orthonormal columns (n x k), on the whole stream."""
    cumulative: np.ndarray
    """Its cumulative loss, ``cumulative[t]`` after t rounds (length T + 1, starting at 0)."""
    covariances: list[np.ndarray]
    """Each segment's :math:`C_s = \\sum x x^T`."""
    best_variance: list[float]
    """Each segment's best rank-k variance, the sum of the k largest eigenvalues of C_s."""
    boundaries: np.ndarray
    """The rows at which a new segment starts (the stream switches subspace)."""


def hindsight(X: np.ndarray, segment: np.ndarray, k: int) -> Hindsight:
    """The comparators of a race on ``X`` whose row t lies in segment ``segment[t]``."""
    basis, losses = best_fixed_projection(X, k)
    covariances, best_variance = [], []
    for s in range(int(segment[-1]) + 1):
        rows = X[segment == s]
        C = rows.T @ rows
        covariances.append(C)
        best_variance.append(float(scipy.linalg.eigvalsh(C, check_finite=False)[-k:].sum()))
    return Hindsight(basis=basis, cumulative=np.r_[0.0, np.cumsum(losses)], covariances=covariances,
                     best_variance=best_variance, boundaries=np.flatnonzero(np.diff(segment)) + 1)


def expected_losses(race: Race) -> dict[str, float]:
    """A :class:`~explorer.race.Race` ``measure``: column ``expected.<name>``, each learner's
    loss of the last round in expectation over its own sampling (its step record's
    ``expected_loss``; a deterministic learner's loss itself), NaN for a learner that did
    not play that round. ``Race(learners, X, measure=expected_losses).run()`` then holds
    every round's expected and sampled (``loss.<name>``) losses.

    >>> X, _ = toy_stream(50, 6, segment_length=25, rank=2, seed=0)
    >>> learners = make_learners(6, 2, eta=1.0, alpha=1e-3, seed=0)
    >>> history = Race(learners, X, measure=expected_losses).run()
    >>> [name for name in history.names if name.startswith("expected.")]
    ['expected.ftl', 'expected.adaptive', 'expected.static']
    >>> bool(np.all(history["expected.ftl"] == history["loss.ftl"]))
    True
    """
    point = {}
    for name in race.learners:
        record = race.records.get(name)
        if record is None or record.t != race.t:
            point[f"expected.{name}"] = np.nan
        else:
            point[f"expected.{name}"] = record.loss if record.expected_loss is None else record.expected_loss
    return point


def make_learners(d: int, k: int, *, eta: float, alpha: float, seed: int | None) -> dict[str, Any]:
    """Follow the Leader, adaptive PCA (fixed share ``alpha``) and static online PCA
    (alpha = 0), both with step size ``eta`` and sampling seed ``seed``, in playing order."""
    return {"ftl": FollowTheLeaderPCA(d, k),
            "adaptive": OnlineAdaptivePCA(d, k, eta=eta, alpha=alpha, seed=seed),
            "static": OnlineAdaptivePCA(d, k, eta=eta, alpha=0.0, seed=seed)}


class AdaptivePCARace(Race):
    """The three learners of :func:`make_learners` raced on ``X`` (row t in segment
    ``segment[t]``), rank ``k``: a :class:`~explorer.race.Race` (``learners``, ``t``,
    ``totals``, ``stopped``, ...; a learner whose eigensolver fails,
    :class:`~explorer.errors.Diverged`, leaves the race and the others go on) plus the
    measurements of this family.

    :meth:`after_round` sums the density learners' expected losses from their step records
    (``expected``); a :class:`~explorer.hooks.Recorder` on each density learner keeps its
    last ``"fixed_share"`` and ``"cap"`` event. :meth:`tune` changes eta and alpha
    mid-stream (the learners' ``with_params``): adaptive PCA gets both, static online PCA
    only eta (its alpha stays 0). :meth:`measure` is the race's measure: a recorded
    history point holds its columns.
    """

    def __init__(self, X, segment, k: int, *, eta: float, alpha: float, seed: int | None):
        X = np.asarray(X, dtype=float)
        super().__init__(make_learners(X.shape[1], k, eta=eta, alpha=alpha, seed=seed), X)
        self.segment = np.asarray(segment)
        self.k = k
        self.hindsight = hindsight(self.X, self.segment, k)
        self.expected = dict.fromkeys(DENSITY_LEARNERS, 0.0)
        self.leader: str | None = None
        """The learner with the smallest cumulative loss (None before the first round)."""
        self.recorders = {name: Recorder(kinds=_EVENTS, limit=1) for name in DENSITY_LEARNERS}
        for name in DENSITY_LEARNERS:
            self.add_hook(name, self.recorders[name])

    def after_round(self, x: np.ndarray, y) -> None:
        """Add the round just played to the density learners' expected losses, and book a
        change of leader (kind ``"leader <name>"``: from this round on ``name`` has the
        smallest cumulative loss, expected for the density learners, as plotted)."""
        for name in DENSITY_LEARNERS:
            played = self.records.get(name)
            if played is not None and played.t == self.t:
                self.expected[name] += played.expected_loss
        losses = self.cumulative_losses()
        if losses:
            best = min(losses, key=losses.get)
            if self.leader not in losses:  # the first round, or the leader stopped
                self.leader = best
            elif losses[best] < losses[self.leader]:  # strictly ahead: ties do not flicker
                self.leader = best
                self.event_times.add(f"leader {best}", self.t)

    def cumulative_losses(self) -> dict[str, float]:
        """Each running learner's cumulative loss so far: expected for the density learners
        (adaptive and static PCA), suffered for Follow the Leader."""
        return {name: self.expected.get(name, self.totals[name]) for name in self.running}

    def leader_changes(self) -> dict[str, np.ndarray]:
        """``{learner: rounds}``: the rounds from which ``learner`` took the lead in cumulative
        loss (:meth:`cumulative_losses`), the latest :data:`~explorer.race.EVENTS_KEPT` per learner."""
        return {name: self.event_times.times(f"leader {name}") for name in self.learners}

    def tune(self, *, eta: float, alpha: float) -> None:
        """Give adaptive PCA ``eta`` and ``alpha`` and static online PCA ``eta`` from the next
        round on (:meth:`~explorer.race.Race.retune`: each learner's ``with_params``, its
        recorder kept). A learner whose values are already these is left as it is (bit for bit)."""
        self.retune("adaptive", eta=eta, alpha=alpha)
        self.retune("static", eta=eta)

    # -- measurements -----------------------------------------------------------------------
    def segment_now(self) -> int:
        """The segment of the last row played (segment 0 before the first)."""
        return int(self.segment[max(self.t - 1, 0)])

    def measure(self) -> dict[str, float]:
        """One point of the page's curves at the current round.

        ``segment``; the cumulative losses ``loss_ftl``, ``loss_best`` (the best fixed
        projection's), ``loss_static`` and ``loss_adaptive`` (expected), ``loss_sampled``
        (adaptive PCA's sampled loss); ``overlap_<method>``: the :func:`captured_share` of
        the current segment's best rank-k variance that each method's subspace keeps
        (adaptive and static PCA: the k least-weighted eigenvectors of W_t); ``fs_mass``:
        the mass fixed share moved in adaptive PCA's last round, :math:`\\tfrac12\\|\\hat w
        - v\\|_1`; ``capped_<learner>``: the eigenvalues capping held at 1/(n - k) in that
        round (NaN before the first); ``w_<learner>_<i>``: the log10 eigenvalues of W_t,
        ascending.
        """
        s, h = self.segment_now(), self.hindsight
        C, best = h.covariances[s], h.best_variance[s]
        learners, totals = self.learners, self.totals
        point = {"segment": float(s), "loss_ftl": totals["ftl"],
                 "loss_best": float(h.cumulative[self.t]), "loss_static": self.expected["static"],
                 "loss_adaptive": self.expected["adaptive"], "loss_sampled": totals["adaptive"],
                 "overlap_adaptive": captured_share(learners["adaptive"].subspace(), C, best),
                 "overlap_static": captured_share(learners["static"].subspace(), C, best),
                 "overlap_ftl": captured_share(learners["ftl"].basis, C, best),
                 "overlap_best": captured_share(h.basis, C, best)}
        shared = self.recorders["adaptive"].columns("fixed_share")
        point["fs_mass"] = (float(0.5 * np.abs(shared["w_hat"][0] - shared["v"][0]).sum())
                            if shared else np.nan)
        for name in DENSITY_LEARNERS:
            capped = self.recorders[name].columns("cap")
            point[f"capped_{name}"] = float(capped["n_capped"][0]) if capped else np.nan
            log10_w = np.sort(learners[name].log_eigenvalues) / np.log(10.0)
            point.update({f"w_{name}_{i}": float(v) for i, v in enumerate(log10_w)})
        return point

    def theory_setting(self) -> TheorySettings:
        """Theorem 1's eta and alpha for this stream (L: the best fixed projection's total
        loss, at least 1e-3; :func:`~explorer.pca.pca_theory_settings`)."""
        T, d = self.X.shape
        return pca_theory_settings(T, d, self.k, max(float(self.hindsight.cumulative[-1]), 1e-3))

    # -- snapshots (Back) -----------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The race's state (:meth:`explorer.race.Race.state_dict`), the expected-loss sums,
        the leader and the last recorded events."""
        return {**super().state_dict(), "expected": dict(self.expected), "leader": self.leader,
                "events": {name: [event for kind in _EVENTS for event in self.recorders[name].events(kind)]
                           for name in DENSITY_LEARNERS}}

    def load_state_dict(self, state: dict) -> None:
        """Go back to a :meth:`state_dict` of this race, in place: the learners get the
        hyper-parameters they had then (:meth:`tune` gives them today's)."""
        super().load_state_dict(state)
        self.expected, self.leader = dict(state["expected"]), state["leader"]
        for name in DENSITY_LEARNERS:
            self.recorders[name].replace(state["events"][name])
