r"""Online adaptive PCA and its extensions (Yuan & Lamperski), docs/algorithms.md section 5.

Static online PCA (Warmuth & Kuzmin 2008) competes with the best *fixed* projection in
hindsight, the wrong target when the data move to a new subspace; the fixed-share step
keeps a little weight on every direction, so the learner competes on *every interval*.

- Building blocks (:mod:`.simplex`): :func:`cap` (KL projection onto the capped simplex,
  Algorithm 3), :func:`mixture_decomposition` (into at most n corners, Algorithm 2),
  :func:`fixed_share` (mix alpha/n of uniform weight back in).
- Learners (``learn``, ``step`` with the expected loss, ``with_params(eta=..., alpha=...)``,
  hooks, ``state_dict``): :class:`AdaptiveBestSubset` (Algorithm 1),
  :class:`OnlineAdaptivePCA` (Algorithm 4; ``alpha=0`` is static online PCA),
  :class:`VarianceMinSphere` (Algorithm 5), :class:`VarianceMinSimplex` (Algorithm 6).
- Comparators and measures (:mod:`.comparators`, :mod:`.variance`, :mod:`.regret`,
  :mod:`.theory`): :class:`FollowTheLeaderPCA`, :func:`best_fixed_projection`,
  :func:`compression_losses`, :func:`best_fixed_unit_vector`, :func:`best_fixed_portfolio`,
  :func:`adaptive_regret` (max over intervals; :class:`AdaptiveRegret` keeps the comparators), :func:`interval_regret`, and theory settings
  :func:`pca_theory_settings`, :func:`sphere_theory_settings`, :func:`simplex_theory_settings`.

>>> import numpy as np
>>> from explorer.pca import OnlineAdaptivePCA, FollowTheLeaderPCA, adaptive_regret
>>> from explorer.streams import changing_subspace
>>> X, segment = changing_subspace(seed=0)             # 3 subspaces x 200 rows, n = 20
>>> static, adaptive = OnlineAdaptivePCA(20, 2, alpha=0.0), OnlineAdaptivePCA(20, 2)
>>> expected = {"static": [], "adaptive": []}
>>> for x in X:
...     for name, pca in (("static", static), ("adaptive", adaptive)):
...         expected[name].append(pca.step(x).expected_loss)
>>> {name: round(sum(v), 1) for name, v in expected.items()}
{'static': 128.3, 'adaptive': 26.4}
"""

from .comparators import FollowTheLeaderPCA, best_fixed_projection, compression_losses
from .experts import AdaptiveBestSubset
from .online import OnlineAdaptivePCA
from .regret import AdaptiveRegret, adaptive_regret, interval_regret
from .simplex import cap, fixed_share, mixture_decomposition
from .theory import (TheorySettings, pca_theory_settings, simplex_theory_settings,
                     sphere_theory_settings)
from .variance import (VarianceMinSimplex, VarianceMinSphere, best_fixed_portfolio,
                       best_fixed_unit_vector)

__all__ = [
    "cap",
    "mixture_decomposition",
    "fixed_share",
    "AdaptiveBestSubset",
    "OnlineAdaptivePCA",
    "VarianceMinSphere",
    "VarianceMinSimplex",
    "FollowTheLeaderPCA",
    "best_fixed_projection",
    "compression_losses",
    "best_fixed_unit_vector",
    "best_fixed_portfolio",
    "adaptive_regret",
    "AdaptiveRegret",
    "interval_regret",
    "TheorySettings",
    "pca_theory_settings",
    "sphere_theory_settings",
    "simplex_theory_settings",
]
