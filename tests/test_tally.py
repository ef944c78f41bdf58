"""The Tally: an int64 array plus the mechanism's key; adds, refuses to mix, serializes."""

from __future__ import annotations

import json
import pickle
import struct
from typing import Any

import numpy as np
import pytest

from deniable.designs import Categorical, StochasticLieDetector, Tally, TwoCoin, Warner
from deniable.designs._tally import MAX_COUNT
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

W = Warner(0.75)


def test_counts_are_a_read_only_int64_copy() -> None:
    source = np.array([3, 4], dtype=np.int32)
    t = Tally(source)
    assert t.counts.dtype == np.int64 and t.counts.tolist() == [3, 4]
    source[0] = 99  # the tally holds its own copy
    assert t.counts.tolist() == [3, 4]
    with pytest.raises(ValueError, match="read-only"):
        t.counts[0] = 5
    with pytest.raises(AttributeError):
        t.mechanism = "x"  # type: ignore[misc]
    assert Tally((3, 4)) == Tally([3, 4]) == Tally(np.array([3.0, 4.0])) == t
    assert t.n == 7 and isinstance(t.n, int) and t.yes == 4 and isinstance(t.yes, int)


def test_large_python_integers_within_the_limit() -> None:
    t = Tally([MAX_COUNT - 5, 5])
    assert t.n == MAX_COUNT
    with pytest.raises(DataError, match=r"add up to at most 10\*\*18"):
        Tally([MAX_COUNT, 1])
    with pytest.raises(ParameterError, match=r"`counts\[1\]`"):
        Tally([0, 10**30])
    with pytest.raises(ParameterError, match=r"`counts\[0\]`"):
        Tally(np.array([2**63 + 1, 0], dtype=np.uint64))


@pytest.mark.parametrize(
    ("counts", "error", "needle"),
    [
        ([1], DataError, "at least 2"),
        ([[1, 2]], DataError, "one-dimensional"),
        ([1, -2], ParameterError, r"`counts\[1\]`"),
        ([1, 2.5], ParameterTypeError, r"`counts\[1\]`"),
        ([1, float("nan")], ParameterTypeError, r"`counts\[1\]`"),
        ([True, 2], ParameterTypeError, r"`counts\[0\]`"),
        (["1", 2], ParameterTypeError, r"`counts\[0\]`"),
        ("12", ParameterTypeError, "`counts`"),
        (5, ParameterTypeError, "`counts`"),
    ],
)
def test_bad_counts(counts: Any, error: type[Exception], needle: str) -> None:
    with pytest.raises(error, match=needle):
        Tally(counts)


def test_bound_and_unbound() -> None:
    t = W.tally([0, 1, 1])
    assert t.mechanism == W.key == 'warner{"p":"3/4"}'
    hand = Tally([1, 2])
    assert hand.mechanism is None and hand != t  # same counts, different identity
    assert W.bind(hand) == t == W.tally_counts([1, 2]) == hand.bind(W.key)
    assert W.bind(t) is t
    with pytest.raises(DataError, match="belongs to mechanism"):
        TwoCoin().bind(t)
    with pytest.raises(DataError, match="3 report values"):
        W.bind(Tally([1, 2, 3]))
    with pytest.raises(ParameterTypeError, match="`mechanism`"):
        Tally([1, 2], mechanism=3)  # type: ignore[arg-type]


def test_adding() -> None:
    a, b = W.tally([0, 1]), W.tally([1, 1, 1])
    assert (a + b).counts.tolist() == [1, 4] and (a + b).mechanism == W.key
    assert sum([a, b, a]) == a + b + a
    assert sum([Tally([1, 2]), Tally([3, 4])]) == Tally([4, 6])  # unbound tallies add too
    with pytest.raises(TypeError):
        sum([a], start=1)  # only 0 starts a sum
    with pytest.raises(DataError, match="different mechanisms") as err:
        _ = a + TwoCoin().tally([0, 1])
    assert W.key in str(err.value) and TwoCoin().key in str(err.value)
    with pytest.raises(DataError, match=r"design\.bind\(tally\)"):
        _ = a + Tally([1, 1])
    with pytest.raises(DataError, match=r"design\.bind\(tally\)"):
        _ = Tally([1, 1]) + a
    big = W.tally_counts([MAX_COUNT // 2, MAX_COUNT // 2])
    with pytest.raises(DataError, match="at most 10"):
        _ = big + W.tally_counts([1, 0])


def test_a_categorical_tally_does_not_add_to_a_two_group_tally() -> None:
    # the bug this identity fixes: a k = 4 categorical tally plus a two-group tally silently
    # gave a two-group tally
    cat = Categorical(k=4, p_truthful=0.5).tally([0, 1, 2, 3])
    sld = StochasticLieDetector(2 / 12, 10 / 12).tally([0, 1, 2, 3])
    with pytest.raises(DataError, match="different mechanisms"):
        _ = cat + sld


def test_equality_and_hash() -> None:
    a, b = W.tally([0, 1]), W.tally([1, 0])
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert Tally([1, 1]) != a and hash(Tally([1, 1])) != hash(a)
    assert a != (1, 1) and a.__eq__((1, 1)) is NotImplemented
    assert repr(a) == 'Tally([1, 1], mechanism=\'warner{"p":"3/4"}\')'
    assert repr(Tally([1, 2])) == "Tally([1, 2])"


@pytest.mark.parametrize("t", [Tally([5, 0, 7]), W.tally([0, 1, 1, 1]), Tally([0, 10**18])])
def test_serial_forms_round_trip(t: Tally) -> None:
    assert Tally.from_json(t.to_json()) == t
    assert Tally.from_dict(t.to_dict()) == t
    assert Tally.from_bytes(t.to_bytes()) == t
    assert pickle.loads(pickle.dumps(t)) == t
    assert json.loads(t.to_json()) == {
        "schema": "deniable.tally/1",
        "mechanism": t.mechanism,
        "counts": t.counts.tolist(),
    }
    raw = t.to_bytes()
    assert raw[:4] == b"DNTL" and raw.endswith(t.counts.astype("<i8").tobytes())
    assert len(raw) == 4 + 2 + 1 + 4 + len((t.mechanism or "").encode()) + 8 + 8 * t.counts.size


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"schema": "deniable.tally/2", "mechanism": None, "counts": [1, 2]}, "`schema`"),
        ({"schema": "deniable.tally/1", "counts": [1, 2]}, "exactly the fields"),
        ({"schema": "deniable.tally/1", "mechanism": 3, "counts": [1, 2]}, "`mechanism`"),
        ({"schema": "deniable.tally/1", "mechanism": None, "counts": [1, -2]}, r"counts\[1\]"),
        ({"schema": "deniable.tally/1", "mechanism": None, "counts": [1, 2.0]}, "whole numbers"),
        ({"schema": "deniable.tally/1", "mechanism": None, "counts": [1, True]}, "whole numbers"),
        ({"schema": "deniable.tally/1", "mechanism": None, "counts": "12"}, "whole numbers"),
        ({"schema": "deniable.tally/1", "mechanism": None, "counts": [1]}, "at least 2"),
        ([1, 2], "mapping"),
    ],
)
def test_from_dict_refuses_malformed_data(data: Any, needle: str) -> None:
    with pytest.raises(DataError, match=needle):
        Tally.from_dict(data)


def test_from_json_refuses_text_that_is_not_json() -> None:
    with pytest.raises(DataError, match="JSON"):
        Tally.from_json("{counts: [1, 2]")


def _header(magic: bytes = b"DNTL", version: int = 1, flags: int = 0, key: bytes = b"") -> bytes:
    return struct.pack("<4sHBI", magic, version, flags, len(key)) + key


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"DN", "at least"),
        (_header(magic=b"XXXX") + struct.pack("<Q", 2) + bytes(16), "magic"),
        (_header(version=2) + struct.pack("<Q", 2) + bytes(16), "version 2"),
        (_header(flags=2) + struct.pack("<Q", 2) + bytes(16), "flags"),
        (_header() + struct.pack("<Q", 3) + bytes(16), "expected 8 \\* 3"),
        (_header() + struct.pack("<Q", 2) + bytes(17), "expected 8 \\* 2"),
        (_header(flags=1, key=b"\xff\xfe") + struct.pack("<Q", 2) + bytes(16), "UTF-8"),
        (_header(flags=1, key=b"abc"), "truncated"),
        (_header() + struct.pack("<Q", 2) + struct.pack("<2q", 1, -1), r"counts\[1\]"),
        (_header() + struct.pack("<Q", 1) + struct.pack("<q", 1), "at least 2"),
    ],
)
def test_from_bytes_refuses_malformed_data(data: bytes, needle: str) -> None:
    with pytest.raises(DataError, match=needle):
        Tally.from_bytes(data)


def test_from_reports_is_blockwise_bincount_with_the_key() -> None:
    from deniable.randomness import CHUNK

    gen = np.random.default_rng(1)
    reports = gen.integers(0, 5, 2 * CHUNK + 17)
    t = Tally.from_reports(reports, 5, mechanism="m{}")
    assert t.counts.tolist() == np.bincount(reports, minlength=5).tolist()
    assert t.mechanism == "m{}" and t.n == reports.size
    assert Tally.from_reports(np.zeros(0, dtype=np.uint8)).counts.tolist() == [0, 0]
