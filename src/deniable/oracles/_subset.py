"""Subset selection: report a random subset of ``d`` of the ``k`` values.

The subset holds the true value ``x`` with probability ``p``; the rest of it is a uniform
subset of the other values (``d - 1`` of them with ``x``, ``d`` without).  So a subset ``S``
has likelihood proportional to ``e^eps`` if ``x`` is in it and to 1 otherwise, with

    p = d e^eps / (d e^eps + k - d),   epsilon = ln(p (k - d) / ((1 - p) d))

(Wang, Wu & Hu 2016, "Mutual information optimal locally private discrete distribution
estimation"; Ye & Barg 2018).  A report supports the values in it: ``x`` with probability
``p`` and any other value with ``q = (d - p) / (k - 1)``.  ``d`` near ``k / (e^eps + 1)``
minimizes the variance; :meth:`SubsetSelection.from_epsilon` takes the better neighbour.

**The randomizer** draws the other values with Floyd's algorithm (Bentley & Floyd 1987):
for ``j = M - s .. M - 1`` (``M = k - 1`` other values, ``s`` of them to draw) a uniform
``t`` in ``0..j``; take ``t`` unless it is taken already, then ``j``.  Each draw uses one
word (``uniform(word, j + 1)``, multiply-shift), so a report uses ``d + 1`` words (the first
decides whether ``x`` is in; with ``x`` in, the first draw word is skipped).  The
multiply-shift draws are uniform only to within ``(j + 1) / 2**(64 - bitlen(j + 1))``, so
the subsets' probabilities differ from uniform by a factor within ``exp(+-delta)``, ``delta <
2**-28`` for ``k <= 4096``: the inclusion threshold is lowered by that much, and
:attr:`SubsetSelection.implemented_epsilon` (the bound over all subsets) never exceeds
:attr:`SubsetSelection.epsilon`.  The support probabilities differ from the stated ones by
less than ``2**-28`` relative.  Reports are packed bit vectors of ``k`` bits.
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
from deniable.exceptions import DataError, ParameterError
from deniable.oracles._base import FrequencyOracle, check_epsilon, check_k
from deniable.oracles._bits import packed_bit, packed_support_counts, row_popcounts
from deniable.oracles._variance import total_variance
from deniable.randomness import random_words, resolve_rng, uniform_below, words_below

__all__ = ["SubsetSelection"]

_TWO53 = 1 << 53
#: Steps of t / 2**40 down from the guess before the threshold search gallops.
_STEPS = 4096
#: Words a block of reports draws at once.
_BLOCK_WORDS = 1 << 17


def _log_spread(r: int) -> tuple[float, float]:
    """``(ln rho+, ln rho-)`` of ``uniform(word, r)``: each value's probability lies in
    ``[rho- / r, rho+ / r]``."""
    if r & (r - 1) == 0:
        return 0.0, 0.0  # a power of two: the top bits, exactly uniform
    b = 64 - r.bit_length()
    rem = (1 << b) % r
    return math.log1p((r - rem) / 2.0**b), math.log1p(-rem / 2.0**b)


@dataclass(frozen=True)
class SubsetSelection(FrequencyOracle):
    """Subset selection over ``k`` values (module docstring): a report is a subset of ``d``
    values that holds the true one with probability ``p``.

    ``epsilon = ln(p (k - d) / ((1 - p) d))``; support probabilities ``p`` and ``q = (d -
    p) / (k - 1)``.  At most ``k = 4096`` values (reports are ``k`` bits; see the module
    docstring for the draws' resolution).

    >>> ss = SubsetSelection.from_epsilon(1.0, k=16)
    >>> ss.d, round(ss.epsilon, 12), ss.words_per_report
    (4, 1.0, 5)
    >>> report = ss.randomize([2], rng=1)          # 16 bits, 4 of them set
    >>> np.flatnonzero(np.unpackbits(report, bitorder="little")).tolist()
    [1, 5, 12, 14]
    """

    k: int
    d: int
    p: float
    name: ClassVar[str] = "subset"
    max_k: ClassVar[int] = 1 << 12

    def __post_init__(self) -> None:
        k = check_k(self.k, self.max_k)
        object.__setattr__(self, "k", k)
        d = v.integer("d", self.d, minimum=1, maximum=k - 1)
        object.__setattr__(self, "d", d)
        p = v.real("p", self.p)
        if not d / k < p < 1:
            raise ParameterError(
                f"`p` must be in (d / k, 1) = ({d / k:g}, 1) (above d / k the subset carries "
                f"information), got {self.p!r}."
            )
        object.__setattr__(self, "p", p)
        if self.epsilon <= 0 or self._include_threshold <= 0:
            raise ParameterError(
                f"`p` must leave an epsilon the randomizer can implement, got {self.p!r}."
            )

    @classmethod
    def from_epsilon(cls, epsilon: float, k: int, d: int | None = None) -> SubsetSelection:
        """Subset selection at ``epsilon`` with subsets of ``d`` values (default: ``floor``
        or ``ceil`` of ``k / (e^eps + 1)``, whichever has the smaller exact variance)."""
        eps = check_epsilon(epsilon)
        kk = check_k(k, cls.max_k)
        if d is not None:
            sizes = [v.integer("d", d, minimum=1, maximum=kk - 1)]
        else:
            ideal = kk / (math.exp(min(eps, 700.0)) + 1)
            sizes = sorted({min(max(1, f(ideal)), kk - 1) for f in (math.floor, math.ceil)})
        best: SubsetSelection | None = None
        for size in sizes:
            start = expit(eps + math.log(size / (kk - size)))

            def make(p: float, s: int = size) -> SubsetSelection:
                return cls(kk, s, p)

            try:
                oracle = design_for_epsilon(
                    make, eps, start, neutral=size / kk,
                    extreme=1.0, fallback=expit(1.0 + math.log(size / (kk - size))),
                    context=f"{cls.name!r} with k = {kk}, d = {size}",
                )  # fmt: skip
            except ParameterError:
                if len(sizes) == 1:
                    raise
                continue
            if best is None or _variance(oracle) < _variance(best):
                best = oracle
        if best is None:
            raise ParameterError(f"`epsilon`: no subset size fits {epsilon!r} for k = {kk}.")
        return best

    @property
    def q(self) -> float:
        """P(the subset holds one given other value): ``(d - p) / (k - 1)``."""
        return (self.d - self.p) / (self.k - 1)

    def _support(self) -> tuple[float, float]:
        return self.p, self.q

    @property
    def epsilon(self) -> float:
        # eps = ln(p (k - d) / ((1 - p) d)): P(S | x) = p / C(k-1, d-1) with x in S, else
        # (1 - p) / C(k-1, d); the ratio of the two is p (k - d) / ((1 - p) d)
        return math.log(self.p / (1 - self.p) * (self.k - self.d) / self.d)

    @cached_property
    def _spreads(self) -> tuple[float, float, float, float]:
        """``ln A+`` and ``ln A-`` for ``d - 1`` and for ``d`` draws: the products of the
        draws' extreme probability ratios to uniform."""
        m = self.k - 1

        def spread(s: int) -> tuple[float, float]:
            pairs = [_log_spread(r) for r in range(m - s + 1, m + 1)]
            return math.fsum(a for a, _ in pairs), math.fsum(b for _, b in pairs)

        up1, down1 = spread(self.d - 1)
        up, down = spread(self.d)
        return up1, down1, up, down

    def _bound(self, t: int) -> float:
        """Upper bound on the implemented epsilon with inclusion threshold ``t``: the
        largest of ``ln(P(S | x) / P(S | x'))`` over the four cases of ``x, x'`` in ``S``."""
        up1, down1, up, down = self._spreads
        odds = math.log(t / (_TWO53 - t) * (self.k - self.d) / self.d)
        cases = (
            odds + up1 - down,  # x in S, x' not
            -odds + up - down1,  # x' in S, x not
            up1 - down1,  # both in S
            up - down,  # neither
        )
        slack = 4e-16 * (abs(odds) + 1) + 2e-16 * sum(abs(x) for x in self._spreads)
        return max(cases) + slack

    @cached_property
    def _include_threshold(self) -> int:
        """Include ``x`` iff ``word >> 11 < t``: from the closed-form guess down in steps of
        ``t / 2**40`` to the first ``t`` whose implemented bound is at most :attr:`epsilon`
        (toward privacy)."""
        up1, _, _, down = self._spreads
        target = self.epsilon - (up1 - down)
        t = min(
            _TWO53 - 1, math.floor(expit(target + math.log(self.d / (self.k - self.d))) * _TWO53)
        )
        eps = self.epsilon
        # down from the guess in steps of t / 2**40 (the thresholds of the published specs
        # and test vectors); a guess that many steps cannot fix (an epsilon below the
        # rounding slack) switches to galloping and bisection: O(log t) bounds, not 2**40
        for _ in range(_STEPS):
            if t <= 0 or self._bound(t) <= eps:
                return max(t, 0)
            t -= max(1, t >> 40)
        bad, step = t, max(1, t >> 40)
        while True:
            t = max(bad - step, 0)
            if t == 0:  # no threshold fits (t = 0 would never include x)
                return 0
            if self._bound(t) <= eps:
                break
            bad, step = t, 2 * step
        good = t
        while bad - good > 1:
            mid = (good + bad) // 2
            if self._bound(mid) <= eps:
                good = mid
            else:
                bad = mid
        return good

    @property
    def include_threshold(self) -> int:
        """The inclusion threshold: ``x`` is in the subset iff ``word >> 11 <`` it."""
        return self._include_threshold

    @property
    def implemented_epsilon(self) -> float:
        return self._bound(self._include_threshold)

    @property
    def words_per_report(self) -> int:
        return self.d + 1

    @property
    def n_reports(self) -> int:
        """Bits of a report: ``k``."""
        return self.k

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.uint8]:
        """Packed subsets (``ceil(k / 8)`` bytes each) of the values ``0..k-1``.

        Report ``i`` takes words ``i (d + 1) ..``: the inclusion word, then one word per
        draw of Floyd's algorithm over the other values (``j = k - 1 - d + s``, the ``s``-th
        draw uniform in ``0..j``; the other value ``t`` is the value ``t + (t >= x)``).
        """
        x = self._values(values).astype(np.int64)
        gen = resolve_rng(rng)
        w, k, d = self.words_per_report, self.k, self.d
        m_others = k - 1
        out = np.empty((x.size, (k + 7) // 8), dtype=np.uint8)
        block = max(1, min(_BLOCK_WORDS // w, (1 << 22) // k))
        for start in range(0, x.size, block):
            stop = min(start + block, x.size)
            m = stop - start
            words = random_words(gen, m * w).reshape(m, w)
            xs = x[start:stop]
            include = words_below(words[:, 0], self._include_threshold)
            chosen = np.zeros((m, k), dtype=np.bool_)
            rows = np.arange(m)
            for s in range(d):
                j = m_others - d + s
                t = uniform_below(np.ascontiguousarray(words[:, 1 + s]), j + 1).astype(np.int64)
                t += t >= xs  # the value of other-index t
                jv = j + (j >= xs)
                pick = np.where(chosen[rows, t], jv, t)
                if s == 0:  # with x in the subset only d - 1 others: skip the first draw
                    keep = ~include
                    chosen[rows[keep], pick[keep]] = True
                else:
                    chosen[rows, pick] = True
            chosen[rows, xs] = include
            out[start:stop] = np.packbits(chosen, axis=1, bitorder="little")
        return out

    def _support_counts(self, reports: Any) -> tuple[npt.NDArray[np.int64], int]:
        counts, arr = packed_support_counts(reports, self.k)
        sizes = row_popcounts(arr)
        bad = np.flatnonzero(sizes != self.d)
        if bad.size:
            raise DataError(
                f"`reports` must be subsets of d = {self.d} values, got report {int(bad[0])} "
                f"with {int(sizes[bad[0]])}."
            )
        return counts, int(arr.shape[0])

    def _supports(self, reports: Any, value: int) -> npt.NDArray[np.bool_]:
        return packed_bit(reports, self.k, value)

    def _spec(self) -> tuple[str, int, dict[str, Any]]:
        return "subset-selection/1", self.words_per_report, {
            "include": self._include_threshold, "size": self.d,
        }  # fmt: skip


def _variance(oracle: SubsetSelection) -> float:
    return total_variance(oracle.p, oracle.q, oracle.k, 1)
