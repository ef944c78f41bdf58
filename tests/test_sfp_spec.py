"""The Sequence Fragment Puzzle's spec (deniable.oracles._sfp_spec: deniable.sfp-spec/1) and
its device rule, checked against an independent reading of docs/specs.md."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import numpy as np
import pytest
from scipy import stats

from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles import (
    DEVICE_SPECS,
    SFP,
    SFP_SPEC_SCHEMA,
    cms_from_spec,
    device_spec,
    mechanism_from_spec,
    sfp_device_reports,
    sfp_from_key,
    sfp_from_spec,
    sfp_spec,
)
from deniable.randomness import ArrayWords

PROTOCOLS = (
    SFP(epsilon=4.0, max_length=4, alphabet="abc", puzzle_bits=4, k=8, m=64),
    SFP(epsilon=2.0, max_length=3, puzzle_bits=2, k=4, m=32, sketch="cms", salt=7),
    SFP(epsilon=1.0, max_length=6, alphabet="xyz\u00fc", puzzle_bits=3, k=4, m=32,
        fragment_share=0.25),
)  # fmt: skip


def below(word: int, k: int) -> int:
    """uniform_below as docs/specs.md states it."""
    if k & (k - 1) == 0:
        return word >> (64 - (k.bit_length() - 1)) if k > 1 else 0
    bits = 64 - k.bit_length()
    return ((word >> (64 - bits)) * k) >> bits


def record_of(spec: dict[str, Any], value: str, position: int) -> str:
    """The record "l:p:i.j" of ``value`` at ``position``, read from the spec alone."""
    alphabet, a = spec["strings"]["alphabet"], spec["symbols"]
    raw = value.encode("utf-8")
    symbols = list(raw) if alphabet is None else [alphabet.index(c) for c in value]
    symbols += [a] * (2 * spec["positions"] - len(symbols))
    top = int.from_bytes(hashlib.sha256(b"deniable.sfp/1\x00" + raw).digest()[:4], "big")
    p = top >> (32 - spec["puzzle"]["bits"])
    return f"{position}:{p}:{symbols[2 * position]}.{symbols[2 * position + 1]}"


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.key)
def test_spec_round_trips_through_the_registry_and_its_key_parses_back(protocol: SFP) -> None:
    spec = device_spec(protocol)
    assert spec["schema"] == SFP_SPEC_SCHEMA == "deniable.sfp-spec/1"
    assert DEVICE_SPECS[SFP_SPEC_SCHEMA].kinds == (SFP,)
    assert mechanism_from_spec(spec) == protocol
    assert mechanism_from_spec(json.dumps(spec)) == protocol
    assert sfp_from_key(spec["key"]) == protocol
    assert sfp_spec(sfp_from_key(spec["key"])) == spec
    # what a device needs, from the parameters' closed forms
    length, share, eps = protocol.max_length, protocol.fragment_share, protocol.epsilon
    assert spec["positions"] == (length + 1) // 2
    assert spec["symbols"] == (256 if protocol.alphabet is None else len(protocol.alphabet))
    assert spec["puzzle"]["bits"] == protocol.puzzle_bits
    assert spec["fragment_epsilon"] == eps * share
    assert spec["fragment_epsilon"] + spec["word_epsilon"] <= spec["epsilon"] <= eps
    for name, want_eps in (("fragment_sketch", eps * share), ("word_sketch", eps * (1 - share))):
        sketch = cms_from_spec(spec[name])
        assert (sketch.name, sketch.k, sketch.m, sketch.salt) == (
            protocol.sketch, protocol.k, protocol.m, protocol.salt,
        )  # fmt: skip
        assert sketch.epsilon == pytest.approx(want_eps, rel=1e-15)
    per = {"cms": 1 + protocol.m, "hcms": 3}[protocol.sketch]
    assert spec["words_per_report"] == 1 + 2 * per


def test_estimate_options_are_the_servers_not_the_specs() -> None:
    spec = sfp_spec(PROTOCOLS[0])
    got = sfp_from_spec(spec, alpha=0.2, max_candidates=7)
    assert (got.alpha, got.max_candidates) == (0.2, 7)
    assert got.key == PROTOCOLS[0].key


def _tampered(path: str, value: Any) -> dict[str, Any]:
    spec = copy.deepcopy(sfp_spec(PROTOCOLS[1]))
    *head, last = path.split(".")
    node = spec
    for part in head:
        node = node[part]
    node[last] = value
    return spec


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("positions", 3, "positions"),
        ("symbols", 255, "symbols"),
        ("words_per_report", 35, "words_per_report"),
        ("epsilon", 3.0, "epsilon"),
        ("fragment_epsilon", 1.5, "fragment_epsilon"),
        ("word_epsilon", 1.5, "word_epsilon"),
        ("implemented_epsilon", 2.5, "implemented_epsilon"),
        ("puzzle.bits", 3, "puzzle"),
        ("fragment_sketch.constants.flip", 1 << 40, "fragment_sketch"),
        ("word_sketch.parameters.epsilon", "2", "word_sketch"),
        ("strings.max_length", 9, "strings"),
        ("key", 'sfp{"alphabet":null}', "key"),
        ("algorithm", "sequence-fragment-puzzle/2", "algorithm"),
    ],
)
def test_spec_refuses_an_altered_implied_field_by_name(path: str, value: Any, named: str) -> None:
    with pytest.raises(DataError, match=f"spec field `{named}` does not match"):
        sfp_from_spec(_tampered(path, value))


def test_spec_refuses_unknown_missing_and_bad_parameters_by_name() -> None:
    spec = sfp_spec(PROTOCOLS[0])
    with pytest.raises(DataError, match="unknown spec field `extra`"):
        sfp_from_spec({**spec, "extra": 1})
    with pytest.raises(DataError, match="spec field `word_sketch` is missing"):
        sfp_from_spec({k: v for k, v in spec.items() if k != "word_sketch"})
    with pytest.raises(DataError, match="spec field `mechanism` must be 'sfp'"):
        sfp_from_spec({**spec, "mechanism": "pem"})
    with pytest.raises(DataError, match="spec field `schema`"):
        sfp_from_spec({**spec, "schema": "deniable.heavy-spec/1"})
    bad = {**spec, "parameters": {**spec["parameters"], "alphabet": 3}}
    with pytest.raises(DataError, match=r"`parameters.alphabet` must be a string or null"):
        sfp_from_spec(bad)
    bad = {**spec, "parameters": {**spec["parameters"], "max_length": 0}}
    with pytest.raises(DataError, match=r"`parameters`: .*max_length"):
        sfp_from_spec(bad)
    bad = {**spec, "parameters": {**spec["parameters"], "epsilon": "0.1.2"}}
    with pytest.raises(DataError, match=r"`parameters.epsilon` must be an integer or an exact"):
        sfp_from_spec(bad)
    with pytest.raises(ParameterTypeError, match="`protocol` must be an SFP"):
        sfp_spec(PROTOCOLS[0].word_sketch)  # type: ignore[arg-type]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.key)
def test_device_rule_uses_each_devices_words_in_the_documented_order(protocol: SFP) -> None:
    spec = sfp_spec(protocol)
    w = spec["words_per_report"]
    wf = spec["fragment_sketch"]["words_per_report"]
    values = ["a", "ab", "abc"] if protocol.alphabet is None else [
        protocol.alphabet[0], protocol.alphabet[:2], protocol.alphabet[-1] * protocol.max_length,
    ]  # fmt: skip
    rng = np.random.default_rng(5)
    words = rng.integers(0, 2**64, size=(12, w), dtype=np.uint64)
    items = [values[i % 3] for i in range(12)]
    source = ArrayWords(words.reshape(-1))
    got = sfp_device_reports(protocol, items, rng=source)
    assert source.remaining == 0
    frag, word = protocol.fragment_sketch, protocol.word_sketch
    for d in range(12):
        row = [int(x) for x in words[d]]
        pos = below(row[0], spec["positions"])
        assert got.positions[d] == pos
        want_f = frag.randomize([record_of(spec, items[d], pos)], rng=ArrayWords(row[1 : 1 + wf]))
        want_w = word.randomize([items[d]], rng=ArrayWords(row[1 + wf :]))
        if protocol.sketch == "cms":
            assert got.fragments.rows[d] == want_f.rows[0]
            assert bytes(got.fragments.bits[d]) == bytes(want_f.bits[0])
            assert bytes(got.words.bits[d]) == bytes(want_w.bits[0])
        else:
            assert (got.fragments[d], got.words[d]) == (want_f[0], want_w[0])


def test_device_positions_are_uniform_and_independent_of_the_string() -> None:
    """Chi-squared at a fixed seed: false alarm 1e-3 per test, two tests."""
    sfp = SFP(epsilon=2.0, max_length=6, alphabet="ab", puzzle_bits=2, k=4, m=16)
    n = 6000
    for value in ("a", "ababab"):
        pos = sfp_device_reports(sfp, [value] * n, rng=11).positions
        counts = np.bincount(pos, minlength=3)
        assert stats.chisquare(counts).pvalue > 1e-3


def test_device_reports_find_a_planted_string_through_the_servers_estimate() -> None:
    """One string at 60% among noise at a fixed seed: found with its frequency near 0.6
    (the whole-string estimate's SE is below 0.02 here, so 0.1 is more than 5 SE)."""
    sfp = SFP(epsilon=6.0, max_length=4, alphabet="abcd", puzzle_bits=4, k=16, m=256)
    rng = np.random.default_rng(3)
    n = 20000
    noise = ["".join(rng.choice(list("abcd"), size=4)) for _ in range(n)]
    items = ["abca" if u < 0.6 * n else noise[u] for u in range(n)]
    result = sfp.estimate(sfp_device_reports(sfp, items, rng=4))
    assert "abca" in result.strings
    f = result.frequencies[result.strings.index("abca")]
    assert abs(f - 0.6) < 0.1


def test_device_rule_refuses_bad_strings_by_name() -> None:
    sfp = PROTOCOLS[0]
    with pytest.raises(DataError, match="max_length = 4"):
        sfp_device_reports(sfp, ["abcab"], rng=1)
    with pytest.raises(DataError, match="alphabet"):
        sfp_device_reports(sfp, ["abd"], rng=1)
    with pytest.raises(DataError):
        sfp_device_reports(sfp, [""], rng=1)
    with pytest.raises(ParameterTypeError, match="`protocol` must be an SFP"):
        sfp_device_reports("sfp", ["a"], rng=1)  # type: ignore[arg-type]


def test_device_rule_is_the_same_across_its_blocks_of_words() -> None:
    """CMS with m = 1024: 2051 words a device, 511 devices a block of 2**20 words, so 1100
    devices span three blocks; each device at a block's edge reports what it reports alone
    with its own words."""
    from deniable.oracles import sfp_records

    sfp = SFP(epsilon=2.0, max_length=4, alphabet="ab", puzzle_bits=2, k=4, m=1024, sketch="cms")
    per = sfp_spec(sfp)["words_per_report"]
    assert per == 2051 and (1 << 20) // per == 511
    rng = np.random.default_rng(9)
    words = rng.integers(0, 2**64, size=1100 * per, dtype=np.uint64)
    items = ["ab", "b", "abba", "a"] * 275
    whole = sfp_records(sfp, sfp_device_reports(sfp, items, rng=ArrayWords(words)))
    for d in (0, 510, 511, 512, 1021, 1022, 1099):
        alone = sfp_device_reports(sfp, [items[d]], rng=ArrayWords(words[d * per : (d + 1) * per]))
        assert np.array_equal(whole[d], sfp_records(sfp, alone)[0]), d


def test_a_position_without_reports_is_estimated_not_refused() -> None:
    """A small batch can leave a position empty (each device's position is drawn): that
    position keeps nothing (its threshold infinite), so no string is assembled."""
    sfp = PROTOCOLS[0]  # P = 2
    reports = sfp_device_reports(sfp, ["ab", "c", "abca"] * 20, rng=3)
    only = reports[reports.positions == 1]
    result = sfp.estimate(only)
    assert result.n == len(only) > 0
    assert result.fragment_thresholds[0] == float("inf") and result.fragments_kept[0] == 0
    assert result.strings == () and result.candidates == 0
    with pytest.raises(DataError, match="at least 1"):
        sfp.estimate(reports[reports.positions == 5])  # no reports at all
