"""Greenberg's unrelated quantitative question (Greenberg, Kuebler, Abernathy & Horvitz
1971) with the innocuous answer drawn from a known distribution: RRreg's ``RRuni`` models
``mix.norm`` and ``mix.exp``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterError
from deniable.quantitative._base import ScrambledDesign, check_distribution
from deniable.quantitative._distributions import Distribution, Exponential, Normal, open_uniform
from deniable.quantitative._estimate import estimate_mean, finite_array
from deniable.quantitative._results import NumberEstimate, NumberPrivacy
from deniable.randomness import random_words, resolve_rng

__all__ = ["UnrelatedQuantitative"]

FloatArray = npt.NDArray[np.float64]


def _finite_real(name: str, value: Any) -> float:
    x = v.real(name, value)
    if not math.isfinite(x):
        raise ParameterError(f"`{name}` must be a finite real number, got {x}.")
    return x


@dataclass(frozen=True)
class UnrelatedQuantitative(ScrambledDesign):
    """With probability ``p`` the respondent reports the sensitive answer ``X``, otherwise
    an innocuous number ``Y`` drawn from ``innocuous`` (Greenberg et al. 1971; RRreg's
    ``RRuni(model = "mix.norm", p = c(p, mean, sd))`` and ``"mix.exp"``, p = c(p, mean)``).

    ``E[Z] = p E[X] + (1 - p) E[Y]``, so the de-scrambled value is ``X^ = (Z - (1 - p)
    E[Y]) / p`` and ``Var X^ = Var Z / p^2`` with ``Var Z = p E[X^2] + (1 - p) E[Y^2] -
    E[Z]^2``.  ``p = 1`` asks the question directly.  Two words per report (the coin and
    ``Y``), drawn whatever the answer.

    >>> d = UnrelatedQuantitative.mix_norm(0.7, mean=50, sd=15)
    >>> d.epsilon
    inf
    >>> reports = d.randomize([30.0, 60.0] * 3000, rng=3)
    >>> abs(d.estimate(reports).value - 45) < 3 * d.estimate(reports).se
    True
    """

    p: float
    innocuous: Distribution
    name: ClassVar[str] = "unrelated-quantitative"
    words_per_report: ClassVar[int] = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", v.probability("p", self.p, low_open=True))
        check_distribution("innocuous", self.innocuous)

    @classmethod
    def mix_norm(cls, p: float, mean: float, sd: float) -> UnrelatedQuantitative:
        """RRreg's ``mix.norm``: the innocuous answer ``N(mean, sd^2)``."""
        return cls(p, Normal(mean, sd))

    @classmethod
    def mix_exp(cls, p: float, mean: float) -> UnrelatedQuantitative:
        """RRreg's ``mix.exp``: the innocuous answer exponential with mean ``mean``."""
        return cls(p, Exponential(mean))

    def parameters(self) -> dict[str, Any]:
        return {"p": self.p, "innocuous": self.innocuous.describe()}

    def _scramble(self, x: FloatArray, words: npt.NDArray[np.uint64]) -> FloatArray:
        truthful = open_uniform(words[:, 0]) < self.p
        y = self.innocuous.sample(words[:, 1])
        return np.asarray(np.where(truthful, x, y), dtype=np.float64)

    def randomize(
        self, values: npt.ArrayLike, *, rng: Any = None, innocuous_values: Any = None
    ) -> FloatArray:
        """One report per answer: the answer with probability ``p``, else the innocuous
        number, drawn from ``innocuous`` or, with ``innocuous_values``, each respondent's
        own answer to a real innocuous question (Greenberg et al. 1971).  Two words per
        report either way."""
        if innocuous_values is None:
            return super().randomize(values, rng=rng)
        x = self._answers(values)
        y = finite_array("innocuous_values", innocuous_values, show=False)
        if y.size != x.size:
            raise DataError(
                f"`innocuous_values` must have one entry per answer ({x.size}), got {y.size}."
            )
        words = random_words(resolve_rng(rng), 2 * x.size).reshape(x.size, 2)
        truthful = open_uniform(words[:, 0]) < self.p
        return np.asarray(np.where(truthful, x, y), dtype=np.float64)

    def descramble(self, reports: npt.ArrayLike, *, innocuous_mean: Any = None) -> FloatArray:
        """``(Z - (1 - p) E[Y]) / p``, with ``E[Y]`` the innocuous distribution's mean or
        ``innocuous_mean``."""
        z = finite_array("reports", reports)
        mean_y = self.innocuous.mean if innocuous_mean is None else _finite_real(
            "innocuous_mean", innocuous_mean)  # fmt: skip
        return np.asarray((z - (1 - self.p) * mean_y) / self.p)

    def estimate(
        self,
        reports: npt.ArrayLike,
        *,
        sample_design: Any = None,
        population: Any = None,
        domain: Any = None,
        innocuous_mean: Any = None,
        innocuous_se: Any = 0.0,
    ) -> NumberEstimate:
        """The mean (see :meth:`ScrambledDesign.estimate`).  ``innocuous_mean`` replaces the
        innocuous distribution's mean by an estimate of it (e.g. from a sample asked the
        innocuous question directly) with standard error ``innocuous_se``, from a sample
        independent of this one: its variance adds ``((1 - p) / p)^2 innocuous_se^2`` to the
        mean's."""
        se_y = v.positive("innocuous_se", innocuous_se, allow_zero=True)
        if innocuous_mean is None and se_y > 0:
            raise ParameterError(
                "`innocuous_se` applies to an estimated `innocuous_mean`: give it too, or drop "
                f"innocuous_se (got {se_y:g})."
            )
        notes: tuple[str, ...] = ()
        if innocuous_mean is not None:
            notes = (f"E[Y] estimated as {float(innocuous_mean):.6g} (SE {se_y:.6g}), "
                     "independently of these reports",)  # fmt: skip
        with np.errstate(over="ignore", invalid="ignore"):
            xhat = self.descramble(reports, innocuous_mean=innocuous_mean)
        return estimate_mean(
            xhat, self.describe(),
            sample_design=sample_design, population=population, domain=domain, notes=notes,
            extra_variance=((1 - self.p) / self.p * se_y) ** 2,
        )  # fmt: skip

    def report_mean(self, mean_x: float) -> float:
        return self.p * mean_x + (1 - self.p) * self.innocuous.mean

    def report_variance(self, mean_x: float, var_x: float) -> float:
        second = self.p * (var_x + mean_x**2) + (1 - self.p) * self.innocuous.second_moment
        return second - self.report_mean(mean_x) ** 2

    def descrambled_variance(self, mean_x: float, var_x: float) -> float:
        return self.report_variance(mean_x, var_x) / self.p**2

    def privacy_measure(self, mean_x: float, var_x: float) -> float:
        # E[(Z - X)^2] = (1 - p) E[(Y - X)^2] = (1 - p) (Var Y + Var X + (E Y - E X)^2)
        y = self.innocuous
        return (1 - self.p) * (y.variance + var_x + (y.mean - mean_x) ** 2)

    @property
    def privacy(self) -> NumberPrivacy:
        why = (
            f"with probability p = {self.p:g} the report is the answer itself: a point mass "
            "at the answer that no other answer gives, so the likelihood ratio is infinite"
        )
        protection = (
            "plausible deniability only: any single report may be the innocuous number "
            f"(probability {1 - self.p:.6g}); the report is the answer with probability "
            f"p / (p + (1 - p) f_Y) near it (Greenberg et al. 1971)"
        )
        measure = f"(1 - p) E[(Y - X)^2] = {1 - self.p:.6g} x (Var Y + Var X + (E Y - E X)^2)"
        if self.p == 1:
            protection = "none: p = 1 asks the question directly"
        return NumberPrivacy(math.inf, why, protection, measure)
