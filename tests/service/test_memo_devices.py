"""Device state over time in the service's SQL memo store (SQLite and PostgreSQL): the
memoized counters (DBitFlipMemo, OneBitMeanMemo) and the longitudinal oracles (L-GRR, L-SUE,
L-OUE, L-OSUE, LOLOHA) replay a device's permanent state after a restart (a new store
object on the same database), refuse another mechanism, and give calls at once one memo."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from deniable.exceptions import PrivacyError
from deniable.oracles import (
    LGRR,
    LOLOHA,
    LOSUE,
    LOUE,
    LSUE,
    DBitFlipMemo,
    DBitFlipPM,
    OneBitMean,
    OneBitMeanMemo,
)
from deniable.service.storage import SqlMemoStore


@pytest.fixture
def open_store(fresh_db: Callable[[], str]) -> Iterator[Callable[[str], SqlMemoStore]]:
    made: list[SqlMemoStore] = []

    def open_(url: str) -> SqlMemoStore:
        made.append(SqlMemoStore(url))
        return made[-1]

    yield open_
    for s in made:
        s.engine.dispose()


def test_counters_replay_their_state_after_a_restart(
    fresh_db: Callable[[], str], open_store: Callable[[str], SqlMemoStore]
) -> None:
    url = fresh_db()
    mech = DBitFlipPM(1.0, k=64, b=16, d=4)  # two chunks of buckets a device
    onebit = OneBitMean(1.0, upper=10.0, s=8)
    devices = ["phone", 10**15, "tablet", 3]
    days = [[0, 20, 63, 5], [1, 40, 63, 5], [60, 20, 0, 5]]
    before = DBitFlipMemo(mech, open_store(url))
    means = OneBitMeanMemo(onebit, open_store(url))
    first = [before.report(devices, day, rng=i) for i, day in enumerate(days)]
    bits = [means.report(devices, [3.3, 0.0, 9.9, 5.0], rng=i) for i in range(2)]
    eps = before.realized_epsilons(devices)
    assert eps.tolist() == [2.0, 2.0, 2.0, 1.0]  # distinct buckets: 2, 2, 2, 1
    # a restart: new store objects on the same database, other seeds
    after = DBitFlipMemo(mech, open_store(url))
    for i, day in enumerate(days):
        again = after.report(devices, day, rng=100 + i)
        np.testing.assert_array_equal(again.buckets, first[i].buckets)
        np.testing.assert_array_equal(again.bits, first[i].bits)
    np.testing.assert_array_equal(after.realized_epsilons(devices), eps)
    assert after.realized_epsilon("phone") == 2.0
    restarted = OneBitMeanMemo(onebit, open_store(url))
    np.testing.assert_array_equal(restarted.report(devices, [3.3, 0.0, 9.9, 5.0], rng=7), bits[0])
    assert [restarted.alpha(x) for x in devices] == [means.alpha(x) for x in devices]
    # on the SQL store, as in memory, another mechanism is refused for a device with state
    with pytest.raises(PrivacyError, match="refused"):
        DBitFlipMemo(DBitFlipPM(2.0, k=64, b=16, d=4), open_store(url)).report(["phone"], [0])
    with pytest.raises(PrivacyError, match="refused"):
        OneBitMeanMemo(OneBitMean(1.0, upper=10.0, s=4), open_store(url)).report([3], [5.0])
    assert after.distinct_buckets("phone") == 2  # nothing changed by the refusals


def test_calls_at_once_on_separate_connections_get_one_memo(
    fresh_db: Callable[[], str], open_store: Callable[[str], SqlMemoStore]
) -> None:
    url = fresh_db()
    mech = DBitFlipPM(1.0, k=64, b=16, d=4)
    memos = [DBitFlipMemo(mech, open_store(url)) for _ in range(4)]
    devices = list(range(200))
    barrier = threading.Barrier(len(memos))
    got: list[Any] = [None] * len(memos)

    def run(i: int) -> None:
        barrier.wait()
        got[i] = memos[i].report(devices, np.full(200, 33), rng=i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(memos))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g in got[1:]:
        np.testing.assert_array_equal(g.buckets, got[0].buckets)
        np.testing.assert_array_equal(g.bits, got[0].bits)
    assert (np.diff(np.sort(got[0].buckets, axis=1), axis=1) > 0).all()


_LONGITUDINAL = [
    lambda: LGRR.from_epsilon(2.0, 6, eps_1=1.0),
    lambda: LSUE.from_epsilon(2.0, 6, eps_1=1.0),
    lambda: LOUE.from_epsilon(2.0, 6, eps_1=1.0),
    lambda: LOSUE.from_epsilon(2.0, 6, eps_1=1.0),
    lambda: LOLOHA.from_epsilon(2.0, 6, eps_1=1.0, g=3),
]


@pytest.mark.parametrize("make", _LONGITUDINAL, ids=["lgrr", "lsue", "loue", "losue", "loloha"])
def test_longitudinal_oracles_replay_permanent_reports_after_a_restart(
    make: Callable[[], Any],
    fresh_db: Callable[[], str],
    open_store: Callable[[str], SqlMemoStore],
) -> None:
    url = fresh_db()
    oracle = make()
    devices = np.array(["a", "b", 7, 8], dtype=object)
    values = np.array([0, 5, 2, 2])
    oracle.randomize(values, rng=1, memo=open_store(url), devices=devices)
    prr = oracle._memoized(values, devices, open_store(url), np.random.default_rng(2))
    # a new oracle object and a new store object on the same database (a restart)
    again = make()._memoized(values, devices, open_store(url), np.random.default_rng(3))
    np.testing.assert_array_equal(again, prr)
    snapshot = open_store(url).snapshot()  # what is stored is what replays
    np.testing.assert_array_equal(
        make()._memoized(values, devices, snapshot, np.random.default_rng(4)), prr
    )
    # another permanent stage of the same family is refused for these devices
    other = make().__class__.from_epsilon(
        3.0, 6, eps_1=1.0, **({"g": 4} if isinstance(oracle, LOLOHA) else {})
    )
    with pytest.raises(PrivacyError):
        other.randomize(values, rng=4, memo=open_store(url), devices=devices)


@pytest.mark.parametrize(
    "loloha_first", [True, False], ids=["loloha-then-lgrr", "lgrr-then-loloha"]
)
def test_one_permanent_stage_per_device_across_longitudinal_families(
    loloha_first: bool,
    fresh_db: Callable[[], str],
    open_store: Callable[[str], SqlMemoStore],
) -> None:
    """LOLOHA keeps its PRRs under questions of its own, L-GRR under the value's: on the SQL
    store too (here after a restart), a device holding one family's PRR of value 2 is
    refused the other's, naming the stage it holds, and nothing is stored."""
    url = fresh_db()
    loloha = LOLOHA.from_epsilon(2.0, 6, eps_1=1.0, g=3)
    lgrr = LGRR.from_epsilon(2.0, 6, eps_1=1.0)
    held, other = (loloha, lgrr) if loloha_first else (lgrr, loloha)
    devices = np.array(["a", 7], dtype=object)
    kept = held._memoized(np.array([2, 2]), devices, open_store(url), np.random.default_rng(1))
    with pytest.raises(PrivacyError, match="'a' holds .*" + re.escape(held.permanent_key)):
        other.randomize([2, 2], rng=2, memo=open_store(url), devices=devices)
    stored = repr(open_store(url).snapshot())  # the held family's questions only
    assert ("longitudinal/prr/2/0" in stored) is not loloha_first
    assert ("loloha/" in stored) is loloha_first
    again = held._memoized(np.array([2, 2]), devices, open_store(url), None)
    np.testing.assert_array_equal(again, kept)
