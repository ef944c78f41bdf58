"""The one-pass ``randomize_and_tally`` of binary and k-ary randomized response, the
value counter behind it and ``Tally.from_reports``, and ``fill_words``, the block draws of
the randomizers.  (Every exported mechanism is checked against randomize-then-tally in the
conformance suite; these are the paths the fast kernels take.)"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from deniable import Binary, Categorical, SystemRandom, Tally, Warner
from deniable.designs._counting import ValueCounter
from deniable.exceptions import DataError, ParameterTypeError
from deniable.randomness import CHUNK, ArrayWords, ChaCha20Words, fill_words, random_words

KEY = bytes(range(32))


def _truths(k: int, n: int) -> list[np.ndarray]:
    gen = np.random.default_rng(k + n)
    values = gen.integers(0, k, n)
    out = [values, values.astype(np.uint16 if k > 2 else np.uint8)]
    if k == 2:
        out.append(values.astype(np.bool_))
    return out


DESIGNS = [
    Binary(1.0),
    Warner(0.2),  # the "yes" threshold of answer 1 is the lower one
    Categorical.from_epsilon(1.0, 16),  # counted four at a time
    Categorical.from_epsilon(1.0, 17),  # bincount a block
    Categorical.from_epsilon(1.0, 1024),
    Categorical(k=5, p_truthful=0.4, forced=(0.1, 0.2, 0.3, 0.2, 0.2)),  # cumulative draw
]


@pytest.mark.parametrize("design", DESIGNS, ids=repr)
@pytest.mark.parametrize("n", [0, 5, 4099, 3 * CHUNK + 7, 5 * CHUNK, 9 * CHUNK + 7])
def test_equals_randomize_then_tally_for_every_truth_dtype(design: Any, n: int) -> None:
    # whole groups of blocks, a shorter group, a shorter last block (k-ary layout: CHUNK)
    for truth in _truths(design.n_truths, n):
        expected = design.randomize(truth, rng=9)
        reports, tally = design.randomize_and_tally(truth, rng=9)
        assert reports.dtype == expected.dtype and np.array_equal(reports, expected)
        assert tally == design.tally(expected)
        assert tally.mechanism == design.key and tally.n == n
        counts = np.bincount(np.asarray(expected, dtype=np.int64), minlength=design.n_reports)
        assert tally.counts.tolist() == counts.tolist()  # the counts, independently


@pytest.mark.parametrize("design", DESIGNS, ids=repr)
def test_same_words_from_the_keystream_and_from_given_words(design: Any) -> None:
    truth = _truths(design.n_truths, CHUNK + 11)[1]
    a = design.randomize(truth, rng=ChaCha20Words(KEY, reseed_bytes=None))
    b, tally = design.randomize_and_tally(truth, rng=ChaCha20Words(KEY, reseed_bytes=None))
    assert np.array_equal(a, b) and tally == design.tally(a)
    per_report = 1 if design.n_truths == 2 else 2
    words = random_words(np.random.default_rng(3), per_report * truth.size)
    c = design.randomize(truth, rng=ArrayWords(words))
    d, tally = design.randomize_and_tally(truth, rng=ArrayWords(words))
    assert np.array_equal(c, d) and tally == design.tally(c)


@pytest.mark.parametrize("design", DESIGNS, ids=repr)
def test_the_default_source_and_one_answer(design: Any) -> None:
    truth = _truths(design.n_truths, 2 * CHUNK + 1)[1]
    reports, tally = design.randomize_and_tally(truth)  # rng=None: the keystream
    assert tally == design.tally(reports) and reports.size == truth.size
    one, tally = design.randomize_and_tally(1, rng=4)  # the scalar path
    assert np.array_equal(one, design.randomize(1, rng=4)) and tally == design.tally(one)


@pytest.mark.parametrize("design", DESIGNS, ids=repr)
def test_the_words_consumed_do_not_depend_on_the_answers(design: Any) -> None:
    n = CHUNK + 3
    states = set()
    for fill in (0, design.n_truths - 1):
        gen = np.random.default_rng(5)
        design.randomize_and_tally(np.full(n, fill, dtype=np.uint16), rng=gen)
        states.add(str(gen.bit_generator.state))
    assert len(states) == 1


def test_bad_truth_is_refused_naming_truth() -> None:
    with pytest.raises(
        DataError, match=re.escape("`truth` must hold integers in 0..15, got one outside at index")
    ):
        Categorical.from_epsilon(1.0, 16).randomize_and_tally(np.array([1, 16]), rng=1)
    with pytest.raises(DataError, match="`truth`"):
        Binary(1.0).randomize_and_tally([0, 2], rng=1)


_BAD_TRUTHS = [
    (dtype, bad)
    for dtype in (np.int8, np.int64, np.uint8, np.uint16, np.uint64)
    for bad in (-1, 16, 127)
    if not (bad < 0 and np.dtype(dtype).kind == "u")  # an unsigned array cannot hold -1
]


@pytest.mark.parametrize(("dtype", "bad"), _BAD_TRUTHS)
def test_a_truth_outside_the_range_is_named_by_its_index_for_every_integer_dtype(
    dtype: Any, bad: int
) -> None:
    # unsigned arrays are checked by their maximum only (no value is below 0), signed ones
    # by both ends: the first bad entry's index is named either way
    truth = np.array([3, 0, bad, 2, bad], dtype=dtype)
    with pytest.raises(
        DataError, match=re.escape("got one outside at index 2 (values are not shown")
    ):
        Categorical.from_epsilon(1.0, 16).randomize_and_tally(truth, rng=1)


# --- the value counter: packed (four values a step) and plain --------------------------------


@pytest.mark.parametrize("size", [2, 3, 16])
@pytest.mark.parametrize("n", [0, 3, 4095, 4096, 4101, 5 * (1 << 16) * 4 + 3])
def test_value_counter_counts_exactly(size: int, n: int) -> None:
    values = np.random.default_rng(n).integers(0, size, n).astype(np.uint16)
    expected = np.bincount(values, minlength=size)
    counter = ValueCounter(size)
    counter.add(values)
    assert counter.counts().tolist() == expected.tolist()
    # in pieces: unaligned (odd offsets), non-contiguous, and several adds
    counter = ValueCounter(size)
    counter.add(values[:1])
    counter.add(values[1 : n // 2])
    counter.add(values[n // 2 :][::-1])
    assert counter.counts().tolist() == expected.tolist()
    assert Tally.from_reports(values, size).counts.tolist() == expected.tolist()


def test_value_counter_of_skewed_values() -> None:
    # one value everywhere, then each lane holding another value: every field is summed
    for size, fill in ((16, 15), (16, 0), (4, 3)):
        values = np.full(3 * (1 << 18) + 2, fill, dtype=np.uint16)
        values[1::4] = 1
        assert (
            Tally.from_reports(values, size).counts.tolist()
            == np.bincount(values, minlength=size).tolist()
        )


# --- fill_words: the randomizers' block draws ------------------------------------------------


def test_fill_words_gives_the_words_of_random_words() -> None:
    for make in (
        lambda: np.random.default_rng(8),
        lambda: ChaCha20Words(KEY, reseed_bytes=None),
        lambda: ArrayWords(np.arange(200_000, dtype=np.uint64)),
    ):
        a, b = make(), make()
        expected = np.concatenate([random_words(a, 5), random_words(a, 100_003)])
        out = np.empty(100_008, dtype=np.uint64)
        assert fill_words(b, out[:5]) is not None
        got = fill_words(b, out[5:])
        assert np.shares_memory(got, out)  # written into the caller's buffer
        assert np.array_equal(out, expected)
    out = np.zeros(20_003, dtype=np.uint64)  # more than one os.urandom call
    assert fill_words(SystemRandom(source="os"), out) is out
    assert np.all(out != 0)  # every word written (a zero word: 20,003 * 2**-64)


def test_fill_words_refuses_bad_buffers_and_spent_sources() -> None:
    for bad in (np.empty(3, dtype=np.int64), np.empty((2, 2), dtype=np.uint64), [0, 0]):
        with pytest.raises(ParameterTypeError, match="`out` must be a writeable, contiguous"):
            fill_words(SystemRandom(), bad)  # type: ignore[arg-type]
    read_only = np.empty(3, dtype=np.uint64)
    read_only.flags.writeable = False
    with pytest.raises(ParameterTypeError, match="read-only"):
        fill_words(np.random.default_rng(1), read_only)
    src = ArrayWords([1, 2])
    with pytest.raises(DataError, match="`rng` \\(ArrayWords\\) has 2 of its 2 words left"):
        fill_words(src, np.empty(3, dtype=np.uint64))
    assert src.remaining == 2  # nothing handed out
