"""Crash safety (issue 9, part 6): SIGKILL a real ``deniable serve`` in the middle of a load
of submissions, restart it on the same database, and check that

* every acknowledged report (a 201 or 200 the client received) is stored, with its value;
* no report is stored twice (one row per respondent and question);
* no budget was spent for a report that is not stored: each respondent's spent epsilon is
  the sum of the epsilons of the reports stored for it;
* after the restart every acknowledged report is answered as a duplicate (idempotent) and
  the server's logs (JSON lines) never held a token.

On SQLite and PostgreSQL; loopback only, bounded (a few hundred reports).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from _server import Server

from deniable.accounting._exact_sum import add_up
from deniable.service.storage import ServiceStore
from deniable.survey import demo_survey

SURVEY = "workplace"
RESPONDENTS = 240
CLIENTS = 8
KILL_AFTER = 250  # acknowledged reports before the kill (of 3 * RESPONDENTS)


def _items(tokens: list[str]) -> list[tuple[str, str, int]]:
    """Every respondent's three reports, interleaved across respondents."""
    out = []
    for q, k in (("happy", 2), ("harassment", 2), ("hours", 4)):
        out += [(t, q, (i * 7 + len(q)) % k) for i, t in enumerate(tokens)]
    return out


def test_sigkill_mid_load_loses_no_acknowledged_report(db_url: str, tmp_path: Path) -> None:
    server = Server(db_url, tmp_path)
    server.start()
    try:
        with httpx.Client(base_url=server.base, timeout=10.0) as c:
            tokens = [
                c.post(f"/api/surveys/{SURVEY}/sessions", json={}).json()["token"]
                for _ in range(RESPONDENTS)
            ]
        items = _items(tokens)
        acked: dict[tuple[str, str], int] = {}
        unknown: list[tuple[str, str, int]] = []
        lock = threading.Lock()
        enough = threading.Event()

        def client(part: list[tuple[str, str, int]]) -> None:
            with httpx.Client(base_url=server.base, timeout=10.0) as c:
                for token, q, report in part:
                    try:
                        r = c.post(
                            f"/api/surveys/{SURVEY}/reports",
                            json={"question": q, "report": report},
                            headers={"Authorization": f"Bearer {token}"},
                        )
                    except httpx.TransportError:  # the server died: status unknown
                        with lock:
                            unknown.append((token, q, report))
                        return
                    assert r.status_code in (200, 201), r.text
                    with lock:
                        acked[(token, q)] = report
                        if len(acked) >= KILL_AFTER:
                            enough.set()

        threads = [
            threading.Thread(target=client, args=(items[i::CLIENTS],)) for i in range(CLIENTS)
        ]
        for t in threads:
            t.start()
        assert enough.wait(60), "the load did not reach the kill point"
        server.kill()
        for t in threads:
            t.join(60)
        assert len(acked) < len(items), "the kill came after the load had finished"
        assert unknown, "no request was cut off by the kill"

        server.start()  # the same database
        store = ServiceStore(db_url)
        try:
            _check_store(store, tokens, acked)
        finally:
            store.close()
        # every acknowledged report is a duplicate now; the cut-off ones are stored or not
        with httpx.Client(base_url=server.base, timeout=10.0) as c:
            for (token, q), report in acked.items():
                r = c.post(f"/api/surveys/{SURVEY}/reports", json={"question": q, "report": report},
                           headers={"Authorization": f"Bearer {token}"})  # fmt: skip
                assert (r.status_code, r.json()) == (200, {"status": "duplicate"})
            for token, q, report in unknown:
                r = c.post(f"/api/surveys/{SURVEY}/reports", json={"question": q, "report": report},
                           headers={"Authorization": f"Bearer {token}"})  # fmt: skip
                assert r.status_code in (200, 201)
    finally:
        server.stop()
    logs = server.logs()
    lines = [json.loads(line) for line in logs.splitlines() if line.strip()]
    assert any(x.get("event") == "request" for x in lines)
    assert not any(t in logs for t in tokens)
    assert "admin token:     from DENIABLE_ADMIN_TOKEN" in server.stdout()


def _check_store(store: ServiceStore, tokens: list[str], acked: dict[Any, int]) -> None:
    ids = {t: store.respondent(SURVEY, t) for t in tokens}
    assert None not in ids.values()
    rows = {row["respondent"]: row for row in store.export_rows(SURVEY)}
    for (token, q), report in acked.items():
        assert rows[ids[token]][q] == report, (q, report)
    # one row per respondent and question
    with store.engine.connect() as conn:
        dup = conn.execute(
            sa.text(
                "SELECT respondent_id, question_id, count(*) FROM reports WHERE survey_id = :s "
                "GROUP BY respondent_id, question_id HAVING count(*) > 1"
            ),
            {"s": SURVEY},
        ).all()
        n_rows = conn.execute(
            sa.text("SELECT count(*) FROM reports WHERE survey_id = :s"), {"s": SURVEY}
        ).scalar_one()
    assert dup == []
    assert n_rows == sum(v is not None for row in rows.values() for k, v in row.items()
                         if k != "respondent")  # fmt: skip
    assert n_rows >= len(acked)
    # the budget: spent == the epsilons of the stored reports, per respondent
    eps = {q.id: q.epsilon for q in demo_survey().questions}
    spent = store.spent(SURVEY)
    order = sorted(ids.values())  # spent() is in respondent id order
    assert len(spent) == len(order)
    for rid, value in zip(order, spent.tolist(), strict=True):
        row = rows.get(rid, {})
        expected = 0.0
        for q in ("happy", "harassment", "hours"):
            if row.get(q) is not None:
                expected = float(add_up(expected, eps[q]))
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-12), (rid, row)
