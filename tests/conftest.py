"""Shared fixtures: every example design and mechanism of ``tests/_cases.py`` (where the
examples live, importable by name: pytest keeps one module named ``conftest`` at a time,
and tests/service has its own), as parametrized fixtures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from _cases import (
    DESIGN_CASES,
    FINITE_EPSILON_CASES,
    MECHANISM_CASES,
    ONE_BIT_CASES,
    ORACLE_CASES,
)
from deniable.designs import Design


@pytest.fixture(params=[f for _, f in DESIGN_CASES], ids=[i for i, _ in DESIGN_CASES])
def design(request: pytest.FixtureRequest) -> Design:
    """Every example parameterisation of every registered design (one- and two-group)."""
    factory: Callable[[], Design] = request.param
    return factory()


@pytest.fixture(params=[f for _, f in MECHANISM_CASES], ids=[i for i, _ in MECHANISM_CASES])
def mechanism(request: pytest.FixtureRequest) -> Any:
    """Every design example, every noise and memoized mechanism, every frequency oracle and
    the other mechanisms of deniable.oracles."""
    return request.param()


@pytest.fixture(params=[f for _, f in ORACLE_CASES], ids=[i for i, _ in ORACLE_CASES])
def oracle(request: pytest.FixtureRequest) -> Any:
    """Every frequency oracle example (k-ary RR included)."""
    return request.param()


@pytest.fixture(params=[f for _, f in ONE_BIT_CASES], ids=[i for i, _ in ONE_BIT_CASES])
def one_bit_design(request: pytest.FixtureRequest) -> Design:
    """Every example whose report is one bit (Kuk k > 1 and categorical excluded)."""
    factory: Callable[[], Design] = request.param
    return factory()


@pytest.fixture(
    params=[f for _, f in FINITE_EPSILON_CASES], ids=[i for i, _ in FINITE_EPSILON_CASES]
)
def finite_design(request: pytest.FixtureRequest) -> Design:
    """Every example with a finite epsilon."""
    factory: Callable[[], Design] = request.param
    return factory()
