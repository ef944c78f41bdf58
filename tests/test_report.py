"""Whole-survey reports (``deniable.survey``) and `deniable report`: every question's numbers
equal the per-question analysis (itself checked against closed forms in test_analysis.py),
the HTML page is well-formed, self-contained and escapes user strings, and an infinite ε is
always ``∞`` (``"inf"`` in JSON), never a number."""

from __future__ import annotations

import html
import json
import math
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from _cli import ENV_120 as ENV
from _cli import one_error as assert_one_line_error
from deniable import (
    DataError,
    ForcedResponse,
    Mangat,
    ParameterError,
    ParameterTypeError,
    TwoCoin,
    Warner,
)
from deniable.cli import app
from deniable.cli._analyze import parse_question
from deniable.designs import StochasticLieDetector
from deniable.survey import SurveyReport, analyze, survey_report, write_reports

SLD = StochasticLieDetector(2 / 12, 10 / 12)

EVIL = '<script>alert("x")</script> & "q"'

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}  # fmt: skip


class TagChecker(HTMLParser):
    """Checks that every element is closed in order; collects table cells and attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self._cell = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse(page: str) -> TagChecker:
    checker = TagChecker()
    checker.feed(page)
    checker.close()
    assert checker.errors == [], checker.errors[:5]
    assert checker.stack == [], checker.stack
    return checker


@pytest.fixture
def survey() -> Any:
    rng = np.random.default_rng(3)
    n = 300
    df = pd.DataFrame(
        {
            "drugs": rng.integers(0, 2, n),
            EVIL: rng.integers(0, 2, n),
            "tax": rng.integers(0, 2, n).astype(float),
        }
    )
    df.loc[[5, 9], "tax"] = np.nan
    return df


QUESTIONS = {"drugs": TwoCoin(), EVIL: Warner(0.3), "tax": Mangat(0.6)}


def test_every_question_equals_its_analysis(survey: Any) -> None:
    rep = survey_report(survey, QUESTIONS, level=0.9)
    assert isinstance(rep, SurveyReport) and rep.respondents == 300
    frame = rep.to_frame()
    assert list(frame["question"]) == ["drugs", EVIL, "tax"]
    for row, (col, design) in zip(frame.itertuples(index=False), QUESTIONS.items(), strict=True):
        one = analyze(survey, col, design, level=0.9)
        assert row.n == one.n and row.missing == one.missing
        assert row.estimate == one.estimate.value and row.se == one.estimate.se
        assert row.se_unbiased == one.estimate.se_unbiased
        assert (row.ci_lower, row.ci_upper) == one.estimate.ci(0.9, "exact")
        assert row.epsilon == design.epsilon
        assert row.yes == int(survey[col].sum())
    assert list(frame["missing"]) == [0, 0, 2]
    assert math.isinf(frame["epsilon"].iloc[2])


def test_table_prints_infinity_never_a_number(survey: Any) -> None:
    text = str(survey_report(survey, QUESTIONS).table())
    tax_line = next(line for line in text.splitlines() if line.startswith("tax"))
    assert tax_line.rstrip().endswith("∞")
    assert "inf" not in text.replace("information", "")
    assert f"{math.log(3):.4f}" in text  # two-coin: ln 3


def test_json_is_strict_and_infinite_epsilon_is_a_string(survey: Any) -> None:
    rep = survey_report(survey, QUESTIONS, title="Wave 1")

    def no_constant(name: str) -> Any:
        raise AssertionError(name)

    data = json.loads(rep.to_json(), parse_constant=no_constant)
    assert data["title"] == "Wave 1" and data["respondents"] == 300 and data["level"] == 0.95
    qs = {q["question"]: q for q in data["questions"]}
    assert qs["tax"]["epsilon"] == "inf" and qs["tax"]["missing"] == 2
    assert qs["drugs"]["epsilon"] == pytest.approx(math.log(3), rel=1e-12)
    assert qs[EVIL]["ci_exact"] == pytest.approx(
        list(analyze(survey, EVIL, Warner(0.3)).ci), rel=1e-12
    )
    assert data == rep.to_dict()


def test_html_is_well_formed_self_contained_and_escaped(survey: Any, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    title = "Survey <b>2024</b> & co"
    page = survey_report(survey, QUESTIONS, title=title).to_html(out)
    assert out.read_text(encoding="utf-8") == page
    checker = parse(page)
    # the malicious column name and title appear only escaped
    assert "<script" not in page and EVIL not in page and title not in page
    assert html.escape(EVIL) in page and html.escape(title) in page
    assert checker.tags.count("script") == 0 and "svg" in checker.tags
    # self-contained: no external resources
    assert "link" not in checker.tags and "img" not in checker.tags
    for name, value in checker.attrs:
        if name in ("src", "href", "xlink:href"):
            assert value is not None and value.startswith("#"), (name, value)
    # the table: header + one row per question; infinity for Mangat
    header, *rows = checker.rows
    assert header[0] == "question" and header[-1] == "ε"
    assert [r[0] for r in rows] == ["drugs", EVIL, "tax"]  # unescaped back by the parser
    assert rows[2][-1] == "∞" and rows[0][-1] == f"{math.log(3):.4f}"
    assert "inf" not in "".join(checker.text).replace("information", "")


def test_html_is_deterministic_and_plot_optional(survey: Any) -> None:
    rep = survey_report(survey, {"drugs": TwoCoin(), "tax": ForcedResponse(0.2, 0.0)})
    assert rep.to_html() == rep.to_html()
    page = rep.to_html(plot=False)
    assert "<svg" not in page
    assert parse(page).rows[2][-1] == "∞"  # forced response with no forced "no": ε = ∞


def test_forest_plot_has_one_interval_per_question(survey: Any) -> None:
    svg = survey_report(survey, QUESTIONS).forest_svg()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<!--" not in svg
    collection = svg[svg.index('id="LineCollection_1"') :]
    collection = collection[: collection.index("</g>")]
    assert collection.count("<path") == len(QUESTIONS)


def test_report_errors(survey: Any, tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="at least one column"):
        survey_report(survey, {})
    with pytest.raises(ParameterTypeError, match=r"`questions` must be a mapping"):
        survey_report(survey, [("drugs", TwoCoin())])  # type: ignore[arg-type]
    with pytest.raises(DataError, match=r"`column` must be one of .*got 'nope'"):
        survey_report(survey, {"nope": TwoCoin()})
    with pytest.raises(DataError, match="missing value"):
        survey_report(survey, {"tax": TwoCoin()}, missing="error")
    with pytest.raises(ParameterError, match="`level`"):
        survey_report(survey, {"drugs": TwoCoin()}, level=0)
    with pytest.raises(ParameterTypeError, match="`title`"):
        survey_report(survey, {"drugs": TwoCoin()}, title=3)  # type: ignore[arg-type]
    rep = survey_report(survey, {"drugs": TwoCoin()})
    with pytest.raises(DataError, match="cannot write"):
        rep.to_html(tmp_path / "no" / "dir" / "r.html")


@pytest.fixture
def mixed(survey: Any) -> Any:
    """The survey plus a stochastic-lie-detector question with its group column."""
    rng = np.random.default_rng(8)
    df = survey.copy()
    df["version"] = rng.integers(1, 3, len(df))
    df["cheat"] = rng.integers(0, 2, len(df))
    df.loc[[4], "version"] = np.nan
    return df


MIXED = {"drugs": TwoCoin(), "cheat": (SLD, "version")}


def test_two_group_question_gives_one_row_per_parameter(mixed: Any) -> None:
    rep = survey_report(mixed, MIXED)
    assert rep.two_group
    frame = rep.to_frame()
    assert list(frame["question"]) == ["drugs", "cheat", "cheat"]
    assert list(frame["parameter"]) == ["prevalence", "prevalence", "honesty"]
    assert list(frame["interval"]) == ["exact", "wald", "wald"]
    one = analyze(mixed, "cheat", SLD, group="version")
    for row in frame.iloc[1:].itertuples(index=False):
        e = one.estimates()[row.parameter]
        assert row.estimate == e.value and row.se == e.se and row.se_unbiased == e.se_unbiased
        assert (row.ci_lower, row.ci_upper) == e.ci(0.95, "wald")
        assert row.n == len(mixed) - 1 and row.missing == 1 and math.isinf(row.epsilon)
        assert row.yes == int(mixed.loc[mixed["version"].notna(), "cheat"].sum())
    drugs = frame.iloc[0]
    assert (drugs["ci_lower"], drugs["ci_upper"]) == analyze(mixed, "drugs", TwoCoin()).ci


def test_two_group_table_json_html_and_plot(mixed: Any) -> None:
    rep = survey_report(mixed, MIXED)
    text = str(rep.table())
    honesty = next(line for line in text.splitlines() if "honesty" in line)
    assert honesty.startswith("cheat") and honesty.rstrip().endswith("∞")
    assert "Wald (delta method) for two-group: cheat" in text
    assert "inf" not in text.replace("information", "")
    data = json.loads(rep.to_json())
    cheat = data["questions"][1]
    assert cheat["question"] == "cheat" and cheat["epsilon"] == "inf"
    assert cheat["group"] == "version" and set(cheat["estimates"]) == {"prevalence", "honesty"}
    assert "wald" in data["interval"]
    checker = parse(rep.to_html())
    header, *rows = checker.rows
    assert header[2] == "parameter" and header[-1] == "ε"
    assert [r[2] for r in rows] == ["prevalence", "prevalence", "honesty"]
    assert rows[2][-1] == "∞" and rows[0][-1] == f"{math.log(3):.4f}"
    svg = rep.forest_svg()
    collection = svg[svg.index('id="LineCollection_1"') :]
    assert collection[: collection.index("</g>")].count("<path") == 3


def test_two_group_report_errors(mixed: Any) -> None:
    with pytest.raises(DataError, match=r"design 'sld' needs two groups: give group=\.\.\."):
        survey_report(mixed, {"cheat": SLD})
    with pytest.raises(ParameterTypeError, match=r"`questions\['cheat'\]` must be a design or"):
        survey_report(mixed, {"cheat": (SLD,)})  # type: ignore[dict-item]
    with pytest.raises(DataError, match=r"`group` must be one of .*got 'wave'"):
        survey_report(mixed, {"cheat": (SLD, "wave")})
    with pytest.raises(ParameterError, match="`group` applies to the two-group designs"):
        survey_report(mixed, {"drugs": (TwoCoin(), "version")})


def test_html_without_matplotlib_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['matplotlib'] = None\n"
        "import pandas as pd\n"
        "from deniable import TwoCoin\n"
        "from deniable.survey._report import survey_report\n"
        "rep = survey_report(pd.DataFrame({'q': [1, 0, 1]}), {'q': TwoCoin()})\n"
        "assert 'q' in str(rep.table()) and '<svg' not in rep.to_html(plot=False)\n"
        "try:\n"
        "    rep.to_html()\n"
        "except ImportError as exc:\n"
        "    assert \"pip install 'deniable[plot]'\" in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('no ImportError')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------ CLI


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture
def csv_file(tmp_path: Path, survey: Any) -> str:
    return str(write_reports(survey.rename(columns={EVIL: "a=b: c"}), tmp_path / "s.csv"))


def test_parse_question() -> None:
    assert parse_question("drugs=two-coin") == ("drugs", TwoCoin(), None)
    assert parse_question("q1=forced:forced_yes=1/6,forced_no=1/3") == (
        "q1",
        ForcedResponse(1 / 6, 1 / 3),
        None,
    )
    # a column name with "=" and ":" in it: split at the "=" followed by a design name
    assert parse_question("a=b: c=warner:p=0.3") == ("a=b: c", Warner(0.3), None)
    assert parse_question("x=warner: p = 3/4 ") == ("x", Warner(0.75), None)
    # two-group designs: the group column after "@" (which may itself hold "@" or "=")
    q = parse_question("cheat=sld:p1=2/12,p2=10/12@version")
    assert (q.column, q.design, q.group) == ("cheat", SLD, "version")
    assert parse_question("a=b=sld:p1=2/12,p2=10/12@g@1=x").group == "g@1=x"


def test_cli_report_json_and_html(runner: CliRunner, csv_file: str, tmp_path: Path) -> None:
    out_html = tmp_path / "r.html"
    args = ["report", csv_file, "-q", "drugs=two-coin", "-q", "a=b: c=warner:p=0.3",
            "-q", "tax=mangat:p=0.6", "--html", str(out_html), "--title", "T"]  # fmt: skip
    result = runner.invoke(app, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0 and result.stderr == "", result.output
    data = json.loads(result.stdout)
    assert data["html"] == str(out_html) and data["title"] == "T"
    df = pd.read_csv(csv_file)
    lib = survey_report(df, {"drugs": TwoCoin(), "a=b: c": Warner(0.3), "tax": Mangat(0.6)})
    expected = json.loads(lib.to_json())
    for got, want in zip(data["questions"], expected["questions"], strict=True):
        assert got["question"] == want["question"] and got["n"] == want["n"]
        assert got["estimate"] == pytest.approx(want["estimate"], abs=1e-15)
        assert got["ci_exact"] == pytest.approx(want["ci_exact"], abs=1e-15)
        assert got["epsilon"] == want["epsilon"]
    assert data["questions"][2]["epsilon"] == "inf"
    parse(out_html.read_text(encoding="utf-8"))
    table = runner.invoke(app, [*args, "--force"])  # the page exists: replaced on request
    assert table.exit_code == 0, table.output
    assert "∞" in table.stdout and "inf" not in table.stdout and "wrote" in table.stdout


@pytest.mark.parametrize(
    ("questions", "needles"),
    [
        ((), ("at least one --question",)),
        (("drugs",), ("COLUMN=DESIGN", "'drugs'")),
        (("drugs=nodesign",), ("COLUMN=DESIGN", "'drugs=nodesign'")),
        (("drugs=warner:p",), ("NAME=VALUE", "'p'")),
        (("drugs=warner:p=0.7,p=0.8",), ("given twice",)),
        (("drugs=warner:q=0.7",), ("unknown 'q'",)),
        (("drugs=warner:p=0.5",), ("`p` must be in (0, 1) and not 0.5",)),
        (("drugs=two-coin", "drugs=warner:p=0.7"), ("names column 'drugs' twice",)),
        (("nope=two-coin",), ("`column` must be one of", "'nope'")),
        (("drugs=sld:p1=2/12,p2=10/12",), ("design 'sld' needs two groups", "after '@'")),
        (("drugs=two-coin@version",), ("'@version' names a group column",)),
        (("drugs=sld:p1=2/12,p2=10/12@",), ("name the group column after '@'",)),
        (("drugs=sld:p1=2/12,p2=10/12@nope",), ("`group` must be one of", "'nope'")),
        (("drugs=sld:p1=2/12,p2=10/12@tax",), ("`group` 'tax' must hold 1 or 2",)),
    ],
)
def test_cli_report_one_line_errors(
    runner: CliRunner, csv_file: str, questions: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    args = ["report", csv_file]
    for q in questions:
        args += ["-q", q]
    assert_one_line_error(runner.invoke(app, args), *needles)


def test_cli_report_bad_files(runner: CliRunner, tmp_path: Path, csv_file: str) -> None:
    res = runner.invoke(app, ["report", str(tmp_path / "x.xlsx"), "-q", "a=two-coin"])
    assert_one_line_error(res, "`path` must end in")
    res = runner.invoke(app, ["report", str(tmp_path / "gone.parquet"), "-q", "a=two-coin"])
    assert_one_line_error(res, "cannot read reports file")
    res = runner.invoke(
        app, ["report", csv_file, "-q", "drugs=two-coin", "--html", str(tmp_path / "a" / "b.html")]
    )
    assert_one_line_error(res, "cannot write")


def test_cli_report_two_group(runner: CliRunner, mixed: Any, tmp_path: Path) -> None:
    path = str(write_reports(mixed, tmp_path / "m.csv"))
    args = ["report", path, "-q", "drugs=two-coin", "-q", "cheat=sld:p1=2/12,p2=10/12@version"]
    result = runner.invoke(app, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0 and result.stderr == "", result.output
    data = json.loads(result.stdout)
    lib = json.loads(survey_report(pd.read_csv(path), MIXED).to_json())
    got, want = data["questions"][1], lib["questions"][1]
    for name in ("prevalence", "honesty"):
        assert got["estimates"][name]["estimate"] == pytest.approx(
            want["estimates"][name]["estimate"], abs=1e-15
        )
        assert got["estimates"][name]["ci_wald"] == pytest.approx(
            want["estimates"][name]["ci_wald"], rel=1e-12
        )
    assert got["epsilon"] == "inf" and got["group"] == "version"
    table = runner.invoke(app, args)
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert any(line.strip().startswith("cheat") and "honesty" in line
               and line.rstrip().endswith("∞") for line in lines), table.stdout  # fmt: skip
    assert "Wald (delta method) for two-group: cheat" in table.stdout
    assert "groups in version" in table.stdout and "inf" not in table.stdout


def test_cli_report_survey_file_with_a_two_group_question(
    runner: CliRunner, mixed: Any, tmp_path: Path
) -> None:
    """`deniable report EXPORT --survey FILE` on a survey with a two-group question (as the
    service exports it: the group in `<id>_group`) analyses it as a two-group design, the
    same numbers as the library given the group column; before, the survey's questions
    were read as one-group designs and the report refused the file."""
    frame = mixed.rename(columns={"version": "cheat_group"})
    path = str(write_reports(frame, tmp_path / "export.csv"))
    survey_file = tmp_path / "survey.yaml"
    survey_file.write_text(
        "schema: deniable.survey/1\nid: s\ntitle: S\ncap: 5\nquestions:\n"
        '  - {id: drugs, text: "Drugs?", design: {mechanism: two-coin, parameters: {}}}\n'
        "  - id: cheat\n    text: Cheated?\n    unbounded: true\n"
        "    design: {mechanism: sld, parameters: {p1: 2/12, p2: 10/12}}\n",
        encoding="utf-8",
    )
    result = runner.invoke(
        app, ["report", path, "--survey", str(survey_file), "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0 and result.stderr == "", result.output
    got = json.loads(result.stdout)["questions"][1]
    want = json.loads(
        survey_report(
            pd.read_csv(path), {"drugs": TwoCoin(), "cheat": (SLD, "cheat_group")}
        ).to_json()
    )["questions"][1]
    assert got["epsilon"] == "inf" and got["group"] == "cheat_group"
    for name in ("prevalence", "honesty"):
        assert got["estimates"][name]["estimate"] == pytest.approx(
            want["estimates"][name]["estimate"], abs=1e-15
        )
