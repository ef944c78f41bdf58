"""RAPPOR n-gram discovery's test vectors (tests/vectors/rappor_ngram.json): the file is what
the library writes, and every device replays through an independent reading of the
algorithm in docs/specs.md (tests/_ngram_reading.py: the cohort, the pairs, the labels,
each RAPPOR report) and through the library's own device rule read back from the file's
spec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _ngram_reading import device_report
from deniable.oracles import (
    RAPPOR_NGRAM_VECTORS_SCHEMA,
    dump_rappor_ngram_vectors,
    rappor_ngram_device_reports,
    rappor_ngram_from_spec,
)
from deniable.randomness import ArrayWords

VECTORS_FILE = Path(__file__).parent / "vectors" / "rappor_ngram.json"


def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
    return data


def test_the_vectors_file_is_what_the_library_writes() -> None:
    assert VECTORS_FILE.read_text(encoding="utf-8") == dump_rappor_ngram_vectors()


def test_every_vector_replays_through_the_documented_algorithm() -> None:
    data = load()
    assert data["schema"] == RAPPOR_NGRAM_VECTORS_SCHEMA == "deniable.rappor-ngram-vectors/1"
    assert len(data["cases"]) == 3
    for case in data["cases"]:
        spec = case["spec"]
        w = spec["words_per_report"]
        words = [int(x) for x in case["words"]]
        assert len(words) == w * len(case["values"]) == w * len(case["reports"])
        cohorts, bits = set(), set()
        for d, value in enumerate(case["values"]):
            want = device_report(spec, value, words[d * w : (d + 1) * w])
            assert case["reports"][d] == want, (case["id"], d)
            cohorts.add(want["ngrams"][0][1])
            bits.update(r[2] for r in want["ngrams"])
        # every n-gram cohort is reached; reports of all 1s and of all 0s both occur
        assert cohorts == set(range(spec["ngram_report"]["constants"]["cohorts"])), case["id"]
        width = spec["ngram_report"]["constants"]["bits"] // 8
        assert {"ff" * width, "00" * width} <= bits, case["id"]


@pytest.mark.parametrize("index", range(3))
def test_every_vector_replays_through_the_library_and_its_spec(index: int) -> None:
    case = load()["cases"][index]
    ng = rappor_ngram_from_spec(case["spec"])
    source = ArrayWords(case["words"])
    got = rappor_ngram_device_reports(ng, case["values"], rng=source)
    assert source.remaining == 0
    reps = 2 * ng.pairs
    for d, rep in enumerate(case["reports"]):
        assert got.positions[d].tolist() == rep["pairs"]
        rows = range(d * reps, (d + 1) * reps)
        assert [bytes(got.ngrams.bits[r]).hex() for r in rows] == [x[2] for x in rep["ngrams"]]
        if rep["full"] is None:
            assert got.full is None
        else:
            assert got.full is not None
            assert [int(got.full.cohorts[d]), bytes(got.full.bits[d]).hex()] == rep["full"]
