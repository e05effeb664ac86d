"""One small, ordinary instance of every class registered with ``@stateful``, and how to feed it.

Shared by the resume tests (tests/test_resume_layout.py) and the fuzz suite
(tests/test_fuzz_stateful.py), so a new stateful class is added in one place; both suites
fail until it is.

- ``FEEDS[name] = (make, feed)``: ``make()`` builds the object, ``feed(obj, rng, n)`` gives
  it n ordinary rounds.
- ``ROUNDS[name](obj, x, y)``: one round on a row ``x`` (length ``D``) with label ``y``,
  through the class's own input (a row, a loss vector, a covariance ``x x^T / 10``).
- ``BATCHES[name](obj, X, y)``: the class's batch call (``extend``, ``learn_many``,
  ``progressive``), or absent when it has none.
"""

from __future__ import annotations

import numpy as np

from explorer import (
    FTRLFM, OGD, OGDFM, AdaGrad, Adam, AdaptiveBestSubset, FollowTheLeaderPCA, FrequentDirections,
    GeneralizedFrequentDirections, OnlineAdaptivePCA, RandomProjectionSketch,
    RobustFrequentDirections, SketchedFTRL, SketchedOnlineNewton, VarianceMinSimplex,
    VarianceMinSphere,
)
from explorer import FDSON, OCGFM, RFDSON, RPSON, AdaLR, FullON, OjaSON, RadaGrad
from explorer.fm import progressive
from explorer.oja import OjaSketch

D = 6


def rows(rng, n):
    return rng.standard_normal((n, D)) * np.linspace(2.0, 0.2, D)


def labels(rng, n):
    return rng.choice([-1.0, 1.0], n)


def covariance(x):
    """``x x^T / 10`` for a real vector; anything else (a fuzzed string, complex or
    wrong-shaped row) is handed on as it is, for the learner to refuse. An overflowing
    product becomes inf, which the learner refuses too."""
    x = np.asarray(x)
    if x.ndim != 1 or x.dtype.kind not in "biuf":
        return x
    with np.errstate(over="ignore"):
        return np.outer(x, x) / 10.0


def _learn_each(o, rng, n):
    return [o.learn(x, y) for x, y in zip(rows(rng, n), labels(rng, n))]


# name -> (factory, feed(obj, rng, n)); every class registered with @stateful must appear.
FEEDS = {
    "FrequentDirections": (lambda: FrequentDirections(D, 3),
                           lambda o, rng, n: o.extend(rows(rng, n))),
    "RobustFrequentDirections": (lambda: RobustFrequentDirections(D, 3, alpha0=0.5, fast=True),
                                 lambda o, rng, n: o.extend(rows(rng, n))),
    "GeneralizedFrequentDirections": (lambda: GeneralizedFrequentDirections(D, 3),
                                      lambda o, rng, n: o.extend(rows(rng, n), labels(rng, n))),
    "RandomProjectionSketch": (lambda: RandomProjectionSketch(D, 3, seed=1),
                               lambda o, rng, n: o.extend(rows(rng, n))),
    "OjaSketch": (lambda: OjaSketch(D, 3, seed=1), lambda o, rng, n: o.extend(rows(rng, n))),
    "SketchedOnlineNewton": (lambda: SketchedOnlineNewton(D, m=3, alpha0=1.0, eta=0.5), _learn_each),
    "RFDSON": (lambda: RFDSON(D, m=3, alpha0=1.0, eta=0.5), _learn_each),
    "FDSON": (lambda: FDSON(D, m=3, alpha0=1.0, eta=0.5), _learn_each),
    "RPSON": (lambda: RPSON(D, m=3, alpha0=1.0, eta=0.5, seed=1), _learn_each),
    "OjaSON": (lambda: OjaSON(D, m=3, alpha0=1.0, eta=0.5, seed=1), _learn_each),
    "FullON": (lambda: FullON(D, alpha0=1.0, eta=0.5), _learn_each),
    "AdaGrad": (lambda: AdaGrad(D, variant="ffd", tau=2), _learn_each),
    "OGD": (lambda: OGD(D, eta=0.1), _learn_each),
    "Adam": (lambda: Adam(D, eta=0.1), _learn_each),
    "SketchedFTRL": (lambda: SketchedFTRL(D, m=3), _learn_each),
    "FTRLFM": (lambda: FTRLFM(D), _learn_each),
    "OGDFM": (lambda: OGDFM(D), _learn_each),
    "OCGFM": (lambda: OCGFM(D, seed=0), _learn_each),
    "AdaLR": (lambda: AdaLR(D, tau=2, seed=1), _learn_each),
    "RadaGrad": (lambda: RadaGrad(D, tau=2, seed=1), _learn_each),
    "OnlineAdaptivePCA": (lambda: OnlineAdaptivePCA(D, 2, alpha=0.0, seed=3),
                          lambda o, rng, n: [o.learn(x / 10) for x in rows(rng, n)]),
    "AdaptiveBestSubset": (lambda: AdaptiveBestSubset(D, 2, eta=1.0, alpha=0.1, seed=3),
                           lambda o, rng, n: [o.learn(rng.uniform(0, 1, D)) for _ in range(n)]),
    "VarianceMinSphere": (lambda: VarianceMinSphere(D, eta=1.0, alpha=0.1, seed=3),
                          lambda o, rng, n: [o.learn(covariance(x)) for x in rows(rng, n)]),
    "VarianceMinSimplex": (lambda: VarianceMinSimplex(D, eta=1.0, alpha=0.1),
                           lambda o, rng, n: [o.learn(covariance(x)) for x in rows(rng, n)]),
    "FollowTheLeaderPCA": (lambda: FollowTheLeaderPCA(D, 2),
                           lambda o, rng, n: [o.learn(x) for x in rows(rng, n)]),
}

_SKETCHES = ("FrequentDirections", "RobustFrequentDirections", "RandomProjectionSketch", "OjaSketch")
_NEWTON = ("SketchedOnlineNewton", "RFDSON", "FDSON", "RPSON", "OjaSON", "FullON")
_LEARNERS = (*_NEWTON, "AdaGrad", "OGD", "Adam", "SketchedFTRL", "FTRLFM", "OGDFM",
             "OCGFM", "AdaLR", "RadaGrad")

ROUNDS = {
    **{name: (lambda o, x, y: o.update(x)) for name in _SKETCHES},
    "GeneralizedFrequentDirections": lambda o, x, y: o.update(x, y),
    **{name: (lambda o, x, y: o.learn(x, y)) for name in _LEARNERS},
    "OnlineAdaptivePCA": lambda o, x, y: o.learn(x),
    "FollowTheLeaderPCA": lambda o, x, y: o.learn(x),
    "AdaptiveBestSubset": lambda o, x, y: o.learn(x),
    "VarianceMinSphere": lambda o, x, y: o.learn(covariance(x)),
    "VarianceMinSimplex": lambda o, x, y: o.learn(covariance(x)),
}

_LEARN_MANY = (*_NEWTON, "AdaGrad", "OGD", "Adam", "AdaLR", "RadaGrad")

BATCHES = {
    **{name: (lambda o, X, y: o.extend(X)) for name in _SKETCHES},
    "GeneralizedFrequentDirections": lambda o, X, y: o.extend(X, y),
    **{name: (lambda o, X, y: o.learn_many(X, y)) for name in _LEARN_MANY},
    **{name: (lambda o, X, y: progressive(o, X, y)) for name in ("SketchedFTRL", "FTRLFM", "OGDFM", "OCGFM")},
}

KEPT_BATCHES = {name: (lambda o, X, y: o.progressive(X, y)) for name in _LEARN_MANY}
"""The protocol's other batch call, ``progressive``, for the learners whose ``BATCHES`` entry
is ``learn_many`` (the factorization machines' entry is ``progressive`` already)."""


def fed(name, n=20, seed=5):
    """The object ``name`` after n ordinary rounds."""
    make, feed = FEEDS[name]
    obj = make()
    feed(obj, np.random.default_rng(seed), n)
    return obj


UNLABELLED = ("OnlineAdaptivePCA", "FollowTheLeaderPCA", "AdaptiveBestSubset", "VarianceMinSphere",
              "VarianceMinSimplex")
"""The learners whose round takes no label."""

DIVERGING = {  # each labelled learner with its largest step size, fed rows of norm ~1e100
    "SketchedOnlineNewton": lambda: SketchedOnlineNewton(D, m=3, alpha0=1e-100, eta=1e100, loss="squared"),
    "RFDSON": lambda: RFDSON(D, m=3, alpha0=1e-100, eta=1e100, loss="squared"),
    "FDSON": lambda: FDSON(D, m=3, alpha0=1e-100, eta=1e100, loss="squared"),
    "RPSON": lambda: RPSON(D, m=3, alpha0=1e-100, eta=1e100, loss="squared", seed=1),
    "OjaSON": lambda: OjaSON(D, m=3, alpha0=1e-100, eta=1e100, loss="squared", seed=1),
    "FullON": lambda: FullON(D, alpha0=1e-100, eta=1e100, loss="squared"),
    "AdaGrad": lambda: AdaGrad(D, variant="ffd", tau=2, eta=1e100, loss="squared"),
    "OGD": lambda: OGD(D, eta=1e100, loss="squared"),
    "Adam": lambda: Adam(D, eta=1e100, loss="squared"),
    "SketchedFTRL": lambda: SketchedFTRL(D, m=3, eta=1e100),
    "FTRLFM": lambda: FTRLFM(D, eta=1e100),
    "OGDFM": lambda: OGDFM(D, eta=1e100),
    "OCGFM": lambda: OCGFM(D, eta=1e100, tau=1e100, seed=0),
    "AdaLR": lambda: AdaLR(D, tau=2, eta=1e100, loss="squared", seed=1),
    "RadaGrad": lambda: RadaGrad(D, tau=2, eta=1e100, loss="squared", seed=1),
}
