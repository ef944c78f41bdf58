"""A matplotlib figure as reproducible SVG text, shared by the survey's plots."""

from __future__ import annotations

import io
import re
from typing import Any

__all__ = ["svg_text"]


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
