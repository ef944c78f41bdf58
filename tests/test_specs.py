"""Question specs and randomizer test vectors.

* ``spec -> design -> spec`` round-trips exactly (dict and JSON) for every registered design
  and every example of the conformance suite, and the JSON is strict.
* A spec from a newer schema, with an unknown, missing or extra field, out-of-range
  parameters, or any implied field changed (key, thresholds, words per report, epsilon,
  ...) is refused with an error naming the field.
* ``make_design`` speaks of parameters, never of the ``--param`` flag.
* The committed vectors file is current, covers every design, and an independent
  pure-Python reimplementation of each algorithm, from the spec alone (integers only, no
  deniable randomizer code), reproduces every vector and the block layout beyond ``CHUNK``
  reports: the reference a client in another language follows (docs/specs.md).
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _cases import DESIGN_CASES
from deniable.designs import (
    DESIGNS,
    SPEC_SCHEMA,
    TWO_GROUP_DESIGNS,
    VECTORS_SCHEMA,
    Categorical,
    CheaterDetection,
    Design,
    Kuk,
    Mangat,
    QuestionSpec,
    StochasticLieDetector,
    SymmetricCheaterDetection,
    TwoGroupDesign,
    UnrelatedUnknown,
    Warner,
    design_from_spec,
    dump_vectors,
    make_design,
    randomizer_vectors,
    spec_of,
)
from deniable.designs._vectors import VECTOR_DESIGNS
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError
from deniable.randomness import ArrayWords

VECTORS_FILE = Path(__file__).parent / "vectors" / "randomizers.json"

TWO_GROUP_EXAMPLES: list[tuple[str, Callable[[], Design]]] = [
    ("unrelated-unknown-0", lambda: UnrelatedUnknown(0.7, 0.3)),
    ("unrelated-unknown-1", lambda: UnrelatedUnknown(0.6, 0.0)),
    ("cdm-0", lambda: CheaterDetection(0.2, 0.6)),
    ("cdm-symmetric-0", lambda: SymmetricCheaterDetection(0.1, 0.1, 0.3, 0.1)),
    ("sld-0", lambda: StochasticLieDetector(2 / 12, 10 / 12)),
]
VECTOR_CASES = [(f"v-{n}-{i}", f) for n, fs in VECTOR_DESIGNS.items() for i, f in enumerate(fs)]
ALL_CASES = [*DESIGN_CASES, *TWO_GROUP_EXAMPLES, *VECTOR_CASES]


@pytest.fixture(params=[f for _, f in ALL_CASES], ids=[i for i, _ in ALL_CASES])
def any_design(request: pytest.FixtureRequest) -> Design:
    factory: Callable[[], Design] = request.param
    return factory()


def _strict(text: str) -> Any:
    def no_constant(name: str) -> Any:
        raise AssertionError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=no_constant)


# ------------------------------------------------------------------ round trips


def test_spec_round_trips_exactly(any_design: Design) -> None:
    spec = spec_of(any_design)
    data = spec.to_dict()
    text = spec.to_json()
    assert _strict(text) == data
    back = QuestionSpec.from_json(text)
    assert back == spec and back.design == any_design
    assert back.to_dict() == data and back.to_json() == text
    assert QuestionSpec.from_dict(data).to_dict() == data
    rebuilt = design_from_spec(data)
    assert rebuilt == any_design and type(rebuilt) is type(any_design)
    assert spec_of(rebuilt).to_dict() == data


def test_spec_fields_follow_the_design(any_design: Design) -> None:
    data = spec_of(any_design).to_dict()
    assert data["schema"] == SPEC_SCHEMA == "deniable.question/1"
    assert data["mechanism"] == any_design.name
    assert (data["truths"], data["reports"]) == (any_design.n_truths, any_design.n_reports)
    eps = any_design.epsilon
    if math.isinf(eps):
        assert data["epsilon"] == "inf"  # never a finite number for an infinite epsilon
    else:
        assert isinstance(data["epsilon"], float) and data["epsilon"] == eps
    assert ("latent" in data) == isinstance(any_design, TwoGroupDesign)


def test_spec_of_warner_field_by_field() -> None:
    spec = spec_of(Warner(0.75), text="Have you ever cheated?", labels=["no", "yes"])
    assert spec.to_dict() == {
        "schema": "deniable.question/1",
        "mechanism": "warner",
        "parameters": {"p": "3/4"},
        "key": 'warner{"p":"3/4"}',
        "truths": 2,
        "reports": 2,
        "algorithm": "bernoulli-count/1",
        "words_per_report": 1,
        "thresholds": {"yes": [2**51, 3 * 2**51]},
        "epsilon": math.log(3),
        "text": "Have you ever cheated?",
        "labels": ["no", "yes"],
    }


def test_spec_algorithms_and_words_per_report() -> None:
    assert spec_of(Kuk(0.8, 0.4, draws=3)).words_per_report == 3
    cat = spec_of(Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5)))
    assert (cat.algorithm, cat.words_per_report) == ("keep-or-forced/1", 2)
    keep, cumulative = Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5)).thresholds()
    assert cat.thresholds == {"keep": keep, "forced": cumulative}
    assert spec_of(Categorical(k=4, p_truthful=0.5)).thresholds["forced"] is None
    sld = spec_of(StochasticLieDetector(0.25, 0.75))
    # the group word, then the answer word
    assert sld.algorithm == "two-group/2" and sld.words_per_report == 2
    assert sld.thresholds == {"group": 2**52, "yes": [[2**53, 0, 3 * 2**51], [2**53, 0, 2**51]]}
    assert sld.to_dict()["latent"] == {
        "name": "honest",
        "default": 1,
        "type": [[2, 2], [1, 0]],
        "types": ["honest carrier", "lying carrier", "non-carrier"],
    }


def test_parameters_in_other_exact_forms_are_read_and_written_exactly() -> None:
    data = spec_of(Warner(0.75)).to_dict()
    for form in ("0.75", 0.75, "3/4", "6/8"):
        data["parameters"] = {"p": form}
        assert QuestionSpec.from_dict(data).to_dict()["parameters"] == {"p": "3/4"}
    # 0.1 is not dyadic: the spec holds the float it is, exactly
    assert spec_of(Warner(0.1)).parameters == {"p": "3602879701896397/36028797018963968"}


def test_text_and_labels() -> None:
    spec = spec_of(Categorical(k=3, p_truthful=0.5), text="Which?", labels=("a", "b", "c"))
    assert QuestionSpec.from_json(spec.to_json()).labels == ("a", "b", "c")
    with pytest.raises(ParameterError, match=r"`labels` must have one label per true answer \(3\)"):
        spec_of(Categorical(k=3, p_truthful=0.5), labels=("a", "b"))
    with pytest.raises(ParameterError, match="`labels` must be distinct"):
        spec_of(Warner(0.75), labels=("x", "x"))
    with pytest.raises(ParameterTypeError, match=r"`labels\[1\]` must be a non-empty string"):
        spec_of(Warner(0.75), labels=("no", 1))  # type: ignore[list-item]
    with pytest.raises(ParameterTypeError, match="`text` must be a non-empty string"):
        spec_of(Warner(0.75), text=" ")


def test_two_group_labels_are_per_answer_not_per_type() -> None:
    design = StochasticLieDetector(0.25, 0.75)
    spec = spec_of(design, text="Are you a carrier?", labels=("no", "yes"))
    assert spec.truths == design.n_truths == 3 and spec.answers == 2
    assert QuestionSpec.from_json(spec.to_json()).labels == ("no", "yes")
    with pytest.raises(ParameterError, match=r"one label per true answer \(2\), got 3"):
        spec_of(design, labels=("a", "b", "c"))


def test_only_registered_designs_have_specs() -> None:
    class Local(Warner):
        pass

    with pytest.raises(ParameterError, match="`design` must be a registered design"):
        spec_of(Local(0.75))
    with pytest.raises(ParameterTypeError, match="`design` must be a deniable design"):
        QuestionSpec("warner")  # type: ignore[arg-type]


# ------------------------------------------------------------------ refusals


def _warner() -> dict[str, Any]:
    return spec_of(Warner(0.75)).to_dict()


def test_newer_and_unknown_schemas_are_refused() -> None:
    data = _warner()
    data["schema"] = "deniable.question/2"
    with pytest.raises(ParameterError, match=r"`schema` 'deniable.question/2' is newer.*upgrade"):
        QuestionSpec.from_dict(data)
    data["schema"] = "other/1"
    with pytest.raises(
        ParameterError, match=r"`schema` must be 'deniable.question/1', got 'other/1'"
    ):
        QuestionSpec.from_dict(data)
    data["schema"] = 1
    with pytest.raises(ParameterTypeError, match="`schema` must be the string"):
        QuestionSpec.from_dict(data)


def test_unknown_mechanism_is_refused() -> None:
    data = _warner()
    data["mechanism"] = "nope"
    with pytest.raises(
        ParameterError, match=r"`mechanism` must be one of warner, .*sld, got 'nope'"
    ):
        QuestionSpec.from_dict(data)


@pytest.mark.parametrize(
    "field",
    ["schema", "mechanism", "parameters", "key", "truths", "reports", "algorithm",
     "words_per_report", "thresholds", "epsilon"],
)  # fmt: skip
def test_a_missing_field_is_named(field: str) -> None:
    data = _warner()
    del data[field]
    with pytest.raises(DataError, match=rf"the spec is missing field `{field}`"):
        QuestionSpec.from_dict(data)


def test_two_group_specs_need_their_latent_field() -> None:
    data = spec_of(StochasticLieDetector(0.25, 0.75)).to_dict()
    del data["latent"]
    with pytest.raises(DataError, match="missing field `latent`"):
        QuestionSpec.from_dict(data)
    one_group = _warner()
    one_group["latent"] = data.get("latent")
    with pytest.raises(DataError, match="unknown field `latent`"):
        QuestionSpec.from_dict(one_group)


def test_an_extra_field_is_named() -> None:
    data = _warner()
    data["colour"] = "red"
    with pytest.raises(DataError, match=r"unknown field `colour`; a deniable.question/1 spec"):
        QuestionSpec.from_dict(data)


@pytest.mark.parametrize(
    ("params", "error", "needle"),
    [
        ({"p": "1/2"}, ParameterError, r"`p` must be in \(0, 1\) and not 0.5, got 0.5"),
        ({"p": "abc"}, ParameterTypeError, "`p` must be a real number"),
        ({}, ParameterError, "needs parameter p"),
        ({"p": "3/4", "q": 1}, ParameterError, "got unknown 'q'"),
    ],
)
def test_parameters_are_validated_by_the_design(
    params: dict[str, Any], error: type[Exception], needle: str
) -> None:
    data = _warner()
    data["parameters"] = params
    with pytest.raises(error, match=needle):
        QuestionSpec.from_dict(data)


def _leaves(value: Any, path: str) -> Iterator[tuple[str, list[Any]]]:
    """Every integer leaf of a thresholds object: its path and the key path to it."""
    if isinstance(value, dict):
        for k, x in value.items():
            for p, keys in _leaves(x, f"{path}.{k}"):
                yield p, [k, *keys]
    elif isinstance(value, list):
        for i, x in enumerate(value):
            for p, keys in _leaves(x, f"{path}[{i}]"):
                yield p, [i, *keys]
    elif isinstance(value, int):
        yield path, []


def test_every_tampered_threshold_is_named(any_design: Design) -> None:
    data = spec_of(any_design).to_dict()
    leaves = list(_leaves(data["thresholds"], "thresholds"))
    assert leaves
    for path, keys in leaves:
        bad = copy.deepcopy(data)
        node = bad["thresholds"]
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] += 1 if node[keys[-1]] < 2**53 else -1
        with pytest.raises(DataError, match=re.escape(f"`{path}` does not match")):
            QuestionSpec.from_dict(bad)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("key", 'warner{"p":"1/4"}'),
        ("truths", 3),
        ("reports", 2.0),
        ("algorithm", "keep-or-forced/1"),
        ("words_per_report", 2),
        ("thresholds", {"yes": [2**51, 3 * 2**51], "extra": 1}),
        ("thresholds", [2**51, 3 * 2**51]),
    ],
)
def test_tampered_implied_fields_are_named(field: str, value: Any) -> None:
    data = _warner()
    data[field] = value
    with pytest.raises(DataError, match=rf"`{field}(\.extra)?` does not match the parameters"):
        QuestionSpec.from_dict(data)


def test_thresholds_may_be_written_as_digit_strings() -> None:
    data = _warner()
    data["thresholds"] = {"yes": [str(2**51), str(3 * 2**51)]}
    assert QuestionSpec.from_dict(data) == spec_of(Warner(0.75))


def test_tampered_latent_is_named() -> None:
    data = spec_of(CheaterDetection(0.2, 0.6)).to_dict()
    data["latent"]["type"] = [[0, 3], [1, 2]]
    with pytest.raises(DataError, match=r"`latent.type\[0\]\[0\]` does not match"):
        QuestionSpec.from_dict(data)


def test_epsilon_must_be_the_exact_one() -> None:
    data = _warner()
    data["epsilon"] = 1.0
    with pytest.raises(PrivacyError, match="`epsilon` understates the privacy loss"):
        QuestionSpec.from_dict(data)
    data["epsilon"] = 2.0
    with pytest.raises(DataError, match="`epsilon` does not match the parameters"):
        QuestionSpec.from_dict(data)
    data["epsilon"] = "inf"
    with pytest.raises(DataError, match="`epsilon` does not match"):
        QuestionSpec.from_dict(data)
    data["epsilon"] = "big"
    with pytest.raises(ParameterTypeError, match='`epsilon` must be a number or "inf"'):
        QuestionSpec.from_dict(data)


def test_a_finite_epsilon_for_an_infinite_design_is_refused() -> None:
    data = spec_of(Mangat(0.75)).to_dict()
    assert data["epsilon"] == "inf"
    for finite in (3.0, 1e308, 0):
        data["epsilon"] = finite
        with pytest.raises(PrivacyError, match=r'`epsilon` must be "inf" for mechanism .mangat.'):
            QuestionSpec.from_dict(data)


@pytest.mark.parametrize(
    ("text", "error", "needle"),
    [
        ('{"schema": NaN}', DataError, "not strict JSON: it holds NaN"),
        ('{"schema": 1, "schema": 2}', DataError, "the key `schema` is given twice"),
        ("{", DataError, "not valid JSON: .* at line 1"),
        (b"\xff", DataError, "not UTF-8"),
        ("[1]", ParameterTypeError, "must be a JSON object"),
        ("[" * 100000, DataError, "nested deeper than 64 levels at line 1, column 65"),
    ],
)
def test_json_that_is_not_a_spec(text: str | bytes, error: type[Exception], needle: str) -> None:
    with pytest.raises(error, match=needle):
        QuestionSpec.from_json(text)


# ------------------------------------------------------------------ make_design


def test_make_design_speaks_of_parameters_not_flags() -> None:
    with pytest.raises(ParameterError) as info:
        make_design("kuk", {})
    message = str(info.value)
    assert "--param" not in message
    assert "needs parameters theta1, theta2 (it takes theta1, theta2, draws)" in message


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"p": "3/4"}, Warner(0.75)),
        ({"p": " 0.75 "}, Warner(0.75)),
        ({"p": "6755399441055744/9007199254740992"}, Warner(0.75)),
        ({"p": "0.3/0.4"}, Warner(0.75)),
    ],
)
def test_make_design_reads_exact_fractions(params: dict[str, Any], expected: Design) -> None:
    assert make_design("warner", params) == expected


def test_make_design_takes_fractions_and_lists() -> None:
    from fractions import Fraction

    assert make_design("warner", {"p": Fraction(3, 4)}) == Warner(0.75)
    forced = make_design(
        "categorical", {"k": 3, "p_truthful": "1/2", "forced": ["1/5", "3/10", "1/2"]}
    )
    assert forced == Categorical(3, 0.5, (0.2, 0.3, 0.5))
    with pytest.raises(ParameterTypeError, match="must be a mapping of name to value"):
        make_design("warner", [("p", 0.75)])  # type: ignore[arg-type]


# ------------------------------------------------------------------ test vectors


def _no_constant(name: str) -> Any:
    raise AssertionError(f"not strict JSON: {name}")


@pytest.fixture(scope="module")
def vectors() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        VECTORS_FILE.read_text(encoding="utf-8"), parse_constant=_no_constant
    )
    return data


def test_the_vectors_file_is_current() -> None:
    # regenerate with `deniable spec vectors --out tests/vectors/randomizers.json --force`
    assert VECTORS_FILE.read_text(encoding="utf-8") == dump_vectors(randomizer_vectors())


def test_vectors_cover_every_design(vectors: dict[str, Any]) -> None:
    assert vectors["schema"] == VECTORS_SCHEMA == "deniable.vectors/1"
    cases = vectors["cases"]
    per_design: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        per_design.setdefault(case["spec"]["mechanism"], []).append(case)
    assert set(per_design) == set(DESIGNS) | set(TWO_GROUP_DESIGNS)
    assert all(len(c) >= 2 for c in per_design.values())
    epsilons = [c["spec"]["epsilon"] for c in cases]
    assert "inf" in epsilons and any(isinstance(e, float) for e in epsilons)
    assert {c["spec"]["algorithm"] for c in cases} == {
        "bernoulli-count/1", "keep-or-forced/1", "two-group/2",
    }  # fmt: skip
    assert len({c["id"] for c in cases}) == len(cases)
    # two-group designs: every parameterisation with the group drawn and with it given
    for name in TWO_GROUP_DESIGNS:
        drawn = [c["id"] for c in per_design[name] if "group" not in c]
        given = [c["id"] for c in per_design[name] if "group" in c]
        assert drawn and [f"{i}-group-given" for i in drawn] == given
        shares = {c["spec"]["thresholds"]["group"] for c in per_design[name]}
        assert 2**52 in shares  # group_share 1/2
    assert any("group_share" in c["spec"]["parameters"] for c in cases)


def test_every_vector_is_consistent(vectors: dict[str, Any]) -> None:
    for case in vectors["cases"]:
        spec = QuestionSpec.from_dict(case["spec"])  # a valid, current spec
        n = len(case["truth"])
        assert len(case["reports"]) == n
        given = "group" in case  # two-group designs: the group given, no group words
        assert len(case["words"]) == n * (spec.words_per_report - given)
        words = [int(w) for w in case["words"]]
        assert 0 in words and 2**64 - 1 in words
        assert all(0 <= w < 2**64 for w in words)
        thresholds = _all_thresholds(spec.thresholds)
        if spec.algorithm == "two-group/2":
            # the randomizer's inputs are respondent types, built from 0/1 answers
            assert sorted(set(case["truth"])) == [0, 1]
            assert sorted(set(case["type"])) == list(range(spec.truths))
            assert len(case["latent"]) == len(case["type"]) == n
            table = case["spec"]["latent"]["type"]
            pairs = zip(case["truth"], case["latent"], strict=True)
            assert case["type"] == [table[x][lat] for x, lat in pairs]
            groups = case["group"] if given else [1 + r // 2 for r in case["reports"]]
            assert len(groups) == n
            combos = set(zip(case["truth"], groups, case["latent"], strict=True))
            assert len(combos) == 8
            if given:  # the group threshold is not used
                thresholds = _all_thresholds(spec.thresholds["yes"])
        else:
            assert sorted(set(case["truth"])) == list(range(spec.truths))
            assert not {"group", "latent", "type"} & set(case)
        # every threshold strictly inside (0, 2**53) is straddled by the words
        for t in thresholds:
            if 0 < t < 2**53:
                assert (t << 11) - 1 in words and t << 11 in words, (case["id"], t)


def _all_thresholds(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [t for x in value.values() for t in _all_thresholds(x)]
    if isinstance(value, list):
        return [t for x in value for t in _all_thresholds(x)]
    return [] if value is None else [int(value)]


# --- the reference: each algorithm from the spec alone (docs/specs.md), Python integers only

REF_CHUNK = 1 << 16  # reports per block of the randomizers


def _below(word: int, t: int) -> bool:
    return (word >> 11) < t


def _uniform(word: int, k: int) -> int:
    if k & (k - 1) == 0:
        return word >> (64 - (k.bit_length() - 1))
    b = 64 - k.bit_length()
    return ((word >> (64 - b)) * k) >> b


def _forced(word: int, cumulative: list[Any]) -> int:
    top = word >> 11
    return sum(1 for c in cumulative if int(c) <= top)


def reference_reports(spec: dict[str, Any], words: list[int], truth: list[int]) -> list[int]:
    """The one-group algorithms: blocks of REF_CHUNK reports, slot-major within a block."""
    algorithm, w, th = spec["algorithm"], spec["words_per_report"], spec["thresholds"]
    n = len(truth)
    assert len(words) == n * w, "each report consumes words_per_report words"
    out = []
    for start in range(0, n, REF_CHUNK):
        m = min(REF_CHUNK, n - start)
        block = words[start * w : (start + m) * w]
        for j in range(m):
            x = truth[start + j]
            if algorithm == "bernoulli-count/1":
                t = int(th["yes"][x])
                out.append(sum(_below(block[d * m + j], t) for d in range(w)))
            else:
                assert algorithm == "keep-or-forced/1"
                keep = _below(block[j], int(th["keep"]))
                word = block[m + j]
                other = (
                    _uniform(word, spec["reports"])
                    if th["forced"] is None
                    else _forced(word, th["forced"])
                )
                out.append(x if keep else other)
    return out


def reference_two_group(
    spec: dict[str, Any],
    words: list[int],
    truth: list[int],
    latent: list[int],
    group: list[int] | None = None,
) -> list[int]:
    """``two-group/2``: with the group drawn, word ``i`` is report ``i``'s group word and
    word ``n + i`` its answer word, whatever ``n``; with ``group`` given, word ``i`` is its
    answer word.  The report is ``2 (group - 1) + answer``."""
    assert spec["algorithm"] == "two-group/2" and spec["words_per_report"] == 2
    th, table = spec["thresholds"], spec["latent"]["type"]
    n = len(truth)
    assert len(words) == (2 * n if group is None else n)
    out = []
    for i in range(n):
        kind = table[truth[i]][latent[i]]
        if group is None:
            g = 1 if _below(words[i], int(th["group"])) else 2
            answer_word = words[n + i]
        else:
            g, answer_word = group[i], words[i]
        out.append(2 * (g - 1) + int(_below(answer_word, int(th["yes"][g - 1][kind]))))
    return out


def _reference_case(case: dict[str, Any]) -> list[int]:
    words = [int(w) for w in case["words"]]
    if case["spec"]["algorithm"] == "two-group/2":
        return reference_two_group(
            case["spec"], words, case["truth"], case["latent"], case.get("group")
        )
    return reference_reports(case["spec"], words, case["truth"])


def test_the_reference_reproduces_every_vector(vectors: dict[str, Any]) -> None:
    for case in vectors["cases"]:
        assert _reference_case(case) == case["reports"], case["id"]


def test_the_reference_fails_on_a_tampered_vector(vectors: dict[str, Any]) -> None:
    case = copy.deepcopy(vectors["cases"][0])
    case["spec"]["thresholds"]["yes"][1] = 0  # truth 1 never says yes
    assert _reference_case(case) != case["reports"]
    two_group = [c for c in vectors["cases"] if "latent" in c]
    drawn = copy.deepcopy(next(c for c in two_group if "group" not in c))
    drawn["spec"]["thresholds"]["group"] = 2**53  # everyone in group 1
    assert _reference_case(drawn) != drawn["reports"]
    given = copy.deepcopy(next(c for c in two_group if "group" in c))
    given["group"] = [3 - g for g in given["group"]]
    assert _reference_case(given) != given["reports"]


def test_two_group_words_group_first_then_answer() -> None:
    design = CheaterDetection(0.2, 0.6)  # honest carriers (type 0) always say "yes"
    top = 2**64 - 1
    # one report: the group word (0: group 1; top: group 2), then the answer word
    assert design.randomize([0], rng=ArrayWords([0, top])).tolist() == [1]
    assert design.randomize([0], rng=ArrayWords([top, top])).tolist() == [3]
    # three reports: three group words, then three answer words
    t = design.group_threshold()
    words = [(t << 11) - 1, t << 11, 0, top, top, top]
    assert design.randomize([0, 0, 2], rng=ArrayWords(words)).tolist() == [1, 3, 0]
    ref = reference_two_group(spec_of(design).to_dict(), words, [1, 1, 1], [0, 0, 1])
    assert ref == [1, 3, 0]
    # the group given: no group word
    assert design.randomize([0, 0], group=[2, 1], rng=ArrayWords([top, top])).tolist() == [3, 1]


@pytest.mark.parametrize(
    ("make", "table"),
    [
        (lambda: UnrelatedUnknown(0.7, 0.3), [[3, 2], [1, 0]]),
        (lambda: CheaterDetection(0.2, 0.6), [[1, 3], [0, 2]]),
        (lambda: SymmetricCheaterDetection(0.1, 0.1, 0.3, 0.1), [[1, 3], [0, 2]]),
        (lambda: StochasticLieDetector(0.25, 0.75), [[2, 2], [1, 0]]),
    ],
    ids=["unrelated-unknown", "cdm", "cdm-symmetric", "sld"],
)
def test_the_type_table_is_the_designs_own(
    make: Callable[[], TwoGroupDesign], table: list[list[int]]
) -> None:
    design = make()
    latent = spec_of(design).to_dict()["latent"]
    assert latent["type"] == table
    assert latent["types"] == [t.label for t in design.respondent_types]
    assert [latent["name"], latent["default"]] == list(design.latent)
    for x in (0, 1):
        for lat in (0, 1):
            kind = design.types([x], **{latent["name"]: [lat]})[0]
            assert kind == table[x][lat]
            assert design.respondent_types[kind].truth == x


def test_spec_keys_are_the_design_keys(any_design: Design) -> None:
    spec = spec_of(any_design)
    assert spec.key == any_design.key == spec.to_dict()["key"]
    assert QuestionSpec.from_json(spec.to_json()).design.key == any_design.key


def test_the_group_share_round_trips_through_the_spec() -> None:
    design = CheaterDetection(0.2, 0.6, group_share=0.25)
    data = spec_of(design).to_dict()
    assert data["parameters"]["group_share"] == "1/4"
    assert data["thresholds"]["group"] == 2**51
    back = design_from_spec(data)
    assert back == design and back.key == design.key and "group_share" in back.key
    # 1/2 is the default: not in the parameters nor in the key, even when written out
    half = spec_of(CheaterDetection(0.2, 0.6)).to_dict()
    assert "group_share" not in half["parameters"] and "group_share" not in half["key"]
    assert half["thresholds"]["group"] == 2**52
    half["parameters"]["group_share"] = "1/2"
    assert design_from_spec(half) == CheaterDetection(0.2, 0.6)
    # a spec whose parameters change the group share but not the key is refused
    data["parameters"]["group_share"] = "1/3"
    with pytest.raises(DataError, match="`key` does not match the parameters"):
        QuestionSpec.from_dict(data)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Warner(0.7),
        lambda: Kuk(0.8, 0.4, draws=3),
        lambda: Categorical(k=5, p_truthful=0.6),
        lambda: Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5)),
    ],
    ids=["warner", "kuk-3", "categorical-5", "categorical-forced"],
)
def test_the_block_layout_beyond_one_chunk(make: Callable[[], Design]) -> None:
    # more reports than CHUNK: the words of each block of 2**16 reports are laid out apart
    design = make()
    spec = spec_of(design)
    n = REF_CHUNK + 3
    truth = np.random.default_rng(7).integers(0, spec.truths, n)
    words = np.random.Generator(np.random.PCG64(8)).bit_generator.random_raw(
        n * spec.words_per_report
    )
    source = ArrayWords(words)
    got = design.randomize(truth, rng=source)
    assert source.remaining == 0
    assert got.tolist() == reference_reports(spec.to_dict(), words.tolist(), truth.tolist())


@pytest.mark.parametrize(
    "make",
    [
        lambda: CheaterDetection(0.2, 0.6),
        lambda: StochasticLieDetector(0.25, 0.75, group_share=0.75),
        lambda: UnrelatedUnknown(0.7, 0.3, group_share=1 / 3),
    ],
    ids=["cdm", "sld-share-3/4", "unrelated-unknown-share-1/3"],
)
@pytest.mark.parametrize("drawn", [True, False], ids=["group-drawn", "group-given"])
def test_the_two_group_layout_beyond_one_chunk(
    make: Callable[[], TwoGroupDesign], drawn: bool
) -> None:
    # drawn groups: all n group words first (block after block), then all n answer words,
    # so report i's answer word is word n + i, not where a block of two slots would put it
    design = make()
    spec = spec_of(design).to_dict()
    n = 2 * REF_CHUNK + 5
    rng = np.random.default_rng(7)
    truth, latent = rng.integers(0, 2, n), rng.integers(0, 2, n)
    types = design.types(truth, **{spec["latent"]["name"]: latent})
    group = None if drawn else rng.integers(1, 3, n)
    words = np.random.Generator(np.random.PCG64(8)).bit_generator.random_raw(2 * n if drawn else n)
    source = ArrayWords(words)
    got = design.randomize(types, group=group, rng=source)
    assert source.remaining == 0
    ref = reference_two_group(
        spec, words.tolist(), truth.tolist(), latent.tolist(),
        None if group is None else group.tolist(),
    )  # fmt: skip
    assert got.tolist() == ref
    assert len(set(ref)) == 4
