"""The markdown and the verdicts of bench_peers.py."""

from __future__ import annotations

import math
from typing import Any

from peers.model import EPSILON, LIBRARIES


def best_peer(row: dict[str, Any], same: bool = True) -> dict[str, Any] | None:
    """The fastest peer of the row among those of its mechanism (``same``) or the others."""
    ok = [c for c in row["peers"] if "per_s" in c and c["same_mechanism"] == same]
    return max(ok, key=lambda c: c["per_s"]) if ok else None


#: Our timings of a row, for each source: (key of the row's main figure, of the OLH
#: multiply-shift figure, label).
OURS = (("ours", "ours_alt", "seeded"), ("ours_default", "ours_alt_default", "default randomness"))


def _against(
    rows: list[dict[str, Any]], same: bool, ours: str = "ours"
) -> tuple[list[Any], list[str]]:
    ratios, slow = [], []
    for r in rows:
        best = best_peer(r, same)
        if best is None:
            continue
        ratio = r[ours]["per_s"] / best["per_s"]
        ratios.append((ratio, r, best))
        if ratio < 10:
            slow.append(f"{_row_name(r)}: {ratio:.1f}x {best['library']} {best['variant']}")
    return ratios, slow


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for ours, _, label in OURS:
        ratios, slow = _against(rows, True, ours)
        if ratios:
            low, r, best = min(ratios, key=lambda t: t[0])
            lowest = f"lowest {_ratio(low)} ({_row_name(r)}, {best['library']} {best['variant']})"
            text = (
                f"at least 10x the best peer on every row (peers of the row's mechanism), {label}: "
            )
            if slow:
                out.append(text + f"NOT met ({lowest}; " + "; ".join(slow) + ")")
            else:
                out.append(text + f"met ({lowest})")
        others, _ = _against(rows, False, ours)
        for ratio, r, best in others:
            if ratio >= 10:
                continue
            rel = best["mae"] / best["expected_mae"]
            out.append(
                f"against {best['library']} {best['variant']}, another mechanism for the row, "
                f"{label}: NOT 10x at {_row_name(r)}: {ratio:.1f}x ({_rate(best['per_s'])}/s, "
                f"its MAE {rel:.2f}x the expected MAE of OLH at its n; ours "
                f"{_rate(r[ours]['per_s'])}/s)"
            )
    mine = [key for pair in OURS for key in pair[:2]]
    for key, k, minimum, text in (
        ("oue", 1024, 1e6, "OUE k = 1024 >= 1 M reports/s"),
        ("olh", 1024, 3e5, "OLH k = 1024 >= 300 k reports/s including decoding"),
        ("hr", None, 5e6, "Hadamard response >= 5 M reports/s"),
    ):
        got = [r for r in rows if r["workload"] == key and (k is None or r["k"] == k)]
        if not got:
            continue
        # every implementation of ours in the row must meet it, from both sources (OLH:
        # linear and multiply-shift)
        worst = min(got, key=lambda r: min(r[x]["per_s"] for x in mine if x in r))
        rate = min(worst[x]["per_s"] for x in mine if x in worst)
        out.append(
            f"{text}, both sources: {'met' if rate >= minimum else 'NOT met'} (slowest "
            f"{_rate(rate)}/s at {_row_name(worst)})"
        )
    for ours, _, label in OURS:
        dev = [(r[ours]["mae"] / r[ours]["expected_mae"] - 1, r) for r in rows]
        if dev:
            worst_dev, r = max(dev, key=lambda t: abs(t[0]))
            misses = [f"{_row_name(x)}: {d:+.1%}" for d, x in dev if abs(d) > 0.10]
            text = f"every accuracy within 10% of its expected error, {label}: "
            if misses:
                out.append(text + "NOT met (" + "; ".join(misses) + ")")
            else:
                out.append(text + f"met (largest deviation {worst_dev:+.1%}, {_row_name(r)})")
    checks = [r["ours"]["variance_check_max_rel_diff"] for r in rows]
    if checks:
        out.append(
            "our exposed variances against the closed form of Wang et al.: largest relative "
            f"difference {max(checks):.1e} ({'agree' if max(checks) < 1e-9 else 'DISAGREE'})"
        )
    return out


# ---- markdown


def _rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e4:
        return f"{x / 1e3:.0f} k"
    return f"{x / 1e3:.2f} k"


def _ratio(x: float) -> str:
    return f"{x:,.0f}x" if x >= 10 else f"{x:.1f}x"


def _n(n: int) -> str:
    return f"10^{round(math.log10(n))}" if n == 10 ** round(math.log10(n)) else f"{n:,}"


def _row_name(r: dict[str, Any]) -> str:
    k = "" if r["workload"] == "binary" else f" k = {r['k']}"
    return f"{r['label']}{k} n = {_n(r['n'])}"


def _cell(cells: list[dict[str, Any]]) -> str:
    if not cells:
        return "n/a: no such mechanism"
    parts = []
    for c in cells:
        label = f"{c['variant']} " if len(cells) > 1 else ""
        if "failure" in c:
            parts.append(f"{label}fails: {c['failure']}")
            continue
        text = f"{label}{_rate(c['per_s'])}"
        if c["extrapolated"]:
            text += f" (extrapolated from n={c['n_used']:,})"
        parts.append(text)
    return "; ".join(parts)


def page_head(title: str, what: str, meta: dict[str, Any]) -> list[str]:
    """The first lines of a report: the title, ``what`` was timed followed by where and when
    (CPU, Python, date, run time, load), and the versions."""
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    return [
        f"# {title}",
        "",
        what + f"{meta['cpu']}, {meta['cpus_allowed']} CPU(s) allowed, shared; Python "
        f"{meta['python']}; {meta['date']}.  Whole run: {meta['run_minutes']:.1f} min; load "
        f"average {meta.get('load_before', '?')} before, {meta.get('load_after', '?')} after "
        "(the machine is shared: compare within a run).",
        "",
        f"Versions: {versions}.",
        "",
    ]


def page_tail(issues: str, targets: list[str], notes: list[str]) -> list[str]:
    """The last lines of a report: the verdict on each target of ``issues``, then the
    notes."""
    lines = ["", f"Targets ({issues}, one core):", ""]
    lines += [f"* {v}" for v in targets]
    return [*lines, "", "Notes:", "", *(f"* {n}" for n in notes)]


def markdown(data: dict[str, Any]) -> str:
    meta = data["meta"]
    lines = page_head(
        "deniable against the Python LDP libraries",
        f"epsilon = {EPSILON}; Zipf-like values; reports per second of randomize + tally + "
        f"estimate for all n reports, one core (`taskset -c 0`, one BLAS/OpenMP/numba thread); ",
        meta,
    )
    lines += [
        f"Every time is the best of {meta['repeats']} runs at the n measured: ours, with a "
        "seeded generator and with the default randomness (`rng=None`: `SystemRandom()`, the "
        "process's ChaCha20 keystream), and every peer's.  A peer cell whose one run would "
        f"take more than {meta['budget_s']:.0f} s at the row's n is measured at a smaller n "
        "and extrapolated (time affine in n through a 2,000-report pilot and that run; "
        "multi-freq-ldpy's unary encoding is also capped at 1 GiB of report vectors).  Our MAE "
        "is the mean over the runs of the table (binary RR 1,024 runs, k = 16: 64, k = 1024: "
        "3; about 1,024 absolute errors or more, so the ratio to the expected MAE has a "
        "standard deviation of about 2.5%: 10% is some 4 standard deviations), seeded and "
        "default alike; a peer's MAE is of its last timed run, shown as a multiple of the "
        "expected MAE of its mechanism at the n it ran.",
        "",
        "| workload | k | n | ours seeded /s | ours default /s | "
        + " | ".join(f"{lib} /s" for lib in LIBRARIES)
        + " | seeded / best peer | default / best peer | our MAE (seeded) | expected MAE "
        "| ours / expected (seeded; default) | best peer's MAE |",
        "| --- | ---: | ---: | ---: | ---: | "
        + " | ".join("---" for _ in LIBRARIES)
        + " | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in data["rows"]:
        ours, default = r["ours"], r["ours_default"]
        best = best_peer(r)
        cells = [_cell([c for c in r["peers"] if c["library"] == lib]) for lib in LIBRARIES]
        for i, lib in enumerate(LIBRARIES):
            if lib in data["library_failures"]:
                cells[i] = f"fails: {data['library_failures'][lib]}"
        ratios = []
        for mine in (ours, default):
            if best is None:
                ratios.append("-")
                continue
            ratio = f"{_ratio(mine['per_s'] / best['per_s'])} ({best['library']})"
            other = best_peer(r, same=False)
            if other is not None and other["per_s"] > best["per_s"]:
                ratio += f"; {_ratio(mine['per_s'] / other['per_s'])} ({other['variant']})"
            ratios.append(ratio)
        peer_mae = "-"
        if best is not None:
            peer_mae = f"{best['mae']:.2e} ({best['mae'] / best['expected_mae']:.2f}x its expected)"
        rates = []
        for key, alt, _ in OURS:
            text = _rate(r[key]["per_s"])
            if alt in r:
                text += f" (OLH-linear); {_rate(r[alt]['per_s'])} (OLH, multiply-shift)"
            rates.append(text)
        lines.append(
            f"| {r['label']} | {r['k']} | {_n(r['n'])} | {rates[0]} | {rates[1]} | "
            + " | ".join(cells)
            + f" | {ratios[0]} | {ratios[1]} | {ours['mae']:.3e} | {ours['expected_mae']:.3e} "
            f"| {ours['mae'] / ours['expected_mae']:.3f}; "
            f"{default['mae'] / default['expected_mae']:.3f} | {peer_mae} |"
        )
    notes = sorted({c["note"] for r in data["rows"] for c in r["peers"] if c["note"]})
    lines += page_tail("issues 10 and 15", data["targets"], notes)
    lines += [
        "* Our OLH rows: `LinearOLH` (OLH with a linear hash over GF(2), what `choose_oracle` "
        "picks at epsilon = 1: the same channel, estimate and exact variance as OLH at its g, "
        "decoded by one Walsh-Hadamard transform in O(n g + k log k)) gives the ratio and the "
        "MAE; the multiply-shift `OLH` (O(n k) decoding) is timed beside it.",
        "* multi-freq-ldpy's `*_Aggregator_MI` clips negative estimates to 0 and renormalizes "
        "to sum 1: a biased estimator, whose MAE can fall below the unbiased one's.",
        "* OpenDP and diffprivlib have no estimator for these mechanisms: their reports are "
        "tallied by numpy and estimated by `(c / n - q) / (p - q)`, timed with the rest.",
        "* Not timed: a peer's setup (client and server objects, FastLHServer's hash matrix, "
        "ExponentialCategorical's utility table, numba compilation) and converting the values "
        "into the Python objects its API takes; both are in `peers.json` (`setup_s`).",
        "* Full per-cell data (n used, seconds, MAE, expected MAE, each peer's epsilon where "
        "its library computes one): `benchmarks/results/peers.json`.",
    ]
    return "\n".join(lines) + "\n"
