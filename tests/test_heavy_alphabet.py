"""PEM's and TreeHist's optional alphabet (oracles._prefix_alphabet): the valid prefixes
against an enumeration of every padded string, the alphabet's counts against direct support
counts, keys and specs with and without it, the per-device epsilon unchanged, bad input
refused by name, and recall and the null's false alarms with it."""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import pytest

from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles import (
    PEM,
    TreeHist,
    heavy_device_records,
    heavy_from_key,
    heavy_from_spec,
    heavy_key,
    heavy_spec,
)
from deniable.oracles._prefix_alphabet import check_alphabet, valid_prefixes
from deniable.oracles._prefix_extension import METHODS
from deniable.oracles._strings import encode_strings, extend_prefixes, prefix_mask


def _every_prefix(bits: int) -> np.ndarray:
    out = np.zeros((1 << bits, 1), dtype=np.uint64)
    out[:, 0] = np.arange(1 << bits, dtype=np.uint64) << np.uint64(64 - bits)
    return out


@pytest.mark.parametrize("alphabet", [b"ab", b"\x01\x80\xff", b"0123456789w"])
def test_valid_prefixes_are_the_prefixes_of_every_padded_string_over_the_alphabet(
    alphabet: bytes,
) -> None:
    """Every string of 1 or 2 bytes over the alphabet, NUL-padded to 2 bytes: the set of
    their prefixes of each length 1..16 bits is exactly what valid_prefixes accepts."""
    strings = [bytes(t) for n in (1, 2) for t in itertools.product(alphabet, repeat=n)]
    padded = [int.from_bytes(s.ljust(2, b"\x00"), "big") for s in strings]
    for bits in range(1, 17):
        want = {v >> (16 - bits) for v in padded}
        got = valid_prefixes(_every_prefix(bits), bits, alphabet)
        assert set(np.flatnonzero(got).tolist()) == want, bits


def test_check_alphabet_sorts_and_refuses_by_name() -> None:
    assert check_alphabet("w0123456789") == b"0123456789w"
    assert check_alphabet(b"ba\xc3\xbc") == check_alphabet("\u00fcab") == b"ab\xbc\xc3"
    assert check_alphabet(None) is None
    with pytest.raises(ParameterError, match="`alphabet` must hold at least one byte"):
        PEM(1.0, max_bytes=2, alphabet="")
    with pytest.raises(ParameterError, match="`alphabet` must not contain the NUL byte"):
        TreeHist(1.0, max_bytes=2, alphabet="a\x00")
    with pytest.raises(ParameterTypeError, match="`alphabet` must be a str, bytes or None"):
        PEM(1.0, max_bytes=2, alphabet=["a"])  # type: ignore[arg-type]


def _reports(pem: PEM, j: int, items: list[bytes], seed: int) -> Any:
    bits = pem.levels[j]
    x = encode_strings(items, pem.max_bytes) & prefix_mask(bits, pem.words)[None, :]
    oracle = pem.oracle(bits)
    return oracle.check_reports(oracle.randomize(x, rng=seed))


@pytest.mark.parametrize(
    ("epsilon", "start", "step"), [(1.0, 8, 8), (4.0, 8, 8), (2.0, 4, 4), (4.0, 5, 3), (7.0, 6, 7)]
)
def test_round_counts_with_an_alphabet_are_the_support_counts_of_its_candidates(
    epsilon: float, start: int, step: int
) -> None:
    """Round 0 and round 1 of an alphabet's protocol count exactly the candidates it lists
    (the valid ones, checked one by one against every report), for every method."""
    pem = PEM(epsilon, max_bytes=3, start_bits=start, step_bits=step, alphabet="abz\x7f~")
    rng = np.random.default_rng(3)
    letters = np.frombuffer(pem.symbols or b"", dtype=np.uint8)
    items = [bytes(rng.choice(letters, size=int(rng.integers(1, 4)))) for _ in range(3000)]
    items[:1000] = [b"ab"] * 1000  # a frequent prefix
    r0, r1 = _reports(pem, 0, items, 1), _reports(pem, 1, items, 2)
    first = pem.candidates(0)
    assert first.shape[0] == len(set(np.asarray(first)[:, 0].tolist()))
    assert pem.round_counts(0, r0, first, 0).tolist() == (
        pem.oracle(pem.levels[0]).support_counts(r0, first).tolist()
    )
    kept = first[:3]
    cands = pem.candidates(1, kept)
    every = extend_prefixes(kept, pem.levels[0], step)
    assert cands.shape[0] == int(valid_prefixes(every, pem.levels[1], pem.symbols or b"").sum())
    assert cands.shape[0] < every.shape[0]  # the alphabet narrows the candidates
    want = pem.oracle(pem.levels[1]).support_counts(r1, cands).tolist()
    assert pem.round_counts(1, r1, kept, step).tolist() == want
    oracle = pem.oracle(pem.levels[1])
    valid = valid_prefixes(every, pem.levels[1], pem.symbols or b"").reshape(kept.shape[0], -1)
    patterns = np.flatnonzero(valid.any(axis=0))
    full = oracle.support_counts(r1, every).reshape(kept.shape[0], -1)[:, patterns].ravel().tolist()
    for method in METHODS:
        if method == "packed" and pem.base.bucket_bits > 7:
            continue
        got = oracle.extension_counts(r1, kept, step, method=method, patterns=patterns)
        assert got.tolist() == full, method


def test_the_alphabet_is_in_the_key_and_spec_only_when_given() -> None:
    plain = PEM(epsilon=2.0, max_bytes=4, step_bits=8)
    assert plain.key == 'pem{"epsilon":"2","g":8,"max_bytes":4,"start_bits":8,"step_bits":8}'
    assert "alphabet" not in heavy_spec(plain)["strings"]
    assert heavy_key(TreeHist(epsilon=1.0, max_bytes=2)) == (
        'treehist{"epsilon":"1","g":4,"max_bytes":2}'
    )
    for proto in (PEM(2.0, max_bytes=4, alphabet="ba"), TreeHist(1.0, max_bytes=2, alphabet="ab")):
        assert '"alphabet":"6162"' in proto.key
        spec = heavy_spec(proto)
        assert spec["strings"]["alphabet"] == spec["parameters"]["alphabet"] == "6162"
        assert spec["schema"] == "deniable.heavy-spec/1"
        back = heavy_from_spec(json.dumps(spec))
        assert (back.key, back.symbols) == (proto.key, b"ab")
        assert heavy_from_key(proto.key).symbols == b"ab"
        # public configuration: the per-device epsilon is the oracle's, as without it
        assert (
            proto.epsilon_per_device
            == type(proto)(proto.epsilon, proto.max_bytes).epsilon_per_device
        )
        assert proto.epsilon_per_device == pytest.approx(proto.epsilon, rel=1e-12)


@pytest.mark.parametrize(
    ("where", "value", "match"),
    [
        ("parameters", "6261", "sorted distinct nonzero"),
        ("parameters", "61g2", "lowercase hex"),
        ("parameters", 6162, "lowercase hex"),
        ("parameters", "006162", "sorted distinct nonzero"),
        ("strings", "61", "`strings` does not match"),
        ("strings", None, "`strings` does not match"),
    ],
)
def test_a_spec_with_a_bad_or_inconsistent_alphabet_is_refused_by_name(
    where: str, value: Any, match: str
) -> None:
    spec = heavy_spec(PEM(2.0, max_bytes=4, alphabet="ab"))
    if value is None:
        del spec[where]["alphabet"]
    else:
        spec[where]["alphabet"] = value
    with pytest.raises(DataError, match=match):
        heavy_from_spec(spec)


def test_a_key_with_a_bad_alphabet_is_refused() -> None:
    key = 'pem{"alphabet":"6261","epsilon":"2","g":8,"max_bytes":4,"start_bits":8,"step_bits":4}'
    with pytest.raises(DataError, match="the alphabet of `key` must be"):
        heavy_from_key(key)


def test_a_string_outside_the_alphabet_is_refused_naming_it_and_the_position() -> None:
    pem = PEM(2.0, max_bytes=4, start_bits=8, step_bits=8, alphabet="ab")
    items = ["ab"] * 5 + ["abxa"] + ["ba"] * 5
    for call in (lambda: pem.randomize(items, rng=1),
                 lambda: heavy_device_records(pem, items, rng=1)):  # fmt: skip
        want = r"`items\[5\]` must hold only bytes of `alphabet`.*not at byte 2 \(the item is not"
        with pytest.raises(DataError, match=want):
            call()
    assert pem.randomize(["ab", "b", "a"] * 3, rng=1).n == 9


def test_recall_with_the_alphabet_and_no_false_discovery_under_the_null() -> None:
    """Planted: "w12" at 6%, "w7" at 4% among 30000 strings of "w" and 1 to 3 digits
    (the rest uniform: ~0.09% each); PEM eps = 2, alpha = 0.01, alphabet "w0123456789":
    both found in each of 3 seeded runs (their counts are ~15 standard deviations above the
    threshold, so the chance to miss is far below 1e-6).  Null (no planted string): a round
    keeps a candidate no device holds with probability at most alpha = 0.01, so over 3
    seeds x 4 rounds the (run, round) pairs that do are at most Binomial(12, 0.01): at
    most 2 allowed, false alarm P(>= 3) ~ 2e-4."""
    pem = PEM(2.0, max_bytes=4, start_bits=8, step_bits=8, top_k=32, alpha=0.01,
              alphabet="w0123456789")  # fmt: skip
    bad = 0
    for seed in range(3):
        rng = np.random.default_rng(50 + seed)
        size = rng.integers(1, 4, size=30_000)
        digits = rng.integers(0, 10, size=(30_000, 3))
        null = [b"w" + bytes((48 + d[:k]).tolist()) for d, k in zip(digits, size, strict=True)]
        planted = [b"w12"] * 1800 + [b"w7"] * 1200 + null[3000:]
        found = pem.run(planted, rng=seed)
        assert {"w12", "w7"} <= set(found.strings), found.strings
        held = {b: _held(null, b) for b in pem.levels}
        for r in pem.run(null, rng=100 + seed).rounds:
            bad += bool(set(r.prefixes) - held[r.bits])
    assert bad <= 2


def _held(items: list[bytes], bits: int) -> set[bytes]:
    words = encode_strings(items, 4) & prefix_mask(bits, 1)[None, :]
    raw = np.ascontiguousarray(words.astype(">u8")).view(np.uint8)[:, : -(-bits // 8)]
    return {row.tobytes() for row in raw}
