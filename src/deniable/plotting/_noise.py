"""Plot of the noise error table (log-log)."""

from __future__ import annotations

from typing import Any

from deniable.mechanisms import NOISE_TABLE_COLUMNS, NoiseErrorTable
from deniable.plotting._mpl import axes_or_new

__all__ = ["plot_noise_error"]


def plot_noise_error(table: NoiseErrorTable, *, ax: Any = None) -> Any:
    """Plot a :class:`NoiseErrorTable` (log-log); returns the matplotlib ``Axes``.

    Needs matplotlib: ``pip install deniable[plot]``.
    """
    ax = axes_or_new(ax, "plot_noise_error")
    for name in NOISE_TABLE_COLUMNS:
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
