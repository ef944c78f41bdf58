"""The Sequence Fragment Puzzle's test vectors (tests/vectors/sfp.json): the file is what the
library writes, and every device replays through an independent reading of the algorithm
in docs/specs.md (the position, the record "l:p:i.j", both sketches' reports) and through
the library's own device rule read back from the file's spec."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from deniable.oracles import (
    SFP_VECTORS_SCHEMA,
    SFPReports,
    dump_sfp_vectors,
    sfp_device_reports,
    sfp_from_spec,
    sfp_records,
)
from deniable.randomness import ArrayWords

VECTORS_FILE = Path(__file__).parent / "vectors" / "sfp.json"
M64 = (1 << 64) - 1


def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
    return data


def below(word: int, k: int) -> int:
    if k & (k - 1) == 0:
        return word >> (64 - (k.bit_length() - 1)) if k > 1 else 0
    bits = 64 - k.bit_length()
    return ((word >> (64 - bits)) * k) >> bits


def record(spec: dict[str, Any], value: str, position: int) -> str:
    alphabet, a = spec["strings"]["alphabet"], spec["symbols"]
    raw = value.encode("utf-8")
    symbols = list(raw) if alphabet is None else [alphabet.index(c) for c in value]
    symbols += [a] * (2 * spec["positions"] - len(symbols))
    top = int.from_bytes(hashlib.sha256(b"deniable.sfp/1\x00" + raw).digest()[:4], "big")
    p = top >> (32 - spec["puzzle"]["bits"])
    return f"{position}:{p}:{symbols[2 * position]}.{symbols[2 * position + 1]}"


def sketch_report(spec: dict[str, Any], value: str, words: list[int]) -> Any:
    """A CMS or HCMS report as docs/specs.md states it (cms-spec/1)."""
    k, m = spec["constants"]["rows"], spec["constants"]["columns"]
    t, salt = spec["constants"]["flip"], spec["parameters"]["salt"]
    digest = hashlib.sha256(b"deniable.cms/1\x00" + value.encode("utf-8")).digest()
    x = int.from_bytes(digest[:8], "big") >> 31
    row = below(words[0], k)
    seed = hashlib.sha256(f"deniable.cms/1:{salt}:{row}".encode()).digest()
    a, b = int.from_bytes(seed[:8], "little"), int.from_bytes(seed[8:16], "little")
    col = ((((a * x + b) & M64) >> 32) * m) >> 32
    if spec["mechanism"] == "cms":
        bits = [int(i == col) ^ int((words[1 + i] >> 11) < t) for i in range(m)]
        packed = bytes(
            sum(bits[8 * i + j] << j for j in range(8) if 8 * i + j < m) for i in range(-(-m // 8))
        )
        return [row, packed.hex()]
    coef = below(words[1], m)
    flip = int((words[2] >> 11) < t)
    return 2 * (row * m + coef) + (bin(coef & col).count("1") % 2 ^ flip)


def test_the_vectors_file_is_what_the_library_writes() -> None:
    assert VECTORS_FILE.read_text(encoding="utf-8") == dump_sfp_vectors()


def test_every_vector_replays_through_the_documented_algorithm() -> None:
    data = load()
    assert data["schema"] == SFP_VECTORS_SCHEMA
    seen_positions: set[tuple[str, int]] = set()
    for case in data["cases"]:
        spec = case["spec"]
        w, p = spec["words_per_report"], spec["positions"]
        wf = spec["fragment_sketch"]["words_per_report"]
        words = [int(x) for x in case["words"]]
        assert len(words) == w * len(case["values"])
        for d, value in enumerate(case["values"]):
            row = words[d * w : (d + 1) * w]
            pos = below(row[0], p)
            seen_positions.add((case["id"], pos))
            frag = record(spec, value, pos)
            assert case["fragments"][d] == frag, (case["id"], d)
            want = [
                pos,
                sketch_report(spec["fragment_sketch"], frag, row[1 : 1 + wf]),
                sketch_report(spec["word_sketch"], value, row[1 + wf :]),
            ]
            assert case["reports"][d] == want, (case["id"], d)
    for case in data["cases"]:  # every position is reached
        assert {q for cid, q in seen_positions if cid == case["id"]} == set(
            range(case["spec"]["positions"])
        )


@pytest.mark.parametrize("index", range(3))
def test_every_vector_replays_through_the_library_and_its_spec(index: int) -> None:
    case = load()["cases"][index]
    sfp = sfp_from_spec(case["spec"])
    source = ArrayWords(case["words"])
    got = sfp_device_reports(sfp, case["values"], rng=source)
    assert source.remaining == 0
    assert isinstance(got, SFPReports)
    assert got.positions.tolist() == [r[0] for r in case["reports"]]
    # the records a file or batch holds keep the reports (read back equal)
    rec = sfp_records(sfp, got)
    assert rec.shape[0] == len(case["values"])
