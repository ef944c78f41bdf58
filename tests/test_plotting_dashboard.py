"""The dashboard plots (``deniable.plotting._dashboard``): valid SVG, the same numbers give the
same bytes, label text never appears as text (it is drawn as paths: a respondent-facing
string cannot inject markup), and bad input is refused with a message naming the argument."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

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


def _time_axis(monkeypatch: pytest.MonkeyPatch, ends: list[datetime]) -> tuple[Any, Any]:
    """The limits of the time axis of the timeline through ``ends`` (the figure caught on
    its way to SVG), as datetimes."""
    from matplotlib import dates

    from deniable.plotting import _dashboard

    figures = []
    to_svg = _dashboard.svg_text

    def catch(fig: Any) -> str:
        figures.append(fig)
        return to_svg(fig)

    monkeypatch.setattr(_dashboard, "svg_text", catch)
    n = len(ends)
    timeline_svg(ends, [("q", [0.5] * n, [0.2] * n, [0.8] * n)], ylabel="share")
    lo, hi = figures[-1].axes[0].get_xlim()
    return dates.num2date(lo), dates.num2date(hi)


def test_a_single_point_gets_a_day_not_four_years(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: matplotlib widened the zero-width date range to about four years (2023-12 to
    2028-05 around one point), so the point sat alone in an empty plot."""
    t0 = datetime(2026, 3, 1, 17, 30, tzinfo=UTC)
    lo, hi = _time_axis(monkeypatch, [t0])
    assert lo < t0 < hi
    assert hi - lo == timedelta(days=1) and t0 - lo == hi - t0


def test_close_points_fill_the_time_axis(monkeypatch: pytest.MonkeyPatch) -> None:
    t0 = datetime(2026, 3, 1, 9, tzinfo=UTC)
    hourly = [t0 + timedelta(hours=i) for i in range(3)]
    lo, hi = _time_axis(monkeypatch, hourly)
    assert lo < hourly[0] and hi > hourly[-1]
    assert hi - lo <= timedelta(hours=3)  # 2 h of points and half an hour on each side
    daily = [t0 + timedelta(days=i) for i in range(30)]
    lo, hi = _time_axis(monkeypatch, daily)
    assert timedelta(days=29) < hi - lo <= timedelta(days=29) * 1.1 + timedelta(seconds=1)


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
