"""`deniable regress`: JSON against closed forms computed here, the human table, and one-line
errors (exit status 2) for bad input.

Closed forms: an intercept-only fit reproduces the moment estimate ``(l - P0) / (P1 - P0)``
and its plug-in SE ``sqrt(l (1 - l) / n) / |P1 - P0|`` (``l`` the share of yes reports); with
the direct channel ``P1 = 1, P0 = 0`` the logistic fit is ordinary logistic regression
(IRLS below) and the linear fit is OLS.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from _cli import ENV_80 as ENV
from _cli import one_error as one_line_error
from _cli import run_regress as run
from _cli import run_regress_json as run_json
from deniable.cli import app
from deniable.designs import ForcedResponse, TwoCoin

FORCED = ["--design", "forced", "-p", "forced_yes=1/6", "-p", "forced_no=1/6"]
DIRECT = ["--design", "custom", "-p", "p_yes_given_1=1", "-p", "p_yes_given_0=0"]


def expit(x: Any) -> Any:
    return 1 / (1 + np.exp(-x))


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    rng = np.random.default_rng(42)
    n = 1500
    x1 = rng.normal(size=n).round(4)
    x2 = rng.integers(0, 2, size=n)
    truth = rng.random(n) < expit(-0.8 + 0.7 * x1 + 0.4 * x2)
    y = ForcedResponse(1 / 6, 1 / 6).randomize(truth, rng=rng).astype(int)
    dq = (rng.random(n) < 0.3).astype(int)
    y = np.where(dq == 1, truth.astype(int), y)
    z = (rng.random(n) < 0.4).astype(int)
    outcome = (1.0 + 0.5 * x1 + 1.2 * z + rng.normal(size=n)).round(4)
    df = pd.DataFrame(
        {"y": y, "x1": x1, "x2": x2, "dq": dq, "truth": truth.astype(int), "z": z, "out": outcome}
    )
    root = tmp_path_factory.mktemp("regress")
    out = {"csv": root / "survey.csv", "parquet": root / "survey.parquet"}
    df.to_csv(out["csv"], index=False)
    df.to_parquet(out["parquet"])
    (root / "bad.parquet").write_text("not parquet")
    (root / "empty.csv").write_text("")
    (root / "notes.txt").write_text("y\n1\n")
    out.update(bad=root / "bad.parquet", empty=root / "empty.csv", txt=root / "notes.txt")
    return out


def coefs(out: Any) -> dict[str, Any]:
    return {c["term"]: c for c in out["coefficients"]}


def test_intercept_only_json_is_the_moment_estimate(runner: CliRunner, files: Any) -> None:
    df = pd.read_csv(files["csv"])
    randomized = df[df.dq == 0]
    path = files["csv"].with_name("randomized.csv")
    randomized.to_csv(path, index=False)
    out = run_json(runner, *FORCED, "--data", path, "--formula", "y ~ 1", "--se", "expected")
    lam, n = randomized.y.mean(), len(randomized)
    p1, p0 = 5 / 6, 1 / 6
    pi = (lam - p0) / (p1 - p0)
    se_pi = math.sqrt(lam * (1 - lam) / n) / (p1 - p0)
    assert out["nobs"] == n and out["se_type"] == "expected" and out["converged"] is True
    b0 = coefs(out)["Intercept"]
    assert b0["coef"] == pytest.approx(math.log(pi / (1 - pi)), abs=1e-8)
    assert b0["se"] == pytest.approx(se_pi / (pi * (1 - pi)), rel=1e-7)
    assert out["prevalence"]["estimate"] == pytest.approx(pi, abs=1e-9)
    assert out["prevalence"]["se"] == pytest.approx(se_pi, rel=1e-7)
    assert out["p_yes_given_1"] == pytest.approx(p1, rel=1e-12) and out["epsilon"] == pytest.approx(
        math.log(5), rel=1e-12
    )
    assert out["llf"] == pytest.approx(
        n * (lam * math.log(lam) + (1 - lam) * math.log(1 - lam)), rel=1e-10
    )


def test_direct_channel_json_is_ordinary_logistic(runner: CliRunner, files: Any) -> None:
    df = pd.read_csv(files["csv"])
    X = np.column_stack([np.ones(len(df)), df.x1, df.x2])
    y = df.truth.to_numpy(float)
    beta = np.zeros(3)
    for _ in range(50):  # IRLS
        p = expit(X @ beta)
        beta = beta + np.linalg.solve(X.T @ (X * (p * (1 - p))[:, None]), X.T @ (y - p))
    p = expit(X @ beta)
    se = np.sqrt(np.diag(np.linalg.inv(X.T @ (X * (p * (1 - p))[:, None]))))
    for kind in ("csv", "parquet"):
        out = run_json(runner, *DIRECT, "--data", files[kind], "--formula", "truth ~ x1 + x2")
        got = coefs(out)
        assert [got[t]["coef"] for t in ("Intercept", "x1", "x2")] == pytest.approx(beta, abs=1e-8)
        assert [got[t]["se"] for t in ("Intercept", "x1", "x2")] == pytest.approx(se, rel=1e-7)
        assert got["x1"]["ci"] == pytest.approx(
            [beta[1] - 1.959963984540054 * se[1], beta[1] + 1.959963984540054 * se[1]], rel=1e-12
        )
        assert out["data"] == str(files[kind])


def test_se_choice_direct_column_and_csv_parquet_agree(runner: CliRunner, files: Any) -> None:
    args = [*FORCED, "--formula", "y ~ x1 + x2", "--direct", "dq"]
    a = run_json(runner, *args, "--data", files["csv"])
    b = run_json(runner, *args, "--data", files["parquet"])
    assert a["coefficients"] == b["coefficients"]
    assert a["direct"] == "dq" and a["direct_test"]["df"] == 1
    assert a["direct_test"]["n_direct"] + a["direct_test"]["n_randomized"] == a["nobs"]
    ses = {}
    for se in ("observed", "expected", "opg"):
        out = run_json(runner, *args, "--data", files["csv"], "--se", se)
        assert out["se_type"] == se
        assert coefs(out)["x1"]["coef"] == coefs(a)["x1"]["coef"]
        ses[se] = coefs(out)["x1"]["se"]
    assert len(set(ses.values())) == 3
    assert max(ses.values()) / min(ses.values()) < 1.2


def test_linear_with_predictor(runner: CliRunner, files: Any) -> None:
    df = pd.read_csv(files["csv"])
    out = run_json(
        runner, *DIRECT, "--data", files["csv"], "--formula", "out ~ x1", "--predictor", "z"
    )
    X = np.column_stack([np.ones(len(df)), df.x1, df.z])
    b = np.linalg.lstsq(X, df.out.to_numpy(), rcond=None)[0]
    got = coefs(out)
    assert [got[t]["coef"] for t in ("Intercept", "x1", "z")] == pytest.approx(b, abs=1e-8)
    assert out["model"] == "linear-rr" and out["predictor"] == "z"
    assert out["prevalence"]["estimate"] == pytest.approx(df.z.mean(), abs=1e-9)
    rss = float(np.sum((df.out.to_numpy() - X @ b) ** 2))
    assert out["sigma"] == pytest.approx(math.sqrt(rss / len(df)), rel=1e-8)


def test_human_output(runner: CliRunner, files: Any) -> None:
    result = run(
        runner, *FORCED, "--data", files["csv"], "--formula", "y ~ x1 + x2", "--direct", "dq"
    )
    assert result.exit_code == 0 and result.stderr == ""
    for needle in (
        "Coefficients",
        "Intercept",
        "x1",
        "x2",
        "std err",
        "P>|z|",
        "1.6094",
        "mean predicted prevalence",
        "direct vs randomized",
    ):
        assert needle in result.stdout
    inf = run(
        runner,
        "--design",
        "forced",
        "-p",
        "forced_yes=0.2",
        "-p",
        "forced_no=0",
        "--data",
        files["csv"],
        "--formula",
        "truth ~ x1",
    )
    assert inf.exit_code == 0
    assert "∞" in inf.stdout
    out = run_json(
        runner,
        "--design",
        "forced",
        "-p",
        "forced_yes=0.2",
        "-p",
        "forced_no=0",
        "--data",
        files["csv"],
        "--formula",
        "truth ~ x1",
    )
    assert out["epsilon"] == "inf"


def test_boundary_fit_is_a_note_not_a_warning(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "few.csv"
    pd.DataFrame({"y": [1] * 10 + [0] * 90}).to_csv(path, index=False)
    result = run(
        runner,
        "--design",
        "forced",
        "-p",
        "forced_yes=0.3",
        "-p",
        "forced_no=0.1",
        "--data",
        path,
        "--formula",
        "y ~ 1",
    )
    assert result.exit_code == 0 and result.stderr == ""
    assert "note:" in result.stdout and "boundary" in result.stdout
    out = run_json(
        runner,
        "--design",
        "forced",
        "-p",
        "forced_yes=0.3",
        "-p",
        "forced_no=0.1",
        "--data",
        path,
        "--formula",
        "y ~ 1",
    )
    assert any("boundary" in note for note in out["notes"])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--data", "{csv}", "--formula", "y ~ x1 + x9"), "`formula` names column 'x9'"),
        (("--data", "{csv}", "--formula", "x1 ~ x2"), "the outcome 'x1' must hold 0/1 values"),
        (
            ("--data", "{csv}", "--formula", "y ~ x1", "--se", "hc1"),
            "`--se` must be one of 'observed', 'expected', 'opg', got 'hc1'",
        ),
        (
            ("--data", "/nonexistent/survey.csv", "--formula", "y ~ x1"),
            "cannot read data file '/nonexistent/survey.csv': No such file or directory",
        ),
        (("--data", "{txt}", "--formula", "y ~ x1"), "`--data` must be a .csv, .parquet or .pq"),
        (("--data", "{bad}", "--formula", "y ~ x1"), "is not a readable parquet file"),
        (("--data", "{empty}", "--formula", "y ~ x1"), "is not a readable csv file"),
        (
            ("--data", "{csv}", "--formula", "y ~ x1", "--direct", "nope"),
            "`direct` names column 'nope'",
        ),
        (
            ("--data", "{csv}", "--formula", "y ~ x1", "--direct", "x1"),
            "the direct-questioning column 'x1' must hold 0/1 values",
        ),
        (
            ("--data", "{csv}", "--formula", "out ~ x1", "--predictor", "x1"),
            "the randomized predictor 'x1' must hold 0/1 values",
        ),
        (("--data", "{csv}", "--formula", "y ~ x1 +"), "`formula` 'y ~ x1 +' cannot be used"),
        (("--data", "{csv}", "--formula", "y ~ x1", "--level", "2"), "'--level': must be in (0,"),
        (
            (
                "--data",
                "{csv}",
            ),
            "Missing option '--formula'",
        ),
    ],
)
def test_bad_input_is_one_error_line(
    runner: CliRunner, files: Any, args: tuple[str, ...], needle: str
) -> None:
    filled = [a.format(**{k: str(v) for k, v in files.items()}) for a in args]
    one_line_error(run(runner, *FORCED, *filled), needle)


def test_bad_designs(runner: CliRunner, files: Any) -> None:
    base = ["--data", files["csv"], "--formula", "y ~ x1"]
    one_line_error(
        run(runner, "--design", "categorical", "-p", "k=3", "-p", "p_truthful=0.5", *base),
        "`--design` must be a one-group design with yes/no reports (regression",
    )
    one_line_error(
        run(
            runner,
            "--design",
            "kuk",
            "-p",
            "theta1=0.7",
            "-p",
            "theta2=0.3",
            "-p",
            "draws=2",
            *base,
        ),
        "has 3 report values",
    )
    one_line_error(run(runner, "--design", "warner", "-p", "p=0.5", *base), "`p` must be in")
    one_line_error(run(runner, "--design", "nope", *base), "`design` must be one of")
    one_line_error(run(runner, *base), "Missing option '--design'")


def test_two_coin_default_parameters(runner: CliRunner, files: Any) -> None:
    out = run_json(runner, "--design", "two-coin", "--data", files["csv"], "--formula", "y ~ x1")
    d = TwoCoin()
    assert out["p_yes_given_1"] == d.p_yes_given_1 and out["design"] == "two-coin"


def test_a_numeric_covariate_with_a_stray_string_is_one_error(
    runner: CliRunner, tmp_path: Path
) -> None:
    """Issue 14: a column of ages with one "unknown" became 60-odd dummy columns (a model of
    another meaning, fitted without a word); now it is an error naming the column and the
    value, and C(age) says the column is categorical on purpose."""
    from deniable import DataError, logistic_rr

    rng = np.random.default_rng(5)
    n = 400
    design = TwoCoin()
    age = rng.integers(18, 80, n).astype(object)
    age[17] = "unknown"
    y = design.randomize((rng.random(n) < 0.4).astype(int), rng=6)
    frame = pd.DataFrame({"y": y, "age": age, "x": rng.normal(size=n)})
    with pytest.raises(DataError, match=r"column 'age' holds numbers \(399 of 400 rows\) and "
                       r"text: 'unknown' \(at index 17\).*C\(age\)"):  # fmt: skip
        logistic_rr("y ~ age + x", frame, design)
    path = tmp_path / "stray.csv"
    frame.to_csv(path, index=False)
    res = runner.invoke(app, ["regress", "--design", "two-coin", "--data", str(path),
                              "--formula", "y ~ np.log(age) + x"])  # fmt: skip
    assert res.exit_code == 2 and res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and "column 'age'" in lines[0] and "'unknown'" in lines[0]
    # numbers written as text are refused too, unless marked categorical
    group = pd.Series(rng.integers(1, 4, n)).astype(str)
    coded = pd.DataFrame({"y": y, "g": group, "x": rng.normal(size=n)})
    with pytest.raises(DataError, match=r"column 'g' holds numbers written as text"):
        logistic_rr("y ~ g + x", coded, design)
    fit = logistic_rr("y ~ C(g) + x", coded, design)
    assert len(fit.params) == 4  # intercept, two dummies, x
    # a column of text (categories) is read as before
    region = pd.Series(rng.choice(["north", "south", "east"], n))
    words = pd.DataFrame({"y": y, "region": region, "x": rng.normal(size=n)})
    assert len(logistic_rr("y ~ region + x", words, design).params) == 4
