"""Simulation: groups and non-compliance in ``simulate``, Monte Carlo studies in
``simulation_study``, and `deniable simulation-study`.

Closed forms (binary design, P1 = P(yes | 1), P0 = P(yes | 0), d = P1 - P0, share s of
"always no" respondents): a respondent says "yes" with probability
lambda = (1 - s) lambda_c + s * 0, lambda_c = P0 + pi d; the yes count Y of n iid respondents is
Binomial(n, lambda), the moment estimate (Y/n - P0) / d has mean (lambda - P0) / d, i.e. bias
-s lambda_c / d, and variance lambda (1 - lambda) / (n d^2).  Coverage and rejection rates of
the intervals are computed *exactly* here by summing the binomial pmf over y = 0..n.

Statistical checks use 4.5-sigma bands: two-sided false alarm about 7e-6 per check, under
1e-4 for the ~15 checks in this file.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from _cli import ENV, one_error
from deniable import (
    Categorical,
    ForcedResponse,
    Kuk,
    Mangat,
    ParameterError,
    ParameterTypeError,
    TwoCoin,
    Warner,
)
from deniable.cli import app
from deniable.simulation import SimulationStudy, exact_bounds, simulate, simulation_study

K = 4.5  # sigma band of every statistical check


def exact_ci(p1: float, p0: float, y: int, n: int, level: float) -> tuple[float, float]:
    """Clopper-Pearson for lambda from beta quantiles, mapped through the design, clipped."""
    a = 1 - level
    lo = 0.0 if y == 0 else stats.beta.ppf(a / 2, y, n - y + 1)
    hi = 1.0 if y == n else stats.beta.ppf(1 - a / 2, y + 1, n - y)
    u, w = sorted(((lo - p0) / (p1 - p0), (hi - p0) / (p1 - p0)))
    return min(max(u, 0.0), 1.0), min(max(w, 0.0), 1.0)


def exact_properties(
    p1: float, p0: float, n: int, pi: float, s: float = 0.0, level: float = 0.95,
    null: float | None = None,
) -> dict[str, float]:  # fmt: skip
    """Everything a study estimates, computed exactly from the Binomial(n, lambda) law."""
    d = p1 - p0
    lam = (1 - s) * (p0 + pi * d)
    y = np.arange(n + 1)
    pmf = stats.binom.pmf(y, n, lam)
    est = (y / n - p0) / d
    se = np.sqrt(y / n * (1 - y / n) / n) / abs(d)
    z = stats.norm.ppf(0.5 + level / 2)
    cis = [exact_ci(p1, p0, int(k), n, level) for k in y]
    cover_exact = np.array([lo <= pi <= hi for lo, hi in cis])
    out = {
        "mean": float(pmf @ est),
        "sd": math.sqrt(lam * (1 - lam) / n) / abs(d),
        "mean_se": float(pmf @ se),
        "sd_se": math.sqrt(float(pmf @ se**2) - float(pmf @ se) ** 2),
        "coverage_exact": float(pmf @ cover_exact),
        "coverage_wald": float(pmf @ (np.abs(est - pi) <= z * se)),
    }
    if null is not None:
        out["reject_exact"] = float(pmf @ np.array([not (lo <= null <= hi) for lo, hi in cis]))
        out["reject_wald"] = float(pmf @ (np.abs(est - null) > z * se))
    return out


def within(observed: float, expected: float, sd: float, replications: int) -> bool:
    return abs(observed - expected) <= K * sd / math.sqrt(replications)


def rate_within(observed: float, p: float, replications: int) -> bool:
    return within(observed, p, math.sqrt(p * (1 - p)), replications)


# ------------------------------------------------------------------ simulate


def test_plain_simulation_is_unchanged_by_the_new_options() -> None:
    # the original algorithm: truth from gen.random, then the randomizer on the same stream
    design, n, pi, seed = Warner(0.7), 5000, 0.3, 99
    gen = np.random.Generator(np.random.PCG64(seed))
    truth = (gen.random(n) < pi).view(np.uint8)
    reports = design.randomize(truth, rng=gen)
    sim = simulate(design, n, pi, seed=seed)
    assert np.array_equal(sim.truth, truth) and np.array_equal(sim.reports, reports)
    assert sim.groups is None and sim.complied is None and sim.non_compliance == 0.0
    assert sim.estimate.value == design.estimate(reports).value


def test_non_compliers_say_no_and_compliers_keep_their_reports() -> None:
    design, n, s = TwoCoin(), 20_000, 0.2
    honest = simulate(design, n, 0.4, seed=7)
    sim = simulate(design, n, 0.4, seed=7, non_compliance=s)
    assert sim.complied is not None and sim.non_compliance == s
    assert np.array_equal(sim.truth, honest.truth)  # same population
    assert np.all(sim.reports[~sim.complied] == 0)
    assert np.array_equal(sim.reports[sim.complied], honest.reports[sim.complied])
    assert rate_within(float(sim.complied.mean()), 1 - s, n)
    frame = sim.to_frame(truth=True)
    assert list(frame.columns) == ["report", "truth", "complied"]
    assert int((~frame["complied"]).sum()) == int((~sim.complied).sum())


@pytest.mark.parametrize(
    ("design", "direction"),
    [(ForcedResponse(0.2, 0.1), -1), (Warner(0.3), +1)],
    ids=["forced-downward", "warner-below-half-upward"],
)
def test_non_compliance_bias_in_one_large_survey(design: Any, direction: int) -> None:
    n, pi, s = 200_000, 0.3, 0.15
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0
    lam_c = p0 + pi * (p1 - p0)
    bias = -s * lam_c / (p1 - p0)  # derived in the module docstring
    assert math.copysign(1, bias) == direction
    lam = (1 - s) * lam_c
    sd = math.sqrt(lam * (1 - lam) / n) / abs(p1 - p0)
    sim = simulate(design, n, pi, seed=11, non_compliance=s)
    assert abs(sim.estimate.value - (pi + bias)) <= K * sd


def test_groups_from_shares_with_their_own_prevalence() -> None:
    design, n = TwoCoin(), 60_000
    shares = {"north": 0.25, "south": 0.75}
    prev = {"north": 0.1, "south": 0.4}
    sim = simulate(design, n, prev, groups=shares, seed=5)
    assert sim.group_labels() == ["north", "south"]
    assert sim.groups is not None and sim.groups.shape == (n,)
    ests = sim.group_estimates()
    for g in shares:
        mask = sim.groups == g
        m = int(mask.sum())
        assert rate_within(m / n, shares[g], n)
        assert rate_within(float(sim.truth[mask].mean()), prev[g], m)
        assert ests[g].value == design.estimate(sim.reports[mask]).value
        lam = 0.25 + 0.5 * prev[g]
        assert within(ests[g].value, prev[g], math.sqrt(lam * (1 - lam)) / 0.5, m)
    frame = sim.to_frame()
    assert list(frame.columns) == ["group", "report"]


def test_groups_given_per_respondent_and_a_mapping_without_groups() -> None:
    labels = np.repeat([2, 1, 3], 1000)
    sim = simulate(Warner(0.8), 3000, {1: 0.0, 2: 1.0, 3: 0.5}, groups=labels, seed=1)
    assert np.array_equal(sim.groups, labels)
    assert sim.truth[labels == 1].sum() == 0 and sim.truth[labels == 2].all()
    sim2 = simulate(Warner(0.8), 3000, 0.2, groups=list(labels), seed=1)  # one prevalence
    assert sim2.group_labels() == [1, 2, 3]
    sim3 = simulate(TwoCoin(), 4000, {"a": 0.0, "b": 1.0}, seed=2)  # equal shares
    assert sim3.group_labels() == ["a", "b"]
    assert rate_within(float(np.mean(sim3.groups == "a")), 0.5, 4000)


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"non_compliance": 1.5}, ParameterError, "`non_compliance` must be in [0, 1]"),
        ({"non_compliance": "a"}, ParameterTypeError, "`non_compliance` must be a real"),
        ({"groups": [1, 2]}, ParameterError, "one label per respondent (n = 10)"),
        ({"groups": "ab"}, ParameterTypeError, "`groups` must be a mapping"),
        ({"groups": {"a": 0.5, "b": 0.6}}, ParameterError, "`groups` shares must sum to 1"),
        ({"groups": {"a": 1.5}}, ParameterError, "`groups['a']` must be in [0, 1]"),
        ({"groups": {}}, ParameterError, "at least one group"),
        ({"groups": {"a": 0.5, 1: 0.5}}, ParameterTypeError, "all numbers or all text"),
    ],
)
def test_simulate_bad_options(kwargs: dict[str, Any], error: type, needle: str) -> None:
    with pytest.raises(error) as err:
        simulate(TwoCoin(), 10, 0.3, seed=1, **kwargs)
    assert needle in str(err.value)


def test_simulate_bad_prevalence_and_designs() -> None:
    with pytest.raises(ParameterError, match=r"every group .*missing 'b'"):
        simulate(TwoCoin(), 10, {"a": 0.3}, groups={"a": 0.5, "b": 0.5}, seed=1)
    with pytest.raises(ParameterError, match=r"`prevalence\['a'\]` must be in \[0, 1\]"):
        simulate(TwoCoin(), 10, {"a": 1.3}, seed=1)
    with pytest.raises(ParameterError, match=r"`prevalence` must be a probability vector"):
        simulate(Categorical(k=3, p_truthful=0.5), 10, [0.2, 0.3], seed=1, non_compliance=0.1)
    with pytest.raises(ParameterTypeError, match="`design` must be a deniable Design"):
        simulate("warner", 10, 0.3, seed=1)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="no groups"):
        simulate(TwoCoin(), 10, 0.3, seed=1).group_estimates()


# ------------------------------------------------------------------ simulation_study


def test_vectorized_exact_bounds_equal_the_estimate_intervals() -> None:
    for design in (TwoCoin(), Warner(0.3), Mangat(0.6)):
        n = 40
        y = np.array([0, 1, 7, 20, 39, 40, 7])
        lo, hi = exact_bounds(y, n, 0.9, design.p_yes_given_1, design.p_yes_given_0)
        for k, a, b in zip(y, lo, hi, strict=True):
            want = design.estimate(yes=int(k), n=n).ci(0.9, "exact")
            assert (a, b) == pytest.approx(want, abs=1e-14)
            assert (a, b) == pytest.approx(
                exact_ci(design.p_yes_given_1, design.p_yes_given_0, int(k), n, 0.9), abs=1e-12
            )


def test_seeded_and_reproducible() -> None:
    a = simulation_study(TwoCoin(), 100, 0.3, replications=500, seed=3)
    b = simulation_study(TwoCoin(), 100, 0.3, replications=500, seed=3)
    c = simulation_study(TwoCoin(), 100, 0.3, replications=500, seed=4)
    assert np.array_equal(a.estimates, b.estimates) and a == b
    assert not np.array_equal(a.estimates, c.estimates)
    fresh = simulation_study(TwoCoin(), 100, 0.3, replications=10)
    assert isinstance(fresh.seed, int)
    again = simulation_study(TwoCoin(), 100, 0.3, replications=10, seed=fresh.seed)
    assert np.array_equal(again.estimates, fresh.estimates)


@pytest.mark.parametrize(
    ("design", "n", "pi"),
    [(TwoCoin(), 300, 0.3), (Warner(0.3), 150, 0.6), (ForcedResponse(1 / 6, 1 / 6), 80, 0.05)],
    ids=["two-coin", "warner-0.3", "forced-small-n"],
)
def test_unbiased_and_coverage_match_exact_binomial_values(design: Any, n: int, pi: float) -> None:
    r = 20_000
    st = simulation_study(design, n, pi, replications=r, seed=2024, level=0.95)
    ex = exact_properties(design.p_yes_given_1, design.p_yes_given_0, n, pi)
    assert ex["mean"] == pytest.approx(pi, abs=1e-12)  # the moment estimator is unbiased
    assert st.expected_estimate == pytest.approx(pi, abs=1e-12) and st.expected_bias == 0
    assert st.true_se == pytest.approx(ex["sd"], rel=1e-12)
    assert within(st.bias, 0.0, ex["sd"], r)
    # sample SD: SE about sd / sqrt(2 r) (normal approximation; n large enough here)
    assert abs(st.empirical_se - ex["sd"]) <= K * ex["sd"] / math.sqrt(2 * r) * 1.5
    assert within(st.mean_se, ex["mean_se"], ex["sd_se"], r)
    assert st.rmse == pytest.approx(math.sqrt(st.bias**2 + st.empirical_se**2 * (r - 1) / r))
    # Clopper-Pearson never undercovers; the study estimates its exact coverage
    assert ex["coverage_exact"] >= 0.95
    assert rate_within(st.coverage_exact, ex["coverage_exact"], r)
    assert rate_within(st.coverage_wald, ex["coverage_wald"], r)


@pytest.mark.parametrize(
    "design", [ForcedResponse(0.2, 0.1), Warner(0.3)], ids=["forced", "warner-0.3"]
)
def test_non_compliance_bias_matches_the_closed_form(design: Any) -> None:
    n, pi, s, r = 400, 0.25, 0.1, 20_000
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0
    lam_c = p0 + pi * (p1 - p0)
    bias = -s * lam_c / (p1 - p0)
    st = simulation_study(design, n, pi, replications=r, seed=8, non_compliance=s)
    ex = exact_properties(p1, p0, n, pi, s=s)
    assert ex["mean"] - pi == pytest.approx(bias, abs=1e-12)
    assert st.expected_bias == pytest.approx(bias, abs=1e-12)
    assert within(st.bias, bias, ex["sd"], r)
    assert rate_within(st.coverage_exact, ex["coverage_exact"], r)
    assert ex["coverage_exact"] < 0.95  # the bias costs coverage


def test_rejection_rates_match_exact_power() -> None:
    design, n, pi, null, r = TwoCoin(), 400, 0.3, 0.2, 20_000
    st = simulation_study(design, n, pi, replications=r, seed=9, null=null, level=0.95)
    ex = exact_properties(0.75, 0.25, n, pi, null=null)
    assert st.rejection_exact is not None and st.rejection_wald is not None
    assert rate_within(st.rejection_exact, ex["reject_exact"], r)
    assert rate_within(st.rejection_wald, ex["reject_wald"], r)
    at_null = simulation_study(design, n, pi, replications=2000, seed=9, null=pi)
    assert at_null.rejection_exact == pytest.approx(1 - at_null.coverage_exact)
    assert at_null.rejection_wald == pytest.approx(1 - at_null.coverage_wald)


def test_respondent_level_simulation_agrees_with_the_binomial_shortcut() -> None:
    design, n, pi, s, r = Warner(0.75), 200, 0.4, 0.1, 400
    st = simulation_study(
        design, n, pi, replications=r, seed=1, non_compliance=s, method="respondents"
    )
    ex = exact_properties(0.75, 0.25, n, pi, s=s)
    assert st.method == "respondents"
    assert within(float(st.estimates.mean()), ex["mean"], ex["sd"], r)


def test_progress_is_reported_per_block() -> None:
    calls: list[tuple[int, int]] = []
    simulation_study(TwoCoin(), 50, 0.3, replications=20_000, seed=1, progress=lambda d, t:
                     calls.append((d, t)))  # fmt: skip
    assert calls[-1] == (20_000, 20_000) and len(calls) == math.ceil(20_000 / 8192)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_output_formats_state_infinite_epsilon() -> None:
    st = simulation_study(Mangat(0.6), 100, 0.3, replications=200, seed=1, null=0.2)
    assert isinstance(st, SimulationStudy)
    d = json.loads(json.dumps(st.to_dict(), allow_nan=False))
    assert d["epsilon"] == "inf" and d["null"] == 0.2 and d["replications"] == 200
    assert re.search(r"\nε\s+∞", str(st.table())) and "rejects" in str(st)


@pytest.mark.parametrize(
    ("design", "kwargs", "error", "needle"),
    [
        (TwoCoin(), {"replications": 1}, ParameterError, "`replications` must be an integer"),
        (TwoCoin(), {"replications": 10, "null": 1.5}, ParameterError, "`null` must be in"),
        (TwoCoin(), {"replications": 10, "method": "x"}, ParameterError, "`method` must be one"),
        (TwoCoin(), {"replications": 10, "seed": -1}, ParameterError, "`seed` must be"),
        (TwoCoin(), {"replications": 10, "non_compliance": -0.1}, ParameterError,
         "`non_compliance`"),
        (TwoCoin(), {"replications": 10, "level": 1}, ParameterError, "`level`"),
        (Categorical(k=3, p_truthful=0.5), {"replications": 10}, ParameterError,
         "design 'categorical' reports one of k = 3 categories"),
        (Kuk(0.7, 0.3, draws=2), {"replications": 10}, ParameterError,
         "design 'kuk' reports one of 3 values (a count of red cards)"),
        ("warner", {"replications": 10}, ParameterTypeError, "`design` must be"),
    ],
)  # fmt: skip
def test_study_bad_input(design: Any, kwargs: dict[str, Any], error: type, needle: str) -> None:
    with pytest.raises(error) as err:
        simulation_study(design, 100, 0.3, **kwargs)
    assert needle in str(err.value)


# ------------------------------------------------------------------ CLI


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


BASE = ["simulation-study", "forced", "-p", "forced_yes=1/6", "-p", "forced_no=1/6",
        "--n", "300", "--prevalence", "0.2", "--replications", "3000", "--seed", "5"]  # fmt: skip


def test_cli_json_equals_the_library(runner: CliRunner) -> None:
    result = runner.invoke(app, [*BASE, "--non-compliance", "1/10", "--null", "0.1", "--json"])
    assert result.exit_code == 0 and result.stderr == "", result.output
    got = json.loads(result.stdout)
    st = simulation_study(ForcedResponse(1 / 6, 1 / 6), 300, 0.2, replications=3000, seed=5,
                          non_compliance=0.1, null=0.1)  # fmt: skip
    assert got == json.loads(json.dumps(st.to_dict()))
    assert got["expected_bias"] == pytest.approx(-0.1 * (1 / 6 + 0.2 * 2 / 3) / (2 / 3))


def test_cli_table(runner: CliRunner) -> None:
    result = runner.invoke(app, BASE)
    assert result.exit_code == 0, result.output
    for needle in ("Simulation study", "bias", "coverage of 95% exact CI", "RMSE", "1.6094"):
        assert needle in result.stdout
    inf = runner.invoke(app, ["simulation-study", "mangat", "-p", "p=0.5", "--n", "50",
                              "--prevalence", "0.3", "-r", "100", "--seed", "1"])  # fmt: skip
    assert inf.exit_code == 0 and "∞" in inf.stdout and "inf" not in inf.stdout


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["simulation-study", "two-coin", "--prevalence", "0.2"], ("`--n`",)),
        (["simulation-study", "two-coin", "--n", "10"], ("`--prevalence`",)),
        ([*BASE, "--non-compliance", "2"], ("`non_compliance` must be in [0, 1]",)),
        ([*BASE, "--non-compliance", "x"], ("`--non-compliance` must be a number",)),
        ([*BASE[:-4], "--replications", "1"], ("`replications`",)),
        ([*BASE, "--method", "fast"], ("`method` must be one of",)),
        (["simulation-study", "categorical", "-p", "k=3", "-p", "p_truthful=0.5", "--n", "10",
          "--prevalence", "0.2"], ("one yes/no report per respondent and the two-group designs",
                                   "'categorical' reports one of k = 3 categories")),
        (["simulation-study", "warner", "--n", "10", "--prevalence", "0.2"], ("needs parameter",)),
    ],
)  # fmt: skip
def test_cli_one_line_errors(runner: CliRunner, args: list[str], needles: tuple[str, ...]) -> None:
    one_error(runner.invoke(app, args), *needles)


# ------------------------------------------------------------------ progress bar


def _run_with_terminal_stderr(args: list[str]) -> tuple[int, str, str]:
    """Run the CLI in a subprocess whose stderr is a pseudo-terminal (``pty``), as in a shell;
    return ``(exit status, stdout, everything written to the terminal)``."""
    import os
    import pty
    import subprocess
    import sys
    import threading

    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="100", LINES="50", TERM="xterm-256color")
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)  # rich decides by isatty() alone
    proc = subprocess.Popen(
        [sys.executable, "-m", "deniable.cli", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env,
    )  # fmt: skip
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:  # read while the child runs: a full terminal buffer would block it
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: every writer has closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    out, _ = proc.communicate(timeout=120)
    reader.join(timeout=30)
    os.close(master)
    return proc.returncode, out.decode(), b"".join(chunks).decode(errors="replace")


STUDY = ["simulation-study", "two-coin", "--n", "200", "--prevalence", "0.3",
         "--replications", "30000", "--seed", "1"]  # fmt: skip


@pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="needs a pseudo-terminal")
def test_progress_bar_on_a_terminal_and_never_with_json() -> None:
    code, out, term = _run_with_terminal_stderr(STUDY)
    assert code == 0, term
    # the bar (label, count) went to the terminal on stderr; the summary to stdout
    assert "simulating" in term and "30000/30000" in term, term
    assert "Simulation study" in out and "simulating" not in out
    code, out, term = _run_with_terminal_stderr([*STUDY, "--json"])
    assert code == 0 and term == "", term  # --json: nothing at all on the terminal
    assert json.loads(out)["replications"] == 30_000


def test_no_progress_bar_when_stderr_is_not_a_terminal() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "deniable.cli", *STUDY],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "" and "Simulation study" in done.stdout


def test_simulations_compare_by_identity_instead_of_raising() -> None:
    # numpy array fields made the generated __eq__ raise "truth value ... is ambiguous"
    from deniable import TwoCoin, simulate

    a = simulate(TwoCoin(), 100, 0.3, seed=1)
    b = simulate(TwoCoin(), 100, 0.3, seed=1)
    assert a == a
    assert (a == b) is False
    assert len({a, b}) == 2
