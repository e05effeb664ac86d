"""The losses of the papers, as functions of a prediction ``z`` and a label ``y``.

Each loss is a small object with ``value(z, y)`` and ``derivative(z, y)`` (the derivative,
or a subgradient, with respect to the prediction ``z``), vectorized over numpy arrays.
A linear learner predicting ``z = w^T x`` gets its gradient as ``derivative(z, y) * x``
(docs/algorithms.md section 3: ``g_t = l_t'(w^T x_t) x_t``).

>>> loss = get_loss("logistic")
>>> round(float(loss.value(0.0, 1.0)), 4), round(float(loss.derivative(0.0, 1.0)), 4)
(0.6931, -0.5)
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from ._validation import check_float

__all__ = ["Loss", "SquaredLoss", "LogisticLoss", "AbsoluteLoss", "SquaredHingeLoss",
           "LOSSES", "get_loss", "check_label", "check_labels"]


class Loss:
    """Base class: ``value(z, y)`` and ``derivative(z, y)`` with respect to ``z``."""

    name: str = ""

    def value(self, z, y):
        raise NotImplementedError

    def derivative(self, z, y):
        raise NotImplementedError

    def value_and_derivative(self, z: float, y: float) -> tuple[float, float]:
        """Both at one prediction, as Python floats: a learner's per-round path.

        Subclasses override it with scalar arithmetic where numpy's per-call overhead would
        be most of a round's loss evaluation (benchmarks/README.md, "Figures behind the code").
        """
        return float(self.value(z, y)), float(self.derivative(z, y))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SquaredLoss(Loss):
    r"""Squared loss :math:`(z - y)^2`, derivative :math:`2(z - y)`.

    No factor 1/2: this is the convention of the RFD-SON papers (Luo et al. 2017,
    JMLR 2019; docs/algorithms.md section 3), whose exp-concavity constant ``mu = 1/(8 C^2)``
    is stated for it. (The FM ratings task of section 6 writes ``(z - b)^2 / 2``; a
    learner that wants that halves this loss.)

    >>> SquaredLoss().value(np.array([1.0, 3.0]), 1.0).tolist()
    [0.0, 4.0]
    """

    name = "squared"

    def value(self, z, y):
        return (np.asarray(z, dtype=float) - y) ** 2

    def derivative(self, z, y):
        return 2.0 * (np.asarray(z, dtype=float) - y)

    def value_and_derivative(self, z: float, y: float) -> tuple[float, float]:
        residual = z - y
        return residual * residual, 2.0 * residual


class LogisticLoss(Loss):
    r"""Logistic loss :math:`\log(1 + e^{-y z})` for labels in {-1, +1}.

    Derivative :math:`-y\,\sigma(-y z)` with :math:`\sigma` the logistic function. Both are
    computed stably (``np.logaddexp``, ``scipy.special.expit``): no overflow for
    ``|z|`` in the thousands. Used for FM classification (docs/algorithms.md section 6).

    >>> LogisticLoss().value(np.array([-1000.0, 1000.0]), 1.0).tolist()
    [1000.0, 0.0]
    """

    name = "logistic"

    def value(self, z, y):
        return np.logaddexp(0.0, -np.asarray(y, dtype=float) * z)

    def derivative(self, z, y):
        y = np.asarray(y, dtype=float)
        return -y * expit(-y * z)

    def value_and_derivative(self, z: float, y: float) -> tuple[float, float]:
        margin = -y * z  # loss log(1 + e^margin), derivative -y sigma(margin), both stably
        if margin > 0:
            tail = math.exp(-margin)
            return margin + math.log1p(tail), -y / (1.0 + tail)
        tail = math.exp(margin)
        return math.log1p(tail), -y * tail / (1.0 + tail)


class AbsoluteLoss(Loss):
    r"""Absolute loss :math:`|z - y|`; subgradient :math:`\mathrm{sign}(z - y)` (0 at z = y).

    The regression loss of Wan & Zhang's ADA-FD experiments (docs/algorithms.md section 4).

    >>> AbsoluteLoss().derivative(np.array([0.0, 1.0, 2.0]), 1.0).tolist()
    [-1.0, 0.0, 1.0]
    """

    name = "absolute"

    def value(self, z, y):
        return np.abs(np.asarray(z, dtype=float) - y)

    def derivative(self, z, y):
        return np.sign(np.asarray(z, dtype=float) - y)


class SquaredHingeLoss(Loss):
    r"""Squared hinge loss :math:`\max(0, 1 - y z)^2`; derivative :math:`-2 y \max(0, 1 - y z)`.

    Smooth, for labels in {-1, +1}.

    >>> SquaredHingeLoss().value(np.array([-1.0, 0.0, 2.0]), 1.0).tolist()
    [4.0, 1.0, 0.0]
    """

    name = "squared_hinge"

    def value(self, z, y):
        return self._margin_gap(z, y) ** 2

    def derivative(self, z, y):
        return -2.0 * np.asarray(y, dtype=float) * self._margin_gap(z, y)

    @staticmethod
    def _margin_gap(z, y):
        return np.maximum(0.0, 1.0 - np.asarray(y, dtype=float) * z)


LOSSES: dict[str, type[Loss]] = {
    cls.name: cls for cls in (SquaredLoss, LogisticLoss, AbsoluteLoss, SquaredHingeLoss)
}


def get_loss(loss: str | Loss) -> Loss:
    """The loss called ``loss`` (one of :data:`LOSSES`); a :class:`Loss` is returned as is.

    >>> get_loss("squared")
    SquaredLoss()
    >>> get_loss("hinge")
    Traceback (most recent call last):
    ...
    ValueError: loss must be one of 'squared', 'logistic', 'absolute', 'squared_hinge', got 'hinge'
    """
    if isinstance(loss, Loss):
        return loss
    if not isinstance(loss, str) or loss not in LOSSES:
        valid = ", ".join(repr(name) for name in LOSSES)
        raise ValueError(f"loss must be one of {valid}, got {loss!r}")
    return LOSSES[loss]()


CLASSIFICATION_LOSSES = ("logistic", "squared_hinge")
"""The losses whose labels are classes, -1 or +1 (docs/algorithms.md section 0.3)."""


def check_label(y, loss: str, name: str = "y", *, bound: float = math.inf) -> float:
    """A finite label with ``|y| <= bound``; -1 or +1 for a loss in
    :data:`CLASSIFICATION_LOSSES`, whose labels are classes (docs/algorithms.md section 0.3).
    Returns it as a float.

    >>> check_label(1, "logistic")
    1.0
    >>> check_label(3.0, "logistic")
    Traceback (most recent call last):
    ...
    ValueError: y must be -1 or +1 for the logistic loss, got 3.0
    """
    if type(y) is not float or not abs(y) <= bound:  # the common case skips the generic check
        y = check_float(name, y, minimum=-bound, maximum=bound)
    if loss in CLASSIFICATION_LOSSES and y != 1.0 and y != -1.0:
        raise ValueError(f"{name} must be -1 or +1 for the {loss} loss, got {y}")
    return y


def check_labels(y: np.ndarray, loss: str, name: str = "y", *, bound: float = math.inf) -> None:
    """:func:`check_label` for every entry of a float array, at numpy speed; the error names
    the first bad label (``y[3]``).

    >>> check_labels(np.array([1.0, -1.0, 0.0]), "logistic")
    Traceback (most recent call last):
    ...
    ValueError: y[2] must be -1 or +1 for the logistic loss, got 0.0
    """
    bad = ~(np.abs(y) <= bound)  # NaN is bad too
    if loss in CLASSIFICATION_LOSSES:
        bad |= (y != 1.0) & (y != -1.0)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        check_label(float(y[first]), loss, f"{name}[{first}]", bound=bound)  # raises
