"""Benchmark: ingesting report batches into Parquet, binary body beside JSON body.

What a telemetry route does with one posted body, timed end to end on one core: decode the
body and check every report against the stream's oracle, check the stream's stored oracle,
write the reports as a new Parquet file in the stream's partition of the day, fsync it,
link it into place and fsync the directory (``deniable.distributed.append_batch``).  The
JSON path does the same with a JSON body of the same reports (``decode_json_batch`` then
``append_reports``).  The bodies are made before the clock starts (encoding is the device's
work).  Oracles: k-ary RR at k = 1024 (one ``uint16`` a report), OUE at k = 64 (8 bytes of
packed bits) and OLH at k = 1024 (three ``uint64`` words); batch sizes 10^3, 10^4, 10^5
reports, and 10^3-report bodies grouped 100 to a file (``append_batches``).  Each case
appends batches for at least ``--seconds`` (and at least 3 batches) and reports reports per
second of wall time and of CPU time.

The process is pinned to one CPU (``taskset -c 0`` when present, else
``os.sched_setaffinity``); the load average is recorded before and after, since the machine
may be shared.  The files go to a temporary directory (``--dir``; its file system is
recorded: fsync on tmpfs costs nothing).

Target (issue 17): at least 1,000,000 reports/s per core through the binary body into
Parquet.  Writes ``benchmarks/results/ingest.md`` and ``ingest.json``.  Run it through
``scripts/bench`` or ``.venv/bin/python benchmarks/bench_ingest.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parent / "results"
TARGET = 1e6
SEED = 20261128
DAY = "2026-11-28"
PINNED = "DENIABLE_BENCH_PINNED"


def pin() -> str:
    """Run on one CPU: re-exec under ``taskset -c 0`` if present, else set the affinity."""
    if os.environ.get(PINNED):
        return os.environ[PINNED]
    taskset = shutil.which("taskset")
    if taskset is not None:
        env = dict(os.environ, **{PINNED: "taskset -c 0"})
        done = subprocess.run([taskset, "-c", "0", sys.executable, *sys.argv], env=env)
        raise SystemExit(done.returncode)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        return "os.sched_setaffinity (one CPU)"
    return "not pinned (no taskset, no sched_setaffinity)"


def filesystem(path: Path) -> str:
    """The type of the file system holding ``path`` (from /proc/mounts), if known."""
    try:
        mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "unknown"
    real = os.path.realpath(path)
    best = max((m for m in mounts if real.startswith(m[1])), key=lambda m: len(m[1]),
               default=None)  # fmt: skip
    return best[2] if best else "unknown"


def timed(step: Any, size: int, seconds: float) -> dict[str, float]:
    """Call ``step()`` (one batch of ``size`` reports) for at least ``seconds``."""
    step()  # warm: the stream's spec file, the day's directory, imports
    n = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    while n < 3 or time.perf_counter() - wall0 < seconds:
        step()
        n += 1
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {
        "batches": n,
        "reports": n * size,
        "seconds": wall,
        "reports_per_s": n * size / wall,
        "reports_per_cpu_s": n * size / max(cpu, 1e-9),
    }


def run(folder: Path, seconds: float) -> list[dict[str, Any]]:
    from deniable.distributed import (
        append_batch,
        append_batches,
        append_reports,
        decode_json_batch,
        encode_batch,
        encode_json_batch,
    )
    from deniable.oracles import make_oracle

    rows = []
    for name, k in (("grr", 1024), ("oue", 64), ("olh", 1024)):
        oracle = make_oracle(name, 1.0, k)
        rng = np.random.default_rng(SEED)
        for size in (10**3, 10**4, 10**5):
            reports = oracle.randomize(rng.integers(0, k, size), rng=rng)
            body = encode_batch(oracle, reports)
            text = encode_json_batch(oracle, reports)
            root = folder / f"{name}-{size}"
            o, b, t, r = oracle, body, text, root
            cases = {
                "binary": lambda o=o, b=b, r=r: append_batch(r, "bin", o, b, day=DAY),
                "json": lambda o=o, t=t, r=r: append_reports(
                    r, "json", o, decode_json_batch(o, t), day=DAY
                ),
            }
            bodies = {"binary": len(body), "json": len(text)}
            if size == 10**3:
                group = [body] * 100
                cases["binary, 100 a file"] = lambda o=o, g=group, r=r: append_batches(
                    r, "group", o, g, day=DAY
                )
                bodies["binary, 100 a file"] = 100 * len(body)
            for path, step in cases.items():
                per = size * (100 if path.startswith("binary, 100") else 1)
                got = timed(step, per, seconds)
                rows.append({"oracle": oracle.name, "k": k, "batch": size, "path": path,
                             "body_bytes": bodies[path], **got})  # fmt: skip
                print(f"{name:4} k={k:5} batch={size:>7,} {path:18} "
                      f"{got['reports_per_s']:>13,.0f} reports/s", flush=True)  # fmt: skip
            shutil.rmtree(root)
    return rows


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Ingestion benchmark",
        "",
        f"Report batches decoded, checked and appended to Parquet (one fsynced file per "
        f"append), one core ({result['pinned']}); files on {result['filesystem']}; "
        f"Python {result['python']}, pyarrow {result['pyarrow']}, {result['date']}; load "
        f"average {result['load_before']} before, {result['load_after']} after, on "
        f"{result['cpus']} CPUs.",
        "",
        "| oracle | k | reports a body | path | body bytes | reports/s (wall) | reports/s (CPU) |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['oracle']} | {r['k']} | {r['batch']:,} | {r['path']} | "
            f"{r['body_bytes']:,} | {r['reports_per_s']:,.0f} | {r['reports_per_cpu_s']:,.0f} |"
        )
    lines += ["", result["summary"], ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.25, help="per case (default 0.25)")
    parser.add_argument("--dir", default=None, help="where the files go (default: temp)")
    parser.add_argument("--out", default=str(OUT), help="results directory")
    args = parser.parse_args()
    pinned = pin()
    import pyarrow

    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    folder = Path(tempfile.mkdtemp(prefix="bench-ingest-", dir=args.dir))
    try:
        rows = run(folder, args.seconds)
        fs = filesystem(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    big = [r for r in rows if r["path"] == "binary" and r["batch"] == 10**5]
    worst = min(r["reports_per_s"] for r in big)
    ratio = min(
        b["reports_per_s"] / j["reports_per_s"]
        for b in big
        for j in rows
        if j["path"] == "json" and j["batch"] == b["batch"] and j["oracle"] == b["oracle"]
    )
    summary = (
        f"Target: at least 1,000,000 reports/s per core through the binary body at 10^5 "
        f"reports a body: {worst:,.0f} for the slowest oracle, "
        f"{'met' if worst >= TARGET else 'NOT met'}; the binary body is at least "
        f"{ratio:.0f}x the JSON body of the same reports.  Small bodies are bound by the "
        "two fsyncs of each append: group them (append_batches)."
    )
    result = {
        "benchmark": "ingest",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "python": platform.python_version(),
        "pyarrow": pyarrow.__version__,
        "cpus": os.cpu_count(),
        "pinned": pinned,
        "filesystem": fs,
        "load_before": load_before,
        "load_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "target_reports_per_s": TARGET,
        "rows": rows,
        "summary": summary,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ingest.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "ingest.md").write_text(markdown(result))
    print(summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
