"""dBitFlipPM's accuracy over memoized rounds against its exact variance, with runs enough
to tell a 10% difference (issue 17, part 5: "accuracy within 10% of theory").

The longitudinal table of ``scripts/bench-peers`` measures dBitFlipPM's mean squared error
over 30 rounds in 3 to 10 runs: the rounds of one run are strongly correlated (a device
keeps its sampled buckets and its bits for a bucket value), so a run is nearly one draw of
the error, and 3 to 10 runs leave a standard error near 10% on the ratio MSE / theory.
This benchmark repeats exactly that row's run (the same fleet, mechanism, memo and
estimator: ``benchmarks/peers/longitudinal.py``) with independent seeds, and reports the
ratio's mean and standard error at n = 10^5 (and 10^6 with fewer runs), seeded and with
the default randomness.  Results: ``benchmarks/results/dbitflip-accuracy.{md,json}``.

    .venv/bin/python benchmarks/bench_dbitflip_accuracy.py [--runs 60] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers.longitudinal import (
    DBIT_B,
    DBIT_D,
    DBIT_EPS,
    ROUNDS,
    fleet_values,
    mse,
    our_mechanism,
    our_run,
    theory,
)

RESULTS = Path(__file__).resolve().parent / "results"


def ratios(n: int, runs: int, source: str) -> dict[str, float]:
    mech = our_mechanism("dbitflip")
    values = fleet_values("dbitflip", n)
    var = theory(mech, "dbitflip", values)
    out = []
    for r in range(runs):
        rng = np.random.default_rng((20261128, n, r)) if source == "seeded" else None
        _, ests, _ = our_run(mech, "dbitflip", values, rng)
        out.append(mse(ests, values) / var)
    arr = np.array(out)
    return {
        "n": n,
        "source": source,
        "runs": runs,
        "ratio": float(arr.mean()),
        "se": float(arr.std(ddof=1) / math.sqrt(arr.size)),
        "theory": var,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=60, help="runs at n = 10^5 (a sixth at 10^6)")
    parser.add_argument("--quick", action="store_true", help="n = 10^4, 8 runs, nothing written")
    args = parser.parse_args()
    start, load = time.perf_counter(), os.getloadavg()
    plan = [(10**4, 8)] if args.quick else [(10**5, args.runs), (10**6, max(2, args.runs // 6))]
    rows = [ratios(n, runs, s) for n, runs in plan for s in ("seeded", "default")]
    for row in rows:
        print(
            f"n = {row['n']:>9,} {row['source']:>8}: MSE / theory {row['ratio']:.3f} "
            f"± {row['se']:.3f} ({row['runs']} runs)"
        )
    if args.quick:
        return 0
    meta = {
        "mechanism": f"DBitFlipPM(eps={DBIT_EPS}, k=16, b={DBIT_B}, d={DBIT_D})",
        "rounds": ROUNDS,
        "seconds": round(time.perf_counter() - start, 1),
        "load_before": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dbitflip-accuracy.json").write_text(json.dumps({**meta, "rows": rows}, indent=2))
    lines = [
        "# dBitFlipPM: accuracy against its exact variance",
        "",
        f"{meta['mechanism']}, {ROUNDS} memoized rounds of the longitudinal table's fleet "
        f"(`benchmarks/bench_dbitflip_accuracy.py`, {meta['seconds']} s, load average "
        f"{meta['load_before'][0]} before and {meta['load_after'][0]} after).  The ratio is "
        "the mean squared error of the shares over the rounds divided by the mean exact "
        "variance (`DBitFlipPM.variance`), averaged over independent runs; ± its standard "
        "error.",
        "",
        "| n | randomness | runs | MSE / theory | standard error |",
        "| ---: | --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {r['n']:,} | {r['source']} | {r['runs']} | {r['ratio']:.3f} | {r['se']:.3f} |"
        for r in rows
    ]
    (RESULTS / "dbitflip-accuracy.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
