"""Sequence Fragment Puzzle (Apple Differential Privacy Team 2017, "Learning with Privacy at
Scale"): frequent strings of an unknown domain from two count mean sketches.

**Strings.**  A value is a ``str`` or UTF-8 ``bytes`` (invalid UTF-8 refused), non-empty, of
at most ``L = max_length`` symbols.  The symbols are the string's UTF-8 bytes (``alphabet``
``None``: ``A = 256`` symbols) or its characters, each in ``alphabet`` (``A`` characters).
A string is padded with a symbol of its own (index ``A``) to ``2 P`` symbols, ``P = ceil(L /
2)``, and cut into ``P`` fragments of two symbols.  Its **puzzle piece** is the ``r``-bit
hash ``p(s)`` = the top ``r = puzzle_bits`` bits of SHA-256(``"deniable.sfp/1" || 0x00 ||
utf-8 s``).

**Collection.**  A device with string ``s`` draws a position ``l`` uniformly in ``0..P-1``
(independent of ``s``; sent in the clear) and sends

* to the **fragment sketch**, the record ``"l:p(s):i.j"`` (``i, j`` the indices of its
  fragment ``l``), at ``eps_f = fragment_share * epsilon``;
* to the **whole-string sketch**, ``s``, at ``eps_w = epsilon - eps_f``;

both sketches a CMS or an HCMS (``deniable.oracles._cms_base``) of ``k`` rows and ``m``
columns.  **Epsilon per device** (replace one device's string): the position does not
depend on the string and the two reports use independent coins, so a report's likelihood
ratio is the product of the two sketches' ratios, at most ``e^(eps_f) e^(eps_w) =
e^epsilon``; both are attained at once (two strings whose records and whole strings take
other columns in some row), so ``epsilon`` is exact (``tests/test_sfp.py`` enumerates it).

**Server.**  Position ``l``'s reports form a sketch of their own (``n_l`` devices): every
record ``(p, i, j)`` of the position, ``2^r ((A + 1)^2 - A)`` of them (a padding symbol is
never followed by another symbol; position 0 never starts with one), is estimated, and
those whose share reaches

    t_l = z(alpha / R) sd_l(0),   sd_l(0)^2 = the sketch's variance of a share 0 among n_l
                                  reports (devices sampled; F2 from the sketch itself),

are kept (``R`` the records of all positions, ``z(q)`` the upper ``q`` quantile of the
normal: Bonferroni).  The kept records are grouped by puzzle value; a puzzle value with a
kept fragment at every position yields the cartesian product of its fragments, at most
``max_candidates`` strings (while it is larger, the position with the most fragments drops
its smallest estimate).  A product string is a candidate when its padding is trailing, it
decodes and its own puzzle piece is the group's.  Each candidate's frequency is then
estimated from the whole-string sketch (``n`` devices) and kept above ``t_w = z(alpha / K)
sd(0)`` (``K`` candidates).

**Recall against false discoveries.**  Under the normal approximation a stage keeps a
record (string) of frequency 0 with probability at most ``alpha``.  A string of frequency
``f`` is found when ``f`` clears ``t_l`` at every position (``n_l = n / P``: a longer ``L``
divides the devices further) and ``t_w``.  ``z(alpha / R)`` grows with ``R = P 2^r (A +
1)^2``: a larger alphabet, more puzzle bits or a smaller ``alpha`` raise the floor and lose
recall; a larger ``alpha`` admits more false discoveries.  More puzzle bits split the
strings into smaller groups (fewer false products: ``2^-r`` of the wrong ones survive the
puzzle check).  **Cost**: ``R = P 2^r ((A + 1)^2 - A)`` records are hashed and estimated:
with the default byte alphabet and ``r = 8``, about ``2^24`` a position (minutes a position
here, in chunks); lowercase and digits (``A = 36``) about ``3.4 10^5``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from scipy.stats import norm

from deniable.common import validation as v
from deniable.designs import mechanism_key
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._base import check_epsilon, check_indices, open_probability
from deniable.oracles._cms import CMS
from deniable.oracles._cms_base import CountMeanSketch
from deniable.oracles._hcms import HCMS
from deniable.oracles._sfp_assemble import Groups, assemble, chunked_estimate, puzzle_piece
from deniable.oracles._sfp_result import SFPReports, SFPResult, SFPTally
from deniable.oracles._sketch import check_level, sketch_strings
from deniable.randomness import random_words, resolve_rng, uniform_below

__all__ = ["SFP"]

FloatArray = npt.NDArray[np.float64]
#: Longest ``max_length`` (symbols) and largest alphabet.
MAX_LENGTH = 64
MAX_ALPHABET = 256
#: SFP's CMS stays on spec version 1 (one flip word a bit): an SFP key names its sketch but
#: no sketch version, so its stored tallies and seeded outputs keep their meaning.
_SKETCHES: dict[str, Callable[..., CountMeanSketch]] = {
    "cms": partial(CMS, spec_version=1), "hcms": HCMS,
}  # fmt: skip


@dataclass(frozen=True)
class SFP:
    """Sequence Fragment Puzzle (Apple 2017): each device sends one two-symbol fragment of
    its string with an ``r``-bit hash of the whole string (the puzzle piece) to a sketch, and
    the whole string to another; the server assembles the frequent fragments that share a
    puzzle piece and keeps the strings the second sketch finds frequent (module docstring).
    **Each device's total epsilon is** ``epsilon`` (``fragment_share`` of it to the fragment
    sketch, the rest to the whole-string sketch).

    >>> sfp = SFP(epsilon=6.0, max_length=4, alphabet="abc", puzzle_bits=4, k=32, m=256)
    >>> sfp.positions, sfp.records_per_position, round(sfp.epsilon_per_device, 12)
    (2, 208, 6.0)
    """

    epsilon: float
    max_length: int
    alphabet: str | None = None
    puzzle_bits: int = 8
    k: int = 64
    m: int = 1024
    sketch: str = "hcms"
    fragment_share: float = 0.5
    alpha: float = 0.01
    max_candidates: int = 1024
    salt: int = 0
    name: ClassVar[str] = "sfp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(
            self, "max_length", v.integer("max_length", self.max_length, minimum=1,
                                          maximum=MAX_LENGTH)
        )  # fmt: skip
        if self.alphabet is not None:
            if not isinstance(self.alphabet, str):
                raise ParameterTypeError(
                    f"`alphabet` must be a str of distinct characters or None (bytes 0..255), "
                    f"got {type(self.alphabet).__name__}."
                )
            if not 1 <= len(self.alphabet) <= MAX_ALPHABET or len(set(self.alphabet)) != len(
                self.alphabet
            ):
                raise ParameterError(
                    f"`alphabet` must hold 1 to {MAX_ALPHABET} distinct characters, got "
                    f"{self.alphabet!r}."
                )
        object.__setattr__(
            self, "puzzle_bits", v.integer("puzzle_bits", self.puzzle_bits, minimum=1, maximum=16)
        )
        v.choice("sketch", self.sketch, tuple(_SKETCHES))
        object.__setattr__(
            self, "fragment_share", open_probability("fragment_share", self.fragment_share, 0, 1)
        )
        object.__setattr__(self, "alpha", open_probability("alpha", self.alpha, 0, 1))
        object.__setattr__(
            self,
            "max_candidates",
            v.integer("max_candidates", self.max_candidates, minimum=1, maximum=1 << 20),
        )
        for name in ("k", "m", "salt"):  # validated by the sketches, kept as they hold them
            object.__setattr__(self, name, getattr(self.word_sketch, name))
        if self.k * math.log2(self.m) < 62 and self.m**self.k < self.records_per_position:
            raise ParameterError(
                f"`m` must give the fragment sketch at least as many column signatures (m**k = "
                f"{self.m**self.k}) as a position has records ({self.records_per_position}), "
                f"got m = {self.m} with k = {self.k}."
            )

    # ---- shape and privacy

    @property
    def symbols(self) -> int:
        """``A``: 256 bytes, or the alphabet's characters (the padding symbol is ``A``)."""
        return MAX_ALPHABET if self.alphabet is None else len(self.alphabet)

    @property
    def positions(self) -> int:
        """``P = ceil(L / 2)``: fragments of a string."""
        return (self.max_length + 1) // 2

    @property
    def records_per_position(self) -> int:
        """``2^r ((A + 1)^2 - A)``: the records the server estimates at a position (``2^r``
        fewer at position 0, which never starts with padding; the Bonferroni count ``R`` is
        ``P`` times this, a bound)."""
        return (1 << self.puzzle_bits) * ((self.symbols + 1) ** 2 - self.symbols)

    @cached_property
    def fragment_epsilon(self) -> float:
        """``eps_f = fragment_share * epsilon``."""
        return self.epsilon * self.fragment_share

    @cached_property
    def word_epsilon(self) -> float:
        """``eps_w = epsilon - eps_f``, lowered by an ulp if rounding put the sum above."""
        eps_w = self.epsilon - self.fragment_epsilon
        while self.fragment_epsilon + eps_w > self.epsilon:
            eps_w = math.nextafter(eps_w, 0.0)
        return eps_w

    @property
    def epsilon_per_device(self) -> float:
        """Each device's epsilon: ``eps_f + eps_w`` (at most ``epsilon``; module docstring)."""
        return self.fragment_epsilon + self.word_epsilon

    def _epsilon_per_report(self) -> float:
        # a stream's charge (oracles.report_epsilon): one report is a fresh position, drawn
        # whatever the string, and one fresh report to each sketch with independent coins,
        # nothing kept: the product of the two sketches' ratios, eps_f + eps_w (exact)
        return float(self.fragment_sketch.epsilon + self.word_sketch.epsilon)

    @property
    def implemented_epsilon(self) -> float:
        """The sum of the two sketches' implemented epsilons: at most ``epsilon``."""
        return self.fragment_sketch.implemented_epsilon + self.word_sketch.implemented_epsilon

    @cached_property
    def fragment_sketch(self) -> CountMeanSketch:
        """The sketch of the records ``"l:p:i.j"`` (one tally per position)."""
        cls = _SKETCHES[self.sketch]
        return cls(k=self.k, m=self.m, epsilon=self.fragment_epsilon, salt=self.salt,
                   max_bytes=64)  # fmt: skip

    @cached_property
    def word_sketch(self) -> CountMeanSketch:
        """The sketch of the whole strings."""
        self.fragment_sketch  # noqa: B018 - validated first: its errors name its epsilon
        cls = _SKETCHES[self.sketch]
        return cls(k=self.k, m=self.m, epsilon=self.word_epsilon, salt=self.salt,
                   max_bytes=self._max_bytes)  # fmt: skip

    @property
    def _max_bytes(self) -> int:
        return self.max_length if self.alphabet is None else 4 * self.max_length

    @property
    def key(self) -> str:
        """The identity of the reports: every parameter a report depends on, exact, not the
        server's ``alpha`` and ``max_candidates`` (``sfp{...}``: ``oracles._sfp_files``)."""
        params = {"alphabet": self.alphabet, "epsilon": self.epsilon, "k": self.k,
                  "m": self.m, "fragment_share": self.fragment_share, "sketch": self.sketch,
                  "max_length": self.max_length, "puzzle_bits": self.puzzle_bits,
                  "salt": self.salt}  # fmt: skip
        return mechanism_key(self.name, params)

    # ---- strings

    def strings(self, values: Any) -> list[bytes]:
        """``values`` as checked UTF-8 bytes: non-empty, at most ``max_length`` symbols, each
        in the alphabet; an error names ``values``, the position and what was wrong."""
        raw = sketch_strings("values", values, 4 * self.max_length)
        allowed = None if self.alphabet is None else set(self.alphabet)
        unit = "bytes in UTF-8" if allowed is None else "characters"
        for s in dict.fromkeys(raw):  # once per distinct string
            text = s.decode("utf-8")
            if (size := len(s) if allowed is None else len(text)) > self.max_length:
                raise DataError(
                    f"`values`[{raw.index(s)}] must be at most max_length = {self.max_length} "
                    f"{unit}, got {size}."
                )
            if allowed is not None and not set(text) <= allowed:
                at = next(i for i, c in enumerate(text) if c not in allowed)
                raise DataError(
                    f"`values`[{raw.index(s)}] must use only the alphabet's characters "
                    f"{self.alphabet!r}, got one that is not at character {at} (the item is "
                    "not shown)."
                )
        return raw

    def symbol_indices(self, strings: list[bytes]) -> npt.NDArray[np.int64]:
        """``(len(strings), 2 P)``: each (checked) string's symbol indices, padded with ``A``."""
        out = np.full((len(strings), 2 * self.positions), self.symbols, dtype=np.int64)
        index = None if self.alphabet is None else {c: i for i, c in enumerate(self.alphabet)}
        for u, s in enumerate(strings):
            if index is None:
                out[u, : len(s)] = np.frombuffer(s, dtype=np.uint8)
            else:
                text = s.decode("utf-8")
                out[u, : len(text)] = [index[c] for c in text]
        return out

    # ---- device

    def randomize(self, values: Any, *, rng: Any = None) -> SFPReports:
        """Reports for the strings ``values`` (CSPRNG unless ``rng`` is given): the words
        consumed are one per device (its position, ``uniform_below(word, P)``), then the
        fragment sketch's, then the whole-string sketch's."""
        raw = self.strings(values)
        gen = resolve_rng(rng)
        pos = uniform_below(random_words(gen, len(raw)), self.positions).astype(np.int64)
        fragments = self.fragment_sketch.randomize(self._fragment_records(raw, pos), rng=gen)
        words = self.word_sketch.randomize(raw, rng=gen)
        return SFPReports(pos, fragments, words)

    def _fragment_records(
        self, raw: list[bytes], pos: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.object_]:
        """Each device's record ``"l:p(s):i.j"`` of its (checked) string at its position."""
        distinct = list(dict.fromkeys(raw))
        where = {s: u for u, s in enumerate(distinct)}
        inv = np.fromiter((where[s] for s in raw), dtype=np.int64, count=len(raw))
        sym = self.symbol_indices(distinct)
        puzzle = puzzle_piece(distinct, self.puzzle_bits)
        first, second = sym[inv, 2 * pos], sym[inv, 2 * pos + 1]
        base = self.symbols + 1
        code = (pos * (1 << self.puzzle_bits) + puzzle[inv]) * base**2 + first * base + second
        codes, back = np.unique(code, return_inverse=True)
        records = np.array([self._record(int(c)) for c in codes], dtype=object)
        out: npt.NDArray[np.object_] = records[back.reshape(-1)]
        return out

    def _record(self, code: int) -> str:
        base = self.symbols + 1
        rest, j = divmod(code, base)
        rest, i = divmod(rest, base)
        pos, p = divmod(rest, 1 << self.puzzle_bits)
        return f"{pos}:{p}:{i}.{j}"

    # ---- server

    def tally(self, reports: Any) -> SFPTally:
        """Per position the fragment sketch's tally of its reports, and the whole-string
        sketch's tally (:class:`~deniable.oracles.SFPTally`: adds across batches)."""
        if not isinstance(reports, SFPReports):
            raise ParameterTypeError(f"`reports` must be SFPReports, got {type(reports).__name__}.")
        pos = np.asarray(reports.positions)
        if pos.ndim != 1 or (pos.size and pos.dtype.kind not in "iu"):
            raise DataError(
                f"`reports.positions` must be a 1-D integer array, got dtype {pos.dtype} and "
                f"shape {pos.shape}."
            )
        check_indices("reports.positions", pos, self.positions)
        frag = self.fragment_sketch
        tallies = tuple(frag.tally(reports.fragments[pos == i]) for i in range(self.positions))
        got = sum(frag._reports_in(t) for t in tallies)
        if got != pos.size:
            raise DataError(
                f"`reports.fragments` must hold one report per device ({pos.size}), got {got}."
            )
        words = self.word_sketch.tally(reports.words)
        if (got := self.word_sketch._reports_in(words)) != pos.size:
            raise DataError(
                f"`reports.words` must hold one report per device ({pos.size}), got {got}."
            )
        return SFPTally(tallies, words, key=self.key)

    def threshold(self, sketch: CountMeanSketch, n: int, tests: int, moment: float | None) -> float:
        """``z(alpha / tests) sd(0)``: the share a record or string of frequency 0 exceeds
        with probability about ``alpha / tests`` among ``n`` reports of ``sketch``, whose
        second moment ``F2`` is ``moment`` (``None``: the bound 1)."""
        others = 1.0 if moment is None else moment
        sd = math.sqrt(float(sketch.variance(n, 0.0, others, population="iid")))
        return float(norm.isf(self.alpha / tests)) * sd

    def estimate(self, data: SFPReports | SFPTally, *, level: float = 0.95) -> SFPResult:
        """The frequent strings of the reports (or their tally), most frequent first."""
        lvl = check_level(level)
        tally = data if isinstance(data, SFPTally) else self.tally(data)
        self._check_tally(tally)
        kept, thresholds = self._fragments(tally)
        cands, trimmed = self._candidates(kept)
        word = self.word_sketch
        n = word._reports_in(tally.words)
        found: list[tuple[str, float, float, float]] = []
        t_w = math.inf
        if cands and n:
            t_w = self.threshold(word, n, len(cands), word.second_moment(tally.words))
            est = chunked_estimate(word, tally.words, cands, lambda c: c)
            for c, val, se, sef in zip(cands, *est, strict=True):
                if val >= t_w:
                    found.append((c.decode("utf-8"), float(val), float(se), float(sef)))
        found.sort(key=lambda x: -x[1])
        return SFPResult(
            strings=tuple(x[0] for x in found),
            frequencies=tuple(x[1] for x in found),
            se=tuple(x[2] for x in found),
            se_fixed=tuple(x[3] for x in found),
            n=n,
            epsilon=self.epsilon_per_device,
            fragment_epsilon=self.fragment_epsilon,
            word_epsilon=self.word_epsilon,
            alpha=self.alpha,
            fragment_thresholds=thresholds,
            fragments_kept=tuple(len(k) for k in kept),
            candidates=len(cands),
            trimmed=trimmed,
            word_threshold=t_w,
            level=lvl,
            key=self.key,
        )

    def run(self, values: Any, *, rng: Any = None, level: float = 0.95) -> SFPResult:
        """:meth:`randomize` then :meth:`estimate` (a simulation)."""
        return self.estimate(self.randomize(values, rng=rng), level=level)

    def _check_tally(self, tally: SFPTally) -> None:
        if tally.key != self.key:
            raise DataError(
                f"`data` must be a tally of this SFP ({self.key}), got one of {tally.key}."
            )
        if len(tally.fragments) != self.positions:
            raise DataError(
                f"`data` must hold {self.positions} position tallies, got {len(tally.fragments)}."
            )
        for t in tally.fragments:  # a position may have no reports (a small batch)
            self.fragment_sketch.bind(t)
        self.word_sketch._as_tally(tally.words)

    def _fragments(self, tally: SFPTally) -> tuple[list[Groups], tuple[float, ...]]:
        """Per position, the kept records ``{puzzle: [(estimate, fragment code), ...]}``
        and the thresholds."""
        frag = self.fragment_sketch
        a, r = self.symbols, 1 << self.puzzle_bits
        base = a + 1
        pairs = np.arange(base * base, dtype=np.int64)
        valid = ~((pairs // base == a) & (pairs % base != a))  # padding is never followed
        tests = self.positions * self.records_per_position
        kept: list[Groups] = []
        thresholds: list[float] = []
        for at in range(self.positions):
            ok = pairs[valid & (pairs // base != a)] if at == 0 else pairs[valid]
            n_l = frag._reports_in(tally.fragments[at])
            groups: Groups = {}
            if n_l == 0:
                thresholds.append(math.inf)
                kept.append(groups)
                continue
            t_l = self.threshold(frag, n_l, tests, frag.second_moment(tally.fragments[at]))
            codes = (at * r + np.arange(r, dtype=np.int64)[:, None]) * base**2 + ok[None, :]
            codes = codes.reshape(-1)
            values = chunked_estimate(
                frag, tally.fragments[at], codes, lambda c: self._record(int(c))
            )[0]
            for c, val in zip(codes[values >= t_l], values[values >= t_l], strict=True):
                p = int(c // base**2) % r
                groups.setdefault(p, []).append((float(val), int(c % base**2)))
            thresholds.append(t_l)
            kept.append(groups)
        return kept, tuple(thresholds)

    def _candidates(self, kept: list[Groups]) -> tuple[list[bytes], int]:
        """The candidates of the kept records and the puzzle values trimmed
        (:func:`~deniable.oracles._sfp_assemble.assemble`)."""
        return assemble(kept, self.symbols, self.alphabet, self.puzzle_bits, self.max_candidates)
