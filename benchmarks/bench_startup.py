"""Benchmark: how fast ``import deniable``, a first estimate and ``deniable --help`` start.

Each command runs in a fresh process (``subprocess.run``, wall time around it), repeated
``REPEATS`` times, interleaved (repeat 1 of every command, then repeat 2, ...) so that a burst
of load on the shared machine spoils a few repeats of every command rather than all of one;
the median is reported, after one untimed warm-up run of each command (so the files are in
the page cache).  The baselines run in the same loop: the bare interpreter (``python -c
pass``) and ``python -c "import numpy"``; the ratios to ``import numpy`` compare across runs
and machines better than seconds do.

Targets (issue 8): ``import deniable`` under 0.3 s, ``deniable --help`` under 0.5 s.  A
``python -X importtime`` profile of ``deniable --help`` lists the packages it spends its
time importing (each module's own time, summed by package), biggest first.

Writes ``benchmarks/results/startup.md`` and ``startup.json``.
Run: ``.venv/bin/python benchmarks/bench_startup.py [--repeats R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results"
PY = sys.executable
EXE = str(Path(PY).parent / "deniable")
REPEATS = 21

#: name -> (command, target in seconds or None)
COMMANDS: dict[str, tuple[list[str], float | None]] = {
    "python -c pass": ([PY, "-c", "pass"], None),
    "import numpy": ([PY, "-c", "import numpy"], None),
    "import deniable": ([PY, "-c", "import deniable"], 0.3),
    "import deniable; TwoCoin().estimate(yes=1, n=2)": (
        [PY, "-c", "import deniable; deniable.TwoCoin().estimate(yes=1, n=2)"],
        None,
    ),
    "deniable --help": ([EXE, "--help"], 0.5),
}
BASELINE = "import numpy"


def run_once(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def import_profile(cmd: list[str], top: int = 12) -> list[dict[str, float | str]]:
    """Where ``cmd`` spends its import time (``-X importtime``): the modules' own ("self")
    times summed by package (the top-level package; for deniable its subpackage), the median
    of 5 runs, biggest first."""
    runs: dict[str, list[float]] = {}
    for _ in range(5):
        done = subprocess.run(
            [PY, "-X", "importtime", *cmd], capture_output=True, text=True, check=True
        )
        totals: dict[str, float] = {}
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "cumulative" in line:
                continue
            self_us, _cumulative_us, name = line.split(":", 1)[1].split("|", 2)
            parts = name.strip().split(".")
            group = ".".join(parts[:2]) if parts[0] == "deniable" else parts[0]
            totals[group] = totals.get(group, 0.0) + int(self_us) / 1e6
        for group, seconds in totals.items():
            runs.setdefault(group, []).append(seconds)
    medians = {group: statistics.median(times) for group, times in runs.items()}
    ranked = sorted(medians.items(), key=lambda kv: -kv[1])[:top]
    return [{"package": group, "seconds": round(sec, 4)} for group, sec in ranked]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()
    load_before = os.getloadavg()
    for cmd, _ in COMMANDS.values():  # warm-up: page cache, .pyc files
        run_once(cmd)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeats):
        for name, (cmd, _target) in COMMANDS.items():
            times[name].append(run_once(cmd))
    load_after = os.getloadavg()
    profile = import_profile(["-m", "deniable.cli", "--help"])
    base = statistics.median(times[BASELINE])
    rows = []
    for name, (_cmd, target) in COMMANDS.items():
        med = statistics.median(times[name])
        rows.append(
            {
                "command": name,
                "median_seconds": round(med, 4),
                "min_seconds": round(min(times[name]), 4),
                "ratio_to_import_numpy": round(med / base, 3),
                "target_seconds": target,
                "meets_target": None if target is None else med < target,
            }
        )
    import numpy

    result = {
        "benchmark": "startup: fresh processes, wall time",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "machine": platform.machine(),
        "cpus": len(os.sched_getaffinity(0)),
        "repeats": args.repeats,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "results": rows,
        "deniable_help_imports": profile,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "startup.json").write_text(json.dumps(result, indent=2) + "\n")
    md = [
        "# Startup benchmark",
        "",
        f"{result['date']}; Python {result['python']}, numpy {result['numpy']}, "
        f"{result['cpus']} shared CPUs (load {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after). Each command in a fresh process, median of "
        f"{args.repeats} interleaved runs after a warm-up; ratios to `{BASELINE}` measured "
        "in the same loop.",
        "",
        "| command | median s | min s | / import numpy | target | met |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        target = "-" if r["target_seconds"] is None else f"< {r['target_seconds']:g} s"
        met = "-" if r["meets_target"] is None else ("yes" if r["meets_target"] else "**no**")
        md.append(
            f"| `{r['command']}` | {r['median_seconds']:.3f} | {r['min_seconds']:.3f} | "
            f"{r['ratio_to_import_numpy']:.2f} | {target} | {met} |"
        )
    md += [
        "",
        "Where `deniable --help` spends its imports (`python -X importtime -m deniable.cli "
        "--help`: each module's own import time, summed by package, median of 5 runs; the "
        "profiler itself adds overhead):",
        "",
        "| package | s |",
        "| --- | ---: |",
        *(f"| `{p['package']}` | {p['seconds']:.3f} |" for p in profile),
        "",
    ]
    (OUT / "startup.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
