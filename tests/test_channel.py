"""Channel operators: dense, symmetric k-ary (two numbers) and support counts."""

from __future__ import annotations

import itertools
import math
import pickle

import numpy as np
import pytest

from deniable.designs import (
    Categorical,
    Channel,
    DenseChannel,
    SupportChannel,
    SymmetricChannel,
    Warner,
    channel_epsilon,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError


def test_dense_channel() -> None:
    ch = DenseChannel([[0.25, 0.75], [0.75, 0.25]])
    assert ch.shape == (2, 2) and ch.n_truths == ch.n_cells == 2
    assert ch.epsilon == pytest.approx(math.log(3), rel=1e-12)
    assert channel_epsilon(ch) == channel_epsilon(np.asarray(ch)) == ch.epsilon
    assert ch.expected([1, 0]).tolist() == [0.25, 0.75]
    assert (ch @ np.array([0.5, 0.5])).tolist() == [0.5, 0.5]
    assert (np.array([[1.0, 0.0]]) @ ch).tolist() == [[0.25, 0.75]]
    assert not ch.matrix.flags.writeable and ch.dense().flags.writeable
    assert ch == DenseChannel(np.asarray(ch)) and hash(ch) == hash(DenseChannel(ch.dense()))
    assert repr(ch) == "DenseChannel([[0.25, 0.75], [0.75, 0.25]])"
    assert pickle.loads(pickle.dumps(ch)) == ch
    with pytest.raises(AttributeError):
        ch._matrix = None  # type: ignore[misc]


@pytest.mark.parametrize(
    ("matrix", "error", "needle"),
    [
        ([[0.5, 0.5], [0.4, 0.5]], ParameterError, "sum to 1"),
        ([[1.5, 0.5], [-0.5, 0.5]], ParameterError, "probabilities"),
        ([0.5, 0.5], ParameterError, "2-D"),
        ([["a", "b"]], ParameterTypeError, "`matrix`"),
    ],
)
def test_dense_channel_rejects(matrix: object, error: type[Exception], needle: str) -> None:
    with pytest.raises(error, match=needle):
        DenseChannel(matrix)  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [2, 3, 7])
def test_symmetric_channel_equals_its_dense_form(k: int) -> None:
    p = 0.6
    q = (1 - p) / (k - 1)
    ch = SymmetricChannel(k, p, q)
    dense = np.full((k, k), q)
    np.fill_diagonal(dense, p)
    assert np.array_equal(np.asarray(ch), dense)
    shares = np.arange(1, k + 1) / (k * (k + 1) / 2)
    np.testing.assert_allclose(ch.expected(shares), dense @ shares, atol=1e-15)
    many = np.random.default_rng(1).dirichlet(np.ones(k), size=5).T  # one distribution a column
    np.testing.assert_allclose(ch @ many, dense @ many, atol=1e-15)
    np.testing.assert_allclose(ch.invert(dense @ shares), shares, atol=1e-12)
    assert ch.epsilon == pytest.approx(math.log(p / q), rel=1e-15)
    assert channel_epsilon(ch) == pytest.approx(channel_epsilon(dense), rel=1e-15)
    assert pickle.loads(pickle.dumps(ch)) == ch
    assert repr(ch) == f"SymmetricChannel(k={k}, p={p!r}, q={q!r})"


def test_symmetric_channel_rejects() -> None:
    with pytest.raises(ParameterError, match=r"\(k - 1\)"):
        SymmetricChannel(3, 0.5, 0.5)
    with pytest.raises(ParameterError, match="must differ"):
        SymmetricChannel(2, 0.5, 0.5)
    with pytest.raises(ParameterError, match="`k`"):
        SymmetricChannel(1, 1.0, 0.0)
    with pytest.raises(ParameterTypeError, match="`k`"):
        SymmetricChannel(2.0, 0.6, 0.4)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`p`"):
        SymmetricChannel(2, 1.5, -0.5)
    assert SymmetricChannel(2, 1.0, 0.0).epsilon == math.inf


def test_categorical_channel_is_symmetric_when_forcing_is_uniform() -> None:
    d = Categorical(k=4, p_truthful=0.5)
    assert isinstance(d.channel, SymmetricChannel)
    assert (d.channel.p, d.channel.q) == (0.625, 0.125)
    assert np.array_equal(np.asarray(d.channel), 0.5 * np.eye(4) + 0.5 * np.full((4, 4), 0.25))
    uniform = Categorical(k=4, p_truthful=0.5, forced=(0.25,) * 4)
    assert isinstance(uniform.channel, SymmetricChannel) and uniform.channel == d.channel
    skewed = Categorical(k=3, p_truthful=0.5, forced=(0.2, 0.3, 0.5))
    assert isinstance(skewed.channel, DenseChannel)


def test_categorical_with_a_million_categories_needs_no_dense_matrix() -> None:
    k = 2**20
    d = Categorical.from_epsilon(3.0, k=k)
    assert isinstance(d.channel, SymmetricChannel) and d.channel.n_truths == k
    assert d.n_reports == d.n_truths == k
    assert (
        channel_epsilon(d.channel)
        == pytest.approx(d.epsilon, rel=1e-12)
        == pytest.approx(3.0, rel=1e-12)
    )
    assert d.channel.expected(np.full(k, 1 / k)).sum() == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(ParameterError, match="`k` must be at most 4096"):
        np.asarray(d.channel)
    assert isinstance(d.implemented_channel, SymmetricChannel)  # 2**20 is a power of two
    assert channel_epsilon(d.implemented_channel) <= d.epsilon
    reports = d.randomize(np.arange(1000) % 7, rng=1)
    est = d.estimate(d.tally(reports))
    assert est.values.shape == est.se.shape == est.covariance.shape == (k,)  # variances only


def _unary_encoding(k: int, p: float, q: float) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """The full channel of unary encoding, P[bit vector v | x] (2**k rows), brute force:
    bit j is 1 with probability p if j == x, else q, independently."""
    vectors = list(itertools.product((0, 1), repeat=k))
    out = np.zeros((len(vectors), k))
    for r, vec in enumerate(vectors):
        for x in range(k):
            prob = 1.0
            for j, bit in enumerate(vec):
                s = p if j == x else q
                prob *= s if bit else 1 - s
            out[r, x] = prob
    return out, vectors


@pytest.mark.parametrize(
    ("k", "p", "q"), [(3, 0.75, 0.25), (4, 0.5, 1 / (1 + math.e)), (5, 0.9, 0.3)]
)
def test_support_channel_matches_brute_force_unary_encoding(k: int, p: float, q: float) -> None:
    full, vectors = _unary_encoding(k, p, q)
    np.testing.assert_allclose(full.sum(axis=0), 1.0, atol=1e-12)
    support = np.array(vectors, dtype=float).T  # support[j, r] = 1 if report r supports j
    ch = SupportChannel(k, p, q)
    assert ch.n_cells == k + 1 and ch.n_truths == k
    for shares in (np.eye(k)[1], np.full(k, 1 / k), np.arange(1, k + 1) / (k * (k + 1) / 2)):
        report_dist = full @ shares  # P(report = v)
        brute = np.concatenate([support @ report_dist, [report_dist.sum()]])
        np.testing.assert_allclose(ch.expected(shares), brute, atol=1e-12)
        np.testing.assert_allclose(ch @ shares, brute, atol=1e-12)
        np.testing.assert_allclose(np.asarray(ch) @ shares, brute, atol=1e-12)
        # inverting the expected support counts of n respondents gives the shares back
        np.testing.assert_allclose(ch.invert(1000 * brute), shares, atol=1e-12)
    # unary encoding's epsilon is the mechanism's, ln(p (1 - q) / ((1 - p) q)) (Wang et al.
    # 2017), not something the support form can state
    ue_eps = math.log(p * (1 - q) / ((1 - p) * q))
    assert channel_epsilon(full) == pytest.approx(ue_eps, rel=1e-12)
    with pytest.raises(ParameterError, match="does not determine epsilon"):
        _ = ch.epsilon


def test_support_channel_simulated_unary_encoding() -> None:
    """Seeded: 20000 unary-encoded reports; each support count within 5 binomial SE of
    n (q + (p - q) pi_j) (false alarm ~6e-7 per count)."""
    k, p, q, n = 6, 0.5, 0.2, 20_000
    gen = np.random.default_rng(3)
    shares = np.array([0.4, 0.3, 0.1, 0.1, 0.05, 0.05])
    x = gen.choice(k, size=n, p=shares)
    bits = gen.random((n, k)) < np.where(np.arange(k) == x[:, None], p, q)
    counts = np.concatenate([bits.sum(axis=0), [n]])
    ch = SupportChannel(k, p, q)
    expected = n * ch.expected(shares)
    lam = expected[:k] / n
    assert np.all(np.abs(counts[:k] - expected[:k]) <= 5 * np.sqrt(n * lam * (1 - lam)))
    assert counts[k] == expected[k] == n


def test_support_channel_rejects() -> None:
    with pytest.raises(ParameterError, match="must differ"):
        SupportChannel(3, 0.5, 0.5)
    with pytest.raises(DataError, match="at least one report"):
        SupportChannel(3, 0.75, 0.25).invert([1, 2, 3, 0])
    with pytest.raises(DataError, match="4 entries"):
        SupportChannel(3, 0.75, 0.25).invert([1, 2, 3])
    with pytest.raises(ParameterError, match="`k` must be at most 4096"):
        SupportChannel(2**20, 0.75, 0.25).dense()
    assert repr(SupportChannel(3, 0.75, 0.25)) == "SupportChannel(k=3, p=0.75, q=0.25)"


def test_design_channels_are_operators() -> None:
    d = Warner(0.75)
    assert isinstance(d.channel, Channel) and isinstance(d.implemented_channel, Channel)
    assert np.asarray(d.channel).tolist() == [[0.75, 0.25], [0.25, 0.75]]
    assert (d.channel @ np.array([0.0, 1.0])).tolist() == [0.25, 0.75]
    with pytest.raises(DataError, match="2 entries"):
        d.channel.expected([1.0, 0.0, 0.0])
