"""first_repeat's linear-time paths (increasing ids, dense ids) answer as the sorting one
does: the smallest integer key given twice, or None."""

from __future__ import annotations

import numpy as np
import pytest

from deniable.accounting._keys import first_repeat, respondent_keys
from deniable.exceptions import DataError, ParameterTypeError


def _reference(keys: np.ndarray) -> int | None:
    seen: dict[int, int] = {}
    for k in keys.tolist():
        seen[k] = seen.get(k, 0) + 1
    dups = [k for k, c in seen.items() if c > 1]
    return min(dups) if dups else None


@pytest.mark.parametrize("span", [1, 10, 1000, 10**6, 2**62])
def test_first_repeat_matches_a_count_of_the_keys(span: int) -> None:
    rng = np.random.default_rng(17)
    for size in (2, 3, 50, 2000):
        for _ in range(20):
            keys = rng.integers(-span // 2, span // 2 + 1, size=size, dtype=np.int64)
            assert first_repeat(keys) == _reference(keys)


def test_first_repeat_of_distinct_ids_in_any_order_is_none() -> None:
    ids = np.arange(-5, 10**4, dtype=np.int64)
    assert first_repeat(ids) is None
    assert first_repeat(np.random.default_rng(3).permutation(ids)) is None
    extremes = np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max], dtype=np.int64)
    assert first_repeat(extremes[::-1].copy()) is None


def test_a_repeated_device_is_still_refused_by_name() -> None:
    ids = np.random.default_rng(5).permutation(10**4)
    ids[17] = ids[4000]
    with pytest.raises(DataError, match=f"got {ids[17]} twice"):
        respondent_keys(ids, unique=True, name="devices")


def test_a_list_of_keys_keeps_each_key_as_given() -> None:
    # numpy would turn [1, "a"] into ["1", "a"] and [1, True] into [1, 1]
    mixed = respondent_keys([1, "a", np.str_("b")], unique=True)
    assert mixed.dtype == object and mixed.tolist() == [1, "a", "b"]
    assert respondent_keys(list(range(5)), unique=True).dtype == np.int64
    for bad in ([1, True], [np.bool_(False), 2]):
        with pytest.raises(ParameterTypeError, match="bool"):
            respondent_keys(bad, unique=True)
