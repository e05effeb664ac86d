"""Last-bit perturbation of the data entering ``explorer``: a machine-independence check.

Another CPU's BLAS kernel rounds in another order and changes results in their last bits;
a number a lesson prints is only machine-independent if it survives such changes. No CI
can run every kernel, so this module makes the change itself: with the environment
variable ``EXPLORER_PERTURB`` set to an integer seed, every float array that enters a
learner, a sketch, a metric or a stream (``explorer._validation``'s row and matrix checks,
the stream generators and the bundled data sets, and the random directions a sketch draws:
the random projection's and Oja's start) is multiplied entrywise by
``1 + 1e-13 u`` with ``u`` in [-1, 1), a pseudo-random function of the seed and the
entry's own bits. The variable is read once, here, at import; unset (or empty) changes
nothing and costs one test per call.

Because ``u`` depends only on the seed and the value, the perturbation is deterministic:
the same data give the same perturbed data in every process, so a resumed run still equals
one that never stopped, equal entries stay equal (a symmetric matrix stays symmetric) and
zeros stay zero. ``make test`` runs every notebook and the resume and determinism tests
under two seeds; a checked output that changes there is machine-dependent and must print
a fact with a margin instead (``explorer.report``).

>>> import numpy as np
>>> x = np.array([1.0, -2.5, 0.0])
>>> y = perturb_with(x, seed=1)
>>> bool(np.all(np.abs(y - x) <= 1e-13 * np.abs(x))), bool(y[2] == 0.0), bool(np.array_equal(perturb_with(x, seed=1), y))
(True, True, True)
>>> bool(np.array_equal(perturb_with(x, seed=None), x))
True
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["ENVIRONMENT_VARIABLE", "RELATIVE", "SEED", "perturb", "perturb_with"]

ENVIRONMENT_VARIABLE = "EXPLORER_PERTURB"
RELATIVE = 1e-13
"""The largest relative change of an entry: about 450 units in the last place, more than
any kernel's reordering of a short sum, far below any margin a lesson states."""


def _seed_from_environment() -> int | None:
    text = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{ENVIRONMENT_VARIABLE} must be an integer seed (or unset), "
                         f"got {text!r}") from None


SEED: int | None = _seed_from_environment()
"""The seed in force for this process (``None``: no perturbation)."""



def _splitmix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer on uint64 words (a bijective mixing of every bit), in place."""
    z += np.uint64(0x9E3779B97F4A7C15)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


def _key(seed: int) -> np.uint64:
    return _splitmix64(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]


_KEY = None if SEED is None else _key(SEED)


def perturb_with(array: np.ndarray, seed: int | None) -> np.ndarray:
    """``array`` (float64) with each entry ``a`` replaced by ``a (1 + 1e-13 u)``, where
    ``u = h(seed, bits of a)`` in [-1, 1); ``seed=None`` returns ``array`` itself.

    A new array is returned (the input is never written). Non-float arrays are returned
    as they are.
    """
    if seed is None or not isinstance(array, np.ndarray) or array.dtype != np.float64:
        return array
    if array.size == 0:
        return array
    key = _KEY if seed == SEED else _key(seed)
    mixed = np.ascontiguousarray(array).view(np.uint64) ^ key  # a new array
    _splitmix64(mixed)
    u = (mixed >> np.uint64(11)).astype(np.float64)
    u *= RELATIVE * 2.0 ** -52
    u += 1.0 - RELATIVE
    with np.errstate(over="ignore", invalid="ignore"):
        out = (array * u).reshape(array.shape)
    # An entry that the factor would push out of the finite range keeps its value.
    if not np.isfinite(out).all():
        overflow = ~np.isfinite(out) & np.isfinite(array)
        out[overflow] = array[overflow]
    return out


def perturb(array: np.ndarray) -> np.ndarray:
    """:func:`perturb_with` under this process's :data:`SEED` (from ``EXPLORER_PERTURB``)."""
    if SEED is None:
        return array
    return perturb_with(array, SEED)
