"""One memo protocol: :class:`deniable.accounting.MemoAccess` (``get_or_create`` and
``lookup``) is what the oracles' memoized randomizers accept, and
:class:`deniable.mechanisms.MemoStore` is it plus ``forget`` and ``snapshot``."""

from __future__ import annotations

from typing import Any

import pytest

from deniable.accounting import MemoAccess
from deniable.exceptions import ParameterTypeError
from deniable.mechanisms import InMemoryMemoStore, MemoStore
from deniable.oracles import LOUE, DBitFlipMemo, DBitFlipPM, Rappor, RapporClient


class TwoMethods:
    """Only the two methods of MemoAccess, delegated to an in-memory store."""

    def __init__(self) -> None:
        self._inner = InMemoryMemoStore()

    def get_or_create(self, question: str, keys: Any, create: Any, *, mechanism: str) -> Any:
        return self._inner.get_or_create(question, keys, create, mechanism=mechanism)

    def lookup(self, question: str, keys: Any, *, mechanism: str) -> Any:
        return self._inner.lookup(question, keys, mechanism=mechanism)


def test_memo_store_is_memo_access_and_more() -> None:
    assert isinstance(InMemoryMemoStore(), MemoAccess)
    assert isinstance(InMemoryMemoStore(), MemoStore)
    assert isinstance(TwoMethods(), MemoAccess)
    assert not isinstance(TwoMethods(), MemoStore)  # no forget, no snapshot
    assert not isinstance(object(), MemoAccess)


def test_every_oracle_memo_takes_the_two_methods() -> None:
    client = RapporClient(Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.25, q=0.75), TwoMethods())
    assert client.report([1, 2], ["x", "y"], rng=1).bits.shape == (2, 2)
    o = LOUE.from_epsilon(2.0, 4)
    memo = TwoMethods()
    first = o.randomize([1, 2], rng=1, memo=memo, devices=["a", "b"])
    again = o.randomize([1, 2], rng=2, memo=memo, devices=["a", "b"])
    assert first.shape == again.shape == (2, 1)
    counter = DBitFlipMemo(DBitFlipPM(1.0, k=8, b=4, d=2), TwoMethods())
    assert counter.store is not None


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (
            lambda s: RapporClient(Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.25, q=0.75), s),
            r"`store` must be a MemoStore .*got list\.",
        ),
        (
            lambda s: LOUE.from_epsilon(2.0, 4).randomize([1], memo=s, devices=["a"]),
            r"`memo` must be a MemoStore .*",
        ),
        (
            lambda s: DBitFlipMemo(DBitFlipPM(1.0, k=8, b=4, d=2), s),
            r"`store` must be a MemoStore .*or None, got list\.",
        ),
    ],
)
def test_anything_else_is_refused_naming_the_parameter(make: Any, match: str) -> None:
    with pytest.raises(ParameterTypeError, match=match):
        make([])
