"""The hierarchical histogram: range queries over ``0..D-1`` from a B-ary tree of frequency
oracles, made consistent by constrained inference.

The tree over the domain ``D = B^h`` has ``B^l`` nodes at level ``l`` (node ``i`` covers
the values ``i B^(h-l) .. (i+1) B^(h-l) - 1``); the root (level 0) holds every device.  Each
device draws a level ``l`` in ``1..h`` uniformly and reports its node ``floor(x / B^(h-l))``
through the level's oracle (GRR, OUE, OLH or Hadamard response over ``B^l`` values) at the
full epsilon (Cormode, Kulkarni & Srivastava 2019, "Answering range queries under local
differential privacy", PVLDB 12(10), sec. 4; the split by users).  The server estimates the
share of every node from its level's ``n_l`` reports, ``y = (c / n_l - q) / (p - q)``
(unbiased for the population share).

**Constrained inference** (Hay, Rastogi, Miklau & Suciu 2010, "Boosting the accuracy of
differentially private histograms through consistency", PVLDB 3(1), sec. 4), with each
level's variance ``s_l`` (the oracle's variance of one node at the uniform distribution
from ``n_l`` reports: a constant, so the estimate stays linear and unbiased) in place of
Hay et al.'s common one:

* bottom-up, weighted averaging: ``z = y`` at the leaves; above,
  ``z_v = a_l y_v + (1 - a_l) sum_children z_c`` with ``a_l = t_l / (s_l + t_l)``,
  ``t_l = B v_(l+1)`` the variance of the children's sum and ``v_l = s_l t_l / (s_l +
  t_l)``, the inverse-variance weights (Hay et al.'s ``(B^i - B^(i-1)) / (B^i - 1)`` when
  every ``s_l`` is equal);
* top-down, mean consistency: the root is exactly 1 (every device is in it), and
  ``x_c = z_c + (x_parent - sum_siblings z) / B``.

Every parent then equals the sum of its children, and ``E[x] = x_true`` (both passes fix
a consistent vector).  A range ``[a, b]`` is answered from its minimal cover (at most
``2 (B - 1)`` nodes per level); its variance is ``sum_l w_l' C_l w_l`` with ``w_l`` the
weights of the range on level ``l``'s estimates (the two passes run backwards) and ``C_l``
the covariance of level ``l``'s estimates, for ``n_l`` reports of devices sampled from the
population with level shares ``pi``, ``lambda = q + (p - q) pi``:

* GRR (one value supported per report): ``(diag(lambda) - lambda lambda') / (n_l (p - q)^2)``;
* OUE, OLH and Hadamard response (the supports of two other values independent given the
  value; OLH under the ideal hash): ``(diag(lambda (1 - lambda)) - (p - q)^2 (pi pi' -
  diag(pi^2))) / (n_l (p - q)^2)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import MAX_COUNT
from deniable.oracles._base import check_epsilon
from deniable.oracles._prefix_variances import children_sum, prefix_variances_fast
from deniable.oracles._ranges import (
    FloatArray,
    LevelSampled,
    RangeEstimate,
    check_frequencies,
    check_height,
    check_range,
)
from deniable.oracles._registry import FREQUENCY_ORACLES
from deniable.oracles._variance import support_probabilities

__all__ = ["HIERARCHY_ORACLES", "HierarchicalEstimate", "HierarchicalHistogram"]

#: The oracles a level may use.
HIERARCHY_ORACLES = ("grr", "oue", "olh", "hadamard")


def consistent_nodes(
    y: list[FloatArray], alpha: tuple[float, ...], b: int, root: float = 1.0
) -> list[FloatArray]:
    """Hay et al.'s two passes over the level estimates ``y[0..h-1]`` (levels ``1..h``)
    with bottom-up weights ``alpha``: the consistent shares of levels ``0..h`` (the root's
    share ``root``; 0 gives the linear part of the map)."""
    h = len(y)
    z = list(y)
    for i in range(h - 2, -1, -1):  # in place on fresh arrays: the same operations
        below = children_sum(z[i + 1], b)
        below *= 1 - alpha[i]
        z[i] = alpha[i] * y[i]
        z[i] += below
    x = [np.full(1, root)]
    for i in range(h):  # each node's share of its parent's remainder, broadcast (no repeat)
        rest = children_sum(z[i], b)
        np.subtract(x[-1], rest, out=rest)
        rest /= b
        x.append((z[i].reshape(-1, b) + rest[:, None]).reshape(-1))
    return x


def averaging_weights(variances: list[float], b: int) -> tuple[float, ...]:
    """Bottom-up weights ``a_l`` of levels ``1..h`` from each level's node variance
    ``s_l``: ``a_l = t / (s_l + t)``, ``t = B v_(l+1)``, ``v_h = s_h``, ``v_l = s_l t / (s_l
    + t)`` (1 at the leaves).  Equal variances give Hay et al.'s ``(B^i - B^(i-1)) / (B^i -
    1)`` at height ``i`` (leaves at height 1).

    >>> [round(a, 12) for a in averaging_weights([1.0, 1.0, 1.0], 2)]   # 4/7, 2/3, 1
    [0.571428571429, 0.666666666667, 1.0]
    """
    h = len(variances)
    alpha = [1.0] * h
    var_z = variances[h - 1]
    for i in range(h - 2, -1, -1):
        t = b * var_z
        alpha[i] = t / (variances[i] + t)
        var_z = variances[i] * t / (variances[i] + t)
    return tuple(alpha)


def range_weights(seeds: FloatArray, alpha: tuple[float, ...], b: int) -> list[FloatArray]:
    """The weights on each level's estimates (``(T, B^l)``, levels ``1..h``) of the
    linear functionals ``seeds @ leaves`` (``seeds`` of shape ``(T, D)``): the two passes
    of :func:`consistent_nodes` run backwards (their adjoint)."""
    h = len(alpha)
    t = seeds.shape[0]
    gz = [np.zeros((t, b ** (i + 1))) for i in range(h)]
    gx = seeds
    for i in range(h - 1, -1, -1):  # x_(i+1) = z_(i+1) + repeat((x_i - A z_(i+1)) / B)
        back = children_sum(gx, b) / b
        gz[i] += gx - np.repeat(back, b, axis=1)
        gx = back  # to x_i (the root, a constant, at the end)
    gy: list[FloatArray] = []
    for i in range(h - 1):  # z_i = a y_i + (1 - a) A z_(i+1), the last computed first
        gy.append(alpha[i] * gz[i])
        gz[i + 1] += np.repeat((1 - alpha[i]) * gz[i], b, axis=1)
    gy.append(gz[h - 1])
    return gy


def minimal_cover(a: int, b: int, branching: int, height: int) -> list[tuple[int, int]]:
    """The fewest tree nodes ``(level, index)`` whose ranges partition ``[a, b]``."""
    out: list[tuple[int, int]] = []
    lo, hi, level = a, b + 1, height
    while lo < hi:
        if level == 0:
            return [*out, (0, 0)]
        plo, phi = -(-lo // branching), hi // branching
        if plo >= phi:
            return out + [(level, i) for i in range(lo, hi)]
        out += [(level, i) for i in range(lo, plo * branching)]
        out += [(level, i) for i in range(phi * branching, hi)]
        lo, hi, level = plo, phi, level - 1
    return out


@dataclass(frozen=True)
class HierarchicalHistogram(LevelSampled):
    """A ``branching``-ary hierarchical histogram over the values ``0..domain-1``
    (``domain`` a power of ``branching``), each level reported by ``oracle`` (a name of
    :data:`HIERARCHY_ORACLES`) at ``requested_epsilon`` (module docstring).

    ``epsilon`` is the largest of the level oracles' exact epsilons (each at most the
    request): every device reports once, at one level.  The tally is the level oracles'
    tallies end to end (adds across batches); ``estimate`` gives a
    :class:`HierarchicalEstimate` (consistent node shares, ranges, quantiles).

    >>> import numpy as np
    >>> hh = HierarchicalHistogram(64, 4, 2.0, oracle="oue")
    >>> hh.height, [o.k for o in hh.levels], round(hh.epsilon, 6)   # OUE's q on a grid
    (3, [4, 16, 64], 1.999867)
    >>> values = np.random.default_rng(3).integers(0, 16, size=60_000)  # uniform on 0..15
    >>> est = hh.estimate(hh.randomize(values, rng=5))
    >>> ans = est.range(0, 15)
    >>> bool(abs(ans.value - 1.0) < 4 * ans.se), len(hh.cover(0, 15))
    (True, 1)
    """

    domain: int
    branching: int
    requested_epsilon: float
    oracle: str = "oue"
    name: ClassVar[str] = "hierarchical-histogram"

    def __post_init__(self) -> None:
        d, b, _ = check_height(self.domain, self.branching)
        object.__setattr__(self, "domain", d)
        object.__setattr__(self, "branching", b)
        object.__setattr__(self, "requested_epsilon", check_epsilon(self.requested_epsilon))
        v.choice("oracle", self.oracle, HIERARCHY_ORACLES)

    def parameters(self) -> dict[str, Any]:
        """The domain, the branching factor, the requested epsilon, the level oracle's name
        and every level oracle's key: the key names what builds the mechanism (so it parses
        back, ``oracles.range_from_key``) and the oracles it built."""
        return {"domain": self.domain, "branching": self.branching,
                "requested_epsilon": self.requested_epsilon, "oracle": self.oracle,
                "levels": [o.key for o in self.levels]}  # fmt: skip

    @property
    def height(self) -> int:
        """``h``: ``domain = branching^h``."""
        return check_height(self.domain, self.branching)[2]

    @cached_property
    def levels(self) -> tuple[Any, ...]:
        """The oracles of levels ``1..h`` (``B^l`` values each)."""
        cls = FREQUENCY_ORACLES[self.oracle]
        b = self.branching
        return tuple(
            cls.from_epsilon(self.requested_epsilon, b**lvl) for lvl in range(1, self.height + 1)
        )

    def _nodes(self, x: npt.NDArray[np.int64], j: int) -> tuple[Any, Any]:
        return x // self.branching ** (self.height - 1 - j), None

    def cover(self, a: int, b: int) -> list[tuple[int, int]]:
        """The minimal cover of ``[a, b]``: ``(level, node)`` pairs (level 0 the root)."""
        lo, hi = check_range(a, b, self.domain)
        return minimal_cover(lo, hi, self.branching, self.height)

    # ---- variances

    def level_variance(self, n_level: float) -> tuple[float, ...]:
        """``s_l``: each level's variance of one node's estimate at the uniform
        distribution from ``n_level`` reports (the weights of constrained inference)."""
        out = []
        for o in self.levels:
            p, q = support_probabilities(o)
            lam = q + (p - q) / o.k
            out.append(lam * (1 - lam) / (n_level * (p - q) ** 2))
        return tuple(out)

    def weights(self, level_n: tuple[float, ...]) -> tuple[float, ...]:
        """The bottom-up weights ``a_l`` (levels ``1..h``; 1 at the leaves) for level
        report counts ``level_n``: ``averaging_weights`` of the level variances."""
        s = [self.level_variance(n)[i] for i, n in enumerate(level_n)]
        return averaging_weights(s, self.branching)

    def _quadratic(self, j: int, w: FloatArray, pi: FloatArray, n: float) -> FloatArray:
        """``w' C_j w`` for each row of ``w``: level ``j``'s covariance (module docstring)."""
        o = self.levels[j]
        p, q = support_probabilities(o)
        d = p - q
        lam = q + d * pi
        if self.oracle == "grr":
            quad = (w**2) @ lam - (w @ lam) ** 2
        else:
            quad = (w**2) @ (lam * (1 - lam) + d**2 * pi**2) - d**2 * (w @ pi) ** 2
        return np.asarray(quad / (n * d**2), dtype=np.float64)

    def range_variances(
        self, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64],
        pis: list[FloatArray], level_n: tuple[float, ...],
    ) -> FloatArray:  # fmt: skip
        """Variances of the answers for the ranges ``[lo[i], hi[i]]`` at level shares
        ``pis`` (levels ``1..h``) and level report counts ``level_n``."""
        t = np.arange(self.domain)
        seeds = ((t >= lo[:, None]) & (t <= hi[:, None])).astype(np.float64)
        w = range_weights(seeds, self.weights(level_n), self.branching)
        return np.asarray(
            sum(self._quadratic(j, w[j], pis[j], n) for j, n in enumerate(level_n)),
            dtype=np.float64,
        )

    def _covariance_parts(
        self, j: int, pi: FloatArray, n: float
    ) -> tuple[FloatArray, FloatArray, float]:
        """``(a, u, scale)`` with level ``j``'s covariance ``(diag(a) - u u') / scale``."""
        p, q = support_probabilities(self.levels[j])
        d = p - q
        lam = q + d * pi
        if self.oracle == "grr":
            return lam, lam, n * d**2
        return lam * (1 - lam) + d**2 * pi**2, d * pi, n * d**2

    def prefix_variances(self, pis: list[FloatArray], level_n: tuple[float, ...]) -> FloatArray:
        """The variance of the answer for every prefix ``[0, t]``, ``t = 0..D-1``, at level
        shares ``pis``: what :meth:`range_variances` gives, in O(D h) time and O(D) memory
        (the level weights' closed form: ``oracles/_prefix_variances.py``)."""
        b, h = self.branching, self.height
        parts = [self._covariance_parts(i, pis[i], level_n[i]) for i in range(h)]
        return prefix_variances_fast(parts, self.weights(level_n), b)

    def variance(self, a: int, b: int, n: int, frequencies: npt.ArrayLike) -> float:
        """The variance of the answer for ``[a, b]`` from ``n`` devices (``n / h`` reports
        per level) sampled from a population with value shares ``frequencies`` (``D``
        entries): the closed form of the module docstring at the true shares."""
        lo, hi = check_range(a, b, self.domain)
        size = v.integer("n", n, minimum=1, maximum=MAX_COUNT)
        leaves = check_frequencies(frequencies, self.domain)
        pis = [leaves.reshape(o.k, -1).sum(1) for o in self.levels]
        level_n = (size / self.height,) * self.height
        return float(self.range_variances(np.array([lo]), np.array([hi]), pis, level_n)[0])

    # ---- estimate

    def estimate(self, data: Any) -> HierarchicalEstimate:
        """The consistent shares of every node from reports or a tally (module docstring)."""
        counts, ns = self._level_data(data)
        y = []
        for o, c, n in zip(self.levels, counts, ns, strict=True):
            p, q = support_probabilities(o)
            share = c / n  # (c / n - q) / (p - q), in place
            share -= q
            share /= p - q
            y.append(share)
        nodes = consistent_nodes(y, self.weights(tuple(ns)), self.branching)
        method = f"hierarchical histogram (B = {self.branching}, {self.oracle})"
        return HierarchicalEstimate(self, tuple(nodes), tuple(ns), method)


@dataclass(frozen=True)
class HierarchicalEstimate(RangeEstimate):
    """The consistent node shares of a :class:`HierarchicalHistogram` (``nodes[l]`` level
    ``l``, the root exactly 1, every parent the sum of its children), ranges answered from
    the minimal cover, variances with the plug-in level shares (clipped to [0, 1])."""

    def _value(self, a: int, b: int) -> float:
        cover = minimal_cover(a, b, self.mechanism.branching, self.mechanism.height)
        return float(sum(self.nodes[lvl][i] for lvl, i in cover))

    @property
    def _plug_in(self) -> list[FloatArray]:
        return [np.clip(x, 0.0, 1.0) for x in self.nodes[1:]]

    def _variances(self, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]) -> FloatArray:
        return self.mechanism.range_variances(lo, hi, self._plug_in, self.level_n)  # type: ignore[no-any-return]

    @cached_property
    def _all_prefixes(self) -> FloatArray:
        return self.mechanism.prefix_variances(self._plug_in, self.level_n)  # type: ignore[no-any-return]

    def _prefix_variances(self, ts: npt.NDArray[np.int64]) -> FloatArray:
        return self._all_prefixes[ts]

    def _prefix_block(self, size: int) -> int:
        return size  # every prefix at once (prefix_variances)
