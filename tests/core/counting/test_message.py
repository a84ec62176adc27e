"""``cupel.counting``'s budget helpers: the ``headroom`` check."""

from __future__ import annotations

import pytest

from cupel import ConfigurationError
from cupel.counting import check_headroom


@pytest.mark.parametrize("value", [0, 0.0, 0.1, 0.999])
def test_headroom_in_range_is_a_float(value: float) -> None:
    assert check_headroom(value) == float(value)
    assert type(check_headroom(value)) is float


@pytest.mark.parametrize(
    "value", [1, 1.0, -0.1, float("nan"), float("inf"), 10**400, True, "0.1", None]
)
def test_headroom_out_of_range_or_not_a_number_names_the_field_and_value(value: object) -> None:
    with pytest.raises(
        ConfigurationError, match=r"^reserve must be a number with 0 <= reserve < 1"
    ) as info:
        check_headroom(value, "reserve")
    assert info.value.field == "reserve"
    assert info.value.value is value
