"""Weights computed, not only taken: post-stratification, raking and trimming (R's
``postStratify``, ``rake``, ``trimWeights``) and the weighting's own design effect.

Each returns a new design with the adjusted weights (the strata, PSUs and fpc kept); a
:class:`ReplicateDesign` has every replicate column adjusted the same way, so its
variance reflects the weighting.  A :class:`SampleDesign` post-stratified or raked keeps
the margins: its Taylor variance uses the residuals of the linearized scores from their
margin cells' weighted means (the margins' totals are known, not estimated; R's
``svyrecvar`` does the same); trimming drops them (the trimmed weights no longer meet the
margins exactly).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterError
from deniable.sampling._design import SampleDesign, as_labels, as_weights, plain
from deniable.sampling._replicate import ReplicateDesign

__all__ = ["Raking", "kish_deff", "post_stratify", "rake", "rake_weights", "trim_weights"]

FloatArray = npt.NDArray[np.float64]
Design = SampleDesign | ReplicateDesign
Margin = tuple[Any, Mapping[Any, float]]


def kish_deff(weights: Any) -> float:
    """Kish's (1965) design effect of unequal weighting, ``1 + CV^2 = n sum w^2 / (sum
    w)^2``.

    >>> kish_deff([1, 1, 1, 1]), kish_deff([1, 1, 2, 2])
    (1.0, 1.1111111111111112)
    """
    w = as_weights("weights", weights)
    return float(w.size * np.sum(w * w) / np.sum(w) ** 2)


def _apply(
    design: Design,
    adjust: Callable[[FloatArray], FloatArray],
    margins: tuple[npt.NDArray[np.intp], ...] | None,
) -> Design:
    """``adjust`` applied to the weights (every replicate column too); ``margins``: the
    codes of the margins now calibrated (kept for the Taylor variance), ``None`` when the
    adjustment breaks calibration (trimming)."""
    if isinstance(design, ReplicateDesign):
        reps = np.column_stack([adjust(col) for col in design.replicate_weights.T])
        return design.with_weights(adjust(design.weights), reps)
    if isinstance(design, SampleDesign):
        known = () if margins is None else (*design.calibration, *margins)
        return design.with_weights(adjust(design.weights), known)
    raise TypeError(
        f"`design` must be a SampleDesign or a ReplicateDesign, got {type(design).__name__}."
    )


def _targets(name: str, labels: npt.NDArray[Any], population: Any) -> FloatArray:
    """The target of each sample label, from a mapping label -> count or share."""
    if not isinstance(population, Mapping):
        raise TypeError(f"`{name}` must be a mapping label -> population count or share.")
    known = {plain(k): k for k in population}
    out = np.empty(len(labels))
    for j, label in enumerate(labels.tolist()):
        if label not in known:
            raise DataError(
                f"`{name}` must give a population count for every label in the sample, got "
                f"none for {label!r}."
            )
        out[j] = v.positive(f"{name}[{label!r}]", population[known[label]])
    missing = set(known) - set(labels.tolist())
    if missing:
        raise DataError(
            f"`{name}` has labels with no respondent in the sample "
            f"({sorted(missing, key=repr)[:3]}): a cell without respondents cannot be "
            "weighted up; collapse it with a neighbour."
        )
    return out


def _scaled(targets: FloatArray, total: float) -> FloatArray:
    """Shares (summing to 1 within 1e-9) become counts of the current weight total."""
    s = float(targets.sum())
    return targets * total if abs(s - 1) <= 1e-9 else targets


def post_stratify(design: Design, groups: Any, population: Mapping[Any, float]) -> Design:
    """Weights scaled within each post-stratum so that they add to its population count
    (R's ``postStratify``): ``w_i N_g / sum_{j in g} w_j``.  ``population``: label ->
    count, or label -> share (summing to 1: the current weight total is kept)."""
    codes, labels = as_labels("groups", groups, design.n)
    targets = _targets("population", labels, population)

    def adjust(w: FloatArray) -> FloatArray:
        current = np.bincount(codes, weights=w, minlength=len(labels))
        goal = _scaled(targets, float(w.sum()))
        with np.errstate(divide="ignore", invalid="ignore"):
            return w * (goal / current)[codes]

    return _apply(design, adjust, (codes,))


def rake(
    design: Design,
    margins: Mapping[str, Margin],
    *,
    tolerance: float = 1e-8,
    max_iterations: int = 100,
    on_failure: str = "error",
) -> Design:
    """Raking (iterative proportional fitting; Deming & Stephan 1940, R's ``rake``): the
    weights are scaled to each margin in turn until every margin is met within
    ``tolerance`` (the largest relative difference between a weighted count and its
    target).  ``margins``: name -> ``(labels per respondent, {label: count or share})``;
    margins given as counts must add to the same total.  If it has not converged after
    ``max_iterations`` sweeps: a ``DataError`` (``on_failure="error"``, the default) or a
    ``RuntimeWarning`` with the weights reached (``"warn"``) - never silently."""
    tol = v.positive("tolerance", tolerance)
    iters = v.integer("max_iterations", max_iterations, minimum=1)
    v.choice("on_failure", on_failure, ("error", "warn"))
    parts = _margin_parts(margins, design.n)

    def adjust(w0: FloatArray) -> FloatArray:
        w, _, worst = _sweeps(w0, parts, tol, iters)
        if worst <= tol:
            return w
        message = _not_converged(iters, worst, tol)
        if on_failure == "error":
            raise DataError(message)
        warnings.warn(message, RuntimeWarning, stacklevel=4)
        return w

    return _apply(design, adjust, tuple(codes for _, codes, _, _ in parts))


Part = tuple[str, npt.NDArray[np.intp], npt.NDArray[Any], FloatArray]


def _margin_parts(margins: Mapping[str, Margin], n: int) -> list[Part]:
    """``(name, codes, labels, targets)`` of each margin, checked (a total they share)."""
    if not isinstance(margins, Mapping) or len(margins) < 1:
        raise ParameterError("`margins` must be a non-empty mapping name -> (labels, targets).")
    parts = []
    for name, margin in margins.items():
        if not (isinstance(margin, tuple) and len(margin) == 2):
            raise ParameterError(
                f"`margins[{name!r}]` must be a pair (labels per respondent, {{label: target}})."
            )
        codes, labels = as_labels(f"margins[{name!r}]", margin[0], n)
        parts.append((name, codes, labels, _targets(f"margins[{name!r}]", labels, margin[1])))
    totals = {name: float(t.sum()) for name, _, _, t in parts}
    shares = [abs(s - 1) <= 1e-9 for s in totals.values()]
    if not all(shares) and (
        any(shares) or max(totals.values()) > min(totals.values()) * (1 + 1e-6)
    ):
        raise DataError(
            "`margins` must add to the same population total (or all be shares summing to 1), "
            f"got totals {', '.join(f'{k}: {x:g}' for k, x in totals.items())}."
        )
    return parts


def _sweeps(
    w0: FloatArray, parts: list[Part], tol: float, iters: int
) -> tuple[FloatArray, int, float]:
    """Raking sweeps from ``w0`` until every margin is within ``tol`` (or ``iters``
    sweeps): ``(weights, sweeps done, largest relative margin error of the last)``."""
    w = w0.copy()
    total = float(w.sum())
    worst = math.inf
    for sweep in range(1, iters + 1):
        worst = 0.0
        for _, codes, labels, targets in parts:
            goal = _scaled(targets, total)
            current = np.bincount(codes, weights=w, minlength=len(labels))
            worst = max(worst, float(np.max(np.abs(current / goal - 1))))
            w *= (goal / current)[codes]
        if worst <= tol:
            return w, sweep, worst
    return w, iters, worst


def _not_converged(iters: int, worst: float, tol: float) -> str:
    return (
        f"raking did not converge: after {iters} iterations a margin is still "
        f"{worst:.3g} (relative) from its target, above `tolerance` = {tol:g}; raise "
        "`max_iterations`, or check that the margins are consistent and every cell has "
        "respondents."
    )


@dataclass(frozen=True)
class Raking:
    """What :func:`rake_weights` reached: the raked ``weights``, the ``iterations`` (sweeps
    over every margin) done, whether it ``converged`` and the largest relative difference
    between a weighted margin and its target at the start of the last sweep
    (``max_error``; at most ``tolerance`` when converged)."""

    weights: FloatArray
    iterations: int
    converged: bool
    max_error: float
    tolerance: float


def rake_weights(
    weights: Any,
    margins: Mapping[str, Margin],
    *,
    tolerance: float = 1e-8,
    max_iterations: int = 100,
) -> Raking:
    """:func:`rake` of the weights alone, saying how it went: the same sweeps (Deming &
    Stephan 1940) from ``weights`` (finite, > 0), returned with the iterations done and
    whether every margin met its target within ``tolerance`` (never an error or a warning:
    the caller reads :attr:`Raking.converged`).

    >>> r = rake_weights([1.0, 1.0, 1.0, 1.0],
    ...                  {"sex": (["f", "f", "m", "m"], {"f": 0.6, "m": 0.4})})
    >>> r.weights.tolist(), r.iterations, r.converged
    ([1.2, 1.2, 0.8, 0.8], 2, True)
    """
    w0 = as_weights("weights", weights)
    tol = v.positive("tolerance", tolerance)
    iters = v.integer("max_iterations", max_iterations, minimum=1)
    parts = _margin_parts(margins, w0.size)
    w, done, worst = _sweeps(w0, parts, tol, iters)
    return Raking(w, done, worst <= tol, worst, tol)


def trim_weights(
    design: Design,
    *,
    lower: float | None = None,
    upper: float | None = None,
    max_iterations: int = 10,
) -> Design:
    """Weights outside ``[lower, upper]`` set to the bound, the weight removed (or added)
    shared among the others in proportion to their weights so the total is kept, repeated
    until every weight is within the bounds (R's ``trimWeights(strict = TRUE)``).  Bounds
    the total cannot meet (``upper * n`` below it, ``lower * n`` above it) are refused; if
    the bounds still fail after ``max_iterations`` rounds a ``RuntimeWarning`` says so."""
    lo = 0.0 if lower is None else v.positive("lower", lower, allow_zero=True)
    hi = math.inf if upper is None else v.positive("upper", upper)
    if lo >= hi:
        raise ParameterError(f"`lower` must be below `upper`, got {lo:g} and {hi:g}.")
    iters = v.integer("max_iterations", max_iterations, minimum=1)

    def adjust(w0: FloatArray) -> FloatArray:
        w = w0.copy()
        total = float(w.sum())
        if hi * w.size < total or lo * w.size > total:
            raise DataError(
                f"`lower` = {lo:g} and `upper` = {hi:g} cannot keep the weight total {total:g} "
                f"over {w.size} respondents."
            )
        for _ in range(iters):
            clipped = np.clip(w, lo, hi)
            inside = (w > lo) & (w < hi)
            excess = float(w.sum() - clipped.sum())
            if excess == 0.0:
                return w
            free = clipped[inside].sum()
            w = clipped
            if free > 0:
                w[inside] *= 1 + excess / free
        if (w < lo * (1 - 1e-12)).any() or (w > hi * (1 + 1e-12)).any():
            warnings.warn(
                f"trim_weights: weights still outside [{lo:g}, {hi:g}] after "
                f"{iters} rounds; raise `max_iterations`.",
                RuntimeWarning,
                stacklevel=4,
            )
        return w

    return _apply(design, adjust, None)
