"""The shared checks of tests/learner_checks.py can fail: each is fed a toy learner that
breaks the property it checks and must raise, and a sound toy learner that must pass."""

from __future__ import annotations

import numpy as np
import pytest

import learner_checks as checks
from state_checks import assert_same_state


class Summer:
    """A sound toy learner: ``w <- w + x``; a row past 1e100 is refused with nothing changed."""

    def __init__(self, d: int = 2):
        self.t, self.w = 0, np.zeros(d)

    def check(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if not np.abs(x).max() <= 1e100:
            raise ValueError("x is too large; nothing was updated")
        return x

    def learn(self, x) -> float:
        x = self.check(x)
        self.w = self.w + x
        self.t += 1
        return float(self.w.sum())

    def state_dict(self) -> dict:
        return {"kind": type(self).__name__, "t": self.t, "w": self.w.copy()}

    @classmethod
    def from_state_dict(cls, state: dict):
        new = cls(len(state["w"]))
        new.t, new.w = int(state["t"]), np.array(state["w"], dtype=float)
        return new


class CountsRefusedRounds(Summer):
    """Breaks all or nothing: a refused row still counts its round."""

    def learn(self, x) -> float:
        self.t += 1
        x = self.check(x)
        self.w = self.w + x
        return float(self.w.sum())


class RemembersRefusals(Summer):
    """The state is kept, but a refusal leaves a hidden trace: later rows are doubled."""

    scale = 1.0

    def learn(self, x) -> float:
        try:
            self.check(x)
        except ValueError:
            self.scale = 2.0
            raise
        return super().learn(np.asarray(x, dtype=float) * self.scale)


class OverflowsToNaN(Summer):
    """Accepts a row past 1e50 and stores NaN (as an overflow followed by inf - inf would)."""

    def learn(self, x) -> float:
        x = self.check(x)
        self.w = self.w + x
        if np.abs(x).max() > 1e50:
            self.w[0] = np.nan
        self.t += 1
        return 0.0


def play(learner) -> list:
    return [learner.learn([1.0, 2.0]) for _ in range(3)]


HUGE = [1e200, 0.0]


def test_assert_finite_state_fires_on_nan():
    checks.assert_finite_state(Summer())
    learner = OverflowsToNaN()
    learner.learn([1e60, 0.0])
    with pytest.raises(AssertionError, match="non-finite"):
        checks.assert_finite_state(learner)


def test_outcomes_records_results_and_refusals():
    learner = Summer()
    done = checks.outcomes([lambda: learner.learn([1.0, 1.0]), lambda: learner.learn(HUGE),
                            lambda: np.array([1.0, 2.0])])
    assert done == [2.0, "x is too large; nothing was updated", [1.0, 2.0]]
    with pytest.raises(FloatingPointError):
        with np.errstate(over="raise"):
            checks.outcomes([lambda: np.float64(1e300) * 1e300])
    with np.errstate(over="raise"):
        assert checks.outcomes([lambda: np.float64(1e300) * 1e300], quiet=True) == [np.inf]


def test_learned_or_refused_cleanly_fires_when_a_refusal_changes_the_state():
    learner = Summer()
    assert checks.learned_or_refused_cleanly(learner, lambda: learner.learn([1.0, 0.0])) == 1.0
    assert isinstance(checks.learned_or_refused_cleanly(learner, lambda: learner.learn(HUGE)), ValueError)
    leaky = CountsRefusedRounds()
    with pytest.raises(AssertionError, match=r"state differs at \['t'\]"):
        checks.learned_or_refused_cleanly(leaky, lambda: leaky.learn(HUGE))


def test_refused_cleanly_fires_on_a_change_a_wrong_message_or_no_refusal():
    learner = Summer()
    refusal = checks.refused_cleanly(learner, lambda: learner.learn(HUGE), "too large", play=play)
    assert "too large" in str(refusal)
    leaky = CountsRefusedRounds()
    with pytest.raises(AssertionError, match="state differs"):
        checks.refused_cleanly(leaky, lambda: leaky.learn(HUGE))
    with pytest.raises(AssertionError, match="Regex pattern did not match"):
        checks.refused_cleanly(learner, lambda: learner.learn(HUGE), "too small")
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        checks.refused_cleanly(learner, lambda: learner.learn([1.0, 1.0]))
    traced = RemembersRefusals()
    with pytest.raises(AssertionError, match="played differently"):
        checks.refused_cleanly(traced, lambda: traced.learn(HUGE), play=play)


def test_continues_like_a_twin_fires_on_a_hidden_trace_or_a_different_state():
    learner = Summer()
    learner.learn([1.0, 1.0])
    checks.continues_like_a_twin(learner, learner.state_dict(), play)
    traced = RemembersRefusals()
    before = traced.state_dict()
    with pytest.raises(ValueError):
        traced.learn(HUGE)
    assert_same_state(traced.state_dict(), before)  # the state alone does not show the trace
    with pytest.raises(AssertionError, match="played differently"):
        checks.continues_like_a_twin(traced, before, play)
    # the same outcomes, different states: w = (1, -1) and (0, 0) both sum to 0
    tilted, level = Summer(), Summer()
    tilted.w = np.array([1.0, -1.0])
    with pytest.raises(AssertionError, match=r"state differs at \['w'\]"):
        checks.runs_alike(tilted, level, lambda a: [float(a.w.sum())])


def test_keeps_working_fires_on_a_non_finite_state_or_an_unclean_refusal():
    learner = Summer()
    checks.keeps_working(learner, [lambda: learner.learn([1.0, 1.0]), lambda: learner.learn(HUGE)])
    assert learner.t == 1
    broken = OverflowsToNaN()
    with pytest.raises(AssertionError, match="non-finite"):
        checks.keeps_working(broken, [lambda: broken.learn([1.0, 1.0]), lambda: broken.learn([1e60, 0.0])])
    leaky = CountsRefusedRounds()
    with pytest.raises(AssertionError, match="state differs"):
        checks.keeps_working(leaky, [lambda: leaky.learn(HUGE)])

    def at_most_one_round(learner) -> None:
        assert learner.t <= 1, "a custom check"

    counted = Summer()
    with pytest.raises(AssertionError, match="a custom check"):
        checks.keeps_working(counted, [lambda: counted.learn([1.0, 1.0])] * 2, at_most_one_round)


def test_accepted_or_refused_cleanly_fires_on_each_broken_promise():
    learner = Summer()
    assert checks.accepted_or_refused_cleanly(learner, lambda: learner.learn([1.0, 1.0]), play=play) == 2.0
    refusal = checks.accepted_or_refused_cleanly(learner, lambda: learner.learn(HUGE), play=play)
    assert isinstance(refusal, ValueError)
    broken = OverflowsToNaN()
    with pytest.raises(AssertionError, match="non-finite"):
        checks.accepted_or_refused_cleanly(broken, lambda: broken.learn([1e60, 0.0]))
    leaky = CountsRefusedRounds()
    with pytest.raises(AssertionError, match="state differs"):
        checks.accepted_or_refused_cleanly(leaky, lambda: leaky.learn(HUGE), play=play)
    traced = RemembersRefusals()
    with pytest.raises(AssertionError, match="played differently"):
        checks.accepted_or_refused_cleanly(traced, lambda: traced.learn(HUGE), play=play)
    traced = RemembersRefusals()  # without play, the hidden trace is not looked for
    assert isinstance(checks.accepted_or_refused_cleanly(traced, lambda: traced.learn(HUGE)), ValueError)
