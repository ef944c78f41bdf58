"""The matplotlib plumbing the plots share: pyplot, or an ``ImportError`` that says how to
install it; a figure as reproducible SVG text."""

from __future__ import annotations

import io
import re
from typing import Any

__all__ = ["axes_or_new", "pyplot", "svg_text"]


def pyplot(what: str) -> Any:
    """``matplotlib.pyplot``, or an ``ImportError`` saying that ``what`` needs matplotlib
    and how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(
            f"{what} needs matplotlib; install the `plot` extra: pip install deniable[plot]"
        ) from err
    return plt


def axes_or_new(ax: Any, what: str) -> Any:
    """``ax``, or the axes of a new pyplot figure when it is ``None`` (matplotlib is needed
    either way: :func:`pyplot`)."""
    plt = pyplot(what)
    if ax is None:
        _, ax = plt.subplots()
    return ax


def svg_text(fig: Any) -> str:
    """``fig`` as SVG text that the same figure always gives: text drawn as paths, a fixed
    hash salt, no date, no XML prolog and no XML comments (where matplotlib echoes label
    text)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "deniable"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    return re.sub(r"<!--.*?-->", "", svg, flags=re.DOTALL)
