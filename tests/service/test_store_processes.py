"""Atomic check-and-spend across processes, and crash safety, on SQLite and PostgreSQL.

* **Race**: 4 processes (8 in the slow run; ``spawn``), released together by a barrier,
  each submit every question of the same 12 respondents (random order, random reports;
  half one by one, half in batches) under a cap that admits two of the three questions.
  In every trial: nobody is over the cap, one report per (respondent, question), exactly
  one process was told ``"stored"`` for each stored report (the others ``duplicate``,
  ``conflict`` or ``over_cap``), and each respondent's spent is what a
  :class:`BudgetLedger` replay of its stored reports gives.  The invariants hold in every
  trial by construction of the transaction; without it they fail (overspending or
  double-storing needs only one unlucky interleaving; dropping the row locks on
  PostgreSQL makes a submitter fail on the duplicate key).
* **Crash**: a child process submits in a loop and prints each acknowledged report after
  its commit; it is killed with SIGKILL at a random moment (after a random number of
  acknowledgements, while it goes on working).  Every acknowledged report is
  stored, nothing twice, the ledger holds exactly the stored reports' spends, and
  resubmitting everything afterwards gives ``duplicate`` for every acknowledged report.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from _store_workers import QUESTIONS, SID, crash_items, race

from deniable.accounting import BudgetLedger
from deniable.service.storage import ServiceStore, ledger_key, ledger_question_name
from deniable.service.storage.tables import reports, respondents
from deniable.survey import Survey, demo_survey

HERE = Path(__file__).parent
RESPONDENTS = 12


def capped_survey(cap: float = 2.2) -> Survey:
    data = demo_survey().to_dict()
    data["cap"] = cap  # ln 3 + 1 = 2.0986 and 1 + 1 fit; all three (3.0986) do not
    return Survey.from_dict(data)


def prepared(url: str, n: int) -> tuple[ServiceStore, list[int]]:
    store = ServiceStore(url)
    store.load_survey(capped_survey())
    return store, [store.open_session(SID, None)[1] for _ in range(n)]


def prepared_bulk(url: str, n: int) -> list[int]:
    """``n`` respondents inserted directly (sessions one by one would take seconds)."""
    store = ServiceStore(url)
    store.load_survey(capped_survey())
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(respondents),
            [{"survey_id": SID, "token_hash": f"{i:064x}", "created_at": 0.0} for i in range(n)],
        )
        ids = conn.execute(sa.select(respondents.c.id).order_by(respondents.c.id)).scalars()
        out = [int(i) for i in ids]
    store.close()
    return out


def stored_reports(store: ServiceStore) -> list[tuple[int, str, int]]:
    r = reports.c
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.select(r.respondent_id, r.question_id, r.report).where(r.survey_id == SID)
        ).all()
    return [(int(a), str(b), int(c)) for a, b, c in rows]


def check_consistent(
    store: ServiceStore, order: Callable[[int], list[str]], trial: object
) -> dict[tuple[int, str], int]:
    """One report per (respondent, question), nobody over the cap, the ledger equal to a
    BudgetLedger replay of the stored reports (``order(r)``: r's questions in the order
    they were stored) and each question's charges equal to its stored reports."""
    survey = store.survey(SID)
    rows = stored_reports(store)
    pairs = Counter((r, q) for r, q, _ in rows)
    assert max(pairs.values(), default=1) == 1, f"trial {trial}: a report stored twice"
    have = {(r, q): v for r, q, v in rows}
    ids = sorted({r for r, _ in pairs})
    spent = store.ledger.history(np.array([ledger_key(SID, r) for r in ids], dtype=object)).spent
    for r, s in zip(ids, spent.tolist(), strict=True):
        assert s <= survey.cap, f"trial {trial}: respondent {r} overspent: {s}"
        ledger = BudgetLedger(cap=survey.cap)
        for q in order(r):
            if (r, q) in have:
                ledger.spend(["r"], q, survey.question(q).epsilon)
        assert s == ledger.spent("r"), f"trial {trial}: respondent {r} spent {s}"
    charges = {name: rec.charges for name, rec in store.ledger.questions().items()}
    for q in QUESTIONS:
        n = sum(1 for (_, qq) in pairs if qq == q)
        assert charges.get(ledger_question_name(SID, q), 0) == n, f"trial {trial}: {q}"
    return have


@pytest.mark.parametrize(
    ("processes", "trials"),
    [
        pytest.param(4, 3, id="4-processes-3-trials"),
        pytest.param(8, 12, id="8-processes-12-trials", marks=pytest.mark.slow),
    ],
)
def test_processes_racing_never_overspend_nor_store_twice(
    fresh_db: Callable[[], str], processes: int, trials: int
) -> None:
    ctx = mp.get_context("spawn")
    urls, stores, who = [], [], []
    for _ in range(trials):
        url = fresh_db()
        store, ids = prepared(url, RESPONDENTS)
        urls.append(url)
        stores.append(store)
        who.append(ids)
    assert all(ids == who[0] for ids in who)
    barrier = ctx.Barrier(processes)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=race, args=(urls, who[0], i, barrier, out)) for i in range(processes)
    ]
    for p in procs:
        p.start()
    results = []
    deadline = time.monotonic() + 300
    while len(results) < processes * trials:
        try:
            results.append(out.get(timeout=1))
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            assert not dead, f"a submitter failed (exit codes {dead}): see its stderr above"
            assert time.monotonic() < deadline, "the submitters did not finish in 300 s"
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    for trial, store in enumerate(stores):
        got = [(i, g) for t, i, g in results if t == trial]
        told: dict[tuple[int, str], list[int]] = {}
        for _, outcomes in got:
            for (r, q, v), status in outcomes:
                if status == "stored":
                    told.setdefault((r, q), []).append(v)
        # a respondent's order of storage is unknown across processes, but each
        # respondent answers at most two questions here, and the replay of two spends is
        # the same in either order (add_up of two numbers is symmetric)
        have = check_consistent(store, lambda r: list(QUESTIONS), trial)
        assert {k: [v] for k, v in have.items()} == told, f"trial {trial}: outcomes differ"
        per = Counter(r for r, _ in have)
        assert len(per) == RESPONDENTS and set(per.values()) == {2}, f"trial {trial}: {per}"
        statuses = Counter(s for _, g in got for _, s in g)
        assert statuses["duplicate"] + statuses["conflict"] > 0
        store.close()


def _run_crash(url: str, seed: int, ids: list[int], kill_at: int) -> list[str]:
    """Run the crash submitter; SIGKILL it once it has acknowledged ``kill_at`` reports (it
    goes on working while the signal is on its way); return the lines it printed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*sys.path]))
    command = [sys.executable, str(HERE / "_store_workers.py"), "crash", url, str(seed),
               str(ids[0]), str(ids[-1])]  # fmt: skip
    lines: list[str] = []
    enough = threading.Event()
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as proc:
        stdout = proc.stdout
        assert stdout is not None

        def read() -> None:
            acks = 0
            for line in stdout:
                lines.append(line)
                acks += line.startswith("ack ")
                if acks >= kill_at or line == "finished\n":
                    enough.set()
            enough.set()

        reader = threading.Thread(target=read)
        reader.start()
        enough.wait(120)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        reader.join(30)
        errors = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == -signal.SIGKILL, errors
    assert lines and lines[-1] != "finished\n", f"the submitter was not killed midway: {errors}"
    return lines


@pytest.mark.parametrize(
    "trial", [0, 1, *(pytest.param(t, marks=pytest.mark.slow) for t in range(2, 12))]
)
def test_a_killed_submitter_loses_no_acknowledged_report(
    fresh_db: Callable[[], str], trial: int
) -> None:
    url = fresh_db()
    ids = prepared_bulk(url, 1000)
    seed = 77 + trial
    kill_at = random.Random(seed).randrange(1, 1500)  # of the 2000 reports the cap admits
    lines = _run_crash(url, seed, ids, kill_at)
    acked = [tuple(line.split()[1:]) for line in lines if line.startswith("ack ")]
    assert len(acked) >= kill_at
    store = ServiceStore(url)  # reopen after the crash (SQLite recovers from its WAL)
    items = crash_items(seed, ids)
    position = {(r, q): i for i, (r, q, _) in enumerate(items)}
    have = check_consistent(
        store, lambda r: sorted((q for q in QUESTIONS), key=lambda q: position[(r, q)]), trial
    )
    for r, q, v in acked:
        assert have.get((int(r), q)) == int(v), f"acknowledged ({r}, {q}) = {v} lost"
    # nothing is stored that its item did not ask for
    assert all(dict(((a, b), c) for a, b, c in items)[k] == v for k, v in have.items())
    again = store.submit_batch(SID, items)
    acked_set = {(int(r), q) for r, q, _ in acked}
    for (r, q, _), s in zip(items, again, strict=True):
        if (r, q) in acked_set:
            assert s.status == "duplicate"
    check_consistent(
        store, lambda r: sorted((q for q in QUESTIONS), key=lambda q: position[(r, q)]), trial
    )
    store.close()
