"""Quantiles of the range mechanisms at scale: the O(D h) variances of every prefix of the
hierarchical histogram (``prefix_variances_fast``, ``weight_factors``) against the general
adjoint computation, and ``RangeEstimate.quantile`` against a plain reference that computes
the SE of every prefix one range at a time and scans the CDF band as documented
(:data:`~deniable.oracles.QUANTILE_METHOD`).  Exact comparisons (no statistics)."""

from __future__ import annotations

import numpy as np
import pytest

from deniable.oracles import HaarHRR, HierarchicalHistogram
from deniable.oracles._hierarchical import consistent_nodes
from deniable.oracles._prefix_variances import weight_factors
from deniable.results import normal_quantile


@pytest.mark.parametrize(("b", "h"), [(2, 1), (2, 6), (3, 4), (4, 3), (7, 2)])
def test_leaf_weights_factor_by_level_and_depth(b: int, h: int) -> None:
    # the map of consistent_nodes applied to one unit estimate of each level, read at a
    # leaf of every depth of the lowest common ancestor (any bottom-up weights in (0, 1],
    # 1 at the leaves)
    rng = np.random.default_rng(b * 10 + h)
    alpha = (*rng.uniform(0.05, 0.95, h - 1), 1.0)
    beta, gamma, d = weight_factors(alpha, b)
    for lvl in range(1, h + 1):
        unit = [np.zeros(b ** (k + 1)) for k in range(h)]
        unit[lvl - 1][0] = 1.0
        leaves = consistent_nodes(unit, alpha, b, root=0.0)[-1]
        for m in range(lvl):  # leaf b^(h-m-1) leaves leaf 0's path at depth m
            assert leaves[b ** (h - m - 1)] == pytest.approx(beta[lvl - 1] * gamma[m], rel=1e-12)
        below = leaves[: b ** (h - lvl)]  # the leaves under the unit node
        np.testing.assert_allclose(below, d[lvl - 1], rtol=1e-12)
        assert abs(leaves.sum()) < 1e-12  # the root is fixed: a level's weights sum to 0


@pytest.mark.parametrize(
    ("domain", "branching", "oracle", "devices"),
    [(2, 2, "grr", 300), (8, 8, "oue", 300), (32, 2, "oue", 400), (81, 3, "grr", 2000),
     (64, 4, "olh", 3000), (128, 2, "hadamard", 1000)],
)  # fmt: skip
def test_fast_prefix_variances_equal_the_general_computation(
    domain: int, branching: int, oracle: str, devices: int
) -> None:
    hh = HierarchicalHistogram(domain, branching, 1.0, oracle=oracle)
    gen = np.random.default_rng(domain + branching)
    x = gen.integers(0, max(1, domain // 3), devices)  # skewed: many plug-in shares 0
    est = hh.estimate(hh.randomize(x, rng=gen))
    pis = [np.clip(n, 0, 1) for n in est.nodes[1:]]
    t = np.arange(domain)
    general = hh.range_variances(np.zeros_like(t), t, pis, est.level_n)
    fast = hh.prefix_variances(pis, est.level_n)
    np.testing.assert_allclose(fast, general, rtol=0, atol=1e-12 * general.max())


def test_prefix_variances_do_not_depend_on_the_block_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import deniable.oracles._prefix_variances as module

    hh = HierarchicalHistogram(243, 3, 1.0, oracle="grr")
    est = hh.estimate(hh.randomize(np.random.default_rng(2).integers(0, 60, 3000), rng=3))
    pis = [np.clip(n, 0, 1) for n in est.nodes[1:]]
    whole = hh.prefix_variances(pis, est.level_n)
    monkeypatch.setattr(module, "PREFIX_CHUNK", 7)  # blocks end inside nodes of every level
    np.testing.assert_array_equal(hh.prefix_variances(pis, est.level_n), whole)


def _reference_quantile(est: object, q: float, level: float) -> tuple[int, int, int]:
    """``(value, low, high)`` by the definition: every prefix's SE from the general range
    variances, one scan of the CDF and of each side of its band."""
    leaves = est.leaves  # type: ignore[attr-defined]
    size = leaves.size
    cdf = np.cumsum(leaves)
    t = np.arange(size)
    se = np.sqrt(np.maximum(est._variances(np.zeros_like(t), t), 0.0))  # type: ignore[attr-defined]
    z = normal_quantile(level)

    def first(mask: np.ndarray) -> int:
        hit = np.flatnonzero(mask)
        return int(hit[0]) if hit.size else -1

    value = first(cdf >= q - 1e-12)
    value = size - 1 if value < 0 else value
    low, high = first(cdf + z * se >= q - 1e-12), first(cdf - z * se >= q - 1e-12)
    low = value if low < 0 else min(low, value)
    high = size - 1 if high < 0 else max(high, value)
    return value, low, high


@pytest.mark.parametrize(
    "mech",
    [HierarchicalHistogram(64, 2, 1.0, oracle="oue"), HierarchicalHistogram(81, 3, 0.5, "grr"),
     HierarchicalHistogram(256, 4, 2.0, oracle="olh"), HaarHRR(64, 1.0), HaarHRR(256, 0.5)],
    ids=lambda m: m.key,
)  # fmt: skip
def test_quantiles_equal_the_plain_reference(mech: object) -> None:
    gen = np.random.default_rng(7)
    domain = mech.domain  # type: ignore[attr-defined]
    for devices in (500, 20_000):  # a wide band (the CDF not monotone) and a narrow one
        x = np.minimum(gen.geometric(8 / domain, devices) - 1, domain - 1)
        est = mech.estimate(mech.randomize(x, rng=gen))  # type: ignore[attr-defined]
        for q in (0.01, 0.25, 0.5, 0.9, 0.999, 1.0):
            for level in (0.5, 0.9, 0.99):
                res = est.quantile(q, level)
                got = (res.value, int(res.interval.low), int(res.interval.high))
                assert got == _reference_quantile(est, q, level), (devices, q, level)
