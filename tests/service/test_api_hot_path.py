"""The single-report hot path (issue 15, part 10): groups of single reports written in the
event loop on SQLite, without ever waiting there for another writer's lock."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from _apihelp import add_survey, snapshot

from deniable.exceptions import ParameterError
from deniable.service.core.batching import GroupSubmitter
from deniable.service.storage import ServiceStore, WriterBusy
from deniable.service.storage.db import make_engine, nowait_engine


def _sqlite_path(store: ServiceStore) -> str:
    path = store.engine.url.database
    assert path
    return path


# --------------------------------------------------------------------------- in the loop
def test_groups_are_written_in_the_event_loop_on_sqlite_only(
    store: ServiceStore, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_survey(store, "g")
    group = GroupSubmitter(store)
    assert group.inline is (backend == "sqlite")  # PostgreSQL's commit waits: a thread
    _, rid = store.create_respondent("g")
    calls: list[tuple[int, dict[str, Any]]] = []
    real = store.submit_batch

    def spy(survey_id: str, items: Any, **options: Any) -> Any:
        calls.append((threading.get_ident(), options))
        return real(survey_id, items, **options)

    monkeypatch.setattr(store, "submit_batch", spy)

    async def one() -> tuple[Any, int]:
        return await group.submit("g", rid, "a", 1), threading.get_ident()

    result, loop_thread = asyncio.run(one())
    assert result.status == "stored"
    if backend == "sqlite":
        assert calls == [(loop_thread, {"wait": False})]
    else:
        assert len(calls) == 1 and calls[0][0] != loop_thread and calls[0][1] == {}


def test_a_held_write_lock_sends_the_group_to_a_thread_without_blocking_the_loop(
    tmp_path: Path,
) -> None:
    store = ServiceStore(f"sqlite:///{tmp_path}/lock.db")
    store.migrate()
    try:
        add_survey(store, "g")
        _, rid = store.create_respondent("g")
        group = GroupSubmitter(store)
        assert group.inline
        holder = sqlite3.connect(_sqlite_path(store), isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        loop_ran = threading.Event()
        released: list[bool] = []

        def release() -> None:
            # released when the event loop has run on while the report waited for the lock
            # (at the latest after a generous 60 s, and then the test fails)
            released.append(loop_ran.wait(timeout=60))
            holder.execute("ROLLBACK")

        releaser = threading.Thread(target=release)
        releaser.start()

        async def main() -> Any:
            task = asyncio.create_task(group.submit("g", rid, "a", 1))
            for _ in range(20):  # the writer's attempt in the loop, then its hand-off
                await asyncio.sleep(0)
            assert not task.done()  # waiting for the lock, in a worker thread
            loop_ran.set()
            return await task

        result = asyncio.run(main())
        releaser.join()
        holder.close()
        assert released == [True]
        assert result.status == "stored"
        rows, _ = snapshot(store, "g")
        assert len(rows) == 1
    finally:
        store.close()


def test_a_nowait_write_never_waits_and_stores_nothing_when_the_lock_is_held(
    tmp_path: Path,
) -> None:
    store = ServiceStore(f"sqlite:///{tmp_path}/busy.db")
    store.migrate()
    try:
        add_survey(store, "g")
        _, rid = store.create_respondent("g")
        before = snapshot(store, "g")
        holder = sqlite3.connect(_sqlite_path(store), isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(WriterBusy):
                store.submit_batch("g", [(rid, "a", 1)], wait=False)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert snapshot(store, "g") == before
        assert store.submit_batch("g", [(rid, "a", 1)], wait=False)[0].status == "stored"
    finally:
        store.close()


def test_only_sqlite_files_with_synchronous_normal_write_without_waiting(
    tmp_path: Path, store: ServiceStore, backend: str
) -> None:
    normal = make_engine(f"sqlite:///{tmp_path}/a.db")
    twin = nowait_engine(normal)
    assert twin is not None and nowait_engine(normal) is twin  # made once
    with twin.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 0
        # its commits never checkpoint (that waits for the disk): a worker thread does
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
    with normal.connect() as conn:  # the store's own connections still wait
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 60_000
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 1000
    # an fsync at every commit (FULL), a database of one connection: a worker thread
    assert nowait_engine(make_engine(f"sqlite:///{tmp_path}/b.db?synchronous=full")) is None
    assert nowait_engine(make_engine("sqlite://")) is None
    for engine in (normal, twin):
        engine.dispose()
    assert store.writes_without_waiting is (backend == "sqlite")
    if backend == "postgres":
        with pytest.raises(ParameterError, match="`wait=False`"):
            store.submit_batch("workplace", [], wait=False)


def test_reports_that_become_ready_while_the_writer_starts_join_its_group(
    store: ServiceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_survey(store, "g")
    rids = [store.create_respondent("g")[1] for _ in range(12)]
    group = GroupSubmitter(store)
    sizes: list[int] = []
    real = store.submit_batch

    def spy(survey_id: str, items: Any, **options: Any) -> Any:
        sizes.append(len(items))
        return real(survey_id, items, **options)

    monkeypatch.setattr(store, "submit_batch", spy)

    async def late(rid: int, turns: int) -> str:
        for _ in range(turns):  # ready a few turns of the loop after the first report
            await asyncio.sleep(0)
        return str((await group.submit("g", rid, "a", 1)).status)

    async def main() -> list[str]:
        return list(await asyncio.gather(*(late(r, i % 4) for i, r in enumerate(rids))))

    assert asyncio.run(main()) == ["stored"] * len(rids)
    assert sizes == [len(rids)]  # one transaction, not one per turn of the loop


def test_writes_in_the_loop_leave_the_checkpoints_to_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ServiceStore(f"sqlite:///{tmp_path}/wal.db")
    store.migrate()
    try:
        add_survey(store, "g")
        group = GroupSubmitter(store)
        group.CHECKPOINT_EVERY = 3
        rids = [store.create_respondent("g")[1] for _ in range(7)]
        threads: list[int] = []
        real = store.checkpoint

        def spy() -> None:
            threads.append(threading.get_ident())
            real()

        monkeypatch.setattr(store, "checkpoint", spy)

        async def main() -> int:
            for rid in rids:  # one group each
                assert (await group.submit("g", rid, "a", 1)).status == "stored"
                if group._checkpoint is not None:  # (a running one is not started twice)
                    await group._checkpoint
            return threading.get_ident()

        loop_thread = asyncio.run(main())
        assert len(threads) == 2 and loop_thread not in threads  # after writes 3 and 6
        assert len(snapshot(store, "g")[0]) == len(rids)
    finally:
        store.close()


def test_the_app_freezes_what_it_loaded_while_it_serves(store: ServiceStore) -> None:
    import gc

    from _apihelp import make_client

    client = make_client(store)
    assert gc.get_freeze_count() == 0
    with client:  # startup and shutdown
        assert gc.get_freeze_count() > 0
        assert client.get("/healthz").status_code == 200
    assert gc.get_freeze_count() == 0
