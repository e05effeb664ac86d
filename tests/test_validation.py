"""explorer._validation: every refusal of a setting is a ValueError naming it."""

import pytest


def test_an_integer_past_float_range_is_a_value_error_naming_the_setting():
    from explorer import RobustFrequentDirections, SketchedOnlineNewton

    with pytest.raises(ValueError, match="alpha0 must be a finite number.*400 digits"):
        RobustFrequentDirections(3, 2, alpha0=10 ** 399)
    with pytest.raises(ValueError, match="eta"):
        SketchedOnlineNewton(3, eta=10 ** 400)
