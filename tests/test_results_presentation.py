"""The presentation every result shares: the one epsilon formatter, the one JSON encoder,
:class:`Table` (text and HTML), :class:`ConfidenceInterval`, and the result interface
(``table()`` and ``to_dict()``) on every result the command line prints."""

from __future__ import annotations

import json
import math
import pickle
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from deniable.common import dumps, epsilon_note, format_epsilon, format_epsilons, to_jsonable
from deniable.exceptions import ParameterError
from deniable.results import ConfidenceInterval, Result, Table, binomial_interval, map_interval


def _no_constant(name: str) -> Any:
    raise AssertionError(f"JSON holds the non-standard constant {name}")


def strict_json(data: Any) -> Any:
    """``data`` through strict JSON (fails on NaN / Infinity)."""
    return json.loads(json.dumps(data, allow_nan=False), parse_constant=_no_constant)


# ------------------------------------------------------------------ format_epsilon


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (math.inf, "∞"),
        (-math.inf, "-∞"),
        (math.nan, "nan"),
        (0.0, "0.0000"),
        (math.log(3), "1.0986"),
        (1.0, "1.0000"),
        (0.05, "0.0500"),
        (0.001, "0.0010"),
        (0.00099, "0.00099"),
        (1e-7, "1e-07"),
        (1e-300, "1e-300"),
        (5e-324, "4.941e-324"),
        (2130.0, "2130.0000"),
        (1e9, "1e+09"),
        (1e300, "1e+300"),
        (1.7976931348623157e308, "1.797693e+308"),
    ],
)
def test_format_epsilon(value: float, text: str) -> None:
    assert format_epsilon(value) == text


def test_format_epsilon_never_shows_a_positive_epsilon_as_zero_or_infinity_as_finite() -> None:
    for x in (1e-300, 1e-20, 1e-9, 4e-5, 4.9e-5, 1e-4, 0.00049999):
        text = format_epsilon(x)
        assert float(text) > 0 and text != format_epsilon(0.0), (x, text)
        assert abs(float(text) - x) <= 0.01 * x  # at least two significant digits
    assert format_epsilon(math.inf) == "∞"
    assert epsilon_note(math.inf).startswith("∞ (some report reveals")


def test_format_epsilon_digits_and_distinct_values() -> None:
    assert format_epsilon(2.0, 2) == "2.00" and format_epsilon(0.01, 2) == "0.01"
    assert format_epsilon(0.001, 2) == "0.001" and format_epsilon(0.123456, 6) == "0.123456"
    assert format_epsilons([1.00001, 1.00002]) == ["1.00001", "1.00002"]
    assert format_epsilons([1.0, 2.0, math.inf]) == ["1.0000", "2.0000", "∞"]
    assert format_epsilons([0.1, 0.1]) == ["0.1000", "0.1000"]  # equal values may look alike


# ------------------------------------------------------------------ the JSON encoder


def test_to_jsonable_policy() -> None:
    data = {
        "inf": math.inf,
        "-inf": -math.inf,
        "nan": math.nan,
        "float": 0.5,
        "np": (np.float64(np.inf), np.int64(3), np.bool_(True), np.arange(3)),
        "matrix": np.array([[1.0, np.nan]]),
        "fraction": Fraction(3, 4),
        "whole": Fraction(2),
        "ci": ConfidenceInterval(0.1, math.inf),
        7: None,
    }
    assert to_jsonable(data) == {
        "inf": "inf",
        "-inf": "-inf",
        "nan": "nan",
        "float": 0.5,
        "np": ["inf", 3, True, [0, 1, 2]],
        "matrix": [[1.0, "nan"]],
        "fraction": "3/4",
        "whole": "2",
        "ci": [0.1, "inf"],
        "7": None,
    }
    assert strict_json(to_jsonable(data)) == to_jsonable(data)


def test_to_jsonable_uses_to_dict_and_dumps_is_strict() -> None:
    class HasDict:
        def to_dict(self) -> dict[str, Any]:
            return {"x": math.nan}

    assert to_jsonable([HasDict()]) == [{"x": "nan"}]
    text = dumps({"e": math.inf, "s": "ε"})
    assert json.loads(text, parse_constant=_no_constant) == {"e": "inf", "s": "ε"}
    assert "\\u03b5" in dumps({"s": "ε"}, ensure_ascii=True)


# ------------------------------------------------------------------ Table


def test_table_text_aligns_and_wraps() -> None:
    t = Table(
        ("name", "value"),
        (("a", 0.5), ("long name", math.inf), ("c", 1e-7)),
        title="T",
        notes=("first note", "second"),
    )
    lines = str(t).splitlines()
    assert lines[0] == "T" and lines[-2:] == ["first note", "second"]
    assert lines[1] == "name       value" and lines[3] == "a            0.5"
    assert lines[4].endswith("inf") and lines[5].endswith("1e-07")  # numbers right-aligned
    pairs = Table.pairs([("label", "x " * 80), ("n", 3)], title="P")
    text = str(pairs).splitlines()
    assert text[0] == "P" and text[1].startswith("label  x x") and len(text) > 3
    assert all(len(line) <= 88 for line in text)  # a long value wraps under its column
    multi = Table(("a", "b"), (("x\ny", "1"),), align="lr")
    assert str(multi).splitlines()[2:] == ["x  1", "y"]


def test_table_html_is_escaped() -> None:
    t = Table(
        ("<b>col</b>", "n"),
        (("<script>alert(1)</script>", 1), ("two\nlines", 2)),
        title="a & b",
        notes=("<i>note</i>",),
        sections=(Table.pairs([("k", "<v>")], title="sub"),),
    )
    page = t._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "&lt;b&gt;col&lt;/b&gt;" in page and "a &amp; b" in page
    assert "two<br>lines" in page and "&lt;i&gt;note&lt;/i&gt;" in page
    assert page.count("<table>") == 2 and "&lt;v&gt;" in page and "<th" in page


def test_table_data_and_validation() -> None:
    t = Table(("x", "y"), ((1, math.inf),), title="T", notes=("n",))
    assert t.to_dicts() == [{"x": 1, "y": math.inf}]
    assert t.to_json() == [{"x": 1, "y": "inf"}]
    assert t.to_dict() == {"title": "T", "columns": ["x", "y"], "rows": [[1, "inf"]],
                           "notes": ["n"]}  # fmt: skip
    assert t.table() is t and isinstance(t, Result) and str(t) == str(t.table())
    with pytest.raises(ParameterError, match=r"`rows\[0\]` must have 2 entries"):
        Table(("x", "y"), ((1,),))
    with pytest.raises(ParameterError, match="`align` must be one letter l or r per column"):
        Table(("x", "y"), (), align="lc")


# ------------------------------------------------------------------ ConfidenceInterval


def test_confidence_interval_is_a_named_pair() -> None:
    ci = ConfidenceInterval(0.25, 0.5)
    lo, hi = ci
    assert (lo, hi) == (0.25, 0.5) == ci and ci.width == 0.25
    assert ci.covers(0.25) and ci.covers(0.5) and not ci.covers(0.51)
    assert ci.format(2) == "[0.25, 0.50]" and ConfidenceInterval(0.0, math.inf).format() == (
        "[0.0000, ∞]"
    )
    assert pickle.loads(pickle.dumps(ci)) == ci
    assert repr(ci) == "ConfidenceInterval(low=0.25, high=0.5)"


def test_every_interval_is_a_confidence_interval() -> None:
    from deniable.designs import Kuk, StochasticLieDetector, Tally, TwoCoin

    assert isinstance(binomial_interval(3, 10, 0.95, "exact"), ConfidenceInterval)
    assert isinstance(binomial_interval(3, 10, 0.95, "wilson"), ConfidenceInterval)
    assert isinstance(map_interval((0.2, 0.4), 0.25, 0.5), ConfidenceInterval)
    est = TwoCoin().estimate(yes=400, n=1000)
    for m in est.interval_methods:
        assert isinstance(est.ci(0.9, m), ConfidenceInterval)
    kuk = Kuk(0.8, 0.4, draws=3).estimate(Tally((120, 260, 380, 240)), method="mle")
    assert isinstance(kuk.ci(0.95, "likelihood"), ConfidenceInterval)
    assert kuk.ci(0.95, "likelihood").covers(kuk.value)
    two = StochasticLieDetector(2 / 12, 10 / 12).estimate(yes=(373, 398), n=(564, 692))
    assert isinstance(two.prevalence.ci(0.95), ConfidenceInterval)


def test_regression_conf_int_takes_level_only() -> None:
    from scipy import stats

    from deniable.designs import Warner
    from deniable.estimation import logistic_rr

    rng = np.random.default_rng(3)
    x = rng.normal(size=400)
    truth = rng.random(400) < 1 / (1 + np.exp(-x))
    design = Warner(0.8)
    df = pd.DataFrame({"y": design.randomize(truth.astype(np.uint8), rng=rng), "x": x})
    fit = logistic_rr("y ~ x", df, design)
    ci = fit.conf_int(level=0.9).to_numpy()
    z = stats.norm.ppf(0.95)
    assert np.allclose(ci[:, 0], fit.params.to_numpy() - z * fit.bse.to_numpy())
    assert np.allclose(ci[:, 1], fit.params.to_numpy() + z * fit.bse.to_numpy())
    with pytest.raises(TypeError):
        fit.conf_int(0.05)  # type: ignore[misc]  # positional: a level or an alpha? refused
    with pytest.raises(TypeError):
        fit.conf_int(alpha=0.05)  # type: ignore[call-arg]
    assert isinstance(fit.prevalence().ci, ConfidenceInterval)
    table = fit.table(0.9)
    assert isinstance(table, Table) and "90% CI" in str(table)
    assert "Coefficients" in str(table) and str(fit) == fit.summary()
    strict_json(fit.to_dict())


# ------------------------------------------------------------------ the result interface


def _results() -> list[tuple[str, Any]]:
    """One of every result the command line prints."""
    import deniable.accounting as acc
    from deniable.audit import Explanation, audit_design, audit_unary
    from deniable.designs import (
        Categorical,
        DesignEstimate,
        ForcedResponse,
        Kuk,
        Mangat,
        StochasticLieDetector,
        Tally,
        TwoCoin,
        design_catalog,
    )
    from deniable.estimation import majority_decision, power, sample_size
    from deniable.mechanisms import calibrate_noise, design_protocol, noise_error_table
    from deniable.simulation import simulate, simulation_study

    sld = StochasticLieDetector(2 / 12, 10 / 12)
    cat = Categorical(k=3, p_truthful=0.6)
    kuk = Kuk(0.8, 0.4, draws=3)
    mangat = Mangat(0.7).estimate(yes=700, n=1000)
    out: list[tuple[str, Any]] = [
        ("estimate", TwoCoin().estimate(yes=400, n=1000)),
        ("categorical", cat.estimate(Tally((500, 300, 200)))),
        ("two-group", sld.estimate(yes=(373, 398), n=(564, 692))),
        ("kuk mle", kuk.estimate(Tally((120, 260, 380, 240)), method="mle")),
        ("design estimate", DesignEstimate(Mangat(0.7), Tally.binary(700, 1000), mangat)),
        ("design catalog", design_catalog()),
        ("majority", majority_decision(TwoCoin(), 101, prevalence=0.6).simulate(200, seed=1)),
        ("power", power(ForcedResponse(1 / 6, 1 / 6), 200, prevalence=0.2, null=0.0)),
        ("sample size", sample_size(TwoCoin(), 0.8, prevalence=0.3, null=0.2)),
        ("simulation", simulate(TwoCoin(), 500, 0.3, seed=1)),
        ("simulation categorical", simulate(cat, 500, [0.5, 0.3, 0.2], seed=1)),
        ("simulation two-group", simulate(sld, 500, 0.3, honesty=0.8, seed=1)),
        ("study", simulation_study(Mangat(0.6), 100, 0.3, replications=100, seed=1)),
        ("study two-group", simulation_study(sld, 500, 0.3, honesty=0.8, replications=100)),
        ("audit", audit_design(TwoCoin(), trials=2000, seed=1)),
        ("audit unary", audit_unary(1.0, trials=2000, seed=1)),
        ("composition", acc.compose_questions([0.5, math.inf], method="basic")),
        ("comparison", acc.compare_composition([0.5] * 3)),
        ("conversion", acc.convert_guarantee("pure", "approx", epsilon=1.0, delta=1e-6)),
        ("conversion rdp", acc.convert_guarantee("zcdp", "rdp", rho=0.5, orders=[2.0, math.inf])),
        ("shuffle", acc.shuffle_epsilon_table(1.0, 1e-6, n=[1000, 10**12])),
        ("budget", acc.budget_plan(1.0, [("a", 0.5), ("b", 0.75)])),
        ("noise table", noise_error_table([0.5, 2.0])),
        ("noise", calibrate_noise("discrete-gaussian", rho=0.5)),
        ("coins", design_protocol(epsilon=1.0)),
        ("explain", Explanation(1.0)),
        ("explain inf", Explanation(math.inf)),
    ]
    from deniable.survey import GroupedAnalysis, analyze, grouped, survey_report

    df = pd.DataFrame({"q": [1, 0, 1, 1, 0, 0] * 5, "g": list("ab") * 15})
    out += [
        ("analysis", analyze(df, "q", TwoCoin())),
        ("grouped", GroupedAnalysis(grouped(df, "q", TwoCoin(), "g"), TwoCoin())),
        ("report", survey_report(df, {"q": Mangat(0.7)})),
    ]
    return out


RESULTS = _results()


@pytest.mark.parametrize(("name", "result"), RESULTS, ids=[n for n, _ in RESULTS])
def test_every_printed_result_has_the_interface(name: str, result: Any) -> None:
    assert isinstance(result, Result)
    table = result.table()
    assert isinstance(table, Table)
    text = str(table)
    assert text.strip()
    assert str(result) == text or name.startswith("audit")  # an audit's str: one sentence
    assert result._repr_html_().startswith("<div>") and "</table>" in result._repr_html_()
    data = result.to_dict()
    assert strict_json(data) == data  # plain JSON already: the encoder ran
    assert "Infinity" not in json.dumps(data) and "NaN" not in json.dumps(data)


@pytest.mark.parametrize(
    "name", ["design estimate", "study", "composition", "simulation two-group", "report"]
)
def test_an_infinite_epsilon_prints_as_infinity(name: str) -> None:
    result = dict(RESULTS)[name]
    text = str(result.table())
    assert "∞" in text
    assert [w for w in text.split() if w.strip("(),.;:") == "inf"] == []
