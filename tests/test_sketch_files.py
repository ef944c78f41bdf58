"""The count mean sketches in report files (``deniable.oracles._sketch_files``): the record
of a report, the round trip through a file in batches, the sketch a key names, and files or
keys that are not a sketch's refused by name before anything is counted."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from deniable.exceptions import DataError
from deniable.oracles import (
    CMS,
    HCMS,
    SketchReports,
    read_report_key,
    sketch_from_key,
    tally_file,
    write_report_batches,
    write_reports,
)

STRINGS = ["apple", "b", "z\u00fcrich \u2713", "\U0001f600"] * 25


@pytest.mark.parametrize(
    "sketch",
    [CMS(k=3, m=10, epsilon=2.0), CMS(k=1, m=8, epsilon=1.0, salt=9), HCMS(k=5, m=4, epsilon=2.0)],
)
def test_a_file_tallies_as_its_reports_in_any_batch(sketch: CMS | HCMS, tmp_path: Path) -> None:
    reports = sketch.randomize(STRINGS, rng=3)
    out = tmp_path / "r.dnrp"
    write_reports(out, sketch, reports)
    assert read_report_key(out) == sketch.key
    assert sketch_from_key(sketch.key) == sketch
    want = sketch.tally(reports).counts
    for batch in (1, 7, 100, 1 << 20):
        assert np.array_equal(tally_file(sketch, out, batch=batch).counts, want), batch
    # batches written one at a time give the same file
    again = tmp_path / "b.dnrp"
    write_report_batches(again, sketch, len(reports), [reports[:40], reports[40:]])
    assert again.read_bytes() == out.read_bytes()


def test_a_cms_record_is_the_row_then_the_packed_bits(tmp_path: Path) -> None:
    sketch = CMS(k=3, m=10, epsilon=2.0)
    reports = SketchReports(np.array([2, 0]), np.array([[0xFF, 0x03], [0x01, 0x00]], np.uint8))
    out = tmp_path / "r.dnrp"
    write_reports(out, sketch, reports)
    # the last 8 bytes: row 2 (<u2) then 0xff 0x03, row 0 then 0x01 0x00
    assert out.read_bytes()[-8:] == bytes([2, 0, 0xFF, 0x03, 0, 0, 0x01, 0x00])
    tally = tally_file(sketch, out).counts.reshape(3, 11)
    assert tally[:, 10].tolist() == [1, 0, 1]  # reports a row
    assert tally[2, :10].tolist() == [1] * 10 and tally[0, :10].tolist() == [1] + [0] * 9


def test_a_file_with_a_report_the_sketch_could_not_make_is_refused(tmp_path: Path) -> None:
    sketch = CMS(k=3, m=10, epsilon=2.0)
    out = tmp_path / "r.dnrp"
    write_reports(out, sketch, sketch.randomize(STRINGS[:4], rng=1))
    data = bytearray(out.read_bytes())
    first = len(data) - 4 * 4  # the first report's record (4 records of 4 bytes)
    data[first : first + 2] = struct.pack("<H", 3)  # row 3 of a 3-row sketch
    bad = tmp_path / "bad.dnrp"
    bad.write_bytes(bytes(data))
    with pytest.raises(DataError, match=r"reports 0\.\.3: `reports.rows` must be in 0\.\.2, got 3"):
        tally_file(sketch, bad)
    data[first : first + 2] = b"\x00\x00"
    data[first + 3] |= 0x80  # a padding bit past m = 10
    bad.write_bytes(bytes(data))
    with pytest.raises(DataError, match="padding bits past m = 10"):
        tally_file(sketch, bad)
    with pytest.raises(DataError, match=r"`reports.rows` must be in 0\.\.2"):
        write_reports(
            tmp_path / "w.dnrp", sketch, SketchReports(np.array([5]), np.zeros((1, 2), np.uint8))
        )
    assert not (tmp_path / "w.dnrp").exists()
    with pytest.raises(DataError):  # HCMS: a value past 2 k m
        write_reports(tmp_path / "h.dnrp", HCMS(k=2, m=4, epsilon=1.0), np.array([16]))


@pytest.mark.parametrize(
    "key",
    [
        'cms{"epsilon":"2","k":3,"m":10,"max_bytes":1024}',  # no salt
        'cms{"epsilon":"2","k":3,"m":10,"max_bytes":1024,"salt":0,"x":1}',
        'hcms{"epsilon":"2","k":3,"m":10,"max_bytes":1024,"salt":0}',  # m not a power of 2
        'cms{"epsilon":2,"k":3,"m":10,"max_bytes":1024,"salt":0}',  # not canonical
        "cms{not json",
        'olh{"k":4}',
    ],
)
def test_a_key_that_is_not_a_sketch_is_refused(key: str) -> None:
    with pytest.raises(DataError, match="`key`"):
        sketch_from_key(key)
