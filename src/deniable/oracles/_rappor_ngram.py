"""RAPPOR over n-grams: strings nobody listed (Fanti, Pihur & Erlingsson 2016, "Building a
RAPPOR with the Unknown", sec. 4), the device's side.

**Encoding.**  A string (``str``, or ``bytes`` that must be valid UTF-8) of ``1..length``
characters, every one of them in ``alphabet``, is padded with ``pad`` to exactly ``length``
characters and cut at fixed positions into ``G = length / gram`` n-grams of ``gram``
characters: n-gram ``j`` is characters ``j gram .. (j + 1) gram - 1``.  Each n-gram is
reported with its position, as the RAPPOR string ``"<j>:<n-gram>"``, so the per-position
domain is the ``|alphabet|^gram`` n-grams plus those ending in padding: enumerable, which is
what lets the server decode every n-gram without a dictionary.

**What a device sends.**  Its cohort (one, uniform, for all its reports), ``pairs`` distinct
pairs of positions ``j1 < j2`` drawn uniformly without replacement among the ``G (G - 1) /
2`` pairs (independently of the string: the positions are sent in the clear and reveal
nothing), the two n-grams of each pair each through the RAPPOR mechanism ``ngram``, and,
when ``full`` is given, the whole (unpadded) string through the RAPPOR mechanism ``full``.

**Epsilon per device** (basic composition over the reports it sends; each report's exact
one-report epsilon is :attr:`Rappor.epsilon <deniable.oracles.Rappor.epsilon>`):

    eps = 2 pairs eps_1(ngram) + eps_1(full),

and over any number of collections of one string, if each report's PRR is memoized per
(device, ``"<j>:<n-gram>"``) as :class:`~deniable.oracles.RapporClient` does (``randomize``
draws fresh PRRs: one collection), by the PRR bound of each value reported
(:attr:`Rappor.permanent_epsilon <deniable.oracles.Rappor.permanent_epsilon>`): positions
are drawn afresh each collection, so in time every one of the ``G`` n-grams is reported,

    eps_inf = G eps_inf(ngram) + eps_inf(full).

The one-collection ``eps`` is reached when two strings' Bloom bits are disjoint in every
report (strings that differ in every n-gram).  The server's side is
``deniable.oracles._rappor_ngram_decode``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._rappor import Rappor, RapporReports
from deniable.oracles._rappor_ngram_decode import NgramDiscovery, NgramReports, discover
from deniable.randomness import random_words, resolve_rng

__all__ = ["RapporNgram"]

#: Largest per-position n-gram domain the server decodes (candidates per position).
MAX_DOMAIN = 1 << 13
#: Longest string bound.
MAX_LENGTH = 64
#: Reports randomized at once (bounds the memory of the randomizer's words).
_BATCH = 1 << 14
_32 = np.uint64(32)


@dataclass(frozen=True)
class RapporNgram:
    """Strings over an alphabet reported as n-grams at fixed positions through RAPPOR
    (Fanti, Pihur & Erlingsson 2016; module docstring).

    Parameters
    ----------
    ngram : Rappor
        The mechanism of every n-gram report.
    full : Rappor or None
        The mechanism of the full string's report (None: no full report; the server then
        returns candidate strings without frequencies).
    alphabet : str
        The characters a string may hold, distinct, without ``pad`` and NUL.
    gram : int
        Characters per n-gram.
    length : int
        The longest string (characters), a multiple of ``gram`` with at least two
        n-grams (at most 64).
    pairs : int
        Position pairs a device reports, ``1..G (G - 1) / 2``.
    pad : str
        The padding character (one character, not in ``alphabet``).

    Examples
    --------
    >>> ng = RapporNgram(Rappor(m=32, h=2, cohorts=8, f=0.5, p=0.5, q=0.75), None,
    ...                  alphabet="abc", gram=2, length=4)
    >>> ng.positions, ng.domain_size, round(ng.epsilon, 4)  # 2 reports of 1.0743
    (2, 13, 2.1486)
    """

    ngram: Rappor
    full: Rappor | None
    alphabet: str
    gram: int
    length: int
    pairs: int = 1
    pad: str = "_"
    name: ClassVar[str] = "rappor-ngram"

    def __post_init__(self) -> None:
        for name in ("ngram", "full"):
            value = getattr(self, name)
            if not isinstance(value, Rappor) and not (name == "full" and value is None):
                allowed = "a Rappor" + (" or None" if name == "full" else "")
                raise ParameterTypeError(f"`{name}` must be {allowed}, got {type(value).__name__}.")
        if not isinstance(self.pad, str) or len(self.pad) != 1 or self.pad == "\0":
            raise ParameterError(f"`pad` must be one character other than NUL, got {self.pad!r}.")
        if not isinstance(self.alphabet, str):
            raise ParameterTypeError(
                f"`alphabet` must be a str of distinct characters, got "
                f"{type(self.alphabet).__name__}."
            )
        a = self.alphabet
        if not a or len(set(a)) != len(a) or self.pad in a or "\0" in a:
            raise ParameterError(
                "`alphabet` must hold at least one character, each once, without `pad` "
                f"({self.pad!r}) or NUL, got {a!r}."
            )
        gram = v.integer("gram", self.gram, minimum=1, maximum=8)
        object.__setattr__(self, "gram", gram)
        size = sum(len(a) ** i for i in range(gram + 1))  # n-grams whose padding is a suffix
        if size > MAX_DOMAIN:
            raise ParameterError(
                f"the n-gram domain (|alphabet|^gram n-grams and their padded ends) must hold "
                f"at most {MAX_DOMAIN} n-grams (the server decodes every one), got {size} "
                f"(|alphabet| = {len(a)}, gram = {gram})."
            )
        length = v.integer("length", self.length, minimum=2 * gram, maximum=MAX_LENGTH)
        if length % gram:
            raise ParameterError(
                f"`length` must be a multiple of `gram` ({gram}), got {self.length!r}."
            )
        object.__setattr__(self, "length", length)
        top = self.positions * (self.positions - 1) // 2
        object.__setattr__(self, "pairs", v.integer("pairs", self.pairs, minimum=1, maximum=top))

    @property
    def key(self) -> str:
        """The identity of the reports: every parameter a report depends on, the two RAPPOR
        mechanisms' as their keys' exact parameters (``rappor-ngram{...}``:
        ``oracles._rappor_ngram_files``)."""
        body = {"alphabet": self.alphabet, "full": _exact(self.full), "gram": self.gram,
                "length": self.length, "ngram": _exact(self.ngram), "pad": self.pad,
                "pairs": self.pairs}  # fmt: skip
        return self.name + json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)

    @property
    def positions(self) -> int:
        """``G = length / gram``: n-grams a string is cut into."""
        return self.length // self.gram

    @cached_property
    def position_pairs(self) -> npt.NDArray[np.int64]:
        """``(G (G - 1) / 2, 2)``: every pair ``j1 < j2``, in lexicographic order."""
        j1, j2 = np.triu_indices(self.positions, k=1)
        out = np.stack([j1, j2], axis=1).astype(np.int64)
        out.setflags(write=False)
        return out

    @cached_property
    def domain(self) -> tuple[str, ...]:
        """The n-grams a position may hold: ``gram`` characters, padding only at the end."""
        levels = [[""]]
        for _ in range(self.gram):
            levels.append([w + c for w in levels[-1] for c in self.alphabet])
        grams = list(levels[-1])
        for k in range(self.gram):  # k characters, then padding
            grams.extend(w + self.pad * (self.gram - k) for w in levels[k])
        return tuple(dict.fromkeys(grams))

    @property
    def domain_size(self) -> int:
        """Number of n-grams a position may hold."""
        return len(self.domain)

    @property
    def epsilon(self) -> float:
        """One collection: ``2 pairs eps_1(ngram) + eps_1(full)`` (basic composition)."""
        # eps = sum of the one-report epsilons of the 2 pairs + 1 reports a device sends
        full = self.full.epsilon if self.full is not None else 0.0
        return 2 * self.pairs * self.ngram.epsilon + full

    @property
    def permanent_epsilon(self) -> float:
        """Any number of collections of one string with PRRs memoized per value: ``G
        eps_inf(ngram) + eps_inf(full)`` (infinite if a PRR has ``f = 0``)."""
        # eps = one PRR bound per n-gram value (every position, in time) and the full string
        full = self.full.permanent_epsilon if self.full is not None else 0.0
        return self.positions * self.ngram.permanent_epsilon + full

    def _epsilon_per_report(self) -> float:
        """What one report costs a device against any change of its values
        (:func:`~deniable.oracles.report_epsilon`, derived in its Notes): ``epsilon``, ``2
        pairs eps_1(ngram) + eps_1(full)``, as every report draws its cohort, its pairs and
        every PRR afresh (the device rule of ``deniable.rappor-ngram-spec/1``; nothing is
        kept); infinite when a mechanism's one-report epsilon is."""
        # eps = 2 pairs eps_1(ngram) + eps_1(full): report_epsilon's Notes, "RAPPOR n-grams"
        return self.epsilon

    # ---- the client

    def strings(self, values: Any) -> npt.NDArray[np.str_]:
        """``values`` checked and decoded (``bytes`` from UTF-8): 1-D, not empty, each
        ``1..length`` characters of ``alphabet``.  The first bad value is named in a
        :class:`~deniable.exceptions.DataError`."""
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise ParameterTypeError(
                f"`values` must be a sequence of strings (str or UTF-8 bytes), got "
                f"{type(values).__name__}."
            )
        arr = np.asarray(values, dtype=object)
        if arr.ndim != 1:
            raise DataError(f"`values` must be 1-D, got shape {arr.shape}.")
        if not arr.size:
            raise DataError("`values` must hold at least one string, got none.")
        is_str = np.frompyfunc(lambda x: isinstance(x, str), 1, 1)(arr).astype(bool)
        is_bytes = np.frompyfunc(lambda x: isinstance(x, bytes), 1, 1)(arr).astype(bool)
        other = np.flatnonzero(~(is_str | is_bytes))
        if other.size:
            bad = arr[other[0]]
            raise DataError(
                f"`values[{other[0]}]` must be a str or UTF-8 bytes, got {type(bad).__name__}."
            )
        out = np.empty(arr.size, dtype=f"U{self.length}")
        allowed = set(self.alphabet)
        for mask in (is_str, is_bytes):
            rows = np.flatnonzero(mask)
            if not rows.size:
                continue
            uniq, inverse = np.unique(arr[rows], return_inverse=True)
            checked = [  # one check per distinct value
                self._check(s, allowed, rows, inverse, j) for j, s in enumerate(uniq.tolist())
            ]
            out[rows] = np.asarray(checked, dtype=f"U{self.length}")[inverse.reshape(-1)]
        return out

    def _check(
        self,
        s: Any,
        allowed: set[str],
        rows: npt.NDArray[np.intp],
        inverse: npt.NDArray[np.intp],
        j: int,
    ) -> str:
        where = f"`values[{int(rows[np.flatnonzero(inverse.reshape(-1) == j)[0]])}]`"
        if isinstance(s, bytes):
            try:
                s = s.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"{where} must be valid UTF-8, got bytes with an invalid byte at offset "
                    f"{exc.start} (the item is not shown)."
                ) from None
        if not isinstance(s, str):
            raise DataError(f"{where} must be a str or UTF-8 bytes, got {type(s).__name__}.")
        if not 1 <= len(s) <= self.length:
            raise DataError(
                f"{where} must hold 1..{self.length} characters (`length`), got {len(s)} "
                "(the item is not shown)."
            )
        bad = next((i for i, c in enumerate(s) if c not in allowed), None)
        if bad is not None:
            raise DataError(
                f"{where} must hold characters of `alphabet` ({self.alphabet!r}), got one "
                f"that is not at character {bad} (the item is not shown)."
            )
        return s

    def grams(self, values: Any) -> npt.NDArray[np.str_]:
        """``(n, G)``: each string's n-grams, padded with ``pad`` to ``length``."""
        return self._grams(self.strings(values))

    def _grams(self, s: npt.NDArray[np.str_]) -> npt.NDArray[np.str_]:
        padded = np.ascontiguousarray(np.char.ljust(s, self.length, self.pad), f"U{self.length}")
        return padded.view(f"U{self.gram}").reshape(s.size, self.positions)

    def randomize(self, values: Any, *, rng: Any = None) -> NgramReports:
        """One collection from devices holding ``values``: cohorts, position pairs, the
        n-gram reports (PRR then IRR of each) and the full-string reports.

        >>> ng = RapporNgram(Rappor(m=32, h=2, cohorts=8, f=0.5, p=0.5, q=0.75), None,
        ...                  alphabet="abc", gram=2, length=4)
        >>> r = ng.randomize(["ab", "abca", "c"], rng=1)
        >>> r.positions.tolist(), r.ngrams.bits.shape
        ([[[0, 1]], [[0, 1]], [[0, 1]]], (6, 4))
        """
        strings = self.strings(values)
        grams = self._grams(strings)
        n = grams.shape[0]
        gen = resolve_rng(rng)
        word = random_words(gen, n) >> _32  # the device's cohorts: one uniform word
        coh = ((word * np.uint64(self.ngram.cohorts)) >> _32).astype(np.int64)
        npairs = self.position_pairs.shape[0]
        keys = random_words(gen, n * npairs).reshape(n, npairs)
        chosen = np.argsort(keys, axis=1, kind="stable")[:, : self.pairs]
        positions = self.position_pairs[chosen]  # (n, pairs, 2)
        rows = np.repeat(np.arange(n), 2 * self.pairs)
        pos = positions.reshape(-1)
        labels = np.char.add(np.char.add(pos.astype(str), ":"), grams[rows, pos])
        ngrams = _report(self.ngram, labels, coh[rows], gen)
        full = None
        if self.full is not None:
            full_coh = ((word * np.uint64(self.full.cohorts)) >> _32).astype(np.int64)
            full = _report(self.full, strings, full_coh, gen)
        return NgramReports(positions, ngrams, full)

    def discover(
        self,
        reports: NgramReports,
        *,
        alpha: float = 0.05,
        edge_threshold: float = 0.02,
        max_candidates: int = 10_000,
    ) -> NgramDiscovery:
        """The strings frequent among the devices of ``reports``, with frequencies, SEs and
        the thresholds used: an :class:`~deniable.oracles.NgramDiscovery`
        (``deniable.oracles._rappor_ngram_decode`` has the four steps and the
        false-discovery rule).  ``alpha`` in ``(0, 1)`` is the family-wise level of the
        n-grams and of the strings; ``edge_threshold`` in ``(0, 1)`` the joint frequency
        that joins two n-grams; more than ``max_candidates`` candidate chains is refused."""
        return discover(
            self, reports, alpha=alpha, edge_threshold=edge_threshold,
            max_candidates=max_candidates,
        )  # fmt: skip


def _exact(rappor: Rappor | None) -> Any:
    """The exact parameters of ``rappor``'s key (``rappor{...}``) as JSON data, or None."""
    if rappor is None:
        return None
    _, brace, rest = rappor.key.partition("{")
    return json.loads(brace + rest)


def _report(
    rappor: Rappor, values: npt.NDArray[np.str_], cohorts: npt.NDArray[np.int64], gen: Any
) -> RapporReports:
    """PRR then IRR of each value in its cohort, in batches of ``_BATCH`` reports."""
    bits = np.empty((values.size, rappor.width), dtype=np.uint8)
    for start in range(0, values.size, _BATCH):
        sl = slice(start, start + _BATCH)
        bloom = rappor.bloom(values[sl], cohorts[sl])
        bits[sl] = rappor.instantaneous(rappor.permanent(bloom, rng=gen), rng=gen)
    return RapporReports(cohorts, bits)
