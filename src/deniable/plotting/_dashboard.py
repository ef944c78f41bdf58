"""The survey dashboard's plots as SVG text: the estimate over time and the distribution of
the epsilon respondents have spent (the forest plot is :mod:`deniable.plotting._forest`).

Drawn like the forest plot: matplotlib's object API (no pyplot state, no display), text as
paths (so no label text, a respondent-facing string, appears in the SVG as text), a fixed
hash salt and no date, XML comments removed: the same numbers give the same SVG.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from deniable.exceptions import ParameterError
from deniable.plotting._mpl import svg_text

__all__ = ["budget_svg", "message_svg", "time_limits", "timeline_svg"]

_BLUE = "#1f4e79"
_COLORS = ("#1f4e79", "#c0504d", "#4f8f3a", "#8064a2", "#d68a1a", "#2c8c99", "#7f7f7f")


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ModuleNotFoundError as exc:
        raise ImportError(
            "the dashboard plots need matplotlib: pip install 'deniable[plot]'"
        ) from exc


def message_svg(text: str, *, width: float = 7.5, height: float = 1.2) -> str:
    """A plot-sized SVG holding only ``text`` (e.g. "no reports yet")."""
    _require_matplotlib()
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    fig.text(0.5, 0.5, text, ha="center", va="center", color="#555555", parse_math=False)
    return svg_text(fig)


#: The time axis around a single bucket end: half a day on each side.
SINGLE_POINT_HALF_SPAN = timedelta(hours=12)


def time_limits(ends: Sequence[datetime]) -> tuple[datetime, datetime] | None:
    """The time axis of a timeline through the bucket ends ``ends``: the points with a
    margin of half the smallest gap between two of them (half a bucket: hourly points get
    half an hour, daily ones half a day), at least 5% of their span on each side; a single
    point gets half a day on each side.  ``None`` when there is no point.

    (Matplotlib widens a zero-width date range to four years, so one point would sit alone
    in the middle of 2024-2028.)

    >>> from datetime import datetime
    >>> lo, hi = time_limits([datetime(2026, 3, 1, 12)])
    >>> lo.isoformat(), hi.isoformat()
    ('2026-03-01T00:00:00', '2026-03-02T00:00:00')
    """
    if not ends:
        return None
    points = sorted(set(ends))
    gaps = [b - a for a, b in itertools.pairwise(points)]
    half_gap = min(gaps) / 2 if gaps else SINGLE_POINT_HALF_SPAN
    pad = max(half_gap, (points[-1] - points[0]) / 20)
    return points[0] - pad, points[-1] + pad


def timeline_svg(
    ends: Sequence[datetime],
    series: Sequence[tuple[str, Sequence[float], Sequence[float], Sequence[float]]],
    *,
    ylabel: str,
) -> str:
    """The estimate over time: for each series ``(label, estimates, lower, upper)`` a line
    through the estimates at the bucket ends and a band for the interval.

    Points without a number (NaN, e.g. before the first report) are left out.  The y axis
    always shows [0, 1] and whatever lies outside it (unbiased estimates may); the time axis
    spans the bucket ends with a margin (:func:`time_limits`), so a single point or a few
    close together fill the plot instead of sitting in a four-year axis.
    """
    if not series or any(len(s[1]) != len(ends) for s in series):
        raise ParameterError(
            "`series` must be a non-empty list of (label, estimates, lower, upper), each as "
            f"long as `ends` ({len(ends)} points)."
        )
    _require_matplotlib()
    from matplotlib import dates
    from matplotlib.figure import Figure

    mdates: Any = dates  # its locators and formatters are untyped
    fig = Figure(figsize=(7.5, 3.4))
    ax: Any = fig.add_subplot()
    low, high = 0.0, 1.0
    for i, (label, est, lo, hi) in enumerate(series):
        color = _COLORS[i % len(_COLORS)]
        keep = [j for j in range(len(ends)) if not math.isnan(est[j])]
        xs = [ends[j] for j in keep]
        ax.plot(xs, [est[j] for j in keep], "o-", color=color, markersize=3.5, linewidth=1.5,
                label=label)  # fmt: skip
        band = [j for j in keep if not (math.isnan(lo[j]) or math.isnan(hi[j]))]
        if band:
            xb = [ends[j] for j in band]
            lb, hb = [lo[j] for j in band], [hi[j] for j in band]
            ax.fill_between(xb, lb, hb, color=color, alpha=0.15, linewidth=0)
            low = min(low, *(lo[j] for j in band))
            high = max(high, *(hi[j] for j in band))
        if keep:
            low = min(low, *(est[j] for j in keep))
            high = max(high, *(est[j] for j in keep))
    ax.set_ylim(low - 0.03, high + 0.03)
    span = time_limits(ends)
    if span is not None:
        ax.set_xlim(*span)
    for y in (0.0, 1.0):
        ax.axhline(y, color="#999999", linewidth=0.8, linestyle=":")
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    return svg_text(fig)


def budget_svg(
    edges: Sequence[float], counts: Sequence[int], cap: float, *, xlabel: str = "epsilon spent"
) -> str:
    """A histogram of the epsilon each respondent has spent (``counts`` per bin between
    consecutive ``edges``) with the cap as a vertical dashed line."""
    if len(edges) != len(counts) + 1 or not counts:
        raise ParameterError(
            f"`edges` must have one more entry than `counts` (at least one bin), got "
            f"{len(edges)} edges and {len(counts)} counts."
        )
    _require_matplotlib()
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 3.0))
    ax = fig.add_subplot()
    widths = [b - a for a, b in itertools.pairwise(edges)]
    ax.bar(list(edges[:-1]), list(counts), width=widths, align="edge", color=_BLUE,
           edgecolor="white", linewidth=0.5)  # fmt: skip
    ax.axvline(cap, color="#c0504d", linestyle="--", linewidth=1.5, label=f"cap {cap:g}")
    ax.set_xlim(0.0, max(edges[-1], cap) * 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("respondents")
    ax.legend(fontsize="small", loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return svg_text(fig)
