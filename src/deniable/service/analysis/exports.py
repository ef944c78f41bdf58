"""What leaves the service as files: the randomized reports (:func:`export_table`, for the
CSV and Parquet exports) and the results document (:func:`results_document`, the
``results.json`` export), from the store's rows and the analysis's dicts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy.typing as npt

from deniable.designs import Tally
from deniable.service.analysis.budget import budget
from deniable.service.analysis.estimates import is_binary, majority, results
from deniable.survey import Survey

__all__ = ["RESULTS_SCHEMA", "export_columns", "export_table", "results_document"]

#: The schema of :func:`results_document` (the ``results.json`` export).
RESULTS_SCHEMA = "deniable.service.results/1"


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
