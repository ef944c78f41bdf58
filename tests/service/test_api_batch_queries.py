"""A batch of reports from respondents the process has not seen costs one query for all
their tokens, not one per token (issue 15, part 10): the statements the store runs for a
cold batch are counted (a SQLAlchemy event on its engine), and they do not grow with the
number of respondents in the batch; a warm batch (every token known to the process) looks
no token up at all.  On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from fastapi.testclient import TestClient

from deniable.service.app import create_app
from deniable.service.settings import Settings
from deniable.service.storage import ServiceStore
from deniable.service.storage.tables import ledger_question as lq

SID = "workplace"  # the demo survey of the store fixture
ADMIN = "batch-query-admin-token-0123456789abcdef0123"


@contextmanager
def _statements(store: ServiceStore) -> Iterator[list[str]]:
    """Every SQL statement run on the store's engine inside the block."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)


def _batch(client: TestClient, tokens: list[str], question: str) -> list[str]:
    body = {"reports": [{"token": t, "question": question, "report": 1} for t in tokens]}
    r = client.post(f"/api/surveys/{SID}/reports/batch", json=body)
    assert r.status_code == 200, r.text
    return [x["status"] for x in r.json()["results"]]


def _token_lookups(statements: list[str]) -> int:
    return sum("token_hash" in s and "respondents" in s for s in statements)


def test_a_cold_batch_looks_its_tokens_up_in_one_query(store: ServiceStore) -> None:
    app = create_app(Settings(database_url="sqlite:///unused.db", admin_token=ADMIN), store)
    client = TestClient(app)
    first = [store.create_respondent(SID)[0]]  # the first spends (the unit, the questions)
    assert _batch(client, first, "happy") == _batch(client, first, "harassment") == ["stored"]
    counts: dict[int, int] = {}
    for n in (3, 40):
        # respondents made in the database: this process has never seen their tokens
        tokens = [store.create_respondent(SID)[0] for _ in range(n)]
        with _statements(store) as cold:
            assert _batch(client, tokens, "happy") == ["stored"] * n
        assert _token_lookups(cold) == 1, cold
        counts[n] = len(cold)
        with _statements(store) as warm:  # the same respondents again: tokens known
            assert _batch(client, tokens, "harassment") == ["stored"] * n
        assert _token_lookups(warm) == 0, warm
    # the whole cold batch is O(1) statements in the number of respondents
    assert counts[40] == counts[3], counts


def test_a_batch_inserts_its_reports_in_one_statement_of_one_parameter_set(
    store: ServiceStore,
) -> None:
    """The reports of a batch go in as one bound value (a JSON array on SQLite, arrays on
    PostgreSQL), not as an ``executemany`` of one parameter set per report: SQLAlchemy
    compiled the parameters of every set, which doubled the time of a 10,000-report batch."""
    app = create_app(Settings(database_url="sqlite:///unused.db", admin_token=ADMIN), store)
    client = TestClient(app)
    tokens = [store.create_respondent(SID)[0] for _ in range(30)]
    inserts: list[tuple[str, bool]] = []

    def record(conn: Any, cursor: Any, statement: str, params: Any, ctx: Any, many: bool) -> None:
        # (on PostgreSQL the insert carries the ledger's writes as CTEs: WITH ... INSERT)
        if "INSERT INTO REPORTS" in statement.upper():
            inserts.append((statement, many))

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        assert _batch(client, tokens, "happy") == ["stored"] * 30
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)
    assert len(inserts) == 1 and inserts[0][1] is False, inserts
    # and every report is stored, for the respondent who sent it
    with store.engine.connect() as conn:
        stored = conn.execute(
            sa.text("SELECT COUNT(*) FROM reports WHERE survey_id = :s AND question_id = 'happy'"),
            {"s": SID},
        ).scalar()
    assert stored == 30


def test_the_question_records_of_a_submission_are_one_statement_on_postgresql(
    store: ServiceStore, backend: str
) -> None:
    # a group of single reports touches up to one ledger row per question: on PostgreSQL
    # an executemany would send a statement per row
    many: list[tuple[str, bool]] = []

    def record(conn: Any, cursor: Any, statement: str, params: Any, ctx: Any, em: bool) -> None:
        # (on PostgreSQL a CTE of the reports' insert: WITH ... INSERT INTO ledger_question)
        if "INSERT INTO LEDGER_QUESTION" in statement.upper():
            many.append((statement, em))

    questions = [q.id for q in store.survey(SID).questions]
    rid = store.create_respondent(SID)[1]
    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        results = store.submit_batch(SID, [(rid, q, 0) for q in questions[:3]])
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)
    assert [r.status for r in results] == ["stored"] * 3
    assert len(many) == 1  # one upsert of the three questions' rows
    assert many[0][1] is (backend == "sqlite")  # an executemany on SQLite only
    with store.engine.connect() as conn:
        rows = {n: c for n, c in conn.execute(sa.select(lq.c.name, lq.c.charges))}
    assert {f"{SID}/{q}": rows.get(f"{SID}/{q}") for q in questions[:3]} == {
        f"{SID}/{q}": 1 for q in questions[:3]
    }
