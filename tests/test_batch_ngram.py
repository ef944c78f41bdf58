"""RAPPOR n-gram discovery's reports in a report batch (distributed._batch_strings): encoded and
decoded whole, each record's layout derived here from docs/specs.md, and a malformed batch
refused by name."""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
import pytest

from deniable.distributed import decode_batch, decode_json_batch, encode_batch, encode_json_batch
from deniable.exceptions import DataError
from deniable.oracles import Rappor, RapporNgram, ngram_records, rappor_ngram_device_reports

R = Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.5, q=0.75)
WITH_FULL = RapporNgram(R, Rappor(m=8, h=1, cohorts=2, f=0.5, p=0.25, q=0.75), alphabet="abc",
                        gram=2, length=6, pairs=2)  # fmt: skip
NO_FULL = RapporNgram(R, None, alphabet="abc", gram=2, length=4)
VALUES = ["a", "ab", "cab", "abcabc"]


@pytest.mark.parametrize("ng", [WITH_FULL, NO_FULL], ids=["full", "no-full"])
def test_a_batch_round_trips_with_the_documented_layout(ng: RapporNgram) -> None:
    values = [v[: ng.length] for v in VALUES]
    reports = rappor_ngram_device_reports(ng, values, rng=2)
    body = encode_batch(ng, reports)
    head = b"DNRB" + struct.pack("<HH", 1, 0) + hashlib.sha256(ng.key.encode()).digest()
    assert body[:48] == head + struct.pack("<Q", 4)
    k = 2 * ng.pairs
    want = b""
    for d in range(4):  # the pairs a byte a position, each n-gram report, the full report
        want += bytes(int(j) for j in reports.positions[d].reshape(-1))
        for r in range(d * k, (d + 1) * k):
            want += struct.pack("<H", int(reports.ngrams.cohorts[r])) + bytes(
                reports.ngrams.bits[r]
            )
        if reports.full is not None:
            want += struct.pack("<H", int(reports.full.cohorts[d])) + bytes(reports.full.bits[d])
    assert body[48:] == want
    back = decode_batch(ng, body)
    assert np.array_equal(ngram_records(ng, back), ngram_records(ng, reports))
    text = encode_json_batch(ng, reports)
    assert json.loads(text)["reports"] == ngram_records(ng, reports).tolist()
    assert np.array_equal(
        ngram_records(ng, decode_json_batch(ng, text)), ngram_records(ng, reports)
    )


def test_a_malformed_batch_is_refused_whole_naming_what_is_wrong() -> None:
    ng = WITH_FULL  # G = 3; a record: 4 pair bytes, 4 n-gram reports of 4 bytes, 3 full
    reports = rappor_ngram_device_reports(ng, VALUES, rng=2)
    body = encode_batch(ng, reports)
    size = 4 + 4 * 4 + 3
    assert len(body) == 48 + 4 * size
    with pytest.raises(DataError, match=r"truncated"):
        decode_batch(ng, body[:-3])
    with pytest.raises(DataError, match=r"bytes after the last report"):
        decode_batch(ng, body + b"\0")
    bad = bytearray(body)
    bad[48 + size + 1] = 3  # report 1's first pair (j1, 3): no position 3
    with pytest.raises(DataError, match=r"`body`: .*pairs j1 < j2 in 0\.\.2"):
        decode_batch(ng, bytes(bad))
    bad = bytearray(body)
    bad[48 : 48 + 2] = bytes([1, 1])  # report 0's first pair (1, 1): not j1 < j2
    with pytest.raises(DataError, match=r"`body`: .*pairs j1 < j2 in 0\.\.2"):
        decode_batch(ng, bytes(bad))
    bad = bytearray(body)
    bad[48 + 4 : 48 + 6] = struct.pack("<H", 4)  # an n-gram report's cohort: 4 cohorts
    with pytest.raises(DataError, match=r"`body`: .*cohorts"):
        decode_batch(ng, bytes(bad))
    with pytest.raises(DataError, match="another oracle"):
        decode_batch(NO_FULL, body)
    key = json.dumps(ng.key)
    with pytest.raises(DataError, match="lists of whole numbers"):
        decode_json_batch(ng, f'{{"key":{key},"reports":[[0,1,"2"]]}}')
    with pytest.raises(DataError, match=r"bytes 0\.\.255, got 256"):
        decode_json_batch(ng, f'{{"key":{key},"reports":[[0,1,256]]}}')
    with pytest.raises(DataError, match=rf"{size} bytes each, got lengths \[3\]"):
        decode_json_batch(ng, f'{{"key":{key},"reports":[[0,1,2]]}}')
