"""`deniable analyze --bayes [--prior A,B | a1,...,ak]`: the posterior of the prevalence (per
category for a categorical design) printed beside the frequentist estimate, the same
numbers as the library, and one error line for every misuse."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from _cli import ENV, one_error, run, run_json
from deniable.designs import Categorical, StochasticLieDetector, Warner
from deniable.estimation import posterior

WARNER = ("-d", "warner", "-p", "p=0.75")


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "reports.csv"
    rows = ["q,w,g", *(f"{r},1.5,{1 + i % 2}" for i, r in enumerate([1, 0, 0, 1, 0, 0, 0, 0, 1]))]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_the_posterior_is_printed_beside_the_estimate(runner: CliRunner, data: Path) -> None:
    out = run(runner, "analyze", data, "--column", "q", *WARNER, "--bayes")
    assert out.exit_code == 0, out.output
    assert out.stdout.index("Prevalence estimate") < out.stdout.index("Posterior of the prevalence")
    assert "exact Beta mixture" in out.stdout and "95% HPD" in out.stdout


def test_json_carries_the_librarys_posterior(runner: CliRunner, data: Path) -> None:
    got = run_json(runner, "analyze", data, "--column", "q", *WARNER, "--bayes", "--prior",
                   "2,3", "--level", "0.9")  # fmt: skip
    want = posterior(Warner(0.75), yes=3, n=9, prior=(2, 3))
    post = got["posterior"]
    assert got["yes"] == 3 and got["n"] == 9  # the frequentist estimate is still there
    assert post["prior"] == {"a": 2.0, "b": 3.0} and post["level"] == 0.9
    assert post["mean"] == pytest.approx(want.mean, rel=1e-12)
    assert post["interval"] == pytest.approx(list(want.interval(0.9)), rel=1e-9)


def test_a_direct_question_prints_the_conjugate_posterior(runner: CliRunner, data: Path) -> None:
    """P(yes | 1) = 1, P(yes | 0) = 0 (a custom design): Beta(1/2 + 3, 1/2 + 6) exactly."""
    got = run_json(runner, "analyze", data, "--column", "q", "-d", "custom", "-p",
                   "p_yes_given_1=1", "-p", "p_yes_given_0=0", "--bayes", "--prior",
                   "jeffreys")  # fmt: skip
    assert got["posterior"]["mean"] == pytest.approx(stats.beta(3.5, 6.5).mean(), rel=1e-12)


def test_a_two_group_design_gets_the_marginal_posterior(runner: CliRunner, data: Path) -> None:
    got = run_json(runner, "analyze", data, "--column", "q", "-d", "sld", "-p", "p1=2/12",
                   "-p", "p2=10/12", "--group-column", "g", "--bayes")  # fmt: skip
    want = posterior(StochasticLieDetector(2 / 12, 10 / 12), yes=(2, 1), n=(5, 4))
    assert got["posterior"]["n"] == [5, 4]
    assert got["posterior"]["mean"] == pytest.approx(want.mean, rel=1e-12)


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (("--prior", "1,1"), ("`--prior`", "add --bayes")),
        (("--bayes", "--prior", "x"), ("`--prior` must be A,B", "'x'")),
        (("--bayes", "--prior", "1"), ("`--prior` must be A,B", "'1'")),
        (("--bayes", "--prior", "0,1"), ("`--prior` parameter `a` must be in (0, inf)",)),
        (("--bayes", "--by", "g"), ("`--bayes`", "--by")),
        (("--bayes", "--weights", "w"), ("`--bayes` assumes a simple random sample",)),
    ],
)
def test_misuse_is_one_error_line(runner: CliRunner, data: Path, extra, needles) -> None:
    one_error(run(runner, "analyze", data, "--column", "q", *WARNER, *extra), *needles)


CATEGORICAL = ("-d", "categorical", "-p", "k=3", "-p", "p_truthful=0.7")


@pytest.fixture
def three(tmp_path: Path) -> Path:
    path = tmp_path / "three.csv"
    path.write_text("q\n" + "\n".join(str(r) for r in [0, 1, 1, 2, 1, 0, 2, 1, 1]) + "\n")
    return path


def test_a_categorical_design_prints_the_posterior_per_category(
    runner: CliRunner, three: Path
) -> None:
    out = run(runner, "analyze", three, "--column", "q", *CATEGORICAL, "--bayes")
    assert out.exit_code == 0, out.output
    assert "Posterior of the prevalences" in out.stdout
    assert "Dirichlet(1, 1, 1)" in out.stdout and "exact Dirichlet mixture" in out.stdout


def test_categorical_json_carries_the_librarys_posterior(runner: CliRunner, three: Path) -> None:
    got = run_json(runner, "analyze", three, "--column", "q", *CATEGORICAL, "--bayes",
                   "--prior", "1,2,3", "--level", "0.9")  # fmt: skip
    want = posterior(Categorical(k=3, p_truthful=0.7), counts=[2, 5, 2], prior=(1, 2, 3))
    post = got["posterior"]
    assert post["prior"] == {"dirichlet": [1.0, 2.0, 3.0]} and post["counts"] == [2, 5, 2]
    assert post["mean"] == pytest.approx(want.mean.tolist(), rel=1e-12)
    assert np.ravel(post["interval"]).tolist() == pytest.approx(
        want.interval(0.9).ravel().tolist(), rel=1e-9
    )


@pytest.mark.parametrize(
    ("prior", "needles"),
    [
        ("1,2", ("`--prior` must have k = 3 Dirichlet parameters", "got 2")),
        ("1,0,2", ("`--prior` entry 1 must be in (0, inf)",)),
        ("haldane", ("`--prior` must be A,B", "'haldane'")),
    ],
)
def test_categorical_misuse_is_one_error_line(
    runner: CliRunner, three: Path, prior: str, needles
) -> None:
    one_error(
        run(runner, "analyze", three, "--column", "q", *CATEGORICAL, "--bayes", "--prior", prior),
        *needles,
    )


def test_many_categorical_reports_without_numpyro_are_one_error_line(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """600 reports of k = 3 are past the exact mixture's work bound: the NUTS route needs
    the bayes extra, and its absence is one error line naming it."""
    path = tmp_path / "many.csv"
    path.write_text("q\n" + "\n".join(str(i % 3) for i in range(600)) + "\n")
    monkeypatch.setitem(sys.modules, "numpyro", None)
    one_error(
        run(runner, "analyze", path, "--column", "q", *CATEGORICAL, "--bayes"),
        "`--bayes`",
        "pip install 'deniable[bayes]'",
    )
