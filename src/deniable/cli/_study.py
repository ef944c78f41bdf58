"""`deniable simulation-study`: repeat a simulated survey and summarise the estimator
(:func:`~deniable.simulation.simulation_study`), with a progress bar on stderr."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from deniable.cli._base import (
    app,
    build_design,
    console,
    emit_json,
    fail,
    fmt_num,
    fmt_params,
    kv_table,
    parse_number,
)
from deniable.cli._decisions import (
    CheatingOpt,
    GroupShareOpt,
    HonestyOpt,
    NonComplianceOpt,
    UnrelatedOpt,
    two_group_keywords,
)
from deniable.cli._designs import DesignArg, JsonOpt, LevelOpt, ParamOpt, epsilon_note

__all__ = ["simulation_study_command"]


@app.command("simulation-study")
def simulation_study_command(
    design: DesignArg,
    param: ParamOpt = None,
    n: Annotated[int | None, typer.Option("--n", "-n", help="Respondents per survey.")] = None,
    prevalence: Annotated[str | None, typer.Option("--prevalence", help="True prevalence.")] = None,
    replications: Annotated[
        int, typer.Option("--replications", "-r", help="Number of simulated surveys.")
    ] = 1000,
    seed: Annotated[
        int | None, typer.Option("--seed", min=0, help="Seed (default: fresh, printed).")
    ] = None,
    non_compliance: NonComplianceOpt = "0",
    group_share: GroupShareOpt = None,
    unrelated_prevalence: UnrelatedOpt = None,
    cheating: CheatingOpt = None,
    honesty: HonestyOpt = None,
    null: Annotated[
        str | None, typer.Option("--null", help="Also give the rejection rate of H0: π = NULL.")
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            "--method", help="binomial (draw yes counts; default) or respondents (simulate each)."
        ),
    ] = "binomial",
    level: LevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """Repeat a simulated survey: bias, SEs, RMSE, interval coverage (and power).

    A progress bar runs on stderr when it is a terminal (never with --json).
    """
    from deniable.simulation import TwoGroupSimulationStudy, simulation_study

    d = build_design(design, param)
    if n is None:
        fail("`--n` (respondents per survey) is required.")
    if prevalence is None:
        fail("`--prevalence` is required.")
    pi = parse_number("--prevalence", prevalence)
    s = parse_number("--non-compliance", non_compliance)
    pi0 = None if null is None else parse_number("--null", null)
    extra = two_group_keywords(group_share, unrelated_prevalence, cheating, honesty)
    err = Console(stderr=True)
    bar = Progress(
        TextColumn("simulating"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=as_json or not err.is_terminal,
    )
    task: list[TaskID] = []

    def step(done: int, total: int) -> None:
        # started at the first finished block: bad input fails before anything is drawn
        if not task:
            bar.start()
            task.append(bar.add_task("surveys", total=total))
        bar.update(task[0], completed=done)

    try:
        st = simulation_study(
            d, n, pi, replications=replications, seed=seed, non_compliance=s, level=level,
            null=pi0, method=method, progress=step, **extra,
        )  # fmt: skip
    finally:
        if task:
            bar.stop()
    if as_json:
        emit_json(st.to_dict())
        return
    if isinstance(st, TwoGroupSimulationStudy):
        _two_group_study_output(st)
        return
    mc = st.mc_se_coverage
    rows = [
        ("design", f"{d.name} ({fmt_params(d.parameters())})"),
        ("ε", epsilon_note(d.epsilon)),
        ("n, replications, seed", f"{st.n}, {st.replications}, {st.seed}"),
        ("prevalence, non-compliance", f"{st.prevalence:g}, {st.non_compliance:g}"),
        ("expected estimate (closed form)", fmt_num(st.expected_estimate, 6)),
        ("bias (± Monte Carlo SE)", f"{st.bias:+.6f} ± {st.mc_se_bias:.6f}"),
        ("empirical SE (true SE)", f"{fmt_num(st.empirical_se, 6)} ({fmt_num(st.true_se, 6)})"),
        ("mean estimated SE (plug-in)", fmt_num(st.mean_se, 6)),
        ("RMSE", fmt_num(st.rmse, 6)),
        (f"coverage of {st.level:.0%} exact CI",
         f"{st.coverage_exact:.4f} ± {mc(st.coverage_exact):.4f}"),
        (f"coverage of {st.level:.0%} Wald CI",
         f"{st.coverage_wald:.4f} ± {mc(st.coverage_wald):.4f}"),
    ]  # fmt: skip
    if st.null is not None:
        assert st.rejection_exact is not None and st.rejection_wald is not None
        rows.append(
            (
                f"rejects π = {st.null:g} at {1 - st.level:.0%} (exact / Wald)",
                f"{st.rejection_exact:.4f} / {st.rejection_wald:.4f}",
            )
        )
    method_note = (
        "yes counts drawn from Binomial(n, λ)" if st.method == "binomial" else "every respondent"
    )
    rows.append(("simulated", method_note))
    console().print(kv_table(rows, title="Simulation study"))


def _two_group_study_output(st: Any) -> None:
    """`deniable simulation-study` for a two-group design: the setting, one row a parameter."""
    d = st.design
    (n1, n2), (l1, l2) = st.group_sizes, st.yes_probabilities
    rows = [
        ("design", f"{d.name} ({fmt_params(d.parameters())})"),
        ("ε", epsilon_note(d.epsilon)),
        ("n (n1 + n2), replications, seed",
         f"{st.n} ({n1} + {n2}), {st.replications}, {st.seed}"),
        (f"prevalence, {st.latent}, non-compliance",
         f"{st.prevalence:g}, {st.latent_value:g}, {st.non_compliance:g}"),
        ("P(yes) in group 1, group 2", f"{fmt_num(l1, 6)}, {fmt_num(l2, 6)}"),
    ]  # fmt: skip
    if st.null is not None:
        rows.append((f"rejects π = {st.null:g} at {1 - st.level:.0%} (Wald)",
                     fmt_num(st.rejection_wald)))  # fmt: skip
    method = "yes counts drawn from Binomial(n_g, λ_g)" if st.method == "binomial" else (
        "every respondent")  # fmt: skip
    rows.append(("simulated", method))
    out = console()
    out.print(kv_table(rows, title="Simulation study (two groups)"))
    ps = list(st.parameters.values())
    table = Table(
        caption="truth: population value"
        + (" (prevalence: honest carriers)" if "cheating" in st.parameters else "")
        + "; SE: delta method, plug-in (n_g); * large-n limit (not "
        "linear in the group shares)",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("")
    for p in ps:
        table.add_column(p.parameter, justify="right")
    lines = [
        ("truth", [fmt_num(p.truth, 6) for p in ps]),
        ("expected (closed form)",
         [fmt_num(p.expected, 6) + ("" if p.expected_exact else "*") for p in ps]),
        ("bias ± MC SE", [f"{p.bias:+.5f} ± {p.mc_se_bias:.5f}" for p in ps]),
        ("empirical SE (true)",
         [f"{fmt_num(p.empirical_se, 5)} ({fmt_num(p.true_se, 5)})" for p in ps]),
        ("mean estimated SE", [fmt_num(p.mean_se, 5) for p in ps]),
        ("RMSE", [fmt_num(p.rmse, 5) for p in ps]),
        (f"{st.level:.0%} Wald coverage",
         [f"{p.coverage_wald:.4f} ± {p.mc_se_coverage:.4f}" for p in ps]),
    ]  # fmt: skip
    if any(p.undefined for p in ps):
        lines.append(("undefined estimates (left out)", [str(p.undefined) for p in ps]))
    for label, cells in lines:
        table.add_row(Text(label), *cells)
    out.print(table)
