r"""Sketched FTRL against full FTRL and OGD on one stream: the factorization-machine experiment.

What the dashboard's FM page (:mod:`explorer.dashboard.pages.fm`) shows, without Panel
(Luo, Zhang, Zhang, Zhu, Zhang, Pei, KDD 2018; docs/algorithms.md section 6). The convex FM
``z = a_hat^T Theta a_hat`` gets the rank-one, sign-indefinite gradient ``q a_hat a_hat^T``
(``q = phi'(z)``) every round; FTRL keeps their sum in a full (d+1) x (d+1) ``Theta``,
S-FTRL in Generalized FD, ``Theta = -eta (B+^T B+ - B-^T B-)``.

- :func:`make_learners`: the three learners of :data:`LEARNERS` on one stream's settings.
- :class:`FactorizationRace`: plays them in lock step, a chunk of rows at a time through
  each learner's :meth:`~explorer.fm.SketchedFTRL.progressive` (the timed fast path; one-hot
  rows stay sparse), and keeps what the rounds computed -- each learner's predictions and
  gradient scales ``q_t`` (the :class:`~explorer.run.History` progressive returns: nothing
  is recomputed), its loop time -- plus the exact sums S-FTRL's two halves sketch,
  ``H+^T H+ = sum_{q>0} |q| a_hat a_hat^T`` and ``H-^T H-``, while ``d + 1 <=``
  :data:`ORACLE_MAX` (FD guarantees ``lambda_i - Delta <= sigma_i^2(B) <= lambda_i``). A
  learner that diverges (:class:`~explorer.errors.Diverged`, or a prediction past
  :data:`DIVERGED`) stops and the others go on; ``eta`` changes through ``with_params``.
- :func:`progressive_auc`, :func:`rmse`, :func:`running_mean`: the page's metrics (each
  label predicted before it is learnt) and the ratings' reference.
- The paper's protocol (``notebooks/sftrl_paper.ipynb``): :func:`online_run` (learn rows
  online in timed chunks: the average-loss-against-time curve of the paper's Figures 1-2),
  :func:`frozen_predictions` (the final model on held-out rows), and :func:`tune`, which
  picks a hyperparameter on a grid by :func:`grid_walk` on a validation split, the same
  way for every learner.
- :func:`task_stream`: the stream of one of the page's :data:`TASKS` (through
  :func:`synthetic_stream`, :func:`movielens_stream`, :func:`binary_stream`: one-hot ratings
  rows, or unit-norm rows with -1/+1 labels), with notes and the settings it reads.
- :meth:`FactorizationRace.notes` and :meth:`FactorizationRace.summary`: what the page
  says in words (m too large to sketch, no exact spectra, who diverged; the latest point).

It has the interface of :class:`explorer.race.Race` (``learners``, ``t``, ``n``, ``done``,
``step``, ``stopped``, ``with_params``, ``state_dict``/``load_state_dict``) but not its
per-row loop: ``Race`` plays ``learner.step`` on dense rows, which for one-hot rows would turn
FTRL's O(nnz^2) round into an O(d^2) one, and has no loop time to show.

>>> from explorer.fm import synthetic_ratings
>>> data = synthetic_ratings(2000, n_users=40, n_items=80, seed=0)
>>> race = FactorizationRace(make_learners(data.X.shape[1], m=4), data.X, data.y)
>>> race.step(2000), race.stopped
(2000, {})
>>> point = race.measure()   # progressive RMSE of each learner, and of the running mean
>>> [round(point[key], 2) for key in ("metric_sftrl", "metric_ftrl", "metric_ogd", "reference")]
[1.14, 1.09, 1.07, 1.15]
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import functools

import numpy as np
import scipy.linalg
import scipy.sparse

from ..errors import Diverged
from ..fm import (FTRLFM, OGDFM, Ratings, SketchedFTRL, movielens_100k, one_hot, progressive,
                  synthetic_ratings)
from ..hooks import Recorder
from ..streams import linear_classification_labels

__all__ = ["LEARNERS", "LEARNER_NAMES", "ORACLE_MAX", "DIVERGED", "SYNTHETIC", "MOVIELENS", "BINARY",
           "TASKS", "FactorizationRace", "make_learners", "progressive_auc", "rmse", "running_mean",
           "task_stream", "synthetic_stream", "movielens_stream", "binary_stream", "movielens_by_time",
           "online_run", "frozen_predictions", "grid_walk", "tune", "validation_error"]

LEARNERS = ("sftrl", "ftrl", "ogd")
"""The learners that race: S-FTRL (the sketch), full-matrix FTRL and OGD, in legend order."""
LEARNER_NAMES = {"sftrl": "S-FTRL (sketch)", "ftrl": "FTRL (full Θ)", "ogd": "OGD (full Θ)"}
"""Each learner's name in legends and notes."""
SYNTHETIC, MOVIELENS, BINARY = "ratings: synthetic", "ratings: MovieLens-100K", "binary: shared stream"
TASKS = (SYNTHETIC, MOVIELENS, BINARY)
"""The tasks of :func:`task_stream`: seeded synthetic ratings, MovieLens-100K's, or binary labels."""
ORACLE_MAX = 300
"""The exact sums H+^T H+ and H-^T H- are kept (O(d^2) per round, O(d^3) per spectrum) up to this d + 1."""
DIVERGED = 1e6
"""A prediction |z| above this counts as diverged (ratings are 1..5; unit-norm rows keep logits small)."""


def make_learners(d: int, *, m: int = 10, eta: float | None = None, ogd_eta: float | None = None,
                  loss: str = "squared", fast: bool = True) -> dict[str, Any]:
    """S-FTRL (sketch size ``m``, Algorithm 5 if ``fast`` else 4) and full FTRL with step
    ``eta``, OGD with its own ``eta / sqrt(t)`` step ``ogd_eta`` (None: each one's default)."""
    return {"sftrl": SketchedFTRL(d, m=m, eta=eta, loss=loss, fast=fast),
            "ftrl": FTRLFM(d, eta=eta, loss=loss),
            "ogd": OGDFM(d, eta=ogd_eta, loss=loss)}


class FactorizationRace:
    """``learners`` (:data:`LEARNERS` -> learner, all on the same loss) on the stream ``(X, y)``.

    ``X``: n x d, a dense array or one-hot CSR rows (two non-zeros each, as
    :func:`explorer.fm.one_hot` builds them); ``y``: ratings ("squared" loss, measured by
    RMSE against :func:`running_mean`) or -1/+1 labels ("logistic", by AUC against chance).
    Per learner ``name``, entry ``t - 1`` of ``predictions[name]`` and ``gradient_scales[name]``
    is round t's ``z_t`` and ``q_t`` (NaN from the round a learner stopped at on);
    ``stopped[name]`` is the :class:`~explorer.errors.Diverged` that stopped it;
    ``last_shrink`` the :class:`~explorer.hooks.ShrinkEvent` of S-FTRL's latest shrink.
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
        self.learners["sftrl"].add_hook(self.recorder)
        if scipy.sparse.issparse(X):  # a_hat of a one-hot row: (user, n_users + item, d), all ones
            self._hat_idx = np.column_stack([X.indices.reshape(-1, 2), np.full(n, d)])
            self._hat_norm2 = np.full(n, 3.0)
        else:
            self._hat = np.hstack([X, np.ones((n, 1))])
            self._hat_norm2 = np.einsum("ij,ij->i", self._hat, self._hat)
        self.oracle = d + 1 <= ORACLE_MAX
        self.gram = {part: np.zeros((d + 1, d + 1)) if self.oracle else None for part in "+-"}
        self.reference = running_mean(self.y) if self.ratings else None

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

    # -- playing ---------------------------------------------------------------------------
    def step(self, k: int = 1) -> int:
        """Play the next ``k`` rows (fewer at the end) on every learner still racing; returns
        the rows played."""
        t0 = self.t
        t1 = min(t0 + max(int(k), 0), self.n)
        rows, labels = self.X[t0:t1], self.y[t0:t1]
        for name, learner in self.learners.items():
            if t1 > t0 and name not in self.stopped:
                self._play(name, learner, rows, labels, t0)
        if self.oracle:
            self._add_to_gram(t0, t1)
        self.t = t1
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
    def with_params(self, name: str, **changes: Any) -> None:
        """Continue learner ``name`` with ``changes`` (its own ``with_params``: validated, all
        or nothing); the race keeps its place in the stream and its hooks."""
        if name not in self.learners:
            raise ValueError(f"no learner {name!r} in this race; learners are {', '.join(self.learners)}")
        self.learners[name] = self.learners[name].with_params(**changes)
        if name == "sftrl":
            self.learners[name].add_hook(self.recorder)

    def tune(self, *, eta: float, ogd_eta: float) -> None:
        """The hot values: ``eta`` for S-FTRL and FTRL (a new eta rescales the ``Theta`` both
        play, ``-eta`` times the gradient sum), ``ogd_eta`` for OGD's steps to come. A learner
        that stopped, or whose value is already this one, is left as it is (bit for bit)."""
        for name, value in (("sftrl", eta), ("ftrl", eta), ("ogd", ogd_eta)):
            if name not in self.stopped and self.learners[name].eta != value:
                self.with_params(name, eta=value)

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

    # -- in words -------------------------------------------------------------------------------
    def notes(self, *, eta: float, ogd_eta: float) -> list[str]:
        """What the curves need said: S-FTRL's ``m >= d + 2`` makes it FTRL, no exact spectra
        past :data:`ORACLE_MAX`, and who diverged (with the page's ``eta`` / ``ogd_eta``)."""
        d, m = self.X.shape[1], self.learners["sftrl"].m
        notes = []
        if m >= d + 2:
            notes.append(f"m = {m} ≥ d + 2 = {d + 2}: each half of the sketch has room for every "
                         "direction, nothing is shrunk and S-FTRL equals FTRL (their curves "
                         "coincide). Choose a smaller m to see the sketch at work.")
        if not self.oracle:
            notes.append(f"d + 1 = {d + 1} > {ORACLE_MAX}: the exact spectra (grey) are not "
                         "computed; the bars are S-FTRL's own.")
        for key, error in self.stopped.items():
            value = ogd_eta if key == "ogd" else eta
            notes.append(f"{LEARNER_NAMES[key]} diverged at round {error.t} with "
                         f"{'η₀' if key == 'ogd' else 'η'} = {value:g} (|z| > {DIVERGED:g}) and "
                         "stopped: choose a smaller one and press Reset.")
        return notes

    def summary(self, point: Mapping[str, float]) -> str:
        """The latest :meth:`measure` ``point`` as one line of Markdown (metrics, sign balance,
        the sketch's ranks, last shrink and total shrink, time per round, memory)."""
        p, sftrl = point, self.learners["sftrl"]
        values = " · ".join(f"{label} {_number(p[f'metric_{key}'])}" for key, label in
                            (("sftrl", "S-FTRL"), ("ftrl", "FTRL"), ("ogd", "OGD")))
        times = ", ".join(f"{p[f'time_{key}']:.0f}" if np.isfinite(p[f"time_{key}"]) else "–"
                          for key in LEARNERS)
        share = (f"q > 0 on {p['share_plus']:.0%} of rounds" if np.isfinite(p["share_plus"])
                 else "no gradient yet")
        shrink = self.last_shrink
        last = (f"last shrink: B{'₊' if shrink.part == '+' else '₋'} at t = {shrink.t}, "
                f"δ = {shrink.delta:.3g}" if shrink is not None else "no shrink yet")
        memory = 2 * sftrl.sketch.positive.capacity * (sftrl.d + 1)
        return (f"**Latest:** t = {self.t} · {'RMSE' if self.ratings else 'AUC'} {values} · {share} · "
                f"rank B₊ {int(p['rank_plus'])}, B₋ {int(p['rank_minus'])} (m = {sftrl.m}) · {last}, "
                f"Δ₊ + Δ₋ = {p['delta_plus'] + p['delta_minus']:.3g} · µs/round (S-FTRL, FTRL, OGD) "
                f"{times} · memory {memory:,} floats for the sketch, {(sftrl.d + 1) ** 2:,} for a full Θ")

    # -- snapshots (Back) -----------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The learners' ``state_dict`` (a full ``Theta`` stored sparse for one-hot rows),
        ``t``, who stopped and why, and S-FTRL's last shrink.

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
        self.learners["sftrl"].add_hook(self.recorder)
        self.t = int(state["t"])
        self.stopped = {name: Diverged(message, row=row, t=at)
                        for name, (message, row, at) in state["stopped"].items()}
        if self.oracle:
            self.gram = {part: np.zeros_like(gram) for part, gram in self.gram.items()}
            self._add_to_gram(0, self.t)


# -- the streams ------------------------------------------------------------------------------

def task_stream(task: str, n: int, *, seed: int, n_users: int, n_items: int,
                shared: Callable[[], tuple] | None = None,
                movielens: Callable[[], Ratings] | None = None):
    """``(X, y, notes, reads)`` of one of :data:`TASKS`, ``reads`` the stream settings it
    depends on: :func:`synthetic_stream` (``n``, ``seed``), :func:`movielens_stream` of
    ``movielens()`` (default :func:`movielens_by_time`; ``n`` only; when it is not available,
    the synthetic ratings with a note why), or :func:`binary_stream` of ``shared()``'s
    ``(X, notes)`` (the shared stream: ``dataset``, ``n``, ``d``, ``seed``)."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(map(repr, TASKS))}, got {task!r}")
    if task == BINARY:
        if shared is None:
            raise ValueError("the binary task needs shared, a callable returning the shared stream (X, notes)")
        X, notes = shared()
        A, y, note = binary_stream(X, seed=seed)
        return A, y, [*notes, note], ("dataset", "n", "d", "seed")
    notes = []
    if task == MOVIELENS:
        try:
            X, y, note = movielens_stream((movielens or movielens_by_time)(), n)
            return X, y, [note], ("n",)
        except (ModuleNotFoundError, FileNotFoundError) as error:
            notes.append(f"MovieLens-100K is not available ({error}); streaming the synthetic "
                         "ratings instead.")
    X, y, more = synthetic_stream(n, n_users=n_users, n_items=n_items, seed=seed)
    return X, y, [*notes, *more], ("n", "seed")


@functools.cache
def movielens_by_time() -> Ratings:
    """MovieLens-100K in time order (:func:`explorer.fm.movielens_100k`), loaded once per process."""
    return movielens_100k(order="time")


def synthetic_stream(n: int, *, n_users: int, n_items: int, seed: int):
    """``(X, y, notes)``: ``n`` seeded MovieLens-shaped ratings as one-hot rows
    ``[e_user; e_item]`` (:func:`explorer.fm.synthetic_ratings`), at most one per (user, item)
    pair (``n`` is capped at ``n_users * n_items``, and a note says so)."""
    notes = []
    pairs = n_users * n_items
    if n > pairs:
        notes.append(f"{n_users} users × {n_items} items give only {pairs} "
                     f"(user, item) pairs, each rated once: streaming {pairs} rows (n = {n} asked).")
        n = pairs
    data = synthetic_ratings(n, n_users=n_users, n_items=n_items, seed=seed)
    notes.append(f"Ratings task: this page streams its own seeded MovieLens-shaped ratings "
                 f"(synthetic_ratings, seed {seed}): one-hot rows [e_user; e_item], "
                 f"d = {n_users} + {n_items} = {data.X.shape[1]}. The shared "
                 "data set and d apply to the binary task only.")
    return data.X, data.y, notes


def movielens_stream(data: Ratings, n: int):
    """``(X, y, note)``: the first ``n`` ratings of ``data`` as one-hot rows over only the
    users and items they mention (renumbered in order of id). Columns never seen leave
    ``Theta`` unchanged, so the predictions are those of the model on all columns."""
    users = np.unique(data.users[:n], return_inverse=True)[1]
    items = np.unique(data.items[:n], return_inverse=True)[1]
    n_users, n_items = int(users.max()) + 1, int(items.max()) + 1
    X = one_hot(users, items, n_users, n_items)
    return X, data.y[:n].copy(), (
        f"MovieLens-100K: its first n = {n} ratings in time order, as one-hot rows over "
        f"the {n_users} users and {n_items} items they mention (d = {n_users + n_items}). "
        "Columns never seen leave Θ unchanged, so the predictions are those of the full "
        "d = 2625 model. The seed does not apply.")


def binary_stream(X: np.ndarray, *, seed: int):
    """``(A, y, note)``: the rows of ``X`` scaled to unit norm (the FM's ``z`` is quadratic in
    the row) and the labels :func:`~explorer.streams.linear_classification_labels` of ``X``."""
    y, _ = linear_classification_labels(X, seed=seed)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    A = X / np.where(norms > 0, norms, 1.0)
    return A, y, (f"Binary task on the shared stream (d = {X.shape[1]}): labels "
                  f"y = sign(w*ᵀx), 5% flipped (linear_classification_labels, seed {seed}); "
                  "each row is scaled to unit norm, since the FM's z is quadratic in the row.")


# -- metrics -----------------------------------------------------------------------------------

def progressive_auc(z: np.ndarray, y: np.ndarray) -> float:
    """Area under the ROC curve of scores ``z`` for labels ``y`` in {-1, +1} (ties count half).

    NaN while one class is missing or a score is not finite (a diverged learner).

    >>> progressive_auc(np.array([0.1, 0.9, 0.4, 0.8]), np.array([-1.0, 1.0, -1.0, 1.0]))
    1.0
    """
    z, y = np.asarray(z, dtype=float), np.asarray(y, dtype=float)
    positive = y > 0
    n_pos = int(positive.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0 or not np.isfinite(z).all():
        return np.nan
    import scipy.stats  # here, not at import: 0.4 s that no dashboard page needs

    ranks = scipy.stats.rankdata(z)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def rmse(z: np.ndarray, y: np.ndarray) -> float:
    """``sqrt(mean((z - y)^2))``; NaN when there is nothing yet or a prediction is not finite.

    >>> rmse(np.array([3.0, 5.0]), np.array([4.0, 4.0]))
    1.0
    """
    if z.size == 0 or not np.isfinite(z).all():
        return np.nan
    return float(np.sqrt(np.mean((z - y) ** 2)))


def running_mean(y: np.ndarray) -> np.ndarray:
    """The reference predictor of ratings: before round t, the mean of the ratings seen so
    far (0 at first).

    >>> running_mean(np.array([4.0, 2.0, 3.0])).tolist()
    [0.0, 4.0, 3.0]
    """
    seen = np.arange(y.size)
    reference = np.r_[0.0, np.cumsum(y)[:-1]] / np.maximum(seen, 1)
    reference[0] = 0.0
    return reference


def _number(value: float) -> str:
    return f"{value:.4g}" if np.isfinite(value) else "–"


def _drop_rounding(values: np.ndarray) -> np.ndarray:
    """Eigenvalues below ``1e-10`` of the largest are rounding: 0 (a log axis leaves them out)."""
    values = np.asarray(values, dtype=float).copy()
    if values.size:
        values[values <= 1e-10 * max(values.max(), 0.0)] = 0.0
    return values


# -- the paper's protocol: train online, validate or test frozen, tune on a grid ---------------

def frozen_predictions(learner, X) -> np.ndarray:
    """The predictions of ``learner`` as it is now (no update) for every row of ``X``
    (dense rows, or CSR rows passed as ``(indices, values)``: never densified)."""
    if scipy.sparse.issparse(X):
        X = scipy.sparse.csr_array(X)
        return np.array([learner.predict((X.indices[lo:hi], X.data[lo:hi]))
                         for lo, hi in zip(X.indptr[:-1], X.indptr[1:])])
    return np.array([learner.predict(x) for x in X])


def online_run(learner, X, y, *, chunks: int = 1, before: Mapping | None = None) -> dict:
    """Learn the rows ``(X, y)`` online (each predicted before its update) in ``chunks``
    timed calls of :func:`explorer.fm.progressive`; ``before``: a run of the rounds just
    before these, which this one continues (its predictions, losses, time and curve come
    first). Returns ``predictions``, ``losses`` (the learner's own), ``seconds`` (of the
    learning loops only) and ``curve``, rows ``(seconds so far, average loss so far)`` after
    each chunk: the paper's "average loss against running time" (its Figures 1-2).

    >>> from explorer.fm import FTRLFM, synthetic_ratings
    >>> data = synthetic_ratings(300, n_users=20, n_items=20, seed=0)
    >>> run = online_run(FTRLFM(40), data.X, data.y, chunks=3)
    >>> run["predictions"].shape, run["curve"].shape, bool(run["curve"][-1, 1] == run["losses"].mean())
    ((300,), (3, 2), True)
    """
    chunks = int(chunks)
    if not 1 <= chunks <= max(1, len(y)):
        raise ValueError(f"chunks must lie in [1, {max(1, len(y))}], got {chunks}")
    predictions = [before["predictions"]] if before else []
    losses = [before["losses"]] if before else []
    seconds = before["seconds"] if before else 0.0
    curve = list(before["curve"]) if before else []
    edges = np.linspace(0, len(y), chunks + 1).astype(int)
    for lo, hi in zip(edges[:-1], edges[1:]):
        run = progressive(learner, X[lo:hi], y[lo:hi])
        predictions.append(run["prediction"])
        losses.append(run["loss"])
        seconds += float(run["seconds"][-1]) if hi > lo else 0.0
        curve.append((seconds, float(np.concatenate(losses).mean())))
    return {"predictions": np.concatenate(predictions), "losses": np.concatenate(losses),
            "seconds": seconds, "curve": np.array(curve)}


def validation_error(z: np.ndarray, y: np.ndarray) -> float:
    """What :func:`tune` minimizes: the RMSE for ratings, ``1 - AUC`` for labels in
    {-1, +1}; ``inf`` for a prediction that is not finite.

    >>> validation_error(np.array([3.0, 5.0]), np.array([4.0, 4.0]))
    1.0
    >>> validation_error(np.array([0.2, -0.1, 0.5]), np.array([1.0, -1.0, 1.0]))
    0.0
    """
    binary = bool(np.isin(y, (-1.0, 1.0)).all()) and 0 < np.sum(y > 0) < len(y)
    value = (1.0 - progressive_auc(z, y)) if binary else rmse(z, y)
    return value if np.isfinite(value) else np.inf


def grid_walk(score: Callable[[float], float], grid, start) -> dict:
    """Tune one value on a ``grid`` without trying all of it: from ``start`` (on the grid),
    score both neighbours and step toward the lower ``score(value)`` (lower is better,
    ``inf`` for a failed run) until both neighbours of the best are worse or off the grid.
    Assumes one minimum along the grid. Returns ``{value: score}`` of every value tried,
    in grid order; ``score`` is called once per value.

    >>> tried = grid_walk(lambda v: (v - 5) ** 2, [1, 2, 5, 10, 20], start=20)
    >>> tried, min(tried, key=tried.get)
    ({2: 9, 5: 0, 10: 25, 20: 225}, 5)
    """
    grid = list(grid)
    if start not in grid:
        raise ValueError(f"start must be on the grid {grid}, got {start!r}")
    tried: dict = {}

    def at(j: int) -> float:
        if not 0 <= j < len(grid):
            return np.inf
        if grid[j] not in tried:
            tried[grid[j]] = score(grid[j])
        return tried[grid[j]]

    i = grid.index(start)
    while True:
        here, left, right = at(i), at(i - 1), at(i + 1)
        if here <= min(left, right):
            break
        i = i - 1 if left < right else i + 1
    return {value: tried[value] for value in grid if value in tried}


def tune(make: Callable[[float], Any], grid, start, X, y, *, n_fit: int, n_valid: int,
         chunks: int = 1) -> dict:
    """The same tuning for every learner: for a value on ``grid`` (walked by
    :func:`grid_walk` from ``start``), learn rows ``[0, n_fit)`` online with ``make(value)``
    (:func:`online_run`, ``chunks`` timed calls) and score the frozen model on rows
    ``[n_fit, n_fit + n_valid)`` by :func:`validation_error`; a run that diverges scores
    ``inf``. Returns ``tried`` (``{value: validation error}``), ``value`` (the best) and
    ``run``, the best value's :func:`online_run` with its ``learner``, which can go on
    learning the validation rows (:func:`online_run` with ``before``).
    """
    runs: dict = {}

    def score(value) -> float:
        learner = make(value)
        try:
            run = online_run(learner, X[:n_fit], y[:n_fit], chunks=chunks)
            error = validation_error(frozen_predictions(learner, X[n_fit:n_fit + n_valid]),
                                     y[n_fit:n_fit + n_valid])
        except Diverged:
            return np.inf
        best = min((r["error"] for r in runs.values()), default=np.inf)
        if error < best or not runs:  # keep only the best run (its learner is large)
            runs.clear()
            runs[value] = {**run, "learner": learner, "error": error}
        return error

    tried = grid_walk(score, grid, start)
    value = min(tried, key=tried.get)
    if value not in runs:  # every run diverged
        raise Diverged(f"every value tried diverged: {list(tried)}", row=0, t=0)
    return {"tried": tried, "value": value, "run": runs[value]}
