"""Range mechanisms' and Square Wave's reports in report batches (``deniable.batch/1``,
``distributed/_batch_range``): they round-trip, binary and JSON, and a bad record (a level
past the last, a padding item set, a report its level oracle refuses, a cell past the last)
is refused naming the report; a truncated body is refused whole."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import pytest

from deniable.distributed import (
    BATCH_HEADER_SIZE,
    decode_batch,
    decode_json_batch,
    encode_batch,
    encode_json_batch,
)
from deniable.exceptions import DataError
from deniable.oracles import HaarHRR, HierarchicalHistogram, SquareWave

MECHANISMS = [
    HaarHRR(8, 1.0),
    HierarchicalHistogram(16, 4, 1.0, oracle="oue"),
    HierarchicalHistogram(9, 3, 1.0, oracle="olh"),
    HierarchicalHistogram(8, 2, 1.0, oracle="grr"),
]


def _same(a: Any, b: Any) -> bool:
    levels = np.array_equal(a.level, b.level)
    return levels and all(np.array_equal(x, y) for x, y in zip(a.reports, b.reports, strict=True))


@pytest.mark.parametrize("m", MECHANISMS, ids=lambda m: m.key[:30])
def test_range_reports_round_trip_binary_and_json(m: Any) -> None:
    reports = m.randomize(np.arange(m.domain).repeat(3), rng=5)
    body = encode_batch(m, reports)
    assert _same(decode_batch(m, body), reports)
    assert _same(decode_json_batch(m, encode_json_batch(m, reports)), reports)
    # the records are the report file's: the level then the level report padded
    n = len(reports.level)
    assert (len(body) - BATCH_HEADER_SIZE) % n == 0


def test_a_bad_record_is_refused_naming_the_report() -> None:
    hh = HierarchicalHistogram(16, 4, 1.0, oracle="oue")  # levels of 4 and 16 values
    reports = hh.randomize(np.arange(16), rng=1)
    body = bytearray(encode_batch(hh, reports))
    size = (len(body) - BATCH_HEADER_SIZE) // 16  # 2 level bytes + 2 bytes of bits
    assert size == 4
    level0 = int(np.flatnonzero(reports.level == 0)[1])
    # a level past the last
    bad = bytearray(body)
    struct.pack_into("<H", bad, BATCH_HEADER_SIZE + 3 * size, 2)
    with pytest.raises(DataError, match=r"`body`: report 3: its level must be in 0\.\.1"):
        decode_batch(hh, bytes(bad))
    # a padding byte of a level-0 report (one byte of 4 bits, padded to 2)
    bad = bytearray(body)
    bad[BATCH_HEADER_SIZE + level0 * size + 3] = 1
    with pytest.raises(DataError, match=rf"report {level0}: the items past its level's report"):
        decode_batch(hh, bytes(bad))
    # a bit past k = 4 in a level-0 report: its level oracle refuses it
    bad = bytearray(body)
    bad[BATCH_HEADER_SIZE + level0 * size + 2] = 0x10
    with pytest.raises(DataError, match=rf"`body`: report {level0} \(level 0\) is refused"):
        decode_batch(hh, bytes(bad))
    # truncated, or a byte after the last report: refused whole
    with pytest.raises(DataError, match="truncated"):
        decode_batch(hh, bytes(body[:-1]))
    with pytest.raises(DataError, match="bytes after the last report"):
        decode_batch(hh, bytes(body) + b"\0")


def test_a_bad_json_report_is_refused_naming_it() -> None:
    haar = HaarHRR(8, 1.0)  # level 2: a Hadamard response over 4 values (reports 0..7)
    key = haar.key
    for reports, pattern in [
        ([[0, 1], [2, 8]], r"report 1 \(level 2\) is refused"),
        ([[0, 1], [3, 0]], r"report 1: its level must be in 0\.\.2"),
        ([[0, 1], [1]], r"report 1 must be a list of 2 whole numbers"),
        ([[0, True]], r"whole numbers"),
        ([[0, -1]], r"report 0: its items must be in"),
    ]:
        with pytest.raises(DataError, match=pattern):
            decode_json_batch(haar, json.dumps({"key": key, "reports": reports}))


def test_square_wave_cells_in_batches() -> None:
    sw = SquareWave(1.0)
    cells = sw.randomize([0.0, 0.25, 1.0], rng=3)
    body = encode_batch(sw, cells)
    assert len(body) == BATCH_HEADER_SIZE + 2 * 3  # one uint16 a report
    assert decode_batch(sw, body).tolist() == cells.tolist()
    bad = bytearray(body)
    struct.pack_into("<H", bad, BATCH_HEADER_SIZE + 2, sw.n_reports)  # one past the last cell
    with pytest.raises(DataError, match="`body`"):
        decode_batch(sw, bytes(bad))
