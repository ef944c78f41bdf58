"""RAPPOR n-gram discovery's spec (deniable.oracles._rappor_ngram_spec:
deniable.rappor-ngram-spec/1) and its device rule, checked against an independent reading
of docs/specs.md (tests/_ngram_reading.py)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from _ngram_reading import device_report
from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles import (
    DEVICE_SPECS,
    RAPPOR_NGRAM_SPEC_SCHEMA,
    NgramReports,
    Rappor,
    RapporNgram,
    device_spec,
    mechanism_from_spec,
    rappor_ngram_device_reports,
    rappor_ngram_from_key,
    rappor_ngram_from_spec,
    rappor_ngram_spec,
    rappor_spec,
)
from deniable.randomness import ArrayWords

R1 = Rappor(m=32, h=2, cohorts=8, f=0.5, p=0.5, q=0.75)
R2 = Rappor(m=16, h=2, cohorts=4, f=0.25, p=0.25, q=0.75)
PROTOCOLS = (
    RapporNgram(R1, None, alphabet="abc", gram=2, length=4),
    RapporNgram(R1, R2, alphabet="abc", gram=2, length=6, pairs=2),
    RapporNgram(Rappor(m=8, h=1, cohorts=3, f=0.0, p=0.25, q=0.5), R2,
                alphabet="xy\u00fc", gram=1, length=4, pairs=6, pad="."),
)  # fmt: skip


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.key)
def test_spec_round_trips_through_the_registry_and_its_key_parses_back(
    protocol: RapporNgram,
) -> None:
    spec = device_spec(protocol)
    assert spec["schema"] == RAPPOR_NGRAM_SPEC_SCHEMA == "deniable.rappor-ngram-spec/1"
    assert DEVICE_SPECS[RAPPOR_NGRAM_SPEC_SCHEMA].kinds == (RapporNgram,)
    assert mechanism_from_spec(spec) == protocol
    assert mechanism_from_spec(json.dumps(spec)) == protocol
    assert rappor_ngram_from_key(spec["key"]) == protocol
    assert rappor_ngram_spec(rappor_ngram_from_key(spec["key"])) == spec
    # what a device needs, from the parameters' closed forms
    g = protocol.length // protocol.gram
    assert spec["positions"] == g and spec["position_pairs"] == g * (g - 1) // 2
    assert spec["ngram_report"] == rappor_spec(protocol.ngram)
    full = protocol.full
    assert spec["full_report"] == (None if full is None else rappor_spec(full))
    m, mf = protocol.ngram.m, (0 if full is None else full.m)
    want = 1 + g * (g - 1) // 2 + 4 * protocol.pairs * m + 2 * mf
    assert spec["words_per_report"] == want == sum(spec["words"].values())
    eps_full = 0.0 if full is None else full.epsilon
    assert spec["epsilon"] == pytest.approx(
        2 * protocol.pairs * protocol.ngram.epsilon + eps_full, rel=1e-15
    )


def test_the_permanent_bound_is_stated_and_never_finite_for_f_zero() -> None:
    # eps_inf = 2 h ln((1 - f/2) / (f/2)) of each mechanism, the n-grams' once a position
    g, f, f_full = 3, 0.5, 0.25
    want = g * 2 * 2 * math.log((1 - f / 2) / (f / 2)) + 2 * 2 * math.log(
        (1 - f_full / 2) / (f_full / 2)
    )
    assert rappor_ngram_spec(PROTOCOLS[1])["permanent_epsilon"] == pytest.approx(want, 1e-12)
    spec = rappor_ngram_spec(PROTOCOLS[2])  # f = 0: no PRR bound at all
    assert spec["permanent_epsilon"] == "inf"
    assert isinstance(spec["epsilon"], float) and math.isfinite(spec["epsilon"])
    assert rappor_ngram_from_spec(spec) == PROTOCOLS[2]


def _tampered(path: str, value: Any) -> dict[str, Any]:
    spec = copy.deepcopy(rappor_ngram_spec(PROTOCOLS[1]))
    *head, last = path.split(".")
    node = spec
    for part in head:
        node = node[part]
    node[last] = value
    return spec


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("positions", 4, "positions"),
        ("position_pairs", 6, "position_pairs"),
        ("words_per_report", 290, "words_per_report"),
        ("words.full", 0, "words"),
        ("epsilon", 3.0, "epsilon"),
        ("permanent_epsilon", 1.0, "permanent_epsilon"),
        ("strings.max_length", 9, "strings"),
        ("memoization", "kept", "memoization"),
        ("selection", "the first pairs", "selection"),
        ("key", 'rappor-ngram{"alphabet":"ab"}', "key"),
        ("algorithm", "rappor-ngram/2", "algorithm"),
    ],
)
def test_spec_refuses_an_altered_implied_field_by_name(path: str, value: Any, named: str) -> None:
    with pytest.raises(DataError, match=f"spec field `{named}` does not match"):
        rappor_ngram_from_spec(_tampered(path, value))


def test_an_altered_rappor_spec_is_refused_under_its_field() -> None:
    with pytest.raises(DataError, match=r"spec field `ngram_report`: spec field `constants`"):
        rappor_ngram_from_spec(_tampered("ngram_report.constants.f", 1 << 40))
    with pytest.raises(DataError, match=r"spec field `full_report`: spec field `epsilon`"):
        rappor_ngram_from_spec(_tampered("full_report.epsilon", 9.0))
    with pytest.raises(DataError, match=r"`ngram_report` must be a RAPPOR spec, got NoneType"):
        rappor_ngram_from_spec(_tampered("ngram_report", None))
    with pytest.raises(DataError, match=r"`full_report` must be a RAPPOR spec or null, got int"):
        rappor_ngram_from_spec(_tampered("full_report", 3))
    # a full report dropped, the rest unchanged: the key and epsilon no longer match
    with pytest.raises(DataError, match=r"spec field `key` does not match"):
        rappor_ngram_from_spec(_tampered("full_report", None))


def test_spec_refuses_unknown_missing_and_bad_parameters_by_name() -> None:
    spec = rappor_ngram_spec(PROTOCOLS[0])
    with pytest.raises(DataError, match="unknown spec field `extra`"):
        rappor_ngram_from_spec({**spec, "extra": 1})
    with pytest.raises(DataError, match="spec field `ngram_report` is missing"):
        rappor_ngram_from_spec({k: v for k, v in spec.items() if k != "ngram_report"})
    with pytest.raises(DataError, match="spec field `mechanism` must be 'rappor-ngram'"):
        rappor_ngram_from_spec({**spec, "mechanism": "rappor"})
    with pytest.raises(DataError, match="spec field `schema`"):
        rappor_ngram_from_spec({**spec, "schema": "deniable.rappor-spec/1"})
    for name, value, match in (
        ("alphabet", 3, r"`parameters.alphabet` must be a string, got int"),
        ("pad", None, r"`parameters.pad` must be a string, got NoneType"),
        ("length", 5, r"`parameters`: `length` must be a multiple of `gram` \(2\), got 5"),
        ("pairs", 2, r"`parameters`: .*pairs"),
        ("gram", "0.1.2", r"`parameters.gram` must be an integer or an exact"),
        ("gram", "3/2", r"`parameters`.*`gram` must be an integer, got float 1.5"),
    ):
        bad = {**spec, "parameters": {**spec["parameters"], name: value}}
        with pytest.raises(DataError, match=match):
            rappor_ngram_from_spec(bad)
    bad = {**spec, "parameters": {**spec["parameters"], "extra": 1}}
    with pytest.raises(DataError, match=r"`parameters` does not fit 'rappor-ngram'"):
        rappor_ngram_from_spec(bad)
    with pytest.raises(ParameterTypeError, match="`protocol` must be a RapporNgram, got Rappor"):
        rappor_ngram_spec(R1)  # type: ignore[arg-type]


def _values(ng: RapporNgram) -> list[str]:
    a = ng.alphabet
    return [a[0], a[-1] + a[0] + a[-1], a[-1] * ng.length]


def _observed(got: NgramReports, d: int, ng: RapporNgram) -> dict[str, Any]:
    reps = 2 * ng.pairs
    rows = range(d * reps, (d + 1) * reps)
    out: dict[str, Any] = {
        "pairs": got.positions[d].tolist(),
        "ngrams": [[int(got.ngrams.cohorts[r]), bytes(got.ngrams.bits[r]).hex()] for r in rows],
        "full": None,
    }
    if got.full is not None:
        out["full"] = [int(got.full.cohorts[d]), bytes(got.full.bits[d]).hex()]
    return out


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.key)
def test_device_rule_uses_each_devices_words_in_the_documented_order(
    protocol: RapporNgram,
) -> None:
    spec = rappor_ngram_spec(protocol)
    w = spec["words_per_report"]
    values = _values(protocol)
    rng = np.random.default_rng(5)
    words = rng.integers(0, 2**64, size=(12, w), dtype=np.uint64)
    words[0, 1:] = 7  # every pair key tied: the earliest pairs, in order
    items = [values[i % 3] for i in range(12)]
    source = ArrayWords(words.reshape(-1))
    got = rappor_ngram_device_reports(protocol, items, rng=source)
    assert source.remaining == 0
    for d in range(12):
        want = device_report(spec, items[d], [int(x) for x in words[d]])
        seen = _observed(got, d, protocol)
        assert seen["pairs"] == want["pairs"], d
        assert seen["ngrams"] == [r[1:] for r in want["ngrams"]], d
        assert seen["full"] == want["full"], d
    g = protocol.positions
    first = [[a, b] for a in range(g) for b in range(a + 1, g)][: protocol.pairs]
    assert got.positions[0].tolist() == first


def test_device_pairs_are_uniform_and_independent_of_the_string() -> None:
    """Chi-squared over the 6 ordered choices of 2 of 3 pairs at a fixed seed: false alarm
    1e-3 per test, two tests."""
    ng = PROTOCOLS[1]
    for value in ("a", "abcabc"):
        pos = rappor_ngram_device_reports(ng, [value] * 6000, rng=11).positions
        _, counts = np.unique(pos.reshape(-1, 4), axis=0, return_counts=True)
        assert counts.size == 6
        assert stats.chisquare(counts).pvalue > 1e-3


def test_device_reports_find_a_planted_string_through_the_servers_discover() -> None:
    """One string at 60% among uniform noise at a fixed seed: discovered, its frequency
    within 0.1 of 0.6 (the full-string estimate's SE is about 0.015 here: 0.1 is over 6 SE)."""
    ng = RapporNgram(
        Rappor(m=64, h=2, cohorts=8, f=0.25, p=0.25, q=0.75),
        Rappor(m=64, h=2, cohorts=8, f=0.25, p=0.25, q=0.75),
        alphabet="abc", gram=2, length=4,
    )  # fmt: skip
    rng = np.random.default_rng(3)
    n = 4000
    noise = ["".join(row) for row in rng.choice(list("abc"), size=(n, 4)).tolist()]
    items = ["abca" if u < 0.6 * n else noise[u] for u in range(n)]
    found = ng.discover(rappor_ngram_device_reports(ng, items, rng=4))
    assert "abca" in found.strings
    f = found.values[found.strings.index("abca")]
    assert abs(f - 0.6) < 0.1


def test_device_rule_refuses_bad_strings_by_name() -> None:
    ng = PROTOCOLS[0]
    with pytest.raises(DataError, match=r"1\.\.4 characters"):
        rappor_ngram_device_reports(ng, ["abcab"], rng=1)
    with pytest.raises(DataError, match="alphabet"):
        rappor_ngram_device_reports(ng, ["abd"], rng=1)
    with pytest.raises(DataError):
        rappor_ngram_device_reports(ng, [""], rng=1)
    with pytest.raises(ParameterTypeError, match="`protocol` must be a RapporNgram"):
        rappor_ngram_device_reports("ng", ["a"], rng=1)  # type: ignore[arg-type]


def test_device_rule_is_the_same_across_its_blocks_of_words() -> None:
    """m = 1024 bits, one pair of 6: 1 + 15 + 4096 words a device, 255 devices a block of
    2**20 words, so 600 devices span three blocks; a device at a block's edge reports what
    it reports alone with its own words."""
    big = Rappor(m=1024, h=2, cohorts=4, f=0.5, p=0.5, q=0.75)
    ng = RapporNgram(big, None, alphabet="ab", gram=1, length=6)
    per = rappor_ngram_spec(ng)["words_per_report"]
    assert per == 4112 and (1 << 20) // per == 255
    rng = np.random.default_rng(9)
    words = rng.integers(0, 2**64, size=600 * per, dtype=np.uint64)
    items = ["ab", "b", "abba", "a"] * 150
    whole = rappor_ngram_device_reports(ng, items, rng=ArrayWords(words))
    for d in (0, 254, 255, 256, 509, 510, 599):
        alone = rappor_ngram_device_reports(
            ng, [items[d]], rng=ArrayWords(words[d * per : (d + 1) * per])
        )
        assert _observed(whole, d, ng) == _observed(alone, 0, ng), d


def test_a_stream_of_ngrams_is_read_and_charged_its_one_collection_epsilon() -> None:
    """A stream spec carrying the n-gram spec is read by its schema and charged, a report,
    ``2 pairs eps_1(ngram) + eps_1(full)`` (every PRR fresh: oracles.report_epsilon)."""
    from deniable.service.analysis.streams import stream_spec_from

    ng = PROTOCOLS[1]
    spec = {"id": "words", "period": "day", "oracle": rappor_ngram_spec(ng),
            "window": {"kind": "day", "epsilon": 100}}  # fmt: skip
    got = stream_spec_from(spec)
    full = ng.full.epsilon if ng.full is not None else 0.0
    assert got.report_epsilon == 2 * ng.pairs * ng.ngram.epsilon + full
    assert got.to_dict()["oracle"] == rappor_ngram_spec(ng)
