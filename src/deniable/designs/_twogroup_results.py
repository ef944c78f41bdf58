"""Results of the two-group designs: the counts of each group and the estimates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import format_number, format_parameters, to_jsonable
from deniable.common import validation as v
from deniable.designs._base import Design
from deniable.designs._tally import Tally
from deniable.exceptions import DataError
from deniable.results import Estimate, Result, Table

__all__ = ["TwoGroupEstimate", "group_counts", "is_pair"]

FloatArray = npt.NDArray[np.float64]


def is_pair(x: Any) -> bool:
    """True for a list, tuple or array of length 2 (not a string)."""
    return isinstance(x, Sequence | np.ndarray) and not isinstance(x, str) and len(x) == 2


# --------------------------------------------------------------------------- tally


def group_counts(tally: Tally) -> tuple[tuple[int, int], tuple[int, int]]:
    """``((y1, y2), (n1, n2))`` from the four counts ``(no1, yes1, no2, yes2)`` of a
    two-group tally.

    >>> group_counts(Tally([191, 373, 294, 398]))
    ((373, 398), (564, 692))
    """
    c = tally.counts.tolist()
    if len(c) != 4:
        raise DataError(
            f"a two-group tally needs 4 counts (no_1, yes_1, no_2, yes_2), got {len(c)}."
        )
    return (c[1], c[3]), (c[0] + c[1], c[2] + c[3])


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class TwoGroupEstimate(Result):
    """The estimates of a two-group design: one :class:`~deniable.Estimate` per parameter.

    Attributes
    ----------
    design : the design.
    tally : the four counts ``(no1, yes1, no2, yes2)`` of both groups (a bound
        :class:`~deniable.designs.Tally`).
    estimates : parameter name -> :class:`~deniable.Estimate` (moment value, bounded MLE,
        SEs in both conventions, Wald interval; ``exact`` and ``wilson`` intervals where the
        parameter is a monotone function of one group's share of "yes" alone).
    covariance : delta-method covariance of the moment estimates (plug-in, ``n_g``), in the
        order of ``parameters``.
    covariance_unbiased : the same with ``n_g - 1``.
    log_likelihood : the two-binomial log-likelihood at the bounded MLE.
    """

    design: Design  # the two-group design that produced it
    tally: Tally
    estimates: Mapping[str, Estimate]
    covariance: FloatArray = field(repr=False, compare=False)
    covariance_unbiased: FloatArray = field(repr=False, compare=False)
    log_likelihood: float

    @property
    def parameters(self) -> tuple[str, ...]:
        """The parameter names, the prevalence first."""
        return tuple(self.estimates)

    def __getitem__(self, name: str) -> Estimate:
        if name not in self.estimates:
            v.choice("parameter", name, self.parameters)
        return self.estimates[name]

    @property
    def prevalence(self) -> Estimate:
        """The estimate of the prevalence ``pi`` (every design has one)."""
        return self.estimates["prevalence"]

    @property
    def n(self) -> tuple[int, int]:
        """``(n1, n2)``."""
        return self.n_counts

    @property
    def yes_counts(self) -> tuple[int, int]:
        """``(y1, y2)``: "yes" reports per group."""
        return group_counts(self.tally)[0]

    @property
    def n_counts(self) -> tuple[int, int]:
        """``(n1, n2)``: reports per group."""
        return group_counts(self.tally)[1]

    @property
    def lambda_hat(self) -> tuple[float, float]:
        """Observed share of "yes" reports in each group."""
        (y1, y2), (n1, n2) = group_counts(self.tally)
        return y1 / n1, y2 / n2

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Plain-JSON dict: numbers stay numbers; infinities and NaN become strings.

        ``groups`` holds each group's counts; ``yes``, ``n`` and ``lambda_hat`` hold the
        same as pairs (group 1, group 2) and ``n_total`` both groups' reports."""
        lam = self.lambda_hat
        out = {
            "design": self.design.name,
            "parameters": self.design.parameters(),
            "epsilon": self.design.epsilon,
            "groups": [
                {"group": g + 1, "yes": y, "n": n, "lambda_hat": lam[g]}
                for g, (y, n) in enumerate(zip(self.yes_counts, self.n_counts, strict=True))
            ],
            "level": level,
            "log_likelihood": self.log_likelihood,
            "estimates": {k: e.to_dict(level) for k, e in self.estimates.items()},
            "parameter_order": list(self.parameters),
            "covariance": self.covariance,
            "covariance_unbiased": self.covariance_unbiased,
            "yes": self.yes_counts,
            "n": self.n_counts,
            "lambda_hat": lam,
            "n_total": self.tally.n,
        }
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self, level: float = 0.95) -> Table:
        """Each group's reports, then one row per parameter: the moment estimate, the
        bounded MLE, both SEs and the Wald interval at ``level``; below it the exact
        intervals of the parameters one group's share of "yes" determines alone."""
        groups = [
            (f"group {g + 1}: yes / n", f"{y} / {n}  (share {format_number(lam)})")
            for g, (y, n, lam) in enumerate(
                zip(self.yes_counts, self.n_counts, self.lambda_hat, strict=True)
            )
        ]
        rows = [
            (name, format_number(e.value), format_number(e.bounded), format_number(e.se),
             format_number(e.se_unbiased), e.ci(level, "wald").format())
            for name, e in self.estimates.items()
        ]  # fmt: skip
        exact = tuple(
            f"{level:.0%} CI (exact, from one group's share) for {name}: "
            f"{e.ci(level, 'exact').format()}"
            for name, e in self.estimates.items()
            if "exact" in e.intervals
        )
        parameters = Table(
            ("parameter", "estimate", "MLE", "SE", "SE n-1", f"{level:.0%} CI (Wald)"),
            tuple(rows),
            notes=(
                "estimate: moment (may leave [0, 1]); MLE: bounded to the parameter space; "
                "SE: delta method, plug-in (n_g) and unbiased (n_g - 1)",
                *exact,
            ),
            align="lrrrrr",
        )
        return Table.pairs(
            groups,
            title=f"Two-group estimate: {self.design.name} "
            f"({format_parameters(self.design.parameters())})",
            sections=(parameters,),
        )
