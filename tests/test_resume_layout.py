"""Resume is bit-identical on every BLAS kernel: a state's arrays keep their memory layout.

OpenBLAS picks a different kernel for ``A @ x`` when ``A`` is C- or Fortran-ordered (or a
strided view); on some CPUs (SkylakeX, Sandybridge, Nehalem kernels) those kernels round
differently in the last bit. LAPACK returns Fortran-ordered arrays, while a state dict's
copies used to be C-ordered, so a learner that was saved and loaded multiplied the same
numbers in another order than one that never stopped (issue 12: static PCA's first loss
after a resume moved by one ulp under ``OPENBLAS_CORETYPE=Sandybridge``).

The fix is a rule every stateful class follows: the matrices it keeps are contiguous (C or
Fortran order, never a strided view, which no file can reproduce), and ``state_dict`` and
``from_state_dict`` copy them in the same layout (:func:`explorer.state.copy_array`). These tests walk every class registered with ``@stateful`` and
check the rule after a few rounds, and that a saved and loaded object holds the same
arrays in the same layout as the one it came from. They fail on any machine, whatever its
kernel; ``make test`` also runs the resume tests under ``OPENBLAS_CORETYPE=Sandybridge``.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from explorer import load_state, save_state
from explorer.state import registered_kinds
from stateful_zoo import FEEDS, fed as _fed


def held_arrays(obj, path="", seen=None):
    """Every numpy matrix (2-D or more) an object keeps, found through its attributes (recursively into
    the package's own objects, lists, tuples and dicts), as ``(path, array)`` pairs."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return [(path, obj)] if obj.ndim >= 2 else []
    if isinstance(obj, (list, tuple)):
        return [pair for i, item in enumerate(obj) for pair in held_arrays(item, f"{path}[{i}]", seen)]
    if isinstance(obj, dict):
        return [pair for key, item in obj.items() for pair in held_arrays(item, f"{path}[{key!r}]", seen)]
    if type(obj).__module__.startswith("explorer") and hasattr(obj, "__dict__"):
        # last_* attributes report the previous round and are not carried into the next one
        return [pair for name, item in vars(obj).items() if not name.startswith("last_")
                for pair in held_arrays(item, f"{path}.{name}", seen)]
    return []


def test_every_stateful_class_is_covered():
    assert sorted(FEEDS) == sorted(registered_kinds())


def _round_trip(obj):
    buffer = io.BytesIO()
    save_state(obj, buffer)
    buffer.seek(0)
    return load_state(buffer)


@pytest.mark.parametrize("name", sorted(FEEDS))
def test_held_matrices_are_contiguous(name):
    """The rule: a matrix a stateful object keeps between rounds is C- or Fortran-contiguous
    (a strided view, such as LAPACK's eigenvectors reversed, takes BLAS's slow path or none,
    and a saved copy of it could not take the same one)."""
    obj = _fed(name)
    bad = [(path, a.strides) for path, a in held_arrays(obj)
           if not (a.flags.c_contiguous or a.flags.f_contiguous)]
    assert bad == [], f"{name} keeps strided (non-contiguous) matrices: {bad}"


@pytest.mark.blas_kernels
@pytest.mark.parametrize("name", sorted(FEEDS))
def test_loaded_state_holds_the_same_arrays_in_the_same_layout(name):
    straight = _fed(name)
    resumed = _round_trip(straight)
    a, b = held_arrays(straight), held_arrays(resumed)
    assert [path for path, _ in a] == [path for path, _ in b]
    for (path, x), (_, y) in zip(a, b):
        assert x.flags.c_contiguous == y.flags.c_contiguous, path
        assert x.flags.f_contiguous == y.flags.f_contiguous, path
        np.testing.assert_array_equal(x, y, err_msg=path)


@pytest.mark.blas_kernels
@pytest.mark.parametrize("name", sorted(FEEDS))
def test_save_load_continue_is_bit_identical(name):
    """Stop after 20 rounds, save, load, run 20 more: the same numbers as never stopping,
    to the last bit, under whatever BLAS kernel this process uses."""
    make, feed = FEEDS[name]
    straight, stopped = make(), make()
    feed(straight, np.random.default_rng(5), 20)
    feed(stopped, np.random.default_rng(5), 20)
    resumed = _round_trip(stopped)
    first = feed(straight, np.random.default_rng(6), 20)
    second = feed(resumed, np.random.default_rng(6), 20)
    if first is not None:
        np.testing.assert_array_equal(np.asarray(first, dtype=float), np.asarray(second, dtype=float))
    for (path, x), (_, y) in zip(held_arrays(straight), held_arrays(resumed)):
        np.testing.assert_array_equal(x, y, err_msg=path)
