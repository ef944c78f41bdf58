"""What leaves the service as files: the randomized reports (:func:`export_table`, for the
CSV and Parquet exports) and the results document (:func:`results_document`, the
``results.json`` export), from the store's rows and the analysis's dicts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy.typing as npt

from deniable.designs import Tally
from deniable.service.analysis.budget import budget
from deniable.service.analysis.design import design_columns
from deniable.service.analysis.estimates import is_binary, majority, results
from deniable.survey import Survey

__all__ = ["RESULTS_SCHEMA", "export_columns", "export_table", "results_document"]

#: The schema of :func:`results_document` (the ``results.json`` export).
RESULTS_SCHEMA = "deniable.service.results/1"


def export_columns(
    survey: Survey, attributes: Mapping[int, Mapping[str, Any]] | None = None
) -> list[str]:
    """The columns of an export: the question ids, in the survey's order (a two-group
    question's id followed by ``<id>_group``), then the design columns of the respondents'
    invitations (``stratum``, ``psu``, ``weight``, raking variables:
    :func:`~deniable.service.analysis.design.design_columns`), if any."""
    return _report_columns(survey) + design_columns(attributes or {})


def _report_columns(survey: Survey) -> list[str]:
    out: list[str] = []
    for q in survey.questions:
        out += [q.id, q.group_column] if q.two_group else [q.id]
    return out


def _values(survey: Survey, row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A respondent's report columns: each report, and for a two-group question the
    randomized answer (``report % 2``) and the group (``report // 2 + 1``), the columns
    ``deniable analyze --group-column`` reads."""
    out: list[Any] = []
    for q in survey.questions:
        v = row.get(q.id)
        if v is None:
            out += [None, None] if q.two_group else [None]
        elif q.two_group:
            out += [int(v) % 2, int(v) // 2 + 1]
        else:
            out.append(int(v))
    return tuple(out)


def export_table(
    survey: Survey,
    rows: Iterable[Mapping[str, Any]],
    attributes: Mapping[int, Mapping[str, Any]] | None = None,
) -> list[tuple[Any, ...]]:
    """The randomized reports, one tuple per respondent (the values of
    :func:`export_columns`; ``None`` where the respondent sent no report for a question;
    a two-group question's randomized answer, 0 or 1, and its group, 1 or 2),
    with the design attributes of the respondent's invitation (``attributes``:
    ``{respondent id: {name: value}}``; ``None`` where it had none).

    Only the report values and the design attributes are kept: respondent ids, times and
    anything else in ``rows`` are dropped, respondents without any report are left out,
    and the rows are sorted by their reports (missing first), then their attributes, so
    that neither a column nor the order of the rows tells who answered when.
    """
    attributes = attributes or {}
    extra = design_columns(attributes)
    table: list[tuple[Any, ...]] = []
    for row in rows:
        values = _values(survey, row)
        if any(x is not None for x in values):
            known = attributes.get(int(row.get("respondent", -1)), {})
            table.append(values + tuple(known.get(c) for c in extra))
    n = len(_report_columns(survey))
    table.sort(key=lambda r: (tuple(-1 if x is None else x for x in r[:n]),
                              tuple("" if x is None else str(x) for x in r[n:])))  # fmt: skip
    return table


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
