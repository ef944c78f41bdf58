"""The in-memory stores: the store contract (tests/_store_contract.py), then what is
particular to keeping keys and budgets in this process's memory."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _store_contract import LedgerStoreContract, M, MemoStoreContract, keys, request
from deniable.accounting import (
    BudgetLedger,
    InMemoryLedgerStore,
    PureEpsilonComposition,
    ZCDPComposition,
)
from deniable.accounting._keys import KeyIndex, respondent_keys
from deniable.designs import Warner
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError
from deniable.mechanisms import InMemoryMemoStore, MemoizedRandomizer


class TestInMemoryLedgerStore(LedgerStoreContract):
    @pytest.fixture
    def make_store(self) -> Callable[[], InMemoryLedgerStore]:
        return InMemoryLedgerStore


class TestInMemoryMemoStore(MemoStoreContract):
    @pytest.fixture
    def make_store(self) -> Callable[[], InMemoryMemoStore]:
        return InMemoryMemoStore


# --------------------------------------------------------------------------- memory


def test_a_huge_or_sparse_id_costs_what_a_small_one_does() -> None:
    """The old ledger and memo allocated arrays up to the largest id (id 99,999,999: about
    800 MB per question); the stores keep one entry per respondent whatever the id."""
    sizes = []
    for rid in (0, 99_999_999, 2**62, 2**70, "a" * 40):
        ledger = BudgetLedger(cap=1.0)
        ledger.spend([rid], "q", 0.5)
        ledger.spend([rid], "r", 0.25)
        memo = MemoizedRandomizer(Warner(0.75))
        memo.randomize([rid], [1], question="q", rng=1)
        ledger_bytes = ledger.store.nbytes  # type: ignore[attr-defined]
        memo_bytes = memo.store.nbytes  # type: ignore[attr-defined]
        assert ledger_bytes < 1_000 and memo_bytes < 1_000, (rid, ledger_bytes, memo_bytes)
        sizes.append((ledger_bytes, memo_bytes))
    assert sizes[1] == sizes[0]  # id 99,999,999 exactly as id 0
    # a million ids spread over [0, 10**12): memory linear in their number
    ids = np.random.default_rng(3).choice(10**12, size=100_000, replace=False)
    ledger = BudgetLedger(cap=1.0)
    ledger.spend(ids, "q", 0.5)
    assert ledger.store.nbytes < 64 * ids.size  # type: ignore[attr-defined]
    assert ledger.spent(ids[::1000]).tolist() == [0.5] * 100


def test_a_closed_ledger_of_many_ids_allocates_only_for_those_charged() -> None:
    ledger = BudgetLedger(cap=1.0, n_respondents=10**9)
    ledger.spend([999_999_999], "q", 0.5)
    assert ledger.store.nbytes < 1_000  # type: ignore[attr-defined]
    d = ledger.to_dict()
    assert (d["n_respondents"], d["spent_min"], d["spent_max"]) == (10**9, 0.0, 0.5)
    assert d["spent_mean"] == pytest.approx(0.5e-9, rel=1e-12)


# --------------------------------------------------------------------------- keys


@pytest.mark.parametrize(
    ("given", "dtype", "expect"),
    [
        ([3, 1, 2], np.int64, [3, 1, 2]),
        (np.array([5, 6], dtype=np.uint8), np.int64, [5, 6]),
        (np.array([2**64 - 1], dtype=np.uint64), object, [2**64 - 1]),
        ([2**70, 1], object, [2**70, 1]),
        (["b", "a"], object, ["b", "a"]),
        (np.array(["x", "yy"]), object, ["x", "yy"]),
        ([1, "1"], object, [1, "1"]),  # numpy alone would make both "1"
        ([b"k", "k"], object, [b"k", "k"]),
        (np.int32(4), np.int64, [4]),
        ("token", object, ["token"]),
        (range(2, 5), np.int64, [2, 3, 4]),
        ((k for k in ["a", 1]), object, ["a", 1]),
        (("a", "b"), object, ["a", "b"]),
        ([], np.int64, []),
    ],
)
def test_respondent_keys_canonical_forms(given: Any, dtype: Any, expect: list[Any]) -> None:
    out = respondent_keys(given, unique=True)
    assert out.dtype == dtype and out.tolist() == expect
    assert [type(k) for k in out.tolist()] == [type(k) for k in expect]


@pytest.mark.parametrize(
    ("given", "error", "match"),
    [
        ([None], ParameterTypeError, "not None"),
        ([0, None], ParameterTypeError, "not None"),
        ([True], ParameterTypeError, "booleans"),
        ([1, True], ParameterTypeError, "got True"),
        ([1.0], ParameterTypeError, "dtype float64"),
        ([1, float("nan")], ParameterTypeError, "float"),
        (["a", 1.5], ParameterTypeError, "float 1.5"),
        (["a", ["b"]], ParameterTypeError, "unhashable list"),
        ([{"a": 1}], ParameterTypeError, "unhashable dict"),
        ([[0, 1]], DataError, "1-D"),
        (["a", "a"], DataError, "got 'a' twice"),
        ([7, 8, 7], DataError, "got 7 twice"),
    ],
)
def test_respondent_keys_bad_input(given: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match) as info:
        respondent_keys(given, unique=True)
    assert "`respondents`" in str(info.value)


def test_key_index_dense_and_sparse_paths_agree() -> None:
    gen = np.random.default_rng(5)
    dense, sparse, model = KeyIndex(), KeyIndex(), {}
    for step in range(30):
        batch = gen.choice(3000, size=int(gen.integers(1, 200)), replace=False)
        for index, offset in ((dense, 0), (sparse, 10**15)):
            k = respondent_keys(batch * (1 if offset == 0 else 10**9) + offset, unique=True)
            found = index.find(k)
            index.add(k, found)
        for x in batch.tolist():
            model.setdefault(x, len(model))
        probe = np.arange(-5, 3005)
        expect = [model.get(int(x), -1) for x in probe]
        assert dense.find(probe).tolist() == expect, step
        assert sparse.find(probe * 10**9 + 10**15).tolist() == expect, step
    assert dense._table is not None or dense.find(np.arange(1)).size  # built on lookup
    assert dense._table is not None and sparse._table is None


def test_key_index_ascending_int_batches_take_the_dict_order() -> None:
    # an ascending batch of new int64 ids skips the sort (issue 17, part 5): the same dense
    # indices as a dict in insertion order, whether a batch is ascending, ascending with a
    # repeat (the sorting path), descending or shuffled, interleaved with the known keys
    gen = np.random.default_rng(17)
    index, model = KeyIndex(), {}
    batches = [
        np.arange(0, 4000, 2),
        np.arange(1, 4000, 4),
        np.array([5, 5, 7, 9000, 9000]),
        np.arange(10_000, 9000, -3),
        gen.permutation(12_000)[:3000],
        np.arange(0, 12_001),
    ]
    for batch in batches:
        ids = np.asarray(batch, dtype=np.int64)
        got = index.add(ids, index.find(ids))
        for x in ids.tolist():
            model.setdefault(x, len(model))
        assert got.tolist() == [model[x] for x in ids.tolist()]
    probe = np.arange(-3, 12_010)
    assert index.find(probe).tolist() == [model.get(int(x), -1) for x in probe]
    assert index.keys().tolist() == list(model)


def test_key_index_finds_many_unsorted_sparse_keys() -> None:
    # past 4096 unsorted keys the lookup sorts them first: same answers as a dict
    gen = np.random.default_rng(11)
    ids = gen.choice(10**15, size=20_000, replace=False)
    index = KeyIndex()
    index.add(ids[:10_000], index.find(ids[:10_000]))
    model = {int(x): i for i, x in enumerate(ids[:10_000])}
    probe = gen.permutation(ids)
    assert index.find(probe).tolist() == [model.get(int(x), -1) for x in probe]
    assert index._table is None


_KEY = st.one_of(
    st.integers(-(2**65), 2**65),
    st.integers(0, 50),
    st.text(max_size=3),
    st.binary(max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_KEY, max_size=12), max_size=8))
def test_property_key_index_is_a_dict_in_insertion_order(batches: list[list[Any]]) -> None:
    index, model = KeyIndex(), {}
    for batch in batches:
        k = respondent_keys(batch, unique=False)
        got = index.add(k, index.find(k))
        for x in k.tolist():
            model.setdefault(x, len(model))
        assert got.tolist() == [model[x] for x in k.tolist()]
    assert index.keys().tolist() == list(model)
    probe = respondent_keys([*model, "absent", 2**66 + 1], unique=False)
    assert index.find(probe).tolist() == [*range(len(model)), -1, -1]


def test_key_index_mixed_keys_in_order_of_first_addition() -> None:
    index = KeyIndex()
    first = keys("b", 5, "a", 2**70, -1)
    index.add(first, index.find(first))
    more = np.empty(5, dtype=object)
    more[:] = ["a", 6, "c", 6, 5]  # repeats inside one call: one index each
    idx = index.add(more, index.find(more))
    assert idx.tolist() == [2, 5, 6, 5, 1]
    assert index.keys().tolist() == ["b", 5, "a", 2**70, -1, 6, "c"]
    assert index.find(keys(5, "5", 2**70)).tolist() == [1, -1, 3]
    assert len(index) == 7
    clone = pickle.loads(pickle.dumps(index))
    assert clone.keys().tolist() == index.keys().tolist()


def test_key_index_add_is_all_or_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    index = KeyIndex()
    start = keys(1, 2, "x")
    index.add(start, index.find(start))

    def boom(*args: object) -> None:
        raise MemoryError("simulated")

    monkeypatch.setattr(KeyIndex, "_merge", boom)
    for batch in (keys(3, 4), keys("y", 5, "z")):
        with pytest.raises(MemoryError):
            index.add(batch, index.find(batch))
        assert len(index) == 3 and index.keys().tolist() == [1, 2, "x"]
        assert index.find(keys("y", "z", 3)).tolist() == [-1, -1, -1]


def test_a_store_spend_that_fails_midway_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    store = InMemoryLedgerStore()
    store.spend(keys("a", 1), request("q", 0.25))
    before = pickle.dumps(store)

    def boom(*args: object) -> None:
        raise MemoryError("simulated")

    monkeypatch.setattr(KeyIndex, "add", boom)
    with pytest.raises(MemoryError):
        store.spend(keys("a", "new", 2), request("r", 0.25))
    monkeypatch.undo()
    after = pickle.loads(pickle.dumps(store))
    restored = pickle.loads(before)
    probe = keys("a", 1, "new", 2)
    for s in (after, restored):
        assert s.history(probe).spent.tolist() == [0.25, 0.25, 0.0, 0.0]
    assert after.questions() == restored.questions() and "r" not in after.questions()
    assert after.respondents().tolist() == restored.respondents().tolist()


def test_in_memory_stores_pickle_and_print() -> None:
    store = InMemoryLedgerStore()
    store.spend(keys("a", 3), request("q", 0.5))
    copy = pickle.loads(pickle.dumps(store))
    copy.spend(keys("a"), request("r", 0.25))  # a working lock of its own
    assert store.history(keys("a")).spent.tolist() == [0.5]
    assert copy.history(keys("a")).spent.tolist() == [0.75]
    assert repr(store) == "InMemoryLedgerStore(respondents=2, questions=1)"
    memo = InMemoryMemoStore()
    memo.get_or_create("q", keys("a"), lambda m: np.ones(int(m.sum()), np.int64), mechanism=M)
    again = pickle.loads(pickle.dumps(memo))
    assert again.lookup("q", keys("a", "b"), mechanism=M).tolist() == [1, -1]
    assert repr(memo) == "InMemoryMemoStore({'q': 1})"


def test_stores_are_checked_where_they_are_given() -> None:
    with pytest.raises(ParameterTypeError, match="`store` must be a LedgerStore"):
        BudgetLedger(cap=1.0, store={})  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="`store` must be a MemoStore"):
        MemoizedRandomizer(Warner(0.75), store=InMemoryLedgerStore())  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="`composition` must be a Composition"):
        BudgetLedger(cap=1.0, composition="basic")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- earlier pickles


def _unpickled(cls: Any, state: dict[str, Any]) -> Any:
    """An object as ``pickle.loads`` rebuilds it from ``state``."""
    obj = cls.__new__(cls)
    obj.__setstate__(state)
    return obj


def test_a_memo_pickled_before_reports_carried_their_mechanism_is_refused_until_adopted() -> None:
    index = KeyIndex()
    index.add(keys("ann", 7), np.full(2, -1, dtype=np.int64))
    store = _unpickled(InMemoryMemoStore, {"memo": {"smokes": (index, np.array([1, 0]))}})
    memo = MemoizedRandomizer(Warner(0.75), store=store)
    with pytest.raises(
        PrivacyError,
        match=r"respondent 'ann' holds a permanent report stored "
        r"before .* store\.adopt\('smokes', mechanism\)",
    ):
        memo.randomize(["ann", "bob"], [1, 1], question="smokes", rng=1)
    with pytest.raises(PrivacyError, match="stored before"):
        memo.memoized("smokes", [7])
    assert store.adopt("smokes", M) == 2 and store.adopt("smokes", M) == 0
    assert memo.randomize(["ann", 7], [0, 1], question="smokes", rng=1).tolist() == [1, 0]
    assert store.adopt("never", M) == 0


def test_a_ledger_store_pickled_before_units_is_refused_until_its_unit_is_stated() -> None:
    index = KeyIndex()
    index.add(keys("ann"), np.full(1, -1, dtype=np.int64))
    old = {"index": index, "spent": np.array([0.5]), "charged": {}, "records": {}}
    store = _unpickled(InMemoryLedgerStore, old)
    for composition in (PureEpsilonComposition(), ZCDPComposition()):
        with pytest.raises(PrivacyError, match=rf"adopt_unit\('{composition.unit}'\)"):
            BudgetLedger(cap=1.0, store=store, composition=composition)
    with pytest.raises(ParameterTypeError, match="`unit` must name the unit"):
        store.adopt_unit("")
    store.adopt_unit("epsilon")
    ledger = BudgetLedger(cap=1.0, store=store)
    ledger.spend(["ann"], "q", 0.25)
    assert ledger.spent("ann") == 0.75
    with pytest.raises(ParameterError, match="records its totals in epsilon, got 'rho'"):
        store.adopt_unit("rho")
    store.adopt_unit("epsilon")  # the same statement again: nothing changes
    # an empty store pickled before: nothing to misread, any unit may begin
    bare = {"index": KeyIndex(), "spent": np.zeros(0), "charged": {}, "records": {}}
    empty = _unpickled(InMemoryLedgerStore, bare)
    BudgetLedger(cap=1.0, store=empty, composition=ZCDPComposition()).spend(["a"], "q", 0.5)


def test_key_index_keeps_its_table_and_merges_new_keys_late() -> None:
    """New keys inside the table's span are written into it and merged into the sorted
    arrays later (issue 17, part 5: a question gaining a few devices a round): every
    lookup, the keys, a pickle and a copy still agree with a dict in insertion order; a
    copy taken before an add never sees the added keys; a key outside the span drops the
    table, which is rebuilt."""
    gen = np.random.default_rng(23)
    index, model = KeyIndex(), {}
    first = np.arange(0, 20_000, 3)
    index.add(first, index.find(first))
    model.update((int(x), i) for i, x in enumerate(first.tolist()))
    index.find(first[:1])  # builds the table
    table = index._table
    assert table is not None
    snapshots = []
    for step in range(12):
        batch = gen.choice(20_000, size=300, replace=False)
        snapshots.append((index.copy(), dict(model)))
        got = index.add(batch, index.find(batch))
        for x in batch.tolist():
            model.setdefault(int(x), len(model))
        assert got.tolist() == [model[int(x)] for x in batch.tolist()], step
        assert index._table is table  # kept, written in place
        probe = np.arange(-3, 20_003)
        assert index.find(probe).tolist() == [model.get(int(x), -1) for x in probe], step
    assert index._pending or index._int_keys.size > first.size  # merged late, at least once
    assert index.keys().tolist() == list(model) and not index._pending
    again = pickle.loads(pickle.dumps(index))
    assert again.find(np.arange(20_000)).tolist() == index.find(np.arange(20_000)).tolist()
    for old, old_model in snapshots:  # each copy answers as the index did when copied
        probe = np.arange(20_000)
        assert old.find(probe).tolist() == [old_model.get(int(x), -1) for x in probe]
    outside = np.array([50_000])
    index.add(outside, index.find(outside))
    model[50_000] = len(model)
    assert index._table is not table
    probe = np.array([50_000, 49_999, *range(20_000)])
    assert index.find(probe).tolist() == [model.get(int(x), -1) for x in probe]


def test_a_failed_key_index_add_leaves_it_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """An add that fails after writing its keys into the table (a MemoryError) is undone:
    the table is dropped and rebuilt, the keys added before it (pending too) are found,
    the failed ones are not."""
    index = KeyIndex()
    base = np.arange(0, 10_000, 2)
    index.add(base, index.find(base))
    index.find(base[:1])
    more = np.array([1, 3, 5])
    index.add(more, index.find(more))  # pending, in the table
    assert index._pending
    real = np.arange

    def failing(*args: Any, **kwargs: Any) -> Any:
        if args and args[0] == index._n:  # the dense indices of the rows, after the merge
            raise MemoryError
        return real(*args, **kwargs)

    bad = np.array([7, 9])
    monkeypatch.setattr(np, "arange", failing)
    with pytest.raises(MemoryError):
        index.add(bad, index.find(bad))
    monkeypatch.setattr(np, "arange", real)
    assert len(index) == base.size + 3
    assert index.find(np.array([1, 3, 5, 7, 9, 0, 2])).tolist() == [
        *range(base.size, base.size + 3),
        -1,
        -1,
        0,
        1,
    ]
