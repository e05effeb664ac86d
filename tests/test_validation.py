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


@pytest.mark.parametrize("row, refused", [
    ([1.0, np.nan], True), ([-np.inf, 0.0], True), ([np.inf, -np.inf], True),
    ([1e200, 1.0], False),  # finite: its square overflows, which check_row_mass refuses
    ([1e-170, 0.0], False),  # not zero, though its square is
    ([0.0, 0.0], False), ([1.0, 2.0, 3.0], True), ("ab", True),
])
def test_a_row_and_its_norm_are_checked_like_a_row(row, refused):
    """as_row_and_norm reads finiteness from ||x||^2: NaN and inf are refused, finite rows
    kept as they are, whatever their square does."""
    from explorer._validation import as_row, as_row_and_norm

    if refused:
        with pytest.raises(ValueError, match="NaN or inf|length d = 2|numeric"):
            as_row_and_norm(row, 2)
        with pytest.raises(ValueError, match="NaN or inf|length d = 2|numeric"):
            as_row(row, 2)
        return
    x, squared = as_row_and_norm(row, 2)
    np.testing.assert_array_equal(x, np.asarray(row, dtype=float))
    np.testing.assert_array_equal(as_row(row, 2), x)
    with np.errstate(over="ignore"):
        assert squared == float(np.dot(x, x))
