"""What every quantitative (scrambled-response) design shares: the randomizer's plumbing
(words drawn the same whatever the answer), checks of answers and reports, and the
estimate of the mean from the de-scrambled values.

These designs answer with a real number, not one of finitely many reports, so they do not
take the mechanism protocol of :mod:`deniable.designs` (a channel matrix, tallies of
counts, an exact epsilon): :class:`ScrambledDesign` is their own small protocol
(``docs/architecture.md``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, cast

import numpy as np
import numpy.typing as npt

from deniable.common import format_parameters
from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.quantitative._distributions import Distribution
from deniable.quantitative._estimate import estimate_mean, finite_array, finite_result
from deniable.quantitative._results import NumberEstimate, NumberPrivacy
from deniable.randomness import random_words, resolve_rng

__all__ = ["ScrambledDesign", "check_bounds", "check_distribution"]

FloatArray = npt.NDArray[np.float64]


def check_distribution(name: str, value: Any) -> Distribution:
    """``value`` if it is a :class:`Distribution`, else ``ParameterTypeError``."""
    what = "a Distribution (Normal, Uniform, Exponential, Laplace, FDistribution, Constant)"
    v.instance(name, value, Distribution, what)
    return cast(Distribution, value)


def check_bounds(bounds: Any) -> tuple[float, float] | None:
    """``(low, high)`` finite with ``low < high``, or ``None``."""
    if bounds is None:
        return None
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise ParameterTypeError(
            f"`bounds` must be a pair (low, high) or None, got {type(bounds).__name__}."
        )
    low, high = (v.real("bounds", b) for b in bounds)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ParameterError(f"`bounds` must be finite with low < high, got ({low:g}, {high:g}).")
    return (low, high)


class ScrambledDesign:
    """The protocol of the quantitative designs (a base class): ``randomize`` an answer
    into a report, ``descramble`` a report into an unbiased value of the answer, the
    moments of both, ``estimate`` the mean (and total) from a simple random sample or
    under a sample design, and ``privacy``, stated honestly."""

    #: The design's name, as printed.
    name: ClassVar[str] = "scrambled"
    #: 64-bit words each report consumes, whatever the answer.
    words_per_report: ClassVar[int] = 1
    bounds: tuple[float, float] | None = None

    # ------------------------------------------------------------------ per design

    def _scramble(self, x: FloatArray, words: npt.NDArray[np.uint64]) -> FloatArray:
        raise NotImplementedError

    def descramble(self, reports: npt.ArrayLike) -> FloatArray:
        """Each report turned into a value whose expectation given the answer is the
        answer: their mean is unbiased for the population mean."""
        raise NotImplementedError

    def report_mean(self, mean_x: float) -> float:
        """``E[Z]`` for answers of mean ``mean_x``."""
        raise NotImplementedError

    def report_variance(self, mean_x: float, var_x: float) -> float:
        """``Var Z`` for answers of mean ``mean_x`` and variance ``var_x``."""
        raise NotImplementedError

    def descrambled_variance(self, mean_x: float, var_x: float) -> float:
        """``Var X^`` of one de-scrambled report: the variance of the mean from ``n``
        respondents of a simple random sample is this over ``n``."""
        raise NotImplementedError

    def privacy_measure(self, mean_x: float, var_x: float) -> float:
        """Yan, Wang & Lai's (2009) measure ``E[(Z - X)^2]`` for answers of mean ``mean_x``
        and variance ``var_x`` (larger protects more)."""
        raise NotImplementedError

    @property
    def privacy(self) -> NumberPrivacy:
        """The epsilon where one exists (else ``inf``) and what the design protects."""
        raise NotImplementedError

    def parameters(self) -> dict[str, Any]:
        """The parameters by name (distributions by their description)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ shared

    @property
    def epsilon(self) -> float:
        """The LDP epsilon of one report, ``inf`` where the design has none."""
        return self.privacy.epsilon

    def describe(self) -> str:
        """``additive(scrambler=Normal(mean=0, sd=10))``."""
        return f"{self.name}({format_parameters(self.parameters())})"

    def _answers(self, values: Any) -> FloatArray:
        x = finite_array("values", values, show=False)
        if self.bounds is not None:
            low, high = self.bounds
            outside = (x < low) | (x > high)
            if outside.any():
                i = int(np.argmax(outside))
                raise DataError(
                    f"`values` must lie in the design's bounds [{low:g}, {high:g}] (its "
                    f"privacy is stated for them), got a value outside at row {i}."
                )
        return x

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> FloatArray:
        """One scrambled report per answer: ``words_per_report`` 64-bit words each from
        ``rng`` (the CSPRNG by default; an int seed or a Generator for simulation)."""
        x = self._answers(values)
        words = random_words(resolve_rng(rng), x.size * self.words_per_report)
        with np.errstate(over="ignore", invalid="ignore"):
            z = self._scramble(x, words.reshape(x.size, self.words_per_report))
        return finite_result("values", z, "scrambled report")

    def estimate(
        self,
        reports: npt.ArrayLike,
        *,
        sample_design: Any = None,
        population: Any = None,
        domain: Any = None,
    ) -> NumberEstimate:
        """The mean of the answers from the reports (the mean of :meth:`descramble`),
        with its SE and intervals: from a simple random sample (``s^2 / n``, ``t`` with
        ``n - 1`` df) or under ``sample_design`` (a ``deniable.sampling`` design: the
        de-scrambled values are the linearization variables).  ``population``: the
        population size ``N`` (of the domain), for the total ``N`` times the mean.
        ``domain``: a boolean array selecting a subpopulation."""
        with np.errstate(over="ignore", invalid="ignore"):
            xhat = self.descramble(reports)
        return estimate_mean(
            xhat, self.describe(), sample_design=sample_design,
            population=population, domain=domain,
        )  # fmt: skip
