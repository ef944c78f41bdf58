"""`deniable survey validate | demo`: a survey file checked from the command line (each
question's epsilon, the totals, the cap's verdict as the exit status, how respondents come),
refused with one error line naming the field, and the demo survey printed or written
atomically; `deniable report --robustness`: the robustness statement of every estimate."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _cli import ENV, one_error, run
from deniable.survey import demo_survey, demo_survey_text, load_survey

SMALL_CAP = """\
schema: deniable.survey/1
id: tight
title: A cap that does not hold
cap: 1.5
questions:
  - {id: a, text: "First?", design: {mechanism: warner, epsilon: 1}}
  - {id: b, text: "Second?", design: {mechanism: warner, epsilon: 1}}
"""


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture()
def demo_file(tmp_path: Path) -> Path:
    path = tmp_path / "demo.yaml"
    path.write_text(demo_survey_text(), encoding="utf-8")
    return path


def test_validate_prints_every_question_and_the_totals(runner: CliRunner, demo_file: Path) -> None:
    res = run(runner, "survey", "validate", str(demo_file))
    assert res.exit_code == 0, res.output
    for qid in ("happy", "harassment", "hours"):
        assert qid in res.stdout
    # two fair coins: P(yes|1) = 3/4, P(yes|0) = 1/4, so epsilon = ln 3; the other two are 1
    total = math.log(3) + 2
    assert f"{total:.6g}" in res.stdout
    assert "holds" in res.stdout and "does not hold" not in res.stdout


def test_validate_json_gives_the_budget(runner: CliRunner, demo_file: Path) -> None:
    res = run(runner, "survey", "validate", str(demo_file), "--json")
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    assert data["valid"] is True and data["id"] == "workplace" and data["cap_holds"] is True
    budget = data["budget"]
    assert [q["id"] for q in budget["questions"]] == ["happy", "harassment", "hours"]
    assert budget["questions"][0]["epsilon"] == pytest.approx(math.log(3), rel=1e-15)
    assert budget["basic"] >= math.log(3) + 2  # spends round upward, never below the sum
    assert budget["basic"] == pytest.approx(math.log(3) + 2, rel=1e-15)


def test_validate_exits_1_when_the_cap_does_not_hold(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "tight.yaml"
    path.write_text(SMALL_CAP, encoding="utf-8")
    res = run(runner, "survey", "validate", str(path))
    assert res.exit_code == 1
    assert "does not hold" in res.stdout
    data = json.loads(run(runner, "survey", "validate", str(path), "--json").stdout)
    assert data["cap_holds"] is False
    assert [q["answerable"] for q in data["budget"]["questions"]] == [True, False]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (SMALL_CAP.replace("cap: 1.5", "cap: -1"), "`cap`"),
        (SMALL_CAP.replace("epsilon: 1}}\n  - {id: b", "epsilon: 0}}\n  - {id: b"),
         "questions[0].design"),
        (SMALL_CAP.replace("deniable.survey/1", "deniable.survey/9"), "`schema`"),
        (SMALL_CAP.replace("mechanism: warner, epsilon: 1}}\n  - {id: b",
                           "mechanism: nope}}\n  - {id: b"), "questions[0].design"),
        ("questions: [", "survey"),
    ],
)  # fmt: skip
def test_validate_refuses_a_bad_file_naming_the_field(
    runner: CliRunner, tmp_path: Path, text: str, needle: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    one_error(run(runner, "survey", "validate", str(path)), needle)


def test_validate_of_a_missing_file_is_one_error(runner: CliRunner, tmp_path: Path) -> None:
    one_error(run(runner, "survey", "validate", str(tmp_path / "none.yaml")), "none.yaml")
    one_error(run(runner, "survey", "validate", " "), "`FILE`")


def test_demo_prints_the_demo_survey(runner: CliRunner) -> None:
    res = run(runner, "survey", "demo")
    assert res.exit_code == 0
    assert res.stdout == demo_survey_text()


def test_demo_out_writes_a_file_that_reads_back(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "mine.yaml"
    res = run(runner, "survey", "demo", "--out", str(out))
    assert res.exit_code == 0 and str(out) in res.stdout
    assert load_survey(out) == demo_survey()
    one_error(run(runner, "survey", "demo", "--out", ""), "`--out`")


def test_validate_says_how_respondents_come(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "invited.yaml"
    path.write_text(demo_survey_text().replace("respondents: anonymous", "respondents: invitation"))
    res = run(runner, "survey", "validate", str(path))
    assert res.exit_code == 0 and "by invitation only" in res.stdout
    assert "deniable survey invite" in res.stdout
    assert json.loads(run(runner, "survey", "validate", str(path), "--json").stdout)[
        "respondents"] == "invitation"  # fmt: skip
    plain = tmp_path / "plain.yaml"
    plain.write_text(demo_survey_text())
    assert "anonymous: anyone" in run(runner, "survey", "validate", str(plain)).stdout


def test_report_states_the_robustness_of_every_estimate(
    runner: CliRunner, demo_file: Path, tmp_path: Path
) -> None:
    from deniable.estimation import manipulation_robustness

    survey = demo_survey()
    data = tmp_path / "reports.csv"
    rows = [(i % 3 == 0, i % 2, i % 4) for i in range(120)]
    data.write_text("happy,harassment,hours\n" + "".join(f"{int(a)},{b},{c}\n" for a, b, c in rows))
    res = run(runner, "report", str(data), "--survey", str(demo_file), "--robustness", "0.05",
              "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)["robustness"]
    assert sorted(got) == ["happy", "harassment", "hours"]
    happy = survey.question("happy").design
    want = manipulation_robustness(happy, happy.tally_counts([80, 40]), shift=0.05,
                                   labels=["prevalence"])  # fmt: skip
    assert got["happy"] == json.loads(json.dumps(want.to_dict()))
    hours = survey.question("hours").design
    lib = manipulation_robustness(hours, hours.tally_counts([30, 30, 30, 30]), shift=0.05)
    assert [s["up"]["output"]["fakes"] for s in got["hours"]["shares"]] == [
        lib.fakes("up", "output", j) for j in range(4)
    ]
    text = run(runner, "report", str(data), "--survey", str(demo_file), "--robustness", "0.05")
    assert text.exit_code == 0
    assert "happy: Fake respondents needed to move the estimate by 0.05" in text.stdout
    assert str(want.fakes("up", "output")) in text.stdout
    for bad in ("0", "1.5", "nan", "-0.1"):
        one_error(run(runner, "report", str(data), "--survey", str(demo_file),
                      "--robustness", bad), "`--robustness`")  # fmt: skip
