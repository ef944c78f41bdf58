"""Random sources: normalising ``rng``, exact Bernoulli thresholds, the CSPRNG default."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats

from deniable.designs import Categorical, Kuk, TwoCoin
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.randomness import (
    CHUNK,
    SystemRandom,
    bernoulli,
    probability_threshold,
    random_words,
    resolve_rng,
    uniform_below,
)

TWO53 = 2**53

# --- resolve_rng -----------------------------------------------------------------------------


def test_none_is_the_system_csprng() -> None:
    assert isinstance(resolve_rng(None), SystemRandom)
    assert isinstance(resolve_rng(), SystemRandom)


def test_sources_pass_through() -> None:
    sr = SystemRandom()
    gen = np.random.default_rng(1)
    assert resolve_rng(sr) is sr
    assert resolve_rng(gen) is gen


@pytest.mark.parametrize("seed", [0, 7, np.int64(7), np.uint32(7), 2**70])
def test_int_seed_is_pcg64(seed: Any) -> None:
    gen = resolve_rng(seed)
    assert isinstance(gen, np.random.Generator)
    ref = np.random.Generator(np.random.PCG64(int(seed)))
    assert np.array_equal(gen.bit_generator.random_raw(5), ref.bit_generator.random_raw(5))


def test_negative_seed() -> None:
    with pytest.raises(ParameterError, match="`seed` must be a non-negative integer, got -1"):
        resolve_rng(-1)


@pytest.mark.parametrize("bad", [True, 1.5, "7", np.random.RandomState(1), [1]])
def test_bad_rng_types(bad: Any) -> None:
    with pytest.raises(ParameterTypeError, match="`rng` must be None, an int seed"):
        resolve_rng(bad)


def test_designs_report_bad_rng() -> None:
    with pytest.raises(ParameterTypeError, match="`rng`"):
        TwoCoin().randomize([0, 1], rng="seed")


# --- random_words ----------------------------------------------------------------------------


def test_random_words_from_a_generator_are_its_raw_output() -> None:
    words = random_words(np.random.default_rng(3), 6)
    assert words.dtype == np.uint64 and words.shape == (6,)
    assert np.array_equal(words, np.random.default_rng(3).bit_generator.random_raw(6))


def test_random_words_from_the_system_source() -> None:
    words = random_words(SystemRandom(), 6)
    assert words.dtype == np.uint64 and words.shape == (6,)


# --- probability_threshold -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "t"),
    [
        (0.75, 3 * 2**51),
        (Fraction(3, 4), 3 * 2**51),
        (0.5, 2**52),
        (0.25, 2**51),
        (5 / 8, 5 * 2**50),
        (0.0, 0),
        (1.0, TWO53),
        (2.0**-53, 1),
        (1 - 2.0**-53, TWO53 - 1),
        (Fraction(12345, 2**40), 12345 * 2**13),
    ],
)
def test_threshold_is_exact_for_dyadic_p(p: float | Fraction, t: int) -> None:
    assert probability_threshold(p) == t


@pytest.mark.parametrize(
    "p", [0.1, 1 / 3, 2 / 3, 0.7, 0.999, 1e-10, Fraction(1, 3), Fraction(2, 7)]
)
def test_threshold_is_within_half_a_step(p: float | Fraction) -> None:
    t = probability_threshold(p)
    assert isinstance(t, int)
    assert abs(Fraction(t, TWO53) - Fraction(p)) <= Fraction(1, 2**54)


@pytest.mark.parametrize("p", [-0.1, 1.5, Fraction(5, 4)])
def test_threshold_rejects_non_probabilities(p: float | Fraction) -> None:
    with pytest.raises(ParameterError, match="`p` must be in \\[0, 1\\]"):
        probability_threshold(p)


# --- bernoulli -------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.3, 0.75, 0.01, 0.5])
def test_bernoulli_frequency(p: float) -> None:
    """200k draws: 5-sigma band, two-sided false alarm ~6e-7."""
    n = 200_000
    draws = bernoulli(np.random.default_rng(12), p, n)
    assert draws.dtype == np.bool_ and draws.shape == (n,)
    assert abs(draws.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_bernoulli_edges_and_word_use() -> None:
    gen = np.random.default_rng(2)
    assert not bernoulli(gen, 0.0, 1000).any()
    assert bernoulli(gen, 1.0, 1000).all()
    # one 64-bit word per draw: the state advances as random_raw(size) does
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    bernoulli(a, 0.3, 123)
    b.bit_generator.random_raw(123)
    assert a.bit_generator.state == b.bit_generator.state


def test_bernoulli_compares_the_top_53_bits() -> None:
    words = np.random.default_rng(9).bit_generator.random_raw(1000)
    draws = bernoulli(np.random.default_rng(9), 0.3, 1000)
    assert np.array_equal(draws, (words >> np.uint64(11)) < probability_threshold(0.3))


# --- SystemRandom ----------------------------------------------------------------------------


def test_system_random_words() -> None:
    sr = SystemRandom()
    words = sr.random_raw(4096)
    assert words.dtype == np.uint64 and words.shape == (4096,)
    assert repr(sr) == "SystemRandom()"
    # every bit is a fair coin: 5-sigma band per bit over 4096 words (false alarm ~4e-5 total)
    bits = (words[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    freq = bits.mean(axis=0)
    assert np.all(np.abs(freq - 0.5) < 5 * math.sqrt(0.25 / 4096))
    assert len(np.unique(words)) == 4096  # a collision has probability ~5e-13
    assert sr.random_raw(0).shape == (0,)


def test_system_random_has_no_state_to_save() -> None:
    with pytest.raises(AttributeError):
        SystemRandom().seed = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "design", [TwoCoin(), Kuk(0.7, 0.3, draws=3), Categorical(k=3, truth=0.5)], ids=str
)
def test_randomize_uses_the_csprng_by_default(design: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    real = SystemRandom.random_raw

    def recording(self: SystemRandom, size: int) -> np.ndarray:
        asked.append(size)
        return real(self, size)

    monkeypatch.setattr(SystemRandom, "random_raw", recording)
    reports = design.randomize([0, 1] * 50)
    assert reports.shape == (100,)
    assert sum(asked) >= 100  # every report drew fresh words from the OS
    asked.clear()
    design.randomize([0, 1] * 50, rng=SystemRandom())
    assert sum(asked) >= 100
    asked.clear()
    design.randomize([0, 1] * 50, rng=3)
    assert asked == []  # a seed never touches the OS source


def test_csprng_reports_are_not_reproducible() -> None:
    truth = np.zeros(256, dtype=np.uint8)
    a, b = TwoCoin().randomize(truth), TwoCoin().randomize(truth)
    assert not np.array_equal(a, b)  # equal with probability 2**-256 * ... ~ 0


# --- uniform_below ---------------------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 2, 8, 1024, 2**20])
def test_uniform_below_power_of_two_takes_the_top_bits(m: int) -> None:
    words = np.random.default_rng(4).bit_generator.random_raw(10_000)
    out = uniform_below(words, m)
    bits = m.bit_length() - 1
    expected = words >> np.uint64(64 - bits) if bits else np.zeros_like(words)
    assert np.array_equal(out, expected)
    assert out.max() < m


@pytest.mark.parametrize("m", [3, 5, 7, 10, 1000, 2**11 - 1, 2**11 + 1])
def test_uniform_below_other_m(m: int) -> None:
    words = np.random.default_rng(6).bit_generator.random_raw(200_000)
    out = uniform_below(words, m)
    assert out.min() >= 0 and out.max() < m
    # chi-square goodness of fit to uniform: p-value > 1e-6 (false alarm 1e-6)
    counts = np.bincount(out.astype(np.int64), minlength=m)
    assert stats.chisquare(counts).pvalue > 1e-6
    # multiply-shift is monotone in the word: the smallest word gives 0, the largest m - 1
    edge = uniform_below(np.array([0, 2**64 - 1], dtype=np.uint64), m)
    assert edge.tolist() == [0, m - 1]
    order = np.argsort(words)
    assert np.all(np.diff(out[order].astype(np.int64)) >= 0)


@pytest.mark.parametrize("m", [3, 6, 1000])
def test_uniform_below_is_within_2_to_the_minus_b_of_uniform(m: int) -> None:
    """With b = 64 - bit_length(m) bits u, category j gets the u in [ceil(j 2^b/m),
    ceil((j+1) 2^b/m)): counts differ by at most one, so |P(j) - 1/m| < 2^-b."""
    b = 64 - m.bit_length()
    edges = [-(-j * 2**b // m) for j in range(m + 1)]
    sizes = {edges[j + 1] - edges[j] for j in range(m)}
    assert max(sizes) - min(sizes) <= 1
    # the boundary words of each category map where the formula says
    lo_words = np.array([e << (64 - b) for e in edges[:-1]], dtype=np.uint64)
    assert uniform_below(lo_words, m).tolist() == list(range(m))
    hi_words = np.array([((e << (64 - b)) - 1) for e in edges[1:]], dtype=np.uint64)
    assert uniform_below(hi_words, m).tolist() == list(range(m))


def test_uniform_below_rejects_m_below_one() -> None:
    with pytest.raises(ParameterError, match="`m`"):
        uniform_below(np.zeros(3, dtype=np.uint64), 0)


def test_chunk_is_a_power_of_two() -> None:
    assert CHUNK > 0 and CHUNK & (CHUNK - 1) == 0
