"""Two-group questions on the respondent's side: the group the server drew for the
respondent (sent with the question, never chosen by the browser) and, for a batch, the
check that each report carries it (422 naming the item, nothing stored; a single report is
checked by the store, in the transaction that would store it:
:func:`deniable.service.storage.groups.check_groups`).

A report of a two-group question is ``2 (group - 1) + answer``: the browser randomizes
the answer within the group it is told (``deniable.js``), and a report of the other group,
or of a question whose group the server has not drawn for this respondent, is refused.
Bounded questions never reach these checks (no query is added to their path).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.requests import Request

from deniable.service.analysis import NO_BOUND
from deniable.service.core.security import ApiError
from deniable.service.storage.groups import group_error, group_mismatch
from deniable.survey import Survey, SurveyQuestion

__all__ = ["NO_BOUND", "check_batch_groups", "question_guarantee"]


def question_guarantee(question: SurveyQuestion) -> dict[str, Any]:
    """The epsilon fields of a question as the respondent's JSON carries them: the exact
    epsilon, or for an unbounded question ``"inf"`` with ``unbounded`` and ``guarantee``."""
    if question.unbounded:
        return {"epsilon": "inf", "unbounded": True, "guarantee": NO_BOUND}
    return {"epsilon": question.epsilon}


def check_batch_groups(
    request: Request, survey: Survey, items: Sequence[tuple[int, str, int]]
) -> None:
    """422 naming the first item (``reports[i].report``) of a two-group question whose
    report does not carry its respondent's group (blocking: called in a thread)."""
    two = {q.id for q in survey.questions if q.two_group}
    picked = [i for i, (_, qid, _) in enumerate(items) if qid in two]
    if not picked:
        return
    store = request.app.state.store
    assigned = store.groups_of(survey.id, [(items[i][0], items[i][1]) for i in picked])
    bad = group_mismatch(survey, [(items[i][1], items[i][2]) for i in picked], assigned)
    if bad is not None:
        i = picked[bad]
        _, qid, report = items[i]
        raise ApiError(422, group_error(f"reports[{i}].report", qid, assigned[bad], report))
