"""Benchmark: reading large survey files in batches (the reader behind ``estimate --reports``,
``analyze`` and ``report``).

Data: a CSV file of ``--rows`` rows (default 10 million; about 350 MB) with three columns,
``report`` (0/1, 1% empty cells), ``region`` (20 labels) and ``comment`` (free text), and the
same data as Parquet (row groups of 1M rows), written to a temporary directory.

Each case runs in a fresh Python process, so that its peak memory is its own: the child
reports its wall time and its peak resident set size (``VmHWM`` from ``/proc/self/status``,
which counts everything: the interpreter, numpy, pyarrow, pandas and the batches).

* ``estimate``: the command ``deniable estimate two-coin --reports FILE --column report
  --json`` run in the child, as a user would;
* ``analyze``: ``analyze_file(FILE, "report", TwoCoin())``;
* ``analyze --by``: the same per region (20 groups);
* ``report``: ``survey_report_file`` with one question.

Baselines (the readers before the streaming one; 1 million rows only, since the old
``estimate`` reader took 18 GB of memory for 10 million): the old ``estimate`` reader
(the whole file decoded and split into Python lists, one ``int()`` per report) and the
old ``analyze`` path (``pandas.read_csv`` of every column, then the DataFrame analysis).
The streaming reader also runs at 1 million rows, to show that its peak memory does not
grow with the file.

Targets (issue 7): at least 2 M rows/s and under 300 MB peak, whatever the file's size.
Writes ``benchmarks/results/files.md`` and ``files.json``.  Run it through
``scripts/bench`` or ``.venv/bin/python benchmarks/bench_files.py [--rows N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parent / "results"
TARGET_ROWS_PER_S = 2e6
TARGET_PEAK_MB = 300.0
SEED = 20240601

CHILD = r"""
import json, sys, time
def peak_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
case, path = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if case == "estimate":
    from deniable.cli import main
    sys.argv = ["deniable", "estimate", "two-coin", "--reports", path, "--column", "report",
                "--json"]
    import io, contextlib
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            main()
    except SystemExit as exc:
        assert not exc.code, exc.code
    n = json.loads(buf.getvalue())["n"]
elif case in ("analyze", "analyze-by", "report"):
    from deniable import TwoCoin
    from deniable.survey import analyze_file
    from deniable.survey import survey_report_file
    if case == "analyze":
        n = analyze_file(path, "report", TwoCoin()).n
    elif case == "analyze-by":
        n = int(analyze_file(path, "report", TwoCoin(), by="region")["n"].sum())
    else:
        n = survey_report_file(path, {"report": TwoCoin()}).results[0].n
elif case == "old-estimate":  # the estimate reader before the streaming one
    import csv, io
    from pathlib import Path
    text = Path(path).read_bytes().decode("utf-8-sig")
    reader = csv.reader(io.StringIO(text))
    rows = [(reader.line_num, row) for row in reader]
    rows = [(i, r) for i, r in rows if any(c.strip() for c in r)][1:]
    counts = [0, 0]
    for _, row in rows:
        cell = row[0].strip()
        if cell:
            counts[int(cell)] += 1
    n = sum(counts)
elif case == "old-analyze":  # analyze before: pandas reads every column
    import pandas as pd
    from deniable import TwoCoin
    from deniable.survey import analyze
    n = analyze(pd.read_csv(path), "report", TwoCoin()).n
else:
    raise SystemExit(f"unknown case {case}")
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "n": n, "peak_mb": peak_mb()}))
"""


def write_data(folder: Path, rows: int) -> dict[str, Path]:
    """The CSV and Parquet files (generated in chunks: the parent's memory stays small)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    rng = np.random.default_rng(SEED)
    csv_path = folder / f"survey-{rows}.csv"
    regions = np.array([f"region_{i:02d}" for i in range(20)])
    chunk = 1_000_000
    with open(csv_path, "w", encoding="utf-8") as f:
        f.write("report,region,comment\n")
        for start in range(0, rows, chunk):
            m = min(chunk, rows - start)
            report = rng.integers(0, 2, m).astype(str).astype(object)
            report[rng.random(m) < 0.01] = ""
            region = regions[rng.integers(0, 20, m)]
            comment = np.char.add("free text answer ", rng.integers(0, 10**6, m).astype(str))
            lines = [f"{a},{b},{c}" for a, b, c in zip(report, region, comment, strict=True)]
            f.write("\n".join(lines) + "\n")
    pq_path = folder / f"survey-{rows}.parquet"
    reader = pcsv.open_csv(
        csv_path,
        convert_options=pcsv.ConvertOptions(column_types={"report": pa.int8()}),
        read_options=pcsv.ReadOptions(block_size=16 << 20),
    )
    with pq.ParquetWriter(pq_path, reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch, row_group_size=1_000_000)
    return {"csv": csv_path, "parquet": pq_path}


def run_case(case: str, path: Path) -> dict[str, Any]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, case, str(path)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{case} on {path.name} failed:\n{out.stderr}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["rows_per_s"] = result["n"] / result["seconds"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--small", type=int, default=1_000_000)
    args = parser.parse_args()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="deniable-bench-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        big = write_data(folder, args.rows)
        small = write_data(folder, args.small)
        print(f"data written in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        sizes = {k: p.stat().st_size for k, p in big.items()}
        plan = [(case, "csv", big, args.rows) for case in ("estimate", "analyze", "analyze-by",
                                                           "report")]  # fmt: skip
        plan += [(case, "parquet", big, args.rows) for case in ("estimate", "analyze",
                                                               "analyze-by")]  # fmt: skip
        plan += [("analyze", "csv", small, args.small),
                 ("old-estimate", "csv", small, args.small),
                 ("old-analyze", "csv", small, args.small)]  # fmt: skip
        for case, kind, files, rows in plan:
            r = run_case(case, files[kind])
            r.update(case=case, format=kind, rows=rows, baseline=case.startswith("old-"))
            print(f"{case:13s} {kind:8s} {rows:>10,d} rows  {r['seconds']:7.2f} s  "
                  f"{r['rows_per_s'] / 1e6:6.2f} M rows/s  peak {r['peak_mb']:7.1f} MB",
                  file=sys.stderr)  # fmt: skip
            results.append(r)
    new_big = [r for r in results if not r["baseline"] and r["rows"] == args.rows]
    worst_rate = min(r["rows_per_s"] for r in new_big)
    worst_peak = max(r["peak_mb"] for r in results if not r["baseline"])
    payload = {
        "benchmark": "streaming survey-file reader",
        "rows": args.rows,
        "file_bytes": sizes,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "results": results,
        "worst_rows_per_s": worst_rate,
        "worst_peak_mb": worst_peak,
        "target_rows_per_s": TARGET_ROWS_PER_S,
        "target_peak_mb": TARGET_PEAK_MB,
        "targets_met": worst_rate >= TARGET_ROWS_PER_S and worst_peak < TARGET_PEAK_MB,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "files.json").write_text(json.dumps(payload, indent=2) + "\n")
    lines = [
        "# Survey-file reading benchmark",
        "",
        f"{args.rows:,} rows: CSV {sizes['csv'] / 1e6:.0f} MB (report 0/1 with 1% empty, "
        f"region of 20 labels, free-text comment), Parquet {sizes['parquet'] / 1e6:.0f} MB. "
        f"Each case in a fresh process; peak = its peak resident memory (VmHWM). Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs.",
        "",
        "| case | format | rows | seconds | M rows/s | peak MB |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        name = r["case"] + (" (old reader, baseline)" if r["baseline"] else "")
        lines.append(
            f"| {name} | {r['format']} | {r['rows']:,} | {r['seconds']:.2f} | "
            f"{r['rows_per_s'] / 1e6:.2f} | {r['peak_mb']:.0f} |"
        )
    lines += [
        "",
        f"Slowest streaming case: {worst_rate / 1e6:.2f} M rows/s (target >= "
        f"{TARGET_ROWS_PER_S / 1e6:.0f}); largest streaming peak: {worst_peak:.0f} MB (target < "
        f"{TARGET_PEAK_MB:.0f}). Targets met: {payload['targets_met']}.",
    ]
    text = "\n".join(lines) + "\n"
    (OUT / "files.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
