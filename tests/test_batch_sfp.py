"""SFP's reports in a report batch (distributed._batch_strings): encoded and decoded whole, each
record's layout derived here from docs/specs.md, and a malformed batch refused by name."""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
import pytest

from deniable.distributed import decode_batch, decode_json_batch, encode_batch, encode_json_batch
from deniable.exceptions import DataError
from deniable.oracles import SFP, sfp_device_reports, sfp_records

HCMS_SFP = SFP(epsilon=4.0, max_length=4, alphabet="abc", puzzle_bits=4, k=8, m=64)
CMS_SFP = SFP(epsilon=2.0, max_length=3, puzzle_bits=2, k=4, m=32, sketch="cms", salt=7)
VALUES = {HCMS_SFP.key: ["a", "ab", "cc", "abca"], CMS_SFP.key: ["a", "hi", "\u00fc", "zzz"]}


@pytest.mark.parametrize("sfp", [HCMS_SFP, CMS_SFP], ids=["hcms", "cms"])
def test_a_batch_round_trips_with_the_documented_layout(sfp: SFP) -> None:
    reports = sfp_device_reports(sfp, VALUES[sfp.key], rng=2)
    body = encode_batch(sfp, reports)
    head = b"DNRB" + struct.pack("<HH", 1, 0) + hashlib.sha256(sfp.key.encode()).digest()
    assert body[:48] == head + struct.pack("<Q", 4)
    if sfp.sketch == "hcms":  # three int64: position, fragment report, word report
        items = zip(reports.positions, reports.fragments, reports.words, strict=True)
        want = b"".join(struct.pack("<3q", int(p), int(f), int(w)) for p, f, w in items)
    else:  # uint16 position, then each CMS record (uint16 row, packed bits)
        want = b"".join(
            struct.pack("<H", int(reports.positions[i]))
            + struct.pack("<H", int(reports.fragments.rows[i]))
            + bytes(reports.fragments.bits[i])
            + struct.pack("<H", int(reports.words.rows[i]))
            + bytes(reports.words.bits[i])
            for i in range(4)
        )
    assert body[48:] == want
    back = decode_batch(sfp, body)
    assert np.array_equal(sfp_records(sfp, back), sfp_records(sfp, reports))
    text = encode_json_batch(sfp, reports)
    assert json.loads(text)["reports"] == sfp_records(sfp, reports).tolist()
    assert np.array_equal(sfp_records(sfp, decode_json_batch(sfp, text)), sfp_records(sfp, reports))
    # the same tally as the reports themselves
    assert sfp.tally(back).words == sfp.tally(reports).words


def test_a_malformed_batch_is_refused_whole_naming_what_is_wrong() -> None:
    sfp = HCMS_SFP
    reports = sfp_device_reports(sfp, VALUES[sfp.key], rng=2)
    body = encode_batch(sfp, reports)
    with pytest.raises(DataError, match=r"truncated"):
        decode_batch(sfp, body[:-3])
    with pytest.raises(DataError, match=r"bytes after the last report"):
        decode_batch(sfp, body + b"\0")
    bad = bytearray(body)
    bad[48 + 24 * 2 : 48 + 24 * 2 + 8] = struct.pack("<q", 2)  # report 2's position: P = 2
    with pytest.raises(DataError, match=r"`body`: .*positions.* must be in 0\.\.1, got 2"):
        decode_batch(sfp, bytes(bad))
    bad = bytearray(body)
    bad[48 + 8 : 48 + 16] = struct.pack("<q", 2 * 8 * 64)  # a fragment report past 2 k m
    with pytest.raises(DataError, match=r"`body`"):
        decode_batch(sfp, bytes(bad))
    with pytest.raises(DataError, match="another oracle"):
        decode_batch(CMS_SFP, body)
    key = json.dumps(sfp.key)
    with pytest.raises(DataError, match="lists of whole numbers"):
        decode_json_batch(sfp, f'{{"key":{key},"reports":[[0,1,"2"]]}}')
    with pytest.raises(DataError, match="one length"):
        decode_json_batch(sfp, f'{{"key":{key},"reports":[[0,1,2],[0,1]]}}')
    with pytest.raises(
        DataError,
        match=r"^`body` reports of SFP must hold items in -\d+\.\.\d+, got 9223372036854775808",
    ):
        decode_json_batch(sfp, f'{{"key":{key},"reports":[[0,1,{2**63}]]}}')
    with pytest.raises(DataError, match=r"must be in 0\.\.1, got 5"):
        decode_json_batch(sfp, f'{{"key":{key},"reports":[[5,1,2]]}}')


def test_a_cms_record_with_a_padding_bit_is_refused() -> None:
    sfp = SFP(epsilon=2.0, max_length=3, puzzle_bits=2, k=4, m=33, sketch="cms")
    body = bytearray(encode_batch(sfp, sfp_device_reports(sfp, ["a"], rng=1)))
    body[48 + 2 + 2 + 4] |= 0x80  # the fragment report's last byte: bit 7 is past m = 33
    with pytest.raises(DataError, match="padding bit"):
        decode_batch(sfp, bytes(body))
