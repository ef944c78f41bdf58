"""The count mean sketches in report batches (deniable.batch/1) and telemetry streams: a
CMS report is its row (uint16, little-endian) then its m bits packed into ceil(m / 8) bytes
in the binary batch, ``[row, byte_0, ...]`` in the JSON one, decoded to SketchReports with
every row and padding bit checked; an HCMS report is one int64 ``2 (j m + l) + b``.  Both
are appended to a stream's Parquet partitions, read back by the stored key, and tallied to
exactly the sketch's own tally in process and on a Dask cluster; a bad batch is one clear
error and nothing is stored."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _distributed import cluster_client
from deniable.distributed import (
    BATCH_HEADER_SIZE,
    aggregate_stream,
    append_batch,
    append_batches,
    append_reports,
    decode_batch,
    decode_json_batch,
    encode_batch,
    encode_json_batch,
    stream_files,
    stream_oracle,
)
from deniable.exceptions import DataError
from deniable.oracles import CMS, HCMS, SketchReports

CMS_ = CMS(k=5, m=12, epsilon=2.0, salt=9)  # m = 12: 2 bytes, 4 padding bits
HCMS_ = HCMS(k=4, m=16, epsilon=1.5, salt=3)
DAY = "2026-11-28"
WORDS = np.array(["apple", "pear", "fig", "kiwi", "z\u00fcrich"])


def strings(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [str(s) for s in rng.choice(WORDS, size=n, p=[0.4, 0.3, 0.15, 0.1, 0.05])]


def same(a: SketchReports, b: SketchReports) -> bool:
    return np.array_equal(a.rows, b.rows) and np.array_equal(a.bits, b.bits)


def visible(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def test_a_cms_batch_round_trips_at_its_record() -> None:
    reports = CMS_.randomize(strings(300, 1), rng=2)
    body = encode_batch(CMS_, reports)
    assert body[:4] == b"DNRB" and struct.unpack_from("<Q", body, 40)[0] == 300
    # 2 bytes of row (little-endian) then ceil(12 / 8) = 2 bytes of bits, a report
    assert len(body) == BATCH_HEADER_SIZE + 300 * (2 + 2)
    first = body[BATCH_HEADER_SIZE : BATCH_HEADER_SIZE + 4]
    assert struct.unpack_from("<H", first)[0] == reports.rows[0]
    assert first[2:] == reports.bits[0].tobytes()
    back = decode_batch(CMS_, body)
    assert isinstance(back, SketchReports) and same(back, reports)
    doc = json.loads(encode_json_batch(CMS_, reports))
    assert doc["key"] == CMS_.key
    assert doc["reports"][0] == [int(reports.rows[0]), *reports.bits[0].tolist()]
    assert same(decode_json_batch(CMS_, json.dumps(doc)), reports)
    assert CMS_.tally(back) == CMS_.tally(reports)


def test_a_cms_row_is_written_little_endian() -> None:
    wide = CMS(k=1000, m=8, epsilon=1.0)
    reports = SketchReports(np.array([258, 999]), np.array([[1], [128]], dtype=np.uint8))
    assert encode_batch(wide, reports)[BATCH_HEADER_SIZE:] == bytes([2, 1, 1, 0xE7, 0x03, 128])


def test_an_hcms_batch_is_one_int64_a_report() -> None:
    reports = HCMS_.randomize(strings(50, 3), rng=4)
    body = encode_batch(HCMS_, reports)
    assert len(body) == BATCH_HEADER_SIZE + 50 * 8
    assert list(struct.unpack_from("<50q", body, BATCH_HEADER_SIZE)) == reports.tolist()
    assert np.array_equal(decode_batch(HCMS_, body), reports)
    doc = json.loads(encode_json_batch(HCMS_, reports))
    assert doc["reports"] == reports.tolist()
    assert np.array_equal(decode_json_batch(HCMS_, json.dumps(doc)), reports)


def _bad_cms() -> dict[str, tuple[Any, str]]:
    good = encode_batch(CMS_, CMS_.randomize(strings(3, 5), rng=6))
    row = bytearray(good)
    row[BATCH_HEADER_SIZE + 4 : BATCH_HEADER_SIZE + 6] = (5).to_bytes(2, "little")  # report 1
    pad = bytearray(good)
    pad[BATCH_HEADER_SIZE + 2 * 4 + 3] |= 0x10  # report 2's bit 12: padding past m = 12
    other = CMS(k=5, m=12, epsilon=2.0, salt=10)  # another salt: other row hashes
    return {
        "truncated": (good[:-1], "(truncated)"),
        "trailing": (good + b"\0", "(bytes after the last report)"),
        "row out of range": (bytes(row), "report 1 has row 5; a row must be in 0..4 (k = 5"),
        "padding bit": (bytes(pad), "report 2 sets a padding bit past m = 12 bits"),
        "other salt": (encode_batch(other, other.randomize(["a"], rng=1)), "other parameters"),
    }


@pytest.mark.parametrize("case", list(_bad_cms()))
def test_a_bad_cms_batch_is_one_clear_error_and_nothing_is_stored(
    tmp_path: Path, case: str
) -> None:
    body, words = _bad_cms()[case]
    with pytest.raises(DataError, match="`body`") as info:
        append_batch(tmp_path, "s", CMS_, body, day=DAY)
    assert words in str(info.value)
    assert visible(tmp_path) == []


@pytest.mark.parametrize(
    ("reports", "message"),
    [
        ([[0, 1]], r"lists of 3 whole numbers \[row, byte_0, ..., byte_1\] \(m = 12 bits\)"),
        ([[0, 1, 2], [0, 1]], "lists of 3 whole numbers"),
        ([[5, 0, 0]], "report 0 has row 5"),
        ([[-1, 0, 0]], "report 0 has row -1"),
        ([[0, 0, 0], [0, 256, 0]], r"report 1 holds a byte outside 0..255 \(\[256, 0\]\)"),
        ([[0, 0, 0x10]], "report 0 sets a padding bit past m = 12 bits"),
        ([[0, 0, 2**70]], "lists of 3 whole numbers"),
        ([[0, 0, 1.0]], "must be whole numbers, got 1.0"),
        ([[0, True, 0]], "got true or false"),
    ],
)
def test_a_bad_cms_json_batch_is_one_clear_error(reports: Any, message: str) -> None:
    body = json.dumps({"key": CMS_.key, "reports": reports})
    with pytest.raises(DataError, match=message):
        decode_json_batch(CMS_, body)


def test_a_bad_hcms_batch_names_the_range(tmp_path: Path) -> None:
    body = bytearray(encode_batch(HCMS_, HCMS_.randomize(["a", "b"], rng=1)))
    struct.pack_into("<q", body, BATCH_HEADER_SIZE + 8, 2 * 4 * 16)  # 128: past 2 k m - 1
    with pytest.raises(DataError, match=r"`body`: .*127"):
        append_batch(tmp_path, "h", HCMS_, bytes(body), day=DAY)
    with pytest.raises(DataError, match=r"`body`: .*127"):
        decode_json_batch(HCMS_, json.dumps({"key": HCMS_.key, "reports": [0, 128]}))
    assert visible(tmp_path) == []


def test_encoding_refuses_reports_the_sketch_would_refuse(tmp_path: Path) -> None:
    narrow = SketchReports(np.array([1]), np.zeros((1, 1), dtype=np.uint8))  # m = 12: 2 bytes
    with pytest.raises(DataError, match=r"`reports`: `reports\.bits` must be a 2-D uint8 array"):
        encode_batch(CMS_, narrow)
    with pytest.raises(DataError, match="must be SketchReports"):
        encode_batch(CMS_, np.zeros((1, 4), dtype=np.uint8))
    with pytest.raises(DataError, match=r"`reports\.rows` must be in 0..4, got 7"):
        append_reports(tmp_path, "s", CMS_, SketchReports(np.array([7]), np.zeros((1, 2),
                       np.uint8)), day=DAY)  # fmt: skip
    assert visible(tmp_path) == []


@pytest.mark.parametrize("sketch", [CMS_, HCMS_], ids=["cms", "hcms"])
def test_a_sketch_stream_holds_its_reports_and_names_its_sketch(
    tmp_path: Path, sketch: Any
) -> None:
    import pyarrow.parquet as pq

    first = sketch.randomize(strings(300, 7), rng=8)
    second = sketch.randomize(strings(200, 9), rng=10)
    append_batch(tmp_path, "w", sketch, encode_batch(sketch, first), day=DAY)
    append_reports(tmp_path, "w", sketch.key, second, day="2026-11-29")
    assert stream_oracle(tmp_path, "w") == sketch  # read back by the stored key
    table = pq.read_table(stream_files(tmp_path, "w")[0])
    if isinstance(sketch, CMS):
        assert table.column_names == ["row", "report_0", "report_1"]
        assert table.column("row").to_pylist() == first.rows.tolist()
    else:
        assert table.column_names == ["report"]
        assert table.column("report").to_pylist() == first.tolist()
    every = sketch.tally(first) + sketch.tally(second)
    assert aggregate_stream(tmp_path, "w", scheduler="synchronous") == every
    one = aggregate_stream(tmp_path, "w", start="2026-11-29", scheduler="synchronous")
    assert one == sketch.tally(second)
    other = type(sketch)(k=sketch.k, m=sketch.m, epsilon=sketch.epsilon, salt=sketch.salt + 1)
    with pytest.raises(DataError, match="a stream's oracle and its parameters never change"):
        append_batch(tmp_path, "w", other, encode_batch(other, other.randomize(["a"], rng=1)),
                     day=DAY)  # fmt: skip
    assert len(stream_files(tmp_path, "w")) == 2


client = cluster_client(processes=False)


@pytest.mark.parametrize("sketch", [CMS_, HCMS_], ids=["cms", "hcms"])
def test_a_sketch_stream_tallies_the_same_on_a_dask_cluster_as_in_process(
    tmp_path: Path, client: Any, sketch: Any
) -> None:
    values: list[str] = []
    tallies = []
    for i in range(5):
        part = strings(150 + 41 * i, seed=10 + i)
        values += part
        reports = sketch.randomize(part, rng=20 + i)
        tallies.append(sketch.tally(reports))
        bodies = [encode_batch(sketch, reports[:60]), encode_batch(sketch, reports[60:])]
        append_batches(tmp_path, "s", sketch, bodies, day=f"2026-11-{20 + i % 3}")
    here = aggregate_stream(tmp_path, "s", scheduler="synchronous")
    there = aggregate_stream(tmp_path, "s", scheduler=client, batch=100)
    expected = tallies[0]
    for t in tallies[1:]:
        expected = expected + t
    assert here == there == expected
    cand = ["apple", "pear", "fig", "mango"]
    a, b = sketch.estimate(here, cand), sketch.estimate(there, cand)
    assert np.array_equal(a.values, b.values) and np.array_equal(a.se, b.se)
    assert a.n == len(values)
