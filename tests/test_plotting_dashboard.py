"""The dashboard plots (``deniable.plotting._dashboard``): valid SVG, the same numbers give the
same bytes, label text never appears as text (it is drawn as paths: a respondent-facing
string cannot inject markup), and bad input is refused with a message naming the argument."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest

pytest.importorskip("matplotlib")

from deniable.exceptions import ParameterError
from deniable.plotting._dashboard import budget_svg, message_svg, timeline_svg

EVIL = '<script>alert("x")</script>'
SVG_NS = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG_NS}svg"
    assert not any(el.tag in (f"{SVG_NS}script", f"{SVG_NS}foreignObject") for el in root.iter())
    return root


def test_timeline_svg_is_deterministic_and_escapes_labels() -> None:
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    ends = [t0 + timedelta(days=i) for i in range(4)]
    series = [
        (EVIL, [math.nan, 0.4, 0.5, 0.45], [math.nan, 0.1, 0.3, 0.3], [math.nan, 0.7, 0.7, 0.6]),
        ("second", [0.2, 0.1, -0.05, 0.0], [0.0, 0.0, 0.0, 0.0], [0.6, 0.5, 0.3, 0.2]),
    ]
    a = timeline_svg(ends, series, ylabel="share")
    assert a == timeline_svg(ends, series, ylabel="share")
    _parse(a)
    assert "script" not in a and "alert" not in a
    one = timeline_svg(ends[:1], [("q", [0.5], [0.2], [0.8])], ylabel="share")
    assert one != a
    _parse(one)


def test_timeline_svg_refuses_mismatched_series() -> None:
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    with pytest.raises(ParameterError, match="series"):
        timeline_svg([t0, t0], [("q", [0.5], [0.2], [0.8])], ylabel="share")
    with pytest.raises(ParameterError, match="series"):
        timeline_svg([t0], [], ylabel="share")


def test_budget_svg_draws_the_bars_and_the_cap() -> None:
    edges = [0.0, 1.0, 2.0, 3.0]
    a = budget_svg(edges, [3, 0, 5], 3.25)
    b = budget_svg(edges, [3, 1, 5], 3.25)
    assert a != b  # the counts are drawn
    assert a == budget_svg(edges, [3, 0, 5], 3.25)
    _parse(a)
    with pytest.raises(ParameterError, match="edges"):
        budget_svg([0.0, 1.0], [1, 2], 3.0)


def test_message_svg() -> None:
    svg = message_svg(EVIL)
    _parse(svg)
    assert "script" not in svg and svg != message_svg("no reports yet")
