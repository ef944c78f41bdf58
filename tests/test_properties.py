"""Property tests (hypothesis): for random valid parameters, channels are stochastic, tallies
add, estimators invert channels, epsilon is non-negative and does not depend on labels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from deniable.designs import (
    BiasedCoin,
    Binary,
    BinaryDesign,
    Categorical,
    Crosswise,
    Custom,
    Design,
    ForcedResponse,
    Kuk,
    Mangat,
    Mirrored,
    Tally,
    Triangular,
    TwoCoin,
    UnrelatedQuestion,
    Warner,
    channel_epsilon,
)


def probs(lo: float = 0.01, hi: float = 0.99) -> st.SearchStrategy[float]:
    return st.floats(lo, hi, allow_nan=False)


def not_half(lo: float = 0.01, hi: float = 0.99) -> st.SearchStrategy[float]:
    return probs(lo, hi).filter(lambda p: abs(p - 0.5) > 0.01)


def edge_or(inner: st.SearchStrategy[float], *edges: float) -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(edges), inner) if edges else inner


@st.composite
def forced_pairs(draw: st.DrawFn) -> ForcedResponse:
    fy = draw(edge_or(probs(0.01, 0.9), 0.0))
    fn = draw(edge_or(probs(0.01, 0.98 - fy), 0.0))
    return ForcedResponse(fy, fn)


@st.composite
def kuks(draw: st.DrawFn) -> Kuk:
    t1 = draw(edge_or(probs(), 0.0, 1.0))
    t2 = draw(edge_or(probs(), 0.0, 1.0).filter(lambda t: abs(t - t1) > 0.02))
    return Kuk(t1, t2, draws=draw(st.integers(1, 6)))


@st.composite
def customs(draw: st.DrawFn) -> Custom:
    p1 = draw(edge_or(probs(), 0.0, 1.0))
    p0 = draw(edge_or(probs(), 0.0, 1.0).filter(lambda p: abs(p - p1) > 0.02))
    return Custom(p1, p0)


@st.composite
def categoricals(draw: st.DrawFn) -> Categorical:
    k = draw(st.integers(2, 6))
    truth = draw(edge_or(probs(0.01, 0.95), 1.0))
    if draw(st.booleans()):
        return Categorical(k=k, p_truthful=truth)
    weights = draw(st.lists(edge_or(probs(0.01, 1.0), 0.0), min_size=k, max_size=k))
    if sum(weights) == 0:
        weights[0] = 1.0
    total = math.fsum(weights)
    return Categorical(k=k, p_truthful=truth, forced=tuple(w / total for w in weights))


BINARY_DESIGNS: st.SearchStrategy[BinaryDesign] = st.one_of(
    st.builds(Warner, not_half()),
    st.builds(Mirrored, not_half()),
    st.builds(Crosswise, not_half()),
    st.builds(BiasedCoin, not_half()),
    st.builds(TwoCoin, p_truthful=edge_or(probs(0.02), 1.0), p_yes=edge_or(probs(), 0.0, 1.0)),
    st.builds(Binary, st.floats(0.01, 10.0), st.sampled_from(["exact", "half"])),
    forced_pairs(),
    st.builds(UnrelatedQuestion, edge_or(probs(0.02), 1.0), edge_or(probs(), 0.0, 1.0)),
    st.builds(Mangat, edge_or(probs(0.02), 1.0)),
    st.builds(Triangular, edge_or(probs(0.0, 0.98), 0.0)),
    customs(),
    kuks(),
)
DESIGNS: st.SearchStrategy[Design] = st.one_of(BINARY_DESIGNS, categoricals())


@given(DESIGNS)
def test_channels_are_stochastic(design: Design) -> None:
    ch = np.asarray(design.channel)
    assert np.all(ch >= 0) and np.all(ch <= 1)
    np.testing.assert_allclose(ch.sum(axis=0), 1.0, rtol=0, atol=1e-12)


@given(DESIGNS)
def test_epsilon_is_the_channel_epsilon_and_non_negative(design: Design) -> None:
    eps = design.epsilon
    assert eps >= 0 and not math.isnan(eps)
    ref = channel_epsilon(design.channel)
    if math.isinf(ref):
        assert math.isinf(eps)
    else:
        assert eps == pytest.approx(ref, rel=1e-9, abs=1e-12)


@given(DESIGNS, st.data())
def test_epsilon_does_not_depend_on_labels(design: Design, data: st.DataObject) -> None:
    ch = np.asarray(design.channel)
    rows = data.draw(st.permutations(range(ch.shape[0])))
    cols = data.draw(st.permutations(range(ch.shape[1])))
    relabelled = ch[rows][:, cols]
    assert channel_epsilon(relabelled) == pytest.approx(design.epsilon, rel=1e-9, abs=1e-12)


@given(customs())
def test_swapping_answers_or_reports_keeps_epsilon(design: Custom) -> None:
    p1, p0 = design.p_yes_given_1, design.p_yes_given_0
    swapped_truth = Custom(p0, p1)  # relabel carriers and non-carriers
    swapped_report = Custom(1 - p1, 1 - p0)  # relabel "yes" and "no"
    for other in (swapped_truth, swapped_report):
        assert other.epsilon == pytest.approx(design.epsilon, rel=1e-12)


@given(categoricals(), st.permutations(range(6)))
def test_permuting_forced_categories_keeps_epsilon(design: Categorical, perm: list[int]) -> None:
    f = design.forced_distribution
    order = [i for i in perm if i < design.k]
    forced = tuple(float(x) for x in f[order])
    other = Categorical(k=design.k, p_truthful=design.p_truthful, forced=forced)
    assert other.epsilon == pytest.approx(design.epsilon, rel=1e-12)


@given(
    DESIGNS,
    st.lists(st.integers(0, 10**6), min_size=0, max_size=60),
    st.lists(st.integers(0, 10**6), min_size=0, max_size=60),
)
def test_tallies_add(design: Design, a: list[int], b: list[int]) -> None:
    m = design.n_reports
    ra = [x % m for x in a]
    rb = [x % m for x in b]
    merged = design.tally_counts((0,) * m) + design.tally(ra) + design.tally(rb)
    assert merged == design.tally(ra + rb) == sum([design.tally(ra), design.tally(rb)])
    assert merged.mechanism == design.key
    assert merged.n == len(a) + len(b)
    assert design.tally(ra) + design.tally(rb) == design.tally(rb) + design.tally(ra)


@given(DESIGNS, st.data())
def test_estimator_inverts_the_channel(design: Design, data: st.DataObject) -> None:
    """At the expected tally ``n * channel @ prevalence`` the estimate is the prevalence
    (n = 10**12: rounding to whole counts moves it by < 1e-12 / slope)."""
    k = design.n_truths
    weights = data.draw(st.lists(probs(0.0, 1.0), min_size=k, max_size=k))
    if sum(weights) == 0:
        weights[-1] = 1.0
    prevalence = np.array(weights) / math.fsum(weights)
    n = 10**12
    counts = tuple(int(c) for c in np.round(n * (design.channel @ prevalence)))
    est = design.estimate(Tally(counts))  # type: ignore[attr-defined]
    if isinstance(design, Categorical):
        np.testing.assert_allclose(est.values, prevalence, rtol=0, atol=1e-8)
    else:
        assert est.value == pytest.approx(prevalence[1], abs=1e-8)


@given(BINARY_DESIGNS.filter(lambda d: d.n_reports == 2), st.integers(1, 500), st.data())
def test_intervals_contain_the_bounded_estimate(
    design: BinaryDesign, n: int, data: st.DataObject
) -> None:
    yes = data.draw(st.integers(0, n))
    est = design.estimate(yes=yes, n=n)
    assert est.bounded == min(max(est.value, 0.0), 1.0)
    for method in ("exact", "wilson"):
        lo, hi = est.ci(0.95, method)
        assert 0.0 <= lo <= hi <= 1.0
        assert lo - 1e-12 <= est.bounded <= hi + 1e-12


@given(BINARY_DESIGNS, st.integers(1, 2000), st.data())
def test_fixed_population_variance_never_exceeds_iid(
    design: BinaryDesign, n: int, data: st.DataObject
) -> None:
    carriers = data.draw(st.integers(0, n))
    pi = carriers / n
    fixed = design.variance(pi, n, population="fixed")
    iid = design.variance(pi, n)
    assert 0.0 <= fixed <= iid * (1 + 1e-12) + 1e-300


@given(
    st.sampled_from(
        [
            Warner.from_epsilon,
            TwoCoin.from_epsilon,
            BiasedCoin.from_epsilon,
            Binary.from_epsilon,
            ForcedResponse.from_epsilon,
            UnrelatedQuestion.from_epsilon,
        ]
    ),
    st.floats(0.001, 15.0),
)
def test_from_epsilon_round_trips(make: object, eps: float) -> None:
    design = make(eps)  # type: ignore[operator]
    assert design.epsilon == pytest.approx(eps, rel=1e-9)


@given(st.floats(0.001, 15.0), st.integers(2, 50))
def test_k_rr_from_epsilon_round_trips(eps: float, k: int) -> None:
    assert Categorical.from_epsilon(eps, k=k).epsilon == pytest.approx(eps, rel=1e-9)


@given(
    st.lists(st.integers(0, 10**15), min_size=2, max_size=40),
    st.lists(st.integers(0, 10**15), min_size=2, max_size=40),
    st.one_of(st.none(), st.text(min_size=1, max_size=30)),
)
def test_tally_serial_forms_round_trip_and_add(a: list[int], b: list[int], key: str | None) -> None:
    import pickle

    ta = Tally(a, mechanism=key)
    for again in (
        Tally.from_bytes(ta.to_bytes()),
        Tally.from_json(ta.to_json()),
        pickle.loads(pickle.dumps(ta)),
    ):
        assert again == ta and again.mechanism == key and again.counts.tolist() == a
    if len(a) == len(b):
        tb = Tally(b, mechanism=key)
        assert (ta + tb).counts.tolist() == [x + y for x, y in zip(a, b, strict=True)]
        assert sum([ta, tb]) == ta + tb == tb + ta
