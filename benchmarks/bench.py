"""Throughput and memory of randomize + tally + estimate, against bare numpy in the same run.

Cases: binary RR (``Binary(epsilon=1.0)``, one 64-bit word per report) and k-ary RR
(``Categorical.from_epsilon(1.0, k)`` for k = 16 and 1024, two words per report), at
n = 10**6 and 10**7, with three sources: a seeded ``Generator(PCG64(seed))`` (``pcg64``),
the default CSPRNG (``rng=None``: ``deniable.SystemRandom()``, the process's ChaCha20
keystream; ``default``) and ``SystemRandom(source="os")`` (every word from ``os.urandom``;
``os``).

Baselines, timed in the same loop as the cases (so they see the same machine load):
``bit_generator.random_raw(n)`` and ``rng.random(n) < p`` for the seeded source,
``SystemRandom().random_raw(n)`` (the keystream's own speed) for the default source,
``os.urandom(8 n)`` for ``os``, and each word source drawn in blocks of ``CHUNK`` words as
the randomizers draw them.  *r+t* times what a caller who wants both calls:
``design.randomize_and_tally(truth, rng=...)``, the reports and their tally in one pass
(bit for bit ``randomize`` then ``tally``; the JSON also keeps the rate of the two calls one
after the other, ``randomize_then_tally``).  *r+t vs words* is its rate in words (reports
times words per report) over the source's best word baseline: the share of the source's
speed that the randomizer and the tally keep (target, issue 15: at least 0.8 with the
default source).  Every time is the best of ``--repeats`` runs, taken
interleaved (repeat 1 of everything, then repeat 2, ...), so that the repeats of one
measurement are spread over the whole run.  Peak memory is the tracemalloc
peak of one extra untimed run of each stage (numpy reports its data allocations to
tracemalloc), divided by n.

Writes ``benchmarks/results/latest.md`` and ``latest.json`` and prints the markdown.
Run it through ``scripts/bench`` (``--quick`` for n = 10**6 only, ``--repeats R``).
"""

from __future__ import annotations

import os

# Single core: pin every BLAS / OpenMP pool before numpy loads (numpy's elementwise ufuncs are
# single-threaded anyway).  OPENBLAS_CORETYPE, if the environment sets it, is left alone.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import deniable  # noqa: E402
from deniable.randomness import CHUNK  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SEED = 20240601
PREVALENCE = 0.3  # share of "yes" answers in the binary truth

#: The sources of every case, in table order (module docstring).
SOURCES = ("pcg64", "default", "os")
#: (description, design key, source, minimum M reports/s) from the foundation issue.
TARGETS = (
    ("binary RR, seeded PCG64", "binary", "pcg64", 100.0),
    ("binary RR, CSPRNG (the default)", "binary", "default", 25.0),
    ("k-ary RR k = 1024, seeded PCG64", "k=1024", "pcg64", 40.0),
)
#: Randomize + tally with the default source, in words/s, over the keystream's words/s.
KEEP_TARGET = 0.8


@dataclass(frozen=True)
class Case:
    """One randomizer under test."""

    key: str
    label: str
    design: Any
    words_per_report: int
    k: int

    def truth(self, n: int, rng: np.random.Generator) -> np.ndarray[Any, Any]:
        """True answers in the compact dtype a caller would store them in."""
        if self.k == 2:
            return (rng.random(n) < PREVALENCE).astype(np.uint8)
        return rng.integers(0, self.k, size=n, dtype=np.uint16)


def make_cases() -> list[Case]:
    return [
        Case("binary", "Binary(epsilon=1)", deniable.Binary(1.0), 1, 2),
        Case("k=16", "Categorical k=16", deniable.Categorical.from_epsilon(1.0, 16), 2, 16),
        Case("k=1024", "Categorical k=1024", deniable.Categorical.from_epsilon(1.0, 1024), 2, 1024),
    ]


def make_source(kind: str) -> np.random.Generator | deniable.SystemRandom | None:
    if kind == "pcg64":
        return np.random.Generator(np.random.PCG64(SEED))
    if kind == "default":
        return None  # what a caller gets without asking: SystemRandom(), the keystream
    return deniable.SystemRandom(source="os")


#: The clock of every timing: wall clock, or the thread's CPU time with ``--cpu-time``
#: (``time.thread_time``: on a shared machine, the time other processes hold the core is
#: not counted; what they do to its caches still is).
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "thread": time.thread_time}
_clock = CLOCKS["wall"]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = _clock()
    result = fn()
    return _clock() - start, result


def traced_peak(fn: Callable[[], Any]) -> tuple[int, Any]:
    """Peak bytes allocated (tracemalloc) while ``fn`` runs, above what was live before."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - before, result


def in_blocks(draw: Callable[[int], Any], n: int) -> None:
    """Call ``draw(m)`` on blocks of ``CHUNK`` (as the randomizers do) and drop the results."""
    for start in range(0, n, CHUNK):
        draw(min(CHUNK, n - start))


def baselines(kind: str, n: int) -> dict[str, Callable[[], Any]]:
    """Bare-numpy work of the same size: what a randomizer cannot beat.

    Names ending in ``[words]`` count 64-bit words; the best of them is the word rate that
    ``vs words`` compares with.  The ``in blocks`` variants draw the words block by block as
    the randomizers do (no n-sized allocation to fault in), the others in one call.
    """
    if kind == "pcg64":
        rng = np.random.Generator(np.random.PCG64(SEED + 1))
        bitgen = rng.bit_generator
        p = deniable.Binary(1.0).p_yes_given_1
        return {
            "random_raw(n) [words]": lambda: bitgen.random_raw(n),
            "random_raw in blocks [words]": lambda: in_blocks(bitgen.random_raw, n),
            "random(n) < p": lambda: rng.random(n) < p,
        }

    if kind == "default":
        keystream = deniable.SystemRandom()
        return {
            "SystemRandom().random_raw(n) [words]": lambda: keystream.random_raw(n),
            "SystemRandom().random_raw in blocks [words]": lambda: in_blocks(
                keystream.random_raw, n
            ),
        }

    def urandom_words(m: int) -> np.ndarray[Any, Any]:
        return np.frombuffer(os.urandom(8 * m), dtype=np.uint64)

    return {
        "os.urandom(8n) [words]": lambda: urandom_words(n),
        "os.urandom in blocks [words]": lambda: in_blocks(urandom_words, n),
    }


def check_estimate(case: Case, truth: np.ndarray[Any, Any], est: Any) -> bool:
    """Sanity: the estimate lies within 6 SE of the truth's shares (false alarm ~2e-9 each)."""
    if case.k == 2:
        share = float(np.count_nonzero(truth)) / truth.size
        return bool(abs(est.value - share) < 6 * est.se + 1e-12)
    shares = np.bincount(truth, minlength=case.k) / truth.size
    return bool(np.all(np.abs(est.values - shares) < 6 * est.se + 1e-12))


STAGES = ("randomize", "tally", "estimate", "randomize_and_tally")


@dataclass
class Block:
    """Best times so far at one (n, source): baselines and the three stages of every case."""

    n: int
    kind: str
    cases: list[Case]
    truths: dict[str, np.ndarray[Any, Any]]

    def __post_init__(self) -> None:
        self.base_fns = baselines(self.kind, self.n)
        self.base_best = dict.fromkeys(self.base_fns, math.inf)
        self.best = {c.key: dict.fromkeys(STAGES, math.inf) for c in self.cases}
        self.ok = dict.fromkeys((c.key for c in self.cases), True)

    def run_once(self) -> None:
        """One repeat of everything in this block, baselines first."""
        for name, fn in self.base_fns.items():
            t, out = timed(fn)
            del out
            self.base_best[name] = min(self.base_best[name], t)
        for case in self.cases:
            rng = make_source(self.kind)
            truth = self.truths[case.key]
            t_r, reports = timed(partial(case.design.randomize, truth, rng=rng))
            t_t, tally = timed(partial(case.design.tally, reports))
            del reports
            t_e, est = timed(partial(case.design.estimate, tally))
            self.ok[case.key] &= check_estimate(case, truth, est)
            # what a caller who wants both calls: the reports and their tally in one pass
            t_rt, both = timed(
                partial(case.design.randomize_and_tally, truth, rng=make_source(self.kind))
            )
            self.ok[case.key] &= check_estimate(case, truth, case.design.estimate(both[1]))
            del both
            for stage, t in zip(STAGES, (t_r, t_t, t_e, t_rt), strict=True):
                self.best[case.key][stage] = min(self.best[case.key][stage], t)

    def rows(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        n, kind = self.n, self.kind
        base_rows = [
            {"n": n, "source": kind, "baseline": name, "seconds": t, "mps": n / t / 1e6}
            for name, t in self.base_best.items()
        ]
        words_mps = max(
            n / t / 1e6 for name, t in self.base_best.items() if name.endswith("[words]")
        )
        rows = []
        for case in self.cases:
            b = self.best[case.key]
            total = b["randomize"] + b["tally"] + b["estimate"]
            rand_mps = n / b["randomize"] / 1e6
            kept_mps = n / b["randomize_and_tally"] / 1e6
            then_mps = n / (b["randomize"] + b["tally"]) / 1e6
            rows.append(
                {
                    "design": case.key,
                    "label": case.label,
                    "n": n,
                    "source": kind,
                    "words_per_report": case.words_per_report,
                    "seconds": b,
                    "total_seconds": total,
                    "mps": {
                        "randomize": rand_mps,
                        "tally": n / b["tally"] / 1e6,
                        "randomize_tally": kept_mps,
                        "randomize_then_tally": then_mps,
                        "total": n / total / 1e6,
                    },
                    "words_mps": words_mps,
                    # share of the raw word rate achieved: 1.0 = as fast as drawing the words
                    "randomize_vs_words": rand_mps * case.words_per_report / words_mps,
                    "randomize_tally_vs_words": kept_mps * case.words_per_report / words_mps,
                    "randomize_then_tally_vs_words": then_mps * case.words_per_report / words_mps,
                    "estimate_ok": self.ok[case.key],
                }
            )
        return rows, base_rows


def measure_memory(
    n: int, kind: str, cases: list[Case], truths: dict[str, np.ndarray[Any, Any]]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name, fn in baselines(kind, n).items():
        peak, out = traced_peak(fn)
        del out
        rows.append({"what": name, "design": "baseline", "n": n, "source": kind, "peak": peak})
    for case in cases:
        rng = make_source(kind)
        truth = truths[case.key]
        peak_r, reports = traced_peak(partial(case.design.randomize, truth, rng=rng))
        peak_t, tally = traced_peak(partial(case.design.tally, reports))
        del reports
        peak_e, _ = traced_peak(partial(case.design.estimate, tally))
        peak_rt, _ = traced_peak(
            partial(case.design.randomize_and_tally, truth, rng=make_source(kind))
        )
        for stage, peak in (
            ("randomize", peak_r),
            ("tally", peak_t),
            ("estimate", peak_e),
            ("randomize_and_tally", peak_rt),
        ):
            rows.append({"what": stage, "design": case.key, "n": n, "source": kind, "peak": peak})
    for row in rows:
        row["bytes_per_report"] = row["peak"] / n
    return rows


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "cpus_usable": affinity,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "deniable": deniable.__version__,
        "platform": platform.platform(),
        "git_commit": commit,
        "threads": {
            v: os.environ.get(v)
            for v in (
                "OPENBLAS_NUM_THREADS",
                "OMP_NUM_THREADS",
                "MKL_NUM_THREADS",
                "NUMEXPR_NUM_THREADS",
                "OPENBLAS_CORETYPE",
            )
        },
    }


def evaluate_targets(rows: list[dict[str, Any]], mem: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Throughput targets on the total (randomize + tally + estimate) at every n; memory."""
    out: list[dict[str, Any]] = []
    for n in sorted({r["n"] for r in rows}):
        for label, key, source, minimum in TARGETS:
            row = next(r for r in rows if (r["design"], r["source"], r["n"]) == (key, source, n))
            total, rand = row["mps"]["total"], row["mps"]["randomize"]
            out.append(
                {
                    "target": f"{label}: >= {minimum:g} M reports/s",
                    "n": n,
                    "total_mps": total,
                    "randomize_mps": rand,
                    "met": total >= minimum,
                }
            )
        # memory O(n) bytes, never O(n k): randomize's bytes per report must not grow with k
        rand_mem = {
            (r["design"], r["source"]): r["bytes_per_report"]
            for r in mem
            if r["what"] == "randomize" and r["n"] == n
        }
        for case in ("binary", "k=16", "k=1024"):
            key = (case, "default", n)
            row = next(r for r in rows if (r["design"], r["source"], r["n"]) == key)
            share = row["randomize_tally_vs_words"]
            out.append(
                {
                    "target": f"{row['label']}, default source: randomize + tally >= "
                    f"{KEEP_TARGET} of the keystream's words/s",
                    "n": n,
                    "share": share,
                    "randomize_tally_mps": row["mps"]["randomize_tally"],
                    "words_mps": row["words_mps"],
                    "words_per_report": row["words_per_report"],
                    "met": share >= KEEP_TARGET,
                }
            )
        for source in SOURCES:
            b16, b1024 = rand_mem[("k=16", source)], rand_mem[("k=1024", source)]
            out.append(
                {
                    "target": f"memory O(n), not O(n k), {source}: randomize bytes/report, "
                    "k = 1024 vs k = 16",
                    "n": n,
                    "bytes_per_report_k16": b16,
                    "bytes_per_report_k1024": b1024,
                    "met": b1024 <= 1.05 * b16 + 1.0,
                }
            )
    return out


def fmt_n(n: int) -> str:
    e = round(math.log10(n))
    return f"10^{e}" if 10**e == n else str(n)


def markdown(result: dict[str, Any]) -> str:
    m, cfg = result["machine"], result["config"]
    lines = [
        "# Benchmark: randomize + tally + estimate",
        "",
        f"{m['date']} · {m['cpu']} ({m['cpus_usable']} usable of {m['logical_cpus']} logical "
        f"CPUs, shared) · Python {m['python']} · numpy {m['numpy']} · deniable {m['deniable']} "
        f"(git {m['git_commit'] or '?'}) · one thread · mode {cfg['mode']}, best of "
        f"{cfg['repeats']} interleaved repeats, {cfg.get('clock', 'wall')} clock · load average "
        f"{cfg['load_before']} before, "
        f"{cfg['load_after']} after · {cfg['wall_seconds']:.0f} s.",
        "",
        "Throughput in millions of reports per second (best of the repeats). Sources:",
        "*pcg64* a seeded `Generator(PCG64)`; *default* `rng=None`, i.e. `SystemRandom()`,",
        "the process's ChaCha20 keystream; *os* `SystemRandom(source='os')`, every word from",
        "`os.urandom`. *r+t* is n over the time of `randomize_and_tally` (the reports and",
        "their tally in one pass, what a caller who wants both calls); *total* is n over the",
        "sum of the randomize, tally and estimate times; *vs words* is the randomize rate",
        "times the words per",
        "report (1 binary, 2 k-ary) over the best raw-word baseline of the same source in the",
        "same run (1.00 = as fast as drawing the random words alone), *r+t vs words* the same",
        "for randomize + tally. Truth arrays are uint8 (binary, 30% yes) and uint16 (k-ary,",
        "uniform). *ok*: every estimate was within 6 SE of the truth.",
        "",
        "| design | n | source | randomize | tally | estimate (ms) | r+t | total | vs words "
        "| r+t vs words | ok |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in result["results"]:
        lines.append(
            f"| {r['label']} | {fmt_n(r['n'])} | {r['source']} | {r['mps']['randomize']:.1f} "
            f"| {r['mps']['tally']:.1f} | {r['seconds']['estimate'] * 1e3:.1f} "
            f"| {r['mps']['randomize_tally']:.1f} | {r['mps']['total']:.1f} "
            f"| {r['randomize_vs_words']:.2f} | {r['randomize_tally_vs_words']:.2f} "
            f"| {'yes' if r['estimate_ok'] else 'NO'} |"
        )
    lines += [
        "",
        "Baselines (bare numpy, same run, M/s; *[words]* rows count 64-bit words):",
        "",
        "| n | source | baseline | M/s |",
        "| --- | --- | --- | ---: |",
    ]
    for b in result["baselines"]:
        lines.append(f"| {fmt_n(b['n'])} | {b['source']} | `{b['baseline']}` | {b['mps']:.1f} |")
    lines += [
        "",
        "Peak memory (tracemalloc, bytes per report; randomize includes its output array,",
        "the truth array is the caller's and not counted; estimate is a fixed size in bytes;",
        "r+t is randomize_and_tally, its output included):",
        "",
        "| design | n | source | randomize | tally | estimate (bytes) | r+t |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    mem = result["memory"]
    for r in result["results"]:
        get = {
            x["what"]: x
            for x in mem
            if x["design"] == r["design"] and x["n"] == r["n"] and x["source"] == r["source"]
        }
        lines.append(
            f"| {r['label']} | {fmt_n(r['n'])} | {r['source']} "
            f"| {get['randomize']['bytes_per_report']:.2f} "
            f"| {get['tally']['bytes_per_report']:.2f} | {get['estimate']['peak']:,} "
            f"| {get['randomize_and_tally']['bytes_per_report']:.2f} |"
        )
    for x in mem:
        if x["design"] == "baseline":
            lines.append(
                f"| `{x['what']}` | {fmt_n(x['n'])} | {x['source']} "
                f"| {x['bytes_per_report']:.2f} | | | |"
            )
    lines += [
        "",
        "Targets (foundation issue: throughput is the total of the 3 stages; issue 15: the",
        "share of the default keystream's speed that randomize + tally keep):",
        "",
    ]
    lines += ["| target | measured | met |", "| --- | --- | --- |"]
    for t in result["targets"]:
        if "total_mps" in t:
            got = f"total {t['total_mps']:.1f}, randomize {t['randomize_mps']:.1f} M/s"
        elif "share" in t:
            got = (
                f"{t['share']:.2f}: {t['randomize_tally_mps']:.1f} M reports/s x "
                f"{t['words_per_report']} words vs {t['words_mps']:.1f} M words/s"
            )
        else:
            got = f"{t['bytes_per_report_k16']:.2f} vs {t['bytes_per_report_k1024']:.2f} B/report"
        lines.append(
            f"| {t['target']} (n = {fmt_n(t['n'])}) | {got} | {'yes' if t['met'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 10^6 only, fewer repeats")
    ap.add_argument("--repeats", type=int, default=None, help="best of R (default 15, quick 3)")
    ap.add_argument(
        "--out-dir", type=Path, default=ROOT / "benchmarks" / "results", help="where to write"
    )
    ap.add_argument("--name", default="latest", help="file stem of the .md and .json results")
    ap.add_argument(
        "--cpu-time",
        action="store_true",
        help="time by the thread's CPU time (time.thread_time), not the wall clock",
    )
    args = ap.parse_args(argv)
    global _clock
    clock = "thread" if args.cpu_time else "wall"
    _clock = CLOCKS[clock]
    repeats = args.repeats if args.repeats is not None else (3 if args.quick else 15)
    if repeats < 1:
        ap.error(f"--repeats must be >= 1, got {repeats}")
    sizes = [10**6] if args.quick else [10**6, 10**7]

    wall = time.perf_counter()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    cases = make_cases()
    data_rng = np.random.Generator(np.random.PCG64(SEED - 1))
    rows: list[dict[str, Any]] = []
    base_rows: list[dict[str, Any]] = []
    mem_rows: list[dict[str, Any]] = []
    truths = {n: {c.key: c.truth(n, data_rng) for c in cases} for n in sizes}
    blocks = [Block(n, kind, cases, truths[n]) for n in sizes for kind in SOURCES]
    # Repeats are the outer loop, so the repeats of one measurement are spread over the whole
    # run and a burst of load from other processes spoils at most a few of them.
    for rep in range(repeats):
        print(f"repeat {rep + 1}/{repeats} ...", file=sys.stderr, flush=True)
        for block in blocks:
            block.run_once()
    for block in blocks:
        r, b = block.rows()
        rows += r
        base_rows += b
    for block in blocks:
        mem_rows += measure_memory(block.n, block.kind, cases, block.truths)
    del truths, blocks

    result: dict[str, Any] = {
        "machine": machine_info(),
        "config": {
            "mode": "quick" if args.quick else "full",
            "repeats": repeats,
            "clock": clock,
            "sizes": sizes,
            "seed": SEED,
            "prevalence": PREVALENCE,
            "load_before": load_before,
            "load_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            "wall_seconds": time.perf_counter() - wall,
        },
        "results": rows,
        "baselines": base_rows,
        "memory": mem_rows,
    }
    result["targets"] = evaluate_targets(rows, mem_rows)
    md = markdown(result)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out_dir / f"{args.name}.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
