"""Heavy hitters over an unknown domain: prefix extension (PEM) and TreeHist.

**Items.**  A device holds one string of 1 to ``L`` bytes (``max_bytes``; ``str`` encoded
UTF-8, no NUL byte), padded to ``L`` bytes and read as ``8 L`` bits (``oracles._strings``).  No
dictionary of strings is needed: the server grows the frequent ones prefix by prefix.

**Collection.**  The devices are split into ``G`` groups, one per prefix length ``s_0 <
s_1 < ... < s_(G-1) = 8 L``, by a uniformly random balanced rule independent of the values
(device ``i`` gets the rank of a uniform 64-bit word of the generator, mod ``G``).  A device
of group ``j`` reports only its prefix of ``s_j`` bits, once, through optimized local
hashing with a linear hash (``PrefixOLH`` of ``oracles._prefix_oracle``, the
parameters of :class:`~deniable.oracles.LinearOLH`) at the full ``epsilon``: **each device's
total epsilon is the oracle's epsilon** (one report, ``ln(p' / q')``), whatever ``L``,
``G`` or the number of rounds.

**Estimation.**  Round ``j`` estimates, from group ``j`` alone, the frequencies of its
candidates: every prefix of ``s_0`` bits in round 0 (``2**s_0`` of them), then each prefix
kept in round ``j - 1`` followed by every pattern of ``s_j - s_(j-1)`` bits; with an
``alphabet`` (public: the bytes a string may contain) only those that begin a string over it
(``oracles._prefix_alphabet``; the per-device epsilon is unchanged).  Only the
candidates are counted (support counting), never the ``2**(8 L)`` domain.  The estimate is
``f = (c / n_j - q) / (p - q)`` (Wang et al. 2017), ``c`` the candidate's support count.

**The threshold** (``alpha`` given).  A candidate that no device of the group holds is
supported by each report independently with probability exactly ``q = 1/g`` (a collision
of the linear hash, or a uniform bucket: both ``1/g``), so its count is exactly
``Binomial(n_j, 1/g)``.  Round ``j`` keeps the candidates whose count is at least

    c* = min {c : P(Binomial(n_j, 1/g) >= c) <= alpha / m_j}

(``m_j`` candidates; Bonferroni): the probability that a round keeps any candidate of
frequency zero in its group is at most ``alpha``, exactly, not by a normal approximation.
At most ``top_k`` are kept (the largest estimates); when that cap binds, the threshold that
decided is the last kept estimate.  Without ``alpha`` the rounds keep the ``top_k``
largest, the rule of Wang et al. 2019.

**Recall against false discoveries.**  A string of frequency ``f`` is found when every
prefix of it clears its round: ``f`` must exceed about ``z sqrt(q (1 - q) / n_j) / (p - q)``
with ``z`` the normal quantile at ``alpha / m_j`` and ``n_j = n / G``.  A longer bound ``L``
(more groups: smaller ``n_j``), a longer step (``m_j = top_k 2**step`` grows, so does ``z``)
or a smaller ``alpha`` raise that floor and lose recall; a larger ``alpha`` admits more
false discoveries (at most ``alpha`` probability a round).

References: Wang, Li, Jha & others 2019, "Locally differentially private heavy hitter
identification" (IEEE TDSC; PEM); Bassily, Nissim, Stemmer & Thakurta 2017, "Practical
locally private heavy hitters" (NeurIPS; TreeHist); Wang, Blocki, Li & Jha 2017 (OLH).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import mechanism_key
from deniable.exceptions import DataError, ParameterError
from deniable.oracles._base import check_epsilon
from deniable.oracles._heavy_result import HeavyHitterRound, HeavyHitters, wald_se
from deniable.oracles._linear_hashing import LinearOLH
from deniable.oracles._prefix_alphabet import (
    alphabet_hex,
    check_alphabet,
    check_in_alphabet,
    valid_prefixes,
)
from deniable.oracles._prefix_oracle import PrefixOLH
from deniable.oracles._strings import (
    WordArray,
    bytes_of,
    decode_strings,
    encode_strings,
    extend_prefixes,
    prefix_mask,
)
from deniable.randomness import random_words, resolve_rng

__all__ = ["PEM", "HeavyHitterReports", "TreeHist"]

IntArray = np.ndarray[Any, np.dtype[np.int64]]
#: ``count(j, prefixes, step) -> (support counts of round j, reports of each group)``.
RoundCounter = Callable[[int, WordArray, int], tuple[IntArray, IntArray]]

#: Longest string bound in bytes (512 bits).
MAX_BYTES = 64
#: Largest first prefix (its ``2**s_0`` candidates are all counted).
MAX_START_BITS = 16


@dataclass(frozen=True)
class HeavyHitterReports:
    """The reports of one collection: ``levels[j]`` bits in group ``j``, whose reports are
    ``reports[j]`` (an ``(n_j, l W + 1)`` uint64 array: each report's hash rows, then its
    bucket)."""

    levels: tuple[int, ...]
    reports: tuple[WordArray, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(self.levels))
        object.__setattr__(self, "reports", tuple(self.reports))
        if len(self.reports) != len(self.levels):
            raise DataError(
                f"`reports` must hold one array per level ({len(self.levels)}), got "
                f"{len(self.reports)}."
            )

    @property
    def n(self) -> int:
        """Devices (reports) in all."""
        return sum(int(r.shape[0]) for r in self.reports)


class _PrefixProtocol:
    """What PEM and TreeHist share: the oracle, the groups, the rounds."""

    method: ClassVar[str]
    name: ClassVar[str]
    epsilon: float
    max_bytes: int
    top_k: int
    alpha: float | None
    g: int | None
    alphabet: bytes | str | None

    def _check_common(self) -> None:
        object.__setattr__(self, "alphabet", check_alphabet(self.alphabet))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(
            self, "max_bytes", v.integer("max_bytes", self.max_bytes, minimum=1, maximum=MAX_BYTES)
        )
        object.__setattr__(self, "top_k", v.integer("top_k", self.top_k, minimum=1, maximum=4096))
        if self.alpha is not None:
            a = v.real("alpha", self.alpha)
            if not 0 < a < 1:
                raise ParameterError(f"`alpha` must be in (0, 1) or None, got {self.alpha!r}.")
            object.__setattr__(self, "alpha", a)
        self.base  # noqa: B018 - validates `g` against `epsilon`

    @property
    def key(self) -> str:
        """The identity of the reports: the protocol and every parameter a report depends on,
        not ``alpha`` or ``top_k`` (the server's; ``oracles._heavy_files``)."""
        params: dict[str, Any] = {
            "epsilon": self.epsilon, "g": self.base.g, "max_bytes": self.max_bytes,
        }  # fmt: skip
        for name in ("start_bits", "step_bits"):  # PEM's levels
            if hasattr(self, name):
                params[name] = getattr(self, name)
        if self.symbols is not None:  # absent by default: the keys of before, unchanged
            params["alphabet"] = alphabet_hex(self.symbols)
        return mechanism_key(self.name, params)

    @property
    def symbols(self) -> bytes | None:
        """The alphabet's sorted distinct bytes (``oracles._prefix_alphabet``), or None:
        every byte."""
        a = self.alphabet
        return a.encode("utf-8") if isinstance(a, str) else a  # always bytes once checked

    @property
    def levels(self) -> tuple[int, ...]:
        """Prefix lengths in bits, one group each; the last is ``8 max_bytes``."""
        raise NotImplementedError  # pragma: no cover - subclasses

    @cached_property
    def base(self) -> LinearOLH:
        """The linear-hash OLH whose ``g``, ``p_truthful`` and epsilon every group uses."""
        return LinearOLH.from_epsilon(self.epsilon, LinearOLH.max_k, self.g)

    # Proof note (heavy hitters, docs/architecture.md#proof-notes).  Claim: a device's
    # epsilon is the oracle's, and a round keeps a candidate no device of its group holds
    # with probability <= alpha.  Argument: one report a device, LinearOLH's randomized
    # response over g buckets, rows drawn whatever the string; a report supports a candidate
    # it does not hold with probability exactly 1/g (hash collision 1/g when kept, a uniform
    # bucket otherwise), independently, so the count is Binomial(n_j, 1/g); c* bounds each
    # tail by alpha / m_j and the union bound gives alpha.  Checked by tests/test_heavy_
    # hitters.py::test_epsilon_per_device_..., ::test_linear_hash_collides_..., ::test_count_
    # threshold_..., ::test_a_round_keeps_a_prefix_no_device_holds_...
    @property
    def epsilon_per_device(self) -> float:
        """The epsilon of each device: it sends one report of the oracle (module doc)."""
        # eps per device = ln(p' / q') of its single report; the groups are disjoint
        return self.base.epsilon

    def _epsilon_per_report(self) -> float:
        # a stream's charge (oracles.report_epsilon): one fresh OLH report of one group's
        # prefix, the group drawn whatever the string, nothing kept
        return float(self.epsilon_per_device)

    @property
    def implemented_epsilon(self) -> float:
        """An upper bound on the realised epsilon of a report (never above
        ``epsilon_per_device``): :attr:`~deniable.oracles.LinearOLH.implemented_epsilon`."""
        return self.base.implemented_epsilon

    @property
    def words(self) -> int:
        """uint64 words of a padded string: ``ceil(max_bytes / 8)``."""
        return -(-self.max_bytes // 8)

    def oracle(self, bits: int) -> PrefixOLH:
        """The oracle of the group reporting prefixes of ``bits`` bits."""
        return PrefixOLH(self.base, bits, self.words)

    def randomize(self, items: Any, *, rng: Any = None) -> HeavyHitterReports:
        """Each device's one report: the group rule (module docstring), then the prefix of
        its group's length through ``oracle`` (CSPRNG unless ``rng`` is given)."""
        x = encode_strings(items, self.max_bytes)
        check_in_alphabet(x, self.max_bytes, self.symbols)
        levels = self.levels
        if x.shape[0] < len(levels):
            raise DataError(
                f"`items` must hold at least one string per group ({len(levels)} groups for "
                f"prefixes {levels[0]}..{levels[-1]} bits), got {x.shape[0]}."
            )
        gen = resolve_rng(rng)
        group = _groups(random_words(gen, x.shape[0]), len(levels))
        # the devices of each group in the order given: one stable (radix) sort of the
        # small group numbers, then a slice a group
        by_group = np.argsort(group, kind="stable")
        ends = np.cumsum(np.bincount(group, minlength=len(levels))).tolist()
        out = []
        for j, bits in enumerate(levels):
            mine = x[by_group[(ends[j - 1] if j else 0) : ends[j]]]
            out.append(self.oracle(bits).randomize(_prefixes(mine, bits), rng=gen))
        return HeavyHitterReports(levels, tuple(out))

    def estimate(self, reports: HeavyHitterReports, *, level: float = 0.95) -> HeavyHitters:
        """Round by round (module docstring): the strings found, their frequencies, SEs and
        intervals at ``level``, and each round's threshold."""
        if not isinstance(reports, HeavyHitterReports) or reports.levels != self.levels:
            raise DataError(
                f"`reports` must be the HeavyHitterReports of this protocol (levels "
                f"{self.levels}), got {_describe(reports)}."
            )
        pairs = zip(self.levels, reports.reports, strict=True)
        arrs = [self.oracle(b).check_reports(r) for b, r in pairs]
        groups = np.array([a.shape[0] for a in arrs], dtype=np.int64)

        def count(j: int, prefixes: WordArray, step: int) -> tuple[IntArray, IntArray]:
            return self.round_counts(j, arrs[j], prefixes, step), groups

        return self.estimate_counts(count, level=level)

    def round_counts(self, j: int, reports: WordArray, prefixes: WordArray, step: int) -> IntArray:
        """The support counts of round ``j`` among ``reports`` of group ``j`` (checked):
        of each candidate of ``prefixes`` when ``step`` is 0 (round 0), else of each
        ``prefixes`` row followed by every ``step``-bit pattern (``extend_prefixes``'
        order; with an alphabet only the valid ones, :meth:`candidates`' order).  Counts
        add over any split of the group's reports (a partition a worker)."""
        oracle = self.oracle(self.levels[j])
        if step == 0:
            return oracle.candidate_counts(reports, prefixes)
        valid = None if self.symbols is None else self._valid(j, prefixes, step)
        return oracle.extension_counts(reports, prefixes, step, valid=valid)

    def candidates(self, j: int, prefixes: WordArray | None = None) -> WordArray:
        """The candidates of round ``j``: every prefix of ``levels[0]`` bits (round 0), else
        each of ``prefixes`` (kept in round ``j - 1``) followed by every pattern of the step
        (``extend_prefixes``' order); with an alphabet only the prefixes of a string over it
        (``oracles._prefix_alphabet``)."""
        if j == 0:
            first = self.levels[0]
            out = np.zeros((1 << first, self.words), dtype=np.uint64)
            out[:, 0] = np.arange(1 << first, dtype=np.uint64) << np.uint64(64 - first)
            if self.symbols is not None:
                out = out[valid_prefixes(out, first, self.symbols)]
            return out
        if prefixes is None:
            raise ParameterError(f"`prefixes` must be given for round {j}, got None.")
        step = self.levels[j] - self.levels[j - 1]
        out = extend_prefixes(prefixes, self.levels[j - 1], step)
        symbols = self.symbols
        return out if symbols is None else out[valid_prefixes(out, self.levels[j], symbols)]

    def _valid(self, j: int, prefixes: WordArray, step: int) -> npt.NDArray[np.bool_]:
        ext = extend_prefixes(prefixes, self.levels[j] - step, step)
        symbols = self.symbols
        if symbols is None:
            return np.ones(ext.shape[0], dtype=np.bool_)
        return valid_prefixes(ext, self.levels[j], symbols)

    def estimate_counts(self, count: RoundCounter, *, level: float = 0.95) -> HeavyHitters:
        """:meth:`estimate` from a counter of each round instead of the reports in memory:
        ``count(j, prefixes, step)`` returns the :meth:`round_counts` of round ``j`` summed
        over every report of group ``j`` and the number of reports of each group (a Dask
        map-reduce over report tables, ``deniable.distributed``).  Round 0 gets every
        ``start`` bit prefix with ``step = 0``; round ``j`` the prefixes kept in round ``j
        - 1`` and ``step = levels[j] - levels[j - 1]``."""
        lv = v.level(level)
        base = self.base
        p, q, g = base.p, base.q, base.g
        cands = self.candidates(0)
        rounds: list[HeavyHitterRound] = []
        kept = np.zeros(0, dtype=np.int64)
        est = np.zeros(0)
        counts = np.zeros(0, dtype=np.int64)
        n_j, n = 0, 0
        for j, bits in enumerate(self.levels):
            step = bits - self.levels[j - 1] if j else 0
            prefixes = cands[kept] if j else cands
            counts, groups = count(j, prefixes, step)
            counts = np.asarray(counts, dtype=np.int64)
            n, n_j = int(np.sum(groups)), int(groups[j])
            if n_j == 0:
                raise DataError(f"`reports` must have a report in every group, got none in {j}.")
            if j:
                cands = self.candidates(j, prefixes)
            est = (counts / n_j - q) / (p - q)
            kept, threshold, rule = self._select(counts, est, n_j, g)
            kept_prefixes = tuple(
                row.tobytes() for row in bytes_of(cands[kept], -(-bits // 8))
            )  # a few kept candidates, not the devices
            rounds.append(HeavyHitterRound(bits, n_j, int(cands.shape[0]), int(kept.size),
                                           threshold, rule, kept_prefixes))  # fmt: skip
            if kept.size == 0:
                break
        done = len(rounds) == len(self.levels) and kept.size > 0
        final = kept if done else np.zeros(0, dtype=np.int64)
        return HeavyHitters(
            method=self.method,
            strings=tuple(decode_strings(cands[final], self.max_bytes)),
            frequencies=tuple(float(f) for f in est[final]),
            se=tuple(wald_se(int(c), n_j, p, q) for c in counts[final]),
            rounds=tuple(rounds),
            epsilon=self.epsilon_per_device,
            n=n,
            alpha=self.alpha,
            level=lv,
        )

    def run(self, items: Any, *, rng: Any = None, level: float = 0.95) -> HeavyHitters:
        """``estimate`` of ``randomize`` (a simulation, or one batch of devices)."""
        return self.estimate(self.randomize(items, rng=rng), level=level)

    def count_threshold(self, n: int, m: int) -> int:
        """``c*``: the least count with ``P(Binomial(n, 1/g) >= c*) <= alpha / m``."""
        from scipy import stats

        if self.alpha is None:
            raise ParameterError("`alpha` must be set for a count threshold, got None.")
        n = v.integer("n", n, minimum=1)
        m = v.integer("m", m, minimum=1)
        g = self.base.g
        c = int(stats.binom.isf(self.alpha / m, n, 1 / g)) + 1
        while c > 0 and stats.binom.sf(c - 2, n, 1 / g) <= self.alpha / m:
            c -= 1  # isf's float search may overshoot by one
        while stats.binom.sf(c - 1, n, 1 / g) > self.alpha / m:
            c += 1
        return c

    def _select(
        self, counts: np.ndarray[Any, Any], est: np.ndarray[Any, Any], n: int, g: int
    ) -> tuple[np.ndarray[Any, Any], float, str]:
        order = np.argsort(-est, kind="stable")
        if self.alpha is None:
            keep = order[: self.top_k]
            return keep, float(est[keep[-1]]), "top-k"
        c_star = self.count_threshold(n, int(counts.size))
        passing = order[counts[order] >= c_star]
        if passing.size > self.top_k:
            keep = passing[: self.top_k]
            return keep, float(est[keep[-1]]), "top-k"
        p, q = self.base.p, self.base.q
        return passing, float((c_star / n - q) / (p - q)), "binomial"


def _groups(words: WordArray, m: int) -> npt.NDArray[np.uint16]:
    """Device ``i``'s group: the rank of its word among ``words``, modulo ``m`` (equal words
    ranked in the order of the devices).  An unstable sort ranks distinct words as a stable
    one does; equal words (about n**2 / 2**65 pairs) are rare enough to sort again."""
    order = np.argsort(words)
    ranked = words[order]
    if bool((ranked[1:] == ranked[:-1]).any()):
        order = np.argsort(words, kind="stable")
    group = np.empty(words.size, dtype=np.uint16)
    group[order] = np.arange(words.size) % m
    return group


def _prefixes(x: WordArray, bits: int) -> WordArray:
    return x & prefix_mask(bits, x.shape[1])[None, :]


def _describe(value: Any) -> str:
    if isinstance(value, HeavyHitterReports):
        return f"reports for levels {value.levels}"
    return type(value).__name__


@dataclass(frozen=True)
class PEM(_PrefixProtocol):
    """Prefix extension (Wang et al. 2019): groups report prefixes of ``start_bits``,
    ``start_bits + step_bits``, ... up to ``8 max_bytes`` bits; each round keeps the frequent
    prefixes and extends them by ``step_bits`` (module docstring).

    Each device reports once, at ``epsilon``: ``epsilon_per_device``.  ``alphabet`` (a
    ``str``, its UTF-8 bytes, or ``bytes``; None: every byte) restricts the strings and each
    round's candidates to its bytes (``oracles._prefix_alphabet``).

    >>> pem = PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=8, top_k=4)
    >>> pem.levels, pem.base.g, round(pem.epsilon_per_device, 12)
    ((8, 16), 64, 4.0)
    >>> items = ["hi"] * 3000 + ["yo"] * 2000 + [chr(97 + i % 26) * 2 for i in range(5000)]
    >>> found = pem.run(items, rng=1)
    >>> found.strings[:2]
    ('hi', 'yo')
    """

    epsilon: float
    max_bytes: int
    start_bits: int = 8
    step_bits: int = 4
    top_k: int = 16
    alpha: float | None = 0.05
    g: int | None = None
    alphabet: bytes | str | None = None
    method: ClassVar[str] = "PEM"
    name: ClassVar[str] = "pem"

    def __post_init__(self) -> None:
        self._check_common()
        top = 8 * self.max_bytes
        object.__setattr__(
            self,
            "start_bits",
            v.integer("start_bits", self.start_bits, minimum=1, maximum=min(MAX_START_BITS, top)),
        )
        object.__setattr__(
            self, "step_bits", v.integer("step_bits", self.step_bits, minimum=1, maximum=8)
        )

    @property
    def levels(self) -> tuple[int, ...]:
        top = 8 * self.max_bytes
        out = list(range(self.start_bits, top, self.step_bits))
        return (*out, top)


@dataclass(frozen=True)
class TreeHist(_PrefixProtocol):
    """TreeHist (Bassily, Nissim, Stemmer & Thakurta 2017) as a binary prefix tree: one
    group per bit, ``8 max_bytes`` groups, each round keeping the frequent nodes and
    extending them by one bit (module docstring).  Here every level uses the linear-hash
    OLH oracle and the exact binomial threshold instead of the paper's Hadamard-based
    oracle and its noise-level threshold; each device reports once, at ``epsilon``.
    ``alphabet`` as :class:`PEM`'s.

    >>> tree = TreeHist(epsilon=4.0, max_bytes=1, top_k=4)
    >>> len(tree.levels), round(tree.epsilon_per_device, 12)
    (8, 4.0)
    """

    epsilon: float
    max_bytes: int
    top_k: int = 16
    alpha: float | None = 0.05
    g: int | None = None
    alphabet: bytes | str | None = None
    method: ClassVar[str] = "TreeHist"
    name: ClassVar[str] = "treehist"

    def __post_init__(self) -> None:
        self._check_common()

    @property
    def levels(self) -> tuple[int, ...]:
        return tuple(range(1, 8 * self.max_bytes + 1))
