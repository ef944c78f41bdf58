"""Greenberg's unrelated quantitative question with the innocuous answer's distribution
unknown: two independent subsamples with different probabilities ``p1 != p2`` of answering
the sensitive question (Greenberg, Kuebler, Abernathy & Horvitz 1971; RRreg's ``RRuni(model
= "mix.unknown", p = c(p1, p2))``).
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
from deniable.quantitative._distributions import Distribution, open_uniform
from deniable.quantitative._estimate import check_sample_design, finite_array, scale_of
from deniable.quantitative._optional import subsamples
from deniable.quantitative._results import NumberEstimate, NumberPrivacy
from deniable.randomness import random_words, resolve_rng
from deniable.sampling import ratio_estimate

__all__ = ["UnrelatedQuantitativeUnknown"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class UnrelatedQuantitativeUnknown(ScrambledDesign):
    """Subsample ``g`` reports the sensitive answer ``X`` with probability ``p_g``, else an
    innocuous number ``Y`` whose mean need not be known (``innocuous`` is what a simulated
    device draws; real respondents answer an innocuous question, ``innocuous_values``).

    ``E[Z_g] = p_g E[X] + (1 - p_g) E[Y]``, so ``E[X] = ((1 - p2) E[Z_1] - (1 - p1)
    E[Z_2]) / (p1 - p2)``; from independent subsamples of sizes ``n_g`` with report
    variances ``s_g^2`` its variance is ``((1 - p2)^2 s_1^2 / n_1 + (1 - p1)^2 s_2^2 / n_2)
    / (p1 - p2)^2`` (Greenberg et al. 1971).  Under a sample design the two subsample
    means are domains of the design, with their design covariance.

    >>> from deniable.quantitative import Normal
    >>> d = UnrelatedQuantitativeUnknown(0.8, 0.3, Normal(100, 10))
    >>> group = np.tile([1, 2], 3000)
    >>> z = d.randomize(np.full(6000, 40.0), group=group, rng=5)
    >>> est = d.estimate(z, group=group)
    >>> abs(est.value - 40) < 3 * est.se
    True
    """

    p1: float
    p2: float
    innocuous: Distribution
    name: ClassVar[str] = "unrelated-quantitative-unknown"
    words_per_report: ClassVar[int] = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "p1", v.probability("p1", self.p1, low_open=True))
        object.__setattr__(self, "p2", v.probability("p2", self.p2))
        if self.p1 == self.p2:
            raise ParameterError(
                f"`p2` must differ from `p1` ({self.p1:g}: the difference identifies the "
                f"mean), got {self.p2:g}."
            )
        check_distribution("innocuous", self.innocuous)

    def parameters(self) -> dict[str, Any]:
        return {"p1": self.p1, "p2": self.p2, "innocuous": self.innocuous.describe()}

    def randomize(  # type: ignore[override]
        self, values: npt.ArrayLike, *, group: Any, rng: Any = None,
        innocuous_values: Any = None,
    ) -> FloatArray:  # fmt: skip
        """The reports of respondents in subsamples ``group`` (1 or 2); the innocuous
        number drawn from ``innocuous`` or each respondent's ``innocuous_values``.  Two
        words per report, whatever the answer."""
        x = self._answers(values)
        second = subsamples(group, x.size)
        words = random_words(resolve_rng(rng), 2 * x.size).reshape(x.size, 2)
        p = np.where(second, self.p2, self.p1)
        truthful = open_uniform(words[:, 0]) < p
        if innocuous_values is None:
            y = self.innocuous.sample(words[:, 1])
        else:
            y = finite_array("innocuous_values", innocuous_values, show=False)
            if y.size != x.size:
                raise DataError(
                    f"`innocuous_values` must have one entry per answer ({x.size}), got {y.size}."
                )
        return np.asarray(np.where(truthful, x, y), dtype=np.float64)

    def _coefficients(self) -> FloatArray:
        return np.array([1 - self.p2, -(1 - self.p1)]) / (self.p1 - self.p2)

    def descramble(self, reports: npt.ArrayLike) -> FloatArray:
        raise DataError(
            "a two-subsample design has no per-report de-scrambled value: its mean needs "
            "both subsamples' means (use estimate with group=)."
        )

    def report_mean(self, mean_x: float, *, group: int = 1) -> float:
        """``E[Z]`` in subsample ``group``."""
        p = self.p1 if group == 1 else self.p2
        return p * mean_x + (1 - p) * self.innocuous.mean

    def report_variance(self, mean_x: float, var_x: float, *, group: int = 1) -> float:
        """``Var Z`` in subsample ``group``."""
        p = self.p1 if group == 1 else self.p2
        y = self.innocuous
        second = p * (var_x + mean_x**2) + (1 - p) * y.second_moment
        return second - self.report_mean(mean_x, group=group) ** 2

    def descrambled_variance(self, mean_x: float, var_x: float, *, share: float = 0.5) -> float:
        """``n`` times the variance of the mean from ``n`` respondents, ``share`` of them in
        subsample 2."""
        a1, a2 = self._coefficients()
        v1 = self.report_variance(mean_x, var_x, group=1) / (1 - share)
        v2 = self.report_variance(mean_x, var_x, group=2) / share
        return float(a1 * a1 * v1 + a2 * a2 * v2)

    def privacy_measure(self, mean_x: float, var_x: float, *, share: float = 0.5) -> float:
        # E[(Z - X)^2] = (1 - p_g) E[(Y - X)^2], averaged over the subsamples
        y = self.innocuous
        q = (1 - share) * (1 - self.p1) + share * (1 - self.p2)
        return q * (y.variance + var_x + (y.mean - mean_x) ** 2)

    @property
    def privacy(self) -> NumberPrivacy:
        return NumberPrivacy(
            math.inf,
            "with probability p_g > 0 the report is the answer itself: a point mass at the "
            "answer that no other answer gives, so the likelihood ratio is infinite",
            "plausible deniability only: any single report may be the innocuous number "
            f"(probability {1 - self.p1:.6g} or {1 - self.p2:.6g} by subsample)",
            "(1 - p_g) E[(Y - X)^2] in subsample g",
        )

    def estimate(  # type: ignore[override]
        self,
        reports: npt.ArrayLike,
        *,
        group: Any,
        sample_design: Any = None,
        population: Any = None,
        domain: Any = None,
    ) -> NumberEstimate:
        """The mean ``((1 - p2) Z_1 - (1 - p1) Z_2) / (p1 - p2)`` from the subsample means
        ``Z_g`` (Hajek means of domains under ``sample_design``), with its SE."""
        z = finite_array("reports", reports)
        second = subsamples(group, z.size)
        keep = np.ones(z.size, bool)
        if domain is not None:
            dom = np.asarray(domain)
            if dom.shape != z.shape or dom.dtype.kind != "b":
                raise DataError(
                    f"`domain` must be a 1-D boolean array with one entry per report "
                    f"({z.size}), got shape {dom.shape} dtype {dom.dtype}."
                )
            keep = dom
        groups = np.stack([~second & keep, second & keep], axis=1).astype(np.float64)
        sizes = groups.sum(axis=0)
        if sizes.min() < 2:
            raise DataError(
                "the mean needs at least 2 reports in each subsample (in the domain), got "
                f"{int(sizes[0])} and {int(sizes[1])}."
            )
        a = self._coefficients()
        big_n = None if population is None else v.positive("population", population)
        n = int(sizes.sum())
        c = scale_of(z)
        zc = z / c  # computed on z / c and scaled back: no overflow on the way
        parts = [zc[groups[:, j] > 0] for j in range(2)]
        srs_var = float(sum(a[j] ** 2 * parts[j].var(ddof=1) / parts[j].size for j in range(2)))
        if sample_design is None:
            means = np.array([p.mean() for p in parts])
            value, var = float(a @ means), srs_var
            df, method, sample, deff = float(min(sizes) - 1), "two independent subsamples", (
                "simple random sample (with replacement)"), 1.0  # fmt: skip
        else:
            check_sample_design(sample_design)
            if sample_design.n != z.size:
                raise DataError(
                    f"`reports` must have one entry per respondent of the design "
                    f"({sample_design.n}), got {z.size}."
                )
            means, cov = ratio_estimate(sample_design, zc[:, None] * groups, groups)
            value, var = float(a @ means), float(a @ cov @ a)
            df, method = float(sample_design.df), sample_design.variance_method
            sample, deff = sample_design.describe(), var / srs_var if srs_var > 0 else math.nan
        with np.errstate(over="ignore", invalid="ignore"):
            value, se, means = value * c, math.sqrt(max(var, 0.0)) * c, means * c
        if not (math.isfinite(value) and math.isfinite(se)):
            raise DataError(
                "`reports` are too large: the mean or its standard error is past the largest "
                "floating-point number."
            )
        return NumberEstimate(
            "mean", value, se, df, n, method, self.describe(), sample_design=sample,
            deff=deff, population=big_n, total=None if big_n is None else big_n * value,
            se_total=None if big_n is None else big_n * se,
            notes=(f"subsample means: {means[0]:.6g} (group 1), {means[1]:.6g} (group 2)",),
        )  # fmt: skip
