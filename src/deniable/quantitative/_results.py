"""Results of the quantitative designs: :class:`NumberEstimate` (a mean, a total, a
sensitivity level) and :class:`NumberPrivacy` (what a design protects, stated honestly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from deniable.common import format_epsilon, format_number, to_jsonable
from deniable.exceptions import ParameterError, PrivacyError
from deniable.results import (
    SYMMETRIC_INTERVALS,
    ConfidenceInterval,
    Result,
    Table,
    t_interval,
)

__all__ = ["NumberEstimate", "NumberPrivacy"]

#: The intervals every :class:`NumberEstimate` offers.
INTERVALS = SYMMETRIC_INTERVALS


@dataclass(frozen=True)
class NumberEstimate(Result):
    """The estimate of a mean (or another parameter) of a sensitive number from scrambled
    reports, with its SE, degrees of freedom, intervals and, given the population size,
    the total.

    Attributes
    ----------
    parameter : what is estimated (``mean``, ``sensitivity level``).
    value : the unbiased moment estimate.
    se : its standard error: with a simple random sample the unbiased convention
        (``s^2 / n``, ``s^2`` dividing by ``n - 1``), under a sample design the design's
        (:attr:`variance_method`).
    df : degrees of freedom of the variance (``n - 1``, or the design's).
    n : respondents in the estimate.
    variance_method : ``simple random sample`` or the design's (``Taylor linearization``,
        a replicate method).
    design : the scrambled-response design, one line.
    sample_design : the sample design, one line.
    se_plug_in : the SE in the plug-in convention (dividing by ``n``), for a simple random
        sample; ``None`` under a sample design.
    deff : the design effect (1 for a simple random sample).
    population, total, se_total : the population size ``N`` given, and ``N`` times the
        mean with its SE (``None`` without ``N``).
    notes : remarks.
    """

    parameter: str
    value: float
    se: float
    df: float
    n: int
    variance_method: str
    design: str
    sample_design: str = "simple random sample (with replacement)"
    se_plug_in: float | None = None
    deff: float = 1.0
    population: float | None = None
    total: float | None = None
    se_total: float | None = None
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def interval_methods(self) -> tuple[str, ...]:
        """``t`` (the default: the estimate's degrees of freedom) and ``wald``."""
        return INTERVALS

    def ci(self, level: float = 0.95, method: str = "t") -> ConfidenceInterval:
        """Two-sided interval ``value +- q se`` at ``level``: ``q`` the t quantile with
        :attr:`df` degrees of freedom (``t``) or the normal one (``wald``)."""
        return t_interval(self.value, self.se, self.df, level, method)

    def total_ci(self, level: float = 0.95, method: str = "t") -> ConfidenceInterval:
        """The interval of the total, ``N`` times :meth:`ci` (needs ``population``)."""
        if self.population is None:
            raise ParameterError(
                "`population` must be given to estimate (the population size N) for a "
                "total, got None."
            )
        lo, hi = self.ci(level, method)
        n = float(self.population or 0.0)
        return ConfidenceInterval(n * lo, n * hi)

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Plain JSON: every attribute and both intervals at ``level``."""
        out: dict[str, Any] = {
            "parameter": self.parameter, "estimate": self.value, "se": self.se,
            "df": self.df, "n": self.n, "variance_method": self.variance_method,
            "design": self.design, "sample_design": self.sample_design, "deff": self.deff,
            "level": level,
        }  # fmt: skip
        for name in ("se_plug_in", "population", "total", "se_total"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        for m in INTERVALS:
            out[f"ci_{m}"] = self.ci(level, m)
        if self.population is not None:
            out["ci_total"] = self.total_ci(level)
        out["notes"] = list(self.notes)
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self, level: float = 0.95) -> Table:
        """The estimate for people, with both intervals at ``level``."""
        rows: list[tuple[str, str]] = [
            ("design", self.design),
            ("sample", self.sample_design),
            (f"estimate ({self.parameter})", format_number(self.value, 6)),
            (f"SE ({self.variance_method})", format_number(self.se, 6)),
        ]
        if self.se_plug_in is not None:
            rows.append(("SE (plug-in, divides by n)", format_number(self.se_plug_in, 6)))
        rows.append(("degrees of freedom", format_number(float(self.df), 0)))
        rows.append(("design effect", format_number(self.deff, 4)))
        for m in INTERVALS:
            rows.append((f"{level:.0%} CI ({m})", self.ci(level, m).format(6)))
        if self.population is not None:
            rows.append(("population size N", format_number(self.population, 0)))
            rows.append(("total (N x mean)", format_number(self.total, 2)))
            rows.append(("SE of the total", format_number(self.se_total, 2)))
            rows.append((f"{level:.0%} CI of the total (t)", self.total_ci(level).format(2)))
        rows.extend(("note", note) for note in self.notes)
        title = f"Estimate of the {self.parameter} from {self.n} scrambled reports"
        return Table.pairs(rows, title=title)


@dataclass(frozen=True)
class NumberPrivacy(Result):
    """What a quantitative design protects, stated honestly.

    Attributes
    ----------
    epsilon : the local differential privacy epsilon of one report (replace one
        respondent's answer), ``inf`` where the design has none: only additive Laplace
        scrambling of an answer known to lie in ``[low, high]`` has a finite one.
    derivation : how ``epsilon`` follows from the design, in one or two sentences.
    protection : what the design gives instead of (or beside) a finite epsilon.
    measure : the formula of Yan, Wang & Lai's (2009) privacy measure
        ``Delta = E[(Z - X)^2]`` for the design (larger protects more);
        :meth:`ScrambledDesign.privacy_measure` evaluates it.
    """

    epsilon: float
    derivation: str
    protection: str
    measure: str

    @property
    def is_finite(self) -> bool:
        """Whether the design has a finite epsilon."""
        return math.isfinite(self.epsilon)

    def require_finite(self) -> float:
        """The finite epsilon, or :class:`~deniable.exceptions.PrivacyError` saying why
        there is none (never a finite stand-in)."""
        if not self.is_finite:
            raise PrivacyError(
                f"this design has no finite epsilon (epsilon = inf): {self.derivation}"
            )
        return self.epsilon

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (an infinite epsilon as ``"inf"``)."""
        out: dict[str, Any] = to_jsonable(
            {
                "epsilon": self.epsilon,
                "derivation": self.derivation,
                "protection": self.protection,
                "privacy_measure": self.measure,
            }
        )
        return out

    def table(self) -> Table:
        """The statement for people (epsilon printed as ``∞`` when infinite)."""
        return Table.pairs(
            [
                ("epsilon (LDP, one report)", format_epsilon(self.epsilon)),
                ("why", self.derivation),
                ("protection", self.protection),
                ("privacy measure E[(Z - X)^2]", self.measure),
            ],
            title="Privacy of the scrambled-response design",
        )
