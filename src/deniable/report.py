"""A whole-survey report: every question's n, estimate, interval and ε, as a text table, a
DataFrame, JSON, and a self-contained HTML page with a forest plot.

Tables and the DataFrame need the ``[data]`` extra (pandas); the HTML page's forest plot
needs ``[plot]`` (matplotlib).  ε is printed ``∞`` (``"inf"`` in JSON) for a design with a
deterministic path, never as a finite number.
"""

from __future__ import annotations

import html
import io
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deniable import _validation as v
from deniable.analysis import Analysis, analyze, require_pandas
from deniable.designs import Design
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

__all__ = ["SurveyReport", "survey_report"]

_INTERVAL = (
    "exact: Clopper-Pearson interval for the share of yes reports, mapped through the design"
)


def fmt_epsilon(eps: float) -> str:
    """``∞`` for an infinite ε, else 4 decimals."""
    return "∞" if math.isinf(eps) else f"{eps:.4f}"


def _design_label(design: Design) -> str:
    params = ", ".join(
        f"{k}={x:.6g}" if isinstance(x, float) else f"{k}={x}"
        for k, x in design.parameters().items()
    )
    return f"{design.name}({params})"


def _require_matplotlib() -> Any:
    try:
        import matplotlib
    except ModuleNotFoundError as exc:
        raise ImportError("the forest plot needs matplotlib: pip install 'deniable[plot]'") from exc
    return matplotlib


@dataclass(frozen=True)
class SurveyReport:
    """Every question of a survey analysed with its design (see :func:`survey_report`).

    ``results`` holds one :class:`~deniable.analysis.Analysis` per question, in the order
    given; ``respondents`` is the number of rows of the data.
    """

    results: tuple[Analysis, ...]
    level: float
    respondents: int
    title: str = "Survey report"

    def _rows(self) -> list[dict[str, Any]]:
        rows = []
        for r in self.results:
            lo, hi = r.ci
            e = r.estimate
            rows.append(
                {
                    "question": str(r.column),
                    "design": _design_label(r.design),
                    "n": e.n,
                    "missing": r.missing,
                    "yes": round((e.lambda_hat or 0.0) * e.n),
                    "estimate": e.value,
                    "bounded": e.bounded,
                    "se": e.se,
                    "se_unbiased": e.se_unbiased,
                    "ci_lower": lo,
                    "ci_upper": hi,
                    "epsilon": r.design.epsilon,
                }
            )
        return rows

    def to_frame(self) -> Any:
        """One row per question: question, design, n, missing, yes, estimate (unbiased
        moment), bounded, se (plug-in), se_unbiased, ci_lower, ci_upper (exact), epsilon
        (a float; ``inf`` for designs with a deterministic path)."""
        pd = require_pandas()
        out = pd.DataFrame(self._rows())
        out.attrs.update(level=self.level, interval=_INTERVAL, respondents=self.respondents)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict (no NaN or Infinity: an infinite ε is ``"inf"``)."""
        questions = []
        for r in self.results:
            item = {"question": str(r.column), **r.to_dict()}
            item.pop("column")
            questions.append(item)
        return {
            "title": self.title,
            "level": self.level,
            "respondents": self.respondents,
            "interval": _INTERVAL,
            "se_convention": "se: plug-in (divides by n); se_unbiased: divides by n - 1",
            "questions": questions,
        }

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, ensure_ascii=False)

    def table(self) -> str:
        """A plain-text table, one line per question."""
        head = (
            "question",
            "design",
            "n",
            "missing",
            "estimate",
            "SE",
            f"{self.level:.0%} CI (exact)",
            "ε",
        )
        body = [
            (
                row["question"],
                row["design"],
                str(row["n"]),
                str(row["missing"]),
                f"{row['estimate']:.4f}",
                f"{row['se']:.4f}",
                f"[{row['ci_lower']:.4f}, {row['ci_upper']:.4f}]",
                fmt_epsilon(row["epsilon"]),
            )
            for row in self._rows()
        ]
        widths = [max(len(c[i]) for c in (head, *body)) for i in range(len(head))]
        left = {0, 1}

        def line(cells: tuple[str, ...]) -> str:
            return "  ".join(
                c.ljust(w) if i in left else c.rjust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            ).rstrip()

        rule = "  ".join("-" * w for w in widths)
        notes = (
            f"{self.respondents} respondents. estimate: unbiased moment estimate (may leave "
            "[0, 1]).\nSE: plug-in (divides by n). ε = ∞: some report reveals the answer."
        )
        return "\n".join([self.title, line(head), rule, *map(line, body), notes])

    def __str__(self) -> str:
        return self.table()

    def forest_svg(self) -> str:
        """The forest plot (estimate and exact interval per question) as SVG text.

        Drawn with matplotlib's object API (no pyplot state), text as paths, a fixed hash
        salt and no date, so the same report gives the same SVG.  XML comments (where
        matplotlib echoes label text) are removed.
        """
        matplotlib = _require_matplotlib()
        from matplotlib.figure import Figure

        rows = self._rows()
        k = len(rows)
        fig = Figure(figsize=(7.5, 0.42 * k + 1.3))
        ax = fig.add_subplot()
        ys = list(range(k - 1, -1, -1))
        est = [r["estimate"] for r in rows]
        lo = [r["ci_lower"] for r in rows]
        hi = [r["ci_upper"] for r in rows]
        # the interval is clipped to [0, 1]; an unbiased estimate outside it is drawn alone
        ax.hlines(ys, lo, hi, color="#1f4e79", linewidth=2)
        ax.plot(est, ys, "o", color="#1f4e79", markersize=5)
        labels = [f"{r['question']}  (ε = {fmt_epsilon(r['epsilon'])})" for r in rows]
        ax.set_yticks(ys, labels, parse_math=False)
        ax.set_ylim(-0.7, k - 0.3)
        left = min(0.0, *est) - 0.03
        right = max(1.0, *est) + 0.03
        ax.set_xlim(left, right)
        for x in (0.0, 1.0):
            ax.axvline(x, color="#999999", linewidth=0.8, linestyle=":")
        ax.set_xlabel(f"prevalence: estimate and {self.level:.0%} exact interval")
        ax.grid(axis="x", alpha=0.3)
        fig.tight_layout()
        buf = io.StringIO()
        with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "deniable"}):
            fig.savefig(buf, format="svg", metadata={"Date": None})
        svg = buf.getvalue()
        svg = svg[svg.index("<svg") :]
        return re.sub(r"<!--.*?-->", "", svg, flags=re.DOTALL)

    def to_html(self, path: str | Path | None = None, *, plot: bool = True) -> str:
        """A self-contained HTML page (inline CSS and SVG, no external resources): the table
        of every question and, with ``plot``, the forest plot.  Every user-supplied string
        (title, question names) is escaped.  Written to ``path`` (UTF-8) when given; the
        page is returned either way."""
        esc = html.escape
        cols = ("question", "design", "n", "missing", "estimate", "bounded MLE", "SE",
                "SE (n − 1)", f"{self.level:.0%} CI (exact)", "ε")  # fmt: skip
        trs = []
        for r in self._rows():
            cells = (
                esc(r["question"]),
                esc(r["design"]),
                str(r["n"]),
                str(r["missing"]),
                f"{r['estimate']:.4f}",
                f"{r['bounded']:.4f}",
                f"{r['se']:.4f}",
                f"{r['se_unbiased']:.4f}" if math.isfinite(r["se_unbiased"]) else "n/a",
                f"[{r['ci_lower']:.4f}, {r['ci_upper']:.4f}]",
                fmt_epsilon(r["epsilon"]),
            )
            trs.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        figure = ""
        if plot:
            figure = (
                '<figure>\n<div class="plot" role="img" aria-label="forest plot">\n'
                f"{self.forest_svg()}</div>\n<figcaption>Estimate (unbiased moment) and "
                f"{self.level:.0%} exact interval of each question.</figcaption>\n</figure>\n"
            )
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
td:nth-child(1), td:nth-child(2) {{ text-align: left; }}
th {{ background: #f3f3f3; }}
.plot svg {{ max-width: 100%; height: auto; }}
.note {{ color: #555; font-size: 0.9em; }}
</style>
</head>
<body>
<h1>{esc(self.title)}</h1>
<p>{self.respondents} respondents, {len(self.results)} questions, {self.level:.0%} intervals.</p>
<table>
<thead><tr>{"".join(f"<th>{esc(c)}</th>" for c in cols)}</tr></thead>
<tbody>
{chr(10).join(trs)}
</tbody>
</table>
{figure}<p class="note">estimate: the unbiased moment estimate (it may leave [0, 1]);
bounded MLE: the maximum-likelihood estimate in [0, 1]; SE: plug-in (divides by n), the
unbiased convention divides by n − 1; interval: {esc(_INTERVAL)}; missing: reports left out.
ε = ∞: some report can only come from one answer, so the design has no finite privacy
guarantee.</p>
</body>
</html>
"""
        if path is not None:
            p = Path(path)
            try:
                p.write_text(page, encoding="utf-8")
            except OSError as exc:
                raise DataError(f"cannot write {str(p)!r}: {exc.strerror or exc}.") from exc
        return page


def survey_report(
    df: Any,
    questions: Mapping[Any, Design],
    *,
    level: float = 0.95,
    missing: str = "drop",
    title: str = "Survey report",
) -> SurveyReport:
    """Analyse every question of a survey: ``questions`` maps a column to its design.

    Each question is :func:`~deniable.analysis.analyze` of its column (same validation and
    missing-value handling); the report lists n, estimate, exact interval and ε.

    >>> import pandas as pd
    >>> from deniable import Mangat, Warner
    >>> df = pd.DataFrame({"drugs": [1, 0, 1, 1, 0, 0, 0, 1], "tax": [0, 0, 1, 0, 1, 1, 0, 0]})
    >>> rep = survey_report(df, {"drugs": Warner(0.75), "tax": Mangat(0.5)})
    >>> print(rep.table())
    Survey report
    question  design          n  missing  estimate      SE    95% CI (exact)       ε
    --------  --------------  -  -------  --------  ------  ----------------  ------
    drugs     warner(p=0.75)  8        0    0.5000  0.3536  [0.0000, 1.0000]  1.0986
    tax       mangat(p=0.5)   8        0   -0.2500  0.3423  [0.0000, 0.5103]       ∞
    8 respondents. estimate: unbiased moment estimate (may leave [0, 1]).
    SE: plug-in (divides by n). ε = ∞: some report reveals the answer.
    """
    if not isinstance(questions, Mapping):
        raise ParameterTypeError(
            f"`questions` must be a mapping {{column: design}}, got {type(questions).__name__}."
        )
    if not questions:
        raise ParameterError("`questions` must name at least one column, got an empty mapping.")
    if not isinstance(title, str):
        raise ParameterTypeError(f"`title` must be a string, got {type(title).__name__}.")
    lvl = v.level(level)
    results = tuple(
        analyze(df, column, design, level=lvl, missing=missing)
        for column, design in questions.items()
    )
    return SurveyReport(results, lvl, len(df), title)
