"""Empirical audits (every registered design, every exported noise mechanism, the memoizing
randomizer, the two-group designs, a deliberately broken mechanism) and the leave-one-out
"parallel databases" view."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from _cases import DESIGN_CASES
from deniable.audit import (
    AuditResult,
    UnaryEncoding,
    audit,
    audit_design,
    audit_two_group,
    audit_unary,
    clopper_pearson_bounds,
    leave_one_out,
)
from deniable.designs import (
    DESIGNS,
    TWO_GROUP_DESIGNS,
    Categorical,
    CheaterDetection,
    Design,
    Kuk,
    StochasticLieDetector,
    SymmetricCheaterDetection,
    TwoCoin,
    TwoGroupDesign,
    UnrelatedUnknown,
    Warner,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError
from deniable.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    MemoizedRandomizer,
)

# --------------------------------------------------------------------------- Clopper-Pearson


def test_clopper_pearson_closed_forms() -> None:
    n, a = 50, 0.01
    lo, hi = clopper_pearson_bounds([0, 50, 20], n, a)
    # c = 0: upper bound solves (1 - p)^n = a;  c = n: lower bound solves p^n = a
    assert lo[0] == 0.0 and hi[0] == pytest.approx(1 - a ** (1 / n), rel=1e-10)
    assert hi[1] == 1.0 and lo[1] == pytest.approx(a ** (1 / n), rel=1e-10)
    # inner count: the bounds are where the binomial tails equal a
    from scipy import stats

    assert stats.binom.sf(19, n, lo[2]) == pytest.approx(a, rel=1e-8)  # P(X >= 20 | lo) = a
    assert stats.binom.cdf(20, n, hi[2]) == pytest.approx(a, rel=1e-8)  # P(X <= 20 | hi) = a
    with pytest.raises(DataError, match="`counts`"):
        clopper_pearson_bounds([51], n, a)
    with pytest.raises(ParameterError, match="`alpha`"):
        clopper_pearson_bounds([1], n, 1.0)


# --------------------------------------------------------------------------- every design

# the one-group designs (two-group designs: audit_two_group, tests below)
ONE_GROUP = [(i, f) for i, f in DESIGN_CASES if i.rsplit("-", 1)[0] in DESIGNS]
FINITE = [(i, f) for i, f in ONE_GROUP if math.isfinite(f().epsilon)]
INFINITE = [(i, f) for i, f in ONE_GROUP if math.isinf(f().epsilon)]


def test_every_registered_design_is_audited() -> None:
    names = {i.rsplit("-", 1)[0] for i, _ in ONE_GROUP}
    assert names == set(DESIGNS)
    assert INFINITE and FINITE


@pytest.mark.parametrize("factory", [f for _, f in FINITE], ids=[i for i, _ in FINITE])
def test_audit_passes_every_finite_design(factory: Any) -> None:
    """Audited over every pair of answers at the design's own epsilon.  At level 0.999 a
    correct claim fails with probability <= 1e-3 per design (Bonferroni-corrected CP)."""
    design: Design = factory()
    res = audit_design(design, trials=60_000, seed=7, level=0.999)
    assert res.passed, str(res)
    assert res.lower_bound <= design.epsilon
    res.raise_if_failed()


@pytest.mark.parametrize(
    "design",
    [
        Warner(0.75),
        TwoCoin(),
        Kuk(0.8, 0.4, draws=3),
        Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5)),
    ],
    ids=repr,
)
def test_audit_is_tight_enough_to_refute_a_smaller_claim(design: Design) -> None:
    """Power: with 200k trials the bound is within 15% of the true epsilon, so a claim of
    0.85 eps is refuted (the bound's error is ~4 standard errors of ln p_hat, ~2-4%)."""
    res = audit_design(design, trials=200_000, seed=3, level=0.999)
    assert 0.85 * design.epsilon < res.lower_bound <= design.epsilon
    low = audit_design(
        design, claimed_epsilon=0.85 * design.epsilon, trials=200_000, seed=3, level=0.999
    )
    assert not low.passed
    with pytest.raises(PrivacyError, match="audit FAILED"):
        low.raise_if_failed()


@pytest.mark.parametrize("factory", [f for _, f in INFINITE], ids=[i for i, _ in INFINITE])
def test_infinite_designs_give_a_large_lower_bound(factory: Any) -> None:
    """A report with probability 0 under one answer: the plug-in ratio is infinite and the
    confident bound is large (about ln(p n / ln(1/a)) for n trials)."""
    design: Design = factory()
    res = audit_design(design, trials=100_000, seed=11, level=0.999)
    assert res.passed  # the claim is inf
    assert res.empirical_epsilon == math.inf
    assert res.lower_bound > 5.0
    assert not audit_design(design, claimed_epsilon=5.0, trials=100_000, seed=11).passed
    assert res.to_dict()["claimed_epsilon"] == "inf"


# --------------------------------------------------------------------------- broken mechanism


def test_broken_unary_encoding_is_caught() -> None:
    eps = 1.0
    broken = UnaryEncoding(eps, k=4, calibration="exact")
    assert broken.epsilon == pytest.approx(2 * eps, rel=1e-12)  # 2 ln(t/(1-t)) with t = e/(1+e)
    res = audit(broken, 0, 1, claimed_epsilon=eps, trials=100_000, seed=1, level=0.99)
    assert not res.passed
    assert res.lower_bound > 1.7 * eps
    with pytest.raises(PrivacyError, match=r"claimed epsilon is 1\.0"):
        res.raise_if_failed()
    # the worst event has the two changed bits pointing in opposite directions
    assert res.worst_event in (
        "report = [1, 0, 0, 0]",
        "report = [0, 1, 0, 0]",
        "report = [1, 0, 1, 1]",
        "report = [0, 1, 1, 1]",
        "report = [1, 0, 0, 1]",
        "report = [0, 1, 1, 0]",
        "report = [1, 0, 1, 0]",
        "report = [0, 1, 0, 1]",
    )
    # its true epsilon passes; the correct "half" calibration passes at eps
    assert audit(broken, 0, 1, claimed_epsilon=2 * eps, trials=100_000, seed=1).passed
    fixed = UnaryEncoding(eps, k=4, calibration="half")
    assert fixed.epsilon == pytest.approx(eps, rel=1e-12)
    assert audit(fixed, 0, 1, claimed_epsilon=eps, trials=100_000, seed=1, level=0.99).passed


def test_per_sample_callable_and_user_events() -> None:
    def warner(x: int, rng: np.random.Generator) -> int:
        return int(rng.random() < (0.75 if x else 0.25))

    res = audit(warner, 1, 0, claimed_epsilon=math.log(3), trials=4000, seed=2)
    assert res.passed and res.trials == 4000 and res.seed == 2
    assert res.lower_bound > 0.5  # ln 3 = 1.1; 4000 trials detect most of it
    # explicit events: a set of values and a predicate
    res2 = audit(
        Warner(0.75),
        0,
        1,
        claimed_epsilon=math.log(3),
        trials=20_000,
        seed=2,
        event=[{1}, lambda r: r == 0],
    )
    assert res2.passed
    assert res2.events.column("event") == ["report in [1]", "event[1]"]
    # same seed, same result: an audit is reproducible
    again = audit(
        Warner(0.75),
        0,
        1,
        claimed_epsilon=math.log(3),
        trials=20_000,
        seed=2,
        event=[{1}, lambda r: r == 0],
    )
    assert again.lower_bound == res2.lower_bound
    # seed None: one is drawn and recorded so that the audit can be repeated
    drawn = audit(Warner(0.75), 0, 1, claimed_epsilon=2.0, trials=1000)
    redo = audit(Warner(0.75), 0, 1, claimed_epsilon=2.0, trials=1000, seed=drawn.seed)
    assert redo.lower_bound == drawn.lower_bound


def test_audit_result_reporting() -> None:
    res = audit(Warner(0.75), 0, 1, claimed_epsilon=1.0, trials=10_000, seed=5)
    assert isinstance(res, AuditResult)
    d = res.to_dict()
    assert d["passed"] == res.passed and d["trials"] == 10_000 and len(d["events"]) == 2
    assert str(res).startswith("audit passed") or str(res).startswith("audit FAILED")
    assert "lower bound" in str(res)


def test_false_alarm_rate_is_at_most_one_minus_level() -> None:
    """20 independent audits of a correct claim at level 0.9: failures ~ Bin(20, <= 0.1);
    P(more than 6) < 3e-3 even at the worst case."""
    fails = sum(
        not audit(
            Warner(0.75), 0, 1, claimed_epsilon=math.log(3), trials=3000, seed=s, level=0.9
        ).passed
        for s in range(20)
    )
    assert fails <= 6


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"claimed_epsilon": -1.0}, ParameterError, "`claimed_epsilon`"),
        ({"claimed_epsilon": 1.0, "trials": 0}, ParameterError, "`trials`"),
        ({"claimed_epsilon": 1.0, "level": 1.0}, ParameterError, "`level`"),
        ({"claimed_epsilon": 1.0, "seed": -3}, ParameterError, "`seed`"),
        ({"claimed_epsilon": 1.0, "event": 3}, ParameterTypeError, "`event`"),
        ({"claimed_epsilon": 1.0, "event": []}, ParameterError, "`event`"),
        ({"claimed_epsilon": 1.0, "event": [[1]]}, ParameterTypeError, r"`event\[0\]`"),
        ({"claimed_epsilon": 1.0, "event": lambda r: r}, DataError, "boolean mask"),
        ({"claimed_epsilon": 1.0, "vectorized": "yes"}, ParameterTypeError, "`vectorized`"),
    ],
)
def test_audit_bad_input(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        audit(
            Warner(0.75),
            0,
            1,
            trials=kwargs.pop("trials", 100),
            seed=kwargs.pop("seed", 1),
            **kwargs,
        )


def test_audit_bad_mechanism() -> None:
    with pytest.raises(ParameterTypeError, match="`mechanism`"):
        audit(3, 0, 1, claimed_epsilon=1.0, trials=10, seed=1)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`input1`"):
        audit(Warner(0.75), 0, 2, claimed_epsilon=1.0, trials=10, seed=1)
    with pytest.raises(DataError, match="one report per trial"):
        audit(
            lambda x, rng, n: np.zeros(n + 1),
            0,
            1,
            claimed_epsilon=1.0,
            trials=10,
            seed=1,
            vectorized=True,
        )
    with pytest.raises(ParameterError, match="set of values needs scalar reports"):
        audit(UnaryEncoding(1.0, 3), 0, 1, claimed_epsilon=1.0, trials=10, seed=1, event={0})
    with pytest.raises(ParameterTypeError, match="`design`"):
        audit_design("warner", trials=10, seed=1)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`calibration`"):
        UnaryEncoding(1.0, 3, calibration="double")
    with pytest.raises(ParameterError, match="`x`"):
        UnaryEncoding(1.0, 3)(3, 1, 5)


# --------------------------------------------------------------------------- parallel databases


def test_leave_one_out_identities_match_the_loop() -> None:
    gen = np.random.default_rng(0)
    table = gen.integers(0, 5, size=(30, 3)).astype(float)
    for name, fn in (
        ("sum", np.sum),
        ("mean", np.mean),
        ("count", lambda t, axis: np.count_nonzero(t, axis=axis)),
    ):
        fast = leave_one_out(table, name)
        slow = leave_one_out(table, lambda t, fn=fn: fn(t, axis=0))
        assert fast.vectorized and not slow.vectorized
        np.testing.assert_allclose(fast.without, slow.without, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(fast.value, slow.value, rtol=1e-12)
        np.testing.assert_allclose(fast.differences, slow.differences, rtol=1e-10, atol=1e-12)


def test_leave_one_out_closed_forms() -> None:
    x = np.array([1.0, 0.0, 4.0, 1.0, 2.0])
    count = leave_one_out(x, "count")
    assert count.sensitivity == 1.0 and count.n == 5
    total = leave_one_out(x, "sum")
    assert total.sensitivity == 4.0 and total.row == 2
    mean = leave_one_out(x, "mean")
    # mean(D - i) - mean(D) = (mean(D) - x_i) / (n - 1)
    assert mean.sensitivity == pytest.approx(max(abs(x - x.mean())) / 4, rel=1e-12)
    # a Laplace-noised count with scale 1/eps hides every row up to eps
    assert np.all(count.privacy_loss(1 / 0.7) <= 0.7 + 1e-15)
    assert total.privacy_loss(2.0).tolist() == pytest.approx((x / 2).tolist(), rel=1e-12)
    assert "empirical sensitivity 4" in str(total.table())
    assert len(total.table(limit=2)) == 2


def test_noised_query_hides_the_row_audit() -> None:
    """The exact count tells whether row i is a carrier; a Laplace(1/eps)-noised count on D
    vs D - i passes an audit at eps, with the worst event {output >= f(D)} (whose ratio is
    exactly e^eps), and fails at eps / 2."""
    eps = 1.0
    table = np.array([1, 0, 1, 1, 0, 1])
    row = 0
    smaller = np.delete(table, row)

    def noised_count(t: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
        return t.sum() + rng.laplace(0.0, 1 / eps, size=n)

    events = [lambda r, c=c: r >= c for c in (3.0, 4.0, 5.0, 6.0)]
    res = audit(
        noised_count,
        table,
        smaller,
        claimed_epsilon=eps,
        trials=200_000,
        seed=4,
        level=0.999,
        event=events,
        vectorized=True,
    )
    assert res.passed and res.lower_bound > 0.85 * eps
    assert not audit(
        noised_count,
        table,
        smaller,
        claimed_epsilon=eps / 2,
        trials=200_000,
        seed=4,
        event=events,
        vectorized=True,
    ).passed
    # without noise the two outputs never overlap: the row is revealed
    exact = audit(
        lambda t, rng, n: np.full(n, t.sum()),
        table,
        smaller,
        claimed_epsilon=1.0,
        trials=10_000,
        seed=1,
        vectorized=True,
    )
    assert exact.empirical_epsilon == math.inf and not exact.passed


@pytest.mark.parametrize(
    ("table", "query", "error", "match"),
    [
        ([], "sum", DataError, "at least one row"),
        (5.0, "sum", DataError, "at least one row"),
        (["a", "b"], "sum", DataError, "numeric"),
        ([1.0], "mean", DataError, "at least 2 rows"),
        ([1.0, 2.0], "median", ParameterError, "`query` must be one of"),
        ([1.0, 2.0], 3, ParameterTypeError, "`query`"),
    ],
)
def test_leave_one_out_bad_input(
    table: Any, query: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        leave_one_out(table, query)
    with pytest.raises(ParameterError, match="`scale`"):
        leave_one_out([1.0, 2.0], "sum").privacy_loss(0.0)


def test_audit_design_rejects_two_group_designs_with_a_named_error() -> None:
    with pytest.raises(ParameterError, match="`design` must be a one-group design"):
        audit_design(StochasticLieDetector(2 / 12, 10 / 12), trials=1000, seed=1)


# --------------------------------------------------------------------------- noise mechanisms

#: Every exported noise mechanism and how the tests below audit it.
AUDITED_MECHANISMS = {
    "LaplaceMechanism": "pure",
    "DiscreteLaplaceMechanism": "pure",
    "GaussianMechanism": "approximate",
    "DiscreteGaussianMechanism": "approximate",
}


def test_every_exported_noise_mechanism_is_audited() -> None:
    from deniable import mechanisms

    # NoiseMechanism and MemoizedMechanism put mechanisms under the protocol: not noise
    adapters = {"NoiseMechanism", "MemoizedMechanism"}
    exported = {n for n in mechanisms.__all__ if n.endswith("Mechanism")} - adapters
    assert exported == set(AUDITED_MECHANISMS)


def _noised(mechanism: Any) -> Any:
    """A vectorized audit callable: ``trials`` releases of the count ``x`` (0 or 1)."""

    def run(x: int, rng: np.random.Generator, trials: int) -> np.ndarray:
        return np.asarray(mechanism.randomize(np.full(trials, x), rng=rng))

    run.vectorized = True  # type: ignore[attr-defined]
    return run


def _at_least(c: float) -> Any:
    def event(r: np.ndarray) -> np.ndarray:
        return np.asarray(r >= c)

    event.__name__ = f"output >= {c:g}"
    return event


@pytest.mark.parametrize(
    "mechanism",
    [LaplaceMechanism.from_epsilon(1.0), DiscreteLaplaceMechanism.from_epsilon(1.0)],
    ids=lambda m: type(m).__name__,
)
def test_laplace_mechanisms_pass_at_epsilon_and_fail_below(mechanism: Any) -> None:
    """Counts 1 (input0) and 0 (input1) plus Laplace noise of scale 1 / eps: for every
    threshold c >= 1, P(1 + X >= c) / P(X >= c) = e^eps exactly (continuous and discrete
    alike), so the events {output >= c} are tight.  At level 0.999 a correct claim fails with
    probability <= 1e-3; 200k trials put the bound within ~3% of eps, so 0.7 eps is refuted."""
    eps = mechanism.epsilon
    assert eps == pytest.approx(1.0, rel=1e-12)
    events = [_at_least(c) for c in (1.0, 2.0, 3.0)]
    kw: dict[str, Any] = {"trials": 200_000, "seed": 8, "level": 0.999, "event": events}
    res = audit(_noised(mechanism), 1, 0, claimed_epsilon=eps, **kw)
    assert res.passed, str(res)
    assert 0.9 * eps < res.lower_bound <= eps
    low = audit(_noised(mechanism), 1, 0, claimed_epsilon=0.7 * eps, **kw)
    assert not low.passed
    with pytest.raises(PrivacyError, match="audit FAILED"):
        low.raise_if_failed()


@pytest.mark.parametrize(
    "mechanism",
    [
        GaussianMechanism.from_epsilon_delta(1.0, 1e-5),
        DiscreteGaussianMechanism.from_epsilon_delta(1.0, 1e-5),
    ],
    ids=lambda m: type(m).__name__,
)
def test_gaussian_mechanisms_audited_as_epsilon_delta(mechanism: Any) -> None:
    """(eps, delta) = (1, 1e-5), sigma ~ 3.73: the (eps, delta) audit passes, and a clearly
    smaller epsilon at the same delta is refuted (the tail event {output >= 2.5 sigma} alone
    has ln(P0 / P1) ~ ln(Phi(-2.23) / Phi(-2.5)) = 0.73 > 0.3)."""
    sigma = float(mechanism.sigma)
    events = [_at_least(c * sigma) for c in (1.5, 2.0, 2.5, 3.0)]
    kw: dict[str, Any] = {"trials": 400_000, "seed": 5, "level": 0.999, "event": events}
    res = audit(_noised(mechanism), 1, 0, claimed_epsilon=1.0, claimed_delta=1e-5, **kw)
    assert res.passed and res.claimed_delta == 1e-5, str(res)
    assert "at delta 1e-05" in str(res) and res.to_dict()["claimed_delta"] == 1e-5
    low = audit(_noised(mechanism), 1, 0, claimed_epsilon=0.3, claimed_delta=1e-5, **kw)
    assert not low.passed and low.lower_bound > 0.5
    with pytest.raises(PrivacyError, match="at delta = 1e-05"):
        low.raise_if_failed()


def test_pure_audit_does_not_apply_to_gaussian_noise() -> None:
    """Gaussian noise has an unbounded likelihood ratio: a far tail event refutes any pure
    claim.  sigma = 1: P(1 + Z >= 4) / P(Z >= 4) = Phi(-3) / Phi(-4) = 42.6 (ln 3.75), far
    above e^1; with the delta of its exact curve at eps = 1 the same data pass."""
    g = GaussianMechanism(1.0)
    events = [_at_least(c) for c in (2.0, 3.0, 4.0)]
    kw: dict[str, Any] = {"trials": 200_000, "seed": 2, "level": 0.999, "event": events}
    assert not audit(_noised(g), 1, 0, claimed_epsilon=1.0, **kw).passed
    d = g.delta_for_epsilon(1.0)
    assert audit(_noised(g), 1, 0, claimed_epsilon=1.0, claimed_delta=d, **kw).passed
    with pytest.raises(ParameterError, match="`claimed_delta`"):
        audit(_noised(g), 1, 0, claimed_epsilon=1.0, claimed_delta=1.0, **kw)


# --------------------------------------------------------------------------- memoization


def test_memoized_randomizer_with_instantaneous_randomization() -> None:
    """Permanent Warner(0.75), instantaneous Warner(0.8): one round's channel is the product,
    P(yes | 1) = 0.8 * 0.75 + 0.2 * 0.25 = 0.65 and P(yes | 0) = 0.35, so eps_1 =
    ln(0.65 / 0.35) = 0.619.  Each trial is a new respondent of a fresh memo."""
    eps1 = math.log(0.65 / 0.35)
    memo = MemoizedRandomizer(Warner(0.75), instantaneous=Warner(0.8))
    assert memo.report_epsilon == pytest.approx(eps1, rel=1e-12)

    def one_round(x: int, rng: np.random.Generator, trials: int) -> np.ndarray:
        fresh = MemoizedRandomizer(Warner(0.75), instantaneous=Warner(0.8))
        return fresh.randomize(np.arange(trials), np.full(trials, x), question="q", rng=rng)

    kw: dict[str, Any] = {"trials": 200_000, "seed": 6, "level": 0.999, "vectorized": True}
    res = audit(one_round, 1, 0, claimed_epsilon=memo.report_epsilon, **kw)
    assert res.passed and 0.9 * eps1 < res.lower_bound <= eps1
    assert not audit(one_round, 1, 0, claimed_epsilon=0.8 * eps1, **kw).passed

    def three_rounds(x: int, rng: np.random.Generator, trials: int) -> np.ndarray:
        """Three rounds of one respondent: all replay one permanent report."""
        fresh = MemoizedRandomizer(Warner(0.75), instantaneous=Warner(0.8))
        ids, truth = np.arange(trials), np.full(trials, x)
        return np.stack(
            [fresh.randomize(ids, truth, question="q", rng=rng) for _ in range(3)], axis=1
        )

    # the 3-round view is (min(ln 3, 3 eps_1) = ln 3)-DP; its exact epsilon is the report
    # (1, 1, 1): (0.75 * 0.8^3 + 0.25 * 0.2^3) / (0.25 * 0.8^3 + 0.75 * 0.2^3) = 2.88, ln 1.058
    three = audit(three_rounds, 1, 0, claimed_epsilon=memo.longitudinal_epsilon(3), **kw)
    assert three.passed and three.lower_bound > 0.9
    assert not audit(three_rounds, 1, 0, claimed_epsilon=eps1, **kw).passed


# --------------------------------------------------------------------------- two groups

TWO_GROUP_CASES = [
    UnrelatedUnknown(0.7, 0.3),
    CheaterDetection(0.2, 0.6),
    SymmetricCheaterDetection(0.1, 0.1, 0.3, 0.1),
    StochasticLieDetector(2 / 12, 10 / 12),
]


def test_every_two_group_design_is_audited() -> None:
    assert {d.name for d in TWO_GROUP_CASES} == set(TWO_GROUP_DESIGNS)


@pytest.mark.parametrize("design", TWO_GROUP_CASES, ids=lambda d: d.name)
def test_two_group_audit_finds_the_revealing_report(design: TwoGroupDesign) -> None:
    """Every two-group design here has epsilon = inf: some report is impossible for one
    respondent type and possible for another with a different answer.  The audit finds it
    (plug-in ratio inf, a large confident bound) and refutes any finite claim."""
    assert design.epsilon == math.inf
    res = audit_two_group(design, trials=50_000, seed=3, level=0.999)
    assert res.passed and res.claimed_epsilon == math.inf
    assert res.empirical_epsilon == math.inf and res.lower_bound > 5.0
    a, b = res.worst_pair
    assert a.split(":")[0] == b.split(":")[0]  # compared within one group
    assert not audit_two_group(design, claimed_epsilon=5.0, trials=50_000, seed=3).passed
    # and audit_design refuses it with the named error
    with pytest.raises(ParameterError, match="audit_two_group"):
        audit_design(design, trials=100, seed=1)


def test_two_group_audit_compliant_types_is_tight() -> None:
    """Among compliant respondents the symmetric cheater model is forced response in each
    group: max_g max(ln((1 - fn_g) / fy_g), ln((1 - fy_g) / fn_g)) = ln(0.9 / 0.1) = 2.197
    (group 1) vs ln(0.9 / 0.3) (group 2).  Passes at that, fails at 0.85 of it."""
    design = SymmetricCheaterDetection(0.1, 0.1, 0.3, 0.1)
    eps = math.log(0.9 / 0.1)
    assert design.epsilon_compliant == pytest.approx(eps, rel=1e-12)
    res = audit_two_group(design, compliant=True, trials=200_000, seed=4, level=0.999)
    assert res.passed and res.claimed_epsilon == design.epsilon_compliant
    assert 0.85 * eps < res.lower_bound <= eps
    low = audit_two_group(
        design, compliant=True, claimed_epsilon=0.85 * eps, trials=200_000, seed=4
    )
    assert not low.passed


def test_two_group_audit_bad_input() -> None:
    with pytest.raises(ParameterTypeError, match="`design` must be a TwoGroupDesign"):
        audit_two_group(Warner(0.75), trials=10, seed=1)  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="`compliant`"):
        audit_two_group(TWO_GROUP_CASES[0], compliant="yes", trials=10, seed=1)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`trials`"):
        audit_two_group(TWO_GROUP_CASES[0], trials=0, seed=1)


# --------------------------------------------------------------------------- bounded audits


def test_the_categorical_audit_follows_k_squared_not_k_cubed() -> None:
    """Issue 14: the audit of every pair of a k-category design built one table row per
    (pair, report), k^3 / 2 Python tuples (9 GB at k = 200).  At k = 120 that is 850,000
    rows; now the table holds one row per report, its worst pair."""
    k = 120
    res = audit_design(Categorical(k=k, p_truthful=0.5), trials=2000, seed=3)
    assert len(res.events.rows) == k
    assert {row[2] for row in res.events.rows} == {f"report = {r}" for r in range(k)}
    assert "worst pair" in res.events.notes[0]
    assert res.passed


def test_the_categorical_audit_runs_in_bounded_memory() -> None:
    """At k = 400 (on main: 32 million table rows, tens of GB) in a process whose address
    space is capped at 2.5 GB (numpy and scipy loaded need about 1 GB)."""
    import subprocess
    import sys

    code = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (5 * 2**29, 5 * 2**29))\n"
        "from deniable.audit import audit_design\n"
        "from deniable.designs import Categorical\n"
        "res = audit_design(Categorical(k=400, p_truthful=0.5), trials=500, seed=1)\n"
        "print(len(res.events.rows), res.passed)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["400", "True"]


def test_every_pair_at_once_equals_the_pair_by_pair_loop() -> None:
    from deniable.audit._core import _Bounds, _every_pair, _listed_pairs

    rng = np.random.default_rng(7)
    for n_inputs, m in [(2, 2), (3, 5), (9, 4), (25, 25), (40, 7)]:
        counts = rng.integers(0, 1000, size=(n_inputs, m))
        counts[rng.random(counts.shape) < 0.1] = 0  # some events never seen under an input
        log_lo = np.log(np.maximum(counts / 1000 - 0.02, 0.0) + 1e-300)
        log_hi = np.log(np.minimum(counts / 1000 + 0.02, 1.0))
        labels = [f"e{e}" for e in range(m)]
        names = [f"x{i}" for i in range(n_inputs)]
        pairs = [(a, b) for a in range(n_inputs) for b in range(a + 1, n_inputs)]
        bounds = _Bounds(counts, log_lo, log_hi, labels, names)
        slow = _listed_pairs(bounds, pairs)
        fast = _every_pair(bounds)
        assert fast[0] == slow[0]  # the largest lower bound
        assert fast[3] == slow[3]  # the plug-in epsilon
        i, j = names.index(fast[2][0]), names.index(fast[2][1])
        e = labels.index(fast[1])
        assert i != j and log_lo[i, e] - log_hi[j, e] == fast[0]  # a real pair attains it


def test_the_audit_limits_name_the_design_and_the_limit() -> None:
    with pytest.raises(ParameterError, match=r"at most 1,048,576 \(true answer, report\) cells"):
        audit_design(Categorical(k=1025, p_truthful=0.5), trials=10, seed=1)
    with pytest.raises(ParameterError, match=r"`trials` must be at most 1,000,000 .* got"):
        audit_design(Categorical(k=1000, p_truthful=0.5), trials=10**7, seed=1)


def test_an_audit_draws_its_trials_in_chunks_of_the_same_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chunks of ~CHUNK_BYTES instead of all trials at once (47 GB for `privacy audit unary
    --k 64 --trials 10**8`): the same draws in the same order, so the same counts."""
    from deniable.audit import _core

    def three() -> list[AuditResult]:
        n = 150_000  # three chunks of at most 65,536 trials below
        return [
            audit(Warner(0.75), 0, 1, claimed_epsilon=1.1, trials=n, seed=4),
            audit_unary(1.0, 6, trials=n, seed=4),
            audit_design(Categorical(k=3, p_truthful=0.5), trials=n, seed=4),
        ]

    monkeypatch.setattr(_core, "FIRST_CHUNK", 10**9)  # every trial in one call
    whole = three()
    monkeypatch.setattr(_core, "FIRST_CHUNK", 1 << 16)
    monkeypatch.setattr(_core, "CHUNK_BYTES", 1)  # the smallest chunks: 65,536 trials
    chunked = three()
    for a, b in zip(whole, chunked, strict=True):
        assert a.events.rows == b.events.rows and a.lower_bound == b.lower_bound


def test_a_long_unary_audit_runs_in_bounded_memory() -> None:
    """2 * 10**6 trials of a 64-bit unary report drew 1.3 * 10**8 words (1 GB) at once; in
    a process capped at 1.25 GB of address space it now runs in chunks."""
    import subprocess
    import sys

    code = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (5 * 2**28, 5 * 2**28))\n"
        "from deniable.audit import audit_unary\n"
        "res = audit_unary(1.0, 64, trials=2_000_000, seed=1)\n"
        "print(res.trials, res.passed)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=900, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["2000000", "True"]
