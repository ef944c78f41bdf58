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
    """The columns of an export: the question ids, in the survey's order, then the design
    columns of the respondents' invitations (``stratum``, ``psu``, ``weight``, raking
    variables: :func:`~deniable.service.analysis.design.design_columns`), if any."""
    return [q.id for q in survey.questions] + design_columns(attributes or {})


def export_table(
    survey: Survey,
    rows: Iterable[Mapping[str, Any]],
    attributes: Mapping[int, Mapping[str, Any]] | None = None,
) -> list[tuple[Any, ...]]:
    """The randomized reports, one tuple per respondent (the values of
    :func:`export_columns`; ``None`` where the respondent sent no report for a question),
    with the design attributes of the respondent's invitation (``attributes``:
    ``{respondent id: {name: value}}``; ``None`` where it had none).

    Only the report values and the design attributes are kept: respondent ids, times and
    anything else in ``rows`` are dropped, respondents without any report are left out,
    and the rows are sorted by their reports (missing first), then their attributes, so
    that neither a column nor the order of the rows tells who answered when.
    """
    attributes = attributes or {}
    qids = [q.id for q in survey.questions]
    extra = design_columns(attributes)
    table: list[tuple[Any, ...]] = []
    for row in rows:
        values = tuple(None if row.get(c) is None else int(row[c]) for c in qids)
        if any(x is not None for x in values):
            known = attributes.get(int(row.get("respondent", -1)), {})
            table.append(values + tuple(known.get(c) for c in extra))
    n = len(qids)
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
