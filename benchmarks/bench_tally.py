"""Benchmark: building, merging and serializing tallies of k = 2**20 buckets.

A tally is an int64 numpy array plus its mechanism's key, so building one from counts,
adding two, summing many and (de)serializing are O(k) numpy work.  Timed, each the median
of ``REPEATS`` runs at k = 2**20 (the counts of a k-ary RR design with a million
categories, seeded):

* build: ``Tally(counts)`` from an int64 array (validated copy), and
  ``design.tally(reports)`` from 10**6 reports (blockwise ``bincount``);
* merge: ``a + b`` (with its overflow check) and ``sum()`` of 10 shards;
* serial forms: ``to_bytes`` / ``from_bytes``, pickle, ``to_json`` / ``from_json``;
* baseline, same run: the previous ``Tally`` (a frozen dataclass holding a tuple of Python
  ints, every count validated one by one), built from the same counts and added, timed
  once each (it takes about a second).

Writes ``benchmarks/results/tally.md`` and ``tally.json``.  Target: merging two tallies of
2**20 buckets in milliseconds (< 20 ms).  Run: ``.venv/bin/python benchmarks/bench_tally.py``.
"""

from __future__ import annotations

import json
import pickle
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deniable.common import validation as v
from deniable.designs import Categorical, Tally
from deniable.designs._tally import MAX_COUNT

K = 2**20
N_REPORTS = 10**6
SHARDS = 10
REPEATS = 7
TARGET_MERGE_SECONDS = 0.020
OUT = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class OldTally:
    """The previous Tally, for the baseline: a tuple of Python ints, validated one by one."""

    counts: tuple[int, ...]

    def __post_init__(self) -> None:
        counts = tuple(
            v.integer(f"counts[{i}]", c, minimum=0, maximum=MAX_COUNT)
            for i, c in enumerate(self.counts)
        )
        if sum(counts) > MAX_COUNT:
            raise ValueError("too many reports")
        object.__setattr__(self, "counts", counts)

    def __add__(self, other: OldTally) -> OldTally:
        return OldTally(tuple(a + b for a, b in zip(self.counts, other.counts, strict=True)))


def median_seconds(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    design = Categorical.from_epsilon(4.0, k=K)
    rng = np.random.default_rng(20240601)
    reports = design.randomize(rng.integers(0, K, N_REPORTS), rng=rng)
    shards = [design.tally(part) for part in np.array_split(reports, SHARDS)]
    a, b = shards[0], shards[1]
    counts = np.asarray(a.counts).copy()
    raw, pickled, text = a.to_bytes(), pickle.dumps(a), a.to_json()
    rows = [
        ("build: Tally(counts), int64 array", median_seconds(lambda: Tally(counts))),
        (
            f"build: design.tally(reports), {N_REPORTS:,} reports",
            median_seconds(lambda: design.tally(reports)),
        ),
        ("merge: a + b", median_seconds(lambda: a + b)),
        (f"merge: sum() of {SHARDS} shards", median_seconds(lambda: sum(shards))),
        ("to_bytes", median_seconds(a.to_bytes)),
        ("from_bytes", median_seconds(lambda: Tally.from_bytes(raw))),
        ("pickle dumps + loads", median_seconds(lambda: pickle.loads(pickle.dumps(a)))),
        ("to_json", median_seconds(a.to_json)),
        ("from_json", median_seconds(lambda: Tally.from_json(text))),
    ]
    assert sum(shards) == design.tally(reports)
    old_counts = tuple(int(c) for c in counts)
    old_a = OldTally(old_counts)
    old_build = median_seconds(lambda: OldTally(old_counts), repeats=1)
    old_merge = median_seconds(lambda: old_a + old_a, repeats=1)
    merge = dict(rows)["merge: a + b"]
    result = {
        "benchmark": "tally build, merge and serial forms at k = 2**20",
        "k": K,
        "reports": N_REPORTS,
        "repeats": REPEATS,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "seconds_median": dict(rows),
        "bytes": {"binary": len(raw), "pickle": len(pickled), "json": len(text)},
        "old_tuple_tally": {"build_seconds": old_build, "merge_seconds": old_merge},
        "speedup_merge_vs_old": old_merge / merge if merge > 0 else float("inf"),
        "target_merge_seconds": TARGET_MERGE_SECONDS,
        "meets_target": merge < TARGET_MERGE_SECONDS,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "tally.json").write_text(json.dumps(result, indent=2) + "\n")
    md = [
        "# Tally benchmark",
        "",
        f"Tallies of k = 2**20 buckets (a k-ary RR design with {K:,} categories, "
        f"{N_REPORTS:,} seeded reports in {SHARDS} shards); median of {REPEATS} runs, "
        f"Python {platform.python_version()}, numpy {np.__version__}.",
        "",
        "| operation | milliseconds |",
        "| --- | ---: |",
        *(f"| {label} | {1000 * t:.2f} |" for label, t in rows),
        f"| old tuple Tally: build from the same counts (1 run) | {1000 * old_build:.0f} |",
        f"| old tuple Tally: a + b (1 run) | {1000 * old_merge:.0f} |",
        "",
        f"Sizes of one tally: binary {len(raw):,} bytes, pickle {len(pickled):,}, "
        f"JSON {len(text):,}.  Merging is {result['speedup_merge_vs_old']:.0f}x faster than "
        f"the old tuple Tally.  Target: a + b < {1000 * TARGET_MERGE_SECONDS:g} ms: "
        f"{'met' if result['meets_target'] else 'NOT met'}.",
        "",
    ]
    (OUT / "tally.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0 if result["meets_target"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
