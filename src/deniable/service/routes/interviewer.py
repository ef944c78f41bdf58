"""The admin's writes: the interviewer's page and its endpoints (respondents interviewed on
paper or by phone, with coins or dice), and single-use invitations.

=========================================================  ==========  =====================
method, path                                               who         answers
=========================================================  ==========  =====================
``GET /interviewer/{survey_id}``                           anyone      the interviewer's page
``POST /api/surveys/{survey_id}/interviewer``              admin       201, a new respondent
``GET /api/surveys/{survey_id}/protocols``                 admin       coin/dice protocols
``POST /api/surveys/{survey_id}/invitations``              admin       201 ``{"invitations"}``
=========================================================  ==========  =====================

(The page itself holds nothing: what it shows comes from the admin endpoints.)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.types import DecoratedCallable

from deniable.accounting import add_up
from deniable.designs import BinaryDesign
from deniable.mechanisms import CoinProtocol, all_protocols
from deniable.service.core.security import ApiError
from deniable.service.routes.bodies import InterviewerRequest, InvitationRequest
from deniable.service.routes.deps import (
    ADMIN,
    SurveyDep,
    check_open,
    check_report,
    static_page,
    survey_info,
)
from deniable.service.routes.groups import NO_BOUND
from deniable.survey import SurveyQuestion

__all__ = ["protocol_for", "router"]

router = APIRouter()


def _admin_creates(path: str, summary: str) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """The route of an admin's POST that creates something: 201, admin only."""
    return router.post(path, status_code=201, summary=summary, dependencies=ADMIN)


@router.get("/interviewer/{survey_id}", include_in_schema=False)
def interviewer_page(request: Request, survey_id: str) -> HTMLResponse:
    """The interviewer's page (404 for an unknown survey)."""
    survey_info(request, survey_id)
    return static_page("interviewer.html")


@_admin_creates(
    "/api/surveys/{survey_id}/interviewer",
    "Enter one interviewed respondent's reports (paper / phone mode)",
)
def interviewer(request: Request, info: SurveyDep, body: InterviewerRequest) -> dict[str, Any]:
    """Create a respondent and store the reports it made with coins or dice.

    Checked before anything is written: every question exists and appears once, every
    report is in range, and the questions' epsilons add up (rounded upward, as the ledger
    adds them) to at most the cap.
    """
    survey = info.survey
    check_open(survey)
    seen: set[str] = set()
    eps = 0.0
    for i, item in enumerate(body.reports):
        question, k = info.question(item.question, f"reports[{i}].question")
        if question.id in seen:
            raise ApiError(422, f"`reports[{i}].question`: question {question.id!r} given twice")
        seen.add(question.id)
        if question.two_group:  # its group is drawn by the server for a respondent's page
            raise ApiError(
                422,
                f"`reports[{i}].question`: {question.id!r} is a two-group question: it is "
                "answered on the survey page, in the group the server draws, not on paper",
            )
        check_report(question, k, item.report, f"reports[{i}].report")
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


@_admin_creates("/api/surveys/{survey_id}/invitations", "Create single-use invitation tokens")
def invitations(request: Request, info: SurveyDep, body: InvitationRequest) -> dict[str, Any]:
    """``count`` new invitation tokens (shown once; the server keeps only their hashes),
    each with its design attributes if ``attributes`` is given (in the same order)."""
    tokens = request.app.state.store.create_invitations(
        info.survey.id, body.count, attributes=body.attributes, variables=body.variables
    )
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
            f"({question.design.name}, "
            + (NO_BOUND if question.unbounded else f"epsilon {question.epsilon:.4g}")
            + "): do not ask it on "
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
    dependencies=ADMIN,
)
def protocols(info: SurveyDep) -> list[dict[str, Any]]:
    """Per question: the steps a respondent follows with physical coins or dice, when a
    protocol reproduces the question's design exactly (``protocol`` is then its exact
    probabilities), else one step saying it cannot be asked on paper."""
    return [_protocol_entry(q) for q in info.survey.questions]
