"""Benchmark: a mixed-effects logistic model with a randomized outcome, 10^5 respondents in
500 groups (issue 16's target: under 60 s).

The data (seeded): 500 schools of 200 pupils, a normal covariate ``x`` and a 0/1 covariate
``girl``, a random school intercept with SD 0.8, true answers from
``logit P(T = 1) = -1 + 0.5 x + 0.3 girl + b_school``, randomized by forced response
(``ForcedResponse(1/6, 1/6)``: P(yes | 1) = 5/6, P(yes | 0) = 1/6).  Timed, one run each
(the whole fit: fixed-effects start, optimizer, observed information, conditional modes):

* ``mixed_logistic_rr(..., method="laplace")``;
* ``mixed_logistic_rr(..., method="agq", n_agq=10)``.

Writes ``benchmarks/results/bench_mixed.md`` and ``bench_mixed.json`` with the estimates
beside the truth.  Run: ``.venv/bin/python benchmarks/bench_mixed.py`` (one core: the
thread variables are set to 1 before numpy loads).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from deniable import ForcedResponse  # noqa: E402
from deniable.estimation import mixed_logistic_rr  # noqa: E402

GROUPS = 500
PER_GROUP = 200
TRUTH = {"Intercept": -1.0, "x": 0.5, "girl": 0.3, "sd(Intercept|school)": 0.8}
TARGET_SECONDS = 60.0
OUT = Path(__file__).resolve().parent / "results"


def survey() -> tuple[pd.DataFrame, ForcedResponse]:
    rng = np.random.default_rng(20261127)
    n = GROUPS * PER_GROUP
    school = np.repeat(np.arange(GROUPS), PER_GROUP)
    x = rng.normal(size=n)
    girl = rng.integers(0, 2, n)
    b = rng.normal(0, TRUTH["sd(Intercept|school)"], GROUPS)
    eta = TRUTH["Intercept"] + TRUTH["x"] * x + TRUTH["girl"] * girl + b[school]
    truth = rng.random(n) < 1 / (1 + np.exp(-eta))
    design = ForcedResponse(1 / 6, 1 / 6)
    y = design.randomize(truth, rng=rng)
    return pd.DataFrame({"y": y, "x": x, "girl": girl, "school": school}), design


def fit(df: pd.DataFrame, design: ForcedResponse, **kwargs: object) -> dict[str, object]:
    t0 = time.perf_counter()
    result = mixed_logistic_rr("y ~ x + girl", df, design, random="(1 | school)", **kwargs)  # type: ignore[arg-type]
    seconds = time.perf_counter() - t0
    rows = {}
    for term in result.terms:
        rows[term] = {
            "estimate": float(result.params[term]),
            "se": float(result.bse[term]),
            "truth": TRUTH[term],
        }
    vc = result.variance_components()[0]
    rows[vc.name] = {"estimate": vc.estimate, "se": vc.se, "truth": TRUTH[vc.name]}
    return {
        "seconds": seconds,
        "converged": result.converged,
        "llf": result.llf,
        "iterations": dict(result.iterations),
        "estimates": rows,
        "notes": list(result.notes),
    }


def main() -> int:
    df, design = survey()
    runs = {
        "Laplace": fit(df, design),
        "AGHQ (10 nodes)": fit(df, design, method="agq", n_agq=10),
    }
    ok = all(float(r["seconds"]) < TARGET_SECONDS for r in runs.values())  # type: ignore[arg-type]
    result = {
        "benchmark": "mixed-effects logistic regression with a randomized outcome",
        "respondents": len(df),
        "groups": GROUPS,
        "design": "ForcedResponse(1/6, 1/6)",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "target_seconds": TARGET_SECONDS,
        "meets_target": ok,
        "runs": runs,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bench_mixed.json").write_text(json.dumps(result, indent=2) + "\n")
    md = [
        "# Mixed-effects RR regression benchmark",
        "",
        f"{len(df):,} respondents in {GROUPS} schools, `y ~ x + girl`, random intercept by "
        f"school, forced response (P(yes|1) = 5/6, P(yes|0) = 1/6); one run each, one "
        f"thread, Python {platform.python_version()}, numpy {np.__version__}, "
        f"{result['date']}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
        "shared with other jobs.",
        "",
        "| method | seconds | converged | log-likelihood |",
        "| --- | ---: | :---: | ---: |",
    ]
    for name, r in runs.items():
        md.append(f"| {name} | {r['seconds']:.1f} | {r['converged']} | {r['llf']:.2f} |")
    md += ["", "| parameter | truth | " + " | ".join(f"{k} (SE)" for k in runs) + " |"]
    md.append("| --- | ---: | " + " | ".join("---:" for _ in runs) + " |")
    for param, truth in TRUTH.items():
        cells = []
        for r in runs.values():
            e = r["estimates"][param]  # type: ignore[index]
            cells.append(f"{e['estimate']:.4f} ({e['se']:.4f})")
        md.append(f"| {param} | {truth:g} | " + " | ".join(cells) + " |")
    md += [
        "",
        f"Target (issue 16) < {TARGET_SECONDS:g} s: {'met' if ok else 'NOT met'}.",
        "",
    ]
    (OUT / "bench_mixed.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
