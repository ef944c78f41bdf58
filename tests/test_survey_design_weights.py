"""Weights from population margins: sampling.rake_weights (raking that says how it went)
and survey.weight_frame / Margins (margins as a variable,level,target table)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from deniable.exceptions import DataError, ParameterError
from deniable.sampling import SampleDesign, kish_deff, post_stratify, rake, rake_weights
from deniable.survey import Margins, weight_frame


@pytest.fixture(scope="module")
def people() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    n = 600
    sex = rng.choice(["f", "m"], n, p=[0.65, 0.35])
    age = rng.choice([1, 2, 3], n, p=[0.2, 0.3, 0.5])
    region = rng.choice(["n", "s", "e", "w"], n)
    return pd.DataFrame({"sex": sex, "age": age, "region": region,
                         "w": rng.uniform(1, 3, n), "q": rng.integers(0, 2, n)})  # fmt: skip


def _margins(rows: list[tuple[str, Any, float]]) -> Margins:
    return Margins.from_frame(pd.DataFrame(rows, columns=["variable", "level", "target"]))


SHARES = [("sex", "f", 0.5), ("sex", "m", 0.5), ("age", 1, 0.3), ("age", 2, 0.3),
          ("age", 3, 0.4), ("region", "n", 0.1), ("region", "s", 0.2), ("region", "e", 0.3),
          ("region", "w", 0.4)]  # fmt: skip


def test_rake_weights_is_rake_and_counts_its_sweeps(people: pd.DataFrame) -> None:
    margins = {
        "sex": (people["sex"].to_numpy(), {"f": 0.5, "m": 0.5}),
        "age": (people["age"].to_numpy(), {1: 0.3, 2: 0.3, 3: 0.4}),
    }
    fit = rake_weights(people["w"], margins)
    assert fit.converged and fit.max_error <= 1e-8
    design = SampleDesign(weights=people["w"])
    np.testing.assert_array_equal(fit.weights, rake(design, margins).weights)
    # the sweeps it reports are the fewest rake needs
    rake(design, margins, max_iterations=fit.iterations)
    with pytest.raises(DataError, match="did not converge"):
        rake(design, margins, max_iterations=fit.iterations - 1)
    assert fit.iterations >= 2


def test_rake_weights_reports_non_convergence() -> None:
    x = np.array(["a", "a", "b", "b"] * 10)
    margins = {"x": (x, {"a": 0.5, "b": 0.5}), "y": (x.copy(), {"a": 0.3, "b": 0.7})}
    fit = rake_weights(np.ones(x.size), margins, max_iterations=30)
    assert not fit.converged and fit.iterations == 30 and fit.max_error > 0.1
    with pytest.raises(DataError, match="did not converge"):
        rake(SampleDesign(weights=np.ones(x.size)), margins, max_iterations=30)


def test_weight_frame_meets_the_margins(people: pd.DataFrame) -> None:
    res = weight_frame(people, _margins(SHARES), weights="w")
    assert res.converged and res.kind == "shares"
    out = res.frame
    assert list(out.columns) == [*people.columns, "weight"]
    total = out["weight"].sum()
    assert total == pytest.approx(people["w"].sum(), rel=1e-12)  # shares keep the total
    for var, level, target in SHARES:
        got = out.loc[out[var] == level, "weight"].sum() / total
        assert got == pytest.approx(target, abs=1e-8)
    assert res.deff == pytest.approx(kish_deff(out["weight"]))
    assert res.deff_before == pytest.approx(kish_deff(people["w"]))
    assert {(a, b): x for a, b, _, x in res.achieved}[("age", "3")] == pytest.approx(0.4)
    table = str(res.table())
    assert "raking to shares" in table and "Kish design effect" in table
    assert res.to_dict()["iterations"] == res.iterations


def test_counts_give_the_population_total(people: pd.DataFrame) -> None:
    counts = [("sex", "f", 5000), ("sex", "m", 5000), ("age", 1, 3000), ("age", 2, 3000),
              ("age", 3, 4000)]  # fmt: skip
    res = weight_frame(people, _margins(counts))
    assert res.kind == "counts"
    assert res.frame["weight"].sum() == pytest.approx(10000)
    got = res.frame.groupby("age")["weight"].sum()
    assert got.to_dict() == pytest.approx({1: 3000, 2: 3000, 3: 4000})


def test_post_stratify_and_trim(people: pd.DataFrame) -> None:
    regions = [r for r in SHARES if r[0] == "region"]
    res = weight_frame(people, _margins(regions), method="post-stratify", weights="w")
    want = post_stratify(SampleDesign(weights=people["w"]), people["region"].to_numpy(),
                         {"n": 0.1, "s": 0.2, "e": 0.3, "w": 0.4}).weights  # fmt: skip
    np.testing.assert_allclose(res.frame["weight"], want, rtol=1e-12)
    with pytest.raises(ParameterError, match="'post-stratify' takes margins of one variable"):
        weight_frame(people, _margins(SHARES), method="post-stratify")
    trimmed = weight_frame(people, _margins(SHARES), weights="w", trim=(1.0, 3.0))
    w = trimmed.frame["weight"]
    assert w.min() >= 1.0 - 1e-12 and w.max() <= 3.0 + 1e-12
    assert w.sum() == pytest.approx(people["w"].sum(), rel=1e-12)
    assert trimmed.trim == (1.0, 3.0)


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([("sex", "f", 0.5), ("sex", "m", 0.4), ("age", 1, 0.5), ("age", 2, 0.5)],
         r"must add to the same total .* sex: 0\.9, age: 1"),
        ([("sex", "f", 50), ("sex", "m", 50), ("age", 1, 60), ("age", 2, 60)],
         r"sex: 100, age: 120"),
        ([("sex", "f", 0.5), ("sex", "f", 0.5)], r"level sex=f is given twice"),
        ([("sex", "f", 0.0), ("sex", "m", 1.0)], r"`target` of sex=f must be a finite number"),
        ([("sex", "f", "x"), ("sex", "m", 1.0)], r"got 'x'"),
    ],
)  # fmt: skip
def test_bad_margins_are_refused(rows: list[tuple[str, Any, Any]], match: str) -> None:
    with pytest.raises(DataError, match=match):
        _margins(rows)


def test_margins_need_their_columns() -> None:
    with pytest.raises(DataError, match=r"columns variable, level, target.*no 'target'"):
        Margins.from_frame(pd.DataFrame({"variable": ["a"], "level": ["b"]}))


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([("sex", "f", 1.0)], r"no target for sex=m, which \d+ respondent"),
        ([("sex", "f", 0.4), ("sex", "m", 0.4), ("sex", "x", 0.2)],
         r"sex=x \(target 0\.2\), which no respondent has"),
        ([("height", "1", 1.0)], r"margin variable 'height' must be a column"),
    ],
)  # fmt: skip
def test_margins_that_do_not_match_the_data(
    people: pd.DataFrame, rows: list[tuple[str, Any, float]], match: str
) -> None:
    with pytest.raises(DataError, match=match):
        weight_frame(people, _margins(rows))


def test_weight_frame_refuses_bad_data(people: pd.DataFrame) -> None:
    m = _margins([("sex", "f", 0.5), ("sex", "m", 0.5)])
    gap = people.assign(sex=people["sex"].where(people.index != 3, None))
    with pytest.raises(DataError, match=r"'sex' is missing in data row 4"):
        weight_frame(gap, m)
    with pytest.raises(DataError, match=r"`weights` column 'q' must be finite and > 0"):
        weight_frame(people, m, weights="q")
    with pytest.raises(DataError, match=r"`column` 'w' is already a column"):
        weight_frame(people, m, column="w")
    x = np.array(["a", "b"] * 20)
    same = pd.DataFrame({"x": x, "y": x})
    clash = _margins([("x", "a", 0.5), ("x", "b", 0.5), ("y", "a", 0.3), ("y", "b", 0.7)])
    with pytest.raises(DataError, match="raking did not converge"):
        weight_frame(same, clash)
