r"""Adaptive subgradient learners on a linear model: AdaGrad (FULL, DIAG, FD, FFD), OGD, Adam.

All of them play ``beta_t`` in R^d, suffer ``f_t(beta_t) = l(beta_t^T x_t, y_t)`` and use the
(sub)gradient ``g_t = l'(beta_t^T x_t, y_t) x_t`` (docs/algorithms.md section 4). ``learn(x, y)``
returns the loss of the current ``beta`` on ``(x, y)`` and then updates; ``step(x, y)`` plays
the same round and returns its :class:`~explorer.hooks.StepRecord` (what hooks receive as
"step"); ``predict(x)`` is ``beta^T x``. ``eta`` (and ``delta`` for AdaGrad and Adam) change
mid-stream through ``with_params`` (:mod:`explorer.params`). Where each rule lives:
:class:`AdaGrad` (ADA-FULL, ADA-DIAG, ADA-FD, ADA-FFD; CMD and PDS) in
:mod:`explorer.adagrad.adagrad`, its proximal matrices in :mod:`explorer.adagrad.proximal`,
:class:`OGD` in :mod:`explorer.adagrad.ogd`, :class:`Adam` in :mod:`explorer.adagrad.adam`,
the shared round in :mod:`explorer.adagrad.linear`, the keys and defaults in
:mod:`explorer.adagrad.settings`; :func:`make_learner` builds any of them, ADA-LR and
RADAGRAD (:mod:`explorer.adagrad.randomized`) too, by its key.

All or nothing (docs/algorithms.md section 4.1 lists the scale limits): what a learner
cannot compute with finite numbers (a row with ``||x||^2 > 1e300``, a label other than
±1 for "logistic" and "squared_hinge", ``eta`` or ``delta`` outside [1e-100, 1e100]) it
refuses with a ``ValueError`` before anything changes; a round that still fails is rolled
back and raises :class:`explorer.errors.Diverged`, naming the row and the round ``t``.
``learn_many`` takes one snapshot per call and restores it if any row fails.

References
----------
- Wan & Zhang (TPAMI 2022; IJCAI 2018), *Efficient adaptive online learning via frequent
  directions*: ADA-FD (Algorithms 1-2), ADA-FFD (Algorithms 3-4), experiments section 5.
- Duchi, Hazan & Singer (JMLR 2011), *Adaptive subgradient methods*: ADA-FULL, ADA-DIAG.
- Zinkevich (ICML 2003): OGD with step ``eta / sqrt(t)``; Kingma & Ba (ICLR 2015): Adam.
"""

from __future__ import annotations

from .._validation import check_choice
from .adagrad import AdaGrad, RankShrinkEvent
from .adam import Adam
from .ogd import OGD
from .randomized import AdaLR, RadaGrad
from .settings import BASELINES, DEFAULT_ETA, LABELS, LEARNERS, METHODS, RANDOMIZED, VARIANTS, default_delta

__all__ = ["AdaGrad", "OGD", "Adam", "RankShrinkEvent", "VARIANTS", "METHODS", "BASELINES", "LEARNERS",
           "RANDOMIZED", "LABELS", "DEFAULT_ETA", "default_delta", "make_learner"]


def make_learner(key: str, d: int, *, eta: float, loss: str = "absolute", method: str = "cmd",
                 delta: float | None = None, tau: int = 20, seed: int | None = None):
    """The learner of :data:`LEARNERS` or :data:`RANDOMIZED` called ``key``, fresh:
    :class:`AdaGrad` with ``variant=key`` (``delta`` None: the paper's, :func:`default_delta`),
    :class:`OGD` / :class:`Adam`, which take ``eta`` and ``loss`` only (their own ``delta``),
    or :class:`~explorer.adagrad.AdaLR` / :class:`~explorer.adagrad.RadaGrad` ("lr",
    "radagrad"), whose random projection is drawn from ``seed`` (the others ignore it).

    >>> make_learner("ffd", 5, eta=0.1, tau=2)
    AdaGrad(d=5, variant='ffd', method='cmd', eta=0.1, delta=1, tau=2, loss='absolute') t=0
    >>> make_learner("adam", 5, eta=0.1, delta=3.0).delta
    1e-08
    >>> make_learner("radagrad", 5, eta=0.1, tau=2, seed=0)
    RadaGrad(d=5, method='cmd', eta=0.1, delta=1, tau=2, loss='absolute', seed=0) t=0
    """
    if key == "ogd":
        return OGD(d, eta=eta, loss=loss)
    if key == "adam":
        return Adam(d, eta=eta, loss=loss)
    if key in RANDOMIZED:
        cls = AdaLR if key == "lr" else RadaGrad
        return cls(d, method=method, eta=eta, delta=delta, tau=tau, loss=loss, seed=seed)
    check_choice("key", key, LEARNERS + RANDOMIZED)
    return AdaGrad(d, variant=key, method=method, eta=eta, delta=delta, tau=tau, loss=loss)
