"""The accounting API's one rule: argument order, what comes back, measure arguments."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from deniable import accounting as acc
from deniable.accounting import (
    GDP,
    RDP,
    ZCDP,
    ApproxDP,
    Gaussian,
    Laplace,
    PrivacyAccountant,
    PureDP,
    RandomizedResponse,
)

ACCT = PrivacyAccountant((RandomizedResponse(0.5, count=3, k=3), Laplace(2.0), Gaussian(4.0)))

#: every Renyi curve, as a function of the order alone
CURVES: dict[str, Callable[[Any], Any]] = {
    "rr_rdp": lambda a: acc.rr_rdp(1.0, a, k=3),
    "pure_to_rdp": lambda a: acc.pure_to_rdp(1.0, a),
    "laplace_rdp": lambda a: acc.laplace_rdp(1.0, a),
    "PrivacyAccountant.rdp_curve": ACCT.rdp_curve,
}

#: every public function that returns an epsilon, a delta or a composed epsilon
FLOATS: dict[str, Callable[[], Any]] = {
    "basic_composition": lambda: acc.basic_composition([0.5], counts=[3]),
    "advanced_composition": lambda: acc.advanced_composition([0.5], 1e-6, counts=[3]),
    "kov_composition": lambda: acc.kov_composition([0.5], 1e-6, counts=[3]),
    "optimal_rr_delta": lambda: acc.optimal_rr_delta(0.5, 0.5, count=3),
    "optimal_rr_epsilon": lambda: acc.optimal_rr_epsilon(0.5, 1e-3, count=3),
    "zcdp_epsilon": lambda: acc.zcdp_epsilon(0.5, 1e-6),
    "zcdp_delta": lambda: acc.zcdp_delta(0.5, 3.0),
    "gdp_epsilon": lambda: acc.gdp_epsilon(1.0, 1e-6),
    "gdp_delta": lambda: acc.gdp_delta(1.0, 1.0),
    "rdp_epsilon": lambda: acc.rdp_epsilon(RDP((2.0, 4.0), (0.1, 0.3)), 1e-6),
    "rdp_delta": lambda: acc.rdp_delta(RDP((2.0, 4.0), (0.1, 0.3)), 3.0),
    "rdp_curve_epsilon": lambda: acc.rdp_curve_epsilon(lambda a: 0.5 * a, 1e-6),
    "rdp_curve_delta": lambda: acc.rdp_curve_delta(lambda a: 0.5 * a, 3.0),
    "shuffle_epsilon_closed_form": lambda: acc.shuffle_epsilon_closed_form(1.0, 1e-6, n=10**5),
    "shuffle_epsilon_numerical": lambda: acc.shuffle_epsilon_numerical(1.0, 1e-6, n=10**4),
    "shuffle_delta_numerical": lambda: acc.shuffle_delta_numerical(1.0, 0.05, n=10**4),
    "PrivacyAccountant.epsilon": lambda: ACCT.epsilon(1e-6),
    "PrivacyAccountant.delta": lambda: ACCT.delta(5.0),
    "PrivacyLossDistribution.epsilon": lambda: acc.rr_pld(1.0, count=3).epsilon(1e-3),
}

#: every conversion to a measure, with the class it returns
MEASURES: dict[str, tuple[Callable[[], Any], type]] = {
    "pure_to_zcdp": (lambda: acc.pure_to_zcdp(1.0), ZCDP),
    "zcdp_to_approx": (lambda: acc.zcdp_to_approx(0.5, delta=1e-6), ApproxDP),
    "rdp_to_approx": (lambda: acc.rdp_to_approx(RDP((2.0,), (0.1,)), delta=1e-6), ApproxDP),
    "gdp_to_approx": (lambda: acc.gdp_to_approx(1.0, epsilon=1.0), ApproxDP),
    "compose_gdp": (lambda: acc.compose_gdp([1.0, 2.0]), GDP),
    "shuffle_guarantee": (lambda: acc.shuffle_guarantee(1.0, 1e-6, n=10**4), ApproxDP),
    "PrivacyAccountant.zcdp": (ACCT.zcdp, ZCDP),
    "PrivacyAccountant.gdp": (PrivacyAccountant((Gaussian(2.0),)).gdp, GDP),
}


@pytest.mark.parametrize("name", CURVES)
@pytest.mark.parametrize("order", [2.0, 3, np.float64(2.5), np.array(4.0), math.inf])
def test_a_curve_at_a_scalar_order_is_a_python_float(name: str, order: Any) -> None:
    assert type(CURVES[name](order)) is float


@pytest.mark.parametrize("name", CURVES)
def test_a_curve_at_an_array_of_orders_is_an_array_of_its_shape(name: str) -> None:
    orders = [[2.0, 3.0, math.inf], [1.5, 10.0, 100.0]]
    out = CURVES[name](orders)
    assert isinstance(out, np.ndarray) and out.shape == (2, 3)
    assert out[0, 1] == CURVES[name](3.0)  # the same value, entry by entry
    assert CURVES[name]([2.0]).shape == (1,)


@pytest.mark.parametrize("name", FLOATS)
def test_epsilons_and_deltas_are_python_floats(name: str) -> None:
    assert type(FLOATS[name]()) is float


@pytest.mark.parametrize("name", MEASURES)
def test_conversions_to_a_measure_return_the_measure(name: str) -> None:
    make, cls = MEASURES[name]
    assert type(make()) is cls


def test_measure_arguments_take_the_object_or_its_parameter() -> None:
    assert acc.zcdp_epsilon(ZCDP(0.5), 1e-6) == acc.zcdp_epsilon(0.5, 1e-6)
    assert acc.zcdp_delta(ZCDP(0.5), 3.0) == acc.zcdp_delta(0.5, 3.0)
    assert acc.gdp_epsilon(GDP(1.0), 1e-6) == acc.gdp_epsilon(1.0, 1e-6)
    assert acc.pure_to_zcdp(PureDP(1.0)) == acc.pure_to_zcdp(1.0)
    assert acc.pure_to_rdp(PureDP(1.0), 2.0) == acc.pure_to_rdp(1.0, 2.0)


@pytest.mark.parametrize(
    "old_call",
    [
        # the positional orders before 1.0: each now fails instead of computing something else
        lambda: acc.optimal_rr_epsilon(1.0, 10, 1e-6),
        lambda: acc.optimal_rr_delta(1.0, 3, 2.0),
        lambda: acc.basic_composition([0.5], [3]),
        lambda: acc.advanced_composition([0.5], 1e-6, [3]),
        lambda: acc.kov_composition([0.5], 1e-6, [3]),
        lambda: acc.shuffle_epsilon_numerical(1.0, 10_000, 1e-6),
        lambda: acc.shuffle_epsilon_closed_form(1.0, 10**5, 1e-6),
        lambda: acc.shuffle_delta_numerical(1.0, 10_000, 0.05),
        lambda: acc.shuffle_guarantee(1.0, 10_000, 1e-6),
        lambda: acc.shuffle_epsilon_table(1.0, 1e-6, [1000]),
        lambda: acc.rr_rdp(1.0, 2.0, 3),
        lambda: acc.common_lattice([0.5], [1]),
    ],
)
def test_the_repetitions_are_keyword_only(old_call: Callable[[], Any]) -> None:
    with pytest.raises(TypeError, match="positional argument"):
        old_call()


def test_one_order_reads_the_same_across_composition_and_shuffling() -> None:
    # (per-use parameter, target, repetitions=): the same numbers under each name
    assert acc.optimal_rr_epsilon(0.1, 1e-6, count=1000) == PrivacyAccountant(
        (RandomizedResponse(0.1, count=1000),)
    ).epsilon(1e-6)
    assert acc.advanced_composition(0.1, 1e-6, counts=1000) == acc.advanced_composition(
        [0.1], 1e-6, counts=[1000]
    )
    g = acc.shuffle_guarantee(1.0, 1e-6, n=10_000)
    assert g.epsilon == acc.shuffle_epsilon_numerical(1.0, 1e-6, n=10_000)
    assert acc.shuffle_delta_numerical(1.0, g.epsilon, n=10_000) <= 1e-6
