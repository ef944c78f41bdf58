"""The JSON API of the respondent side and the admin's write endpoints.

=========================================================  ==========  =====================
method, path                                               who         answers
=========================================================  ==========  =====================
``POST /api/surveys/{survey_id}/sessions``                 anyone      201 ``{"token"}``
``GET /api/surveys/{survey_id}``                           respondent  the survey to answer
``POST /api/surveys/{survey_id}/reports``                  respondent  201/200/409/403/422
``POST /api/surveys/{survey_id}/reports/batch``            devices     200 ``{"results"}``
``POST /api/surveys/{survey_id}/interviewer``              admin       201, a new respondent
``GET /api/surveys/{survey_id}/protocols``                 admin       coin/dice protocols
``POST /api/surveys/{survey_id}/invitations``              admin       201 ``{"invitations"}``
=========================================================  ==========  =====================

Every refusal is a 4xx with ``{"error": "<message naming the field>"}`` and stores nothing:
the survey, the question and the report's range are checked before the store is asked to
write, and the store writes a report and spends its epsilon in one transaction.

A report's outcome maps to the HTTP status: ``stored`` 201, ``duplicate`` 200 (the same
report again: idempotent, nothing spent twice), ``conflict`` 409 (a different report is
already stored; it is kept), ``over_cap`` 403 (the respondent's epsilon cap would be
passed; nothing stored), ``closed`` 409 (the survey is not open).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Body, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from deniable.accounting._exact_sum import add_up
from deniable.designs import BinaryDesign
from deniable.exceptions import DeniableError
from deniable.mechanisms import CoinProtocol, all_protocols
from deniable.service.core.batching import GroupSubmitter
from deniable.service.core.limits import session_limits
from deniable.service.core.security import (
    RESPONDENT_SECURITY,
    ApiError,
    RespondentCredentials,
    bad_token,
    bearer_token,
    lookup_respondent,
    no_token,
    require_admin,
    respondent_cache,
    retry_after,
    token_key,
)
from deniable.service.storage import SurveyClosedError
from deniable.survey import Survey, SurveyQuestion

__all__ = [
    "BatchItem",
    "BatchRequest",
    "InterviewerRequest",
    "InvitationRequest",
    "ReportRequest",
    "SessionRequest",
    "SurveyInfo",
    "get_respondent",
    "get_survey",
    "router",
    "submitter",
    "survey_info",
]

router = APIRouter()
M = TypeVar("M", bound=BaseModel)

#: HTTP status of each submission outcome.
STATUS_CODES = {"stored": 201, "duplicate": 200, "conflict": 409, "over_cap": 403, "closed": 409}
_STATUS_JSON = {k: b'{"status":"%s"}' % k.encode() for k in STATUS_CODES}
_MESSAGES = {
    "conflict": "question `{q}`: a different report from this respondent is already stored "
    "(a report cannot be changed; it is kept)",
    "over_cap": "question `{q}`: answering it would pass this respondent's epsilon cap; "
    "nothing was stored",
    "closed": "survey `{s}` is closed: it takes no reports",
}
_ID_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_SURVEY_TTL = 5.0  # seconds a survey definition is cached in the process


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SessionRequest(_Strict):
    """``{"invitation": str}`` for invitation surveys; an empty object (or no body) for
    anonymous ones (an invitation sent to an anonymous survey is ignored)."""

    invitation: Annotated[str | None, Field(min_length=1, max_length=256)] = None


class ReportRequest(_Strict):
    """One randomized report: the question's id and the report, an integer in
    ``range(spec.reports)``."""

    question: Annotated[str, Field(min_length=1, max_length=64)]
    report: int


class BatchItem(_Strict):
    """One report of a batch, with the token of the respondent who made it."""

    token: Annotated[str, Field(min_length=1, max_length=256)]
    question: Annotated[str, Field(min_length=1, max_length=64)]
    report: int


class BatchRequest(_Strict):
    """Many reports at once (at most ``batch_max_items``)."""

    reports: list[BatchItem]


class InterviewerItem(_Strict):
    """One report an interviewer enters: the question and the report the respondent made
    with coins or dice."""

    question: Annotated[str, Field(min_length=1, max_length=64)]
    report: int


class InterviewerRequest(_Strict):
    """The reports of one respondent interviewed on paper or by phone."""

    reports: Annotated[list[InterviewerItem], Field(min_length=1, max_length=1000)]


class InvitationRequest(_Strict):
    """How many single-use invitation tokens to create."""

    count: Annotated[int, Field(ge=1, le=10_000)]


# ---------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class SurveyInfo:
    """A survey and, per question id, the question and its number of reports (looked up
    once per cached survey, not per request)."""

    survey: Survey
    questions: dict[str, tuple[SurveyQuestion, int]]

    def question(self, question_id: str, field: str) -> tuple[SurveyQuestion, int]:
        """The question and its number of reports; 404 naming ``field`` if unknown."""
        found = self.questions.get(question_id)
        if found is None:
            known = ", ".join(self.questions)
            raise ApiError(
                404,
                f"`{field}`: survey {self.survey.id!r} has no such question (its "
                f"questions: {known})",
            )
        return found


def survey_info(request: Request, survey_id: str) -> SurveyInfo:
    """The survey of the path (from the store, cached in the process for a few seconds);
    404 naming ``survey_id`` if there is none.  Blocking on a cache miss."""
    if not _ID_RE.fullmatch(survey_id):
        raise ApiError(404, f"path `survey_id`: no survey {survey_id!r}")
    hit = _cache(request).get(survey_id)
    if hit is not None and time.monotonic() - hit[0] < _SURVEY_TTL:
        return hit[1]
    try:
        survey: Survey = request.app.state.store.survey(survey_id)
    except DeniableError:
        raise ApiError(404, f"path `survey_id`: no survey {survey_id!r}") from None
    info = SurveyInfo(survey, {q.id: (q, q.spec.reports) for q in survey.questions})
    _cache(request)[survey_id] = (time.monotonic(), info)
    return info


def _cache(request: Request) -> dict[str, tuple[float, SurveyInfo]]:
    state = request.app.state
    cache: dict[str, tuple[float, SurveyInfo]] | None = getattr(state, "survey_cache", None)
    if cache is None:
        cache = state.survey_cache = {}
    return cache


async def get_survey(request: Request, survey_id: str) -> SurveyInfo:
    """FastAPI dependency: :func:`survey_info` without blocking the event loop."""
    hit = _cache(request).get(survey_id)
    if hit is not None and time.monotonic() - hit[0] < _SURVEY_TTL:
        return hit[1]
    return await run_in_threadpool(survey_info, request, survey_id)


async def get_respondent(
    request: Request, survey_id: str, _token: RespondentCredentials = None
) -> int:
    """FastAPI dependency: :func:`~deniable.service.core.security.require_respondent` that asks
    the store (in a worker thread) only when the process does not know the token yet."""
    token = bearer_token(request)
    if token is None:
        raise no_token(survey_id)
    found = respondent_cache(request.app).get(survey_id, token)
    if found is None:
        found = await run_in_threadpool(lookup_respondent, request, survey_id, token)
    if found is None:
        raise bad_token()
    return found


def _check_report(question: SurveyQuestion, k: int, report: int, field: str) -> None:
    if not 0 <= report < k:
        # the message names the allowed range, not the value sent
        raise ApiError(
            422, f"`{field}` must be an integer from 0 to {k - 1} for question {question.id!r}"
        )


def _check_open(survey: Survey) -> None:
    if not survey.is_open():
        raise ApiError(409, _MESSAGES["closed"].format(s=survey.id, q=""))


def _outcome(status: str, survey: Survey, question: str) -> JSONResponse:
    code = STATUS_CODES.get(status)
    if code is None:  # a store answering something the contract does not know
        raise RuntimeError(f"unknown submission status {status!r}")
    body: dict[str, Any] = {"status": status}
    if code >= 400:
        body["error"] = _MESSAGES[status].format(q=question, s=survey.id)
    return JSONResponse(body, status_code=code)


def submitter(request: Request) -> GroupSubmitter:
    """The app's :class:`~deniable.service.core.batching.GroupSubmitter` (made on first use)."""
    state = request.app.state
    found: GroupSubmitter | None = getattr(state, "submitter", None)
    if found is None:
        found = state.submitter = GroupSubmitter(state.store)
    return found


SurveyDep = Annotated[SurveyInfo, Depends(get_survey)]
RespondentDep = Annotated[int, Depends(get_respondent)]


# ---------------------------------------------------------------------------- respondents


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
    _check_open(survey)
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
        raise ApiError(409, _MESSAGES["closed"].format(s=survey.id, q="")) from None
    except DeniableError:
        raise ApiError(
            403, "`invitation`: not a valid invitation of this survey, or already used"
        ) from None
    respondent_cache(request.app).put(survey.id, token, respondent)
    return {"token": token}


def _visible(survey: Survey, answered: dict[str, int], remaining: float) -> list[dict[str, Any]]:
    out = []
    for q in survey.questions:
        report = answered.get(q.id)
        if report is None and q.epsilon > remaining:
            continue  # it would pass the cap: not shown
        out.append(
            {
                "id": q.id,
                "text": q.text,
                "labels": list(q.labels),
                "spec": q.spec.to_dict(),
                "epsilon": q.epsilon,
                "answered": report,
            }
        )
    return out


@router.get("/api/surveys/{survey_id}", summary="The survey to answer")
def read_survey(request: Request, info: SurveyDep, respondent: RespondentDep) -> dict[str, Any]:
    """The survey for this respondent: every question it may still answer (with its spec,
    epsilon and the report already sent, if any), its remaining epsilon and the cap.

    A question not answered yet whose epsilon is more than what remains is left out.
    """
    survey = info.survey
    store = request.app.state.store
    answered = store.answered(survey.id, respondent)
    remaining = float(store.remaining(survey.id, respondent))
    return {
        "id": survey.id,
        "title": survey.title,
        "description": survey.description,
        "questions": _visible(survey, answered, remaining),
        "remaining": remaining,
        "cap": survey.cap,
        "open": survey.is_open(),
    }


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI request body of a route that parses ``model`` itself (its JSON schema
    with the nested models' definitions written in place)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(defs[ref.removeprefix("#/$defs/")])
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": inline(schema)}},
        }
    }


async def parse_body(request: Request, model: type[M]) -> M:
    """The request's JSON body as ``model`` (strict), or the same errors FastAPI would
    raise for a declared body: 400 for malformed JSON, 422 naming the field."""
    raw = await request.body()
    if not raw.strip():
        raise RequestValidationError([{"type": "missing", "loc": ("body",), "msg": "missing"}])
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        ) from None


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
    openapi_extra={**_body_schema(ReportRequest), "security": RESPONDENT_SECURITY},
)
async def submit_report(request: Request, survey_id: str) -> JSONResponse:
    """Store one report and spend its question's epsilon, atomically (the reports of
    concurrent requests share a transaction: :mod:`deniable.service.core.batching`).

    The body is ``{"question": str, "report": int}``.  This, the busiest route, resolves
    its survey, respondent and body itself rather than through FastAPI's dependencies
    (the same checks in the same order, at half the cost per request).
    """
    info = await get_survey(request, survey_id)
    respondent = await get_respondent(request, survey_id)
    body = await parse_body(request, ReportRequest)
    survey = info.survey
    question, k = info.question(body.question, "question")
    _check_report(question, k, body.report, "report")
    if not survey.is_open():
        return _outcome("closed", survey, question.id)
    result = await submitter(request).submit(survey.id, respondent, question.id, body.report)
    return _outcome(result.status, survey, question.id)


@router.post(
    "/api/surveys/{survey_id}/reports/batch",
    summary="Send many randomized reports",
    response_model=None,
    responses={
        200: {"description": "the outcome of each report, in order"},
        413: {"description": "more than batch_max_items reports, or too large a body"},
    },
    openapi_extra=_body_schema(BatchRequest),
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


def _submit_batch(
    request: Request, info: SurveyInfo, reports: list[tuple[str, str, int]]
) -> Response:
    limit = int(request.app.state.settings.batch_max_items)
    if len(reports) > limit:
        raise ApiError(413, f"`reports`: at most {limit} items per batch, got {len(reports)}")
    survey = info.survey
    respondents: dict[str, int] = {}
    per_token: dict[str, int] = {}
    items: list[tuple[int, str, int]] = []
    known = info.questions
    for i, (token, qid, report) in enumerate(reports):
        found_q = known.get(qid)
        if found_q is None or not 0 <= report < found_q[1]:  # the same errors, named
            question, k = info.question(qid, f"reports[{i}].question")
            _check_report(question, k, report, f"reports[{i}].report")
        rid = respondents.get(token)
        if rid is None:
            found = lookup_respondent(request, survey.id, token)
            if found is None:
                raise ApiError(401, f"`reports[{i}].token`: not a respondent token of this survey")
            rid = respondents[token] = int(found)
            per_token[token] = 0
        per_token[token] += 1
        items.append((rid, qid, report))
    if not survey.is_open():
        return _outcome("closed", survey, "")
    _rate_limit_batch(request, reports, per_token)
    results = request.app.state.store.submit_batch(survey.id, items) if items else []
    raw = b'{"results":[' + b",".join(_STATUS_JSON[r.status] for r in results) + b"]}"
    return Response(raw, media_type="application/json")


# ---------------------------------------------------------------------------- admin


@router.post(
    "/api/surveys/{survey_id}/interviewer",
    status_code=201,
    summary="Enter one interviewed respondent's reports (paper / phone mode)",
    dependencies=[Depends(require_admin)],
)
def interviewer(request: Request, info: SurveyDep, body: InterviewerRequest) -> dict[str, Any]:
    """Create a respondent and store the reports it made with coins or dice.

    Checked before anything is written: every question exists and appears once, every
    report is in range, and the questions' epsilons add up (rounded upward, as the ledger
    adds them) to at most the cap.
    """
    survey = info.survey
    _check_open(survey)
    seen: set[str] = set()
    eps = 0.0
    for i, item in enumerate(body.reports):
        question, k = info.question(item.question, f"reports[{i}].question")
        if question.id in seen:
            raise ApiError(422, f"`reports[{i}].question`: question {question.id!r} given twice")
        seen.add(question.id)
        _check_report(question, k, item.report, f"reports[{i}].report")
        eps = float(add_up(eps, question.epsilon))
    if eps > survey.cap:
        raise ApiError(
            403, f"`reports`: these questions spend epsilon {eps:.6g}, past the cap {survey.cap:g}"
        )
    store = request.app.state.store
    _, respondent = store.create_respondent(survey.id)
    results = store.submit_batch(
        survey.id, [(respondent, item.question, item.report) for item in body.reports]
    )
    return {"respondent": respondent, "results": [{"status": r.status} for r in results]}


@router.post(
    "/api/surveys/{survey_id}/invitations",
    status_code=201,
    summary="Create single-use invitation tokens",
    dependencies=[Depends(require_admin)],
)
def invitations(request: Request, info: SurveyDep, body: InvitationRequest) -> dict[str, Any]:
    """``count`` new invitation tokens (shown once; the server keeps only their hashes)."""
    tokens = request.app.state.store.create_invitations(info.survey.id, body.count)
    return {"invitations": list(tokens)}


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text.strip()) if s]


def protocol_for(question: SurveyQuestion) -> CoinProtocol | None:
    """The coin or dice protocol whose channel *is* the question's design, or None.

    Only an exact match will do: reports made with another channel would be estimated
    with the wrong one (and a protocol of higher epsilon would spend more than stated).
    """
    design = question.design
    if not isinstance(design, BinaryDesign):
        return None
    p1, p0 = float(design.p_yes_given_1), float(design.p_yes_given_0)
    for p in all_protocols():
        if math.isclose(float(p.p_yes_given_1), p1, rel_tol=1e-12) and math.isclose(
            float(p.p_yes_given_0), p0, rel_tol=1e-12
        ):
            return p
    return None


def _protocol_entry(question: SurveyQuestion) -> dict[str, Any]:
    p = protocol_for(question)
    labels: Sequence[str] = question.labels
    if p is None:
        steps = [
            "No coin or dice protocol gives exactly this question's design "
            f"({question.design.name}, epsilon {question.epsilon:.4g}): do not ask it on "
            "paper; the respondent answers it on the survey page instead."
        ]
        return {"question": question.id, "text": question.text, "steps": steps, "protocol": None}
    yes, no = (labels[1], labels[0]) if len(labels) == 2 else ("yes", "no")
    steps = [
        *_sentences(p.instructions),
        f'Enter the answer the respondent says: "{yes}" as report 1, "{no}" as report 0.',
    ]
    return {
        "question": question.id,
        "text": question.text,
        "steps": steps,
        "protocol": p.to_dict(),
    }


@router.get(
    "/api/surveys/{survey_id}/protocols",
    summary="The coin or dice protocol of each question (for the interviewer page)",
    dependencies=[Depends(require_admin)],
)
def protocols(info: SurveyDep) -> list[dict[str, Any]]:
    """Per question: the steps a respondent follows with physical coins or dice, when a
    protocol reproduces the question's design exactly (``protocol`` is then its exact
    probabilities), else one step saying it cannot be asked on paper."""
    return [_protocol_entry(q) for q in info.survey.questions]
