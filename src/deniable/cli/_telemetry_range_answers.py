"""What ``deniable telemetry aggregate`` answers from the tally of a range mechanism or
Square Wave (``_telemetry_ranges``): the ``--range`` and ``--quantile`` queries, checked
before any report is read, and the table or JSON of the answers with their intervals."""

from __future__ import annotations

import math
from typing import Any

from deniable.cli._base import fail
from deniable.cli._render import emit_json, print_table
from deniable.common import format_epsilon, to_jsonable
from deniable.results import Table

__all__ = ["DEFAULT_QUANTILES", "WAVE", "check_queries", "epsilon_note", "show_ordered"]

WAVE = "square-wave"
#: The quantiles printed when neither ``--range`` nor ``--quantile`` is given.
DEFAULT_QUANTILES = (0.25, 0.5, 0.75)
#: The most ``--range`` and ``--quantile`` options of one ``aggregate``.
MAX_QUERIES = 256
#: The largest domain whose every value's share ``--json`` prints (``leaves``).
MAX_LEAVES = 1 << 16


def epsilon_note(mech: Any) -> str:
    """The note of a mechanism's epsilon under every table."""
    # each device reports once: the largest of the level oracles' exact epsilons (_ranges)
    return (
        f"epsilon {format_epsilon(mech.epsilon)} per device, any change of its value "
        f"(implemented: {format_epsilon(mech.implemented_epsilon)})"
    )


def check_queries(
    mech: Any, what: str, ranges: list[str] | None, quantiles: list[float] | None
) -> tuple[list[tuple[int, int]], list[float]]:
    """The ranges and quantiles asked for, checked before any report is read."""
    if len(ranges or ()) > MAX_QUERIES or len(quantiles or ()) > MAX_QUERIES:
        fail(f"`--range` and `--quantile` may each be given at most {MAX_QUERIES} times.")
    if mech.name == WAVE and ranges:
        fail(
            f"`--range` applies to hierarchical-histogram and haar-hrr reports (values "
            f"0..D-1); {what!r} holds square-wave reports, whose estimate gives the mean and "
            "--quantile."
        )
    pairs = []
    for text in ranges or ():
        lo, colon, hi = text.partition(":")
        try:
            a, b = int(lo), int(hi)
        except ValueError:
            a, b = -1, -1
        if not colon or not 0 <= a <= b < mech.domain:
            fail(
                f"`--range` must be A:B with integers 0 <= A <= B < D = {mech.domain} (the "
                f"domain of {what!r}), got {text!r}."
            )
        pairs.append((a, b))
    qs = list(quantiles or ())
    for q in qs:
        if not (math.isfinite(q) and 0 < q <= 1):
            fail(f"`--quantile` must be in (0, 1], got {q!r}.")
    if not pairs and not qs:
        qs = list(DEFAULT_QUANTILES)
    return pairs, qs


def show_ordered(
    mech: Any, tally: Any, pairs: list[tuple[int, int]], qs: list[float], *, file: str,
    level: float, as_json: bool, bootstrap: tuple[int, int] = (200, 0),
) -> None:  # fmt: skip
    """Estimate ``mech``'s tally (of ``file``) and print the answers to the ranges
    ``pairs`` and quantiles ``qs`` at ``level`` (a table, or JSON); Square Wave's intervals
    from the parametric bootstrap ``bootstrap = (replicates, seed)``."""
    if mech.name == WAVE and int(tally.counts[: mech.output_bins].sum()) == 0:
        fail(f"{file!r} holds no reports: nothing to estimate.")
    head = {"file": file, "mechanism": mech.key, "epsilon": mech.epsilon,
            "implemented_epsilon": mech.implemented_epsilon, "level": level}  # fmt: skip
    if mech.name == WAVE:
        data, table = _wave(mech, tally, qs, level, bootstrap)
    else:
        data, table = _ranges(mech, tally, pairs, qs, level)
    if as_json:
        emit_json(to_jsonable({**head, **data}))
        return
    notes = (*table.notes, epsilon_note(mech))
    print_table(Table(table.columns, table.rows, title=table.title, notes=notes))


def _interval(lo: float, hi: float) -> str:
    return f"[{lo:.6g}, {hi:.6g}]"


def _ranges(
    mech: Any, tally: Any, pairs: list[tuple[int, int]], qs: list[float], level: float
) -> tuple[dict[str, Any], Table]:
    from deniable.oracles import QUANTILE_METHOD

    est = mech.estimate(tally)
    answers = [est.range(a, b) for a, b in pairs]
    found = [est.quantile(q, level) for q in qs]
    rows: list[tuple[Any, ...]] = []
    for ans in answers:
        ci = ans.ci(level)
        rows.append((f"share of [{ans.low}, {ans.high}]", ans.value, ans.se,
                     _interval(ci.low, ci.high)))  # fmt: skip
    for qa in found:
        low, high = int(qa.interval.low), int(qa.interval.high)
        rows.append((f"{qa.q:g}-quantile", qa.value, "", f"[{low}, {high}]"))
    data = {
        "n": est.n, "level_n": list(est.level_n), "method": est.method,
        "ranges": [{**a.to_dict(), "ci": list(a.ci(level))} for a in answers],
        "quantiles": [q.to_dict() for q in found],
        "leaves": est.leaves.tolist() if mech.domain <= MAX_LEAVES else None,
    }  # fmt: skip
    notes = [f"{est.method}; reports per level: {', '.join(str(n) for n in est.level_n)}"]
    if found:
        notes.append(f"quantile intervals: {QUANTILE_METHOD}")
    table = Table(("estimate", "value", "SE", f"{level:.0%} interval"), tuple(rows),
                  title=f"{mech.name} over 0..{mech.domain - 1}, n = {est.n}",
                  notes=tuple(notes))  # fmt: skip
    return data, table


def _wave(
    mech: Any, tally: Any, qs: list[float], level: float, bootstrap: tuple[int, int]
) -> tuple[dict[str, Any], Table]:
    replicates, seed = bootstrap
    est = mech.estimate(tally)
    moment, mean = est.moment_mean, est.mean(replicates=replicates, seed=seed)
    quantiles = [est.quantile(q, replicates=replicates, seed=seed) for q in qs]

    def item(e: Any, method: str) -> dict[str, Any]:
        return {"value": e.value, "se": e.se, "ci": list(e.ci(level, method=method))}

    rows: list[tuple[Any, ...]] = [
        ("mean (moment, unbiased)", moment.value, moment.se,
         _interval(*moment.ci(level))),
        (f"mean ({est.method.upper()})", mean.value, mean.se,
         _interval(*mean.ci(level, method="bootstrap"))),
    ]  # fmt: skip
    for q, e in zip(qs, quantiles, strict=True):
        rows.append((f"{q:g}-quantile", e.value, e.se, _interval(*e.ci(level, method="bootstrap"))))
    data = {
        "n": est.n, "method": est.method, "iterations": est.iterations,
        "converged": est.converged, "replicates": replicates, "seed": seed,
        "moment_mean": item(moment, "wald"),
        "mean": item(mean, "bootstrap"),
        "quantiles": [{"q": q, **item(e, "bootstrap")} for q, e in zip(qs, quantiles,
                                                                        strict=True)],
        "edges": [float(x) for x in est.edges], "shares": list(est.shares),
    }  # fmt: skip
    stop = "converged" if est.converged else f"stopped at max_iter={est.max_iter}"
    notes = (
        f"b = {mech.half_width:.6g}, {mech.bins} bins on [{mech.lower:g}, {mech.upper:g}]; "
        f"{est.method.upper()} {est.iterations} iterations, {stop}",
        "moment mean: Wald interval; EMS mean and quantiles: parametric bootstrap "
        f"({replicates} replicates, seed {seed}), percentile intervals",
    )
    table = Table(("estimate", "value", "SE", f"{level:.0%} interval"), tuple(rows),
                  title=f"{mech.name} distribution, n = {est.n}", notes=notes)  # fmt: skip
    return data, table
