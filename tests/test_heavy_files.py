"""PEM's and TreeHist's report-file form (``deniable.oracles._heavy_files``): a record is the
device's group then its report's words; the key names every parameter the reports depend
on; a file round-trips to the same reports (so the same estimate); a file of another
protocol, a group out of range, a truncated file, a file over the memory bound are refused
with one error naming the file."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles import (
    PEM,
    HeavyHitterReports,
    TreeHist,
    heavy_from_key,
    heavy_from_records,
    heavy_key,
    heavy_records,
    is_heavy_key,
    read_heavy_file,
    read_report_key,
    tally_file,
    write_reports,
)

PEM_2 = PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=8, top_k=4, g=64)
ITEMS = ["hi"] * 3000 + ["yo"] * 2000 + [chr(97 + i % 26) * 2 for i in range(5000)]


def _header_bytes(key: str) -> int:
    # DNRP, version, key length and key, dtype length and "<u8", width, n (docs: report files)
    return 4 + 2 + 4 + len(key.encode()) + 4 + 3 + 4 + 8


def test_the_key_names_the_reports_parameters_not_the_servers() -> None:
    # g given: the key is a closed form, 'treehist' and PEM's levels in sorted JSON
    assert heavy_key(TreeHist(epsilon=1.0, max_bytes=2, g=4)) == (
        'treehist{"epsilon":"1","g":4,"max_bytes":2}'
    )
    assert PEM_2.key == 'pem{"epsilon":"4","g":64,"max_bytes":2,"start_bits":8,"step_bits":8}'
    # alpha and top_k are the server's choices: the same reports, the same key
    other = PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=8, top_k=9, alpha=0.2, g=64)
    assert other.key == PEM_2.key
    back = heavy_from_key(PEM_2.key, top_k=4)
    assert back == PEM_2
    assert heavy_from_key(PEM_2.key, top_k=7, alpha=None).alpha is None
    assert is_heavy_key(PEM_2.key) and not is_heavy_key('cms{"k":1}')


def test_the_reports_do_not_depend_on_the_servers_choices() -> None:
    """A device's group and report are drawn before any round: the same generator gives the
    same reports whatever top_k and alpha the server will use."""
    other = PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=8, top_k=1, alpha=None, g=64)
    a, b = PEM_2.randomize(ITEMS[:500], rng=3), other.randomize(ITEMS[:500], rng=3)
    assert all(np.array_equal(x, y) for x, y in zip(a.reports, b.reports, strict=True))


@pytest.mark.parametrize(
    "key",
    [
        "pem{}",
        'pem{"epsilon":"4","g":64,"max_bytes":2,"start_bits":8}',  # a field missing
        'pem{"epsilon":"4","g":64,"max_bytes":99,"start_bits":8,"step_bits":8}',  # out of range
        'pem{"epsilon": "4","g":64,"max_bytes":2,"start_bits":8,"step_bits":8}',  # not canonical
        'treehist{"epsilon":"1","g":3,"max_bytes":2}',  # g rounds to 4: not canonical
        "olh{}",
    ],
)
def test_a_bad_key_is_one_data_error(key: str) -> None:
    with pytest.raises(DataError, match="`key`"):
        heavy_from_key(key)


def test_a_file_round_trips_to_the_same_reports_and_estimate(tmp_path: Path) -> None:
    reports = PEM_2.randomize(ITEMS, rng=1)
    path = write_reports(tmp_path / "r.dnrp", PEM_2, reports)
    assert read_report_key(path) == PEM_2.key
    # a record: the group, then l W + 1 words (l = log2 64 = 6 rows of W = 1 word, bucket)
    words = 1 + 6 * 1 + 1
    assert path.stat().st_size == _header_bytes(PEM_2.key) + len(ITEMS) * 8 * words
    back = read_heavy_file(PEM_2, path, batch=777)
    assert back.levels == reports.levels
    for mine, theirs in zip(back.reports, reports.reports, strict=True):
        # the group's reports in the order written (a stable sort by group)
        assert np.array_equal(mine, theirs)
    assert PEM_2.estimate(back) == PEM_2.estimate(reports)


def test_records_carry_each_report_after_its_group() -> None:
    reports = PEM_2.randomize(ITEMS[:300], rng=2)
    rec = heavy_records(PEM_2, reports)
    sizes = [r.shape[0] for r in reports.reports]
    assert rec.shape == (300, 8) and rec.dtype == np.uint64
    assert rec[:, 0].tolist() == [0] * sizes[0] + [1] * sizes[1]
    assert np.array_equal(rec[sizes[0] :, 1:], reports.reports[1])
    shuffled = rec[np.random.default_rng(0).permutation(300)]
    back = heavy_from_records(PEM_2, shuffled)
    assert [r.shape[0] for r in back.reports] == sizes
    assert PEM_2.estimate(back).rounds[0].kept == PEM_2.estimate(reports).rounds[0].kept


def test_bad_files_and_records_are_refused_naming_them(tmp_path: Path) -> None:
    reports = PEM_2.randomize(ITEMS[:400], rng=4)
    rec = heavy_records(PEM_2, reports)
    bad = rec.copy()
    bad[5, 0] = 2  # two groups: 0 and 1
    with pytest.raises(DataError, match=r"groups 0\.\.1"):
        heavy_from_records(PEM_2, bad)
    stray = rec.copy()
    stray[0, -1] = 64  # a bucket of g = 64 buckets is at most 63
    with pytest.raises(DataError, match="bucket below"):
        heavy_from_records(PEM_2, stray)
    with pytest.raises(DataError, match="rows of 8 uint64"):
        heavy_from_records(PEM_2, rec[:, :5])
    path = write_reports(tmp_path / "r.dnrp", PEM_2, reports)
    other = PEM(epsilon=2.0, max_bytes=2, start_bits=8, step_bits=8, g=64)
    with pytest.raises(DataError, match="not of this oracle"):
        read_heavy_file(other, path)
    with pytest.raises(DataError, match="max_bytes"):
        read_heavy_file(PEM_2, path, max_bytes=400 * 64 - 1)
    assert read_heavy_file(PEM_2, path, max_bytes=400 * 64).n == 400
    cut = tmp_path / "cut.dnrp"
    cut.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(DataError, match="truncated"):
        read_heavy_file(PEM_2, cut)
    # a group out of range in the file: refused naming the file
    raw = bytearray(path.read_bytes())
    start = _header_bytes(PEM_2.key)
    raw[start : start + 8] = struct.pack("<Q", 9)
    (tmp_path / "g.dnrp").write_bytes(bytes(raw))
    with pytest.raises(DataError, match=r"g\.dnrp.*groups 0\.\.1"):
        read_heavy_file(PEM_2, tmp_path / "g.dnrp")
    with pytest.raises(ParameterTypeError, match="read_heavy_file"):
        tally_file(PEM_2, path)
    with pytest.raises(DataError, match="HeavyHitterReports"):
        heavy_records(PEM_2, HeavyHitterReports((8,), (reports.reports[0],)))
