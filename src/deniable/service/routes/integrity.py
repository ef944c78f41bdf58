"""The dashboard's defences against ballot stuffing, as JSON endpoints (admin only): the
arrival rates of sessions and reports with bursts flagged, and the robustness statement of
every estimate.  The dashboard page shows the same numbers
(:mod:`deniable.service.routes.dashboard`).

=====================================================  =========================================
``GET /api/surveys/{id}/arrivals?bucket=minute``       sessions and reports per minute or hour,
                                                       the recent windows and every burst
``GET /api/surveys/{id}/robustness?shift=0.05``        per question, the fake respondents that
                                                       would move each estimate by ``shift``
=====================================================  =========================================
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from deniable.service.analysis import DEFAULT_SHIFT, MAX_WINDOWS
from deniable.service.routes.deps import ADMIN
from deniable.service.routes.reads import arrival_data, robustness_data, survey_of

__all__ = ["Rate", "Shift", "router"]

router = APIRouter()

Shift = Annotated[float, Query(description="The move of an estimate to resist, in (0, 1].")]
Rate = Annotated[str, Query(description="Arrival windows: minute or hour.")]
Windows = Annotated[
    int | None,
    Query(description=f"Recent windows to list, 1 to {MAX_WINDOWS} (default 60 minutes "
          "or 48 hours)."),
]  # fmt: skip


@router.get("/api/surveys/{survey_id}/arrivals", dependencies=ADMIN, tags=["dashboard"])
def arrivals(
    request: Request, survey_id: str, bucket: Rate = "minute", windows: Windows = None
) -> JSONResponse:
    """Sessions and reports per minute or hour: totals, the baseline (median per window),
    the recent windows, and every burst (at least 5 times the baseline and a Poisson tail
    below 1e-6)."""
    data = arrival_data(request, survey_of(request, survey_id), bucket, windows)
    return JSONResponse(data, headers={"Cache-Control": "no-store"})


@router.get("/api/surveys/{survey_id}/robustness", dependencies=ADMIN, tags=["dashboard"])
def robustness_endpoint(
    request: Request, survey_id: str, shift: Shift = DEFAULT_SHIFT
) -> JSONResponse:
    """Per question and estimated share, the fake respondents needed to move the estimate
    by ``shift`` up or down, choosing their answers (input) or their reports (output)."""
    data = robustness_data(request, survey_of(request, survey_id), shift)
    return JSONResponse(data, headers={"Cache-Control": "no-store"})
