"""The range mechanisms' estimates against plain references: the level estimates and Hay et
al.'s two passes (hierarchical histogram) and the Haar synthesis (HaarHRR) written as they
were before the in-place, broadcast versions of ``estimate``, ``consistent_nodes`` and
``children_sum`` (which do the same floating-point operations: equal to the last bit on
these cases, pinned to ``1e-12``), and ``children_sum`` against the reshaped sum."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from deniable.designs import Tally
from deniable.oracles import HaarHRR, HierarchicalHistogram
from deniable.oracles._prefix_variances import children_sum
from deniable.oracles._ranges import oracle_counts
from deniable.oracles._variance import support_probabilities

TOL = 1e-12


def _reference_sum(a: np.ndarray, b: int) -> np.ndarray:
    return np.asarray(a.reshape(*a.shape[:-1], -1, b).sum(-1), dtype=np.float64)


def _level_counts(mech: Any, tally: Tally) -> list[tuple[np.ndarray, int]]:
    tallies = mech.level_tallies(tally)
    return [oracle_counts(o, t.counts) for o, t in zip(mech.levels, tallies, strict=True)]


def _reference_hierarchical(mech: HierarchicalHistogram, tally: Tally) -> list[np.ndarray]:
    counts = _level_counts(mech, tally)
    y = []
    for o, (c, n) in zip(mech.levels, counts, strict=True):
        p, q = support_probabilities(o)
        y.append((c / n - q) / (p - q))
    alpha, b, h = mech.weights(tuple(n for _, n in counts)), mech.branching, len(y)
    z = list(y)
    for i in range(h - 2, -1, -1):
        z[i] = alpha[i] * y[i] + (1 - alpha[i]) * _reference_sum(z[i + 1], b)
    x = [np.full(1, 1.0)]
    for i in range(h):
        x.append(z[i] + np.repeat((x[-1] - _reference_sum(z[i], b)) / b, b))
    return x


def _reference_haar(mech: HaarHRR, tally: Tally) -> list[np.ndarray]:
    nodes = [np.ones(1)]
    for j, (c, n) in enumerate(_level_counts(mech, tally)):
        theta = (2 * c[: 1 << j].astype(np.float64) - n) / (n * mech._gain(j))
        f = nodes[-1]
        nodes.append(np.stack([(f + theta) / 2, (f - theta) / 2], axis=1).reshape(-1))
    return nodes


def _random_tally(mech: Any, seed: int) -> Tally:
    # support counts of any size up to each level's n (not reports: any valid cells)
    rng = np.random.default_rng(seed)
    parts = []
    for o in mech.levels:
        n = int(rng.integers(50, 5000))
        if int(o._tally_cells) == int(o.k):  # k-ary randomized response: one count a report
            parts.append(rng.multinomial(n, np.full(o.k, 1 / o.k)))
        else:
            parts.append(np.append(rng.integers(0, n + 1, o.k), n))
    return Tally(np.concatenate(parts).astype(np.int64))


def _close(got: tuple[np.ndarray, ...], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=0, atol=TOL)


@pytest.mark.parametrize(
    ("domain", "branching", "oracle"),
    [(64, 2, "olh"), (64, 2, "oue"), (81, 3, "grr"), (256, 4, "hadamard"), (125, 5, "olh"),
     (49, 7, "oue"), (256, 16, "olh"), (64, 8, "grr"), (2, 2, "olh")],
)  # fmt: skip
def test_hierarchical_estimate_matches_reference(domain: int, branching: int, oracle: str) -> None:
    mech = HierarchicalHistogram(domain, branching, 1.5, oracle=oracle)
    values = np.random.default_rng(domain + branching).integers(0, domain, 3000)
    for tally in (mech.tally(mech.randomize(values, rng=7)), _random_tally(mech, domain)):
        _close(mech.estimate(tally).nodes, _reference_hierarchical(mech, tally))


@pytest.mark.parametrize("domain", [2, 4, 64, 512])
def test_haar_estimate_matches_reference(domain: int) -> None:
    mech = HaarHRR(domain, 1.0)
    values = np.random.default_rng(domain).integers(0, domain, 3000)
    for tally in (mech.tally(mech.randomize(values, rng=3)), _random_tally(mech, domain)):
        _close(mech.estimate(tally).nodes, _reference_haar(mech, tally))


@pytest.mark.parametrize("b", [2, 3, 4, 5, 7, 8, 9, 16])
def test_children_sum_matches_reshaped_sum(b: int) -> None:
    a = np.random.default_rng(b).normal(size=(3, b**3))
    np.testing.assert_allclose(children_sum(a, b), _reference_sum(a, b), rtol=0, atol=TOL)
    np.testing.assert_allclose(children_sum(a[0], b), _reference_sum(a[0], b), rtol=0, atol=TOL)
    if b < 8:  # the same additions in the same order
        assert np.array_equal(children_sum(a, b), _reference_sum(a, b))
