r"""The proximal matrices ``H_t`` of adaptive subgradient methods (docs/algorithms.md section 4).

Each class keeps what it needs to apply ``H_t^{-1}`` to a vector, with ``G_t = sum g g^T``:

- :class:`FullProximal` (ADA-FULL, :mod:`.full`): ``H = delta I + G^{1/2}``; keeps ``G``
  (d x d) and takes one d x d eigendecomposition per round, O(d^3) time and O(d^2) memory
  -- the cost that motivates everything else in this package.
- :class:`DiagonalProximal` (ADA-DIAG, :mod:`.diag`): ``H = delta I + diag(G)^{1/2}``; O(d).
- :class:`FDProximal` (ADA-FD, :mod:`.fd`; Wan & Zhang Algorithms 1-2): a Frequent
  Directions sketch ``S`` (tau rows) of the gradients, ``H = delta I + (S^T S)^{1/2}``;
  O(tau^2 d) per round.
- :class:`FFDProximal` (ADA-FFD, :mod:`.ffd`; Algorithms 3-4): ``S = M^{1/2} V^T`` with ``V``
  (d x 2 tau, ``r`` orthonormal columns) and ``M`` (2 tau x 2 tau); the rank ``r`` cycles
  between tau - 1 and 2 tau; O(tau d + tau^3) per round on average.

The learner calls, every round with a non-zero gradient ``g`` (docs/algorithms.md section
4.1): ``checkpoint()``; ``add(g)`` (returns ADA-FD's shrink, an
:class:`explorer.sketch.ShrinkRecord`, or None); ``solve(v)`` (``H_t^{-1} v``;
``solve(v, delta)`` reuses the same eigendecomposition with another delta); then
``compress()`` (ADA-FFD's shrink, after the update as in the paper's step 12; a no-op
elsewhere). Both shrinks follow FD's one rule (:func:`explorer.sketch.shrink_amounts`). If
``add`` fails or the new ``beta`` is not finite, ``rollback(checkpoint)`` puts back what
``add`` overwrote in place; ``compress`` cannot fail, so it runs after the checks.
:func:`eigh` refuses a non-finite matrix (:class:`~explorer.errors.Diverged`), so LAPACK
never sees one; a loaded state is checked by ``read_state`` (:mod:`.checks`).

The sketched classes never form a d x d matrix except in :meth:`gram` and :meth:`matrix`,
which exist for inspection and tests. :mod:`.numerics` holds the shared linear algebra;
:func:`make_proximal` builds one by its key.
"""

from __future__ import annotations

import numpy as np

from .checks import ORTHONORMALITY_TOLERANCE, PREFIX
from .diag import DiagonalProximal
from .fd import FDProximal
from .ffd import ORTHOGONALITY_EPS, FFDProximal
from .full import FullProximal

__all__ = ["FullProximal", "DiagonalProximal", "FDProximal", "FFDProximal", "ORTHOGONALITY_EPS",
           "ORTHONORMALITY_TOLERANCE", "PREFIX", "make_proximal", "kept_shapes"]


def kept_shapes(variant: str, d: int, tau: int) -> list[tuple[int, int]]:
    """The shapes of the matrices the proximal matrix of ``variant`` keeps for dimension d:
    ADA-FULL's ``G`` (d x d), ADA-FD's sketch (tau x d), ADA-FFD's ``V`` (d x 2 tau) and
    ``M`` (2 tau x 2 tau); none for ADA-DIAG (a vector). Callers refuse sizes past
    :data:`explorer._validation.MAX_ENTRIES` before building one.

    >>> kept_shapes("ffd", 1152, 20)
    [(1152, 40), (40, 40)]
    """
    return {"full": [(d, d)], "diag": [], "fd": [(tau, d)],
            "ffd": [(d, 2 * tau), (2 * tau, 2 * tau)]}[variant]


def make_proximal(variant: str, d: int, tau: int, delta: float):
    """A fresh proximal matrix ``H_0 = delta I`` of ``variant`` ("full", "diag", "fd",
    "ffd") for gradients of dimension d; ``tau`` is the sketch size of "fd" and "ffd"
    (ignored by the others). The arguments are taken as checked.

    >>> make_proximal("fd", 5, 2, 1.0).solve(np.ones(5))
    array([1., 1., 1., 1., 1.])
    """
    if variant == "full":
        return FullProximal(d, delta)
    if variant == "diag":
        return DiagonalProximal(d, delta)
    if variant == "fd":
        return FDProximal(d, tau, delta)
    if variant == "ffd":
        return FFDProximal(d, tau, delta)
    raise ValueError(f"variant must be one of ['full', 'diag', 'fd', 'ffd'], got {variant!r}")

