"""The Count Mean Sketch's fast passes (issue 18, part 5): ``CMS.randomize`` (flips compared
and packed a block at a time, the column toggled in the packed bytes) and ``CMS.tally`` (row
order, byte sums of runs of at most 255 reports) give exactly what the direct reading of the
algorithm gives: the one-hot vector XOR the flips of words ``(1 + m) i + 1 ..`` (spec 1) or
of the 16-bit fields of words ``(1 + ceil(m / 4)) i + 1 ..`` (spec 2), packed little-endian;
per row, the count of reports with each bit set.

The reference below is the earlier implementation (one-hot arrays, a cell index per set
bit), written out here so that the two paths can be compared on random inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from deniable.oracles import CMS, SketchReports
from deniable.randomness import ArrayWords, uniform_below

STRINGS = [f"s{j}" for j in range(40)] + ["é", "a longer string than the others"]


def reference_randomize(cms: CMS, values: list[str], words: np.ndarray) -> SketchReports:
    """One-hot vector of the column in a uniform row, each bit XOR ``word >> 11 < t`` (spec
    1: ``1 + m`` words a report) or XOR ``field < t`` (spec 2: ``1 + ceil(m / 4)`` words,
    bit ``i`` reading bits ``16 (i % 4) ..`` of flip word ``i // 4``)."""
    w = 1 + cms.m if cms.spec_version == 1 else 1 + (cms.m + 3) // 4
    words = words[: w * len(values)].reshape(len(values), w)
    rows = uniform_below(words[:, 0], cms.k).astype(np.int64)
    cols = cms.columns(values)[np.arange(len(values)), rows]
    onehot = np.zeros((len(values), cms.m), dtype=np.bool_)
    onehot[np.arange(len(values)), cols] = True
    if cms.spec_version == 1:
        flips = (words[:, 1:] >> np.uint64(11)) < np.uint64(cms.flip_threshold)
    else:
        i = np.arange(cms.m)
        shift = (16 * (i % 4)).astype(np.uint64)
        fields = (words[:, 1 + i // 4] >> shift) & np.uint64(0xFFFF)
        flips = fields < np.uint64(cms.flip_threshold)
    return SketchReports(rows, np.packbits(onehot ^ flips, axis=1, bitorder="little"))


def reference_tally(cms: CMS, reports: SketchReports) -> np.ndarray:
    """``(k, m + 1)``: per row the count of reports with each bit set, then its reports."""
    out = np.zeros((cms.k, cms.m + 1), dtype=np.int64)
    unpacked = np.unpackbits(reports.bits, axis=1, count=cms.m, bitorder="little")
    for i, row in enumerate(reports.rows.tolist()):
        out[row, : cms.m] += unpacked[i]
        out[row, cms.m] += 1
    return out


CASES = [  # (k, m, epsilon, n): m a multiple of 8 and not, one row, rows > reports
    (1, 2, 0.5, 300),
    (3, 13, 1.0, 700),
    (16, 64, 2.0, 600),
    (256, 1024, 4.0, 90),
    (5, 1000, 8.0, 1100),
    (2, 9, 30.0, 520),
]


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize(("k", "m", "eps", "n"), CASES)
def test_randomize_equals_the_direct_reading(
    k: int, m: int, eps: float, n: int, version: int
) -> None:
    rng = np.random.default_rng((18, k, m))
    values = [STRINGS[i] for i in rng.integers(0, len(STRINGS), n)]
    words = rng.integers(0, 2**64, (1 + m) * n, dtype=np.uint64, endpoint=False)
    eps = min(eps, 22.0) if version == 2 else eps  # spec 2 refuses eps above 22.18
    cms = CMS(k=k, m=m, epsilon=eps, salt=int(rng.integers(0, 2**32)), spec_version=version)
    got = cms.randomize(values, rng=ArrayWords(words))
    want = reference_randomize(cms, values, words)
    np.testing.assert_array_equal(got.rows, want.rows)
    np.testing.assert_array_equal(got.bits, want.bits)
    # and the same reports from a seeded generator as from its words replayed
    seeded = cms.randomize(values, rng=np.random.default_rng(5))
    drawn = np.random.default_rng(5).bit_generator.random_raw(cms.words_per_report * n)
    replay = reference_randomize(cms, values, np.asarray(drawn, dtype=np.uint64))
    np.testing.assert_array_equal(seeded.bits, replay.bits)
    np.testing.assert_array_equal(seeded.rows, replay.rows)


@pytest.mark.parametrize("version", [1, 2])
def test_randomize_crosses_block_boundaries(version: int) -> None:
    """More reports than one block of words holds (``2**17`` words: 127 reports of m =
    1024 in spec 1, 510 in spec 2), and a block that ends mid-way: the words stay in stream
    order."""
    cms = CMS(k=7, m=1024, epsilon=1.0, spec_version=version)
    n = 510 * 3 + 5
    words = np.random.default_rng(3).integers(0, 2**64, 1025 * n, dtype=np.uint64)
    values = [STRINGS[i % len(STRINGS)] for i in range(n)]
    got = cms.randomize(values, rng=ArrayWords(words))
    want = reference_randomize(cms, values, words)
    np.testing.assert_array_equal(got.bits, want.bits)
    np.testing.assert_array_equal(got.rows, want.rows)


def random_reports(k: int, m: int, n: int, seed: int, rows: Any = None) -> SketchReports:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, (n, m)).astype(np.bool_)
    if rows is None:
        rows = rng.integers(0, k, n)
    return SketchReports(
        np.asarray(rows, dtype=np.int64), np.packbits(bits, axis=1, bitorder="little")
    )


@pytest.mark.parametrize(("k", "m", "eps", "n"), CASES)
def test_tally_equals_the_direct_count(k: int, m: int, eps: float, n: int) -> None:
    cms = CMS(k=k, m=m, epsilon=eps, spec_version=1)  # the tally is the same in spec 2
    reports = random_reports(k, m, n, seed=k + m)
    got = cms.tally(reports).counts.reshape(k, m + 1)
    np.testing.assert_array_equal(got, reference_tally(cms, reports))


def test_tally_of_long_runs_of_one_row() -> None:
    """Runs longer than 255 reports of a row (a byte sum would wrap), across tally blocks
    (2048 reports), rows out of order: every bit set gives the row's count exactly."""
    k, m, n = 3, 20, 5000
    rows = np.r_[np.zeros(2600, np.int64), np.full(1400, 2), np.zeros(1000, np.int64)]
    reports = SketchReports(rows, np.full((n, 3), 0xFF, np.uint8))
    reports.bits[:, -1] = 0x0F  # padding past m = 20 stays 0
    got = CMS(k=k, m=m, epsilon=1.0).tally(reports).counts.reshape(k, m + 1)
    np.testing.assert_array_equal(got[:, m], [3600, 0, 1400])
    np.testing.assert_array_equal(got[:, :m], np.repeat([[3600], [0], [1400]], m, axis=1))
    shuffled = reports[np.random.default_rng(1).permutation(n)]
    again = CMS(k=k, m=m, epsilon=1.0).tally(shuffled).counts.reshape(k, m + 1)
    np.testing.assert_array_equal(again, got)


def test_tally_of_no_reports_is_zero() -> None:
    cms = CMS(k=4, m=16, epsilon=1.0)
    empty = SketchReports(np.zeros(0, np.int64), np.zeros((0, 2), np.uint8))
    assert not cms.tally(empty).counts.any()
    assert cms.tally(empty).counts.size == 4 * 17


def test_digests_of_repeated_strings_equal_each_string_hashed() -> None:
    """Each distinct string is checked and hashed once; the digests are those of the
    strings one by one (``x(s)``, the top 33 bits of SHA-256), str and bytes alike."""
    import hashlib

    cms = CMS(k=2, m=8, epsilon=1.0)
    values = ["b", "a", b"a", "b", "é", "a"]
    want = [
        int.from_bytes(
            hashlib.sha256(
                b"deniable.cms/1\x00" + (v if isinstance(v, bytes) else v.encode())
            ).digest()[:8],
            "big",
        )
        >> 31
        for v in values
    ]
    assert cms._digests(values).tolist() == want
    assert cms._digests(tuple(values)).tolist() == want
    assert cms._digests(np.asarray(["b", "a"])).tolist() == want[:2]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["a", "b", "a", ""], r"`values`\[3\] must be a non-empty string"),
        (["a", "a", 3, "a"], r"`values`\[2\] must be a str or UTF-8 bytes, got int"),
        (["a", ["x"], "a"], r"`values`\[1\] must be a str or UTF-8 bytes, got list"),
        (["a", "a", "a", "abcdefghi"], r"`values`\[3\] must be at most max_bytes = 8"),
    ],
)
def test_digests_name_the_first_bad_place(values: list[Any], message: str) -> None:
    from deniable.exceptions import DataError

    with pytest.raises(DataError, match=message):
        CMS(k=2, m=8, epsilon=1.0, max_bytes=8).randomize(values, rng=1)
