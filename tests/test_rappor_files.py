"""RAPPOR's report-file form (``deniable.oracles._rappor_files``): a row is the cohort
(``<u2``) and the packed bits, the header (version 2) carries the parameters and both
epsilons, and a file of other parameters is refused before anything is counted."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest

from deniable.exceptions import DataError
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import (
    OLH,
    Rappor,
    RapporClient,
    RapporReports,
    rappor_from_key,
    read_report_key,
    read_report_metadata,
    tally_file,
    write_report_batches,
    write_reports,
)

PAPER = {"m": 128, "h": 2, "f": 0.5, "p": 0.5, "q": 0.75}


def _reports(r: Rappor, n: int, seed: int = 1) -> RapporReports:
    values = np.asarray(["a", "b", "c", "d"])[np.arange(n) % 4]
    return RapporClient(r, InMemoryMemoStore()).report(np.arange(n), values, rng=seed)


def test_a_rappor_report_file_tallies_in_batches_to_the_in_memory_tally(tmp_path: Path) -> None:
    r = Rappor(cohorts=300, **PAPER)  # cohorts above 255: the cohort takes two bytes
    rep = _reports(r, 5000)
    assert int(rep.cohorts.max()) > 255
    path = write_reports(tmp_path / "r.dnrp", r, rep)
    assert tally_file(r, path, batch=700) == r.tally(rep)
    # batches written one at a time give the same file
    again = write_report_batches(tmp_path / "b.dnrp", r, 5000, [rep[:1234], rep[1234:]])
    assert again.read_bytes() == path.read_bytes()


def test_the_header_carries_the_parameters_and_both_epsilons(tmp_path: Path) -> None:
    r = Rappor(cohorts=16, **PAPER)
    rep = _reports(r, 40)
    path = write_reports(tmp_path / "r.dnrp", r, rep)
    assert read_report_key(path) == r.key and rappor_from_key(r.key) == r
    meta = read_report_metadata(path)
    assert meta is not None
    assert {k: meta[k] for k in ("m", "h", "cohorts", "f", "p", "q")} == {"cohorts": 16, **PAPER}
    assert meta["hash"] == "deniable.rappor/1"
    assert meta["schema"] == "deniable.reports.rappor/1"
    # the paper's setting: 2 h ln((1 - f/2) / (f/2)) = 4 ln 3 over any number of reports
    assert meta["permanent_epsilon"] == pytest.approx(4 * math.log(3), rel=1e-12)
    assert meta["epsilon"] == pytest.approx(r.epsilon, rel=1e-12)
    raw = path.read_bytes()
    assert raw[:4] == b"DNRP" and struct.unpack("<H", raw[4:6]) == (2,)
    # the last row: the cohort as little-endian uint16, then the m / 8 bytes of bits
    row = raw[-(2 + 16) :]
    assert struct.unpack("<H", row[:2])[0] == int(rep.cohorts[-1])
    assert row[2:] == rep.bits[-1].tobytes()


def test_an_infinite_permanent_epsilon_is_written_as_infinite(tmp_path: Path) -> None:
    r = Rappor(m=16, h=1, cohorts=2, f=0.0, p=0.25, q=0.75)
    path = write_reports(tmp_path / "r.dnrp", r, _reports(r, 8))
    meta = read_report_metadata(path)
    assert meta is not None and meta["permanent_epsilon"] == "inf"


def test_other_oracles_still_write_version_1(tmp_path: Path) -> None:
    olh = OLH.from_epsilon(1.0, k=10)
    path = write_reports(tmp_path / "o.dnrp", olh, olh.randomize(np.arange(10), rng=1))
    assert struct.unpack("<H", path.read_bytes()[4:6]) == (1,)
    assert read_report_metadata(path) is None


def test_a_file_of_other_parameters_is_refused(tmp_path: Path) -> None:
    r = Rappor(cohorts=16, **PAPER)
    path = write_reports(tmp_path / "r.dnrp", r, _reports(r, 40))
    other = Rappor(cohorts=16, **{**PAPER, "p": 0.25})  # another IRR: other reports
    with pytest.raises(DataError, match=r"holds reports of rappor.*not of this oracle rappor"):
        tally_file(other, path)
    with pytest.raises(DataError, match="holds reports of rappor"):
        tally_file(OLH.from_epsilon(1.0, k=10), path)


def test_a_header_block_that_differs_from_the_key_is_refused(tmp_path: Path) -> None:
    r = Rappor(cohorts=16, **PAPER)
    path = write_reports(tmp_path / "r.dnrp", r, _reports(r, 40))
    raw = path.read_bytes()
    bad = tmp_path / "bad.dnrp"
    bad.write_bytes(raw.replace(b'"deniable.rappor/1"', b'"deniable.rappor/9"'))
    with pytest.raises(DataError, match=r"other RAPPOR parameters.*hash = 'deniable.rappor/9'"):
        tally_file(r, bad)
    # a RAPPOR key in a version-1 header (no parameters) is refused too
    key = r.key.encode()
    head = (b"DNRP" + struct.pack("<H", 1) + struct.pack("<I", len(key)) + key
            + struct.pack("<I", 3) + b"|u1" + struct.pack("<IQ", 18, 0))  # fmt: skip
    bare = tmp_path / "bare.dnrp"
    bare.write_bytes(head)
    with pytest.raises(DataError, match="carries no RAPPOR parameters"):
        tally_file(r, bare)


def test_a_cohort_out_of_range_in_a_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    r = Rappor(cohorts=16, **PAPER)
    path = write_reports(tmp_path / "r.dnrp", r, _reports(r, 40))
    raw = bytearray(path.read_bytes())
    raw[-18:-16] = struct.pack("<H", 16)  # the last report's cohort: 16 of 0..15
    path.write_bytes(bytes(raw))
    with pytest.raises(DataError, match=r"r.dnrp', reports 0..39: `cohorts` must be in 0..15"):
        tally_file(r, path)
    cut = tmp_path / "cut.dnrp"
    cut.write_bytes(bytes(raw[:-5]))
    with pytest.raises(DataError, match="truncated"):
        tally_file(r, cut)


def test_a_malformed_rappor_key_is_refused() -> None:
    with pytest.raises(DataError, match="must be a RAPPOR key"):
        rappor_from_key('olh{"k":4}')
    with pytest.raises(DataError, match="must be a RAPPOR key"):
        rappor_from_key('rappor{"m":16}')
    # the right parameters, spaced: not the canonical key a file or a tally carries
    key = json.dumps({"cohorts": 2, "f": "1/2", "h": 1, "m": 16, "p": "1/4", "q": "3/4"})
    with pytest.raises(DataError, match="not canonical"):
        rappor_from_key("rappor" + key)
