"""The heavy-hitter spec (deniable.oracles._heavy_spec: deniable.heavy-spec/1), the device
rule and the vectors (tests/vectors/heavy.json) replayed by an independent reading of the
algorithm in docs/specs.md."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles import (
    CMS,
    HEAVY_SPEC_SCHEMA,
    HEAVY_VECTORS_SCHEMA,
    PEM,
    TreeHist,
    dump_heavy_vectors,
    heavy_device_records,
    heavy_from_key,
    heavy_from_records,
    heavy_from_spec,
    heavy_spec,
)
from deniable.randomness import ArrayWords

VECTORS_FILE = Path(__file__).parent / "vectors" / "heavy.json"
M64 = (1 << 64) - 1

PROTOCOLS = (
    PEM(epsilon=2.0, max_bytes=2, start_bits=8, step_bits=4),
    PEM(epsilon=1.0, max_bytes=9, start_bits=5, step_bits=8, g=4),
    TreeHist(epsilon=4.0, max_bytes=1),
    TreeHist(epsilon=0.5, max_bytes=3, g=2),
)


# ---- an independent reading of the device algorithm (docs/specs.md)


def below(word: int, k: int) -> int:
    if k & (k - 1) == 0:
        return word >> (64 - (k.bit_length() - 1)) if k > 1 else 0
    bits = 64 - k.bit_length()
    return ((word >> (64 - bits)) * k) >> bits


def replay(spec: dict[str, Any], value: str, words: list[int]) -> list[int]:
    c = spec["constants"]
    l_rows, w, g = c["rows"], c["words"], c["buckets"]
    group = below(words[0], spec["groups"])
    bits = spec["levels"][group]
    padded = value.encode("utf-8").ljust(8 * w, b"\x00")
    x = int.from_bytes(padded, "big") >> (8 * w * 8 - bits)  # the prefix as an integer
    rows = []
    bucket = 0
    for r in range(l_rows):
        row = int.from_bytes(
            b"".join(words[1 + r * w + i].to_bytes(8, "big") for i in range(w)), "big"
        )
        row &= ((1 << bits) - 1) << (64 * w - bits)  # masked to the prefix
        rows += [(row >> (64 * (w - 1 - i))) & M64 for i in range(w)]
        bucket |= (bin((row >> (64 * w - bits)) & x).count("1") % 2) << r
    keep = (words[-2] >> 11) < c["keep"]
    y = bucket if keep else words[-1] >> (64 - l_rows)
    assert y < g
    return [group, *rows, y]


def cases() -> list[dict[str, Any]]:
    data = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
    assert data["schema"] == HEAVY_VECTORS_SCHEMA
    return list(data["cases"])


def test_the_vectors_file_is_what_the_library_writes() -> None:
    assert VECTORS_FILE.read_text(encoding="utf-8") == dump_heavy_vectors()


def test_every_vector_replays_through_the_documented_algorithm() -> None:
    seen_groups = 0
    for case in cases():
        spec, per = case["spec"], case["spec"]["words_per_report"]
        words = [int(x) for x in case["words"]]
        assert len(words) == per * len(case["values"])
        for i, (value, record) in enumerate(zip(case["values"], case["records"], strict=True)):
            got = replay(spec, value, words[i * per : (i + 1) * per])
            assert [int(x) for x in record] == got, (case["id"], i)
            bits = spec["levels"][got[0]]  # the prefix: the top bits of the padded string
            size = -(-bits // 8)
            top = int.from_bytes(value.encode("utf-8").ljust(size, b"\x00")[:size], "big")
            want = ((top >> (8 * size - bits)) << (8 * size - bits)).to_bytes(size, "big")
            assert case["prefixes"][i] == want.hex(), (case["id"], i)
        groups = {int(r[0]) for r in case["records"]}
        assert groups == set(range(spec["groups"])), case["id"]  # every group reached
        keeps = [(words[i * per + per - 2] >> 11) < spec["constants"]["keep"]
                 for i in range(len(case["values"]))]  # fmt: skip
        assert any(keeps) and not all(keeps), case["id"]
        seen_groups += spec["groups"]
    assert seen_groups == 3 + 10 + 8 + 16 + 6  # PEM-1: 5, 13, ..., 69, 72; PEM-4: 4, ..., 24


def test_every_vector_replays_through_the_library_and_its_spec() -> None:
    for case in cases():
        protocol = heavy_from_spec(case["spec"])
        source = ArrayWords(case["words"])
        records = heavy_device_records(protocol, case["values"], rng=source)
        assert source.remaining == 0
        assert records.tolist() == [[int(x) for x in r] for r in case["records"]]
        back = heavy_from_records(protocol, records)  # every report its oracle accepts
        assert back.n == len(case["values"])


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.key)
def test_spec_round_trips_and_its_key_parses_back(protocol: Any) -> None:
    spec = heavy_spec(protocol)
    assert spec["schema"] == HEAVY_SPEC_SCHEMA
    back = heavy_from_spec(json.dumps(spec))
    assert (back.key, back.levels, back.base) == (protocol.key, protocol.levels, protocol.base)
    assert heavy_from_key(spec["key"]).key == spec["key"]
    # the implied fields from the parameters' closed forms
    l_rows = int(math.log2(protocol.base.g))
    w = -(-protocol.max_bytes // 8)
    assert spec["groups"] == len(spec["levels"]) and spec["levels"][-1] == 8 * protocol.max_bytes
    assert spec["words_per_report"] == l_rows * w + 3
    assert spec["constants"] == {
        "buckets": protocol.base.g, "keep": spec["constants"]["keep"], "rows": l_rows, "words": w,
    }  # fmt: skip
    p = protocol.base.p_truthful
    assert abs(spec["constants"]["keep"] / 2**53 - p) <= 2**-53
    g = protocol.base.g
    # eps = ln(p' / q') of randomized response over g buckets: p' = p + (1 - p) / g
    want = math.log((p + (1 - p) / g) / ((1 - p) / g))
    assert spec["epsilon"] == pytest.approx(want, rel=1e-12)
    assert spec["implemented_epsilon"] <= spec["epsilon"] + 1e-12


def test_estimate_options_are_the_servers_not_the_specs() -> None:
    spec = heavy_spec(PROTOCOLS[0])
    out = heavy_from_spec(spec, top_k=3, alpha=None)
    assert (out.top_k, out.alpha) == (3, None)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("schema", "deniable.cms-spec/1"),
        ("key", 'pem{"epsilon":"3","g":8,"max_bytes":2,"start_bits":8,"step_bits":4}'),
        ("algorithm", "linear-local-hashing/1"),
        ("levels", [8, 16]),
        ("groups", 2),
        ("group", "group = word 0 mod groups"),
        ("constants", {"buckets": 8, "keep": 1, "rows": 3, "words": 1}),
        ("words_per_report", 5),
        ("report", "linear-hash"),
        ("hash", None),
        ("strings", {"encoding": "latin-1"}),
        ("epsilon", 3.0),
        ("implemented_epsilon", "inf"),
    ],
)
def test_spec_refuses_a_tampered_field_by_name(field: str, value: Any) -> None:
    spec = heavy_spec(PROTOCOLS[0])
    with pytest.raises(DataError, match=f"`{field}`"):
        heavy_from_spec({**spec, field: value})


def test_parameter_type_error_reads_as_one_sentence() -> None:
    # the constructor's ParameterTypeError ends with a full stop; the spec's message adds none
    spec = heavy_spec(PROTOCOLS[0])
    with pytest.raises(DataError) as err:
        heavy_from_spec({**spec, "parameters": {**spec["parameters"], "max_bytes": "3/2"}})
    message = str(err.value)
    assert "does not fit 'pem': `max_bytes` must be an integer" in message
    assert message.endswith("1.5.") and not message.endswith("..")


def test_spec_refuses_unknown_missing_and_bad_mechanism_or_parameters() -> None:
    spec = heavy_spec(PROTOCOLS[0])
    with pytest.raises(DataError, match="unknown spec field `extra`"):
        heavy_from_spec({**spec, "extra": 1})
    with pytest.raises(DataError, match="spec field `levels` is missing"):
        heavy_from_spec({k: x for k, x in spec.items() if k != "levels"})
    with pytest.raises(DataError, match="`mechanism` must be one of pem, treehist, got 'cms'"):
        heavy_from_spec({**spec, "mechanism": "cms"})
    with pytest.raises(DataError, match=r"`parameters`.*does not fit 'treehist'"):
        heavy_from_spec({**heavy_spec(PROTOCOLS[2]), "parameters": spec["parameters"]})
    with pytest.raises(DataError, match=r"`parameters`.*max_bytes"):
        bad = {**spec["parameters"], "max_bytes": 65}
        heavy_from_spec({**spec, "parameters": bad})
    with pytest.raises(DataError, match=r"`parameters` does not fit 'pem'"):
        heavy_from_spec({**spec, "parameters": {**spec["parameters"], "top_k": 3}})  # server's
    with pytest.raises(DataError, match="spec field `parameters` does not match"):
        heavy_from_spec({**spec, "parameters": {k: x for k, x in spec["parameters"].items()
                                                if k != "g"}})  # fmt: skip
    with pytest.raises(DataError, match="JSON"):
        heavy_from_spec("{not json")
    with pytest.raises(ParameterTypeError, match="`protocol` must be a PEM or a TreeHist"):
        heavy_spec(CMS(k=3, m=10, epsilon=2.0))  # type: ignore[arg-type]


def test_device_groups_are_uniform_and_independent_of_the_string() -> None:
    # G = 3 (not a power of two): chi-square of the group counts of two strings, each
    # against uniform; false-alarm rate 1e-3 a test (fixed seed)
    pem = PROTOCOLS[0]
    for value, seed in (("hi", 11), ("yo", 12)):
        records = heavy_device_records(pem, [value] * 30_000, rng=seed)
        counts = np.bincount(records[:, 0].astype(np.int64), minlength=3)
        assert counts.size == 3
        assert stats.chisquare(counts).pvalue > 1e-3


def test_device_reports_find_the_planted_strings_and_nothing_under_the_null() -> None:
    pem = PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=8, top_k=4)
    items = ["hi"] * 3000 + ["yo"] * 2000 + [chr(97 + i % 26) * 2 for i in range(5000)]
    found = pem.estimate(heavy_from_records(pem, heavy_device_records(pem, items, rng=5)))
    assert found.strings[:2] == ("hi", "yo")
    assert abs(found.frequencies[0] - 0.3) < 5 * found.se[0]
    # the null for whole strings: 10,000 distinct strings of frequency 1e-4 each; a round
    # keeps a prefix no device holds with probability <= alpha = 0.05 (Bonferroni), so a
    # string nobody holds is listed with probability <= 0.05 (the false-alarm rate of this
    # seeded check)
    null = [f"{i:04d}" for i in range(10_000)]
    quiet = PEM(epsilon=1.0, max_bytes=4, start_bits=8, step_bits=8, top_k=4)
    out = quiet.estimate(heavy_from_records(quiet, heavy_device_records(quiet, null, rng=6)))
    assert set(out.strings) <= set(null)
    assert all(f < 0.05 for f in out.frequencies)  # none is reported frequent


def test_device_rule_refuses_bad_strings_by_name() -> None:
    pem = PROTOCOLS[0]
    with pytest.raises(DataError, match=r"`items\[1\]` must be a non-empty string"):
        heavy_device_records(pem, ["a", ""], rng=1)
    with pytest.raises(DataError, match=r"`items\[0\]` must be at most max_bytes = 2"):
        heavy_device_records(pem, ["abc"], rng=1)
    with pytest.raises(DataError, match="NUL"):
        heavy_device_records(pem, ["a\x00"], rng=1)
    with pytest.raises(DataError, match="UTF-8"):
        heavy_device_records(pem, [b"\xff"], rng=1)
    with pytest.raises(ParameterTypeError, match="`protocol`"):
        heavy_device_records("pem", ["a"], rng=1)  # type: ignore[arg-type]
