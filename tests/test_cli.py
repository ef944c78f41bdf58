"""The `deniable` command line: every command's JSON against closed forms computed here,
the human output's key numbers, one-line errors for bad input, and the guided tour.

Closed forms used (binary design with P1 = P(yes | 1), P0 = P(yes | 0), l = yes / n):
estimate (l - P0) / (P1 - P0); plug-in SE sqrt(l (1 - l) / n) / |P1 - P0|, unbiased with
n - 1; Wald estimate +- z SE; exact = Clopper-Pearson beta quantiles for l mapped through
the channel; Wilson score interval for l mapped likewise.
"""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

import deniable
from _cli import ENV_80, one_error, run, run_json
from deniable.designs import DESIGNS

Z95 = 1.959963984540054  # standard normal 97.5% quantile
Z90 = 1.6448536269514722  # 95% quantile

# Fixed terminal: 80 columns, no colour, so outputs compare byte for byte.


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV_80)


# ------------------------------------------------------------------ closed forms


def closed_form(p1: float, p0: float, yes: int, n: int, z: float = Z95) -> dict[str, Any]:
    """Everything `deniable estimate` reports for a binary channel, from the formulas."""
    slope = p1 - p0
    lam = yes / n
    est = (lam - p0) / slope
    se = math.sqrt(lam * (1 - lam) / n) / abs(slope)
    se_unb = math.sqrt(lam * (1 - lam) / (n - 1)) / abs(slope)
    level = {Z95: 0.95, Z90: 0.90}[z]
    a = 1 - level
    lo = 0.0 if yes == 0 else stats.beta.ppf(a / 2, yes, n - yes + 1)
    hi = 1.0 if yes == n else stats.beta.ppf(1 - a / 2, yes + 1, n - yes)
    centre = (lam + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(lam * (1 - lam) / n + z * z / (4 * n * n))

    def mapped(a_: float, b_: float) -> list[float]:
        u, w = sorted(((a_ - p0) / slope, (b_ - p0) / slope))
        return [min(max(u, 0.0), 1.0), min(max(w, 0.0), 1.0)]

    return {
        "lambda_hat": lam,
        "estimate": est,
        "estimate_bounded": min(max(est, 0.0), 1.0),
        "se": se,
        "se_unbiased": se_unb,
        "ci_wald": [est - z * se, est + z * se],
        "ci_exact": mapped(lo, hi),
        "ci_wilson": mapped(max(0.0, centre - half), min(1.0, centre + half)),
    }


def check_against(payload: dict[str, Any], expected: dict[str, Any]) -> None:
    for key, value in expected.items():
        assert payload[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


# ------------------------------------------------------------------ estimate


def test_estimate_two_coin_json_matches_closed_form(runner: CliRunner) -> None:
    out = run_json(runner, "estimate", "two-coin", "--yes", "400", "--n", "1000")
    # (0.4 - 0.25) / 0.5 = 0.3
    assert out["estimate"] == pytest.approx(0.3)
    check_against(out, closed_form(0.75, 0.25, 400, 1000))
    assert out["p_yes_given_1"] == 0.75 and out["p_yes_given_0"] == 0.25
    assert out["epsilon"] == pytest.approx(math.log(3))
    assert (out["design"], out["n"], out["yes"], out["level"]) == ("two-coin", 1000, 400, 0.95)
    assert out["parameters"] == {"p_truthful": 0.5, "p_yes": 0.5}


def test_estimate_level_changes_the_intervals(runner: CliRunner) -> None:
    out = run_json(
        runner, "estimate", "warner", "--param", "p=0.7", "--yes", "330", "--n", "600",
        "--level", "0.9",
    )  # fmt: skip
    check_against(out, closed_form(0.7, 0.3, 330, 600, z=Z90))
    assert out["level"] == 0.9
    assert out["epsilon"] == pytest.approx(math.log(0.7 / 0.3))


def test_estimate_warner_below_half_reverses_the_channel(runner: CliRunner) -> None:
    out = run_json(runner, "estimate", "warner", "-p", "p=1/4", "--yes", "620", "--n", "1000")
    # P1 = 1/4 < P0 = 3/4: estimate (0.62 - 0.75) / (-0.5) = 0.26
    assert out["estimate"] == pytest.approx(0.26)
    check_against(out, closed_form(0.25, 0.75, 620, 1000))
    assert out["ci_exact"][0] < out["estimate"] < out["ci_exact"][1]


def test_estimate_outside_unit_interval_keeps_unbiased_and_bounds_mle(runner: CliRunner) -> None:
    out = run_json(runner, "estimate", "two-coin", "--yes", "230", "--n", "1000")
    assert out["estimate"] == pytest.approx(-0.04)  # (0.23 - 0.25) / 0.5
    assert out["estimate_bounded"] == 0.0
    assert out["ci_exact"][0] == 0.0


def test_estimate_human_output_has_the_key_numbers(runner: CliRunner) -> None:
    result = run(runner, "estimate", "two-coin", "--yes", "400", "--n", "1000")
    assert result.exit_code == 0 and result.stderr == ""
    text = result.stdout
    se = math.sqrt(0.4 * 0.6 / 1000) / 0.5
    se_unb = math.sqrt(0.4 * 0.6 / 999) / 0.5
    for needle in ("0.300000", f"{se:.6f}", f"{se_unb:.6f}", "1.0986", "400 / 1000", "wilson"):
        assert needle in text, needle
    lo, hi = 0.3 - Z95 * se, 0.3 + Z95 * se
    assert f"[{lo:.6f}, {hi:.6f}]" in text


@pytest.mark.parametrize(
    "args",
    [
        ("mangat", "-p", "p=0.7"),
        ("triangular", "-p", "p=0.25"),
        ("forced", "-p", "forced_yes=0.2", "-p", "forced_no=0"),
        ("forced", "-p", "forced_yes=0", "-p", "forced_no=0.3"),
    ],
)
def test_infinite_epsilon_is_never_finite(runner: CliRunner, args: tuple[str, ...]) -> None:
    out = run_json(runner, "estimate", *args, "--yes", "700", "--n", "1000")
    assert out["epsilon"] == "inf"
    text = run(runner, "estimate", *args, "--yes", "700", "--n", "1000").stdout
    eps_lines = [line for line in text.splitlines() if "ε" in line]
    assert eps_lines and all("∞" in line for line in eps_lines)
    assert not any(ch.isdigit() for line in eps_lines for ch in line.split("ε", 1)[1])


def test_estimate_mangat_closed_form(runner: CliRunner) -> None:
    out = run_json(runner, "estimate", "mangat", "-p", "p=0.7", "--yes", "700", "--n", "1000")
    check_against(out, closed_form(1.0, 0.3, 700, 1000))  # (0.7 - 0.3) / 0.7


def test_estimate_from_counts_for_a_binary_design(runner: CliRunner) -> None:
    out = run_json(runner, "estimate", "two-coin", "--counts", "600,400")
    check_against(out, closed_form(0.75, 0.25, 400, 1000))


def test_estimate_kuk_several_draws_moment(runner: CliRunner) -> None:
    counts = [120, 260, 380, 240]  # red cards 0..3 in three draws
    out = run_json(
        runner, "estimate", "kuk", "-p", "theta1=0.8", "-p", "theta2=0.4", "-p", "draws=3",
        "--counts", ",".join(map(str, counts)),
    )  # fmt: skip
    n = sum(counts)
    r = np.arange(4)
    mean = float(np.dot(counts, r)) / n
    var = float(np.dot(counts, (r - mean) ** 2)) / n
    expected = (mean / 3 - 0.4) / 0.4
    assert out["estimate"] == pytest.approx(expected, rel=1e-12)
    assert out["se"] == pytest.approx(math.sqrt(var / n) / (3 * 0.4), rel=1e-12)
    assert out["counts"] == counts and out["n"] == n
    # eps = draws * max(|ln(0.8/0.4)|, |ln(0.2/0.6)|) = 3 ln 3
    assert out["epsilon"] == pytest.approx(3 * math.log(3))
    lo, hi = out["ci_wald"]
    assert (lo + hi) / 2 == pytest.approx(expected)


def test_estimate_kuk_mle_maximises_the_mixture_likelihood(runner: CliRunner) -> None:
    counts = np.array([120, 260, 380, 240])
    out = run_json(
        runner, "estimate", "kuk", "-p", "theta1=0.8", "-p", "theta2=0.4", "-p", "draws=3",
        "--counts", "120,260,380,240", "--method", "mle",
    )  # fmt: skip
    grid = np.linspace(0, 1, 100_001)
    b1 = stats.binom.pmf(np.arange(4), 3, 0.8)
    b0 = stats.binom.pmf(np.arange(4), 3, 0.4)
    loglik = np.log(np.outer(grid, b1) + np.outer(1 - grid, b0)) @ counts
    assert out["estimate"] == pytest.approx(grid[np.argmax(loglik)], abs=2e-5)
    assert out["method"] == "mle"
    assert "ci_likelihood" in out


def test_estimate_categorical_counts(runner: CliRunner) -> None:
    out = run_json(
        runner, "estimate", "categorical", "-p", "k=3", "-p", "p_truthful=0.6",
        "--counts", "500,300,200",
    )  # fmt: skip
    lam = np.array([0.5, 0.3, 0.2])
    # pi_hat = (lambda - (1 - t) / k) / t with uniform forcing
    assert out["estimate"] == pytest.approx(list((lam - 0.4 / 3) / 0.6), rel=1e-12)
    assert out["se"] == pytest.approx(list(np.sqrt(lam * (1 - lam) / 1000) / 0.6), rel=1e-12)
    assert out["epsilon"] == pytest.approx(math.log(1 + 0.6 / (0.4 / 3)))
    assert out["counts"] == [500, 300, 200] and len(out["categories"]) == 3
    human = run(
        runner, "estimate", "categorical", "-p", "k=3", "-p", "p_truthful=0.6",
        "--counts", "500,300,200",
    ).stdout  # fmt: skip
    assert f"{(0.5 - 0.4 / 3) / 0.6:.6f}" in human


def test_estimate_reports_file_plain_and_csv(runner: CliRunner, tmp_path: Path) -> None:
    plain = tmp_path / "r.txt"
    plain.write_text("1\n0\n1\n1\n\n0\n1\n0\n1\n")
    out = run_json(runner, "estimate", "two-coin", "--reports", str(plain))
    check_against(out, closed_form(0.75, 0.25, 5, 8))
    assert out["missing"] == 1  # the blank line: a missing report, counted, not skipped
    table = tmp_path / "r.csv"
    table.write_text("id,answer\n1,0\n2,1\n3,1\n4,1\n")
    out = run_json(runner, "estimate", "two-coin", "--reports", str(table), "--column", "answer")
    check_against(out, closed_form(0.75, 0.25, 3, 4))
    first = tmp_path / "first.csv"
    first.write_text("answer,note\n1,a\n0,b\n0,c\n")
    out = run_json(runner, "estimate", "two-coin", "--reports", str(first), "--column", "answer")
    assert out["yes"] == 1 and out["n"] == 3 and out["missing"] == 0
    # without --column the file is a bare list: a header is line 1, a bad report, never guessed
    res = run(runner, "estimate", "two-coin", "--reports", str(first))
    one_error(res, "'answer' at line 1", "--column NAME")


def test_estimate_reports_file_is_the_library_tally(runner: CliRunner, tmp_path: Path) -> None:
    # `estimate --reports` prints what deniable.survey.tally_reports_file and the design's
    # estimate give, and refuses what it refuses with the same message
    from deniable.designs import Categorical
    from deniable.exceptions import DataError
    from deniable.survey import tally_reports_file

    path = tmp_path / "cat.csv"
    path.write_text("id,answer\n1,0\n2,2\n3,\n4,1\n5,2\n6,2\n")
    design = Categorical(k=3, p_truthful=0.6)
    tally, missing = tally_reports_file(str(path), design, column="answer")
    assert tally.counts.tolist() == [1, 1, 3] and missing == 1
    out = run_json(runner, "estimate", "categorical", "-p", "k=3", "-p", "p_truthful=0.6",
                   "--reports", str(path), "--column", "answer")  # fmt: skip
    assert out["counts"] == tally.counts.tolist() and out["missing"] == missing
    assert out["estimate"] == pytest.approx(design.estimate(tally).values.tolist(), rel=1e-12)
    with pytest.raises(DataError) as caught:
        tally_reports_file(str(path), design, column="nope", option="--column")
    line = one_error(run(runner, "estimate", "categorical", "-p", "k=3", "-p", "p_truthful=0.6",
                         "--reports", str(path), "--column", "nope"))  # fmt: skip
    assert line == f"error: {caught.value}"


def test_estimate_with_n_one_gives_no_bare_nan(runner: CliRunner, tmp_path: Path) -> None:
    one = tmp_path / "one.txt"
    one.write_text("1\n")
    out = run_json(runner, "estimate", "two-coin", "--reports", str(one))
    assert out["se_unbiased"] == "nan"  # undefined with n - 1 = 0: a string, never bare NaN


# ------------------------------------------------------------------ designs


def test_designs_json_lists_every_design(runner: CliRunner) -> None:
    out = run_json(runner, "designs")
    rows = {row["name"]: row for row in out["designs"]}
    assert list(rows) == list(DESIGNS)
    assert rows["warner"]["p_yes_given_1"] == 0.75 and rows["warner"]["required"] == ["p"]
    assert rows["two-coin"]["parameters"] == {"p_truthful": 0.5, "p_yes": 0.5}
    assert rows["two-coin"]["epsilon"] == pytest.approx(math.log(3))
    assert rows["kuk"]["parameters"]["draws"] == 1
    for name in ("mangat", "triangular"):
        assert rows[name]["epsilon"] == "inf"
    assert rows["unrelated"]["epsilon"] == pytest.approx(math.log(0.85 / 0.15))
    assert rows["categorical"]["epsilon"] == pytest.approx(math.log(1 + 0.5 / (0.5 / 4)))


def test_designs_table_shows_infinity(runner: CliRunner) -> None:
    result = run(runner, "designs")
    assert result.exit_code == 0
    for name in DESIGNS:
        assert name in result.stdout
    for name in ("mangat", "triangular"):
        line = next(x for x in result.stdout.splitlines() if x.split()[:1] == [name])
        assert line.rstrip().endswith("∞")
    warner = next(x for x in result.stdout.splitlines() if x.split()[:1] == ["warner"])
    assert warner.split()[-3:] == ["0.7500", "0.2500", "1.0986"]


# ------------------------------------------------------------------ majority


def binom_sf_exact(m: int, n: int, p: Fraction) -> Fraction:
    """P(Bin(n, p) > m), exactly."""
    return sum(
        (math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(m + 1, n + 1)), Fraction(0)
    )


def test_majority_iid_exact(runner: CliRunner) -> None:
    out = run_json(runner, "majority", "two-coin", "--n", "101", "--prevalence", "0.6")
    # threshold n (P0 + P1) / 2 = 50.5; lambda = 1/4 + 0.6 / 2 = 0.55
    assert out["threshold"] == pytest.approx(50.5)
    assert out["lambda"] == pytest.approx(0.55)
    p = float(binom_sf_exact(50, 101, Fraction(55, 100)))
    assert out["p_decide_majority"] == pytest.approx(p, rel=1e-10)
    assert out["error_probability"] == pytest.approx(1 - p, rel=1e-10)
    assert out["epsilon"] == pytest.approx(math.log(3))


def test_majority_fixed_population_exact(runner: CliRunner) -> None:
    out = run_json(runner, "majority", "forced", "-p", "forced_yes=0.2", "-p", "forced_no=0.1",
                   "--n", "20", "--true-yes", "8")  # fmt: skip
    # threshold 20 (0.2 + 0.9) / 2 = 11; #yes = Bin(8, 0.9) + Bin(12, 0.2)
    assert out["threshold"] == pytest.approx(11.0)
    p1, p0 = Fraction(9, 10), Fraction(1, 5)
    pmf_a = [math.comb(8, j) * p1**j * (1 - p1) ** (8 - j) for j in range(9)]
    p = sum(pmf_a[j] * binom_sf_exact(11 - j, 12, p0) for j in range(9))
    assert out["p_decide_majority"] == pytest.approx(float(p), rel=1e-10)
    assert out["error_probability"] == pytest.approx(float(p), rel=1e-10)  # 8/20: no majority


def test_majority_offset_and_simulation(runner: CliRunner) -> None:
    args = ("majority", "two-coin", "--n", "400", "--prevalence", "0.58", "--offset", "1")
    out = run_json(runner, *args, "--simulate", "20000", "--seed", "5")
    # threshold 200 + 1 * sqrt(400 / 4) = 210
    assert out["threshold"] == pytest.approx(210.0)
    exact = float(binom_sf_exact(210, 400, Fraction(25, 100) + Fraction(58, 200)))
    assert out["p_decide_majority"] == pytest.approx(exact, rel=1e-9)
    # 4.5-sigma band for a binomial proportion from 20000 trials: false alarm ~7e-6
    band = 4.5 * math.sqrt(exact * (1 - exact) / 20000)
    assert abs(out["simulated_p_decide_majority"] - exact) < band
    assert out["seed"] == 5 and out["trials"] == 20000
    human = run(runner, *args).stdout
    assert "210" in human and f"{exact:.6f}" in human


# ------------------------------------------------------------------ coins


def test_coins_truth_probability_half_is_two_coins(runner: CliRunner) -> None:
    out = run_json(runner, "coins", "--truth-probability", "1/2")
    assert out["device"] == "2 coins"
    assert (out["p_yes_given_1"], out["p_yes_given_0"]) == ("3/4", "1/4")
    assert out["epsilon"] == pytest.approx(math.log(3))
    human = run(runner, "coins", "--truth-probability", "1/2").stdout
    assert "ln(3)" in human and "3/4" in human and "Flip two coins" in human


def test_coins_epsilon_one_never_exceeds_the_target(runner: CliRunner) -> None:
    out = run_json(runner, "coins", "--epsilon", "1")
    p1, p0 = Fraction(out["p_yes_given_1"]), Fraction(out["p_yes_given_0"])
    eps = max(math.log(p1 / p0), math.log((1 - p0) / (1 - p1)))
    assert out["epsilon"] == pytest.approx(eps) and eps <= 1
    assert Fraction(out["truth_probability"]) == p1 - p0
    dice = run_json(runner, "coins", "--epsilon", "1", "--device", "d6")
    assert (dice["device"], dice["forced_yes"]) == ("d6", 2)  # ln(4/2) = 0.69 <= 1 < ln 5
    human = run(runner, "coins", "--epsilon", "1").stdout
    assert out["instructions"][:30] in " ".join(human.split())
    assert f"{eps:.6f}" in human


# ------------------------------------------------------------------ simulate


def test_simulate_binary_truth_beside_estimate(runner: CliRunner) -> None:
    args = ("simulate", "two-coin", "--n", "5000", "--prevalence", "0.3", "--seed", "11")
    out = run_json(runner, *args)
    assert out["seed"] == 11
    assert out["true_share"] == pytest.approx(out["true_carriers"] / 5000)
    check_against(out, closed_form(0.75, 0.25, out["yes"], 5000))
    # 4.5 SE band around the realised share: false alarm ~7e-6
    assert abs(out["estimate"] - out["true_share"]) < 4.5 * out["se"]
    assert out == run_json(runner, *args)  # same seed, same survey
    human = run(runner, *args).stdout
    assert f"{out['true_share']:.6f}" in human and f"{out['estimate']:.6f}" in human
    assert "simulation only" in human


def test_simulate_categorical_takes_a_prevalence_list(runner: CliRunner) -> None:
    out = run_json(runner, "simulate", "categorical", "-p", "k=3", "-p", "p_truthful=0.7",
                   "--n", "3000", "--prevalence", "0.5,0.3,0.2", "--seed", "3")  # fmt: skip
    assert len(out["true_share"]) == 3 and sum(out["true_share"]) == pytest.approx(1)
    lam = np.array(out["counts"]) / 3000
    assert out["estimate"] == pytest.approx(list((lam - 0.3 / 3) / 0.7), rel=1e-12)
    se = np.array(out["se"])
    # 4.5 SE per category: false alarm ~2e-5 for the three checks together
    assert np.all(np.abs(np.array(out["estimate"]) - out["true_share"]) < 4.5 * se)


# ------------------------------------------------------------------ bad input


BAD_INPUTS = [
    (("estimate", "nope", "--yes", "1", "--n", "2"), "`design` must be one of"),
    (("estimate", "warner", "--yes", "1", "--n", "2"), "needs parameter p"),
    (("estimate", "warner", "-p", "p=0.5", "--yes", "1", "--n", "2"),
     "`p` must be in (0, 1) and not 0.5, got 0.5."),
    (("estimate", "warner", "-p", "p=1.5", "--yes", "1", "--n", "2"), "`p` must be in (0, 1)"),
    (("estimate", "warner", "-p", "p0.7", "--yes", "1", "--n", "2"), "NAME=VALUE"),
    (("estimate", "warner", "-p", "p=0.7", "-p", "p=0.8", "--yes", "1", "--n", "2"), "twice"),
    (("estimate", "warner", "-p", "p=0.7", "-p", "z=1", "--yes", "1", "--n", "2"), "'z'"),
    (("estimate", "warner", "-p", "p=0.7", "--yes", "5", "--n", "2"), "`yes` must be in [0, n]"),
    (("estimate", "warner", "-p", "p=0.7", "--yes", "-1", "--n", "2"), "`yes`"),
    (("estimate", "warner", "-p", "p=0.7", "--n", "2"), "--yes"),
    (("estimate", "warner", "-p", "p=0.7"), "give exactly one of"),
    (("estimate", "warner", "-p", "p=0.7", "--yes", "1", "--n", "2", "--level", "1.5"),
     "'--level': must be in (0, 1), got '1.5'"),
    (("estimate", "warner", "-p", "p=0.7", "--yes", "one", "--n", "2"), "--yes"),
    (("estimate", "warner", "-p", "p=0.7", "--reports", "/nonexistent/r.csv"),
     "cannot read reports file"),
    (("estimate", "warner", "-p", "p=0.7", "--counts", "3,x"), "`--counts`"),
    (("estimate", "warner", "-p", "p=0.7", "--counts", "3,4,5"), "must have 2 entries"),
    (("estimate", "warner", "-p", "p=0.7", "--yes", "1", "--n", "2", "--method", "mle"),
     "`--method`"),
    (("estimate", "kuk", "-p", "theta1=0.7", "-p", "theta2=0.3", "-p", "draws=3",
      "--yes", "3", "--n", "10"), "--counts"),
    (("estimate", "kuk", "-p", "theta1=0.7", "-p", "theta2=0.3", "--yes", "3", "--n", "10",
      "--method", "best"), "`method`"),
    (("estimate", "categorical", "-p", "k=3", "-p", "p_truthful=0.5", "--yes", "1", "--n", "2"),
     "--counts"),
    (("majority", "two-coin", "--n", "10"), "neither"),
    (("majority", "two-coin", "--n", "10", "--prevalence", "0.3", "--true-yes", "3"), "both"),
    (("majority", "two-coin", "--n", "10", "--true-yes", "11"), "`true_yes`"),
    (("majority", "two-coin", "--n", "10", "--prevalence", "1.2"), "`prevalence`"),
    (("majority", "two-coin", "--prevalence", "0.3"), "--n"),
    (("majority", "two-coin", "--n", "10", "--prevalence", "0.3", "--seed", "1"), "--simulate"),
    (("coins",), "neither"),
    (("coins", "--epsilon", "1", "--truth-probability", "0.5"), "both"),
    (("coins", "--epsilon", "0.01"), "no protocol"),
    (("coins", "--epsilon", "1", "--device", "d7"), "'d7'"),
    (("coins", "--epsilon", "abc"), "`--epsilon` must be a number"),
    (("simulate", "two-coin", "--n", "10", "--prevalence", "0.3,0.7"), "one number"),
    (("simulate", "two-coin", "--n", "10", "--prevalence", "2"), "`prevalence`"),
    (("simulate", "categorical", "-p", "k=3", "-p", "p_truthful=0.5", "--n", "10",
      "--prevalence", "0.5,0.5"), "length k = 3"),
    (("simulate", "two-coin", "--n", "0", "--prevalence", "0.3"), "`n`"),
    (("tour", "--n", "3"), "--n"),
    (("frobnicate",), "frobnicate"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "needle"), BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_error_line(runner: CliRunner, args: tuple[str, ...], needle: str) -> None:
    one_error(run(runner, *args), needle)


@pytest.mark.parametrize(
    ("content", "extra", "needle"),
    [
        ("1\n0\n2\n", (), "line 3"),
        ("1\n0\nyes\n", (), "'yes'"),
        ("a,b\n1,0\n", ("--column", "c"), "`--column`"),
        ("1\n0\n", ("--column", "a"), "header"),
        ("", (), "empty"),
        ("answer\n", (), "'answer' at line 1"),
        ("answer\n", ("--column", "answer"), "no reports"),
    ],
)
def test_bad_reports_file(
    runner: CliRunner, tmp_path: Path, content: str, extra: tuple[str, ...], needle: str
) -> None:
    path = tmp_path / "reports.csv"
    path.write_text(content)
    result = run(runner, "estimate", "two-coin", "--reports", str(path), *extra)
    one_error(result, needle)


def test_binary_reports_file(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "reports.bin"
    path.write_bytes(b"\x00\xff\xfe1\n0\n")
    one_error(run(runner, "estimate", "two-coin", "--reports", str(path)), "UTF-8")


def test_unreadable_reports_file(runner: CliRunner, tmp_path: Path) -> None:
    one_error(run(runner, "estimate", "two-coin", "--reports", str(tmp_path)),
                          "cannot read")  # fmt: skip


# ------------------------------------------------------------------ tour, version, entry point


def test_tour_runs_prints_its_sections_and_is_deterministic(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the tour stays quick by its work, counted (no clock): one simulated survey of the
    # default 2000 respondents and a handful of exact majority rules, at most 62 lines
    import deniable.cli._tour as tour

    calls: list[tuple[str, int]] = []

    def counted(name: str, f: Any) -> Any:
        def wrapper(design: Any, n: int, *args: Any, **kwargs: Any) -> Any:
            calls.append((name, n))
            return f(design, n, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(tour, "simulate", counted("simulate", tour.simulate))
    monkeypatch.setattr(tour, "majority_decision", counted("majority", tour.majority_decision))
    first = run(runner, "tour")
    assert [c for c in calls if c[0] == "simulate"] == [("simulate", 2000)]
    rules = [n for name, n in calls if name == "majority"]
    assert 1 <= len(rules) <= 8 and set(rules) == {2000}, calls
    assert first.exit_code == 0 and first.stderr == ""
    text = first.stdout
    for section in ("1. The population", "2. Each", "3. The first", "4. The collector",
                    "5. A majority", "6. ", "7. The reveal"):  # fmt: skip
        assert section in text, section
    assert "simulation only" in text and "ln 3" in text and "3 times as likely" in text
    assert len(text.splitlines()) <= 62
    assert run(runner, "tour").stdout == text
    assert run(runner, "tour", "--seed", "2024", "--n", "2000").stdout == text
    assert run(runner, "tour", "--seed", "1").stdout != text


def test_tour_numbers_follow_the_formulas(runner: CliRunner) -> None:
    text = " ".join(run(runner, "tour", "--seed", "9", "--n", "1500").stdout.split())
    yes = int(text.split(" 'yes' of 1500 reports")[0].rsplit(" ", 1)[1])
    est = (yes / 1500 - 0.25) / 0.5
    assert f"π̂ = (λ̂ − 1/4) / (1/2) = {est:.4f}" in text
    se = math.sqrt(yes / 1500 * (1 - yes / 1500) / 1500) / 0.5
    assert f"[{est - Z95 * se:.4f}, {est + Z95 * se:.4f}]" in text
    assert f"#yes > {1500 * (0.25 + 0.75) / 2:g}" in text


def test_tour_verdicts_are_the_librarys(runner: CliRunner) -> None:
    # the tour prints the majority decision's own verdict (MajorityDecision.decide) and
    # whether it was right (is_right), and the intervals that cover the truth (covers)
    from deniable.designs import TwoCoin
    from deniable.estimation import majority_decision

    n, seen = 40, set()
    for seed in range(1, 40):
        text = " ".join(run(runner, "tour", "--seed", str(seed), "--n", str(n)).stdout.split())
        yes = int(text.split(f" 'yes' of {n} reports")[0].rsplit(" ", 1)[1])
        carriers = int(text.split(f" of {n} respondents have A")[0].rsplit(" ", 1)[1])
        verdict = majority_decision(TwoCoin(), n, prevalence=0.5).decide(yes)
        assert f"Observed {yes}: {'a majority' if verdict else 'not a majority'}." in text
        right = majority_decision(TwoCoin(), n, true_yes=carriers).is_right(yes)
        assert f"The majority verdict was {'right' if right else 'wrong'};" in text
        seen |= {verdict, f"right={right}"}
    assert seen == {True, False, "right=True", "right=False"}  # both of each were printed


def test_version(runner: CliRunner) -> None:
    result = run(runner, "--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"deniable {deniable.__version__}"


def test_help_lists_every_command(runner: CliRunner) -> None:
    result = run(runner, "--help")
    assert result.exit_code == 0
    for command in ("designs", "estimate", "majority", "coins", "simulate", "tour"):
        assert command in result.stdout


def test_installed_entry_point() -> None:
    exe = Path(sys.executable).parent / "deniable"
    # scripts/test installs the package (editable) into the environment that runs the
    # tests: a missing entry point is a broken install, never a reason to skip
    assert exe.exists(), f"the deniable entry point is not installed next to {sys.executable}"
    done = subprocess.run(
        [str(exe), "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "estimate" in done.stdout and "tour" in done.stdout
    bad = subprocess.run(
        [str(exe), "estimate", "warner", "-p", "p=0.5", "--yes", "1", "--n", "2"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr == "error: `p` must be in (0, 1) and not 0.5, got 0.5.\n"


def test_main_function_and_module_entry(capsys: pytest.CaptureFixture[str]) -> None:
    from deniable.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"deniable {deniable.__version__}"
    done = subprocess.run(
        [sys.executable, "-m", "deniable.cli", "coins", "--epsilon", "abc"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == "error: `--epsilon` must be a number (e.g. 0.3 or 3/10), got 'abc'.\n"


def test_core_package_does_not_import_the_cli() -> None:
    code = (
        "import sys, deniable\n"
        "sys.exit(any(m.startswith(('deniable.cli', 'typer', 'rich')) for m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], timeout=60, check=False)
    assert done.returncode == 0


# ------------------------------------------------------------------ review fixes


def flat(text: str) -> str:
    """A rich table's text with the box drawing removed and whitespace collapsed, so that a
    phrase wrapped over two lines of a cell can be found."""
    cells = [part.strip() for line in text.splitlines() for part in line.split("│") if part.strip()]
    return " ".join(" ".join(cells).split())


@pytest.mark.parametrize(
    "args",
    [
        ("binary", "--param", "epsilon=1e-17"),  # ZeroDivisionError traceback before
        ("two-coin", "--param", "p_truthful=1e-20"),
        ("unrelated", "--param", "p=1e-20", "--param", "q=0.5"),
    ],
)
def test_uninformative_design_is_one_error_line(runner: CliRunner, args: tuple[str, ...]) -> None:
    result = run(runner, "estimate", *args, "--yes", "5", "--n", "10")
    one_error(result)
    assert "epsilon" in result.stderr or "no information" in result.stderr


def test_power_curve_epsilon_past_the_resolution_is_an_error(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "curve.png"
    result = run(runner, "power", "two-coin", "--n", "100", "--prevalence", "0.6", "--null",
                 "0.5", "--plot", str(path), "--epsilons", "1,45")  # fmt: skip
    # before: truth rounded to 1 (direct questioning, epsilon infinite) labelled "ε = 45"
    one_error(result, "`epsilon` must be at most 36.7368", "got 45")
    assert not path.exists()


def test_estimate_kuk_several_draws_bounded_is_the_mle(runner: CliRunner) -> None:
    args = ("estimate", "kuk", "--param", "theta1=0.7", "--param", "theta2=0.3", "--param",
            "draws=3", "--counts", "400,100,50,150")  # fmt: skip
    out = run_json(runner, *args)
    assert out["estimate"] == pytest.approx(1 / 42, rel=1e-12)  # (650/2100 - 0.3) / 0.4
    mle = run_json(runner, *args, "--method", "mle")
    assert out["estimate_bounded"] == pytest.approx(mle["estimate"], abs=1e-9)
    assert out["estimate_bounded"] == pytest.approx(0.226837, abs=1e-6)  # not 0.023810
    assert mle["se_unbiased"] == "nan" and "no n - 1" in mle["se_convention"]
    text = flat(run(runner, *args).stdout)
    assert "0.226837" in text
    mle_text = flat(run(runner, *args, "--method", "mle").stdout)
    assert "no n − 1 version" in mle_text


def test_estimate_kuk_se_model_is_rrreg_model_based_se(runner: CliRunner) -> None:
    """`--se model`: RRreg's model-based SE of Kuk's moment estimate (issue 14), the
    closed form sqrt(phi (1 - phi) / (k n d^2) + (1 - 1/k) pi (1 - pi) / n), phi = mean/k,
    with k n - 1 and n - 1 in the unbiased form; the default stays the empirical SE."""
    from deniable.designs import Kuk, Tally

    counts = [400, 100, 50, 150]
    args = ("estimate", "kuk", "-p", "theta1=0.7", "-p", "theta2=0.3", "-p", "draws=3",
            "--counts", ",".join(map(str, counts)))  # fmt: skip
    k, n, d = 3, sum(counts), 0.4
    phi = sum(r * c for r, c in enumerate(counts)) / n / k
    pi = (phi - 0.3) / d
    within, between = phi * (1 - phi) / d**2, (1 - 1 / k) * pi * (1 - pi)
    model = run_json(runner, *args, "--se", "model")
    assert model["se"] == pytest.approx(math.sqrt(within / (k * n) + between / n), rel=1e-12)
    unbiased = math.sqrt(within / (k * n - 1) + between / (n - 1))
    assert model["se_unbiased"] == pytest.approx(unbiased, rel=1e-12)
    assert model["se_convention"].startswith("model-based")
    library = Kuk(0.7, 0.3, 3).standard_errors(Tally(counts))
    assert (model["se"], model["se_unbiased"]) == pytest.approx(
        (library.model, library.model_unbiased), rel=1e-12
    )
    default = run_json(runner, *args)
    assert default == run_json(runner, *args, "--se", "empirical")  # what the CLI printed
    assert default["se"] == pytest.approx(library.empirical, rel=1e-12)
    assert default["se"] != pytest.approx(model["se"], rel=1e-3)
    assert default["estimate"] == model["estimate"]
    assert "model-based (binomial mixture" in flat(run(runner, *args, "--se", "model").stdout)
    # one draw: the empirical and the model-based SE are one number
    one = ("estimate", "kuk", "-p", "theta1=0.7", "-p", "theta2=0.3", "--yes", "40", "--n", "100")
    assert run_json(runner, *one, "--se", "model") == run_json(runner, *one)


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (("--se", "observed"), ("`--se` must be one of", "'empirical'", "'model'", "'observed'")),
        (("--se", "model", "--method", "mle"), ("`--se`", "observed-information", "'model'")),
    ],
)
def test_estimate_kuk_se_errors(
    runner: CliRunner, extra: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    args = ("estimate", "kuk", "-p", "theta1=0.7", "-p", "theta2=0.3", "-p", "draws=3",
            "--counts", "400,100,50,150")  # fmt: skip
    one_error(run(runner, *args, *extra), *needles)


@pytest.mark.parametrize(
    "args",
    [
        ("estimate", "warner", "-p", "p=0.7", "--yes", "30", "--n", "100", "--se", "model"),
        ("estimate", "sld", "-p", "p1=2/12", "-p", "p2=10/12", "--yes", "3,7", "--n", "10,10",
         "--se", "model"),
    ],
)  # fmt: skip
def test_estimate_se_is_for_kuk_only(runner: CliRunner, args: tuple[str, ...]) -> None:
    one_error(run(runner, *args), "`--se` applies to the kuk design only", "model")


def test_majority_table_says_where_the_error_rates_are_evaluated(runner: CliRunner) -> None:
    args = ("majority", "two-coin", "--n", "100", "--prevalence", "0.3")
    wide = CliRunner(env={**ENV_80, "COLUMNS": "160"})  # the labels on one line each
    text = flat(run(wide, *args).stdout)
    assert "false negative rate (at prevalence 0.51" in text
    assert "false positive rate (at prevalence 1/2" in text
    out = run_json(runner, *args)
    assert out["false_negative_prevalence"] == pytest.approx(0.51)
    assert out["false_positive_prevalence"] == 0.5
    fixed = flat(run(wide, "majority", "two-coin", "--n", "9", "--true-yes", "3").stdout)
    assert "(at K = 5" in fixed and "(at K = 4" in fixed


def test_tiny_and_huge_epsilon_are_displayed_with_their_digits(runner: CliRunner) -> None:
    tiny = flat(run(runner, "estimate", "binary", "--param", "epsilon=1e-6", "--yes", "5",
                    "--n", "10").stdout)  # fmt: skip
    assert " ε 1e-06 (" in tiny and " ε 0.0000" not in tiny
    assert "at most 1x" not in tiny and "(1 + 1e-06)x" in tiny
    row = tiny.split("P(yes | 1), P(yes | 0)")[1].split(" ε ")[0]
    p1, p0 = (part.strip() for part in row.split(","))
    assert p1 != p0 and p1 != "0.5" and p0 != "0.5"
    assert float(p1) == pytest.approx(0.5 + 2.5e-7, rel=1e-9)
    huge = flat(run(runner, "estimate", "binary", "--param", "epsilon=36", "--yes", "5",
                    "--n", "10").stdout)  # fmt: skip
    row = huge.split("P(yes | 1), P(yes | 0)")[1].split(" ε ")[0]
    p1 = row.split(",")[0].strip()
    assert p1 != "1" and p1.startswith("1 − ")  # 1 - 2.3e-16, not "1"
    assert float(p1.split("−")[1]) == pytest.approx(1 / (1 + math.exp(36)), rel=0.5)


def test_interval_outside_the_design_is_explained(runner: CliRunner) -> None:
    args = ("estimate", "warner", "--param", "p=0.7", "--yes", "10", "--n", "100")
    out = run_json(runner, *args)
    assert out["ci_exact"] == [0.0, 0.0]  # kept, as the issue asks
    assert len(out["notes"]) == 1 and "below P(yes|0)" in out["notes"][0]
    text = flat(run(runner, *args).stdout)
    assert "unlikely under this design" in text and "non-compliance" in text
    ordinary = run_json(runner, "estimate", "two-coin", "--yes", "400", "--n", "1000")
    assert ordinary["notes"] == []
