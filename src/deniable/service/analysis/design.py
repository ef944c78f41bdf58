"""The sample design of a survey whose invitations carried design attributes (stratum, PSU,
design weight, raking variables; ``storage/attributes.py``): the columns the export adds
(:func:`design_columns`) and every question's design-based estimate beside the unweighted
one (:func:`design_results`).

The numbers are :func:`deniable.sampling.survey_estimate`'s, on the rows the export holds:
one per respondent with at least one report, a question's missing reports a domain of the
whole design, exactly as ``deniable analyze EXPORT --weights weight --strata stratum --psu
psu`` computes them (a test checks that round trip).  Respondents who came without
attributes (anonymous, or by an invitation without any) are left out of the design and
counted.  The dashboard shows the design over the whole sample only; its counts per
stratum (and per level of a raking variable) hide every cell of fewer than
:data:`MIN_CELL` respondents, so that the attributes, joined with the reports, never
single anyone out.

When the survey file gives population margins (``weighting``), every question also gets
its raked estimate (``"raked"``): the same design with the weights raked to the margins
(:mod:`deniable.service.analysis.raking`), as ``deniable weight EXPORT --margins ...``
then ``deniable analyze --weights`` computes it from the export.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from deniable.common import to_jsonable
from deniable.exceptions import DeniableError
from deniable.sampling import SampleDesign, kish_deff, survey_estimate
from deniable.service.analysis.raking import rake_sample
from deniable.survey import Survey, SurveyWeighting

__all__ = ["DESIGN_COLUMNS", "MIN_CELL", "design_columns", "design_results"]

#: The attributes with a role in the design, in the order of the export's columns.
DESIGN_COLUMNS = ("stratum", "psu", "weight")
#: The fewest respondents a cell of the dashboard's design breakdown may show.
MIN_CELL = 10


def design_columns(attributes: Mapping[int, Mapping[str, Any]]) -> list[str]:
    """The export's design columns: ``stratum``, ``psu``, ``weight`` (those present), then
    the raking variables in alphabetical order."""
    names: set[str] = set()
    for a in attributes.values():
        names.update(a)
    return [c for c in DESIGN_COLUMNS if c in names] + sorted(names - set(DESIGN_COLUMNS))


def design_results(
    survey: Survey,
    rows: Iterable[Mapping[str, Any]],
    attributes: Mapping[int, Mapping[str, Any]],
    *,
    level: float = 0.95,
) -> dict[str, Any] | None:
    """The design-based estimate of every question (``None`` when no respondent carries a
    stratum, a PSU or a weight, and the survey rakes to no margins): ``{"design": ...,
    "questions": [{"question": id, "design_based": SurveyEstimate.to_dict() or an
    "error", "raked": the same under the raked weights or ``None`` with "raked_error"},
    ...], "raking": what the raking did (or its "error"; ``None`` without margins),
    "without_attributes": respondents with reports but no attributes, left out}``.

    ``rows``: the store's export rows (``{"respondent": id, question id: report or
    None}``); ``attributes``: each respondent's design attributes.
    """
    columns = [c for c in design_columns(attributes) if c in DESIGN_COLUMNS]
    weighting = survey.weighting
    if not columns and (weighting is None or not attributes):
        return None
    answered = [r for r in rows if any(r.get(q.id) is not None for q in survey.questions)]
    kept = [r for r in answered if int(r["respondent"]) in attributes]
    total = len(kept)
    out: dict[str, Any] = {"attributes": design_columns(attributes), "level": level,
                           "min_cell": MIN_CELL,
                           "without_attributes": len(answered) - total}  # fmt: skip
    if total == 0:
        out.update(n=0, design=None, questions=[], strata=[],
                   raking=_unraked(weighting, "no respondent with design attributes has "
                                   "sent a report yet"))  # fmt: skip
        return out
    attrs = [attributes[int(r["respondent"])] for r in kept]
    parts: dict[str, Any] = {}
    if "weight" in columns:
        parts["weights"] = np.array([a.get("weight", np.nan) for a in attrs], dtype=np.float64)
    for name, key in (("strata", "stratum"), ("psu", "psu")):
        if key in columns:
            parts[name] = np.array([str(a.get(key, "")) for a in attrs], dtype=object)
    sample: SampleDesign | None = None
    out.update(n=total, design=None, strata=_strata(parts.get("strata")))
    if columns:
        try:
            sample = SampleDesign(**parts)
        except DeniableError as exc:
            out.update(error=str(exc), questions=[], strata=[],
                       raking=_unraked(weighting, f"no design: {exc}"))  # fmt: skip
            return out
        out.update(design=sample.describe(), deff_weights=kish_deff(sample.weights))
    raked = None if weighting is None else rake_sample(weighting, attrs, parts, min_cell=MIN_CELL)
    out["raking"] = None if raked is None else raked.info
    questions = []
    for q in survey.questions:
        entry: dict[str, Any] = {"question": q.id, "design_based": None,
                                 "n": sum(r.get(q.id) is not None for r in kept)}  # fmt: skip
        if sample is not None:
            entry.update(_question(q, kept, sample, level))
        if raked is not None:
            sub = [r for r, k in zip(kept, raked.rows, strict=True) if k]
            got = _question(q, sub, raked.design, level) if raked.design is not None else {}
            entry.update(raked=got.get("design_based"), raked_n=got.get("n", 0),
                         raked_error=got.get("error", raked.info["error"]))  # fmt: skip
        questions.append(entry)
    out["questions"] = questions
    result: dict[str, Any] = to_jsonable(out)
    return result


def _unraked(weighting: SurveyWeighting | None, why: str) -> dict[str, Any] | None:
    """The ``raking`` entry when there is nothing to rake: ``None`` without margins."""
    return None if weighting is None else rake_sample(weighting, [], {}, min_cell=MIN_CELL,
                                                      empty=why).info  # fmt: skip


def _question(q: Any, rows: Sequence[Mapping[str, Any]], sample: Any, level: float) -> Any:
    codes = np.array([-1 if r.get(q.id) is None else int(r[q.id]) for r in rows], np.int64)
    keep = codes >= 0
    entry: dict[str, Any] = {"question": q.id, "n": int(keep.sum())}
    if not keep.any():
        entry["design_based"] = None
        entry["error"] = "no reports yet"
        return entry
    try:
        est = survey_estimate(q.design, np.where(keep, codes, 0), sample,
                              domain=None if keep.all() else keep)  # fmt: skip
    except DeniableError as exc:  # e.g. a domain with one PSU in a stratum
        entry["design_based"] = None
        entry["error"] = str(exc)
        return entry
    entry["design_based"] = est.to_dict(level)
    return entry


def _strata(strata: Any) -> list[dict[str, Any]]:
    """Respondents per stratum, a cell of fewer than :data:`MIN_CELL` shown as hidden."""
    if strata is None:
        return []
    labels, counts = np.unique(strata, return_counts=True)
    return [
        {"stratum": str(s), "n": int(c) if c >= MIN_CELL else None, "hidden": bool(c < MIN_CELL)}
        for s, c in zip(labels, counts, strict=True)
    ]
