"""`deniable privacy` and the public `deniable.accounting` API.

Every JSON value is checked against a closed form or a brute force computed here, not
against the library: basic composition = sum of epsilons; the optimum of one binary RR use,
delta(t) = max(0, (e^eps - e^t) / (1 + e^eps)), and of several by enumerating every output
sequence; DRV / KOV formulas; sharp rho = eps tanh(eps/2); the RR Renyi curve; the classic
zCDP conversion; the Gaussian-DP hockey stick; the FMT closed form for shuffling; Laplace
b = Delta / eps; Balle-Wang for the analytic Gaussian; discrete pmfs summed directly.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Any

import pytest
from scipy import stats
from typer.testing import CliRunner

import deniable.accounting as accounting
from _cli import ENV
from _cli import one_error as assert_one_line_error
from _cli import run_privacy as run
from _cli import run_privacy_json as run_json
from deniable.cli import app

FINITE_NUMBER = re.compile(r"\d+\.\d{4}")


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def num(x: Any) -> float:
    """A JSON number, with the strings "inf" for infinity."""
    return math.inf if x == "inf" else float(x)


# ------------------------------------------------------------------ the public API


def isort_key(name: str) -> tuple[int, list[object]]:
    """RUF022's order: SCREAMING_SNAKE_CASE, CamelCase, the rest; natural order within."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    parts: list[object] = [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
    return kind, parts


EXPORTED = """
PureDP ApproxDP ZCDP RDP GDP pure_to_zcdp pure_to_rdp rr_rdp zcdp_to_approx zcdp_delta
zcdp_epsilon rdp_to_approx rdp_delta rdp_epsilon rdp_curve_delta rdp_curve_epsilon laplace_rdp
gdp_to_approx gdp_delta gdp_epsilon compose_gdp basic_composition advanced_composition
kov_composition optimal_rr_delta optimal_rr_epsilon common_lattice CompositionRow
CompositionTable compare_composition PrivacyLossDistribution rr_pld laplace_pld gaussian_pld
RandomizedResponse Laplace Gaussian PrivacyAccountant COMPOSITION_METHODS ShuffleTable
shuffle_delta_numerical shuffle_epsilon_closed_form shuffle_epsilon_numerical
shuffle_epsilon_table shuffle_guarantee shuffle_closed_form_limit BudgetLedger BudgetFilter
QuestionRecord
Composition PureEpsilonComposition LedgerStore InMemoryLedgerStore History SpendRequest
SpendPlan SpentSummary ZCDPComposition QUESTIONNAIRE_METHODS compose_questions CONVERSIONS
Conversion conversion_methods convert_guarantee BudgetPlan budget_plan
ACCOUNTANTS Accountant AdvancedAccountant BasicAccountant KOVAccountant OptimalAccountant
PLDAccountant RDPAccountant ZCDPAccountant GDPAccountant make_accountant EVENT_TYPES Event
Composed SelfComposed PoissonSampled SampledWithoutReplacement event_from_dict NoOp NonPrivate
PureEpsilon EpsilonDelta DiscreteLaplace Channel poisson_amplification
without_replacement_amplification
KeyIndex Keys MAX_NUMERICAL_N MemoAccess PURE_EPSILON UNKNOWN_UNIT add_up admitted adopted_unit
check_unit format_key remaining_budget respondent_keys spend_limit
BudgetWindow Charge InMemoryWindowStore WINDOW_KINDS WindowAccount WindowRequest WindowStore
WindowTotal WindowedLedger charge_cost decide_charge device_key window_account
""".split()  # noqa: SIM905 (one name per word reads better than 48 quoted lines)


def test_accounting_all_is_ruf022_sorted_complete_and_resolves() -> None:
    names = accounting.__all__
    assert names == sorted(names, key=isort_key)
    assert len(set(names)) == len(names)
    assert set(names) == set(EXPORTED)
    for name in names:
        assert getattr(accounting, name) is not None, name
    # the events keep their short names inside deniable.accounting
    assert accounting.Laplace(2.0).pure_epsilon == 0.5
    assert accounting.Gaussian(2.0).mu == 0.5


def test_accounting_names_are_the_module_objects() -> None:
    from deniable import mechanisms
    from deniable.accounting import _composition, _shuffle
    from deniable.mechanisms import _noise_continuous

    assert accounting.optimal_rr_epsilon is _composition.optimal_rr_epsilon
    assert mechanisms.LaplaceMechanism is _noise_continuous.LaplaceMechanism
    assert accounting.shuffle_guarantee is _shuffle.shuffle_guarantee


# ------------------------------------------------------------------ compose


def optimal_delta_equal(eps: float, n: int, t: float) -> float:
    """Exact delta(t) of n binary RR uses at eps: binomial sum over j favourable answers."""
    p = math.exp(eps) / (1 + math.exp(eps))
    total = 0.0
    for j in range(n + 1):
        loss = (2 * j - n) * eps
        if loss > t:
            total += stats.binom.pmf(j, n, p) * -math.expm1(t - loss)
    return float(total)


def brute_delta(epsilons: list[float], t: float) -> float:
    """delta(t) = sum over output sequences of max(0, P(o) - e^t Q(o)) for binary RR pairs."""
    total = 0.0
    for signs in itertools.product((1, -1), repeat=len(epsilons)):
        p = q = 1.0
        for s, e in zip(signs, epsilons, strict=True):
            hi, lo = math.exp(e) / (1 + math.exp(e)), 1 / (1 + math.exp(e))
            p *= hi if s > 0 else lo
            q *= lo if s > 0 else hi
        total += max(0.0, p - math.exp(t) * q)
    return total


def test_compose_issue_example_ten_questions(runner: CliRunner) -> None:
    out = run_json(runner, "compose", "--epsilon", "0.5", "--count", "10", "--delta", "1e-6")
    eps = out["epsilon"]
    assert eps["basic"] == 5.0
    assert [r["method"] for r in out["rows"]] == [
        "basic", "advanced", "kov", "optimal", "pld", "rdp", "zcdp",
    ]  # fmt: skip
    assert out["questions"] == 10 and out["optimal_is_exact"] is True
    # exact optimum: delta(eps_opt) <= 1e-6 < delta(eps_opt (1 - 1e-6))
    assert optimal_delta_equal(0.5, 10, eps["optimal"]) <= 1e-6 * (1 + 1e-9)
    assert optimal_delta_equal(0.5, 10, eps["optimal"] * (1 - 1e-6)) > 1e-6
    # ordering, up to the bisection tolerance (1e-12 relative) of each root
    others = min(eps["pld"], eps["rdp"], eps["zcdp"], eps["kov"])
    assert eps["optimal"] <= others * (1 + 1e-9)
    human = run(runner, "compose", "--epsilon", "0.5", "--count", "10")
    assert human.exit_code == 0
    assert "10 questions at epsilon = 0.5" in human.stdout
    assert re.search(r"basic\s+5\.0000", human.stdout)


def test_compose_closed_forms_for_many_small_questions(runner: CliRunner) -> None:
    e, k, d = 0.1, 100, 1e-6
    out = run_json(runner, "compose", "--epsilons", ",".join(["0.1"] * k), "--delta", "1e-6")
    eps = out["epsilon"]
    assert math.isclose(eps["basic"], 10.0, rel_tol=1e-12)
    drv = math.sqrt(2 * k * math.log(1 / d)) * e + k * e * math.expm1(e)
    assert math.isclose(eps["advanced"], drv, rel_tol=1e-9) and eps["advanced"] >= drv
    s, q = k * e * math.tanh(e / 2), k * e * e
    kov = min(
        k * e, s + math.sqrt(2 * q * math.log(math.e + math.sqrt(q) / d)),
        s + math.sqrt(2 * q * math.log(1 / d)),
    )  # fmt: skip
    assert math.isclose(eps["kov"], kov, rel_tol=1e-9)
    assert optimal_delta_equal(e, k, eps["optimal"]) <= d * (1 + 1e-9)
    assert optimal_delta_equal(e, k, eps["optimal"] * (1 - 1e-6)) > d
    assert eps["optimal"] < eps["kov"] < eps["advanced"] < eps["basic"]


def test_compose_single_question_matches_the_closed_form(runner: CliRunner) -> None:
    # delta(t) = (e^eps - e^t) / (1 + e^eps) = 0.1  =>  t = ln(e^eps - 0.1 (1 + e^eps))
    out = run_json(runner, "compose", "--epsilon", "1", "--delta", "0.1", "--method", "optimal")
    exact = math.log(math.e - 0.1 * (1 + math.e))
    assert [r["method"] for r in out["rows"]] == ["optimal"]
    assert math.isclose(out["epsilon"]["optimal"], exact, rel_tol=1e-9)
    assert out["epsilon"]["optimal"] >= exact * (1 - 1e-12)  # never below the true value


def test_compose_heterogeneous_matches_brute_force(runner: CliRunner) -> None:
    eps_list, d = [0.5, 1.0, 0.25], 1e-3
    out = run_json(runner, "compose", "-e", "0.5", "-e", "1", "-e", "0.25", "--delta", "1e-3")
    opt = out["epsilon"]["optimal"]
    assert out["optimal_is_exact"] is True
    assert brute_delta(eps_list, opt) <= d * (1 + 1e-9)
    assert brute_delta(eps_list, opt * (1 - 1e-6)) > d
    assert out["epsilon"]["basic"] == 1.75
    assert opt <= min(out["epsilon"][m] for m in ("rdp", "zcdp", "kov", "advanced"))


def test_compose_single_methods(runner: CliRunner) -> None:
    for method, expected in (("basic", 1.5), ("advanced", 1.5)):
        out = run_json(runner, "compose", "--epsilons", "0.5,0.5,0.5", "--method", method)
        assert out["epsilon"] == {method: expected}


def test_compose_k_ary_is_below_binary(runner: CliRunner) -> None:
    two = run_json(runner, "compose", "--epsilon", "1", "--count", "5", "--method", "optimal")
    four = run_json(
        runner, "compose", "--epsilon", "1", "--count", "5", "--k", "4", "--method", "optimal"
    )
    assert four["k"] == 4
    assert four["epsilon"]["optimal"] < two["epsilon"]["optimal"] <= 5.0


def test_compose_per_question_counts(runner: CliRunner) -> None:
    """`--count 3,5`: the first question asked 3 times, the second 5 times (the API's
    `counts`): basic = 3 * 0.5 + 5 * 0.25 = 2.75; the optimum equals the brute force over
    the 8 uses."""
    out = run_json(runner, "compose", "--epsilons", "0.5,0.25", "--count", "3,5")
    assert out["counts"] == [3, 5] and out["count"] == [3, 5] and out["questions"] == 8
    assert out["epsilon"]["basic"] == 2.75
    uses = [0.5] * 3 + [0.25] * 5
    assert brute_delta(uses, out["epsilon"]["optimal"]) <= 1e-6 * (1 + 1e-9)
    same = run_json(runner, "compose", "--epsilons", "0.5,0.25", "--count", "4")
    assert same["counts"] == [4, 4] and same["count"] == 4 and same["epsilon"]["basic"] == 3.0


@pytest.mark.parametrize("eps", ["700", "710", "1e6", "1e300"])
def test_compose_huge_epsilon_is_a_table_not_a_traceback(runner: CliRunner, eps: str) -> None:
    """e^710 overflows a double: advanced composition is then inf and the minimum with basic
    (3 x) is reported; the optimum is 3 x + ln(1 - delta) (module test_accounting_composition)."""
    x = float(eps)
    out = run_json(runner, "compose", "-e", eps, "--count", "3", "--delta", "0.5")
    assert out["epsilon"]["basic"] == out["epsilon"]["advanced"] == 3 * x
    for method, value in out["epsilon"].items():
        assert num(value) >= (3 * x + math.log(0.5)) * (1 - 1e-15), method
        assert math.isfinite(num(value)), method
    human = run(runner, "compose", "-e", eps)
    assert human.exit_code == 0 and "Traceback" not in human.output and human.stderr == ""


def test_compose_infinite_epsilon_is_never_finite(runner: CliRunner) -> None:
    out = run_json(runner, "compose", "-e", "0.5", "-e", "inf")
    assert set(out["epsilon"].values()) == {"inf"}
    human = run(runner, "compose", "-e", "0.5", "-e", "inf")
    assert human.exit_code == 0
    body = [line for line in human.stdout.splitlines() if line.strip().startswith("basic")]
    assert "∞" in body[0] and not FINITE_NUMBER.search(body[0])


# ------------------------------------------------------------------ convert


def test_convert_zcdp_at_a_huge_target_epsilon(runner: CliRunner) -> None:
    """exp(-(eps - rho)^2 / (4 rho)) underflows: the true delta is positive, so the smallest
    positive double is reported (it used to overflow in `(eps - rho) ** 2`)."""
    out = run_json(
        runner, "convert", "--from", "zcdp", "--to", "approx", "--rho", "0.5",
        "--target-epsilon", "1e300",
    )  # fmt: skip
    assert [r["delta"] for r in out["results"]] == [5e-324, 5e-324]
    human = run(
        runner, "convert", "--from", "zcdp", "--to", "approx", "--rho", "0.5",
        "--target-epsilon", "1e300",
    )  # fmt: skip
    assert human.exit_code == 0 and "4.941e-324" in human.stdout


def test_convert_pure_to_zcdp_sharp_and_classic(runner: CliRunner) -> None:
    out = run_json(runner, "convert", "--from", "pure", "--epsilon", "1", "--to", "zcdp")
    rho = {r["method"]: r["rho"] for r in out["results"]}
    assert math.isclose(rho["sharp"], math.tanh(0.5), rel_tol=1e-9)
    assert rho["sharp"] >= math.tanh(0.5) * (1 - 1e-15)
    assert 0.5 <= rho["classic"] <= 0.5 * (1 + 1e-9)  # eps^2 / 2, rounded up


def test_convert_pure_to_rdp_is_the_rr_curve(runner: CliRunner) -> None:
    eps = 1.0
    out = run_json(
        runner, "convert", "--from", "pure", "--epsilon", "1", "--to", "rdp", "--alpha", "3,inf"
    )
    (row,) = out["results"]
    a = 3.0
    curve = math.log((math.exp(a * eps) + math.exp(eps) * math.exp(-a * eps)) / (math.e + 1))
    assert math.isclose(row["epsilons"][0], curve / (a - 1), rel_tol=1e-9)
    assert row["alphas"] == [3.0, "inf"] and row["epsilons"][1] == 1.0


def test_convert_zcdp_to_rdp_and_approx(runner: CliRunner) -> None:
    rdp = run_json(
        runner, "convert", "--from", "zcdp", "--rho", "0.5", "--to", "rdp", "--alpha", "2,10"
    )
    assert rdp["results"][0]["epsilons"] == [1.0, 5.0]
    out = run_json(
        runner, "convert", "--from", "zcdp", "--rho", "0.5", "--to", "approx", "--delta", "1e-6"
    )
    by = {r["method"]: r["epsilon"] for r in out["results"]}
    classic = 0.5 + 2 * math.sqrt(0.5 * math.log(1e6))  # Bun & Steinke Prop. 1.3
    assert math.isclose(by["classic"], classic, rel_tol=1e-9) and by["classic"] >= classic
    assert 0 < by["improved"] < by["classic"]
    assert [r["method"] for r in out["results"]] == ["improved", "classic"]


def gdp_delta_closed(mu: float, eps: float) -> float:
    n = stats.norm
    return float(n.cdf(-eps / mu + mu / 2) - math.exp(eps) * n.cdf(-eps / mu - mu / 2))


def test_convert_gdp_exact_both_directions_and_composition(runner: CliRunner) -> None:
    out = run_json(
        runner, "convert", "--from", "gdp", "--mu", "1", "--to", "approx", "--target-epsilon", "1"
    )
    (row,) = out["results"]
    assert math.isclose(row["delta"], gdp_delta_closed(1.0, 1.0), rel_tol=1e-9)
    assert row["epsilon"] == 1.0 and row["vacuous"] is False
    out = run_json(
        runner, "convert", "--from", "gdp", "--mu", "1", "--to", "approx", "--delta", "1e-6"
    )
    eps = out["results"][0]["epsilon"]
    assert gdp_delta_closed(1.0, eps) <= 1e-6 < gdp_delta_closed(1.0, eps * (1 - 1e-6))
    comp = run_json(runner, "convert", "--from", "gdp", "--mu", "3,4", "--to", "gdp")
    assert comp["source"]["mus"] == [3.0, 4.0]
    assert math.isclose(comp["results"][0]["mu"], 5.0, rel_tol=1e-9)
    assert comp["results"][0]["mu"] >= 5.0


def test_convert_pure_to_approx_is_exact_rr(runner: CliRunner) -> None:
    out = run_json(
        runner, "convert", "--from", "pure", "--epsilon", "1", "--to", "approx", "--delta", "0.1"
    )
    assert math.isclose(
        out["results"][0]["epsilon"], math.log(math.e - 0.1 * (1 + math.e)), rel_tol=1e-9
    )
    out = run_json(
        runner, "convert", "--from", "pure", "--epsilon", "1", "--to", "approx",
        "--target-epsilon", "0.5",
    )  # fmt: skip
    closed = (math.e - math.exp(0.5)) / (1 + math.e)
    assert math.isclose(out["results"][0]["delta"], closed, rel_tol=1e-9)


def test_convert_rdp_grid_classic(runner: CliRunner) -> None:
    out = run_json(
        runner, "convert", "--from", "rdp", "--alpha", "2,4,8", "--epsilon", "0.1,0.3,0.5",
        "--to", "approx", "--delta", "1e-5", "--method", "classic",
    )  # fmt: skip
    best = min(e + math.log(1e5) / (a - 1) for a, e in ((2, 0.1), (4, 0.3), (8, 0.5)))
    assert math.isclose(out["results"][0]["epsilon"], best, rel_tol=1e-9)


def test_convert_vacuous_delta_is_reported_not_hidden(runner: CliRunner) -> None:
    out = run_json(
        runner, "convert", "--from", "zcdp", "--rho", "5", "--to", "approx",
        "--target-epsilon", "0.1", "--method", "classic",
    )  # fmt: skip
    assert out["results"][0]["delta"] == 1.0 and out["results"][0]["vacuous"] is True


def test_convert_infinite_epsilon_stays_infinite(runner: CliRunner) -> None:
    out = run_json(runner, "convert", "--from", "pure", "--epsilon", "inf", "--to", "zcdp")
    assert {r["rho"] for r in out["results"]} == {"inf"}
    human = run(runner, "convert", "--from", "pure", "--epsilon", "inf", "--to", "zcdp")
    assert "ρ = ∞" in human.stdout


# ------------------------------------------------------------------ shuffle


def fmt_closed_form(eps0: float, n: int, delta: float) -> float:
    e0 = math.exp(eps0)
    inner = 8 * math.sqrt(e0 * math.log(4 / delta)) / math.sqrt(n) + 8 * e0 / n
    return math.log(1 + (e0 - 1) / (e0 + 1) * inner)


def test_shuffle_grid_against_the_closed_form(runner: CliRunner) -> None:
    out = run_json(
        runner, "shuffle", "--epsilon0", "1", "--n-grid", "1000,100000", "--delta", "1e-6"
    )
    rows = out["rows"]
    assert [r["n"] for r in rows] == [1000, 100_000]
    for r in rows:
        cf = fmt_closed_form(1.0, r["n"], 1e-6)
        assert math.isclose(r["closed_form"], cf, rel_tol=1e-9) and r["closed_form"] >= cf
        assert 0 < r["numerical"] <= r["closed_form"] <= 1.0
    assert rows[1]["numerical"] < rows[0]["numerical"]


def test_shuffle_closed_form_outside_its_range(runner: CliRunner) -> None:
    # FMT Thm 3.1 needs eps0 <= ln(n / (16 ln(2/delta))) = ln(1000 / 232.2) = 1.46 < 2
    out = run_json(runner, "shuffle", "--epsilon0", "2", "--n", "1000")
    assert out["rows"][0]["closed_form"] is None
    assert 0 < out["rows"][0]["numerical"] <= 2.0
    bad = run(runner, "shuffle", "--epsilon0", "2", "--n", "1000", "--method", "closed-form")
    assert_one_line_error(bad, "--method numerical")


def test_shuffle_refusal_states_the_library_limit(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One copy of the shuffle bound: the limit the command line states is the library's
    ``shuffle_closed_form_limit`` (its value, from FMT21 Thm 3.1 written out here), and a
    change to the library's function is what the command line says."""
    limit = accounting.shuffle_closed_form_limit(1e-6, n=1000)
    assert limit == pytest.approx(math.log(1000 / (16 * math.log(2 / 1e-6))), rel=1e-12)
    bad = run(runner, "shuffle", "--epsilon0", "2", "--n", "1000", "--method", "closed-form")
    assert_one_line_error(bad, f"= {limit:.6g} for n = 1000")
    from deniable.cli import _privacy_noise

    monkeypatch.setattr(_privacy_noise, "shuffle_closed_form_limit", lambda delta, *, n: 1.5)
    bad = run(runner, "shuffle", "--epsilon0", "2", "--n", "1000", "--method", "closed-form")
    assert_one_line_error(bad, "= 1.5 for n = 1000")


def test_shuffle_never_above_epsilon0(runner: CliRunner) -> None:
    out = run_json(runner, "shuffle", "--epsilon0", "0.5", "--n", "2", "--method", "numerical")
    assert "closed_form" not in out["rows"][0]
    assert 0 < out["rows"][0]["numerical"] <= 0.5


def test_shuffle_plot(runner: CliRunner, tmp_path: Path) -> None:
    """`--plot FILE` draws plot_shuffle's figure: the numerical epsilon against n."""
    path = tmp_path / "shuffle.svg"
    out = run_json(
        runner, "shuffle", "--epsilon0", "2", "--n-grid", "1000,100000", "--plot", str(path)
    )
    assert out["plot"] == str(path) and "<svg" in path.read_text()
    png = tmp_path / "shuffle.png"
    res = run(runner, "shuffle", "--epsilon0", "1", "--n", "10000", "--plot", str(png))
    assert res.exit_code == 0, res.output
    assert f"plot written to {png}" in res.stdout.replace("\n", "")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("eps0", ["710", "1e300"])
def test_shuffle_huge_epsilon0(runner: CliRunner, eps0: str) -> None:
    """No clones (probability e^-eps0): the central epsilon is about eps0 itself."""
    out = run_json(runner, "shuffle", "--epsilon0", eps0, "--n", "100", "--delta", "1e-6")
    x = float(eps0)
    assert x + math.log1p(-1e-6) - 1e-6 * x <= out["rows"][0]["numerical"] <= x


# ------------------------------------------------------------------ noise


def test_noise_laplace_scale_is_sensitivity_over_epsilon(runner: CliRunner) -> None:
    out = run_json(
        runner, "noise", "--mechanism", "laplace", "--epsilon", "0.5", "--sensitivity", "2"
    )
    assert out["scale"] == 4.0 and out["expected_abs_error"] == 4.0
    assert out["epsilon"] == 0.5 and out["delta"] == 0.0


def test_noise_gaussian_from_rho(runner: CliRunner) -> None:
    out = run_json(runner, "noise", "--mechanism", "gaussian", "--rho", "0.125")
    sigma = 1 / math.sqrt(2 * 0.125)  # sigma = Delta / sqrt(2 rho) = 2
    assert math.isclose(out["sigma"], sigma, rel_tol=1e-12) and out["sigma"] >= sigma
    assert math.isclose(out["expected_abs_error"], sigma * math.sqrt(2 / math.pi), rel_tol=1e-12)
    assert math.isclose(out["mu"], 0.5, rel_tol=1e-12)


def test_noise_gaussian_analytic_meets_balle_wang(runner: CliRunner) -> None:
    out = run_json(
        runner, "noise", "--mechanism", "gaussian", "--epsilon", "0.5", "--delta", "1e-6"
    )

    def bw(sigma: float, eps: float = 0.5) -> float:  # Balle & Wang 2018, Thm. 8, Delta = 1
        n = stats.norm
        return float(
            n.cdf(1 / (2 * sigma) - eps * sigma)
            - math.exp(eps) * n.cdf(-1 / (2 * sigma) - eps * sigma)
        )

    assert bw(out["sigma"]) <= 1e-6 < bw(out["sigma"] * (1 - 1e-6))
    classic = run_json(
        runner, "noise", "--mechanism", "gaussian", "--epsilon", "0.5", "--delta", "1e-6",
        "--method", "classic",
    )  # fmt: skip
    dr = math.sqrt(2 * math.log(1.25 / 1e-6)) / 0.5  # Dwork & Roth, Thm. A.1
    assert math.isclose(classic["sigma"], dr, rel_tol=1e-12) and classic["sigma"] >= dr
    assert out["sigma"] < classic["sigma"]


def test_noise_discrete_mechanisms(runner: CliRunner) -> None:
    out = run_json(runner, "noise", "--mechanism", "discrete-laplace", "--epsilon", "0.5")
    t = 2.0  # t = Delta / eps
    q = math.exp(-1 / t)
    assert out["scale"] == t and out["scale_exact"] == "2"
    assert math.isclose(out["expected_abs_error"], 2 * q / (1 - q * q), rel_tol=1e-12)
    dg = run_json(runner, "noise", "--mechanism", "discrete-gaussian", "--rho", "0.5")
    weights = {k: math.exp(-k * k / 2) for k in range(-60, 61)}  # sigma = 1
    err = sum(abs(k) * w for k, w in weights.items()) / sum(weights.values())
    assert dg["sigma"] == 1.0 and dg["rho"] == 0.5
    assert math.isclose(dg["expected_abs_error"], err, rel_tol=1e-9)


def test_noise_table_and_plot(runner: CliRunner, tmp_path: Path) -> None:
    out = run_json(runner, "noise", "--table", "--epsilons", "0.5,2")
    rows = out["rows"]
    assert [r["laplace"] for r in rows] == [2.0, 0.5]  # b = 1 / eps
    assert rows[0]["gaussian_classic"] is not None and rows[1]["gaussian_classic"] is None
    path = tmp_path / "noise.svg"
    res = run(runner, "noise", "--table", "--epsilons", "0.5,1", "--plot", str(path))
    assert res.exit_code == 0, res.output
    assert "<svg" in path.read_text()


# ------------------------------------------------------------------ explain


def test_explain_json_closed_forms(runner: CliRunner) -> None:
    out = run_json(runner, "explain", "--epsilon", "1")
    assert math.isclose(out["truth_probability"], math.e / (1 + math.e), rel_tol=1e-12)
    assert math.isclose(out["lying_probability"], 1 / (1 + math.e), rel_tol=1e-12)
    assert math.isclose(out["likelihood_ratio"], math.e, rel_tol=1e-12)
    assert "2.72 times as likely" in out["sentence"]
    assert {"truth_table", "lying_table", "posterior_table", "text"} <= set(out)
    human = run(runner, "explain", "--epsilon", "1")
    assert human.exit_code == 0
    assert "told truthfully with probability 0.7311" in " ".join(human.stdout.split())
    assert "binary mechanism: epsilon against the lying probability q" in human.stdout


def test_explain_infinite_epsilon(runner: CliRunner) -> None:
    out = run_json(runner, "explain", "--epsilon", "inf")
    assert out["epsilon"] == "inf" and out["likelihood_ratio"] == "inf"
    assert out["truth_probability"] == 1.0
    assert "reveals that answer" in out["text"]


def test_explain_plot(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "truth.png"
    res = run(runner, "explain", "--epsilon", "1", "--plot", str(path))
    assert res.exit_code == 0, res.output
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------ audit
# Each audit is deterministic (fixed seed).  For a mechanism that is truly eps-DP the
# Clopper-Pearson/Bonferroni bound exceeds eps with probability at most 5% per seed.


def test_audit_passes_a_correct_design(runner: CliRunner) -> None:
    res = run(runner, "audit", "warner", "--param", "p=0.75", "--seed", "1", "--trials", "50000")
    assert res.exit_code == 0, res.output
    assert "PASSED" in res.stdout and "FAILED" not in res.stdout
    out = run_json(runner, "audit", "warner", "-p", "p=0.75", "--seed", "1", "--trials", "50000")
    assert out["passed"] is True and out["mechanism"] == "warner"
    assert math.isclose(out["claimed_epsilon"], math.log(3), rel_tol=1e-12)
    assert 0.9 < out["lower_bound"] <= math.log(3)


def test_audit_catches_the_broken_unary_encoding(runner: CliRunner) -> None:
    res = run(runner, "audit", "unary-broken", "--epsilon", "1", "--seed", "1", "--trials", "50000")
    assert res.exit_code == 1, res.output
    assert "FAILED" in res.stdout and "NOT" in res.stdout
    out = run_json(
        runner, "audit", "unary-broken", "--epsilon", "1", "--seed", "1", "--trials", "50000",
        code=1,
    )  # fmt: skip
    # one-bit calibration t = e/(1+e): the true epsilon is 2 ln(t/(1-t)) = 2
    assert out["passed"] is False and out["claimed_epsilon"] == 1.0
    assert math.isclose(out["true_epsilon"], 2.0, rel_tol=1e-12)
    assert 1.0 < out["lower_bound"] <= 2.0


def test_audit_passes_the_correct_unary_encoding(runner: CliRunner) -> None:
    out = run_json(runner, "audit", "unary", "--epsilon", "1", "--seed", "2", "--trials", "50000")
    assert out["passed"] is True and out["lower_bound"] <= 1.0


def test_audit_fails_an_understated_claim(runner: CliRunner) -> None:
    res = run(
        runner, "audit", "warner", "-p", "p=0.75", "--claimed-epsilon", "0.8", "--seed", "3",
        "--trials", "50000",
    )  # fmt: skip
    assert res.exit_code == 1 and "FAILED" in res.stdout


def test_audit_infinite_epsilon_design(runner: CliRunner) -> None:
    out = run_json(runner, "audit", "mangat", "-p", "p=0.5", "--seed", "1", "--trials", "20000")
    assert out["claimed_epsilon"] == "inf" and out["true_epsilon"] == "inf"
    assert out["passed"] is True


# ------------------------------------------------------------------ budget


def test_budget_refuses_the_question_that_would_exceed_the_cap(runner: CliRunner) -> None:
    # epsilons exact in binary: 0.5 + 0.25 + 0.25 = 1 reaches the cap exactly
    out = run_json(
        runner, "budget", "--cap", "1", "-q", "smokes=0.5", "-q", "drinks=0.25",
        "-q", "drugs=0.375", "-q", "smokes=0.5", "-q", "age=0.25", "--memoized", "smokes",
    )  # fmt: skip
    rows = out["questions"]
    assert [r["status"] for r in rows] == ["asked", "asked", "refused", "replayed (free)", "asked"]
    assert [r["charged"] for r in rows] == [0.5, 0.25, 0.0, 0.0, 0.25]
    assert rows[2]["cost"] == 0.375
    assert out["refused"] == ["drugs"]
    assert out["spent"] == 1.0 and out["remaining"] == 0.0
    assert rows[1]["remaining"] == 0.25  # 1 - 0.5 - 0.25


def test_budget_is_strict_with_decimal_epsilons(runner: CliRunner) -> None:
    """Three doubles 0.1 sum to more than the double 0.3: under a cap of 0.3 the third is
    refused (docs/budgets.md: state a cap with a margin)."""
    q = ["-q", "a=0.1", "-q", "b=0.1", "-q", "c=0.1"]
    out = run_json(runner, "budget", "--cap", "0.3", *q)
    assert [r["status"] for r in out["questions"]] == ["asked", "asked", "refused"]
    roomy = run_json(runner, "budget", "--cap", "0.3000001", *q)
    assert roomy["refused"] == []
    human = run(runner, "budget", "--cap", "0.3", *q)
    assert "c costs 0.1 but only 0.09999999999999998 is left" in " ".join(human.stdout.split())
    assert "give the cap a margin" in " ".join(human.stdout.split())


def test_budget_without_memoization_charges_again(runner: CliRunner) -> None:
    out = run_json(runner, "budget", "--cap", "2", "-q", "a=0.5", "-q", "a=0.5", "-q", "b=inf")
    assert [r["charged"] for r in out["questions"]] == [0.5, 0.5, 0.0]
    assert out["questions"][2]["status"] == "refused"  # infinite epsilon: never admitted
    assert out["questions"][2]["epsilon"] == "inf"
    assert out["remaining"] == 1.0
    human = run(runner, "budget", "--cap", "2", "-q", "a=0.5", "-q", "a=0.5", "-q", "b=inf")
    assert "The largest ε the next question may use: 1.0000." in human.stdout
    assert "∞" in human.stdout


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        ("compose --epsilon -0.5", "`--epsilon` must be in [0, inf], got -0.5"),
        ("compose --epsilons 0.5,-1", "`--epsilons` must be in [0, inf], got -1"),
        ("compose --epsilons 0.5,0.2 --count 3,x", "`--count` must be a whole number >= 1"),
        ("compose --epsilon 0.5 --count 3,5", "`--count` must be one whole number, or one per"),
        ("compose --epsilon 0.5 --count 2.5", "`--count` must be a whole number >= 1"),
        ("compose --epsilons 0.5,0.2 --count 3,5,7", "one per question (2)"),
        ("compose --epsilon 0.5 --delta 1", "`--delta` must be in (0, 1)"),
        ("compose --epsilon 0.5 --delta 0", "`--delta` must be in (0, 1)"),
        ("compose --epsilon 0.5 --method magic", "`--method` must be one of"),
        ("compose", "got neither"),
        ("compose --epsilon x", "`--epsilon` must be a number"),
        ("compose --epsilon 1 --k 1", "`--k` must be a whole number >= 2"),
        ("convert --from pure --epsilon 1 --to rdp --alpha 1", "`--alpha` must be in (1, inf]"),
        ("convert --from pure --epsilon 1 --to rdp --alpha 0.5", "`--alpha` must be in (1, inf]"),
        ("convert --from pure --epsilon -1 --to zcdp", "`--epsilon` must be in [0, inf]"),
        ("convert --from zcdp --rho -1 --to approx --delta 0.1", "`--rho` must be in [0, inf]"),
        ("convert --from gdp --mu 1,-2 --to approx --delta 0.1", "`--mu` must be in [0, inf]"),
        (
            "convert --from rdp --alpha 2,3 --epsilon 1,-1 --to approx --delta 0.1",
            "`--epsilon` must be in [0, inf]",
        ),
        (
            "convert --from rdp --alpha 3,2 --epsilon 1,1 --to approx --delta 0.1",
            "`--alpha` must be strictly increasing",
        ),
        (
            "convert --from zcdp --rho 1 --to approx --target-epsilon -2",
            "`--target-epsilon` must be in [0, inf]",
        ),
        ("convert --from zcdp --rho 1 --to approx --delta 1.5", "`--delta` must be in (0, 1)"),
        (
            "convert --from zcdp --rho 1 --to approx --delta 0.1 --method sharp",
            "`--method` must be one of improved, classic",
        ),
        ("convert --from gdp --mu 1 --to zcdp", "cannot convert"),
        ("convert --from zcdp --rho 1 --to approx", "exactly one of"),
        ("convert --from pure --rho 1 --to zcdp", "needs --epsilon"),
        ("convert --from nope --epsilon 1 --to zcdp", "`--from` must be"),
        ("shuffle --epsilon0 -1 --n 100", "`--epsilon0` must be in (0, inf)"),
        ("shuffle --epsilon0 1 --n 100 --delta 2", "`--delta`"),
        ("shuffle --epsilon0 1 --n 0", "`--n` must be a whole number"),
        ("shuffle --epsilon0 1 --n 10 --method x", "`--method`"),
        ("noise --mechanism laplace --epsilon -1", "`--epsilon` must be in (0, inf)"),
        ("noise --mechanism gaussian --rho 0", "`--rho` must be in (0, inf)"),
        ("noise --mechanism laplace --epsilon 1 --sensitivity 0", "`--sensitivity`"),
        ("noise --table --epsilons 1,0", "`--epsilons` must be in (0, inf)"),
        ("noise --mechanism gaussian --epsilon 1", "needs --delta"),
        (
            "noise --mechanism gaussian --epsilon 1 --delta 1e-5 --method classic",
            "(0, 1) for method='classic'",
        ),
        ("noise --mechanism gaussian --epsilon 1 --delta -1", "`--delta`"),
        (
            "noise --mechanism discrete-laplace --epsilon 1 --sensitivity 1.5",
            "`--sensitivity` must be a whole number",
        ),
        ("noise --mechanism uniform --epsilon 1", "`--mechanism` must be one of"),
        ("explain --epsilon -1", "`--epsilon` must be in [0, inf]"),
        ("explain --epsilon 1 --plot x.pdf", "`--plot` must be"),
        ("audit nosuch", "unknown design 'nosuch'"),
        ("audit sld", "two-group design"),
        ("audit unary-broken", "needs --epsilon"),
        ("audit unary-broken --epsilon -1", "`--epsilon` must be in (0, inf)"),
        ("audit unary --epsilon 1 --k 99", "`--k` must be a whole number in [2, 64]"),
        ("audit warner -p p=0.75 --claimed-epsilon -1", "`--claimed-epsilon` must be in"),
        ("audit warner -p p=0.75 --level 1.5", "'--level': must be in (0, 1), got '1.5'"),
        ("audit warner -p p=0.75 --level 0", "'--level': must be in (0, 1)"),
        ("audit warner -p p=0.75 --trials 1e9", "`--trials` must be a whole number in"),
        ("audit warner -p p=0.75 --trials many", "`--trials` must be a whole number"),
        ("shuffle --epsilon0 1 --n 100 --method closed-form --plot x.png", "`--plot` draws"),
        ("shuffle --epsilon0 1 --n 100 --plot x.pdf", "`--plot` must be"),
        ("audit warner -p p=0.5", "`p` must be in (0, 1) and not 0.5"),
        ("audit warner --epsilon 1", "--param"),
        ("budget --cap 0 -q a=1", "`--cap` must be in (0, inf)"),
        ("budget --cap inf -q a=1", "`--cap` must be in (0, inf)"),
        ("budget --cap 1 -q a", "NAME=EPSILON"),
        ("budget --cap 1 -q a=-1", "[0, inf]"),
        ("budget --cap 1 -q a=0.5 -q a=0.3", "stands for one mechanism"),
        ("budget --cap 1 -q a=0.5 --memoized b", "not asked: 'b'"),
    ],
)
def test_bad_input_is_one_error_line(runner: CliRunner, command: str, needle: str) -> None:
    assert_one_line_error(run(runner, *command.split()), needle)


def test_help_lists_the_privacy_commands(runner: CliRunner) -> None:
    top = runner.invoke(app, ["--help"])
    assert top.exit_code == 0 and "privacy" in top.stdout
    res = run(runner, "--help")
    assert res.exit_code == 0
    for command in ("compose", "convert", "shuffle", "noise", "explain", "audit", "budget"):
        assert command in res.stdout
