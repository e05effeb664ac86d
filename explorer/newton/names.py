r"""The sketched online Newton step by its paper names: :class:`SketchedOnlineNewton` with
its sketch fixed (docs/algorithms.md section 3.1).

Each takes :class:`SketchedOnlineNewton`'s arguments but ``sketch`` and gives its numbers bit
for bit; ``repr``, ``get_params``, ``with_params`` and saved states keep the paper name.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X, y = rng.standard_normal((30, 4)), rng.choice([-1.0, 1.0], 30)
>>> same = [np.array_equal(cls(4, m=2, seed=1).learn_many(X, y),
...                        SketchedOnlineNewton(4, sketch=cls.SKETCH, m=2, seed=1).learn_many(X, y))
...         for cls in (RFDSON, FDSON, RPSON, OjaSON, FullON)]
>>> same
[True, True, True, True, True]
"""

from __future__ import annotations

from typing import ClassVar

from ..state import stateful
from .defaults import AUTO
from .son import SketchedOnlineNewton

__all__ = ["RFDSON", "FDSON", "RPSON", "OjaSON", "FullON"]


class _FixedSketch(SketchedOnlineNewton):
    """:class:`SketchedOnlineNewton` with ``sketch=SKETCH``; a ``sketch`` argument is a ``TypeError``."""

    SKETCH: ClassVar[str] = "rfd"

    def __init__(self, d: int, *, m: int = 10, alpha0: float | str = AUTO, eta: float | str = AUTO,
                 mu: float | None = None, C: float | str = AUTO, fast: bool = True,
                 loss: str = "squared", eta_schedule: str = "constant", seed: int | None = None,
                 **unknown):
        name = type(self).__name__
        if "sketch" in unknown:
            raise TypeError(f"{name} is SketchedOnlineNewton(sketch={self.SKETCH!r}) and takes no "
                            f"sketch argument; use SketchedOnlineNewton(sketch=...) for another sketch")
        if unknown:
            raise TypeError(f"{name}() got an unexpected keyword argument {next(iter(unknown))!r}")
        super().__init__(d, sketch=self.SKETCH, m=m, alpha0=alpha0, eta=eta, mu=mu, C=C, fast=fast,
                         loss=loss, eta_schedule=eta_schedule, seed=seed)


@stateful
class RFDSON(_FixedSketch):
    """RFD-SON (Luo et al. 2017, Algorithms 5-6): ``H_t = alpha_t I + B_t^T B_t``, ``B_t`` robust
    frequent directions of the rows ``sqrt(mu + eta_t) g_t``, ``alpha_t = alpha_0 + Delta_t / 2``.

    >>> RFDSON(3, m=2, alpha0=0.0, eta=0.0, C=1.0)
    RFDSON(d=3, m=2, alpha0=0, eta=0, loss='squared') t=0
    """

    SKETCH = "rfd"


@stateful
class FDSON(_FixedSketch):
    """FD-SON (Luo et al. 2016, Algorithm 2 with frequent directions): ``H_t = alpha_0 I + B_t^T B_t``.

    >>> FDSON(3, m=2, alpha0=1.0).get_params()["alpha0"]
    1.0
    """

    SKETCH = "fd"


@stateful
class RPSON(_FixedSketch):
    """RP-SON (Luo et al. 2016, random projection): ``H_t = alpha_0 I + B_t^T B_t``, ``B_t`` a
    Gaussian random projection of the rows drawn from ``seed``.

    >>> RPSON(3, m=2, seed=0).sketch_kind
    'rp'
    """

    SKETCH = "rp"


@stateful
class OjaSON(_FixedSketch):
    """Oja-SON (Luo et al. 2016, Algorithm 4): ``H_t = alpha_0 I + B_t^T B_t``,
    ``B_t = diag(sqrt(e)) V`` from Oja's sketch (``m <= d``, ``V_0`` drawn from ``seed``).

    With ``alpha0="auto"`` (the default) ``alpha_0 = 2 l''_max max_t |x_t|^2``
    (:func:`~explorer.newton.unsketched_alpha0`: a step outside the sketch's span goes at
    most half way to the one-dimensional Newton step) and Oja's step is scaled to the rows'
    mean squared norm (:class:`~explorer.oja.OjaSketch` with ``normalize=True``, as VW's
    OjaNewton normalizes its features); a number for ``alpha0`` keeps the paper's unscaled
    step. What to set when it trails RFD-SON (short streams, rows of uneven norm, such as
    MNIST digits): ``alpha0`` at a half and a quarter of the auto value (``learner.alpha0``
    after a pass), keeping the one with the fewest mistakes on held-out rows;
    benchmarks/README.md has the measurements.

    >>> OjaSON(3, m=2, seed=0).sketch_kind, OjaSON(3, m=2).sketch.normalize
    ('oja', True)
    """

    SKETCH = "oja"


@stateful
class FullON(_FixedSketch):
    """FULL-ON (Luo et al. 2016): the exact ``H_t = alpha_0 I + sum_s (mu + eta_s) g_s g_s^T``,
    its inverse kept by Sherman-Morrison (O(d^2) per round, ``alpha0 > 0``).

    >>> FullON(3, alpha0=1.0).with_params(eta=0.5)
    FullON(d=3, m=10, alpha0=1, eta=0.5, loss='squared') t=0
    """

    SKETCH = "full"
