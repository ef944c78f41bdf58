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
from deniable.quantitative._base import ScrambledDesign, check_distribution
from deniable.quantitative._distributions import Distribution, Exponential, Normal, open_uniform
from deniable.quantitative._estimate import finite_array
from deniable.quantitative._results import NumberPrivacy

__all__ = ["UnrelatedQuantitative"]

FloatArray = npt.NDArray[np.float64]


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

    def descramble(self, reports: npt.ArrayLike) -> FloatArray:
        z = finite_array("reports", reports)
        return np.asarray((z - (1 - self.p) * self.innocuous.mean) / self.p)

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
