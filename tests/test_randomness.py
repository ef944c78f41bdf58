"""Random sources: normalising ``rng``, exact Bernoulli thresholds, the CSPRNG default."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats

from deniable.designs import Categorical, Kuk, TwoCoin
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.randomness import (
    CHUNK,
    ArrayWords,
    SystemRandom,
    WordSource,
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
    "design", [TwoCoin(), Kuk(0.7, 0.3, draws=3), Categorical(k=3, p_truthful=0.5)], ids=str
)
def test_randomize_uses_the_csprng_by_default(design: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    real = SystemRandom.random_raw

    def recording(self: SystemRandom, size: int) -> np.ndarray:
        asked.append(size)
        return real(self, size)

    real_fill = SystemRandom.fill

    def recording_fill(self: SystemRandom, out: np.ndarray) -> np.ndarray:
        asked.append(out.size)
        return real_fill(self, out)

    monkeypatch.setattr(SystemRandom, "random_raw", recording)
    monkeypatch.setattr(SystemRandom, "fill", recording_fill)  # the array paths' buffers
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


# --- word sources: ArrayWords, numpy bit generators, a client's own -------------------------


def test_array_words_hands_out_words_in_order() -> None:
    src = ArrayWords([5, "7", "0x10", 2**64 - 1, np.uint64(3)])
    assert resolve_rng(src) is src
    assert random_words(src, 2).tolist() == [5, 7]
    assert (src.used, src.remaining, len(src)) == (2, 3, 5)
    assert random_words(src, 3).tolist() == [16, 2**64 - 1, 3]
    assert src.remaining == 0
    assert random_words(src, 0).size == 0
    assert repr(src) == "ArrayWords(5 words, 5 used)"


def test_array_words_exhausted_names_rng_and_counts_and_hands_out_nothing() -> None:
    src = ArrayWords([1, 2, 3])
    random_words(src, 1)
    with pytest.raises(DataError, match=r"`rng` \(ArrayWords\) has 2 of its 3 words left, 5 were"):
        random_words(src, 5)
    assert src.remaining == 2  # the failed request took nothing
    assert random_words(src, 2).tolist() == [2, 3]


def test_a_design_refuses_too_few_words() -> None:
    with pytest.raises(DataError, match=r"`rng`.*has 3 of its 3 words left, 6 were asked"):
        Categorical(k=3, p_truthful=0.5).randomize([0, 1, 2], rng=ArrayWords([1, 2, 3]))


def test_array_words_are_a_copy_and_read_only() -> None:
    given = np.array([1, 2, 3], dtype=np.uint64)
    src = ArrayWords(given)
    given[0] = 99
    out = src.random_raw(3)
    assert out.tolist() == [1, 2, 3]
    assert not out.flags.writeable


@pytest.mark.parametrize(
    ("words", "error", "needle"),
    [
        ([2**64], ParameterError, r"`words\[0\]` must be one of integers in \[0, 2\*\*64 - 1\]"),
        ([1, -1], ParameterError, r"`words\[1\]`.*got -1"),
        (["x"], ParameterTypeError, r"`words\[0\]`.*got 'x'"),
        ([1.5], ParameterTypeError, r"`words\[0\]`.*got float 1.5"),
        ([True], ParameterTypeError, r"`words\[0\]`.*got bool True"),
        ("123", ParameterTypeError, "`words` must be a sequence"),
        (np.array([1.0]), ParameterTypeError, "dtype float64"),
        (np.array([-3, 1]), ParameterError, "got -3"),
        (np.zeros((2, 2), dtype=np.uint64), ParameterError, "1-D"),
    ],
)
def test_array_words_rejects_what_is_not_a_word(words: Any, error: type, needle: str) -> None:
    with pytest.raises(error, match=needle):
        ArrayWords(words)


def test_array_words_rejects_a_bad_size() -> None:
    with pytest.raises(ParameterError, match="`size` must be an integer >= 0, got -1"):
        ArrayWords([1]).random_raw(-1)


def test_array_words_replay_a_generator_bit_for_bit() -> None:
    truth = np.arange(1000) % 3
    design = Categorical(k=3, p_truthful=0.6)
    words = np.random.Generator(np.random.PCG64(9)).bit_generator.random_raw(2000)
    seeded = design.randomize(truth, rng=9)
    assert np.array_equal(design.randomize(truth, rng=ArrayWords(words)), seeded)
    assert np.array_equal(design.randomize(truth, rng=ArrayWords(words.tolist())), seeded)


def test_seeded_reports_are_unchanged() -> None:
    # the first reports of seed 1 as every earlier version made them (docs' seeded outputs)
    assert TwoCoin().randomize(np.arange(12) % 2, rng=1).tolist() == [
        0, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1,
    ]  # fmt: skip
    kuk = Kuk(0.8, 0.4, draws=3)
    assert kuk.randomize([0, 1, 0, 1], rng=np.random.default_rng(2)).tolist() == [2, 3, 1, 3]


def test_a_numpy_bit_generator_is_a_word_source() -> None:
    truth = np.arange(100) % 2
    bitgen = np.random.PCG64(5)
    assert isinstance(bitgen, WordSource)
    assert resolve_rng(bitgen) is bitgen
    assert np.array_equal(
        TwoCoin().randomize(truth, rng=np.random.PCG64(5)),
        TwoCoin().randomize(truth, rng=np.random.Generator(np.random.PCG64(5))),
    )


class _Counter:
    """A client's own word source: 0, 1, 2, ... (or a wrong answer when told to)."""

    def __init__(self, wrong: str = "") -> None:
        self.next = 0
        self.wrong = wrong

    def random_raw(self, size: int) -> Any:
        out = np.arange(self.next, self.next + size, dtype=np.uint64)
        self.next += size
        if self.wrong == "dtype":
            return out.astype(np.int64)
        if self.wrong == "size":
            return out[:-1]
        return out


def test_a_word_source_of_ones_own() -> None:
    src = _Counter()
    assert resolve_rng(src) is src
    assert random_words(src, 3).tolist() == [0, 1, 2]
    # words 0.. are far below every threshold: every two-coin report is "yes"
    assert TwoCoin(p_truthful=0.5, p_yes=0.5).randomize([0, 0, 1], rng=_Counter()).tolist() == [
        1,
        1,
        1,
    ]


@pytest.mark.parametrize(("wrong", "needle"), [("dtype", "dtype int64"), ("size", r"shape \(3,\)")])
def test_a_word_source_that_returns_the_wrong_words(wrong: str, needle: str) -> None:
    with pytest.raises(
        DataError, match=rf"`rng` \(_Counter\) must return 4 uint64 words.*{needle}"
    ):
        random_words(_Counter(wrong), 4)


def test_a_class_is_not_a_word_source() -> None:
    with pytest.raises(ParameterTypeError, match="`rng` must be None, an int seed"):
        resolve_rng(SystemRandom)
