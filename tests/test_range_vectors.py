"""The range mechanisms' and Square Wave's test vectors (tests/vectors/ranges.json,
oracles._range_vectors): the committed file is current, every report replays from its words
by a plain-Python reading of docs/specs.md (the level draw, the node, HaarHRR's flipped bit,
Hadamard response, Square Wave's start and cell), and every tally is the mechanism's tally
of the file's reports, read independently of the randomizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from deniable.designs import design_from_spec
from deniable.oracles import (
    RANGE_SPEC_SCHEMA,
    RANGE_VECTORS_SCHEMA,
    SQUARE_WAVE_SPEC_SCHEMA,
    LevelReports,
    dump_range_vectors,
    oracle_from_spec,
    range_from_spec,
    square_wave_from_spec,
)
from deniable.randomness import ArrayWords

VECTORS_FILE = Path(__file__).parent / "vectors" / "ranges.json"
M64 = (1 << 64) - 1


def _cases() -> list[dict[str, Any]]:
    data = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
    assert data["schema"] == RANGE_VECTORS_SCHEMA
    return list(data["cases"])


def _uniform(word: int, m: int) -> int:
    """docs/specs.md: a uniform integer in 0..m-1 from one word (multiply-shift)."""
    if m & (m - 1) == 0:
        return word >> (64 - (m.bit_length() - 1)) if m > 1 else 0
    b = 64 - m.bit_length()
    return ((word >> (64 - b)) * m) >> b


def _hadamard(spec: dict[str, Any], x: int, words: list[int]) -> int:
    """docs/specs.md, hadamard-response/1: row j from the first word, the parity bit of
    j & x, flipped when (second word >> 11) < flip; the report 2 j + bit."""
    rows, flip = spec["constants"]["rows"], spec["constants"]["flip"]
    j = words[0] >> (64 - (rows.bit_length() - 1))
    bit = (bin(j & x).count("1") & 1) ^ int((words[1] >> 11) < flip)
    return 2 * j + bit


def _level_report(spec: dict[str, Any], x: int, words: list[int]) -> Any:
    """One level oracle's report, as the vectors write it: Hadamard response replayed by
    hand; the other level oracles (their own vectors replay them in test_oracles.py) by the
    library's oracle built from the level's spec, with exactly these words."""
    if spec.get("algorithm") == "hadamard-response/1":
        return _hadamard(spec, x, words)
    if spec["schema"] == "deniable.question/1":
        oracle: Any = design_from_spec(spec)
    else:
        oracle = oracle_from_spec(spec)
    source = ArrayWords(np.array(words, dtype=np.uint64))
    report = np.asarray(oracle.randomize(np.array([x]), rng=source))[0]
    assert source.remaining == 0
    if report.ndim == 0:
        return int(report)
    if report.dtype == np.uint8:
        return bytes(report).hex()
    return [str(int(w)) for w in report[:-1]] + [int(report[-1])]


def _replay_range(spec: dict[str, Any], x: int, words: list[int]) -> list[Any]:
    """docs/specs.md, deniable.range-spec/1: the level from the first word, the node of x
    at that level, the level oracle's report of it (HaarHRR: its bit flipped on the right
    half)."""
    c = spec["constants"]
    levels, h, b = c["levels"], c["height"], c["branching"]
    level = _uniform(words[0], levels)
    rest = words[1:]
    if spec["mechanism"] == "haar-hrr":
        node, right = x >> (h - level), (x >> (h - level - 1)) & 1
        return [level, _hadamard(spec["levels"][level], node, rest) ^ right]
    node = x // b ** (h - 1 - level)
    return [level, _level_report(spec["levels"][level], node, rest)]


def _replay_wave(spec: dict[str, Any], x: float, words: list[int]) -> int:
    """docs/specs.md, square-wave/1: the window's start rounded up with probability
    frac(v G), then the cell by the inverse CDF of the integer weights."""
    p, c = spec["parameters"], spec["constants"]
    lower, upper = (float(_fraction(p[n])) for n in ("lower", "upper"))
    grid, w = c["grid"], c["window"]
    alpha, beta = int(c["alpha"]), int(c["beta"])
    v = min(max((x - lower) / (upper - lower), 0.0), 1.0)
    whole = int(np.floor(v * grid))
    frac = int(np.floor((v * grid - whole) * 2.0**53))
    s = whole + int((words[0] >> 11) < frac)
    point = words[1]
    if point < s * beta:
        return point // beta
    if point - s * beta < w * alpha:
        return s + (point - s * beta) // alpha
    return s + w + (point - s * beta - w * alpha) // beta


def _fraction(x: Any) -> float:
    from fractions import Fraction

    return float(Fraction(x)) if isinstance(x, str) else float(x)


def test_the_range_vectors_file_is_current() -> None:
    # regenerate with `.venv/bin/python scripts/gen_oracle_vectors.py`
    assert VECTORS_FILE.read_text(encoding="utf-8") == dump_range_vectors()


def test_the_vectors_cover_every_mechanism_level_oracle_and_level() -> None:
    cases = _cases()
    ranges = [c for c in cases if c["spec"]["schema"] == RANGE_SPEC_SCHEMA]
    waves = [c for c in cases if c["spec"]["schema"] == SQUARE_WAVE_SPEC_SCHEMA]
    assert {c["spec"]["parameters"].get("oracle", "haar") for c in ranges} == {
        "oue", "grr", "olh", "hadamard", "haar",
    }  # fmt: skip
    assert len(waves) == 2
    for case in ranges:
        drawn = {level for level, _ in case["reports"]}
        assert drawn == set(range(case["spec"]["constants"]["levels"])), case["id"]
        assert set(case["values"]) == set(range(case["spec"]["constants"]["domain"]))
        flat = [int(w) for words in case["words"] for w in words]
        assert 0 in flat and M64 in flat


def test_every_range_report_replays_from_its_words() -> None:
    for case in _cases():
        spec = case["spec"]
        if spec["schema"] != RANGE_SPEC_SCHEMA:
            continue
        for i, (x, words, report) in enumerate(
            zip(case["values"], case["words"], case["reports"], strict=True)
        ):
            ints = [int(w) for w in words]
            assert len(ints) == spec["words_per_report"][report[0]], (case["id"], i)
            assert _replay_range(spec, x, ints) == report, (case["id"], i)


def test_every_square_wave_report_replays_from_its_words() -> None:
    for case in _cases():
        spec = case["spec"]
        if spec["schema"] != SQUARE_WAVE_SPEC_SCHEMA:
            continue
        cells = spec["constants"]["cells"]
        for i, (x, words, report) in enumerate(
            zip(case["values"], case["words"], case["reports"], strict=True)
        ):
            assert len(words) == spec["words_per_report"] == 2
            assert 0 <= report < cells
            assert _replay_wave(spec, x, [int(w) for w in words]) == report, (case["id"], i)
        # the window's edges are reached: a report in the first cell and one in the last
        assert {0, cells - 1} <= set(case["reports"]), case["id"]


def _level_reports(mech: Any, spec: dict[str, Any], reports: list[Any]) -> LevelReports:
    """The LevelReports of the file's reports, parsed from their JSON form."""
    level = np.array([r[0] for r in reports], dtype=np.int64)
    parts = []
    for j, level_spec in enumerate(spec["levels"]):
        mine = [r[1] for r in reports if r[0] == j]
        kind = level_spec.get("report")
        if kind == "packed-bits":
            parts.append(np.array([list(bytes.fromhex(h)) for h in mine], dtype=np.uint8))
        elif kind == "hash-bucket":
            parts.append(np.array([[int(a), int(b), y] for a, b, y in mine], dtype=np.uint64))
        else:  # a number: a Hadamard response's 2 j + bit, a category
            dtype = np.int64 if kind == "row-bit" else np.uint16
            parts.append(np.array(mine, dtype=dtype))
    return LevelReports(level, tuple(parts))


def test_every_tally_is_the_mechanisms_tally_of_the_reports_and_of_its_words() -> None:
    for case in _cases():
        spec = case["spec"]
        if spec["schema"] == RANGE_SPEC_SCHEMA:
            mech: Any = range_from_spec(spec)
            counts = mech.tally(_level_reports(mech, spec, case["reports"])).counts
        else:
            mech = square_wave_from_spec(spec)
            counts = mech.tally(np.array(case["reports"], dtype=np.int64)).counts
        assert counts.tolist() == case["tally"], case["id"]
        # the library's randomizer, one device a call with its words, gives the reports
        for x, words, report in zip(case["values"], case["words"], case["reports"], strict=True):
            got = mech.randomize([x], rng=ArrayWords(np.array([int(w) for w in words], np.uint64)))
            if spec["schema"] == SQUARE_WAVE_SPEC_SCHEMA:
                assert int(got[0]) == report
            else:
                assert int(got.level[0]) == report[0]
