r"""Exercises that check themselves: the lessons' exercises with a definite answer, checked here.

Each lesson (``lessons/01`` to ``07``) ends with a list of exercises; those with a definite
answer are :class:`Exercise`\ s in :data:`EXERCISES`, keyed ``"NN.k"`` (lesson ``NN``,
exercise ``k``). A check cell right after the list calls :func:`check_exercise` with the
student's answer and the lesson's data (the context). The expected value is never stored:
the rule computes it from the context, with the package, the way the lesson does, and
compares with a relative margin far above rounding (0.1%), so an answer computed by another
BLAS kernel, or from a last-bit perturbed stream, is judged the same. No grading server, no
Panel, no widgets: the same functions run in Jupyter and in the static Pyodide site.

>>> import numpy as np
>>> X = np.random.default_rng(0).standard_normal((50, 6))
>>> print(check_exercise("01.4", None, X=X, m=4))
not answered yet: replace None by the k in 0..m-1 with the smallest fd_bound(X, m, k).
>>> from explorer.metrics import fd_bound
>>> k = int(np.argmin([fd_bound(X, 4, k) for k in range(4)]))
>>> check_exercise("01.4", k, X=X, m=4).solved
True
>>> print(check_exercise("01.4", 3 - k, X=X, m=4).text.split(":")[0])
not yet
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from explorer import Recorder
from explorer.adagrad import AdaGrad
from explorer.fm import SketchedFTRL, progressive
from explorer.merging import merge
from explorer.metrics import covariance_error, fd_bound, relative_spectral_error
from explorer.newton import SketchedOnlineNewton
from explorer.pca import best_fixed_projection, pca_theory_settings
from explorer.sketch import FrequentDirections, RobustFrequentDirections

__all__ = ["Exercise", "Verdict", "EXERCISES", "check_exercise", "hint", "solution",
           "RELATIVE_TOLERANCE"]

#: Relative margin of every numeric comparison: rounding moves these values by ~1e-13.
RELATIVE_TOLERANCE = 1e-3


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check: ``solved`` (``None`` when not answered yet) and ``text``,
    one plain-text line starting ``correct:``, ``not yet:`` or ``not answered yet:``.

    >>> print(Verdict(True, "correct: 2 = 2."))
    correct: 2 = 2.
    """

    solved: bool | None
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Exercise:
    """One checkable exercise: ``key`` ("NN.k"), ``lesson`` ("NN"), ``number`` (k), ``task``
    (what to answer, in one sentence), ``hint`` and ``solution`` (plain text, code included),
    ``context`` (the names the rule needs, each with a validator) and
    ``rule(answer, **context) -> Verdict`` for an answer that is not ``None``.

    >>> ex = Exercise("00.1", "00", 1, "Give 2.", "Two.", "2", {},
    ...               lambda answer: _number_verdict("two", answer, 2.0))
    >>> print(ex.rule(2.0))
    correct: two = 2 (you gave 2; within 0.1%).
    """

    key: str
    lesson: str
    number: int
    task: str
    hint: str
    solution: str
    context: dict[str, Callable[[str, object], object]]
    rule: Callable[..., Verdict]


# -- validation of the context ---------------------------------------------------------------

def _matrix(name: str, value) -> np.ndarray:
    """A 2-D finite float array (a scipy sparse matrix is made dense)."""
    if hasattr(value, "toarray") and callable(value.toarray):
        value = value.toarray()
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a 2-D array of numbers, got {type(value).__name__}") from error
    if array.ndim != 2 or array.size == 0 or not np.isfinite(array).all():
        raise ValueError(f"{name} must be a non-empty 2-D array of finite numbers, "
                         f"got shape {array.shape}")
    return array


def _vector(name: str, value) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim != 1 or array.size == 0 or not np.issubdtype(array.dtype, np.number) \
            or not np.isfinite(array.astype(float)).all():
        raise ValueError(f"{name} must be a non-empty 1-D array of finite numbers, got {value!r:.60}")
    return array


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r:.60}")
    return int(value)


def _positive_float(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r:.60}")
    return float(value)


def _matrices(name: str, value) -> list[np.ndarray]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ValueError(f"{name} must be a list of 2-D arrays, got {type(value).__name__}")
    parts = [_matrix(f"{name}[{i}]", part) for i, part in enumerate(value)]
    if not parts or len({part.shape[1] for part in parts}) != 1:
        raise ValueError(f"{name} must be a non-empty list of 2-D arrays with the same number "
                         f"of columns")
    return parts


def _checked_context(exercise: Exercise, context: dict) -> dict:
    needed = exercise.context
    if set(context) != set(needed):
        raise ValueError(f"exercise {exercise.key} needs exactly the context "
                         f"{', '.join(f'{name}=...' for name in needed)}; got "
                         f"{', '.join(sorted(context)) or 'none'}")
    return {name: validate(name, context[name]) for name, validate in needed.items()}


# -- verdicts ----------------------------------------------------------------------------------

def _num(value: float) -> str:
    return f"{value:.6g}"


def _real(answer) -> float | None:
    """The answer as a finite float, or ``None`` when it is not a single real number."""
    if isinstance(answer, (bool, np.bool_)):
        return None
    if isinstance(answer, np.ndarray) and answer.size == 1:
        answer = answer.reshape(()).item()
    if not isinstance(answer, numbers.Real) or not math.isfinite(answer):
        return None
    return float(answer)


def _number_verdict(what: str, answer, expected: float, *, floor: float = 0.0) -> Verdict:
    """Compare a numeric answer with ``expected`` within :data:`RELATIVE_TOLERANCE` relative
    (and at least ``floor`` absolute, for values that are 0 up to rounding)."""
    value = _real(answer)
    if value is None:
        return Verdict(False, f"not yet: the answer must be one finite number, got {answer!r:.60}.")
    tolerance = max(RELATIVE_TOLERANCE * abs(expected), floor)
    within = "within 0.1%" if floor == 0 else f"within {_num(tolerance)}"
    solved = abs(value - expected) <= tolerance
    return Verdict(solved, f"{'correct' if solved else 'not yet'}: {what} = {_num(expected)} "
                           f"(you gave {_num(value)}; {within}).")


def _integer_verdict(what: str, answer, accepted: list[int], shown: int) -> Verdict:
    """An integer answer: correct when it is one of ``accepted`` (near ties all count)."""
    value = _real(answer)
    if value is None or value != int(value):
        return Verdict(False, f"not yet: the answer must be an integer, got {answer!r:.60}.")
    solved = int(value) in accepted
    ties = "" if len(accepted) == 1 else f" ({', '.join(map(str, accepted))} tie within 0.1%)"
    return Verdict(solved, f"{'correct' if solved else 'not yet'}: {what} = {shown}{ties} "
                           f"(you gave {int(value)}; integers, compared exactly).")


# -- the rules ---------------------------------------------------------------------------------

def _misra_gries_deficit(answer, *, items, k) -> Verdict:
    counters: dict[int, int] = {}
    for item in items.tolist():
        if item in counters:
            counters[item] += 1
        elif len(counters) < k:
            counters[item] = 1
        else:
            for key in list(counters):
                counters[key] -= 1
                if counters[key] == 0:
                    del counters[key]
    deficit = int(np.sum(items == 0)) - counters.get(0, 0)
    return _integer_verdict(f"true count of item 0 minus its Misra-Gries estimate (k = {k})",
                            answer, [deficit], deficit)


def _best_k(answer, *, X, m) -> Verdict:
    if m < 2:
        raise ValueError(f"m must be at least 2 (k runs over 0..m-1 and k = 0 alone is no choice), got {m}")
    bounds = np.array([fd_bound(X, m, k) for k in range(m)])
    best = int(np.argmin(bounds))
    accepted = [k for k in range(m) if bounds[k] <= bounds[best] * (1 + RELATIVE_TOLERANCE)]
    return _integer_verdict(f"the k with the smallest fd_bound(X, {m}, k) (bound "
                            f"{_num(bounds[best])})", answer, accepted, best)


def _rfd_fd_ratio(answer, *, X, m, fast) -> Verdict:
    fd = FrequentDirections(X.shape[1], m, fast=fast)
    rfd = RobustFrequentDirections(X.shape[1], m, alpha0=0.0, fast=fast)
    fd.extend(X)
    rfd.extend(X)
    e_fd, e_rfd = relative_spectral_error(X, fd), relative_spectral_error(X, rfd)
    kind = "fast" if fast else "exact"
    return _number_verdict(f"Error-RFD / Error-FD ({kind}, m = {m}) = {_num(e_rfd)} / {_num(e_fd)}",
                           answer, e_rfd / e_fd)


def _son_alpha(answer, *, X, y, m) -> Verdict:
    if len(y) != len(X) or not np.isin(y, (-1.0, 1.0)).all():
        raise ValueError(f"y must hold one label, -1 or 1, per row of X ({len(X)} rows)")
    learner = SketchedOnlineNewton(X.shape[1], sketch="rfd", m=m, alpha0=0.0, eta=0.0, C=1.0, seed=0)
    learner.learn_many(X, y.astype(float))
    return _number_verdict(f"RFD-SON's alpha after {len(X)} rows (m = {m}, "
                           f"{learner.sketch.n_shrinks} shrinks)", answer, float(learner.alpha),
                           floor=1e-9 * float(np.sum(X * X)))


def _ffd_rotation(answer, *, X, Q, y, eta, tau) -> Verdict:
    d = X.shape[1]
    if Q.shape != (d, d) or not np.allclose(Q.T @ Q, np.eye(d), atol=1e-8):
        raise ValueError(f"Q must be an orthogonal {d} x {d} matrix (Q^T Q = I)")
    if len(y) != len(X):
        raise ValueError(f"y must hold one target per row of X ({len(X)} rows), got {len(y)}")
    regrets = [float(np.sum(AdaGrad(d, variant="ffd", eta=eta, tau=tau).learn_many(rows, y)))
               for rows in (X, X @ Q.T)]
    return _number_verdict(f"ADA-FFD's regret rotated / axis-aligned (eta = {eta}, tau = {tau}) = "
                           f"{_num(regrets[1])} / {_num(regrets[0])}", answer, regrets[1] / regrets[0])


def _first_difference(answer, *, X, y, eta, tau) -> Verdict:
    if len(y) != len(X):
        raise ValueError(f"y must hold one target per row of X ({len(X)} rows), got {len(y)}")
    d = X.shape[1]
    full = AdaGrad(d, variant="full", eta=eta).learn_many(X, y)
    ffd = AdaGrad(d, variant="ffd", eta=eta, tau=tau).learn_many(X, y)
    apart = np.abs(ffd - full) > 1e-6 * np.maximum(np.abs(full), np.abs(ffd))
    first = int(np.argmax(apart)) + 1 if apart.any() else 0
    return _integer_verdict(f"the first round where ADA-FFD (tau = {tau}, d = {d}) and ADA-FULL "
                            f"lose more than 1e-6 relative apart (0: never, in {len(X)} rounds)",
                            answer, [first], first)


def _theory_eta(answer, *, X, k) -> Verdict:
    if k >= X.shape[1]:
        raise ValueError(f"k must be below the dimension {X.shape[1]}, got {k}")
    L = float(np.sum(best_fixed_projection(X, k)[1]))
    eta = pca_theory_settings(len(X), X.shape[1], k, L).eta
    return _number_verdict(f"Theorem 3's eta (T = {len(X)}, n = {X.shape[1]}, k = {k}, "
                           f"L = {_num(L)})", answer, eta)


def _positive_q(answer, *, X, y) -> Verdict:
    if len(y) != len(X) or not np.isin(y, (-1.0, 1.0)).all():
        raise ValueError(f"y must hold one label, -1 or 1, per row of X ({len(X)} rows)")
    learner, steps = SketchedFTRL(X.shape[1], loss="logistic"), Recorder(kinds=("step",))
    handle = learner.add_hook(steps)
    progressive(learner, X, y.astype(float))
    handle.remove()
    positive = int(np.sum(steps.columns("step")["gradient_scale"] > 0))
    return _number_verdict(f"the fraction of positive q_t = {positive} / {len(y)} rounds "
                           f"({int(np.sum(y < 0))} labels are -1)", answer, positive / len(y))


def _augmented_rank(answer, *, rows) -> Verdict:
    augmented = np.hstack([rows, np.ones((len(rows), 1))])
    sigma = np.linalg.svd(augmented, compute_uv=False)
    rank = int(np.sum(sigma > 1e-9 * sigma[0]))
    return _integer_verdict(f"the dimension the {len(rows)} augmented rows span (of {augmented.shape[1]})",
                            answer, [rank], rank)


def _root_error(answer, *, partitions, m, split_every) -> Verdict:
    if split_every < 2:
        raise ValueError(f"split_every must be at least 2, got {split_every}")
    leaves = []
    for rows in partitions:
        leaf = FrequentDirections(rows.shape[1], m, fast=True)
        leaf.extend(rows)
        leaves.append(leaf)
    root = merge(leaves, split_every=split_every)
    error = covariance_error(np.vstack(partitions), root)
    return _number_verdict(f"the root's error ||A^T A - B^T B||_2 ({len(partitions)} partitions, "
                           f"m = {m}, split_every = {split_every}; Delta = {_num(root.delta_total)})",
                           answer, error)


# -- the registry ------------------------------------------------------------------------------

def _exercise(key: str, task: str, hint: str, solution: str,
              context: dict[str, Callable[[str, object], object]], rule) -> Exercise:
    lesson, number = key.split(".")
    return Exercise(key, lesson, int(number), task, hint, solution, context, rule)


def _fixed(rule, **settings):
    """``rule`` with some keyword arguments fixed (a named function, for readable tracebacks)."""
    def fixed(answer, **context):
        return rule(answer, **context, **settings)
    fixed.__name__ = rule.__name__
    return fixed


EXERCISES: dict[str, Exercise] = {exercise.key: exercise for exercise in (
    _exercise(
        "01.1", "replace None by how much item 0's Misra-Gries estimate is below its true count.",
        "Run misra_gries(items, k) from section 1 with the new k and compare its count for "
        "item 0 with true_counts[0]; a missing key is an estimate of 0.",
        "mg, rounds = misra_gries(items, 3)\n"
        "answer = int(true_counts[0]) - mg.get(0, 0)\n"
        "Item 0 is the heaviest hitter: it keeps its counter from its first occurrence on, so "
        "it is low by exactly the decrement rounds after that occurrence (compare with rounds).",
        {"items": _vector, "k": _positive_int}, _misra_gries_deficit),
    _exercise(
        "01.4", "replace None by the k in 0..m-1 with the smallest fd_bound(X, m, k).",
        "fd_bound(X, m, k) = ||X - X_k||_F^2 / (m - k): a larger k removes the energy of one "
        "more strong direction from the numerator, but shares it among fewer spare rows.",
        "bounds = [fd_bound(X, m, k) for k in range(m)]\n"
        "answer = int(np.argmin(bounds))\n"
        "The bound falls fast while k adds one of the 5 strong directions (a large sigma_k^2 "
        "leaves the tail) and rises after: the noise directions carry little energy each, and "
        "m - k shrinks. So the best k is the number of strong directions.",
        {"X": _matrix, "m": _positive_int}, _best_k),
    _exercise(
        "02.1", "replace None by Error-RFD / Error-FD (fast sketches, alpha0 = 0) on this stream.",
        "Build FrequentDirections(d, m, fast=True) and RobustFrequentDirections(d, m, "
        "alpha0=0.0, fast=True), feed both all of X, and divide their relative_spectral_error.",
        "fd, rfd = FrequentDirections(d, m, fast=True), RobustFrequentDirections(d, m, alpha0=0.0, fast=True)\n"
        "fd.extend(X); rfd.extend(X)\n"
        "answer = relative_spectral_error(X, rfd) / relative_spectral_error(X, fd)\n"
        "The ratio is one half only when lambda_min(E) = 0 and FD's error sits on Delta; "
        "otherwise RFD's error (max of lambda_max(E) - Delta/2 and Delta/2 - lambda_min(E)) "
        "is more than half of FD's.",
        {"X": _matrix, "m": _positive_int}, _fixed(_rfd_fd_ratio, fast=True)),
    _exercise(
        "02.2", "replace None by Error-RFD / Error-FD with exact sketches (fast=False, alpha0 = 0).",
        "The same as section 3 with fast=False in both constructors.",
        "fd, rfd = FrequentDirections(d, m, fast=False), RobustFrequentDirections(d, m, alpha0=0.0, fast=False)\n"
        "fd.extend(X); rfd.extend(X)\n"
        "answer = relative_spectral_error(X, rfd) / relative_spectral_error(X, fd)\n"
        "Compare the errors too: exact FD shrinks at every row once its buffer is full, fast "
        "FD once every m + 1 rows; RFD halves FD's error when FD's error sits on Delta and "
        "lambda_min(E) = 0, whichever variant made the sketch.",
        {"X": _matrix, "m": _positive_int}, _fixed(_rfd_fd_ratio, fast=False)),
    _exercise(
        "03.1", "replace None by RFD-SON's alpha after the whole stream with m = 25 and alpha0 = 0.",
        "Learn the stream with SketchedOnlineNewton(d, sketch='rfd', m=25, alpha0=0.0, eta=0.0, "
        "C=1.0, seed=SEED) and read learner.alpha; compare learner.sketch.n_shrinks and "
        "learner.sketch.delta_total.",
        "learner = SketchedOnlineNewton(d, sketch='rfd', m=25, alpha0=0.0, eta=0.0, C=1.0, seed=SEED)\n"
        "learner.learn_many(X, y)\n"
        "answer = learner.alpha\n"
        "It is 0: the gradients are 20-dimensional, so the fast sketch's 2m = 50 buffer rows "
        "have sigma_m = 0 and every shrink removes nothing. alpha stays alpha0 = 0 and "
        "RFD-SON inverts a singular B^T B (its pseudo-inverse) for the whole stream.",
        {"X": _matrix, "y": _vector, "m": _positive_int}, _son_alpha),
    _exercise(
        "04.3", "replace None by ADA-FFD's final regret on the rotated stream divided by its "
                "final regret on the axis-aligned one.",
        "Run AdaGrad(d, variant='ffd', eta=eta, tau=tau) once on X_axis and once on "
        "X_axis @ Q.T (a fresh learner each time) with the same targets, and divide the "
        "last values of regret(...).",
        "axis = regret(AdaGrad(d, variant='ffd', eta=0.03, tau=10), X_axis, y_axis)[-1]\n"
        "rotated = regret(AdaGrad(d, variant='ffd', eta=0.03, tau=10), X_axis @ Q.T, y_axis)[-1]\n"
        "answer = rotated / axis\n"
        "It is 1 up to rounding: the FD sketch of the gradients g_t Q is the sketch of the g_t "
        "rotated by Q, so H_t rotates with the data and ADA-FFD plays beta_t Q.",
        {"X": _matrix, "Q": _matrix, "y": _vector, "eta": _positive_float, "tau": _positive_int},
        _ffd_rotation),
    _exercise(
        "04.5", "replace None by the first round (counted from 1) in which ADA-FFD with this tau "
                "loses more than 1e-6 relative away from ADA-FULL (0 if it never does).",
        "Compare the per-round losses of AdaGrad(d, variant='full', eta=eta) and "
        "AdaGrad(d, variant='ffd', eta=eta, tau=tau), both learning X_axis once (learn_many).",
        "full = AdaGrad(d, variant='full', eta=0.03).learn_many(X_axis, y_axis)\n"
        "ffd = AdaGrad(d, variant='ffd', eta=0.03, tau=50).learn_many(X_axis, y_axis)\n"
        "apart = np.abs(ffd - full) > 1e-6 * np.maximum(np.abs(full), np.abs(ffd))\n"
        "answer = int(np.argmax(apart)) + 1 if apart.any() else 0\n"
        "With tau = 51 the rank 2 tau = 102 of the doubling buffer exceeds d = 100: ADA-FFD "
        "never has to shrink and plays ADA-FULL. With tau = 50 the buffer fills and the first "
        "shrink changes H_t: the losses agree to rounding before that round and not after.",
        {"X": _matrix, "y": _vector, "eta": _positive_float, "tau": _positive_int},
        _first_difference),
    _exercise(
        "05.1", "replace None by Theorem 3's eta for the toy stream, with L = the best fixed "
                "projection's total loss.",
        "T is the number of rows of X, n its dimension; best_fixed_projection(X, k)[1] holds "
        "the comparator's loss of every round: L is their sum.",
        "L = best_fixed_projection(X, k)[1].sum()\n"
        "answer = pca_theory_settings(len(X), X.shape[1], k, L).eta\n"
        "Compare it with the tuned eta = 1, then rerun the learners with the theory's eta "
        "and alpha: Theorem 3 picks them to guard every interval of any stream with this L.",
        {"X": _matrix, "k": _positive_int}, _theory_eta),
    _exercise(
        "06.1", "replace None by the fraction of rounds whose q_t is positive.",
        "Record the 'step' events of SketchedFTRL(d, loss='logistic') with a Recorder while "
        "progressive(...) learns the stream; q_t is their gradient_scale column.",
        "X, y = explorer.streams.breast_cancer()\n"
        "X = X / np.linalg.norm(X, axis=1, keepdims=True)\n"
        "learner, steps = SketchedFTRL(X.shape[1], loss='logistic'), Recorder(kinds=('step',))\n"
        "learner.add_hook(steps); progressive(learner, X, y)\n"
        "answer = np.mean(steps.columns('step')['gradient_scale'] > 0)\n"
        "The logistic loss log(1 + exp(-y z)) has derivative q = -y / (1 + exp(y z)): its "
        "sign is the sign of -y whatever z is, so q_t > 0 exactly in the rounds labelled -1.",
        {"X": _matrix, "y": _vector}, _positive_q),
    _exercise(
        "06.3", "replace None by the number of dimensions the augmented rows a_hat_t span.",
        "Stack augment(a_t) for the rows you use (or append a column of ones to them) and "
        "count the singular values above 1e-9 times the largest (numerical_rank in section 3).",
        "rows = small.X[:500].toarray()\n"
        "answer = numerical_rank(np.hstack([rows, np.ones((len(rows), 1))]))\n"
        "Every a_hat_t = e_u + e_i + e_(d+1) lies in the span of the users and items seen plus "
        "the bias. An FD buffer of m rows loses nothing while its rows span at most m - 1 "
        "dimensions (then sigma_m = 0), so compare m with that rank plus one.",
        {"rows": _matrix}, _augmented_rank),
    _exercise(
        "07.1", "replace None by the root's error ||A^T A - B^T B||_2 for the uneven partitions.",
        "Sketch each partition with fast FD (sketch_each), merge them with "
        "explorer.merge(leaves, split_every=...) and measure covariance_error(X, root).",
        "partitions = np.split(X, [10, 110, 1110])\n"
        "root = explorer.merge(sketch_each(partitions, m), split_every=2)\n"
        "answer = covariance_error(X, root)\n"
        "The partition of 10 rows never fills its buffer (2m rows) and shrinks nothing; "
        "count each node's shrinks with merge_levels. The guarantee does not change: the "
        "error stays below the root's Delta, and Delta below the bound of the whole stream.",
        {"partitions": _matrices, "m": _positive_int, "split_every": _positive_int}, _root_error),
    _exercise(
        "07.3", "replace None by the root's error after merging the shuffled digit sketches.",
        "Shuffle the list of partitions (or of their sketches) with a seeded permutation, then "
        "merge as in section 3; give covariance_error(D, root).",
        "order = np.random.default_rng(SEED).permutation(10)\n"
        "root = explorer.merge(sketch_each([by_digit[i] for i in order], m), split_every=4)\n"
        "answer = covariance_error(D, root)\n"
        "Compare with section 3's root: the order changes which rows meet in each merge, so "
        "Delta and the error can change; the bound best_fd_bound(D, m) does not depend on "
        "the order at all.",
        {"partitions": _matrices, "m": _positive_int, "split_every": _positive_int}, _root_error),
)}


def _exercise_named(key) -> Exercise:
    if not isinstance(key, str) or key not in EXERCISES:
        raise ValueError(f"no exercise {key!r:.40}; the exercises with a check are "
                         f"{', '.join(EXERCISES)}")
    return EXERCISES[key]


def check_exercise(key: str, answer, **context) -> Verdict:
    """Check ``answer`` to exercise ``key`` ("NN.k") on the lesson's data passed as ``context``.

    ``None`` gives ``not answered yet: <the task>``; otherwise ``correct: ...`` or
    ``not yet: ...`` with the value the package computed from the context, the answer and
    the margin. An unknown key, a missing, extra or malformed context: ``ValueError``
    saying what is allowed.

    >>> print(check_exercise("06.3", None, rows=[[1.0, 0.0], [0.0, 1.0]]))
    not answered yet: replace None by the number of dimensions the augmented rows a_hat_t span.
    >>> print(check_exercise("06.3", 2, rows=[[1.0, 0.0], [0.0, 1.0]]).text[:60])
    correct: the dimension the 2 augmented rows span (of 3) = 2
    """
    exercise = _exercise_named(key)
    values = _checked_context(exercise, context)
    if answer is None:
        return Verdict(None, f"not answered yet: {exercise.task}")
    return exercise.rule(answer, **values)


def hint(key: str) -> str:
    """The hint of exercise ``key``, plain text.

    >>> hint("01.4").startswith("fd_bound(X, m, k)")
    True
    """
    return _exercise_named(key).hint


def solution(key: str) -> str:
    """The solution of exercise ``key``: the code a student would run, then the reasoning.

    >>> print(solution("01.4").splitlines()[1])
    answer = int(np.argmin(bounds))
    """
    return _exercise_named(key).solution
