"""The keys, paper names and default settings of the AdaGrad family (Wan & Zhang, section 5.1).

The learners read these; :func:`explorer.adagrad.learners.make_learner` builds a learner from
its key.

>>> LABELS["ffd"], default_delta("ffd", "pds")
('ADA-FFD', 10.0)
"""

from __future__ import annotations

__all__ = ["VARIANTS", "METHODS", "BASELINES", "LEARNERS", "RANDOMIZED", "LABELS", "DEFAULT_ETA",
           "default_delta"]

VARIANTS = ("full", "diag", "fd", "ffd")
"""AdaGrad's proximal matrices: exact ``G``, its diagonal, an FD sketch, the doubling trick."""
METHODS = ("cmd", "pds")
"""AdaGrad's update forms: composite mirror descent, primal-dual (dual averaging)."""
BASELINES = ("ogd", "adam")
"""The paper's first-order baselines (Wan & Zhang, section 5): :class:`OGD`, :class:`Adam`."""
LEARNERS = VARIANTS + BASELINES
"""Every learner of this module by key, in the order figures list them (:func:`make_learner`);
what the dashboard's race (:class:`explorer.experiments.adagrad.AdaGradRace`) runs."""
RANDOMIZED = ("lr", "radagrad")
"""The paper's randomized baselines by key (their ``variant``): ADA-LR and RADAGRAD, the
classes of :mod:`explorer.adagrad.randomized` (Krummenacher et al. 2016). :func:`make_learner`
builds them too; they are not in :data:`LEARNERS`, whose race would pay ADA-LR's O(tau d^2)
round at every step."""
LABELS = {"full": "ADA-FULL", "diag": "ADA-DIAG", "fd": "ADA-FD", "ffd": "ADA-FFD",
          "ogd": "OGD", "adam": "Adam", "lr": "ADA-LR", "radagrad": "RADAGRAD"}
"""The paper's name of each key of :data:`LEARNERS` and :data:`RANDOMIZED`."""
DEFAULT_ETA = 0.01
"""Default step size. The paper picks eta from {1e-4, ..., 1} per experiment; 0.01 is what
that search picks for ADA-FD and ADA-FFD (CMD and PDS) on its synthetic regression in
our runs (d = 500, T from 600 to 10000)."""


def default_delta(variant: str, method: str) -> float:
    """The paper's delta (Wan & Zhang, section 5.1).

    ADA-FD and ADA-FFD: 1 with mirror descent (CMD), 10 with dual averaging (PDS);
    ADA-DIAG: 1e-8. The paper tunes ADA-FULL's delta over {1e-4, ..., 10}; we give it the
    FD/FFD value so that ADA-FFD with 2 tau > d equals ADA-FULL with default arguments.

    >>> default_delta("ffd", "cmd"), default_delta("fd", "pds"), default_delta("diag", "cmd")
    (1.0, 10.0, 1e-08)
    """
    if variant == "diag":
        return 1e-8
    return 1.0 if method == "cmd" else 10.0
