"""The batch vectors, ``tests/vectors/batches.json``: binary report batches
(``deniable.batch/1``) that Python's :func:`deniable.distributed.encode_batch` writes for
reports of the oracle vectors (``tests/vectors/oracles.json``, ``heavy.json``,
``ranges.json``, ``sfp.json`` and ``rappor_ngram.json``), which the browser client's
``encodeBatch`` (``static/batch.js``, ``tests/js/batch.test.mjs``) must write byte for byte.

This test keeps the committed file equal to what the encoder writes today (regenerate with
``python tests/test_batch_vectors.py``), and checks each body against a layout derived here
from docs/specs.md ("Report batches") with ``struct`` and ``hashlib``, not with the encoder.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deniable.distributed import decode_batch, encode_batch
from deniable.oracles import (
    LevelReports,
    NgramReports,
    RapporReports,
    SFPReports,
    SketchReports,
    cms_from_spec,
    heavy_from_spec,
    oracle_from_spec,
    range_from_spec,
    rappor_from_spec,
    rappor_ngram_from_spec,
    sfp_from_spec,
    square_wave_from_spec,
)

VECTORS = Path(__file__).parent / "vectors"
ORACLE_VECTORS = VECTORS / "oracles.json"
BATCH_VECTORS = VECTORS / "batches.json"
HEAVY_VECTORS = VECTORS / "heavy.json"
RANGE_VECTORS = VECTORS / "ranges.json"
SFP_VECTORS = VECTORS / "sfp.json"
NGRAM_VECTORS = VECTORS / "rappor_ngram.json"
SCHEMA = "deniable.batch-vectors/1"
_STREAM_SCHEMAS = (
    "deniable.oracle/1", "deniable.rappor-spec/1", "deniable.cms-spec/1", "deniable.cms-spec/2",
    "deniable.heavy-spec/1", "deniable.range-spec/1", "deniable.square-wave-spec/1",
    "deniable.sfp-spec/1", "deniable.rappor-ngram-spec/1",
)  # fmt: skip


def _vector_cases() -> list[dict[str, Any]]:
    """The oracle vectors' cases, then the heavy-hitter vectors' (their records as
    ``reports``), then the range mechanisms' and Square Wave's."""
    cases = json.loads(ORACLE_VECTORS.read_text(encoding="utf-8"))["cases"]
    heavy = json.loads(HEAVY_VECTORS.read_text(encoding="utf-8"))["cases"]
    ranges = json.loads(RANGE_VECTORS.read_text(encoding="utf-8"))["cases"]
    sfp = json.loads(SFP_VECTORS.read_text(encoding="utf-8"))["cases"]
    ngram = json.loads(NGRAM_VECTORS.read_text(encoding="utf-8"))["cases"]
    return [*cases, *({**c, "reports": c["records"]} for c in heavy), *ranges, *sfp, *ngram]


def _oracle(spec: dict[str, Any]) -> Any:
    if spec["schema"] in ("deniable.cms-spec/1", "deniable.cms-spec/2"):
        return cms_from_spec(spec)
    if spec["schema"] == "deniable.heavy-spec/1":
        return heavy_from_spec(spec)
    if spec["schema"] == "deniable.range-spec/1":
        return range_from_spec(spec)
    if spec["schema"] == "deniable.square-wave-spec/1":
        return square_wave_from_spec(spec)
    if spec["schema"] == "deniable.sfp-spec/1":
        return sfp_from_spec(spec)
    if spec["schema"] == "deniable.rappor-ngram-spec/1":
        return rappor_ngram_from_spec(spec)
    rappor = spec["schema"] == "deniable.rappor-spec/1"
    return rappor_from_spec(spec) if rappor else oracle_from_spec(spec)


def _arrays(spec: dict[str, Any], reports: list[Any]) -> Any:
    """The reports of the vectors' JSON form as the oracle's arrays (what encode_batch takes)."""
    kind = spec["report"]
    if kind == "pairs-ngrams-full":  # RAPPOR n-grams: {pairs, ngrams, full}
        full = spec["full_report"]
        return NgramReports(
            np.array([r["pairs"] for r in reports], dtype=np.int64),
            _arrays(spec["ngram_report"], [g[1:] for r in reports for g in r["ngrams"]]),
            None if full is None else _arrays(full, [r["full"] for r in reports]),
        )
    if kind == "position-fragment-word":  # SFP: [position, fragment report, word report]
        return SFPReports(
            np.array([r[0] for r in reports], dtype=np.int64),
            _arrays(spec["fragment_sketch"], [r[1] for r in reports]),
            _arrays(spec["word_sketch"], [r[2] for r in reports]),
        )
    if kind == "level-report":  # a range mechanism: [level, the level oracle's report]
        level = np.array([r[0] for r in reports], dtype=np.int64)
        parts = []
        for j, level_spec in enumerate(spec["levels"]):
            mine = [r[1] for r in reports if r[0] == j]
            if level_spec["schema"] == "deniable.question/1":  # k-ary RR's categories
                parts.append(np.array(mine, dtype=np.uint16))
            elif mine:
                parts.append(_arrays(level_spec, mine))
            else:  # no report at this level: an empty array of the level's shape
                width = {"packed-bits": -(-int(level_spec["k"]) // 8), "hash-bucket": 3}
                kind_j = level_spec["report"]
                dtype = {"packed-bits": np.uint8, "hash-bucket": np.uint64}.get(kind_j, np.uint32)
                shape = (0, width[kind_j]) if kind_j in width else (0,)
                parts.append(np.empty(shape, dtype=dtype))
        return LevelReports(level, tuple(parts))
    if kind == "cohort-bits":
        cohorts = np.array([r[0] for r in reports], dtype=np.int64)
        bits = np.array([list(bytes.fromhex(r[1])) for r in reports], dtype=np.uint8)
        return RapporReports(cohorts, bits)
    if kind == "row-bits":  # CMS: [row, packed bits as hex]
        rows = np.array([r[0] for r in reports], dtype=np.int64)
        bits = np.array([list(bytes.fromhex(r[1])) for r in reports], dtype=np.uint8)
        return SketchReports(rows, bits)
    if kind == "packed-bits":
        return np.array([list(bytes.fromhex(r)) for r in reports], dtype=np.uint8)
    if kind == "hash-bucket":
        return np.array([[int(a), int(b), int(y)] for a, b, y in reports], dtype=np.uint64)
    if kind == "group-linear-hash":  # PEM, TreeHist: [group, row words ..., bucket]
        return np.array([[int(w) for w in r] for r in reports], dtype=np.uint64)
    if kind == "linear-hash":
        arr = np.array([[int(w) for w in r] for r in reports], dtype=np.uint64)
        return arr[:, 0] if arr.shape[1] == 1 else arr
    if kind == "row-bit":
        return np.array(reports, dtype=np.uint32)
    return np.array(reports, dtype=np.int64)  # "value": L-GRR


def _pick(reports: list[Any]) -> list[Any]:
    """Two edge reports (words all 0) and the last four (random words) of a case."""
    return reports[:2] + reports[-4:]


def batch_vectors() -> dict[str, Any]:
    """Every stream oracle's case of the oracle vectors: six reports and their batch."""
    out = []
    for case in _vector_cases():
        spec = case["spec"]
        if spec.get("schema") not in _STREAM_SCHEMAS:
            continue
        reports = _pick(case["reports"])
        body = encode_batch(_oracle(spec), _arrays(spec, reports))
        out.append({"case": case["id"], "reports": reports, "body": body.hex()})
    return {
        "schema": SCHEMA,
        "about": (
            "Binary report batches (deniable.batch/1) that deniable.distributed.encode_batch "
            "writes for reports of tests/vectors/oracles.json, heavy.json, ranges.json and "
            "sfp.json (case: the mechanism's spec there); "
            "body is the hex of the bytes. Format: docs/specs.md, Report batches."
        ),
        "cases": out,
    }


def dump_batch_vectors() -> str:
    data = batch_vectors()
    lines = [json.dumps(c, separators=(",", ":")) for c in data["cases"]]
    head = json.dumps({"schema": data["schema"], "about": data["about"]}, indent=2)
    return head[:-2] + ',\n  "cases": [\n    ' + ",\n    ".join(lines) + "\n  ]\n}\n"


def test_the_committed_batch_vectors_are_what_the_encoder_writes() -> None:
    assert BATCH_VECTORS.read_text(encoding="utf-8") == dump_batch_vectors(), (
        "tests/vectors/batches.json is stale: run `python tests/test_batch_vectors.py`."
    )


def _level_size(spec: dict[str, Any]) -> int:
    """The bytes of a level oracle's record."""
    if spec["schema"] == "deniable.question/1":
        return 2
    if spec["report"] == "packed-bits":
        return -(-int(spec["k"]) // 8)
    return {"hash-bucket": 24, "row-bit": 4}[spec["report"]]


def _level_item(spec: dict[str, Any]) -> str:
    """The struct code of one item of a level oracle's record."""
    if spec["schema"] == "deniable.question/1":
        return "<H"
    return {"packed-bits": "<H", "hash-bucket": "<Q", "row-bit": "<I"}[spec["report"]]


def _record(spec: dict[str, Any], report: Any) -> bytes:
    """One report's record, from docs/specs.md's table (little-endian)."""
    kind = spec["report"]
    if kind == "pairs-ngrams-full":  # RAPPOR n-grams: the pairs, a byte a position, then
        # each n-gram report's record, then the full-string report's
        pairs = bytes(j for pair in report["pairs"] for j in pair)
        grams = b"".join(_record(spec["ngram_report"], g[1:]) for g in report["ngrams"])
        full = b"" if report["full"] is None else _record(spec["full_report"], report["full"])
        return pairs + grams + full
    if kind == "position-fragment-word":  # SFP: the position (int64 with HCMS, else a
        # uint16), then the two sketch reports' records
        head = struct.pack(
            "<q" if spec["fragment_sketch"]["mechanism"] == "hcms" else "<H", report[0]
        )
        return (
            head
            + _record(spec["fragment_sketch"], report[1])
            + _record(spec["word_sketch"], report[2])
        )
    if kind == "level-report":  # the level (a uint16 for bytes, else one item), then the
        # level oracle's record padded with zeros to the widest level's
        levels = spec["levels"]
        mine = levels[report[0]]
        body = (
            struct.pack("<H", report[1])
            if mine["schema"] == "deniable.question/1"
            else _record(mine, report[1])
        )
        widest = max(_level_size(s) for s in levels)
        return struct.pack(_level_item(levels[0]), report[0]) + body.ljust(widest, b"\0")
    if kind == "cell":  # Square Wave: one uint16
        return struct.pack("<H", report)
    if kind in ("cohort-bits", "row-bits"):  # RAPPOR's cohort, CMS's row: uint16, then bits
        return struct.pack("<H", report[0]) + bytes.fromhex(report[1])
    if kind == "packed-bits":
        return bytes.fromhex(report)
    if kind == "hash-bucket":
        return struct.pack("<3Q", int(report[0]), int(report[1]), report[2])
    if kind in ("linear-hash", "group-linear-hash"):
        return b"".join(struct.pack("<Q", int(w)) for w in report)
    if kind == "row-bit":
        return struct.pack("<I", report)
    return struct.pack("<q", report)  # "value" (L-GRR), "row-coefficient-bit" (HCMS)


def test_every_stream_oracle_has_a_case_and_each_body_has_the_documented_layout() -> None:
    specs = {c["id"]: c["spec"] for c in _vector_cases()}
    cases = json.loads(BATCH_VECTORS.read_text(encoding="utf-8"))["cases"]
    kinds = {specs[c["case"]].get("algorithm") for c in cases}
    assert kinds == {
        "symmetric-unary/1", "optimized-unary/1", "local-hashing/1", "linear-local-hashing/1",
        "hadamard-response/1", "subset-selection/1", "longitudinal-grr/1",
        "longitudinal-unary/1", "loloha/1", "rappor/1", "count-mean-sketch/1",
        "count-mean-sketch/2", "hadamard-count-mean-sketch/1", "prefix-linear-hashing/1",
        "hierarchical-histogram/1", "haar-hrr/1", "square-wave/1", "sequence-fragment-puzzle/1",
        "rappor-ngram/1",
    }  # fmt: skip
    for case in cases:
        spec = specs[case["case"]]
        body = bytes.fromhex(case["body"])
        digest = hashlib.sha256(spec["key"].encode("utf-8")).digest()
        head = b"DNRB" + struct.pack("<HH", 1, 0) + digest + struct.pack("<Q", len(case["reports"]))
        want = head + b"".join(_record(spec, r) for r in case["reports"])
        assert body == want, case["case"]
        # and the server's decoder reads the reports back
        decoded = decode_batch(_oracle(spec), body)
        if isinstance(decoded, LevelReports):  # each report's level, in device order
            assert decoded.level.tolist() == [r[0] for r in case["reports"]], case["case"]
        else:
            assert len(decoded) == len(case["reports"]), case["case"]


@pytest.mark.parametrize("cut", [1, 47])
def test_a_cut_body_of_the_vectors_is_refused(cut: int) -> None:
    from deniable.exceptions import DataError

    case = json.loads(BATCH_VECTORS.read_text(encoding="utf-8"))["cases"][0]
    spec = next(
        c["spec"]
        for c in json.loads(ORACLE_VECTORS.read_text("utf-8"))["cases"]
        if c["id"] == case["case"]
    )
    with pytest.raises(DataError, match="`body`"):
        decode_batch(_oracle(spec), bytes.fromhex(case["body"])[:-cut])


if __name__ == "__main__":  # regenerate tests/vectors/batches.json
    BATCH_VECTORS.write_text(dump_batch_vectors(), encoding="utf-8")
    sys.stdout.write(f"wrote {BATCH_VECTORS}\n")
