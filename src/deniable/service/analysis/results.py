"""The analyst's numbers, as plain JSON-ready dicts: pure functions of a survey, its tallies,
the per-respondent budget spent and the exported rows (no HTTP, no SQL).

Every number the dashboard shows comes from here, and each function is also a JSON endpoint
(``service/dashboard.py``), so the page and the API cannot disagree:

* :func:`results` -- per question ``n``, the unbiased moment estimate, the bounded MLE, both
  standard errors (plug-in with ``n``, printed; unbiased with ``n - 1``), the exact and Wald
  intervals at ``level`` and the question's epsilon; a categorical question per category
  (each category as the binary design "report j or not");
* :func:`timeline` -- the same at the end of each hour or day (cumulative tallies);
* :func:`budget` -- the distribution of the epsilon each respondent has spent, with the cap;
* :func:`majority` -- the majority decision of a binary question and its exact error
  probabilities (:func:`deniable.estimation.majority_decision`);
* :func:`export_table` -- the randomized reports, one row per respondent and one column per
  question, with nothing else: no respondent id, no time, rows sorted by their reports so
  that their order reveals nothing about who came when.

The estimators are the designs' own (``design.estimate(tally)``), the same code
``deniable analyze`` runs on an export, so the dashboard and an analysis of the export
agree to the last bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from deniable.common import _validation as v
from deniable.common import to_jsonable
from deniable.designs import BinaryDesign, CategoricalEstimate, Tally
from deniable.exceptions import DataError, ParameterError
from deniable.results import Estimate
from deniable.survey import Survey, SurveyQuestion

__all__ = [
    "BUCKETS",
    "RESULTS_SCHEMA",
    "budget",
    "export_columns",
    "export_table",
    "forest_rows",
    "is_binary",
    "majority",
    "question_result",
    "results",
    "results_document",
    "timeline",
]

#: The time buckets of :func:`timeline`.
BUCKETS = ("hour", "day")
#: The schema of :func:`results_document` (the ``results.json`` export).
RESULTS_SCHEMA = "deniable.service.results/1"
#: Bins of the budget histogram unless stated.
DEFAULT_BINS = 20


def is_binary(question: SurveyQuestion) -> bool:
    """Whether the question has a yes/no report (a binary design with two report values,
    informative: ``P(yes | 1) != P(yes | 0)``), so that a majority decision applies."""
    d = question.design
    return isinstance(d, BinaryDesign) and d.n_reports == 2 and d.p_yes_given_1 != d.p_yes_given_0


def _kind(question: SurveyQuestion) -> str:
    return "categorical" if question.design.n_truths > 2 else "binary"


def _interval(est: Estimate, level: float, method: str) -> list[float] | None:
    if method != "wald" and method not in est.interval_methods:
        return None
    lo, hi = est.ci(level, method)
    return [float(lo), float(hi)]


def _binary_numbers(est: Estimate, level: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "estimate": est.value,
        "estimate_bounded": est.bounded,
        "se": est.se,
        "se_unbiased": est.se_unbiased,
        "ci_exact": _interval(est, level, "exact"),
        "ci_wald": _interval(est, level, "wald"),
    }
    for m in est.interval_methods:  # e.g. Kuk's likelihood interval (several draws)
        if m not in ("exact", "wald"):
            out[f"ci_{m}"] = _interval(est, level, m)
    out["lambda_hat"] = est.lambda_hat
    out["notes"] = list(est.notes_at(level))
    return out


def _categorical_numbers(est: CategoricalEstimate, level: float) -> dict[str, Any]:
    cats = [est.category(j) for j in range(est.design.k)]
    return {
        "estimate": [c.value for c in cats],
        "estimate_bounded": [float(x) for x in est.bounded],
        "se": [c.se for c in cats],
        "se_unbiased": [c.se_unbiased for c in cats],
        "ci_exact": [_interval(c, level, "exact") for c in cats],
        "ci_wald": [_interval(c, level, "wald") for c in cats],
        "lambda_hat": [c.lambda_hat for c in cats],
        "notes": [note for c in cats for note in c.notes_at(level)],
    }


def _empty_numbers(question: SurveyQuestion) -> dict[str, Any]:
    k = question.design.n_truths
    none: Any = [None] * k if k > 2 else None
    return {
        "estimate": none,
        "estimate_bounded": none,
        "se": none,
        "se_unbiased": none,
        "ci_exact": none,
        "ci_wald": none,
        "lambda_hat": none,
        "notes": ["no reports yet"],
    }


def _numbers(question: SurveyQuestion, tally: Tally | None, level: float) -> dict[str, Any]:
    """``n``, the report counts and the estimates of one question from its tally."""
    d = question.design
    if tally is None:
        tally = d.tally_counts(np.zeros(d.n_reports, dtype=np.int64))
    tally = d.bind(tally)
    out: dict[str, Any] = {"n": tally.n, "counts": [int(c) for c in tally.counts]}
    if tally.n == 0:
        out.update(_empty_numbers(question))
        return out
    est = d.estimate(tally)
    if isinstance(est, CategoricalEstimate):
        out.update(_categorical_numbers(est, level))
    else:
        out.update(_binary_numbers(cast(Estimate, est), level))
    return out


def question_result(
    question: SurveyQuestion, tally: Tally | None, *, level: float = 0.95
) -> dict[str, Any]:
    """One question's numbers (see :func:`results`); ``tally`` ``None`` means no reports."""
    lvl = v.level(level)
    d = question.design
    out: dict[str, Any] = {
        "id": question.id,
        "text": question.text,
        "kind": _kind(question),
        "labels": list(question.labels),
        "design": d.name,
        "parameters": d.parameters(),
        "epsilon": d.epsilon,
        "level": lvl,
    }
    out.update(_numbers(question, tally, lvl))
    result: dict[str, Any] = to_jsonable(out)
    return result


def results(survey: Survey, tallies: Mapping[str, Tally], *, level: float = 0.95) -> dict[str, Any]:
    """Every question's estimates from the survey's tallies, at confidence ``level``.

    Per question: ``id``, ``text``, ``kind`` (``binary`` / ``categorical``), ``labels``,
    ``design``, ``parameters``, ``epsilon`` (exact; ``"inf"`` never occurs, a survey refuses
    such designs), ``level``, ``n`` (reports), ``counts`` (per report value), ``estimate``
    (unbiased moment, ``(lambda_hat - P0) / (P1 - P0)``: may leave [0, 1]),
    ``estimate_bounded`` (the MLE in [0, 1], on the simplex for a categorical question),
    ``se`` (plug-in, divides by ``n``), ``se_unbiased`` (``n - 1``), ``ci_exact``
    (Clopper-Pearson for the share of reports, mapped through the design), ``ci_wald``
    (``estimate +- z se``), ``lambda_hat`` and ``notes``.  A categorical question has a
    list per field, one entry per category (category ``j`` as the binary design "report
    ``j`` or not": ``P1 = t + (1 - t) f_j``, ``P0 = (1 - t) f_j``).  A question without
    reports has ``n = 0`` and ``null`` numbers.
    """
    lvl = v.level(level)
    return {
        "survey": survey.id,
        "title": survey.title,
        "version": survey.version,
        "level": lvl,
        "questions": [question_result(q, tallies.get(q.id), level=lvl) for q in survey.questions],
    }


def timeline(
    survey: Survey,
    question_id: str,
    points: Iterable[tuple[datetime, Tally]],
    *,
    bucket: str = "day",
    level: float = 0.95,
) -> dict[str, Any]:
    """The estimate and intervals of one question at the end of each time bucket.

    ``points`` are the cumulative tallies at the end of each bucket (``ServiceStore.
    timeline``), oldest first; each point carries ``end`` (ISO 8601) and the numbers of
    :func:`results` for the reports received until then.
    """
    q = survey.question(question_id)
    b = v.choice("bucket", bucket, BUCKETS)
    lvl = v.level(level)
    out = []
    for end, tally in points:
        row: dict[str, Any] = {"end": end.isoformat()}
        row.update(_numbers(q, tally, lvl))
        out.append(row)
    result: dict[str, Any] = to_jsonable(
        {
            "survey": survey.id,
            "question": q.id,
            "kind": _kind(q),
            "labels": list(q.labels),
            "epsilon": q.epsilon,
            "bucket": b,
            "level": lvl,
            "points": out,
        }
    )
    return result


def budget(survey: Survey, spent: npt.ArrayLike, *, bins: int = DEFAULT_BINS) -> dict[str, Any]:
    """The distribution of the epsilon each respondent has spent, beside the cap.

    ``values``: every distinct amount spent with the number of respondents who spent it
    (amounts are sums of question epsilons, so there are few); ``histogram``: ``bins``
    equal bins over ``[0, max(cap, most spent)]`` (the last bin closed, so a respondent
    exactly at the cap counts in it); the cap, the survey's total by basic composition and
    each question's epsilon.
    """
    nb = v.integer("bins", bins, minimum=1, maximum=1000)
    arr = np.asarray(spent, dtype=np.float64).reshape(-1)
    if arr.size and not np.all(np.isfinite(arr) & (arr >= 0)):
        raise DataError("`spent` must hold finite non-negative amounts of epsilon.")
    plan = survey.budget()
    top = max(survey.cap, float(arr.max()) if arr.size else 0.0)
    counts, edges = np.histogram(arr, bins=nb, range=(0.0, top))
    values, how_many = np.unique(arr, return_counts=True)
    n = int(arr.size)
    out = {
        "survey": survey.id,
        "cap": survey.cap,
        "total": plan.basic,
        "questions": [{"id": q.id, "epsilon": q.epsilon} for q in survey.questions],
        "respondents": n,
        "mean": float(arr.mean()) if n else None,
        "median": float(np.median(arr)) if n else None,
        "max": float(arr.max()) if n else None,
        "at_cap": int(np.sum(arr >= survey.cap)),
        "values": [
            {"spent": float(x), "respondents": int(c)}
            for x, c in zip(values.tolist(), how_many.tolist(), strict=True)
        ],
        "histogram": {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]},
    }
    result: dict[str, Any] = to_jsonable(out)
    return result


def majority(
    survey: Survey, question_id: str, tally: Tally | None, *, offset: float = 0.0
) -> dict[str, Any]:
    """The majority decision of a binary question and its exact error probabilities.

    The decision is "the majority carries A" iff the number of "yes" reports passes
    ``n (P0 + P1) / 2 + c sqrt(n lambda_b (1 - lambda_b))`` (mirrored when ``P1 < P0``;
    :func:`deniable.estimation.decide_majority`).  Its error probabilities are exact
    binomial tails (:func:`deniable.estimation.majority_decision`, iid sampling):
    ``error_probability`` at the estimated prevalence (the bounded MLE: the probability
    that a survey of the same size would reach the other verdict if the truth were the
    estimate), ``false_positive_rate`` (deciding "majority" when the prevalence is 1/2,
    the worst case) and ``false_negative_rate`` (missing a majority; at the smallest
    majority when the estimate is not one).  A question without reports has
    ``decision = null``.

    Raises
    ------
    DataError
        The survey has no such question.
    ParameterError
        The question is not binary (a categorical question has no majority decision).
    """
    from deniable.estimation import decide_majority, majority_decision

    q = survey.question(question_id)
    if not is_binary(q):
        raise ParameterError(
            f"`question` must be a binary (yes/no) question for a majority decision, got "
            f"{q.id!r} with design {q.design.name!r} ({q.design.n_truths} answers)."
        )
    d = cast(BinaryDesign, q.design)
    c = v.real("offset", offset)
    if not math.isfinite(c):
        raise ParameterError(f"`offset` must be a finite number, got {c}.")
    t = d.bind(tally) if tally is not None else d.tally_counts([0, 0])
    out: dict[str, Any] = {
        "survey": survey.id,
        "question": q.id,
        "text": q.text,
        "design": d.name,
        "epsilon": d.epsilon,
        "n": t.n,
        "yes": t.yes,
        "offset": c,
    }
    if t.n == 0:
        out.update(decision=None, threshold=None, decision_rule=None, prevalence=None,
                   error_probability=None, p_decide_majority=None, false_positive_rate=None,
                   false_negative_rate=None, false_negative_prevalence=None)  # fmt: skip
    else:
        est = d.estimate(t)
        decided = decide_majority(d, t.yes, t.n, c)
        md = majority_decision(d, t.n, prevalence=min(max(est.bounded, 0.0), 1.0), offset=c)
        out.update(
            decision=decided,
            threshold=md.threshold,
            decision_rule=md.decision_rule,
            prevalence=md.prevalence,
            error_probability=md.error_probability,
            p_decide_majority=md.p_decide_majority,
            false_positive_rate=md.false_positive_rate,
            false_negative_rate=md.false_negative_rate,
            false_negative_prevalence=md.false_negative_prevalence,
        )
    result: dict[str, Any] = to_jsonable(out)
    return result


def export_columns(survey: Survey) -> list[str]:
    """The columns of an export: the question ids, in the survey's order."""
    return [q.id for q in survey.questions]


def export_table(survey: Survey, rows: Iterable[Mapping[str, Any]]) -> list[tuple[int | None, ...]]:
    """The randomized reports, one tuple per respondent (the values of
    :func:`export_columns`; ``None`` where the respondent sent no report for a question).

    Only the report values are kept: respondent ids, times and anything else in ``rows``
    are dropped, respondents without any report are left out, and the rows are sorted by
    their reports (missing first), so that neither a column nor the order of the rows tells
    who answered when.
    """
    cols = export_columns(survey)
    table: list[tuple[int | None, ...]] = []
    for row in rows:
        values = tuple(None if row.get(c) is None else int(row[c]) for c in cols)
        if any(x is not None for x in values):
            table.append(values)
    table.sort(key=lambda r: tuple(-1 if x is None else x for x in r))
    return table


def forest_rows(
    result: Mapping[str, Any],
) -> tuple[list[str], list[float], list[float], list[float]]:
    """The rows of the forest plot from :func:`results`: one per binary question and one
    per category of a categorical question (questions without reports are left out):
    labels, estimates and the exact interval's ends."""
    labels: list[str] = []
    est: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    for q in result["questions"]:
        if not q["n"]:
            continue
        if q["kind"] == "categorical":
            for label, e, ci in zip(q["labels"], q["estimate"], q["ci_exact"], strict=True):
                labels.append(f"{q['id']}: {label}")
                est.append(float(e))
                lo.append(float(ci[0]))
                hi.append(float(ci[1]))
        else:
            ci = q["ci_exact"] or q.get("ci_likelihood") or q["ci_wald"]
            labels.append(str(q["id"]))
            est.append(float(q["estimate"]))
            lo.append(float(ci[0]))
            hi.append(float(ci[1]))
    return labels, est, lo, hi


def results_document(
    survey: Survey,
    tallies: Mapping[str, Tally],
    spent: npt.ArrayLike,
    *,
    level: float = 0.95,
    offset: float = 0.0,
) -> dict[str, Any]:
    """The ``results.json`` export: the survey definition, :func:`results`, :func:`budget`
    and the :func:`majority` panel of every binary question (no reports, no times)."""
    out: dict[str, Any] = {
        "schema": RESULTS_SCHEMA,
        "survey": survey.to_dict(),
        "results": results(survey, tallies, level=level),
        "budget": budget(survey, spent),
        "majority": [
            majority(survey, q.id, tallies.get(q.id), offset=offset)
            for q in survey.questions
            if is_binary(q)
        ],
    }
    return out
