"""explorer._validation: every refusal of a setting is a ValueError naming it."""

import numpy as np
import pytest


def test_an_integer_past_float_range_is_a_value_error_naming_the_setting():
    from explorer import RobustFrequentDirections, SketchedOnlineNewton

    with pytest.raises(ValueError, match="alpha0 must be a finite number.*400 digits"):
        RobustFrequentDirections(3, 2, alpha0=10 ** 399)
    with pytest.raises(ValueError, match="eta"):
        SketchedOnlineNewton(3, eta=10 ** 400)


@pytest.mark.parametrize("bad", [
    [[1.0, 2.0], [np.nan, 0.0]],
    [[1.0, 2.0], [0.0, -np.inf]],
    [[np.inf, -np.inf]],
    [[1e200, 1.0], [1.0, 1.0]],  # finite, its square overflows: left to check_mass
    [[1.0, 2.0, 3.0]],
    "1.5",
])
def test_rows_and_their_norms_are_checked_like_rows(bad):
    """as_rows_and_norms reads finiteness from the norms: the same rows, the same refusals
    as as_rows, and the norms squared_norms gives."""
    from explorer._validation import as_rows, as_rows_and_norms, squared_norms

    try:
        expected = as_rows(bad, 2)
    except ValueError as error:
        with pytest.raises(ValueError) as caught:
            as_rows_and_norms(bad, 2)
        assert str(caught.value) == str(error)
        return
    X, squared = as_rows_and_norms(bad, 2)
    np.testing.assert_array_equal(X, expected)
    np.testing.assert_array_equal(squared, squared_norms(expected))
