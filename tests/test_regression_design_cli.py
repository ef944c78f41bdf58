"""`deniable regress` under a sample design (the design columns of `deniable analyze`) and
with other links: the JSON is the library's fit, and bad input is one error line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from typer.testing import CliRunner

from _cli import ENV_80 as ENV
from _cli import one_error
from _cli import run_regress as run
from _cli import run_regress_json as run_json
from deniable import ForcedResponse, logistic_rr
from deniable.sampling import SampleDesign, as_replicate

FORCED = ["--design", "forced", "-p", "forced_yes=1/6", "-p", "forced_no=1/6"]
FR = ForcedResponse(1 / 6, 1 / 6)


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(7)
    strata, per, size = 4, 6, 25  # 4 strata x 6 PSUs x 25 respondents
    n = strata * per * size
    s = np.repeat(np.arange(strata), per * size)
    c = np.tile(np.repeat(np.arange(per), size), strata)  # PSU labels within stratum
    u = rng.normal(scale=0.5, size=strata * per)[np.repeat(np.arange(strata * per), size)]
    x = (rng.normal(size=n) + u).round(4)
    w = rng.uniform(1, 3, size=n).round(3)
    truth = rng.random(n) < expit(-0.7 + 0.8 * x + u)
    df = pd.DataFrame(
        {"y": FR.randomize(truth, rng=rng).astype(int), "x": x, "w": w, "s": s, "c": c}
    )
    df["N"] = 30  # each stratum's population count of PSUs
    one = SampleDesign(weights=w, psu=s * 10 + c)  # one stratum, for JK1 replicates
    reps = as_replicate(one, "JK1").replicate_weights
    for r in range(reps.shape[1]):
        df[f"rw{r + 1}"] = reps[:, r]
    path = tmp_path_factory.mktemp("regress-design") / "sample.csv"
    df.to_csv(path, index=False)
    return path, pd.read_csv(path)


def _coef(out: dict[str, Any], key: str) -> np.ndarray:
    return np.array([c[key] for c in out["coefficients"]])


def test_design_columns_give_the_library_fit(runner: CliRunner, sample: Any) -> None:
    path, df = sample
    out = run_json(runner, *FORCED, "--data", path, "-f", "y ~ x", "--weights", "w",
                   "--strata", "s", "--psu", "c", "--fpc", "N")  # fmt: skip
    sd = SampleDesign(weights=df.w, strata=df.s, psu=df.c, fpc=df.N)
    fit = logistic_rr("y ~ x", df, FR, sample_design=sd)
    np.testing.assert_allclose(_coef(out, "coef"), fit.params, rtol=1e-10)
    np.testing.assert_allclose(_coef(out, "se"), fit.bse, rtol=1e-10)
    assert out["se_type"] == "observed" and out["sample_design"]["df"] == 24 - 4 + 1 - 2
    expected = run_json(runner, *FORCED, "--data", path, "-f", "y ~ x", "--weights", "w",
                        "--strata", "s", "--psu", "c", "--bread", "expected")  # fmt: skip
    assert expected["se_type"] == "expected"
    assert "expected information" in expected["se_description"]


def test_replicate_weights_refit(runner: CliRunner, sample: Any) -> None:
    path, df = sample
    out = run_json(runner, *FORCED, "--data", path, "-f", "y ~ x", "--weights", "w",
                   "--repweights", "rw*", "--repmethod", "JK1")  # fmt: skip
    cols = [c for c in df.columns if c.startswith("rw")]
    from deniable.sampling import ReplicateDesign

    rd = ReplicateDesign(df[cols].to_numpy(), df.w.to_numpy(), "JK1")
    fit = logistic_rr("y ~ x", df, FR, sample_design=rd)
    assert out["se_type"] == "replicate"
    np.testing.assert_allclose(_coef(out, "se"), fit.bse, rtol=1e-8)


def test_link_option(runner: CliRunner, sample: Any) -> None:
    path, df = sample
    out = run_json(runner, *FORCED, "--data", path, "-f", "y ~ x", "--link", "probit")
    assert out["model"] == "probit-rr"
    fit = logistic_rr("y ~ x", df, FR, link="probit")
    np.testing.assert_allclose(_coef(out, "coef"), fit.params, rtol=1e-10)


def test_table_names_the_design_and_the_t_reference(runner: CliRunner, sample: Any) -> None:
    path, _ = sample
    res = run(runner, *FORCED, "--data", path, "-f", "y ~ x", "--weights", "w", "--psu", "c",
              "--strata", "s")  # fmt: skip
    assert res.exit_code == 0, res.output
    text = " ".join(res.stdout.split())
    assert "sample design" in text and "Student's t with 19 degrees of freedom" in text


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--bread", "expected"], ["`--bread`", "sample design"]),
        (["--weights", "w", "--bread", "hessian"], ["`--bread`", "'observed', 'expected'",
                                                    "'hessian'"]),
        (["--link", "cauchit"], ["`--link`", "'logit', 'probit', 'cloglog'", "'cauchit'"]),
        (["--weights", "w", "--se", "opg"], ["`--se`", "--bread"]),
        (["--weights", "w", "--repweights", "rw*", "--bread", "observed"], ["`--bread`"]),
        (["--weights", "nope"], ["`--weights`", "'nope'", "not in the data file"]),
        (["--strata", "s", "--psu", "one"], ["only one PSU", "--lonely-psu"]),
        (["--weights", "zero"], ["`--weights`", "> 0", "data row 6 of"]),
    ],
)  # fmt: skip
def test_bad_design_input_is_one_error_line(
    runner: CliRunner, sample: Any, tmp_path: Path, args: list[str], needles: list[str]
) -> None:
    _, df = sample
    bad = df.copy()
    bad["zero"] = bad["w"]
    bad.loc[5, "zero"] = 0.0
    bad["one"] = np.where(bad.s == 0, 0, bad.c)  # stratum 0 holds a single PSU
    path = tmp_path / "bad.csv"
    bad.to_csv(path, index=False)
    res = run(runner, *FORCED, "--data", path, "-f", "y ~ x", *args)
    one_error(res, *needles)


def test_predictor_model_refuses_design_options(runner: CliRunner, sample: Any) -> None:
    path, _ = sample
    res = run(runner, *FORCED, "--data", path, "-f", "x ~ 1", "--predictor", "y",
              "--weights", "w")  # fmt: skip
    one_error(res, "sample design", "--predictor")


def test_a_zero_weight_leaves_the_file_unchanged(runner: CliRunner, sample: Any,
                                                 tmp_path: Path) -> None:  # fmt: skip
    _, df = sample
    bad = df.copy()
    bad.loc[3, "w"] = -1.0
    path = tmp_path / "neg.csv"
    bad.to_csv(path, index=False)
    before = path.read_bytes()
    one_error(run(runner, *FORCED, "--data", path, "-f", "y ~ x", "--weights", "w"),
              "`--weights`")  # fmt: skip
    assert path.read_bytes() == before
