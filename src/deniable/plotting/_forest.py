"""The forest plot of a survey report: one row per question, estimate and interval, as SVG."""

from __future__ import annotations

from collections.abc import Sequence

from deniable.plotting._mpl import svg_text

__all__ = ["forest_svg"]


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ModuleNotFoundError as exc:
        raise ImportError("the forest plot needs matplotlib: pip install 'deniable[plot]'") from exc


def forest_svg(
    labels: Sequence[str],
    estimates: Sequence[float],
    lower: Sequence[float],
    upper: Sequence[float],
    *,
    xlabel: str,
) -> str:
    """The forest plot (one row per label, top to bottom: the estimate as a dot, the interval
    as a line) as SVG text.

    Drawn with matplotlib's object API (no pyplot state), text as paths, a fixed hash salt
    and no date, so the same rows give the same SVG.  XML comments (where matplotlib echoes
    label text) are removed.  The x axis always shows [0, 1] and whatever lies outside it.
    """
    _require_matplotlib()
    from matplotlib.figure import Figure

    k = len(labels)
    fig = Figure(figsize=(7.5, 0.42 * k + 1.3))
    ax = fig.add_subplot()
    ys = list(range(k - 1, -1, -1))
    ax.hlines(ys, lower, upper, color="#1f4e79", linewidth=2)
    ax.plot(estimates, ys, "o", color="#1f4e79", markersize=5)
    ax.set_yticks(ys, list(labels), parse_math=False)
    ax.set_ylim(-0.7, k - 0.3)
    left = min(0.0, *estimates, *lower) - 0.03
    right = max(1.0, *estimates, *upper) + 0.03
    ax.set_xlim(left, right)
    for x in (0.0, 1.0):
        ax.axvline(x, color="#999999", linewidth=0.8, linestyle=":")
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return svg_text(fig)
