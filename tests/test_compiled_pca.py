"""Online PCA's compiled mixture decomposition (:mod:`explorer.pca.compiled`) against the numpy rule.

Every randomized learner of the family decomposes its weights into corners (Algorithm 2)
each round, by numba's :func:`~explorer.pca.compiled.mixture` once it is ready and by
:func:`~explorer.pca.simplex.decompose`'s numpy passes otherwise. Both must give the same
numbers bit for bit (probabilities, supports, and so the sampled corner), so a run is the
same whether the compile finished before it, during it or never: checked on weights from the
capped simplex (uniform, spread over 300 orders of magnitude, with zeros), on the sum the
kernel adds up in numpy's order, and on whole runs of every learner that decomposes.
Skipped only when numba is not installed (the test extra installs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import explorer
from explorer import compiled
from explorer.pca import AdaptiveBestSubset, OnlineAdaptivePCA, cap
from explorer.pca.simplex import decompose
from explorer.streams import changing_subspace
from state_checks import assert_same_state

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("compiled_ready")]


@st.composite
def capped_weights(draw):
    """A point of the capped simplex B_d^n, as a round passes it (``np.minimum(w, 1/d)``)."""
    n = draw(st.integers(2, 160))
    d = draw(st.integers(1, n - 1))
    kind = draw(st.sampled_from(["uniform", "spread", "zeros"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        raw = np.ones(n)
    else:
        raw = np.exp(rng.standard_normal(n) * draw(st.floats(0.1, 100.0)))
        if kind == "zeros":
            raw[rng.permutation(n)[:draw(st.integers(0, n - d))]] = 0.0
    raw = raw / raw.sum()
    return np.minimum(cap(raw, d), 1.0 / d), d


@given(capped_weights())
def test_the_compiled_decomposition_is_the_numpy_rules_bit_for_bit(case):
    w, d = case
    before = compiled.COUNTS["decompositions"]
    probs, supports = decompose(w, d)
    assert compiled.COUNTS["decompositions"] == before + 1  # the compiled path ran
    with compiled.numpy_only():
        expected_probs, expected_supports = decompose(w, d)
    assert probs.tobytes() == expected_probs.tobytes()
    assert supports.dtype == expected_supports.dtype and np.array_equal(supports, expected_supports)
    assert w.tobytes() == case[0].tobytes()  # the caller's weights untouched


@pytest.mark.parametrize("w, d", [(np.full(4, 0.25), 5), (np.full(4, 0.25), 0), (np.full((2, 2), 0.25), 1),
                                  (np.array([0.5, np.nan, 0.5]), 1)])
def test_what_cannot_be_a_capped_simplex_point_goes_to_the_numpy_rule(w, d):
    """decompose reads its input unchecked; the kernel would read past ``w`` for d > n: such
    input never reaches it, and the numpy rule's outcome (an error or a result) is the answer."""
    before = compiled.COUNTS["decompositions"]
    try:
        with compiled.numpy_only():
            expected = decompose(w, d)
    except (IndexError, ValueError) as error:
        with pytest.raises(type(error)):
            decompose(w, d)
    else:
        got = decompose(w, d)
        assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(got, expected))
    assert compiled.COUNTS["decompositions"] == before


@given(st.integers(0, 1100), st.integers(0, 2**32 - 1), st.floats(0.0, 300.0))
def test_numpy_sum_adds_in_numpys_order(n, seed, spread):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n) * np.exp(rng.standard_normal(n) * spread / 10)
    assert compiled.numpy_sum(a) == a.sum() or np.isnan(a.sum())


LEARNERS = {
    "online PCA": lambda: OnlineAdaptivePCA(20, 2, eta=1.0, alpha=1e-5, seed=3),
    "static online PCA": lambda: OnlineAdaptivePCA(20, 17, eta=3.0, alpha=0.0, seed=4),
    "best subset": lambda: AdaptiveBestSubset(12, 3, eta=0.5, alpha=1e-3, seed=5),
}


@pytest.mark.parametrize("name", LEARNERS)
def test_whole_runs_are_the_same_on_both_paths(name):
    X, _ = changing_subspace(n_segments=3, segment_length=60, n=20, rank=2, seed=1)
    if name == "best subset":
        X = np.abs(np.random.default_rng(2).standard_normal((180, 12)))
    before = compiled.COUNTS["decompositions"]
    fast = LEARNERS[name]()
    losses = fast.progressive(X)
    assert compiled.COUNTS["decompositions"] >= before + len(X)
    with compiled.numpy_only():
        reference = LEARNERS[name]()
        expected = reference.progressive(X)
    for column in ("loss", "expected_loss"):
        assert losses[column].tobytes() == expected[column].tobytes()
    assert_same_state(fast.state_dict(), reference.state_dict())


@pytest.mark.slow
def test_a_changed_callee_module_gets_a_cache_of_its_own(tmp_path):
    """numba checks only a function's own file for changes: a kernel cached beside its module
    kept a changed callee of explorer/compiled.py (numpy_sum) and crashed. Every version of the
    compiled modules' sources now caches into a folder of its own under NUMBA_CACHE_DIR."""
    package = tmp_path / "explorer"
    shutil.copytree(Path(explorer.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "EXPLORER_COMPILED": "1",
           "PYTHONPATH": str(tmp_path)}
    code = ("import numpy as np, explorer; from explorer import compiled; assert compiled.wait(240); "
            "assert explorer.__file__.startswith(%r); from explorer.pca.simplex import decompose; "
            "print(decompose(np.full(20, 0.05), 18)[0].size)" % str(tmp_path))

    def folders_after_a_run() -> list[str]:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=280,
                              env=env, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout.split() == ["10"], done.stderr[-2000:]
        return sorted(path.name for path in (tmp_path / "cache").iterdir())

    first = folders_after_a_run()
    assert len(first) == 1 and first[0].startswith("numba-")
    assert any((tmp_path / "cache" / first[0]).rglob("*mixture*.nbi"))
    assert folders_after_a_run() == first  # loaded from that cache
    with open(package / "compiled.py", "a") as source:
        source.write("\n# a change of the callee's module\n")
    second = folders_after_a_run()
    assert len(second) == 2 and set(first) < set(second)
