"""`deniable regress --random`: the mixed model from the command line equals the library's
fit, prints its random effects, and refuses bad input with one error line (exit 2)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from _cli import ENV_80 as ENV
from _cli import one_error
from _cli import run_regress as run
from _cli import run_regress_json as run_json
from deniable.designs import ForcedResponse
from deniable.estimation import mixed_logistic_rr

FORCED = ["--design", "forced", "-p", "forced_yes=1/6", "-p", "forced_no=1/6"]
DESIGN = ForcedResponse(1 / 6, 1 / 6)


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture(scope="module")
def survey(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(5)
    n = 1800
    school = rng.integers(0, 30, n)
    x = rng.normal(size=n).round(4)
    b = rng.normal(0, 0.9, 30)
    truth = rng.random(n) < 1 / (1 + np.exp(-(-0.8 + 0.6 * x + b[school])))
    df = pd.DataFrame(
        {
            "y": DESIGN.randomize(truth, rng=rng).astype(int),
            "x": x,
            "school": [f"s{s:02d}" for s in school],
        }
    )
    path = tmp_path_factory.mktemp("mixed") / "pupils.csv"
    df.to_csv(path, index=False)
    return path, pd.read_csv(path)


def _library(df: pd.DataFrame, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return mixed_logistic_rr("y ~ x", df, DESIGN, random="(1|school)", **kwargs)


@pytest.mark.parametrize("agq", [None, 7])
def test_json_equals_the_library_fit(runner: CliRunner, survey: Any, agq: int | None) -> None:
    path, df = survey
    extra = [] if agq is None else ["--agq", agq]
    out = run_json(runner, *FORCED, "--data", path, "-f", "y ~ x", "--random", "(1|school)", *extra)
    fit = _library(df, **({} if agq is None else {"method": "agq", "n_agq": agq}))
    got = {c["term"]: c["coef"] for c in out["coefficients"]}
    assert got == pytest.approx(fit.params.to_dict(), abs=1e-9)
    assert out["variance_components"][0]["estimate"] == pytest.approx(float(fit.sd[0]), abs=1e-9)
    assert out["method"] == ("laplace" if agq is None else "agq")
    assert out["n_groups"] == 30
    assert out["lr_random"]["reference"].startswith("p from the 50:50 mixture")


def test_table_shows_the_random_effects(runner: CliRunner, survey: Any) -> None:
    path, _ = survey
    result = run(runner, *FORCED, "--data", path, "-f", "y ~ x", "--random", "(1|school)")
    assert result.exit_code == 0, result.output
    for text in ("Random effects", "sd(Intercept|school)", "Laplace", "30 groups", "ε"):
        assert text in result.stdout


def test_probit_link(runner: CliRunner, survey: Any) -> None:
    path, df = survey
    out = run_json(
        runner, *FORCED, "--data", path, "-f", "y ~ x", "--random", "(1|school)", "--link", "probit"
    )
    assert out["model"] == "mixed-probit-rr"
    fit = _library(df, link="probit")
    assert out["llf"] == pytest.approx(fit.llf, abs=1e-8)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--random", "(1|town)"], ["`--random`", "'town'"]),
        (["--random", "1|school"], ["`--random` must be one random term"]),
        (["--random", "(1|school)+(1|x)"], ["`--random`", "one grouping factor"]),
        (["--agq", "5"], ["`--agq` needs `--random`"]),
        (["--random", "(1|school)", "--weights", "x"], ["`--weights`", "`--random`"]),
        (["--random", "(1|school)", "--bread", "expected"], ["`--bread`", "`--random`"]),
        (["--random", "(1+x|school)", "--agq", "5"], ["`--agq`", "one random effect"]),
        (["--random", "(1|school)", "--agq", "0"], ["`--agq`", "[1, 50]", "0"]),
        (["--random", "(1|school)", "--se", "opg"], ["`--se`", "'observed'", "'opg'"]),
        (["--random", "(1|school)", "--link", "cauchit"], ["`--link`", "'cauchit'"]),
        (["--random", "(1|school)", "--predictor", "x"], ["`--predictor`", "`--random`"]),
        (["--random", "(1|school)", "--direct", "x"], ["`--direct`", "`--random`"]),
    ],
)
def test_bad_input_is_one_error_line(
    runner: CliRunner, survey: Any, args: list[str], needles: list[str]
) -> None:
    path, _ = survey
    one_error(run(runner, *FORCED, "--data", path, "-f", "y ~ x", *args), *needles)


def test_one_group_is_one_error_line(runner: CliRunner, survey: Any, tmp_path: Path) -> None:
    _, df = survey
    path = tmp_path / "one.csv"
    df.assign(school="s00").to_csv(path, index=False)
    one_error(
        run(runner, *FORCED, "--data", path, "-f", "y ~ x", "--random", "(1|school)"),
        "`--random`",
        "at least 2 groups",
    )
