"""Group commit: single reports that arrive together are written in one transaction.

Every report must be written atomically with its budget spend, and each transaction costs
a few milliseconds on SQLite (one writer at a time) — fixed costs that do not grow with
the number of reports in it.  :class:`GroupSubmitter` therefore queues the single reports
of concurrent requests and writes whatever has queued up with one
:meth:`ServiceStore.submit_batch <deniable.service.storage.store.ServiceStore.submit_batch>`
call, in arrival order, then answers every waiting request with its own outcome.

Nothing waits on a timer: a report that finds no write in progress starts one at once (so
a lone request is not delayed), and the reports that arrive during a write go together in
the next.  Each request is answered only after the transaction holding its report has
committed, so an acknowledged report is as durable as with one transaction per report, and
the outcomes are those of submitting the reports one by one in arrival order
(``submit_batch`` gives each item the outcome :meth:`submit` would give it in that order).
Should a group's write fail as a whole, its reports are retried one transaction each, so
that one report's error is only that report's.

Where the store writes without waiting (SQLite in a file with ``synchronous=NORMAL``:
``store.writes_without_waiting``), a group is written in the event loop itself, with no
hand-off to a worker thread and back: its transaction takes about a millisecond of CPU
and never waits for the disk (the commit goes to the write-ahead log) nor for another
writer (``submit_batch(..., wait=False)`` fails at once with
:class:`~deniable.service.storage.WriterBusy` while another connection holds the write
lock, and the group is then written in a worker thread that waits for it).  Meanwhile the
requests that arrive queue up in the sockets, so the next group is larger: fewer, larger
transactions.  Those commits never copy SQLite's log back into the database (a
checkpoint waits for the disk): every :attr:`GroupSubmitter.CHECKPOINT_EVERY` of them, a
passive checkpoint runs in a worker thread.  PostgreSQL (whose commit waits for the server
and its disk) and SQLite with ``synchronous=FULL`` or ``EXTRA`` (an fsync at every commit)
are written in a worker thread.

Before each write, the writer lets the event loop turn while reports keep arriving (at most
:attr:`GroupSubmitter.GATHER` turns, each a few microseconds when nothing comes): the
requests whose bytes are already read join the group, which doubles its size under load.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from starlette.concurrency import run_in_threadpool

from deniable.service.storage import WriterBusy

__all__ = ["GroupSubmitter"]

Item = tuple[int, str, int]
Entry = tuple[str, Item, "asyncio.Future[Any]"]


class GroupSubmitter:
    """Queue single reports per event loop and write them in groups (see the module)."""

    #: The most reports written in one transaction.
    MAX_GROUP = 2000
    #: At most this many turns of the event loop before a write, while reports keep coming.
    GATHER = 8
    #: A checkpoint of SQLite's log (in a worker thread) after this many writes in the loop.
    CHECKPOINT_EVERY = 32

    def __init__(self, store: Any) -> None:
        self.store = store
        #: whether groups are written in the event loop (see the module docstring)
        self.inline = bool(getattr(store, "writes_without_waiting", False))
        self._written = 0  # writes in the loop since the last checkpoint
        self._checkpoint: asyncio.Future[None] | None = None
        # per event loop (one with uvicorn; a test client may use several): the queue, and
        # the task writing it (None when idle)
        self._queues: dict[asyncio.AbstractEventLoop, list[Entry]] = {}
        self._writers: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}

    async def submit(self, survey_id: str, respondent: int, question: str, report: int) -> Any:
        """Write one report (with its budget spend); its ``Submitted`` outcome once committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queues.setdefault(loop, []).append(
            (survey_id, (respondent, question, report), future)
        )
        if loop not in self._writers:
            # a task of its own: a request that goes away does not stop the others' writes
            self._writers[loop] = loop.create_task(self._drain(loop))
        return await future

    async def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            queue = self._queues[loop]
            while queue:
                for _ in range(self.GATHER):  # let the requests that are ready join the group
                    waiting = len(queue)
                    await asyncio.sleep(0)
                    if len(queue) == waiting:
                        break
                group = queue[: self.MAX_GROUP]
                del queue[: self.MAX_GROUP]
                by_survey: dict[str, list[tuple[Item, asyncio.Future[Any]]]] = defaultdict(list)
                for survey_id, item, future in group:
                    by_survey[survey_id].append((item, future))
                for survey_id, entries in by_survey.items():
                    await self._write(survey_id, entries)
        finally:
            del self._writers[loop]
            if not self._queues.get(loop):
                self._queues.pop(loop, None)

    async def _write(self, survey_id: str, entries: list[tuple[Item, asyncio.Future[Any]]]) -> None:
        items = [item for item, _ in entries]
        try:
            results: Any = None
            if self.inline:
                try:
                    results = self.store.submit_batch(survey_id, items, wait=False)
                except WriterBusy:  # another writer holds the lock: wait for it in a thread
                    results = None
                else:
                    self._written += 1
                    self._checkpoint_later()
            if results is None:
                results = await run_in_threadpool(self.store.submit_batch, survey_id, items)
        except Exception as exc:
            if len(entries) == 1:
                _settle(entries[0][1], error=exc)
                return
            for item, future in entries:  # one transaction each: an error is its own
                try:
                    rid, qid, report = item
                    result = await run_in_threadpool(self.store.submit, survey_id, rid, qid, report)
                except Exception as one:
                    _settle(future, error=one)
                else:
                    _settle(future, result=result)
            return
        for (_, future), result in zip(entries, results, strict=True):
            _settle(future, result=result)

    def _checkpoint_later(self) -> None:
        """Every :attr:`CHECKPOINT_EVERY` writes in the loop, a checkpoint in a worker thread
        (those writes make none: it would wait for the disk in the event loop)."""
        running = self._checkpoint is not None and not self._checkpoint.done()
        if self._written < self.CHECKPOINT_EVERY or running:
            return
        self._written = 0
        self._checkpoint = asyncio.ensure_future(run_in_threadpool(self.store.checkpoint))
        self._checkpoint.add_done_callback(_retrieve)


def _retrieve(future: asyncio.Future[None]) -> None:
    """A failed checkpoint is not an error of any request: the next one will copy the log
    (SQLite's log only grows meanwhile)."""
    if not future.cancelled():
        future.exception()


def _settle(
    future: asyncio.Future[Any], result: Any = None, error: BaseException | None = None
) -> None:
    if future.done():  # its request was cancelled
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
