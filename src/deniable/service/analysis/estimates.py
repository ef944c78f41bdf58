"""Every question's estimates, over the whole survey and over time, and the majority
decisions: JSON-ready dicts made from the library's own results.

The numbers are the designs' estimates (``design.estimate(tally)``, the same code
``deniable analyze`` runs on an export) and the majority decisions of
:func:`deniable.estimation.majority_decision`, each taken from the result's ``to_dict()``:
this module picks and names the fields the service's JSON has carried since its first
version, and computes none of them.  So the dashboard, its JSON endpoints and an analysis
of the export agree to the last bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, cast

import numpy as np

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.designs import BinaryDesign, Tally
from deniable.exceptions import ParameterError
from deniable.survey import Survey, SurveyQuestion

__all__ = ["BUCKETS", "NO_BOUND", "forest_rows", "is_binary", "majority", "question_result",
           "results", "timeline"]  # fmt: skip

#: What a page or the JSON says of an unbounded (two-group) question's epsilon: never a
#: number.
NO_BOUND = "ε = ∞ (no bounded guarantee)"

#: The time buckets of :func:`timeline`.
BUCKETS = ("hour", "day")
#: The numbers of an estimate, in the order of the service's JSON.
_FIELDS = ("estimate", "estimate_bounded", "se", "se_unbiased", "ci_exact", "ci_wald")
#: The fields of a majority decision's ``to_dict()`` the panel carries.
_MAJORITY = ("threshold", "decision_rule", "prevalence", "error_probability",
             "p_decide_majority", "false_positive_rate", "false_negative_rate",
             "false_negative_prevalence")  # fmt: skip


def is_binary(question: SurveyQuestion) -> bool:
    """Whether the question has a yes/no report (a binary design with two report values,
    informative: ``P(yes | 1) != P(yes | 0)``), so that a majority decision applies."""
    d = question.design
    return isinstance(d, BinaryDesign) and d.n_reports == 2 and d.p_yes_given_1 != d.p_yes_given_0


def _kind(question: SurveyQuestion) -> str:
    if question.two_group:
        return "two-group"
    return "categorical" if question.design.n_truths > 2 else "binary"


def _two_group(data: Mapping[str, Any]) -> dict[str, Any]:
    """The service's fields of a two-group estimate's ``to_dict()``: the prevalence's
    numbers at the top (as a binary question's), every parameter's under ``estimates``,
    and each group's reports under ``groups``."""
    params = {
        name: {key: e.get(key) for key in (*_FIELDS, "notes")}
        for name, e in data["estimates"].items()
    }
    out: dict[str, Any] = {key: params["prevalence"].get(key) for key in _FIELDS}
    out["lambda_hat"] = data.get("lambda_hat")
    out["estimates"] = params
    out["groups"] = data["groups"]
    out["notes"] = [f"{name}: {n}" for name, e in params.items() for n in e["notes"]]
    return out


def _from_dict(data: Mapping[str, Any]) -> dict[str, Any]:
    """The service's fields of an estimate's ``to_dict()``: one number per field for a
    single estimate; for an estimate of ``k`` shares (``categories`` in the dict), a list
    per field and the notes of every category."""
    out: dict[str, Any] = {key: data.get(key) for key in _FIELDS}
    if "categories" in data:
        out["lambda_hat"] = data.get("lambda_hat")
        out["notes"] = [note for c in data["categories"] for note in c["notes"]]
        return out
    for key, value in data.items():  # e.g. Kuk's likelihood interval (several draws)
        if key.startswith("ci_") and key not in out:
            out[key] = value
    out["lambda_hat"] = data.get("lambda_hat")
    out["notes"] = list(data["notes"])
    return out


def _empty_numbers(question: SurveyQuestion) -> dict[str, Any]:
    none: Any = [None] * question.design.n_truths if _kind(question) == "categorical" else None
    out: dict[str, Any] = dict.fromkeys((*_FIELDS, "lambda_hat"), none)
    out["notes"] = ["no reports yet"]
    return out


def _numbers(question: SurveyQuestion, tally: Tally | None, level: float) -> dict[str, Any]:
    """``n``, the report counts and the estimates of one question from its tally."""
    d = question.design
    if tally is None:
        tally = d.tally_counts(np.zeros(d.n_reports, dtype=np.int64))
    tally = d.bind(tally)
    out: dict[str, Any] = {"n": tally.n, "counts": [int(c) for c in tally.counts]}
    if tally.n == 0:
        out.update(_empty_numbers(question))
    elif question.two_group:  # the two-group estimator over both groups' tallies
        out.update(_two_group(d.estimate(tally).to_dict(level)))
    else:
        out.update(_from_dict(d.estimate(tally).to_dict(level)))
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
    if question.unbounded:  # outside the cap: said in words, never as a number
        out.update(unbounded=True, guarantee=NO_BOUND)
    out.update(_numbers(question, tally, lvl))
    result: dict[str, Any] = to_jsonable(out)
    return result


def results(survey: Survey, tallies: Mapping[str, Tally], *, level: float = 0.95) -> dict[str, Any]:
    """Every question's estimates from the survey's tallies, at confidence ``level``.

    Per question: ``id``, ``text``, ``kind`` (``binary`` / ``categorical`` /
    ``two-group``), ``labels``, ``design``, ``parameters``, ``epsilon`` (exact; ``"inf"``
    for an unbounded two-group question, which also has ``unbounded: true`` and
    ``guarantee: "ε = ∞ (no bounded guarantee)"``), ``level``, ``n`` (reports),
    ``counts`` (per report value), ``estimate`` (unbiased moment,
    ``(lambda_hat - P0) / (P1 - P0)``: may leave [0, 1]),
    ``estimate_bounded`` (the MLE in [0, 1], on the simplex for a categorical question),
    ``se`` (plug-in, divides by ``n``), ``se_unbiased`` (``n - 1``), ``ci_exact``
    (Clopper-Pearson for the share of reports, mapped through the design), ``ci_wald``
    (``estimate +- z se``), ``lambda_hat`` and ``notes``: the fields of the estimate's
    ``to_dict(level)``.  A categorical question has a list per field, one entry per
    category (category ``j`` as the binary design "report ``j`` or not": ``P1 = t + (1 -
    t) f_j``, ``P0 = (1 - t) f_j``).  A question without reports has ``n = 0`` and
    ``null`` numbers.  A two-group question's numbers are those of the design's estimate
    over both groups' tallies (``design.estimate(tally)``, the delta-method SE, the Wald
    interval; ``ci_exact`` only where valid): the prevalence at the top, every parameter
    under ``estimates`` and each group's ``yes`` and ``n`` under ``groups``.
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
            **({"unbounded": True, "guarantee": NO_BOUND} if q.unbounded else {}),
            "bucket": b,
            "level": lvl,
            "points": out,
        }
    )
    return result


def majority(
    survey: Survey, question_id: str, tally: Tally | None, *, offset: float = 0.0
) -> dict[str, Any]:
    """The majority decision of a binary question and its exact error probabilities.

    The decision is "the majority carries A" iff the number of "yes" reports passes
    ``n (P0 + P1) / 2 + c sqrt(n lambda_b (1 - lambda_b))`` (mirrored when ``P1 < P0``;
    :func:`deniable.estimation.decide_majority`).  Its error probabilities are exact
    binomial tails (:func:`deniable.estimation.majority_decision`, iid sampling; the
    fields of its ``to_dict()``): ``error_probability`` at the estimated prevalence (the
    bounded MLE: the probability that a survey of the same size would reach the other
    verdict if the truth were the estimate), ``false_positive_rate`` (deciding "majority"
    when the prevalence is 1/2, the worst case) and ``false_negative_rate`` (missing a
    majority; at the smallest majority when the estimate is not one).  A question without
    reports has ``decision = null``.

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
        "decision": None,
        **dict.fromkeys(_MAJORITY),
    }
    if t.n:
        est = d.estimate(t)
        md = majority_decision(d, t.n, prevalence=min(max(est.bounded, 0.0), 1.0), offset=c)
        data = md.to_dict()
        out["decision"] = decide_majority(d, t.yes, t.n, c)
        out.update((key, data[key]) for key in _MAJORITY)
    result: dict[str, Any] = to_jsonable(out)
    return result


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
        elif q["estimate"] is not None:  # binary, or a two-group prevalence
            ci = q["ci_exact"] or q.get("ci_likelihood") or q["ci_wald"]
            labels.append(str(q["id"]))
            est.append(float(q["estimate"]))
            lo.append(float(ci[0]))
            hi.append(float(ci[1]))
    return labels, est, lo, hi
