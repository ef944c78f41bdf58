"""What the routes share: the survey of the path and the respondent of the token (FastAPI
dependencies, cached in the process), a strict JSON body parsed from the request's bytes,
the checks of a report, and the HTTP answer of each submission outcome.

A report's outcome maps to the HTTP status: ``stored`` 201, ``duplicate`` 200 (the same
report again: idempotent, nothing spent twice), ``conflict`` 409 (a different report is
already stored; it is kept), ``over_cap`` 403 (the respondent's epsilon cap would be
passed; nothing stored), ``closed`` 409 (the survey is not open).
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from deniable.exceptions import DeniableError
from deniable.service.core.batching import GroupSubmitter
from deniable.service.core.security import (
    TOKEN_KEY,
    ApiError,
    RespondentCredentials,
    bad_token,
    lookup_respondent,
    no_token,
    require_admin,
    respondent_cache,
    scope_bearer,
)
from deniable.service.pages import with_shared_head
from deniable.survey import Survey, SurveyQuestion

__all__ = [
    "ADMIN",
    "MESSAGES",
    "STATIC_DIR",
    "STATUS_CODES",
    "STATUS_JSON",
    "RespondentDep",
    "SurveyDep",
    "SurveyInfo",
    "body_schema",
    "check_open",
    "check_report",
    "get_respondent",
    "get_survey",
    "module_closure",
    "outcome",
    "parse_body",
    "static_page",
    "submitter",
    "survey_info",
]

M = TypeVar("M", bound=BaseModel)

#: The dependency list of an admin-only route (``dependencies=ADMIN``).
ADMIN = [Depends(require_admin)]

#: HTTP status of each submission outcome.
STATUS_CODES = {"stored": 201, "duplicate": 200, "conflict": 409, "over_cap": 403, "closed": 409}
#: The body of each outcome that is not a refusal, written once.
STATUS_JSON = {k: b'{"status":"%s"}' % k.encode() for k in STATUS_CODES}
#: The error of each refused outcome (``{q}``: the question, ``{s}``: the survey).
MESSAGES = {
    "conflict": "question `{q}`: a different report from this respondent is already stored "
    "(a report cannot be changed; it is kept)",
    "over_cap": "question `{q}`: answering it would pass this respondent's epsilon cap; "
    "nothing was stored",
    "closed": "survey `{s}` is closed: it takes no reports",
}
#: The pages, scripts and styles served under ``/static`` (and the pages of the routes).
STATIC_DIR = Path(str(resources.files("deniable.service"))) / "static"
_ID_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_SURVEY_TTL = 5.0  # seconds a survey definition is cached in the process


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
    hashed = request.scope.get(TOKEN_KEY)  # (token, its hash), from the rate limit
    token, key = hashed if hashed is not None else (scope_bearer(request.scope), None)
    if token is None:
        raise no_token(survey_id)
    found = respondent_cache(request.app).get(survey_id, token, key)
    if found is None:
        found = await run_in_threadpool(lookup_respondent, request, survey_id, token)
    if found is None:
        raise bad_token()
    return found


def check_report(question: SurveyQuestion, k: int, report: int, field: str) -> None:
    if not 0 <= report < k:
        # the message names the allowed range, not the value sent
        raise ApiError(
            422, f"`{field}` must be an integer from 0 to {k - 1} for question {question.id!r}"
        )


def check_open(survey: Survey) -> None:
    if not survey.is_open():
        raise ApiError(409, MESSAGES["closed"].format(s=survey.id, q=""))


def outcome(status: str, survey: Survey, question: str) -> Response:
    code = STATUS_CODES.get(status)
    if code is None:  # a store answering something the contract does not know
        raise RuntimeError(f"unknown submission status {status!r}")
    if code < 400:  # written once (what JSONResponse would write)
        return Response(STATUS_JSON[status], status_code=code, media_type="application/json")
    body: dict[str, Any] = {"status": status}
    body["error"] = MESSAGES[status].format(q=question, s=survey.id)
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


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
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


#: A module's static imports (``import ... from "./name.js";``), as the service writes them.
_MODULE_IMPORT = re.compile(r'^(?:import|export)\s[^;]*?\sfrom\s+"\./([a-z]+\.js)";', re.M)
#: A page's module script.
_MODULE_SCRIPT = re.compile(r'<script type="module" src="/static/([a-z]+\.js)">')


def module_closure(entry: str, static: Path = STATIC_DIR) -> list[str]:
    """Every module of ``static`` that the module ``entry`` imports, directly or not, sorted
    (``entry`` itself left out)."""
    seen = {entry}
    todo = [entry]
    while todo:
        for name in _MODULE_IMPORT.findall((static / todo.pop()).read_text(encoding="utf-8")):
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return sorted(seen - {entry})


@functools.cache
def _page_html(path: Path) -> str:
    page = path.read_text(encoding="utf-8")
    entries = _MODULE_SCRIPT.findall(page)
    preloads = {m for entry in entries for m in module_closure(entry, path.parent)}
    return with_shared_head(page, sorted(preloads - set(entries)))


def static_page(name: str) -> HTMLResponse:
    """The HTML page ``name`` of :data:`STATIC_DIR` (404 if it is not installed), with the
    head the pages share and a preload of every module its module script imports
    (:func:`deniable.service.pages.with_shared_head`), assembled once per process."""
    path = STATIC_DIR / name
    if not path.is_file():
        raise StarletteHTTPException(404, f"the page {name} is not installed")
    return HTMLResponse(_page_html(path), media_type="text/html; charset=utf-8")
