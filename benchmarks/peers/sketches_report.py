"""The markdown, the verdicts and the files of the sketch rows (``peers/sketches.py``)."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from peers import sketches
from peers.report import _n, _rate, _ratio
from peers.sketches import DOMAIN, TOP, K, M

#: Our timings of a row: (key, label).
OURS = (("ours", "seeded"), ("ours_default", "default randomness"))
#: Our mean recall may trail the peer's by one string of the top ``TOP`` (or 2 SE).
RECALL_SLACK = 1 / TOP


def _name(r: dict[str, Any]) -> str:
    return f"{r['label']} eps = {r['epsilon']:g} n = {_n(r['n'])}"


def _our_recall(r: dict[str, Any]) -> float:
    """Our recall at the n the peer ran (the row's, or its first reports)."""
    return float(r.get("ours_at_peer_n", r["ours"])["recall"])


def _slack(r: dict[str, Any]) -> float:
    ours = r.get("ours_at_peer_n", r["ours"])
    return max(RECALL_SLACK, 2 * math.hypot(ours["recall_se"], r["peer"]["recall_se"]))


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    timed = [r for r in rows if "per_s" in r["peer"]]
    for key, label in OURS:
        got = [(r[key]["per_s"] / r["peer"]["per_s"], r) for r in timed]
        if got:
            low, worst = min(got, key=lambda t: t[0])
            slow = [f"{_name(r)}: {_ratio(x)}" for x, r in got if x < 10]
            text = f"at least 10x pure-LDP's throughput on every row, {label}: "
            lowest = f"lowest {_ratio(low)} at {_name(worst)}"
            out.append(text + (f"NOT met ({'; '.join(slow)})" if slow else f"met ({lowest})"))
    worse = [
        f"{_name(r)}: ours {_our_recall(r):.2f}, pure-LDP {r['peer']['recall']:.2f}"
        for r in timed
        if _our_recall(r) < r["peer"]["recall"] - _slack(r)
    ]
    text = (
        f"recall of the true top {TOP} equal or better (the mean of our runs at the n "
        f"pure-LDP ran at least the mean of its runs less the larger of {RECALL_SLACK:.2f} "
        "and twice the standard error of the difference): "
    )
    out.append(text + (f"NOT met ({'; '.join(worse)})" if worse else "met"))
    for key, label in OURS:
        dev = [(r[key]["mse"] / r[key]["stated_variance"] - 1, r) for r in rows]
        misses = [f"{_name(r)}: {d:+.1%}" for d, r in dev if abs(d) > 0.10]
        d, r = max(dev, key=lambda t: abs(t[0]))
        text = f"our MSE within 10% of the variance we state, {label}: "
        met = f"met (largest {d:+.1%}, {_name(r)})"
        out.append(text + (f"NOT met ({'; '.join(misses)})" if misses else met))
    failed = [f"{_name(r)}: {r['peer']['failure']}" for r in rows if "failure" in r["peer"]]
    if failed:
        out.append("pure-LDP failed: " + "; ".join(failed))
    return out


def _rp(a: dict[str, Any]) -> str:
    prec = "-" if math.isnan(a["precision"]) else f"{a['precision']:.2f}"
    return f"{a['recall']:.2f} / {prec} ({a['top_overlap']:.2f})"


def _peer_cells(r: dict[str, Any]) -> list[str]:
    p = r["peer"]
    if "failure" in p:
        return [f"fails: {p['failure']}", "-", "-", "-", "-"]
    rate = _rate(p["per_s"])
    if p["extrapolated"]:
        rate += f" (extrapolated from n = {p['n_used']:,})"
    ours_there = ""
    if "ours_at_peer_n" in r:
        ours_there = f"; ours at n = {p['n_used']:,}: {_rp(r['ours_at_peer_n'])}"
    return [
        rate,
        _ratio(r["ours"]["per_s"] / p["per_s"]),
        _ratio(r["ours_default"]["per_s"] / p["per_s"]),
        _rp(p) + ours_there,
        f"{p['mse'] / p['stated_variance']:.2f}",
    ]


def markdown(data: dict[str, Any]) -> str:
    meta = data["meta"]
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    lines = [
        "# deniable against pure-LDP: count mean sketches of strings",
        "",
        f"n strings from a domain of {DOMAIN:,} (Zipf-like: string j with frequency "
        "proportional to 1 / (j + 1), one seeded draw given to both libraries); both run the "
        f"same sketch, k = {K} rows of m = {M} columns, and estimate the same candidates (the "
        "whole true domain).  Reports per second of randomize + tally + estimate, one core "
        "(`taskset -c 0`, one BLAS/OpenMP/numba thread); "
        f"{meta['cpu']}, {meta['cpus_allowed']} CPU(s) allowed, shared; Python "
        f"{meta['python']}; {meta['date']}.  Whole run: {meta['run_minutes']:.1f} min; load "
        f"average {meta.get('load_before', '?')} before, {meta.get('load_after', '?')} after "
        "(the machine is shared: compare within a run).",
        "",
        f"Versions: {versions}.",
        "",
        f"Every time is the best of {meta['repeats']} runs (ours: seeded, and with the default "
        f"randomness).  A pure-LDP run longer than {meta['budget_s']:.0f} s is measured on the "
        "row's first reports and extrapolated (affine in n).  Recall / precision of the true "
        f"top {TOP}: the reported strings are those estimated at least the midpoint of the "
        f"true {TOP}th and {TOP + 1}st shares; in brackets the overlap of the {TOP} largest "
        f"estimates with the true top {TOP}.  Ours: the mean over the {meta['repeats']} seeded "
        "and the default runs; pure-LDP: the mean over its runs at the n it ran (its global "
        "generators seeded per run).  MSE: mean over "
        "the domain of the squared error of the frequency estimates, as a multiple of the "
        "variance we state (fixed population, over the salt and the coins, the hash-collision "
        "term included) at that n.",
        "",
        "| sketch | eps | n | ours seeded /s | ours default /s | pure-LDP /s | seeded / peer "
        "| default / peer | our recall / precision (top-20 overlap) | pure-LDP's | our MSE / "
        "stated (seeded; default) | pure-LDP MSE / stated |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- | --- | ---: | ---: |",
    ]
    for r in data["rows"]:
        ours, default = r["ours"], r["ours_default"]
        rate, seeded_x, default_x, peer_rp, peer_mse = _peer_cells(r)
        lines.append(
            f"| {r['label']} | {r['epsilon']:g} | {_n(r['n'])} | {_rate(ours['per_s'])} | "
            f"{_rate(default['per_s'])} | {rate} | {seeded_x} | {default_x} | {_rp(ours)} | "
            f"{peer_rp} | {ours['mse'] / ours['stated_variance']:.3f}; "
            f"{default['mse'] / default['stated_variance']:.3f} | {peer_mse} |"
        )
    lines += ["", "Targets (issue 18, part 5, one core):", ""]
    lines += [f"* {v}" for v in data["targets"]]
    lines += [
        "",
        "Notes:",
        "",
        "* pure-LDP's `estimate_all` returns counts; they are divided by the n it aggregated.  "
        "Its hashes are xxhash64 of the string with seeds 0..k-1, modulo m (no salt); ours "
        "the keyed multiply-add-shift hash of `deniable.cms/1` with the run's index as salt.",
        "* pure-LDP 1.2.0's base server calls `np.zeros(None)` for a sketch, which numpy 2 "
        "refuses: its constructor gets numpy 1's `np.zeros(())` for that call (not timed).",
        "* Not timed: building pure-LDP's client (HCMS: its m x m Hadamard matrix) and a fresh "
        "server per run, and turning the strings into the Python list both APIs take.",
        "* Heavy hitters over an unknown domain (PEM, TreeHist, SFP against pure-LDP's "
        "`heavy_hitters`) are not in this run.",
        "* Full per-row data: `benchmarks/results/peers-sketches.json`.",
    ]
    return "\n".join(lines) + "\n"


def main(
    ns: tuple[int, ...],
    repeats: int,
    budget: float,
    out: Path | None,
    meta: Callable[[], dict[str, Any]],
) -> int:
    """Run the sketch rows; write ``peers-sketches.{md,json}`` into ``out`` (None: print
    only)."""
    warnings.filterwarnings("ignore")
    rows = sketches.run_rows(ns, repeats, budget)
    data: dict[str, Any] = {"meta": meta()}
    data["meta"] |= {"k": K, "m": M, "domain": DOMAIN, "epsilons": list(sketches.EPSILONS)}
    data |= {"rows": rows, "targets": verdicts(rows)}
    text = markdown(data)
    if out is not None:
        out.mkdir(exist_ok=True)
        (out / "peers-sketches.md").write_text(text, encoding="utf-8")
        (out / "peers-sketches.json").write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    print(text)
    return 0
