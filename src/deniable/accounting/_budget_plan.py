"""One respondent's budget spent question by question (:func:`budget_plan`, what
``deniable privacy budget`` prints): which questions fit under the cap, what each costs and
what is left."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from deniable.accounting._composition import sequence
from deniable.accounting._ledger import BudgetLedger
from deniable.common import format_epsilon, to_jsonable
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.results import Result, Table

__all__ = ["BudgetPlan", "budget_plan"]


@dataclass(frozen=True)
class BudgetPlan(Result):
    """The questions asked in order under ``cap`` (basic composition, memoized questions
    free when repeated): one dict per question in ``questions`` (``question``,
    ``epsilon``, ``memoized``, ``status`` (``asked``, ``replayed (free)`` or ``refused``),
    ``cost``, ``charged``, ``spent`` and ``remaining`` after it).

    ``close_calls`` names the questions refused only by binary rounding (their cost and
    what was left print alike).
    """

    cap: float
    questions: tuple[dict[str, Any], ...]
    spent: float
    remaining: float
    close_calls: tuple[str, ...] = ()

    @property
    def refused(self) -> list[str]:
        """The questions refused (over the budget)."""
        return [r["question"] for r in self.questions if r["status"] == "refused"]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: ``cap``, ``questions``, ``spent``, ``remaining``, ``refused``."""
        result: dict[str, Any] = to_jsonable(
            {
                "cap": self.cap,
                "questions": self.questions,
                "spent": self.spent,
                "remaining": self.remaining,
                "refused": self.refused,
            }
        )
        return result

    def table(self) -> Table:
        """One row per question: its epsilon, memoized, status, charged, spent and left."""
        rows = [
            (r["question"], format_epsilon(r["epsilon"]), "yes" if r["memoized"] else "",
             r["status"], format_epsilon(r["charged"]) if r["status"] != "refused" else "-",
             format_epsilon(r["spent"]), format_epsilon(r["remaining"]))
            for r in self.questions
        ]  # fmt: skip
        binary = (
            (
                f"Refused by binary rounding ({'; '.join(self.close_calls)}): decimal ε's are "
                "not exact in binary and the sum never passes the cap; give the cap a margin.",
            )
            if self.close_calls
            else ()
        )
        return Table(
            ("question", "ε", "memoized", "status", "charged", "spent", "left"),
            tuple(rows),
            title=f"One respondent's budget: cap ε = {format_epsilon(self.cap)}",
            notes=(
                "Basic composition: the total is the sum of the ε actually spent, whatever the "
                "dependence between the answers. A refused question is skipped and costs "
                "nothing.",
                f"The largest ε the next question may use: {format_epsilon(self.remaining)}.",
                *binary,
            ),
            align="lrrrrrr",
        )


def budget_plan(
    cap: float, questions: Sequence[tuple[str, float]], memoized: Iterable[str] = ()
) -> BudgetPlan:
    """Ask ``questions`` (``(name, epsilon)`` pairs, in order; a name may repeat) of one
    respondent with budget ``cap``: a question that would pass the cap is refused and
    costs nothing; a question in ``memoized`` costs its epsilon the first time and nothing
    when asked again (:class:`BudgetLedger`).

    >>> plan = budget_plan(1.0, [("a", 0.5), ("b", 0.75), ("a", 0.5)], memoized=["a"])
    >>> [r["status"] for r in plan.questions], plan.remaining
    (['asked', 'refused', 'replayed (free)'], 0.5)
    """
    ledger = BudgetLedger(cap=cap, n_respondents=1)
    questions = [_pair(q) for q in sequence("questions", questions, "(name, epsilon) pairs")]
    memo = set(sequence("memoized", memoized, "question names"))
    unknown = sorted(memo - {name for name, _ in questions})
    if unknown:
        raise ParameterError(f"`memoized` names a question that is not asked: {unknown[0]!r}.")
    rows: list[dict[str, Any]] = []
    close_calls: list[str] = []
    for name, eps in questions:
        m = name in memo
        left_before = float(ledger.remaining(0))
        cost = float(ledger.costs([0], name, eps, memoized=m)[0])
        ok = bool(ledger.can_afford([0], name, eps, memoized=m)[0])
        if ok:
            ledger.spend([0], name, eps, memoized=m)
        status = "refused" if not ok else "replayed (free)" if m and cost == 0 < eps else "asked"
        if not ok and format_epsilon(cost) == format_epsilon(left_before):
            close_calls.append(f"{name} costs {cost!r} but only {left_before!r} is left")
        rows.append(
            {
                "question": name,
                "epsilon": eps,
                "memoized": m,
                "status": status,
                "cost": cost,
                "charged": cost if ok else 0.0,
                "spent": float(ledger.spent(0)),
                "remaining": float(ledger.remaining(0)),
            }
        )
    return BudgetPlan(
        ledger.cap, tuple(rows), float(ledger.spent(0)), float(ledger.remaining(0)),
        tuple(close_calls),
    )  # fmt: skip


def _pair(question: Any) -> tuple[Any, Any]:
    """A ``(name, epsilon)`` pair (each checked by the ledger)."""
    if (
        isinstance(question, str | bytes)
        or not isinstance(question, Sequence)
        or len(question) != 2
    ):
        raise ParameterTypeError(f"`questions` must hold (name, epsilon) pairs, got {question!r}.")
    return question[0], question[1]
