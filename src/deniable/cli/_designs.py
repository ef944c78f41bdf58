"""`deniable designs` and `deniable estimate`: the catalogue and estimation from counts."""

from __future__ import annotations

import inspect
import math
from typing import Annotated, Any

import numpy as np
import typer
from rich import box
from rich.table import Table
from rich.text import Text

from deniable.cli._base import (
    app,
    build_design,
    console,
    emit_json,
    fail,
    fmt_epsilon,
    fmt_interval,
    fmt_num,
    fmt_params,
    fmt_probabilities,
    kv_table,
)
from deniable.cli._data import gather_tally, gather_two_group_tally
from deniable.cli._twogroup import (
    two_group_designs_table,
    two_group_exact_lines,
    two_group_payload,
    two_group_rows,
    two_group_table,
)
from deniable.common import _validation as v
from deniable.designs import (
    DESIGNS,
    TWO_GROUP_DESIGNS,
    BinaryDesign,
    Categorical,
    CategoricalEstimate,
    Design,
    Kuk,
    Tally,
    TwoGroupDesign,
    design_parameters,
    make_design,
)
from deniable.results import Estimate

#: An example parameterisation per design for `deniable designs` (defaults fill the rest).
EXAMPLES: dict[str, dict[str, str]] = {
    "warner": {"p": "0.75"},
    "mirrored": {"p": "0.75"},
    "two-coin": {},
    "biased-coin": {"q": "0.25"},
    "binary": {"epsilon": "1"},
    "forced": {"forced_yes": "0.25", "forced_no": "0.25"},
    "unrelated": {"p": "0.7", "q": "0.5"},
    "kuk": {"theta1": "0.7", "theta2": "0.3"},
    "mangat": {"p": "0.7"},
    "crosswise": {"p": "0.25"},
    "triangular": {"p": "0.25"},
    "custom": {"p_yes_given_1": "0.8", "p_yes_given_0": "0.3"},
    "categorical": {"k": "4", "p_truthful": "0.5"},
    "unrelated-unknown": {"p1": "0.7", "p2": "0.3"},
    "cdm": {"forced_yes1": "0.2", "forced_yes2": "0.6"},
    "cdm-symmetric": {
        "forced_yes1": "0.1",
        "forced_no1": "0.1",
        "forced_yes2": "0.3",
        "forced_no2": "0.1",
    },
    "sld": {"p1": "2/12", "p2": "10/12"},
}

DesignArg = Annotated[
    str, typer.Argument(help="Design name (see `deniable designs`).", show_default=False)
]
ParamOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--param",
        "-p",
        metavar="NAME=VALUE",
        help="A design parameter, repeatable (e.g. --param p=0.75; 3/4 and a,b,c lists work).",
    ),
]
LevelOpt = Annotated[float, typer.Option("--level", help="Confidence level of the intervals.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON to stdout instead of a table.")]


def design_channel_fields(design: Design) -> dict[str, Any]:
    """``p_yes_given_1``, ``p_yes_given_0`` (per report or per draw) and ``epsilon``."""
    out: dict[str, Any] = {"design": design.name, "parameters": design.parameters()}
    if isinstance(design, BinaryDesign | Kuk):  # Kuk: per card drawn
        out["p_yes_given_1"] = design.p_yes_given_1
        out["p_yes_given_0"] = design.p_yes_given_0
    elif isinstance(design, Categorical):  # the channel's diagonal, without the k x k matrix
        t = design.p_truthful
        diagonal = t + (1 - t) * design.forced_distribution
        out["p_report_true"] = [float(x) for x in diagonal]
    out["epsilon"] = design.epsilon
    return out


def epsilon_note(eps: float) -> str:
    """ε for people: ``∞ (some report reveals the answer)`` or the value with its ratio."""
    if math.isinf(eps):
        return "∞ (some report reveals the true answer: no finite privacy guarantee)"
    if eps < 1e-3:  # e^eps to 4 digits would read "1x"
        ratio = f"(1 + {math.expm1(eps):.3g})"
    elif eps < 700:
        ratio = f"{math.exp(eps):.4g}"
    else:  # e^eps overflows a float
        ratio = f"e^{eps:.4g} "
    return f"{fmt_epsilon(eps)} (one report changes the odds of any answer by at most {ratio}x)"


# --------------------------------------------------------------------------- designs


def _param_lines(name: str) -> str:
    """One parameter a line: ``p=0.75`` (example value) or ``draws=1*`` (default)."""
    example = EXAMPLES.get(name, {})
    parts = []
    for pname, p in design_parameters(name).items():
        if pname in example:
            parts.append(f"{pname}={example[pname]}")
        elif p.default is inspect.Parameter.empty:
            parts.append(pname)
        else:
            parts.append(f"{pname}={p.default}*")
    return "\n".join(parts) or "(none)"


def _example(name: str) -> tuple[dict[str, str], Design | None]:
    params = EXAMPLES.get(name, {})
    try:
        return params, make_design(name, params)
    except (ValueError, TypeError):  # a design added without an example here
        return params, None


def _design_row(name: str, cls: type[Design]) -> tuple[dict[str, Any], Design | None]:
    params, d = _example(name)
    row: dict[str, Any] = {
        "name": name,
        "summary": (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " "),
        "parameters": {
            k: (None if p.default is inspect.Parameter.empty else p.default)
            for k, p in design_parameters(name).items()
        },
        "required": [
            k for k, p in design_parameters(name).items() if p.default is inspect.Parameter.empty
        ],
        "example": params,
    }
    if d is not None:
        channel = design_channel_fields(d)
        row["example_parameters"] = channel.pop("parameters")
        channel.pop("design")
        row.update(channel)
    return row, d


@app.command("designs")
def designs_command(as_json: JsonOpt = False) -> None:
    """List every design: parameters, its channel at an example setting, and ε."""
    rows = [_design_row(name, cls) for name, cls in DESIGNS.items()]
    two_group = []
    for name, cls in TWO_GROUP_DESIGNS.items():
        row, d = _design_row(name, cls)
        row["groups"] = 2
        row["estimates"] = list(cls.estimated)
        two_group.append((row, d))
    if as_json:
        emit_json(
            {
                "designs": [row for row, _ in rows],
                "two_group_designs": [row for row, _ in two_group],
            }
        )
        return
    table = Table(
        title="Designs: channel and ε at the example setting",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for col in ("design", "parameters (example)", "P(yes|1)", "P(yes|0)", "ε"):
        right = col.startswith(("P(", "ε"))
        table.add_column(col, justify="right" if right else "left", no_wrap=True)
    for row, d in rows:
        p1 = p0 = "-"
        if isinstance(d, BinaryDesign | Kuk):
            p1, p0 = fmt_num(d.p_yes_given_1), fmt_num(d.p_yes_given_0)
        elif isinstance(d, Categorical):
            ch = np.asarray(d.channel)
            p1, p0 = f"{fmt_num(float(ch[0, 0]))}†", f"{fmt_num(float(ch[1, 0]))}†"
        eps = "-" if d is None else fmt_epsilon(d.epsilon)
        table.add_row(Text(row["name"]), Text(_param_lines(row["name"])), p1, p0, eps)
    out = console()
    out.print(table)
    out.print(
        Text(
            "* a default value.  † categorical: P(report = the true category), P(report = one "
            "given other category).\n∞: some report can only come from one answer (no finite "
            "guarantee).  kuk: per card drawn; with d draws ε is d times larger."
        )
    )
    out.print(two_group_designs_table(two_group, _param_lines))
    out.print(
        Text(
            "Estimate with --yes Y1,Y2 --n N1,N2.  ε counts every kind of respondent (a "
            "cheater, a lying carrier, the answer to the unrelated question): all are ∞."
        )
    )


# --------------------------------------------------------------------------- estimate


def estimate_payload(design: Design, tally: Tally, est: Estimate, level: float) -> dict[str, Any]:
    """The JSON fields of `deniable estimate` for a binary (or Kuk) design."""
    out = design_channel_fields(design)
    out["n"] = tally.n
    if len(tally.counts) == 2:
        out["yes"] = tally.yes
    else:
        out["counts"] = tally.counts.tolist()
    out.update(est.to_dict(level))
    out["n"] = tally.n
    return out


def categorical_payload(
    design: Categorical, est: CategoricalEstimate, level: float
) -> dict[str, Any]:
    """The JSON fields of `deniable estimate` for the categorical design."""
    out = design_channel_fields(design)
    out.update(est.to_dict(level))
    out["counts"] = est.tally.counts.tolist()
    out["lambda_hat"] = [c / est.n for c in est.tally.counts.tolist()]
    cov = est.covariance_unbiased
    out["se_unbiased"] = [float(x) for x in (cov if cov.ndim == 1 else cov.diagonal()) ** 0.5]
    out["categories"] = []
    for j in range(design.k):
        cat = est.category(j)
        row = cat.to_dict(level)
        t = design.p_truthful
        p1 = t + (1 - t) * float(design.forced_distribution[j])
        row["p_yes_given_1"], row["p_yes_given_0"] = p1, p1 - t
        out["categories"].append(row)
    return out


def estimate_rows(
    design: Design, tally: Tally, est: Estimate, level: float
) -> list[tuple[str, str]]:
    """Labelled rows for the human-readable estimate table."""
    rows = [("design", f"{design.name} ({fmt_params(design.parameters())})")]
    if isinstance(design, BinaryDesign | Kuk):
        per = " per card" if design.n_reports > 2 else ""
        shown = fmt_probabilities(design.p_yes_given_1, design.p_yes_given_0)
        rows.append((f"P(yes | 1), P(yes | 0){per}", ", ".join(shown)))
    rows.append(("ε", epsilon_note(design.epsilon)))
    if len(tally.counts) == 2:
        rows.append(("yes / n", f"{tally.yes} / {tally.n}"))
    else:
        rows.append(("counts / n", f"{','.join(map(str, tally.counts.tolist()))} / {tally.n}"))
    if est.lambda_hat is not None:
        label = "share of yes reports" if len(tally.counts) == 2 else "red share of cards"
        rows.append((label, fmt_num(est.lambda_hat, 6)))
    if est.method == "moment":
        rows.append(("estimate (unbiased moment)", fmt_num(est.value, 6)))
        rows.append(("estimate (bounded MLE, in [0, 1])", fmt_num(est.bounded, 6)))
    else:
        rows.append((f"estimate ({est.method})", fmt_num(est.value, 6)))
    rows.append((f"SE ({est.se_convention})", fmt_num(est.se, 6)))
    if est.method == "mle" and math.isnan(est.se_unbiased):
        unbiased = "n/a (the MLE's observed-information SE has no n − 1 version)"
    else:
        unbiased = fmt_num(est.se_unbiased, 6)
    rows.append(("SE (unbiased: divides by n - 1)", unbiased))
    for m in est.interval_methods:
        rows.append((f"{level:.0%} CI ({m})", fmt_interval(est.ci(level, m), 6)))
    rows.extend(("note", text) for text in est.notes_at(level))
    return rows


def categorical_table(design: Categorical, est: CategoricalEstimate, level: float) -> Table:
    table = Table(
        caption="estimate: unbiased (may leave [0, 1]); MLE: on the simplex; SE: plug-in (n)",
        caption_justify="left",
    )
    for col in ("category", "reports", "estimate", "MLE", "SE", f"{level:.0%} CI (exact)"):
        table.add_column(col, justify="right")
    ci = est.ci(level, "exact")
    for j in range(design.k):
        table.add_row(
            str(j),
            str(est.tally.counts[j]),
            fmt_num(float(est.values[j]), 6),
            fmt_num(float(est.bounded[j]), 6),
            fmt_num(float(est.se[j]), 6),
            Text(fmt_interval(ci[j], 6)),
        )
    return table


def run_estimate(
    design: Design, tally: Tally, method: str | None
) -> Estimate | CategoricalEstimate:
    """Estimate with the right call for the design (``method`` for Kuk only)."""
    if isinstance(design, Kuk):
        return design.estimate(tally, method=method or "moment")
    if method is not None:
        fail(
            f"`--method` applies to the kuk design only (design {design.name!r} has one "
            f"estimator), got {method!r}."
        )
    result: Estimate | CategoricalEstimate = design.estimate(tally)
    return result


@app.command("estimate")
def estimate_command(
    design: DesignArg,
    param: ParamOpt = None,
    yes: Annotated[
        str | None,
        typer.Option(
            "--yes", metavar="Y[,Y2]", help="Number of yes reports (Y1,Y2: one per group)."
        ),
    ] = None,
    n: Annotated[
        str | None,
        typer.Option(
            "--n", "-n", metavar="N[,N2]", help="Number of reports (N1,N2: one per group)."
        ),
    ] = None,
    reports: Annotated[
        str | None,
        typer.Option(
            "--reports",
            metavar="FILE",
            help="File of reports: one per line, no header (or a CSV with a header: --column).",
        ),
    ] = None,
    column: Annotated[
        str | None,
        typer.Option("--column", help="--reports: the file has a header; read this column."),
    ] = None,
    counts: Annotated[
        str | None,
        typer.Option(
            "--counts",
            metavar="C0,C1,...",
            help="Count of each report value (kuk with draws > 1, categorical; or no,yes; "
            "two-group designs: no1,yes1,no2,yes2).",
        ),
    ] = None,
    method: Annotated[
        str | None, typer.Option("--method", help="kuk only: moment (default) or mle.")
    ] = None,
    missing: Annotated[
        str,
        typer.Option("--missing", help="--reports: missing reports are drop (default) or error."),
    ] = "drop",
    level: LevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """Estimate the prevalence from randomized reports: estimate, both SEs, intervals."""
    d = build_design(design, param)
    lvl = v.level(level)
    if isinstance(d, TwoGroupDesign):
        if method is not None:
            fail(f"`--method` applies to the kuk design only, got {method!r}.")
        result = d.estimate(
            gather_two_group_tally(d, yes=yes, n=n, reports=reports, column=column, counts=counts)
        )
        if as_json:
            emit_json(two_group_payload(d, result, lvl, design_channel_fields(d)))
            return
        out = console()
        rows = two_group_rows(d, result, epsilon_note(d.epsilon))
        out.print(kv_table(rows, title="Two-group estimate"))
        out.print(two_group_table(result, lvl))
        for line in two_group_exact_lines(result, lvl):
            out.print(Text(line))
        return
    v.choice("--missing", missing, ("drop", "error"))
    tally, dropped = gather_tally(d, yes=yes, n=n, reports=reports, column=column,
                                  counts=counts, missing=missing, show=not as_json)  # fmt: skip
    extra = {} if dropped is None else {"missing": dropped}  # reports left out (--reports)
    est = run_estimate(d, tally, method)
    out = console()
    if isinstance(est, CategoricalEstimate):
        assert isinstance(d, Categorical)
        if as_json:
            emit_json({**categorical_payload(d, est, lvl), **extra})
            return
        rows = [
            ("design", f"{d.name} ({fmt_params(d.parameters())})"),
            ("ε", epsilon_note(d.epsilon)),
            ("n", str(est.n)),
            *(("missing reports (dropped)", str(x)) for x in extra.values()),
        ]
        out.print(kv_table(rows))
        out.print(categorical_table(d, est, lvl))
        return
    if as_json:
        emit_json({**estimate_payload(d, tally, est, lvl), **extra})
        return
    rows = estimate_rows(d, tally, est, lvl)
    at = next((i + 1 for i, (k, _) in enumerate(rows) if k.endswith("/ n")), len(rows))
    rows[at:at] = [("missing reports (dropped)", str(x)) for x in extra.values()]
    out.print(kv_table(rows, title="Prevalence estimate"))
