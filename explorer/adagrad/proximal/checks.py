"""What a loaded proximal matrix must satisfy (``read_state``): where its entries sit in the
learner's state, and the checks of a Gram matrix, orthonormal columns and a spectrum.

>>> PREFIX, ORTHONORMALITY_TOLERANCE
('proximal.', 1e-06)
"""

from __future__ import annotations

import numpy as np

from ...state import StateReader

__all__ = ["PREFIX", "ORTHONORMALITY_TOLERANCE", "check_gram", "check_orthonormal", "check_spectrum"]

PREFIX = "proximal."
"""Where the proximal matrix's entries sit in the learner's state dict."""

ORTHONORMALITY_TOLERANCE = 1e-6
"""How far a loaded state's orthonormal matrices (ADA-FFD's ``V``, the eigenvectors) may be
from orthonormal, ``max |Q^T Q - I|``, and ADA-FD's basis rows from norm 1: runs keep them
near 1e-15 (tests/test_adagrad.py checks ADA-FFD's 1e-10 over 100,000 rounds)."""


def check_gram(reader: StateReader, key: str, G: np.ndarray) -> None:
    """A sum of outer products ``g g^T`` is exactly symmetric (``g_i g_j = g_j g_i`` in
    floating point too) with a non-negative diagonal."""
    if not np.array_equal(G, G.T):
        raise reader.refuse(key, "symmetric (a sum of g g^T)", "an asymmetric matrix")
    if (np.diag(G) < 0).any():
        raise reader.refuse(key, "with a non-negative diagonal (a sum of g g^T)", float(np.diag(G).min()))


def check_orthonormal(reader: StateReader, key: str, Q: np.ndarray) -> None:
    """Orthonormal columns, to :data:`ORTHONORMALITY_TOLERANCE`."""
    error = float(np.max(np.abs(Q.T @ Q - np.eye(Q.shape[1])), initial=0.0))
    if not error <= ORTHONORMALITY_TOLERANCE:
        raise reader.refuse(key, f"orthonormal columns (max |Q^T Q - I| <= {ORTHONORMALITY_TOLERANCE:g})",
                            error)


def check_spectrum(reader: StateReader, key: str, values: np.ndarray, trace: float) -> None:
    """Eigenvalues of a PSD matrix as :func:`eigh` keeps them: >= 0, descending, summing to
    its (finite) trace, up to rounding: 1e-6 relative, plus the subnormal range."""
    if not np.isfinite(trace):
        raise reader.refuse(key, "eigenvalues of a matrix with a finite trace", trace)
    if (values < 0).any() or (values[:-1] < values[1:]).any():
        raise reader.refuse(key, "non-negative and descending (eigenvalues of a PSD matrix)",
                            values.tolist()[:8])
    if not abs(float(values.sum()) - trace) <= 1e-6 * trace + 1e-290:
        raise reader.refuse(key, f"eigenvalues summing to the matrix's trace {trace:.6g}",
                            float(values.sum()))
