"""Benchmark: deniable beside the Python LDP libraries, one core, the same workloads.

Peers (pinned in ``benchmarks/peers/requirements.txt``, installed by ``scripts/bench-peers``
into ``.venv-peers``): pure-LDP, multi-freq-ldpy, OpenDP and diffprivlib, each through its
public API:

* pure-LDP: the client/server pairs of ``pure_ldp.frequency_oracles`` (``DEClient`` /
  ``DEServer``, ``UEClient`` / ``UEServer``, ``LHClient`` / ``LHServer`` and the heuristic
  ``FastLHClient`` / ``FastLHServer``, ``HadamardMechClient`` / ``HadamardMechServer`` with
  ``t = 1`` and ``HadamardResponseClient`` / ``HadamardResponseServer``): ``privatise`` one
  value, ``aggregate`` one report, then ``estimate_all`` over the domain;
* multi-freq-ldpy: ``GRR_Client`` / ``UE_Client`` / ``LH_Client`` per value, then
  ``GRR_Aggregator_MI`` / ``UE_Aggregator_MI`` / ``LH_Aggregator_MI`` on the list of
  reports (its estimator clips negative estimates to 0 and renormalizes: not unbiased);
* OpenDP (``dp.enable_features("contrib")``): ``make_randomized_response_bool``,
  ``make_randomized_response`` (k categories) and ``make_randomized_response_bitvec`` with
  ``max_weight = 1`` (a one-hot vector with every bit flipped with probability ``f / 2``:
  symmetric unary encoding), one call per value;
* diffprivlib: ``mechanisms.Binary`` and ``mechanisms.ExponentialCategorical`` with the
  utility 1 between any two categories (then ``P(x | x) / P(y | x) = e^eps``: k-ary
  randomized response), one ``randomise`` per value.

OpenDP and diffprivlib randomize only: their reports are tallied by numpy (``bincount``, or
unpacking the bit vectors and summing) and estimated by ``(c / n - q) / (p - q)``, timed with
the rest.  Ours: ``deniable.designs.Binary(1.0)`` for binary randomized response and the
oracles of ``deniable.oracles`` (``GRR.from_epsilon``, ``SUE``, ``OUE``, ``OLH``,
``HadamardResponse``), ``randomize`` on the numpy array of values, ``tally``, ``estimate``,
twice: with a seeded generator (``numpy.random.default_rng``) and with the default
randomness (``rng=None``: ``SystemRandom()``, the process's ChaCha20 keystream, what a
caller gets without asking).

Workloads: binary RR, GRR at k = 16 and 1024, SUE, OUE, OLH and Hadamard response at k = 16
and 1024; n = 10**5 and 10**6; epsilon = 1.  Values are Zipf-like (frequency of ``j``
proportional to ``1 / (j + 1)``), drawn with a fixed seed per k, a seed sequence apart from
our randomizers' (``our_run``); a smaller n is the prefix of the same draw.  Each cell
times randomize + tally + estimate for all its reports.  Not timed: building a peer's client
and server (its ``setup_s`` in the JSON: the hash matrix of ``FastLHServer``, the utility
table of ``ExponentialCategorical``, numba compilation of multi-freq-ldpy's clients by a
first call) and converting the values to what its API takes (Python ints, bools, strings,
one-hot bytes).

One rule times everything, ours (seeded and default) and every peer: the best of
``--repeats`` runs (default 3) at the n measured.  A peer cell whose one run at the row's n
would exceed ``--budget`` seconds (default 20), judged by a pilot run of 2,000 reports (and,
when that falls short, again by the affine fit through the pilot and the first measured n),
is measured at the largest n in 1, 2, 5 x 10**j that fits,
and marked "(extrapolated from n = ...)": the time is taken as affine in n (a fixed part
plus the same cost per report, as for these per-report loops), fitted through the pilot and
the measured run.  "Best peer" is the fastest peer implementing the row's mechanism;
pure-LDP's ``FastLHServer`` (a fixed set of hash functions shared by all clients: cheaper
decoding, larger errors) is shown in the OLH rows and judged apart.  multi-freq-ldpy's
unary encoding hands its aggregator a list of ``n`` float64 vectors of length k: its n is
also capped at 1 GiB of them.

Accuracy: the mean absolute error (MAE) over the k categories of the frequency estimate
against the true frequency of the n values.  Expected MAE of an unbiased estimator:
``mean_j sqrt(2 / pi) sd_j``, ``sd_j`` from the exact variance our mechanisms expose
(``exact_variance``; ``Binary.variance(..., population="fixed")``), checked against the
closed form of Wang et al. (USENIX Security 2017) written out here.  Our MAE is averaged over
``ceil(1024 / k)`` seeded runs (at least 3; binary RR, whose two errors are one: 1024), so
about 1024 absolute errors: the relative standard deviation of a mean of M independent
absolute normal errors is ``sqrt(pi / 2 - 1) / sqrt(M)``, 2.4% at M = 1024 and 1.2% at
4096, and "within 10% of the expected error" is a check at about 4 standard deviations.  A
peer's MAE is of its one timed run at its n and is shown beside the expected MAE of its
mechanism at that n.

Targets, one core: at least 10 times the best peer on every row, with the seeded and with the
default randomness (issue 15); OUE k = 1024 at least 1 M reports/s; OLH k = 1024 at least
300 k reports/s including decoding; Hadamard response at least 5 M reports/s (issue 10, for
both sources); every accuracy within 10% of its expected error (both sources).

The peers' code lives in ``benchmarks/peers/``: ``libraries.py`` (each library's clients),
``cells.py`` (a peer's measurements: pilot, fit, extrapolation), ``model.py`` (the seed,
the populations, the closed forms) and ``report.py`` (the markdown and the verdicts).

Writes ``benchmarks/results/peers.md`` and ``peers.json`` and prints the markdown.  Run:
``scripts/bench-peers`` (``--quick``: n = 10**4, a 2 s budget, nothing written).

``--only longitudinal`` runs the rows of issue 17 instead (``peers/longitudinal.py``, its
docstring has the method; markdown and verdicts in ``peers/longitudinal_report.py``):
multi-freq-ldpy's longitudinal L-GRR, L-SUE, L-OUE, L-OSUE, L-OLH (beside our LOLOHA) and
dBitFlipPM, and its multidimensional SPL, SMP and RS+FD, over 30 rounds of n devices whose
values change (the Markov switching model of ``deniable.simulation.Fleet``), and writes
``benchmarks/results/peers-longitudinal.md`` and ``.json``; ``--protocols lsue,loue`` runs
only those rows, into ``peers-longitudinal-partial.md`` and ``.json`` (the whole table is
never overwritten by a part of it).

``--only sketches`` runs the rows of issue 18, part 5 instead (``peers/sketches.py``, its
docstring has the method; markdown, verdicts and files in ``peers/sketches_report.py``): our
CMS and HCMS beside pure-LDP's ``CMSClient`` / ``CMSServer`` on the same Zipf strings, into
``benchmarks/results/peers-sketches.md`` and ``.json``.

``--only heavy`` runs the heavy-hitter rows of issue 18, part 5 (``peers/heavy.py``, its
docstring has the method; markdown, verdicts and files in ``peers/heavy_report.py``): our
PEM, TreeHist and SFP beside pure-LDP's ``PEMClient`` / ``PEMServer``, ``TreeHistClient`` /
``TreeHistServer`` and ``SFPClient`` / ``SFPServer`` on the same Zipf strings at n = 10**6,
into ``benchmarks/results/peers-heavy.md`` and ``.json``.
"""

from __future__ import annotations

import os

for _var in (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMBA_NUM_THREADS",
):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from peers import heavy_report, longitudinal, longitudinal_report, sketches_report  # noqa: E402
from peers.cells import PILOT_N, REPEATS, PeerCell  # noqa: E402
from peers.libraries import CLAIMED_EPSILON, load_peers  # noqa: E402
from peers.model import (  # noqa: E402
    EPSILON,
    SEED,
    expected_mae,
    population,
    textbook_pq,
    wang_variance,
)
from peers.report import markdown, verdicts  # noqa: E402

from deniable.designs import Binary  # noqa: E402
from deniable.oracles import (  # noqa: E402
    GRR,
    OLH,
    OUE,
    SUE,
    HadamardResponse,
    LinearOLH,
    exact_variance,
)

OUT = Path(__file__).resolve().parent / "results"
NS = (10**5, 10**6)
#: Absolute errors our accuracy column averages over (module docstring).
ERRORS = 1024
#: Distribution names, for the versions in the results.
PACKAGES = (
    "deniable",
    "numpy",
    "scipy",
    "pure-ldp",
    "multi-freq-ldpy",
    "opendp",
    "diffprivlib",
    "scikit-learn",
    "statsmodels",
    "xxhash",
    "numba",
)

#: (key, label, k) of each workload, in table order.
WORKLOADS = (
    ("binary", "binary RR", 2),
    ("grr", "GRR", 16),
    ("grr", "GRR", 1024),
    ("sue", "SUE", 16),
    ("sue", "SUE", 1024),
    ("oue", "OUE", 16),
    ("oue", "OUE", 1024),
    ("olh", "OLH", 16),
    ("olh", "OLH", 1024),
    ("hr", "Hadamard response", 16),
    ("hr", "Hadamard response", 1024),
)


# ---- ours


def our_mechanism(key: str, k: int) -> Any:
    if key == "binary":
        return Binary(EPSILON)
    return {
        "grr": lambda: GRR.from_epsilon(EPSILON, k),
        "sue": lambda: SUE.from_epsilon(EPSILON, k),
        "oue": lambda: OUE.from_epsilon(EPSILON, k),
        # OLH with a linear hash over GF(2) (what choose_oracle picks at eps = 1): the same
        # channel, estimate and variance as OLH at its g, decoded by one Walsh-Hadamard
        # transform; the multiply-shift OLH is timed beside it (`ours_alt`)
        "olh": lambda: LinearOLH.from_epsilon(EPSILON, k),
        "hr": lambda: HadamardResponse.from_epsilon(EPSILON, k),
    }[key]()


def our_variances(mech: Any, key: str, n: int, freqs: np.ndarray) -> np.ndarray:
    """The exact variance our mechanism exposes, at the true frequencies."""
    if key == "binary":
        var = mech.variance(float(freqs[1]), n, population="fixed")
        return np.array([var, var])
    return np.asarray(exact_variance(mech, n, freqs))


def our_pq(mech: Any, key: str, k: int) -> tuple[float, float]:
    """The textbook (p, q) at our mechanism's own epsilon (and ``g``)."""
    return textbook_pq(key, k, float(mech.epsilon), int(getattr(mech, "g", 0)))


#: Our two sources: a seeded generator, and the default randomness (``rng=None``).
SOURCES = ("seeded", "default")


def our_run(
    mech: Any, key: str, values: np.ndarray, run: int, source: str = "seeded"
) -> tuple[float, np.ndarray]:
    """Seconds of randomize + tally + estimate, and the k estimated frequencies.

    ``source="seeded"``: the randomizer's seed ``(SEED, 2, run)`` and the population's
    ``(SEED, 1, k)`` are distinct seed sequences: with one integer seed for both, a run
    whose seed equals the population's would randomize with the very words that drew the
    values (the values are thresholds of ``random()``, the reports thresholds of the same
    words) and be biased.  ``source="default"``: ``rng=None``, the default CSPRNG.
    """
    rng = np.random.default_rng((SEED, 2, run)) if source == "seeded" else None
    t0 = time.perf_counter()
    reports = mech.randomize(values, rng=rng)
    tally = mech.tally(reports)
    est = mech.estimate(tally)
    seconds = time.perf_counter() - t0
    if key == "binary":
        return seconds, np.array([1 - est.value, est.value])
    return seconds, np.asarray(est.values, dtype=float)


def measure_ours(
    key: str, k: int, n: int, repeats: int, runs: int, mech: Any = None, source: str = "seeded"
) -> dict[str, Any]:
    """Our mechanism at ``n`` from ``source``: the best of ``repeats`` timed runs, the MAE
    over ``runs`` runs (the timed ones among them)."""
    mech = our_mechanism(key, k) if mech is None else mech
    values = population(k, n)
    if key == "binary":
        values = values.astype(np.uint8)
    truth = np.bincount(values, minlength=k) / n
    times, maes = [], []
    for r in range(max(runs, repeats)):
        seconds, est = our_run(mech, key, values, r, source)
        if r < repeats:
            times.append(seconds)
        maes.append(float(np.mean(np.abs(est - truth))))
    var = our_variances(mech, key, n, truth)
    p, q = our_pq(mech, key, k)
    own = wang_variance(p, q, n, truth)
    best = min(times)
    return {
        "mechanism": repr(mech) if key == "binary" else type(mech).__name__,
        "source": source,
        "epsilon": float(mech.epsilon),
        "seconds": best,
        "per_s": n / best,
        "runs": len(maes),
        "mae": float(np.mean(maes)),
        "expected_mae": expected_mae(var),
        "variance_check_max_rel_diff": float(np.max(np.abs(var / own - 1))),
    }


# ---- the run


def run_all(ns: tuple[int, ...], repeats: int, budget: float, only: set[str]) -> dict[str, Any]:
    warnings.filterwarnings("ignore")  # the peers' warnings (few reports, deprecations)
    peers, failures = load_peers()
    rows = []
    for key, label, k in WORKLOADS:
        if only and key not in only:
            continue
        cells = [PeerCell(p, k) for p in peers if p.key == key]
        for cell in cells:
            cell.start()
        for n in ns:
            print(f"  {label} k={k} n={n:,}", flush=True)
            runs = ERRORS if key == "binary" else max(3, math.ceil(ERRORS / k))
            ours = measure_ours(key, k, n, repeats, runs)
            default = measure_ours(key, k, n, repeats, runs, source="default")
            alt = alt_default = None
            if key == "olh":  # the multiply-shift OLH, O(n k) decoding
                multiply_shift = OLH.from_epsilon(EPSILON, k)
                alt = measure_ours(key, k, n, repeats, repeats, multiply_shift)
                alt_default = measure_ours(
                    key, k, n, repeats, repeats, multiply_shift, source="default"
                )
            peer_cells = []
            for cell in cells:
                got = cell.measure(n, budget)
                peer_cells.append(
                    {
                        "library": cell.peer.library,
                        "variant": cell.peer.variant,
                        "note": cell.peer.note,
                        "same_mechanism": cell.peer.same_mechanism,
                        "claimed_epsilon": CLAIMED_EPSILON.get((cell.peer.library, key, k)),
                        **got,
                    }
                )
            row = {"workload": key, "label": label, "k": k, "n": n, "ours": ours,
                   "ours_default": default, "peers": peer_cells}  # fmt: skip
            if alt is not None:
                row["ours_alt"], row["ours_alt_default"] = alt, alt_default
            rows.append(row)
    return {"rows": rows, "library_failures": failures}


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 10**4, 2 s budget, no files")
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed runs of every cell, ours and the peers'"
    )
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per peer run")
    parser.add_argument(
        "--only",
        nargs="*",
        default=[],
        help="workload keys (binary, grr, ...), or longitudinal: the longitudinal and "
        "multidimensional rows, written to peers-longitudinal.{md,json}; or sketches: CMS "
        "and HCMS against pure-LDP, written to peers-sketches.{md,json}; or heavy: PEM, "
        "TreeHist and SFP against pure-LDP at n = 10^6, written to peers-heavy.{md,json}",
    )
    parser.add_argument(
        "--protocols",
        type=lambda s: [p for p in s.split(",") if p],
        default=[],
        metavar="NAME[,NAME]",
        help="with --only longitudinal: run only these rows (lgrr, lsue, loue, losue, loloha, "
        "dbitflip, spl, smp, rsfd); the partial table goes to "
        "peers-longitudinal-partial.{md,json}, never over the whole one",
    )
    args = parser.parse_args()
    start = time.perf_counter()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    ns = (10**4,) if args.quick else NS
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    budget = 2.0 if args.quick else args.budget
    REPEATS[0] = args.repeats
    if args.protocols and "longitudinal" not in args.only:
        parser.error("--protocols filters the longitudinal rows: give --only longitudinal")
    if "longitudinal" in args.only:  # its own rows and files (peers/longitudinal.py)
        return longitudinal_main(args, ns, budget, start, load_before)
    if "sketches" in args.only:  # its own rows and files (peers/sketches.py)
        out = None if args.quick else OUT
        meta = lambda: _meta(ns, args.repeats, budget, start, load_before)  # noqa: E731
        return sketches_report.main(ns, args.repeats, budget, out, meta)
    if "heavy" in args.only:  # its own rows and files (peers/heavy.py): n = 10^6 only
        out = None if args.quick else OUT
        heavy_ns = ns if args.quick else (10**6,)
        meta = lambda: _meta(heavy_ns, args.repeats, budget, start, load_before)  # noqa: E731
        return heavy_report.main(heavy_ns, args.repeats, budget, out, meta)
    data = run_all(ns, args.repeats, budget, set(args.only))
    data["targets"] = verdicts(data["rows"])
    data["meta"] = _meta(ns, args.repeats, budget, start, load_before)
    data = {"meta": data.pop("meta"), **data}
    text = markdown(data)
    if not args.quick and not args.only:
        OUT.mkdir(exist_ok=True)
        (OUT / "peers.md").write_text(text, encoding="utf-8")
        (OUT / "peers.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(text)
    return 0


def longitudinal_main(
    args: argparse.Namespace, ns: tuple[int, ...], budget: float, start: float, load: str
) -> int:
    """The longitudinal and multidimensional rows: ``peers-longitudinal.{md,json}``."""
    warnings.filterwarnings("ignore")
    keys = [key for key, _ in longitudinal.WORKLOADS]
    unknown = sorted(set(args.protocols) - set(keys))
    if unknown:
        raise SystemExit(f"--protocols must name rows among {', '.join(keys)}, got {unknown}")
    rows = longitudinal.run_rows(ns, args.repeats, budget, args.protocols)
    data: dict[str, Any] = {"meta": _meta(ns, args.repeats, budget, start, load)}
    data["meta"]["rounds"] = longitudinal.ROUNDS
    data |= {"rows": rows, "targets": longitudinal_report.verdicts(rows)}
    text = longitudinal_report.markdown(data)
    if args.protocols:
        data["meta"]["protocols"] = args.protocols
        text = text.replace("peers-longitudinal.json", "peers-longitudinal-partial.json")
        text = (
            f"<!-- partial run: rows {', '.join(args.protocols)} only (--protocols); compare "
            "within this run, the whole table is peers-longitudinal.md -->\n" + text
        )
    if not args.quick:
        # a run of some rows only is written beside the whole table, never over it
        stem = "peers-longitudinal-partial" if args.protocols else "peers-longitudinal"
        OUT.mkdir(exist_ok=True)
        (OUT / f"{stem}.md").write_text(text, encoding="utf-8")
        out = json.dumps(data, indent=2) + "\n"
        (OUT / f"{stem}.json").write_text(out, encoding="utf-8")
    print(text)
    return 0


def _meta(
    ns: tuple[int, ...], repeats: int, budget: float, start: float, load: str
) -> dict[str, Any]:
    return {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu": _cpu(),
        "cpus_allowed": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "versions": _versions(),
        "epsilon": EPSILON,
        "ns": list(ns),
        "repeats": repeats,
        "budget_s": budget,
        "pilot_n": PILOT_N,
        "seed": SEED,
        "run_minutes": (time.perf_counter() - start) / 60,
        "load_before": load,
        "load_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


if __name__ == "__main__":
    raise SystemExit(main())
