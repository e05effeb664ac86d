"""The variance minimizers' input is a covariance (explorer/pca/variance.py, Algorithms 5 and 6).

Their loss ``y^T C y`` is a variance: a ``C`` with a negative direction would pay a negative
one (``VarianceMinSimplex.learn(-I)`` paid -0.5). Such a ``C`` is refused with a
``ValueError`` and the learner is bit-identical; every covariance, rank-deficient, tiny or
huge, is still learned.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.pca import VarianceMinSimplex, VarianceMinSphere
from explorer.pca.variance import PSD_TOLERANCE, as_covariance
from state_checks import assert_same_state, snapshot

N = 4


def _learners():
    return [VarianceMinSimplex(N, eta=1.0, alpha=0.1), VarianceMinSphere(N, eta=1.0, alpha=0.1, seed=0)]


def _fed(learner, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(3):
        x = rng.standard_normal(N)
        learner.learn(np.outer(x, x) / 10)
    return learner


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2 ** 16), rank=st.integers(0, N), depth=st.floats(1e-8, 10.0),
       scale=st.sampled_from([1e-300, 1e-8, 1.0, 1e3]), which=st.integers(0, 1))
def test_a_matrix_with_a_negative_direction_is_refused_and_nothing_changes(seed, rank, depth, scale, which):
    """C = (a PSD matrix of some rank) - depth u u^T, at any scale the size checks allow, with
    a clearly negative eigenvalue: refused by ``learn``, ``step`` and the sphere's
    ``expected_loss`` alike, the learner bit-identical."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((N, rank))
    u = rng.standard_normal(N)
    u /= np.linalg.norm(u)
    C = A @ A.T - depth * np.outer(u, u)
    smallest = np.linalg.eigvalsh(C)[0]
    if smallest >= -1e-6 * np.abs(C).max():  # u inside A's range and A large: still PSD-ish
        return
    C = (C + C.T) / 2 * scale
    learner = _fed(_learners()[which], seed)
    before = snapshot(learner)
    for call in (learner.learn, learner.step) + ((learner.expected_loss,) if which else ()):
        with pytest.raises(ValueError, match="positive semidefinite.*nothing was updated"):
            call(C)
        assert_same_state(snapshot(learner), before)


@pytest.mark.parametrize("which", [0, 1])
def test_minus_the_identity_is_refused(which):
    learner = _fed(_learners()[which], 1)
    before = snapshot(learner)
    with pytest.raises(ValueError, match="an eigenvalue -1"):
        learner.learn(-np.eye(N))
    assert_same_state(snapshot(learner), before)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2 ** 16), rank=st.integers(0, N),
       scale=st.sampled_from([5e-324, 1e-300, 1e-8, 1.0, 1e3]), which=st.integers(0, 1))
def test_every_covariance_is_learned_with_a_non_negative_loss(seed, rank, scale, which):
    """Rank-deficient sample covariances, x x^T (also as the vector x), at any scale the size
    checks allow: accepted, and the variance paid is never negative (up to rounding)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rank, N))
    C = X.T @ X / max(rank, 1) * scale
    learner = _fed(_learners()[which], seed)
    loss = learner.learn(C)
    assert loss >= -PSD_TOLERANCE * np.abs(C).max()
    x = rng.standard_normal(N)
    assert learner.learn(x) >= 0.0
    assert learner.learn(np.outer(x, x)) >= -1e-15 * (x @ x)


def test_as_covariance_keeps_the_loss_checks():
    """The PSD check comes on top of as_loss_matrix's: shape, symmetry and size still refused."""
    with pytest.raises(ValueError, match="symmetric"):
        as_covariance(np.triu(np.ones((N, N))), N)
    with pytest.raises(ValueError, match="n x n"):
        as_covariance(np.eye(N + 1), N)
    with pytest.raises(ValueError, match="too large a step"):
        as_covariance(np.eye(N) * 1e7, N, eta=1.0)
    assert as_covariance(np.zeros((N, N)), N)[1] is None
