"""Benchmark: the survey service's storage (``ServiceStore``) on SQLite and PostgreSQL.

Each backend gets a fresh migrated database with the demo survey (three questions) and
``RESPONDENTS`` respondents, then, timed, in one process and one thread:

* ``open_session``: new anonymous respondents (a token, its hash stored), per second;
* ``submit``: one report per call, each its own transaction with the budget spend
  (``SINGLES`` calls), reports per second and the 50th / 99th percentile latency;
* ``submit_batch``: batches of ``BATCH`` items (every question of ``BATCH / 3``
  respondents), ``BATCHES`` of them, reports per second (the median batch);
* ``submit_batch`` again with the same items: every one a duplicate (nothing written).

SQLite runs in WAL mode with ``synchronous=NORMAL`` on the local disk; PostgreSQL is a
throwaway server of the system's binaries (``tests/service/_pg.py``, default durability
settings: ``fsync`` and ``synchronous_commit`` on) on the loopback interface.  Without
PostgreSQL binaries its rows say so.

Writes ``benchmarks/results/store.md`` and ``store.json``.
Run: ``.venv/bin/python benchmarks/bench_store.py`` (``scripts/bench`` runs it).
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from deniable.service.storage import ServiceStore
from deniable.service.storage.tables import respondents
from deniable.survey import demo_survey

OUT = Path(__file__).resolve().parent / "results"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "service"))

SESSIONS = 1_000
SINGLES = 2_000
BATCH = 9_999  # 3,333 respondents x 3 questions
BATCHES = 10
RESPONDENTS = SINGLES + BATCHES * BATCH // 3
SID = "workplace"
QUESTIONS = ("happy", "harassment", "hours")


def run(url: str) -> dict[str, Any]:
    store = ServiceStore(url)
    store.migrate()
    store.load_survey(demo_survey())
    t0 = time.perf_counter()
    for _ in range(SESSIONS):
        store.open_session(SID, None)
    sessions = SESSIONS / (time.perf_counter() - t0)
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(respondents),
            [
                {"survey_id": SID, "token_hash": f"{i:064x}", "created_at": 0.0}
                for i in range(RESPONDENTS)
            ],
        )
        ids = [
            int(i)
            for i in conn.execute(
                sa.select(respondents.c.id).order_by(respondents.c.id).offset(SESSIONS)
            ).scalars()
        ]
    lat = []
    t0 = time.perf_counter()
    for i in ids[:SINGLES]:
        t1 = time.perf_counter()
        out = store.submit(SID, i, "happy", i % 2)
        lat.append(time.perf_counter() - t1)
        assert out.status == "stored"
    singles = SINGLES / (time.perf_counter() - t0)
    lat.sort()
    rest = ids[SINGLES:]
    per = BATCH // 3
    batches = [
        [(i, q, i % 2) for i in rest[b * per : (b + 1) * per] for q in QUESTIONS]
        for b in range(BATCHES)
    ]
    times = []
    for items in batches:
        t1 = time.perf_counter()
        got = store.submit_batch(SID, items)
        times.append(time.perf_counter() - t1)
        assert all(s.status == "stored" for s in got)
    dup = []
    for items in batches[:3]:
        t1 = time.perf_counter()
        got = store.submit_batch(SID, items)
        dup.append(time.perf_counter() - t1)
        assert all(s.status == "duplicate" for s in got)
    store.close()
    return {
        "sessions_per_second": sessions,
        "submit_per_second": singles,
        "submit_p50_ms": 1000 * lat[len(lat) // 2],
        "submit_p99_ms": 1000 * lat[int(len(lat) * 0.99)],
        "batch_items": BATCH,
        "batch_per_second": BATCH / statistics.median(times),
        "batch_seconds_median": statistics.median(times),
        "duplicate_batch_per_second": BATCH / statistics.median(dup),
    }


def main() -> None:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite"] = run(f"sqlite:///{tmp}/bench.db")
    try:
        from _pg import PgUnavailable, start

        try:
            server = start()
        except PgUnavailable as exc:
            results["postgresql"] = {"unavailable": str(exc)}
        else:
            try:
                results["postgresql"] = run(server.url)
            finally:
                server.stop()
    except ImportError as exc:  # pragma: no cover - run from a checkout
        results["postgresql"] = {"unavailable": str(exc)}
    result = {
        "benchmark": "survey service storage: ServiceStore on SQLite and PostgreSQL",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "sqlalchemy": sa.__version__,
        "sessions": SESSIONS,
        "singles": SINGLES,
        "batches": BATCHES,
        "results": results,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "store.json").write_text(json.dumps(result, indent=2) + "\n")

    def cell(backend: str, key: str, fmt: str) -> str:
        r = results[backend]
        return "n/a" if key not in r else format(r[key], fmt)

    rows = [
        ("new respondents (open_session) / s", "sessions_per_second", ",.0f"),
        ("single reports (submit) / s", "submit_per_second", ",.0f"),
        ("submit latency p50 (ms)", "submit_p50_ms", ".2f"),
        ("submit latency p99 (ms)", "submit_p99_ms", ".2f"),
        (f"reports in batches of {BATCH:,} (submit_batch) / s", "batch_per_second", ",.0f"),
        ("duplicate reports in batches / s", "duplicate_batch_per_second", ",.0f"),
    ]
    md = [
        "# Survey service storage",
        "",
        f"`ServiceStore` in one process and one thread, Python {platform.python_version()}, "
        f"SQLAlchemy {sa.__version__}: {SESSIONS:,} sessions, {SINGLES:,} single reports "
        f"(each its own transaction with the budget spend), {BATCHES} batches of {BATCH:,} "
        "reports (median batch), then 3 batches resubmitted (all duplicates).  SQLite: WAL, "
        "`synchronous=NORMAL`; PostgreSQL 15: a local server with default durability, over "
        "loopback TCP.",
        "",
        "| step | SQLite | PostgreSQL |",
        "| --- | ---: | ---: |",
        *(
            f"| {name} | {cell('sqlite', k, f)} | {cell('postgresql', k, f)} |"
            for name, k, f in rows
        ),
    ]
    if "unavailable" in results["postgresql"]:
        md += ["", f"PostgreSQL: {results['postgresql']['unavailable']}."]
    (OUT / "store.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
