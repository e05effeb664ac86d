"""The one exception every learner raises when its numbers leave the finite range.

A learner that diverges (a prediction, a weight or a sketch row past the limits of
docs/robustness.md, or a shrink whose LAPACK call failed) raises :class:`Diverged` and is
left as it was before the call, whatever its family (SON, AdaGrad, FM, PCA).

>>> try:
...     raise Diverged("the prediction overflowed", row=3, t=17)
... except ValueError as error:
...     print(error, error.row, error.t)
the prediction overflowed 3 17
"""

from __future__ import annotations

__all__ = ["Diverged"]


class Diverged(ValueError, FloatingPointError):
    """A round's numbers left the finite range, or the sketch's shrink failed; the learner
    is as it was before the call.

    A ``ValueError`` like every refusal, and a ``FloatingPointError``, which is what
    divergence raised in earlier versions (lessons and notebooks catch that). ``row``: the row
    of the call it happened at (0 for ``learn``/``step``); ``t``: the round that row would
    have been (0 when unknown).
    """

    def __init__(self, message: str, *, row: int = 0, t: int = 0):
        super().__init__(message)
        self.row, self.t = row, t

    def __reduce__(self):  # keeps row and t through copy/pickle of the exception object
        return (_rebuild, (type(self), str(self), self.row, self.t))


def _rebuild(cls, message, row, t):
    return cls(message, row=row, t=t)
