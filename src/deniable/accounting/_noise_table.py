"""The expected absolute error of a released count under each noise mechanism, against
epsilon: :func:`noise_error_table` and its plot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable import _validation as v
from deniable.accounting._noise_common import _int_sensitivity
from deniable.accounting._noise_continuous import GaussianMechanism, LaplaceMechanism
from deniable.accounting._noise_discrete import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
)

__all__ = ["NoiseErrorTable", "noise_error_table", "plot_noise_error"]


_COLUMNS = (
    "laplace",
    "discrete_laplace",
    "gaussian",
    "gaussian_classic",
    "discrete_gaussian",
)


@dataclass(frozen=True)
class NoiseErrorTable:
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
            row.update({name: self.columns[name][i] for name in _COLUMNS})
            out.append(row)
        return out

    def __str__(self) -> str:
        head = ("epsilon", *_COLUMNS)
        lines = [
            f"expected |error| of a count (sensitivity {self.sensitivity}, "
            f"delta {self.delta:g} for the Gaussians)",
            "  ".join(f"{h:>17}" for h in head),
        ]
        for row in self.rows():
            cells = [f"{row['epsilon']:>17g}"]
            for name in _COLUMNS:
                value = row[name]
                cells.append(f"{'n/a':>17}" if value is None else f"{value:>17.4f}")
            lines.append("  ".join(cells))
        return "\n".join(lines)


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
    cols: dict[str, list[float | None]] = {name: [] for name in _COLUMNS}
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


def plot_noise_error(table: NoiseErrorTable, *, ax: Any = None) -> Any:
    """Plot a :class:`NoiseErrorTable` (log-log); returns the matplotlib ``Axes``.

    Needs matplotlib: ``pip install deniable[plot]``.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(
            "plot_noise_error needs matplotlib; install the `plot` extra: "
            "pip install deniable[plot]"
        ) from err
    if ax is None:
        _, ax = plt.subplots()
    for name in _COLUMNS:
        pairs = [(e, y) for e, y in zip(table.epsilons, table.columns[name], strict=True) if y]
        if pairs:
            xs, ys = zip(*pairs, strict=True)
            ax.plot(xs, ys, marker="o", label=name.replace("_", " "))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("expected |error| of a count")
    ax.set_title(f"Noise for a released count (delta = {table.delta:g} for Gaussians)")
    ax.legend()
    return ax
