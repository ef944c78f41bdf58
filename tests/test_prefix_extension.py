"""The ways PrefixOLH.extension_counts counts (deniable.oracles._prefix_extension): every
method gives exactly the counts of checking each extended candidate against each report
(``support_counts``), on random reports for several ``g`` (2 to 2**13 buckets), pattern
lengths, prefixes that cross a word, and blocks of reports; the packed byte comparison
against a direct count; bad methods refused."""

from __future__ import annotations

import numpy as np
import pytest

import deniable.oracles._prefix_extension as px
from deniable.exceptions import ParameterError
from deniable.oracles import PEM
from deniable.oracles._strings import extend_prefixes, prefix_mask


def _case(epsilon: float, bits: int, step: int, max_bytes: int, n: int, seed: int):  # type: ignore[no-untyped-def]
    pem = PEM(epsilon, max_bytes=max_bytes)
    oracle = pem.oracle(bits)
    w = pem.words
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 1 << 63, size=(n, w), dtype=np.uint64) << np.uint64(1)
    raw |= rng.integers(0, 2, size=(n, w), dtype=np.uint64)
    raw &= prefix_mask(bits, w)[None, :]
    raw[: n // 3] = raw[0]  # a frequent prefix: counts far from n / g
    reports = oracle.check_reports(oracle.randomize(raw, rng=seed + 1))
    prefixes = raw[[0, 1, n // 2, n - 1]] & prefix_mask(bits - step, w)[None, :]
    expected = oracle.support_counts(reports, extend_prefixes(prefixes, bits - step, step))
    return pem, oracle, reports, prefixes, expected


@pytest.mark.parametrize(
    ("epsilon", "bits", "step", "max_bytes"),
    [
        (0.5, 12, 6, 2),  # g = 2
        (1.0, 16, 8, 2),  # g = 4
        (2.0, 13, 5, 2),  # g = 8
        (3.0, 72, 8, 9),  # g = 16, the pattern in the second word
        (4.0, 66, 3, 9),  # g = 64, the pattern across two words
        (4.0, 24, 8, 3),  # g = 64: kernels of dimension 2 and more (B of rank < 6)
        (6.5, 20, 7, 3),  # g = 1024 > 2**step: at most one pattern a target
        (9.0, 20, 4, 3),  # g = 8192
    ],
)
def test_every_method_equals_the_support_counts_of_the_extended_candidates(
    epsilon: float, bits: int, step: int, max_bytes: int
) -> None:
    """Exact equality (no tolerance): each method counts every (report, candidate) pair."""
    pem, oracle, reports, prefixes, expected = _case(epsilon, bits, step, max_bytes, 1500, bits)
    assert expected.max() > expected.min()  # not a constant
    methods = [m for m in px.METHODS if m != "packed" or pem.base.bucket_bits <= px.PACKED_BITS]
    for method in [*methods, None]:
        got = oracle.extension_counts(reports, prefixes, step, method=method)
        assert got.tolist() == expected.tolist(), method


@pytest.mark.parametrize(("epsilon", "step"), [(1.0, 8), (4.0, 8), (2.0, 5)])
def test_every_method_adds_over_blocks_of_reports(
    monkeypatch: pytest.MonkeyPatch, epsilon: float, step: int
) -> None:
    """Small blocks (several per call, a last partial one; the packed comparison's are
    whole lanes of 2,040 reports) give the same counts."""
    import deniable.oracles._prefix_oracle as po

    monkeypatch.setattr(px, "_ENTRIES", 1 << 9)
    monkeypatch.setattr(po, "_PAIRS", 1 << (step + 8))
    _, oracle, reports, prefixes, expected = _case(epsilon, 20, step, 3, 4500, step)
    for method in px.METHODS:
        got = oracle.extension_counts(reports, prefixes, step, method=method)
        assert got.tolist() == expected.tolist(), method


@pytest.mark.parametrize("m", [1, 7, 2040, 2041, 5000])
def test_packed_matches_count_equal_bytes(m: int) -> None:
    """Against a direct count, for widths that do and do not fill whole lanes, with values
    up to 127 (the largest the byte trick allows)."""
    rng = np.random.default_rng(m)
    table = rng.integers(0, 128, size=(16, m), dtype=np.uint8)
    target = rng.integers(0, 128, size=m, dtype=np.uint8)
    table[3] = target  # a row that matches everywhere
    table[5] = target ^ np.uint8(127)  # and one that never does
    want = (table == target[None, :]).sum(axis=1)
    got = px.packed_matches(table, target)
    assert got.tolist() == want.tolist()
    assert got[3] == m and got[5] == 0


def test_the_default_method_depends_on_g_and_the_step() -> None:
    assert px.choose_method(2, 8) == "walsh"  # g = 4: 4 entries against 256 comparisons
    assert px.choose_method(4, 8) == "walsh"
    assert px.choose_method(6, 8) == "packed"
    assert px.choose_method(2, 4) == "packed"
    assert px.choose_method(13, 3) == "plain"


def test_a_bad_method_is_refused() -> None:
    _, oracle, reports, prefixes, _ = _case(4.0, 16, 8, 2, 200, 3)
    with pytest.raises(ParameterError, match="`method` must be one of"):
        oracle.extension_counts(reports, prefixes, 8, method="fast")
    big = PEM(9.0, max_bytes=2).oracle(16)
    with pytest.raises(ParameterError, match="'packed' needs g <= 128, got g = 8192"):
        big.extension_counts(np.zeros((1, 14), dtype=np.uint64), prefixes, 8, method="packed")
