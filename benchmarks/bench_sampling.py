"""Benchmark: a design-based randomized-response estimate with Taylor variance.

10**7 respondents in 1,000 strata and 50,000 PSUs (clusters), weighted, answering through
Warner's design (seeded): ``SampleDesign(weights=, strata=, psu=)`` and
``survey_estimate(design, reports, sample)`` (the Hajek prevalence, its Taylor SE, the
Horvitz-Thompson total, the design effect and df), timed together and apart, median of
``REPEATS`` runs.  Baseline, same run: samplics' ``TaylorEstimator`` (mean of the reports
under the same strata, PSUs and weights; the RR de-biasing is a division on top) at 10**6
respondents, where it takes seconds (it loops over strata in Python: at 10**7 it would take
minutes); ours is timed at 10**6 too and the ratio recorded, and both SEs are checked equal.

Writes ``benchmarks/results/sampling.md`` and ``sampling.json``.  Target: < 10 s at 10**7
on one core.  Run: ``.venv/bin/python benchmarks/bench_sampling.py [--repeats R]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from deniable.designs import Warner
from deniable.sampling import SampleDesign, survey_estimate

N = 10**7
N_SMALL = 10**6
STRATA = 1000
PSUS = 50_000
TARGET_SECONDS = 10.0
OUT = Path(__file__).resolve().parent / "results"


def sample(n: int, seed: int = 20261127) -> dict[str, Any]:
    """``n`` respondents in ``STRATA`` strata of ``PSUS / STRATA`` PSUs each, weighted, with
    Warner reports of a trait whose prevalence varies by cluster."""
    rng = np.random.default_rng(seed)
    cluster = np.sort(rng.integers(0, PSUS, n))
    per = PSUS // STRATA
    effect = rng.normal(0, 0.5, PSUS)[cluster]
    truth = (rng.random(n) < 1 / (1 + np.exp(1 - effect))).astype(np.int8)
    design = Warner(0.75)
    return {
        "strata": (cluster // per).astype(np.int32),
        "psu": (cluster % per).astype(np.int32),
        "weights": rng.uniform(1, 5, n),
        "reports": design.randomize(truth, rng=rng),
        "design": design,
    }


def median_seconds(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def ours(data: dict[str, Any], repeats: int) -> dict[str, Any]:
    def build() -> SampleDesign:
        return SampleDesign(weights=data["weights"], strata=data["strata"], psu=data["psu"])

    build_s, design = median_seconds(build, repeats)
    est_s, est = median_seconds(
        lambda: survey_estimate(data["design"], data["reports"], design), repeats
    )
    both_s, _ = median_seconds(
        lambda: survey_estimate(data["design"], data["reports"], build()), repeats
    )
    return {"design_seconds": build_s, "estimate_seconds": est_s, "total_seconds": both_s,
            "value": est.value, "se": est.se, "se_report": est.se_report, "df": est.df}  # fmt: skip


def samplics_seconds(data: dict[str, Any]) -> tuple[float, float] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from samplics.estimation import TaylorEstimator
            from samplics.utils.types import PopParam
    except ImportError:  # pragma: no cover - samplics is a dev dependency
        return None
    psu = data["strata"].astype(np.int64) * (PSUS // STRATA) + data["psu"]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = TaylorEstimator(PopParam.mean)
        ref.estimate(
            data["reports"].astype(float), data["weights"], stratum=data["strata"], psu=psu
        )
    return time.perf_counter() - t0, float(ref.stderror)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    small = sample(N_SMALL)
    ours_small = ours(small, args.repeats)
    peer = samplics_seconds(small)
    del small
    big = ours(sample(N), args.repeats)
    result: dict[str, Any] = {
        "benchmark": "design-based Warner estimate with Taylor variance",
        "respondents": N, "strata": STRATA, "psus": PSUS, "repeats": args.repeats,
        "python": platform.python_version(), "numpy": np.__version__,
        "machine": platform.machine(), "ours_1e7": big, "ours_1e6": ours_small,
        "target_seconds": TARGET_SECONDS, "meets_target": big["total_seconds"] < TARGET_SECONDS,
    }  # fmt: skip
    if peer is not None:
        seconds, se_report = peer
        result["samplics_1e6"] = {"seconds": seconds, "se_report": se_report}
        result["samplics_over_ours_1e6"] = seconds / ours_small["total_seconds"]
        result["se_relative_difference_1e6"] = abs(se_report / ours_small["se_report"] - 1)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "sampling.json").write_text(json.dumps(result, indent=2) + "\n")
    md = [
        "# Design-based estimation benchmark",
        "",
        f"A Warner item (p = 0.75) under a stratified clustered weighted design: {STRATA:,} "
        f"strata, {PSUS:,} PSUs; `SampleDesign(...)` then `survey_estimate(...)` (Hajek "
        f"prevalence, Taylor SE, Horvitz-Thompson total, design effect, df); median of "
        f"{args.repeats} runs, one process, Python {platform.python_version()}, numpy "
        f"{np.__version__}.",
        "",
        "| respondents | build the design (s) | estimate (s) | both (s) |",
        "| ---: | ---: | ---: | ---: |",
        *(
            f"| {n:,} | {r['design_seconds']:.2f} | {r['estimate_seconds']:.2f} | "
            f"{r['total_seconds']:.2f} |"
            for n, r in ((N_SMALL, ours_small), (N, big))
        ),
        "",
    ]
    if peer is not None:
        md += [
            f"samplics `TaylorEstimator` (mean of the reports, same strata, PSUs and weights) "
            f"at {N_SMALL:,}: {peer[0]:.2f} s, {result['samplics_over_ours_1e6']:.0f}x ours; "
            f"its SE of the report mean and ours differ by "
            f"{result['se_relative_difference_1e6']:.1e} (relative).  At {N:,} samplics "
            "loops over 1,000 strata of 10**7 rows and is not timed.",
            "",
        ]
    md.append(f"Target: both < {TARGET_SECONDS:g} s at {N:,}: "
              f"{'met' if result['meets_target'] else 'NOT met'}.")  # fmt: skip
    md.append("")
    (OUT / "sampling.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0 if result["meets_target"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
