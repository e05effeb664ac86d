r"""The AdaGrad race: ADA-FULL, ADA-DIAG, ADA-FD, ADA-FFD, OGD and Adam on one stream.

What the dashboard's AdaGrad page (:mod:`explorer.dashboard.pages.adagrad`) shows, without
Panel (docs/algorithms.md section 4; Wan & Zhang, *Efficient adaptive online learning via
frequent directions*, TPAMI 2022, section 5; Duchi, Hazan & Singer, JMLR 2011):

- :func:`targets`: the paper's tasks on any rows ``X``: ``y = X beta_*`` for the absolute
  loss (the comparator suffers 0, so regret is the cumulative loss), or ``sign(w_*^T x)``
  with 5% flipped for the squared hinge loss;
- :class:`AdaGradRace`: an :class:`explorer.race.Race` of the learners of
  :data:`explorer.adagrad.LEARNERS` (built by :func:`explorer.adagrad.make_learner`),
  measured against that comparator. From each round's :class:`~explorer.hooks.StepRecord` it keeps
  the rank of the two sketches row by row, the last shrink of each, and the wall time of
  each learner's round (the gap between consecutive step records); a learner that
  diverges (:class:`~explorer.errors.Diverged`) leaves the race and the others go on.

>>> from explorer.streams import decaying_spectrum
>>> race = AdaGradRace(decaying_spectrum(60, 10, seed=0), eta=0.1, tau=3)
>>> race.step(60)
60
>>> point = race.measure()
>>> bool(point["regret_full"] == race.cumulative_loss("full")), int(point["rank_ffd"]) in range(2, 6)
(True, True)
>>> race.last_shrink("ffd").rank_before, race.last_shrink("ffd").rank_after
(6, 2)
"""

from __future__ import annotations


import numpy as np

from ..adagrad import LEARNERS, VARIANTS, RankShrinkEvent, default_delta, make_learner
from ..losses import get_loss
from ..race import Race
from ..streams import binary_labels, linear_classification_labels, linear_regression_targets

__all__ = ["AdaGradRace", "FULL_MAX_D", "SKETCHED", "LOSSES", "FLIP", "targets", "given_targets",
           "shared_gradient_runs"]

FULL_MAX_D = 128
"""ADA-FULL (a d x d eigendecomposition per round, O(d^3)) races only up to this d."""
SKETCHED = ("fd", "ffd")
"""The learners whose sketch shrinks: their rank and last shrink are kept."""
LOSSES = ("absolute", "squared_hinge")
"""The paper's regression and classification losses (section 5)."""
FLIP = 0.05
"""The share of flipped labels of the classification task."""


def targets(X: np.ndarray, loss: str, seed: int | None) -> tuple[np.ndarray, np.ndarray]:
    """``(y, comparator)`` of the paper's task for ``loss`` on the rows ``X``: regression
    targets ``X beta_*`` (absolute loss) or labels ``sign(w_*^T x)`` with :data:`FLIP` of
    them flipped (squared hinge), ``beta_*`` / ``w_*`` a random unit vector from ``seed``."""
    if loss == "absolute":
        return linear_regression_targets(X, seed=seed)
    if loss == "squared_hinge":
        return linear_classification_labels(X, flip=FLIP, seed=seed)
    raise ValueError(f"loss must be one of {', '.join(map(repr, LOSSES))}, got {loss!r}")


def given_targets(X: np.ndarray, y, loss: str) -> tuple[np.ndarray, np.ndarray]:
    """``(y, comparator)`` for labels that came with the data (an upload): the targets as
    given (absolute loss) or as classes in {-1, +1} (squared hinge,
    :func:`explorer.streams.binary_labels`), and the least-squares fit on the whole stream
    as the comparator: not the best fixed predictor for either loss, so the regret against
    it may go below 0."""
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(map(repr, LOSSES))}, got {loss!r}")
    y = np.asarray(y, dtype=float)
    if y.shape != (X.shape[0],) or not np.isfinite(y).all():
        raise ValueError(f"y must hold one finite number per row ({X.shape[0]}), got shape {y.shape}")
    if loss == "squared_hinge":
        y, _ = binary_labels(y)
    return y, np.linalg.lstsq(X, y, rcond=None)[0]


def shared_gradient_runs(proximal, X, y, settings) -> tuple[dict, np.ndarray]:
    """AdaGrad with the absolute loss for several ``(method, eta, delta)`` at once, on one
    proximal matrix: ``({setting: per-round losses}, rank of H after each round)``.

    With the absolute loss ``g_t = sign(beta_t^T x_t - y_t) x_t``, so ``g_t g_t^T = x_t
    x_t^T`` whatever the learner: ``G_t``, and every proximal matrix built from the gradients'
    outer products alone, is the same for every ``eta``, ``delta`` and method. One update of
    ``proximal`` per round (its ``add(x)``, then ``compress()``, as
    :class:`~explorer.adagrad.AdaGrad` plays a round) serves all settings through
    ``proximal.solve(v, delta)``: the price of one run for all of them. ``proximal`` is a
    fresh learner's ``.proximal`` (ADA-FULL's; ADA-FFD's with ``2 tau > d``, the same
    ``G`` without a d x d eigendecomposition; ADA-LR's, RADAGRAD's, whose projection is that
    learner's seed). Each setting's ``beta`` then takes AdaGrad's CMD or PDS step. A round
    with a residual of exactly 0 (the learner skips it; not seen with continuous data) is the
    one place where the two differ.

    >>> from explorer.adagrad import AdaGrad
    >>> from explorer.streams import decaying_spectrum, linear_regression_targets
    >>> X = decaying_spectrum(30, 6, seed=0); y, _ = linear_regression_targets(X, seed=1)
    >>> losses, ranks = shared_gradient_runs(AdaGrad(6, variant="full").proximal, X, y, [("cmd", 0.1, 1.0)])
    >>> textbook = AdaGrad(6, variant="full", method="cmd", eta=0.1, delta=1.0).learn_many(X, y)
    >>> bool(np.allclose(losses["cmd", 0.1, 1.0], textbook)), int(ranks[-1])
    (True, 6)
    """
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    n, d = X.shape
    beta = {setting: np.zeros(d) for setting in settings}
    g_bar = {setting: np.zeros(d) for setting in settings}
    losses = {setting: np.empty(n) for setting in settings}
    ranks = np.empty(n, dtype=np.int64)
    for t, (x, label) in enumerate(zip(X, y)):
        proximal.add(x)  # g g^T = x x^T for every setting
        for setting in settings:
            method, eta, delta = setting
            residual = beta[setting] @ x - label
            losses[setting][t] = abs(residual)
            g = np.sign(residual) * x
            if method == "cmd":
                beta[setting] = beta[setting] - eta * proximal.solve(g, delta)
            else:
                g_bar[setting] = g_bar[setting] + g
                beta[setting] = -eta * proximal.solve(g_bar[setting], delta)
        proximal.compress()
        ranks[t] = proximal.rank
    return losses, ranks


class AdaGradRace(Race):
    """The learners of :data:`~explorer.adagrad.LEARNERS` raced on the rows ``X``: a
    :class:`~explorer.race.Race` (``learners``, ``t``, ``totals``, ``stopped``, ...) plus the
    measurements of this family.

    ``loss`` picks the task (:func:`targets`, from ``seed``; or the labels ``y`` given,
    :func:`given_targets`); ``method``, ``eta``,
    ``delta`` (None: the paper's, per variant) and ``tau`` are the learners' arguments
    (OGD and Adam take ``eta`` and ``loss`` only). ADA-FULL sits out when ``d >``
    ``full_max_d``. :meth:`measure` is the race's measure: a recorded history point holds
    its columns.
    """

    def __init__(self, X, *, loss: str = "absolute", method: str = "cmd", eta: float = 0.01,
                 delta: float | None = None, tau: int = 20, seed: int | None = 0,
                 full_max_d: int = FULL_MAX_D, y=None):
        X = np.asarray(X, dtype=float)
        n, d = X.shape
        if y is None:
            y, self.comparator = targets(X, loss, seed)
        else:
            y, self.comparator = given_targets(X, y, loss)
        comparator_losses = get_loss(loss).value(X @ self.comparator, y)
        self.comparator_cumulative = np.concatenate(([0.0], np.cumsum(comparator_losses)))
        self.names = tuple(key for key in LEARNERS if key != "full" or d <= full_max_d)
        learners = {key: make_learner(key, d, eta=eta, loss=loss, method=method, delta=delta, tau=tau)
                    for key in self.names}
        super().__init__(learners, X, y)
        self.ranks = {key: np.zeros(n, dtype=np.int64) for key in SKETCHED}
        """The rank of each sketch after every round (entry t - 1 is after round t)."""
        self.shrinks: dict[str, RankShrinkEvent | None] = {key: None for key in SKETCHED}
        for key in self.names:
            self._listen(key)

    # -- the learners -------------------------------------------------------------------
    @property
    def diverged(self) -> dict[str, int]:
        """``{key: round}`` of the learners that diverged and left the race."""
        return {key: error.t for key, error in self.stopped.items()}

    def _listen(self, key: str) -> None:
        """Book each round of learner ``key`` from its step record and shrink event."""
        def hook(event) -> None:
            if event.kind == "shrink":
                self.shrinks[key] = event
                self.event_times.add(f"shrink {key}", event.t)
                return
            if key in self.ranks:
                self.ranks[key][event.t - 1] = event.rank
        self.add_hook(key, hook)

    def tune(self, *, eta: float, delta: float | None) -> None:
        """Give the learners these hot values through their ``with_params``: ``eta`` to
        all, ``delta`` (None: the paper's per variant) to the four AdaGrad variants. A
        learner whose values are already these is left as it is (bit for bit;
        :meth:`~explorer.race.Race.retune`, its hook kept)."""
        for key in self.names:
            wanted = {"eta": eta}
            if key in VARIANTS:
                method = self.learners[key].get_params()["method"]
                wanted["delta"] = default_delta(key, method) if delta is None else delta
            self.retune(key, **wanted)

    # -- measurements -------------------------------------------------------------------
    def cumulative_loss(self, key: str) -> float:
        """The sum of the losses learner ``key`` suffered on rounds 1..t."""
        return self.totals[key]

    def measure(self) -> dict[str, float]:
        """One point of the page's curves at round t: per learner key ``regret_<key>``
        (cumulative loss minus the comparator's) and ``ms_<key>`` (milliseconds per round),
        NaN for a learner not racing or stopped; ``rank_fd``, ``rank_ffd``."""
        t, stopped = self.t, self.stopped
        point = {}
        for key in LEARNERS:
            if key in self.names and key not in stopped:
                point[f"regret_{key}"] = float(self.totals[key] - self.comparator_cumulative[t])
                point[f"ms_{key}"] = 1e3 * self.seconds[key]
            else:
                point[f"regret_{key}"] = point[f"ms_{key}"] = np.nan
        for key in SKETCHED:
            point[f"rank_{key}"] = float(self.learners[key].rank)
        return point

    def last_shrink(self, key: str = "ffd") -> RankShrinkEvent | None:
        """The last shrink of sketched learner ``key`` (its hook event), None before the first."""
        return self.shrinks[key]

    def shrink_times(self, key: str = "ffd") -> np.ndarray:
        """The rounds of sketched learner ``key``'s shrinks, oldest first: the latest
        :data:`~explorer.race.EVENTS_KEPT` of them (empty before the first)."""
        return self.event_times.times(f"shrink {key}")

    def spectra(self) -> dict[str, np.ndarray]:
        """The eigenvalues (descending) the page compares: ``"ffd"`` of ADA-FFD's ``M`` now,
        ``"ffd_before"`` of ``M`` just before its last shrink (empty before the first),
        ``"fd"`` of ADA-FD's ``S^T S`` and ``"full"`` of the exact ``G`` (empty when
        ADA-FULL sits out)."""
        shrink = self.shrinks["ffd"]
        full = self.learners.get("full")
        return {"ffd": self.learners["ffd"].proximal.eigenvalues(),
                "ffd_before": shrink.sigma ** 2 if shrink is not None else np.zeros(0),
                "fd": self.learners["fd"].proximal.eigenvalues(),
                "full": full.proximal.eigenvalues() if full is not None else np.zeros(0)}

    # -- snapshots (Back) ---------------------------------------------------------------
    def state_dict(self) -> dict:
        """Plain arrays: the race's state (:meth:`explorer.race.Race.state_dict`) and the
        last shrinks (frozen events). The ranks after each round need no copy: rounds
        replayed after a Back write the same values."""
        return {**super().state_dict(), "shrinks": dict(self.shrinks)}

    def load_state_dict(self, state: dict) -> None:
        """Go back to a :meth:`state_dict` of this race, learners in place (their hyper-
        parameters are the snapshot's: :meth:`tune` gives them today's)."""
        super().load_state_dict(state)
        self.shrinks = dict(state["shrinks"])
