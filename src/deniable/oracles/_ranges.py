"""What the range mechanisms share: devices split by level, one mergeable tally of every
level, and range answers and quantiles over the ordered domain ``0..D-1``.

A range mechanism keeps ``L`` frequency oracles, one per level of a tree over the domain.
Each device draws its level uniformly (independently of its value) and reports its node at
that level through the level's oracle at the full epsilon (the split by users of Cormode,
Kulkarni & Srivastava 2019, "Answering range queries under local differential privacy",
PVLDB 12(10)).  A report is the pair (level, oracle report), so

    P(level = l, report = r | x) = (1 / L) P_l(r | node_l(x)),

and the likelihood ratio of two values is at most ``max_l e^(epsilon_l)``: the mechanism's
epsilon is the largest of its level oracles' (each device reports once).

The tally is the concatenation of the level oracles' own tallies (each adds across batches,
so the whole does): one :class:`~deniable.designs.Tally` bound to the mechanism's key that
JSON, bytes, pickling and ``+`` handle like any other.

Range answers are linear in the level estimates, so their variance is a quadratic form in
each level's covariance; the estimates state it with the plug-in frequencies (the
convention of respondents sampled from a population, conditional on the level counts).
Quantiles invert the CDF's pointwise normal band (:meth:`RangeEstimate.quantile`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import MechanismBase, Tally
from deniable.exceptions import DataError, ParameterError
from deniable.randomness import random_words, resolve_rng, uniform_below
from deniable.results import ConfidenceInterval, Result, Table, normal_quantile

__all__ = ["QUANTILE_METHOD", "LevelReports", "RangeAnswer", "RangeEstimate", "RangeQuantile"]

FloatArray = npt.NDArray[np.float64]

#: Largest domain a range mechanism takes (its leaf oracle's largest ``k``).
MAX_DOMAIN = 1 << 24
#: Prefixes whose variance is computed at once when a quantile scans the CDF, times the
#: domain (the work arrays of a block hold about this many floats a level).
_BLOCK_CELLS = 1 << 20


def check_height(domain: Any, branching: Any) -> tuple[int, int, int]:
    """``(D, B, h)`` with ``D = B^h``, ``B >= 2`` and ``h >= 1`` (else ``ParameterError``)."""
    b = v.integer("branching", branching, minimum=2, maximum=MAX_DOMAIN)
    d = v.integer("domain", domain, minimum=2, maximum=MAX_DOMAIN)
    h = round(math.log(d, b))
    for cand in (h - 1, h, h + 1):
        if cand >= 1 and b**cand == d:
            return d, b, cand
    raise ParameterError(
        f"`domain` must be a power of the branching factor B = {b} (B, B^2, ...), got {d}."
    )


def check_range(a: Any, b: Any, domain: int) -> tuple[int, int]:
    """``(a, b)``, integers with ``0 <= a <= b < domain``."""
    lo = v.integer("a", a, minimum=0, maximum=domain - 1)
    hi = v.integer("b", b, minimum=0, maximum=domain - 1)
    if lo > hi:
        raise ParameterError(f"`a` must be at most `b` (a range [a, b]), got a = {lo} > b = {hi}.")
    return lo, hi


def check_frequencies(frequencies: Any, domain: int) -> FloatArray:
    """``frequencies`` as ``D`` finite non-negative shares summing to 1 (within ``1e-9``),
    else a :class:`~deniable.exceptions.DataError` naming ``frequencies``."""
    try:
        bad = isinstance(frequencies, str | bytes)
        pi = np.zeros(0) if bad else np.asarray(frequencies, dtype=np.float64)
    except (TypeError, ValueError):
        bad, pi = True, np.zeros(0)
    if bad or pi.shape != (domain,):
        raise DataError(
            f"`frequencies` must have D = {domain} entries, got "
            f"{type(frequencies).__name__ if bad else f'shape {pi.shape}'}."
        )
    if not (
        np.isfinite(pi).all() and (pi >= 0).all() and math.isclose(pi.sum(), 1.0, abs_tol=1e-9)
    ):
        raise DataError(
            f"`frequencies` must be {domain} non-negative numbers that sum to 1, got "
            f"entries in [{pi.min()!r}, {pi.max()!r}] summing to {pi.sum()!r}."
        )
    return pi


def oracle_counts(oracle: Any, cells: npt.ArrayLike) -> tuple[npt.NDArray[np.int64], int]:
    """``(support counts of the k values, n)`` of a level oracle's tally cells (k-ary
    randomized response counts reports: k cells; the other oracles add ``n`` as a last
    cell)."""
    counts = np.asarray(cells, dtype=np.int64)
    k = int(oracle.k)
    if counts.shape[0] == k:
        return counts, int(counts.sum())
    return counts[:k], int(counts[k])


@dataclass(frozen=True, eq=False)
class LevelReports:
    """The reports of ``n`` devices: ``level[i]`` the level device ``i`` drew (an index into
    the mechanism's ``levels``), ``reports[j]`` the level oracle's reports of the devices that
    drew level ``j``, in device order."""

    level: npt.NDArray[np.int64]
    reports: tuple[Any, ...]

    @property
    def n(self) -> int:
        """The number of devices."""
        return int(self.level.size)

    def __len__(self) -> int:
        """The number of devices (their reports), as a report batch counts them."""
        return int(self.level.size)


class LevelSampled(MechanismBase, ABC):
    """Base of the range mechanisms: one oracle per level, each device at one level (module
    docstring).  Subclasses give ``levels``, the domain ``D`` and ``_nodes``."""

    domain: int

    @property
    @abstractmethod
    def levels(self) -> tuple[Any, ...]:
        """The level oracles (built from the parameters)."""

    @abstractmethod
    def _nodes(self, x: npt.NDArray[np.int64], j: int) -> tuple[Any, Any]:
        """``(the oracle inputs at level j, report bits to flip or None)`` for values ``x``."""

    def _epsilon_per_report(self) -> float:
        """What one report costs a device against any change of its values
        (:func:`~deniable.oracles.report_epsilon`): its ``epsilon``, the largest
        level oracle's: a fresh level and one report of its oracle, nothing kept."""
        return float(self.epsilon)

    @property
    def epsilon(self) -> float:
        # eps = max_l eps_l: P(l, r | x) / P(l, r | x') = P_l(r | .) / P_l(r | .) <= e^eps_l
        return max(float(o.epsilon) for o in self.levels)

    @property
    def implemented_epsilon(self) -> float:
        """The largest implemented epsilon of the level oracles (never above ``epsilon``)."""
        return max(float(o.implemented_epsilon) for o in self.levels)

    def values_array(self, values: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """``values`` as int64 in ``0..D-1`` (``DataError`` naming ``values`` otherwise)."""
        return v.reports_array("values", values, categories=self.domain).astype(np.int64)

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> LevelReports:
        """Reports of the values ``0..D-1``: one word per device draws its level, then each
        level's oracle randomizes the nodes of its devices (CSPRNG unless ``rng`` is given)."""
        x = self.values_array(values)
        src = resolve_rng(rng)
        count = len(self.levels)
        level = uniform_below(random_words(src, x.size), count).astype(np.int64)
        out = []
        for j, oracle in enumerate(self.levels):
            nodes, flip = self._nodes(x[level == j], j)
            reps = oracle.randomize(nodes, rng=src)
            out.append(reps if flip is None else reps ^ flip.astype(reps.dtype))
        return LevelReports(level, tuple(out))

    # ---- the tally: the level oracles' tallies, end to end

    @property
    def _level_cells(self) -> tuple[int, ...]:
        return tuple(int(o._tally_cells) for o in self.levels)

    @property
    def _tally_cells(self) -> int:
        return sum(self._level_cells)

    def _tally_layout(self) -> str:
        return "the level oracles' tallies end to end, " + " + ".join(
            str(c) for c in self._level_cells
        )

    def _split(self, counts: npt.NDArray[np.int64]) -> list[tuple[Any, npt.NDArray[np.int64]]]:
        """Each level oracle with its cells of the tally's ``counts`` (views, no copies)."""
        out, start = [], 0
        for oracle, cells in zip(self.levels, self._level_cells, strict=True):
            out.append((oracle, counts[start : start + cells]))
            start += cells
        return out

    def level_tallies(self, tally: Tally) -> tuple[Tally, ...]:
        """The tally of each level, bound to its oracle."""
        return tuple(o.bind(Tally(c)) for o, c in self._split(self.bind(tally).counts))

    def _check_counts(self, counts: npt.NDArray[np.int64]) -> None:
        # the oracle's own checks: what its `bind` adds to the cells' number and to the
        # checks of the whole tally's counts (non-negative, bounded), done once
        for oracle, cells in self._split(counts):
            oracle._check_counts(cells)

    def _reports_in(self, tally: Tally) -> int:
        return sum(oracle_counts(o, c)[1] for o, c in self._split(tally.counts))

    def tally(self, reports: Any) -> Tally:
        """The level oracles' tallies of :class:`LevelReports`, end to end, bound to ``key``."""
        if not isinstance(reports, LevelReports):
            raise DataError(
                f"`reports` must be the LevelReports of {self.name!r}, got "
                f"{type(reports).__name__}."
            )
        if len(reports.reports) != len(self.levels):
            raise DataError(
                f"`reports` must hold {len(self.levels)} levels, got {len(reports.reports)}."
            )
        level = v.reports_array("reports.level", reports.level, categories=len(self.levels))
        parts = []
        for j, oracle in enumerate(self.levels):
            t = oracle.tally(reports.reports[j])
            rows = oracle_counts(oracle, t.counts)[1]
            if rows != int(np.count_nonzero(level == j)):
                raise DataError(
                    f"`reports` of level {j} must have one row per device of that level "
                    f"({int(np.count_nonzero(level == j))}), got {rows}."
                )
            parts.append(np.asarray(t.counts, dtype=np.int64))
        return Tally(np.concatenate(parts), mechanism=self.key)

    def _level_data(self, data: Any) -> tuple[list[npt.NDArray[np.int64]], list[int]]:
        """Support counts and report counts of every level (each level needs a report)."""
        tally = self._as_tally(data)  # bound and checked: every level's cells once
        counts, ns = [], []
        for j, (oracle, cells) in enumerate(self._split(tally.counts)):
            c, n = oracle_counts(oracle, cells)
            if n < 1:
                raise DataError(
                    f"`data` must hold at least one report of every level, got none at level "
                    f"{j} (collect more devices: each draws one of {len(self.levels)} levels)."
                )
            counts.append(c)
            ns.append(n)
        return counts, ns


@dataclass(frozen=True)
class RangeAnswer(Result):
    """The estimated share of the devices whose value lies in ``[low, high]``, with its
    standard error (plug-in, respondents sampled from a population, conditional on the
    level counts) and a normal interval (:meth:`ci`)."""

    low: int
    high: int
    value: float
    se: float
    n: int
    method: str

    def ci(self, level: float = 0.95) -> ConfidenceInterval:
        """``value -+ z se`` (normal, ``z`` the two-sided quantile at ``level``)."""
        z = normal_quantile(level)
        return ConfidenceInterval(self.value - z * self.se, self.value + z * self.se)

    def table(self) -> Table:
        """The range, the estimate, its SE and 95% interval."""
        ci = self.ci()
        return Table.pairs(
            (("range", f"[{self.low}, {self.high}]"), ("share", self.value), ("SE", self.se),
             ("95% interval", ci.format(4)), ("n", self.n)),
            title=f"range share ({self.method})",
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: the range, the value, the SE, the 95% interval, n, the method."""
        ci = self.ci()
        return {"low": self.low, "high": self.high, "value": self.value, "se": self.se,
                "ci95": [ci.low, ci.high], "n": self.n, "method": self.method}  # fmt: skip


#: How :meth:`RangeEstimate.quantile` makes its interval.
QUANTILE_METHOD = (
    "CDF band inversion: low is the first t whose pointwise upper bound F(t) + z se(t) "
    "reaches q, high the first t whose lower bound F(t) - z se(t) does"
)


@dataclass(frozen=True)
class RangeQuantile(Result):
    """The ``q``-quantile of the values, ``min{t : F_hat(t) >= q}``, and its interval
    (:data:`QUANTILE_METHOD`) at ``level``."""

    q: float
    value: int
    interval: ConfidenceInterval
    level: float
    method: str = QUANTILE_METHOD

    def table(self) -> Table:
        """The quantile and its interval."""
        return Table.pairs(
            ((f"{self.q:g}-quantile", self.value),
             (f"{self.level:.0%} interval", f"[{int(self.interval.low)}, "
              f"{int(self.interval.high)}]")),
            title="quantile", notes=(self.method,),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return {"q": self.q, "value": self.value, "interval": list(self.interval),
                "level": self.level, "method": self.method}  # fmt: skip


@dataclass(frozen=True)
class RangeEstimate(Result, ABC):
    """Consistent shares of every node of a range mechanism's tree (``nodes[l]`` the
    ``B^l`` nodes of level ``l``, ``nodes[0]`` the root, exactly 1), with range answers,
    the CDF and quantiles.  Subclasses give ``_value`` and ``_variances``."""

    mechanism: Any
    nodes: tuple[FloatArray, ...]
    level_n: tuple[int, ...]
    method: str = field(default="", repr=False)

    @property
    def n(self) -> int:
        """The number of devices."""
        return sum(self.level_n)

    @property
    def leaves(self) -> FloatArray:
        """The estimated share of every value ``0..D-1`` (consistent: sums to 1; may hold
        negative entries, the estimates are unbiased, not clipped)."""
        return self.nodes[-1]

    @abstractmethod
    def _value(self, a: int, b: int) -> float:
        """The estimate of the share of ``[a, b]``."""

    @abstractmethod
    def _variances(self, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]) -> FloatArray:
        """The variance of the estimate of each range ``[lo[i], hi[i]]`` (plug-in)."""

    def _prefix_variances(self, ts: npt.NDArray[np.int64]) -> FloatArray:
        """The variance of the estimate of each prefix ``[0, ts[i]]``."""
        return self._variances(np.zeros_like(ts), ts)

    def _prefix_block(self, size: int) -> int:
        """How many prefixes :meth:`quantile` hands to :meth:`_variances` at once."""
        return max(1, min(256, _BLOCK_CELLS // size))

    def range(self, a: int, b: int) -> RangeAnswer:
        """The share of the devices with a value in ``[a, b]`` (``0 <= a <= b < D``)."""
        lo, hi = check_range(a, b, self.mechanism.domain)
        var = float(self._variances(np.array([lo]), np.array([hi]))[0])
        return RangeAnswer(lo, hi, self._value(lo, hi), math.sqrt(max(var, 0.0)), self.n,
                           self.method)  # fmt: skip

    def cdf(self) -> FloatArray:
        """``F_hat(t)``, the estimated share of values at most ``t``, for ``t = 0..D-1``."""
        return np.cumsum(self.leaves)

    def quantile(self, q: float, level: float = 0.95) -> RangeQuantile:
        """The ``q``-quantile ``min{t : F_hat(t) >= q}`` (``q`` in ``(0, 1]``; ``D - 1``
        when the CDF never reaches ``q``) with an interval from the CDF's pointwise band
        at ``level`` (:data:`QUANTILE_METHOD`).  The interval holds the quantile; its
        coverage is that of the band at the two prefixes around the true quantile
        (checked by a seeded study in tests/test_ranges.py).  The band's SEs are computed a
        block of prefixes at a time (every prefix at once for the hierarchical histogram)
        and the scan stops at the interval's upper end."""
        qq = v.real("q", q)
        if not 0 < qq <= 1:
            raise ParameterError(f"`q` must be in (0, 1], got {q!r}.")
        z = normal_quantile(level)
        cdf = self.cdf()
        size = cdf.size
        hit = np.flatnonzero(cdf >= qq - 1e-12)
        value = int(hit[0]) if hit.size else size - 1
        low = high = -1
        block = self._prefix_block(size)
        for start in range(0, size, block):
            ts = np.arange(start, min(start + block, size), dtype=np.int64)
            se = np.sqrt(np.maximum(self._prefix_variances(ts), 0.0))
            if low < 0:
                up = np.flatnonzero(cdf[ts] + z * se >= qq - 1e-12)
                low = int(ts[up[0]]) if up.size else -1
            down = np.flatnonzero(cdf[ts] - z * se >= qq - 1e-12)
            if down.size:
                high = int(ts[down[0]])
                break
        low = value if low < 0 else min(low, value)
        high = size - 1 if high < 0 else max(high, value)
        return RangeQuantile(qq, value, ConfidenceInterval(float(low), float(high)),
                             v.level(level))  # fmt: skip

    def table(self) -> Table:
        """The estimated share of every value (the leaves), the first 64 of them."""
        rows = tuple((t, float(s)) for t, s in enumerate(self.leaves[:64]))
        more = () if self.leaves.size <= 64 else (f"{self.leaves.size - 64} more values",)
        return Table(("value", "share"), rows, title=f"{self.method}: n = {self.n}",
                     notes=more)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: the method, n per level, the leaves."""
        return {"method": self.method, "mechanism": self.mechanism.key,
                "level_n": list(self.level_n), "leaves": self.leaves.tolist()}  # fmt: skip
