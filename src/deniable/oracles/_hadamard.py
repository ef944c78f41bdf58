"""Hadamard response: a row of the Hadamard matrix and one randomized bit.

With ``K`` the smallest power of two at least ``k`` and ``H[j, x] = (-1)^popcount(j & x)``
the Sylvester-Hadamard matrix, a report is a uniform row ``j`` in ``0..K-1`` and the bit
``b = parity(j & x)`` (the sign of ``H[j, x]``), flipped with probability ``1 - p``; it is
sent as the one integer ``2 j + b`` (Acharya, Sun & Zhang 2019, the one-bit form used by
Cormode, Kulkarni & Srivastava 2018).  A report supports ``x`` when its bit is the sign of
``H[j, x]``: with probability ``p`` for the true value, and exactly ``1/2`` for every other
value, because two columns of ``H`` agree on exactly half the rows.  ``epsilon = ln(p / (1 -
p))``: a report's likelihood is ``p / K`` or ``(1 - p) / K``.  The variance is then that of
binary local hashing with a perfect hash.

Decoding is a Walsh-Hadamard transform: with ``s_j`` the number of reports of row ``j`` with
bit 0 minus those with bit 1, the support count of ``x`` is ``(n + (H s)_x) / 2``, so a tally
is O(n + K log K) work and O(K) memory.  Rows need not avoid the all-ones row 0 (Acharya et
al. map values to rows 1..k for their index-only variant): here each row carries one bit
about every value, and the support probability of another value is exactly 1/2 with row 0
included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import design_for_epsilon, expit
from deniable.oracles._base import FrequencyOracle, check_epsilon, check_k, open_probability
from deniable.oracles._bits import parity
from deniable.randomness import (
    CHUNK,
    probability_threshold,
    random_words,
    resolve_rng,
    words_below,
)

__all__ = ["HadamardResponse", "walsh_hadamard"]


def walsh_hadamard(values: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """``H s`` for ``s`` of power-of-two length ``K`` (``H[x, j] = (-1)^popcount(x & j)``),
    in exact int64 arithmetic by the fast transform (``K log2 K`` additions).

    >>> walsh_hadamard([1, 0, 0, 0]).tolist(), walsh_hadamard([0, 1, 0, 0]).tolist()
    ([1, 1, 1, 1], [1, -1, 1, -1])
    """
    a = np.array(values, dtype=np.int64)
    size = a.size
    h = 1
    while h < size:
        pairs = a.reshape(-1, 2, h)
        first = pairs[:, 0, :].copy()
        pairs[:, 0, :] += pairs[:, 1, :]
        pairs[:, 1, :] = first - pairs[:, 1, :]
        h *= 2
    return a


@dataclass(frozen=True)
class HadamardResponse(FrequencyOracle):
    """Hadamard response over ``k`` values (module docstring): a report is ``2 j + b`` for a
    uniform Hadamard row ``j`` and the sign bit of ``H[j, x]`` kept with probability ``p``.

    ``epsilon = ln(p / (1 - p))``; support probabilities ``p`` and ``q = 1/2``.
    Two 64-bit words per report: the row word (``j`` = its top ``log2 K`` bits) and the
    flip word (flip when ``word >> 11 < t``, ``t = ceil((1 - p) 2**53)``).

    >>> hr = HadamardResponse.from_epsilon(1.0, k=1000)
    >>> hr.rows, round(hr.epsilon, 12), hr.channel.q
    (1024, 1.0, 0.5)
    >>> hr.randomize([0, 999], rng=3).tolist()
    [175, 1640]
    """

    k: int
    p: float
    name: ClassVar[str] = "hadamard"

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_k(self.k, self.max_k))
        object.__setattr__(self, "p", open_probability("p", self.p, 0.5, 1.0))

    @classmethod
    def from_epsilon(cls, epsilon: float, k: int) -> HadamardResponse:
        """``p = e^eps / (e^eps + 1)``: the float with the largest epsilon at most the
        request."""
        eps = check_epsilon(epsilon)
        kk = check_k(k, cls.max_k)
        return design_for_epsilon(
            lambda p: cls(kk, p), eps, expit(eps), neutral=0.5, extreme=1.0,
            fallback=expit(1.0), context=f"{cls.name!r}",
        )  # fmt: skip

    @property
    def q(self) -> float:
        """P(the report supports one given other value): exactly 1/2."""
        return 0.5

    def _support(self) -> tuple[float, float]:
        return self.p, 0.5

    @property
    def rows(self) -> int:
        """``K``: the smallest power of two at least ``k``."""
        return 1 << (self.k - 1).bit_length()

    @property
    def epsilon(self) -> float:
        # eps = ln(p / (1 - p)): a report (j, b) has likelihood p / K or (1 - p) / K
        return math.log(self.p / (1 - self.p))

    @cached_property
    def flip_threshold(self) -> int:
        """Flip the bit iff ``word >> 11 < flip_threshold``: ``ceil((1 - p) 2**53)``, the
        smaller probability rounded up (toward privacy)."""
        return probability_threshold(1 - self.p, "up")

    @property
    def implemented_epsilon(self) -> float:
        t = self.flip_threshold
        return math.log((2**53 - t) / t)

    @property
    def words_per_report(self) -> int:
        return 2

    @property
    def n_reports(self) -> int:
        """Report values: ``2 K`` (a row and a bit)."""
        return 2 * self.rows

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.uint32]:
        """Reports ``2 j + b`` for the values ``0..k-1``: report ``i`` takes word ``2 i``
        (the row) and ``2 i + 1`` (the flip)."""
        x = self._values(values).astype(np.uint32)
        gen = resolve_rng(rng)
        shift = np.uint64(64 - (self.rows.bit_length() - 1))
        out = np.empty(x.size, dtype=np.uint32)
        for start in range(0, x.size, CHUNK):
            stop = min(start + CHUNK, x.size)
            words = random_words(gen, 2 * (stop - start)).reshape(-1, 2)
            row = (words[:, 0] >> shift).astype(np.uint32)
            flip = words_below(words[:, 1], self.flip_threshold).view(np.uint8)
            bit = parity(row & x[start:stop]).astype(np.uint32) ^ flip
            out[start:stop] = 2 * row + bit
        return out

    def _support_counts(self, reports: Any) -> tuple[npt.NDArray[np.int64], int]:
        arr = v.reports_array("reports", reports, categories=self.n_reports)
        hist = np.zeros(self.n_reports, dtype=np.int64)
        for start in range(0, arr.size, CHUNK):  # bincount copies to intp: blockwise
            hist += np.bincount(arr[start : start + CHUNK], minlength=self.n_reports)
        n = int(arr.size)
        # support of x = sum over reports of (1 + (-1)^b H[j, x]) / 2 = (n + (H s)_x) / 2
        signed = hist[0::2] - hist[1::2]
        transform = walsh_hadamard(signed)[: self.k]
        return (n + transform) // 2, n

    def _supports(self, reports: Any, value: int) -> npt.NDArray[np.bool_]:
        arr = v.reports_array("reports", reports, categories=self.n_reports).astype(np.uint64)
        row, bit = arr >> np.uint64(1), arr & np.uint64(1)
        return np.asarray(bit == parity(row & np.uint64(value)), dtype=np.bool_)

    def _spec(self) -> tuple[str, int, dict[str, Any]]:
        return "hadamard-response/1", 2, {"rows": self.rows, "flip": self.flip_threshold}
