"""The analyst's side of the API (admin only): the results, timeline, budget and majority
endpoints, the plots and the exports.  The dashboard's pages show the same numbers
(:mod:`deniable.service.routes.dashboard`; both read through
:mod:`deniable.service.routes.reads`).

Every endpoint needs the admin (``Authorization: Bearer <admin token>`` or the dashboard's
signed cookie, :func:`deniable.service.core.security.require_admin`).  The numbers come
from :mod:`deniable.service.analysis` (pure functions of the store's tallies, made from the
library's results), so the JSON endpoints, the page's tables and the exports agree.  Plots
are SVG drawn by :mod:`deniable.plotting` (matplotlib, the ``[plot]`` extra); the Parquet
export needs pyarrow (the ``[data]`` extra).

=====================================================  =========================================
``GET /api/surveys/{id}/results?level=0.95``           every question: n, estimates, SEs, exact
                                                       and Wald intervals, epsilon
``GET /api/surveys/{id}/results/{q}/timeline``         the same at the end of each ``bucket``
                                                       (``hour`` / ``day``), cumulative
``GET /api/surveys/{id}/results/{q}/majority``         majority decision (binary questions),
                                                       ``offset`` in SDs, exact error rates
``GET /api/surveys/{id}/budget?bins=20``               epsilon spent per respondent, the cap
``GET /api/surveys/{id}/plots/forest.svg``             every question's estimate and interval
``GET /api/surveys/{id}/plots/timeline/{q}.svg``       the estimate over time
``GET /api/surveys/{id}/plots/budget.svg``             the histogram of epsilon spent
``GET /api/surveys/{id}/design?level=0.95``            the design-based estimates (invitations
                                                       with design attributes), deff, df
``GET /api/surveys/{id}/export.csv``, ``.parquet``     the randomized reports and the design
                                                       attributes, nothing else
``GET /api/surveys/{id}/results.json``                 the survey, results, budget, majorities
=====================================================  =========================================
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from fastapi.types import DecoratedCallable

from deniable.service import analysis as an
from deniable.service.core.security import ApiError
from deniable.service.routes.deps import ADMIN
from deniable.service.routes.reads import (
    budget_data,
    checked,
    design_data,
    results_data,
    store_of,
    survey_of,
    tallies_of,
    timeline_data,
)
from deniable.survey import Survey

__all__ = ["NO_STORE", "Bucket", "Level", "router"]

router = APIRouter()

#: The dependencies of an admin route.
#: The header of every answer that must not be cached.
NO_STORE = {"Cache-Control": "no-store"}
_SVG = "image/svg+xml"


class _SvgResponse(Response):
    media_type = _SVG  # what OpenAPI declares for the plot routes


class _CsvResponse(Response):
    media_type = "text/csv"


class _ParquetResponse(Response):
    media_type = "application/vnd.apache.parquet"


def _admin_get(
    path: str, response_class: type[Response] | None = None
) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """``router.get`` for a dashboard route that needs the admin token (an SVG, CSV or
    Parquet answer names its class, for what OpenAPI declares)."""
    extra: dict[str, Any] = {} if response_class is None else {"response_class": response_class}
    return router.get(path, dependencies=ADMIN, tags=["dashboard"], **extra)


Level = Annotated[float, Query(description="Confidence level of the intervals, in (0, 1).")]
Bucket = Annotated[str, Query(description="Time bucket: hour or day.")]


def _json(data: Any, *, filename: str | None = None) -> JSONResponse:
    headers = dict(NO_STORE)
    if filename is not None:
        headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return JSONResponse(data, headers=headers)


def _svg(text: str) -> Response:
    return Response(text, media_type=_SVG, headers=NO_STORE)


def _plotting() -> Any:
    import deniable.plotting

    return deniable.plotting


def _plot(call: Callable[[], str]) -> Response:
    """An SVG response from a plot function (501 when matplotlib is not installed)."""
    try:
        return _svg(call())
    except ImportError as exc:
        raise ApiError(
            501, f"plots need matplotlib (pip install 'deniable[plot]'): {exc}"
        ) from None


# --------------------------------------------------------------------------- JSON
@_admin_get("/api/surveys/{survey_id}/results")
def results(request: Request, survey_id: str, level: Level = 0.95) -> JSONResponse:
    """Every question: n, estimate, bounded MLE, both SEs, exact and Wald intervals at
    ``level``, epsilon (categorical questions: per-category lists)."""
    return _json(results_data(request, survey_of(request, survey_id), level))


@_admin_get("/api/surveys/{survey_id}/results/{question_id}/timeline")
def timeline(
    request: Request, survey_id: str, question_id: str, bucket: Bucket = "day", level: Level = 0.95
) -> JSONResponse:
    """The question's numbers at the end of each hour or day (cumulative)."""
    survey = survey_of(request, survey_id)
    return _json(timeline_data(request, survey, question_id, bucket, level))


@_admin_get("/api/surveys/{survey_id}/results/{question_id}/majority")
def majority(
    request: Request,
    survey_id: str,
    question_id: str,
    offset: Annotated[float, Query(description="Offset c in SDs at the boundary.")] = 0.0,
) -> JSONResponse:
    """The majority decision of a binary question and its exact error probabilities."""
    survey = survey_of(request, survey_id)
    checked(lambda: survey.question(question_id))
    tally = tallies_of(request, survey_id).get(question_id)
    return _json(checked(lambda: an.majority(survey, question_id, tally, offset=offset)))


@_admin_get("/api/surveys/{survey_id}/budget")
def budget(
    request: Request,
    survey_id: str,
    bins: Annotated[int, Query(description="Histogram bins, 1 to 1000.")] = an.DEFAULT_BINS,
) -> JSONResponse:
    """The epsilon each respondent has spent: every amount, a histogram, the cap."""
    return _json(budget_data(request, survey_of(request, survey_id), bins))


# --------------------------------------------------------------------------- plots
@_admin_get("/api/surveys/{survey_id}/plots/forest.svg", _SvgResponse)
def forest_plot(request: Request, survey_id: str, level: Level = 0.95) -> Response:
    """Every question's estimate and exact interval (categorical: one row per category)."""
    survey = survey_of(request, survey_id)
    res = results_data(request, survey, level)
    plots = _plotting()
    labels, est, lo, hi = an.forest_rows(res)
    if not labels:
        return _plot(lambda: plots.message_svg("no reports yet"))
    from deniable.plotting import forest_svg

    xlabel = f"estimate and {res['level']:.0%} exact interval"
    return _plot(lambda: forest_svg(labels, est, lo, hi, xlabel=xlabel))


@_admin_get("/api/surveys/{survey_id}/plots/timeline/{question_id}.svg", _SvgResponse)
def timeline_plot(
    request: Request, survey_id: str, question_id: str, bucket: Bucket = "day", level: Level = 0.95
) -> Response:
    """The question's estimate over time with its exact interval as a band."""
    survey = survey_of(request, survey_id)
    t = timeline_data(request, survey, question_id, bucket, level)
    plots = _plotting()
    points = [p for p in t["points"] if p["n"]]
    if not points:
        return _plot(lambda: plots.message_svg("no reports yet"))
    from datetime import datetime

    ends = [datetime.fromisoformat(p["end"]) for p in points]

    def col(p: dict[str, Any], key: str, j: int | None, side: int | None = None) -> float:
        x = p[key] if j is None else p[key][j]
        x = x if side is None or x is None else x[side]
        return math.nan if x is None or isinstance(x, str) else float(x)

    idx: list[int | None] = list(range(len(t["labels"]))) if t["kind"] == "categorical" else [None]
    series = [
        (
            str(question_id if j is None else t["labels"][j]),
            [col(p, "estimate", j) for p in points],
            [col(p, "ci_exact", j, 0) for p in points],
            [col(p, "ci_exact", j, 1) for p in points],
        )
        for j in idx
    ]
    ylabel = f"estimate and {t['level']:.0%} exact interval"
    return _plot(lambda: plots.timeline_svg(ends, series, ylabel=ylabel))


@_admin_get("/api/surveys/{survey_id}/plots/budget.svg", _SvgResponse)
def budget_plot(request: Request, survey_id: str) -> Response:
    """The histogram of the epsilon each respondent has spent, with the cap."""
    b = budget_data(request, survey_of(request, survey_id))
    plots = _plotting()
    h = b["histogram"]
    cap = float(b["cap"])
    return _plot(lambda: plots.budget_svg(h["edges"], h["counts"], cap))


# --------------------------------------------------------------------------- exports
def _export(request: Request, survey: Survey) -> tuple[list[str], list[tuple[Any, ...]]]:
    store = store_of(request)
    attributes = store.design_attributes(survey.id)
    rows = store.export_rows(survey.id)
    return an.export_columns(survey, attributes), an.export_table(survey, rows, attributes)


def _arrow_type(pa: Any, name: str, survey: Survey) -> Any:
    """A report column is a nullable int64; the design weight a float64; another design
    attribute (stratum, PSU, raking variable) text."""
    if name in {q.id for q in survey.questions}:
        return pa.int64()
    return pa.float64() if name == "weight" else pa.string()


@_admin_get("/api/surveys/{survey_id}/export.csv", _CsvResponse)
def export_csv(request: Request, survey_id: str) -> Response:
    """The randomized reports: one row per respondent, one column per question (the report
    values; empty where none was sent), then the design attributes of the respondent's
    invitation (stratum, psu, weight, raking variables) if the survey's invitations carry
    any; nothing else."""
    survey = survey_of(request, survey_id)
    cols, table = _export(request, survey)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    w.writerows(["" if x is None else x for x in row] for row in table)
    headers = dict(NO_STORE)
    headers["Content-Disposition"] = f'attachment; filename="{survey.id}-reports.csv"'
    return Response(buf.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)


@_admin_get("/api/surveys/{survey_id}/export.parquet", _ParquetResponse)
def export_parquet(request: Request, survey_id: str) -> Response:
    """The randomized reports as Parquet (nullable int64 columns, one per question; the
    design attributes after them, the weight as float64 and the others as text)."""
    survey = survey_of(request, survey_id)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ApiError(
            501, "the Parquet export needs pyarrow: pip install 'deniable[data]'"
        ) from None
    cols, table = _export(request, survey)
    arrays = [pa.array([row[i] for row in table], type=_arrow_type(pa, c, survey))
              for i, c in enumerate(cols)]  # fmt: skip
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(arrays, names=cols), buf)
    headers = dict(NO_STORE)
    headers["Content-Disposition"] = f'attachment; filename="{survey.id}-reports.parquet"'
    return Response(buf.getvalue(), media_type="application/vnd.apache.parquet", headers=headers)


@_admin_get("/api/surveys/{survey_id}/design")
def design(request: Request, survey_id: str, level: Level = 0.95) -> JSONResponse:
    """The design-based estimates of every question (weighted, stratified, clustered:
    ``deniable.sampling.survey_estimate``) when the survey's invitations carry design
    attributes; ``{"design": null}`` when none does."""
    return _json({"design": design_data(request, survey_of(request, survey_id), level)})


@_admin_get("/api/surveys/{survey_id}/results.json")
def results_json(request: Request, survey_id: str, level: Level = 0.95) -> JSONResponse:
    """The results export: the survey, every question's results, the budget, the majority
    decisions (no reports, no times)."""
    survey = survey_of(request, survey_id)
    tallies = tallies_of(request, survey_id)
    spent = store_of(request).spent(survey_id)
    doc = checked(lambda: an.results_document(survey, tallies, spent, level=level))
    return _json(doc, filename=f"{survey.id}-results.json")
