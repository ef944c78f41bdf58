"""Report files of the range mechanisms and Square Wave (oracles._range_files through
_files): the tally of a file, read in batches, is the tally of the reports written; a record
with a level past the last, a padding item set or a level report its oracle refuses is
refused naming the file, before anything is counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deniable.exceptions import DataError
from deniable.oracles import (
    HaarHRR,
    HierarchicalHistogram,
    LevelReports,
    SquareWave,
    range_from_records,
    range_records,
    read_report_key,
    tally_file,
    write_report_batches,
    write_reports,
)

MECHANISMS = [
    HierarchicalHistogram(64, 4, 1.0, oracle="oue"),
    HierarchicalHistogram(16, 2, 1.0, oracle="grr"),
    HierarchicalHistogram(27, 3, 1.0, oracle="olh"),
    HierarchicalHistogram(16, 4, 1.0, oracle="hadamard"),
    HaarHRR(32, 1.0),
]


def _header(path: Path) -> int:
    key = read_report_key(path).encode()
    raw = path.read_bytes()
    start = 4 + 2 + 4 + len(key)
    dlen = int.from_bytes(raw[start : start + 4], "little")
    return start + 4 + dlen + 4 + 8


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: m.key[:30])
def test_a_file_tallies_to_the_reports_written(mech: Any, tmp_path: Path) -> None:
    values = np.random.default_rng(1).integers(0, mech.domain, 3000)
    reports = mech.randomize(values, rng=2)
    path = write_reports(tmp_path / "r.dnrp", mech, reports)
    assert read_report_key(path) == mech.key
    assert tally_file(mech, path, batch=257) == mech.tally(reports)
    # the records read back are the reports, every level in device order
    back = range_from_records(mech, range_records(mech, reports))
    assert np.array_equal(back.level, reports.level)
    for a, b in zip(back.reports, reports.reports, strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    # in batches: the same tally
    half = LevelReports(
        reports.level[:0], tuple(np.asarray(r)[:0] for r in reports.reports)
    )  # an empty batch is allowed
    batched = write_report_batches(tmp_path / "b.dnrp", mech, 3000, [half, reports])
    assert tally_file(mech, batched) == mech.tally(reports)


def test_a_square_wave_file_holds_one_cell_a_report(tmp_path: Path) -> None:
    sw = SquareWave(1.0, lower=-1.0, upper=3.0)
    reports = sw.randomize(np.linspace(-1, 3, 999), rng=3)
    path = write_reports(tmp_path / "w.dnrp", sw, reports)
    assert path.stat().st_size == _header(path) + 2 * 999
    assert tally_file(sw, path, batch=100) == sw.tally(reports)
    with pytest.raises(DataError, match="`reports`"):
        write_reports(tmp_path / "bad.dnrp", sw, np.array([sw.n_reports]))
    assert not (tmp_path / "bad.dnrp").exists()


def _tampered(path: Path, offset: int, value: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset] = value
    path.write_bytes(bytes(raw))


def test_a_tampered_record_is_refused_naming_the_file(tmp_path: Path) -> None:
    hh = HierarchicalHistogram(64, 4, 1.0, oracle="oue")  # records: 2 + 8 bytes
    reports = hh.randomize(np.zeros(40, dtype=np.int64), rng=1)
    path = write_reports(tmp_path / "r.dnrp", hh, reports)
    start = _header(path)
    level = int(reports.level[0])
    _tampered(path, start, 7)  # the first report's level: 7 of 3
    with pytest.raises(DataError, match=r"r\.dnrp.*level must be in 0\.\.2.*got 7"):
        tally_file(hh, path)
    _tampered(path, start, level)
    if level < 2:  # a padding byte past this level's report
        _tampered(path, start + 2 + 8 - 1, 1)
        with pytest.raises(DataError, match=r"r\.dnrp.*must be 0 \(padding\)"):
            tally_file(hh, path)
    haar = HaarHRR(8, 1.0)
    rep = haar.randomize(np.arange(8), rng=1)
    hpath = write_reports(tmp_path / "h.dnrp", haar, rep)
    item = (hpath.stat().st_size - _header(hpath)) // 8 // 2
    # the report of level 0 (a Hadamard response over 2 values: reports 0..3) set to 255
    first = int(np.flatnonzero(rep.level == 0)[0])
    _tampered(hpath, _header(hpath) + first * 2 * item + item, 255)
    with pytest.raises(DataError, match=r"h\.dnrp"):
        tally_file(haar, hpath)


def test_records_are_checked_before_a_file_is_written(tmp_path: Path) -> None:
    haar = HaarHRR(8, 1.0)
    rep = haar.randomize(np.arange(8), rng=1)
    bad = LevelReports(rep.level, (rep.reports[0] + 100, *rep.reports[1:]))
    with pytest.raises(DataError, match="`reports`"):
        write_reports(tmp_path / "x.dnrp", haar, bad)
    with pytest.raises(DataError, match="levels"):
        range_records(haar, LevelReports(rep.level, rep.reports[:1]))
    assert not (tmp_path / "x.dnrp").exists()


def test_grr_levels_of_two_report_types_share_the_widest(tmp_path: Path) -> None:
    # k-ary RR's categories are uint16 up to 65,536 values and wider past it: a tree of
    # 2**17 leaves has levels of both, written with the wider type
    hh = HierarchicalHistogram(1 << 17, 2, 1.0, oracle="grr")
    kinds = {np.asarray(o.randomize([0], rng=0)).dtype.itemsize for o in hh.levels}
    assert len(kinds) == 2
    reports = hh.randomize(np.random.default_rng(2).integers(0, 1 << 17, 2000), rng=3)
    path = write_reports(tmp_path / "g.dnrp", hh, reports)
    assert tally_file(hh, path, batch=300) == hh.tally(reports)
