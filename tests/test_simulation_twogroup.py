"""Simulation for every design: two-group designs in ``simulate`` and ``simulation_study``,
non-compliance and groups for categorical and Kuk designs, and the CLI.

Closed forms (from the papers, not from deniable), with prevalence pi, latent share x, share s
of respondents who always say "no", ``V_g = lambda_g (1 - lambda_g) / n_g``:

* unrelated question, unknown prevalence (Greenberg et al. 1969):
  ``lambda_g = (1 - s)(p_g pi + (1 - p_g) x)``;
  ``pi_hat = ((1 - p2) l1 - (1 - p1) l2) / (p1 - p2)``, so ``E[pi_hat] = (1 - s) pi`` and
  ``Var = ((1 - p2)^2 V1 + (1 - p1)^2 V2) / (p1 - p2)^2``.
* cheater detection (Clark & Desharnais 1998), cheaters (share x) independent of the truth:
  honest carriers ``pi_h = pi (1 - x)``, honest non-carriers ``beta = (1 - pi)(1 - x)``,
  ``lambda_g = pi_h + fy_g beta``; ``beta_hat = (l2 - l1) / (fy2 - fy1)``,
  ``pi_hat = l1 - fy1 beta_hat``.  Symmetric (Ostapczuk et al. 2009):
  ``lambda_g = pi_h (1 - fn_g) + beta fy_g``.
* stochastic lie detector (Moshagen et al. 2012): ``lambda_g = (1 - s)(pi t + (1 - pi)(1 -
  p_g))``; ``pi_hat = 1 - (l2 - l1) / (p1 - p2)``, ``t_hat = (l1 - (1 - pi_hat)(1 - p1)) /
  pi_hat``.  Hence with non-compliance ``E[pi_hat] = pi + s (1 - pi)``: always-"no"
  respondents answer alike in both groups, as carriers do, so the SLD counts them as lying
  carriers and *over*estimates the prevalence; ``t_hat -> (1 - s) pi t / (pi + s (1 - pi))``;
  ``Var(pi_hat) = (V1 + V2) / (p1 - p2)^2``.

Statistical checks use 4.5-sigma bands: two-sided false alarm about 7e-6 per check, under
3e-4 for the ~40 checks in this file.
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

from _cli import ENV, one_error, run_json
from deniable import (
    Categorical,
    Kuk,
    ParameterError,
    TwoCoin,
    Warner,
)
from deniable.cli import app
from deniable.designs import (
    CheaterDetection,
    StochasticLieDetector,
    SymmetricCheaterDetection,
    UnrelatedUnknown,
)
from deniable.simulation import ParameterStudy, TwoGroupSimulationStudy, simulate, simulation_study

K = 4.5  # sigma band of every statistical check

SLD = StochasticLieDetector(2 / 12, 10 / 12)
CDM = CheaterDetection(0.2, 0.6)
CDMS = SymmetricCheaterDetection(0.1, 0.1, 0.3, 0.1)
UQT = UnrelatedUnknown(0.7, 0.3)


def lambdas(design: Any, pi: float, x: float, s: float = 0.0) -> tuple[float, float]:
    """P(yes) per group from the papers' models (module docstring)."""
    if isinstance(design, UnrelatedUnknown):
        out = [p * pi + (1 - p) * x for p in (design.p1, design.p2)]
    elif isinstance(design, CheaterDetection):
        ph, beta = pi * (1 - x), (1 - pi) * (1 - x)
        out = [ph + fy * beta for fy in (design.forced_yes1, design.forced_yes2)]
    elif isinstance(design, SymmetricCheaterDetection):
        ph, beta = pi * (1 - x), (1 - pi) * (1 - x)
        out = [ph * (1 - design.forced_no1) + beta * design.forced_yes1,
               ph * (1 - design.forced_no2) + beta * design.forced_yes2]  # fmt: skip
    else:
        out = [pi * x + (1 - pi) * (1 - p) for p in (design.p1, design.p2)]
    return (1 - s) * out[0], (1 - s) * out[1]


def estimates(design: Any, l1: Any, l2: Any) -> dict[str, Any]:
    """The papers' moment estimators (vectorized over l1, l2)."""
    if isinstance(design, UnrelatedUnknown):
        p1, p2 = design.p1, design.p2
        pi = ((1 - p2) * l1 - (1 - p1) * l2) / (p1 - p2)
        return {"prevalence": pi, "unrelated_prevalence": (p2 * l1 - p1 * l2) / (p2 - p1)}
    if isinstance(design, CheaterDetection):
        f1, f2 = design.forced_yes1, design.forced_yes2
        beta = (l2 - l1) / (f2 - f1)
        pi = l1 - f1 * beta
        return {"prevalence": pi, "beta": beta, "cheating": 1 - pi - beta}
    if isinstance(design, SymmetricCheaterDetection):
        a1, b1 = 1 - design.forced_no1, design.forced_yes1
        a2, b2 = 1 - design.forced_no2, design.forced_yes2
        det = a1 * b2 - a2 * b1
        pi = (b2 * l1 - b1 * l2) / det
        beta = (a1 * l2 - a2 * l1) / det
        return {"prevalence": pi, "beta": beta, "cheating": 1 - pi - beta}
    p1, p2 = design.p1, design.p2
    pi = 1 - (l2 - l1) / (p1 - p2)
    return {"prevalence": pi, "honesty": (l1 - (1 - pi) * (1 - p1)) / pi}


def prevalence_sd(design: Any, lam: tuple[float, float], n: tuple[int, int]) -> float:
    """Exact SD of the (linear) prevalence estimate: sum of c_g^2 V_g."""
    v1, v2 = (lam[g] * (1 - lam[g]) / n[g] for g in (0, 1))
    if isinstance(design, UnrelatedUnknown):
        p1, p2 = design.p1, design.p2
        return math.sqrt((1 - p2) ** 2 * v1 + (1 - p1) ** 2 * v2) / abs(p1 - p2)
    if isinstance(design, CheaterDetection):
        f1, f2 = design.forced_yes1, design.forced_yes2
        return math.sqrt(f2**2 * v1 + f1**2 * v2) / abs(f2 - f1)
    if isinstance(design, SymmetricCheaterDetection):
        a1, b1 = 1 - design.forced_no1, design.forced_yes1
        a2, b2 = 1 - design.forced_no2, design.forced_yes2
        return math.sqrt(b2**2 * v1 + b1**2 * v2) / abs(a1 * b2 - a2 * b1)
    return math.sqrt(v1 + v2) / abs(design.p1 - design.p2)


CASES = [
    (UQT, {"unrelated_prevalence": 0.4}, 0.4),
    (CDM, {"cheating": 0.2}, 0.2),
    (CDMS, {"cheating": 0.1}, 0.1),
    (SLD, {"honesty": 0.8}, 0.8),
]
IDS = ["unrelated-unknown", "cdm", "cdm-symmetric", "sld"]


def targets(design: Any, pi: float, x: float) -> dict[str, float]:
    if isinstance(design, UnrelatedUnknown):
        return {"prevalence": pi, "unrelated_prevalence": x}
    if isinstance(design, CheaterDetection | SymmetricCheaterDetection):
        return {"prevalence": pi * (1 - x), "beta": (1 - pi) * (1 - x), "cheating": x}
    return {"prevalence": pi, "honesty": x}


# ------------------------------------------------------------------ simulate


@pytest.mark.parametrize(("design", "kw", "x"), CASES, ids=IDS)
def test_simulate_recovers_the_parameters(design: Any, kw: dict[str, float], x: float) -> None:
    n, pi = 40_000, 0.3
    sim = simulate(design, n, pi, seed=2024, **kw)
    assert sim.group is not None and sim.estimate.parameters == design.estimated
    n1 = int(np.sum(sim.group == 1))
    assert n1 == n // 2 and set(np.unique(sim.group)) == {1, 2}
    assert sim.settings == {"group_share": 0.5, **kw}
    (keyword,) = sim.latent
    latent = sim.latent[keyword]
    # the realised population, computed here from truth and the latent indicator
    t = sim.truth.astype(bool)
    want_realized = {
        UnrelatedUnknown: {"prevalence": t.mean(), "unrelated_prevalence": latent.mean()},
        CheaterDetection: {"prevalence": (t & (latent == 0)).mean(),
                           "beta": (~t & (latent == 0)).mean(), "cheating": latent.mean()},
        StochasticLieDetector: {"prevalence": t.mean(), "honesty": latent[t].mean()},
    }  # fmt: skip
    want_realized[SymmetricCheaterDetection] = want_realized[CheaterDetection]
    realized = sim.true_parameters()
    assert realized == pytest.approx(want_realized[type(design)], abs=1e-12)
    # the estimate is the papers' estimator on the two groups' shares of "yes"
    l1, l2 = (float(sim.reports[sim.group == g].mean()) for g in (1, 2))
    for name, value in estimates(design, l1, l2).items():
        assert sim.estimate[name].value == pytest.approx(value, abs=1e-10)
    # and it recovers the population (4.5 SE: false alarm ~7e-6 per parameter)
    for name, truth in targets(design, pi, x).items():
        e = sim.estimate[name]
        assert abs(e.value - truth) <= K * e.se, (name, e.value, truth)
    # population value vs the realised one: binomial noise only
    assert abs(realized["prevalence"] - targets(design, pi, x)["prevalence"]) < K * 0.5 / 200
    assert (
        sim.estimate.prevalence.value
        == design.estimate(design.encode(sim.reports, sim.group))["prevalence"].value
    )


def test_sld_reports_follow_the_respondent_types() -> None:
    sim = simulate(SLD, 5000, 0.4, honesty=0.7, seed=3)
    h, t, r, g = sim.latent["honest"], sim.truth, sim.reports, sim.group
    assert g is not None
    assert np.all(r[(t == 1) & (h == 1)] == 1)  # honest carriers always say yes
    assert np.all(r[(t == 1) & (h == 0)] == 0)  # lying carriers always say no
    non = t == 0
    for grp, p in ((1, SLD.p1), (2, SLD.p2)):
        m = non & (g == grp)
        share_no = float(np.mean(r[m] == 0))  # non-carriers say no with probability p_g
        assert abs(share_no - p) <= K * math.sqrt(p * (1 - p) / m.sum())
    frame = sim.to_frame(truth=True)
    assert list(frame.columns) == ["rr_group", "report", "truth", "complied", "honest"]


def test_unrelated_question_types() -> None:
    sim = simulate(UQT, 4000, 0.3, unrelated_prevalence=0.6, seed=5)
    u, t, r = sim.latent["unrelated"], sim.truth, sim.reports
    assert np.all(r[(t == 1) & (u == 1)] == 1) and np.all(r[(t == 0) & (u == 0)] == 0)


def test_cdm_cheaters_are_the_non_compliers() -> None:
    a = simulate(CDM, 6000, 0.3, cheating=0.25, seed=9)
    b = simulate(CDM, 6000, 0.3, non_compliance=0.25, seed=9)
    for x, y in ((a.truth, b.truth), (a.reports, b.reports), (a.group, b.group)):
        assert np.array_equal(x, y)
    cheater = a.latent["cheater"]
    assert np.all(a.reports[cheater == 1] == 0)
    assert a.complied is not None and np.array_equal(a.complied, cheater == 0)
    assert b.non_compliance == 0.25 and b.settings["cheating"] == 0.25
    honest_carrier = (a.truth == 1) & (cheater == 0)
    assert np.all(a.reports[honest_carrier] == 1)  # forced "yes" only: carriers say yes
    assert simulate(CDM, 100, 0.3, seed=1).complied is None  # nobody cheats by default


def test_non_compliance_in_sld_and_unrelated_unknown_zeroes_reports() -> None:
    honest = simulate(SLD, 8000, 0.3, honesty=0.9, seed=4)
    sim = simulate(SLD, 8000, 0.3, honesty=0.9, seed=4, non_compliance=0.2)
    assert sim.complied is not None
    assert np.array_equal(sim.truth, honest.truth) and np.array_equal(sim.group, honest.group)
    assert np.all(sim.reports[~sim.complied] == 0)
    assert np.array_equal(sim.reports[sim.complied], honest.reports[sim.complied])


def test_group_share_and_population_groups() -> None:
    sim = simulate(SLD, 1001, 0.3, group_share=0.3, seed=1)
    assert sim.group is not None and int(np.sum(sim.group == 1)) == 300  # floor(300.3 + 1/2)
    sim = simulate(UQT, 30_000, {"a": 0.1, "b": 0.5}, unrelated_prevalence=0.5, seed=2)
    ests = sim.group_estimates()
    assert sim.groups is not None and sim.group is not None and set(ests) == {"a", "b"}
    for label, pi in (("a", 0.1), ("b", 0.5)):
        mask = sim.groups == label
        direct = UQT.estimate(UQT.encode(sim.reports[mask], sim.group[mask]))
        assert ests[label].prevalence.value == direct.prevalence.value
        assert abs(direct.prevalence.value - pi) <= K * direct.prevalence.se
    assert list(sim.to_frame().columns) == ["group", "rr_group", "report"]


@pytest.mark.parametrize(
    ("design", "kwargs", "error", "needle"),
    [
        (Warner(0.7), {"honesty": 0.8}, ParameterError,
         "`honesty` applies to the two-group designs only"),
        (TwoCoin(), {"group_share": 0.5}, ParameterError, "design 'two-coin' has one group"),
        (SLD, {"cheating": 0.1}, ParameterError,
         "`cheating` does not apply to design 'sld': its latent quantity is `honesty`"),
        (CDM, {"honesty": 0.9}, ParameterError, "its latent quantity is `cheating`"),
        (UQT, {}, ParameterError, "design 'unrelated-unknown' needs `unrelated_prevalence`"),
        (SLD, {"honesty": 1.2}, ParameterError, "`honesty` must be in [0, 1], got 1.2"),
        (CDM, {"cheating": -0.1}, ParameterError, "`cheating` must be in [0, 1]"),
        (SLD, {"group_share": 1.0}, ParameterError, "`group_share` must be in (0, 1), got 1.0"),
        (SLD, {"group_share": 0.01}, ParameterError,
         "must leave at least one respondent in each group, got n1 = floor(0.01 * 20 + 1/2) = 0"),
        (CDM, {"cheating": 0.1, "non_compliance": 0.1}, ParameterError,
         "`non_compliance` and `cheating` are the same thing"),
        (SLD, {"honesty": "x"}, TypeError, "`honesty` must be a real number"),
    ],
)  # fmt: skip
def test_simulate_bad_two_group_options(
    design: Any, kwargs: dict[str, Any], error: type, needle: str
) -> None:
    with pytest.raises(error) as err:
        simulate(design, 20, 0.3, seed=1, **kwargs)
    assert needle in str(err.value)


def test_true_parameters_is_for_two_group_designs() -> None:
    with pytest.raises(ParameterError, match="`true_parameters` is for two-group designs"):
        simulate(TwoCoin(), 10, 0.3, seed=1).true_parameters()


def test_one_respondent_cannot_fill_two_groups() -> None:
    with pytest.raises(ParameterError, match="n1 = floor"):
        simulate(SLD, 1, 0.3, seed=1)


# ------------------------------------------------------------------ categorical and Kuk


def test_kuk_non_compliers_report_no_red_card() -> None:
    design, n, pi, s = Kuk(0.7, 0.3, draws=3), 60_000, 0.4, 0.2
    sim = simulate(design, n, pi, seed=8, non_compliance=s)
    assert sim.complied is not None and np.all(sim.reports[~sim.complied] == 0)
    # E[R] / k = (1 - s)(theta2 + pi (theta1 - theta2)); R of a complier is a binomial mix
    lam = 0.3 + pi * 0.4
    mean_share = (1 - s) * lam
    r = sim.reports / 3
    assert abs(float(r.mean()) - mean_share) <= K * float(r.std()) / math.sqrt(n)
    est = sim.estimate
    assert abs(est.value - (mean_share - 0.3) / 0.4) <= K * est.se


def test_categorical_non_compliers_report_category_zero() -> None:
    design, n, s = Categorical(k=3, p_truthful=0.6), 60_000, 0.1
    probs = np.array([0.2, 0.3, 0.5])
    sim = simulate(design, n, probs, seed=4, non_compliance=s)
    assert sim.complied is not None and np.all(sim.reports[~sim.complied] == 0)
    # report shares: (1 - s) (truth * probs + (1 - truth) / k) + s e_0
    want = (1 - s) * (0.6 * probs + 0.4 / 3) + s * np.array([1.0, 0.0, 0.0])
    got = np.bincount(sim.reports, minlength=3) / n
    assert np.all(np.abs(got - want) <= K * np.sqrt(want * (1 - want) / n))


def test_categorical_groups_with_their_own_distribution() -> None:
    design, n = Categorical(k=3, p_truthful=0.8), 50_000
    prev = {"x": [1.0, 0.0, 0.0], "y": [0.1, 0.2, 0.7]}
    sim = simulate(design, n, prev, groups={"x": 0.4, "y": 0.6}, seed=6)
    assert sim.groups is not None and sim.group_labels() == ["x", "y"]
    assert np.all(sim.truth[sim.groups == "x"] == 0)
    y = sim.truth[sim.groups == "y"]
    share = np.bincount(y, minlength=3) / y.size
    want = np.array(prev["y"])
    assert np.all(np.abs(share - want) <= K * np.sqrt(want * (1 - want) / y.size))
    ests = sim.group_estimates()
    assert np.allclose(ests["y"].values, design.estimate(sim.reports[sim.groups == "y"]).values)
    same = simulate(design, 20, [0.2, 0.3, 0.5], groups=[1, 2] * 10, seed=1)  # one vector
    assert same.group_labels() == [1, 2]


def test_categorical_plain_draw_is_unchanged() -> None:
    gen = np.random.Generator(np.random.PCG64(12))
    truth = gen.choice(3, size=500, p=[0.2, 0.3, 0.5])
    assert np.array_equal(simulate(Categorical(k=3, p_truthful=0.5), 500, [0.2, 0.3, 0.5],
                                   seed=12).truth, truth)  # fmt: skip


def test_categorical_bad_group_prevalence() -> None:
    with pytest.raises(ParameterError, match=r"`prevalence\['b'\]` must be a probability vector"):
        simulate(Categorical(k=3, p_truthful=0.5), 10, {"a": [1, 0, 0], "b": [0.5, 0.6, 0]}, seed=1)
    with pytest.raises(ParameterError, match="missing 'b'"):
        simulate(
            Categorical(k=3, p_truthful=0.5), 10, {"a": [1, 0, 0]}, groups={"a": 0.5, "b": 0.5}
        )


# ------------------------------------------------------------------ simulation_study


@pytest.mark.parametrize(("design", "kw", "x"), CASES, ids=IDS)
def test_study_against_closed_forms(design: Any, kw: dict[str, float], x: float) -> None:
    n, pi, r = 1000, 0.3, 20_000
    st = simulation_study(design, n, pi, replications=r, seed=77, **kw)
    assert isinstance(st, TwoGroupSimulationStudy) and st.group_sizes == (500, 500)
    lam = lambdas(design, pi, x)
    assert st.yes_probabilities == pytest.approx(lam, abs=1e-12)
    want = targets(design, pi, x)
    limit = estimates(design, *lam)
    sd = prevalence_sd(design, lam, (500, 500))
    for name, p in st.parameters.items():
        assert isinstance(p, ParameterStudy) and p.undefined == 0
        assert p.truth == pytest.approx(want[name], abs=1e-12)
        assert p.expected == pytest.approx(limit[name], abs=1e-12)
        assert p.expected == pytest.approx(want[name], abs=1e-12)  # no non-compliance
    prev = st["prevalence"]
    assert prev.expected_exact and prev.true_se == pytest.approx(sd, rel=1e-12)
    assert within(prev.bias, 0.0, sd, r)  # linear in the group shares: exactly unbiased
    assert abs(prev.empirical_se - sd) <= K * sd / math.sqrt(2 * r) * 1.5
    assert abs(prev.coverage_wald - 0.95) < 0.01  # n = 500 per group: Wald near nominal
    est = st.estimates[:, 0]
    assert float(est.mean() - pi * (1 - x if "cheating" in kw else 1)) == pytest.approx(prev.bias)


def within(observed: float, expected: float, sd: float, replications: int) -> bool:
    return abs(observed - expected) <= K * sd / math.sqrt(replications)


def test_study_coverage_equals_the_exact_wald_coverage() -> None:
    """Small groups, where Wald undercovers: the exact coverage of the SLD prevalence interval
    is a double sum over (y1, y2) of the two binomial pmfs."""
    n1 = n2 = 60
    pi, t, r = 0.3, 0.8, 20_000
    l1, l2 = lambdas(SLD, pi, t)
    y1, y2 = np.meshgrid(np.arange(n1 + 1), np.arange(n2 + 1), indexing="ij")
    a, b = y1 / n1, y2 / n2
    est = 1 - (b - a) / (SLD.p1 - SLD.p2)
    se = np.sqrt(a * (1 - a) / n1 + b * (1 - b) / n2) / abs(SLD.p1 - SLD.p2)
    weight = np.outer(stats.binom.pmf(np.arange(n1 + 1), n1, l1),
                      stats.binom.pmf(np.arange(n2 + 1), n2, l2))  # fmt: skip
    z = stats.norm.ppf(0.975)
    exact = float(np.sum(weight * (np.abs(est - pi) <= z * se)))
    rejects = float(np.sum(weight * (np.abs(est - 0.2) > z * se)))
    st = simulation_study(SLD, 120, pi, honesty=t, replications=r, seed=5, null=0.2)
    assert isinstance(st, TwoGroupSimulationStudy)
    cov = st["prevalence"].coverage_wald
    assert abs(cov - exact) <= K * math.sqrt(exact * (1 - exact) / r), (cov, exact)
    assert st.rejection_wald is not None
    assert abs(st.rejection_wald - rejects) <= K * math.sqrt(rejects * (1 - rejects) / r)
    mean_se = float(np.sum(weight * se))
    sd_se = math.sqrt(float(np.sum(weight * se**2)) - mean_se**2)
    assert within(st["prevalence"].mean_se, mean_se, sd_se, r)


def test_study_non_compliance_bias_in_closed_form() -> None:
    pi, t, s, r = 0.3, 0.8, 0.1, 20_000
    st = simulation_study(SLD, 2000, pi, honesty=t, non_compliance=s, replications=r, seed=3)
    assert isinstance(st, TwoGroupSimulationStudy)
    lam = lambdas(SLD, pi, t, s)
    assert st["prevalence"].expected == pytest.approx(pi + s * (1 - pi), abs=1e-12)
    assert st["honesty"].expected == pytest.approx(
        (1 - s) * pi * t / (pi + s * (1 - pi)), abs=1e-12
    )
    assert not st["honesty"].expected_exact
    sd = prevalence_sd(SLD, lam, (1000, 1000))
    assert within(st["prevalence"].bias, s * (1 - pi), sd, r)  # the SLD overestimates
    uqt = simulation_study(UQT, 2000, pi, unrelated_prevalence=0.5, non_compliance=s,
                           replications=r, seed=3)  # fmt: skip
    assert isinstance(uqt, TwoGroupSimulationStudy)
    assert uqt["prevalence"].expected_bias == pytest.approx(-s * pi, abs=1e-12)
    sd = prevalence_sd(UQT, lambdas(UQT, pi, 0.5, s), (1000, 1000))
    assert within(uqt["prevalence"].bias, -s * pi, sd, r)


def test_respondent_level_study_agrees_with_binomial_draws() -> None:
    pi, x, r = 0.3, 0.2, 300
    st = simulation_study(CDM, 400, pi, cheating=x, replications=r, seed=1,
                          method="respondents")  # fmt: skip
    assert isinstance(st, TwoGroupSimulationStudy) and st.method == "respondents"
    lam = lambdas(CDM, pi, x)
    sd = prevalence_sd(CDM, lam, (200, 200))
    assert within(float(st.estimates[:, 0].mean()), pi * (1 - x), sd, r)


def test_study_is_seeded_and_reports_progress() -> None:
    calls: list[tuple[int, int]] = []
    a = simulation_study(SLD, 500, 0.3, replications=10_000, seed=2,
                         progress=lambda d, t: calls.append((d, t)))  # fmt: skip
    b = simulation_study(SLD, 500, 0.3, replications=10_000, seed=2)
    assert np.array_equal(a.estimates, b.estimates) and a == b
    assert calls == [(8192, 10_000), (10_000, 10_000)]


def test_study_counts_undefined_honesty() -> None:
    # prevalence 0 with 30 respondents per group: pi_hat = 0 when y1 - y2 = 30 (p2 - p1) = 20,
    # the most likely difference (t_hat is then undefined)
    st = simulation_study(SLD, 60, 0.0, replications=2000, seed=1)
    assert isinstance(st, TwoGroupSimulationStudy)
    h = st["honesty"]
    assert h.undefined > 0 and h.defined + h.undefined == 2000
    assert np.isnan(st.estimates[:, 1]).sum() == h.undefined
    assert "undefined" in json.dumps(st.to_dict(), allow_nan=False)


def test_study_outputs_state_infinite_epsilon() -> None:
    st = simulation_study(CDMS, 500, 0.3, replications=200, seed=1, cheating=0.1, null=0.2)
    assert isinstance(st, TwoGroupSimulationStudy)
    d = json.loads(json.dumps(st.to_dict(), allow_nan=False))
    assert d["epsilon"] == "inf" and d["cheating"] == 0.1 and d["group_sizes"] == [250, 250]
    assert set(d["estimates"]) == {"prevalence", "beta", "cheating"}
    assert d["estimates"]["prevalence"]["truth"] == pytest.approx(0.27)
    text = str(st.table())
    assert re.search(r"\nε\s+∞", text) and "beta" in text and "rejects" in text
    assert "inf" not in text.replace("information", "")


@pytest.mark.parametrize(
    ("design", "kwargs", "error", "needle"),
    [
        (UQT, {}, ParameterError, "needs `unrelated_prevalence`"),
        (SLD, {"cheating": 0.2}, ParameterError, "does not apply to design 'sld'"),
        (TwoCoin(), {"honesty": 0.9}, ParameterError, "applies to the two-group designs only"),
        (SLD, {"group_share": 0.0}, ParameterError, "`group_share` must be in (0, 1)"),
        (SLD, {"prevalence": 1.5}, ParameterError, "`prevalence` must be in [0, 1]"),
        (Categorical(k=3, p_truthful=0.5), {}, ParameterError,
         "design 'categorical' reports one of k = 3 categories"),
        (Kuk(0.7, 0.3, draws=2), {}, ParameterError, "design 'kuk' reports one of 3 values"),
    ],
)  # fmt: skip
def test_study_bad_input(design: Any, kwargs: dict[str, Any], error: type, needle: str) -> None:
    args = {"prevalence": 0.3, **kwargs}
    with pytest.raises(error) as err:
        simulation_study(design, 100, replications=10, seed=1, **args)
    assert needle in str(err.value)


def test_study_with_honesty_undefined_everywhere() -> None:
    # p1 = 0, p2 = 1 and no carriers: lambda = (1, 0) exactly, so pi_hat = 0 every time
    with pytest.raises(ParameterError, match="`honesty` is undefined in 10 of 10"):
        simulation_study(StochasticLieDetector(0, 1), 20, 0.0, replications=10, seed=1)


def test_study_group_of_one_is_an_error() -> None:
    with pytest.raises(ParameterError, match="each group"):
        simulation_study(SLD, 1, 0.3, replications=10, seed=1)


# ------------------------------------------------------------------ CLI


SLD_ARGS = ["-p", "p1=2/12", "-p", "p2=10/12", "--n", "2000", "--prevalence", "0.3",
            "--seed", "1"]  # fmt: skip


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def test_cli_simulate_sld(runner: CliRunner) -> None:
    out = run_json(runner, "simulate", "sld", *SLD_ARGS, "--honesty", "0.8")
    sim = simulate(SLD, 2000, 0.3, seed=1, honesty=0.8)
    assert out["yes"] == list(sim.estimate.yes_counts) and out["n"] == [1000, 1000]
    assert out["honesty"] == 0.8 and out["group_share"] == 0.5 and out["seed"] == 1
    assert out["prevalence"] == 0.3 and out["non_compliance"] == 0
    assert out["epsilon"] == "inf" and out["true_parameters"] == sim.true_parameters()
    l1, l2 = (y / n for y, n in zip(out["yes"], out["n"], strict=True))
    for name, value in estimates(SLD, l1, l2).items():
        assert out["estimates"][name]["estimate"] == pytest.approx(value, abs=1e-12)
        lo, hi = out["estimates"][name]["ci_wald"]
        assert out["covers_wald"][name] == (lo <= out["true_parameters"][name] <= hi)
    human = runner.invoke(app, ["simulate", "sld", *SLD_ARGS, "--honesty", "0.8"])
    assert human.exit_code == 0, human.output
    for needle in ("honesty", "true value", "simulation only", "∞", "1000 + 1000"):
        assert needle in human.stdout
    assert "inf" not in human.stdout


def test_cli_simulate_other_two_group_designs(runner: CliRunner) -> None:
    out = run_json(runner, "simulate", "cdm", "-p", "forced_yes1=0.2", "-p", "forced_yes2=0.6",
                   "--n", "3000", "--prevalence", "0.3", "--seed", "2", "--non-compliance",
                   "0.1", "--group-share", "0.4")  # fmt: skip
    assert out["n"] == [1200, 1800] and out["cheating"] == 0.1 and out["non_compliance"] == 0.1
    out = run_json(runner, "simulate", "unrelated-unknown", "-p", "p1=0.7", "-p", "p2=0.3",
                   "--n", "100", "--prevalence", "0.3",
                   "--unrelated-prevalence", "1/2")  # fmt: skip
    assert out["unrelated_prevalence"] == 0.5


def test_cli_simulate_kuk_with_non_compliance(runner: CliRunner) -> None:
    out = run_json(runner, "simulate", "kuk", "-p", "theta1=0.7", "-p", "theta2=0.3", "-p",
                   "draws=3", "--n", "500", "--prevalence", "0.3", "--seed", "3",
                   "--non-compliance", "0.2")  # fmt: skip
    assert out["non_compliance"] == 0.2 and len(out["counts"]) == 4


def test_cli_simulation_study_sld(runner: CliRunner) -> None:
    args = ["simulation-study", "sld", *SLD_ARGS, "--honesty", "0.8", "-r", "3000"]
    out = run_json(runner, *args)
    st = simulation_study(SLD, 2000, 0.3, honesty=0.8, replications=3000, seed=1)
    assert out == json.loads(json.dumps(st.to_dict()))
    assert out["estimates"]["prevalence"]["expected_estimate"] == pytest.approx(0.3)
    human = runner.invoke(app, args)
    assert human.exit_code == 0, human.output
    for needle in ("Simulation study (two groups)", "honesty", "prevalence", "Wald coverage",
                   "1000 + 1000", "∞"):  # fmt: skip
        assert needle in human.stdout
    assert "inf" not in human.stdout


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["simulate", "sld", *SLD_ARGS, "--cheating", "0.1"],
         ("`cheating` does not apply to design 'sld'",)),
        (["simulate", "warner", "-p", "p=0.7", "--n", "10", "--prevalence", "0.3",
          "--honesty", "0.9"], ("applies to the two-group designs only",)),
        (["simulate", "sld", *SLD_ARGS, "--group-share", "1"], ("`group_share` must be in",)),
        (["simulate", "sld", *SLD_ARGS, "--honesty", "x"], ("`--honesty` must be a number",)),
        (["simulate", "unrelated-unknown", "-p", "p1=0.7", "-p", "p2=0.3", "--n", "10",
          "--prevalence", "0.3"], ("needs `unrelated_prevalence`",)),
        (["simulation-study", "cdm", "-p", "forced_yes1=0.2", "-p", "forced_yes2=0.6",
          "--n", "100", "--prevalence", "0.3", "--cheating", "0.1", "--non-compliance", "0.1"],
         ("the same thing",)),
        (["simulation-study", "kuk", "-p", "theta1=0.7", "-p", "theta2=0.3", "-p", "draws=2",
          "--n", "100", "--prevalence", "0.3"], ("design 'kuk' reports one of 3 values",)),
    ],
)  # fmt: skip
def test_cli_two_group_errors(runner: CliRunner, args: list[str], needles: tuple[str, ...]) -> None:
    one_error(runner.invoke(app, args), *needles)
