"""The design contract, run on every parameterisation of every registered design.

A design is an exact channel ``P[report | truth]`` plus a randomizer that realizes it, a
mergeable tally and an unbiased estimator.  Each test below checks one clause of that
contract against an independent route (closed forms, exhaustive enumeration, or seeded
simulation with a stated false-alarm rate); ``tests/conftest.py`` supplies the designs.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from conftest import DESIGN_CASES
from deniable.designs import (
    DESIGNS,
    BinaryDesign,
    Categorical,
    Design,
    Tally,
    channel_epsilon,
    make_design,
)
from deniable.exceptions import DataError
from deniable.randomness import CHUNK

REL = 1e-12


# --- helpers ---------------------------------------------------------------------------------


def worst_ratio(channel: np.ndarray) -> float:
    """``max_{r, x, x'} P[r|x] / P[r|x']`` by brute force over pairs (``inf`` if a 0 meets a
    positive entry); independent of :func:`deniable.designs.channel_epsilon`."""
    worst = 1.0
    for row in channel:
        for a, b in itertools.permutations(row, 2):
            if a > 0 and b == 0:
                return math.inf
            if b > 0:
                worst = max(worst, a / b)
    return worst


def satisfies_ldp(channel: np.ndarray, epsilon: float) -> bool:
    """Every report's likelihood ratio is at most ``e^epsilon`` (up to rounding)."""
    bound = math.exp(epsilon) * (1 + REL)
    for row in channel:
        for a, b in itertools.permutations(row, 2):
            if a > bound * b:
                return False
    return True


def compositions(n: int, parts: int) -> list[tuple[int, ...]]:
    """Every way to write ``n`` as an ordered sum of ``parts`` non-negative integers."""
    out = []
    for cuts in itertools.combinations(range(n + parts - 1), parts - 1):
        edges = (-1, *cuts, n + parts - 1)
        out.append(tuple(edges[i + 1] - edges[i] - 1 for i in range(parts)))
    return out


def point_values(design: Design, estimate: Any) -> np.ndarray:
    """The estimated share of each truth 1.. (binary: the prevalence) as an array."""
    if hasattr(estimate, "values"):
        return np.asarray(estimate.values, dtype=float)
    return np.array([estimate.value])


def truth_shares(design: Design, prevalence: np.ndarray) -> np.ndarray:
    """What :func:`point_values` estimates, for a distribution of truths ``prevalence``."""
    return prevalence if design.n_truths > 2 or isinstance(design, Categorical) else prevalence[1:]


# --- registry --------------------------------------------------------------------------------


def test_every_registered_design_has_at_least_two_parameterisations() -> None:
    counts = {name: 0 for name in DESIGNS}
    for case_id, _ in DESIGN_CASES:
        counts[case_id.rsplit("-", 1)[0]] += 1
    assert all(c >= 2 for c in counts.values()), counts


def test_design_is_registered_under_its_name(design: Design) -> None:
    assert DESIGNS[design.name] is type(design)


def test_parameters_rebuild_the_design(design: Design) -> None:
    rebuilt = make_design(design.name, design.parameters())
    assert rebuilt == design
    assert np.array_equal(rebuilt.channel, np.asarray(design.channel))


def test_design_is_frozen(design: Design) -> None:
    first = next(iter(design.parameters()))
    field_names = [f.name for f in dataclasses.fields(design)]  # type: ignore[arg-type]
    target = first if first in field_names else field_names[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(design, target, 0.3)


def test_repr_and_str(design: Design) -> None:
    assert type(design).__name__ in repr(design)
    assert str(design)


# --- channel and epsilon ---------------------------------------------------------------------


def test_channel_is_stochastic(design: Design) -> None:
    ch = np.asarray(design.channel)
    assert ch.shape == (design.n_reports, design.n_truths)
    assert design.n_reports >= 2 and design.n_truths >= 2
    assert np.all(ch >= 0) and np.all(ch <= 1)
    np.testing.assert_allclose(ch.sum(axis=0), 1.0, rtol=0, atol=1e-12)


def test_epsilon_is_the_channel_epsilon(design: Design) -> None:
    from deniable.designs import channel_epsilon

    eps = design.epsilon
    assert isinstance(eps, float) and not math.isnan(eps) and eps >= 0
    independent = math.log(worst_ratio(design.channel))
    assert channel_epsilon(design.channel) == pytest.approx(independent, rel=REL)
    if math.isinf(independent):
        assert eps == math.inf
    else:
        assert eps == pytest.approx(independent, rel=REL)


def test_epsilon_is_tight(design: Design) -> None:
    ch = np.asarray(design.channel)
    eps = design.epsilon
    if math.isinf(eps):
        # some report is impossible under one truth and possible under another
        assert any(row.min() == 0 < row.max() for row in ch)
        return
    assert not any(row.min() == 0 < row.max() for row in ch)
    # the stated epsilon holds, a slightly smaller one fails: some ratio equals e^eps
    assert satisfies_ldp(ch, eps)
    assert not satisfies_ldp(ch, eps * (1 - 1e-9))
    assert worst_ratio(ch) == pytest.approx(math.exp(eps), rel=REL)


def test_randomizer_thresholds_realize_the_stated_epsilon(one_bit_design: Design) -> None:
    """The randomizer draws ``P(yes | x)`` as ``t[x] / 2**53`` with integer thresholds rounded
    toward privacy; the channel it actually implements must have the same impossible reports
    and an epsilon never above the stated one (and within 1e-9 of it).  Kuk k > 1 and
    categorical designs: test_designs.py and test_implemented_channel_is_never_less_private."""
    design = one_bit_design
    assert isinstance(design, BinaryDesign)
    t0, t1 = design.thresholds()
    p1, p0 = t1 / 2**53, t0 / 2**53
    realized = np.array([[1 - p0, 1 - p1], [p0, p1]])
    assert np.array_equal(realized == 0, np.asarray(design.channel) == 0)
    eps = design.epsilon
    if math.isinf(eps):
        assert math.isinf(worst_ratio(realized))
    else:
        assert math.log(worst_ratio(realized)) <= eps
        assert math.log(worst_ratio(realized)) == pytest.approx(eps, rel=1e-9)


def test_implemented_channel_is_never_less_private(design: Design) -> None:
    """Every design: the exactly implemented channel's epsilon <= the stated epsilon.

    Binary designs meet this in exact integer ratios; the 1e-12 relative slack covers only
    the float evaluation of multi-draw (Kuk) binomial probabilities."""
    implemented = np.asarray(design.implemented_channel)
    assert np.allclose(implemented.sum(axis=0), 1.0, atol=1e-12)
    assert np.array_equal(implemented == 0, np.asarray(design.channel) == 0)
    eps = design.epsilon
    got = channel_epsilon(implemented)
    if math.isinf(eps):
        assert math.isinf(got)
    else:
        assert got <= eps * (1 + 1e-12)
        assert got == pytest.approx(eps, rel=1e-9)


# --- randomize -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 7, CHUNK + 3])
def test_randomize_range_dtype_shape(design: Design, n: int) -> None:
    truth = np.arange(n) % design.n_truths
    out = design.randomize(truth, rng=1)
    assert out.shape == (n,)
    assert np.issubdtype(out.dtype, np.integer)
    if n:
        assert out.min() >= 0 and out.max() < design.n_reports


def test_randomize_accepts_lists_bools_and_integral_floats(design: Design) -> None:
    truth = [0, 1, 1, 0, 1] * 20
    expected = design.randomize(np.array(truth, dtype=np.int64), rng=5)
    assert np.array_equal(design.randomize(truth, rng=5), expected)
    assert np.array_equal(design.randomize(np.array(truth, dtype=float), rng=5), expected)
    assert np.array_equal(design.randomize(np.array(truth, dtype=np.uint8), rng=5), expected)
    assert np.array_equal(design.randomize(np.array(truth, dtype=bool), rng=5), expected)
    assert design.randomize(1, rng=5).shape == (1,)


def test_randomize_is_reproducible_from_a_seed(design: Design) -> None:
    truth = np.arange(1000) % design.n_truths
    a = design.randomize(truth, rng=11)
    b = design.randomize(truth, rng=np.random.default_rng(11))
    assert np.array_equal(a, b)


@pytest.mark.parametrize("n", [1, 100, CHUNK + 5])
def test_randomize_consumes_the_same_words_whatever_the_truth(design: Design, n: int) -> None:
    k = design.n_truths
    truths = [
        np.zeros(n, dtype=np.int64),
        np.full(n, k - 1, dtype=np.int64),
        np.arange(n, dtype=np.int64) % k,
        np.random.default_rng(3).integers(0, k, n),
    ]
    states = []
    for truth in truths:
        gen = np.random.default_rng(99)
        design.randomize(truth, rng=gen)
        states.append(gen.bit_generator.state)
    assert all(s == states[0] for s in states[1:])
    # ... and some randomness was consumed
    assert states[0] != np.random.default_rng(99).bit_generator.state


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param("too-big", id="k"),
        pytest.param([-1], id="negative"),
        pytest.param([0.5], id="fraction"),
        pytest.param([[0, 1], [1, 0]], id="2-D"),
        pytest.param(["a", "b"], id="strings"),
        pytest.param([math.nan], id="nan"),
        pytest.param([None], id="object"),
    ],
)
def test_invalid_truth_raises_data_error_naming_truth(design: Design, bad: Any) -> None:
    if bad == "too-big":
        bad = [0, design.n_truths]
    with pytest.raises(DataError, match="`truth`"):
        design.randomize(bad, rng=1)


# --- the randomizer realizes the channel (seeded statistical tests) --------------------------

N_EMPIRICAL = 200_000


def _empirical_counts(design: Design, n: int = N_EMPIRICAL, seed: int = 20240601) -> np.ndarray:
    """``counts[r, x]``: reports ``r`` among ``n`` respondents with truth ``x``."""
    gen = np.random.default_rng(seed)
    cols = []
    for x in range(design.n_truths):
        reports = design.randomize(np.full(n, x), rng=gen)
        cols.append(np.bincount(reports, minlength=design.n_reports))
    return np.column_stack(cols)


def _check_channel(design: Design, counts: np.ndarray, n: int) -> None:
    for (r, x), p in np.ndenumerate(design.channel):
        c = int(counts[r, x])
        if p == 0:
            assert c == 0, (r, x)
        elif p == 1:
            assert c == n, (r, x)
        else:
            pvalue = stats.binomtest(c, n, p).pvalue
            assert pvalue > 1e-6, (r, x, c / n, p)


def test_empirical_channel_matches(design: Design) -> None:
    """Per cell, an exact two-sided binomial test at level 1e-6 (false alarm <= 1e-6 per
    cell, ~4e-4 over the ~400 cells of the suite); impossible and certain reports exactly."""
    _check_channel(design, _empirical_counts(design), N_EMPIRICAL)


@pytest.mark.slow
def test_empirical_channel_matches_at_two_million(design: Design) -> None:
    """As above with 2e6 respondents per truth (detects channel errors of ~1e-3); same
    false-alarm rate."""
    n = 2_000_000
    _check_channel(design, _empirical_counts(design, n, seed=7), n)


def test_empirical_likelihood_ratios_within_e_epsilon(finite_design: Design) -> None:
    """``ln(p_hat(r|x) / p_hat(r|x')) <= eps + 5 se`` (delta-method se of the log ratio):
    one-sided 5-sigma band, false alarm ~3e-7 per report and pair.  Infinite epsilon:
    covered by test_epsilon_is_tight."""
    design = finite_design
    eps = design.epsilon
    counts = _empirical_counts(design)
    n = N_EMPIRICAL
    for r in range(design.n_reports):
        for x, y in itertools.permutations(range(design.n_truths), 2):
            a, b = counts[r, x] / n, counts[r, y] / n
            if a == 0 or b == 0:
                continue
            se = math.sqrt((1 - a) / (n * a) + (1 - b) / (n * b))
            assert math.log(a / b) <= eps + 5 * se, (r, x, y)


# --- tally and estimator ---------------------------------------------------------------------


def test_tallies_add(design: Design) -> None:
    gen = np.random.default_rng(4)
    a = design.randomize(gen.integers(0, design.n_truths, 300), rng=gen)
    b = design.randomize(gen.integers(0, design.n_truths, 170), rng=gen)
    ta, tb = design.tally(a), design.tally(b)
    assert ta + tb == design.tally(np.concatenate([a, b]))
    assert (ta + tb).n == 470
    assert len(ta.counts) == design.n_reports


def test_estimate_from_reports_tally_and_counts_agree(design: Design) -> None:
    gen = np.random.default_rng(8)
    reports = design.randomize(gen.integers(0, design.n_truths, 2000), rng=gen)
    tally = design.tally(reports)
    from_reports = design.estimate(reports).to_dict()  # type: ignore[attr-defined]
    from_tally = design.estimate(tally).to_dict()  # type: ignore[attr-defined]
    assert from_reports == from_tally
    if isinstance(design, BinaryDesign) and design.n_reports == 2:
        from_counts = design.estimate(yes=tally.yes, n=tally.n).to_dict()
        assert from_counts == from_reports
    json.dumps(from_reports)


@pytest.mark.parametrize("mix", [0, 1, 2])
def test_estimator_is_exactly_unbiased(design: Design, mix: int) -> None:
    """``E[estimate]`` summed exactly over every tally of n = 5 respondents (multinomial with
    probabilities ``channel @ prevalence``) equals the prevalence."""
    k = design.n_truths
    prevalence = [
        np.eye(k)[0],
        np.full(k, 1 / k),
        np.arange(1, k + 1) / (k * (k + 1) / 2),
    ][mix]
    probs = np.asarray(design.channel) @ prevalence
    n = 5
    expected = np.zeros(len(truth_shares(design, prevalence)))
    for counts in compositions(n, design.n_reports):
        weight = stats.multinomial.pmf(counts, n, probs)
        if weight == 0:
            continue
        expected += weight * point_values(design, design.estimate(Tally(counts)))  # type: ignore[attr-defined]
    np.testing.assert_allclose(expected, truth_shares(design, prevalence), rtol=0, atol=1e-12)


def test_estimate_at_expected_counts_inverts_the_channel(design: Design) -> None:
    """With tally exactly ``n * channel @ prevalence`` the estimate is the prevalence."""
    k = design.n_truths
    prevalence = np.arange(1, k + 1) / (k * (k + 1) / 2)
    n = 10**9
    # rounding the expected counts to integers moves the estimate by <= 1e-9 / |P1 - P0|
    rounded = np.round(n * (design.channel @ prevalence)).astype(np.int64)
    est = design.estimate(Tally(tuple(int(c) for c in rounded)))  # type: ignore[attr-defined]
    np.testing.assert_allclose(
        point_values(design, est), truth_shares(design, prevalence), rtol=0, atol=1e-6
    )


def test_estimate_rejects_an_empty_tally(design: Design) -> None:
    with pytest.raises(DataError):
        design.estimate(Tally((0,) * design.n_reports))  # type: ignore[attr-defined]


def test_estimate_rejects_a_tally_of_the_wrong_size(design: Design) -> None:
    with pytest.raises(DataError, match="report values"):
        design.estimate(Tally((1,) * (design.n_reports + 1)))  # type: ignore[attr-defined]


# --- from_epsilon: never above the request, never infinite -----------------------------------

#: The sweep of requested epsilons: tiny, ordinary, near and past the randomizer's limit
#: (2**-53 gives ln(2**53 - 1) = 36.74 per bit), past exp() overflow (709.8) and huge.
FROM_EPSILON_SWEEP = [1e-6, 0.5, 5.0, 20.0, 30.0, 36.0, 37.0, 40.0, 60.0, 700.0, 800.0, 1e6]

#: Values tried for the other arguments of a from_epsilon (every keyword it takes is varied).
FROM_EPSILON_ARGUMENTS: dict[str, list[Any]] = {
    "k": [2, 4, 1000],
    "draws": [1, 3],
    "q": [0.5, 0.2],
    "calibration": ["exact", "half"],
}


def _from_epsilon_cases() -> list[tuple[str, type[Design], dict[str, Any]]]:
    import inspect

    cases = []
    for name, cls in DESIGNS.items():
        make = getattr(cls, "from_epsilon", None)
        if make is None:
            continue
        others = [p for p in inspect.signature(make).parameters if p != "epsilon"]
        # a new keyword must get test values above (KeyError otherwise): no silent gaps
        for values in itertools.product(*(FROM_EPSILON_ARGUMENTS[p] for p in others)):
            kwargs = dict(zip(others, values, strict=True))
            label = ",".join(f"{k}={v}" for k, v in kwargs.items())
            cases.append((f"{name}({label})" if label else name, cls, kwargs))
    return cases


FROM_EPSILON_CASES = _from_epsilon_cases()


def test_the_from_epsilon_sweep_covers_the_designs_that_have_one() -> None:
    covered = {cls.name for _, cls, _ in FROM_EPSILON_CASES}
    assert {"warner", "two-coin", "biased-coin", "binary", "kuk", "categorical"} <= covered


@pytest.mark.parametrize(
    ("cls", "kwargs"), [c[1:] for c in FROM_EPSILON_CASES], ids=[c[0] for c in FROM_EPSILON_CASES]
)
@pytest.mark.parametrize("eps", FROM_EPSILON_SWEEP)
def test_from_epsilon_never_exceeds_the_request(
    cls: type[Design], kwargs: dict[str, Any], eps: float
) -> None:
    """Either a design whose stated epsilon is at most the request (and equal to its
    channel's), implemented at most that, or a ParameterError naming `epsilon` with the
    representable bound; never an infinite epsilon, an OverflowError or an error naming
    another parameter."""
    from deniable.exceptions import ParameterError

    try:
        design = cls.from_epsilon(eps, **kwargs)  # type: ignore[attr-defined]
    except ParameterError as exc:
        message = str(exc)
        assert message.startswith("`epsilon` must be"), message
        assert ("at most" in message) or ("at least" in message), message
        assert repr(eps) in message or str(eps) in message, message
        # ordinary privacy levels are always representable
        assert not 0.5 <= eps <= 20, message
        return
    stated = design.epsilon
    assert 0 < stated <= eps and math.isfinite(stated)
    assert channel_epsilon(design.channel) == pytest.approx(stated, rel=1e-9)
    # the implemented channel: 1e-12 slack for the float evaluation of multi-draw binomials
    assert channel_epsilon(design.implemented_channel) <= stated * (1 + 1e-12)
    if 0.5 <= eps <= 5:
        # the "half" calibration of the binary mechanism is eps/2-LDP for one bit, and says so
        target = eps / 2 if kwargs.get("calibration") == "half" else eps
        assert stated == pytest.approx(target, rel=1e-9)
