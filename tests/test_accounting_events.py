"""Privacy events as plain data, and one accountant per method.

Expected values are closed forms or brute force written here (sums of epsilons, the
Kairouz-Oh-Viswanath pair enumerated outcome by outcome, the discrete Laplace hockey stick
summed over the integers), or the facade's own numbers where the point is that the
accountant and the facade agree.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from deniable import accounting as acc
from deniable.accounting import (
    ACCOUNTANTS,
    BasicAccountant,
    Channel,
    Composed,
    DiscreteLaplace,
    EpsilonDelta,
    Gaussian,
    Laplace,
    NonPrivate,
    NoOp,
    OptimalAccountant,
    PoissonSampled,
    PrivacyAccountant,
    PrivacyLossDistribution,
    PureEpsilon,
    PureEpsilonComposition,
    RandomizedResponse,
    SampledWithoutReplacement,
    SelfComposed,
    ZCDPAccountant,
    ZCDPComposition,
    event_from_dict,
    make_accountant,
    rr_pld,
)
from deniable.common import dumps, load_json
from deniable.designs import Warner
from deniable.exceptions import (
    DataError,
    DeniableError,
    ParameterError,
    ParameterTypeError,
    PrivacyError,
)

EVENTS: list[Any] = [
    RandomizedResponse(0.5, count=3, k=4),
    PureEpsilon(math.inf),
    EpsilonDelta(1.0, 1e-6, count=2),
    Laplace(2.0, sensitivity=3.0),
    DiscreteLaplace(1.5, sensitivity=2, count=4),
    Gaussian(0.0),
    NoOp(),
    NonPrivate(),
    Composed([RandomizedResponse(1.0), Gaussian(2.0)]),
    SelfComposed(Laplace(1.0), 5),
    PoissonSampled(0.25, Gaussian(1.0, count=2)),
    SampledWithoutReplacement(100, 7, SelfComposed(PureEpsilon(0.3), 2)),
    SelfComposed(Composed([PoissonSampled(0.5, PureEpsilon(1.0)), NoOp()]), 3),
    Channel([[0.8, 0.3], [0.2, 0.7]], count=2),
]


# ------------------------------------------------------------------ events as data
@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_an_event_round_trips_through_json_and_is_a_value(event: Any) -> None:
    text = dumps(event.to_dict())
    back = event_from_dict(load_json(text, source="the event"))
    assert back == event
    assert hash(back) == hash(event)
    assert type(back) is type(event)
    with pytest.raises(AttributeError):
        event.count = 2  # frozen


def test_equal_parameters_are_equal_events_and_kinds_differ() -> None:
    assert RandomizedResponse(1) == RandomizedResponse(1.0)
    assert len({RandomizedResponse(1), RandomizedResponse(1.0, count=1, k=2)}) == 1
    assert RandomizedResponse(1.0) != PureEpsilon(1.0)
    assert Composed([Laplace(1.0)]) == Composed((Laplace(1.0),))  # a list is kept as a tuple


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"type": "Nope"}, "`type` must be one of"),
        ({"epsilon": 1.0}, "`type` must be one of"),
        ([1, 2], "must be a JSON object"),
        ({"type": "RandomizedResponse", "epsilon": 1.0, "eps": 2}, "has no field 'eps'"),
        ({"type": "RandomizedResponse", "epsilon": -1.0}, "`epsilon` must be"),
        ({"type": "RandomizedResponse", "epsilon": "x"}, "`epsilon` must be a real number"),
        ({"type": "RandomizedResponse"}, "not a valid RandomizedResponse"),
        ({"type": "Composed", "events": {"type": "NoOp"}}, "`events` of Composed must be a list"),
        ({"type": "SelfComposed", "event": {"type": "Zap"}, "count": 2}, "`type` must be one"),
        ({"type": "PoissonSampled", "probability": 1.5, "event": {"type": "NoOp"}}, "probability"),
    ],
)
def test_malformed_event_data_is_a_data_error_naming_the_problem(data: Any, needle: str) -> None:
    with pytest.raises(DataError, match=None) as info:
        event_from_dict(data)
    assert needle in str(info.value)


def test_deeply_nested_event_data_is_refused() -> None:
    data: dict[str, Any] = {"type": "NoOp"}
    for _ in range(70):
        data = {"type": "SelfComposed", "event": data, "count": 1}
    with pytest.raises(DataError, match="at most 64 levels"):
        event_from_dict(data)


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: Composed(RandomizedResponse(1.0)), ParameterTypeError),
        (lambda: Composed([1.0]), ParameterTypeError),
        (lambda: SelfComposed(RandomizedResponse(1.0), -1), ParameterError),
        (lambda: PoissonSampled(-0.1, NoOp()), ParameterError),
        (lambda: PoissonSampled(0.1, "RR"), ParameterTypeError),
        (lambda: SampledWithoutReplacement(10, 11, NoOp()), ParameterError),
        (lambda: EpsilonDelta(1.0, 1.0), ParameterError),
        (lambda: DiscreteLaplace(1.0, sensitivity=0.5), ParameterTypeError),
        (lambda: DiscreteLaplace(1.0, sensitivity=10**7), ParameterError),
    ],
)
def test_invalid_events_raise_the_documented_error(make: Any, error: type) -> None:
    with pytest.raises(error):
        make()


def test_expand_multiplies_counts_and_drops_no_ops() -> None:
    event = SelfComposed(Composed([RandomizedResponse(1.0, count=2), NoOp(), Laplace(1.0)]), 3)
    assert acc._event_tree.expand(event, 2) == [
        (RandomizedResponse(1.0, count=2), 12),
        (Laplace(1.0), 6),
    ]


# ------------------------------------------------------------------ the accountants
FACADE_CASES: list[list[Any]] = [
    [RandomizedResponse(0.5, count=10)],
    [RandomizedResponse(0.37, count=3), RandomizedResponse(0.5, count=4)],
    [RandomizedResponse(1.0, count=5, k=4), Laplace(2.0, count=3), Gaussian(4.0, count=2)],
    [Gaussian(2.0, count=4), Gaussian(3.0)],
]


@pytest.mark.parametrize("events", FACADE_CASES, ids=range(len(FACADE_CASES)))
@pytest.mark.parametrize("method", sorted(set(ACCOUNTANTS) - {"gdp"}))
def test_each_accountant_is_what_the_facade_reports(events: list[Any], method: str) -> None:
    acct = make_accountant(method)
    for e in events:
        assert acct.compose(e) is acct  # compose adds to the one object and chains
    facade = PrivacyAccountant(events)
    assert acct.epsilon(1e-6) == facade.epsilon(1e-6, method)
    assert acct.delta(2.0) == facade.delta(2.0, method)


def test_compose_with_a_count_is_that_many_uses() -> None:
    one = BasicAccountant().compose(RandomizedResponse(0.5), 10)
    assert one.epsilon(1e-6) == 5.0
    assert one.ledger == Composed((SelfComposed(RandomizedResponse(0.5), 10),))
    snap = one.copy()
    one.compose(RandomizedResponse(0.5))
    assert (snap.epsilon(1e-6), one.epsilon(1e-6)) == (5.0, 5.5)


def test_pure_epsilon_is_binary_randomized_response_under_every_method() -> None:
    for method in sorted(set(ACCOUNTANTS) - {"gdp"}):
        rr = make_accountant(method).compose(RandomizedResponse(0.4), 7)
        pe = make_accountant(method).compose(PureEpsilon(0.4), 7)
        assert pe.epsilon(1e-5) == rr.epsilon(1e-5), method
    assert OptimalAccountant().compose(PureEpsilon(0.4), 7).route().startswith("exact")


@pytest.mark.parametrize("method", sorted(ACCOUNTANTS))
def test_non_private_is_infinite_and_no_op_is_free_everywhere(method: str) -> None:
    blatant = make_accountant(method).compose(NoOp()).compose(NonPrivate())
    assert blatant.epsilon(0.5) == math.inf
    assert blatant.delta(1e6) == 1.0
    free = make_accountant(method).compose(NoOp(), 5)
    assert (free.epsilon(1e-9), free.delta(0.0)) == (0.0, 0.0)


def test_unsupported_events_are_said_and_refused() -> None:
    rdp = make_accountant("rdp")
    assert not rdp.supports(EpsilonDelta(1.0, 1e-6))
    assert "delta > 0" in (rdp.unsupported(EpsilonDelta(1.0, 1e-6)) or "")
    with pytest.raises(PrivacyError, match="delta > 0"):
        rdp.compose(Composed([Laplace(1.0), EpsilonDelta(1.0, 1e-6)]))
    assert rdp.epsilon(1e-6) == 0.0  # a refused compose adds nothing
    assert not make_accountant("gdp").supports(Laplace(1.0))
    assert make_accountant("gdp").supports(RandomizedResponse(0.0))  # free: no refusal
    poisson = PoissonSampled(0.1, PureEpsilon(1.0))
    assert "add_remove" in (make_accountant("basic").unsupported(poisson) or "")
    wor = SampledWithoutReplacement(10, 1, PureEpsilon(1.0))
    assert not make_accountant("basic", relation="add_remove").supports(wor)
    assert not make_accountant("pld", relation="add_remove").supports(RandomizedResponse(1.0))
    nested = PoissonSampled(0.1, Composed([PureEpsilon(1.0)]))
    assert "one mechanism event" in (
        make_accountant("basic", relation="add_remove").unsupported(nested) or ""
    )
    with pytest.raises(ParameterTypeError):
        make_accountant("basic").compose(0.5)  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        make_accountant("magic")
    with pytest.raises(PrivacyError):
        PrivacyAccountant([EpsilonDelta(1.0, 1e-6)]).epsilon(1e-3, "rdp")


def test_basic_with_deltas_pays_their_sum_and_nothing_below() -> None:
    acct = BasicAccountant().compose(EpsilonDelta(0.5, 1e-6), 3).compose(PureEpsilon(0.25))
    assert acct.epsilon(4e-6) == 1.75
    assert acct.epsilon(2e-6) == math.inf
    assert 3e-6 <= acct.delta(1.75) <= 3e-6 * (1 + 1e-9)
    assert acct.delta(1.7) == 1.0


def _kov_delta(eps: float, dlt: float, n: int, t: float) -> float:
    """Exact delta(t) of n uses of the (eps, dlt) pair of Kairouz, Oh & Viswanath,
    enumerating every outcome sequence (outcomes: hit, +eps, -eps)."""
    p_plus = (1 - dlt) * math.exp(eps) / (1 + math.exp(eps))
    p_minus = (1 - dlt) / (1 + math.exp(eps))
    total = 0.0
    for seq in itertools.product(("hit", "+", "-"), repeat=n):
        if "hit" in seq:
            total += math.prod(dlt if s == "hit" else p_plus if s == "+" else p_minus
                               for s in seq)  # fmt: skip
            continue
        j = seq.count("+")
        p = p_plus**j * p_minus ** (n - j)
        loss = (2 * j - n) * eps
        total += max(0.0, p * (1 - math.exp(t - loss)))
    return total


@pytest.mark.parametrize("method", ["optimal", "pld"])
def test_epsilon_delta_events_against_the_enumerated_worst_pair(method: str) -> None:
    eps, dlt, n = 0.7, 1e-3, 4
    acct = make_accountant(method).compose(EpsilonDelta(eps, dlt), n)
    for t in (0.0, 0.5, 1.3, 2.7):
        exact = _kov_delta(eps, dlt, n, t)
        assert exact <= acct.delta(t) <= exact + 1e-3 * max(exact, 1e-3)


def test_discrete_laplace_against_its_hockey_stick_summed_over_the_integers() -> None:
    scale, sens, count = 2.0, 3, 2
    z = np.arange(-400, 401)
    pmf = np.exp(-np.abs(z) / scale)
    pmf /= pmf.sum()
    shifted = np.exp(-np.abs(z - sens) / scale)
    shifted /= shifted.sum()
    # two releases: the product pair, summed over the 801^2 outcome pairs by loss
    loss1 = np.log(pmf / shifted)
    losses = (loss1[:, None] + loss1[None, :]).ravel()
    masses = (pmf[:, None] * pmf[None, :]).ravel()
    acct = make_accountant("pld").compose(DiscreteLaplace(scale, sensitivity=sens), count)
    rdp = make_accountant("rdp").compose(DiscreteLaplace(scale, sensitivity=sens), count)
    for t in (0.0, 1.0, 2.0):
        exact = float(np.sum(masses * np.maximum(0.0, 1 - np.exp(t - losses))))
        assert exact <= acct.delta(t) <= exact * (1 + 1e-3) + 1e-12
        assert rdp.delta(t) >= exact
    assert make_accountant("basic").compose(DiscreteLaplace(scale, sensitivity=sens)).epsilon(
        0.5
    ) == pytest.approx(sens / scale, rel=1e-12)


def test_the_ledger_prices_through_the_accountants() -> None:
    for eps in (0.0, 1e-300, 0.1, 0.5, 3.0, math.inf):
        assert PureEpsilonComposition().charge(eps) == BasicAccountant.price(PureEpsilon(eps))
        assert ZCDPComposition().charge(eps) == ZCDPAccountant.price(PureEpsilon(eps))
    assert PureEpsilonComposition().charge(0.1) == 0.1
    assert ZCDPComposition().charge(1.0) == acc.pure_to_zcdp(1.0).rho  # sharp, not rounded
    assert (PureEpsilonComposition.accountant, ZCDPComposition.accountant) == (
        BasicAccountant,
        ZCDPAccountant,
    )
    assert (PureEpsilonComposition().unit, ZCDPComposition().unit) == ("epsilon", "rho")


# ------------------------------------------------------------------ exception tree
def test_pld_errors_are_the_projects_errors() -> None:
    """`PrivacyLossDistribution.compose` raised a bare ValueError on different steps."""
    with pytest.raises(ParameterError, match="step") as info:
        rr_pld(1.0).compose(rr_pld(0.5))
    assert isinstance(info.value, DeniableError)
    with pytest.raises(ParameterTypeError):
        rr_pld(1.0).compose("pld")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="rounding"):
        PrivacyLossDistribution(0.1, 0, np.ones(1), rounding="sideways")
    with pytest.raises(ParameterError, match="step"):
        PrivacyLossDistribution(-0.1, 0, np.ones(1))
    with pytest.raises(ParameterTypeError, match="probs"):
        PrivacyLossDistribution(0.1, 0, [1.0])  # type: ignore[arg-type]


def test_renyi_curves_of_huge_epsilons_give_no_warning() -> None:
    """rr_rdp multiplied the orders by epsilon outside its overflow guard: a RuntimeWarning
    (an error where warnings are errors) for epsilon = 1e308."""
    assert acc.rr_rdp(1e308, 10.0) == 1e308
    assert acc.pure_to_rdp(1e300, 1e10) == 1e300
    curve = PrivacyAccountant([RandomizedResponse(1e308, count=3)]).rdp_curve([2.0, 10.0])
    assert np.all(curve == math.inf)


BAD_CALLS = {
    "PrivacyAccountant(5)": lambda: PrivacyAccountant(5),  # type: ignore[arg-type]
    "compare_composition(None)": lambda: acc.compare_composition(None),  # type: ignore[arg-type]
    "compose_questions(counts=5)": lambda: acc.compose_questions([0.5], counts=5),  # type: ignore[arg-type]
    "common_lattice('x')": lambda: acc.common_lattice("x"),  # type: ignore[arg-type]
    "common_lattice([1, 'a'])": lambda: acc.common_lattice([1, "a"]),  # type: ignore[list-item]
    "common_lattice(counts)": lambda: acc.common_lattice([0.5, 1.0], counts=[1]),
    "rr_rdp(alpha='x')": lambda: acc.rr_rdp(1.0, "x"),
    "rdp_curve(object)": lambda: PrivacyAccountant([]).rdp_curve(object()),
    "budget_plan(questions=5)": lambda: acc.budget_plan(1.0, 5),  # type: ignore[arg-type]
    "budget_plan(('a',))": lambda: acc.budget_plan(1.0, [("a",)]),  # type: ignore[list-item]
    "budget_plan(memoized=5)": lambda: acc.budget_plan(1.0, [("a", 0.5)], 5),  # type: ignore[arg-type]
    "convert_guarantee(alphas=5)": lambda: acc.convert_guarantee(
        "rdp",
        "approx",
        alphas=5,
        epsilons=[1.0],
        delta=1e-6,  # type: ignore[arg-type]
    ),
}


@pytest.mark.parametrize("name", BAD_CALLS)
def test_public_paths_raise_only_the_projects_errors(name: str) -> None:
    """Each of these raised a bare TypeError or ValueError from inside (``tuple(5)``,
    ``Fraction('x')``, an unpacking) instead of an error that names the parameter."""
    with pytest.raises(DeniableError, match="`"):
        BAD_CALLS[name]()


def test_lattice_of_zero_or_infinite_epsilons_is_none() -> None:
    """``common_lattice([0.0])`` divided by a gcd of 0; an infinite epsilon overflowed."""
    assert acc.common_lattice([0.0]) is None
    assert acc.common_lattice([math.inf, 1.0]) is None
    assert acc.common_lattice([0.5, 0.0, 0.25]) == 0.25


def _renyi(p: list[float], q: list[float], a: float) -> float:
    return math.log(sum(x**a * y ** (1 - a) for x, y in zip(p, q, strict=True))) / (a - 1)


def test_a_design_by_its_channel() -> None:
    """Warner's channel is binary RR at ln 3 (its epsilon never below the design's); an
    asymmetric one is accounted by its worst
    pair of truths in RDP (computed here from the matrix) and by its epsilon elsewhere."""
    warner = Channel(np.asarray(Warner(p=0.75).channel))
    assert warner.pure_epsilon >= Warner(p=0.75).epsilon
    assert math.log(3) <= warner.pure_epsilon <= math.log(3) * (1 + 1e-14)
    for method in ("basic", "kov", "pld", "zcdp"):
        ours = make_accountant(method).compose(warner, 5).epsilon(1e-6)
        rr = make_accountant(method).compose(RandomizedResponse(math.log(3)), 5).epsilon(1e-6)
        assert ours == pytest.approx(rr, rel=1e-12), method
    forced = Channel([[0.8, 0.3], [0.2, 0.7]])
    assert math.log(3.5) <= forced.pure_epsilon <= math.log(3.5) * (1 + 1e-14)
    rdp = make_accountant("rdp").compose(forced)
    for a in (1.5, 2.0, 7.0):
        worst = max(_renyi([0.8, 0.2], [0.3, 0.7], a), _renyi([0.3, 0.7], [0.8, 0.2], a))
        assert worst <= rdp.curve(a) <= worst * (1 + 1e-9)
        assert rdp.curve(a) < acc.rr_rdp(math.log(3.5), a)  # tighter than its epsilon alone
    blatant = Channel([[1.0, 0.4], [0.0, 0.6]])  # "no" reveals truth 1
    for method in sorted(ACCOUNTANTS):
        assert make_accountant(method).supports(blatant) or method == "gdp"
    assert make_accountant("optimal").compose(blatant).epsilon(0.1) == math.inf
    assert not make_accountant("basic", relation="add_remove").supports(forced)


@pytest.mark.parametrize(
    ("matrix", "error"),
    [
        ([[0.5, 0.5]], ParameterError),  # columns sum to 0.5
        ([[1.0], [0.0]], ParameterError),  # one truth
        ([[1.2, 0.5], [-0.2, 0.5]], ParameterError),
        ("abc", ParameterTypeError),
        ([[0.5, "x"], [0.5, 0.5]], ParameterTypeError),
    ],
)
def test_invalid_channels_are_refused(matrix: Any, error: type) -> None:
    with pytest.raises(error, match="`matrix`"):
        Channel(matrix)
