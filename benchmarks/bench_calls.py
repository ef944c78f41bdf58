"""Per-call cost of small calls: one report, a tally of 10 reports, one estimate.

A per-respondent loop (a web form randomizing each answer as it arrives, a client SDK)
calls ``randomize`` with one answer at a time, and a dashboard tallies and estimates a few
reports at a time: there the fixed cost of a call matters, not the throughput of
``benchmarks/bench.py``.  Each row is the median over ``--rounds`` rounds of the time per
call in a round of many calls (``timeit`` with the statement as a string, so no wrapper is
timed), the rounds of all rows interleaved (round 1 of every row, then round 2, ...) so
that a burst of load from other processes spoils a few rounds of every row rather than all
the rounds of one.

Baselines, timed in the same rounds: a trivial Python function call, ``random.random() <
p`` (the Python per-user coin flip), one raw word from the seeded bit generator
(``bit_generator.random_raw()``) and one word of the CSPRNG (``os.urandom(8)`` read as an
int).  Peers: diffprivlib's per-user binary randomized response
(``diffprivlib.mechanisms.Binary(epsilon=1).randomise``), with its default CSPRNG
(``secrets.SystemRandom``) and seeded, when diffprivlib is installed (``scripts/bench``
installs ``benchmarks/requirements-peers.txt``; without it the rows say "not installed").

Targets (issue 8, section 7): one binary report under 2 us; tally + estimate at k = 1024
under 0.3 ms for small n.

Writes ``benchmarks/results/calls.md`` and ``calls.json`` and prints the markdown.  Run:
``.venv/bin/python benchmarks/bench_calls.py`` (``--quick``: fewer rounds).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import deniable  # noqa: E402
from deniable import Binary, Categorical, TwoCoin  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SEED = 20240601
#: Seconds of calls in one round of one row (the number of calls is calibrated to it).
ROUND_SECONDS = 0.004

#: (row key, target in microseconds, description).
TARGETS = (
    ("binary-scalar-pcg64", 2.0, "one binary report (scalar answer, seeded) < 2 us"),
    ("cat1024-tally-estimate", 300.0, "tally of 10 reports + estimate at k = 1024 < 0.3 ms"),
)


@dataclass
class Row:
    """One timed statement."""

    key: str
    group: str
    label: str
    stmt: str
    env: dict[str, Any] = field(repr=False)
    number: int = 0
    times: list[float] = field(default_factory=list)  # seconds per call, one per round

    def calibrate(self) -> None:
        timer = timeit.Timer(self.stmt, globals=self.env)
        number = 1
        while True:
            t = timer.timeit(number)
            if t >= ROUND_SECONDS / 4 or number >= 1 << 22:
                break
            number *= 4
        self.number = max(1, round(number * ROUND_SECONDS / max(t, 1e-9)))

    def run_round(self) -> None:
        t = timeit.Timer(self.stmt, globals=self.env).timeit(self.number)
        self.times.append(t / self.number)

    @property
    def median_us(self) -> float:
        return statistics.median(self.times) * 1e6

    @property
    def best_us(self) -> float:
        return min(self.times) * 1e6


def _diffprivlib() -> tuple[Any, str]:
    try:
        import diffprivlib
        from diffprivlib.mechanisms import Binary as DPBinary  # type: ignore[import-untyped]
    except ImportError as exc:  # not installed, or a version that does not import
        return None, f"not installed ({type(exc).__name__}: {exc})"
    return DPBinary, str(diffprivlib.__version__)


def make_rows() -> tuple[list[Row], str]:
    gen = np.random.Generator(np.random.PCG64(SEED))
    binary = Binary(1.0)
    two_coin = TwoCoin()
    cat = Categorical.from_epsilon(1.0, 1024)
    cat16 = Categorical.from_epsilon(1.0, 16)
    ten_binary = binary.randomize(np.array([1, 0] * 5, dtype=np.uint8), rng=gen)
    ten_cat = cat.randomize(np.arange(10, dtype=np.uint16) * 97, rng=gen)
    env: dict[str, Any] = {
        "np": np,
        "os": os,
        "random": random,
        "gen": gen,
        "bits": gen.bit_generator,
        "binary": binary,
        "two_coin": two_coin,
        "cat": cat,
        "cat16": cat16,
        "one_binary_list": [1],
        "ten_binary": ten_binary,
        "ten_cat": ten_cat,
        "tally_binary": binary.tally(ten_binary),
        "tally_cat": cat.tally(ten_cat),
        "p": binary.p_yes_given_1,
        "f": lambda x: x,
    }
    random.seed(SEED)

    def row(key: str, group: str, label: str, stmt: str) -> Row:
        return Row(key, group, label, stmt, env)

    rows = [
        row("py-call", "baseline", "trivial Python call `f(1)`", "f(1)"),
        row("py-random", "baseline", "`random.random() < p`", "random.random() < p"),
        row(
            "raw-word",
            "baseline",
            "one seeded word `bit_generator.random_raw()`",
            "bits.random_raw()",
        ),
        row(
            "urandom-word",
            "baseline",
            "one CSPRNG word `int.from_bytes(os.urandom(8))`",
            "int.from_bytes(os.urandom(8), 'little')",
        ),
        row(
            "binary-scalar-pcg64",
            "report",
            "`Binary(1).randomize(1, rng=gen)`",
            "binary.randomize(1, rng=gen)",
        ),
        row(
            "binary-scalar-csprng",
            "report",
            "`Binary(1).randomize(1)` (CSPRNG)",
            "binary.randomize(1)",
        ),
        row(
            "twocoin-scalar-pcg64",
            "report",
            "`TwoCoin().randomize(1, rng=gen)`",
            "two_coin.randomize(1, rng=gen)",
        ),
        row(
            "binary-list1-pcg64",
            "report",
            "`Binary(1).randomize([1], rng=gen)` (array path)",
            "binary.randomize(one_binary_list, rng=gen)",
        ),
        row(
            "cat1024-scalar-pcg64",
            "report",
            "`Categorical k=1024 .randomize(5, rng=gen)`",
            "cat.randomize(5, rng=gen)",
        ),
        row(
            "cat1024-scalar-csprng",
            "report",
            "`Categorical k=1024 .randomize(5)` (CSPRNG)",
            "cat.randomize(5)",
        ),
        row("binary-tally10", "tally", "binary: tally of 10 reports", "binary.tally(ten_binary)"),
        row("cat1024-tally10", "tally", "k = 1024: tally of 10 reports", "cat.tally(ten_cat)"),
        row("tally-add-1024", "tally", "k = 1024: `a + b` of two tallies", "tally_cat + tally_cat"),
        row(
            "binary-estimate",
            "estimate",
            "binary: estimate of a tally",
            "binary.estimate(tally_binary)",
        ),
        row(
            "cat1024-estimate",
            "estimate",
            "k = 1024: estimate of a tally",
            "cat.estimate(tally_cat)",
        ),
        row(
            "cat1024-tally-estimate",
            "estimate",
            "k = 1024: tally of 10 reports + estimate",
            "cat.estimate(cat.tally(ten_cat))",
        ),
        row(
            "cat1024-estimate-cov",
            "estimate",
            "k = 1024: estimate + its k x k covariance",
            "cat.estimate(tally_cat).covariance",
        ),
    ]
    dp_binary, dp_version = _diffprivlib()
    if dp_binary is not None:
        env["dp_csprng"] = dp_binary(epsilon=1.0, value0="0", value1="1")
        env["dp_seeded"] = dp_binary(epsilon=1.0, value0="0", value1="1", random_state=SEED)
        rows += [
            row(
                "diffprivlib-csprng",
                "peer",
                "diffprivlib `Binary(epsilon=1).randomise('1')` (default: `secrets.SystemRandom`)",
                "dp_csprng.randomise('1')",
            ),
            row(
                "diffprivlib-seeded",
                "peer",
                "diffprivlib `Binary(epsilon=1, random_state=seed).randomise('1')`",
                "dp_seeded.randomise('1')",
            ),
        ]
    return rows, dp_version


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "deniable": deniable.__version__,
        "git_commit": commit,
    }


def markdown(result: dict[str, Any]) -> str:
    m, cfg = result["machine"], result["config"]
    by_key = {r["key"]: r for r in result["rows"]}
    base = by_key["py-random"]["median_us"]
    lines = [
        "# Benchmark: small calls",
        "",
        f"{m['date']} · {m['cpu']} ({m['logical_cpus']} logical CPUs, shared) · Python "
        f"{m['python']} · numpy {m['numpy']} · deniable {m['deniable']} (git "
        f"{m['git_commit'] or '?'}) · median of {cfg['rounds']} interleaved rounds of "
        f"~{ROUND_SECONDS * 1e3:g} ms each · load average {cfg['load_before']} before, "
        f"{cfg['load_after']} after · diffprivlib: {cfg['diffprivlib']}.",
        "",
        "Microseconds per call (median over the rounds; *best* is the fastest round).",
        "*x random()* is the median over that of `random.random() < p` in the same run.",
        "",
        "| group | call | median µs | best µs | x random() |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['group']} | {r['label']} | {r['median_us']:.2f} | {r['best_us']:.2f} "
            f"| {r['median_us'] / base:.0f} |"
        )
    if "diffprivlib-csprng" not in by_key:
        lines += ["", f"diffprivlib rows: {cfg['diffprivlib']}."]
    lines += [
        "",
        "Targets (issue 8, section 7):",
        "",
        "| target | measured | met |",
        "| --- | --- | --- |",
    ]
    for t in result["targets"]:
        lines.append(f"| {t['target']} | {t['median_us']:.2f} µs | {'yes' if t['met'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 rounds instead of 31")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--name", default="calls", help="file stem of the .md and .json results")
    args = ap.parse_args(argv)
    rounds = args.rounds if args.rounds is not None else (5 if args.quick else 31)
    if rounds < 1:
        ap.error(f"--rounds must be >= 1, got {rounds}")
    wall = time.perf_counter()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows, dp_version = make_rows()
    for r in rows:
        r.calibrate()
    for i in range(rounds):
        if i % 10 == 0:
            print(f"round {i + 1}/{rounds} ...", file=sys.stderr, flush=True)
        for r in rows:
            r.run_round()
    result: dict[str, Any] = {
        "machine": machine_info(),
        "config": {
            "rounds": rounds,
            "round_seconds": ROUND_SECONDS,
            "seed": SEED,
            "load_before": load_before,
            "load_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            "wall_seconds": time.perf_counter() - wall,
            "diffprivlib": dp_version,
        },
        "rows": [
            {
                "key": r.key,
                "group": r.group,
                "label": r.label,
                "stmt": r.stmt,
                "calls_per_round": r.number,
                "median_us": r.median_us,
                "best_us": r.best_us,
            }
            for r in rows
        ],
    }
    by_key = {r["key"]: r for r in result["rows"]}
    result["targets"] = [
        {
            "key": key,
            "target": text,
            "limit_us": limit,
            "median_us": by_key[key]["median_us"],
            "met": by_key[key]["median_us"] < limit,
        }
        for key, limit, text in TARGETS
    ]
    md = markdown(result)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out_dir / f"{args.name}.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
