"""The perturbation pass (EXPLORER_PERTURB) moves every input by ~1e-13, deterministically."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from explorer.perturb import RELATIVE, perturb_with

PROBE = """
import json, numpy as np
from explorer import FrequentDirections
from explorer.streams import load_stream
X = load_stream("low rank + noise", n=60, d=8, seed=0)
sk = FrequentDirections(8, 4)
sk.extend(np.random.default_rng(1).standard_normal((30, 8)))
# The rows of B are singular vectors, defined up to sign: compare B^T B.
print(json.dumps({"X": X[:3].tolist(), "B": sk.gram().tolist()}))
"""


def _probe(seed):
    env = {k: v for k, v in os.environ.items() if k != "EXPLORER_PERTURB"}
    if seed is not None:
        env["EXPLORER_PERTURB"] = seed
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=120)
    return done


@pytest.mark.timeout(300)
def test_a_seed_moves_streams_and_learner_inputs_in_the_last_bits_only_and_repeatably():
    plain = json.loads(_probe(None).stdout)
    one, again, two = (json.loads(_probe(s).stdout) for s in ("1", "1", "2"))
    assert one == again  # deterministic by seed
    for key in ("X", "B"):
        a, b, c = (np.array(r[key]) for r in (plain, one, two))
        assert not np.array_equal(a, b) and not np.array_equal(b, c)
        scale = 1e-10 * np.abs(a).max()
        assert np.allclose(a, b, rtol=0, atol=scale) and np.allclose(a, c, rtol=0, atol=scale)


@pytest.mark.timeout(120)
def test_a_seed_that_is_not_an_integer_is_refused_with_what_is_allowed():
    done = _probe("one")
    assert done.returncode != 0 and "EXPLORER_PERTURB must be an integer seed" in done.stderr


@given(arrays(np.float64, st.integers(0, 20), elements=st.floats(allow_nan=True, allow_infinity=True)),
       st.integers(0, 2 ** 64 - 1))
def test_each_entry_moves_by_at_most_the_relative_size_and_zeros_nan_inf_stay(x, seed):
    y = perturb_with(x, seed)
    assert y is not x or x.size == 0
    finite = np.isfinite(x)
    assert np.array_equal(np.isnan(y), np.isnan(x)) and np.array_equal(y[~finite & ~np.isnan(x)], x[~finite & ~np.isnan(x)])
    assert np.all(np.abs(y[finite] - x[finite]) <= RELATIVE * np.abs(x[finite]))
    assert np.all(np.isfinite(y[finite])) and np.all(y[x == 0] == 0)
    # Equal entries stay equal (a symmetric matrix stays symmetric).
    assert np.array_equal(perturb_with(np.concatenate([x, x]), seed), np.concatenate([y, y]), equal_nan=True)
