"""The fast paths of the longitudinal rows (issue 17, part 5) against the plain definitions
they replace: the unary IRR's bits against ``(w >> 11) < t`` bit by bit on the same words,
the grouping of rows by value against ``np.flatnonzero(x == value)``, dBitFlipPM's check of
distinct buckets against a set per row, and the packed support counts against the sum of
the unpacked bits.  Every check is exact (no statistics)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import LOSUE, LOUE, LSUE
from deniable.oracles._bits import packed_support_counts
from deniable.oracles._dbitflip import repeats
from deniable.oracles._longitudinal import _groups
from deniable.randomness import ArrayWords


@pytest.mark.parametrize("cls", [LSUE, LOUE, LOSUE])
@pytest.mark.parametrize("k", [2, 5, 8, 16, 57])
def test_the_irr_sets_bit_j_when_the_word_shifted_is_below_its_threshold(cls: type, k: int) -> None:
    oracle = cls.from_epsilon(1.5, k, eps_1=0.6)
    rng = np.random.default_rng(k)
    n = 300
    prr = rng.random((n, k)) < 0.4
    words = rng.integers(0, 2**64, size=n * k, dtype=np.uint64, endpoint=False)
    _, _, t_p2, t_q2 = oracle._thresholds
    # words near each threshold too: w >> 11 == t - 1, t (the boundary of the comparison)
    words[:4] = np.array([t_p2, t_p2 - 1, t_q2, t_q2 - 1], dtype=np.uint64) << np.uint64(11)
    got = oracle._irr(np.packbits(prr, axis=1, bitorder="little"), ArrayWords(words))
    thr = np.where(prr, t_p2, t_q2).astype(np.uint64)
    want = (words.reshape(n, k) >> np.uint64(11)) < thr
    assert np.array_equal(np.unpackbits(got, axis=1, count=k, bitorder="little"), want)


@pytest.mark.parametrize("cls", [LSUE, LOUE, LOSUE])
@pytest.mark.parametrize("k", [2, 9, 56, 57, 130])
def test_a_prr_chunk_sets_bit_j_when_the_word_shifted_is_below_its_threshold(
    cls: type, k: int
) -> None:
    # the plain definition: bit j of chunk c (PRR bit 56 c + j) from the row-major word of
    # that row and bit, set when w >> 11 < t_p1 for the value's bit, t_q1 for the others;
    # kept as sum(bit_j 2**j), a non-negative int64
    oracle = cls.from_epsilon(1.5, k, eps_1=0.6)
    t_p1, t_q1, _, _ = oracle._thresholds
    n = 200
    for chunk in range(-(-k // 56)):
        width = min(56, k - 56 * chunk)
        for value in {0, k - 1, min(k - 1, 56 * chunk + width // 2)}:
            words = np.random.default_rng((k, chunk, value)).integers(
                0, 2**64, size=n * width, dtype=np.uint64, endpoint=False
            )
            words[:4] = np.array([t_p1, t_p1 - 1, t_q1, t_q1 - 1], np.uint64) << np.uint64(11)
            got = oracle._prr_chunk(value, n, chunk, ArrayWords(words))
            thr = np.full(width, t_q1, dtype=np.uint64)
            if 56 * chunk <= value < 56 * chunk + width:
                thr[value - 56 * chunk] = t_p1
            bits = (words.reshape(n, width) >> np.uint64(11)) < thr
            want = [sum(1 << j for j in np.flatnonzero(row).tolist()) for row in bits]
            assert got.dtype == np.int64
            assert got.tolist() == want


@pytest.mark.parametrize("high", [1, 3, 70_000])
def test_groups_are_the_rows_of_each_value_in_order(high: int) -> None:
    rng = np.random.default_rng(high)
    for n in (0, 1, 50, 5000):
        x = rng.integers(0, high, size=n)
        want = [(v, np.flatnonzero(x == v)) for v in np.unique(x).tolist()]
        for got in (_groups(x), _groups(x, high)):  # the range looked at, or given
            assert [g[0] for g in got] == [w[0] for w in want]
            assert all(np.array_equal(g[1], w[1]) for g, w in zip(got, want, strict=True))


@pytest.mark.parametrize("d", [1, 2, 4, 8, 9, 12])
def test_repeats_finds_a_row_holding_an_id_twice(d: int) -> None:
    rng = np.random.default_rng(d)
    for _ in range(40):
        rows = rng.integers(0, 2 * d + 1, size=(rng.integers(0, 6), d))
        want = any(len(set(r.tolist())) < d for r in rows)
        assert repeats(rows) is want


@pytest.mark.parametrize("k", [1, 5, 8, 16, 100, 255, 256, 257, 600])
def test_packed_support_counts_are_the_sums_of_the_bits(k: int) -> None:
    # k <= 256: a histogram of each byte column; wider: unpacked blockwise
    rng = np.random.default_rng(k)
    for n in (0, 1, 2500):
        bits = rng.random((n, k)) < rng.random(k)
        packed = np.packbits(bits, axis=1, bitorder="little")
        counts, _ = packed_support_counts(packed, k)
        assert counts.dtype == np.int64
        assert np.array_equal(counts, bits.sum(axis=0))


def _reference_rounds(oracle: Any, rounds: list[tuple[Any, list[Any]]], words: Any) -> list[Any]:
    """The memoized rounds ``(values, devices)`` by their plain definition, one word at a
    time: in a round, the PRR chunks of the devices new to their value, value by value
    (ascending), chunk by chunk, device by device in row order, bit by bit (w >> 11 <
    t_p1 at the value's bit, t_q1 elsewhere); then every row's IRR, row by row, bit by bit
    (t_p2 where the PRR's bit is set, t_q2 elsewhere).  Reports packed as the oracle packs
    them."""
    t_p1, t_q1, t_p2, t_q2 = oracle._thresholds
    k, stream = oracle.k, iter(words.tolist())
    kept: dict[tuple[Any, int], list[bool]] = {}
    out = []
    for x, devices in rounds:
        pairs = list(zip(devices, x.tolist(), strict=True))
        for value in sorted(set(x.tolist())):
            new = [d for d, v in pairs if v == value and (d, value) not in kept]
            for d in new:
                kept[d, value] = [False] * k
            for lo in range(0, k, 56):
                for d in new:
                    for j in range(lo, min(lo + 56, k)):
                        kept[d, value][j] = next(stream) >> 11 < (t_p1 if j == value else t_q1)
        bits = [[next(stream) >> 11 < (t_p2 if kept[d, v][j] else t_q2) for j in range(k)]
                for d, v in pairs]  # fmt: skip
        out.append(np.packbits(np.array(bits, dtype=bool), axis=1, bitorder="little"))
    return out


@pytest.mark.parametrize("cls", [LSUE, LOUE, LOSUE])
@pytest.mark.parametrize("k", [5, 16, 57])
@pytest.mark.parametrize("keys", ["dense ids", "sparse ids", "tokens"])
def test_memoized_rounds_are_their_plain_definition(cls: type, k: int, keys: str) -> None:
    """Rounds of 300 devices whose values change (and come back: a kept PRR replayed),
    the rows in another order every other round, through an InMemoryMemoStore: equal to
    the plain definition on the same words, report for report.  The order the words are
    taken in (groups by value, chunks, new devices, then the IRR row by row) and every
    fast path behind it (the grouping, the key index's table and late merges, the packed
    PRRs) are pinned to the definition, not to a recorded output."""
    oracle = cls.from_epsilon(1.5, k, eps_1=0.6)
    gen = np.random.default_rng((k, len(keys)))
    n, n_rounds = 300, 6
    # dense ids: the key index's direct table and its late merges; sparse: its binary
    # search; tokens: its dict
    ids = gen.choice(10**12 if keys == "sparse ids" else 2 * n, size=n, replace=False)
    tokens = np.array([f"dev-{i}" for i in ids.tolist()], dtype=object)
    x = gen.integers(0, k, size=n)
    rounds = []
    for r in range(n_rounds):
        rows = gen.permutation(n) if r % 2 else np.arange(n)
        dev = tokens[rows] if keys == "tokens" else ids[rows]
        rounds.append((x[rows], dev))
        x = np.where(gen.random(n) < 0.3, gen.integers(0, k, size=n), x)
    words = gen.integers(0, 2**64, size=2 * n_rounds * n * k, dtype=np.uint64, endpoint=False)
    want = _reference_rounds(oracle, [(v, d.tolist()) for v, d in rounds], words)
    store, source = InMemoryMemoStore(), ArrayWords(words)
    for (values, dev), expected in zip(rounds, want, strict=True):
        got = oracle.randomize(values, rng=source, memo=store, devices=dev)
        np.testing.assert_array_equal(got, expected)
