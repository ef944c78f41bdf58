"""The fleet simulator: devices whose values follow a Markov switching model, reporting every
round through a memoized longitudinal oracle, with the realized longitudinal epsilon of each
device beside the estimates."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import LGRR, LOLOHA, LOSUE, OUE
from deniable.simulation import DevicePopulation, Fleet

ORACLES = [
    lambda: LGRR.from_epsilon(2.0, 6, eps_1=0.8),
    lambda: LOSUE.from_epsilon(2.0, 6, eps_1=0.8),
    lambda: LOLOHA.from_epsilon(2.0, 6, eps_1=0.8, g=3),
]


@pytest.mark.parametrize("make", ORACLES)
def test_with_no_switching_every_device_is_at_the_one_value_bound(make: Any) -> None:
    o = make()
    fleet = Fleet(DevicePopulation.zipf(6), devices=500, switch=0.0)
    run = fleet.run(o, rounds=6, rng=4)
    assert (run.distinct == 1).all()
    one_value = min(o.epsilon, 6 * o.epsilon_1)  # eps_inf here: 6 eps_1 = 4.8 > 2
    np.testing.assert_allclose(run.realized_epsilon, one_value, rtol=1e-12)
    values = fleet.values(6, rng=4)
    assert (values == values[0]).all()


@pytest.mark.parametrize("make", ORACLES)
def test_with_switching_every_round_the_realized_epsilon_grows(make: Any) -> None:
    o = make()
    fleet = Fleet(DevicePopulation.uniform(6), devices=400, switch=1.0)
    values = fleet.values(5, rng=9)
    assert (values[1:] != values[:-1]).all()  # every device moves every round
    short = fleet.run(o, rounds=1, rng=9)
    long = fleet.run(o, rounds=5, rng=9)
    assert (long.realized_epsilon >= short.realized_epsilon).all()
    grown = long.distinct >= 2
    assert (long.realized_epsilon[grown] > short.realized_epsilon[grown]).all()
    assert np.median(long.realized_epsilon) > np.median(short.realized_epsilon)
    if not isinstance(o, LOLOHA):
        assert grown.all()
    assert long.realized_epsilon.max() <= long.bound + 1e-12
    if isinstance(o, LOLOHA):
        assert long.distinct.max() <= o.g  # values of one bucket share a PRR
        assert not grown.all()
        assert long.bound == pytest.approx(min(o.g * o.epsilon, 5 * o.epsilon_1))


def test_loloha_counts_distinct_hashed_values_one_prr_each() -> None:
    """The realized epsilon of a LOLOHA device counts the PRRs its store holds (one per
    distinct hashed value), not its distinct values."""
    o = LOLOHA.from_epsilon(2.0, 20, eps_1=1.0, g=2)
    store = InMemoryMemoStore()
    fleet = Fleet(DevicePopulation.uniform(20), devices=300, switch=0.5)
    run = fleet.run(o, rounds=8, rng=3, memo=store)
    raw = np.array([len(set(col)) for col in fleet.values(8, rng=3).T.tolist()])
    ids = np.arange(300)
    kept = sum(
        (store.lookup(f"loloha/prr/{b}", ids, mechanism=o.permanent_key) >= 0).astype(int)
        for b in range(o.g)
    )
    np.testing.assert_array_equal(run.distinct, kept)
    assert (run.distinct <= raw).all() and (run.distinct < raw).any()
    expected = [o.longitudinal_epsilon(8, values=int(d)) for d in run.distinct]
    np.testing.assert_allclose(run.realized_epsilon, expected)


def test_runs_are_reproducible_from_a_seed() -> None:
    fleet = Fleet(DevicePopulation.zipf(6), devices=300, switch=0.2)
    a = fleet.run(LGRR.from_epsilon(2.0, 6), rounds=4, rng=17)
    b = fleet.run(LGRR.from_epsilon(2.0, 6), rounds=4, rng=17)
    c = fleet.run(LGRR.from_epsilon(2.0, 6), rounds=4, rng=18)
    for x, y in zip(a.estimates, b.estimates, strict=True):
        np.testing.assert_array_equal(x.values, y.values)
    np.testing.assert_array_equal(a.realized_epsilon, b.realized_epsilon)
    assert not np.array_equal(a.estimates[-1].values, c.estimates[-1].values)
    summary = a.epsilon_summary
    assert summary["min"] <= summary["median"] <= summary["max"] <= summary["bound"]


def test_the_switching_model_moves_a_share_s_to_other_values_by_frequency() -> None:
    """20 000 devices, s = 0.3: the share that moves in a round is within 6 binomial SEs of s,
    and the new values of the devices that left value 0 follow pi without value 0 (each
    count within 6 SEs: false alarm ~2e-9 per check)."""
    pop = DevicePopulation.from_weights([4, 3, 2, 1])
    n, s = 20_000, 0.3
    values = Fleet(pop, devices=n, switch=s).values(2, rng=21)
    moved = values[1] != values[0]
    assert abs(moved.mean() - s) <= 6 * np.sqrt(s * (1 - s) / n)
    left = moved & (values[0] == 0)
    m = int(left.sum())
    counts = np.bincount(values[1][left], minlength=4)[1:]
    expected = np.array([3, 2, 1]) / 6
    assert np.all(np.abs(counts / m - expected) <= 6 * np.sqrt(expected * (1 - expected) / m))


def test_each_round_estimate_is_unbiased() -> None:
    """Each of 5 rounds of 20 000 devices (values changing, s = 0.2): each frequency within
    6 SE of that round's truth (false alarm ~2e-9 per check, 30 checks)."""
    o = LOLOHA.from_epsilon(3.0, 6, eps_1=1.5)
    run = Fleet(DevicePopulation.zipf(6), devices=20_000, switch=0.2).run(o, rounds=5, rng=8)
    for truth, est in zip(run.truth, run.estimates, strict=True):
        se = np.sqrt(o.variance(20_000, truth))
        assert np.max(np.abs(est.values - truth) / se) <= 6


def test_bad_input_is_refused_naming_the_parameter() -> None:
    pop = DevicePopulation.uniform(4)
    for bad in (-0.1, 1.5):
        with pytest.raises(ParameterError, match=r"`switch` must be in \[0, 1\], got"):
            Fleet(pop, devices=10, switch=bad)
    with pytest.raises(ParameterError, match="`switch` must be a number"):
        Fleet(pop, devices=10, switch=float("nan"))
    with pytest.raises(ParameterError, match="`devices`"):
        Fleet(pop, devices=0, switch=0.1)
    with pytest.raises(ParameterError, match="`switch` must be 0"):
        Fleet(DevicePopulation.from_weights([1, 0, 0]), devices=10, switch=0.5)
    with pytest.raises(ParameterTypeError, match="`population`"):
        Fleet([0.5, 0.5], devices=10, switch=0.1)  # type: ignore[arg-type]
    fleet = Fleet(pop, devices=10, switch=0.1)
    with pytest.raises(ParameterTypeError, match="`oracle` must be a longitudinal oracle"):
        fleet.run(OUE.from_epsilon(1.0, 4), rounds=2, rng=1)
    with pytest.raises(ParameterError, match=r"`oracle`.*k = 4.*got k = 5"):
        fleet.run(LGRR.from_epsilon(1.0, 5), rounds=2, rng=1)
    with pytest.raises(ParameterError, match="`rounds`"):
        fleet.run(LGRR.from_epsilon(1.0, 4), rounds=0, rng=1)
