"""Several ``deniable serve`` processes on one SQLite file, each writing its reports in its
event loop (``service/core/batching.py``: ``submit_batch(..., wait=False)``, a worker
thread that waits for the lock when another process holds it).

Three real servers (uvicorn, loopback) share one database whose survey caps each
respondent at two of its three questions.  Every report of every respondent is posted to
every server at once, by concurrent clients (single reports and batches), so the same
(respondent, question) races across processes and every respondent's third question
races its cap; meanwhile the test takes SQLite's write lock a few times for 0.2 s, so
every server's in-loop write finds it taken.  Then:

* no request failed: every answer is ``stored`` (201), ``duplicate`` (200) or
  ``over_cap`` (403); never a 500 or a "database is locked";
* each stored report was acknowledged as ``stored`` by exactly one server, and every
  report a server acknowledged is stored, once, with its value;
* every respondent has exactly two reports (the cap admits two, and all three were
  offered), and its spent epsilon is the sum of the epsilons of its stored reports: no
  double spend, nobody past the cap.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from _server import Server

from deniable.accounting._exact_sum import add_up
from deniable.service.storage import ServiceStore
from deniable.service.storage.tables import reports
from deniable.survey import Survey, demo_survey

SID = "workplace"
SERVERS = 3
RESPONDENTS = 42  # a multiple of SERVERS
CLIENTS = 9  # three per server
CAP = 2.2  # ln 3 + 1 = 2.0986 and 1 + 1 fit; all three (3.0986) do not
BATCHING = 2  # the third client of each server sends batches, the others single reports
BATCH_CODES = {"stored": 201, "duplicate": 200, "conflict": 409, "over_cap": 403}
SIZES = {"happy": 2, "harassment": 2, "hours": 4}


def _capped() -> Survey:
    data = demo_survey().to_dict()
    data["cap"] = CAP
    return Survey.from_dict(data)


def _run(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)


def test_servers_on_one_sqlite_file_store_each_report_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/shared.db"
    store = ServiceStore(url)
    store.migrate()
    store.load_survey(_capped())
    store.close()
    servers = [Server(url, tmp_path / f"s{i}") for i in range(SERVERS)]
    for s in servers:
        s.workdir.mkdir()
    try:
        # started at once, each migrating the database at its start
        _run([threading.Thread(target=s.start) for s in servers])
        assert all(s.proc is not None for s in servers), [s.logs() for s in servers]
        tokens: list[str] = []
        lock = threading.Lock()

        def opener(server: Server) -> None:  # sessions are opened on every server at once
            with httpx.Client(base_url=server.base, timeout=60.0) as c:
                got = [c.post(f"/api/surveys/{SID}/sessions", json={})
                       for _ in range(RESPONDENTS // SERVERS)]  # fmt: skip
            with lock:
                tokens.extend(r.json()["token"] if r.status_code == 201 else r.text for r in got)

        _run([threading.Thread(target=opener, args=(s,)) for s in servers])
        assert len(set(tokens)) == RESPONDENTS and all(len(t) > 20 for t in tokens), tokens
        items = [(t, q, (i * 5 + len(q)) % k) for i, t in enumerate(tokens)
                 for q, k in SIZES.items()]  # fmt: skip
        answers: list[tuple[int, str, str, int, int, str]] = []
        barrier = threading.Barrier(CLIENTS + 1)

        def client(n: int) -> None:
            server = servers[n % SERVERS]
            part = items[n // SERVERS :: CLIENTS // SERVERS]
            # each server sees every item; its clients take the items in a different order
            part = part if n % 2 else part[::-1]
            got = []
            with httpx.Client(base_url=server.base, timeout=60.0) as c:
                barrier.wait()
                if n // SERVERS == BATCHING:  # batches of 5 (one transaction each)
                    for i in range(0, len(part), 5):
                        chunk = part[i : i + 5]
                        body = [{"token": t, "question": q, "report": v} for t, q, v in chunk]
                        r = c.post(f"/api/surveys/{SID}/reports/batch", json={"reports": body})
                        status = [x["status"] for x in r.json()["results"]] if r.is_success else []
                        codes = [BATCH_CODES[x] for x in status] or [r.status_code] * len(chunk)
                        got += [(n % SERVERS, *item, code, r.text)
                                for item, code in zip(chunk, codes, strict=True)]  # fmt: skip
                    part = []
                for token, q, report in part:
                    body1 = {"question": q, "report": report}
                    auth = {"Authorization": f"Bearer {token}"}
                    r = c.post(f"/api/surveys/{SID}/reports", json=body1, headers=auth)
                    got.append((n % SERVERS, token, q, report, r.status_code, r.text))
            with lock:
                answers.extend(got)

        def locker() -> None:  # a fourth process's writes: every server finds the lock taken
            conn = sqlite3.connect(f"{tmp_path}/shared.db", timeout=60, isolation_level=None)
            try:
                barrier.wait()
                for _ in range(3):
                    conn.execute("BEGIN IMMEDIATE")
                    time.sleep(0.2)
                    conn.execute("COMMIT")
                    time.sleep(0.1)
            finally:
                conn.close()

        clients = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        _run([*clients, threading.Thread(target=locker)])
    finally:
        for s in servers:
            s.stop()
    logs = "\n".join(s.logs() for s in servers)
    assert "database is locked" not in logs
    assert len(answers) == SERVERS * len(items)
    bad = [a for a in answers if a[4] not in (200, 201, 403)]
    assert bad == [], bad[:5]

    store = ServiceStore(url)
    try:
        ids = {t: store.respondent(SID, t) for t in tokens}
        with store.engine.connect() as conn:
            r = reports.c
            rows = conn.execute(
                sa.select(r.respondent_id, r.question_id, r.report).where(r.survey_id == SID)
            ).all()
        spent = store.spent(SID)
    finally:
        store.close()
    stored = Counter((rid, q) for rid, q, _ in rows)
    assert max(stored.values()) == 1  # one row per (respondent, question)
    value = {(rid, q): rep for rid, q, rep in rows}
    acks = Counter((ids[tok], q) for _, tok, q, _, code, _ in answers if code == 201)
    assert acks == Counter(stored.keys())  # each stored report: one "stored", from one server
    for _, tok, q, rep, code, _ in answers:
        if code in (200, 201):
            assert value[(ids[tok], q)] == rep
    per = Counter(rid for rid, _ in stored)
    assert sorted(per.values()) == [2] * RESPONDENTS  # the cap admits two of the three
    eps = {q.id: q.epsilon for q in demo_survey().questions}
    for rid, got in zip(sorted(ids.values()), spent.tolist(), strict=True):
        expected = 0.0
        for (who, q), _ in sorted(value.items()):
            if who == rid:
                expected = float(add_up(expected, eps[q]))
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)
        assert got <= CAP
