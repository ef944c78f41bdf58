"""``results.t_interval``: the symmetric t and Wald intervals every design-based estimate
(``NumberEstimate``, ``SurveyEstimate``, ``SurveyFrequencies``) draws from one helper,
checked against scipy's own interval of Student's t and of the normal distribution."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from deniable.exceptions import ParameterError
from deniable.results import SYMMETRIC_INTERVALS, ConfidenceInterval, t_interval


@pytest.mark.parametrize("df", [1, 2.5, 7, 30, 1e6])
@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.999])
def test_t_matches_scipy(df: float, level: float) -> None:
    got = t_interval(3.25, 0.4, df, level, "t")
    want = stats.t.interval(level, df, loc=3.25, scale=0.4)
    assert isinstance(got, ConfidenceInterval)
    assert got == pytest.approx(want, rel=1e-12)
    wald = t_interval(3.25, 0.4, df, level, "wald")
    assert wald == pytest.approx(stats.norm.interval(level, loc=3.25, scale=0.4), rel=1e-12)
    assert wald.width < got.width  # t is wider than the normal at every finite df


def test_arrays_give_one_row_per_value() -> None:
    values, se = np.array([0.1, 0.5, -2.0]), np.array([0.01, 0.2, 1.5])
    got = t_interval(values, se, 12, 0.9)
    lo, hi = stats.t.interval(0.9, 12, loc=values, scale=se)
    assert got.shape == (3, 2)
    np.testing.assert_allclose(got, np.column_stack([lo, hi]), rtol=1e-12)
    np.testing.assert_allclose(
        t_interval(values, se, 12, 0.9, "wald"),
        np.column_stack(stats.norm.interval(0.9, loc=values, scale=se)),
        rtol=1e-12,
    )


def test_fewer_than_one_degree_of_freedom_gives_nan_bounds() -> None:
    lo, hi = t_interval(1.0, 0.5, 0.5)
    assert math.isnan(lo) and math.isnan(hi)
    assert t_interval(1.0, 0.5, 0.5, method="wald") == pytest.approx(
        stats.norm.interval(0.95, loc=1.0, scale=0.5)
    )


@pytest.mark.parametrize(
    ("kwargs", "needles"),
    [
        ({"method": "exact"}, ["`method`", "'t', 'wald'", "'exact'"]),
        ({"level": 1.0}, ["`level`", "1.0"]),
        ({"level": 0}, ["`level`"]),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, object], needles: list[str]) -> None:
    with pytest.raises(ParameterError) as info:
        t_interval(1.0, 0.5, 10, **kwargs)  # type: ignore[arg-type]
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))
    assert SYMMETRIC_INTERVALS == ("t", "wald")
