"""What the base imports load: ``import explorer``, ``import explorer.dashboard`` and
``import explorer.cli`` pay only for what every user of them needs.

A heavy module that only some functions use (scipy's statistics, optimizers and FFT,
ARPACK, scikit-learn's data sets, numba, torch) is imported inside those functions, so a
dashboard page or a lesson that does not call them does not wait for them at start-up
(``python -X importtime -c "import explorer.dashboard"`` shows the cost;
``benchmarks/README.md`` has the figures). Each import runs in a fresh interpreter, whose
``sys.modules`` is then checked against :data:`HEAVY`.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: Modules the base imports must not load: each costs tens to hundreds of ms at import and
#: serves only some functions, which import it themselves.
HEAVY = (
    "scipy.stats",
    "scipy.optimize",
    "scipy.fft",
    "scipy.sparse.linalg",
    "scipy.signal",
    "scipy.interpolate",
    "scipy.integrate",
    "scipy.spatial",
    "sklearn",
    "pandas",
    "matplotlib",
    "numba",
    "torch",
)

BASE_IMPORTS = ("explorer", "explorer.dashboard", "explorer.cli")


def _loaded_after(module: str) -> list[str]:
    """The :data:`HEAVY` modules in ``sys.modules`` once a fresh interpreter imported ``module``."""
    code = (f"import json, sys\nimport {module}\n"
            f"print(json.dumps(sorted(set({list(HEAVY)!r}) & set(sys.modules))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=_environment())
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _environment() -> dict:
    import os

    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


@pytest.mark.parametrize("module", BASE_IMPORTS)
def test_a_base_import_loads_no_heavy_module(module):
    assert _loaded_after(module) == []


def test_the_check_sees_a_heavy_module_that_is_imported():
    """The probe itself: a module that imports scipy.optimize at the top is caught."""
    assert "scipy.optimize" in _loaded_after("scipy.optimize")


def test_the_functions_that_need_a_heavy_module_still_import_it():
    """The lazily imported modules are there when their functions run."""
    import numpy as np

    from explorer.experiments.fm.metrics import progressive_auc
    from explorer.metrics import covariance_error
    from explorer.pca.variance import best_fixed_portfolio
    from explorer.sketch import FrequentDirections

    u, value = best_fixed_portfolio([[1.0, 0.0], [0.0, 0.25]])  # SLSQP, imported on first use
    assert np.allclose(u, [0.2, 0.8], atol=1e-4) and abs(value - 0.2) < 1e-4
    assert progressive_auc(np.array([0.1, 0.9, 0.4, 0.8]), np.array([-1.0, 1.0, -1.0, 1.0])) == 1.0
    A = np.random.default_rng(0).standard_normal((300, 40))
    fd = FrequentDirections(40, 10)
    fd.extend(A)
    exact = covariance_error(A, fd, method="exact")
    lanczos = covariance_error(A, fd, method="lanczos")  # ARPACK, imported on first use
    assert abs(lanczos - exact) <= 1e-6 * exact
