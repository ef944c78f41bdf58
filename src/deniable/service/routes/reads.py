"""The analyst's reads, shared by the JSON endpoints and the dashboard's pages: the store's
data turned into the dicts of :mod:`deniable.service.analysis`, with the library's refusals
as HTTP errors (an unknown survey or question is 404, a bad parameter 422), so that a page
and its endpoint show the same numbers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Request

from deniable.designs import Tally
from deniable.exceptions import DataError, DeniableError
from deniable.service import analysis as an
from deniable.service.core.security import ApiError
from deniable.service.storage.exports import arrival_counts
from deniable.service.storage.lifecycle import state_of, survey_summaries
from deniable.survey import Survey

__all__ = [
    "arrival_data",
    "budget_data",
    "checked",
    "design_data",
    "majorities_data",
    "results_data",
    "robustness_data",
    "status_data",
    "store_of",
    "survey_of",
    "tallies_of",
    "timeline_data",
]

T = TypeVar("T")


def store_of(request: Request) -> Any:
    """The app's store."""
    return request.app.state.store


def checked(call: Callable[[], T]) -> T:
    """``call()`` with the library's refusals as HTTP errors: an unknown survey or question
    (DataError) is 404, a bad parameter (level, bucket, offset, bins, shift, windows) 422."""
    try:
        return call()
    except DataError as exc:
        raise ApiError(404, str(exc)) from None
    except DeniableError as exc:
        raise ApiError(422, str(exc)) from None


def survey_of(request: Request, survey_id: str) -> Survey:
    """The survey of the path (404 naming it if unknown)."""
    survey: Survey = checked(lambda: store_of(request).survey(survey_id))
    return survey


def tallies_of(request: Request, survey_id: str) -> dict[str, Tally]:
    """Every question's tally of the stored reports."""
    tallies: dict[str, Tally] = store_of(request).tallies(survey_id)
    return tallies


def results_data(request: Request, survey: Survey, level: float) -> dict[str, Any]:
    """:func:`deniable.service.analysis.results` of the stored reports."""
    tallies = tallies_of(request, survey.id)
    out: dict[str, Any] = checked(lambda: an.results(survey, tallies, level=level))
    return out


def design_data(request: Request, survey: Survey, level: float) -> dict[str, Any] | None:
    """:func:`deniable.service.analysis.design_results` of the stored reports and the
    design attributes of the respondents' invitations (``None`` when none carries any; the
    reports are read only when some do)."""
    store = store_of(request)
    attributes = store.design_attributes(survey.id)
    if not attributes:
        return None
    rows = list(store.export_rows(survey.id))
    out: dict[str, Any] | None = checked(
        lambda: an.design_results(survey, rows, attributes, level=level)
    )
    return out


def timeline_data(
    request: Request, survey: Survey, question_id: str, bucket: str, level: float
) -> dict[str, Any]:
    """:func:`deniable.service.analysis.timeline` of the stored reports (the parameters
    checked before the database is read)."""
    checked(lambda: survey.question(question_id))
    checked(lambda: an.timeline(survey, question_id, [], bucket=bucket, level=level))
    points = store_of(request).timeline(survey.id, question_id, bucket)
    out: dict[str, Any] = checked(
        lambda: an.timeline(survey, question_id, points, bucket=bucket, level=level)
    )
    return out


def budget_data(request: Request, survey: Survey, bins: int = an.DEFAULT_BINS) -> dict[str, Any]:
    """:func:`deniable.service.analysis.budget` of the totals spent."""
    spent = store_of(request).spent(survey.id)
    out: dict[str, Any] = checked(lambda: an.budget(survey, spent, bins=bins))
    return out


def majorities_data(request: Request, survey: Survey, offset: float = 0.0) -> list[dict[str, Any]]:
    """:func:`deniable.service.analysis.majority` of every binary question."""
    tallies = tallies_of(request, survey.id)
    return [
        checked(lambda: an.majority(survey, q.id, tallies.get(q.id), offset=offset))  # noqa: B023
        for q in survey.questions
        if an.is_binary(q)
    ]


def arrival_data(
    request: Request, survey: Survey, bucket: str, windows: int | None = None
) -> dict[str, Any]:
    """:func:`~deniable.service.analysis.arrivals.arrival_rates` of the survey, now."""
    # the parameters checked before the database is read
    checked(lambda: an.arrival_rates(survey.id, {}, {}, bucket=bucket, now=0.0, windows=windows))
    width = an.ARRIVAL_BUCKETS[bucket]
    sessions, reports = arrival_counts(store_of(request), survey.id, width)
    out: dict[str, Any] = an.arrival_rates(
        survey.id, sessions, reports, bucket=bucket, now=time.time(), windows=windows
    )
    return out


def robustness_data(request: Request, survey: Survey, shift: float) -> dict[str, Any]:
    """:func:`~deniable.service.analysis.robustness.robustness` of the survey's tallies."""
    tallies = tallies_of(request, survey.id)
    out: dict[str, Any] = checked(lambda: an.robustness(survey, tallies, shift=shift))
    return out


def status_data(request: Request, survey: Survey) -> dict[str, Any]:
    """How respondents come (and the invitations made and redeemed) and the survey's state."""
    found = next((s for s in survey_summaries(store_of(request)) if s.id == survey.id), None)
    return {
        "access": survey.respondents,
        "state": state_of(survey),
        "invitations": 0 if found is None else found.invitations,
        "redeemed": 0 if found is None else found.redeemed,
        "respondents": 0 if found is None else found.respondents,
    }
