"""The dashboard's pure analysis (``deniable.service.analysis``): every number checked against
a closed form computed here from the counts (not from the code's output): moment estimates
``(lambda - P0) / (P1 - P0)``, plug-in and unbiased SEs, Wald intervals, Clopper-Pearson
intervals mapped through the design, k-ary randomized response per category, exact binomial
tails of the majority decision, the budget histogram, and the export's rows."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from statistics import NormalDist

import numpy as np
import pytest
from _closed_forms import binary, binom_sf

from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError
from deniable.service import analysis as an
from deniable.survey import Survey, demo_survey

E = math.e


@pytest.fixture(scope="module")
def survey() -> Survey:
    return demo_survey()


def _tally(survey: Survey, qid: str, counts: list[int]) -> Tally:
    return survey.question(qid).design.tally_counts(counts)


def test_demo_designs_are_the_closed_forms(survey: Survey) -> None:
    """The closed forms below assume these channels: two fair coins (3/4, 1/4), Warner at
    epsilon 1 (p = e / (1 + e)) and 4-ary randomized response at epsilon 1."""
    happy = survey.question("happy").design
    assert (happy.p_yes_given_1, happy.p_yes_given_0) == (0.75, 0.25)
    warner = survey.question("harassment").design
    assert warner.p_yes_given_1 == pytest.approx(E / (1 + E), abs=1e-15)
    assert warner.p_yes_given_0 == pytest.approx(1 / (1 + E), abs=1e-15)
    hours = survey.question("hours").design
    ch = np.asarray(hours.channel)
    assert np.allclose(np.diag(ch), E / (E + 3), atol=1e-15)
    assert np.allclose(ch[0, 1:], 1 / (E + 3), atol=1e-15)


@pytest.mark.parametrize("level", [0.95, 0.9])
def test_binary_results_match_closed_forms(survey: Survey, level: float) -> None:
    tallies = {"happy": _tally(survey, "happy", [37, 63]),
               "harassment": _tally(survey, "harassment", [71, 29])}  # fmt: skip
    res = an.results(survey, tallies, level=level)
    assert res["level"] == level and res["survey"] == "workplace"
    by_id = {q["id"]: q for q in res["questions"]}
    for qid, yes, n, p1, p0 in (
        ("happy", 63, 100, 0.75, 0.25),
        ("harassment", 29, 100, E / (1 + E), 1 / (1 + E)),
    ):
        q = by_id[qid]
        cf = binary(yes, n, p1, p0, level)
        assert q["kind"] == "binary" and q["n"] == n and q["counts"] == [n - yes, yes]
        assert q["epsilon"] == pytest.approx(math.log(3) if qid == "happy" else 1.0, rel=1e-12)
        assert q["estimate"] == pytest.approx(cf["estimate"], rel=1e-12)
        assert q["se"] == pytest.approx(cf["se"], rel=1e-12)
        assert q["se_unbiased"] == pytest.approx(cf["se_unbiased"], rel=1e-12)
        assert q["ci_wald"] == pytest.approx(cf["ci_wald"], rel=1e-12)
        assert q["ci_exact"] == pytest.approx(cf["ci_exact"], rel=1e-9)
        assert q["level"] == level


def test_categorical_results_per_category(survey: Survey) -> None:
    counts = [12, 40, 33, 15]
    n = sum(counts)
    res = an.results(survey, {"hours": _tally(survey, "hours", counts)})
    q = next(x for x in res["questions"] if x["id"] == "hours")
    assert q["kind"] == "categorical" and q["n"] == n and q["counts"] == counts
    assert q["labels"] == ["under 35", "35 to 40", "41 to 50", "over 50"]
    p, r = E / (E + 3), 1 / (E + 3)  # 4-ary RR at epsilon 1: P(report j | j), P(report j | i != j)
    z = NormalDist().inv_cdf(0.975)
    for j, c in enumerate(counts):
        cf = binary(c, n, p, r, 0.95)
        assert q["estimate"][j] == pytest.approx((c / n - r) / (p - r), rel=1e-12)
        assert q["se"][j] == pytest.approx(math.sqrt(c / n * (1 - c / n) / n) / (p - r), rel=1e-12)
        assert q["se_unbiased"][j] == pytest.approx(cf["se_unbiased"], rel=1e-12)
        est, se = q["estimate"][j], q["se"][j]
        assert q["ci_wald"][j] == pytest.approx([est - z * se, est + z * se], rel=1e-12)
        assert q["ci_exact"][j] == pytest.approx(cf["ci_exact"], rel=1e-9)
    assert sum(q["estimate"]) == pytest.approx(1.0, abs=1e-12)  # shares add to one
    assert sum(q["estimate_bounded"]) == pytest.approx(1.0, abs=1e-9)
    assert all(0 <= x <= 1 for x in q["estimate_bounded"])


def test_question_without_reports_has_null_numbers(survey: Survey) -> None:
    res = an.results(survey, {})
    for q in res["questions"]:
        assert q["n"] == 0 and q["estimate"] in (None, [None] * 4)
        assert q["ci_exact"] in (None, [None] * 4)
    assert an.forest_rows(res) == ([], [], [], [])


def test_level_is_checked(survey: Survey) -> None:
    for bad in (0, 1, 1.5, -0.1, float("nan")):
        with pytest.raises(ParameterError, match="level"):
            an.results(survey, {}, level=bad)


def test_tally_of_another_design_is_refused(survey: Survey) -> None:
    wrong = survey.question("harassment").design.tally_counts([1, 2])
    with pytest.raises(DataError, match="mechanism"):
        an.results(survey, {"happy": wrong})


def test_timeline_is_cumulative_numbers_per_bucket(survey: Survey) -> None:
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    points = [(t0, _tally(survey, "happy", [3, 7])),
              (t0 + timedelta(days=1), _tally(survey, "happy", [10, 10]))]  # fmt: skip
    tl = an.timeline(survey, "happy", points, bucket="day")
    assert tl["bucket"] == "day" and tl["question"] == "happy"
    assert [p["end"] for p in tl["points"]] == [
        t0.isoformat(),
        (t0 + timedelta(days=1)).isoformat(),
    ]
    assert [p["n"] for p in tl["points"]] == [10, 20]
    assert tl["points"][0]["estimate"] == pytest.approx(2 * 0.7 - 0.5)
    assert tl["points"][1]["estimate"] == pytest.approx(0.5)
    with pytest.raises(ParameterError, match="bucket"):
        an.timeline(survey, "happy", points, bucket="week")
    with pytest.raises(DataError, match="no question"):
        an.timeline(survey, "nope", points)


def test_budget_histogram_and_values(survey: Survey) -> None:
    ln3 = math.log(3)
    spent = [0.0, ln3, ln3, 1.0, ln3 + 1.0, ln3 + 2.0, ln3 + 2.0, 2.0]
    b = an.budget(survey, spent, bins=13)  # cap 3.25: bins of width 0.25
    assert b["cap"] == 3.25 and b["respondents"] == 8
    assert b["total"] == pytest.approx(ln3 + 2.0)
    assert b["mean"] == pytest.approx(sum(spent) / 8)
    assert b["max"] == pytest.approx(ln3 + 2.0)
    assert b["at_cap"] == 0
    expected_values = ((0.0, 1), (1.0, 1), (ln3, 2), (2.0, 1), (ln3 + 1, 1), (ln3 + 2, 2))
    assert b["values"] == [{"spent": x, "respondents": c} for x, c in expected_values]
    edges = b["histogram"]["edges"]
    assert len(edges) == 14 and edges[0] == 0.0 and edges[-1] == pytest.approx(3.25)
    expected = [0] * 13
    for x in spent:
        expected[min(int(x // 0.25), 12)] += 1
    assert b["histogram"]["counts"] == expected
    empty = an.budget(survey, [])
    assert empty["respondents"] == 0 and empty["mean"] is None
    assert sum(empty["histogram"]["counts"]) == 0
    with pytest.raises(DataError, match="spent"):
        an.budget(survey, [1.0, -0.5])


def test_majority_two_coin_exact_tails(survey: Survey) -> None:
    m = an.majority(survey, "happy", _tally(survey, "happy", [3, 7]))
    assert m["n"] == 10 and m["yes"] == 7 and m["threshold"] == 5.0
    assert m["decision"] is True  # 7 > 10 (1/4 + 3/4) / 2
    assert m["false_positive_rate"] == pytest.approx(386 / 1024, rel=1e-12)  # P(Bin(10,1/2) > 5)
    # the bounded estimate 2 (7/10) - 1/2 = 0.9 gives lambda = 1/4 + 0.9/2 = 0.7
    assert m["prevalence"] == pytest.approx(0.9, rel=1e-12)
    wrong = 1 - binom_sf(5, 10, 0.7)  # P(#yes <= 5): deciding "not a majority"
    assert m["error_probability"] == pytest.approx(wrong, rel=1e-10)
    assert m["false_negative_rate"] == pytest.approx(wrong, rel=1e-10)
    no = an.majority(survey, "happy", _tally(survey, "happy", [6, 4]))
    assert no["decision"] is False
    # estimate 0.3 is no majority: the error is deciding one at lambda = 1/4 + 0.15 = 0.4
    assert no["error_probability"] == pytest.approx(binom_sf(5, 10, 0.4), rel=1e-10)


def test_majority_offset_and_refusals(survey: Survey) -> None:
    # c = 2 SDs at the boundary: 50 + 2 sqrt(100 / 4) = 60
    m = an.majority(survey, "happy", _tally(survey, "happy", [41, 59]), offset=2.0)
    assert m["threshold"] == 60.0 and m["decision"] is False
    assert m["false_positive_rate"] == pytest.approx(binom_sf(60, 100, 0.5), rel=1e-10)
    with pytest.raises(ParameterError, match="binary"):
        an.majority(survey, "hours", _tally(survey, "hours", [1, 1, 1, 1]))
    with pytest.raises(DataError, match="no question"):
        an.majority(survey, "nope", None)
    with pytest.raises(ParameterError, match="offset"):
        an.majority(survey, "happy", None, offset=float("inf"))
    empty = an.majority(survey, "harassment", None)
    assert empty["n"] == 0 and empty["decision"] is None and empty["error_probability"] is None


def test_export_table_keeps_only_reports_sorted(survey: Survey) -> None:
    rows = [
        {"respondent": 9, "happy": 1, "harassment": None, "hours": 3, "received_at": "x"},
        {"respondent": 2, "happy": 0, "harassment": 1, "hours": None},
        {"respondent": 5, "happy": None, "harassment": None, "hours": None},
        {"respondent": 7, "happy": 1, "harassment": 0, "hours": 0},
    ]
    assert an.export_columns(survey) == ["happy", "harassment", "hours"]
    assert an.export_table(survey, rows) == [(0, 1, None), (1, None, 3), (1, 0, 0)]


def test_forest_rows_one_per_binary_question_and_category(survey: Survey) -> None:
    tallies = {"happy": _tally(survey, "happy", [5, 5]),
               "hours": _tally(survey, "hours", [1, 2, 3, 4])}  # fmt: skip
    res = an.results(survey, tallies)
    labels, est, lo, hi = an.forest_rows(res)
    assert labels == ["happy", "hours: under 35", "hours: 35 to 40", "hours: 41 to 50",
                      "hours: over 50"]  # fmt: skip
    assert est[0] == pytest.approx(0.5)
    assert all(a <= b for a, b in zip(lo, hi, strict=True))


def test_results_document_carries_no_reports(survey: Survey) -> None:
    tallies = {"happy": _tally(survey, "happy", [3, 7])}
    doc = an.results_document(survey, tallies, [math.log(3)] * 10)
    assert doc["schema"] == an.RESULTS_SCHEMA
    assert doc["survey"] == survey.to_dict()
    assert doc["results"] == an.results(survey, tallies)
    assert [m["question"] for m in doc["majority"]] == ["happy", "harassment"]
    assert doc["budget"]["respondents"] == 10
