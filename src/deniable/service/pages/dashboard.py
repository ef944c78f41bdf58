"""The dashboard's pages, rendered on the server from the dicts of
:mod:`deniable.service.analysis` through the templates (autoescaped:
:mod:`deniable.service.pages._env`).

Every number of a page is in a table (the plots are ``<img>`` of the SVG endpoints, their
numbers in the tables beside them; the arrival bars are a small SVG drawn by the template,
their counts in a table too).  The functions here only choose and format the values a
template shows, as plain strings; the templates lay them out and escape them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from deniable.service.pages._env import ci, eps, num, render

__all__ = ["LEVELS", "SHIFTS", "login_page", "survey_list_page", "survey_page"]

#: The confidence levels the page offers (any level in (0, 1) works in the URL).
LEVELS = (0.8, 0.9, 0.95, 0.99)
#: The shifts the robustness panel offers (any in (0, 1] works in the URL).
SHIFTS = (0.01, 0.02, 0.05, 0.1, 0.2)
_WIDTH, _HEIGHT, _GAP = 600, 60, 1


def login_page(error: str | None = None) -> str:
    """The login form: the admin token or the admin password, POSTed to /dashboard/login."""
    return render("login.html", title="Login", nav=False, error=error)


def survey_list_page(
    surveys: Sequence[Mapping[str, Any]], streams: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The list of surveys: id, title, version, how respondents come, state, questions,
    reports; then the telemetry streams (``id``, ``oracle``, ``devices``), each linked to
    its page."""
    rows = [
        {"id": s["id"], "title": s["title"], "version": s["version"],
         "access": s.get("access", ""), "state": s.get("state", ""),
         "questions": s["questions"], "reports": s["reports"]}
        for s in surveys
    ]  # fmt: skip
    listed = [{"id": s["id"], "oracle": s["oracle"], "devices": s["devices"]} for s in streams]
    return render("surveys.html", title="Surveys", surveys=rows, streams=listed)


def _select(name: str, label: str, options: Sequence[tuple[str, str]], chosen: str) -> Any:
    return {"name": name, "label": label, "options": list(options), "chosen": chosen}


def _controls(level: float, bucket: str, shift: float | None, rate: str | None) -> list[Any]:
    levels = [(f"{lv:g}", f"{lv:.0%}") for lv in sorted({*LEVELS, level})]
    out = [
        _select("level", "Confidence level", levels, f"{level:g}"),
        _select("bucket", "Time buckets", [(b, b) for b in ("hour", "day")], bucket),
    ]
    if rate is not None:
        out.append(_select("rate", "Arrivals per", [(b, b) for b in ("minute", "hour")], rate))
    if shift is not None:
        shifts = [(f"{x:g}", f"{x:g}") for x in sorted({*SHIFTS, shift})]
        out.append(_select("shift", "Robustness to a shift of", shifts, f"{shift:g}"))
    return out


def _results(results: Mapping[str, Any]) -> dict[str, Any]:
    level = float(results["level"])
    qs = results["questions"]
    binary = [
        {"id": q["id"], "text": q["text"],
         "cells": [q["design"], eps(q["epsilon"]), str(q["n"]),
                   str(q["counts"][-1]) if len(q["counts"]) == 2 else "–",
                   num(q["estimate"]), num(q["estimate_bounded"]), num(q["se"]),
                   num(q["se_unbiased"]), ci(q["ci_exact"]), ci(q["ci_wald"])]}
        for q in qs if q["kind"] == "binary"
    ]  # fmt: skip
    categorical = []
    for q in qs:
        if q["kind"] != "categorical":
            continue
        none: list[Any] = [None] * len(q["labels"])
        est, bnd = q["estimate"] or none, q["estimate_bounded"] or none
        se, seu = q["se"] or none, q["se_unbiased"] or none
        exact, wald = q["ci_exact"] or none, q["ci_wald"] or none
        rows = [
            (label, str(q["counts"][j]), num(est[j]), num(bnd[j]), num(se[j]), num(seu[j]),
             ci(exact[j]), ci(wald[j]))
            for j, label in enumerate(q["labels"])
        ]  # fmt: skip
        caption = f"{q['id']}: {q['text']} ({q['design']}, ε = {eps(q['epsilon'])}, n = {q['n']})"
        categorical.append({"rows": rows, "caption": caption})
    return {
        "pct": f"{level:.0%}",
        "binary": binary,
        "categorical": categorical,
        "two_group": _two_group(qs),
        "notes": [f"{q['id']}: {n}" for q in qs for n in q["notes"] if q["n"]],
    }


def _two_group(questions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A row per parameter of each two-group question (outside the cap: its epsilon in
    words, never a number), with each group's reports."""
    out = []
    for q in questions:
        if q["kind"] != "two-group":
            continue
        groups = q.get("groups") or []
        counts = "; ".join(f"group {g['group']}: {g['yes']} / {g['n']}" for g in groups) or "–"
        params = q.get("estimates") or {"prevalence": dict.fromkeys(
            ("estimate", "estimate_bounded", "se", "se_unbiased", "ci_wald"))}  # fmt: skip
        rows = [
            (name, num(e["estimate"]), num(e["estimate_bounded"]), num(e["se"]),
             num(e["se_unbiased"]), ci(e["ci_wald"]))
            for name, e in params.items()
        ]  # fmt: skip
        caption = (f"{q['id']}: {q['text']} ({q['design']}, {q['guarantee']}, n = {q['n']}; "
                   f"yes / n per group: {counts})")  # fmt: skip
        out.append({"rows": rows, "caption": caption})
    return out


def _design(design: Mapping[str, Any] | None, results: Mapping[str, Any]) -> Any:
    """The design-based estimates beside the unweighted ones: one row per yes/no question
    (per category of a categorical one)."""
    if design is None:
        return None
    plain = {q["id"]: q for q in results["questions"]}
    rows: list[tuple[str, ...]] = []
    for entry in design.get("questions", []) if design.get("design") else []:
        q, based = plain[entry["question"]], entry["design_based"]
        if based is None:
            rows.append((q["id"], *["–"] * 7, entry.get("error", "")))
            continue
        categories = isinstance(based["estimate"], list)
        labels = q["labels"] if categories else [None]
        for j, label in enumerate(labels):
            cells = [q["estimate"], q["se"], based["estimate"], based["se"], based["ci_t"],
                     based["deff"]]  # fmt: skip
            est, se, d_est, d_se, d_ci, deff = (c[j] if categories else c for c in cells)
            head = q["id"] if label is None else f"{q['id']}: {label}"
            rows.append((head, num(est), num(se), num(d_est), num(d_se), ci(d_ci), num(deff),
                         str(based["df"]), str(entry["n"])))  # fmt: skip
    strata = [(s["stratum"], f"fewer than {design['min_cell']}" if s["hidden"] else str(s["n"]))
              for s in design.get("strata", [])]  # fmt: skip
    return {
        "rows": rows, "strata": strata, "n": design["n"], "design": design.get("design") or "–",
        "attributes": ", ".join(design["attributes"]), "error": design.get("error"),
        "deff_weights": num(design["deff_weights"]) if "deff_weights" in design else "–",
        "pct": f"{float(design['level']):.0%}",
        "without": int(design.get("without_attributes", 0)),
        "raking": _raking(design, plain),
    }  # fmt: skip


def _raking(design: Mapping[str, Any], plain: Mapping[str, Any]) -> Any:
    """The raked estimates beside the unweighted and design-weighted ones, what the raking
    did and each margin level's target, achieved value and respondents (hidden under the
    minimum cell)."""
    info = design.get("raking")
    if info is None:
        return None
    weighted = "weight" in design["attributes"]
    rows: list[tuple[str, ...]] = []
    for entry in design.get("questions", []) if info["error"] is None else []:
        q, raked, based = plain[entry["question"]], entry["raked"], entry["design_based"]
        if raked is None:
            rows.append((q["id"], *["–"] * (7 if weighted else 6), entry.get("raked_error", "")))
            continue
        categories = isinstance(raked["estimate"], list)
        for j, label in enumerate(q["labels"] if categories else [None]):

            def at(x: Any, j: int = j, many: bool = categories) -> Any:
                return x[j] if many and x is not None else x

            head = q["id"] if label is None else f"{q['id']}: {label}"
            cells = [head, num(at(q["estimate"]))]
            if weighted:
                cells.append(num(at(based["estimate"])) if based else "–")
            cells += [num(at(raked["estimate"])), num(at(raked["se"])), ci(at(raked["ci_t"])),
                      num(at(raked["deff"])), str(raked["df"]), str(entry["raked_n"])]  # fmt: skip
            rows.append(tuple(cells))
    head = ["question", "estimate (unweighted)"]
    if weighted:
        head.append("estimate (design weights)")
    head += ["estimate (raked)", "SE (raked)", f"{float(design['level']):.0%} CI (t, raked)",
             "design effect (raked)", "df", "n"]  # fmt: skip
    cells = [(c["variable"], c["level"], num(c["target"]), num(c["achieved"]),
              f"fewer than {design['min_cell']}" if c["hidden"] else str(c["n"]))
             for c in info["cells"]]  # fmt: skip
    return {
        "head": head, "rows": rows, "cells": cells, "error": info["error"],
        "variables": ", ".join(info["variables"]), "kind": info["kind"], "n": info["n"],
        "without": info["without_variables"], "iterations": info["iterations"],
        "converged": info["converged"], "deff_weights": num(info["deff_weights"]),
        "trim": None if info["trim"] is None else ci(info["trim"]),
        "from": "the invitations' design weights" if weighted else "weights of 1",
        "notes": info["notes"],
    }  # fmt: skip


def _majority(majorities: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    return [
        (m["question"], str(m["n"]), str(m["yes"]), m["decision_rule"] or "–",
         "–" if m["decision"] is None else ("majority" if m["decision"] else "no majority"),
         num(m["prevalence"]), num(m["error_probability"]), num(m["false_positive_rate"]),
         num(m["false_negative_rate"]))
        for m in majorities
    ]  # fmt: skip


def _timelines(timelines: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for t in timelines:
        cat = t["kind"] == "categorical"
        rows: list[tuple[str, ...]] = []
        for p in t["points"]:
            if cat:
                for j, label in enumerate(t["labels"]):
                    est = None if p["estimate"] is None else p["estimate"][j]
                    interval = None if p["ci_exact"] is None else p["ci_exact"][j]
                    rows.append((p["end"], label, str(p["n"]), num(est), ci(interval)))
            else:
                rows.append((p["end"], str(p["n"]), num(p["estimate"]), ci(p["ci_exact"])))
        heads = ("end of bucket", *(("category",) if cat else ()), "n", "estimate",
                 f"{float(t['level']):.0%} CI exact")  # fmt: skip
        out.append({"question": str(t["question"]), "heads": heads, "rows": rows})
    return out


def _budget(b: Mapping[str, Any]) -> dict[str, Any]:
    edges, counts = b["histogram"]["edges"], b["histogram"]["counts"]
    last = len(counts) - 1
    return {
        "summary": (str(b["respondents"]), eps(b["cap"]), eps(b["total"]), num(b["mean"]),
                    num(b["median"]), num(b["max"]), str(b["at_cap"])),
        "amounts": [(eps(x["spent"]), str(x["respondents"])) for x in b["values"]],
        "unbounded": [str(q["id"]) for q in b["questions"] if q.get("unbounded")],
        "guarantee": next((q["guarantee"] for q in b["questions"] if q.get("unbounded")), ""),
        "bins": [(f"[{num(edges[i])}, {num(edges[i + 1])}{']' if i == last else ')'}", str(c))
                 for i, c in enumerate(counts)],
    }  # fmt: skip


def _exports(sid: str, query: str) -> list[tuple[str, str]]:
    return [
        (f"/api/surveys/{sid}/export.csv", "Randomized reports (CSV)"),
        (f"/api/surveys/{sid}/export.parquet", "Randomized reports (Parquet)"),
        (f"/api/surveys/{sid}/results.json?{query}", "Results (JSON)"),
        (f"/api/surveys/{sid}/results?{query}", "API: results"),
        (f"/api/surveys/{sid}/budget", "API: budget"),
    ]


def _access(status: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if status is None:
        return None
    return {"invitation": status["access"] == "invitation", "state": status["state"],
            "redeemed": status["redeemed"], "invitations": status["invitations"]}  # fmt: skip


def _fakes(entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return "–"
    return "impossible" if entry["fakes"] is None else str(entry["fakes"])


def _robustness(data: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if data is None:
        return None
    rows = []
    for q in data["questions"]:
        for share in q["shares"]:
            up, down = share.get("up"), share.get("down")
            rows.append(
                {"id": q["id"], "label": share["label"],
                 "cells": [str(q["n"]), num(share["estimate"]),
                           _fakes(None if up is None else up["input"]),
                           _fakes(None if up is None else up["output"]),
                           _fakes(None if down is None else down["input"]),
                           _fakes(None if down is None else down["output"])]}
            )  # fmt: skip
    return {"shift": f"{float(data['shift']):g}", "rows": rows}


def _bars(series: Mapping[str, Any], label: str) -> dict[str, Any]:
    """A bar per window (a burst in its own class), scaled to the largest count."""
    windows = series["windows"]
    top = max([w["count"] for w in windows] + [1])
    step = _WIDTH / max(len(windows), 1)
    bars = []
    for i, w in enumerate(windows):
        h = 0 if not w["count"] else max(1.0, _HEIGHT * w["count"] / top)
        bars.append(
            {"burst": bool(w["burst"]), "x": f"{i * step:.2f}", "y": f"{_HEIGHT - h:.2f}",
             "w": f"{max(step - _GAP, 0.5):.2f}", "h": f"{h:.2f}", "start": w["start"],
             "count": w["count"]}
        )  # fmt: skip
    return {"label": label, "width": _WIDTH, "height": _HEIGHT, "top": top, "bars": bars}


def _arrivals(data: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if data is None:
        return None
    names = (("sessions", "new sessions"), ("reports", "reports"))
    return {
        "bucket": str(data["bucket"]),
        "summary": [(label, str(data[key]["total"]), num(data[key]["baseline"]),
                     str(data[key]["bursts_total"])) for key, label in names],
        "bursts": [(b["start"], label, str(b["count"]), num(data[key]["baseline"]),
                    num(b["p_value"])) for key, label in names for b in data[key]["bursts"]],
        "series": [_bars(data[key], label) for key, label in names],
        "counts": [(s["start"], str(s["count"]), str(r["count"]),
                    "burst" if s["burst"] or r["burst"] else "")
                   for s, r in zip(data["sessions"]["windows"], data["reports"]["windows"],
                                   strict=True)],
        "rule": data["rule"]["text"],
    }  # fmt: skip


def survey_page(
    survey: Mapping[str, Any],
    results: Mapping[str, Any],
    majorities: Sequence[Mapping[str, Any]],
    timelines: Sequence[Mapping[str, Any]],
    budget: Mapping[str, Any],
    *,
    bucket: str,
    status: Mapping[str, Any] | None = None,
    shift: float | None = None,
    rate: str | None = None,
    robustness: Mapping[str, Any] | None = None,
    arrivals: Mapping[str, Any] | None = None,
    design: Mapping[str, Any] | None = None,
) -> str:
    """One survey's dashboard: how respondents come and the state (``status``), the
    estimates (tables and forest plot) and their robustness (``robustness``), the majority
    panel, the arrival rates (``arrivals``), the estimates over time, the budget spent and
    the exports, and the design-based estimates beside the unweighted ones when the
    invitations carry design attributes (``design``); each from the dict of its JSON
    endpoint."""
    sid = quote(str(survey["id"]), safe="")
    level = float(results["level"])
    query = urlencode({"level": f"{level:g}", "bucket": bucket})
    return render(
        "survey.html",
        title=str(survey["title"]),
        survey=str(survey["id"]),
        head={"title": survey["title"], "id": survey["id"], "version": survey["version"],
              "description": survey.get("description") or ""},
        sid=sid,
        query=query,
        bucket=bucket,
        access=_access(status),
        controls=_controls(level, bucket, shift, rate),
        results=_results(results),
        design=_design(design, results),
        robustness=_robustness(robustness),
        majority=_majority(majorities),
        arrivals=_arrivals(arrivals),
        timelines=_timelines(timelines),
        budget=_budget(budget),
        exports=_exports(sid, query),
    )  # fmt: skip
