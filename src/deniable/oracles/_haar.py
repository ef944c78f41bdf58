"""HaarHRR: range queries over ``0..D-1`` from Haar wavelet coefficients, each level's
coefficients reported by Hadamard randomized response.

For ``D = 2^h`` and a node ``v`` at level ``l`` in ``0..h-1`` (``2^l`` nodes, node ``v``
covering ``I_v``, ``|I_v| = D / 2^l``, with halves ``I_v^L`` and ``I_v^R``), the Haar
coefficient of the value shares is ``theta_v = F(I_v^L) - F(I_v^R)``.  A device with value
``x`` contributes ``s = +1`` (``x`` in the left half) or ``-1`` to the coefficient of its
node ``u`` at every level and 0 to the others.  It draws a level ``l`` uniformly and reports
``(j, b)``: a uniform Hadamard row ``j`` and the bit of ``s H[j, u]``, kept with probability
``p = e^eps / (e^eps + 1)`` (Cormode, Kulkarni & Srivastava 2019, "Answering range queries
under local differential privacy", PVLDB 12(10), sec. 5; the one-bit Hadamard response of
:class:`~deniable.oracles.HadamardResponse` over ``max(2, 2^l)`` values, its bit flipped
when ``s = -1``).  ``epsilon = ln(p / (1 - p))``: a report has likelihood ``p / K`` or
``(1 - p) / K`` whatever the value.

With ``n_l`` reports at level ``l``, ``S_v = sum b_i H[j_i, v]`` (``b`` as ``+-1``; from the
Hadamard response's support counts, ``S = 2 c - n_l``) gives the unbiased
``theta_hat_v = S_v / (n_l (2 p - 1))``: ``E[b H[j, v]] = (2 p - 1) s 1[u = v]`` because two
columns of ``H`` agree on half the rows.  For devices sampled from the population,
``b H[j, v]`` is ``+-1`` and ``E[H[j, v] H[j, w]] = 0`` for ``v != w``, so

    Cov(theta_hat_v, theta_hat_w) = (1[v = w] / (2 p - 1)^2 - theta_v theta_w) / n_l.

The shares follow by the Haar synthesis from the root's ``F = 1``: ``F(left) = (F(v) +
theta_v) / 2``, ``F(right) = (F(v) - theta_v) / 2``, consistent by construction.  A range
``R = [a, b]`` is ``|R| / D + sum_v c_v theta_v``, ``c_v = (|R n I_v^L| - |R n I_v^R|) /
|I_v|`` (non-zero for at most two nodes a level), so its variance is ``sum_l (sum_v c_v^2 /
(2 p - 1)^2 - (sum_v c_v theta_v)^2) / n_l``.
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
from deniable.oracles._hadamard import HadamardResponse
from deniable.oracles._ranges import (
    FloatArray,
    LevelSampled,
    RangeEstimate,
    check_frequencies,
    check_height,
    check_range,
)

__all__ = ["HaarEstimate", "HaarHRR"]


def _overlap(lo: Any, hi: Any, start: Any, stop: Any) -> FloatArray:
    """``|[lo, hi] n [start, stop]|``, elementwise."""
    size = np.minimum(hi, stop) - np.maximum(lo, start) + 1
    return np.asarray(np.maximum(size, 0), dtype=np.float64)


@dataclass(frozen=True)
class HaarHRR(LevelSampled):
    """HaarHRR over the values ``0..domain-1`` (``domain`` a power of two) at
    ``requested_epsilon`` (module docstring): ``h = log2(domain)`` levels of Haar
    coefficients, one Hadamard response per level.

    >>> import numpy as np
    >>> haar = HaarHRR(16, 1.0)
    >>> haar.height, [o.k for o in haar.levels], round(haar.epsilon, 12)
    (4, [2, 2, 4, 8], 1.0)
    >>> est = haar.estimate(haar.randomize(np.full(40_000, 3), rng=2))
    >>> ans = est.range(0, 3)                                    # every device: 1
    >>> bool(abs(ans.value - 1.0) < 4 * ans.se), bool(abs(est.leaves.sum() - 1) < 1e-12)
    (True, True)
    """

    domain: int
    requested_epsilon: float
    name: ClassVar[str] = "haar-hrr"

    def __post_init__(self) -> None:
        d, _, _ = check_height(self.domain, 2)
        object.__setattr__(self, "domain", d)
        object.__setattr__(self, "requested_epsilon", check_epsilon(self.requested_epsilon))

    def parameters(self) -> dict[str, Any]:
        """The domain, the requested epsilon and every level's Hadamard response key (the
        key names what builds the mechanism, so it parses back: ``oracles.range_from_key``)."""
        return {"domain": self.domain, "requested_epsilon": self.requested_epsilon,
                "levels": [o.key for o in self.levels]}  # fmt: skip

    @property
    def height(self) -> int:
        """``h = log2(domain)``: the levels of coefficients."""
        return self.domain.bit_length() - 1

    @cached_property
    def levels(self) -> tuple[Any, ...]:
        """The Hadamard responses of levels ``0..h-1`` (``max(2, 2^l)`` values each)."""
        eps = self.requested_epsilon
        return tuple(
            HadamardResponse.from_epsilon(eps, max(2, 1 << lvl)) for lvl in range(self.height)
        )

    def _nodes(self, x: npt.NDArray[np.int64], j: int) -> tuple[Any, Any]:
        shift = self.height - j
        return x >> shift, (x >> (shift - 1)) & 1  # the node, and s = -1 (right half)

    def _gain(self, j: int) -> float:
        return 2 * float(self.levels[j].p) - 1

    # ---- variances

    def range_variances(
        self, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64],
        thetas: list[FloatArray], level_n: tuple[float, ...],
    ) -> FloatArray:  # fmt: skip
        """Variances of the answers for the ranges ``[lo[i], hi[i]]`` at coefficients
        ``thetas`` (levels ``0..h-1``) and level report counts ``level_n``: O(h) a range."""
        total = np.zeros(lo.size)
        for j, n in enumerate(level_n):
            nodes, c = self._coefficients(lo, hi, j)
            g = self._gain(j)
            total += ((c**2).sum(1) / g**2 - (c * thetas[j][nodes]).sum(1) ** 2) / n
        return total

    def _coefficients(
        self, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], j: int
    ) -> tuple[npt.NDArray[np.int64], FloatArray]:
        """The nodes of level ``j`` holding ``lo`` and ``hi`` (``(T, 2)``) and the range's
        coefficient ``c_v`` on each (the second 0 when both are one node); every other node
        is inside the range or outside it, ``c_v = 0``."""
        width = self.domain >> j
        half = width // 2
        nodes = np.stack([lo // width, hi // width], axis=1)
        start = nodes * width
        left = _overlap(lo[:, None], hi[:, None], start, start + half - 1)
        right = _overlap(lo[:, None], hi[:, None], start + half, start + width - 1)
        c = (left - right) / width
        c[:, 1] = np.where(nodes[:, 0] == nodes[:, 1], 0.0, c[:, 1])
        return nodes, c

    @staticmethod
    def coefficients_of(leaves: npt.ArrayLike) -> list[FloatArray]:
        """The Haar coefficients ``theta`` of value shares (levels ``0..h-1``)."""
        f = np.asarray(leaves, dtype=np.float64)
        out = []
        while f.size > 1:
            pairs = f.reshape(-1, 2)
            out.append(pairs[:, 0] - pairs[:, 1])
            f = pairs.sum(1)
        return out[::-1]

    def variance(self, a: int, b: int, n: int, frequencies: npt.ArrayLike) -> float:
        """The variance of the answer for ``[a, b]`` from ``n`` devices (``n / h`` reports
        per level) sampled from a population with value shares ``frequencies``: the closed
        form of the module docstring at the true coefficients."""
        lo, hi = check_range(a, b, self.domain)
        size = v.integer("n", n, minimum=1, maximum=MAX_COUNT)
        leaves = check_frequencies(frequencies, self.domain)
        level_n = (size / self.height,) * self.height
        thetas = self.coefficients_of(leaves)
        return float(self.range_variances(np.array([lo]), np.array([hi]), thetas, level_n)[0])

    # ---- estimate

    def estimate(self, data: Any) -> HaarEstimate:
        """The coefficients, the consistent shares of every node, ranges and quantiles."""
        counts, ns = self._level_data(data)
        thetas = []
        for j, (c, n) in enumerate(zip(counts, ns, strict=True)):
            s = c[: 1 << j].astype(np.float64)  # (2 c - n) / (n g), in place
            s *= 2
            s -= n
            s /= n * self._gain(j)
            thetas.append(s)
        nodes = [np.ones(1)]
        for theta in thetas:  # children (f + theta) / 2 and (f - theta) / 2, interleaved
            f = nodes[-1]
            pair = np.empty((f.size, 2))
            np.add(f, theta, out=pair[:, 0])
            np.subtract(f, theta, out=pair[:, 1])
            pair /= 2
            nodes.append(pair.reshape(-1))
        return HaarEstimate(self, tuple(nodes), tuple(ns), "HaarHRR", tuple(thetas))


@dataclass(frozen=True)
class HaarEstimate(RangeEstimate):
    """The Haar coefficients of a :class:`HaarHRR` (``thetas[l]``, level ``l``) and the
    node shares they synthesize; ranges from the coefficients, variances with the plug-in
    coefficients (clipped to [-1, 1])."""

    thetas: tuple[FloatArray, ...] = ()

    def _prefix_block(self, size: int) -> int:
        return 1 << 16  # O(h) work a range

    def _value(self, a: int, b: int) -> float:
        lo, hi = np.array([a]), np.array([b])
        mech = self.mechanism
        total: float = (b - a + 1) / mech.domain
        for j, theta in enumerate(self.thetas):
            nodes, c = mech._coefficients(lo, hi, j)
            total += float((c * theta[nodes]).sum())
        return total

    def _variances(self, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]) -> FloatArray:
        thetas = [np.clip(t, -1.0, 1.0) for t in self.thetas]
        return self.mechanism.range_variances(lo, hi, thetas, self.level_n)  # type: ignore[no-any-return]
