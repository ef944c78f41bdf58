"""Optional additive scrambling with a split sample (Gupta, Gupta & Singh 2002; Gupta,
Shabbir & Sehra 2010): each respondent scrambles only if the question is sensitive to
them, with an unknown probability ``T`` (the question's sensitivity level), which the two
subsamples' scramblers of different variances identify.
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
from deniable.quantitative._estimate import finite_array, finite_result, scale_of
from deniable.quantitative._results import NumberEstimate, NumberPrivacy
from deniable.randomness import random_words, resolve_rng

__all__ = ["OptionalAdditive", "subsamples"]

FloatArray = npt.NDArray[np.float64]


def subsamples(group: Any, n: int) -> npt.NDArray[np.bool_]:
    """``True`` for the second subsample (group 2), from labels 1 and 2."""
    arr = np.asarray(group)
    if arr.ndim != 1 or arr.size != n or arr.dtype.kind not in "iu":
        raise DataError(
            f"`group` must be a 1-D integer array of 1 and 2 with one entry per respondent "
            f"({n}), got shape {arr.shape} dtype {arr.dtype}."
        )
    if not np.isin(arr, (1, 2)).all():
        raise DataError("`group` must hold only the subsamples 1 and 2.")
    return np.asarray(arr == 2)


@dataclass(frozen=True)
class OptionalAdditive(ScrambledDesign):
    """Optional additive scrambling in two subsamples: a respondent of subsample ``g``
    reports ``Z = X + S_g`` if they choose to scramble (probability ``T``, unknown) and
    ``Z = X`` otherwise; ``S_1`` from ``first``, ``S_2`` from ``second``, both of mean 0
    and of different variances (Gupta, Shabbir & Sehra 2010).

    The mean: ``E[Z] = E[X]`` in both subsamples, so ``X^ = Z``.  The sensitivity level:
    ``E[Z^2 | g] = E[X^2] + T Var S_g``, so ``T^ = (m_1 - m_2) / (Var S_1 - Var S_2)`` with
    ``m_g`` the mean of ``Z^2`` in subsample ``g`` (:meth:`estimate_sensitivity`).

    >>> from deniable.quantitative import Normal
    >>> d = OptionalAdditive(Normal(0, 10), Normal(0, 30))
    >>> group = np.repeat([1, 2], 4000)
    >>> z = d.randomize(np.full(8000, 40.0), group=group, scramble=0.6, rng=4)
    >>> t = d.estimate_sensitivity(z, group=group)
    >>> abs(t.value - 0.6) < 3 * t.se
    True
    """

    first: Distribution
    second: Distribution
    name: ClassVar[str] = "optional-additive"
    words_per_report: ClassVar[int] = 2

    def __post_init__(self) -> None:
        for name in ("first", "second"):
            s = check_distribution(name, getattr(self, name))
            if s.mean != 0:
                raise ParameterError(
                    f"`{name}` must have mean 0 (then the mean needs no sensitivity level), "
                    f"got {s.describe()} with mean {s.mean:g}."
                )
        if self.first.variance == self.second.variance:
            raise ParameterError(
                "`second` must have a variance other than `first`'s "
                f"({self.first.variance:g}: the sensitivity level is identified by the "
                f"difference), got {self.second.variance:g}."
            )

    def parameters(self) -> dict[str, Any]:
        return {"first": self.first.describe(), "second": self.second.describe()}

    def randomize(  # type: ignore[override]
        self, values: npt.ArrayLike, *, group: Any, scramble: Any, rng: Any = None
    ) -> FloatArray:
        """The reports of respondents in subsamples ``group`` (1 or 2): ``scramble`` is
        each one's choice to scramble (a boolean array) or, to simulate, the probability
        ``T`` of choosing it.  Two words per report, whatever the answer and choice."""
        x = self._answers(values)
        second = subsamples(group, x.size)
        words = random_words(resolve_rng(rng), 2 * x.size).reshape(x.size, 2)
        if isinstance(scramble, np.ndarray | list | tuple):
            chosen = np.asarray(scramble)
            if chosen.shape != x.shape or chosen.dtype.kind != "b":
                raise DataError(
                    f"`scramble` must be a probability or a boolean array with one entry per "
                    f"respondent ({x.size}), got shape {chosen.shape} dtype {chosen.dtype}."
                )
        else:
            t = v.probability("scramble", scramble)
            chosen = open_uniform(words[:, 0]) < t
        noise = np.where(second, self.second.sample(words[:, 1]), self.first.sample(words[:, 1]))
        with np.errstate(over="ignore", invalid="ignore"):
            z = np.asarray(x + np.where(chosen, noise, 0.0), dtype=np.float64)
        return finite_result("values", z, "scrambled report")

    def _scramble(self, x: FloatArray, words: npt.NDArray[np.uint64]) -> FloatArray:
        raise NotImplementedError  # randomize needs the subsamples

    def descramble(self, reports: npt.ArrayLike) -> FloatArray:
        return finite_array("reports", reports)

    def report_mean(self, mean_x: float) -> float:
        return mean_x

    def report_variance(
        self, mean_x: float, var_x: float, *, sensitivity: float = 1.0, group: int = 1
    ) -> float:
        """``Var Z = Var X + T Var S_g`` in subsample ``group``."""
        s = self.first if group == 1 else self.second
        return var_x + sensitivity * s.variance

    def descrambled_variance(
        self, mean_x: float, var_x: float, *, sensitivity: float = 1.0, share: float = 0.5
    ) -> float:
        """``Var X + T (1 - share) Var S_1 + T share Var S_2``, ``share`` the second
        subsample's share."""
        return var_x + sensitivity * (
            (1 - share) * self.first.variance + share * self.second.variance
        )

    def privacy_measure(
        self, mean_x: float, var_x: float, *, sensitivity: float = 1.0, share: float = 0.5
    ) -> float:
        # E[(Z - X)^2] = T E[S_g^2], averaged over the subsamples
        return sensitivity * ((1 - share) * self.first.variance + share * self.second.variance)

    @property
    def privacy(self) -> NumberPrivacy:
        return NumberPrivacy(
            math.inf,
            "a respondent who chooses not to scramble reports the answer itself",
            "each respondent decides: scrambling gives additive protection E[S_g^2] = Var S_g; "
            "not scrambling gives none",
            "T Var S_g in subsample g (T: the share who scramble)",
        )

    def estimate_sensitivity(self, reports: npt.ArrayLike, *, group: Any) -> NumberEstimate:
        """``T^ = (m_1 - m_2) / (Var S_1 - Var S_2)``, ``m_g`` the mean of ``Z^2`` in
        subsample ``g``, with ``Var T^ = (s_1^2 / n_1 + s_2^2 / n_2) / (Var S_1 - Var
        S_2)^2``, ``s_g^2`` the sample variance of ``Z^2`` there (independent subsamples;
        may leave [0, 1], like every moment estimate)."""
        z = finite_array("reports", reports)
        second = subsamples(group, z.size)
        c = scale_of(z)
        sq = (z / c) ** 2  # moments of (z / c)^2, scaled back by c^2: no overflow on the way
        parts = [sq[~second], sq[second]]
        if min(p.size for p in parts) < 2:
            raise DataError(
                "the sensitivity level needs at least 2 reports in each subsample, got "
                f"{parts[0].size} and {parts[1].size}."
            )
        gap = self.first.variance - self.second.variance
        with np.errstate(over="ignore", invalid="ignore"):
            factor = np.float64(c) * np.float64(c) / gap
            value = float((parts[0].mean() - parts[1].mean()) * factor)
            se = float(math.sqrt(sum(float(p.var(ddof=1)) / p.size for p in parts)) * abs(factor))
        if not (math.isfinite(value) and math.isfinite(se)):
            raise DataError(
                "`reports` are too large: the sensitivity level or its standard error is past "
                "the largest floating-point number."
            )
        df = float(min(p.size for p in parts) - 1)
        return NumberEstimate(
            "sensitivity level", value, se, df, z.size,
            "two independent subsamples", self.describe(),
            notes=("df: the smaller subsample's size minus 1 (conservative)",),
        )  # fmt: skip
