"""The fast randomize paths keep the contract of the straightforward ones.

``BinaryDesign.randomize`` and ``Categorical.randomize`` were rewritten for speed (no shift
of each word, no fancy indexing by the answer, an arithmetic keep/forced select, reused
block buffers).  The reference randomizers below are the plain statement of the contract
(report ``(w >> 11) < t[x]`` from one word per report; for k-ary RR, per block of
``CHUNK`` reports, ``m`` "keep" words then ``m`` category words), and the fast paths must
reproduce them bit for bit from the same seed.  Timing is not tested here: speed belongs to
``scripts/bench``.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from deniable.designs import (
    Binary,
    BinaryDesign,
    Categorical,
    Custom,
    ForcedResponse,
    TwoCoin,
    Warner,
)
from deniable.designs._kernels import GROUP
from deniable.exceptions import ParameterError
from deniable.randomness import (
    CHUNK,
    SystemRandom,
    bernoulli,
    probability_threshold,
    uniform_below,
    uniform_below_into,
    words_below,
)

TWO53 = 1 << 53
SEED = 20240601


def pcg(seed: int = SEED) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


# --- references: the contract written as plainly as possible -------------------------------


def reference_binary(design: BinaryDesign, x: npt.NDArray[Any], seed: int) -> npt.NDArray[Any]:
    words = pcg(seed).bit_generator.random_raw(x.size).astype(np.uint64)
    table = np.array(design.thresholds(), dtype=np.uint64)
    return ((words >> np.uint64(11)) < table[x.astype(np.intp)]).astype(np.uint8)


def reference_categorical(design: Categorical, x: npt.NDArray[Any], seed: int) -> list[int]:
    """Python-int arithmetic, report by report (only for small n)."""
    bits = pcg(seed).bit_generator
    keep_t, cum_t = design.thresholds()
    k = design.k
    thresholds: list[int] = [] if cum_t is None else list(cum_t)
    out: list[int] = []
    for start in range(0, x.size, CHUNK):
        m = min(CHUNK, x.size - start)
        keep_w = [int(w) for w in bits.random_raw(m)]
        cat_w = [int(w) for w in bits.random_raw(m)]
        for i in range(m):
            if design.forced is None:
                b = 64 - k.bit_length() if k & (k - 1) else 64 - (k.bit_length() - 1)
                if k & (k - 1):  # multiply-shift on the top b bits
                    other = ((cat_w[i] >> (64 - b)) * k) >> b
                else:  # top log2(k) bits
                    other = cat_w[i] >> b if b < 64 else 0
            else:
                other = sum(1 for c in thresholds if c <= cat_w[i] >> 11)
            out.append(int(x[start + i]) if keep_w[i] >> 11 < keep_t else other)
    return out


BINARY_DESIGNS = [
    Binary(1.0),
    Binary(2.0, calibration="half"),
    TwoCoin(),  # dyadic: 3/4, 1/4
    Warner(0.2),  # P(yes | 1) < P(yes | 0): the other branch of the select
    Custom(1.0, 0.3),  # threshold 2**53 (all words below)
    Custom(0.4, 0.0),  # threshold 0 (no word below)
    Custom(0.0, 1.0),  # both ends, reversed
    ForcedResponse(0.25, 0.25),
]


@pytest.mark.parametrize("design", BINARY_DESIGNS, ids=repr)
@pytest.mark.parametrize("n", [0, 1, 1000, CHUNK, CHUNK + 1, 3 * CHUNK + 17, 9 * CHUNK + 7])
def test_binary_bit_identical_to_reference(design: BinaryDesign, n: int) -> None:
    x = (pcg(n).random(n) < 0.4).astype(np.uint8)
    got = design.randomize(x, rng=pcg(7))
    assert got.dtype == np.uint8
    assert got.shape == (n,)
    np.testing.assert_array_equal(got, reference_binary(design, x, 7))


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int64, np.uint32, np.float64])
def test_binary_input_dtypes_give_the_same_reports(dtype: type[Any]) -> None:
    n = 2 * CHUNK + 5
    x = (pcg(1).random(n) < 0.5).astype(np.uint8)
    design = Warner(0.3)
    expected = reference_binary(design, x, 3)
    np.testing.assert_array_equal(design.randomize(x.astype(dtype), rng=pcg(3)), expected)


def test_binary_list_and_scalar_inputs() -> None:
    design = TwoCoin()
    x = [1, 0, 1, 1, 0]
    np.testing.assert_array_equal(
        design.randomize(x, rng=pcg(5)), reference_binary(design, np.array(x), 5)
    )
    one = design.randomize(1, rng=pcg(5))
    assert one.shape == (1,)
    assert one[0] == reference_binary(design, np.array([1]), 5)[0]


CATEGORICAL_DESIGNS = [
    Categorical.from_epsilon(1.0, 2),
    Categorical.from_epsilon(1.0, 3),
    Categorical.from_epsilon(1.0, 16),
    Categorical.from_epsilon(2.0, 1000),
    Categorical.from_epsilon(1.0, 1024),
    Categorical(k=3, p_truthful=1.0),  # keep threshold 2**53
    Categorical(k=4, p_truthful=0.5, forced=(0.5, 0.0, 0.5, 0.0)),
    Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5)),
]


@pytest.mark.parametrize("design", CATEGORICAL_DESIGNS, ids=repr)
# 4 and 9 blocks and a bit: the loop draws and works on up to GROUP (4) blocks at a time
@pytest.mark.parametrize("n", [0, 1, 999, CHUNK + 3, 4 * CHUNK, 9 * CHUNK + 7])
def test_categorical_bit_identical_to_reference(design: Categorical, n: int) -> None:
    x = pcg(n).integers(0, design.k, size=n)
    got = design.randomize(x, rng=pcg(11))
    assert got.dtype == np.uint16
    assert got.shape == (n,)
    assert got.tolist() == reference_categorical(design, x, 11)


def test_categorical_uint32_output_for_large_k() -> None:
    k = (1 << 16) + 1
    design = Categorical.from_epsilon(3.0, k)
    x = pcg(2).integers(0, k, size=500)
    x[:3] = [0, k - 1, 1 << 16]
    got = design.randomize(x, rng=pcg(4))
    assert got.dtype == np.uint32
    assert got.tolist() == reference_categorical(design, x, 4)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32, np.int64, np.float64])
def test_categorical_input_dtypes_give_the_same_reports(dtype: type[Any]) -> None:
    design = Categorical.from_epsilon(1.5, 200)
    x = pcg(8).integers(0, 200, size=CHUNK + 9)
    expected = design.randomize(x, rng=pcg(9))
    np.testing.assert_array_equal(design.randomize(x.astype(dtype), rng=pcg(9)), expected)


def test_categorical_extreme_values_survive_the_wrapping_select() -> None:
    # x - other wraps modulo 2**16; keep * (...) + other must give back x exactly
    design = Categorical(k=1 << 16, p_truthful=1.0)  # always keep
    x = np.array([0, 1, (1 << 16) - 1, 32768, 12345] * 100, dtype=np.int64)
    np.testing.assert_array_equal(design.randomize(x, rng=pcg(1)), x)


# --- a fixed number of words per report, whatever the answers ------------------------------


def _state_after(words: int) -> dict[str, Any]:
    g = pcg(13)
    g.bit_generator.random_raw(words)
    return dict(g.bit_generator.state)


@pytest.mark.parametrize("fill", ["zeros", "ones", "mixed"])
def test_binary_consumes_one_word_per_report(fill: str) -> None:
    n = CHUNK + 123
    x = {"zeros": np.zeros(n), "ones": np.ones(n), "mixed": pcg(0).random(n) < 0.5}[fill]
    for design in (Binary(1.0), Warner(0.2), Custom(1.0, 0.0)):
        g = pcg(13)
        design.randomize(x, rng=g)
        assert g.bit_generator.state == _state_after(n)


@pytest.mark.parametrize("fill", ["zeros", "last", "mixed"])
def test_categorical_consumes_two_words_per_report(fill: str) -> None:
    n, k = CHUNK + 77, 37
    x = {
        "zeros": np.zeros(n, dtype=np.int64),
        "last": np.full(n, k - 1),
        "mixed": pcg(0).integers(0, k, n),
    }[fill]
    for design in (Categorical.from_epsilon(1.0, k), Categorical(k=k, p_truthful=1.0)):
        g = pcg(13)
        design.randomize(x, rng=g)
        assert g.bit_generator.state == _state_after(2 * n)


# --- the word-level helpers -----------------------------------------------------------------

EDGE_WORDS = np.array(
    [0, 1, (1 << 11) - 1, 1 << 11, (1 << 64) - 1, (1 << 63), (1 << 63) - 1], dtype=np.uint64
)


@pytest.mark.parametrize("t", [0, 1, 2, 12345, (1 << 52), TWO53 - 1, TWO53])
def test_words_below_is_the_top53_comparison(t: int) -> None:
    around = [(t << 11) + d for d in (-2049, -2048, -1, 0, 1, 2047, 2048)]
    edge = [w for w in around if 0 <= w < 1 << 64]
    words = np.concatenate(
        [EDGE_WORDS, np.array(edge, dtype=np.uint64), pcg(t % 1000).bit_generator.random_raw(999)]
    ).astype(np.uint64)
    expected = (words >> np.uint64(11)) < np.uint64(t)
    np.testing.assert_array_equal(words_below(words, t), expected)
    out = np.empty(words.size, dtype=np.bool_)
    assert words_below(words, t, out=out) is out
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("t", [-1, TWO53 + 1])
def test_words_below_rejects_thresholds_out_of_range(t: int) -> None:
    with pytest.raises(ParameterError, match=r"`threshold` must be in \[0, 2\*\*53\], got "):
        words_below(np.zeros(3, dtype=np.uint64), t)


def test_bernoulli_is_unchanged() -> None:
    for p in (0.0, 0.25, 1 / 3, 0.7, 1.0):
        words = pcg(5).bit_generator.random_raw(5000).astype(np.uint64)
        expected = (words >> np.uint64(11)) < np.uint64(probability_threshold(p))
        np.testing.assert_array_equal(bernoulli(pcg(5), p, 5000), expected)


@pytest.mark.parametrize("m", [1, 2, 3, 16, 1000, 1024, (1 << 16) + 1, 1 << 24, (1 << 24) - 3])
def test_uniform_below_into_matches_uniform_below(m: int) -> None:
    words = np.concatenate([EDGE_WORDS, pcg(m).bit_generator.random_raw(4096)]).astype(np.uint64)
    expected = uniform_below(words, m)
    out = np.empty_like(words)
    assert uniform_below_into(words, m, out) is out
    np.testing.assert_array_equal(out, expected)
    assert int(out.max()) < m
    in_place = words.copy()
    uniform_below_into(in_place, m, in_place)
    np.testing.assert_array_equal(in_place, expected)


def test_uniform_below_into_rejects_m_below_1() -> None:
    with pytest.raises(ParameterError, match=r"`m` must be an integer >= 1, got 0"):
        uniform_below_into(np.zeros(2, dtype=np.uint64), 0, np.zeros(2, dtype=np.uint64))


# --- the CSPRNG path: same distribution (it shares the code, not the words) ----------------


def test_binary_csprng_frequencies() -> None:
    # TwoCoin: P(yes | 1) = 3/4, P(yes | 0) = 1/4 exactly.  5-sigma bands: false alarm ~6e-7
    # per check, two checks.
    n = 200_000
    x = np.repeat(np.array([1, 0], dtype=np.uint8), n)
    r = TwoCoin().randomize(x, rng=SystemRandom())
    for got, p in ((int(r[:n].sum()), 0.75), (int(r[n:].sum()), 0.25)):
        assert abs(got - n * p) < 5 * (n * p * (1 - p)) ** 0.5


def test_categorical_csprng_frequencies() -> None:
    # k = 4, truth = 1/2, all answers 0: P(0) = 1/2 + 1/8 = 5/8, P(j) = 1/8 otherwise.
    # 5-sigma bands: false alarm ~6e-7 per check, four checks.
    n = 200_000
    r = Categorical(k=4, p_truthful=0.5).randomize(np.zeros(n, dtype=np.uint8), rng=SystemRandom())
    counts = np.bincount(r, minlength=4)
    for got, p in zip(counts, (5 / 8, 1 / 8, 1 / 8, 1 / 8), strict=True):
        assert abs(int(got) - n * p) < 5 * (n * p * (1 - p)) ** 0.5


# --- memory is the output plus a fixed working set (blocks), never O(n k) ------------------


def _extra_bytes(fn: Any, out_bytes: int) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - out_bytes


@pytest.mark.parametrize(
    ("design", "x_of", "bytes_per_report"),
    [
        (Binary(1.0), lambda n: np.zeros(n, dtype=np.uint8), 1),
        (Categorical.from_epsilon(1.0, 1024), lambda n: np.zeros(n, dtype=np.uint16), 2),
    ],
    ids=["binary", "k=1024"],
)
def test_working_memory_does_not_grow_with_n(design: Any, x_of: Any, bytes_per_report: int) -> None:
    # Not a target (that is scripts/bench): a structural check that randomize works in blocks.
    # The extra memory above the output is the same at n = 4 blocks and at n = 16 blocks.
    small, large = 4 * CHUNK, 16 * CHUNK
    xs, xl = x_of(small), x_of(large)
    extra_small = _extra_bytes(lambda: design.randomize(xs, rng=pcg()), small * bytes_per_report)
    extra_large = _extra_bytes(lambda: design.randomize(xl, rng=pcg()), large * bytes_per_report)
    assert extra_large <= extra_small + 64 * 1024
    # a few buffers the size of the GROUP blocks worked on together: at most 2 words (16 B)
    # + 11 B of scratch per report of them
    assert extra_large < 27 * GROUP * CHUNK
