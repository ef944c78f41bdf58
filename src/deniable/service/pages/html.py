"""The dashboard's HTML, rendered on the server from the dicts of
:mod:`deniable.service.analysis.results`.

Every number of the page is in a table (the plots are ``<img>`` of the SVG endpoints, their
numbers in the tables beside them), every string from a survey file is escaped, and the
pages carry no inline script or style (the CSP allows only ``/static/dashboard.js`` and
``/static/dashboard.css``): no ``<style>``, no ``style=`` or ``on*=`` attribute.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from deniable.common import format_epsilon
from deniable.common._format import format_number
from deniable.service.analysis.robustness import SHIFTS

__all__ = [
    "LEVELS",
    "login_page",
    "survey_list_page",
    "survey_page",
]

#: The confidence levels the page offers (any level in (0, 1) works in the URL).
LEVELS = (0.8, 0.9, 0.95, 0.99)


def _e(x: Any) -> str:
    return escape(str(x), quote=True)


def _num(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, str):  # "inf" / "nan" from the JSON encoder
        return {"inf": "∞", "-inf": "−∞", "nan": "n/a"}.get(x, x)
    return format_number(float(x), 6)


def _ci(x: Sequence[Any] | None) -> str:
    return "–" if x is None else f"[{_num(x[0])}, {_num(x[1])}]"


def _eps(x: Any) -> str:
    return "∞" if x == "inf" else format_epsilon(float(x))


def _page(title: str, body: str, *, survey: str | None = None, nav: bool = True) -> str:
    data = "" if survey is None else f' data-survey="{_e(survey)}"'
    top = (
        '<header class="top"><nav><a href="/dashboard">Surveys</a></nav>'
        '<form method="post" action="/dashboard/logout" class="logout">'
        '<button type="submit">Log out</button></form></header>\n'
        if nav
        else ""
    )
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)} · deniable dashboard</title>\n"
        '<link rel="stylesheet" href="/static/dashboard.css">\n'
        '<script type="module" src="/static/dashboard.js"></script>\n'
        f"</head>\n<body{data}>\n{top}<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def _table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    caption: str | None = None,
    cls: str = "numbers",
) -> str:
    head = "".join(f'<th scope="col">{_e(h)}</th>' for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            (f'<th scope="row">{c}</th>' if i == 0 else f"<td>{c}</td>") for i, c in enumerate(r)
        )
        + "</tr>\n"
        for r in rows
    )
    cap = "" if caption is None else f"<caption>{_e(caption)}</caption>"
    return (
        f'<div class="scroll"><table class="{cls}">{cap}<thead><tr>{head}</tr></thead>\n'
        f"<tbody>\n{body}</tbody></table></div>"
    )


def login_page(error: str | None = None) -> str:
    """The login form: the admin token or the admin password, POSTed to /dashboard/login."""
    err = "" if error is None else f'<p class="error" role="alert">{_e(error)}</p>\n'
    body = (
        "<h1>Dashboard login</h1>\n"
        f"{err}"
        '<form method="post" action="/dashboard/login" class="login">\n'
        '<label for="secret">Admin token or password</label>\n'
        '<input id="secret" name="secret" type="password" autocomplete="current-password" '
        "required>\n"
        '<button type="submit">Log in</button>\n</form>\n'
        "<p>The admin token is printed when the service starts (or set with "
        "<code>DENIABLE_ADMIN_TOKEN</code>); the password is <code>DENIABLE_ADMIN_PASSWORD</code>"
        " if one is set.</p>"
    )
    return _page("Login", body, nav=False)


def survey_list_page(surveys: Sequence[Mapping[str, Any]]) -> str:
    """The list of surveys: id, title, version, how respondents come, state, questions,
    reports."""
    rows = [
        (
            f'<a href="/dashboard/{quote(str(s["id"]), safe="")}">{_e(s["id"])}</a>',
            _e(s["title"]),
            _e(s["version"]),
            _e(s.get("access", "")),
            _e(s.get("state", "")),
            _e(s["questions"]),
            _e(s["reports"]),
        )
        for s in surveys
    ]
    table = _table(
        ("survey", "title", "version", "respondents", "state", "questions", "reports"),
        rows,
        cls="list",
    )
    return _page("Surveys", f"<h1>Surveys</h1>\n{table if rows else '<p>No survey.</p>'}")


def _select(name: str, label: str, options: Sequence[tuple[str, str]], chosen: str) -> str:
    opts = "".join(
        f'<option value="{_e(v)}"{" selected" if v == chosen else ""}>{_e(t)}</option>'
        for v, t in options
    )
    return f'<label for="{name}">{label}</label><select id="{name}" name="{name}">{opts}</select>'


def _controls(
    level: float, bucket: str, shift: float | None = None, rate: str | None = None
) -> str:
    levels = [(f"{lv:g}", f"{lv:.0%}") for lv in sorted({*LEVELS, level})]
    parts = [
        _select("level", "Confidence level", levels, f"{level:g}"),
        _select("bucket", "Time buckets", [(b, b) for b in ("hour", "day")], bucket),
    ]
    if rate is not None:
        parts.append(_select("rate", "Arrivals per", [(b, b) for b in ("minute", "hour")], rate))
    if shift is not None:
        shifts = [(f"{x:g}", f"{x:g}") for x in sorted({*SHIFTS, shift})]
        parts.append(_select("shift", "Robustness to a shift of", shifts, f"{shift:g}"))
    return (
        '<form method="get" class="controls" id="controls">'
        + "".join(parts)
        + '<button type="submit">Update</button></form>'
    )


def _binary_rows(questions: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for q in questions:
        if q["kind"] != "binary":
            continue
        rows.append(
            (
                f'{_e(q["id"])}<br><span class="text">{_e(q["text"])}</span>',
                _e(q["design"]),
                _eps(q["epsilon"]),
                str(q["n"]),
                str(q["counts"][-1]) if q["kind"] == "binary" and len(q["counts"]) == 2 else "–",
                _num(q["estimate"]),
                _num(q["estimate_bounded"]),
                _num(q["se"]),
                _num(q["se_unbiased"]),
                _ci(q["ci_exact"]),
                _ci(q["ci_wald"]),
            )
        )
    return rows


def _categorical_table(q: Mapping[str, Any], level: float) -> str:
    k = len(q["labels"])
    none: list[Any] = [None] * k
    est, bnd = q["estimate"] or none, q["estimate_bounded"] or none
    se, seu = q["se"] or none, q["se_unbiased"] or none
    exact, wald = q["ci_exact"] or none, q["ci_wald"] or none
    rows = [
        (_e(label), str(q["counts"][j]), _num(est[j]), _num(bnd[j]), _num(se[j]), _num(seu[j]),
         _ci(exact[j]), _ci(wald[j]))
        for j, label in enumerate(q["labels"])
    ]  # fmt: skip
    caption = f"{q['id']}: {q['text']} ({q['design']}, ε = {_eps(q['epsilon'])}, n = {q['n']})"
    return _table(
        ("category", "reports", "estimate", "MLE (simplex)", "SE", "SE (n−1)",
         f"{level:.0%} CI exact", f"{level:.0%} CI Wald"),
        rows,
        caption=caption,
    )  # fmt: skip


def _results_section(sid: str, results: Mapping[str, Any], query: str) -> str:
    level = float(results["level"])
    qs = results["questions"]
    parts = ['<section id="results" aria-labelledby="results-h">',
             '<h2 id="results-h">Estimates</h2>']  # fmt: skip
    binary = _binary_rows(qs)
    if binary:
        parts.append(
            _table(
                (
                    "question",
                    "design",
                    "ε",
                    "n",
                    "yes reports",
                    "estimate",
                    "MLE [0, 1]",
                    "SE",
                    "SE (n−1)",
                    f"{level:.0%} CI exact",
                    f"{level:.0%} CI Wald",
                ),
                binary,
                caption="Yes/no questions",
            )
        )
    for q in qs:
        if q["kind"] == "categorical":
            parts.append(_categorical_table(q, level))
    parts.append(
        '<p class="note">estimate: unbiased moment estimate (may leave [0, 1]); MLE: bounded '
        "maximum likelihood; SE: plug-in (divides by n), SE (n−1): unbiased; exact: "
        "Clopper-Pearson for the share of reports, mapped through the design.</p>"
    )
    notes = [f"{q['id']}: {n}" for q in qs for n in q["notes"] if q["n"]]
    if notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    parts.append(
        f'<figure><img src="/api/surveys/{sid}/plots/forest.svg?{query}" '
        f"alt=\"Forest plot: each question's estimate and {level:.0%} exact interval, as in the "
        'tables above"><figcaption>Estimates and exact intervals</figcaption></figure>'
    )
    parts.append("</section>")
    return "\n".join(parts)


def _majority_section(majorities: Sequence[Mapping[str, Any]]) -> str:
    heads = ("question", "n", "yes reports", "rule", "decision", "estimate (MLE)",
             "error probability at the estimate", "false positive rate (at 1/2)",
             "false negative rate")  # fmt: skip
    rows = [
        (
            _e(m["question"]),
            str(m["n"]),
            str(m["yes"]),
            _e(m["decision_rule"] or "–"),
            "–" if m["decision"] is None else ("majority" if m["decision"] else "no majority"),
            _num(m["prevalence"]),
            _num(m["error_probability"]),
            _num(m["false_positive_rate"]),
            _num(m["false_negative_rate"]),
        )
        for m in majorities
    ]
    return (
        '<section id="majority" aria-labelledby="majority-h">\n'
        '<h2 id="majority-h">Majority decisions</h2>\n'
        + _table(heads, rows)
        + '\n<p class="note">Exact binomial tails (iid sampling): the error probability is '
        "the chance that a survey of this size reaches the other verdict if the true "
        "prevalence were the estimate; the false positive rate is the chance of deciding "
        '"majority" at a prevalence of exactly 1/2 (the worst case).</p>\n</section>'
    )


def _timeline_section(
    sid: str, timelines: Sequence[Mapping[str, Any]], query: str, bucket: str
) -> str:
    title = f"Estimates over time (cumulative, per {_e(bucket)})"
    parts = ['<section id="timeline" aria-labelledby="timeline-h">',
             f'<h2 id="timeline-h">{title}</h2>']  # fmt: skip
    for t in timelines:
        qid = str(t["question"])
        parts.append(f"<h3>{_e(qid)}</h3>")
        parts.append(
            f'<figure><img src="/api/surveys/{sid}/plots/timeline/{quote(qid, safe="")}.svg?'
            f'{query}" alt="Estimate of {_e(qid)} over time with its exact interval, as in the '
            'table below"></figure>'
        )
        cat = t["kind"] == "categorical"
        rows: list[tuple[str, ...]] = []
        for p in t["points"]:
            if cat:
                for j, label in enumerate(t["labels"]):
                    est = None if p["estimate"] is None else p["estimate"][j]
                    ci = None if p["ci_exact"] is None else p["ci_exact"][j]
                    rows.append((_e(p["end"]), _e(label), str(p["n"]), _num(est), _ci(ci)))
            else:
                rows.append((_e(p["end"]), str(p["n"]), _num(p["estimate"]), _ci(p["ci_exact"])))
        heads = ("end of bucket", *(("category",) if cat else ()), "n", "estimate",
                 f"{float(t['level']):.0%} CI exact")  # fmt: skip
        parts.append("<details><summary>The numbers</summary>" + _table(heads, rows) + "</details>")
    parts.append("</section>")
    return "\n".join(parts)


def _budget_section(sid: str, b: Mapping[str, Any]) -> str:
    summary = _table(
        ("respondents", "cap", "whole survey (basic composition)", "mean spent", "median",
         "most spent", "at the cap"),
        [(str(b["respondents"]), _eps(b["cap"]), _eps(b["total"]), _num(b["mean"]),
          _num(b["median"]), _num(b["max"]), str(b["at_cap"]))],
    )  # fmt: skip
    values = _table(
        ("ε spent", "respondents"),
        [(_eps(x["spent"]), str(x["respondents"])) for x in b["values"]],
        caption="Every amount spent",
    )
    edges, counts = b["histogram"]["edges"], b["histogram"]["counts"]
    hist = _table(
        ("bin", "respondents"),
        [(f"[{_num(edges[i])}, {_num(edges[i + 1])}{']' if i == len(counts) - 1 else ')'}",
          str(c)) for i, c in enumerate(counts)],
        caption="Histogram",
    )  # fmt: skip
    return (
        '<section id="budget" aria-labelledby="budget-h">\n'
        '<h2 id="budget-h">Privacy budget spent per respondent</h2>\n'
        f"{summary}\n"
        f'<figure><img src="/api/surveys/{sid}/plots/budget.svg" alt="Histogram of the epsilon '
        'each respondent has spent, with the cap, as in the tables below"></figure>\n'
        f"{values}\n<details><summary>Histogram bins</summary>{hist}</details>\n</section>"
    )


def _exports_section(sid: str, query: str) -> str:
    links = [
        (f"/api/surveys/{sid}/export.csv", "Randomized reports (CSV)"),
        (f"/api/surveys/{sid}/export.parquet", "Randomized reports (Parquet)"),
        (f"/api/surveys/{sid}/results.json?{query}", "Results (JSON)"),
        (f"/api/surveys/{sid}/results?{query}", "API: results"),
        (f"/api/surveys/{sid}/budget", "API: budget"),
    ]
    items = "".join(f'<li><a href="{_e(u)}">{_e(t)}</a></li>' for u, t in links)
    return (
        '<section id="exports" aria-labelledby="exports-h">\n'
        '<h2 id="exports-h">Exports</h2>\n'
        f"<ul>{items}</ul>\n"
        '<p class="note">The report exports hold one row per respondent and one column per '
        "question, the randomized report values and nothing else (no respondent id, no "
        "time; rows sorted by their reports).</p>\n</section>"
    )


def survey_page(
    survey: Mapping[str, Any],
    results: Mapping[str, Any],
    majorities: Sequence[Mapping[str, Any]],
    timelines: Sequence[Mapping[str, Any]],
    budget: Mapping[str, Any],
    *,
    bucket: str,
    access: str = "",
    shift: float | None = None,
    rate: str | None = None,
    robustness: str = "",
    arrivals: str = "",
) -> str:
    """One survey's dashboard: how respondents come and the state (``access``, HTML), the
    estimates (tables and forest plot) and their robustness (``robustness``, HTML), the
    majority panel, the arrival rates (``arrivals``, HTML), the estimates over time, the
    budget spent and the exports."""
    sid = quote(str(survey["id"]), safe="")
    level = float(results["level"])
    query = urlencode({"level": f"{level:g}", "bucket": bucket})
    head = (
        f"<h1>{_e(survey['title'])}</h1>\n"
        f'<p class="meta">survey <code>{_e(survey["id"])}</code>, version '
        f"{_e(survey['version'])}</p>\n"
        + (f"{access}\n" if access else "")
        + (f"<p>{_e(survey['description'])}</p>\n" if survey.get("description") else "")
        + _controls(level, bucket, shift, rate)
    )
    body = "\n".join(
        [
            head,
            _results_section(sid, results, query),
            *([robustness] if robustness else []),
            _majority_section(majorities),
            *([arrivals] if arrivals else []),
            _timeline_section(sid, timelines, query, bucket),
            _budget_section(sid, budget),
            _exports_section(sid, query),
        ]
    )
    return _page(str(survey["title"]), body, survey=str(survey["id"]))
