"""explorer.losses: derivatives against finite differences, stability, the registry."""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from explorer.losses import LOSSES, AbsoluteLoss, Loss, SquaredLoss, get_loss

predictions = st.floats(-20, 20, allow_nan=False)
labels = st.sampled_from([-1.0, 1.0])
targets = st.floats(-5, 5, allow_nan=False)


def central_difference(loss, z, y, h=1e-6):
    return (loss.value(z + h, y) - loss.value(z - h, y)) / (2 * h)


@pytest.mark.parametrize("name", ["logistic", "squared_hinge"])
@given(z=predictions, y=labels)
def test_classification_derivatives_match_finite_differences(name, z, y):
    loss = get_loss(name)
    assert loss.derivative(z, y) == pytest.approx(central_difference(loss, z, y), rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("name", ["squared", "absolute"])
@given(z=predictions, y=targets)
def test_regression_derivatives_match_finite_differences(name, z, y):
    assume(abs(z - y) > 1e-3)  # |z - y| has a kink at z = y
    loss = get_loss(name)
    assert loss.derivative(z, y) == pytest.approx(central_difference(loss, z, y), rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("name", sorted(LOSSES))
@given(z=st.lists(predictions, min_size=1, max_size=6), y=labels)
def test_losses_are_vectorized_and_nonnegative(name, z, y):
    loss = get_loss(name)
    z = np.array(z)
    values, derivatives = loss.value(z, y), loss.derivative(z, y)
    assert values.shape == derivatives.shape == z.shape
    assert np.all(values >= 0)
    for i, zi in enumerate(z):
        assert values[i] == loss.value(zi, y)
        assert derivatives[i] == loss.derivative(zi, y)


@pytest.mark.parametrize("name", sorted(LOSSES))
@given(z=st.floats(-2000, 2000, allow_nan=False), y=st.sampled_from([-1.0, 1.0, 0.5, -3.0]))
def test_the_scalar_path_gives_the_vectorized_numbers(name, z, y):
    loss = get_loss(name)
    value, derivative = loss.value_and_derivative(z, y)
    assert type(value) is float and type(derivative) is float
    assert value == pytest.approx(float(loss.value(z, y)), rel=1e-14, abs=1e-300)
    assert derivative == pytest.approx(float(loss.derivative(z, y)), rel=1e-14, abs=1e-300)


def test_logistic_is_stable_for_huge_margins():
    loss = get_loss("logistic")
    z = np.array([-1e4, -50.0, 0.0, 50.0, 1e4])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values, derivatives = loss.value(z, 1.0), loss.derivative(z, 1.0)
    assert values[0] == pytest.approx(1e4) and values[-1] == 0.0
    assert derivatives.tolist() == pytest.approx([-1.0, -1.0, -0.5, 0.0, 0.0], abs=1e-15)


def test_squared_loss_has_no_one_half():
    assert SquaredLoss().value(3.0, 1.0) == 4.0
    assert SquaredLoss().derivative(3.0, 1.0) == 4.0


def test_absolute_subgradient_at_the_kink_is_zero():
    assert AbsoluteLoss().derivative(1.0, 1.0) == 0.0


def test_get_loss_by_name_and_instance():
    assert set(LOSSES) == {"squared", "logistic", "absolute", "squared_hinge"}
    for name in LOSSES:
        loss = get_loss(name)
        assert isinstance(loss, Loss) and loss.name == name
    custom = AbsoluteLoss()
    assert get_loss(custom) is custom


@pytest.mark.parametrize("bad", ["hinge", "Squared", None, 3])
def test_get_loss_refuses_unknown_names(bad):
    with pytest.raises(ValueError, match="loss must be one of 'squared', 'logistic'"):
        get_loss(bad)
