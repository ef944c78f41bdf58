"""The analyst's side of the service: the admin read endpoints (results, timeline, budget,
majority, plots, exports) and the HTML dashboard with its login.

Every endpoint needs the admin (``Authorization: Bearer <admin token>`` or the dashboard's
signed cookie, :func:`deniable.service.core.security.require_admin`); the login form takes the
admin token or the admin password and sets the cookie.  The numbers come from
:mod:`deniable.service.analysis.results` (pure functions of the store's tallies), so the JSON
endpoints, the page's tables and the exports agree.  Plots are SVG drawn by
:mod:`deniable.plotting` (matplotlib, the ``[plot]`` extra); the Parquet export needs
pyarrow (the ``[data]`` extra).

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
``GET /api/surveys/{id}/export.csv``, ``.parquet``     the randomized reports, nothing else
``GET /api/surveys/{id}/results.json``                 the survey, results, budget, majorities
``GET /api/surveys/{id}/arrivals``, ``.../robustness``  arrival rates with bursts flagged, and
                                                       the fakes that would move each estimate
                                                       (:mod:`~deniable.service.routes.integrity`)
``GET /dashboard``, ``GET /dashboard/{id}``            the pages (401 and the login form
                                                       when not logged in)
``GET|POST /dashboard/login``, ``POST .../logout``     the login form; set / clear the cookie
=====================================================  =========================================
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from deniable.designs import Tally
from deniable.exceptions import DataError, DeniableError
from deniable.service import analysis as an
from deniable.service.analysis.robustness import DEFAULT_SHIFT
from deniable.service.core.logins import login_failures
from deniable.service.core.security import (
    ApiError,
    check_admin_credential,
    clear_admin_cookie,
    client_address,
    is_admin,
    refuse_cross_site,
    require_admin,
    retry_after,
    set_admin_cookie,
)
from deniable.service.pages import html as pages
from deniable.service.pages import panels
from deniable.service.routes import integrity
from deniable.service.storage.lifecycle import state_of
from deniable.survey import Survey

__all__ = ["router"]

router = APIRouter()

_ADMIN = [Depends(require_admin)]
_NO_STORE = {"Cache-Control": "no-store"}
_SVG = "image/svg+xml"


class _SvgResponse(Response):
    media_type = _SVG  # what OpenAPI declares for the plot routes


class _CsvResponse(Response):
    media_type = "text/csv"


class _ParquetResponse(Response):
    media_type = "application/vnd.apache.parquet"


Level = Annotated[float, Query(description="Confidence level of the intervals, in (0, 1).")]
Bucket = Annotated[str, Query(description="Time bucket: hour or day.")]

T = TypeVar("T")


# --------------------------------------------------------------------------- helpers
def _store(request: Request) -> Any:
    return request.app.state.store


def _checked(call: Callable[[], T]) -> T:
    """``call()`` with the library's refusals as HTTP errors: an unknown survey or question
    (DataError) is 404, a bad parameter (level, bucket, offset, bins) 422."""
    try:
        return call()
    except DataError as exc:
        raise ApiError(404, str(exc)) from None
    except DeniableError as exc:
        raise ApiError(422, str(exc)) from None


def _survey(request: Request, survey_id: str) -> Survey:
    survey: Survey = _checked(lambda: _store(request).survey(survey_id))
    return survey


def _question(survey: Survey, question_id: str) -> None:
    _checked(lambda: survey.question(question_id))


def _tallies(request: Request, survey_id: str) -> dict[str, Tally]:
    tallies: dict[str, Tally] = _store(request).tallies(survey_id)
    return tallies


def _json(data: Any, *, filename: str | None = None) -> JSONResponse:
    headers = dict(_NO_STORE)
    if filename is not None:
        headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return JSONResponse(data, headers=headers)


def _svg(text: str) -> Response:
    return Response(text, media_type=_SVG, headers=_NO_STORE)


def _plotting() -> Any:
    from deniable.plotting import _dashboard

    return _dashboard


def _plot(call: Callable[[], str]) -> Response:
    """An SVG response from a plot function (501 when matplotlib is not installed)."""
    try:
        return _svg(call())
    except ImportError as exc:
        raise ApiError(
            501, f"plots need matplotlib (pip install 'deniable[plot]'): {exc}"
        ) from None


def _results(request: Request, survey: Survey, level: float) -> dict[str, Any]:
    tallies = _tallies(request, survey.id)
    out: dict[str, Any] = _checked(lambda: an.results(survey, tallies, level=level))
    return out


def _timeline(
    request: Request, survey: Survey, question_id: str, bucket: str, level: float
) -> dict[str, Any]:
    _question(survey, question_id)
    _checked(lambda: an.timeline(survey, question_id, [], bucket=bucket, level=level))
    points = _store(request).timeline(survey.id, question_id, bucket)
    out: dict[str, Any] = _checked(
        lambda: an.timeline(survey, question_id, points, bucket=bucket, level=level)
    )
    return out


def _budget(request: Request, survey: Survey, bins: int = an.DEFAULT_BINS) -> dict[str, Any]:
    spent = _store(request).spent(survey.id)
    out: dict[str, Any] = _checked(lambda: an.budget(survey, spent, bins=bins))
    return out


def _majorities(request: Request, survey: Survey, offset: float = 0.0) -> list[dict[str, Any]]:
    tallies = _tallies(request, survey.id)
    out: list[dict[str, Any]] = []
    for q in survey.questions:
        if an.is_binary(q):
            tally = tallies.get(q.id)
            out.append(_checked(lambda: an.majority(survey, q.id, tally, offset=offset)))  # noqa: B023
    return out


# --------------------------------------------------------------------------- JSON
@router.get("/api/surveys/{survey_id}/results", dependencies=_ADMIN, tags=["dashboard"])
def results(request: Request, survey_id: str, level: Level = 0.95) -> JSONResponse:
    """Every question: n, estimate, bounded MLE, both SEs, exact and Wald intervals at
    ``level``, epsilon (categorical questions: per-category lists)."""
    return _json(_results(request, _survey(request, survey_id), level))


@router.get(
    "/api/surveys/{survey_id}/results/{question_id}/timeline",
    dependencies=_ADMIN,
    tags=["dashboard"],
)
def timeline(
    request: Request, survey_id: str, question_id: str, bucket: Bucket = "day", level: Level = 0.95
) -> JSONResponse:
    """The question's numbers at the end of each hour or day (cumulative)."""
    survey = _survey(request, survey_id)
    return _json(_timeline(request, survey, question_id, bucket, level))


@router.get(
    "/api/surveys/{survey_id}/results/{question_id}/majority",
    dependencies=_ADMIN,
    tags=["dashboard"],
)
def majority(
    request: Request,
    survey_id: str,
    question_id: str,
    offset: Annotated[float, Query(description="Offset c in SDs at the boundary.")] = 0.0,
) -> JSONResponse:
    """The majority decision of a binary question and its exact error probabilities."""
    survey = _survey(request, survey_id)
    _question(survey, question_id)
    tally = _tallies(request, survey_id).get(question_id)
    return _json(_checked(lambda: an.majority(survey, question_id, tally, offset=offset)))


@router.get("/api/surveys/{survey_id}/budget", dependencies=_ADMIN, tags=["dashboard"])
def budget(
    request: Request,
    survey_id: str,
    bins: Annotated[int, Query(description="Histogram bins, 1 to 1000.")] = an.DEFAULT_BINS,
) -> JSONResponse:
    """The epsilon each respondent has spent: every amount, a histogram, the cap."""
    return _json(_budget(request, _survey(request, survey_id), bins))


# --------------------------------------------------------------------------- plots
@router.get(
    "/api/surveys/{survey_id}/plots/forest.svg",
    dependencies=_ADMIN,
    tags=["dashboard"],
    response_class=_SvgResponse,
)
def forest_plot(request: Request, survey_id: str, level: Level = 0.95) -> Response:
    """Every question's estimate and exact interval (categorical: one row per category)."""
    survey = _survey(request, survey_id)
    res = _results(request, survey, level)
    plots = _plotting()
    labels, est, lo, hi = an.forest_rows(res)
    if not labels:
        return _plot(lambda: plots.message_svg("no reports yet"))
    from deniable.plotting._forest import forest_svg

    xlabel = f"estimate and {res['level']:.0%} exact interval"
    return _plot(lambda: forest_svg(labels, est, lo, hi, xlabel=xlabel))


@router.get(
    "/api/surveys/{survey_id}/plots/timeline/{question_id}.svg",
    dependencies=_ADMIN,
    tags=["dashboard"],
    response_class=_SvgResponse,
)
def timeline_plot(
    request: Request, survey_id: str, question_id: str, bucket: Bucket = "day", level: Level = 0.95
) -> Response:
    """The question's estimate over time with its exact interval as a band."""
    survey = _survey(request, survey_id)
    t = _timeline(request, survey, question_id, bucket, level)
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


@router.get(
    "/api/surveys/{survey_id}/plots/budget.svg",
    dependencies=_ADMIN,
    tags=["dashboard"],
    response_class=_SvgResponse,
)
def budget_plot(request: Request, survey_id: str) -> Response:
    """The histogram of the epsilon each respondent has spent, with the cap."""
    b = _budget(request, _survey(request, survey_id))
    plots = _plotting()
    h = b["histogram"]
    cap = float(b["cap"])
    return _plot(lambda: plots.budget_svg(h["edges"], h["counts"], cap))


# --------------------------------------------------------------------------- exports
def _export(request: Request, survey: Survey) -> tuple[list[str], list[tuple[int | None, ...]]]:
    rows = _store(request).export_rows(survey.id)
    return an.export_columns(survey), an.export_table(survey, rows)


@router.get(
    "/api/surveys/{survey_id}/export.csv",
    dependencies=_ADMIN,
    tags=["dashboard"],
    response_class=_CsvResponse,
)
def export_csv(request: Request, survey_id: str) -> Response:
    """The randomized reports: one row per respondent, one column per question (the report
    values; empty where none was sent), nothing else."""
    survey = _survey(request, survey_id)
    cols, table = _export(request, survey)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    w.writerows(["" if x is None else x for x in row] for row in table)
    headers = dict(_NO_STORE)
    headers["Content-Disposition"] = f'attachment; filename="{survey.id}-reports.csv"'
    return Response(buf.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)


@router.get(
    "/api/surveys/{survey_id}/export.parquet",
    dependencies=_ADMIN,
    tags=["dashboard"],
    response_class=_ParquetResponse,
)
def export_parquet(request: Request, survey_id: str) -> Response:
    """The randomized reports as Parquet (nullable int64 columns, one per question)."""
    survey = _survey(request, survey_id)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ApiError(
            501, "the Parquet export needs pyarrow: pip install 'deniable[data]'"
        ) from None
    cols, table = _export(request, survey)
    arrays = [pa.array([row[i] for row in table], type=pa.int64()) for i in range(len(cols))]
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(arrays, names=cols), buf)
    headers = dict(_NO_STORE)
    headers["Content-Disposition"] = f'attachment; filename="{survey.id}-reports.parquet"'
    return Response(buf.getvalue(), media_type="application/vnd.apache.parquet", headers=headers)


@router.get("/api/surveys/{survey_id}/results.json", dependencies=_ADMIN, tags=["dashboard"])
def results_json(request: Request, survey_id: str, level: Level = 0.95) -> JSONResponse:
    """The results export: the survey, every question's results, the budget, the majority
    decisions (no reports, no times)."""
    survey = _survey(request, survey_id)
    tallies = _tallies(request, survey_id)
    spent = _store(request).spent(survey_id)
    doc = _checked(lambda: an.results_document(survey, tallies, spent, level=level))
    return _json(doc, filename=f"{survey.id}-results.json")


# --------------------------------------------------------------------------- pages
# The pages are HTML for people, not API: they stay out of the OpenAPI schema (their
# refusals are pages too, e.g. 401 with the login form), like the respondent's page.
def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=_NO_STORE)


def _login_required() -> HTMLResponse:
    return _html(pages.login_page(), 401)


def _survey_ids(request: Request) -> list[str]:
    store = _store(request)
    ids: list[str] = list(store.survey_ids())
    return ids


@router.get(
    "/dashboard/login", response_class=HTMLResponse, tags=["dashboard"], include_in_schema=False
)
def login_form() -> HTMLResponse:
    """The login form."""
    return _html(pages.login_page())


@router.post(
    "/dashboard/login", response_class=HTMLResponse, tags=["dashboard"], include_in_schema=False
)
def login(request: Request, secret: Annotated[str, Form(max_length=1024)] = "") -> Response:
    """Check the admin token or password; on success open a session (the cookie) and go to
    the dashboard (303), else 401 and the form again; past the failed-login limit of the
    client's address, 429 until it has passed (:mod:`deniable.service.core.logins`).
    A form posted by another site is refused (403)."""
    refuse_cross_site(request)
    failures = login_failures(request)
    who = client_address(request)
    wait = failures.wait(who)
    if wait > 0:
        message = f"Too many failed logins: try again in {retry_after(wait)} seconds."
        refused = _html(pages.login_page(message), 429)
        refused.headers["Retry-After"] = retry_after(wait)
        return refused
    if not secret or not check_admin_credential(request.app.state.settings, secret):
        failures.record(who)
        return _html(pages.login_page("That is not the admin token or password."), 401)
    response = RedirectResponse("/dashboard", status_code=303, headers=_NO_STORE)
    set_admin_cookie(response, request)
    return response


@router.post("/dashboard/logout", tags=["dashboard"], include_in_schema=False)
def logout(request: Request) -> Response:
    """End the session on the server (a copy of the cookie stops working too), expire the
    cookie and go to the login form (303).  A logout posted by another site is refused
    (403): no other page can log the admin out."""
    refuse_cross_site(request)
    response = RedirectResponse("/dashboard/login", status_code=303, headers=_NO_STORE)
    clear_admin_cookie(response, request)
    return response


@router.get("/dashboard", response_class=HTMLResponse, tags=["dashboard"], include_in_schema=False)
def dashboard(request: Request) -> HTMLResponse:
    """The list of surveys (401 and the login form when not logged in)."""
    if not is_admin(request):
        return _login_required()
    store = _store(request)
    rows = []
    for sid in _survey_ids(request):
        s = store.survey(sid)
        reports = sum(t.n for t in store.tallies(sid).values())
        rows.append({"id": s.id, "title": s.title, "version": s.version,
                     "access": "by invitation" if s.respondents == "invitation" else "anonymous",
                     "state": state_of(s), "questions": len(s.questions),
                     "reports": reports})  # fmt: skip
    return _html(pages.survey_list_page(rows))


@router.get(
    "/dashboard/{survey_id}",
    response_class=HTMLResponse,
    tags=["dashboard"],
    include_in_schema=False,
)
def survey_dashboard(
    request: Request,
    survey_id: str,
    level: Level = 0.95,
    bucket: Bucket = "day",
    shift: integrity.Shift = DEFAULT_SHIFT,
    rate: integrity.Rate = "minute",
) -> HTMLResponse:
    """One survey's dashboard (401 and the login form when not logged in)."""
    if not is_admin(request):
        return _login_required()
    survey = _survey(request, survey_id)
    res = _results(request, survey, level)
    timelines = [_timeline(request, survey, q.id, bucket, level) for q in survey.questions]
    page = pages.survey_page(
        survey.to_dict(),
        res,
        _majorities(request, survey),
        timelines,
        _budget(request, survey),
        bucket=bucket,
        access=panels.access_line(integrity.status_data(request, survey)),
        shift=shift,
        rate=rate,
        robustness=panels.robustness_section(integrity.robustness_data(request, survey, shift)),
        arrivals=panels.arrivals_section(integrity.arrival_data(request, survey, rate)),
    )
    return _html(page)


router.include_router(integrity.router)
