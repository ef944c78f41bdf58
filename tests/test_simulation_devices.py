"""The population model of simulated telemetry devices (``DevicePopulation``): exact
frequencies for Zipf, uniform and given weights, seeded draws that follow them, the reports
of an oracle for a stream of devices, and bad input refused naming the parameter."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles import make_oracle
from deniable.randomness import SystemRandom
from deniable.simulation import DevicePopulation


def zipf_fractions(k: int, s: int) -> list[Fraction]:
    """Zipf's law in exact arithmetic: (j + 1)^-s over the sum."""
    w = [Fraction(1, (j + 1) ** s) for j in range(k)]
    total = sum(w)
    return [x / total for x in w]


@pytest.mark.parametrize(("k", "s"), [(1, 1), (4, 1), (10, 1), (7, 2), (5, 0)])
def test_zipf_frequencies_are_exact(k: int, s: int) -> None:
    pop = DevicePopulation.zipf(k, s)
    exact = zipf_fractions(k, s)
    assert pop.k == k and pop.model == f"zipf(s={s})"
    # each frequency within one rounding of the exact fraction: 2 ulps of the double
    for got, want in zip(pop.frequencies.tolist(), exact, strict=True):
        assert abs(Fraction(got) - want) <= Fraction(2**-51) * want
    assert pop.to_dict()["frequencies"] == pop.frequencies.tolist()


def test_uniform_and_given_weights() -> None:
    assert DevicePopulation.uniform(4).frequencies.tolist() == [0.25] * 4
    assert (
        DevicePopulation.zipf(6, 0).frequencies.tolist()
        == DevicePopulation.uniform(6).frequencies.tolist()
    )
    pop = DevicePopulation.from_weights([3, 1, 0, 4])
    assert pop.frequencies.tolist() == [3 / 8, 1 / 8, 0.0, 4 / 8]
    assert pop.expected_counts(800).tolist() == [300.0, 100.0, 0.0, 400.0]
    # read-only: the stated frequencies cannot be changed behind the model's back
    with pytest.raises(ValueError, match="read-only"):
        pop.frequencies[0] = 1.0
    weights = np.array([1.0, 2.0])
    copied = DevicePopulation.from_weights(weights)
    weights[0] = 100.0
    assert copied.frequencies.tolist() == [1 / 3, 2 / 3]


def test_seeded_draws_follow_the_frequencies() -> None:
    # a chi-square goodness-of-fit test at false-alarm rate 1e-4 (for any one seed); the
    # seed is fixed, so the test is deterministic
    from scipy import stats

    pop = DevicePopulation.zipf(12)
    n = 200_000
    values = pop.draw(n, rng=20240611)
    counts = np.bincount(values, minlength=pop.k)
    assert counts.sum() == n and values.min() >= 0 and values.max() < pop.k
    assert stats.chisquare(counts, pop.expected_counts(n)).pvalue > 1e-4
    # a value of frequency 0 is never drawn
    assert 2 not in DevicePopulation.from_weights([1, 1, 0, 1]).draw(10_000, rng=3)


def test_draws_are_reproducible_from_the_seed() -> None:
    pop = DevicePopulation.from_weights([5, 1, 1])
    assert pop.draw(1000, rng=7).tolist() == pop.draw(1000, rng=7).tolist()
    assert pop.draw(1000, rng=7).tolist() != pop.draw(1000, rng=8).tolist()
    assert pop.draw(0, rng=7).size == 0


def test_reports_of_an_oracle_for_a_stream_of_devices() -> None:
    pop = DevicePopulation.zipf(16)
    oracle = make_oracle("olh", 2.0, 16)
    batches = list(pop.reports(oracle, 50_000, rng=5, batch=12_000))
    assert [len(b) for b in batches] == [12_000, 12_000, 12_000, 12_000, 2_000]
    again = list(pop.reports(oracle, 50_000, rng=5, batch=12_000))
    assert all(np.array_equal(a, b) for a, b in zip(batches, again, strict=True))
    # the estimate from the reports finds the stated frequencies: each within 4.5 SE
    # (false-alarm rate about 16 x 7e-6 = 1e-4 for a random seed; this seed is fixed)
    est = oracle.estimate(sum(oracle.tally(b) for b in batches))
    z = (est.values - pop.frequencies) / est.se
    assert np.all(np.abs(z) < 4.5), z


@pytest.mark.parametrize(
    ("call", "error", "needle"),
    [
        (lambda: DevicePopulation.zipf(0), ParameterError, "`k`"),
        (lambda: DevicePopulation.zipf(4, -1), ParameterError, "`s` must be in [0, 100]"),
        (lambda: DevicePopulation.zipf(4, float("nan")), ParameterError, "`s`"),
        (lambda: DevicePopulation.zipf(4, "1"), ParameterTypeError, "`s` must be a real"),
        (lambda: DevicePopulation.uniform(1 << 25), ParameterError, "`k`"),
        (lambda: DevicePopulation.from_weights([1, -1]), DataError, "got -1.0 for value 1"),
        (lambda: DevicePopulation.from_weights([1, np.inf]), DataError, "finite"),
        (lambda: DevicePopulation.from_weights([0, 0]), DataError, "must not all be 0"),
        (lambda: DevicePopulation.from_weights([]), DataError, "one weight per value"),
        (lambda: DevicePopulation.from_weights([[1, 2]]), DataError, "shape (1, 2)"),
        (lambda: DevicePopulation.from_weights(["a"]), ParameterTypeError, "`weights`"),
        (lambda: DevicePopulation.uniform(4).draw(-1), ParameterError, "`devices`"),
        (lambda: DevicePopulation.uniform(4).draw(3, rng=SystemRandom()), ParameterTypeError,
         "`rng`"),
        (lambda: DevicePopulation.uniform(4).reports(make_oracle("oue", 1.0, 5), 10),
         ParameterError, "`oracle` must take the population's 4 values"),
        (lambda: DevicePopulation.uniform(4).reports(make_oracle("oue", 1.0, 4), 10, batch=0),
         ParameterError, "`batch`"),
    ],
)  # fmt: skip
def test_bad_input_names_the_parameter(call: object, error: type, needle: str) -> None:
    with pytest.raises(error) as err:
        call()  # type: ignore[operator]
    assert needle in str(err.value)
