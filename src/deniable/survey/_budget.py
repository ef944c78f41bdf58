"""What a survey costs one respondent: :class:`SurveyBudget`, made by
:meth:`~deniable.survey.Survey.budget`.

A question with a two-group design (``unbounded: true`` in the survey file) has epsilon =
inf: it is listed with epsilon inf and "outside the cap", and the cap, the totals and the
answerable flags are computed over the bounded questions only (``docs/surveys.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deniable.accounting import add_up, compare_composition
from deniable.common import format_epsilon
from deniable.results import Result, Table

__all__ = ["OUTSIDE_CAP", "SurveyBudget", "survey_budget"]

#: How the budget marks a question of unbounded epsilon (a two-group design).
OUTSIDE_CAP = "outside the cap (unbounded, acknowledged)"
#: What the budget says of those questions, once.
_UNBOUNDED_NOTE = (
    "the question(s) {ids} have epsilon = inf (two-group designs, acknowledged with "
    "`unbounded: true`): their answers have no bounded guarantee. The design's randomization "
    "protects them against a casual reader, not in the sense of local differential privacy; "
    "they are outside the cap and the totals above."
)


@dataclass(frozen=True)
class SurveyBudget(Result):
    """What a survey costs one respondent.

    ``epsilons`` per question (``inf`` for an unbounded question); ``basic`` the sum over
    the bounded questions, rounded upward as the ledger adds them (what the cap is compared
    with); ``optimal`` the exact optimal composition of the bounded questions at ``delta``
    (an (epsilon, delta) statement, never above ``basic``); ``answerable`` per question,
    whether a respondent asked the questions in order, each bounded one skipped that would
    pass the cap, gets to answer it (an unbounded question is outside the cap: always);
    ``unbounded`` per question, whether it is outside the cap.
    """

    cap: float
    delta: float
    question_ids: tuple[str, ...]
    epsilons: tuple[float, ...]
    basic: float
    optimal: float
    answerable: tuple[bool, ...]
    unbounded: tuple[bool, ...] = ()

    def _outside(self) -> tuple[bool, ...]:
        return self.unbounded or (False,) * len(self.question_ids)

    @property
    def cap_holds(self) -> bool:
        """True when a respondent can answer every bounded question within the cap."""
        return all(self.answerable)

    def table(self) -> Table:
        rows: list[tuple[str, float | str, float | str, str]] = []
        running = 0.0
        cols = (self.question_ids, self.epsilons, self.answerable, self._outside())
        for qid, eps, ok, out in zip(*cols, strict=True):
            if out:
                rows.append((qid, format_epsilon(eps), "–", f"yes, {OUTSIDE_CAP}"))
                continue
            if ok:
                running = float(add_up(running, eps))
            rows.append((qid, eps, running, "yes" if ok else "no (skipped: past the cap)"))
        verdict = (
            f"the cap {self.cap:g} holds: every respondent can answer every question"
            if self.cap_holds
            else f"the cap {self.cap:g} does not hold: the questions marked 'no' are not shown "
            "to a respondent who answered the ones before"
        )
        notes = [verdict]
        outside = [q for q, o in zip(self.question_ids, self._outside(), strict=True) if o]
        if outside:
            notes.append(_UNBOUNDED_NOTE.format(ids=", ".join(outside)))
        bounded = " of the bounded questions" if outside else ""
        return Table(
            ("question", "epsilon", "spent after it", "asked"),
            tuple(rows),
            title=(
                f"total epsilon{bounded} {self.basic:.6g} by basic composition (what the cap "
                f"is compared with), {self.optimal:.6g} at delta = {self.delta:g} by optimal "
                "composition"
            ),
            notes=tuple(notes),
        )

    def to_dict(self) -> dict[str, Any]:
        questions = []
        cols = (self.question_ids, self.epsilons, self.answerable, self._outside())
        for q, e, a, out in zip(*cols, strict=True):
            entry: dict[str, Any] = {"id": q, "epsilon": "inf" if math.isinf(e) else e,
                                     "answerable": a}  # fmt: skip
            if out:
                entry["unbounded"] = True
                entry["cap"] = OUTSIDE_CAP
            questions.append(entry)
        return {
            "cap": self.cap,
            "delta": self.delta,
            "questions": questions,
            "basic": self.basic,
            "optimal": self.optimal,
            "cap_holds": self.cap_holds,
        }


def survey_budget(
    cap: float,
    delta: float,
    ids: Sequence[str],
    epsilons: Sequence[float],
    unbounded: Sequence[bool],
) -> SurveyBudget:
    """The :class:`SurveyBudget` of questions ``ids`` with ``epsilons``; the ``unbounded``
    ones are outside the cap and the totals."""
    eps = tuple(float(e) for e in epsilons)
    outside = tuple(bool(u) for u in unbounded)
    bounded = [e for e, out in zip(eps, outside, strict=True) if not out]
    basic = 0.0
    for e in bounded:
        basic = float(add_up(basic, e))
    spent = 0.0
    answerable = []
    for e, out in zip(eps, outside, strict=True):
        if out:  # outside the cap: charged nothing, always asked
            answerable.append(True)
            continue
        after = float(add_up(spent, e))
        ok = after <= cap
        answerable.append(ok)
        if ok:
            spent = after
    optimal = float(compare_composition(bounded, delta)["optimal"]) if bounded else 0.0
    return SurveyBudget(
        cap, delta, tuple(ids), eps, basic, min(optimal, basic), tuple(answerable), outside
    )
