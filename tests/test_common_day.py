"""``validation.day``: one check of a calendar day for the stream store, the Dask path and the
service's stream queries (each had its own copy)."""

from __future__ import annotations

import datetime as dt

import pytest

from deniable.common import validation
from deniable.exceptions import ParameterError, ParameterTypeError


def test_a_date_or_its_iso_text_is_the_day() -> None:
    assert validation.day("day", dt.date(2026, 2, 28)) == dt.date(2026, 2, 28)
    assert validation.day("day", "2024-02-29") == dt.date(2024, 2, 29)  # a leap day


@pytest.mark.parametrize(
    "text", ["2026-02-29", "2026-13-01", "28/11/2026", "2026-1-01", "", "2026-01-01T00:00"]
)
def test_text_that_is_no_day_names_the_parameter_and_the_form(text: str) -> None:
    with pytest.raises(ParameterError) as info:
        validation.day("start", text, what="a UTC day")
    assert str(info.value) == f"`start` must be a UTC day 'YYYY-MM-DD', got {text!r}."


@pytest.mark.parametrize("value", [dt.datetime(2026, 1, 1), 20260101, None, b"2026-01-01"])
def test_another_kind_is_a_type_error(value: object) -> None:
    with pytest.raises(
        ParameterTypeError, match=r"^`day` must be a datetime\.date or 'YYYY-MM-DD', got "
    ):
        validation.day("day", value)
