"""Who races in the FM experiment: S-FTRL, full FTRL and OGD, named, and when one diverged.

Luo et al. (KDD 2018; docs/algorithms.md section 6): :func:`make_learners` builds the three
learners of :data:`LEARNERS` on one stream's settings; :data:`DIVERGED` and
:data:`ORACLE_MAX` are the race's limits (:mod:`.race`).
"""

from __future__ import annotations

from typing import Any

from ...fm import FTRLFM, OGDFM, SketchedFTRL

__all__ = ["LEARNERS", "LEARNER_NAMES", "ORACLE_MAX", "DIVERGED", "make_learners"]

LEARNERS = ("sftrl", "ftrl", "ogd")
"""The learners that race: S-FTRL (the sketch), full-matrix FTRL and OGD, in legend order."""
LEARNER_NAMES = {"sftrl": "S-FTRL (sketch)", "ftrl": "FTRL (full Θ)", "ogd": "OGD (full Θ)"}
"""Each learner's name in legends and notes."""
ORACLE_MAX = 300
"""The exact sums H+^T H+ and H-^T H- are kept (O(d^2) per round, O(d^3) per spectrum) up to this d + 1."""
DIVERGED = 1e6
"""A prediction |z| above this counts as diverged (ratings are 1..5; unit-norm rows keep logits small)."""


def make_learners(d: int, *, m: int = 10, eta: float | None = None, ogd_eta: float | None = None,
                  loss: str = "squared", fast: bool = True) -> dict[str, Any]:
    """S-FTRL (sketch size ``m``, Algorithm 5 if ``fast`` else 4) and full FTRL with step
    ``eta``, OGD with its own ``eta / sqrt(t)`` step ``ogd_eta`` (None: each one's default)."""
    return {"sftrl": SketchedFTRL(d, m=m, eta=eta, loss=loss, fast=fast),
            "ftrl": FTRLFM(d, eta=eta, loss=loss),
            "ogd": OGDFM(d, eta=ogd_eta, loss=loss)}
