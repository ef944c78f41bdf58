"""Benchmark: the ledger and the memo behind their stores, beside the old array ledger.

One million integer respondents (ids ``0 .. 10**6 - 1``), timed in the same run:

* ``store``: :class:`BudgetLedger` over :class:`InMemoryLedgerStore` (keys mapped to dense
  indices by binary search) and :class:`MemoizedRandomizer` over :class:`InMemoryMemoStore`;
* ``old``: the array ledger and memo this replaced (numpy arrays indexed by id, one lock),
  reproduced below as the baseline so that both run on the same machine in the same run.

Steps: the first spend of a question to everyone (the store adds a million keys), five
spends on known respondents, a memoized question asked twice (the second is a free
replay), the budget filter's ``commit_admitted``, and a memoized round of ``Warner(0.75)``
drawn then replayed.  Then the cases the old design could not take: a million random ids
in ``[0, 10**12)``, 100,000 string tokens of 40 characters, and the single id
``99_999_999`` (memory: the store's arrays, against what the old arrays would allocate).

Writes ``benchmarks/results/stores.md`` and ``stores.json``.
Run: ``.venv/bin/python benchmarks/bench_stores.py``.
"""

from __future__ import annotations

import json
import platform
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from deniable.accounting import BudgetFilter, BudgetLedger
from deniable.accounting._exact_sum import add_up
from deniable.common import validation as v
from deniable.designs import Warner
from deniable.mechanisms import MemoizedRandomizer

N = 1_000_000
REPEATS = 5
OUT = Path(__file__).resolve().parent / "results"


class OldArrayLedger:
    """The old design, reduced to its spend path: one float per id, one bool mask per
    question over all ids, one lock, the same upward-rounded admission."""

    def __init__(self, cap: float, n: int) -> None:
        self.cap = cap
        self.spent = np.zeros(n)
        self.charged: dict[str, np.ndarray] = {}
        self.lock = threading.RLock()

    def spend(self, ids: Any, q: str, eps: float, *, memoized: bool = False) -> None:
        with self.lock:
            ids = np.asarray(ids).astype(np.int64, copy=False)
            if ids.min() < 0 or ids.max() >= self.spent.size:
                raise ValueError("ids")
            s = np.sort(ids)
            if (s[1:] == s[:-1]).any():
                raise ValueError("repeat")
            cost = np.full(ids.size, eps)
            if memoized and q in self.charged:
                cost[self.charged[q][ids]] = 0.0
            new = add_up(self.spent[ids], cost)
            if not ((cost == 0) | (new <= self.cap)).all():
                raise ValueError("refused")
            mask = self.charged.get(q)
            if mask is None:
                mask = np.zeros(self.spent.size, dtype=bool)
            self.spent[ids] = new
            mask[ids] = True
            self.charged[q] = mask

    def commit_admitted(self, ids: np.ndarray, q: str, eps: float) -> np.ndarray:
        with self.lock:
            ok = add_up(self.spent[ids], np.full(ids.size, eps)) <= self.cap
            self.spend(ids[ok], q, eps)
            return ids[ok]


class OldArrayMemo:
    """The old memo: per question an int64 array indexed by id (-1: no report)."""

    def __init__(self, design: Any) -> None:
        self.design = design
        self.store: dict[str, np.ndarray] = {}
        self.lock = threading.RLock()

    def randomize(self, ids: np.ndarray, truth: np.ndarray, *, question: str, rng: Any) -> Any:
        # the old checks: integer ids in [0, 10**8), none repeated, answers in range
        ids = np.asarray(ids).astype(np.int64, copy=False)
        if ids.min() < 0 or ids.max() >= 100_000_000:
            raise ValueError("ids")
        s = np.sort(ids)
        if (s[1:] == s[:-1]).any():
            raise ValueError("repeat")
        truth = v.reports_array("truth", truth, categories=2)
        with self.lock:
            store = self.store.get(question, np.full(0, -1, dtype=np.int64))
            new = np.ones(ids.size, dtype=bool)
            inside = ids < store.size
            new[inside] = store[ids[inside]] < 0
            fresh = self.design.randomize(truth[new], rng=rng) if new.any() else None
            top = int(ids.max()) + 1
            if top > store.size:
                grown = np.full(max(top, 2 * store.size), -1, dtype=np.int64)
                grown[: store.size] = store
                store = grown
            if fresh is not None:
                store[ids[new]] = fresh
            self.store[question] = store
            return store[ids].copy()


def median_time(make: Callable[[], Any], run: Callable[[Any], Any]) -> float:
    """Median seconds of ``run(make())`` over REPEATS fresh objects (``make`` untimed)."""
    times = []
    for _ in range(REPEATS):
        obj = make()
        t0 = time.perf_counter()
        run(obj)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ids = np.arange(N)
    half = ids[1::2]
    truth = (ids % 3 == 0).astype(np.uint8)

    def warm_new() -> BudgetLedger:
        ledger = BudgetLedger(cap=10.0, n_respondents=N)
        ledger.spend(ids, "warm", 0.5)
        return ledger

    def warm_old() -> OldArrayLedger:
        ledger = OldArrayLedger(10.0, N)
        ledger.spend(ids, "warm", 0.5)
        return ledger

    def five(ledger: Any) -> None:
        for j in range(5):
            ledger.spend(ids, f"q{j}", 0.25)

    def memo_twice(ledger: Any) -> None:
        ledger.spend(ids, "m", 0.5, memoized=True)
        ledger.spend(ids, "m", 0.5, memoized=True)

    rows: list[tuple[str, float, float]] = []
    rows.append(
        (
            "first spend to 10**6 new respondents",
            median_time(
                lambda: BudgetLedger(cap=10.0, n_respondents=N), lambda x: x.spend(ids, "a", 0.5)
            ),
            median_time(lambda: OldArrayLedger(10.0, N), lambda x: x.spend(ids, "a", 0.5)),
        )
    )
    rows.append(
        (
            "5 spends to 10**6 known respondents",
            median_time(warm_new, five),
            median_time(warm_old, five),
        )
    )
    rows.append(
        (
            "memoized question asked twice (10**6)",
            median_time(warm_new, memo_twice),
            median_time(warm_old, memo_twice),
        )
    )
    rows.append(
        (
            "commit_admitted to 500,000",
            median_time(
                warm_new, lambda x: BudgetFilter(x).commit_admitted(half, 0.25, question="f")
            ),
            median_time(warm_old, lambda x: x.commit_admitted(half, "f", 0.25)),
        )
    )

    def memo_round(memo: Any) -> None:
        memo.randomize(ids, truth, question="q", rng=np.random.default_rng(1))
        memo.randomize(ids, truth, question="q", rng=np.random.default_rng(2))

    rows.append(
        (
            "memoized Warner round, drawn then replayed (10**6)",
            median_time(lambda: MemoizedRandomizer(Warner(0.75)), memo_round),
            median_time(lambda: OldArrayMemo(Warner(0.75)), memo_round),
        )
    )

    # what the old design could not take
    sparse = np.random.default_rng(7).choice(10**12, size=N, replace=False)
    sparse_ledger = BudgetLedger(cap=10.0)
    t0 = time.perf_counter()
    sparse_ledger.spend(sparse, "a", 0.5)
    t_sparse_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    sparse_ledger.spend(sparse, "b", 0.5)
    t_sparse_known = time.perf_counter() - t0
    sparse_bytes = sparse_ledger.store.nbytes  # type: ignore[attr-defined]

    tokens = np.array([f"{i:040x}" for i in range(100_000)], dtype=object)
    token_ledger = BudgetLedger(cap=10.0)
    t0 = time.perf_counter()
    token_ledger.spend(tokens, "a", 0.5)
    t_tok_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    token_ledger.spend(tokens, "b", 0.5)
    t_tok_known = time.perf_counter() - t0

    one = BudgetLedger(cap=10.0)
    one.spend([99_999_999], "a", 0.5)
    memo = MemoizedRandomizer(Warner(0.75))
    memo.randomize([99_999_999], [1], question="a", rng=1)
    one_bytes = one.store.nbytes  # type: ignore[attr-defined]
    memo_bytes = memo.store.nbytes  # type: ignore[attr-defined]
    old_one_ledger = 10**8 * (8 + 1)  # a float per id and a bool per id and question
    old_one_memo = 10**8 * 8  # an int64 per id and question

    result = {
        "benchmark": "ledger and memo stores vs the old array ledger",
        "respondents": N,
        "repeats": REPEATS,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "seconds_median": [
            {"step": s, "store": a, "old_array": b, "ratio": a / b if b else None}
            for s, a, b in rows
        ],
        "sparse_ids_1e6_in_1e12": {
            "first_spend_seconds": t_sparse_first,
            "known_spend_seconds": t_sparse_known,
            "store_bytes": sparse_bytes,
            "old_array_bytes": 10**12 * 9,
        },
        "tokens_1e5_40_chars": {
            "first_spend_seconds": t_tok_first,
            "known_spend_seconds": t_tok_known,
        },
        "id_99999999": {
            "ledger_store_bytes": one_bytes,
            "memo_store_bytes": memo_bytes,
            "old_ledger_bytes": old_one_ledger,
            "old_memo_bytes_per_question": old_one_memo,
        },
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "stores.json").write_text(json.dumps(result, indent=2) + "\n")
    md = [
        "# Ledger and memo stores",
        "",
        f"{N:,} integer respondents; median of {REPEATS} runs, each on a fresh object (set-up "
        f"not timed), Python {platform.python_version()}.  `old array` is the ledger and memo "
        "this replaced (arrays indexed by id), measured in the same run.",
        "",
        "| step | store (s) | old array (s) | ratio |",
        "| --- | ---: | ---: | ---: |",
        *(f"| {s} | {a:.3f} | {b:.3f} | {a / b:.1f}x |" for s, a, b in rows),
        "",
        "What the old arrays could not take (one run each):",
        "",
        "| case | first spend (s) | spend to known (s) | store arrays | old arrays |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| 10**6 random ids in [0, 10**12) | {t_sparse_first:.3f} | {t_sparse_known:.3f} | "
        f"{sparse_bytes / 1e6:.0f} MB | 9 TB |",
        f"| 10**5 tokens of 40 characters | {t_tok_first:.3f} | {t_tok_known:.3f} | (dict) | "
        "not possible |",
        f"| the one id 99,999,999, ledger | - | - | {one_bytes} bytes | "
        f"{old_one_ledger / 1e6:.0f} MB |",
        f"| the one id 99,999,999, memo (per question) | - | - | {memo_bytes} bytes | "
        f"{old_one_memo / 1e6:.0f} MB |",
        "",
    ]
    (OUT / "stores.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
