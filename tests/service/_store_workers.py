"""Child processes of tests/service/test_store_processes.py (run under ``spawn`` or as a
script): submitters racing for the same respondents, and a submitter that is killed.

``python _store_workers.py crash URL SEED`` submits the items of :func:`crash_items` (one
by one and in batches) and prints ``ack <respondent> <question> <report>`` for each report
stored, flushed after the commit, until it is killed.
"""

from __future__ import annotations

import random
import sys
from typing import Any

SID = "workplace"
QUESTIONS = ("happy", "harassment", "hours")
SIZES = {"happy": 2, "harassment": 2, "hours": 4}


def race_items(seed: int, respondents: list[int]) -> list[tuple[int, str, int]]:
    """Items for every respondent and question, in a random order, random reports."""
    rng = random.Random(seed)
    items = [(r, q, rng.randrange(SIZES[q])) for r in respondents for q in QUESTIONS]
    rng.shuffle(items)
    return items


def race(urls: list[str], respondents: list[int], index: int, barrier: Any, out: Any) -> None:
    """For each trial's database: wait at the barrier with the other processes, then submit
    this process's items (half one by one, half in batches of 7); send the outcomes."""
    from deniable.service.storage import ServiceStore

    for trial, url in enumerate(urls):
        store = ServiceStore(url)
        items = race_items(1000 * trial + index, respondents)
        barrier.wait(timeout=120)
        got: list[tuple[tuple[int, str, int], str]] = []
        if index % 2:
            for item in items:
                got.append((item, store.submit(SID, *item).status))
        else:
            for start in range(0, len(items), 7):
                part = items[start : start + 7]
                got.extend(
                    zip(part, [s.status for s in store.submit_batch(SID, part)], strict=True)
                )
        store.close()
        out.put((trial, index, got))


def crash_items(seed: int, respondents: list[int]) -> list[tuple[int, str, int]]:
    """The crash submitter's items: every question of every respondent, random order."""
    return race_items(seed, respondents)


def crash(url: str, seed: int, respondents: list[int]) -> None:
    from deniable.service.storage import ServiceStore

    store = ServiceStore(url)
    items = crash_items(seed, respondents)
    rng = random.Random(seed)
    i = 0
    while i < len(items):
        size = 1 if rng.random() < 0.5 else rng.randrange(2, 20)
        part = items[i : i + size]
        i += size
        out = [store.submit(SID, *part[0])] if size == 1 else store.submit_batch(SID, part)
        # committed: acknowledge what was stored
        lines = [f"ack {r} {q} {v}\n" for (r, q, v), s in zip(part, out, strict=True) if s.stored]
        sys.stdout.write("".join(lines) + f"done {i}\n")
        sys.stdout.flush()
    sys.stdout.write("finished\n")
    sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1] == "crash":
        first, last = int(sys.argv[4]), int(sys.argv[5])
        crash(sys.argv[2], int(sys.argv[3]), list(range(first, last + 1)))
