"""The replication loop and Monte Carlo figures shared by both halves of simulation_study."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from deniable.simulation._replicate import draw_counts, moment_figures


def _unused(_: int) -> Any:
    raise AssertionError("not called under this method")


def test_binomial_blocks_and_progress() -> None:
    gen = np.random.default_rng(3)
    calls: list[tuple[int, int]] = []
    sizes: list[int] = []

    def binomial(m: int) -> Any:
        sizes.append(m)
        return gen.binomial(10, 0.5, size=(m, 2))

    yes = draw_counts(gen, 7, 3, "binomial", lambda d, t: calls.append((d, t)), binomial, _unused)
    assert yes.shape == (7, 2) and yes.dtype == np.int64
    assert sizes == [3, 3, 1]
    assert calls == [(3, 7), (6, 7), (7, 7)]
    again = np.random.default_rng(3)
    drawn = [again.binomial(10, 0.5, size=(m, 2)) for m in sizes]
    assert np.array_equal(yes, np.concatenate(drawn))


def test_respondents_seeds_and_progress() -> None:
    seeds: list[int] = []
    calls: list[tuple[int, int]] = []

    def survey(sd: int) -> int:
        seeds.append(sd)
        return sd % 5

    gen = np.random.default_rng(1)
    yes = draw_counts(gen, 5, 2, "respondents", lambda d, t: calls.append((d, t)), _unused, survey)
    again = np.random.default_rng(1)
    assert seeds == [int(x) for m in (2, 2, 1) for x in again.integers(0, 2**63, size=m)]
    assert yes.tolist() == [s % 5 for s in seeds]
    assert calls == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]


def test_moment_figures() -> None:
    est = np.array([0.1, 0.3, 0.5])
    se = np.array([0.1, 0.1, 0.3])
    f = moment_figures(est, se, 0.3, 1.0)
    assert f["bias"] == pytest.approx(0.0)
    assert f["empirical_se"] == pytest.approx(0.2)
    assert f["mean_se"] == pytest.approx(0.5 / 3)
    assert f["rmse"] == pytest.approx(math.sqrt(0.08 / 3))
    assert f["coverage_wald"] == pytest.approx(2 / 3)
