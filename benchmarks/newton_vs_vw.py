"""RFD-SON against Vowpal Wabbit's sketched Newton (OjaNewton) and VW's default learner.

The stream (issue 4): d = 500, n = 20000, x ~ N(1, Sigma) with eigenvalues 100 j^-2 in a
random basis, labels sign(w*^T x) for a random unit w*, 5% flipped; written once in VW's
text format. For m in {5, 10, 20} and the logistic and squared losses we report the
progressive error (mistakes of the prediction made *before* learning each example, over
the single pass) and examples per second.

What each timing includes:
- VW: the whole ``python -m vowpalwabbit -d FILE ...`` process, end to end (start-up,
  parsing the text file, learning, progressive evaluation).
- RFD-SON: ``predict`` + ``learn`` on every row of the in-memory arrays (no parsing); the
  one-off data generation is excluded. Run in this process, single-threaded numpy.

Needs ``pip install vowpalwabbit`` (not a project dependency: only this benchmark uses it).

Run:  python benchmarks/newton_vs_vw.py [--n 20000] [--eta 0] [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

from explorer import streams
from explorer.newton import SketchedOnlineNewton


def make_stream(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X = streams.decaying_spectrum(n, d, seed=seed)
    y, _ = streams.linear_classification_labels(X, flip=0.05, seed=seed)
    return X, y


def write_vw(path: str, X: np.ndarray, y: np.ndarray) -> None:
    with open(path, "w") as f:
        for x, label in zip(X, y):
            features = " ".join(f"{j}:{value:.6g}" for j, value in enumerate(x))
            f.write(f"{int(label)} |f {features}\n")


def run_vw(path: str, extra: list[str], n: int) -> dict:
    """Progressive 0/1 error and examples/s of one VW pass (the whole process timed)."""
    command = [sys.executable, "-m", "vowpalwabbit", "-d", path, "--binary", "--quiet",
               "--progress", str(n), "-P", str(n), *extra]
    command = [c for c in command if c != "--quiet"]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    match = re.search(r"average loss = ([0-9.]+)", result.stderr)
    if match is None:
        raise RuntimeError(f"no average loss in VW's output:\n{result.stderr[-2000:]}")
    return {"error": float(match.group(1)), "examples_per_second": n / seconds}


def run_son(X: np.ndarray, y: np.ndarray, **kwargs) -> dict:
    learner = SketchedOnlineNewton(X.shape[1], **kwargs)
    mistakes = 0
    start = time.perf_counter()
    for x, label in zip(X, y):
        mistakes += np.sign(learner.predict(x)) != label
        learner.learn(x, label)
    seconds = time.perf_counter() - start
    return {"error": mistakes / len(y), "examples_per_second": len(y) / seconds}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--d", type=int, default=500)
    parser.add_argument("--quick", action="store_true", help="n = 2000, m = 10 only")
    parser.add_argument("--eta", type=float, default=0.0,
                        help="RFD-SON's extra curvature weight eta (H = alpha I + (mu + eta) sum g g^T)")
    args = parser.parse_args(argv)
    n, sizes = (2000, [10]) if args.quick else (args.n, [5, 10, 20])
    X, y = make_stream(n, args.d)
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "stream.vw")
        write_vw(path, X, y)
        for loss in ("logistic", "squared"):
            results[("vw default", loss, None)] = run_vw(path, ["--loss_function", loss], n)
            for m in sizes:
                results[("vw OjaNewton", loss, m)] = run_vw(
                    path, ["--loss_function", loss, "--OjaNewton", "--sketch_size", str(m)], n)
                results[("RFD-SON", loss, m)] = run_son(X, y, sketch="rfd", m=m, loss=loss,
                                                        eta=args.eta)
    print(f"stream: n = {n}, d = {args.d}, x ~ N(1, Sigma), eigenvalues 100 j^-2, 5% labels flipped; "
          f"RFD-SON alpha0 = 0, eta = {args.eta:g}")
    print(f"{'learner':<14} {'loss':<9} {'m':>3} {'progressive error':>18} {'examples/s':>11}")
    for (name, loss, m), r in results.items():
        print(f"{name:<14} {loss:<9} {m or '-':>3} {r['error']:>18.4f} {r['examples_per_second']:>11.0f}")
    return {" ".join(str(k) for k in key): value for key, value in results.items()}


if __name__ == "__main__":
    main()
