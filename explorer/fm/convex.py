"""The compact convex FM's online game and its shared round: :class:`ConvexFM`.

Luo et al. (KDD 2018, sections 2.3-3.2; docs/algorithms.md section 6). At round t the
learner holds ``Theta_t``, receives ``a_t``, predicts ``z_t = a_hat_t^T Theta_t a_hat_t``
(``a_hat = [a; 1]``), suffers ``phi(z_t)`` and gets the rank-one, sign-indefinite gradient
``q_t a_hat_t a_hat_t^T`` with ``q_t = phi'(z_t)``. The learners differ only in what they keep
of those gradients: :class:`~explorer.fm.SketchedFTRL` (:mod:`.sftrl`),
:class:`~explorer.fm.FTRLFM` (:mod:`.ftrl`), :class:`~explorer.fm.OGDFM` (:mod:`.ogd`) and
:class:`~explorer.fm.OCGFM` (:mod:`.ocg`); each writes ``_z`` (the prediction) and
``_update`` (the step), and :meth:`ConvexFM._round` plays the round.

Losses (docs/algorithms.md section 6.6): ``"squared"`` is the ratings loss
``(z - b)^2 / 2``, derivative ``z - b``, half of :mod:`explorer.losses`' ``(z - y)^2``;
``"logistic"`` is ``log(1 + exp(-b z))`` for ``b`` in {-1, +1}. The authors' MATLAB code
(github.com/bmdy/SFTRL) steps ``eta = 0.01`` on ``2(z - b)``: our default 0.02 on ``z - b``.

All or nothing. Inputs are validated before anything changes (:mod:`.compact`). A round
whose numbers leave the finite range -- a prediction ``|z| > 1e150``
(:data:`MAX_PREDICTION`), an entry of ``Theta`` past 1e300 (:data:`MAX_THETA_ENTRY`), a
sketch row past Frequent Directions' mass limit, or a failed shrink -- raises
:class:`~explorer.errors.Diverged` (a ``ValueError``) naming the row, with the learner as
it was before the call; ``progressive`` undoes the rounds it had already played.

``step(x, y)`` returns the round's :class:`~explorer.hooks.StepRecord` (``prediction``
``z_t``, ``gradient_scale`` ``q_t``, S-FTRL's ``shrink``, ``rank`` and ``part_ranks``),
which hooks receive too; ``learn(x, y)`` returns its loss; ``progressive`` returns a whole
stream's records as a :class:`~explorer.history.History` with the same column names. ``eta`` is
the one hot hyper-parameter: ``with_params(eta=...)`` continues the stream
(:class:`~explorer.params.Tunable`; docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import itertools

import numpy as np
import scipy.linalg
import scipy.sparse

from .._validation import check_float, check_int
from ..errors import Diverged
from ..hooks import StepRecord
from ..learner import OnlineLearner, RoundRefused, Rounds, refused
from ..losses import check_label, get_loss
from ..params import Tunable
from ..state import StateReader
from .compact import MAX_LABEL, as_fm_row, as_fm_rows, check_labels

__all__ = ["ConvexFM", "RoundFailed", "LOSS_NAMES", "FTRL_DEFAULT_ETA", "MAX_PREDICTION",
           "MAX_THETA_ENTRY"]

_ddot = scipy.linalg.blas.ddot  # ||a_hat||^2 in a round: BLAS directly, less overhead than numpy

LOSS_NAMES = ("squared", "logistic")
"""The two losses of the paper's experiments: ratings and binary labels."""

FTRL_DEFAULT_ETA = {"squared": 0.02, "logistic": 0.25}
"""FTRL / S-FTRL step: the authors' settings (test.m: 0.01 on ``2(z-b)``; test_bc.m: 0.25)."""

MAX_PREDICTION = 1e150
"""A prediction ``|z|`` above this means the learner diverged: with labels within
:data:`~explorer.fm.compact.MAX_LABEL` the loss and its derivative stay finite below it."""

MAX_THETA_ENTRY = 1e300
"""FTRL's and OGD's ``Theta`` keep every entry within this (a round that would push one past
it diverged), so ``Theta`` is always finite. S-FTRL's sketch has Frequent Directions' own
limit on ``||B+||_F^2`` and ``||B-||_F^2`` (:data:`~explorer.sketch.MAX_SQUARED_MASS`)."""


RoundFailed = RoundRefused
"""The family's name for :class:`~explorer.learner.RoundRefused` (:mod:`explorer.fm.learners`
lists it): raised inside a round, before it stored anything; ``learn``, ``step`` and
``progressive`` turn it into :class:`~explorer.errors.Diverged` with the row's number."""


def _check_loss(loss) -> str:
    if loss not in LOSS_NAMES:
        raise ValueError(f"loss must be one of {', '.join(map(repr, LOSS_NAMES))}, got {loss!r}")
    return loss


class ConvexFM(OnlineLearner, Tunable):
    """The round every compact convex FM learner plays (Luo et al., KDD 2018, section 3):
    predict ``z_t = a_hat_t^T Theta_t a_hat_t`` (``_z``), suffer ``phi(z_t)``, and add the
    gradient ``q_t a_hat_t a_hat_t^T``, ``q_t = phi'(z_t)`` (``_update``, the learner's rule):
    :meth:`_round`.

    ``learn(x, y)``, ``step(x, y)``, ``learn_many(X, y)`` and ``progressive(X, y)`` are the
    protocol's (:class:`~explorer.learner.OnlineLearner`, all or nothing; ``X`` dense or any
    scipy.sparse matrix, never densified), ``progressive`` keeping each round's
    ``gradient_scale`` too (:attr:`ROUND_OUTPUTS`). ``x``: a dense vector of length d, an
    ``(indices, values)`` pair or a scipy.sparse row (:func:`explorer.fm.as_fm_row`);
    ``y``: a finite number (-1 or +1 for the logistic loss). A round's record:
    ``prediction`` ``z_t``, ``gradient_scale`` ``q_t`` (the gradient is
    ``q_t a_hat a_hat^T``), and for S-FTRL the ``shrink`` it caused, ``rank`` and
    ``part_ranks`` (occupied rows of ``B+`` and ``B-``). A diverging round is a
    :class:`~explorer.errors.Diverged` (lower eta)."""

    HOT = ("eta",)
    ROUND_OUTPUTS = {"gradient_scale": 3}  # q_t, after (loss, z_t, record) in _round's result
    REFUSALS = (RoundRefused, FloatingPointError)  # numpy's, under np.seterr(all="raise")
    _default_eta = FTRL_DEFAULT_ETA

    def __init__(self, d: int, *, eta: float | None, loss: str):
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        self.loss = _check_loss(loss)
        self._eta = check_float("eta", self._default_eta[self.loss] if eta is None else eta,
                                minimum=0.0, strict_minimum=True)
        self._loss = get_loss(self.loss)
        # losses.py's squared loss is (z - y)^2; the FM ratings loss is half of it.
        self._factor = 0.5 if self.loss == "squared" else 1.0
        self.t = 0

    @property
    def eta(self) -> float:
        """The step size, a finite number > 0; fixed for this object:
        ``with_params(eta=...)`` continues the stream with another one."""
        return self._eta

    # -- the protocol -------------------------------------------------------------------
    def predict(self, x) -> float:
        """``z = a_hat^T Theta a_hat`` for a dense or sparse row (the log-odds for "logistic")."""
        idx, val = self._augment(*as_fm_row(x, self.d))
        return self._prediction(idx, val, _ddot(val, val))

    # -- the protocol's parts (explorer.learner: learn, step, learn_many) ---------------
    def _check_round(self, x, y) -> tuple:
        idx, val = as_fm_row(x, self.d)
        return (*self._augment(idx, val), check_label(y, self.loss, bound=MAX_LABEL), False)

    def _check_rounds(self, X, y) -> Rounds:
        """Every row and label checked, ``a_hat`` (the bias column d appended) per row."""
        kind, X = as_fm_rows(X, self.d)
        n = X.shape[0]
        labels = check_labels(y, n, self.loss).tolist()
        if kind != "csr":
            return Rounds(zip(itertools.repeat(None), np.hstack([X, np.ones((n, 1))]), labels,
                              itertools.repeat(True)))
        X = scipy.sparse.hstack([X, scipy.sparse.csr_array(np.ones((n, 1)))], format="csr")
        indptr, indices, data = X.indptr.tolist(), X.indices.astype(np.intp), X.data
        return Rounds((indices[lo:hi], data[lo:hi], label, True)
                      for lo, hi, label in zip(indptr, indptr[1:], labels))

    def _refused(self, refusal: RoundRefused, row: int | None) -> Diverged:
        row, t = row or 0, self.t + 1
        return refused(f"{type(self).__name__}: row {row} of this call (round {t})", refusal,
                       row=row, t=t)

    def _quiet(self):
        return np.errstate(all="ignore")  # a non-finite number is refused by the round

    def _round_guard(self):
        return contextlib.nullcontext()  # one round silences numpy only where it must (_prediction)

    def _augment(self, idx, val):
        """``a_hat = [a; 1]`` as ``(indices, values)`` (``indices`` None for a dense row)."""
        n = val.shape[0]
        val_hat = np.empty(n + 1)
        val_hat[:n] = val
        val_hat[n] = 1.0
        if idx is None:
            return None, val_hat
        idx_hat = np.empty(n + 1, dtype=np.intp)
        idx_hat[:n] = idx
        idx_hat[n] = self.d
        return idx_hat, val_hat

    def _round(self, idx, val, y: float, quiet: bool, record: bool) -> tuple:
        """One round on a validated ``a_hat`` (bias entry included): ``(loss, z, step, q)``,
        ``step`` the round's :class:`StepRecord`, built only for ``record`` (:meth:`step`)
        or a listening hook (which receives it), else None. ``quiet``: numpy's warnings
        are silenced already (a ``learn_many`` call's loop).

        All or nothing: raises ``RoundRefused`` having stored nothing. ``|z| <= 1e150``
        and ``|y| <= 1e150`` keep the loss and ``q`` finite; ``_update`` checks its own
        numbers before it stores them, and the round is counted once it has.
        """
        squared_norm = _ddot(val, val)  # ||a_hat||^2: finite, at most 1e300 (checked input)
        z = self._z(idx, val) if quiet else self._prediction(idx, val, squared_norm)
        if not abs(z) <= MAX_PREDICTION:  # also NaN
            raise RoundRefused(f"the prediction z = {z:.3g} is not within +-{MAX_PREDICTION:.0e}: "
                               f"the learner diverged; lower eta (now {self.eta:g})")
        loss = self._factor * float(self._loss.value(z, y))
        q = self._factor * float(self._loss.derivative(z, y))
        shrink = self._update(idx, val, q, squared_norm)
        self.t += 1
        if not (record or self._hooks):
            return loss, z, None, q
        return loss, z, self._emit_step(self._record(z, loss, q, shrink)), q

    def _record(self, z: float, loss: float, q: float, shrink) -> StepRecord:
        """The record of the round just played (``t`` counts it already)."""
        return StepRecord(t=self.t, loss=loss, prediction=z, gradient_scale=q, shrink=shrink)

    def _prediction(self, idx, val, squared_norm: float) -> float:
        """``z = a_hat^T Theta a_hat``, without numpy's overflow warning: computed as is when
        ``_z_bound`` shows that no number on the way can overflow (every ordinary round),
        else with the warning silenced (the caller refuses a non-finite z)."""
        if self._z_bound(val, squared_norm) <= 1e300:  # far below the largest float, 1.8e308
            return self._z(idx, val)
        with np.errstate(over="ignore", invalid="ignore"):
            return self._z(idx, val)

    def _z_bound(self, val, squared_norm: float) -> float:
        """An upper bound on every number the computation of ``_z`` passes through."""
        raise NotImplementedError

    def _z(self, idx, val) -> float:
        raise NotImplementedError

    def _update(self, idx, val, q: float, squared_norm: float):
        """Add round ``t + 1``'s gradient ``q a_hat a_hat^T`` (``squared_norm`` =
        ``||a_hat||^2``) and return the sketch's :class:`~explorer.sketch.ShrinkRecord` if
        it shrank, else None; raise ``RoundRefused`` (having stored nothing) if its numbers
        would leave the finite range."""
        raise NotImplementedError

    def theta(self) -> np.ndarray:
        """The current ``Theta`` as a (d+1) x (d+1) array (O(d^2) memory: for inspection)."""
        raise NotImplementedError

    def _base_state(self) -> dict:
        return {"kind": type(self).__name__, "d": self.d, "eta": self.eta, "loss": self.loss,
                "t": self.t}

    @staticmethod
    def _read_settings(reader: StateReader) -> dict:
        """The constructor's keyword arguments eta and loss, as a state stores them, checked."""
        return {"eta": reader.number("eta", minimum=0.0, strict_minimum=True),
                "loss": reader.text("loss", LOSS_NAMES)}

    def _check_settings(self, reader: StateReader) -> None:
        """An in-place load keeps the settings: the state's must be this learner's own."""
        for key in ("d", "eta", "loss"):
            reader.same(key, getattr(self, key))
