"""The survey file's `weighting` field (issue 16, part 6): the population margins of the
raking variables and optional trimming bounds, checked strictly by the loader (each
refusal one error naming the field, on the command line one error line), written back by
`to_dict`, and absent from `to_dict` when not given (stored definitions unchanged)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from _cli import ENV, one_error, run
from deniable.exceptions import ParameterError
from deniable.survey import Survey, SurveyWeighting, loads_survey

HEAD = """\
schema: deniable.survey/1
id: weighted
title: Raked
cap: 3
respondents: invitation
questions:
  - {id: a, text: "First", design: {mechanism: warner, epsilon: 1}}
"""


def _survey(weighting: Any, **top: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schema": "deniable.survey/1", "id": "weighted", "title": "Raked", "cap": 3,
        "respondents": "invitation",
        "questions": [{"id": "a", "text": "First",
                       "design": {"mechanism": "warner", "epsilon": 1}}],
        "weighting": weighting,
    }  # fmt: skip
    data.update(top)
    return data


def test_margins_and_trim_are_read_and_written_back() -> None:
    text = HEAD + (
        'weighting: {margins: {region: {north: 0.4, south: 0.6}, age: {"18-34": 0.3, '
        '"35+": 0.7}}, trim: [0.3, 3.0]}\n'
    )
    survey = loads_survey(text)
    w = survey.weighting
    assert isinstance(w, SurveyWeighting)
    assert w.kind == "shares" and w.trim == (0.3, 3.0)
    assert w.variables == ("age", "region")  # alphabetical: the order raked in
    assert w.targets == {"region": {"north": 0.4, "south": 0.6}, "age": {"18-34": 0.3, "35+": 0.7}}
    doc = survey.to_dict()
    assert doc["weighting"] == {"margins": w.targets, "trim": [0.3, 3.0]}
    assert loads_survey(survey.to_json()) == survey


def test_population_counts_and_whole_number_levels() -> None:
    survey = Survey.from_dict(_survey({"margins": {"band": {1: 300, 2: 700},
                                                   "sex": {"f": 510, "m": 490}}}))  # fmt: skip
    w = survey.weighting
    assert w is not None and w.kind == "counts" and w.trim is None
    assert w.targets["band"] == {"1": 300.0, "2": 700.0}
    assert "trim" not in survey.to_dict()["weighting"]


def test_a_survey_without_weighting_writes_no_such_field() -> None:
    survey = loads_survey(HEAD)
    assert survey.weighting is None
    assert "weighting" not in survey.to_dict()  # a stored definition stays byte for byte


BAD: list[tuple[Any, str, str]] = [
    ({"margins": {"stratum": {"a": 1.0}}}, "weighting.margins.stratum", "design attribute"),
    ({"margins": {"a": {"x": 1.0}}}, "weighting.margins.a", "question id"),
    ({"margins": {"Region": {"x": 1.0}}}, "weighting.margins.Region", "not a raking variable"),
    ({"margins": {"region": {"n": 0.4, "s": 0.5}}}, "weighting.margins.region",
     "summing to 0.9"),
    ({"margins": {"region": {"n": 0.4, "s": 0.6 + 1e-8}}}, "weighting.margins.region",
     "summing to 1.00000001"),
    ({"margins": {"region": {"n": 1.0, "s": 0.0}}}, "weighting.margins.region.s",
     "zero share"),
    ({"margins": {"region": {"n": 1.0, "s": -0.2}}}, "weighting.margins.region.s", "> 0"),
    ({"margins": {"region": {"n": "half", "s": 0.5}}}, "weighting.margins.region.n",
     "a number > 0"),
    ({"margins": {f"v{i}": {"x": 1.0} for i in range(9)}}, "weighting.margins",
     "at most 8 raking variables, got 9"),
    ({"margins": {"region": {"x" * 65: 1.0}}}, "weighting.margins.region.xxx",
     "1 to 64 characters"),
    ({"margins": {"region": {" ": 1.0}}}, "weighting.margins.region", "1 to 64 characters"),
    ({"margins": {"region": {"n": 0.5, " n": 0.5}}}, "weighting.margins.region.n",
     "given twice"),
    ({"margins": {"region": {"n": 0.4, "s": 0.6}, "sex": {"f": 500, "m": 500}}},
     "weighting.margins.sex", "every variable as shares"),
    ({"margins": {"region": {"n": 400, "s": 600}, "sex": {"f": 500, "m": 600}}},
     "weighting.margins.sex", "same total"),
    ({"margins": {}}, "weighting.margins", "non-empty"),
    ({"margins": {"region": {}}}, "weighting.margins.region", "non-empty"),
    ({"margins": {"region": [0.4, 0.6]}}, "weighting.margins.region", "non-empty mapping"),
    ({"trim": [0.3, 3]}, "weighting", "lacks the required field 'margins'"),
    ({"margins": {"region": {"n": 1.0}}, "rake": True}, "weighting", "unknown field(s) 'rake'"),
    ({"margins": {"region": {"n": 1.0}}, "trim": [3, 0.3]}, "weighting.trim", "lower < upper"),
    ({"margins": {"region": {"n": 1.0}}, "trim": [0.3]}, "weighting.trim", "two numbers"),
    ({"margins": {"region": {"n": 1.0}}, "trim": [-1, 2]}, "weighting.trim", "0 <= lower"),
    ({"margins": {"region": {"n": 1.0}}, "trim": [0, float("inf")]}, "weighting.trim",
     "finite"),
    ([1, 2], "weighting", "must be a mapping"),
]  # fmt: skip


@pytest.mark.parametrize(("weighting", "field", "rule"), BAD)
def test_each_refusal_names_the_field(weighting: Any, field: str, rule: str) -> None:
    with pytest.raises(ParameterError) as info:
        Survey.from_dict(_survey(weighting))
    message = str(info.value)
    assert message.startswith(f"survey field `{field}"), message
    assert rule in message, message


def test_an_anonymous_survey_has_no_raking_variables() -> None:
    data = _survey({"margins": {"region": {"n": 1.0}}}, respondents="anonymous")
    with pytest.raises(ParameterError, match=r"`weighting` needs `respondents: invitation`"):
        Survey.from_dict(data)


def test_the_limits_match_the_invitations_rules() -> None:
    from deniable.service.storage.attributes import MAX_VALUE_LENGTH, MAX_VARIABLES
    from deniable.survey._survey_weighting import MAX_LEVEL_LENGTH, MAX_MARGIN_VARIABLES

    assert (MAX_MARGIN_VARIABLES, MAX_LEVEL_LENGTH) == (MAX_VARIABLES, MAX_VALUE_LENGTH)


@pytest.mark.parametrize(("weighting", "field", "rule"), BAD[:4])
def test_the_command_line_refuses_with_one_error_line(
    tmp_path: Path, weighting: Any, field: str, rule: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_survey(weighting)), encoding="utf-8")
    one_error(run(CliRunner(env=ENV), "survey", "validate", str(path)), field, rule)
