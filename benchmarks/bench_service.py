"""Benchmark: the survey service under load on loopback, SQLite beside PostgreSQL, each
measured against its own floor in the same run.

A real ``deniable serve`` (uvicorn, one process) on 127.0.0.1, with a survey of 20 binary
questions (Warner at epsilon 0.1 each, cap 2.5) so that each respondent sends 20 reports:

* ``healthz`` (the floor): ``GET /healthz`` (no work behind it) from the same 50 clients,
  measured right before the single reports;
* ``single``: 50 concurrent clients (keep-alive connections) send 20,000 single reports
  (``POST /api/surveys/{id}/reports``, one each per request) of 1,000 respondents; the
  throughput of acknowledged reports and the latency percentiles of the requests;
* ``batch``: 100,000 reports of 5,000 other respondents through the batch endpoint, in
  batches of 10,000 items (``batch_max_items``), two clients at a time; reports/s;
* ``cold`` / ``warm``: batches of 10,000 reports (500 respondents each) from respondents
  the server process has not seen (made in the database by this process, so the server
  must look their tokens up) alternating with batches from respondents it has (their
  sessions opened over HTTP, which leaves them in the process's token cache), one at a
  time; the median time of a batch of each kind.

Respondents are created beforehand (not timed).  Each phase is bounded in count and
stopped after ``PHASE_LIMIT`` seconds.  The client is a small asyncio HTTP/1.1 client (the
standard library's streams): an httpx client would spend more CPU than the server on this
2-core machine and measure itself.  PostgreSQL is a throwaway server from the system's
binaries (tests/service/_pg.py) with its default durability (fsync on); SQLite is in WAL
mode as the store configures it.

**Targets** (issue 15; ratios measured in the same run, so that they hold on any machine):
single reports at least 0.7 of the ``healthz`` floor's requests per second with p99 under
100 ms at 50 concurrent clients, and a cold batch at most 1.5 times a warm one (one token
query per batch, not per token), on SQLite and on PostgreSQL.  The load average (1 minute)
is recorded before and after each backend: the machine is shared, and a ratio measured
while other work ran says less.

Writes ``benchmarks/results/service.md`` and ``service.json``.
Run: ``.venv/bin/python benchmarks/bench_service.py`` (``--quick``: a tenth of the load,
printed only; ``--no-postgres``: SQLite only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "service"))

from _pg import PgUnavailable  # noqa: E402
from _pg import start as start_pg  # noqa: E402
from _server import Server  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
SURVEY_ID = "bench"
QUESTIONS = 20
CLIENTS = 50
SINGLE_REPORTS = 20_000
BATCH_REPORTS = 100_000
BATCH_SIZE = 10_000
BATCH_CLIENTS = 2
COLD_BATCHES = 5  # of each kind, cold and warm
WORKERS = int(os.environ.get("BENCH_WORKERS", "1"))
PHASE_LIMIT = 180.0  # seconds: a phase that takes longer stops and says so
#: The targets, as ratios to what the same run measured.
FLOOR_SHARE = 0.7  # single reports/s over healthz requests/s, at least
P99_MS = 100.0  # single reports' p99, below
COLD_OVER_WARM = 1.5  # a cold batch's time over a warm one's, at most


def survey_text() -> str:
    qs = "".join(
        f"  - {{id: q{i:02d}, text: 'Question {i}?', labels: ['no', 'yes'], "
        "design: {mechanism: warner, epsilon: 0.1}}\n"
        for i in range(QUESTIONS)
    )
    return (
        f"schema: deniable.survey/1\nid: {SURVEY_ID}\ntitle: Benchmark\ncap: 2.5\n"
        f"respondents: anonymous\nquestions:\n{qs}"
    )


class Conn:
    """One keep-alive HTTP/1.1 connection: send a request, read one response."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Conn:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
        return cls(reader, writer)

    async def post(self, path: str, body: bytes, token: str | None = None) -> tuple[int, bytes]:
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"{auth}Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        await self.writer.drain()
        return await self._response()

    async def _response(self) -> tuple[int, bytes]:
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        length = 0
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, await self.reader.readexactly(length)

    async def get(self, path: str) -> tuple[int, bytes]:
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        await self.writer.drain()
        return await self._response()

    def close(self) -> None:
        self.writer.close()


async def _sessions(port: int, n: int) -> list[str]:
    tokens: list[str] = []

    async def worker(count: int) -> None:
        conn = await Conn.open(port)
        for _ in range(count):
            status, body = await conn.post(f"/api/surveys/{SURVEY_ID}/sessions", b"{}")
            assert status == 201, body
            tokens.append(json.loads(body)["token"])
        conn.close()

    per = [n // CLIENTS + (i < n % CLIENTS) for i in range(CLIENTS)]
    await asyncio.gather(*(worker(c) for c in per))
    return tokens


def _unseen_respondents(url: str, n: int) -> list[str]:
    """``n`` respondents made in the database by this process: tokens the server process
    has never seen (its cache does not hold them)."""
    from deniable.service.storage import ServiceStore

    store = ServiceStore(url)
    try:
        return [store.create_respondent(SURVEY_ID)[0] for _ in range(n)]
    finally:
        store.close()


def _percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * len(s)) - 1))]


async def _baseline(port: int, total: int) -> dict[str, Any]:
    """``GET /healthz`` (no work behind it) from the same clients: the framework's floor."""
    start = time.perf_counter()

    async def worker(count: int) -> None:
        conn = await Conn.open(port)
        for _ in range(count):
            status, _ = await conn.get("/healthz")
            assert status == 200
        conn.close()

    await asyncio.gather(*(worker(total // CLIENTS) for _ in range(CLIENTS)))
    elapsed = time.perf_counter() - start
    n = total // CLIENTS * CLIENTS
    return {"requests": n, "seconds": elapsed, "requests_per_s": n / elapsed}


async def _single(port: int, tokens: list[str], total: int) -> dict[str, Any]:
    items = [(t, f"q{i:02d}", (j + i) % 2) for j, t in enumerate(tokens) for i in range(QUESTIONS)]
    items = items[:total]
    queue: asyncio.Queue[tuple[str, str, int]] = asyncio.Queue()
    for it in items:
        queue.put_nowait(it)
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    start = time.perf_counter()
    deadline = start + PHASE_LIMIT

    async def worker() -> None:
        conn = await Conn.open(port)
        path = f"/api/surveys/{SURVEY_ID}/reports"
        while not queue.empty() and time.perf_counter() < deadline:
            token, q, report = queue.get_nowait()
            body = b'{"question":"%s","report":%d}' % (q.encode(), report)
            t0 = time.perf_counter()
            status, _ = await conn.post(path, body, token)
            latencies.append(time.perf_counter() - t0)
            statuses[status] = statuses.get(status, 0) + 1
        conn.close()

    await asyncio.gather(*(worker() for _ in range(CLIENTS)))
    elapsed = time.perf_counter() - start
    acked = statuses.get(201, 0) + statuses.get(200, 0)
    return {
        "reports": len(latencies),
        "acknowledged": acked,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "clients": CLIENTS,
        "seconds": elapsed,
        "reports_per_s": acked / elapsed,
        "p50_ms": 1000 * _percentile(latencies, 50),
        "p99_ms": 1000 * _percentile(latencies, 99),
        "max_ms": 1000 * max(latencies),
        "complete": len(latencies) == len(items),
    }


def _bodies(tokens: list[str], total: int, size: int, salt: int) -> list[bytes]:
    items = [
        {"token": t, "question": f"q{i:02d}", "report": (j * 3 + i + salt) % 2}
        for j, t in enumerate(tokens)
        for i in range(QUESTIONS)
    ][:total]
    return [
        json.dumps({"reports": items[k : k + size]}, separators=(",", ":")).encode()
        for k in range(0, len(items), size)
    ]


async def _batch(port: int, tokens: list[str], total: int, size: int) -> dict[str, Any]:
    bodies = _bodies(tokens, total, size, 0)
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for b in bodies:
        queue.put_nowait(b)
    latencies: list[float] = []
    stored = 0
    start = time.perf_counter()
    deadline = start + PHASE_LIMIT

    async def worker() -> None:
        nonlocal stored
        conn = await Conn.open(port)
        path = f"/api/surveys/{SURVEY_ID}/reports/batch"
        while not queue.empty() and time.perf_counter() < deadline:
            body = queue.get_nowait()
            t0 = time.perf_counter()
            status, out = await conn.post(path, body)
            latencies.append(time.perf_counter() - t0)
            assert status == 200, out[:300]
            stored += sum(r["status"] == "stored" for r in json.loads(out)["results"])
        conn.close()

    await asyncio.gather(*(worker() for _ in range(BATCH_CLIENTS)))
    elapsed = time.perf_counter() - start
    return {
        "reports": sum(len(json.loads(b)["reports"]) for b in bodies),
        "stored": stored,
        "batch_size": size,
        "batches": len(latencies),
        "clients": BATCH_CLIENTS,
        "seconds": elapsed,
        "reports_per_s": stored / elapsed,
        "p50_batch_ms": 1000 * _percentile(latencies, 50),
        "max_batch_ms": 1000 * max(latencies),
        "body_bytes": max(len(b) for b in bodies),
        "complete": len(latencies) == len(bodies),
    }


async def _cold_warm(port: int, warm: list[str], cold: list[str], size: int) -> dict[str, Any]:
    """Batches from unseen (cold) and seen (warm) respondents, alternating, one at a time:
    the same work but for the token look-ups."""
    per = size // QUESTIONS
    kinds = {
        "warm": _bodies(warm, len(warm) * QUESTIONS, size, 1),
        "cold": _bodies(cold, len(cold) * QUESTIONS, size, 1),
    }
    times: dict[str, list[float]] = {"warm": [], "cold": []}
    conn = await Conn.open(port)
    path = f"/api/surveys/{SURVEY_ID}/reports/batch"
    for i in range(min(len(kinds["warm"]), len(kinds["cold"]))):
        for kind in ("cold", "warm") if i % 2 else ("warm", "cold"):
            t0 = time.perf_counter()
            status, out = await conn.post(path, kinds[kind][i])
            times[kind].append(time.perf_counter() - t0)
            assert status == 200, out[:300]
            assert all(r["status"] == "stored" for r in json.loads(out)["results"])
    conn.close()
    warm_ms, cold_ms = (1000 * statistics.median(times[k]) for k in ("warm", "cold"))
    return {
        "batches": len(times["warm"]),
        "batch_size": size,
        "respondents_per_batch": per,
        "warm_ms": warm_ms,
        "cold_ms": cold_ms,
        "cold_over_warm": cold_ms / warm_ms,
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds so far of process ``pid`` and its live descendants (the
    worker processes), all threads (Linux ``/proc``)."""
    total = 0.0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        todo += [int(c) for c in children]
    return total


def run_backend(name: str, url: str, workdir: Path, scale: float) -> dict[str, Any]:
    survey = workdir / "bench.yaml"
    survey.write_text(survey_text())
    server = Server(url, workdir, extra_args=["--survey", str(survey), "--workers", str(WORKERS)])
    load_before = os.getloadavg()[0]
    server.start()
    try:
        single_n = int(SINGLE_REPORTS * scale)
        batch_n = int(BATCH_REPORTS * scale)
        batch_size = min(BATCH_SIZE, batch_n)
        n_single = -(-single_n // QUESTIONS)
        n_batch = -(-batch_n // QUESTIONS)
        n_cold = max(1, int(COLD_BATCHES * scale)) * (batch_size // QUESTIONS)
        t0 = time.perf_counter()
        tokens = asyncio.run(_sessions(server.port, n_single + n_batch + n_cold))
        setup = time.perf_counter() - t0
        unseen = _unseen_respondents(url, n_cold)
        assert server.proc is not None
        pid = server.proc.pid
        cb = cpu_seconds(pid)
        baseline = asyncio.run(_baseline(server.port, single_n // 4))
        baseline["server_cpu_ms_per_request"] = (
            1000 * (cpu_seconds(pid) - cb) / max(1, baseline["requests"])
        )
        c0 = cpu_seconds(pid)
        single = asyncio.run(_single(server.port, tokens[:n_single], single_n))
        c1 = cpu_seconds(pid)
        batch = asyncio.run(
            _batch(server.port, tokens[n_single : n_single + n_batch], batch_n, batch_size)
        )
        c2 = cpu_seconds(pid)
        single["server_cpu_ms_per_report"] = 1000 * (c1 - c0) / max(1, single["reports"])
        batch["server_cpu_ms_per_report"] = 1000 * (c2 - c1) / max(1, batch["reports"])
        cold = asyncio.run(
            _cold_warm(server.port, tokens[n_single + n_batch :], unseen, batch_size)
        )
    finally:
        server.stop()
    single["floor_share"] = single["reports_per_s"] / baseline["requests_per_s"]
    # the same ratio in server CPU per request: what the share would be were the server
    # alone on its core (the throughputs depend on what else runs on the machine)
    single["cpu_floor_share"] = (
        baseline["server_cpu_ms_per_request"] / single["server_cpu_ms_per_report"]
    )
    return {
        "backend": name,
        "respondents": len(tokens) + len(unseen),
        "sessions_per_s": len(tokens) / setup,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg()[0],
        "healthz": baseline,
        "single": single,
        "batch": batch,
        "cold_batch": cold,
        "targets": {
            "single_floor_share": single["floor_share"] >= FLOOR_SHARE,
            "single_p99": single["p99_ms"] < P99_MS,
            "cold_over_warm": cold["cold_over_warm"] <= COLD_OVER_WARM,
        },
    }


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Survey service under load (loopback)",
        "",
        f"`deniable serve --workers {result['workers']}` (uvicorn) on 127.0.0.1, Python "
        f"{result['python']}, {result['cpus']} CPUs shared with the load generator and with "
        f"whatever else ran (load average {result['load_average_before']:.1f} before, "
        f"{result['load_average_after']:.1f} after); a survey of {QUESTIONS} "
        "binary questions. Floor: `GET /healthz` (no work behind it) from the same "
        f"{CLIENTS} keep-alive clients, just before the single reports. Single reports: "
        f"{CLIENTS} clients, one report per request. Batch: {BATCH_CLIENTS} clients, "
        f"{BATCH_SIZE:,} reports per request. Cold and warm: batches of {BATCH_SIZE:,} "
        f"reports of {BATCH_SIZE // QUESTIONS} respondents each, one at a time, alternating "
        "respondents the server has not seen (made in the database) with ones it has "
        "(sessions opened over HTTP); the median time per batch. Respondents created "
        f"beforehand (not timed). Targets (issue 15, ratios within one run): single reports "
        f">= {FLOOR_SHARE} of the floor with p99 < {P99_MS:.0f} ms; a cold batch <= "
        f"{COLD_OVER_WARM} times a warm one.",
        "",
        "| backend | floor: healthz/s | single reports/s | share of floor | p50 (ms) "
        "| p99 (ms) | max (ms) | cold batch (ms) | warm batch (ms) | cold/warm | targets met "
        "| load before/after |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for b in result["backends"]:
        s, h, c, t = b["single"], b["healthz"], b["cold_batch"], b["targets"]
        met = all(t.values())
        lines.append(
            f"| {b['backend']} | {h['requests_per_s']:,.0f} | {s['reports_per_s']:,.0f} | "
            f"{s['floor_share']:.2f} | {s['p50_ms']:.1f} | {s['p99_ms']:.1f} | "
            f"{s['max_ms']:.1f} | {c['cold_ms']:.0f} | {c['warm_ms']:.0f} | "
            f"{c['cold_over_warm']:.2f} | {_yes(met)} | "
            f"{b['load_average_before']:.1f} / {b['load_average_after']:.1f} |"
        )
    lines += [
        "",
        "Throughput and server CPU. CPU share of floor: the healthz server CPU per request "
        "over the single reports' server CPU per report, the share of the floor the "
        "server would reach with a core to itself (the throughputs above depend on what "
        "else the machine runs).",
        "",
        "| backend | single reports | server CPU ms/report | healthz server CPU ms/request "
        "| CPU share of floor | batch reports | batch reports/s | ms per batch (p50) "
        "| server CPU ms/report | sessions/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for b in result["backends"]:
        s, h, t = b["single"], b["healthz"], b["batch"]
        lines.append(
            f"| {b['backend']} | {s['acknowledged']:,} | {s['server_cpu_ms_per_report']:.3f} | "
            f"{h['server_cpu_ms_per_request']:.3f} | {s['cpu_floor_share']:.2f} | "
            f"{t['stored']:,} | "
            f"{t['reports_per_s']:,.0f} | {t['p50_batch_ms']:.0f} | "
            f"{t['server_cpu_ms_per_report']:.4f} | {b['sessions_per_s']:,.0f} |"
        )
    for note in result["notes"]:
        lines += ["", note]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the load")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = parser.parse_args()
    scale = 0.1 if args.quick else 1.0

    result: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "scale": scale,
        "workers": WORKERS,
        "targets": {
            "single_floor_share_min": FLOOR_SHARE,
            "single_p99_ms_max": P99_MS,
            "cold_over_warm_max": COLD_OVER_WARM,
        },
        "load_average_before": os.getloadavg()[0],
        "backends": [],
        "notes": [],
    }
    tmp = Path(tempfile.mkdtemp(prefix="bench-service-"))
    try:
        sqlite_dir = tmp / "sqlite"
        sqlite_dir.mkdir()
        result["backends"].append(
            run_backend("SQLite", f"sqlite:///{sqlite_dir}/bench.db", sqlite_dir, scale)
        )
        if not args.no_postgres:
            try:
                pg = start_pg()
            except PgUnavailable as exc:
                result["notes"].append(f"PostgreSQL not measured: {exc}")
            else:
                try:
                    pg_dir = tmp / "postgres"
                    pg_dir.mkdir()
                    result["backends"].append(run_backend("PostgreSQL", pg.url, pg_dir, scale))
                finally:
                    pg.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["load_average_after"] = os.getloadavg()[0]
    for b in result["backends"]:
        for phase in ("single", "batch"):
            if not b[phase]["complete"]:
                result["notes"].append(
                    f"{b['backend']} {phase}: stopped after {PHASE_LIMIT:.0f} s before the "
                    "whole load was sent."
                )
        missed = [k for k, ok in b["targets"].items() if not ok]
        if missed:
            result["notes"].append(f"{b['backend']}: target(s) missed: {', '.join(missed)}.")
    print(_markdown(result))
    if not args.quick:  # a quick run is a smoke test: it writes no results
        OUT.mkdir(exist_ok=True)
        (OUT / "service.json").write_text(json.dumps(result, indent=2) + "\n")
        (OUT / "service.md").write_text(_markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
