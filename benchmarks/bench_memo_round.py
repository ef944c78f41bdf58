"""One memoized round of 10**5 devices at k = 16 (issue 17, part 5): seconds per round of
the longitudinal unary oracles with an InMemoryMemoStore (first round: draws the permanent
responses; replay: finds them), and of the pieces the profile names: respondent_keys with
``unique=True`` and the store's get_or_create of every question.  Run with the tree's src
first on PYTHONPATH to compare two trees in one sitting."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from deniable.accounting._keys import respondent_keys
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import LOSUE, LOUE, LSUE, DBitFlipMemo, DBitFlipPM

N, K, REPEATS = 10**5, 16, 5


def best(f: Callable[[], object]) -> float:
    """Seconds of the fastest of ``REPEATS`` calls of ``f``."""
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def fresh_round(mech: Any, x: np.ndarray, ids: np.ndarray, rng: np.random.Generator) -> None:
    """A first round: every permanent response drawn into a new store."""
    mech.randomize(x, rng=rng, memo=InMemoryMemoStore(), devices=ids)


def main() -> None:
    x = np.random.default_rng(1).integers(0, K, N)
    shuffled = np.random.default_rng(2).permutation(N)
    for name, ids in (("arange", np.arange(N)), ("shuffled", shuffled)):
        secs = best(partial(respondent_keys, ids, unique=True))
        print(f"respondent_keys({name}, unique=True): {1e3 * secs:.2f} ms")
    ids = np.arange(N)
    for cls in (LSUE, LOUE, LOSUE):
        mech = cls.from_epsilon(1.0, K, eps_1=0.5)
        rng = np.random.default_rng(3)
        store = InMemoryMemoStore()
        first = best(partial(fresh_round, mech, x, ids, rng))
        mech.randomize(x, rng=rng, memo=store, devices=ids)
        replay = best(partial(mech.randomize, x, rng=rng, memo=store, devices=ids))
        print(f"{cls.__name__}: first round {1e3 * first:.1f} ms, replay {1e3 * replay:.1f} ms")
    dbit = DBitFlipPM(1.0, k=K, b=16, d=4)
    keys, rng = ids.tolist(), np.random.default_rng(4)
    first = best(lambda: DBitFlipMemo(dbit).report(keys, x, rng=rng))
    memo = DBitFlipMemo(dbit)
    memo.report(keys, x, rng=rng)
    replay = best(partial(memo.report, keys, x, rng=rng))
    print(f"DBitFlipPM: first round {1e3 * first:.1f} ms, replay {1e3 * replay:.1f} ms")


if __name__ == "__main__":
    main()
