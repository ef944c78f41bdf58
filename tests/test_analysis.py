"""Survey data in pandas: ``deniable.survey`` (analyze, grouped, files), `deniable analyze`.

Closed forms used (binary design, P1 = P(yes | 1), P0 = P(yes | 0), l = yes / n):
estimate (l - P0) / (P1 - P0); plug-in SE sqrt(l (1 - l) / n) / |P1 - P0|, unbiased with
n - 1; exact interval: Clopper-Pearson beta quantiles for l, mapped through the channel
(ends swapped when P1 < P0) and clipped to [0, 1].

Two-group (stochastic lie detector, Moshagen et al. 2012; l_g = yes_g / n_g):
prevalence 1 - (l2 - l1) / (p1 - p2) with SE sqrt(l1 (1 - l1) / n1 + l2 (1 - l2) / n2) /
|p1 - p2|; honesty (l1 - (1 - pi)(1 - p1)) / pi.  Published check (Heck & Moshagen 2018,
minarets): 373 of 564 with p1 = 2/12, 398 of 692 with p2 = 10/12 give 0.8707 (SE 0.0411)
and 0.6358 (SE 0.0173).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from _cli import ENV, run_json
from _cli import one_error as assert_one_line_error
from deniable import (
    DataError,
    ForcedResponse,
    Mangat,
    ParameterError,
    ParameterTypeError,
    TwoCoin,
    Warner,
)
from deniable.cli import app
from deniable.designs import StochasticLieDetector, TwoGroupEstimate
from deniable.simulation import simulate
from deniable.survey import (
    GROUPED_COLUMNS,
    TWO_GROUP_COLUMNS,
    Analysis,
    analyze,
    grouped,
    read_reports,
    write_reports,
)

SLD = StochasticLieDetector(2 / 12, 10 / 12)


def closed_form(p1: float, p0: float, yes: int, n: int, level: float = 0.95) -> dict[str, Any]:
    """The estimate, both SEs and the exact interval from the formulas (not from deniable)."""
    lam = yes / n
    slope = p1 - p0
    alpha = 1 - level
    lo_l = 0.0 if yes == 0 else stats.beta.ppf(alpha / 2, yes, n - yes + 1)
    hi_l = 1.0 if yes == n else stats.beta.ppf(1 - alpha / 2, yes + 1, n - yes)
    a, b = sorted(((lo_l - p0) / slope, (hi_l - p0) / slope))
    return {
        "estimate": (lam - p0) / slope,
        "se": math.sqrt(lam * (1 - lam) / n) / abs(slope),
        "se_unbiased": math.sqrt(lam * (1 - lam) / (n - 1)) / abs(slope),
        "ci": (min(max(a, 0.0), 1.0), min(max(b, 0.0), 1.0)),
    }


@pytest.fixture
def survey() -> Any:
    """A small survey: 0/1 reports with a few missing, a group column, another question."""
    rng = np.random.default_rng(11)
    n = 400
    q = rng.integers(0, 2, n).astype(float)
    q[[3, 50, 77]] = np.nan
    g = rng.choice(["east", "north", "west"], n)
    return pd.DataFrame({"id": np.arange(n), "q": q, "region": g, "z": rng.integers(0, 2, n)})


# ------------------------------------------------------------------ analyze


@pytest.mark.parametrize(
    "design",
    [TwoCoin(), Warner(0.2), ForcedResponse(1 / 6, 1 / 3), Mangat(0.6)],
    ids=lambda d: d.name,
)
def test_analyze_matches_design_estimate_and_closed_form(survey: Any, design: Any) -> None:
    res = analyze(survey, "q", design)
    kept = survey["q"].dropna().to_numpy().astype(np.uint8)
    direct = design.estimate(kept)
    assert isinstance(res, Analysis)
    assert res.missing == 3 and res.n == len(survey) - 3 == direct.n
    assert res.estimate.value == direct.value
    assert res.estimate.se == direct.se and res.estimate.se_unbiased == direct.se_unbiased
    assert res.estimate.ci(0.9, "exact") == direct.ci(0.9, "exact")
    cf = closed_form(design.p_yes_given_1, design.p_yes_given_0, int(kept.sum()), kept.size)
    assert res.estimate.value == pytest.approx(cf["estimate"], abs=1e-12)
    assert res.estimate.se == pytest.approx(cf["se"], rel=1e-12)
    assert res.estimate.se_unbiased == pytest.approx(cf["se_unbiased"], rel=1e-12)
    assert res.ci == pytest.approx(cf["ci"], abs=1e-10)


def test_analyze_level_changes_the_interval(survey: Any) -> None:
    res = analyze(survey, "q", TwoCoin(), level=0.8)
    kept = survey["q"].dropna()
    cf = closed_form(0.75, 0.25, int(kept.sum()), kept.size, level=0.8)
    assert res.ci == pytest.approx(cf["ci"], abs=1e-10)


@pytest.mark.parametrize(
    "column",
    [
        [1, 0, 1, 1, 0],
        [1.0, 0.0, 1.0, 1.0, 0.0],
        [True, False, True, True, False],
        pd.array([1, 0, 1, 1, 0], dtype="Int64"),
        pd.array([True, False, True, True, False], dtype="boolean"),
        np.array([1, False, True, 1.0, 0], dtype=object),
        np.array([1, 0, 1, 1, 0], dtype=np.uint8),
    ],
    ids=["int", "float", "bool", "Int64", "boolean", "object", "uint8"],
)
def test_every_binary_dtype_gives_the_same_estimate(column: Any) -> None:
    res = analyze(pd.DataFrame({"q": column}), "q", TwoCoin())
    assert (res.n, res.missing) == (5, 0)
    assert res.estimate.value == pytest.approx((3 / 5 - 0.25) / 0.5, rel=1e-12)


@pytest.mark.parametrize(
    "column",
    [
        [1, None, 0, 1],
        pd.array([1, None, 0, 1], dtype="Int64"),
        pd.array([True, None, False, True], dtype="boolean"),
        np.array([1, None, 0, 1], dtype=object),
    ],
    ids=["float-nan", "Int64-NA", "boolean-NA", "object-None"],
)
def test_missing_reports_are_dropped_and_counted(column: Any) -> None:
    res = analyze(pd.DataFrame({"q": column}), "q", TwoCoin())
    assert (res.n, res.missing) == (3, 1)
    assert res.estimate.value == pytest.approx((2 / 3 - 0.25) / 0.5, rel=1e-12)
    with pytest.raises(DataError, match=r"`column` 'q' has 1 missing value.*first at row 1"):
        analyze(pd.DataFrame({"q": column}), "q", TwoCoin(), missing="error")


def test_missing_column_names_it_and_lists_the_columns(survey: Any) -> None:
    with pytest.raises(DataError) as err:
        analyze(survey, "qq", TwoCoin())
    msg = str(err.value)
    assert "'qq'" in msg and "'id', 'q', 'region', 'z'" in msg and "`column`" in msg


@pytest.mark.parametrize(
    ("values", "bad", "row"),
    [
        ([0, 1, 2, 1], "2", "2"),
        ([0, -1, 1, 1], "-1", "1"),
        ([0.0, 1.0, 0.5, 1.0], "0.5", "2"),
        (["1", "0", "yes", "1"], "'yes'", "2"),  # text follows the file rules
        (np.array([0, 1, "no", 1], dtype=object), "'no'", "2"),
    ],
    ids=["two", "negative", "half", "text", "object-text"],
)
def test_non_binary_values_name_column_value_and_row(values: Any, bad: str, row: str) -> None:
    df = pd.DataFrame({"drugs": values})
    with pytest.raises(DataError) as err:
        analyze(df, "drugs", TwoCoin())
    msg = str(err.value)
    assert "'drugs'" in msg and f"got {bad} at row {row}" in msg, msg


def test_non_binary_row_is_the_index_label_and_counts_the_rest() -> None:
    df = pd.DataFrame({"q": [0, 3, 1, 7]}, index=["r1", "r2", "r3", "r4"])
    with pytest.raises(DataError, match=r"got 3 at row 'r2' \(the first of 2 offending values"):
        analyze(df, "q", TwoCoin())


def test_no_reports_left_is_an_error() -> None:
    with pytest.raises(DataError, match="no reports"):
        analyze(pd.DataFrame({"q": [np.nan, np.nan]}), "q", TwoCoin())


def test_bad_arguments(survey: Any) -> None:
    with pytest.raises(ParameterTypeError, match="`df` must be a pandas DataFrame"):
        analyze({"q": [1, 0]}, "q", TwoCoin())
    with pytest.raises(ParameterTypeError, match="`design` must be a deniable design"):
        analyze(survey, "q", "two-coin")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`level` must be in"):
        analyze(survey, "q", TwoCoin(), level=1.5)
    with pytest.raises(ParameterError, match="`missing` must be one of 'drop', 'error'"):
        analyze(survey, "q", TwoCoin(), missing="ignore")
    dup = pd.DataFrame([[1, 0]], columns=["q", "q"])
    with pytest.raises(DataError, match="unique"):
        analyze(dup, "q", TwoCoin())


def test_analysis_table_and_dict_state_infinite_epsilon(survey: Any) -> None:
    res = analyze(survey, "q", Mangat(0.6))
    assert "∞" in str(res.table()) and "inf" not in str(res.table())
    d = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert d["epsilon"] == "inf" and d["missing"] == 3 and d["column"] == "q"
    assert "1.0986" in str(analyze(survey, "q", TwoCoin()))


def test_simulation_frame_analyses_to_the_simulation_estimate() -> None:
    sim = simulate(TwoCoin(), 2000, 0.3, seed=4)
    res = analyze(sim.to_frame(), "report", TwoCoin())
    assert res.estimate.value == sim.estimate.value and res.n == 2000


# ------------------------------------------------------------------ grouped


def test_grouped_equals_per_group_subsets(survey: Any) -> None:
    design = Warner(0.7)
    out = analyze(survey, "q", design, by="region", level=0.9)
    assert tuple(out.columns) == GROUPED_COLUMNS
    assert list(out["group"]) == ["east", "north", "west"]
    for row in out.itertuples(index=False):
        sub = survey[survey["region"] == row.group]
        one = analyze(sub, "q", design, level=0.9)
        kept = sub["q"].dropna()
        cf = closed_form(0.7, 0.3, int(kept.sum()), kept.size, level=0.9)
        assert row.n == one.n == kept.size and row.missing == one.missing
        assert row.yes == int(kept.sum())
        assert row.estimate == one.estimate.value == pytest.approx(cf["estimate"], abs=1e-12)
        assert row.bounded == one.estimate.bounded
        assert row.se == pytest.approx(cf["se"], rel=1e-12)
        assert row.se_unbiased == pytest.approx(cf["se_unbiased"], rel=1e-12)
        assert (row.ci_lower, row.ci_upper) == pytest.approx(cf["ci"], abs=1e-10)
        assert row.epsilon == pytest.approx(math.log(0.7 / 0.3), rel=1e-12)
    assert out["missing"].sum() == 3 and out["n"].sum() == len(survey) - 3
    assert out.attrs["level"] == 0.9 and out.attrs["missing_group"] == 0


def test_grouped_function_is_analyze_by(survey: Any) -> None:
    a = grouped(survey, "q", TwoCoin(), "region")
    b = analyze(survey, "q", TwoCoin(), by="region")
    pd.testing.assert_frame_equal(a, b)


def test_grouped_numeric_labels_sorted_and_infinite_epsilon() -> None:
    df = pd.DataFrame({"q": [1, 0, 1, 1, 0, 1], "wave": [3, 1, 3, 2, 1, 2]})
    out = analyze(df, "q", Mangat(0.5), by="wave")
    assert list(out["group"]) == [1, 2, 3]
    assert list(out["n"]) == [2, 2, 2]
    assert all(math.isinf(e) for e in out["epsilon"])


def test_grouped_missing_group_labels() -> None:
    df = pd.DataFrame({"q": [1, 0, 1, 1, 0], "g": ["a", None, "a", "b", "b"]})
    out = analyze(df, "q", TwoCoin(), by="g")
    assert list(out["n"]) == [2, 2] and out.attrs["missing_group"] == 1
    with pytest.raises(DataError, match=r"`by` 'g' has 1 missing value.*row 1"):
        analyze(df, "q", TwoCoin(), by="g", missing="error")


def test_grouped_bad_input(survey: Any) -> None:
    with pytest.raises(DataError, match=r"`by` must be one of .*'region'.*got 'area'"):
        analyze(survey, "q", TwoCoin(), by="area")
    with pytest.raises(ParameterError, match="`by` must differ from `column`"):
        analyze(survey, "q", TwoCoin(), by="q")
    with pytest.raises(DataError, match="got 5 at row 0"):
        analyze(pd.DataFrame({"q": [5, 1], "g": [1, 2]}), "q", TwoCoin(), by="g")


# ------------------------------------------------------------------ two-group designs


def sld_closed_form(y: tuple[int, int], n: tuple[int, int]) -> dict[str, float]:
    l1, l2 = y[0] / n[0], y[1] / n[1]
    d = SLD.p1 - SLD.p2
    pi = 1 - (l2 - l1) / d
    return {
        "prevalence": pi,
        "se": math.sqrt(l1 * (1 - l1) / n[0] + l2 * (1 - l2) / n[1]) / abs(d),
        "honesty": (l1 - (1 - pi) * (1 - SLD.p1)) / pi,
    }


def minaret_frame() -> Any:
    """The minaret survey as respondent rows (373 of 564 yes, 398 of 692), shuffled."""
    reports = [1] * 373 + [0] * 191 + [1] * 398 + [0] * 294
    groups = [1] * 564 + [2] * 692
    order = np.random.default_rng(1).permutation(len(reports))
    return pd.DataFrame({"version": np.array(groups)[order], "minaret": np.array(reports)[order]})


def test_two_group_analysis_reproduces_the_published_minaret_estimates() -> None:
    res = analyze(minaret_frame(), "minaret", SLD, group="version")
    est = res.estimate
    assert isinstance(est, TwoGroupEstimate) and res.group == "version"
    assert est.yes_counts == (373, 398) and est.n_counts == (564, 692)
    assert est.tally.counts.tolist() == [191, 373, 294, 398] and est.tally.mechanism == SLD.key
    assert res.n == 1256 and res.missing == 0 and res.interval == "wald"
    assert round(est.prevalence.value, 4) == 0.8707 and round(est.prevalence.se, 4) == 0.0411
    assert round(est["honesty"].value, 4) == 0.6358 and round(est["honesty"].se, 4) == 0.0173
    cf = sld_closed_form((373, 398), (564, 692))
    assert est.prevalence.value == pytest.approx(cf["prevalence"], abs=1e-12)
    assert est.prevalence.se == pytest.approx(cf["se"], rel=1e-12)
    assert est["honesty"].value == pytest.approx(cf["honesty"], abs=1e-12)
    z = stats.norm.ppf(0.975)
    assert res.ci == pytest.approx(
        (cf["prevalence"] - z * cf["se"], cf["prevalence"] + z * cf["se"]), rel=1e-12
    )
    assert set(res.estimates()) == {"prevalence", "honesty"}


def test_two_group_missing_values_and_float_groups() -> None:
    df = minaret_frame().astype({"version": float, "minaret": float})
    df.loc[[0, 1], "version"] = np.nan
    df.loc[[2], "minaret"] = np.nan
    res = analyze(df, "minaret", SLD, group="version")
    kept = df.dropna()
    y = tuple(int(kept.loc[kept["version"] == g, "minaret"].sum()) for g in (1, 2))
    n = tuple(int((kept["version"] == g).sum()) for g in (1, 2))
    assert res.missing == 3 and res.n == 1253
    assert res.estimate.prevalence.value == pytest.approx(  # type: ignore[union-attr]
        sld_closed_form(y, n)["prevalence"], abs=1e-12
    )
    with pytest.raises(DataError, match=r"`column` 'minaret' has 1 missing value.*at row 2"):
        analyze(df, "minaret", SLD, group="version", missing="error")
    no_missing_report = df.dropna(subset=["minaret"])
    with pytest.raises(DataError, match=r"`group` 'version' has 2 missing value.*first at row 0"):
        analyze(no_missing_report, "minaret", SLD, group="version", missing="error")


@pytest.mark.parametrize(
    ("values", "shown"),
    [([1, 2, 3, 1], "3 at row 2"), ([1, 0, 2, 1], "0 at row 1"),
     (["1", "2", "a", "1"], "'a' at row 2"), ([True, False, True, True], "True at row 0"),
     ([1.0, 2.0, 1.5, 1.0], "1.5 at row 2")],
    ids=["three", "zero", "text", "bool", "half"],
)  # fmt: skip
def test_two_group_bad_group_values(values: Any, shown: str) -> None:
    df = pd.DataFrame({"q": [1, 0, 1, 1], "g": values})
    with pytest.raises(DataError) as err:
        analyze(df, "q", SLD, group="g")
    msg = str(err.value)
    assert "`group` 'g' must hold 1 or 2" in msg and shown in msg, msg


def test_two_group_bad_arguments() -> None:
    df = minaret_frame()
    with pytest.raises(DataError) as err:
        analyze(df, "minaret", SLD)
    assert str(err.value) == (
        "design 'sld' needs two groups: give group=... (the column holding each respondent's "
        "group, 1 or 2)."
    )
    with pytest.raises(DataError, match=r"`group` must be one of .*'version'.*got 'wave'"):
        analyze(df, "minaret", SLD, group="wave")
    with pytest.raises(ParameterError, match="`group` applies to the two-group designs"):
        analyze(df, "minaret", TwoCoin(), group="version")
    with pytest.raises(ParameterError, match="`group` must differ from `column`"):
        analyze(df, "minaret", SLD, group="minaret")
    one = df[df["version"] == 1]
    with pytest.raises(DataError, match="group 2 has no reports"):
        analyze(one, "minaret", SLD, group="version")
    with pytest.raises(DataError, match=r"'minaret' must hold reports 0 or 1 .* design 'sld'"):
        analyze(df.replace({"minaret": {1: 5}}), "minaret", SLD, group="version")


def test_two_group_output_shows_every_parameter_and_infinite_epsilon() -> None:
    res = analyze(minaret_frame(), "minaret", SLD, group="version")
    text = str(res.table())
    assert "honesty" in text and "∞" in text and "version" in text
    d = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert d["epsilon"] == "inf" and d["group"] == "version" and d["n"] == 1256
    assert d["estimates"]["honesty"]["estimate"] == pytest.approx(0.6358, abs=5e-5)
    assert d["interval"] == "wald" and d["column"] == "minaret"


def test_two_group_by_subgroup() -> None:
    df = minaret_frame()
    df["canton"] = np.where(np.arange(len(df)) % 3 == 0, "ZH", "BE")
    out = analyze(df, "minaret", SLD, group="version", by="canton", level=0.9)
    assert tuple(out.columns) == TWO_GROUP_COLUMNS
    assert list(out["group"]) == ["BE", "BE", "ZH", "ZH"]
    assert list(out["parameter"]) == ["prevalence", "honesty"] * 2
    for canton in ("BE", "ZH"):
        sub = df[df["canton"] == canton]
        one = analyze(sub, "minaret", SLD, group="version", level=0.9)
        rows = out[out["group"] == canton].set_index("parameter")
        for name, e in one.estimates().items():
            assert rows.loc[name, "estimate"] == e.value and rows.loc[name, "se"] == e.se
            lo, hi = e.ci(0.9, "wald")
            assert (rows.loc[name, "ci_lower"], rows.loc[name, "ci_upper"]) == (lo, hi)
        n = tuple(int((sub["version"] == g).sum()) for g in (1, 2))
        assert (rows.loc["prevalence", "n1"], rows.loc["prevalence", "n2"]) == n
    assert all(math.isinf(e) for e in out["epsilon"]) and out.attrs["group"] == "version"
    # a subgroup where one randomization group has no reports: NaN, not an error
    df.loc[(df["canton"] == "ZH") & (df["version"] == 2), "canton"] = "BE"
    zh = analyze(df, "minaret", SLD, group="version", by="canton")
    assert zh[zh["group"] == "ZH"]["estimate"].isna().all()
    with pytest.raises(ParameterError, match="`by` must differ from `group`"):
        analyze(df, "minaret", SLD, group="version", by="version")


def test_simulated_two_group_frame_analyses_to_the_simulation_estimate() -> None:
    sim = simulate(SLD, 3000, 0.3, honesty=0.8, seed=2)
    res = analyze(sim.to_frame(), "report", SLD, group="rr_group")
    assert isinstance(res.estimate, TwoGroupEstimate) and isinstance(sim.estimate, TwoGroupEstimate)
    assert res.estimate.tally == sim.estimate.tally
    assert res.estimate["honesty"].value == sim.estimate["honesty"].value


# ------------------------------------------------------------------ files


@pytest.mark.parametrize("name", ["survey.csv", "survey.parquet", "survey.pq", "survey.csv.gz"])
def test_round_trip(tmp_path: Path, survey: Any, name: str) -> None:
    path = write_reports(survey, tmp_path / name)
    back = read_reports(path)
    assert list(back.columns) == list(survey.columns)
    assert back["q"].isna().sum() == 3
    a = analyze(back, "q", TwoCoin(), by="region")
    b = analyze(survey, "q", TwoCoin(), by="region")
    pd.testing.assert_frame_equal(a, b, check_dtype=False)


def test_read_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope.csv"
    with pytest.raises(DataError, match=r"cannot read reports file '.*nope\.csv'"):
        read_reports(missing)
    with pytest.raises(ParameterError, match=r"`path` must end in \.csv.*got '.*data\.xlsx'"):
        read_reports(tmp_path / "data.xlsx")
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet at all")
    with pytest.raises(DataError, match=r"bad\.parquet' is not a readable parquet file"):
        read_reports(bad)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataError, match=r"empty\.csv' is not a readable csv file: it is empty"):
        read_reports(empty)
    with pytest.raises(ParameterError, match="`path` must end in"):
        read_reports(tmp_path)  # no extension: the format is unknown before anything is read
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(DataError, match=r"cannot read reports file '.*dir\.csv'"):
        read_reports(tmp_path / "dir.csv")


def test_write_errors(tmp_path: Path, survey: Any) -> None:
    with pytest.raises(ParameterError, match="`path` must end in"):
        write_reports(survey, tmp_path / "x.txt")
    with pytest.raises(DataError, match="cannot write"):
        write_reports(survey, tmp_path / "no" / "such" / "x.csv")


def test_core_import_needs_no_pandas() -> None:
    code = (
        "import sys\n"
        "sys.modules['pandas'] = None\n"
        "sys.modules['matplotlib'] = None\n"
        "import deniable, deniable.survey, deniable.simulation\n"
        "assert deniable.simulate(deniable.TwoCoin(), 10, 0.5, seed=1).n == 10\n"
        "try:\n"
        "    deniable.survey.analyze(None, 'q', deniable.TwoCoin())\n"
        "except ImportError as exc:\n"
        "    assert \"pip install 'deniable[data]'\" in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('no ImportError')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------ CLI


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture
def csv_file(tmp_path: Path, survey: Any) -> str:
    return str(write_reports(survey, tmp_path / "survey.csv"))


def test_cli_analyze_json_matches_closed_form(runner: CliRunner, csv_file: str) -> None:
    out = run_json(runner, "analyze", csv_file, "--column", "q", "--design", "warner",
                   "-p", "p=0.7")  # fmt: skip
    kept = pd.read_csv(csv_file)["q"].dropna()
    cf = closed_form(0.7, 0.3, int(kept.sum()), kept.size)
    assert out["n"] == kept.size and out["missing"] == 3 and out["yes"] == int(kept.sum())
    assert out["estimate"] == pytest.approx(cf["estimate"], abs=1e-12)
    assert out["se"] == pytest.approx(cf["se"], rel=1e-12)
    assert out["ci_exact"] == pytest.approx(list(cf["ci"]), abs=1e-10)
    assert out["column"] == "q" and out["epsilon"] == pytest.approx(math.log(7 / 3), rel=1e-12)


def test_cli_analyze_by_json_and_table(runner: CliRunner, csv_file: str) -> None:
    out = run_json(runner, "analyze", csv_file, "--column", "q", "--design", "mangat",
                   "-p", "p=0.6", "--by", "region")  # fmt: skip
    assert out["epsilon"] == "inf"
    assert [g["group"] for g in out["groups"]] == ["east", "north", "west"]
    lib = analyze(pd.read_csv(csv_file), "q", Mangat(0.6), by="region")
    for g, row in zip(out["groups"], lib.itertuples(index=False), strict=True):
        assert g["n"] == row.n and g["estimate"] == pytest.approx(row.estimate, abs=1e-15)
        assert [g["ci_lower"], g["ci_upper"]] == pytest.approx(
            [row.ci_lower, row.ci_upper], rel=1e-12
        )
    result = runner.invoke(
        app, ["analyze", csv_file, "--column", "q", "--design", "mangat", "-p", "p=0.6",
              "--by", "region"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "∞" in result.stdout and "north" in result.stdout and "inf" not in result.stdout


def test_cli_analyze_table(runner: CliRunner, csv_file: str) -> None:
    result = runner.invoke(app, ["analyze", csv_file, "--column", "q", "--design", "two-coin"])
    assert result.exit_code == 0, result.output
    assert "missing reports (dropped)" in result.stdout and "95% CI (exact)" in result.stdout


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--column", "qq", "--design", "two-coin"), ("'qq'", "'region'")),
        (
            ("--column", "region", "--design", "two-coin"),
            ("'region'", "must hold reports 0 or 1", "at data row 1 of"),
        ),
        (("--column", "q", "--design", "nope"), ("`design` must be one of",)),
        (("--column", "q", "--design", "warner"), ("needs parameter p",)),
        (("--column", "q", "--design", "two-coin", "--by", "zz"), ("`by`", "'zz'")),
        (("--column", "q", "--design", "two-coin", "--missing", "error"), ("missing value",)),
        (("--column", "q", "--design", "two-coin", "--missing", "x"), ("`--missing`",)),
        (("--design", "two-coin"), ("--column",)),
    ],
)
def test_cli_analyze_one_line_errors(
    runner: CliRunner, csv_file: str, args: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    assert_one_line_error(runner.invoke(app, ["analyze", csv_file, *args]), *needles)


def test_cli_analyze_file_errors(runner: CliRunner, tmp_path: Path) -> None:
    args = ["--column", "q", "--design", "two-coin"]
    res = runner.invoke(app, ["analyze", str(tmp_path / "none.csv"), *args])
    assert_one_line_error(res, "cannot read reports file", "none.csv")
    res = runner.invoke(app, ["analyze", str(tmp_path / "x.json"), *args])
    assert_one_line_error(res, "`path` must end in", "x.json")


def test_group_with_only_missing_reports_has_no_estimate(runner: CliRunner, tmp_path: Path) -> None:
    df = pd.DataFrame({"q": [1, 0, None, None, 1], "g": ["a", "a", "b", "b", "c"]})
    out = analyze(df, "q", TwoCoin(), by="g")
    b = out[out["group"] == "b"].iloc[0]
    assert b["n"] == 0 and b["missing"] == 2 and math.isnan(b["estimate"])
    path = str(write_reports(df, tmp_path / "g.csv"))
    got = run_json(runner, "analyze", path, "--column", "q", "--design", "two-coin", "--by", "g")
    assert got["groups"][1]["estimate"] is None and got["groups"][1]["n"] == 0


@pytest.fixture
def minaret_csv(tmp_path: Path) -> str:
    return str(write_reports(minaret_frame(), tmp_path / "minarets.csv"))


SLD_CLI = ("--design", "sld", "-p", "p1=2/12", "-p", "p2=10/12")


def test_cli_analyze_two_group(runner: CliRunner, minaret_csv: str) -> None:
    out = run_json(runner, "analyze", minaret_csv, "--column", "minaret", "--group-column",
                   "version", *SLD_CLI)  # fmt: skip
    assert out["yes"] == [373, 398] and out["n"] == [564, 692] and out["epsilon"] == "inf"
    assert out["group_column"] == "version" and out["missing"] == 0
    cf = sld_closed_form((373, 398), (564, 692))
    assert out["estimates"]["prevalence"]["estimate"] == pytest.approx(cf["prevalence"], rel=1e-12)
    assert out["estimates"]["prevalence"]["se"] == pytest.approx(cf["se"], rel=1e-12)
    assert out["estimates"]["honesty"]["estimate"] == pytest.approx(cf["honesty"], rel=1e-12)
    human = runner.invoke(app, ["analyze", minaret_csv, "--column", "minaret",
                                "--group-column", "version", *SLD_CLI])  # fmt: skip
    assert human.exit_code == 0, human.output
    for needle in ("honesty", "0.8707", "0.6358", "∞", "373 / 564"):
        assert needle in human.stdout
    assert "inf" not in human.stdout


def test_cli_analyze_two_group_by(runner: CliRunner, tmp_path: Path) -> None:
    df = minaret_frame()
    df["wave"] = np.arange(len(df)) % 2 + 1
    path = str(write_reports(df, tmp_path / "m.csv"))
    args = ("analyze", path, "--column", "minaret", "--group-column", "version", *SLD_CLI,
            "--by", "wave")  # fmt: skip
    out = run_json(runner, *args)
    lib = analyze(df, "minaret", SLD, group="version", by="wave")
    assert [(g["group"], g["parameter"]) for g in out["groups"]] == list(
        zip(lib["group"], lib["parameter"], strict=True)
    )
    assert [g["estimate"] for g in out["groups"]] == pytest.approx(list(lib["estimate"]), rel=1e-12)
    human = runner.invoke(app, list(args))
    assert human.exit_code == 0 and "honesty" in human.stdout and "Wald" in human.stdout


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--column", "minaret", *SLD_CLI), ("design 'sld' needs two groups",
                                            "--group-column")),
        (("--column", "minaret", "--group-column", "version", "--design", "two-coin"),
         ("`--group-column` applies to the two-group designs",)),
        (("--column", "minaret", "--group-column", "wave", *SLD_CLI),
         ("`group` must be one of", "'wave'")),
        (("--column", "version", "--group-column", "minaret", *SLD_CLI),
         ("must hold reports 0 or 1", "got '2' at data row 1")),
    ],
)  # fmt: skip
def test_cli_analyze_two_group_errors(
    runner: CliRunner, minaret_csv: str, args: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    assert_one_line_error(runner.invoke(app, ["analyze", minaret_csv, *args]), *needles)
