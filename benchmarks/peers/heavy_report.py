"""The markdown, the verdicts and the files of the heavy-hitter rows (``peers/heavy.py``)."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from peers import heavy
from peers.heavy import ALPHABET, DOMAIN, LENGTH, TOP
from peers.report import _n, _rate, _ratio

#: Our timings of a row: (key, label).
OURS = (("ours", "seeded"), ("ours_default", "default randomness"))
#: Our mean recall may trail the peer's by one string of the top ``TOP`` (or 2 SE).
RECALL_SLACK = 1 / TOP


def _name(r: dict[str, Any]) -> str:
    return f"{r['label']} eps = {r['epsilon']:g} n = {_n(r['n'])}"


def _timed(r: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in r["peers"] if "per_s" in p]


def best_peer(r: dict[str, Any]) -> dict[str, Any] | None:
    """The fastest pure-LDP configuration of the row's protocol."""
    timed = _timed(r)
    return max(timed, key=lambda p: p["per_s"]) if timed else None


def _ours_there(r: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    """Our accuracy at the n the peer ran (the row's, or its first reports)."""
    return p.get("ours_at_peer_n", r["ours"])  # type: ignore[no-any-return]


def _slack(ours: dict[str, Any], p: dict[str, Any]) -> float:
    return max(RECALL_SLACK, 2 * math.hypot(ours["recall_se"], p["recall_se"]))


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for key, label in OURS:
        got = [(r[key]["per_s"] / b["per_s"], r) for r in rows if (b := best_peer(r))]
        if got:
            low, worst = min(got, key=lambda t: t[0])
            slow = [f"{_name(r)}: {_ratio(x)}" for x, r in got if x < 10]
            text = f"at least 10x the best pure-LDP configuration's throughput, {label}: "
            lowest = f"lowest {_ratio(low)} at {_name(worst)}"
            out.append(text + (f"NOT met ({'; '.join(slow)})" if slow else f"met ({lowest})"))
    worse = []
    for r in rows:
        for p in _timed(r):
            ours = _ours_there(r, p)
            if ours["recall"] < p["recall"] - _slack(ours, p):
                worse.append(
                    f"{_name(r)} against {p['variant'].split(',')[0]} at n = {p['n_used']:,}: "
                    f"ours {ours['recall']:.2f}, pure-LDP {p['recall']:.2f}"
                )
    text = (
        f"recall of the true top {TOP} equal or better against every pure-LDP configuration "
        f"(the mean of our runs at the n it ran at least the mean of its runs less the larger "
        f"of {RECALL_SLACK:.2f} and twice the standard error of the difference): "
    )
    out.append(text + (f"NOT met ({'; '.join(worse)})" if worse else "met"))
    failed = [
        f"{_name(r)} {p['variant'].split(',')[0]}: {p['failure']}"
        for r in rows
        for p in r["peers"]
        if "failure" in p
    ]
    if failed:
        out.append("pure-LDP failed: " + "; ".join(failed))
    return out


def _rp(a: dict[str, Any]) -> str:
    prec = "-" if math.isnan(a["precision"]) else f"{a['precision']:.2f}"
    return f"{a['recall']:.2f} / {prec} ({a['reported']:.0f})"


def _peer_line(r: dict[str, Any], p: dict[str, Any]) -> list[str]:
    variant = (
        p["variant"]
        .replace("PEMClient / PEMServer, ", "")
        .replace("TreeHistClient / TreeHistServer, ", "")
    )
    variant = variant.replace("SFPClient / SFPServer, ", "")
    if "failure" in p:
        return [variant, f"fails: {p['failure']}", "-", "-", "-"]
    rate = _rate(p["per_s"])
    if p["extrapolated"]:
        rate += f" (extrapolated from n = {p['n_used']:,})"
    there = f"{_rp(p)} at n = {p['n_used']:,}"
    if "ours_at_peer_n" in p:
        there += f"; ours there: {_rp(p['ours_at_peer_n'])}"
    return [
        variant,
        rate,
        _ratio(r["ours"]["per_s"] / p["per_s"]),
        _ratio(r["ours_default"]["per_s"] / p["per_s"]),
        there,
    ]


def markdown(data: dict[str, Any]) -> str:
    meta = data["meta"]
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    lines = [
        "# deniable against pure-LDP: heavy hitters of strings without a dictionary",
        "",
        f"n strings of {LENGTH} characters over the alphabet `{ALPHABET}` ({DOMAIN:,} "
        "distinct: `w` and four digits), Zipf-like (the string of rank j with frequency "
        "proportional to 1 / (j + 1), ranks given to strings by a seeded permutation), one "
        "seeded draw given to both libraries; the true top 20 are the 20 most frequent strings "
        "of the draw.  Reports per second of every device's report and the server's decoding "
        "(ours: `run` = randomize + estimate; pure-LDP: `privatise` + `aggregate` a device, "
        "then `find_heavy_hitters(k=20)`), one core (`taskset -c 0`, one BLAS/OpenMP/numba "
        f"thread); {meta['cpu']}, {meta['cpus_allowed']} CPU(s) allowed, shared; Python "
        f"{meta['python']}; {meta['date']}.  Whole run: {meta['run_minutes']:.1f} min; load "
        f"average {meta.get('load_before', '?')} before, {meta.get('load_after', '?')} after "
        "(the machine is shared: compare within a run).",
        "",
        f"Versions: {versions}.",
        "",
        f"Every time is the best of {meta['repeats']} runs (ours: seeded, and with the default "
        f"randomness).  A pure-LDP run longer than {meta['budget_s']:.0f} s is measured on the "
        "row's first reports (the n that fits, from two pilots) and extrapolated (affine in n: "
        "the decoding a fixed part, a cost per report).  Recall / precision of the true top 20 "
        "(in brackets: strings reported): each library's output cut to its 20 largest "
        "estimates.  Ours at the row's n: the mean over the seeded and the default runs; "
        "pure-LDP: the mean over its runs at the n it ran (its global generators seeded per "
        "run), beside ours at that n (5 seeded runs).",
        "",
        "Our configurations: "
        + "; ".join(f"{label}: `{heavy.our_config(key)}`" for key, label in heavy.PROTOCOLS)
        + ".  Epsilon per device, both libraries: the row's (pure-LDP's TreeHist and SFP send "
        "two reports at eps / 2 each, its PEM one at eps; ours one report, SFP two at eps / 2).",
        "",
        "| protocol | eps | n | our configuration | ours seeded /s | ours default /s | our "
        "recall / precision (reported) | pure-LDP configuration | pure-LDP /s | seeded / peer "
        "| default / peer | pure-LDP recall / precision (reported) |",
        "| --- | ---: | ---: | --- | ---: | ---: | --- | --- | --- | ---: | ---: | --- |",
    ]
    for r in data["rows"]:
        ours, default = r["ours"], r["ours_default"]
        both = {
            f: (ours[f] * ours["runs"] + default[f] * default["runs"])
            / (ours["runs"] + default["runs"])
            for f in ("recall", "precision", "reported")
        }
        config = r.get("our_alphabet", heavy.our_alphabet(r["workload"]))
        head = (
            f"| {r['label']} | {r['epsilon']:g} | {_n(r['n'])} | {config} | "
            f"{_rate(ours['per_s'])} | "
            f"{_rate(default['per_s'])} | {_rp(both)} | "
        )
        for p in r["peers"]:
            lines.append(head + " | ".join(_peer_line(r, p)) + " |")
    lines += ["", "Targets (issue 18, part 5, one core):", ""]
    lines += [f"* {v}" for v in data["targets"]]
    lines += ["", "Notes:", "", *(f"* {n}" for n in NOTES)]
    return "\n".join(lines) + "\n"


NOTES = (
    "Strings of the full length only: pure-LDP's TreeHist finds only strings of "
    "`max_string_length` characters (its padding character may not be in the alphabet and "
    "every candidate ends in padding), and its PEM hands the index mapper the prefix cut at "
    "the first padding character, so padded candidates alias one another (`w0*5` and `w0**`).",
    "pure-LDP's default PEM oracle (OLH) is slow in its server: `LHServer.aggregate` hashes "
    "every index of its group's domain (11, 121, ..., 11^5 = 161,051) for each report, 93% "
    "of a profiled run; the client's `update_params(d=...)` a report sets numbers only (there "
    "is no client per group in its API: `privatise` draws the group).",
    "pure-LDP's TreeHist and SFP are run with Apple's HCMS as their oracle (its author's "
    "experiments' choice); their default OLH oracle does not fit these strings (TreeHist: "
    "prefixes of every length in one oracle of 11^5 slots, 2 x 11^5 hashes a report; SFP: "
    "`SFPClient` needs a `fo_client`, and its default word oracle gets the fragment domain).",
    "pure-LDP's SFP needs `max_string_length` a multiple of `fragment_length` (a client "
    "draws a fragment index the server has no oracle for otherwise): fragments of one "
    "character, five positions; ours: fragments of two symbols, three positions.",
    "pure-LDP 1.2.0's base server calls `np.zeros(None)` for an oracle without a domain, "
    "which numpy 2 refuses: its heavy-hitter servers are built with numpy 1's `np.zeros(())` "
    "for that call (not timed).",
    "Not timed: building pure-LDP's clients and a fresh server per run, and the list of "
    "strings both APIs take.",
    "Full per-row data: `benchmarks/results/peers-heavy.json`.",
)


def main(
    ns: tuple[int, ...],
    repeats: int,
    budget: float,
    out: Path | None,
    meta: Callable[[], dict[str, Any]],
) -> int:
    """Run the heavy-hitter rows; write ``peers-heavy.{md,json}`` into ``out`` (None: print
    only)."""
    warnings.filterwarnings("ignore")
    rows = heavy.run_rows(ns, repeats, budget)
    data: dict[str, Any] = {"meta": meta()}
    data["meta"] |= {"alphabet": ALPHABET, "length": LENGTH, "domain": DOMAIN,
                     "epsilons": list(heavy.EPSILONS), "top": TOP}  # fmt: skip
    data |= {"rows": rows, "targets": verdicts(rows)}
    text = markdown(data)
    if out is not None:
        out.mkdir(exist_ok=True)
        (out / "peers-heavy.md").write_text(text, encoding="utf-8")
        (out / "peers-heavy.json").write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    print(text)
    return 0
