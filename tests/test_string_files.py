"""The report files of SFP and RAPPOR's n-grams (``deniable.oracles._string_files``): one
fixed-size record a device after the header naming the protocol's key; written through the
no-replace writer, read back to the same reports (so the same tally, discovery and
estimate); a file of another protocol, a truncated file, a record out of range, a file over
the memory bound refused with one error naming the file."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deniable.exceptions import DataError, DeniableError, ParameterTypeError
from deniable.oracles import (
    SFP,
    NgramReports,
    Rappor,
    RapporNgram,
    SFPReports,
    SketchReports,
    ngram_from_records,
    ngram_records,
    read_ngram_file,
    read_report_key,
    sfp_from_records,
    sfp_records,
    tally_file,
    write_reports,
)

SFP_H = SFP(epsilon=6.0, max_length=4, alphabet="abc", puzzle_bits=4, k=16, m=256)
SFP_C = SFP(epsilon=6.0, max_length=4, alphabet="abc", puzzle_bits=4, k=16, m=100,
            sketch="cms", salt=5)  # fmt: skip
NG_FULL = RapporNgram(
    Rappor(m=32, h=2, cohorts=8, f=0.25, p=0.25, q=0.75),
    Rappor(m=64, h=2, cohorts=4, f=0.25, p=0.25, q=0.75),
    alphabet="abc", gram=2, length=4, pairs=1,
)  # fmt: skip
NG_BARE = RapporNgram(Rappor(m=16, h=2, cohorts=2, f=0.5, p=0.5, q=0.75), None,
                      alphabet="ab", gram=1, length=3, pairs=2)  # fmt: skip
WORDS = ["ab"] * 600 + ["cab"] * 400 + ["c", "ba", "bbb", "acca"] * 100


def _header_bytes(key: str) -> int:
    # DNRP, version, key length and key, dtype length and its 3 characters, width, n
    return 4 + 2 + 4 + len(key.encode()) + 4 + 3 + 4 + 8


def _same_sketch_reports(a: Any, b: Any) -> bool:
    if isinstance(a, SketchReports):
        return np.array_equal(a.rows, b.rows) and np.array_equal(a.bits, b.bits)
    return np.array_equal(a, b)


@pytest.mark.parametrize(("sfp", "record"), [(SFP_H, 3 * 8), (SFP_C, 2 + 2 * (2 + 13))])
def test_an_sfp_file_round_trips_to_the_same_tally_and_estimate(
    tmp_path: Path, sfp: SFP, record: int
) -> None:
    reports = sfp.randomize(WORDS, rng=1)
    path = write_reports(tmp_path / "s.dnrp", sfp, reports)
    assert read_report_key(path) == sfp.key
    # HCMS: position and two int64 reports; CMS: <u2 position, two rows of <u2 + 13 bytes
    assert path.stat().st_size == _header_bytes(sfp.key) + len(WORDS) * record
    tally = tally_file(sfp, path, batch=333)  # several batches, added
    assert tally == sfp.tally(reports)
    assert sfp.estimate(tally) == sfp.estimate(reports)


@pytest.mark.parametrize("sfp", [SFP_H, SFP_C])
def test_sfp_records_carry_the_position_then_both_reports(sfp: SFP) -> None:
    reports = sfp.randomize(WORDS[:50], rng=2)
    rec = sfp_records(sfp, reports)
    if sfp.sketch == "hcms":
        assert rec.dtype == np.dtype("<i8") and rec.shape == (50, 3)
        assert np.array_equal(rec[:, 0], reports.positions)
        assert np.array_equal(rec[:, 2], reports.words)
    else:
        assert rec.dtype == np.uint8 and rec.shape == (50, 32)
        rec = rec.astype(np.int64)
        assert np.array_equal(rec[:, 0] + 256 * rec[:, 1], reports.positions)  # <u2
        assert np.array_equal(rec[:, 2] + 256 * rec[:, 3], reports.fragments.rows)
        assert np.array_equal(rec[:, 4:17], reports.fragments.bits)
        assert np.array_equal(rec[:, 19:], reports.words.bits)
    back = sfp_from_records(sfp, sfp_records(sfp, reports))
    assert np.array_equal(back.positions, reports.positions)
    assert _same_sketch_reports(back.fragments, reports.fragments)
    assert _same_sketch_reports(back.words, reports.words)


def test_bad_sfp_records_and_files_are_refused_naming_them(tmp_path: Path) -> None:
    reports = SFP_H.randomize(WORDS[:40], rng=3)
    rec = sfp_records(SFP_H, reports)
    bad = rec.copy()
    bad[3, 0] = 2  # positions of max_length 4: 0 and 1
    with pytest.raises(DataError, match=r"positions` must be in 0\.\.1, got 2"):
        sfp_from_records(SFP_H, bad)
    with pytest.raises(DataError, match="rows of 3 x <i8"):
        sfp_from_records(SFP_H, rec[:, :2])
    with pytest.raises(ParameterTypeError, match="`reports` must be SFPReports"):
        sfp_records(SFP_H, reports.words)
    short = SFPReports(reports.positions, reports.fragments, reports.words[:5])
    with pytest.raises(DataError, match=r"`reports.words` must hold one report per device"):
        sfp_records(SFP_H, short)
    path = write_reports(tmp_path / "s.dnrp", SFP_H, reports)
    other = SFP(epsilon=6.0, max_length=4, alphabet="abd", puzzle_bits=4, k=16, m=256)
    with pytest.raises(DataError, match="not of this oracle"):
        tally_file(other, path)
    raw = bytearray(path.read_bytes())
    start = _header_bytes(SFP_H.key)
    raw[start : start + 8] = struct.pack("<q", 7)  # the first device's position
    (tmp_path / "p.dnrp").write_bytes(bytes(raw))
    with pytest.raises(DataError, match=r"p\.dnrp.*got 7"):
        tally_file(SFP_H, tmp_path / "p.dnrp")
    cut = tmp_path / "cut.dnrp"
    cut.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(DataError, match="truncated"):
        tally_file(SFP_H, cut)
    # an empty file is the empty tally
    empty = write_reports(tmp_path / "e.dnrp", SFP_H, SFP_H.randomize(["a"], rng=0)[:0])
    assert tally_file(SFP_H, empty) == SFP_H.tally(SFP_H.randomize(["a"], rng=0)[:0])


def _same_ngram_reports(a: NgramReports, b: NgramReports) -> bool:
    same = np.array_equal(a.positions, b.positions)
    same &= np.array_equal(a.ngrams.cohorts, b.ngrams.cohorts)
    same &= np.array_equal(a.ngrams.bits, b.ngrams.bits)
    if a.full is None or b.full is None:
        return bool(same and a.full is None and b.full is None)
    return bool(same and np.array_equal(a.full.bits, b.full.bits)
                and np.array_equal(a.full.cohorts, b.full.cohorts))  # fmt: skip


@pytest.mark.parametrize(
    ("ng", "record"),
    [
        (NG_FULL, 2 + 2 * (2 + 4) + (2 + 8)),  # one pair, two 32-bit reports, a 64-bit one
        (NG_BARE, 4 + 4 * (2 + 2)),  # two pairs, four 16-bit reports, no full report
    ],
)
def test_an_ngram_file_round_trips_to_the_same_discovery(
    tmp_path: Path, ng: RapporNgram, record: int
) -> None:
    values = [w for w in WORDS if len(w) <= ng.length and set(w) <= set(ng.alphabet)]
    reports = ng.randomize(values, rng=4)
    path = write_reports(tmp_path / "n.dnrp", ng, reports)
    assert read_report_key(path) == ng.key
    assert path.stat().st_size == _header_bytes(ng.key) + len(values) * record
    seen: list[tuple[int, int]] = []
    back = read_ngram_file(ng, path, batch=97, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (len(values), len(values)) and len(seen) == -(-len(values) // 97)
    assert _same_ngram_reports(back, reports)
    # the same reports, so the same discovery (NgramDiscovery holds arrays: compared as JSON)
    assert ng.discover(back).to_dict(0.95) == ng.discover(reports).to_dict(0.95)


def test_ngram_records_carry_positions_then_each_report() -> None:
    reports = NG_BARE.randomize(["ab", "b", "aab"], rng=5)
    rec = ngram_records(NG_BARE, reports)
    assert rec.shape == (3, 20) and rec.dtype == np.uint8
    assert np.array_equal(rec[:, :4].reshape(3, 2, 2), reports.positions)
    # the device's second n-gram report: after the 4 position bytes and one 4-byte report
    assert np.array_equal(rec[:, 8] + 256 * rec[:, 9].astype(int), reports.ngrams.cohorts[1::4])
    assert np.array_equal(rec[:, 10:12], reports.ngrams.bits[1::4])
    assert _same_ngram_reports(ngram_from_records(NG_BARE, rec), reports)


def test_bad_ngram_records_and_files_are_refused_naming_them(tmp_path: Path) -> None:
    reports = NG_FULL.randomize(["ab", "cab", "c"] * 20, rng=6)
    rec = ngram_records(NG_FULL, reports)
    swapped = rec.copy()
    swapped[0, :2] = [1, 0]  # a pair must be j1 < j2
    with pytest.raises(DataError, match="pairs j1 < j2"):
        ngram_from_records(NG_FULL, swapped)
    cohort = rec.copy()
    cohort[0, 2:4] = [9, 0]  # cohort 9 of 8
    with pytest.raises(DeniableError, match="cohort"):
        ngram_from_records(NG_FULL, cohort)
    with pytest.raises(DataError, match="rows of 24 bytes"):
        ngram_from_records(NG_FULL, rec[:, :-1])
    path = write_reports(tmp_path / "n.dnrp", NG_FULL, reports)
    with pytest.raises(DataError, match="max_bytes"):
        read_ngram_file(NG_FULL, path, max_bytes=60 * 24 - 1)
    with pytest.raises(ParameterTypeError, match="read_ngram_file"):
        tally_file(NG_FULL, path)
    with pytest.raises(DataError, match="not of this oracle"):
        read_ngram_file(NG_BARE, path)
    raw = bytearray(path.read_bytes())
    raw[_header_bytes(NG_FULL.key) + 2] = 8  # the first n-gram report's cohort
    (tmp_path / "c.dnrp").write_bytes(bytes(raw))
    with pytest.raises(DataError, match=r"c\.dnrp.*cohort"):
        read_ngram_file(NG_FULL, tmp_path / "c.dnrp")
    with pytest.raises(ParameterTypeError, match="NgramReports"):
        ngram_records(NG_FULL, reports.ngrams)
