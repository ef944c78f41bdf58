"""The respondent's side of the JSON API, and the respondent's page.

=========================================================  ==========  =====================
method, path                                               who         answers
=========================================================  ==========  =====================
``GET /s/{survey_id}``                                     anyone      the respondent's page
``POST /api/surveys/{survey_id}/sessions``                 anyone      201 ``{"token"}``
``GET /api/surveys/{survey_id}``                           respondent  the survey to answer
``POST /api/surveys/{survey_id}/reports``                  respondent  201/200/409/403/422
``POST /api/surveys/{survey_id}/reports/batch``            devices     200 ``{"results"}``
=========================================================  ==========  =====================

Every refusal is a 4xx with ``{"error": "<message naming the field>"}`` and stores nothing:
the survey, the question and the report's range are checked before the store is asked to
write, and the store writes a report and spends its epsilon in one transaction.  The
outcomes and their statuses are those of :mod:`deniable.service.routes.deps`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from deniable.exceptions import DeniableError
from deniable.service.core.limits import session_limits
from deniable.service.core.security import (
    RESPONDENT_SECURITY,
    ApiError,
    respondent_cache,
    retry_after,
    token_key,
)
from deniable.service.routes.bodies import BatchRequest, ReportRequest, SessionRequest
from deniable.service.routes.deps import (
    MESSAGES,
    STATUS_JSON,
    RespondentDep,
    SurveyDep,
    SurveyInfo,
    body_schema,
    check_open,
    check_report,
    get_respondent,
    get_survey,
    outcome,
    parse_body,
    static_page,
    submitter,
    survey_info,
)
from deniable.service.routes.groups import check_batch_groups, question_guarantee
from deniable.service.storage import SurveyClosedError
from deniable.survey import Survey

__all__ = ["FAST_ROUTES", "router"]

router = APIRouter()


@router.get("/s/{survey_id}", include_in_schema=False)
def respondent_page(request: Request, survey_id: str) -> HTMLResponse:
    """The page a respondent answers on (404 for an unknown survey)."""
    survey_info(request, survey_id)
    return static_page("respondent.html")


@router.post(
    "/api/surveys/{survey_id}/sessions",
    status_code=201,
    summary="Start answering: a respondent token",
    responses={
        403: {"description": "no invitation, or a bad or used one (invitation surveys)"},
        409: {"description": "closed"},
        429: {"description": "too many new sessions from this address or for this survey"},
    },
)
def create_session(
    request: Request, info: SurveyDep, body: Annotated[SessionRequest | None, Body()] = None
) -> dict[str, str]:
    """A new respondent of an anonymous survey, or the redemption of a single-use
    invitation: ``{"token": ...}`` (shown once; the server keeps only its hash).

    New sessions are limited per client address and per anonymous survey in a sliding
    window (429 with ``Retry-After`` past a limit; :mod:`deniable.service.core.limits`)."""
    survey = info.survey
    check_open(survey)
    invitation = body.invitation if body is not None else None
    by_invitation = survey.respondents == "invitation"
    client = request.client.host if request.client is not None else None
    refused = session_limits(request.app).admit(client, survey.id, anonymous=not by_invitation)
    if refused is not None:
        raise ApiError(429, refused.message, headers={"Retry-After": str(refused.retry_after)})
    if by_invitation:
        if invitation is None:
            raise ApiError(
                403,
                f"`invitation`: survey {survey.id!r} takes respondents by invitation only: "
                "open the personal link of your invitation",
            )
    else:
        invitation = None
    try:
        token, respondent = request.app.state.store.open_session(survey.id, invitation)
    except SurveyClosedError:
        raise ApiError(409, MESSAGES["closed"].format(s=survey.id, q="")) from None
    except DeniableError:
        raise ApiError(
            403, "`invitation`: not a valid invitation of this survey, or already used"
        ) from None
    respondent_cache(request.app).put(survey.id, token, respondent)
    return {"token": token}


def _visible(
    survey: Survey, answered: dict[str, int], remaining: float, groups: dict[str, int]
) -> list[dict[str, Any]]:
    out = []
    for q in survey.questions:
        report = answered.get(q.id)
        if report is None and not q.unbounded and q.epsilon > remaining:
            continue  # it would pass the cap: not shown (an unbounded one is outside it)
        if q.two_group and q.id not in groups:
            continue  # (a version loaded meanwhile dropped it: no group was drawn)
        entry = {
            "id": q.id,
            "text": q.text,
            "labels": list(q.labels),
            "spec": q.spec.to_dict(),
            **question_guarantee(q),
            "answered": report,
        }
        if q.two_group:  # the group the server drew: the browser randomizes within it
            entry["group"] = groups[q.id]
        if q.unrelated is not None:  # asked on the device, only inside the randomization
            entry["unrelated"] = q.unrelated
        out.append(entry)
    return out


@router.get("/api/surveys/{survey_id}", summary="The survey to answer")
def read_survey(request: Request, info: SurveyDep, respondent: RespondentDep) -> dict[str, Any]:
    """The survey for this respondent: every question it may still answer (with its spec,
    epsilon and the report already sent, if any), its remaining epsilon and the cap.

    A question not answered yet whose epsilon is more than what remains is left out.  An
    unbounded (two-group) question is outside the cap: always shown, with ``epsilon``
    ``"inf"``, ``"guarantee": "ε = ∞ (no bounded guarantee)"`` and ``group``, the
    respondent's randomization group (1 or 2), drawn by the server on the first read.
    """
    survey = info.survey
    store = request.app.state.store
    answered = store.answered(survey.id, respondent)
    remaining = float(store.remaining(survey.id, respondent))
    # each two-group question's group, drawn by the server when first read
    groups = store.assign_groups(survey.id, respondent) if any(
        q.two_group for q in survey.questions) else {}  # fmt: skip
    return {
        "id": survey.id,
        "title": survey.title,
        "description": survey.description,
        "questions": _visible(survey, answered, remaining, groups),
        "remaining": remaining,
        "cap": survey.cap,
        "open": survey.is_open(),
    }


@router.post(
    "/api/surveys/{survey_id}/reports",
    status_code=201,
    summary="Send one randomized report",
    response_model=None,
    responses={
        201: {"description": "stored"},
        200: {"description": "duplicate: the same report again (nothing changes)"},
        403: {"description": "over_cap"},
        409: {"description": "conflict or closed"},
    },
    openapi_extra={**body_schema(ReportRequest), "security": RESPONDENT_SECURITY},
)
async def submit_report(request: Request, survey_id: str) -> Response:
    """Store one report and spend its question's epsilon, atomically (the reports of
    concurrent requests share a transaction: :mod:`deniable.service.core.batching`).

    The body is ``{"question": str, "report": int}``.  This, the busiest route, is served
    by :data:`FAST_ROUTES` (this declaration gives the operation its schema); it resolves
    its survey, respondent and body itself rather than through FastAPI's dependencies
    (the same checks in the same order, at a fraction of the cost per request).
    """
    return await _report(request, survey_id)


async def _report(request: Request, survey_id: str) -> Response:
    info = await get_survey(request, survey_id)
    respondent = await get_respondent(request, survey_id)
    fields = _report_fields(await request.body())
    if fields is None:  # not the plain shape: the strict model says what is wrong
        body = await parse_body(request, ReportRequest)
        fields = body.question, body.report
    qid, report = fields
    survey = info.survey
    question, k = info.question(qid, "question")
    check_report(question, k, report, "report")
    if not survey.is_open():
        return outcome("closed", survey, question.id)
    result = await submitter(request).submit(survey.id, respondent, question.id, report)
    return outcome(result.status, survey, question.id)


def _report_fields(raw: bytes) -> tuple[str, int] | None:
    """``(question, report)`` of a report body that has exactly :class:`ReportRequest`'s
    shape, in ASCII; else None (then the strict model parses it and names what is wrong).
    A fifth of the model's time."""
    try:
        doc = json.loads(raw.decode("ascii"))  # a str: no guessing of UTF-16 or -32
    except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
        return None
    if type(doc) is not dict or len(doc) != 2:
        return None
    question, report = doc.get("question"), doc.get("report")
    if (
        type(question) is not str
        or type(report) is not int  # not bool, not float: as the strict model
        or not 0 < len(question) <= 64
        or not question.isascii()  # (an escaped lone surrogate is the model's to refuse)
    ):
        return None
    return question, report


class _Route(Route):
    """A plain Starlette route that records itself as the request's route (what the access
    log names), as FastAPI's routes do."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match != Match.NONE:
            child["route"] = self
        return match, child


async def _serve_report(request: Request) -> Response:
    return await _report(request, request.path_params["survey_id"])


#: Routes the app puts before every other: ``POST /api/surveys/{survey_id}/reports`` served
#: without FastAPI's routing of included routers and its per-request dependency solving
#: (the declaration above documents it; both run :func:`_report`).
FAST_ROUTES: list[BaseRoute] = [
    _Route("/api/surveys/{survey_id}/reports", _serve_report, methods=["POST"])
]


@router.post(
    "/api/surveys/{survey_id}/reports/batch",
    summary="Send many randomized reports",
    response_model=None,
    responses={
        200: {"description": "the outcome of each report, in order"},
        413: {"description": "more than batch_max_items reports, or too large a body"},
    },
    openapi_extra=body_schema(BatchRequest),
)
async def submit_batch(request: Request, survey_id: str) -> Response:
    """Many reports in one transaction, each with its respondent's token; per-item
    outcomes in order (``stored``, ``duplicate``, ``conflict``, ``over_cap``).

    The body is ``{"reports": [{"token": str, "question": str, "report": int}, ...]}``.
    The whole batch is refused (nothing stored) if any item names an unknown token, an
    unknown question or a report out of range; the error names the item.  (The body is
    parsed straight from its bytes, and the answer written as JSON directly: for 10,000
    items that is a tenth of the time FastAPI's generic path takes.)
    """
    info = await get_survey(request, survey_id)
    raw = await request.body()
    reports = _batch_items(raw)
    if reports is None:  # not the plain shape: the strict model says what is wrong
        body = await parse_body(request, BatchRequest)
        reports = [(x.token, x.question, x.report) for x in body.reports]
    return await run_in_threadpool(_submit_batch, request, info, reports)


def _batch_items(raw: bytes) -> list[tuple[str, str, int]] | None:
    """The items of a batch body as ``(token, question, report)``, when the body has
    exactly :class:`BatchRequest`'s shape with ASCII strings; else None (then the strict
    model parses it and names what is wrong).  A third of the model's time per item."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):  # deep nesting: the strict model names it (400)
        return None
    if type(doc) is not dict or len(doc) != 1 or type(doc.get("reports")) is not list:
        return None
    out: list[tuple[str, str, int]] = []
    add = out.append
    for item in doc["reports"]:
        if type(item) is not dict or len(item) != 3:
            return None
        token, question, report = item.get("token"), item.get("question"), item.get("report")
        if (
            type(token) is not str
            or type(question) is not str
            or type(report) is not int  # not bool, not float: as the strict model
            or not 0 < len(token) <= 256
            or not 0 < len(question) <= 64
            or not token.isascii()
            or not question.isascii()
        ):
            return None
        add((token, question, report))
    return out


def _rate_limit_batch(
    request: Request, reports: list[tuple[str, str, int]], per_token: dict[str, int]
) -> None:
    """Count each report of a batch as one request of its token in the per-token rate
    limit (the one the Bearer requests go through); 429 naming the first item whose token
    is over it, and nothing counted or stored."""
    limiter = getattr(request.app.state, "rate_limiter", None)
    if limiter is None:
        return
    keys = {token_key(t): t for t in per_token}
    over = limiter.acquire_many({key: per_token[t] for key, t in keys.items()})
    if over is None:
        return
    key, wait = over
    i = next(i for i, item in enumerate(reports) if item[0] == keys[key])
    raise ApiError(
        429,
        f"`reports[{i}].token`: at most {limiter.limit} reports or requests per minute per "
        f"token (this batch has {per_token[keys[key]]} of this token); nothing was stored; "
        f"retry after {retry_after(wait)} s",
        headers={"Retry-After": retry_after(wait)},
    )


def _respondents(request: Request, survey_id: str, tokens: list[str]) -> dict[str, int | None]:
    """The respondent of each token (``None`` for a token of no respondent of this
    survey): the process's cache, and the store for the tokens it does not know, all in
    one query (a batch from devices the process has not seen costs one query, not one per
    token)."""
    cache = respondent_cache(request.app)
    found: dict[str, int | None] = {}
    unknown: list[str] = []
    for token in tokens:
        hit = cache.get(survey_id, token)
        if hit is None:
            unknown.append(token)
        else:
            found[token] = hit
    if unknown:
        ids = request.app.state.store.respondent_ids(survey_id, unknown)
        for token, rid in zip(unknown, ids, strict=True):
            found[token] = None if rid is None else int(rid)
            if rid is not None:
                cache.put(survey_id, token, int(rid))
    return found


def _submit_batch(
    request: Request, info: SurveyInfo, reports: list[tuple[str, str, int]]
) -> Response:
    limit = int(request.app.state.settings.batch_max_items)
    if len(reports) > limit:
        raise ApiError(413, f"`reports`: at most {limit} items per batch, got {len(reports)}")
    survey = info.survey
    respondents = _respondents(request, survey.id, list(dict.fromkeys(t for t, _, _ in reports)))
    per_token: dict[str, int] = {}
    items: list[tuple[int, str, int]] = []
    known = info.questions
    for i, (token, qid, report) in enumerate(reports):
        found_q = known.get(qid)
        if found_q is None or not 0 <= report < found_q[1]:  # the same errors, named
            question, k = info.question(qid, f"reports[{i}].question")
            check_report(question, k, report, f"reports[{i}].report")
        rid = respondents[token]
        if rid is None:
            raise ApiError(401, f"`reports[{i}].token`: not a respondent token of this survey")
        per_token[token] = per_token.get(token, 0) + 1
        items.append((rid, qid, report))
    check_batch_groups(request, survey, items)  # the reports of two-group questions
    if not survey.is_open():
        return outcome("closed", survey, "")
    _rate_limit_batch(request, reports, per_token)
    results = request.app.state.store.submit_batch(survey.id, items) if items else []
    raw = b'{"results":[' + b",".join(STATUS_JSON[r.status] for r in results) + b"]}"
    return Response(raw, media_type="application/json")
