"""Hyper-parameters by their own names: ``get_params()`` and ``with_params(**changes)``.

Every learner is :class:`Tunable`. ``get_params()`` returns its constructor's arguments
under the constructor's own names (what ``type(learner)(**params)`` needs to build a
fresh twin, river's ``_get_params`` / ``clone`` idea). ``with_params(**changes)`` returns
a *new* learner that continues the stream from this one's state with some hyper-parameters
changed: what the dashboard's hot sliders and a notebook's "what if eta changed at t = 500"
use, instead of assigning attributes. The old learner is untouched (hooks are not carried
over), the change is validated by the constructor (a ``ValueError`` naming the parameter),
and only the parameters listed in the class's ``HOT`` may change mid-stream: the others
(``d``, ``m``, the sketch, the loss, ...) define the state's shape or meaning, so a change
of one of them is a new learner, ``type(learner)(**{**learner.get_params(), ...})``.

A class states how its saved state follows a change in :meth:`Tunable._continue_state`;
the default stores each changed value under its own name (a state that keeps ``eta`` as
``state["eta"]``). docs/architecture.md describes the protocol.

>>> from explorer import AdaGrad
>>> learner = AdaGrad(3, variant="diag", eta=0.1)
>>> _ = learner.learn([1.0, 0.0, 2.0], 1.0)
>>> faster = learner.with_params(eta=0.5)
>>> faster.eta, learner.eta, faster.t == learner.t
(0.5, 0.1, True)
>>> learner.with_params(d=4)
Traceback (most recent call last):
    ...
ValueError: AdaGrad.with_params cannot change d mid-stream (it may change eta, delta); build a new AdaGrad for that
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

__all__ = ["Tunable"]


class Tunable:
    """Mixin: ``get_params`` and ``with_params`` from the constructor's signature."""

    HOT: ClassVar[tuple[str, ...]] = ()
    """The hyper-parameters :meth:`with_params` may change mid-stream."""

    @classmethod
    def param_names(cls) -> tuple[str, ...]:
        """The constructor's parameter names, in order."""
        signature = inspect.signature(cls.__init__)
        return tuple(name for name, p in signature.parameters.items()
                     if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

    def get_params(self) -> dict[str, Any]:
        """``{name: value}`` for every constructor argument: ``type(self)(**params)`` is a
        fresh learner with the same settings. The default reads the attribute of the same
        name; a class whose attribute means something else overrides this."""
        return {name: getattr(self, name) for name in self.param_names()}

    def with_params(self, **changes: Any):
        """A new learner continuing this one's stream with ``changes`` applied; ``self`` is
        unchanged. Refuses (``ValueError``) a name outside ``HOT`` and any value the
        constructor refuses."""
        name = type(self).__name__
        for key in changes:
            if key not in self.param_names():
                raise ValueError(f"{name} has no parameter {key!r}; its parameters are "
                                 f"{', '.join(self.param_names())}")
            if key not in self.HOT:
                allowed = ", ".join(self.HOT) or "none"
                raise ValueError(f"{name}.with_params cannot change {key} mid-stream (it may change "
                                 f"{allowed}); build a new {name} for that")
        fresh = type(self)(**{**self.get_params(), **changes})
        fresh.load_state_dict(self._continue_state(self.state_dict(), fresh, changes))
        return fresh

    def _continue_state(self, state: dict, fresh, changes: dict) -> dict:
        """This learner's ``state`` rewritten for ``fresh`` (built with ``changes``): by
        default each changed setting is stored under its own name, as ``fresh`` stores it."""
        settings = fresh.state_dict()
        return {**state, **{key: settings[key] for key in changes}}
