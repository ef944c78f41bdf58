"""Result objects of the power and sample-size computations (``deniable.estimation``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from deniable.designs import Design

__all__ = ["PowerResult", "SampleSizeResult"]


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else ("-inf" if x < 0 else "nan"))


@dataclass(frozen=True)
class PowerResult:
    """The power of one test at one sample size, with the SEs it was computed from.

    ``se_null`` and ``se_alternative`` are the standard errors of the estimated prevalence
    (one sample) or difference of prevalences (two samples) under H0 and under H1.  For
    ``method="exact"``, ``critical_region`` is ``(at_most, at_least)``: the test rejects
    when the yes count is ``<= at_most`` or ``>= at_least`` (``-1`` / ``n + 1`` for an empty
    tail), and ``size`` is its exact rejection probability under H0 (at most ``alpha``).

    Two-group designs (``group_share`` of the respondents in group 1, the true ``nuisance``
    parameters): the power and SEs use the efficient variance with the nuisance estimated;
    ``power_known``, ``se_null_known`` and ``se_alternative_known`` are the naive figures
    that would hold if the nuisance were known (never below the efficient power).

    Two samples: ``null`` and ``null_control`` are the stated null prevalences of the
    treatment and control groups (``None`` for the pooled test of equal prevalences; see
    :attr:`null_hypothesis`).
    """

    design: Design
    power: float
    n: int
    prevalence: float
    null: float | None
    control: float | None
    n_control: int | None
    alternative: str
    alpha: float
    method: str
    se_null: float
    se_alternative: float
    category: int | None = None
    critical_region: tuple[int, int] | None = None
    size: float | None = None
    power_known: float | None = None
    se_null_known: float | None = None
    se_alternative_known: float | None = None
    group_share: float | None = None
    nuisance: Mapping[str, float] | None = field(default=None, hash=False)
    null_control: float | None = None

    @property
    def test(self) -> str:
        """``one-sample`` or ``two-sample``."""
        return "one-sample" if self.control is None else "two-sample"

    @property
    def null_hypothesis(self) -> str:
        """``"stated"`` (one sample, or two samples with stated null prevalences ``null`` and
        ``null_control``) or ``"pooled"`` (two samples, H0: equal prevalences, pooled SE)."""
        return "pooled" if self.control is not None and self.null is None else "stated"

    @property
    def epsilon(self) -> float:
        """The design's exact epsilon (``math.inf`` when a report reveals the answer)."""
        return self.design.epsilon

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON fields; an infinite epsilon is the string ``"inf"``."""
        out: dict[str, Any] = {
            "design": self.design.name,
            "parameters": self.design.parameters(),
            "epsilon": _num(self.epsilon),
            "test": self.test,
            "method": self.method,
            "alternative": self.alternative,
            "alpha": self.alpha,
            "prevalence": self.prevalence,
            "null": self.null,
            "control": self.control,
            **(
                {"null_control": self.null_control, "null_hypothesis": self.null_hypothesis}
                if self.control is not None
                else {}
            ),
            "n": self.n,
            "n_control": self.n_control,
            "power": self.power,
            "se_null": self.se_null,
            "se_alternative": self.se_alternative,
        }
        if self.category is not None:
            out["category"] = self.category
        if self.critical_region is not None:
            out["critical_region"] = {
                "at_most": self.critical_region[0],
                "at_least": self.critical_region[1],
            }
            out["size"] = self.size
        if self.power_known is not None:
            out["group_share"] = self.group_share
            out["nuisance"] = dict(self.nuisance or {})
            out["power_known"] = self.power_known
            out["se_null_known"] = self.se_null_known
            out["se_alternative_known"] = self.se_alternative_known
        return out


@dataclass(frozen=True)
class SampleSizeResult:
    """The minimal sample size reaching ``target`` power: ``result.power >= target`` and
    ``power_previous`` (the power at ``n - 1``; ``None`` when ``n = 1``) ``< target``.

    ``search`` says how minimality was established: ``bisection`` where the power provably
    increases with ``n``, ``scan`` where it need not (every ``n`` that could reach it).
    ``n_known`` (two-group designs): the minimal ``n`` if the nuisance were known.
    """

    result: PowerResult
    target: float
    power_previous: float | None
    search: str
    n_known: int | None = None

    @property
    def n(self) -> int:
        """The minimal sample size (treatment group for two samples)."""
        return self.result.n

    @property
    def n_control(self) -> int | None:
        """The control group's size (two samples)."""
        return self.result.n_control

    @property
    def power(self) -> float:
        """The power attained at :attr:`n` (at least :attr:`target`)."""
        return self.result.power

    def to_dict(self) -> dict[str, Any]:
        """:meth:`PowerResult.to_dict` plus ``target_power``, ``power_previous``, ``search``."""
        out = self.result.to_dict()
        out["target_power"] = self.target
        out["power_previous"] = self.power_previous
        out["search"] = self.search
        if self.n_known is not None:
            out["n_known"] = self.n_known
        return out
