"""The lessons' exercise checks (explorer/exercises.py): for every registered exercise, the
answer a student computes the way the lesson does (on the lesson's data, same seeds) is
judged correct, also when computed from a last-bit perturbed stream or moved by far more
than rounding; a wrong answer is "not yet"; ``None`` is "not answered yet". Every lesson has
a check cell, every check cell names a registered exercise of its lesson, and every
registered exercise is checked in its lesson."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from explorer import Recorder, merge
from explorer.adagrad import AdaGrad
from explorer.exercises import EXERCISES, RELATIVE_TOLERANCE, Verdict, check_exercise, hint, solution
from explorer.fm import SketchedFTRL, progressive, synthetic_ratings
from explorer.metrics import covariance_error, fd_bound, relative_spectral_error
from explorer.newton import SketchedOnlineNewton
from explorer.pca import best_fixed_projection, pca_theory_settings
from explorer.sketch import FrequentDirections, RobustFrequentDirections
from explorer.streams import (breast_cancer, changing_subspace, digits, linear_regression_targets,
                              low_rank_plus_noise)

LESSONS = Path(__file__).resolve().parent.parent / "lessons"
SEED = 0


def cells(lesson: str) -> list[dict]:
    (path,) = LESSONS.glob(f"{lesson}_*.ipynb")
    return json.loads(path.read_text())["cells"]


def lesson_code(lesson: str, starts: str) -> str:
    """The lesson's own code, from the line starting ``starts`` to the end of its cell."""
    for cell in cells(lesson):
        source = "".join(cell["source"])
        at = source.find("\n" + starts)
        if cell["cell_type"] == "code" and (source.startswith(starts) or at >= 0):
            return source if source.startswith(starts) else source[at + 1:]
    raise AssertionError(f"lesson {lesson} has no code line starting {starts!r}")


def perturbed(X: np.ndarray) -> np.ndarray:
    """The stream with its last bit changed in every entry."""
    return X * (1 + np.finfo(float).eps)


# -- each exercise: (context, the student's answer), computed as in the lesson ----------

def ex_01_1(perturb):
    namespace = {"np": np, "SEED": SEED}
    exec(lesson_code("01", "def misra_gries"), namespace)
    items = namespace["items"]
    mg, _ = namespace["misra_gries"](items, 3)
    return dict(items=items, k=3), int(np.sum(items == 0)) - mg.get(0, 0)


def ex_01_4(perturb):
    X = perturb(low_rank_plus_noise(2000, 50, rank=5, noise=0.1, seed=SEED))
    return dict(X=X, m=10), int(np.argmin([fd_bound(X, 10, k) for k in range(10)]))


def rfd_fd_ratio(X, m, fast):
    fd, rfd = FrequentDirections(X.shape[1], m, fast=fast), RobustFrequentDirections(X.shape[1], m, alpha0=0.0, fast=fast)
    fd.extend(X)
    rfd.extend(X)
    return relative_spectral_error(X, rfd) / relative_spectral_error(X, fd)


def ex_02_1(perturb):
    X = perturb(low_rank_plus_noise(2000, 64, rank=5, seed=0))
    return dict(X=X, m=16), rfd_fd_ratio(X, 16, True)


def ex_02_2(perturb):
    X = perturb(digits()[0])
    return dict(X=X, m=16), rfd_fd_ratio(X, 16, False)


def ex_03_1(perturb):
    namespace = {"np": np, "SEED": SEED}
    exec(lesson_code("03", "n, d = 2000, 20"), namespace)
    X, y = perturb(namespace["X"]), namespace["y"]
    learner = SketchedOnlineNewton(20, sketch="rfd", m=25, alpha0=0.0, eta=0.0, C=1.0, seed=SEED)
    learner.learn_many(X, y)
    return dict(X=X, y=y, m=25), learner.alpha


def ex_04_3(perturb):
    namespace = {"np": np, "SEED": SEED, "linear_regression_targets": linear_regression_targets}
    code = lesson_code("04", "d, T = 100, 800")
    exec(code[:code.index("GRID")], namespace)
    X, Q, y = perturb(namespace["X_axis"]), namespace["Q"], namespace["y_axis"]
    regret = [np.cumsum(AdaGrad(100, variant="ffd", eta=0.03, tau=10).learn_many(rows, y))[-1]
              for rows in (X, X @ Q.T)]
    return dict(X=X, Q=Q, y=y, eta=0.03, tau=10), regret[1] / regret[0]


def ex_04_5(perturb):
    namespace = {"np": np, "SEED": SEED, "linear_regression_targets": linear_regression_targets}
    code = lesson_code("04", "d, T = 100, 800")
    exec(code[:code.index("GRID")], namespace)
    X, y = perturb(namespace["X_axis"]), namespace["y_axis"]
    full = AdaGrad(100, variant="full", eta=0.03).learn_many(X, y)
    ffd = AdaGrad(100, variant="ffd", eta=0.03, tau=50).learn_many(X, y)
    apart = np.abs(ffd - full) > 1e-6 * np.maximum(np.abs(full), np.abs(ffd))
    return dict(X=X, y=y, eta=0.03, tau=50), int(np.argmax(apart)) + 1


def ex_05_1(perturb):
    X, _ = changing_subspace(n_segments=3, segment_length=200, n=20, rank=2, seed=SEED)
    X = perturb(X)
    L = best_fixed_projection(X, 2)[1].sum()
    return dict(X=X, k=2), pca_theory_settings(len(X), X.shape[1], 2, L).eta


def ex_06_1(perturb):
    X, y = breast_cancer()
    X = perturb(X / np.linalg.norm(X, axis=1, keepdims=True))
    learner, steps = SketchedFTRL(X.shape[1], loss="logistic"), Recorder(kinds=("step",))
    learner.add_hook(steps)
    progressive(learner, X, y)
    return dict(X=X, y=y), float(np.mean(steps.columns("step")["gradient_scale"] > 0))


def ex_06_3(perturb):
    small = synthetic_ratings(2000, n_users=40, n_items=80, seed=SEED)
    rows = perturb(small.X[:500].toarray())
    augmented = np.hstack([rows, np.ones((len(rows), 1))])
    return dict(rows=small.X[:500]), int(np.linalg.matrix_rank(augmented))


def root_error(partitions, m, split_every):
    leaves = []
    for rows in partitions:
        leaf = FrequentDirections(rows.shape[1], m, fast=True)
        leaf.extend(rows)
        leaves.append(leaf)
    return covariance_error(np.vstack(partitions), merge(leaves, split_every=split_every))


def ex_07_1(perturb):
    X = perturb(low_rank_plus_noise(8000, 50, rank=5, noise=0.1, seed=SEED))
    partitions = np.split(X, [10, 110, 1110])
    return dict(partitions=partitions, m=10, split_every=2), root_error(partitions, 10, 2)


def ex_07_3(perturb):
    D, labels = digits(by_class=True)
    D = perturb(D)
    order = np.random.default_rng(SEED).permutation(10)
    partitions = [D[labels == digit] for digit in order]
    return dict(partitions=partitions, m=10, split_every=4), root_error(partitions, 10, 4)


STUDENT = {"01.1": ex_01_1, "01.4": ex_01_4, "02.1": ex_02_1, "02.2": ex_02_2, "03.1": ex_03_1,
           "04.3": ex_04_3, "04.5": ex_04_5, "05.1": ex_05_1, "06.1": ex_06_1, "06.3": ex_06_3, "07.1": ex_07_1, "07.3": ex_07_3}


def test_every_exercise_has_a_student_solution_here():
    assert sorted(STUDENT) == sorted(EXERCISES)


def wrong(key: str, answer):
    """An answer that is off: another integer, or 1% off (ten times the margin)."""
    if isinstance(answer, (int, np.integer)):
        return int(answer) + 1
    return answer * 1.01 if answer != 0 else 1.0


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_correct_wrong_and_unanswered(key):
    context, answer = STUDENT[key](lambda X: X)
    verdict = check_exercise(key, answer, **context)
    assert isinstance(verdict, Verdict) and verdict.solved is True, verdict
    assert str(verdict).startswith("correct: ")
    assert re.search(r"\d", str(verdict))  # the numbers measured
    off = check_exercise(key, wrong(key, answer), **context)
    assert off.solved is False and str(off).startswith("not yet: "), off
    blank = check_exercise(key, None, **context)
    assert blank.solved is None and str(blank) == f"not answered yet: {EXERCISES[key].task}"


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_an_answer_from_a_perturbed_stream_is_judged_the_same(key):
    context, _ = STUDENT[key](lambda X: X)
    _, answer = STUDENT[key](perturbed)
    assert check_exercise(key, answer, **context).solved is True
    if not isinstance(answer, (int, np.integer)) and answer != 0:
        inside = answer * (1 + RELATIVE_TOLERANCE / 10)
        assert check_exercise(key, inside, **context).solved is True


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_texts(key):
    exercise = EXERCISES[key]
    assert exercise.key == key == f"{exercise.lesson}.{exercise.number}"
    assert exercise.task.startswith("replace None by ")
    assert len(hint(key)) > 40 and len(solution(key)) > 40
    assert "answer = " in solution(key)  # the code a student would run


def test_bad_keys_and_contexts_say_what_is_allowed():
    X = np.ones((4, 3))
    with pytest.raises(ValueError, match="01.4"):
        check_exercise("99.9", None, X=X, m=2)
    with pytest.raises(ValueError, match="01.4"):
        hint("1.4")
    with pytest.raises(ValueError, match=r"X=\.\.\., m=\.\.\."):
        check_exercise("01.4", None, X=X)
    with pytest.raises(ValueError, match=r"X=\.\.\., m=\.\.\."):
        check_exercise("01.4", None, X=X, m=2, k=1)
    with pytest.raises(ValueError, match="positive integer"):
        check_exercise("01.4", 1, X=X, m=0)
    with pytest.raises(ValueError, match="finite"):
        check_exercise("01.4", 1, X=np.full((3, 3), np.nan), m=2)
    with pytest.raises(ValueError, match="orthogonal"):
        check_exercise("04.3", 1.0, X=X, Q=np.ones((3, 3)), y=np.ones(4), eta=0.1, tau=2)


def test_an_answer_of_the_wrong_kind_is_not_yet():
    X = low_rank_plus_noise(100, 8, rank=2, seed=SEED)
    for answer in ("3", [3], 2.5, float("nan"), True):
        verdict = check_exercise("01.4", answer, X=X, m=4)
        assert verdict.solved is False and str(verdict).startswith("not yet: "), (answer, verdict)


# -- the lessons ----------------------------------------------------------------------------

CALL = re.compile(r"""check_exercise\(\s*["'](\d\d\.\d+)["']""")


def checked_keys(lesson: str) -> list[str]:
    return [key for cell in cells(lesson) if cell["cell_type"] == "code"
            for key in CALL.findall("".join(cell["source"]))]


ALL_LESSONS = sorted(path.name[:2] for path in LESSONS.glob("[0-9][0-9]_*.ipynb"))


def test_the_lessons_are_found():
    assert len(ALL_LESSONS) >= 7, ALL_LESSONS


@pytest.mark.parametrize("lesson", ALL_LESSONS)
def test_every_lesson_checks_its_own_registered_exercises(lesson):
    keys = checked_keys(lesson)
    assert keys, f"lesson {lesson} has no check_exercise cell"
    registered = {key for key, exercise in EXERCISES.items() if exercise.lesson == lesson}
    assert set(keys) == registered, (keys, registered)
    exercises_cell = next(i for i, cell in enumerate(cells(lesson))
                          if cell["cell_type"] == "markdown" and "## Exercises" in "".join(cell["source"]))
    for key in keys:  # each check sits right after the Exercises list, unanswered
        at = next(i for i, cell in enumerate(cells(lesson)) if key in "".join(cell["source"]))
        source = "".join(cells(lesson)[at]["source"])
        assert exercises_cell < at <= exercises_cell + len(keys), key
        assert re.search(r"_answer = None\n", source), key
        assert source.startswith("# NBVAL_CHECK_OUTPUT\n"), key  # the same text on every machine
        stored = "".join("".join(output.get("text", "")) for output in cells(lesson)[at]["outputs"])
        assert stored == f"not answered yet: {EXERCISES[key].task}\n", key
