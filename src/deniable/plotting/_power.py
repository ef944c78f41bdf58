"""Power curves (power against sample size), one line per design or per epsilon.

Needs the ``[plot]`` extra (matplotlib), imported only when a plot is drawn.  The figure is
built with :class:`matplotlib.figure.Figure` (no pyplot, no global state, no display) and
saved in the format named by the file's extension.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deniable.common import atomic_write, format_parameters
from deniable.common import validation as v
from deniable.designs import Design
from deniable.estimation import power_curve
from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = ["PLOT_FORMATS", "design_label", "epsilon_lines", "plot_power_curves"]

#: File extensions a power curve can be saved as.
PLOT_FORMATS = (".png", ".svg", ".pdf")
#: Up to this many sample sizes every integer is drawn (the exact test's saw-tooth shows).
_ALL_POINTS = 20_000


def design_label(design: Design) -> str:
    """``name(params), ε = value`` (``∞`` for an infinite epsilon)."""
    eps = design.epsilon
    shown = "∞" if math.isinf(eps) else f"{eps:.3g}"  # never a finite stand-in for infinity
    params = ", ".join(
        f"{k}={x:.4g}" if isinstance(x, float) else f"{k}={x}"
        for k, x in design.parameters().items()
    )
    return f"{design.name}({params}), ε = {shown}"


def epsilon_lines(design: Design, epsilons: Sequence[float]) -> dict[str, Design]:
    """One design per epsilon, the kind of ``design`` rebuilt by its class's
    ``from_epsilon``, labelled ``name(carried), ε = eps`` (for :func:`plot_power_curves`).

    Whatever else ``from_epsilon`` takes is carried over from ``design`` when it has a
    parameter of that name (``k`` of ``categorical``, ``draws`` of ``kuk``, ``q`` of
    ``unrelated``, ``calibration`` of ``binary``); a required one it lacks is a
    :class:`~deniable.exceptions.ParameterError` naming it.  ``categorical`` given its own
    ``forced`` cannot be kept (``from_epsilon`` forces uniformly): an error too, rather
    than lines for a different design.

    >>> from deniable.designs import Categorical
    >>> lines = epsilon_lines(Categorical(k=3, p_truthful=0.6), [1.0, 2.0])
    >>> list(lines), round(lines["categorical(k=3), ε = 2"].epsilon, 12)
    (['categorical(k=3), ε = 1', 'categorical(k=3), ε = 2'], 2.0)
    """
    if not isinstance(design, Design):
        raise ParameterTypeError(f"`design` must be a Design, got {type(design).__name__}.")
    make = getattr(type(design), "from_epsilon", None)
    if make is None:
        raise ParameterError(f"design {design.name!r} has no from_epsilon (its ε is fixed).")
    given = design.parameters()
    carried: dict[str, Any] = {}
    for name, par in list(inspect.signature(make).parameters.items())[1:]:  # after ε
        if name in given:
            carried[name] = given[name]
        elif par.default is inspect.Parameter.empty:
            raise ParameterError(
                f"design {design.name!r} needs `{name}` besides ε to be built by from_epsilon; "
                f"give it as a parameter of the design ({name}=VALUE)."
            )
    if given.get("forced") is not None:
        raise ParameterError(
            f"design {design.name!r} with `forced` = {given['forced']} cannot be rebuilt per ε "
            "(from_epsilon forces uniformly); drop `forced` or draw it without other epsilons."
        )
    extra = f"({format_parameters(carried)})" if carried else ""
    return {f"{design.name}{extra}, ε = {eps:g}": make(eps, **carried) for eps in epsilons}


def _lines(designs: Any) -> list[tuple[str, Design]]:
    if isinstance(designs, Design):
        return [(design_label(designs), designs)]
    if isinstance(designs, Mapping):
        items = [(str(k), d) for k, d in designs.items()]
    elif isinstance(designs, Sequence) and not isinstance(designs, str):
        items = [(design_label(d) if isinstance(d, Design) else "", d) for d in designs]
    else:
        items = []
    if not items or not all(isinstance(d, Design) for _, d in items):
        raise ParameterTypeError(
            "`designs` must be a design, a non-empty sequence of designs or a mapping of "
            f"labels to designs, got {type(designs).__name__} {designs!r}."
        )
    return items


#: The largest n of a curve: power's own bound (deniable.estimation's MAX_N).
_MAX_N = 2**62


def _grid(n_min: int, n_max: int) -> Any:
    if n_max - n_min + 1 <= _ALL_POINTS:
        return np.arange(n_min, n_max + 1, dtype=np.int64)
    return np.unique(np.linspace(n_min, n_max, _ALL_POINTS // 4).round().astype(np.int64))


def plot_power_curves(
    path: str | os.PathLike[str],
    designs: Design | Sequence[Design] | Mapping[str, Design],
    prevalence: float,
    null: float | None = None,
    *,
    n_max: int,
    n_min: int = 1,
    target: float | None = None,
    title: str | None = None,
    **test: Any,
) -> Path:
    """Draw power against ``n`` in ``[n_min, n_max]`` for each design and save it to ``path``.

    ``designs``: one design, a sequence (labelled with name, parameters and ε; ∞ is
    printed as ∞), or a mapping ``label -> design`` (e.g. one design per ε from
    ``Warner.from_epsilon``).  ``prevalence``, ``null`` and the keyword arguments in
    ``test`` (``control``, ``ratio``, ``alternative``, ``alpha``, ``method``, ``category``,
    ``share``, ``nuisance``) are those of :func:`~deniable.estimation.power_curve`.
    A two-group design also gets a dashed line: its naive power with the nuisance known.
    ``target`` draws a horizontal line at that power.  The format follows the extension
    of ``path`` (``.png``, ``.svg``, ``.pdf``).  Returns the path written.

    Raises
    ------
    ImportError
        When matplotlib is missing (``pip install 'deniable[plot]'``).
    """
    out = Path(path)
    if out.suffix.lower() not in PLOT_FORMATS:
        raise ParameterError(
            f"`path` must end in one of {', '.join(PLOT_FORMATS)} (the format follows the "
            f"extension), got {str(path)!r}."
        )
    # at most power()'s own bound on n (2**62: its counts are 64-bit integers)
    lo = v.integer("n_min", n_min, minimum=1, maximum=_MAX_N, why="counts are 64-bit integers")
    hi = v.integer("n_max", n_max, minimum=lo, maximum=_MAX_N, why="counts are 64-bit integers")
    goal = None if target is None else v.probability("target", target)
    lines = _lines(designs)
    ns = _grid(lo, hi)
    curves = []
    for label, d in lines:  # compute everything first: bad input fails before drawing
        curves.append((label, power_curve(d, ns, prevalence, null, **test), False))
        if d.n_groups == 2:  # the naive curve beside: nuisance taken as known
            naive = power_curve(d, ns, prevalence, null, known=True, **test)
            curves.append((f"{label} (nuisance known, naive)", naive, True))
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - exercised with matplotlib hidden
        raise ImportError(
            "plotting power curves needs matplotlib: pip install 'deniable[plot]'"
        ) from exc
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.subplots()
    for label, pw, dashed in curves:
        ax.plot(ns, pw, label=label, linewidth=1.2, linestyle="--" if dashed else "-")
    if goal is not None:
        ax.axhline(goal, color="grey", linewidth=0.8, linestyle=":", label=f"power {goal:g}")
    ax.set_xlim(lo, hi)
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("sample size n")
    ax.set_ylabel("power")
    ax.grid(True, linewidth=0.3)
    ax.set_title(title or _title(prevalence, null, test))
    ax.legend(fontsize="small", loc="lower right")
    metadata = {"Date": None} if out.suffix.lower() == ".svg" else None
    fmt = out.suffix.lower()[1:]  # a temporary file renamed into place: never half-written
    atomic_write(out, lambda tmp: fig.savefig(tmp, format=fmt, metadata=metadata))
    return out


def _title(prevalence: float, null: float | None, test: Mapping[str, Any]) -> str:
    alt = test.get("alternative", "two-sided")
    alpha = test.get("alpha", 0.05)
    control = test.get("control")
    if control is not None:
        h = f"H0: π_a = π_b (π_a = {prevalence:g}, π_b = {control:g})"
    else:
        h = f"H0: π = {null:g}, true π = {prevalence:g}"
    method = "exact binomial" if test.get("method", "normal") == "exact" else "Wald"
    return f"Power of the {method} test, {h}, {alt}, α = {alpha:g}"
