"""Raking the respondents' design weights to the population margins of the survey file's
``weighting`` field (:class:`deniable.survey.SurveyWeighting`), for the dashboard's raked
estimates (:func:`deniable.service.analysis.design_results`).

The weights are raked by :func:`deniable.sampling.rake_weights` (iterative proportional
fitting, Deming & Stephan 1940; the tolerance and iteration limit of ``deniable weight``),
from the invitations' design weights or 1, then trimmed by
:func:`deniable.sampling.trim_weights` if the file gives ``trim``.  Untrimmed, the design
is :func:`deniable.sampling.rake` of the sample design, the same weights, which remembers
the margins so that the Taylor variance treats their totals as known (R's ``rake`` then
``svymean``).  A raking that does not converge, a margin level no respondent has or a
respondent's level the margins do not give is an ``error`` (no raked estimate at all:
never the unraked numbers in their place).  Respondents whose invitation lacks a raking
variable are counted and left out.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DeniableError
from deniable.sampling import SampleDesign, kish_deff, rake, rake_weights, trim_weights
from deniable.survey import SurveyWeighting

__all__ = ["RakedSample", "rake_sample"]

#: Raking stops when every margin is within this (relative) of its target: as ``deniable
#: weight`` (``deniable.survey.weight_frame``) rakes, so that the export reproduces it.
TOLERANCE = 1e-8
#: The most raking sweeps before the raking is reported as not converged.
MAX_ITERATIONS = 100


@dataclass(frozen=True)
class RakedSample:
    """The raking's report (``info``: the ``raking`` entry of the design JSON), the mask of
    the rows raked (those whose attributes hold every raking variable) and the raked design
    (``None`` with ``info["error"]`` when raking failed)."""

    info: dict[str, Any]
    rows: npt.NDArray[np.bool_]
    design: SampleDesign | None


def rake_sample(
    weighting: SurveyWeighting,
    attrs: Sequence[Mapping[str, Any]],
    parts: Mapping[str, Any],
    *,
    min_cell: int,
    empty: str = "no respondent to rake",
) -> RakedSample:
    """Rake the rows' design (``parts``: the ``weights``, ``strata`` and ``psu`` arrays of
    :class:`~deniable.sampling.SampleDesign`, any absent) to ``weighting``'s margins, from
    each row's attributes (``attrs``).  A cell of the margins' table with fewer than
    ``min_cell`` respondents shows no count; without rows, ``empty`` is the error."""
    variables = weighting.variables
    info: dict[str, Any] = {
        "variables": list(variables), "kind": weighting.kind,
        "trim": None if weighting.trim is None else list(weighting.trim),
        "margins": weighting.targets, "n": 0, "without_variables": 0, "iterations": None,
        "converged": None, "max_error": None, "deff_weights": None, "cells": [],
        "error": None, "notes": [],
    }  # fmt: skip
    if not attrs:
        info["error"] = empty
        return RakedSample(info, np.zeros(0, dtype=np.bool_), None)
    carried = sorted({k for a in attrs for k in a})
    absent = [v for v in variables if not any(v in a for a in attrs)]
    keep = np.array([all(v in a for v in variables) for a in attrs], dtype=np.bool_)
    if absent:
        info["error"] = (
            f"the survey's `weighting.margins` rakes to {', '.join(map(repr, absent))}, which "
            f"no respondent's invitation carries (they carry: {', '.join(carried) or 'none'}): "
            "invite with that raking variable, or drop it from the margins."
        )
        return RakedSample(info, keep, None)
    info["n"], info["without_variables"] = int(keep.sum()), int((~keep).sum())
    rows = [a for a, k in zip(attrs, keep, strict=True) if k]
    labels = {v: np.array([str(a[v]) for a in rows], dtype=object) for v in variables}
    targets = weighting.targets
    info["cells"] = _cells(labels, targets, min_cell)
    problem = _mismatch(labels, targets, min_cell)
    if problem is not None:
        info["error"] = problem
        return RakedSample(info, keep, None)
    sub = {k: np.asarray(x)[keep] for k, x in parts.items()}
    base = sub.pop("weights", np.ones(len(rows)))
    margins = {v: (labels[v], targets[v]) for v in variables}
    try:
        fit = rake_weights(base, margins, tolerance=TOLERANCE, max_iterations=MAX_ITERATIONS)
    except DeniableError as exc:
        info["error"] = f"raking failed: {exc}"
        return RakedSample(info, keep, None)
    info.update(iterations=fit.iterations, converged=fit.converged, max_error=fit.max_error)
    if not fit.converged:
        info["error"] = (
            f"raking did not converge: after {fit.iterations} iterations a margin is still "
            f"{fit.max_error:.3g} (relative) from its target, above the tolerance "
            f"{TOLERANCE:g}; check that the margins are consistent with each other and with "
            "the sample (no raked estimate is shown)."
        )
        return RakedSample(info, keep, None)
    try:
        design = _design(weighting, base, fit.weights, sub, margins, info)
    except DeniableError as exc:
        info["error"] = f"no raked design: {exc}"
        return RakedSample(info, keep, None)
    info["deff_weights"] = kish_deff(design.weights)
    w = design.weights
    for cell in info["cells"]:
        got = float(w[labels[cell["variable"]] == cell["level"]].sum())
        cell["achieved"] = got / float(w.sum()) if weighting.kind == "shares" else got
    return RakedSample(info, keep, design)


def _design(
    weighting: SurveyWeighting,
    base: Any,
    raked: Any,
    sub: Mapping[str, Any],
    margins: Mapping[str, Any],
    info: dict[str, Any],
) -> SampleDesign:
    """The raked design: :func:`rake` of the base design (the same sweeps, the margins
    remembered), or the raked weights trimmed (the margins then met only approximately)."""
    if weighting.trim is None:
        raked_design = rake(SampleDesign(weights=base, **sub), margins, tolerance=TOLERANCE,
                            max_iterations=MAX_ITERATIONS)  # fmt: skip
        return cast(SampleDesign, raked_design)
    lower, upper = weighting.trim
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = trim_weights(SampleDesign(weights=raked, **sub), lower=lower, upper=upper)
    info["notes"] = [str(c.message) for c in caught]
    info["notes"].append(
        f"the raked weights are trimmed to [{lower:g}, {upper:g}]: the margins are met only "
        "approximately (see each level's achieved value), and the SE treats the weights as "
        "given."
    )
    return cast(SampleDesign, out)


def _cells(
    labels: Mapping[str, Any], targets: Mapping[str, Mapping[str, float]], min_cell: int
) -> list[dict[str, Any]]:
    """Each margin level: its target and its respondents (``None`` under ``min_cell``)."""
    out = []
    for variable, levels in targets.items():
        for level, target in levels.items():
            n = int(np.sum(labels[variable] == level))
            out.append({"variable": variable, "level": level, "target": target,
                        "n": n if n >= min_cell else None, "hidden": n < min_cell,
                        "achieved": None})  # fmt: skip
    return out


def _mismatch(
    labels: Mapping[str, Any], targets: Mapping[str, Mapping[str, float]], min_cell: int
) -> str | None:
    """Why the rows cannot be raked to the margins, or ``None``: a level the margins do not
    give, or a margin level no respondent has."""

    def many(n: int) -> str:
        return str(n) if n >= min_cell else f"fewer than {min_cell}"

    for variable, levels in targets.items():
        texts = labels[variable]
        found, counts = np.unique(texts, return_counts=True)
        for level, count in zip(found.tolist(), counts.tolist(), strict=True):
            if level not in levels:
                return (
                    f"`weighting.margins.{variable}` gives no target for {variable}={level!r}, "
                    f"which {many(int(count))} respondent(s) have (its levels: "
                    f"{', '.join(map(repr, levels))}): add it to the survey file, or recode "
                    "the invitations."
                )
        for level in levels:
            if level not in set(found.tolist()):
                return (
                    f"`weighting.margins.{variable}.{level}` (target {levels[level]:g}) has "
                    "no respondent: a margin category without respondents cannot be weighted "
                    "up; collapse it with a neighbour in the survey file (no raked estimate "
                    "is shown)."
                )
    return None
