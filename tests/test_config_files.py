"""Issue 14, parts 1 and 3: every configuration file the project reads (survey files in YAML
and JSON, question specs, oracle specs and keys, tallies) goes through one strict loader per
format, which refuses a key given twice at any depth, nesting past 64 levels, integers of
more than 40 digits and numbers beyond the doubles with one DataError naming the file, the
place and the limit; never a silent override, a RecursionError or a ValueError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _cli import ENV, one_error, run
from deniable.common import MAX_DEPTH, MAX_INT_DIGITS, MAX_NODES, load_json, load_yaml
from deniable.designs import QuestionSpec, Tally, Warner, spec_of
from deniable.exceptions import DataError, DeniableError
from deniable.oracles import OLH, oracle_from_key, oracle_from_spec, oracle_spec
from deniable.survey import demo_survey_text, load_survey, loads_survey

SURVEY = demo_survey_text()


def survey_json() -> dict[str, object]:
    return loads_survey(SURVEY).to_dict()


# ---- duplicate keys


def test_a_second_cap_in_a_yaml_survey_is_refused_not_an_override(tmp_path: Path) -> None:
    assert "\ncap: " in SURVEY
    text = SURVEY.replace("\ncap: ", "\ncap: 100\ncap: ", 1)
    line = text.splitlines().index("cap: 100") + 2  # the second `cap:`
    path = tmp_path / "survey.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_survey(path)
    message = str(info.value)
    assert "key `cap` is given twice" in message
    assert f"line {line}, column 1" in message and "survey.yaml" in message


def test_a_duplicate_key_deep_in_a_yaml_survey_names_its_line() -> None:
    text = SURVEY.replace("design: {mechanism: two-coin}", "design: {mechanism: two-coin, "
                          "mechanism: warner}")  # fmt: skip
    assert text != SURVEY
    with pytest.raises(DataError, match=r"key `mechanism` is given twice .*line \d+, column"):
        loads_survey(text)


def test_yaml_merge_keys_may_be_overridden() -> None:
    data = load_yaml("base: &b {a: 1, b: 2}\nx:\n  <<: *b\n  b: 3\n", source="the file")
    assert data["x"] == {"a": 1, "b": 3}


def test_a_duplicate_key_at_any_depth_of_a_json_survey_names_its_path(tmp_path: Path) -> None:
    doc = survey_json()
    text = json.dumps(doc)
    first = json.dumps(doc["questions"][1]["design"])  # type: ignore[index]
    assert first.startswith("{")
    twice = '{"schema": "x", ' + first[1:]
    path = tmp_path / "survey.json"
    path.write_text(text.replace(first, twice, 1), encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_survey(path)
    assert "survey.json" in str(info.value)
    assert "key `schema` is given twice in `questions[1].design`" in str(info.value)
    top = text.replace('{"schema"', '{"cap": 1, "schema"', 1)
    with pytest.raises(DataError, match=r"key `cap` is given twice in the top level"):
        loads_survey(top)


def test_every_json_reader_refuses_a_duplicate_key() -> None:
    spec = spec_of(Warner(0.75)).to_json()
    doubled = spec.replace('"key":', '"key": "x", "key":', 1)
    with pytest.raises(DataError, match="the spec: the key `key` is given twice"):
        QuestionSpec.from_json(doubled)
    ospec = json.dumps(oracle_spec(OLH(k=5, g=3, p_truthful=0.5)))
    with pytest.raises(DataError, match="key `k` is given twice"):
        oracle_from_spec(ospec.replace('"k":', '"k": 5, "k":', 1))
    tally = Tally.binary(3, 10).to_json()
    with pytest.raises(DataError, match="the tally: the key `counts` is given twice"):
        Tally.from_json(tally.replace('"counts":', '"counts": [1, 2], "counts":', 1))
    key = OLH(k=5, g=3, p_truthful=0.5).key
    assert oracle_from_key(key) == OLH(k=5, g=3, p_truthful=0.5)
    with pytest.raises(DataError, match="must look like NAME"):
        oracle_from_key(key.replace('"k":5', '"k":5,"k":5'))


# ---- nesting and numbers


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 3000, 200_000])
def test_deep_nesting_is_one_error_naming_the_place_and_the_limit(depth: int) -> None:
    text = '{"a": ' + "[" * depth + "]" * depth + "}"
    with pytest.raises(DataError, match=rf"nested deeper than {MAX_DEPTH} levels at line 1, "
                       rf"column {MAX_DEPTH + 6}"):  # fmt: skip
        load_json(text, source="the file")
    yaml_text = "a:\n  b: " + "[" * depth + "]" * depth + "\n"
    with pytest.raises(DataError, match=rf"nested deeper than {MAX_DEPTH} levels at line 2"):
        load_yaml(yaml_text, source="the file")


def test_nesting_up_to_the_limit_is_read() -> None:
    inner = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    assert load_json('{"a": ' + inner + "}", source="f")["a"] is not None
    assert load_yaml("a: " + inner, source="f")["a"] is not None


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"a": "[" * 500 + '\\"{' * 100})
    assert load_json(text, source="f") == json.loads(text)


@pytest.mark.parametrize("digits", [MAX_INT_DIGITS + 1, 5000, 100_000])
def test_huge_integers_are_one_error_naming_the_place(digits: int) -> None:
    number = "9" * digits
    with pytest.raises(DataError, match=rf"`q\[1\].k` holds an integer of {digits} digits "
                       rf"\(at most {MAX_INT_DIGITS}"):  # fmt: skip
        load_json('{"q": [{}, {"k": ' + number + "}]}", source="f")
    with pytest.raises(DataError, match=rf"integer at line 2, column 5 has {digits} digits"):
        load_yaml("q: 1\nk: [" + number + "]\n", source="f")
    assert load_json('{"k": ' + "9" * MAX_INT_DIGITS + "}", source="f")["k"] == int(
        "9" * MAX_INT_DIGITS
    )


def test_numbers_beyond_the_doubles_are_refused_not_infinite() -> None:
    with pytest.raises(DataError, match=r"`cap` holds the number 1e999, beyond the largest"):
        load_json('{"cap": 1e999}', source="f")
    with pytest.raises(DataError, match="number at line 1, column 6 is beyond the largest"):
        load_yaml("cap: 1.0e+999", source="f")
    assert load_yaml("cap: .inf", source="f")["cap"] == float("inf")  # spelled out: allowed
    assert load_json('{"x": 1e308, "y": 5e-324}', source="f") == {"x": 1e308, "y": 5e-324}


def test_alias_bombs_and_recursive_aliases_are_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    with pytest.raises(DataError, match=f"more than {MAX_NODES:,} values once its aliases"):
        load_yaml("\n".join(lines), source="f")
    with pytest.raises(DataError, match=r"nested deeper than 64 levels at `a.*once its aliases"):
        load_yaml("a: &a [*a]", source="f")


def test_malformed_text_is_still_one_error() -> None:
    with pytest.raises(DataError, match=r"f is not valid JSON: .* line 1, column [0-9]+"):
        load_json('{"a": 1,}', source="f")
    with pytest.raises(DataError, match="f is not strict JSON: it holds NaN"):
        load_json('{"a": NaN}', source="f")
    with pytest.raises(DataError, match="f is not UTF-8 text"):
        load_json(b'{"a": "\xff"}', source="f")
    with pytest.raises(DataError, match="f is not valid YAML"):
        load_yaml("a: [", source="f")


@pytest.mark.parametrize(
    "text",
    [
        '{"schema": ' + "9" * 5000 + "}",
        '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"a": 1e999}',
        '{"a": 1, "a": 2}',
    ],
)
def test_the_readers_of_specs_and_tallies_refuse_them(text: str) -> None:
    for read in (QuestionSpec.from_json, oracle_from_spec, Tally.from_json):
        with pytest.raises(DataError):
            read(text)


@pytest.mark.parametrize(
    "value", ['"1/' + "9" * 5000 + '"', '"1e400"', '"' + "9" * 5000 + '"', '"²"']
)
def test_long_or_odd_numbers_in_strings_are_errors_too(value: str) -> None:
    spec = spec_of(Warner(0.75)).to_dict()
    for field in ("parameters", "thresholds", "epsilon"):
        doc = dict(spec)
        doc[field] = (
            {"p": json.loads(value)} if field == "parameters"
            else {"yes": [json.loads(value)] * 2} if field == "thresholds"
            else json.loads(value)
        )  # fmt: skip
        with pytest.raises(DeniableError):
            QuestionSpec.from_json(json.dumps(doc))
    doc = json.loads(json.dumps(survey_json()))
    for field in ("cap", "delta"):
        bad = dict(doc)
        bad[field] = json.loads(value)
        with pytest.raises(DeniableError) as info:
            loads_survey(json.dumps(bad))
        assert f"`{field}`" in str(info.value)


# ---- the command line: one error line naming the file


def test_the_commands_name_the_file_and_the_place(tmp_path: Path) -> None:
    runner = CliRunner(env=ENV)
    survey = tmp_path / "s.yaml"
    survey.write_text(SURVEY.replace("\ncap: ", "\ncap: 100\ncap: ", 1), encoding="utf-8")
    one_error(run(runner, "survey", "validate", str(survey)), "s.yaml", "`cap` is given twice")
    deep = tmp_path / "deep.yaml"
    deep.write_text("x: " + "[" * 3000 + "]" * 3000 + "\n", encoding="utf-8")
    one_error(run(runner, "survey", "validate", str(deep)), "deep.yaml", "line 1, column")
    spec = tmp_path / "spec.json"
    spec.write_text('{"schema": ' + "9" * 5000 + "}", encoding="utf-8")
    one_error(run(runner, "spec", "check", str(spec)), "spec.json", "`schema`", "5000 digits")
    spec.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    one_error(run(runner, "spec", "check", str(spec)), "spec.json", "nested deeper than 64")


def test_a_survey_question_has_at_most_1024_answers() -> None:
    """A 180-byte survey file asked for a categorical question of k = 2**24 answers: 2 GB
    and 8 s of default labels and tables; now one error naming the field and the limit."""
    from deniable.exceptions import ParameterError
    from deniable.survey._questionnaire import MAX_ANSWERS

    def survey(k: int) -> str:
        return (
            "schema: deniable.survey/1\nid: s1\ntitle: A survey\ncap: 20\nquestions:\n"
            f"  - {{id: q, text: 'Which one', design: {{mechanism: categorical, parameters: "
            f"{{k: {k}}}, epsilon: 1}}}}\n"
        )

    with pytest.raises(ParameterError, match=r"`questions\[0\].design` has 16,777,216 answers"
                       r" \(categorical\); a survey question may have at most 1,024"):  # fmt: skip
        loads_survey(survey(1 << 24))
    assert loads_survey(survey(MAX_ANSWERS)).questions[0].design.n_truths == MAX_ANSWERS


def test_the_scan_carries_depth_and_digit_runs_across_its_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from deniable.common import _load

    monkeypatch.setattr(_load, "_CHUNK", 7)  # every run and every bracket crosses chunks
    with pytest.raises(DataError, match=r"`b` holds an integer of 41 digits"):
        load_json('{"abc": 12345, "b": ' + "9" * 41 + "}", source="f")
    assert load_json('{"abc": 12345, "b": ' + "9" * 40 + "}", source="f")["b"] == int("9" * 40)
    with pytest.raises(DataError, match=rf"nested deeper than {MAX_DEPTH} levels at line 2"):
        load_json('{"a":\n' + "[ " * 70 + "] " * 70 + "}", source="f")
