"""Device state of the memoized counters (DBitFlipMemo, OneBitMeanMemo) in a memo store:
seeded outputs equal a per-device reference, pinning to the mechanism's key, one memo under
concurrent calls, bad input refused with nothing stored.  The SQL stores (restart) are
tested in tests/service/test_memo_devices.py."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import pytest

from deniable.exceptions import DataError, ParameterTypeError, PrivacyError
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import DBitFlipMemo, DBitFlipPM, OneBitMean, OneBitMeanMemo
from deniable.randomness import resolve_rng


class _ReferenceDBitFlip:
    """dBitFlipPM memoized one device at a time in dicts (the layout of the words: new
    devices' buckets drawn together in call order, then the fresh bits in call order)."""

    def __init__(self, mech: DBitFlipPM) -> None:
        self.mech = mech
        self.buckets: dict[Hashable, np.ndarray] = {}
        self.bits: dict[Hashable, dict[int, np.ndarray]] = {}

    def report(self, devices: list[Any], values: Any, rng: int) -> tuple[np.ndarray, np.ndarray]:
        gen = resolve_rng(rng)
        own = self.mech.bucket_of(values)
        new = [d for d in devices if d not in self.buckets]
        for d, row in zip(new, self.mech.sample_buckets(len(new), rng=gen), strict=True):
            self.buckets[d], self.bits[d] = row, {}
        fresh = [i for i, d in enumerate(devices) if int(own[i]) not in self.bits[devices[i]]]
        if fresh:
            sampled = np.stack([self.buckets[devices[i]] for i in fresh])
            drawn = self.mech._draw_bits(own[fresh], sampled, gen)
            for i, row in zip(fresh, drawn, strict=True):
                self.bits[devices[i]][int(own[i])] = row
        return (
            np.stack([self.buckets[d] for d in devices]),
            np.stack([self.bits[d][int(j)] for d, j in zip(devices, own, strict=True)]),
        )


@pytest.mark.parametrize("d", [1, 3, 4, 70])  # one chunk of buckets, two, 24 (and 2 of bits)
def test_seeded_fleet_equals_a_per_device_reference(d: int) -> None:
    mech = DBitFlipPM(1.0, k=300, b=100, d=d)
    memo, ref = DBitFlipMemo(mech, InMemoryMemoStore()), _ReferenceDBitFlip(mech)
    gen = np.random.default_rng(17)
    for day in range(6):
        devices = [int(x) for x in gen.permutation(400)[:250]]  # some new, some seen
        values = gen.integers(0, 300 if day % 2 else 20, 250)
        got = memo.report(devices, values, rng=day)
        buckets, bits = ref.report(devices, values, rng=day)
        np.testing.assert_array_equal(got.buckets, buckets)
        np.testing.assert_array_equal(got.bits, bits)
    everyone = list(range(400))
    distinct = [len(ref.bits.get(x, {})) for x in everyone]
    np.testing.assert_array_equal(memo.distinct_counts(everyone), distinct)
    np.testing.assert_allclose(
        memo.realized_epsilons(everyone), np.array(distinct) * mech.report_epsilon
    )


def test_seeded_onebitmean_equals_a_per_device_reference() -> None:
    mech = OneBitMean(1.0, upper=10.0, s=7)
    memo = OneBitMeanMemo(mech, InMemoryMemoStore())
    alpha: dict[int, float] = {}
    bits: dict[int, dict[int, int]] = {}
    gen = np.random.default_rng(18)
    for day in range(6):
        devices = [int(x) for x in gen.permutation(400)[:250]]
        values = gen.uniform(0, 10, 250)
        got = memo.report(devices, values, rng=day)
        word_gen = resolve_rng(day)
        new = [x for x in devices if x not in alpha]
        for x, a in zip(new, mech.draw_alpha(len(new), rng=word_gen), strict=True):
            alpha[x], bits[x] = float(a), {}
        points = mech.round_values(values, [alpha[x] for x in devices])
        fresh = [i for i, x in enumerate(devices) if int(points[i]) not in bits[x]]
        drawn = mech.randomize(mech.point_value(points[fresh]), rng=word_gen)
        for i, bit in zip(fresh, drawn, strict=True):
            bits[devices[i]][int(points[i])] = int(bit)
        want = [bits[x][int(r)] for x, r in zip(devices, points, strict=True)]
        np.testing.assert_array_equal(got, want)
    assert all(memo.alpha(x) == alpha[x] for x in alpha)
    everyone = list(range(400))
    np.testing.assert_array_equal(
        memo.distinct_counts(everyone), [len(bits.get(x, {})) for x in everyone]
    )


_DBITFLIP = DBitFlipPM(1.0, k=16, b=8, d=2)
_ONEBIT = OneBitMean(1.0, upper=10.0, s=10)


@pytest.mark.parametrize(
    "other",
    [
        DBitFlipPM(2.0, k=16, b=8, d=2),  # epsilon
        DBitFlipPM(1.0, k=32, b=8, d=2),  # k
        DBitFlipPM(1.0, k=16, b=4, d=2),  # b
        DBitFlipPM(1.0, k=16, b=8, d=3),  # d
    ],
    ids=["epsilon", "k", "b", "d"],
)
def test_dbitflip_state_is_only_given_to_the_mechanism_that_drew_it(other: DBitFlipPM) -> None:
    store = InMemoryMemoStore()
    DBitFlipMemo(_DBITFLIP, store).report(["a", "b"], [1, 9], rng=1)
    intruder = DBitFlipMemo(other, store)
    for day, value in enumerate([1, 15]):  # a bucket value seen, and a new one
        with pytest.raises(PrivacyError, match="refused"):
            intruder.report(["a"], [value], rng=day)
    with pytest.raises(PrivacyError):
        intruder.realized_epsilon("a")
    # a device with no state yet is served, and the first mechanism is still served
    assert len(intruder.report(["c"], [3], rng=3)) == 1
    assert DBitFlipMemo(_DBITFLIP, store).distinct_buckets("a") == 1


@pytest.mark.parametrize(
    "other",
    [
        OneBitMean(2.0, upper=10.0, s=10),  # epsilon
        OneBitMean(1.0, upper=20.0, s=10),  # the range
        OneBitMean(1.0, upper=10.0, s=5),  # the alpha-rounding grid
    ],
    ids=["epsilon", "range", "s"],
)
def test_onebitmean_state_is_only_given_to_the_mechanism_that_drew_it(other: OneBitMean) -> None:
    store = InMemoryMemoStore()
    OneBitMeanMemo(_ONEBIT, store).report(["a"], [3.0], rng=1)
    intruder = OneBitMeanMemo(other, store)
    with pytest.raises(PrivacyError, match="refused"):
        intruder.report(["a"], [3.0], rng=2)
    with pytest.raises(PrivacyError):
        intruder.alpha("a")
    # another name keeps another attribute of the same device apart
    assert OneBitMeanMemo(other, store, name="minutes").report(["a"], [3.0], rng=3).size == 1


def _at_once(calls: list[Callable[[], Any]]) -> list[Any]:
    barrier = threading.Barrier(len(calls))
    out: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        out[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


@pytest.mark.parametrize("store", [None, InMemoryMemoStore()], ids=["own", "in-memory"])
def test_calls_at_once_get_one_memo(store: Any) -> None:
    devices = list(range(300))
    mech = DBitFlipPM(1.0, k=64, b=16, d=5)  # two chunks of buckets per device
    memo = DBitFlipMemo(mech, store)
    got = _at_once([lambda r=r: memo.report(devices, np.full(300, 7), rng=r) for r in range(6)])
    for g in got[1:]:
        np.testing.assert_array_equal(g.buckets, got[0].buckets)
        np.testing.assert_array_equal(g.bits, got[0].bits)
    assert (np.diff(np.sort(got[0].buckets, axis=1), axis=1) > 0).all()
    assert memo.distinct_counts(devices).tolist() == [1] * 300
    onebit = OneBitMeanMemo(_ONEBIT, store)
    bits = _at_once(
        [lambda r=r: onebit.report(devices, np.full(300, 3.5), rng=r) for r in range(6)]
    )
    for b in bits[1:]:
        np.testing.assert_array_equal(b, bits[0])
    assert len({onebit.alpha(x) for x in devices}) == 300


def test_later_chunks_stored_by_another_call_continue_the_stored_buckets() -> None:
    # a device whose first chunk of buckets is stored but not the second (a concurrent
    # call stored the first) gets the rest drawn given the stored ones: d distinct buckets
    store = InMemoryMemoStore()
    mech = DBitFlipPM(1.0, k=8, b=8, d=6)
    memo = DBitFlipMemo(mech, store)
    devices = list(range(2_000))
    first = memo.report(devices, np.zeros(2_000, dtype=int), rng=1).buckets
    store.forget("dbitflip/buckets/1")
    again = memo.report(devices, np.zeros(2_000, dtype=int), rng=2).buckets
    np.testing.assert_array_equal(again[:, :3], first[:, :3])
    assert (np.diff(np.sort(again, axis=1), axis=1) > 0).all()
    assert not np.array_equal(again[:, 3:], first[:, 3:])  # drawn again, not replayed
    # every bucket not among the first three is drawn (about 2000 * 3 / 5 times each)
    rest = again[:, 3:]
    assert all(((rest == j) & (first[:, :3] != j).all(axis=1)[:, None]).any() for j in range(8))


def test_bad_input_is_refused_and_nothing_is_stored() -> None:
    store = InMemoryMemoStore()
    memo = DBitFlipMemo(_DBITFLIP, store)
    onebit = OneBitMeanMemo(_ONEBIT, store)
    for bad in ([["a"]], [{"x": 1}], [1.5]):  # not device keys
        with pytest.raises((ParameterTypeError, DataError), match="`devices`"):
            memo.report(bad, [0], rng=1)
        with pytest.raises((ParameterTypeError, DataError), match="`devices`"):
            onebit.report(bad, [1.0], rng=1)
    with pytest.raises(ParameterTypeError, match="`devices` must be a sequence"):
        memo.report("ab", [0, 1], rng=1)
    with pytest.raises(DataError, match="`devices`"):
        memo.report(["a", "a"], [0, 1], rng=1)
    with pytest.raises(DataError, match="`devices` must hold 2"):
        onebit.report(["a"], [1.0, 2.0], rng=1)
    with pytest.raises(DataError, match=r"`values` must hold integers in 0\.\.15, got one outside"):
        memo.report(["a"], [16], rng=1)
    with pytest.raises(DataError, match=r"`values` must be numbers in \[lower, upper\]"):
        onebit.report(["a"], [10.5], rng=1)
    assert repr(store) == "InMemoryMemoStore({})"  # nothing stored
    with pytest.raises(ParameterTypeError, match="`store` must be a MemoStore"):
        DBitFlipMemo(_DBITFLIP, {})
    with pytest.raises(ParameterTypeError, match="`store` must be a MemoStore"):
        OneBitMeanMemo(_ONEBIT, "sqlite:///x.db")
    with pytest.raises(ParameterTypeError, match="`name`"):
        DBitFlipMemo(_DBITFLIP, store, name="")


def test_state_the_counters_did_not_write_is_refused() -> None:
    # reports stored under a memo's questions with its key by something else: a bucket id
    # twice, a bit of 5; refused, never replayed as a report
    store = InMemoryMemoStore()
    keys = np.array(["a"], dtype=object)
    twice = (3 << 16) | 3  # the buckets (3, 3)
    store.get_or_create("dbitflip/buckets/0", keys, lambda m: [twice], mechanism=_DBITFLIP.key)
    with pytest.raises(DataError, match=r"not 2 distinct ids in 0\.\.7"):
        DBitFlipMemo(_DBITFLIP, store).report(["a"], [0], rng=1)
    point = OneBitMeanMemo(_ONEBIT, store)
    point.report(["b"], [0.0], rng=1)  # 0.0 rounds to grid point 0 whatever alpha
    store.forget("onebitmean/bit/0")
    store.get_or_create(
        "onebitmean/bit/0", np.array(["b"], dtype=object), lambda m: [5], mechanism=_ONEBIT.key
    )
    with pytest.raises(DataError, match="bits other than 0 and 1"):
        point.report(["b"], [0.0], rng=2)
