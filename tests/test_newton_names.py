"""The paper names RFDSON, FDSON, RPSON, OjaSON and FullON (docs/algorithms.md section 3.1):
SketchedOnlineNewton with its sketch fixed, the same numbers bit for bit, and the name kept by
``repr``, ``get_params``, ``with_params`` and saved states."""

import io

import numpy as np
import pytest

import explorer
from explorer import FDSON, RFDSON, RPSON, FullON, OjaSON, SketchedOnlineNewton, load_state, save_state

NAMES = {"rfd": RFDSON, "fd": FDSON, "rp": RPSON, "oja": OjaSON, "full": FullON}
D = 6


def stream(seed, n=60, logistic=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D)) * np.linspace(2.0, 0.2, D)
    y = np.sign(X @ np.ones(D) + 0.1) if logistic else X @ np.ones(D) + 0.1 * rng.standard_normal(n)
    return X, y


def saved_and_loaded(learner):
    file = io.BytesIO()
    save_state(learner, file)
    file.seek(0)
    return load_state(file)


def same_state(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    sa.pop("kind"), sb.pop("kind")
    assert list(sa) == list(sb)
    for key in sa:
        assert np.asarray(sa[key]).tobytes() == np.asarray(sb[key]).tobytes(), key


@pytest.mark.parametrize("sketch", sorted(NAMES))
@pytest.mark.parametrize("settings", [{}, {"alpha0": 0.5, "eta": 0.1, "C": 3.0, "loss": "logistic"},
                                      {"alpha0": 1e-3, "eta": 0.0, "eta_schedule": "inverse_t", "fast": False}])
def test_each_paper_name_gives_the_losses_of_sketched_online_newton_with_its_sketch(sketch, settings):
    X, y = stream(1, logistic=settings.get("loss") == "logistic")
    named = NAMES[sketch](D, m=3, seed=2, **settings)
    plain = SketchedOnlineNewton(D, sketch=sketch, m=3, seed=2, **settings)
    assert named.SKETCH == sketch and named.sketch_kind == sketch
    np.testing.assert_array_equal(named.learn_many(X[:20], y[:20]), plain.learn_many(X[:20], y[:20]))
    assert [named.learn(x, t) for x, t in zip(X[20:40], y[20:40])] == \
        [plain.learn(x, t) for x, t in zip(X[20:40], y[20:40])]
    assert [named.step(x, t).loss for x, t in zip(X[40:], y[40:])] == \
        [plain.step(x, t).loss for x, t in zip(X[40:], y[40:])]
    same_state(named, plain)


@pytest.mark.parametrize("sketch", sorted(NAMES))
def test_the_name_survives_repr_params_with_params_and_a_saved_state(sketch):
    cls = NAMES[sketch]
    X, y = stream(3)
    learner = cls(D, m=3, alpha0=1.0, eta=0.5, seed=1)
    learner.learn_many(X[:30], y[:30])
    assert repr(learner).startswith(f"{cls.__name__}(d={D}, m=3, ")
    assert "sketch" not in learner.get_params() and learner.get_params()["m"] == 3
    assert type(cls(**learner.get_params())) is cls
    moved = learner.with_params(eta=0.25)
    twin = SketchedOnlineNewton(D, sketch=sketch, m=3, alpha0=1.0, eta=0.5, seed=1)
    twin.learn_many(X[:30], y[:30])
    assert type(moved) is cls and moved.eta == 0.25
    np.testing.assert_array_equal(moved.learn_many(X[30:], y[30:]), twin.with_params(eta=0.25).learn_many(X[30:], y[30:]))
    state = learner.state_dict()
    assert state["kind"] == cls.__name__ and state["sketch"] == sketch
    resumed = [saved_and_loaded(learner), cls.from_state_dict(state)]
    straight = learner.learn_many(X[30:], y[30:])
    for other in resumed:
        assert type(other) is cls
        np.testing.assert_array_equal(other.learn_many(X[30:], y[30:]), straight)
        same_state(other, learner)


def test_a_sketched_online_newton_state_still_loads_as_itself():
    learner = SketchedOnlineNewton(D, sketch="rfd", m=3)
    learner.learn_many(*stream(4, n=10))
    assert type(saved_and_loaded(learner)) is SketchedOnlineNewton


def test_a_paper_name_refuses_a_sketch_argument_and_a_state_of_another_sketch():
    with pytest.raises(TypeError, match=r"RFDSON is SketchedOnlineNewton\(sketch='rfd'\) and takes no sketch"):
        RFDSON(D, sketch="fd")
    with pytest.raises(TypeError, match="unexpected keyword argument 'skech'"):
        FDSON(D, skech="fd")
    with pytest.raises(ValueError, match="has no parameter 'sketch'"):
        RFDSON(D).with_params(sketch="fd")
    state = {**FDSON(D, m=3).state_dict(), "kind": "RFDSON"}
    with pytest.raises(ValueError, match="sketch"):
        RFDSON.from_state_dict(state)


def test_the_paper_names_are_exported():
    for cls in NAMES.values():
        assert cls.__name__ in explorer.__all__ and cls.__name__ in explorer.newton.__all__
        assert cls in explorer.state.registered_kinds() or cls.__name__ in explorer.state.registered_kinds()
