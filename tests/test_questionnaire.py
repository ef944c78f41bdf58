"""Survey files (``deniable.survey/1``): reading, round trips, refusals that name the field,
and the budget a respondent spends (basic composition with upward rounding, as the ledger
adds it; the optimal composition at the survey's delta)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from deniable.accounting import BudgetLedger, compare_composition
from deniable.designs import Categorical, TwoCoin, Warner
from deniable.exceptions import DataError, ParameterError, PrivacyError
from deniable.survey import (
    SURVEY_SCHEMA,
    Survey,
    demo_survey,
    demo_survey_text,
    load_survey,
    loads_survey,
)


def minimal(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schema": SURVEY_SCHEMA,
        "id": "s1",
        "title": "A survey",
        "cap": 2,
        "questions": [{"id": "q", "text": "Do you?", "design": {"mechanism": "two-coin"}}],
    }
    data.update(changes)
    return data


def test_the_demo_survey() -> None:
    survey = demo_survey()
    assert survey.id == "workplace" and survey.respondents == "anonymous"
    happy, harassment, hours = survey.questions
    assert happy.text == "Are you happy at work?" and happy.design == TwoCoin()
    assert harassment.design == Warner.from_epsilon(1.0)
    assert hours.design == Categorical.from_epsilon(1.0, 4) and len(hours.labels) == 4
    budget = survey.budget()
    assert budget.epsilons == (math.log(3), harassment.design.epsilon, hours.design.epsilon)
    assert budget.basic >= math.log(3) + harassment.design.epsilon + hours.design.epsilon
    assert budget.basic <= survey.cap and budget.cap_holds
    assert "the cap 3.25 holds" in str(budget.table())


def test_round_trip_through_full_specs_in_json_and_yaml() -> None:
    survey = demo_survey()
    again = Survey.from_dict(json.loads(survey.to_json()))
    assert again == survey
    assert loads_survey(survey.to_json(), format="json") == survey
    import yaml

    assert loads_survey(yaml.safe_dump(survey.to_dict())) == survey
    # the demo file itself is YAML
    assert loads_survey(demo_survey_text()) == survey


def test_load_survey_reads_files(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps(minimal()))
    (tmp_path / "s.yaml").write_text(demo_survey_text())
    assert load_survey(tmp_path / "s.json").questions[0].design == TwoCoin()
    assert load_survey(tmp_path / "s.yaml") == demo_survey()
    with pytest.raises(DataError, match="cannot read survey file"):
        load_survey(tmp_path / "missing.yaml")
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe{")
    with pytest.raises(DataError, match="UTF-8"):
        load_survey(tmp_path / "bad.json")


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"schema": "deniable.survey/2"}, "schema", "newer"),
        ({"schema": "other/1"}, "schema", "must be"),
        ({"colour": "red"}, "(top level)", "unknown field(s) 'colour'"),
        ({"id": "Has Spaces"}, "id", "lowercase letters"),
        ({"id": "login"}, "id", "must not be one of login, logout"),
        ({"id": "logout"}, "id", "/dashboard/logout"),
        ({"title": ""}, "title", "non-empty string"),
        ({"version": 0}, "version", ">= 1"),
        ({"cap": 0}, "cap", "(0, inf)"),
        ({"cap": "inf"}, "cap", "(0, inf)"),
        ({"cap": "lots"}, "cap", "must be a number"),
        ({"cap": True}, "cap", "must be a number"),
        ({"delta": 1}, "delta", "(0, 1)"),
        ({"opens": "yesterday"}, "opens", "ISO 8601"),
        ({"opens": "2027-01-01", "closes": "2026-01-01"}, "closes", "after `opens`"),
        ({"respondents": "everyone"}, "respondents", "anonymous, invitation"),
        ({"questions": []}, "questions", "non-empty list"),
    ],
)
def test_refusals_name_the_field(changes: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ParameterError) as info:
        Survey.from_dict(minimal(**changes))
    message = str(info.value)
    assert message.startswith(f"survey field `{field}` "), message
    assert words in message, message


def question(**changes: Any) -> dict[str, Any]:
    q: dict[str, Any] = {"id": "q", "text": "Do you?", "design": {"mechanism": "two-coin"}}
    q.update(changes)
    return q


@pytest.mark.parametrize(
    ("q", "field", "words"),
    [
        (question(id="Q!"), "questions[0].id", "lowercase"),
        (question(text=" "), "questions[0].text", "non-empty"),
        (question(hint="x"), "questions[0]", "unknown field(s) 'hint'"),
        (question(labels=["no"]), "questions[0].labels", "must have 2 labels"),
        (question(labels=["a", "a"]), "questions[0].labels", "distinct"),
        (question(labels="no,yes"), "questions[0].labels", "list of non-empty strings"),
        (question(design={"mechanism": "nope"}), "questions[0].design.mechanism", "one of"),
        (question(design={"mechanism": "sld"}), "questions[0].unbounded", "two-group"),
        (
            question(design={"mechanism": "warner", "parameters": {"p": 0.5}}),
            "questions[0].design",
            "`p` must be in (0, 1) and not 0.5",
        ),
        (
            question(design={"mechanism": "warner", "epsilon": -1}),
            "questions[0].design.epsilon",
            "(0, inf)",
        ),
        (
            question(design={"mechanism": "triangular", "parameters": {"p": 0.3}}),
            "questions[0].design",
            "epsilon = inf",
        ),
        (
            question(design={"mechanism": "warner", "parameters": {"p": 0.7}, "x": 1}),
            "questions[0].design",
            "unknown field(s) 'x'",
        ),
    ],
)
def test_question_refusals_name_the_field(q: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ParameterError) as info:
        Survey.from_dict(minimal(questions=[q]))
    message = str(info.value)
    assert message.startswith(f"survey field `{field}` "), message
    assert words in message, message


def test_duplicate_question_ids_are_refused() -> None:
    with pytest.raises(ParameterError, match=r"`questions\[1\].id` must be unique"):
        Survey.from_dict(minimal(questions=[question(), question()]))


def test_a_tampered_full_spec_is_refused() -> None:
    spec = demo_survey().questions[0].spec.to_dict()
    spec["thresholds"] = {"yes": [1, 2]}
    with pytest.raises(ParameterError, match=r"`questions\[0\].design` is not a valid design"):
        Survey.from_dict(minimal(questions=[question(design=spec)]))


def test_strict_json_and_yaml_errors() -> None:
    with pytest.raises(DataError, match="not strict JSON: it holds NaN"):
        loads_survey('{"cap": NaN}')
    with pytest.raises(DataError, match="not valid JSON"):
        loads_survey("{", format="json")
    with pytest.raises(DataError, match="not valid YAML"):
        loads_survey("a: [", format="yaml")
    with pytest.raises(ParameterError, match="`format` must be one of"):
        loads_survey("{}", format="toml")


def test_budget_matches_the_ledger_and_the_composition_table() -> None:
    # three questions at epsilon 0.1 under a cap of 0.3: the doubles 0.1 sum to more than
    # the double 0.3, so the ledger refuses the third, and the survey says so
    tenth = {"mechanism": "binary", "parameters": {"epsilon": 0.1}}
    qs = [question(id=f"q{i}", design=tenth) for i in range(3)]
    tight = Survey.from_dict(minimal(cap=0.3, questions=qs)).budget()
    assert tight.answerable == (True, True, False) and not tight.cap_holds
    ledger = BudgetLedger(cap=0.3)
    ledger.spend(["r"], "q0", 0.1)
    ledger.spend(["r"], "q1", 0.1)
    with pytest.raises(PrivacyError):
        ledger.spend(["r"], "q2", 0.1)
    # with a margin (the docs' advice) every question fits
    loose = Survey.from_dict(minimal(cap="0.3000001", questions=qs)).budget()
    assert loose.cap_holds
    assert loose.optimal <= loose.basic
    assert loose.optimal == pytest.approx(
        min(compare_composition([0.1] * 3, 1e-6)["optimal"], loose.basic), rel=1e-12
    )


def test_a_question_past_the_cap_is_skipped_and_later_ones_may_fit() -> None:
    big = {"mechanism": "binary", "parameters": {"epsilon": 2}}
    small = {"mechanism": "binary", "parameters": {"epsilon": 0.5}}
    qs = [
        question(id="a", design=small),
        question(id="b", design=big),
        question(id="c", design=small),
    ]
    budget = Survey.from_dict(minimal(cap=1.5, questions=qs)).budget()
    assert budget.answerable == (True, False, True)
    assert budget.to_dict()["cap_holds"] is False


def test_open_and_close_dates() -> None:
    from datetime import UTC, datetime

    s = Survey.from_dict(minimal(opens="2026-01-01", closes="2026-02-01T00:00:00+01:00"))
    assert s.opens == datetime(2026, 1, 1, tzinfo=UTC)
    assert not s.is_open(datetime(2025, 12, 31, tzinfo=UTC))
    assert s.is_open(datetime(2026, 1, 15, tzinfo=UTC))
    assert not s.is_open(datetime(2026, 2, 1, tzinfo=UTC))
    with pytest.raises(DataError, match="has no question 'x'"):
        s.question("x")
