"""Pieces of the regression results: SE conventions, likelihood-ratio tests, prevalences."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.results import ConfidenceInterval

__all__ = [
    "SE_TYPES",
    "Covariances",
    "FitData",
    "LRTest",
    "Prevalence",
    "chi2_text",
    "invert_information",
    "logit_interval",
    "zquantile",
]

Array = npt.NDArray[np.float64]

#: The standard-error conventions by name, with the description printed in summaries.
SE_TYPES: Mapping[str, str] = {
    "observed": "observed information (negative Hessian at the MLE)",
    "expected": "expected (Fisher) information at the MLE",
    "opg": "outer product of the scores (BHHH)",
}


def zquantile(level: float) -> float:
    """Two-sided standard normal quantile for a confidence ``level``."""
    from scipy import stats

    return float(stats.norm.ppf(0.5 + v.level(level) / 2))


@dataclass(frozen=True)
class FitData:
    """What a fit used, kept to check that two models are nested (``lr_test``).

    ``p1`` and ``p0`` are per-respondent ``P(report 1 | true 1)``, ``P(report 1 | true 0)``
    (1 and 0 in the direct-questioning rows); ``reports`` the randomized predictor, if any.
    """

    y: Array
    X: Array
    p1: Array
    p0: Array
    reports: Array | None = None


def chi2_text(test: Any) -> str:
    """A chi-squared test (``df``, ``statistic``, ``pvalue``) in words:
    ``chi2(df) = statistic, p = pvalue``."""
    return f"chi2({test.df}) = {test.statistic:.4f}, p = {test.pvalue:.4g}"


@dataclass(frozen=True)
class LRTest:
    """A likelihood-ratio test of a restricted model against a larger one it is nested in.

    ``statistic = 2 (llf_full - llf_restricted)``, asymptotically chi-squared with
    ``df = k_full - k_restricted`` degrees of freedom under the restricted model (Wilks 1938).
    """

    statistic: float
    df: int
    pvalue: float
    llf_full: float
    llf_restricted: float
    full: str
    restricted: str

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: every field."""
        result: dict[str, Any] = to_jsonable(asdict(self))
        return result

    def __str__(self) -> str:
        return f"LR test: {chi2_text(self)}  [{self.restricted}  vs  {self.full}]"


@dataclass(frozen=True)
class Prevalence:
    """A prevalence with its delta-method SE and an interval that stays in (0, 1).

    The interval is ``expit(logit(value) +- z se_logit)`` with
    ``se_logit = se / (value (1 - value))``: a Wald interval on the logit scale, mapped back.
    """

    value: float
    se: float
    lower: float
    upper: float
    level: float
    description: str

    @property
    def ci(self) -> ConfidenceInterval:
        """``(lower, upper)`` as a :class:`~deniable.results.ConfidenceInterval`."""
        return ConfidenceInterval(self.lower, self.upper)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict."""
        result: dict[str, Any] = to_jsonable(
            {
                "estimate": self.value,
                "se": self.se,
                "ci": self.ci,
                "level": self.level,
                "description": self.description,
            }
        )
        return result

    def __str__(self) -> str:
        return (
            f"{self.description}: {self.value:.4f} (SE {self.se:.4f}), "
            f"{self.level:.0%} CI [{self.lower:.4f}, {self.upper:.4f}]"
        )


def logit_interval(value: float, se_logit: float, level: float) -> ConfidenceInterval:
    """``expit(logit(value) -+ z se_logit)``."""
    from scipy.special import expit

    z = zquantile(level)
    if not 0 < value < 1:
        return ConfidenceInterval(value, value)
    eta = math.log(value / (1 - value))
    return ConfidenceInterval(float(expit(eta - z * se_logit)), float(expit(eta + z * se_logit)))


def invert_information(info: Array) -> Array:
    """The covariance ``info^-1`` (NaN where the information is singular)."""
    try:
        return np.asarray(np.linalg.inv(info), dtype=np.float64)
    except np.linalg.LinAlgError:
        return np.full_like(info, np.nan)


class Covariances(Mapping[str, Array]):
    """Covariance matrices by SE convention, each computed from its information on first use.

    Building the expected information of some models costs far more than the fit (numerical
    integration); it is computed only if asked for, then kept.
    """

    def __init__(self, information: Mapping[str, Callable[[], Array]]) -> None:
        self._makers = dict(information)
        self._done: dict[str, Array] = {}

    def __getitem__(self, key: str) -> Array:
        if key not in self._done:
            self._done[key] = invert_information(self._makers[key]())
        return self._done[key]

    def __contains__(self, key: object) -> bool:
        return key in self._makers

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)
