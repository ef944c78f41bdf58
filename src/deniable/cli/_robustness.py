"""``--robustness SHIFT`` of `deniable report`: beside every estimate of a survey, how many
fake respondents would move it by ``SHIFT`` (:func:`deniable.estimation.
manipulation_robustness`; docs/robustness.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from deniable.cli._base import fail
from deniable.cli._render import print_table

__all__ = ["RobustnessOpt", "check_shift", "robustness_data", "show_robustness"]

RobustnessOpt = Annotated[
    float | None,
    typer.Option(
        "--robustness",
        metavar="SHIFT",
        help="Also state, for every estimate, how many fake respondents would move it by "
        "SHIFT, in (0, 1] (e.g. 0.05), choosing their answers or their reports.",
        show_default=False,
    ),
]


def check_shift(shift: float | None) -> None:
    """One error line for a shift outside (0, 1]."""
    if shift is not None and not (math.isfinite(shift) and 0 < shift <= 1):
        fail(f"`--robustness` must be a shift in (0, 1] (e.g. 0.05), got {shift!r}.")


def _statements(results: Sequence[Any], shift: float) -> list[tuple[str, Any, str | None]]:
    """``(question, statement or None, why there is none)`` per analysed question."""
    from deniable.estimation import manipulation_robustness

    out: list[tuple[str, Any, str | None]] = []
    for r in results:
        column = str(r.column)
        if r.design.n_groups != 1:
            out.append((column, None, "two-group designs have no robustness statement yet"))
        elif r.tally is None or r.n == 0:
            out.append((column, None, "no reports"))
        else:
            labels = None if r.design.n_truths > 2 else ["prevalence"]
            out.append((column, manipulation_robustness(r.design, r.tally, shift=shift,
                                                        labels=labels), None))  # fmt: skip
    return out


def robustness_data(results: Sequence[Any], shift: float) -> dict[str, Any]:
    """The statements as JSON data: ``{question: statement or {"none": why}}``."""
    return {
        q: (s.to_dict() if s is not None else {"none": why})
        for q, s, why in _statements(results, shift)
    }


def show_robustness(results: Sequence[Any], shift: float) -> None:
    """Print one statement per question (a line for a question without one)."""
    for q, s, why in _statements(results, shift):
        if s is None:
            typer.echo(f"{q}: no robustness statement ({why}).")
            continue
        table = s.table()
        print_table(type(table)(table.columns, table.rows, title=f"{q}: {table.title}",
                                notes=table.notes))  # fmt: skip
