"""The dashboard's pages (HTML, admin only) and its login.

=====================================================  =========================================
``GET /dashboard``, ``GET /dashboard/{id}``            the pages (401 and the login form when
                                                       not logged in)
``GET /dashboard/streams/{id}``                        a telemetry stream's page
                                                       (:mod:`.stream_pages`)
``GET|POST /dashboard/login``, ``POST .../logout``     the login form; set / clear the cookie
=====================================================  =========================================

The login form takes the admin token or the admin password and sets the cookie
(:mod:`deniable.service.core.security`); failed logins are limited per address
(:mod:`deniable.service.core.logins`).  A page shows the numbers of the JSON endpoints
(:mod:`deniable.service.routes.reads`), rendered by the templates of
:mod:`deniable.service.pages` (autoescaped).  The pages are HTML for people, not API: they
stay out of the OpenAPI schema (their refusals are pages too, e.g. 401 with the login form),
like the respondent's page.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from deniable.service import pages
from deniable.service.analysis import DEFAULT_SHIFT
from deniable.service.core.logins import login_failures
from deniable.service.core.security import (
    check_admin_credential,
    clear_admin_cookie,
    client_address,
    is_admin,
    refuse_cross_site,
    retry_after,
    set_admin_cookie,
)
from deniable.service.routes import stream_pages
from deniable.service.routes.analyst import NO_STORE, Bucket, Level
from deniable.service.routes.integrity import Rate, Shift
from deniable.service.routes.reads import (
    arrival_data,
    budget_data,
    design_data,
    majorities_data,
    results_data,
    robustness_data,
    status_data,
    store_of,
    survey_of,
    timeline_data,
)
from deniable.service.storage.lifecycle import state_of

__all__ = ["router"]

router = APIRouter()
router.include_router(stream_pages.router)  # /dashboard/streams/{id} and its JSON twin


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=NO_STORE)


def _login_required() -> HTMLResponse:
    return _html(pages.login_page(), 401)


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
    response = RedirectResponse("/dashboard", status_code=303, headers=NO_STORE)
    set_admin_cookie(response, request)
    return response


@router.post("/dashboard/logout", tags=["dashboard"], include_in_schema=False)
def logout(request: Request) -> Response:
    """End the session on the server (a copy of the cookie stops working too), expire the
    cookie and go to the login form (303).  A logout posted by another site is refused
    (403): no other page can log the admin out."""
    refuse_cross_site(request)
    response = RedirectResponse("/dashboard/login", status_code=303, headers=NO_STORE)
    clear_admin_cookie(response, request)
    return response


@router.get("/dashboard", response_class=HTMLResponse, tags=["dashboard"], include_in_schema=False)
def dashboard(request: Request) -> HTMLResponse:
    """The list of surveys (401 and the login form when not logged in)."""
    if not is_admin(request):
        return _login_required()
    store = store_of(request)
    rows = []
    for sid in store.survey_ids():
        s = store.survey(sid)
        reports = sum(t.n for t in store.tallies(sid).values())
        rows.append({"id": s.id, "title": s.title, "version": s.version,
                     "access": "by invitation" if s.respondents == "invitation" else "anonymous",
                     "state": state_of(s), "questions": len(s.questions),
                     "reports": reports})  # fmt: skip
    state = request.app.state.streams
    streams = []
    for sid in state.specs.streams():
        spec = state.spec(sid)
        if spec is not None:
            streams.append({"id": sid, "oracle": spec.oracle.key,
                            "devices": state.specs.devices(sid)})  # fmt: skip
    return _html(pages.survey_list_page(rows, streams))


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
    shift: Shift = DEFAULT_SHIFT,
    rate: Rate = "minute",
) -> HTMLResponse:
    """One survey's dashboard (401 and the login form when not logged in)."""
    if not is_admin(request):
        return _login_required()
    survey = survey_of(request, survey_id)
    res = results_data(request, survey, level)
    timelines = [timeline_data(request, survey, q.id, bucket, level) for q in survey.questions]
    page = pages.survey_page(
        survey.to_dict(),
        res,
        majorities_data(request, survey),
        timelines,
        budget_data(request, survey),
        bucket=bucket,
        status=status_data(request, survey),
        shift=shift,
        rate=rate,
        robustness=robustness_data(request, survey, shift),
        arrivals=arrival_data(request, survey, rate),
        design=design_data(request, survey, level),
    )
    return _html(page)
