"""The markdown and the verdicts of the longitudinal and multidimensional rows
(``peers/longitudinal.py``)."""

from __future__ import annotations

from typing import Any

from peers.longitudinal import (
    DBIT_B,
    DBIT_D,
    DBIT_EPS,
    EPS_1,
    EPS_INF,
    MD_D,
    MD_EPS,
    ROUNDS,
    SWITCH,
    K,
)
from peers.report import _n, _rate, _ratio, page_head, page_tail

#: Our timings of a row: (key, label).
OURS = (("ours", "seeded"), ("ours_default", "default randomness"))


def _name(r: dict[str, Any]) -> str:
    return f"{r['label']} n = {_n(r['n'])}"


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for key, label in OURS:
        got = [(r[key]["per_s"] / r["peer"]["per_s"], r) for r in rows if "per_s" in r["peer"]]
        if got:
            low, worst = min(got, key=lambda t: t[0])
            slow = [f"{_name(r)}: {_ratio(x)}" for x, r in got if x < 10]
            text = f"at least 10x multi-freq-ldpy on every row, {label}: "
            lowest = f"lowest {_ratio(low)} at {_name(worst)}"
            out.append(text + (f"NOT met ({'; '.join(slow)})" if slow else f"met ({lowest})"))
        dev = [(r[key]["mse"] / r[key]["theory"] - 1, r) for r in rows]
        if dev:
            misses = [
                f"{_name(r)}: {d:+.1%} (standard error {r[key]['ratio_se']:.1%})"
                for d, r in dev
                if abs(d) > 0.10
            ]
            d, r = max(dev, key=lambda t: abs(t[0]))
            text = f"every MSE within 10% of the theoretical variance, {label}: "
            met = f"met (largest {d:+.1%}, {_name(r)})"
            out.append(text + (f"NOT met ({'; '.join(misses)})" if misses else met))
    failed = [f"{_name(r)}: {r['peer']['failure']}" for r in rows if "failure" in r["peer"]]
    if failed:
        out.append("multi-freq-ldpy failed: " + "; ".join(failed))
    return out


def _peer_cell(p: dict[str, Any]) -> str:
    if "failure" in p:
        return f"fails: {p['failure']}"
    text = f"{_rate(p['per_s'])}"
    if p["extrapolated"]:
        text += f" (extrapolated from {p['devices']:,} devices)"
    return text


def _eps(e: dict[str, float]) -> str:
    return f"{e['min']:.3g} / {e['median']:.3g} / {e['max']:.3g} (bound {e['bound']:.3g})"


def markdown(data: dict[str, Any]) -> str:
    meta = data["meta"]
    what = (
        f"{ROUNDS} rounds of n devices, k = {K} values per attribute (Zipf-like), each device's "
        f"value moving with probability {SWITCH} a round (the Markov switching model of "
        "`deniable.simulation.Fleet`, one draw per row given to both libraries); reports per "
        f"second of randomize + tally + estimate over the {ROUNDS} rounds (n x {ROUNDS} "
        "reports), one core (`taskset -c 0`, one BLAS/OpenMP/numba thread); "
    )
    title = "deniable against multi-freq-ldpy: values that change, several attributes"
    lines = page_head(title, what, meta)
    lines += [
        f"Parameters: longitudinal oracles eps_inf = {EPS_INF}, eps_1 = {EPS_1}; dBitFlipPM "
        f"eps = {DBIT_EPS}, b = {DBIT_B} buckets, d = {DBIT_D} bits; SPL, SMP and RS+FD over "
        f"{MD_D} attributes with GRR at a device budget eps = {MD_EPS} a round.  Every time is "
        f"the best of {meta['repeats']} runs (ours: a fresh memo store each run, seeded and "
        "with the default randomness).  A multi-freq-ldpy run longer than "
        f"{meta['budget_s']:.0f} s is measured on the row's first devices and extrapolated "
        "(affine in the devices).  MSE: mean over the rounds and values of the squared error "
        "of the frequency estimates; theory: the mean exact variance at each round's true "
        "frequencies; our ratio is the mean over 10 independent runs at n = 10^5, 3 at "
        "10^6 (each with its own seed and a fresh memo store), ± its standard error.  The "
        f"{ROUNDS} rounds of a run are correlated (they share the devices' permanent "
        "responses), so they are not counted as independent: for L-SUE, L-OUE and L-OSUE "
        "the standard error is the closed form of one run's standard deviation (the exact "
        "covariance of the estimates across the rounds, normal approximation: "
        "`unary_ratio_sd` in `benchmarks/peers/longitudinal.py`) over √runs; for the other "
        "rows it is the spread of the runs' ratios (with 3 runs, itself uncertain).",
        "",
        "| protocol | n | ours seeded /s | ours default /s | multi-freq-ldpy /s | seeded / "
        "peer | default / peer | our MSE / theory ± standard error (seeded; default) | peer "
        "MSE / theory | our "
        f"realized eps per device over {ROUNDS} rounds: min / median / max | peer's eps: "
        "stated; realized |",
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in data["rows"]:
        ours, default, peer = r["ours"], r["ours_default"], r["peer"]
        ratios = ["-", "-"]
        peer_err = "-"
        if "per_s" in peer:
            ratios = [_ratio(x["per_s"] / peer["per_s"]) for x in (ours, default)]
            peer_err = f"{peer['mse'] * peer['devices'] / (ours['theory'] * r['n']):.2f}"
        lines.append(
            f"| {r['label']} | {_n(r['n'])} | {_rate(ours['per_s'])} | "
            f"{_rate(default['per_s'])} | {_peer_cell(peer)} | {ratios[0]} | {ratios[1]} | "
            f"{ours['mse'] / ours['theory']:.3f} ± {ours['ratio_se']:.3f}; "
            f"{default['mse'] / default['theory']:.3f} ± {default['ratio_se']:.3f} | "
            f"{peer_err} | {_eps(ours['epsilon'])} | {peer['stated']:.3g}; "
            f"{peer['realized']:.3g} ({peer['why']}) |"
        )
    notes = [
        "multi-freq-ldpy's longitudinal clients memoize nothing: each call draws a fresh "
        "permanent response (cheaper than keeping one), so its stated eps_perm bounds one "
        f"report only; over {ROUNDS} rounds a device loses up to {ROUNDS} x eps_1.  Ours keep "
        "the permanent responses in a memo store: the realized eps is per device, from the "
        "distinct values (LOLOHA: hashed values; dBitFlipPM: buckets) it reported.",
        "LOLOHA has no package of its own on the registry (no peer but multi-freq-ldpy's "
        "`L_LH_Client(optimal=True)`, its L-OLH from the LOLOHA paper).",
        "RS+FD: multi-freq-ldpy runs GRR at the amplified ln(d (e^eps - 1) + 1), which holds "
        "against a change of one attribute only; deniable runs it at eps (the bound against "
        "any change), so their variances differ.",
        "The peer's MSE is of its clipped and renormalized estimates (biased), at the devices "
        "it ran, as a multiple of our mechanism's theoretical variance scaled to those devices.",
        "Full per-row data: `benchmarks/results/peers-longitudinal.json`.",
    ]
    lines += page_tail("issue 17", data["targets"], notes)
    return "\n".join(lines) + "\n"
