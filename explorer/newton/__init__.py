r"""Sketched online Newton step: RFD-SON, FD-SON, RP-SON, Oja-SON and FULL-ON (docs/algorithms.md section 3).

The online Newton step keeps ``H_t = alpha_0 I + sum_{s<=t} (mu + eta_s) g_s g_s^T`` and moves
along ``-H_t^{-1} g_t``; the sketched versions replace the sum by a sketch ``B`` of the rows
``sqrt(mu + eta_s) g_s`` and solve by Woodbury in O(md) per round.

- :mod:`explorer.newton.son`: :class:`SketchedOnlineNewton`, its round and the slab projection;
- :mod:`explorer.newton.names`: the paper names :class:`RFDSON`, :class:`FDSON`,
  :class:`RPSON`, :class:`OjaSON`, :class:`FullON` (SketchedOnlineNewton with its sketch fixed);
- :mod:`explorer.newton.curvature`: ``H_t`` from a sketch (Woodbury, Cholesky) or exact (FULL-ON);
- :mod:`explorer.newton.defaults`: the ``"auto"`` settings (:func:`default_mu`, :func:`auto_settings`);
- :mod:`explorer.newton.persistence`: ``state_dict``, loading, ``with_params``;
- :mod:`explorer.newton.compiled`: the round compiled by numba (optional; the numpy round is its reference).

>>> from explorer.newton import RFDSON
>>> learner = RFDSON(2, m=2, alpha0=0.0, eta=0.0, C=1.0)
>>> learner.learn([1.0, 0.0], 1.0), float(learner.predict([1.0, 0.0]))
(1.0, 1.0)

References
----------
- Luo, Agarwal, Cesa-Bianchi, Langford (2016), *Efficient second order online learning
  by sketching* (SON, the slab projection, RP-SON / FD-SON / Oja-SON).
- Luo, Chen, Zhang, Li (2017), *Online learning via regularized frequent directions*,
  Algorithms 5-6 (RFD-SON, fast RFD-SON); Luo et al. (JMLR 2019), Algorithm 3, alpha_0 = 0
  with the pseudo-inverse ("hyperparameter-free").
"""

from .._validation import SCALES
from .curvature import SKETCHES, FullCurvature, SketchCurvature
from .defaults import AUTO, SUPPORTED_LOSSES, auto_settings, default_mu, unsketched_alpha0
from .names import FDSON, RFDSON, RPSON, FullON, OjaSON
from .son import SketchedOnlineNewton

__all__ = ["SketchedOnlineNewton", "RFDSON", "FDSON", "RPSON", "OjaSON", "FullON", "SKETCHES",
           "SUPPORTED_LOSSES", "SCALES", "AUTO", "auto_settings", "default_mu", "unsketched_alpha0",
           "SketchCurvature", "FullCurvature"]
