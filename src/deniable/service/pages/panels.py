"""The dashboard's panels against ballot stuffing, as HTML: how respondents come and the
survey's state, the arrival rates with bursts flagged (a small SVG drawn here, the numbers in
tables beside it), and the robustness statement of every estimate.

As in :mod:`deniable.service.pages.html`: every string from a survey file is escaped,
and nothing carries inline script or style (the SVG uses classes and presentation
attributes only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deniable.service.pages.html import _e, _num, _table

__all__ = ["access_line", "arrivals_section", "robustness_section"]

_WIDTH, _HEIGHT, _GAP = 600, 60, 1


def access_line(status: Mapping[str, Any]) -> str:
    """One line: how respondents come (with the invitations redeemed) and the state."""
    if status["access"] == "invitation":
        who = (f"by invitation only ({_e(status['redeemed'])} of {_e(status['invitations'])} "
               "invitations redeemed)")  # fmt: skip
    else:
        who = "anonymous (anyone with the survey's address; new sessions are rate-limited)"
    state = _e(status["state"])
    return f'<p class="meta" id="access">respondents: {who}; state: <strong>{state}</strong></p>'


def _bars(series: Mapping[str, Any], label: str) -> str:
    """A bar per window (a burst in its own class), scaled to the largest count."""
    windows = series["windows"]
    top = max([w["count"] for w in windows] + [1])
    step = _WIDTH / max(len(windows), 1)
    bars = []
    for i, w in enumerate(windows):
        h = 0 if not w["count"] else max(1.0, _HEIGHT * w["count"] / top)
        cls = "bar burst" if w["burst"] else "bar"
        bars.append(
            f'<rect class="{cls}" x="{i * step:.2f}" y="{_HEIGHT - h:.2f}" '
            f'width="{max(step - _GAP, 0.5):.2f}" height="{h:.2f}">'
            f"<title>{_e(w['start'])}: {w['count']}</title></rect>"
        )
    return (
        f'<svg class="arrivals" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" '
        f'height="{_HEIGHT}" role="img" aria-label="{_e(label)}: the counts per window are in '
        f'the table below (at most {top} in one window)">{"".join(bars)}</svg>'
    )


def arrivals_section(data: Mapping[str, Any]) -> str:
    """The arrival rates: totals, baselines and bursts; a bar chart and the recent counts."""
    bucket = str(data["bucket"])
    names = (("sessions", "new sessions"), ("reports", "reports"))
    summary = _table(
        ("series", "total", f"baseline per {bucket}", "bursts"),
        [(label, str(data[key]["total"]), _num(data[key]["baseline"]),
          str(data[key]["bursts_total"])) for key, label in names],
    )  # fmt: skip
    parts = [
        '<section id="arrivals" aria-labelledby="arrivals-h">',
        f'<h2 id="arrivals-h">Arrivals per {_e(bucket)}</h2>',
        summary,
    ]
    flagged = [
        (_e(b["start"]), label, str(b["count"]), _num(data[key]["baseline"]), _num(b["p_value"]))
        for key, label in names
        for b in data[key]["bursts"]
    ]
    if flagged:
        parts.append(
            '<p class="error" role="alert">Bursts: more arrivals in one '
            f"{_e(bucket)} than the baseline explains. Look at them before trusting the "
            "estimates (the robustness statements above say how many fake respondents would "
            "move each one).</p>"
        )
        parts.append(
            _table(
                ("window start (UTC)", "series", "count", "baseline", "P(count or more)"),
                flagged,
                caption="Bursts",
            )
        )
    else:
        parts.append(f'<p class="note">No burst in any {_e(bucket)} so far.</p>')
    for key, label in names:
        parts.append(f"<h3>{_e(label)}, the last {len(data[key]['windows'])} {_e(bucket)}s</h3>")
        parts.append(f"<figure>{_bars(data[key], label)}</figure>")
    rows = [
        (_e(s["start"]), str(s["count"]), str(r["count"]),
         "burst" if s["burst"] or r["burst"] else "")
        for s, r in zip(data["sessions"]["windows"], data["reports"]["windows"], strict=True)
    ]  # fmt: skip
    parts.append(
        "<details><summary>The counts</summary>"
        + _table((f"{bucket} starting (UTC)", "sessions", "reports", ""), rows)
        + "</details>"
    )
    parts.append(f'<p class="note">{_e(data["rule"]["text"])}.</p>')
    parts.append("</section>")
    return "\n".join(parts)


def _fakes(entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return "–"
    return "impossible" if entry["fakes"] is None else str(entry["fakes"])


def robustness_section(data: Mapping[str, Any]) -> str:
    """Per question and share: the fake respondents that would move its estimate."""
    s = f"{float(data['shift']):g}"
    rows: list[Sequence[str]] = []
    for q in data["questions"]:
        for share in q["shares"]:
            up, down = share.get("up"), share.get("down")
            rows.append(
                (
                    f'{_e(q["id"])}<br><span class="text">{_e(share["label"])}</span>',
                    str(q["n"]),
                    _num(share["estimate"]),
                    _fakes(None if up is None else up["input"]),
                    _fakes(None if up is None else up["output"]),
                    _fakes(None if down is None else down["input"]),
                    _fakes(None if down is None else down["output"]),
                )
            )
    table = _table(
        ("question", "n", "estimate", f"+{s} answers", f"+{s} reports", f"−{s} answers",
         f"−{s} reports"),
        rows,
        caption=f"Fake respondents that would move each estimate by {s}",
    )  # fmt: skip
    return (
        '<section id="robustness" aria-labelledby="robustness-h">\n'
        '<h2 id="robustness-h">Robustness to fake respondents</h2>\n'
        f"{table}\n"
        '<p class="note">answers: fakes who choose their answers and let the randomizer run '
        "(the expected shift); reports: fakes who send reports of their choosing (the largest "
        "shift; each fake report counts 1/(P1 − P0) times an honest one). m fakes move an "
        "estimate by D m / (n + m); impossible: no number of fakes moves it that far. "
        "Cheu, Smith &amp; Ullman 2021; Cao, Jia &amp; Gong 2021; see docs/robustness.md.</p>\n"
        "</section>"
    )
