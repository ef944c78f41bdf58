"""Plots that explain epsilon: truth probability, lying probability, posterior after a "yes"."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deniable.audit import (
    check_epsilons,
    epsilon_from_lying_probability,
    odds_to_probability,
    posterior,
)
from deniable.common import atomic_write
from deniable.common import validation as v
from deniable.exceptions import ParameterError
from deniable.results import format_cell as _cell

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["plot_epsilon_lying", "plot_epsilon_truth", "plot_posterior"]


def _figure() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(
            "plotting needs matplotlib: install it with `pip install deniable[plot]`."
        ) from exc
    return Figure(figsize=(6.4, 4.2), layout="constrained")


def _save(fig: Figure, path: str | Path | None) -> Figure:
    if path is not None:
        p = Path(path)
        suffix = p.suffix.lower()
        if suffix not in (".png", ".svg", ".pdf"):
            raise ParameterError(f"`path` must end in .png, .svg or .pdf, got {str(path)!r}.")
        atomic_write(p, lambda tmp: fig.savefig(tmp, format=suffix[1:]))  # never half-written
    return fig


def _grid(lo: float, hi: float, n: int = 200) -> list[float]:
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def plot_epsilon_truth(path: str | Path | None = None, *, max_epsilon: float = 5.0) -> Figure:
    """Plot the truth probability and the odds of truth against epsilon, both calibrations.

    Returns the matplotlib ``Figure``; writes it to ``path`` (``.png``, ``.svg`` or ``.pdf``)
    when given.  Needs matplotlib (``pip install deniable[plot]``).
    """
    top = v.positive("max_epsilon", max_epsilon)
    fig = _figure()
    ax, ax2 = fig.subplots(1, 2)
    eps = _grid(0.0, top)
    ax.plot(eps, [odds_to_probability(e) for e in eps], label="exact: e^ε/(1+e^ε)")
    ax.plot(eps, [odds_to_probability(e / 2) for e in eps], "--", label="half: e^(ε/2)/(1+e^(ε/2))")
    ax.set_xlabel("ε")
    ax.set_ylabel("P(report = truth)")
    ax.set_ylim(0.5, 1.0)
    ax.legend(loc="lower right", fontsize="small")
    ax2.semilogy(eps, [math.exp(e) for e in eps], label="exact: e^ε")
    ax2.semilogy(eps, [math.exp(e / 2) for e in eps], "--", label="half: e^(ε/2)")
    ax2.set_xlabel("ε")
    ax2.set_ylabel("odds of truth")
    ax2.legend(loc="upper left", fontsize="small")
    fig.suptitle("Binary mechanism: truth probability and odds against ε")
    return _save(fig, path)


def plot_epsilon_lying(path: str | Path | None = None) -> Figure:
    """Plot ``eps = ln((1 - q) / q)`` against the lying probability ``q`` in (0, 1/2]."""
    fig = _figure()
    ax = fig.subplots()
    qs = _grid(0.005, 0.5)
    ax.plot(qs, [epsilon_from_lying_probability(q) for q in qs])
    ax.set_xlabel("lying probability q")
    ax.set_ylabel("ε = ln((1 − q)/q)")
    ax.set_xlim(0, 0.5)
    ax.set_ylim(0, None)
    ax.set_title("Binary mechanism: ε against the lying probability")
    return _save(fig, path)


def plot_posterior(
    epsilons: Sequence[float] = (0.5, 1.0, 2.0, 4.0), path: str | Path | None = None
) -> Figure:
    """Plot the posterior after a "yes" against the prior, one curve per epsilon."""
    eps_list = check_epsilons("epsilons", epsilons)
    fig = _figure()
    ax = fig.subplots()
    priors = _grid(0.0, 1.0)
    ax.plot(priors, priors, ":", color="grey", label="no information (ε = 0)")
    for eps in eps_list:
        ax.plot(priors, [posterior(p, eps) for p in priors], label=f"ε = {_cell(eps)}")
    ax.set_xlabel("prior P(has A)")
    ax.set_ylabel("P(has A | 'yes')")
    ax.set_title("What one 'yes' tells an adversary")
    ax.legend(loc="lower right", fontsize="small")
    return _save(fig, path)
