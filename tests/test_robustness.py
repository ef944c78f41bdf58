"""Robustness statements (``deniable.estimation.manipulation_robustness``): how many fake
respondents move an estimate by a stated amount.

Checked against what does not share its formulas: the designs' own estimators applied to
every multiset of fake reports (output manipulation: the largest and smallest shift), the
exact expectation over the fakes' randomized reports (input manipulation: enumerating the
multinomial outcomes), the closed form of the issue for binary designs, and a seeded
simulation of honest-randomizing liars.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from _cases import DESIGN_CASES
from deniable.designs import Categorical, Design, Kuk, Tally, TwoCoin, Warner
from deniable.estimation import ManipulationRobustness, manipulation_robustness
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

# every one-group example: binary designs (any epsilon), Kuk with several draws, categorical
ONE_GROUP = [(i, f) for i, f in DESIGN_CASES if f().n_groups == 1]


def _values(design: Design, counts: np.ndarray) -> np.ndarray:
    """The design's own unbiased estimate(s) from report counts."""
    est = design.estimate(design.tally_counts(counts))
    values = getattr(est, "values", None)
    return np.atleast_1d(np.asarray(est.value if values is None else values, dtype=float))


def _honest_counts(design: Design, seed: int) -> np.ndarray:
    """A small tally with every report value present (so the estimate is defined)."""
    rng = np.random.default_rng(seed)
    return rng.integers(1, 6, size=design.n_reports).astype(np.int64)


@pytest.mark.parametrize("factory", [f for _, f in ONE_GROUP], ids=[i for i, _ in ONE_GROUP])
def test_the_estimates_are_the_designs_own(factory: Callable[[], Design]) -> None:
    d = factory()
    counts = _honest_counts(d, 1)
    r = manipulation_robustness(d, d.tally_counts(counts))
    np.testing.assert_allclose(r.estimates, _values(d, counts), rtol=1e-12, atol=1e-12)
    assert r.n == int(counts.sum())


@pytest.mark.parametrize("factory", [f for _, f in ONE_GROUP], ids=[i for i, _ in ONE_GROUP])
def test_output_manipulation_against_every_multiset_of_fake_reports(
    factory: Callable[[], Design],
) -> None:
    """The largest and smallest shift m fakes reach, over every multiset of m reports,
    estimated by the design itself, equals the statement's shift_by(m); and the smallest m
    that reaches the stated shift is the statement's fakes()."""
    d = factory()
    counts = _honest_counts(d, 2)
    base = _values(d, counts)
    cells = d.n_reports
    shift = 0.15
    r = manipulation_robustness(d, d.tally_counts(counts), shift=shift)
    first_reaching: dict[tuple[str, int], int] = {}
    for m in range(0, 9):
        best_up = np.full(base.size, -np.inf)
        best_down = np.full(base.size, -np.inf)
        for fakes in itertools.combinations_with_replacement(range(cells), m):
            moved = _values(d, counts + np.bincount(np.array(fakes, dtype=int), minlength=cells))
            best_up = np.maximum(best_up, moved - base)
            best_down = np.maximum(best_down, base - moved)
        for j in range(base.size):
            cat = None if base.size == 1 else j
            assert math.isclose(best_up[j], r.shift_by(m, "up", "output", cat), abs_tol=1e-9)
            assert math.isclose(best_down[j], r.shift_by(m, "down", "output", cat), abs_tol=1e-9)
            for direction, best in (("up", best_up[j]), ("down", best_down[j])):
                if best >= shift - 1e-12 and (direction, j) not in first_reaching:
                    first_reaching[(direction, j)] = m
    for j in range(base.size):
        cat = None if base.size == 1 else j
        for direction in ("up", "down"):
            found = r.fakes(direction, "output", cat)
            if found is not None and found <= 8:
                assert first_reaching.get((direction, j)) == found, (direction, j)
            else:  # not reached by 8 fakes: neither did the enumeration
                assert (direction, j) not in first_reaching


def _outcomes(column: np.ndarray, m: int) -> list[tuple[np.ndarray, float]]:
    """Every outcome (counts per report value) of m reports drawn from ``column``, with its
    exact multinomial probability."""
    out = []
    for fakes in itertools.combinations_with_replacement(range(column.size), m):
        c = np.bincount(np.array(fakes, dtype=int), minlength=column.size)
        out.append((c, float(stats.multinomial.pmf(c, m, column))))
    return out


@pytest.mark.parametrize("factory", [f for _, f in ONE_GROUP], ids=[i for i, _ in ONE_GROUP])
def test_input_manipulation_is_the_exact_expected_shift(factory: Callable[[], Design]) -> None:
    """Fakes who answer a and randomize honestly: the exact expectation of the design's own
    estimate over every outcome of their reports is the statement's expected shift (up for
    the answer j, down for any other answer)."""
    d = factory()
    counts = _honest_counts(d, 3)
    base = _values(d, counts)
    r = manipulation_robustness(d, d.tally_counts(counts))
    matrix = np.asarray(d.channel.dense(), dtype=float)
    for m in (1, 3):
        for a in range(d.n_truths):
            expected = sum(p * _values(d, counts + c) for c, p in _outcomes(matrix[:, a], m))
            moved = expected - base
            for j in range(base.size):
                cat = None if base.size == 1 else j
                # binary designs estimate the prevalence of the answer 1
                target = (a == 1) if base.size == 1 else (a == j)
                want = (
                    r.shift_by(m, "up", "input", cat)
                    if target
                    else -r.shift_by(m, "down", "input", cat)
                )
                assert math.isclose(moved[j], want, abs_tol=1e-9), (m, a, j)


@pytest.mark.parametrize("design", [Warner(0.75), Warner(0.2), TwoCoin(), Kuk(0.7, 0.3)], ids=repr)
@pytest.mark.parametrize(("yes", "n"), [(600, 1000), (30, 200), (1, 1)])
def test_the_binary_closed_form_of_the_issue(design: Design, yes: int, n: int) -> None:
    """m fake "yes" reports move the estimate by m (1 - lambda) / ((n + m)(P1 - P0)) (issue 14),
    fake "no" reports by m lambda / ((n + m)(P1 - P0)); the roles swap when P1 < P0."""
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0  # type: ignore[attr-defined]
    lam = yes / n
    r = manipulation_robustness(design, design.tally_counts([n - yes, yes]))
    for m in (1, 7, 1000):
        toward_yes = m * (1 - lam) / ((n + m) * abs(p1 - p0))
        toward_no = m * lam / ((n + m) * abs(p1 - p0))
        up, down = (toward_yes, toward_no) if p1 > p0 else (toward_no, toward_yes)
        assert math.isclose(r.shift_by(m, "up", "output"), up, rel_tol=1e-12)
        assert math.isclose(r.shift_by(m, "down", "output"), down, rel_tol=1e-12)


def test_the_fewest_fakes_and_their_share() -> None:
    # Warner 3/4, 600 yes of 1000: lambda 0.6, estimate 0.7, D = 0.4 / 0.5 = 0.8 (output up)
    d = Warner(0.75)
    r = manipulation_robustness(d, d.tally_counts([400, 600]), shift=0.05)
    # m >= s n / (D - s) = 50 / 0.75 = 66.67 -> 67; input: D = 0.3, 50 / 0.25 = 200 exactly
    assert r.fakes("up", "output") == 67
    assert r.fakes("up", "input") == 200
    assert r.shift_by(200, "up", "input") >= 0.05 > r.shift_by(199, "up", "input")
    assert r.share("up", "output") == pytest.approx(0.05 / 0.8, rel=1e-12)
    assert r.share("up", "input") == pytest.approx(0.05 / 0.3, rel=1e-12)
    # the issue's example: from 0.70 to 1.5 is the limit D = 0.8 itself: never reached
    far = manipulation_robustness(d, d.tally_counts([400, 600]), shift=0.8)
    assert far.fakes("up", "output") is None and far.share("up", "output") is None
    assert far.fakes("up", "input") is None
    assert "impossible" in str(far)


def test_k_ary_randomized_response_matches_the_maximal_gain_of_cao_jia_gong() -> None:
    """kRR (p, q): m fakes reporting j raise share j by m (1 - lambda_j) / ((n + m)(p - q))."""
    d = Categorical.from_epsilon(1.0, k=5)
    counts = np.array([50, 120, 90, 200, 40])
    n = int(counts.sum())
    t = d.p_truthful
    p, q = t + (1 - t) / 5, (1 - t) / 5
    r = manipulation_robustness(d, d.tally_counts(counts))
    for j in range(5):
        lam = counts[j] / n
        for m in (1, 10, 500):
            assert math.isclose(
                r.shift_by(m, "up", "output", j), m * (1 - lam) / ((n + m) * (p - q)), rel_tol=1e-12
            )
            assert math.isclose(
                r.shift_by(m, "down", "output", j), m * lam / ((n + m) * (p - q)), rel_tol=1e-12
            )


def test_simulated_liars_move_the_estimate_as_stated() -> None:
    """300 fakes answering "yes" through Warner's randomizer, 2000 trials (seed 14): the
    mean shift is the stated expectation within 4 standard errors (false alarm ~6e-5)."""
    d = Warner(0.75)
    counts = np.array([700, 1300])
    m = 300
    r = manipulation_robustness(d, d.tally_counts(counts))
    rng = np.random.default_rng(14)
    base = _values(d, counts)[0]
    shifts = []
    for _ in range(2000):
        fake = d.randomize(np.ones(m, dtype=np.int64), rng=rng)
        moved = counts + np.bincount(np.asarray(fake, dtype=int), minlength=2)
        shifts.append(_values(d, moved)[0] - base)
    arr = np.array(shifts)
    se = arr.std(ddof=1) / math.sqrt(arr.size)
    assert abs(arr.mean() - r.shift_by(m, "up", "input")) < 4 * se


def test_output_manipulation_never_needs_more_fakes_than_input() -> None:
    for d in (Warner(0.75), TwoCoin(), Categorical.from_epsilon(2.0, k=3), Kuk(0.8, 0.4, draws=3)):
        counts = _honest_counts(d, 7) * 40
        r = manipulation_robustness(d, d.tally_counts(counts), shift=0.02)
        for j in range(len(r.labels)):
            cat = None if len(r.labels) == 1 else j
            for direction in ("up", "down"):
                out, inp = r.fakes(direction, "output", cat), r.fakes(direction, "input", cat)
                if inp is not None:
                    assert out is not None and out <= inp


def test_the_result_prints_and_converts() -> None:
    d = Categorical.from_epsilon(1.0, k=3)
    r = manipulation_robustness(
        d, d.tally_counts([30, 50, 20]), shift=0.1, labels=["low", "mid", "high"]
    )
    assert isinstance(r, ManipulationRobustness)
    text = str(r)
    assert "low" in text and "+0.1 output" in text and "Cheu" in text
    data = r.to_dict()
    assert data["shift"] == 0.1 and data["n"] == 100 and data["key"] == d.key
    assert [s["label"] for s in data["shares"]] == ["low", "mid", "high"]
    assert data["shares"][1]["up"]["output"]["fakes"] == r.fakes("up", "output", 1)
    assert r.table().columns[0] == "share"


@pytest.mark.parametrize(
    ("call", "error", "needle"),
    [
        (lambda d, t: manipulation_robustness(d, t, shift=0), ParameterError, "`shift`"),
        (lambda d, t: manipulation_robustness(d, t, shift=1.5), ParameterError, "(0, 1]"),
        (lambda d, t: manipulation_robustness(d, t, shift=math.nan), ParameterError, "`shift`"),
        (lambda d, t: manipulation_robustness(d, t, shift="x"), ParameterTypeError, "`shift`"),
        (lambda d, t: manipulation_robustness("warner", t), ParameterTypeError, "`design`"),
        (lambda d, t: manipulation_robustness(d, [1, 2]), ParameterTypeError, "`tally`"),
        (lambda d, t: manipulation_robustness(d, Tally([0, 0])), DataError, "at least one"),
        (lambda d, t: manipulation_robustness(d, t, labels=["a", "b"]), ParameterError, "labels"),
        (lambda d, t: manipulation_robustness(Warner(0.6), t), DataError, "mechanism"),
        (lambda d, t: manipulation_robustness(d, t).fakes("sideways"), ParameterError, "direction"),
        (lambda d, t: manipulation_robustness(d, t).fakes("up", "both"), ParameterError, "manip"),
        (lambda d, t: manipulation_robustness(d, t).shift_by(-1), ParameterError, "`fakes`"),
    ],
)
def test_bad_arguments_name_the_parameter(
    call: Callable[[Design, Tally], object], error: type[Exception], needle: str
) -> None:
    d = Warner(0.75)
    with pytest.raises(error, match=None) as info:
        call(d, d.tally_counts([4, 6]))
    assert needle in str(info.value)


def test_categories_must_be_named_and_two_group_designs_are_refused() -> None:
    from deniable.designs import StochasticLieDetector

    d = Categorical.from_epsilon(1.0, k=3)
    r = manipulation_robustness(d, d.tally_counts([1, 2, 3]))
    with pytest.raises(ParameterError, match="`category`"):
        r.fakes("up", "output")
    with pytest.raises(ParameterError, match="`category`"):
        r.fakes("up", "output", 3)
    sld = StochasticLieDetector(2 / 12, 10 / 12)
    with pytest.raises(ParameterError, match="two-group"):
        manipulation_robustness(sld, sld.tally_counts([1, 2, 3, 4]))
