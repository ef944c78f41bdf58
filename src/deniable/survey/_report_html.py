"""The HTML page of a :class:`~deniable.survey.SurveyReport`: self-contained (inline CSS
and SVG), every user-supplied string escaped."""

from __future__ import annotations

import html
from typing import Any

from deniable.survey._compare import report_design_cells

__all__ = ["report_page"]


def _design_html(self: Any) -> str:
    """The design-based table of the HTML page ("" without a sample design)."""
    if not self.designed:
        return ""
    esc = html.escape
    head, body = report_design_cells(self)
    trs = ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>" for cells in body]
    return (
        f"<h2>Design-based estimates</h2>\n<p>{esc(str(self.sample))}</p>\n"
        f'<table class="two-group">\n<thead><tr>{"".join(f"<th>{esc(c)}</th>" for c in head)}'
        f"</tr></thead>\n<tbody>\n{chr(10).join(trs)}\n</tbody>\n</table>\n"
    )


def report_page(self: Any, *, plot: bool = True) -> str:
    """The page of report ``self`` (the table of every question, the design-based table
    under a sample design and, with ``plot``, the forest plot)."""
    esc = html.escape
    cols, body = self._cells(html=True)
    trs = ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>" for cells in body]
    figure = ""
    if plot:
        figure = (
            '<figure>\n<div class="plot" role="img" aria-label="forest plot">\n'
            f"{self.forest_svg()}</div>\n<figcaption>Estimate (unbiased moment) and "
            f"{self.level:.0%} {'interval' if self.two_group else 'exact interval'} of each "
            f"question.</figcaption>\n</figure>\n"
        )
    figure = _design_html(self) + figure
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{esc(self.title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 0.3em 0.7em; }}
td {{ text-align: right; font-variant-numeric: tabular-nums; }}
td:nth-child(1), td:nth-child(2), .two-group td:nth-child(3) {{ text-align: left; }}
th {{ background: #f3f3f3; }}
.plot svg {{ max-width: 100%; height: auto; }}
.note {{ color: #555; font-size: 0.9em; }}
</style>
</head>
<body>
<h1>{esc(self.title)}</h1>
<p>{self.respondents} respondents, {len(self.results)} questions, {self.level:.0%} intervals.</p>
<table{' class="two-group"' if self.two_group else ""}>
<thead><tr>{"".join(f"<th>{esc(c)}</th>" for c in cols)}</tr></thead>
<tbody>
{chr(10).join(trs)}
</tbody>
</table>
{figure}<p class="note">estimate: the unbiased moment estimate (it may leave [0, 1]);
bounded MLE: the maximum-likelihood estimate in [0, 1]; SE: plug-in (divides by n), the
unbiased convention divides by n − 1; interval: {esc(self._interval_note())}; missing:
reports left out.
ε = ∞: some report can only come from one answer, so the design has no finite privacy
guarantee.</p>
</body>
</html>
"""
    return page
