"""Saving, loading and continuing a sketched online Newton learner (docs/architecture.md).

:class:`NewtonState` is the mixin of :class:`~explorer.newton.SketchedOnlineNewton` that holds
``get_params``, ``state_dict``, ``from_state_dict``, ``load_state_dict`` (everything checked
before anything is stored) and how ``with_params`` continues a state with another ``eta``,
``eta_schedule`` or ``alpha0``. A state stores the sketch kind under ``sketch`` and the class
under ``kind``: a paper name (:class:`~explorer.newton.RFDSON`, ...) loads as itself.
"""

from __future__ import annotations

import numpy as np

from ..sketch import MAX_SQUARED_MASS
from ..state import StateReader, all_or_nothing, state_part
from .._validation import SCALES
from .curvature import SKETCHES
from .defaults import AUTO, ETA_SCHEDULES, SUPPORTED_LOSSES, auto_names

__all__ = ["NewtonState"]


class NewtonState:
    """Mixin: the persistence and ``with_params`` continuation of
    :class:`~explorer.newton.SketchedOnlineNewton`."""

    def get_params(self) -> dict:
        """The constructor's arguments; ``sketch`` is the kind (``sketch_kind``), since the
        attribute ``sketch`` is the sketch object, and ``mu`` the value in use (the default
        for the loss and C if none was given). Settings given as ``"auto"`` stay ``"auto"``
        (``mu`` None with an auto ``C``): a twin resolves them from its own data."""
        params = super().get_params()
        if "sketch" in params:  # not for a paper name (RFDSON, ...): its sketch is fixed
            params["sketch"] = self.sketch_kind
        return {**params, **{name: None if name == "mu" else AUTO for name in self._auto}}

    def _continue_state(self, state: dict, fresh: "NewtonState", changes: dict) -> dict:
        """This learner's state continued by ``fresh`` (:meth:`with_params`): eta and the
        eta schedule only weigh the rows to come, so they are stored as they are; a new
        ``alpha0`` changes ``H`` itself.

        Sketches only read alpha0 (RFD-SON: ``alpha = alpha0 + Delta / 2``), so ``B`` is
        kept and the Cholesky factor of ``alpha I + K`` recomputed. FULL-ON stores
        ``H^{-1}``: it becomes ``(H + (alpha0' - alpha0) I)^{-1}`` (one d x d
        eigendecomposition). An unchanged alpha0 leaves the state bit-identical.

        >>> from explorer.newton import SketchedOnlineNewton
        >>> full, fresh = (SketchedOnlineNewton(3, sketch="full", alpha0=a) for a in (1.0, 2.0))
        >>> _ = full.learn([1.0, 2.0, 0.0], 1.0), fresh.learn([1.0, 2.0, 0.0], 1.0)  # same g at u = 0
        >>> moved = full.with_params(alpha0=2.0)
        >>> bool(np.allclose(moved.solve([1.0, 1.0, 1.0]), fresh.solve([1.0, 1.0, 1.0]))), moved.alpha
        (True, 2.0)
        """
        if AUTO in changes.values():
            raise ValueError("with_params takes numbers; 'auto' is resolved once, at the first "
                             "round with a non-zero gradient (build a new learner for that)")
        state = super()._continue_state(state, fresh, changes)
        fresh_state = fresh.state_dict()
        state["auto"] = fresh_state["auto"]  # a setting given a number is no longer auto
        state["pending"] = ",".join(name for name in self._pending if name in fresh.pending_defaults)
        if not fresh_state["auto"]:  # no auto setting: nothing left to re-resolve
            state["anchor"] = np.zeros(2)
        if "curvature.sketch.normalize" in fresh_state:  # Oja's step: scale-free with an auto alpha0 only
            state["curvature.sketch.normalize"] = fresh_state["curvature.sketch.normalize"]
        alpha0 = fresh.alpha0
        if "alpha0" not in changes or alpha0 == self.alpha0:
            return state
        if self.sketch_kind == "full":
            values, vectors = np.linalg.eigh(state["curvature.inverse"])
            shifted = (vectors / (1.0 / values + (alpha0 - self.alpha0))) @ vectors.T
            state["curvature.inverse"] = (shifted + shifted.T) / 2
        else:
            del state["curvature.factor"], state["curvature.factored"]  # refactored for the new alpha
            if self.sketch_kind == "rfd":
                state["curvature.sketch.alpha0"] = alpha0
        return state

    def _settings(self) -> dict:
        """The settings as a state dict stores them: the values in use (for an ``"auto"``
        one: resolved, or its placeholder while pending), seed None as -1; ``sketch`` the
        kind, also for a paper name."""
        params = self.get_params()
        return {"d": params["d"], "sketch": self.sketch_kind, **params, "alpha0": self.alpha0,
                "eta": self.eta, "C": self.C, "mu": self.mu, "seed": -1 if self.seed is None else self.seed}

    def state_dict(self) -> dict:
        """Plain values; ``auto`` and ``pending`` name the settings given as ``"auto"`` and
        those not yet resolved (comma-separated), the settings hold the values in use."""
        return {"kind": type(self).__name__, **self._settings(), "auto": ",".join(self._auto),
                "pending": ",".join(self._pending), "anchor": np.array(self._anchor or (0.0, 0.0)),
                "u": self.u.copy(), "t": self.t,
                **{f"curvature.{k}": v for k, v in self._curvature.state_dict().items()}}

    @classmethod
    def from_state_dict(cls, state: dict) -> "NewtonState":
        reader = StateReader(state, cls)
        seed = reader.seed()
        seed = -1 if seed is None else seed  # older states: none
        auto = auto_names(reader, "auto")

        def given(name: str, **bounds):
            return AUTO if name in auto else reader.number(name, **bounds)

        d = reader.count("d", minimum=1)
        params = dict(sketch=reader.text("sketch", SKETCHES),
                      m=reader.count("m", minimum=2), alpha0=given("alpha0", minimum=0.0),
                      eta=given("eta", minimum=0.0),
                      mu=None if "mu" in auto else reader.number("mu", minimum=0.0),
                      C=given("C", minimum=0.0, strict_minimum=True), fast=reader.flag("fast"),
                      loss=reader.text("loss", SUPPORTED_LOSSES),
                      eta_schedule=reader.text("eta_schedule", ETA_SCHEDULES),
                      seed=None if seed < 0 else seed)
        if "sketch" not in cls.param_names():  # a paper name: load_state_dict checks the sketch
            del params["sketch"]
        learner = cls(d, **params)
        learner.load_state_dict(state)
        return learner

    def _check_in_use(self, reader: StateReader) -> tuple[dict, tuple[str, ...]]:
        """The ``"auto"`` settings a state holds, checked: ``({name: value}, pending)``.
        Pending ones hold their placeholders; resolved ones are what :meth:`_resolve` can
        give (finite, positive; alpha0 at most the sketch's mass limit)."""
        if auto_names(reader, "auto") != self._auto:
            raise reader.refuse("auto", repr(",".join(self._auto)), reader.raw("auto"))
        pending = auto_names(reader, "pending")
        if pending not in ((), self._pending_at_start):
            raise reader.refuse("pending", f"'' or {','.join(self._pending_at_start)!r}",
                                reader.raw("pending"))
        values = {}
        for name in self._auto:
            value = reader.number(name, minimum=0.0)
            if name not in self._pending_at_start:  # resolved when built (logistic: Y = 1)
                reader.same(name, getattr(self, name))
            elif name in pending:
                if value != self._placeholder(name):
                    raise reader.refuse(name, f"the placeholder {self._placeholder(name)} while "
                                        "pending", value)
            elif not (0.0 < value <= (MAX_SQUARED_MASS if name == "alpha0" else SCALES[1])):
                raise reader.refuse(name, "a resolved auto value: positive and finite", value)
            values[name] = value
        return values, pending

    def load_state_dict(self, state: dict) -> None:
        """Become the learner ``state`` describes, in place (same settings; hooks stay).

        Everything is checked before anything is stored: the settings equal this learner's,
        ``u`` is finite of shape (d,), ``t`` a count no smaller than the sketch's rows, the
        sketch part loads through the sketch's own ``load_state_dict``, ``K`` is ``B B^T``
        and the Cholesky factor factors ``shift I + K`` (FULL-ON: ``H^{-1}`` symmetric with
        eigenvalues in ``(0, 1/alpha0]``), up to :data:`STATE_TOLERANCE`. A refusal is a
        ``ValueError`` naming the key, with the learner as it was. States saved without
        ``seed`` or the Cholesky factor (older versions) still load.
        """
        reader = StateReader(state, type(self))
        in_use, pending = self._check_in_use(reader)
        for key, value in self._settings().items():
            if key not in in_use and (key != "seed" or reader.has("seed")):
                reader.same(key, value)
        u = reader.array("u", (self.d,))
        t = reader.count("t")
        part = state_part(state, "curvature.")
        # an auto alpha0 resolved otherwise (or not yet): checked against its own curvature
        alpha0 = in_use.get("alpha0", self.alpha0)
        curvature, previous = self._curvature, self._alpha0
        if alpha0 != self.alpha0:
            self._alpha0 = alpha0
            curvature = self._make_curvature()
            self._alpha0 = previous
        checked = curvature.read_state(part, StateReader(part, type(self), prefix="curvature."))
        if checked["n_seen"] > t:
            raise reader.refuse("t", f">= the {checked['n_seen']} rows the sketch has seen "
                                "(one per round)", t)
        if pending and (checked["n_seen"] or u.any()):
            raise reader.refuse("pending", "'' once a row has reached the curvature (u != 0)",
                                ",".join(pending))
        anchor = reader.array("anchor", (2,)) if reader.has("anchor") else np.zeros(2)  # older: none
        if (anchor < 0).any() or ((pending or not self._auto) and anchor.any()):
            raise reader.refuse("anchor", "(|x|^2, |y|) >= 0 of the row the auto settings came from, "
                                "zeros while pending or with no auto setting", anchor.tolist())
        with all_or_nothing(self):  # the stores as one: interrupted, the learner is put back as it was
            if curvature is not self._curvature:
                self._alpha0 = alpha0
                self._use_curvature(curvature)
            self._curvature.assign(checked)
            self._anchor = (float(anchor[0]), float(anchor[1])) if anchor[0] > 0 else None
            self._eta, self.C, self.mu = (in_use.get(name, getattr(self, name)) for name in ("eta", "C", "mu"))
            self._pending = pending
            self.u, self.t = u, t
