"""LinearOLH (optimized local hashing with a linear hash over GF(2)) beyond the conformance
suite (tests/test_conformance.py runs the mechanism contract, unbiasedness by seeded
simulation, the exact variance and the epsilon audit on the cases of tests/_cases.py):

* decoding by the Walsh-Hadamard transform equals a brute-force loop over the values, on
  reports read with an independent reading of the documented layout, and the Fourier
  identity gives integer support counts in [0, n];
* the hash family: every pair of values collides under exactly 1/g of all matrices
  (enumerated), and the randomizer's bucket is the documented ``A v``;
* the same p, q, epsilon, variance and estimate as OLH at the same g;
* the choice of g, report files, report tables, specs and keys;
* bad input: one error naming the parameter, the allowed values and what was given.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles import (
    OLH,
    LinearOLH,
    oracle_from_key,
    oracle_from_spec,
    oracle_spec,
    read_report_key,
    tally_file,
    total_variance,
    walsh_hadamard,
    write_reports,
)
from deniable.randomness import ArrayWords

M64 = (1 << 64) - 1


def _layout(k: int, g: int) -> tuple[int, int, int, int, int]:
    """``(L, l, R, y word, y shift)`` by docs/specs.md, computed here independently."""
    big_l, l_bits = max(1, (k - 1).bit_length()), g.bit_length() - 1
    per = 64 // big_l
    word, shift = (l_bits - 1) // per, ((l_bits - 1) % per + 1) * big_l
    if shift + l_bits > 64:
        word, shift = word + 1, 0
    return big_l, l_bits, per, word, shift


def _read(oracle: LinearOLH, reports: Any) -> list[tuple[list[int], int]]:
    """``(rows of A, y)`` of each report, read from its words by the documented layout."""
    big_l, l_bits, per, y_word, y_shift = _layout(oracle.k, oracle.g)
    arr = np.asarray(reports).reshape(len(reports), -1)
    out = []
    for words in arr.tolist():
        rows = [
            (words[r // per] >> ((r % per) * big_l)) & ((1 << big_l) - 1) for r in range(l_bits)
        ]
        out.append((rows, (words[y_word] >> y_shift) & (oracle.g - 1)))
    return out


def _hash(rows: list[int], v: int) -> int:
    """``A v`` over GF(2): bit r is the parity of ``a_r & v``."""
    return sum((bin(a & v).count("1") & 1) << r for r, a in enumerate(rows))


def _pack(oracle: LinearOLH, rows: list[int], y: int) -> list[int]:
    big_l, _, per, y_word, y_shift = _layout(oracle.k, oracle.g)
    words = [0] * oracle.layout.report_words
    for r, a in enumerate(rows):
        words[r // per] |= a << ((r % per) * big_l)
    words[y_word] |= y << y_shift
    return words


CASES = [(2, 2), (5, 2), (7, 4), (16, 8), (3, 8), (33, 16), (1000, 128), (40, 2048), (100, 4)]


# ------------------------------------------------------------------ decoding


@pytest.mark.parametrize(("k", "g"), CASES)
def test_decoding_equals_brute_force(k: int, g: int) -> None:
    """The WHT support counts equal a direct loop over every value and report (A v == y),
    on reports read by the documented layout; they are integers in [0, n]."""
    oracle = LinearOLH(k=k, g=g, p_truthful=0.5)
    gen = np.random.default_rng(k * 1000 + g)
    values = gen.integers(0, k, size=300)
    reports = oracle.randomize(values, rng=gen)
    tally = oracle.tally(reports)
    read = _read(oracle, reports)
    brute = [sum(_hash(rows, v) == y for rows, y in read) for v in range(k)]
    assert tally.counts.tolist() == [*brute, 300]
    assert tally.counts.dtype == np.int64 and tally.counts[:k].min() >= 0
    assert tally.counts[:k].max() <= 300
    for v in (0, k // 2, k - 1):
        assert oracle.supports(reports, v).sum() == brute[v]


@pytest.mark.parametrize(("k", "g"), [(5, 2), (16, 8), (40, 2048)])
def test_the_fourier_identity_gives_integer_counts(k: int, g: int) -> None:
    """F built from its definition (every nonempty subset S of rows, one report at a time),
    transformed: n + W(F)(v) is divisible by g and (n + W(F)(v)) / g is the support count."""
    oracle = LinearOLH(k=k, g=g, p_truthful=0.3)
    reports = oracle.randomize(np.arange(60) % k, rng=11)
    big_l = oracle.value_bits
    f = np.zeros(1 << big_l, dtype=np.int64)
    for rows, y in _read(oracle, reports):
        for size in range(1, len(rows) + 1):
            for subset in itertools.combinations(range(len(rows)), size):
                a_s = 0
                for r in subset:
                    a_s ^= rows[r]
                y_s = sum((y >> r) & 1 for r in subset) & 1
                f[a_s] += -1 if y_s else 1
    total = 60 + walsh_hadamard(f)[:k]
    assert np.all(total % g == 0)
    assert (total // g).tolist() == oracle.tally(reports).counts[:k].tolist()


def test_decoding_across_randomizer_chunks_and_decoder_blocks() -> None:
    """More reports than a randomizer chunk (65 536) and than a decoder block (2**20 / g
    reports): the tally of the whole equals the sum of the tallies of the parts, and every
    value's count equals its supports."""
    oracle = LinearOLH.from_epsilon(4.0, k=300)  # g = 64: blocks of 16 384 reports
    assert oracle.g == 64
    reports = oracle.randomize(np.arange(70_000) % 300, rng=5)
    whole = oracle.tally(reports)
    assert sum(oracle.tally(part) for part in np.array_split(reports, 7)) == whole
    for v in (0, 1, 299):
        assert whole.counts[v] == oracle.supports(reports, v).sum()


def test_the_randomizer_hashes_with_the_documented_words() -> None:
    """Given words: the rows come from the row words, the keep word 0 keeps the bucket (the
    report supports its value: y = A v), the keep word 2**64 - 1 sends ``w >> (64 - l)``."""
    oracle = LinearOLH(k=40, g=2048, p_truthful=0.75)  # L = 6, R = 10, two row words
    gen = np.random.default_rng(3)
    row_words = gen.integers(0, 1 << 63, size=(50, 2), dtype=np.uint64) * np.uint64(2)
    bucket_word = np.uint64(0xABCD_0000_0000_0000)
    for keep_word, expect_kept in ((0, True), (M64, False)):
        words = np.column_stack(
            [row_words, np.full(50, keep_word, np.uint64), np.full(50, bucket_word)]
        )
        values = np.arange(50) % 40
        reports = oracle.randomize(values, rng=ArrayWords(words.ravel()))
        for (rows, y), v, w in zip(_read(oracle, reports), values, row_words, strict=True):
            assert rows[:10] == [(int(w[0]) >> (6 * r)) & 63 for r in range(10)]
            assert rows[10] == int(w[1]) & 63
            assert y == (_hash(rows, int(v)) if expect_kept else int(bucket_word) >> 53)


# ------------------------------------------------------------------ the hash family


@pytest.mark.parametrize(("big_l", "l_bits"), [(1, 1), (2, 2), (3, 2), (2, 3), (4, 1)])
def test_every_pair_collides_under_exactly_one_gth_of_the_matrices(big_l: int, l_bits: int) -> None:
    """All 2**(l L) matrices, as reports of the oracle: for v != v', the number of matrices
    with A v = A v' (a report with y = A v supports v') is exactly 2**(l L) / g; through the
    oracle's own support test, and it is not 1/g for the pair (v, v)."""
    k, g = 1 << big_l, 1 << l_bits
    oracle = LinearOLH(k=k, g=g, p_truthful=0.5)
    assert oracle.value_bits == big_l
    matrices = list(itertools.product(range(k), repeat=l_bits))
    for v in range(k):
        reports = np.array(
            [_pack(oracle, list(rows), _hash(list(rows), v)) for rows in matrices],
            dtype=np.uint64,
        ).reshape(len(matrices), -1)
        reports = reports[:, 0] if oracle.layout.report_words == 1 else reports
        assert oracle.supports(reports, v).all()
        for other in range(k):
            if other != v:
                assert oracle.supports(reports, other).sum() * g == len(matrices), (v, other)


def test_p_q_epsilon_variance_and_estimate_are_olhs_at_the_same_g() -> None:
    for g, pt in ((2, 0.5), (4, 0.3004891818915623), (16, 0.2), (256, 0.9)):
        lin, olh = LinearOLH(k=300, g=g, p_truthful=pt), OLH(k=300, g=g, p_truthful=pt)
        assert (lin.p, lin.q, lin.epsilon) == (olh.p, olh.q, olh.epsilon)
        assert lin.implemented_epsilon <= lin.epsilon
        assert np.array_equal(lin.variance(1000), olh.variance(1000))
        counts = np.r_[np.arange(300) % 90 + 200, 1000]
        a, b = lin.estimate(Tally(counts)), olh.estimate(Tally(counts))
        assert np.array_equal(a.values, b.values) and np.array_equal(a.variances, b.variances)


# ------------------------------------------------------------------ parameters


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0])
def test_from_epsilon_takes_the_power_of_two_with_the_smaller_variance(eps: float) -> None:
    oracle = LinearOLH.from_epsilon(eps, k=1024)
    assert oracle.epsilon <= eps and oracle.epsilon == pytest.approx(eps, rel=1e-12)
    ideal = math.log2(math.exp(eps) + 1)
    below, above = max(1, math.floor(ideal)), max(1, math.ceil(ideal))
    assert oracle.g in (1 << below, 1 << above)
    variances = {
        g: total_variance(*LinearOLH.from_epsilon(eps, 1024, g=g)._support(), 1024, 1)
        for g in (1 << below, 1 << above)
    }
    assert variances[oracle.g] == min(variances.values())


def test_a_given_g_and_the_largest_epsilon() -> None:
    assert LinearOLH.from_epsilon(1.0, k=10, g=64).g == 64
    assert LinearOLH.from_epsilon(11.0, k=10).g == 1 << 15  # 2**15.87: the smaller variance
    assert LinearOLH.from_epsilon(11.7, k=10).g == 1 << 16  # 2**16.88: the only neighbour
    message = r"`epsilon` must be below ln\(2\*\*17 - 1\) = 11\.7835 .* got 11\.79"
    with pytest.raises(ParameterError, match=message):
        LinearOLH.from_epsilon(11.79, k=10)


@pytest.mark.parametrize("g", [3, 6, 1, 0, -4, 1 << 17, 12])
def test_a_g_that_is_no_power_of_two_in_range_is_refused(g: int) -> None:
    message = rf"`g` must be a power of two in \[2, 2\*\*16\] \(2, 4, 8, \.\.\., 65536.*got {g}\."
    with pytest.raises(ParameterError, match=message):
        LinearOLH(k=10, g=g, p_truthful=0.5)
    with pytest.raises(ParameterError, match=message):
        LinearOLH.from_epsilon(1.0, k=10, g=g)


def test_g_and_k_of_the_wrong_type_and_k_out_of_range() -> None:
    with pytest.raises(ParameterTypeError, match=r"`g` must be an integer, got float 2\.5"):
        LinearOLH(k=10, g=2.5, p_truthful=0.5)  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match=r"`g` must be an integer, got str '4'"):
        LinearOLH(k=10, g="4", p_truthful=0.5)  # type: ignore[arg-type]
    assert LinearOLH(k=10, g=4.0, p_truthful=0.5).g == 4  # type: ignore[arg-type]
    for k in (1, 0, (1 << 20) + 1):
        with pytest.raises(ParameterError, match=rf"`k` must be an integer in \[2, .*got {k}"):
            LinearOLH(k=k, g=4, p_truthful=0.5)
    assert LinearOLH(k=1 << 20, g=4, p_truthful=0.5).value_bits == 20
    with pytest.raises(ParameterError, match="`p_truthful`"):
        LinearOLH(k=10, g=4, p_truthful=1.5)


@pytest.mark.parametrize("bad", [-1, 10, 2.5])
def test_values_outside_the_range_are_refused(bad: Any) -> None:
    with pytest.raises(DataError, match=r"`values` must hold integers in 0\.\.9"):
        LinearOLH(k=10, g=4, p_truthful=0.5).randomize([0, bad])


def test_malformed_reports_are_one_error_naming_reports() -> None:
    one = LinearOLH(k=100, g=4, p_truthful=0.5)  # L = 7: rows at bits 0..13, y at 14..15
    two = LinearOLH(k=40, g=2048, p_truthful=0.5)  # rows in words 0 and 1, y at 6..16 of 1
    assert one.layout.masks() == [(1 << 16) - 1]
    assert two.layout.masks() == [(1 << 60) - 1, (1 << 17) - 1]
    good1, good2 = one.randomize([1, 2, 3], rng=1), two.randomize([1, 2, 3], rng=1)
    assert good1.shape == (3,) and good2.shape == (3, 2)
    shape = r"must be a \(n,\) uint64 array .* got an array of dtype"
    for bad in (good1.astype(np.int64), good1.reshape(-1, 1), good1.astype(np.float64)):
        with pytest.raises(DataError, match=shape):
            one.tally(bad)
    for bad in (good2[:, 0], good2.astype(np.int64), np.zeros((3, 3), np.uint64)):
        with pytest.raises(DataError, match=r"must be a \(n, 2\) uint64 array"):
            two.tally(bad)
    with pytest.raises(ParameterTypeError, match="`reports` must be an array"):
        one.tally("reports")
    stray = good1.copy()
    stray[2] |= np.uint64(1 << 16)
    with pytest.raises(DataError, match=r"word 0: mask 0xffff\), got report 2 with bits 0x10000"):
        one.tally(stray)
    for j, bit in ((0, 60), (1, 17), (1, 63)):
        stray2 = good2.copy()
        stray2[1, j] |= np.uint64(1 << bit)
        with pytest.raises(DataError, match=rf"`reports` .*word {j}: .*got report 1"):
            two.check_reports(stray2)
    with pytest.raises(DataError, match="`reports`"):
        one.supports(stray, 0)
    # no reports at all: a tally of zeros, however the empty array is typed
    assert one.tally(np.array([])).counts.tolist() == [0] * 101
    assert two.tally(np.empty((0, 2), np.uint64)).counts.tolist() == [0] * 41


# ------------------------------------------------------------------ specs, files, tables


@pytest.mark.parametrize(("k", "g"), [(5, 2), (1024, 4), (40, 2048)])
def test_spec_and_key_round_trip(k: int, g: int) -> None:
    oracle = LinearOLH(k=k, g=g, p_truthful=0.25)
    spec = oracle_spec(oracle)
    assert spec["algorithm"] == "linear-local-hashing/1" and spec["report"] == "linear-hash"
    assert spec["hash"]["family"] == "linear-gf2/1"
    assert spec["words_per_report"] == oracle.layout.row_words + 2
    assert spec["constants"]["report_words"] == oracle.layout.report_words
    assert oracle_from_spec(spec) == oracle and oracle_from_key(oracle.key) == oracle
    assert oracle.key.startswith("olh-linear{")
    spec["constants"]["value_bits"] += 1
    with pytest.raises(DataError, match="`constants`"):
        oracle_from_spec(spec)


@pytest.mark.parametrize(("k", "g"), [(1024, 4), (40, 2048)])
def test_report_files_round_trip(tmp_path: Path, k: int, g: int) -> None:
    oracle = LinearOLH(k=k, g=g, p_truthful=0.4)
    reports = oracle.randomize(np.arange(5000) % k, rng=2)
    path = write_reports(tmp_path / "r.dnrp", oracle, reports)
    assert read_report_key(path) == oracle.key
    assert tally_file(oracle, path, batch=777) == oracle.tally(reports)
    stray = reports.copy()
    stray.reshape(len(stray), -1)[4, -1] |= np.uint64(1 << 63)
    with pytest.raises(DataError, match="`reports`"):
        write_reports(tmp_path / "bad.dnrp", oracle, stray)
    assert not (tmp_path / "bad.dnrp").exists()


@pytest.mark.parametrize(("k", "g"), [(1024, 4), (40, 2048)])
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_report_tables_aggregate_to_the_tally(tmp_path: Path, k: int, g: int, suffix: str) -> None:
    from deniable.distributed import aggregate, report_columns, write_report_table

    oracle = LinearOLH(k=k, g=g, p_truthful=0.4)
    reports = oracle.randomize(np.arange(3000) % k, rng=4)
    width = oracle.layout.report_words
    assert report_columns(oracle) == (
        ("report",) if width == 1 else tuple(f"report_{i}" for i in range(width))
    )
    write_report_table(tmp_path / f"r{suffix}", oracle, len(reports), [reports], row_group=700)
    got = aggregate(tmp_path / f"r{suffix}", oracle, scheduler="synchronous", batch=1000)
    assert got == oracle.tally(reports) and got.mechanism == oracle.key
