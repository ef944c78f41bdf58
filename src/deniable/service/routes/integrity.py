"""The dashboard's defences against ballot stuffing, as JSON endpoints (admin only): the
arrival rates of sessions and reports with bursts flagged, and the robustness statement of
every estimate.  The dashboard page shows the same numbers (:mod:`deniable.service.
dashboard_panels`).

=====================================================  =========================================
``GET /api/surveys/{id}/arrivals?bucket=minute``       sessions and reports per minute or hour,
                                                       the recent windows and every burst
``GET /api/surveys/{id}/robustness?shift=0.05``        per question, the fake respondents that
                                                       would move each estimate by ``shift``
=====================================================  =========================================
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from deniable.exceptions import DataError, DeniableError
from deniable.service.analysis import arrivals as ar
from deniable.service.analysis.robustness import DEFAULT_SHIFT, robustness
from deniable.service.core.security import ApiError, require_admin
from deniable.service.storage.lifecycle import state_of
from deniable.survey import Survey

__all__ = ["arrival_data", "robustness_data", "router", "status_data"]

router = APIRouter()
T = TypeVar("T")

_ADMIN = [Depends(require_admin)]
Shift = Annotated[float, Query(description="The move of an estimate to resist, in (0, 1].")]
Rate = Annotated[str, Query(description="Arrival windows: minute or hour.")]
Windows = Annotated[
    int | None,
    Query(description=f"Recent windows to list, 1 to {ar.MAX_WINDOWS} (default 60 minutes "
          "or 48 hours)."),
]  # fmt: skip


def _checked(call: Callable[[], T]) -> T:
    """An unknown survey (DataError) is 404, a bad parameter 422."""
    try:
        return call()
    except DataError as exc:
        raise ApiError(404, str(exc)) from None
    except DeniableError as exc:
        raise ApiError(422, str(exc)) from None


def _survey(request: Request, survey_id: str) -> Survey:
    found: Survey = _checked(lambda: request.app.state.store.survey(survey_id))
    return found


def arrival_data(
    request: Request, survey: Survey, bucket: str, windows: int | None = None
) -> dict[str, Any]:
    """:func:`~deniable.service.analysis.arrivals.arrival_rates` of the survey, now."""
    # the parameters checked before the database is read
    _checked(lambda: ar.arrival_rates(survey.id, {}, {}, bucket=bucket, now=0.0, windows=windows))
    width = ar.ARRIVAL_BUCKETS[bucket]
    sessions, reports = ar.arrival_counts(request.app.state.store, survey.id, width)
    out: dict[str, Any] = ar.arrival_rates(
        survey.id, sessions, reports, bucket=bucket, now=time.time(), windows=windows
    )
    return out


def robustness_data(request: Request, survey: Survey, shift: float) -> dict[str, Any]:
    """:func:`~deniable.service.analysis.robustness.robustness` of the survey's tallies."""
    tallies = request.app.state.store.tallies(survey.id)
    out: dict[str, Any] = _checked(lambda: robustness(survey, tallies, shift=shift))
    return out


def status_data(request: Request, survey: Survey) -> dict[str, Any]:
    """How respondents come (and the invitations made and redeemed) and the survey's state."""
    from deniable.service.storage.lifecycle import survey_summaries

    found = next((s for s in survey_summaries(request.app.state.store) if s.id == survey.id), None)
    return {
        "access": survey.respondents,
        "state": state_of(survey),
        "invitations": 0 if found is None else found.invitations,
        "redeemed": 0 if found is None else found.redeemed,
        "respondents": 0 if found is None else found.respondents,
    }


@router.get("/api/surveys/{survey_id}/arrivals", dependencies=_ADMIN, tags=["dashboard"])
def arrivals(
    request: Request, survey_id: str, bucket: Rate = "minute", windows: Windows = None
) -> JSONResponse:
    """Sessions and reports per minute or hour: totals, the baseline (median per window),
    the recent windows, and every burst (at least 5 times the baseline and a Poisson tail
    below 1e-6)."""
    data = arrival_data(request, _survey(request, survey_id), bucket, windows)
    return JSONResponse(data, headers={"Cache-Control": "no-store"})


@router.get("/api/surveys/{survey_id}/robustness", dependencies=_ADMIN, tags=["dashboard"])
def robustness_endpoint(
    request: Request, survey_id: str, shift: Shift = DEFAULT_SHIFT
) -> JSONResponse:
    """Per question and estimated share, the fake respondents needed to move the estimate
    by ``shift`` up or down, choosing their answers (input) or their reports (output)."""
    data = robustness_data(request, _survey(request, survey_id), shift)
    return JSONResponse(data, headers={"Cache-Control": "no-store"})
