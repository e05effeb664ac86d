"""CPU time of each family's hot path in this checkout against another checkout of the
package (a before/after check of a refactor): ``--against DIR``, a tree holding ``explorer/``
(for example ``git worktree add /tmp/before <rev>``).

Each repeat runs one child process per tree, alternating (A B A B ...), so drift of the
machine's speed hits both alike; a child times each path with ``time.process_time`` under one
BLAS thread, best of three calls, and prints JSON. Reported per path: the median over
repeats of each tree's time and the median of the per-repeat ratios this / against (> 1:
this tree is slower). The paths: RFD-SON ``learn_many`` and 1000 ``step`` calls; FD-SON 1000
``learn`` calls; ADA-FFD ``learn_many``; fast FD ``extend`` and 1000 ``update`` calls;
adaptive PCA 300 ``learn`` calls; AdaGrad (diagonal) and S-FTRL 1000 ``learn`` calls and
S-FTRL ``progressive`` (d = 200, n = 3000 rows unless ``--tiny``); the Newton race of the
dashboard's five learners on 1000 rows of the first 50 columns, a history point every 10 rows.

Run ``python benchmarks/tree_parity.py --against /tmp/before [--repeats 4] [--tiny]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
from threadpoolctl import threadpool_limits
threadpool_limits(1)
import numpy as np
from explorer.adagrad import AdaGrad
from explorer.experiments.newton import LEARNERS, NewtonRace, make_learners
from explorer.fm import SketchedFTRL, progressive
from explorer.newton import SketchedOnlineNewton
from explorer.pca import OnlineAdaptivePCA
from explorer.sketch import FrequentDirections
try:  # both trees time the compiled round where they have one, not the numpy rule while it compiles
    from explorer.newton import compiled
    compiled.enabled()
    compiled.wait(600)
except ImportError:
    pass

d, n, calls = (int(v) for v in sys.argv[2:5])
rng = np.random.default_rng(0)
X = rng.standard_normal((n, d)) * np.logspace(0, -2, d)
y = np.sign(X @ rng.standard_normal(d))
Xp = rng.standard_normal((calls // 3, 20))
son = dict(m=10, alpha0=1.0, eta=0.1, loss="logistic")


def rows(make, method):
    def go():
        learner = make()
        for i in range(calls):
            getattr(learner, method)(X[i], y[i])
    return go


def pca():
    learner = OnlineAdaptivePCA(20, 3, seed=0)
    for x in Xp:
        learner.learn(x)


def newton_race():
    columns = min(d, 50)
    race = NewtonRace(make_learners(LEARNERS, columns, m=10, alpha0=1.0, eta=0.1), X[:calls, :columns], y[:calls])
    for _ in range(calls // 10):
        race.step(10)  # a history point (kappa of every learner) every 10 rows


def fd_update():
    sketch = FrequentDirections(d, 20, fast=True)
    for i in range(calls):
        sketch.update(X[i])


paths = {
    "RFD-SON learn_many": lambda: SketchedOnlineNewton(d, sketch="rfd", **son).learn_many(X, y),
    "RFD-SON step": rows(lambda: SketchedOnlineNewton(d, sketch="rfd", **son), "step"),
    "Newton race": newton_race,
    "FD-SON learn": rows(lambda: SketchedOnlineNewton(d, sketch="fd", **son), "learn"),
    "ADA-FFD learn_many": lambda: AdaGrad(d, variant="ffd", tau=10, loss="logistic").learn_many(X, y),
    "fast FD extend": lambda: FrequentDirections(d, 20, fast=True).extend(X),
    "fast FD update": fd_update,
    "adaptive PCA learn": pca,
    "AdaGrad-diag learn": rows(lambda: AdaGrad(d, variant="diag", loss="logistic"), "learn"),
    "S-FTRL progressive": lambda: progressive(SketchedFTRL(d, m=10, loss="logistic"), X, y),
    "S-FTRL learn": rows(lambda: SketchedFTRL(d, m=10, loss="logistic"), "learn"),
}
times = {}
for name, path in paths.items():
    best = []
    for _ in range(3):
        start = time.process_time()
        path()
        best.append(time.process_time() - start)
    times[name] = min(best)
print(json.dumps(times))
'''


def child(tree: Path, size: tuple[int, int, int]) -> dict:
    # -X faulthandler: a crash of the child prints the Python stacks of its threads
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", CHILD, str(tree), *map(str, size)],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the child timing {tree} failed (exit code {done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout)


def compare(this: Path, against: Path, repeats: int, size: tuple[int, int, int]) -> dict:
    runs = {"this": [], "against": []}
    for _ in range(repeats):
        runs["this"].append(child(this, size))
        runs["against"].append(child(against, size))
    return {name: {"this_ms": 1e3 * statistics.median(r[name] for r in runs["this"]),
                   "against_ms": 1e3 * statistics.median(r[name] for r in runs["against"]),
                   "ratio": statistics.median(a[name] / b[name] for a, b in zip(runs["this"], runs["against"]))}
            for name in runs["this"][0]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, required=True, help="a tree holding explorer/")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--tiny", action="store_true", help="d = 20, 60 rows, 30 calls (a smoke run)")
    args = parser.parse_args(argv)
    if not (args.against / "explorer" / "__init__.py").is_file():
        parser.error(f"--against {args.against}: no explorer/__init__.py there")
    size = (20, 60, 30) if args.tiny else (200, 3000, 1000)
    result = compare(HERE.parent, args.against, max(1, args.repeats), size)
    print(f"{'path':<22}{'this ms':>10}{'against ms':>12}{'ratio':>8}")
    for name, row in result.items():
        print(f"{name:<22}{row['this_ms']:>10.1f}{row['against_ms']:>12.1f}{row['ratio']:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
