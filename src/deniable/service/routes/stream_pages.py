"""A telemetry stream's estimates over time, for the analyst (admin only).

========================================  ================================================
``GET /dashboard/streams/{id}``           the page: each UTC day's estimates (401 and the
                                          login form when not logged in)
``GET /api/streams/{id}/estimates``       the same as JSON: per day the oracle's
                                          ``FrequencyEstimate.to_dict(level)``; for a
                                          heavy-hitter or range stream also its answer
                                          settings and the days pooled
========================================  ================================================

Both take ``start`` and ``end`` (UTC days ``YYYY-MM-DD``, both included; by default the
last :data:`~deniable.service.analysis.streams.DEFAULT_STREAM_DAYS` days up to today) and
``level``; a request reads at most
:data:`~deniable.service.analysis.streams.MAX_STREAM_DAYS` days of partitions: a longer
range, ``start`` after ``end`` or a malformed day is refused (422 naming the parameter),
an unknown stream is 404.  The router is included by the dashboard's
(:mod:`deniable.service.routes.dashboard`).
"""

from __future__ import annotations

from datetime import UTC
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from deniable.exceptions import DeniableError
from deniable.service import pages
from deniable.service.analysis.streams import StreamSpec, stream_days, stream_estimates
from deniable.service.core.security import ApiError, is_admin
from deniable.service.routes.analyst import NO_STORE
from deniable.service.routes.deps import ADMIN

__all__ = ["router"]

router = APIRouter()
_DAY = "A UTC day, YYYY-MM-DD (both ends included)."
Start = Annotated[str | None, Query(description=f"First day: {_DAY} Default: 29 days before end.")]
End = Annotated[str | None, Query(description=f"Last day: {_DAY} Default: today (UTC).")]
Level = Annotated[float, Query(description="Confidence level of the intervals, in (0, 1).")]


def _estimates(
    request: Request, stream_id: str, start: str | None, end: str | None, level: float
) -> tuple[StreamSpec, dict[str, Any], int]:
    state = request.app.state.streams
    spec: StreamSpec | None = state.spec(stream_id)
    if spec is None:
        raise ApiError(404, f"no stream {stream_id!r} (store its spec: PUT /api/streams/{{id}})")
    try:
        first, last = stream_days(start, end, state.clock().astimezone(UTC).date())
        out = stream_estimates(state.root, spec, first, last, level)
    except DeniableError as exc:
        raise ApiError(422, str(exc)) from None
    except ImportError as exc:
        raise ApiError(503, str(exc)) from None
    return spec, out, state.specs.devices(stream_id)


@router.get(
    "/api/streams/{stream_id}/estimates",
    dependencies=ADMIN,
    summary="A telemetry stream's estimates per UTC day",
    responses={404: {"description": "No such stream."}, 422: {"description": "a bad range"}},
)
async def stream_estimates_json(
    request: Request, stream_id: str, start: Start = None, end: End = None, level: Level = 0.95
) -> JSONResponse:
    """Per UTC day of ``start .. end`` with reports, the stream oracle's estimate of that
    day's reports (``{"day", "estimate"}``, the estimate as the library's ``to_dict``); a
    heavy-hitter (PEM, TreeHist, SFP), range or Square Wave stream adds ``answers`` (its
    settings) and ``pooled`` (the days' records as one sample: docs/service.md)."""
    _, out, _ = await run_in_threadpool(_estimates, request, stream_id, start, end, level)
    return JSONResponse(out, headers=NO_STORE)


@router.get(
    "/dashboard/streams/{stream_id}",
    response_class=HTMLResponse,
    tags=["dashboard"],
    include_in_schema=False,
)
async def stream_dashboard(
    request: Request, stream_id: str, start: Start = None, end: End = None, level: Level = 0.95
) -> HTMLResponse:
    """One stream's page (401 and the login form when not logged in)."""
    if not is_admin(request):
        return HTMLResponse(pages.login_page(), status_code=401, headers=NO_STORE)
    spec, out, devices = await run_in_threadpool(_estimates, request, stream_id, start, end, level)
    page = pages.stream_page(spec.to_dict(), out, devices)
    return HTMLResponse(page, headers=NO_STORE)
