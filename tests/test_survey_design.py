"""deniable.survey under a sample design: analyze, analyze_file and survey_report give the
design-based estimate of deniable.sampling beside the unweighted one, from columns of the
data or a design object; without design arguments nothing changes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _sampling_data import clustered_sample
from deniable import Estimate, Warner
from deniable.designs import make_design
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.sampling import (
    ReplicateDesign,
    SampleDesign,
    SurveyEstimate,
    SurveyFrequencies,
    as_replicate,
    survey_by,
    survey_estimate,
)
from deniable.survey import (
    DesignColumns,
    analyze,
    analyze_file,
    survey_report,
    survey_report_file,
)

WARNER = Warner(0.8)


@pytest.fixture(scope="module")
def sample() -> pd.DataFrame:
    stratum, psu, weights, reports = clustered_sample()
    return pd.DataFrame({"q": reports, "s": stratum, "p": psu, "w": weights})


def _same(got: SurveyEstimate, want: SurveyEstimate) -> None:
    assert got.value == pytest.approx(want.value, rel=1e-12)
    assert got.se == pytest.approx(want.se, rel=1e-12)
    assert got.df == want.df
    assert got.deff == pytest.approx(want.deff, rel=1e-12)
    assert tuple(got.ci(0.95, "t")) == pytest.approx(tuple(want.ci(0.95, "t")), rel=1e-12)


def test_analyze_with_design_columns_equals_survey_estimate(sample: pd.DataFrame) -> None:
    res = analyze(sample, "q", WARNER, weights="w", strata="s", psu="p")
    want = survey_estimate(WARNER, sample["q"].to_numpy(),
                           SampleDesign(sample["w"], sample["s"], sample["p"]))  # fmt: skip
    assert isinstance(res.design_based, SurveyEstimate)
    assert isinstance(want, SurveyEstimate)
    _same(res.design_based, want)
    # the unweighted estimate is the one without a design
    plain = analyze(sample, "q", WARNER)
    assert res.estimate == plain.estimate
    assert isinstance(plain.estimate, Estimate)
    # the design changed something: this sample is weighted and clustered
    assert res.design_based.se > 1.2 * plain.estimate.se


def test_a_design_object_and_design_columns_agree(sample: pd.DataFrame) -> None:
    design = SampleDesign(sample["w"], sample["s"], sample["p"])
    by_object = analyze(sample, "q", WARNER, sample_design=design).design_based
    by_columns = analyze(
        sample, "q", WARNER, sample_design=DesignColumns(weights="w", strata="s", psu="p")
    ).design_based
    assert isinstance(by_object, SurveyEstimate) and isinstance(by_columns, SurveyEstimate)
    _same(by_object, by_columns)


def test_fpc_and_lonely_psu_reach_the_design(sample: pd.DataFrame) -> None:
    df = sample.assign(N=40)  # 40 PSUs in each stratum's population, 5 sampled
    res = analyze(df, "q", WARNER, sample_design=DesignColumns(weights="w", strata="s",
                                                               psu="p", fpc="N"))  # fmt: skip
    want = survey_estimate(WARNER, df["q"].to_numpy(),
                           SampleDesign(df["w"], df["s"], df["p"], fpc=df["N"]))  # fmt: skip
    assert isinstance(res.design_based, SurveyEstimate) and isinstance(want, SurveyEstimate)
    _same(res.design_based, want)
    lonely = df.assign(p=np.where(df["s"] == 0, 0, df["p"]))  # stratum 0: one PSU
    with pytest.raises(DataError, match=r"stratum 0 has only one PSU.*`lonely_psu`"):
        analyze(lonely, "q", WARNER, weights="w", strata="s", psu="p")
    res = analyze(lonely, "q", WARNER,
                  sample_design=DesignColumns(weights="w", strata="s", psu="p",
                                              lonely_psu="adjust"))  # fmt: skip
    want = survey_estimate(WARNER, lonely["q"].to_numpy(),
                           SampleDesign(lonely["w"], lonely["s"], lonely["p"],
                                        lonely_psu="adjust"))  # fmt: skip
    assert isinstance(res.design_based, SurveyEstimate) and isinstance(want, SurveyEstimate)
    _same(res.design_based, want)


def test_missing_reports_are_a_domain_of_the_full_design(sample: pd.DataFrame) -> None:
    df = sample.astype({"q": "float64"})
    gone = np.zeros(len(df), dtype=bool)
    gone[::7] = True
    df.loc[gone, "q"] = np.nan
    res = analyze(df, "q", WARNER, weights="w", strata="s", psu="p")
    assert res.missing == int(gone.sum())
    filled = np.where(gone, 0, df["q"].fillna(0)).astype(int)
    want = survey_estimate(WARNER, filled, SampleDesign(df["w"], df["s"], df["p"]),
                           domain=~gone)  # fmt: skip
    assert isinstance(res.design_based, SurveyEstimate) and isinstance(want, SurveyEstimate)
    _same(res.design_based, want)
    assert res.design_based.n == len(df) - int(gone.sum())


def test_replicate_weight_columns_equal_the_replicate_design(sample: pd.DataFrame) -> None:
    rep = as_replicate(SampleDesign(sample["w"], sample["s"], sample["p"]), "JKn")
    reps = pd.DataFrame(rep.replicate_weights,
                        columns=[f"rw{i}" for i in range(rep.replicates)])  # fmt: skip
    df = pd.concat([sample, reps], axis=1)
    columns = DesignColumns(weights="w", replicate_weights="rw*", replicate_method="JKn",
                            rscales=rep.rscales)  # fmt: skip
    res = analyze(df, "q", WARNER, sample_design=columns)
    want = survey_estimate(WARNER, df["q"].to_numpy(), rep)
    assert isinstance(res.design_based, SurveyEstimate) and isinstance(want, SurveyEstimate)
    _same(res.design_based, want)
    assert "JKn replicates" in res.design_based.variance_method
    # a list of names is the same as the pattern; a Fay design takes rho
    listed = DesignColumns(weights="w", replicate_weights=list(reps.columns),
                           replicate_method="JKn", rscales=rep.rscales)  # fmt: skip
    again = analyze(df, "q", WARNER, sample_design=listed).design_based
    assert isinstance(again, SurveyEstimate)
    _same(again, res.design_based)


def test_fay_replicates_with_rho_and_scale() -> None:
    rng = np.random.default_rng(11)
    n = 120
    reps = rng.uniform(0.5, 1.5, (n, 8))
    w = rng.uniform(1, 3, n)
    q = rng.integers(0, 2, n)
    df = pd.DataFrame({"q": q, "w": w, **{f"r{i}": reps[:, i] for i in range(8)}})
    cols = DesignColumns(weights="w", replicate_weights="r*", replicate_method="Fay", rho=0.5,
                         scale=0.3)  # fmt: skip
    got = analyze(df, "q", WARNER, sample_design=cols).design_based
    want = survey_estimate(WARNER, q, ReplicateDesign(reps, w, "Fay", rho=0.5, scale=0.3))
    assert isinstance(got, SurveyEstimate) and isinstance(want, SurveyEstimate)
    _same(got, want)


def test_categorical_and_kuk_designs(sample: pd.DataFrame) -> None:
    design = SampleDesign(sample["w"], sample["s"], sample["p"])
    rng = np.random.default_rng(5)
    cat = make_design("categorical", {"k": "3", "p_truthful": "0.7"})
    kuk = make_design("kuk", {"theta1": "0.7", "theta2": "0.3", "draws": "3"})
    for d in (cat, kuk):
        reports = rng.integers(0, d.n_reports, len(sample))
        res = analyze(sample.assign(c=reports), "c", d, weights="w", strata="s", psu="p")
        want = survey_estimate(d, reports, design)
        if isinstance(want, SurveyFrequencies):
            got = res.design_based
            assert isinstance(got, SurveyFrequencies)
            assert got.values == pytest.approx(want.values, rel=1e-12)
            assert got.se == pytest.approx(want.se, rel=1e-12)
            rows = res.to_dict()["comparison"]
            assert [r["parameter"] for r in rows] == ["share of 0", "share of 1", "share of 2"]
            assert [r["design_estimate"] for r in rows] == pytest.approx(list(want.values))
        else:
            assert isinstance(res.design_based, SurveyEstimate)
            _same(res.design_based, want)


def test_two_group_design_estimates_the_prevalence(sample: pd.DataFrame) -> None:
    sld = make_design("sld", {"p1": "2/12", "p2": "10/12"})
    rng = np.random.default_rng(8)
    group = rng.integers(1, 3, len(sample))
    answer = rng.integers(0, 2, len(sample))
    df = sample.assign(a=answer, g=group)
    res = analyze(df, "a", sld, group="g", weights="w", strata="s", psu="p")
    want = survey_estimate(sld, 2 * (group - 1) + answer,
                           SampleDesign(df["w"], df["s"], df["p"]))  # fmt: skip
    assert isinstance(res.design_based, SurveyEstimate) and isinstance(want, SurveyEstimate)
    _same(res.design_based, want)
    rows = {r["parameter"]: r for r in res.to_dict()["comparison"]}
    assert rows["prevalence"]["design_estimate"] == pytest.approx(want.value)
    assert rows["honesty"]["design_estimate"] is None  # none for the other parameter
    text = str(res.table())
    assert "design-based" in text and "n/a" in text


def test_without_a_design_nothing_changes(sample: pd.DataFrame) -> None:
    plain = analyze(sample, "q", WARNER)
    assert plain.design_based is None
    assert "design_based" not in plain.to_dict() and "comparison" not in plain.to_dict()
    designed = analyze(sample, "q", WARNER, weights="w")
    # the unweighted part of a designed analysis is the plain analysis, word for word
    plain_text = str(plain.table())
    assert str(designed.table()).startswith(plain_text)
    assert set(plain.summary().to_dict()) < set(designed.summary().to_dict())
    for key, value in plain.summary().to_dict().items():
        assert designed.summary().to_dict()[key] == value


def test_equal_weights_and_no_clusters_give_the_srs_variance(sample: pd.DataFrame) -> None:
    # with no design at all but weights of 1 the design-based SE is the SRS one with
    # replacement: the unweighted plug-in SE times sqrt(n / (n - 1))
    res = analyze(sample.assign(one=1.0), "q", WARNER, weights="one")
    assert isinstance(res.design_based, SurveyEstimate)
    plain = res.estimate
    assert isinstance(plain, Estimate)
    n = len(sample)
    assert res.design_based.value == pytest.approx(plain.value, rel=1e-12)
    assert res.design_based.se == pytest.approx(plain.se * math.sqrt(n / (n - 1)), rel=1e-9)


def test_analyze_file_equals_analyze(sample: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    df = sample.astype({"q": "float64"})
    df.loc[3, "q"] = np.nan
    df.to_csv(path, index=False)
    got = analyze_file(path, "q", WARNER, weights="w", strata="s", psu="p")
    want = analyze(df, "q", WARNER, weights="w", strata="s", psu="p")
    assert got.file == str(path)
    assert got.missing == want.missing == 1
    assert isinstance(got.design_based, SurveyEstimate)
    assert isinstance(want.design_based, SurveyEstimate)
    _same(got.design_based, want.design_based)
    bad = df.assign(w=df["w"].where(df.index != 9, 0.0))
    bad.to_csv(path, index=False)
    # data rows are numbered from 1 in a file, as without a design
    with pytest.raises(DataError, match=r"`weights` column 'w' must be finite and > 0 .* data "
                       r"row 10 of"):  # fmt: skip
        analyze_file(path, "q", WARNER, weights="w")
    with pytest.raises(DataError, match=r"`strata` must be one of the header of .*got 'nope'"):
        analyze_file(path, "q", WARNER, strata="nope")


def test_survey_report_under_a_design(sample: pd.DataFrame, tmp_path: Path) -> None:
    df = sample.assign(t=np.random.default_rng(2).integers(0, 2, len(sample)))
    questions: dict[Any, Any] = {"q": WARNER, "t": Warner(0.75)}
    rep = survey_report(df, questions, weights="w", strata="s", psu="p")
    design = SampleDesign(df["w"], df["s"], df["p"])
    frame = rep.to_frame()
    for i, (col, d) in enumerate(questions.items()):
        want = survey_estimate(d, df[col].to_numpy(), design)
        assert isinstance(want, SurveyEstimate)
        assert frame.loc[i, "design_estimate"] == pytest.approx(want.value, rel=1e-12)
        assert frame.loc[i, "design_se"] == pytest.approx(want.se, rel=1e-12)
        assert frame.loc[i, "design_df"] == want.df
        assert frame.loc[i, "design_deff"] == pytest.approx(want.deff, rel=1e-12)
        assert rep.to_dict()["questions"][i]["design_based"]["se"] == pytest.approx(want.se)
    assert rep.to_dict()["sample_design"].startswith("480 respondents, 8 strata, 40 PSUs")
    assert "Design-based estimates" in str(rep.table())
    assert "Design-based estimates" in rep.to_html(plot=False)
    plain = survey_report(df, questions)
    assert "Design-based" not in str(plain.table()) + plain.to_html(plot=False)
    assert "design_estimate" not in plain.to_frame().columns
    assert "sample_design" not in plain.to_dict()
    path = tmp_path / "s.parquet"
    df.to_parquet(path)
    from_file = survey_report_file(path, questions, weights="w", strata="s", psu="p")
    assert from_file.to_frame()["design_se"].tolist() == pytest.approx(frame["design_se"].tolist())


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"weights": "nope"}, DataError, r"`weights` must be one of the DataFrame's columns"),
        ({"psu": "nope"}, DataError, r"`psu` must be one of the DataFrame's columns"),
        ({"weights": "neg"}, DataError, r"`weights` column 'neg' must be finite and > 0 in "
         r"every row, got -1.0 in row 4 \(1 such rows\)"),
        ({"weights": "zero"}, DataError, r"got 0.0 in row 0"),
        ({"weights": "text"}, DataError, r"`weights` column 'text' must hold numbers, got 'x'"),
        ({"strata": "gap"}, DataError, r"`strata` column 'gap' must have a label in every row"),
        ({"sample_design": "w"}, ParameterTypeError, r"`sample_design` must be a"),
        ({"sample_design": SampleDesign(weights=[1.0, 2.0])}, DataError,
         r"`sample_design` must have one respondent per row of the data \(6\), got 2"),
        ({"sample_design": DesignColumns(weights="w"), "strata": "s"}, ParameterError,
         r"either as `sample_design` or by the columns `strata`"),
        ({"replicate_weights": "r*", "weights": "w"}, DataError,
         r"`replicate_weights` 'r\*' must match at least 2 columns"),
    ],
)  # fmt: skip
def test_bad_design_arguments_are_refused(kwargs: dict[str, Any], error: type, match: str) -> None:
    df = pd.DataFrame({
        "q": [1, 0, 1, 1, 0, 0], "w": [1.0, 2, 3, 4, 5, 6], "neg": [1.0, 2, 3, 4, -1, 6],
        "zero": [0.0, 1, 1, 1, 1, 1], "text": ["1", "x", "2", "2", "2", "2"],
        "gap": ["a", None, "a", "b", "b", "b"], "s": [1, 1, 1, 2, 2, 2],
    })  # fmt: skip
    with pytest.raises(error, match=match):
        analyze(df, "q", WARNER, **kwargs)


def test_design_columns_check_their_arguments() -> None:
    with pytest.raises(ParameterError, match="needs at least one of"):
        DesignColumns()
    with pytest.raises(ParameterError, match=r"`replicate_weights` carries the design by "
                       r"itself: drop `strata`"):  # fmt: skip
        DesignColumns(weights="w", strata="s", replicate_weights="rw*")
    with pytest.raises(ParameterError, match=r"`replicate_weights` needs `weights`"):
        DesignColumns(replicate_weights="rw*")
    with pytest.raises(ParameterError, match=r"`rho` applies to replicate weights only"):
        DesignColumns(weights="w", rho=0.5)
    with pytest.raises(ParameterError, match=r"`lonely_psu` must be one of 'fail'"):
        DesignColumns(weights="w", lonely_psu="drop")
    with pytest.raises(ParameterError, match=r"`--repmethod` must be one of 'JK1'"):
        DesignColumns(weights="w", replicate_weights="r*", replicate_method="jk",
                      labels={"replicate_method": "--repmethod"})  # fmt: skip


def test_by_gives_each_group_as_a_domain_of_the_full_design(sample: pd.DataFrame) -> None:
    df = sample.assign(region=np.where(sample["p"] < 2, "north", "south"))
    out = analyze(df, "q", WARNER, by="region", weights="w", strata="s", psu="p")
    want = survey_by(WARNER, df["q"].to_numpy(), SampleDesign(df["w"], df["s"], df["p"]),
                     df["region"].to_numpy())  # fmt: skip
    assert out["group"].tolist() == ["north", "south"]
    for i, label in enumerate(["north", "south"]):
        est = want[label]
        assert isinstance(est, SurveyEstimate)
        assert out.loc[i, "design_estimate"] == pytest.approx(est.value, rel=1e-12)
        assert out.loc[i, "design_se"] == pytest.approx(est.se, rel=1e-12)
        assert out.loc[i, "design_df"] == est.df
    # the unweighted columns are those without a design
    plain = analyze(df, "q", WARNER, by="region")
    pd.testing.assert_frame_equal(out[plain.columns], plain)
    assert "design_estimate" not in plain.columns


def test_by_with_categorical_and_two_group_designs(sample: pd.DataFrame) -> None:
    rng = np.random.default_rng(21)
    design = SampleDesign(sample["w"], sample["s"], sample["p"])
    half = (sample["s"] < 4).to_numpy()
    cat = make_design("categorical", {"k": "3", "p_truthful": "0.7"})
    reports = rng.integers(0, 3, len(sample))
    df = sample.assign(c=reports, half=half)
    out = analyze(df, "c", cat, by="half", weights="w", strata="s", psu="p")
    for _, row in out.iterrows():
        want = survey_estimate(cat, reports, design, domain=half == row["group"])
        assert isinstance(want, SurveyFrequencies)
        assert row["design_estimate"] == pytest.approx(want.values[row["category"]], rel=1e-12)
    sld = make_design("sld", {"p1": "2/12", "p2": "10/12"})
    group = rng.integers(1, 3, len(sample))
    group[half] = 1  # the first half has one randomization group only: no estimate there
    answer = rng.integers(0, 2, len(sample))
    df = sample.assign(a=answer, g=group, half=half)
    out = analyze(df, "a", sld, group="g", by="half", weights="w", strata="s", psu="p")
    want = survey_estimate(sld, 2 * (group - 1) + answer, design, domain=~half)
    assert isinstance(want, SurveyEstimate)
    got = out.set_index(["group", "parameter"])["design_estimate"]
    assert got[(False, "prevalence")] == pytest.approx(want.value, rel=1e-12)
    assert math.isnan(got[(False, "honesty")]) and math.isnan(got[(True, "prevalence")])
