"""Frequent Directions on extreme but finite input: handled exactly, or refused with the
state unchanged; never a hang, never an inf or NaN in the buffer (issue 13, defects 1-3).

FD is scale-equivariant: sketching ``s A`` gives ``s B``. Rows whose squares underflow
(entries near 1e-200) are shrunk on a buffer scaled up by a power of two, so they keep
their directions; rows whose total squared norm would pass ``MAX_SQUARED_MASS`` (entries
near 1e155 and up) would overflow every shrink and are refused before anything changes.
Every test runs under a time limit, so a hang fails instead of blocking the suite.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import explorer.sketch.shrink as sketch_module
from explorer import compiled
from explorer import (
    FrequentDirections, GeneralizedFrequentDirections, RandomProjectionSketch, RobustFrequentDirections,
)
from explorer.sketch import MAX_SQUARED_MASS
from learner_checks import (
    assert_finite_state, continues_like_a_twin, learned_or_refused_cleanly, refused_cleanly,
)
from state_checks import snapshot

pytestmark = pytest.mark.timeout(60)

KINDS = [
    pytest.param(lambda d, m: FrequentDirections(d, m), id="fd"),
    pytest.param(lambda d, m: FrequentDirections(d, m, fast=True), id="fd-fast"),
    pytest.param(lambda d, m: RobustFrequentDirections(d, m, alpha0=0.5), id="rfd"),
    pytest.param(lambda d, m: RobustFrequentDirections(d, m, alpha0=0.5, fast=True), id="rfd-fast"),
]


def test_an_overflowing_row_is_refused_and_the_next_rows_do_not_hang():
    """Defect 1: the rows were accepted, the shrink stored inf and the next LAPACK call
    never returned (through an upload it froze the whole dashboard server)."""
    fd = FrequentDirections(3, 2, fast=True)
    refused_cleanly(fd, lambda: fd.extend([[1e155, 2e155, 3e155], [0, 1, 0], [0, 0, 1], [1, 1, 1]]),
                    "row 0 is too large")
    fd.extend(np.ones((3, 3)))
    assert np.isfinite(fd.sketch).all() and fd.n_seen == 3


def test_a_huge_row_is_refused_instead_of_wiping_the_sketch():
    """Defect 2: ``update(A[2] * 1e160)`` left 0 rows and delta_total = 0, silently."""
    A = np.random.default_rng(0).standard_normal((3, 6))
    fd = FrequentDirections(6, 3)
    fd.extend(A[:2])
    refused_cleanly(fd, lambda: fd.update(A[2] * 1e160), "too large")
    assert fd.rank == 2


@pytest.mark.parametrize("make", KINDS)
@pytest.mark.parametrize("path", ["numpy", "compiled"])
def test_a_failed_shrink_restores_the_sketch_and_the_next_update_works(make, path, monkeypatch):
    """Defect 3: a shrink that raised left the buffer full; every later update then
    raised IndexError. Now the call is undone and says which row failed. On the compiled
    path a failed shrink goes to the numpy rule, which fails here too and says so."""
    rng = np.random.default_rng(1)
    sk = make(5, 3)
    sk.extend(rng.standard_normal((4, 5)))

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge")
    monkeypatch.setattr(sketch_module, "svd_shrink", broken)
    monkeypatch.setattr(sketch_module, "gram_shrink", broken)
    monkeypatch.setattr(compiled, "enabled", lambda: path == "compiled")
    monkeypatch.setattr(compiled, "shrink", lambda *args: (-1, 0.0))  # LAPACK's failure code
    refused_cleanly(sk, lambda: sk.extend(rng.standard_normal((9, 5))), "the shrink failed")
    with pytest.raises(ValueError, match="the shrink failed"):
        for _ in range(9):
            sk.update(rng.standard_normal(5))
    monkeypatch.undo()
    sk.extend(rng.standard_normal((9, 5)))  # works again
    assert np.isfinite(sk.sketch).all() and sk.rank < sk.capacity


@pytest.mark.parametrize("make", KINDS)
@pytest.mark.parametrize("scale", [2.0 ** -700, 1e-200, 1e-100, 1e100, 1e140])
def test_fd_is_scale_equivariant_at_extreme_scales(make, scale):
    """Sketching ``s A`` gives ``s B``: tiny rows are no longer lost to underflow."""
    A = np.random.default_rng(2).standard_normal((40, 6))
    scaled, plain = make(6, 3), make(6, 3)
    scaled.extend(A * scale)
    plain.extend(A)
    assert scaled.rank == plain.rank > 0
    got = (scaled.rows / scale).T @ (scaled.rows / scale)
    expected = plain.rows.T @ plain.rows
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_generalized_fd_refuses_a_huge_row_in_a_batch_without_taking_the_rows_before_it():
    sk = GeneralizedFrequentDirections(3, 2)
    refused_cleanly(sk, lambda: sk.extend([[1.0, 0, 0], [0, 1.0, 0], [1e200, 0, 0]], [1.0, -1.0, 1.0]),
                    "too large")


finite_scales = st.integers(min_value=-300, max_value=300).map(lambda e: 10.0 ** e)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 30), d=st.integers(1, 6),
       m=st.integers(2, 5), fast=st.booleans(), scales=st.lists(finite_scales, min_size=1, max_size=3))
def test_fuzz_extreme_scales_refuse_cleanly_or_keep_the_guarantee(seed, n, d, m, fast, scales):
    """Batches at scales from 1e-300 to 1e300 (and scale jumps between them): each call
    is refused with the state bit-identical, or accepted with a finite state in which
    ``A^T A - B^T B`` is PSD and at most ``delta_total`` in norm (up to rounding)."""
    rng = np.random.default_rng(seed)
    sk = RobustFrequentDirections(d, m, alpha0=0.0, fast=fast)
    accepted = []
    for scale in scales:
        X = rng.standard_normal((n, d)) * scale
        refusal = learned_or_refused_cleanly(sk, lambda: sk.extend(X))
        if isinstance(refusal, ValueError):
            assert "too large" in str(refusal)
            continue
        accepted.append(X)
        assert np.isfinite(sk.sketch).all() and np.isfinite(sk.delta_total)
        assert_finite_state(sk)
        assert sk.frobenius_squared <= MAX_SQUARED_MASS
    if not accepted:
        return
    A = np.vstack(accepted)
    top = float(np.abs(A).max())
    if top == 0.0:
        return
    A_s, B_s = A / top, sk.rows / top  # compare at a scale where the Gram matrices are finite
    E = A_s.T @ A_s - B_s.T @ B_s
    slack = 1e-9 * max(float(np.sum(A_s ** 2)), 1e-300)
    eigenvalues = np.linalg.eigvalsh((E + E.T) / 2)
    assert eigenvalues.min() >= -slack
    # Below entries of ~1e-154 delta (of order top^2) underflows: each shrink then books
    # the smallest normal number, an upper bound, so the bound is still checked.
    with np.errstate(over="ignore"):
        assert eigenvalues.max() <= sk.delta_total / top / top + slack


def test_a_state_saved_before_the_total_was_kept_loads_with_a_lower_bound():
    A = np.random.default_rng(3).standard_normal((30, 5))
    fd = FrequentDirections(5, 3)
    fd.extend(A)
    state = fd.state_dict()
    del state["frobenius_squared"]
    loaded = FrequentDirections.from_state_dict(state)
    assert np.sum(fd.rows ** 2) + fd.delta_total <= loaded.frobenius_squared <= fd.frobenius_squared
    np.testing.assert_allclose(fd.frobenius_squared, np.sum(A ** 2), rtol=1e-12)


def test_generalized_fd_names_the_refused_row_as_the_caller_numbered_it():
    sk = GeneralizedFrequentDirections(3, 2)
    with pytest.raises(ValueError, match="X row 2 is too large"):
        sk.extend([[1.0, 0, 0], [0, 1.0, 0], [1e200, 0, 0]], [1.0, -1.0, 1.0])


# -- defects 8 and 9: state files, odd input types, the random projection --------------------

@pytest.mark.parametrize("x", [[1 + 2j, 0, 0], ["1", "2", "3"], [b"1", b"2", b"3"], [None, 1, 2]])
def test_complex_numbers_and_strings_are_refused_not_converted(x):
    """Defect 9: a complex row lost its imaginary part and a row of numeric strings was parsed."""
    fd = FrequentDirections(3, 2)
    with pytest.raises(ValueError, match="real numbers"):
        fd.update(x)
    assert fd.n_seen == 0


def test_a_recorder_limit_must_be_a_positive_integer_not_a_bool():
    from explorer import Recorder
    with pytest.raises(ValueError, match="limit"):
        Recorder(limit=True)


@pytest.mark.parametrize("seed", [-1, 1.5, "7", True])
def test_the_random_projection_checks_its_seed(seed):
    with pytest.raises(ValueError, match="seed"):
        RandomProjectionSketch(3, 2, seed=seed)


def test_the_random_projection_refuses_an_overflow_with_its_generator_untouched():
    sk = RandomProjectionSketch(2, 2, seed=0)
    for _ in range(10 ** 4):  # B's entries grow by ~1e150 a row: they pass 1e308 at some row
        before = snapshot(sk)
        refusal = learned_or_refused_cleanly(sk, lambda: sk.update([1e150, 1e150]))
        if isinstance(refusal, ValueError):
            assert "overflow" in str(refusal)
            break
    else:
        pytest.fail("B never overflowed")
    continues_like_a_twin(sk, before, lambda s: (s.update([1.0, 2.0]), s.sketch.tolist())[1])


@pytest.mark.parametrize("change, key", [
    (lambda s: s.__setitem__("filled", -1), "filled"),
    (lambda s: s.__setitem__("n_shrinks", -3), "n_shrinks"),
    (lambda s: s["buffer"].__setitem__((0, 0), np.nan), "buffer"),
    (lambda s: s.__setitem__("buffer", s["buffer"][:-1]), "buffer"),
    (lambda s: s.__setitem__("frobenius_squared", 0.0), "frobenius_squared"),
    (lambda s: s.__setitem__("filled", 0), "buffer"),  # rows past 'filled' would be ghosts
    (lambda s: s.pop("delta_total"), "delta_total"),
])
def test_a_tampered_fd_state_is_refused_naming_the_key_and_the_live_sketch_is_untouched(change, key):
    """Defect 8: NaN, negative counters and wrong shapes loaded and ran; a missing key was a KeyError."""
    fd = FrequentDirections(4, 3)
    fd.extend(np.random.default_rng(0).standard_normal((5, 4)))
    state = fd.state_dict()
    change(state)
    with pytest.raises(ValueError, match=f"'{key}'"):
        FrequentDirections.from_state_dict(state)
    live = FrequentDirections(4, 3)
    live.extend(np.ones((2, 4)))
    refused_cleanly(live, lambda: live.load_state_dict(state), f"'{key}'")


def test_subnormal_rows_are_sketched_not_lost():
    """The rescale before a shrink overflowed to inf for a subnormal largest entry (2^1063),
    so the rows were dropped with delta_total 0 (found by the AdaGrad fuzz at scale 1e-160)."""
    fd = FrequentDirections(3, 2)
    fd.extend(np.diag([1e-320, 1e-321, 1e-322]))
    # FD keeps the leading direction, shrunk: sqrt(sigma_1^2 - sigma_2^2 - ...) ~ 0.995e-320
    # (delta itself, ~1e-642, is below the smallest float)
    assert fd.rank == 1
    assert 0.99e-320 <= fd.rows[0, 0] <= 1e-320 and not fd.rows[0, 1:].any()


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("scale", [1e-160, 1e-300, 5e-324])
def test_a_delta_that_underflows_is_booked_as_an_upper_bound_not_as_zero(scale, fast):
    """Before: rows of 1e-300 were shrunk (on a scaled-up buffer) but each delta, of order
    1e-600, was stored as 0: delta_total = 0 claimed an exact sketch while A^T A - B^T B
    was of the order of ||A||^2 (found by the entry-point fuzz through sketch_array)."""
    A = np.random.default_rng(5).standard_normal((40, 5)) * scale
    fd = FrequentDirections(5, 3, fast=fast)
    fd.extend(A)
    assert fd.n_shrinks > 0 and fd.delta_total > 0
    k = min(-int(np.frexp(float(np.abs(A).max()))[1]), 1000)
    A_s, B_s = np.ldexp(A, k), np.ldexp(fd.rows, k)
    error = np.linalg.eigvalsh(A_s.T @ A_s - B_s.T @ B_s)
    with np.errstate(over="ignore"):
        assert error[-1] <= np.ldexp(fd.delta_total, 2 * k) + 1e-9 * np.sum(A_s ** 2)
