"""Matrix sketches: Frequent Directions, Robust FD, Generalized FD, random projection.

All of them summarize a stream of rows ``a_t`` in R^d by a small matrix ``B`` whose
Gram matrix approximates ``A^T A`` (docs/algorithms.md sections 1, 2 and 6). Memory is O(md):
no d x d array is ever formed, except by ``gram()``, which exists for inspection.

A learner drives its sketch through the public incremental API only: ``insert(row)``
(returning the :class:`ShrinkRecord` of the shrink the row caused, or None), the
read-only view ``rows``, ``undo_point()`` and the in-place ``load_state_dict``. Every
sketch is :class:`~explorer.params.Tunable`; only Robust FD's ``alpha0`` may change
mid-stream (``with_params``). Where each lives:

- :mod:`~explorer.sketch.shrink`: FD's shrink, ``delta = sigma_m^2``,
  ``B <- sqrt(max(Sigma^2 - delta I, 0)) V^T`` (:func:`svd_shrink`, :func:`gram_shrink`,
  :func:`shrink_amounts`, :func:`mass_bounds`);
- :mod:`~explorer.sketch.fd`: :class:`FrequentDirections`, its round and its merge
  (:mod:`~explorer.sketch.fd_state`: its state dict, loading and undo);
- :mod:`~explorer.sketch.rfd`: :class:`RobustFrequentDirections`, ``alpha = alpha0 + Delta / 2``;
- :mod:`~explorer.sketch.gfd`: :class:`GeneralizedFrequentDirections`, ``B+`` and ``B-``;
- :mod:`~explorer.sketch.rp`: :class:`RandomProjectionSketch`;
- here: :func:`from_bytes`, any mergeable sketch back from its bytes (docs/merging.md).

References
----------
- Liberty (2013); Ghashami, Liberty, Phillips, Woodruff (2016): Frequent Directions and
  its doubling-space variant ("fast FD").
- Luo, Chen, Zhang, Li (2017), *Online learning via regularized frequent directions*,
  Algorithms 1-4; Luo et al. (JMLR 2019), *Robust frequent directions*, Theorems 1-4.
- Luo et al. (KDD 2018), *Sketched follow-the-regularized-leader for online factorization
  machine*, Algorithm 2 (Generalized FD).
"""

from __future__ import annotations

from .._validation import MAX_SQUARED_MASS
from ..merging import check_members, unpack_state
from .fd import FrequentDirections
from .gfd import GeneralizedFrequentDirections
from .rfd import RobustFrequentDirections
from .rp import RandomProjectionSketch
from .shrink import (TINY_SQUARE, ShrinkFailed, ShrinkRecord, ShrinkRule, gram_shrink, mass_bounds,
                     power_of_two_scale, shrink_amounts, svd_shrink)

__all__ = [
    "FrequentDirections",
    "RobustFrequentDirections",
    "GeneralizedFrequentDirections",
    "RandomProjectionSketch",
    "MAX_SQUARED_MASS",
    "ShrinkRecord",
    "ShrinkFailed",
    "ShrinkRule",
    "from_bytes",
    "svd_shrink",
    "gram_shrink",
    "shrink_amounts",
    "power_of_two_scale",
    "mass_bounds",
    "TINY_SQUARE",
]


_MERGEABLE = {cls.__name__: cls for cls in (FrequentDirections, RobustFrequentDirections,
                                             GeneralizedFrequentDirections)}


def from_bytes(data: bytes) -> "FrequentDirections | GeneralizedFrequentDirections":
    """The sketch ``to_bytes`` wrote, of whichever mergeable kind it is (FD, Robust FD,
    Generalized FD); ``Class.from_bytes`` reads one kind only. docs/merging.md section 5
    describes the format; everything it refuses is a ``ValueError`` saying what is wrong.

    >>> import numpy as np
    >>> sk = RobustFrequentDirections(d=3, m=2, alpha0=0.5)
    >>> sk.extend(np.eye(3))
    >>> copy = from_bytes(sk.to_bytes())
    >>> type(copy).__name__, copy.alpha == sk.alpha
    ('RobustFrequentDirections', True)
    """
    state = unpack_state(data, tuple(_MERGEABLE))
    cls = _MERGEABLE[str(state["kind"])]
    check_members(cls, state)
    return cls.from_state_dict(state)
