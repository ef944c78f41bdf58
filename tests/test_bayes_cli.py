"""`deniable analyze --bayes [--prior A,B]`: the posterior of the prevalence printed beside
the frequentist estimate, the same numbers as the library, and one error line for every
misuse."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy import stats
from typer.testing import CliRunner

from _cli import ENV, one_error, run, run_json
from deniable.designs import StochasticLieDetector, Warner
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


def test_a_categorical_design_is_refused(runner: CliRunner, data: Path) -> None:
    one_error(
        run(
            runner,
            "analyze",
            data,
            "--column",
            "q",
            "-d",
            "categorical",
            "-p",
            "k=2",
            "-p",
            "p_truthful=0.7",
            "--bayes",
        ),
        "`--bayes`",
        "`design` must be a one-group binary design",
    )
