r"""The sketched online Newton race: RFD-SON, FD-SON, RP-SON, FULL-ON and ADAGRAD on one stream.

What the dashboard's Newton page (:mod:`explorer.dashboard.pages.newton`) shows, without
Panel (docs/algorithms.md section 3; Luo et al. 2017, Algorithms 5-6; Luo et al. 2016;
Luo et al. JMLR 2019; ADAGRAD: Duchi et al. 2011, the papers' first-order baseline):

- :func:`make_learners`: the five learners of :data:`LEARNERS` on the shared settings;
- :func:`best_fixed_predictor` and :func:`hindsight`: the comparator ``w*``, the best fixed
  linear predictor in hindsight (predictions clipped to [-C, C]), and the majority class;
- :func:`planted_labels`: the page's labels ``sign(w^T x)``, ``w`` random on the raw or the
  whitened rows; :func:`faint_share`: the part of their signal outside the top directions;
- :class:`NewtonRace`: an :class:`explorer.race.Race` of those learners that also counts
  their correct signs, keeps for each sketched learner the exact matrix it sketches,
  :math:`\sum_s (\mu + \eta_s) g_s g_s^T` (while d <= :data:`ORACLE_MAX_D`), and measures
  one point of the page's curves (:meth:`NewtonRace.measure`).

>>> import numpy as np
>>> from explorer.streams import linear_classification_labels, low_rank_plus_noise
>>> X = low_rank_plus_noise(100, 8, seed=0)
>>> y, _ = linear_classification_labels(X, seed=0)
>>> race = NewtonRace(make_learners(("RFD-SON", "ADAGRAD"), 8, m=3, alpha0=0.5), X, y)
>>> race.step(100)
100
>>> point = race.measure()
>>> bool(point["regret_rfd"] == point["loss_rfd"] - point["loss_star"])
True
>>> bool(0.5 < point["accuracy_rfd"] <= 1), race.diverged
(True, {})
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import numpy as np
import scipy.linalg

from ..adagrad import AdaGrad
from ..losses import get_loss
from ..newton import SketchedOnlineNewton
from ..race import Race
from ..streams import linear_classification_labels

__all__ = ["LEARNERS", "SKETCHED", "SKETCH_OF", "KEYS", "ORACLE_MAX_D", "LABEL_SPACES", "Hindsight",
           "NewtonRace", "best_fixed_predictor", "faint_share", "hindsight", "make_learners",
           "planted_labels"]

LEARNERS = ("RFD-SON", "FD-SON", "RP-SON", "FULL-ON", "ADAGRAD")
"""The learners that race, in legend order."""
SKETCH_OF = {"RFD-SON": "rfd", "FD-SON": "fd", "RP-SON": "rp", "FULL-ON": "full"}
"""The ``sketch`` argument of each online Newton learner."""
SKETCHED = ("RFD-SON", "FD-SON", "RP-SON")
"""The learners with a sketch (whose spectrum has an exact counterpart)."""
KEYS = {"RFD-SON": "rfd", "FD-SON": "fd", "RP-SON": "rp", "FULL-ON": "full", "ADAGRAD": "adagrad"}
"""The short name of each learner in the measured columns (``regret_rfd``, ``kappa_full``...)."""
ORACLE_MAX_D = 100
"""Above this d the exact curvature (a d x d running sum per sketched learner) is not kept."""


LABEL_SPACES = ("whitened", "raw")
"""Where :func:`planted_labels` draws its random direction: the whitened rows or the raw ones."""
WHITENING_FLOOR = 1e-3
"""Eigenvalues of the rows' second moment below this fraction of the largest are raised to it
before whitening (a direction the rows never use gets a bounded weight)."""


def planted_labels(X: np.ndarray, *, flip: float = 0.05, seed: int | None = 0,
                   space: str = "whitened") -> tuple[np.ndarray, np.ndarray]:
    r"""Labels ``y = sign(w^T x)`` in {-1, +1}, each flipped with probability ``flip``, and ``w``.

    ``space="raw"``: ``w = v``, a random unit vector (:func:`explorer.streams.linear_classification_labels`
    on ``X``); most of ``w^T x`` then rides on the rows' strong directions. ``"whitened"``:
    the same draw on the whitened rows, :math:`w = S^{-1/2} v` with :math:`S = X^T X / n`
    (eigenvalues floored at :data:`WHITENING_FLOOR` times the largest), so that every
    principal direction of the rows weighs the same in the label, the faint ones too: an
    ill-conditioned problem, where a Newton step (which scales each direction by its
    curvature) learns the faint directions as fast as the strong ones and a first-order
    step does not (Luo et al. 2017, section 5: gisette, sido0). The same ``seed`` flips the
    same rows in both spaces.

    >>> from explorer.streams import low_rank_plus_noise
    >>> X = low_rank_plus_noise(500, 20, seed=0)
    >>> y, w = planted_labels(X, flip=0.0, seed=0)
    >>> bool(np.mean(y == np.where(X @ w >= 0, 1.0, -1.0)) > 0.99)
    True
    >>> raw = planted_labels(X, flip=0.0, seed=0, space="raw")[1]
    >>> bool(faint_share(X, w, 5) > 0.3 > faint_share(X, raw, 5))  # 5: the stream's rank
    True
    """
    if space not in LABEL_SPACES:
        raise ValueError(f"space must be one of {', '.join(LABEL_SPACES)}, got {space!r}")
    X = np.asarray(X, dtype=float)
    if space == "raw":
        return linear_classification_labels(X, flip=flip, seed=seed)
    whitening = _whitening(X)
    y, v = linear_classification_labels(X @ whitening, flip=flip, seed=seed)
    return y, whitening @ v


def _whitening(X: np.ndarray) -> np.ndarray:
    """``S^{-1/2}`` of the rows' second moment ``S = X^T X / n`` (floored), identity for zero rows."""
    lam, V = np.linalg.eigh(X.T @ X / max(X.shape[0], 1))
    top = float(lam.max()) if lam.size else 0.0
    if not top > 0:
        return np.eye(X.shape[1])
    return (V / np.sqrt(np.maximum(lam, WHITENING_FLOOR * top))) @ V.T


def faint_share(X: np.ndarray, w: np.ndarray, k: int) -> float:
    """The part of the label's signal ``w^T x`` (its second moment over the rows) that lies
    outside the rows' top ``k`` principal directions: near 0 when the label rides on the
    strong directions, near ``1 - k/d`` for :func:`planted_labels`' whitened labels.

    >>> X = np.diag([3.0, 2.0, 1.0])
    >>> faint_share(X, np.array([1.0, 0.0, 1.0]), 1), faint_share(X, np.array([1.0, 0.0, 0.0]), 1)
    (0.1, 0.0)
    """
    X = np.asarray(X, dtype=float)
    signal = X @ w
    total = float(signal @ signal)
    if not total > 0:
        return 0.0
    _, _, Vt = np.linalg.svd(X, full_matrices=False)
    strong = X @ (Vt[:k].T @ (Vt[:k] @ w))
    return float(np.clip(1.0 - (strong @ strong) / total, 0.0, 1.0))


def best_fixed_predictor(X: np.ndarray, y: np.ndarray, loss: str, ridge: float = 1e-6) -> np.ndarray:
    """``argmin_w sum_t l(w^T x_t, y_t) + ridge * n ||w||^2`` over the whole stream (hindsight).

    Squared loss: least squares; logistic: L-BFGS (O(nd) per iteration). The small ridge
    keeps ``w`` finite on separable or rank-deficient streams.

    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> np.round(best_fixed_predictor(X, X @ np.array([0.5, -0.5]), "squared"), 4).tolist()
    [0.5, -0.5]
    """
    n, d = X.shape
    lam = ridge * n
    if loss == "squared":
        return np.linalg.solve(X.T @ X + lam * np.eye(d), X.T @ y)
    f = get_loss(loss)

    def objective(w):
        z = X @ w
        return float(f.value(z, y).sum() + lam * w @ w), X.T @ f.derivative(z, y) + 2 * lam * w

    import scipy.optimize  # here, not at import: only the hindsight comparator needs it

    result = scipy.optimize.minimize(objective, np.zeros(d), jac=True, method="L-BFGS-B",
                                     options={"maxiter": 200})
    return result.x


class Hindsight(NamedTuple):
    """The comparators, cumulated over the rounds (entry t - 1 is after round t)."""

    loss: np.ndarray
    """The loss of ``w*`` (:func:`best_fixed_predictor`), its predictions clipped to [-C, C]."""
    correct: np.ndarray
    """The rows whose label ``w*`` gets right (the sign of its prediction)."""
    majority: np.ndarray
    """The rows whose label is the majority class so far (always guessing the leader)."""


def hindsight(X: np.ndarray, y: np.ndarray, loss: str, C: float) -> Hindsight:
    """The comparators of a race on ``(X, y)``: ``w*`` fit once on the whole stream."""
    w_star = best_fixed_predictor(X, y, loss)
    z_star = np.clip(X @ w_star, -C, C)
    return Hindsight(loss=np.cumsum(get_loss(loss).value(z_star, y)),
                     correct=np.cumsum(z_star * y > 0),
                     majority=np.maximum(np.cumsum(y > 0), np.cumsum(y < 0)))


def make_learners(names, d: int, *, m: int = 10, alpha0: float = 0.0, eta: float = 0.0,
                  C: float = 1.0, fast: bool = True, loss: str = "squared",
                  eta_schedule: str = "constant", seed: int | None = 0,
                  adagrad_eta: float = 0.1) -> dict[str, Any]:
    """The learners of ``names`` (in :data:`LEARNERS` order) on the shared settings.

    FULL-ON sits out when ``alpha0 = 0`` (``H_0 = alpha0 I`` must be invertible). ADAGRAD is
    diagonal AdaGrad (composite mirror descent) with its own step size ``adagrad_eta``; the
    shared ``eta`` is the online Newton step's curvature weight ``mu + eta``.
    """
    _check_names(names)
    learners = {}
    for name in LEARNERS:
        if name not in names or (name == "FULL-ON" and alpha0 == 0):
            continue
        if name == "ADAGRAD":
            learners[name] = AdaGrad(d, variant="diag", method="cmd", eta=adagrad_eta, loss=loss)
        else:
            learners[name] = SketchedOnlineNewton(d, sketch=SKETCH_OF[name], m=m, alpha0=alpha0, eta=eta,
                                                  C=C, fast=fast, loss=loss, eta_schedule=eta_schedule,
                                                  seed=seed)
    return learners


def _check_names(names) -> None:
    unknown = [name for name in names if name not in LEARNERS]
    if unknown:
        raise ValueError(f"learners must be among {', '.join(LEARNERS)}, got {unknown}")


class NewtonRace(Race):
    """``learners`` (name in :data:`LEARNERS` -> learner) raced on the labelled rows ``(X, y)``:
    a :class:`~explorer.race.Race` (``learners``, ``t``, ``totals``, ``stopped``, ...; a
    learner that diverges, :class:`~explorer.errors.Diverged`, leaves the race and the
    others go on) plus the measurements of this family.

    :meth:`after_round` also keeps, from each round's step record, the correct signs and the
    exact curvature of the sketched learners. ``loss`` and ``C`` are the comparator's (the
    learners'). With no learner (a page with none ticked) it only counts the rounds.
    :meth:`measure` is the race's measure: a recorded history point holds its columns.
    """

    def __init__(self, learners: Mapping[str, Any], X, y, *, loss: str = "squared", C: float = 1.0):
        _check_names(learners)
        super().__init__(learners, X, y)
        self.hindsight = hindsight(self.X, self.y, loss, C)
        d = self.X.shape[1]
        self.correct = {name: 0 for name in learners}
        self.curvatures = {name: np.zeros((d, d)) for name in learners
                           if name in SKETCHED and d <= ORACLE_MAX_D}
        self.shrinks: dict[str, tuple[int, float]] = {}
        self._fresh: set[str] = set()  # learners whose record is of their round just played

    @property
    def diverged(self) -> dict[str, int]:
        """``{name: round}`` of the learners that diverged and left the race."""
        return {name: error.t for name, error in self.stopped.items()}

    def after_round(self, x: np.ndarray, label: float) -> None:
        """Book the round just played (row ``x``, ``label``) from each learner's record:
        its correct sign, its last shrink and the exact curvature it sketches."""
        for name, record in self.records.items():
            if record.t != self.t:
                continue
            self._fresh.add(name)
            self.correct[name] += record.prediction * label > 0
            if record.shrink is not None:
                self.shrinks[name] = (record.t, float(record.shrink.delta))
                self.event_times.add(f"shrink {name}", record.t)
            curvature = self.curvatures.get(name)
            if curvature is not None and record.gradient_scale != 0.0:
                curvature += (record.curvature_weight * record.gradient_scale ** 2) * np.outer(x, x)

    def tune(self, *, eta: float, alpha0: float, eta_schedule: str, adagrad_eta: float) -> None:
        """Give every learner these hot values (through its ``with_params``): ``eta``,
        ``alpha0`` and ``eta_schedule`` for the online Newton learners, ``adagrad_eta`` for
        ADAGRAD. A learner whose values are already these is left as it is (bit for bit)."""
        for name in list(self.learners):
            self.retune(name, **({"eta": adagrad_eta} if name == "ADAGRAD"
                                 else {"eta": eta, "alpha0": alpha0, "eta_schedule": eta_schedule}))

    # -- measurements -----------------------------------------------------------------------
    def measure(self) -> dict[str, float]:
        """One point of the page's curves at the current round: per learner (``<key>`` of
        :data:`KEYS`) ``loss_``, ``regret_`` (against ``w*``), ``accuracy_``, ``kappa_``
        (condition number of its ``H``) and ``alpha_``, NaN for a learner not racing; and
        the comparators ``loss_star``, ``accuracy_star``, ``accuracy_majority``."""
        t, h = self.t, self.hindsight
        star = float(h.loss[t - 1]) if t else 0.0
        point = {"loss_star": star,
                 "accuracy_star": h.correct[t - 1] / t if t else np.nan,
                 "accuracy_majority": h.majority[t - 1] / t if t else np.nan}
        diverged = self.diverged
        for name in LEARNERS:
            key, learner = KEYS[name], self.learners.get(name)
            alive = learner is not None and name not in diverged
            total = self.totals[name] if alive else np.nan
            point[f"loss_{key}"] = total
            point[f"regret_{key}"] = total - star
            point[f"accuracy_{key}"] = self.correct[name] / t if alive and t else np.nan
            point[f"kappa_{key}"] = self._condition_number(name) if alive else np.nan
            point[f"alpha_{key}"] = learner.alpha if alive and name != "ADAGRAD" else np.nan
        return point

    def _condition_number(self, name: str) -> float:
        """``kappa(H)`` of learner ``name`` now: its record's, when the record is of the
        round just played and the learner was not replaced since (``with_params``, a load);
        else computed (before the first round, after a change)."""
        record = self.records.get(name)
        if name in self._fresh and record.t == self.t and record.condition_number is not None:
            return record.condition_number
        return self.learners[name].condition_number()

    def with_params(self, name: str, **changes) -> None:
        """:meth:`explorer.race.Race.with_params`; the learner's last record no longer
        describes its ``H``."""
        super().with_params(name, **changes)
        self._fresh.discard(name)

    def spectrum(self, name: str) -> tuple[np.ndarray, np.ndarray | None, float]:
        """The eigenvalues of sketched learner ``name``'s ``H`` along its sketch,
        ``sigma_i(B)^2 + alpha`` (descending); the exact ones, of ``alpha_0 I + sum_s (mu +
        eta_s) g_s g_s^T`` over its own gradients (None above :data:`ORACLE_MAX_D`); and
        ``alpha``, the eigenvalue of every other direction."""
        learner = self.learners[name]
        sigma = scipy.linalg.svdvals(learner.sketch.rows, check_finite=False) if learner.t else np.zeros(0)
        exact = None
        if name in self.curvatures:
            exact = scipy.linalg.eigvalsh(self.curvatures[name], check_finite=False)[::-1]
            exact = np.maximum(exact, 0.0) + learner.alpha0
        return sigma ** 2 + learner.alpha, exact, learner.alpha

    def spectrum_bars(self, preferred: str, size: int):
        """What the page's spectrum plot draws: ``(name, bars, exact, alpha)`` for learner
        ``preferred``, or the first racing one of :data:`SKETCHED` if it is not racing
        (None if none is): its first ``size`` eigenvalues along the sketch, padded with
        ``alpha`` (:meth:`spectrum`), and the first ``size`` exact ones (or None)."""
        racing = self.learners
        name = preferred if preferred in racing else next((n for n in SKETCHED if n in racing), None)
        if name is None:
            return None
        sketch, exact, alpha = self.spectrum(name)
        bars = np.full(size, alpha)
        bars[:min(size, sketch.size)] = sketch[:size]
        return name, bars, None if exact is None else exact[:size], alpha

    def last_shrink(self, name: str) -> tuple[int, float] | None:
        """``(round, delta)`` of learner ``name``'s last sketch shrink, None before the first."""
        return self.shrinks.get(name)

    def shrink_times(self, name: str) -> np.ndarray:
        """The rounds of learner ``name``'s sketch shrinks, oldest first: the latest
        :data:`~explorer.race.EVENTS_KEPT` of them (empty before the first)."""
        return self.event_times.times(f"shrink {name}")

    # -- snapshots (Back) -----------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Plain arrays: the race's state (:meth:`explorer.race.Race.state_dict`) and the counts."""
        return {**super().state_dict(), "correct": dict(self.correct), "shrinks": dict(self.shrinks),
                "curvatures": {name: matrix.copy() for name, matrix in self.curvatures.items()}}

    def load_state_dict(self, state: dict) -> None:
        """Go back to a :meth:`state_dict` of this race, with the hyper-parameters the
        learners had then (:meth:`tune` gives them today's): in place, except for a learner
        whose hot values changed since, which is rebuilt from its state."""
        for name, learner_state in state["learners"].items():
            learner = self.learners[name]
            if any(learner_state[key] != value for key, value in learner.get_params().items()
                   if key in learner.HOT):
                self.learners[name] = type(learner).from_state_dict(learner_state)
        super().load_state_dict(state)
        self._fresh.clear()
        self.correct, self.shrinks = dict(state["correct"]), dict(state["shrinks"])
        self.curvatures = {name: matrix.copy() for name, matrix in state["curvatures"].items()}
