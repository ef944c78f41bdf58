"""Columns of categorical reports (and Kuk's counts of red cards) in ``deniable.survey``:
analyze, by subgroup, from a file, whole-survey reports, and `deniable analyze` /
`deniable report` with ``--survey``.

Closed forms used (a categorical design with k categories, truthful with probability t,
else a category from the forced distribution f; l_j = count_j / n): category j is the binary
design "report j or not" with P1 = t + (1 - t) f_j and P0 = (1 - t) f_j, so its share is
(l_j - P0) / t, its plug-in SE sqrt(l_j (1 - l_j) / n) / t (n - 1 for the unbiased one) and
its exact interval the Clopper-Pearson interval of l_j mapped through P0 and t, clipped to
[0, 1] (Warner 1965; the k-ary form of randomized response).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from _cli import ENV, one_error, run
from deniable import Categorical, DataError, Kuk
from deniable.survey import (
    CATEGORY_COLUMNS,
    Analysis,
    analyze,
    analyze_file,
    demo_survey,
    demo_survey_text,
    survey_report,
    survey_report_file,
    write_reports,
)

DESIGN = Categorical(k=3, p_truthful=0.6, forced=(0.5, 0.3, 0.2))


def category_closed_form(t: float, f: float, count: int, n: int) -> dict[str, Any]:
    """One category's share, SEs and exact 95% interval from the formulas above."""
    lam, p0 = count / n, (1 - t) * f
    lo = 0.0 if count == 0 else stats.beta.ppf(0.025, count, n - count + 1)
    hi = 1.0 if count == n else stats.beta.ppf(0.975, count + 1, n - count)
    return {
        "estimate": (lam - p0) / t,
        "se": math.sqrt(lam * (1 - lam) / n) / t,
        "se_unbiased": math.sqrt(lam * (1 - lam) / (n - 1)) / t,
        "ci": (min(max((lo - p0) / t, 0.0), 1.0), min(max((hi - p0) / t, 0.0), 1.0)),
    }


@pytest.fixture
def frame() -> Any:
    """500 respondents: categorical reports with 4 missing, a region, a Kuk count column."""
    rng = np.random.default_rng(5)
    n = 500
    reports = DESIGN.randomize(rng.choice(3, n, p=[0.2, 0.5, 0.3]), rng=rng).astype(float)
    reports[[0, 9, 99, 499]] = np.nan
    kuk = Kuk(0.7, 0.3, draws=3)
    return pd.DataFrame({
        "cat": reports,
        "region": rng.choice(["east", "west"], n),
        "cards": kuk.randomize(rng.integers(0, 2, n), rng=rng),
    })  # fmt: skip


def test_categorical_column_matches_the_closed_forms(frame: Any) -> None:
    res = analyze(frame, "cat", DESIGN)
    kept = frame["cat"].dropna().astype(int)
    counts = np.bincount(kept, minlength=3)
    assert (res.n, res.missing) == (496, 4) and res.categorical
    assert list(res.estimates()) == ["share of 0", "share of 1", "share of 2"]
    out = res.to_dict()
    for j, (name, est) in enumerate(res.estimates().items()):
        cf = category_closed_form(0.6, DESIGN.forced_distribution[j], int(counts[j]), 496)
        assert est.value == pytest.approx(cf["estimate"], rel=1e-12), name
        assert est.se == pytest.approx(cf["se"], rel=1e-12)
        assert est.se_unbiased == pytest.approx(cf["se_unbiased"], rel=1e-12)
        assert tuple(est.ci(0.95, "exact")) == pytest.approx(cf["ci"], abs=1e-10)
        assert out["estimate"][j] == pytest.approx(cf["estimate"], rel=1e-12)
        assert out["ci_exact"][j] == pytest.approx(list(cf["ci"]), abs=1e-10)
        z = stats.norm.ppf(0.975)
        wald = [cf["estimate"] - z * cf["se"], cf["estimate"] + z * cf["se"]]
        assert out["ci_wald"][j] == pytest.approx(wald, rel=1e-9)
    assert out["counts"] == counts.tolist() and out["missing"] == 4
    # the MLE is on the simplex
    assert sum(out["estimate_bounded"]) == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(DataError, match=r"`ci`: design 'categorical' estimates 3 shares"):
        _ = res.ci
    text = str(res)
    assert "category" in text and "missing reports (dropped)" in text


def test_categorical_by_subgroup_equals_each_subgroup(frame: Any) -> None:
    by = analyze(frame, "cat", DESIGN, by="region")
    assert tuple(by.columns) == CATEGORY_COLUMNS
    assert by.attrs["method"] == "exact"
    for region in ("east", "west"):
        part = frame[frame["region"] == region]
        alone = analyze(part, "cat", DESIGN)
        rows = by[by["group"] == region].reset_index(drop=True)
        assert rows["category"].tolist() == [0, 1, 2]
        assert (rows["n"] == alone.n).all() and (rows["missing"] == alone.missing).all()
        for j, est in enumerate(alone.estimates().values()):
            assert rows.loc[j, "estimate"] == pytest.approx(est.value, rel=1e-12)
            assert rows.loc[j, "se"] == pytest.approx(est.se, rel=1e-12)
            assert rows.loc[j, "ci_lower"] == pytest.approx(est.ci(0.95, "exact")[0], abs=1e-12)
        assert rows["count"].sum() == alone.n


def test_categorical_file_equals_the_frame(tmp_path: Path, frame: Any) -> None:
    path = write_reports(frame, tmp_path / "cat.csv")
    from_file = analyze_file(path, "cat", DESIGN)
    from_frame = analyze(frame, "cat", DESIGN)
    assert from_file.to_dict() == {**from_frame.to_dict()}
    assert from_file.summary().to_dict()["file"] == str(path)


def test_categorical_values_out_of_range_are_refused(tmp_path: Path) -> None:
    df = pd.DataFrame({"cat": [0, 2, 3, 1]})
    with pytest.raises(DataError, match=r"hold reports 0 to 2 for design 'categorical', got 3"):
        analyze(df, "cat", DESIGN)
    with pytest.raises(DataError, match=r"reports 0 to 2 .* got True"):
        analyze(pd.DataFrame({"cat": [True, False]}), "cat", DESIGN)
    path = tmp_path / "bad.csv"
    path.write_text("cat\n0\n1\n-1\n")
    with pytest.raises(DataError, match=r"got '-1' at data row 3"):
        analyze_file(path, "cat", DESIGN)


def test_kuk_counts_of_red_cards_match_the_design_estimate(frame: Any) -> None:
    kuk = Kuk(0.7, 0.3, draws=3)
    res = analyze(frame, "cards", kuk)
    direct = kuk.estimate(kuk.tally(frame["cards"].to_numpy()))
    assert res.interval == "wald"
    assert res.estimate.value == pytest.approx(direct.value, rel=1e-12)
    assert res.ci == pytest.approx(tuple(direct.ci(0.95, "wald")), rel=1e-12)
    by = analyze(frame, "cards", kuk, by="region")
    assert by.attrs["method"] == "wald"
    east = frame[frame["region"] == "east"]["cards"].to_numpy()
    alone = kuk.estimate(kuk.tally(east))
    row = by[by["group"] == "east"].iloc[0]
    assert row["estimate"] == pytest.approx(alone.value, rel=1e-12)
    assert row["ci_lower"] == pytest.approx(alone.ci(0.95, "wald")[0], rel=1e-12)


def test_survey_report_has_a_row_per_category(tmp_path: Path, frame: Any) -> None:
    rep = survey_report(frame, {"cat": DESIGN, "cards": Kuk(0.7, 0.3, draws=3)})
    df = rep.to_frame()
    assert df["parameter"].tolist() == ["share of 0", "share of 1", "share of 2", "prevalence"]
    alone = analyze(frame, "cat", DESIGN)
    counts = np.bincount(frame["cat"].dropna().astype(int), minlength=3)
    assert df["yes"].tolist()[:3] == counts.tolist()
    for j, est in enumerate(alone.estimates().values()):
        assert df.loc[j, "estimate"] == pytest.approx(est.value, rel=1e-12)
    text = str(rep.table())
    assert "share of 2" in text and "Wald (delta method) for multi-draw: cards" in text
    assert "share of 1" in rep.to_html(plot=False)


def test_a_survey_file_names_the_columns_of_its_export(tmp_path: Path) -> None:
    survey = demo_survey()
    rng = np.random.default_rng(8)
    n = 300
    cols = {q.id: q.design.randomize(rng.integers(0, q.design.n_truths, n), rng=rng)
            for q in survey.questions}  # fmt: skip
    path = write_reports(pd.DataFrame(cols), tmp_path / "export.csv")
    rep = survey_report_file(path, survey)
    assert [r.column for r in rep.results] == ["happy", "harassment", "hours"]
    for r in rep.results:
        assert isinstance(r, Analysis)
        design = survey.question(str(r.column)).design
        direct = design.estimate(design.tally(cols[str(r.column)]))
        first = next(iter(r.estimates().values()))
        expected = direct.category(0).value if r.categorical else direct.value
        assert first.value == pytest.approx(expected, rel=1e-12)


# ------------------------------------------------------------------ the command line


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture
def export(tmp_path: Path) -> tuple[Path, Path, dict[str, Any]]:
    """A demo-survey export (CSV, question ids as columns, some cells empty) and the
    survey file."""
    survey = demo_survey()
    rng = np.random.default_rng(21)
    n = 250
    cols: dict[str, Any] = {}
    for q in survey.questions:
        col = q.design.randomize(rng.integers(0, q.design.n_truths, n), rng=rng).astype(float)
        col[rng.choice(n, 7, replace=False)] = np.nan
        cols[q.id] = col
    data = write_reports(pd.DataFrame(cols), tmp_path / "workplace-reports.csv")
    spec = tmp_path / "workplace.yaml"
    spec.write_text(demo_survey_text())
    return data, spec, cols


def test_cli_analyze_with_a_survey_file(runner: CliRunner, export: Any) -> None:
    data, spec, cols = export
    out = run(runner, "analyze", str(data), "--column", "hours", "--survey", str(spec), "--json")
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    design = demo_survey().question("hours").design
    kept = cols["hours"][~np.isnan(cols["hours"])].astype(int)
    counts = np.bincount(kept, minlength=4)
    t = design.p_truthful
    assert got["n"] == kept.size and got["missing"] == 7 and got["counts"] == counts.tolist()
    for j in range(4):
        cf = category_closed_form(t, 0.25, int(counts[j]), int(kept.size))
        assert got["estimate"][j] == pytest.approx(cf["estimate"], rel=1e-12)
        assert got["ci_exact"][j] == pytest.approx(list(cf["ci"]), abs=1e-10)
    table = run(runner, "analyze", str(data), "--column", "hours", "--survey", str(spec))
    assert table.exit_code == 0 and "95% CI (exact)" in table.stdout
    # the same question by --design gives the same numbers
    by_design = run(runner, "analyze", str(data), "--column", "hours", "--design", "categorical",
                    "--param", "k=4", "--param", f"p_truthful={t!r}", "--json")  # fmt: skip
    assert json.loads(by_design.stdout)["estimate"] == got["estimate"]


def test_cli_report_with_a_survey_file(runner: CliRunner, export: Any) -> None:
    data, spec, _ = export
    out = run(runner, "report", str(data), "--survey", str(spec), "--json")
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["title"] == "Workplace survey"
    assert [q["question"] for q in doc["questions"]] == ["happy", "harassment", "hours"]
    one = run(runner, "analyze", str(data), "--column", "harassment", "--survey", str(spec),
              "--json")  # fmt: skip
    assert doc["questions"][1]["estimate"] == json.loads(one.stdout)["estimate"]
    text = run(runner, "report", str(data), "--survey", str(spec), "--title", "Mine")
    assert text.exit_code == 0 and "Mine" in text.stdout and "share of 3" in text.stdout


def test_cli_survey_option_errors(runner: CliRunner, export: Any, tmp_path: Path) -> None:
    data, spec, _ = export
    one_error(run(runner, "analyze", str(data), "--column", "nope", "--survey", str(spec)),
              "`--column` must name a question of the survey 'workplace'",
              "got 'nope'")  # fmt: skip
    one_error(run(runner, "analyze", str(data), "--column", "happy", "--survey", str(spec),
                  "--design", "warner"), "either by --design/--param or by --survey")  # fmt: skip
    one_error(run(runner, "analyze", str(data), "--column", "happy"),
              "--design NAME", "--survey FILE")  # fmt: skip
    one_error(run(runner, "analyze", str(data), "--column", "happy", "--survey",
                  str(tmp_path / "none.yaml")), "`--survey`: cannot read survey file")  # fmt: skip
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: deniable.survey/1\nid: x\n")
    one_error(run(runner, "report", str(data), "--survey", str(bad)), "`--survey`:")
    one_error(run(runner, "report", str(data), "--survey", str(spec), "-q", "a=warner:p=0.75"),
              "either by --question or by --survey")  # fmt: skip
    one_error(run(runner, "report", str(data)), "--question", "--survey FILE")
