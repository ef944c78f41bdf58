"""The index checks the oracles share (``deniable.oracles._base.outside`` and
``check_indices``): which value is named, and what is let through."""

from __future__ import annotations

import numpy as np
import pytest

from deniable.exceptions import DataError
from deniable.oracles._base import check_indices, outside


@pytest.mark.parametrize(
    ("values", "n", "expected"),
    [
        ([], 3, None),
        ([0, 1, 2], 3, None),
        ([0, 3, 1], 3, 3),
        ([-2, 5, -1], 3, -2),  # a negative value is named before a large one
        ([7, 4], 3, 7),  # the greatest of the large ones
    ],
)
def test_outside_names_the_least_negative_else_the_greatest(
    values: list[int], n: int, expected: int | None
) -> None:
    assert outside(np.asarray(values, dtype=np.int64), n) == expected


def test_outside_of_an_empty_float_array_is_none() -> None:
    assert outside(np.asarray([], dtype=np.float64), 2) is None


def test_check_indices_refuses_by_name() -> None:
    check_indices("rows", np.asarray([0, 1], dtype=np.uint8), 2)
    with pytest.raises(DataError, match=r"^`rows` must be in 0\.\.1, got 2\.$"):
        check_indices("rows", np.asarray([0, 2], dtype=np.uint8), 2)
