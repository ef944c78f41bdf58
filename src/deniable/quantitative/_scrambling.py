"""Additive and multiplicative scrambling: :class:`Additive` (``Z = X + S``; Pollock &
Bek 1976; Warner 1971) and :class:`Multiplicative` (``Z = X S``; Eichhorn & Hayre 1983),
``S`` drawn by the respondent's device from a known distribution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.exceptions import ParameterError
from deniable.quantitative._base import ScrambledDesign, check_bounds, check_distribution
from deniable.quantitative._distributions import Distribution, FDistribution, Laplace
from deniable.quantitative._estimate import finite_array
from deniable.quantitative._results import NumberPrivacy

__all__ = ["Additive", "Multiplicative"]

FloatArray = npt.NDArray[np.float64]

_MOVING_SUPPORT = (
    "the report's support moves with the answer (or is a point), so a report that one answer "
    "can give and another cannot has an infinite likelihood ratio"
)


def _parameters(scrambler: Distribution, bounds: tuple[float, float] | None) -> dict[str, Any]:
    """The parameters of a one-scrambler design: the scrambler, and the bounds if declared."""
    out: dict[str, Any] = {"scrambler": scrambler.describe()}
    if bounds is not None:
        out["bounds"] = bounds
    return out


@dataclass(frozen=True)
class Additive(ScrambledDesign):
    """Additive scrambling: the respondent reports ``Z = X + S``, ``S`` drawn from
    ``scrambler`` (Pollock & Bek 1976).

    De-scrambled value ``X^ = Z - E[S]``; ``Var X^ = Var X + Var S``, so the mean from
    ``n`` respondents of a simple random sample has variance ``(Var X + Var S) / n``.

    ``bounds=(low, high)``: the answers' range, refused outside it; with Laplace
    scrambling of scale ``b`` it gives ``epsilon = (high - low) / b`` (the only finite
    epsilon among these designs; see :attr:`privacy`).

    >>> d = Additive(Laplace(5000.0), bounds=(0, 10000))
    >>> d.epsilon
    2.0
    >>> reports = d.randomize([2000, 4000, 6000] * 1000, rng=1)
    >>> est = d.estimate(reports)
    >>> abs(est.value - 4000) < 3 * est.se
    True
    """

    scrambler: Distribution
    bounds: tuple[float, float] | None = None
    name: ClassVar[str] = "additive"

    def __post_init__(self) -> None:
        check_distribution("scrambler", self.scrambler)
        object.__setattr__(self, "bounds", check_bounds(self.bounds))

    def parameters(self) -> dict[str, Any]:
        return _parameters(self.scrambler, self.bounds)

    def _scramble(self, x: FloatArray, words: npt.NDArray[np.uint64]) -> FloatArray:
        return np.asarray(x + self.scrambler.sample(words[:, 0]), dtype=np.float64)

    def descramble(self, reports: npt.ArrayLike) -> FloatArray:
        return finite_array("reports", reports) - self.scrambler.mean

    def report_mean(self, mean_x: float) -> float:
        return mean_x + self.scrambler.mean

    def report_variance(self, mean_x: float, var_x: float) -> float:
        return var_x + self.scrambler.variance

    def descrambled_variance(self, mean_x: float, var_x: float) -> float:
        return var_x + self.scrambler.variance

    def privacy_measure(self, mean_x: float, var_x: float) -> float:
        # E[(Z - X)^2] = E[S^2], whatever the answers
        return self.scrambler.second_moment

    def report_logpdf(self, reports: npt.ArrayLike, answer: float) -> FloatArray:
        """``ln f(z | x)``: the log density of a report ``z`` given the answer ``x``,
        ``ln f_S(z - x)``."""
        return self.scrambler.logpdf(np.asarray(reports, dtype=np.float64) - answer)

    @property
    def privacy(self) -> NumberPrivacy:
        s = self.scrambler
        measure = f"E[S^2] = {s.second_moment:.6g} (the same for every answer)"
        protection = (
            f"the report misses the answer by sqrt(E[S^2]) = {math.sqrt(s.second_moment):.6g} "
            "in root mean square"
        )
        if isinstance(s, Laplace) and self.bounds is not None:
            low, high = self.bounds
            # Proof note (additive Laplace scrambling, docs/architecture.md#proof-notes):
            # eps = (high - low) / b: f(z - x) / f(z - x') = exp((|z - x'| - |z - x|) / b)
            # <= exp(|x - x'| / b) (triangle inequality), attained for z >= high
            eps = (high - low) / s.scale
            why = (
                f"Laplace scrambling of scale b = {s.scale:g} of answers in [{low:g}, "
                f"{high:g}]: the report densities' ratio exp((|z - x'| - |z - x|) / b) is "
                f"at most exp((high - low) / b), attained for z >= high"
            )
            return NumberPrivacy(eps, why, protection + f"; and epsilon-LDP with epsilon = "
                                 f"{eps:.6g}", measure)  # fmt: skip
        if isinstance(s, Laplace):
            why = (
                "Laplace scrambling of unbounded answers: answers x, x' give a density ratio "
                "up to exp(|x - x'| / b), without bound (give `bounds` for a finite epsilon)"
            )
        elif s.name == "normal":
            why = (
                "the log ratio of normal report densities, ((z - x')^2 - (z - x)^2) / "
                "(2 sd^2), grows without bound in z, even for bounded answers (normal noise "
                "gives (epsilon, delta) with delta > 0 only)"
            )
        else:
            why = _MOVING_SUPPORT
        return NumberPrivacy(math.inf, why, protection, measure)


@dataclass(frozen=True)
class Multiplicative(ScrambledDesign):
    """Multiplicative scrambling: the respondent reports ``Z = X S``, ``S`` drawn from
    ``scrambler`` with ``E[S] != 0`` (Eichhorn & Hayre 1983; RRTCS's ``EichhornHayre``).

    De-scrambled value ``X^ = Z / E[S]``; ``Var X^ = Var X + E[X^2] Var S / E[S]^2``
    (Eichhorn & Hayre 1983, eq. 2.3).  :meth:`eichhorn_hayre` builds their design with
    ``S`` F-distributed.

    ``bounds=(low, high)`` with ``low > 0`` and an F scrambler gives a finite epsilon,
    ``max(d1, d2) / 2 * ln(high / low)`` (see :attr:`privacy`).

    >>> d = Multiplicative.eichhorn_hayre(20, 20)
    >>> round(d.scrambler.mean, 6)
    1.111111
    >>> reports = d.randomize([20.0, 40.0] * 2000, rng=2)
    >>> abs(d.estimate(reports).value - 30) < 3 * d.estimate(reports).se
    True
    """

    scrambler: Distribution
    bounds: tuple[float, float] | None = None
    name: ClassVar[str] = "multiplicative"

    def __post_init__(self) -> None:
        s = check_distribution("scrambler", self.scrambler)
        if not abs(s.mean) > 0:
            raise ParameterError(
                "`scrambler` must have a mean other than 0 (the answer is recovered as "
                f"Z / E[S]), got {s.describe()} with mean {s.mean:g}."
            )
        object.__setattr__(self, "bounds", check_bounds(self.bounds))

    @classmethod
    def eichhorn_hayre(
        cls, d1: float = 20.0, d2: float = 20.0, *, bounds: tuple[float, float] | None = None
    ) -> Multiplicative:
        """Eichhorn & Hayre's design: ``S`` from Snedecor's F with ``d1, d2`` degrees of
        freedom (RRTCS's example data: ``F(20, 20)``, ``mu = 1.111111``)."""
        return cls(FDistribution(d1, d2), bounds=bounds)

    def parameters(self) -> dict[str, Any]:
        return _parameters(self.scrambler, self.bounds)

    def _scramble(self, x: FloatArray, words: npt.NDArray[np.uint64]) -> FloatArray:
        return np.asarray(x * self.scrambler.sample(words[:, 0]), dtype=np.float64)

    def descramble(self, reports: npt.ArrayLike) -> FloatArray:
        return finite_array("reports", reports) / self.scrambler.mean

    def report_mean(self, mean_x: float) -> float:
        return mean_x * self.scrambler.mean

    def report_variance(self, mean_x: float, var_x: float) -> float:
        # Var(XS) = E[X^2] E[S^2] - E[X]^2 E[S]^2 (X and S independent)
        s = self.scrambler
        return (var_x + mean_x**2) * s.second_moment - mean_x**2 * s.mean**2

    def descrambled_variance(self, mean_x: float, var_x: float) -> float:
        return self.report_variance(mean_x, var_x) / self.scrambler.mean**2

    def privacy_measure(self, mean_x: float, var_x: float) -> float:
        # E[(XS - X)^2] = E[X^2] E[(S - 1)^2]
        s = self.scrambler
        return (var_x + mean_x**2) * (s.variance + (s.mean - 1) ** 2)

    def report_logpdf(self, reports: npt.ArrayLike, answer: float) -> FloatArray:
        """``ln f(z | x) = ln f_S(z / x) - ln |x|`` for an answer ``x != 0``."""
        if answer == 0:
            raise ParameterError("`answer` must not be 0 (the report is then 0 always).")
        z = np.asarray(reports, dtype=np.float64)
        return np.asarray(self.scrambler.logpdf(z / answer) - math.log(abs(answer)))

    @property
    def privacy(self) -> NumberPrivacy:
        s = self.scrambler
        measure = (
            f"E[X^2] E[(S - 1)^2] = E[X^2] x {s.variance + (s.mean - 1) ** 2:.6g} (grows "
            "with the answer)"
        )
        protection = (
            "the report hides the answer's scale by the factor S: the relative error "
            f"|Z / E[S] - X| / |X| has root mean square sd(S) / |E[S]| = "
            f"{math.sqrt(s.variance) / abs(s.mean):.6g}; an answer of 0 is reported as 0"
        )
        if isinstance(s, FDistribution) and self.bounds is not None and self.bounds[0] > 0:
            low, high = self.bounds
            # Proof note (multiplicative F scrambling, docs/architecture.md#proof-notes): ln Z =
            # ln X + ln S, and ln S has the log density g(t) = d1 t / 2 - (d1 + d2) / 2 *
            # ln(1 + d1 / d2 e^t) + c, concave with slope in (-d2 / 2, d1 / 2): so
            # |g(t - a) - g(t - a')| <= max(d1, d2) / 2 |a - a'|, the limit in a tail.
            eps = max(s.d1, s.d2) / 2 * math.log(high / low)
            why = (
                f"F({s.d1:g}, {s.d2:g}) scrambling of answers in [{low:g}, {high:g}]: ln Z "
                "= ln X + ln S and the log density of ln S has slopes within (-d2/2, d1/2), "
                "so the ratio is at most (high / low)^(max(d1, d2) / 2), approached in a tail"
            )
            return NumberPrivacy(eps, why, protection, measure)
        if isinstance(s, FDistribution):
            why = (
                "answers are not bounded away from 0 (give bounds (low, high) with low > 0 "
                "for a finite epsilon): an answer of 0 is always reported as 0"
            )
        else:
            why = (
                "an answer of 0 is always reported as 0, and for answers bounded away from 0 "
                f"the log density of ln|S| ({s.describe()}) has unbounded slope or a "
                "moving support, so the ratio of report densities has no bound"
            )
        return NumberPrivacy(math.inf, why, protection, measure)
