"""One permanent stage per device across every longitudinal oracle (L-GRR, L-SUE, L-OUE,
L-OSUE and LOLOHA): a device holding the PRRs of one stage is refused by any other, whatever
the family, the value or the order, and nothing is stored; the same stage replays; and
LOLOHA's kept seeds are read without drawing a word."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from deniable.exceptions import PrivacyError
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import LGRR, LOLOHA, LOSUE, LOUE, LSUE

MAKERS: dict[str, Callable[[], Any]] = {
    "l-grr": lambda: LGRR.from_epsilon(2.0, 6, eps_1=1.0),
    "l-sue": lambda: LSUE.from_epsilon(2.0, 6, eps_1=1.0),
    "l-oue": lambda: LOUE.from_epsilon(2.0, 6, eps_1=1.0),
    "loloha": lambda: LOLOHA.from_epsilon(2.0, 6, eps_1=1.0, g=3),
}
#: Every ordered pair of stages that differ (L-OUE and L-OSUE at one eps_inf share a PRR).
PAIRS = [(a, b) for a in MAKERS for b in MAKERS if a != b]


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=[f"{a}-then-{b}" for a, b in PAIRS])
def test_another_family_is_refused_for_the_same_value(first: str, second: str) -> None:
    """The case of the issue (LOLOHA then L-GRR, and every other pair in both orders): the
    second family would draw a second PRR of value 2 for device 'a'; it is refused, naming
    the stage the device holds, and stores nothing (the first stage still replays)."""
    store = InMemoryMemoStore()
    held, other = MAKERS[first](), MAKERS[second]()
    dev = np.array(["a"], dtype=object)
    kept = held._memoized(np.array([2]), dev, store, np.random.default_rng(1))
    before = repr(store)  # every question and how many devices it holds
    with pytest.raises(PrivacyError, match=r"'a' holds .*" + re.escape(held.permanent_key)) as err:
        other.randomize([2], rng=2, memo=store, devices=["a"])
    assert other.name in str(err.value) and "second PRR" in str(err.value)
    assert repr(store) == before  # nothing of the refused stage was stored
    again = held._memoized(np.array([2]), dev, store, None)
    np.testing.assert_array_equal(again, kept)


@pytest.mark.parametrize(("first", "second"), [("l-grr", "loloha"), ("loloha", "l-oue")])
def test_another_stage_is_refused_for_another_value_too(first: str, second: str) -> None:
    """The rule is per device, not per value: a device with a PRR of value 0 is refused
    another stage for value 5, so every PRR it holds is of the one stage whose bound
    (min(d eps_inf, r eps_1)) the oracle states.  Another device is not affected."""
    store = InMemoryMemoStore()
    MAKERS[first]().randomize([0], rng=1, memo=store, devices=["a"])
    with pytest.raises(PrivacyError, match="longitudinal/permanent"):
        MAKERS[second]().randomize([5], rng=2, memo=store, devices=["a"])
    MAKERS[second]().randomize([5], rng=2, memo=store, devices=["b"])


def test_another_stage_of_the_same_family_is_refused_across_values() -> None:
    store = InMemoryMemoStore()
    LGRR.from_epsilon(2.0, 6).randomize([1], rng=1, memo=store, devices=[5])
    with pytest.raises(PrivacyError, match="second PRR"):
        LGRR.from_epsilon(3.0, 6).randomize([4], rng=2, memo=store, devices=[5])


def test_a_refused_batch_pins_none_of_its_devices() -> None:
    """One device of a batch holds another stage: the batch is refused whole, and the fresh
    devices of it stay free for either stage."""
    store = InMemoryMemoStore()
    LOLOHA.from_epsilon(2.0, 6, eps_1=1.0, g=3).randomize([2], rng=1, memo=store, devices=[1])
    lgrr = LGRR.from_epsilon(2.0, 6, eps_1=1.0)
    with pytest.raises(PrivacyError, match="respondent 1 holds"):
        lgrr.randomize([3, 2, 0], rng=2, memo=store, devices=[7, 1, 8])
    LOLOHA.from_epsilon(2.0, 6, eps_1=1.0, g=3).randomize([3, 0], rng=3, memo=store, devices=[7, 8])


def test_the_same_stage_replays_across_values_irrs_and_families_that_share_it() -> None:
    """The same family and PRR parameters replay for any value and IRR; L-OUE and L-OSUE
    at one eps_inf draw the same OUE PRR, so they share a device."""
    store = InMemoryMemoStore()
    keys = np.array(["a", "b"], dtype=object)
    o = LOLOHA.from_epsilon(2.0, 6, eps_1=1.0, g=3)
    gen = np.random.default_rng(4)
    first = [o._memoized(np.array([v, v]), keys, store, gen) for v in range(6)]
    other_irr = LOLOHA.from_epsilon(2.0, 6, eps_1=0.5, g=3)
    for v in range(6):
        np.testing.assert_array_equal(
            other_irr._memoized(np.array([v, v]), keys, store.snapshot(), None), first[v]
        )
    LOUE.from_epsilon(2.0, 6, eps_1=1.0).randomize([1], rng=1, memo=store, devices=["c"])
    LOSUE.from_epsilon(2.0, 6, eps_1=1.0).randomize([4], rng=2, memo=store, devices=["c"])


def test_two_stages_racing_for_new_devices_are_decided_at_the_pin() -> None:
    """L-GRR and LOLOHA start at once on the same 500 new devices and one store: exactly one
    succeeds, and the devices hold PRRs of that one only (whatever the interleaving)."""
    store = InMemoryMemoStore()
    devices = np.arange(500)
    oracles = [MAKERS["l-grr"](), MAKERS["loloha"]()]
    barrier = threading.Barrier(2)
    outcome: list[str] = ["", ""]

    def run(i: int) -> None:
        barrier.wait()
        try:
            oracles[i].randomize(np.full(500, 2), rng=i, memo=store, devices=devices)
            outcome[i] = "ok"
        except PrivacyError:
            outcome[i] = "refused"

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcome) == ["ok", "refused"]
    held = repr(store)  # the winner's questions only (L-GRR's of value 2, or LOLOHA's)
    assert ("longitudinal/prr/2/0" in held) is (outcome[0] == "ok")
    assert ("loloha/" in held) is (outcome[1] == "ok")


def test_loloha_reads_kept_seeds_without_drawing() -> None:
    """Once a device's seeds are kept, `seeds` and a replay take no word: `gen=None` works
    (it raised AttributeError: words were asked for zero missing seeds)."""
    o = LOLOHA.from_epsilon(2.0, 6, eps_1=1.0, g=3)
    store = InMemoryMemoStore()
    keys = np.array(["a", 9], dtype=object)
    first = o.randomize([1, 4], rng=1, memo=store, devices=keys)
    np.testing.assert_array_equal(o.seeds(store, keys, None), first[:, :2])
    prr = o._memoized(np.array([1, 4]), keys, store, None)
    np.testing.assert_array_equal(prr[:, :2], first[:, :2])
