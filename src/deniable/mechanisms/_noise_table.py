"""The expected absolute error of a released count under each noise mechanism, against
epsilon: :func:`noise_error_table` and its plot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import format_delta, to_jsonable
from deniable.common import validation as v
from deniable.mechanisms._noise_common import _int_sensitivity
from deniable.mechanisms._noise_continuous import GaussianMechanism, LaplaceMechanism
from deniable.mechanisms._noise_discrete import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from deniable.results import Result, Table

__all__ = ["NoiseErrorTable", "noise_error_table"]


NOISE_TABLE_COLUMNS = (
    "laplace",
    "discrete_laplace",
    "gaussian",
    "gaussian_classic",
    "discrete_gaussian",
)


@dataclass(frozen=True)
class NoiseErrorTable(Result):
    """Expected absolute error of a released count against epsilon, one row per epsilon.

    Columns: ``laplace`` and ``discrete_laplace`` (pure ``epsilon``-DP); ``gaussian``
    (analytic, Balle & Wang), ``gaussian_classic`` (``None`` where ``epsilon >= 1``: the
    classic bound is not proved there) and ``discrete_gaussian`` (exact curve), all
    (``epsilon``, ``delta``)-DP.
    """

    epsilons: tuple[float, ...]
    delta: float
    sensitivity: int
    columns: dict[str, tuple[float | None, ...]]

    def rows(self) -> list[dict[str, float | None]]:
        """One dict per epsilon: ``{"epsilon": ..., "laplace": ..., ...}``."""
        out: list[dict[str, float | None]] = []
        for i, eps in enumerate(self.epsilons):
            row: dict[str, float | None] = {"epsilon": eps}
            row.update({name: self.columns[name][i] for name in NOISE_TABLE_COLUMNS})
            out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: ``delta``, ``sensitivity`` and :meth:`rows`."""
        result: dict[str, Any] = to_jsonable(
            {"delta": self.delta, "sensitivity": self.sensitivity, "rows": self.rows()}
        )
        return result

    def table(self) -> Table:
        """One row per epsilon: each mechanism's expected absolute error (``-`` where the
        classic Gaussian bound is not proved)."""
        rows = [
            (
                f"{row['epsilon']:g}",
                *("-" if row[c] is None else f"{row[c]:.4f}" for c in NOISE_TABLE_COLUMNS),
            )
            for row in self.rows()
        ]
        return Table(
            ("ε", *(c.replace("_", " ") for c in NOISE_TABLE_COLUMNS)),
            tuple(rows),
            title=f"Expected |error| of a count, sensitivity {self.sensitivity}",
            notes=(
                f"Gaussians at δ = {format_delta(self.delta)}; 'gaussian classic' (Dwork-Roth) "
                "is proved for ε < 1 only ('-' above).",
            ),
            align="l" + "r" * len(NOISE_TABLE_COLUMNS),
        )


def noise_error_table(
    epsilons: npt.ArrayLike, *, delta: float = 1e-6, sensitivity: int = 1
) -> NoiseErrorTable:
    """Expected absolute error of each mechanism calibrated to each ``epsilon``.

    >>> t = noise_error_table([0.5, 1.0])
    >>> t.rows()[1]["laplace"], t.rows()[1]["gaussian_classic"] is None
    (1.0, True)
    """
    eps_list = tuple(
        v.positive("epsilons", e) for e in np.atleast_1d(np.asarray(epsilons, dtype=float))
    )
    dlt = v.probability("delta", delta, low_open=True, high_open=True)
    delta_f = _int_sensitivity(sensitivity)
    cols: dict[str, list[float | None]] = {name: [] for name in NOISE_TABLE_COLUMNS}
    for eps in eps_list:
        cols["laplace"].append(LaplaceMechanism.from_epsilon(eps, delta_f).expected_abs_error)
        cols["discrete_laplace"].append(
            DiscreteLaplaceMechanism.from_epsilon(eps, delta_f).expected_abs_error
        )
        cols["gaussian"].append(
            GaussianMechanism.from_epsilon_delta(eps, dlt, delta_f).expected_abs_error
        )
        cols["gaussian_classic"].append(
            GaussianMechanism.from_epsilon_delta(
                eps, dlt, delta_f, method="classic"
            ).expected_abs_error
            if eps < 1
            else None
        )
        cols["discrete_gaussian"].append(
            DiscreteGaussianMechanism.from_epsilon_delta(eps, dlt, delta_f).expected_abs_error
        )
    return NoiseErrorTable(eps_list, dlt, delta_f, {k: tuple(c) for k, c in cols.items()})
