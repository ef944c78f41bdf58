"""The dashboard's telemetry-stream page: each UTC day's estimate of a stream, rendered on
the server from :func:`deniable.service.analysis.streams.stream_estimates` through the
template ``stream.html`` (autoescaped: :mod:`deniable.service.pages._env`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deniable.service.pages._env import ci, num, render

__all__ = ["stream_page"]

_LEVELS = (0.8, 0.9, 0.95, 0.99)
#: The note under the tables, by the schema of the stream's oracle spec.
_KINDS = {
    "deniable.rappor-spec/1": "rappor", "deniable.cms-spec/1": "sketch",
    "deniable.cms-spec/2": "sketch",
    "deniable.heavy-spec/1": "heavy", "deniable.range-spec/1": "range",
    "deniable.square-wave-spec/1": "square-wave", "deniable.sfp-spec/1": "sfp",
    "deniable.rappor-ngram-spec/1": "ngram",
}  # fmt: skip


def _sfp_rows(estimate: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """One row per string an SFP day found: its frequency from the whole-string sketch, SE,
    interval and the whole-string threshold that decided the list."""
    decided = f"{num(estimate['word_threshold'])} (whole-string sketch)"
    return [
        (str(h["string"]), num(h["frequency"]), num(h["se"]), ci(h["ci"]), decided)
        for h in estimate["heavy_hitters"]
    ]


def _ngram_rows(estimate: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """One row per string a RAPPOR n-gram day found: its frequency from the full-string
    reports, SE, Wald interval and the p-value level that decided the list (– without
    full-string reports: every candidate, without a frequency)."""
    level = estimate["string_threshold"]
    decided = "–" if level is None else f"p-value < {num(level)} (full-string reports)"
    return [
        (str(h["string"]), num(h["frequency"]), num(h["se"]), ci(h.get("ci_wald")), decided)
        for h in estimate["strings"]
    ]


def _heavy_rows(estimate: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """One row per discovered string of a PEM or TreeHist day: its frequency, SE, interval
    and the threshold of the last round, which decided the list (its rule: the exact
    binomial count threshold, or the top-k cap)."""
    rounds = estimate.get("rounds") or []
    last = rounds[-1] if rounds else None
    decided = "–" if last is None else f"{num(last['threshold'])} ({last['rule']})"
    return [
        (str(h["string"]) if h["utf8"] else f"0x{h['string']}", num(h["frequency"]),
         num(h["se"]), ci(h["ci"]), decided)
        for h in estimate["heavy_hitters"]
    ]  # fmt: skip


def _rappor_rows(estimate: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """One row per candidate of a RAPPOR estimate: whether it is reported (Bonferroni),
    its frequency, SE, p-value and Wald interval (– for an unselected candidate)."""
    return [
        (str(c["candidate"]), "yes" if c["reported"] else "no", num(c["frequency"]),
         num(c["se"]), num(c["p_value"]), ci(c.get("ci_wald")))
        for c in estimate["candidates"]
    ]  # fmt: skip


def _sketch_rows(estimate: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """One row per candidate of a count mean sketch's estimate: its unbiased frequency,
    both standard errors and its interval."""
    return [
        (str(c["candidate"]), num(c["frequency"]), num(c["se"]), num(c["se_fixed"]),
         ci(c["ci"]))
        for c in estimate["candidates"]
    ]  # fmt: skip


def _sketch(estimate: Mapping[str, Any]) -> bool:
    """Whether ``estimate`` is a count mean sketch's (candidates with an interval ``ci``
    each, not RAPPOR's ``reported``)."""
    cands = estimate.get("candidates")
    return isinstance(cands, list) and bool(cands) and "ci" in cands[0]


def _answer_rows(estimate: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """One row per answer of a range or Square Wave day (analysis/_stream_range): the
    quartiles, fixed ranges and means with their SEs and intervals (– where none)."""
    return [(str(a["answer"]), num(a["value"]), num(a["se"]), ci(a["ci"]))
            for a in estimate["answers"]]  # fmt: skip


def _header(estimate: Mapping[str, Any], pct: str) -> tuple[str, ...]:
    if "answers" in estimate:
        return ("answer", "estimate", "SE", f"{pct} interval")
    if "heavy_hitters" in estimate or "ngram_threshold" in estimate:
        return ("string", "frequency", "SE", f"{pct} CI Wald", "threshold (rule)")
    if _sketch(estimate):
        return ("candidate", "frequency", "SE", "SE (fixed devices)", f"{pct} CI")
    if "candidates" in estimate:
        return ("candidate", "reported", "frequency", "SE", "p-value", f"{pct} CI Wald")
    return ("value", "reports supporting it", "estimate", "SE", f"{pct} CI exact",
            f"{pct} CI Wald")  # fmt: skip


def _rows(estimate: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """One row per value of a frequency estimate (a list per field), one per candidate of
    a RAPPOR or count mean sketch estimate, one per discovered string of a heavy-hitter
    day, or one row for a single estimate (a number per field, e.g. a mean's)."""
    if "answers" in estimate:
        return _answer_rows(estimate)
    if estimate.get("method") == "sequence-fragment-puzzle":
        return _sfp_rows(estimate)
    if "ngram_threshold" in estimate:
        return _ngram_rows(estimate)
    if "heavy_hitters" in estimate:
        return _heavy_rows(estimate)
    if _sketch(estimate):
        return _sketch_rows(estimate)
    if "candidates" in estimate:
        return _rappor_rows(estimate)
    est = estimate.get("estimate")
    fields = ("estimate", "se", "ci_exact", "ci_wald")
    if isinstance(est, list):
        cols = [estimate.get(f) or [None] * len(est) for f in fields]
        counts = estimate.get("counts") or [None] * len(est)
        return [
            (str(j), "–" if counts[j] is None else str(counts[j]), num(cols[0][j]),
             num(cols[1][j]), ci(cols[2][j]), ci(cols[3][j]))
            for j in range(len(est))
        ]  # fmt: skip
    one = [estimate.get(f) for f in fields]
    name = str(estimate.get("parameter", "estimate"))
    return [(name, "–", num(one[0]), num(one[1]), ci(one[2]), ci(one[3]))]


def _settings(effective: Mapping[str, Any] | None, declared: Mapping[str, Any]) -> str | None:
    """The answer settings a heavy-hitter or range stream's tables use, one line: each
    field, ``(default)`` when the spec does not set it; None for another stream."""
    if not effective:
        return None
    parts = []
    for name, value in effective.items():
        if name == "ranges":
            text = ", ".join(f"[{a:g}, {b:g}]" for a, b in value) or "none"
        elif name == "quantiles":
            text = ", ".join(f"{q:g}" for q in value) or "none"
        elif isinstance(value, int):  # top_k, max_candidates: whole numbers
            text = str(value)
        else:
            text = "null (top-k rule only)" if value is None else f"{value:g}"
        parts.append(f"{name} {text}" + ("" if name in declared else " (default)"))
    return ", ".join(parts)


def _table(estimate: Mapping[str, Any], pct: str) -> dict[str, Any]:
    return {"n": estimate.get("n", "–"), "rows": _rows(estimate),
            "header": _header(estimate, pct), "note": estimate.get("undecided")}  # fmt: skip


def stream_page(
    spec: Mapping[str, Any], estimates: Mapping[str, Any], devices: int | None = None
) -> str:
    """One stream's page: its spec (oracle, period, budget window), the range form, and a
    table per UTC day with reports: each value's reports supporting it, estimate, standard
    error, exact and Wald intervals at the level of ``estimates``; for a heavy-hitter or
    range stream its answer settings and, when two days or more hold reports, the table
    of all the days pooled first."""
    level = float(estimates["level"])
    levels: Sequence[tuple[str, str]] = [
        (f"{lv:g}", f"{lv:.0%}") for lv in sorted({*_LEVELS, level})
    ]
    pct = f"{level:.0%}"
    days = [{"day": d["day"], **_table(d["estimate"], pct)} for d in estimates["days"]]
    pooled = estimates.get("pooled")
    if pooled is not None and pooled["days"] > 1:
        pooled = {**pooled, **_table(pooled["estimate"], pct)}
    else:
        pooled = None
    window = spec["window"]
    return render(
        "stream.html",
        title=f"Stream {spec['id']}",
        stream=spec["id"],
        oracle=estimates["oracle"],
        period=spec["period"],
        window=f"ε {window['epsilon']:g} per {window['kind']} ({window['tz']})",
        report_epsilon=f"{float(spec['report_epsilon']):g}",
        devices=devices,
        start=estimates["start"],
        end=estimates["end"],
        max_days=estimates["max_days"],
        pct=pct,
        kind=_KINDS.get(str(spec["oracle"].get("schema")), "oracle"),
        levels=levels,
        level=f"{level:g}",
        days=days,
        pooled=pooled,
        settings=_settings(estimates.get("answers"), spec.get("answers") or {}),
    )
