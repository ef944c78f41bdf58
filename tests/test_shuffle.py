"""Amplification by shuffling: the FMT closed form, the clone hockey stick checked against
enumeration and against the exact shuffled randomized response, ordering and errors."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from deniable.accounting import (
    ApproxDP,
    ShuffleTable,
    shuffle_closed_form_limit,
    shuffle_delta_numerical,
    shuffle_epsilon_closed_form,
    shuffle_epsilon_numerical,
    shuffle_epsilon_table,
    shuffle_guarantee,
)
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.plotting import plot_shuffle

# --- independent references ------------------------------------------------------------------


def _fmt_closed_form(eps0: float, n: int, delta: float) -> float:
    """FMT 2021, Thm. 3.1, typed in from the paper's statement."""
    e = math.exp(eps0)
    return math.log(
        1 + (e - 1) / (e + 1) * (8 * math.sqrt(e * math.log(4 / delta)) / math.sqrt(n) + 8 * e / n)
    )


def _binom_pmf(c: int, p: float) -> np.ndarray:
    return np.array([math.comb(c, k) * p**k * (1 - p) ** (c - k) for k in range(c + 1)])


def _clone_delta_enumerated(eps0: float, n: int, eps: float) -> float:
    """The clone pair from its definition: joint law of (C, count) under P and Q, both
    directions of the hockey stick, summed by brute force."""
    alpha = math.exp(eps0) / (1 + math.exp(eps0))
    q = math.exp(-eps0)
    pc = _binom_pmf(n - 1, q)
    forward = backward = 0.0
    for c in range(n):
        a = np.append(_binom_pmf(c, 0.5), 0.0)  # A on 0..c+1
        a_plus = np.insert(_binom_pmf(c, 0.5), 0, 0.0)  # A + 1
        p = alpha * a + (1 - alpha) * a_plus
        qq = (1 - alpha) * a + alpha * a_plus
        forward += pc[c] * np.sum(np.maximum(p - math.exp(eps) * qq, 0))
        backward += pc[c] * np.sum(np.maximum(qq - math.exp(eps) * p, 0))
    return max(forward, backward)


def _shuffled_rr_delta_exact(eps0: float, n: int, eps: float) -> float:
    """Exact delta of n shuffled binary randomized-response reports (the output is the number
    of 1-reports), maximised over the other n - 1 respondents' answers."""
    alpha = math.exp(eps0) / (1 + math.exp(eps0))
    worst = 0.0
    for m in range(n):  # m of the others answer 1
        others = np.convolve(_binom_pmf(m, alpha), _binom_pmf(n - 1 - m, 1 - alpha))
        p0 = np.convolve(others, [alpha, 1 - alpha])  # target answers 0
        p1 = np.convolve(others, [1 - alpha, alpha])  # target answers 1
        for a, b in ((p0, p1), (p1, p0)):
            worst = max(worst, float(np.sum(np.maximum(a - math.exp(eps) * b, 0))))
    return worst


# --- closed form ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("eps0", "n", "delta"), [(1.0, 100_000, 1e-6), (0.5, 10_000, 1e-8), (3.0, 10**7, 1e-10)]
)
def test_closed_form_matches_theorem(eps0: float, n: int, delta: float) -> None:
    got = shuffle_epsilon_closed_form(eps0, delta, n=n)
    want = _fmt_closed_form(eps0, n, delta)
    assert got >= want
    assert got == pytest.approx(want, rel=1e-11)


def test_closed_form_is_capped_at_epsilon0() -> None:
    # delta = 0.1, n = 60: the theorem covers eps0 <= ln(60 / (16 ln 20)) = 0.225..., and at
    # eps0 = 0.2 its value, 0.2110..., exceeds eps0: the local guarantee is returned instead.
    assert _fmt_closed_form(0.2, 60, 0.1) > 0.2
    assert shuffle_epsilon_closed_form(0.2, 0.1, n=60) == 0.2


def test_closed_form_refuses_outside_its_range() -> None:
    limit = math.log(100_000 / (16 * math.log(2 / 1e-6)))  # 5.85...
    assert shuffle_epsilon_closed_form(limit * (1 - 1e-12), 1e-6, n=100_000) > 0
    with pytest.raises(ParameterError, match=r"`epsilon0` must be in \(0, ln\(n / \(16 ln"):
        shuffle_epsilon_closed_form(limit * (1 + 1e-9), 1e-6, n=100_000)
    with pytest.raises(ParameterError, match=r"`n` must exceed 16 ln\(2/delta\).*got 100\."):
        shuffle_epsilon_closed_form(0.1, 1e-6, n=100)


# --- numerical bound --------------------------------------------------------------------------


@pytest.mark.parametrize(("eps0", "n"), [(1.0, 1), (1.0, 2), (0.5, 7), (2.0, 25), (4.0, 40)])
@pytest.mark.parametrize("eps", [0.0, 0.05, 0.3, 0.9])
def test_clone_delta_matches_enumeration(eps0: float, n: int, eps: float) -> None:
    want = _clone_delta_enumerated(eps0, n, eps)
    got = shuffle_delta_numerical(eps0, eps, n=n)
    assert got >= want * (1 - 1e-12)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(("eps0", "n"), [(1.0, 10), (2.0, 30), (0.7, 60)])
def test_clone_bound_covers_exact_shuffled_randomized_response(eps0: float, n: int) -> None:
    # FMT's bound holds for every eps0-LDP randomizer; binary RR is one, so the bound can
    # never be below RR's exact shuffled delta.
    # (the reference's own rounding is ~1e-17, hence the absolute slack)
    for eps in np.linspace(0.0, eps0, 9):
        exact = _shuffled_rr_delta_exact(eps0, n, eps)
        assert shuffle_delta_numerical(eps0, eps, n=n) >= exact - 1e-15


def test_single_respondent_is_randomized_response() -> None:
    # n = 1: delta(eps) = alpha - e^eps (1 - alpha), so eps(delta) = ln((alpha - delta)/(1 - alpha))
    eps0, delta = 1.0, 0.01
    alpha = math.exp(eps0) / (1 + math.exp(eps0))
    exact = math.log((alpha - delta) / (1 - alpha))
    got = shuffle_epsilon_numerical(eps0, delta, n=1)
    assert exact <= got <= exact * (1 + 2e-6)


def test_published_value_fmt_repository() -> None:
    # apple/ml-shuffling-amplification README (the paper's released code): for n = 1e5,
    # eps0 = 4, delta = 1e-6 the shuffled eps lies between 0.1675385 (lower) and 0.1727906
    # (upper); our exact clone computation must fall in that interval.
    got = shuffle_epsilon_numerical(4.0, 1e-6, n=100_000)
    assert 0.1675385583317841 <= got <= 0.172790550755978


@pytest.mark.parametrize(("eps0", "n", "delta"), [(1.0, 5_000, 1e-6), (3.0, 200_000, 1e-8)])
def test_bisection_is_safe_and_tight(eps0: float, n: int, delta: float) -> None:
    eps = shuffle_epsilon_numerical(eps0, delta, n=n, tolerance=1e-7)
    assert shuffle_delta_numerical(eps0, eps, n=n) <= delta
    assert shuffle_delta_numerical(eps0, eps * (1 - 1e-6), n=n) > delta


@pytest.mark.parametrize("eps0", [0.25, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_ordering_across_n(eps0: float, delta: float) -> None:
    ns = [10, 300, 3_000, 30_000, 300_000, 3_000_000]
    table = shuffle_epsilon_table(eps0, delta, n=ns)
    assert isinstance(table, ShuffleTable)
    numerical = np.array(table.numerical)
    assert np.all(numerical >= 0)
    assert np.all(numerical <= eps0)
    # more respondents, more privacy (strictly, once below eps0)
    assert np.all(np.diff(numerical) <= 0)
    below = numerical[numerical < eps0]
    assert below.size >= 3 and np.all(np.diff(below) < 0)
    closed = [c for c in table.closed_form if c is not None]
    assert closed and np.all(np.diff(closed) < 0)
    for num, cf in zip(table.numerical, table.closed_form, strict=True):
        if cf is not None:
            assert num <= cf
            assert cf <= eps0


def test_huge_n_gives_tiny_epsilon_and_delta_zero_above_eps0() -> None:
    assert shuffle_epsilon_numerical(1.0, 1e-6, n=10**8) < 2e-3
    assert shuffle_delta_numerical(2.0, 2.0, n=50) == 0.0
    assert shuffle_delta_numerical(2.0, 3.0, n=50) == 0.0
    assert shuffle_delta_numerical(2.0, 1.9, n=50) > 0.0


def test_guarantee_objects() -> None:
    g = shuffle_guarantee(1.0, 1e-6, n=10_000)
    assert g == ApproxDP(shuffle_epsilon_numerical(1.0, 1e-6, n=10_000), 1e-6)
    c = shuffle_guarantee(1.0, 1e-6, n=10_000, method="closed_form")
    assert c.epsilon == shuffle_epsilon_closed_form(1.0, 1e-6, n=10_000)
    assert g.epsilon < c.epsilon


def test_table_rows_and_text() -> None:
    table = shuffle_epsilon_table(2.0, 1e-6, n=[1_000, 100_000])
    rows = table.rows()
    assert rows[0]["closed_form"] is None  # 2.0 > ln(1000 / (16 ln 2e6))
    assert rows[1]["closed_form"] == shuffle_epsilon_closed_form(2.0, 1e-6, n=100_000)
    assert " - " in str(table)  # the closed form does not apply at n = 1000


def test_bad_input_names_the_parameter() -> None:
    cases = [
        (lambda: shuffle_epsilon_numerical(-1.0, 1e-6, n=100), "`epsilon0` must be in"),
        (lambda: shuffle_epsilon_numerical(0.0, 1e-6, n=100), "`epsilon0` must be in"),
        (
            lambda: shuffle_epsilon_numerical(1.0, 1e-6, n=0),
            r"`n` must be an integer in \[1, 10\*\*300\]",
        ),
        (lambda: shuffle_epsilon_numerical(1.0, 0.0, n=100), r"`delta` must be in \(0, 1\)"),
        (lambda: shuffle_epsilon_numerical(1.0, 1.0, n=100), r"`delta` must be in \(0, 1\)"),
        (lambda: shuffle_epsilon_closed_form(1.0, 1.5, n=10**6), r"`delta` must be in \(0, 1\)"),
        (lambda: shuffle_delta_numerical(1.0, -0.1, n=100), "`epsilon` must be in"),
        (lambda: shuffle_epsilon_numerical(1.0, 1e-6, n=100, tolerance=0), "`tolerance`"),
        (lambda: shuffle_guarantee(1.0, 1e-6, n=100, method="exact"), "`method` must be one of"),
        (lambda: shuffle_epsilon_table(1.0, 1e-6, n=[100, 0]), "`n` must be an integer"),
    ]
    for call, message in cases:
        with pytest.raises(ParameterError, match=message):
            call()
    with pytest.raises(ParameterTypeError, match="`n` must be an integer"):
        shuffle_epsilon_numerical(1.0, 1e-6, n=10.5)


def test_plot_needs_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    table = shuffle_epsilon_table(1.0, 1e-6, n=[1_000, 100_000])
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install deniable\[plot\]"):
        plot_shuffle(table)


def test_plot_draws_when_matplotlib_present() -> None:
    import matplotlib

    matplotlib.use("Agg")
    ax = plot_shuffle(shuffle_epsilon_table(1.0, 1e-6, n=[1_000, 100_000]))
    assert len(ax.get_lines()) == 3


# --- huge finite epsilon0 --------------------------------------------------------------------


@pytest.mark.parametrize("eps0", [700.0, 710.0, 1e6, 1e300])
@pytest.mark.parametrize("delta", [1e-300, 0.5])
def test_huge_epsilon0_is_safe(eps0: float, delta: float) -> None:
    """e^eps0 overflows a double from 709.78 on.  Clones have probability e^-eps0 ~ 0, so
    there is no amplification: with 1000 respondents the central epsilon is that of one
    randomized-response report, eps0 + ln(1 - delta) (P(report = truth) = 1 to double
    precision), never less and never above eps0."""
    n = 1000
    eps = shuffle_epsilon_numerical(eps0, delta, n=n)
    lower = eps0 + math.log1p(-delta)
    assert lower * (1 - 1e-15) <= eps <= eps0
    assert eps <= lower + 1e-6 * eps0 + 1e-12  # the bisection's documented tolerance
    assert 1 - 1e-12 <= shuffle_delta_numerical(eps0, 1.0, n=n) <= 1.0
    assert shuffle_delta_numerical(eps0, eps0, n=n) == 0.0
    assert shuffle_guarantee(eps0, delta, n=n).epsilon == eps


def test_closed_form_limit_is_the_theorems_range() -> None:
    """``shuffle_closed_form_limit`` is ``ln(n / (16 ln(2/delta)))``, and ``-inf`` where
    ``2 / delta`` overflows (no epsilon0 qualifies; never a math domain error)."""
    assert shuffle_closed_form_limit(1e-6, n=10**5) == pytest.approx(
        math.log(10**5 / (16 * math.log(2e6))), rel=1e-14
    )
    assert shuffle_closed_form_limit(5e-324, n=3891) == -math.inf
    with pytest.raises(ParameterError, match="`delta`"):
        shuffle_closed_form_limit(0.0, n=10)
