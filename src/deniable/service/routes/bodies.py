"""The bodies the JSON API takes: strict pydantic models (no extra field, no coercion: a
``"1"`` is not a report), whose JSON schemas are the OpenAPI request bodies."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BatchItem",
    "BatchRequest",
    "InterviewerItem",
    "InterviewerRequest",
    "InvitationRequest",
    "ReportRequest",
    "SessionRequest",
]


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


#: An attribute's name, and a raking variable's (``storage/attributes.py`` has the rules).
_Name = Annotated[str, Field(min_length=1, max_length=32)]
#: An attribute's value: a text (stratum, PSU, a raking variable's level) or the weight.
_Value = Annotated[str, Field(max_length=64)] | int | float


class InvitationRequest(_Strict):
    """How many single-use invitation tokens to create and, optionally, the non-sensitive
    design attributes of each (``attributes``, one object per invitation, in the order of
    the tokens returned: ``stratum``, ``psu``, ``weight`` and the raking variables declared
    in ``variables``)."""

    count: Annotated[int, Field(ge=1, le=10_000)]
    attributes: Annotated[
        list[Annotated[dict[_Name, _Value], Field(max_length=11)]] | None,
        Field(max_length=10_000),
    ] = None
    variables: Annotated[list[_Name], Field(max_length=8)] = []
