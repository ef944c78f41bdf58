"""Output of `deniable designs` and `deniable estimate` for the two-group designs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from deniable.cli._base import fmt_epsilon, fmt_interval, fmt_num, fmt_params
from deniable.designs import Design, TwoGroupDesign, TwoGroupEstimate

__all__ = [
    "two_group_designs_table",
    "two_group_exact_lines",
    "two_group_payload",
    "two_group_rows",
    "two_group_table",
]


def two_group_designs_table(
    rows: Sequence[tuple[dict[str, Any], Design | None]], param_lines: Callable[[str], str]
) -> Table:
    """`deniable designs`: the two-group designs, their example parameters, estimates, ε."""
    table = Table(
        title="Two-group designs (respondents split at random into groups 1 and 2)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for col in ("design", "parameters (example)", "estimates", "ε"):
        table.add_column(col, justify="right" if col == "ε" else "left", no_wrap=True)
    for row, d in rows:
        eps = "-" if d is None else fmt_epsilon(d.epsilon)
        table.add_row(
            Text(row["name"]),
            Text(param_lines(row["name"])),
            Text("\n".join(row.get("estimates", []))),
            eps,
        )
    return table


def two_group_payload(
    design: TwoGroupDesign, est: TwoGroupEstimate, level: float, fields: dict[str, Any]
) -> dict[str, Any]:
    """The JSON fields of `deniable estimate` for a two-group design (after ``fields``:
    design, parameters, epsilon)."""
    out = dict(fields)
    body = est.to_dict(level)
    body.pop("design")
    body.pop("parameters")
    out.update(body)
    out["yes"] = list(est.yes_counts)
    out["n"] = list(est.n_counts)
    out["lambda_hat"] = list(est.lambda_hat)
    out["n_total"] = est.tally.n
    return out


def two_group_rows(
    design: TwoGroupDesign, est: TwoGroupEstimate, epsilon_text: str
) -> list[tuple[str, str]]:
    """Labelled rows (design, ε, groups) above the two-group estimate table."""
    rows = [
        ("design", f"{design.name} ({fmt_params(design.parameters())})"),
        ("ε", epsilon_text),
    ]
    for g in (0, 1):
        y, n = est.yes_counts[g], est.n_counts[g]
        rows.append((f"group {g + 1}: yes / n", f"{y} / {n}  (share {fmt_num(est.lambda_hat[g])})"))
    return rows


def two_group_table(est: TwoGroupEstimate, level: float) -> Table:
    """One row per parameter: moment estimate, bounded MLE, both SEs, Wald interval."""
    table = Table(
        caption="estimate: moment (may leave [0, 1]); MLE: bounded to the parameter space; "
        "SE: delta method, plug-in (n_g) and unbiased (n_g - 1)",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for col in ("parameter", "estimate", "MLE", "SE", "SE n-1", f"{level:.0%} CI (Wald)"):
        table.add_column(
            col, justify="left" if col == "parameter" else "right", no_wrap=not col[0].isdigit()
        )
    for name, e in est.estimates.items():
        table.add_row(Text(name), fmt_num(e.value), fmt_num(e.bounded), fmt_num(e.se),
                      fmt_num(e.se_unbiased), Text(fmt_interval(e.ci(level, "wald"))))  # fmt: skip
    return table


def two_group_exact_lines(est: TwoGroupEstimate, level: float) -> list[str]:
    """Exact intervals, for the parameters one group's share of "yes" determines alone."""
    return [
        f"{level:.0%} CI (exact, from one group's share) for {name}: "
        f"{fmt_interval(e.ci(level, 'exact'))}"
        for name, e in est.estimates.items()
        if "exact" in e.intervals
    ]
