"""Two-group designs in survey files (issue 16, part 6): only with the acknowledgement
``unbounded: true`` on the question, and then outside the cap: the budget lists them with
epsilon inf and computes the cap and the totals over the bounded questions only."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from typer.testing import CliRunner

from _cli import ENV, one_error, run
from deniable.accounting import add_up
from deniable.designs import CheaterDetection, StochasticLieDetector, Warner
from deniable.exceptions import ParameterError
from deniable.survey import OUTSIDE_CAP, SURVEY_SCHEMA, Survey, loads_survey

CDM = {"mechanism": "cdm", "parameters": {"forced_yes1": 0.2, "forced_yes2": 0.6}}
WARNER = {"mechanism": "warner", "epsilon": 1}


def survey_dict(*questions: dict[str, Any], cap: float = 2.5) -> dict[str, Any]:
    return {"schema": SURVEY_SCHEMA, "id": "s", "title": "t", "cap": cap,
            "questions": list(questions)}  # fmt: skip


def q(qid: str, design: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": qid, "text": f"{qid}?", "design": design, **extra}


def test_a_two_group_question_needs_the_acknowledgement() -> None:
    for name, params in (("cdm", CDM["parameters"]), ("sld", {"p1": 0.2, "p2": 0.8})):
        with pytest.raises(ParameterError) as info:
            Survey.from_dict(survey_dict(q("c", {"mechanism": name, "parameters": params})))
        message = str(info.value)
        assert message.startswith("survey field `questions[0].unbounded` must be true"), message
        assert "epsilon is inf" in message and "no bounded guarantee" in message


@pytest.mark.parametrize(
    ("design", "words"),
    [
        (WARNER, "(epsilon = 1: it has a bounded guarantee)"),
        ({"mechanism": "triangular", "parameters": {"p": 0.3}}, "got design 'triangular'"),
    ],
)
def test_unbounded_on_a_one_group_design_is_refused(design: dict[str, Any], words: str) -> None:
    with pytest.raises(ParameterError) as info:
        Survey.from_dict(survey_dict(q("a", design, unbounded=True)))
    message = str(info.value)
    assert message.startswith("survey field `questions[0].unbounded` may be true only for a "
                              "two-group design"), message  # fmt: skip
    assert words in message


def test_unbounded_must_be_a_boolean_and_group_columns_must_not_clash() -> None:
    with pytest.raises(ParameterError, match=r"`questions\[0\].unbounded` must be true or false"):
        Survey.from_dict(survey_dict(q("c", CDM, unbounded="yes")))
    with pytest.raises(ParameterError, match=r"`questions\[1\].id` must differ from 'c_group'"):
        Survey.from_dict(survey_dict(q("c", CDM, unbounded=True), q("c_group", WARNER)))


def test_a_two_group_question_reads_and_writes_back() -> None:
    survey = Survey.from_dict(survey_dict(q("a", WARNER), q("c", CDM, unbounded=True)))
    c = survey.question("c")
    assert c.unbounded and c.two_group and c.group_column == "c_group"
    assert c.design == CheaterDetection(0.2, 0.6) and c.labels == ("no", "yes")
    assert math.isinf(c.epsilon) and c.spec.to_dict()["epsilon"] == "inf"
    assert not survey.question("a").unbounded
    assert loads_survey(survey.to_json()) == survey
    assert json.loads(survey.to_json())["questions"][1]["unbounded"] is True
    assert "unbounded" not in json.loads(survey.to_json())["questions"][0]


def test_the_budget_leaves_unbounded_questions_outside_the_cap() -> None:
    eps = Warner.from_epsilon(1.0).epsilon
    bounded = [q("a", WARNER), q("b", WARNER), q("d", WARNER)]
    sld = {"mechanism": "sld", "parameters": {"p1": "1/6", "p2": "5/6"}}
    without = Survey.from_dict(survey_dict(*bounded)).budget()
    c, e = q("c", CDM, unbounded=True), q("e", sld, unbounded=True)
    survey = Survey.from_dict(survey_dict(bounded[0], c, *bounded[1:], e))
    assert survey.question("e").design == StochasticLieDetector(1 / 6, 5 / 6)
    budget = survey.budget()
    assert budget.question_ids == ("a", "c", "b", "d", "e")
    assert math.isinf(budget.epsilons[1]) and math.isinf(budget.epsilons[4])
    # the cap and the totals over the bounded questions only: exactly as without them
    assert budget.basic == without.basic == float(add_up(add_up(eps, eps), eps))
    assert math.isfinite(budget.optimal) and budget.optimal == without.optimal
    assert budget.answerable == (True, True, True, False, True)  # d passes the cap 2.5
    assert without.answerable == (True, True, False)
    assert budget.unbounded == (False, True, False, False, True)
    data = budget.to_dict()
    json.dumps(data, allow_nan=False)  # no bare infinity in the JSON
    c = data["questions"][1]
    assert c == {"id": "c", "epsilon": "inf", "answerable": True, "unbounded": True,
                 "cap": OUTSIDE_CAP}  # fmt: skip
    assert "unbounded" not in data["questions"][0]
    text = str(budget.table())
    assert "c         ∞" in text and OUTSIDE_CAP in text
    assert "no bounded guarantee" in text and "not in the sense of local differential" in text
    assert "total epsilon of the bounded questions" in text


def test_survey_validate_prints_infinity_and_outside_the_cap(tmp_path: Any) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(survey_dict(q("a", WARNER), q("c", CDM, unbounded=True))))
    result = run(CliRunner(env=ENV), "survey", "validate", path)
    assert result.exit_code == 0, result.output
    assert OUTSIDE_CAP in result.output and "no bounded guarantee" in result.output
    assert "∞" in result.output
    result = run(CliRunner(env=ENV), "survey", "validate", "--json", path)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["budget"]["questions"][1]["epsilon"] == "inf"
    assert payload["budget"]["basic"] == Warner.from_epsilon(1.0).epsilon


def test_survey_validate_refuses_without_the_acknowledgement(tmp_path: Any) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(survey_dict(q("a", WARNER), q("c", CDM))))
    result = run(CliRunner(env=ENV), "survey", "validate", path)
    one_error(result, "`questions[1].unbounded` must be true")


def test_the_unrelated_question_needs_its_wording_and_only_there() -> None:
    uq = {"mechanism": "unrelated-unknown", "parameters": {"p1": 0.7, "p2": 0.3}}
    with pytest.raises(ParameterError, match=r"`questions\[0\].unrelated` must give the "):
        Survey.from_dict(survey_dict(q("u", uq, unbounded=True)))
    with pytest.raises(ParameterError, match=r"`questions\[0\].unrelated` is only for design"):
        Survey.from_dict(survey_dict(q("c", CDM, unbounded=True, unrelated="Born in April?")))
    with pytest.raises(ParameterError, match=r"`questions\[0\].unrelated` must be a non-empty"):
        Survey.from_dict(survey_dict(q("u", uq, unbounded=True, unrelated=" ")))
    survey = Survey.from_dict(survey_dict(q("u", uq, unbounded=True, unrelated="Born in April?")))
    assert survey.question("u").unrelated == "Born in April?"
    assert loads_survey(survey.to_json()) == survey
