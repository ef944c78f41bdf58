"""RAPPOR's memo layout before the memo identity, written by hand (what ``RapporClient``
stored then): every question under ``rappor/<the whole mechanism key>/...``, the cohort
under ``.../cohort``, the PRR of a value under ``.../<value>/<chunk>``, and no mechanism
with the reports.  tests/test_rappor.py reads it from an old pickle,
tests/service/test_store_migrations.py from a database migrated from revision 0001."""

from __future__ import annotations

from typing import Any

import numpy as np

from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import Rappor, RapporClient

#: A RAPPOR configuration (72 bits: two store chunks per PRR).
BASE: dict[str, Any] = {"m": 72, "h": 2, "cohorts": 8, "f": 0.5, "p": 0.25, "q": 0.75}


def old_rappor_layout(
    rappor: Rappor, clients: Any, values: Any, seed: int
) -> dict[str, tuple[Any, np.ndarray]]:  # type: ignore[type-arg]
    """``{old question: (KeyIndex, reports)}``: the state of an old ``InMemoryMemoStore``
    holding the cohorts and PRRs of ``clients`` drawn with ``seed``."""
    state = InMemoryMemoStore()
    RapporClient(rappor, state).permanent(clients, values, rng=seed)
    old: dict[str, tuple[Any, np.ndarray]] = {}  # type: ignore[type-arg]
    for question, (index, reports, *_) in state.__getstate__()["memo"].items():
        rest = "cohort" if question == "rappor/cohort" else question.removeprefix("rappor/prr/")
        old[f"rappor/{rappor.key}/{rest}"] = (index, reports)
    return old
