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
stratum hide every cell of fewer than :data:`MIN_CELL` respondents, so that the
attributes, joined with the reports, never single anyone out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from deniable.common import to_jsonable
from deniable.exceptions import DeniableError
from deniable.sampling import SampleDesign, kish_deff, survey_estimate
from deniable.survey import Survey

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
    stratum, a PSU or a weight): ``{"design": ..., "questions": [{"question": id,
    "design_based": SurveyEstimate.to_dict() or an "error"}, ...], "without_attributes":
    respondents with reports but no attributes, left out}``.

    ``rows``: the store's export rows (``{"respondent": id, question id: report or
    None}``); ``attributes``: each respondent's design attributes.
    """
    columns = [c for c in design_columns(attributes) if c in DESIGN_COLUMNS]
    if not columns:
        return None
    answered = [r for r in rows if any(r.get(q.id) is not None for q in survey.questions)]
    kept = [r for r in answered if int(r["respondent"]) in attributes]
    total = len(kept)
    out: dict[str, Any] = {"attributes": design_columns(attributes), "level": level,
                           "min_cell": MIN_CELL,
                           "without_attributes": len(answered) - total}  # fmt: skip
    if total == 0:
        out.update(n=0, design=None, questions=[], strata=[])
        return out
    attrs = [attributes[int(r["respondent"])] for r in kept]
    parts: dict[str, Any] = {}
    if "weight" in columns:
        parts["weights"] = np.array([a.get("weight", np.nan) for a in attrs], dtype=np.float64)
    for name, key in (("strata", "stratum"), ("psu", "psu")):
        if key in columns:
            parts[name] = np.array([str(a.get(key, "")) for a in attrs], dtype=object)
    try:
        sample = SampleDesign(**parts)
    except DeniableError as exc:
        out.update(n=total, design=None, error=str(exc), questions=[], strata=[])
        return out
    out.update(n=total, design=sample.describe(), deff_weights=kish_deff(sample.weights),
               strata=_strata(parts.get("strata")))  # fmt: skip
    out["questions"] = [_question(q, kept, sample, level) for q in survey.questions]
    result: dict[str, Any] = to_jsonable(out)
    return result


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
