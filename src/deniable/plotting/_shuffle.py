"""Plot of amplification by shuffling: central epsilon against n (log-log)."""

from __future__ import annotations

from typing import Any

from deniable.accounting import ShuffleTable
from deniable.plotting._mpl import axes_or_new

__all__ = ["plot_shuffle"]


def plot_shuffle(table: ShuffleTable, *, ax: Any = None) -> Any:
    """Plot a :class:`ShuffleTable` (epsilon against n, log-log); returns the ``Axes``.

    Needs matplotlib: ``pip install deniable[plot]``.
    """
    ax = axes_or_new(ax, "plot_shuffle")
    ax.plot(table.n, table.numerical, marker="o", label="numerical (clones)")
    pairs = [(s, c) for s, c in zip(table.n, table.closed_form, strict=True) if c is not None]
    if pairs:
        xs, ys = zip(*pairs, strict=True)
        ax.plot(xs, ys, marker="s", label="closed form (Thm. 3.1)")
    ax.axhline(table.epsilon0, linestyle=":", color="grey", label="epsilon0 (no shuffling)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (respondents)")
    ax.set_ylabel("central epsilon")
    ax.set_title(f"Amplification by shuffling, delta = {table.delta:g}")
    ax.legend()
    return ax
