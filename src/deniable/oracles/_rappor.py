"""RAPPOR (Erlingsson, Pihur & Korolova, CCS 2014): strings through a Bloom filter, a
permanent and an instantaneous randomized response, and the per-cohort support-count tally.

**The Bloom filter.**  A client belongs to one of ``cohorts`` cohorts; cohort ``c`` has
``h`` hash functions into ``m`` bits.  A string ``s`` is first reduced to a 33-bit integer
``x(s)``: the top 33 bits of its 8-byte BLAKE2b digest (UTF-8, ``person =
b"deniable-rappor"``).  Hash ``i`` of cohort ``c`` is the multiply-add-shift function of
``deniable.oracles._hashing`` (Dietzfelbinger 1996),

    bit_ci(s) = ((((a_ci x + b_ci) mod 2**64) >> 32) m) >> 32,

with ``(a_ci, b_ci)`` the two little-endian 64-bit words of the 16-byte BLAKE2b digest of
``"deniable.rappor/1:<c>:<i>"`` (``deniable.rappor/1`` names this hash family):
deterministic, the same on every client and the server.  On inputs below ``2**33`` the
family is strongly universal, so for two distinct ``x`` a cohort's functions behave as
independent uniform draws of the family; two strings share ``x`` with probability
``2**-33``.

**Permanent randomized response (PRR)**, parameter ``f``: each Bloom bit ``B_i`` becomes
``B'_i`` = 1 with probability ``f / 2``, 0 with probability ``f / 2``, ``B_i`` otherwise.
It is drawn once per (client, value) and kept in a :class:`~deniable.mechanisms.MemoStore`
by :class:`~deniable.oracles.RapporClient` (``_rappor_client``), so averaging any number of
reports reveals at most ``B'``.  It is defined by ``m``, ``h``, ``cohorts``, ``f`` and the
hash family (:attr:`Rappor.permanent_key`), not by ``p`` and ``q``: a client whose IRR
changes keeps its PRR and cohort, and a change of the PRR's parameters is refused for a
client that holds one.

**Instantaneous randomized response (IRR)**, parameters ``p < q``: on every report bit
``S_i`` is 1 with probability ``q`` if ``B'_i = 1``, ``p`` if ``B'_i = 0``.  Reports are
bit-packed, ``m / 8`` bytes, bit ``i`` at bit ``i % 8`` of byte ``i // 8``.

**Epsilon** (the paper, sec. 4), exact for strings whose ``h`` bits are distinct (the worst
case: two such strings with disjoint bits differ in ``2 h`` bits):

* the PRR, which bounds any number of reports of one value: ``eps_inf = 2 h ln((1 - f/2) /
  (f/2))``;
* one report (PRR and IRR together): with ``q* = P(S_i = 1 | B_i = 1) = f (p + q) / 2 +
  (1 - f) q`` and ``p* = P(S_i = 1 | B_i = 0) = f (p + q) / 2 + (1 - f) p``, ``eps_1 = h
  ln(q* (1 - p*) / (p* (1 - q*)))``.

Probabilities are realized by comparing the top 53 bits of a uniform 64-bit word with the
probability rounded to a multiple of ``2**-53`` toward privacy (``f`` and ``p`` up, ``q``
down: the implemented channel is never less private than the stated one).

**Tally.**  ``cohorts (m + 1)`` int64 cells: for each cohort its ``m`` support counts (the
reports with bit ``i`` set) and then its number of reports ``N_c``.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import MechanismBase, Tally, mechanism_key
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._base import outside
from deniable.oracles._rappor_decode import RapporEstimate, _strings, decode
from deniable.randomness import random_words, resolve_rng

__all__ = ["Rappor", "RapporReports", "string_digest"]

_32 = np.uint64(32)
#: Largest Bloom filter (bits).
MAX_BITS = 1 << 16
#: Largest number of cohorts.
MAX_COHORTS = 1 << 16
#: The name of the Bloom filter's hash family (and of its version).
HASH_FAMILY = "deniable.rappor/1"
_53 = float(1 << 53)


def string_digest(values: Any) -> npt.NDArray[np.uint64]:
    """The 33-bit integer ``x(s)`` of each string (the top 33 bits of its 8-byte BLAKE2b
    digest with ``person = b"deniable-rappor"``), the hash family's input.

    >>> string_digest(["a", "a", "b"]).tolist()[0] == string_digest(["a"]).tolist()[0]
    True
    """
    arr = _strings("values", values)
    uniq, inverse = np.unique(arr, return_inverse=True)
    out = np.empty(uniq.size, dtype=np.uint64)
    for j, s in enumerate(uniq.tolist()):  # one digest per distinct string
        d = hashlib.blake2b(s.encode("utf-8"), digest_size=8, person=b"deniable-rappor")
        out[j] = int.from_bytes(d.digest(), "big") >> 31
    return out[inverse.reshape(-1)]


def _threshold(prob: float, *, up: bool) -> np.uint64:
    """``prob 2**53`` rounded up (``up``) or down: a 53-bit uniform is below it with
    probability ``prob`` to within ``2**-53``, on the side that is more private."""
    scaled = prob * _53  # exact: a power-of-two scaling
    return np.uint64(math.ceil(scaled) if up else math.floor(scaled))


def _bernoulli(words: npt.NDArray[np.uint64], prob: float, *, up: bool) -> npt.NDArray[np.bool_]:
    """``words >> 11 < threshold(prob)``: True with probability ``prob`` (to ``2**-53``)."""
    return np.asarray((words >> np.uint64(11)) < _threshold(prob, up=up), dtype=np.bool_)


def _probability(name: str, value: Any, *, top: bool) -> float:
    x = v.real(name, value)
    if not (0.0 <= x < 1.0 if not top else 0.0 <= x <= 1.0):
        allowed = "[0, 1)" if not top else "[0, 1]"
        raise ParameterError(f"`{name}` must be in {allowed}, got {value!r}.")
    return x


@dataclass(frozen=True)
class RapporReports:
    """A batch of RAPPOR reports: each report's cohort and its ``m`` bits packed into
    ``m / 8`` bytes (``bits``, a ``(n, m / 8)`` uint8 array)."""

    cohorts: npt.NDArray[np.int64]
    bits: npt.NDArray[np.uint8]

    def __len__(self) -> int:
        return int(self.cohorts.size)

    def __getitem__(self, rows: Any) -> RapporReports:
        """The reports of ``rows`` (a slice, indices or a mask): batches of a batch."""
        return RapporReports(np.asarray(self.cohorts)[rows], np.asarray(self.bits)[rows])


@dataclass(frozen=True)
class Rappor(MechanismBase):
    """The RAPPOR mechanism: Bloom filter of ``m`` bits with ``h`` hashes per cohort, PRR
    ``f``, IRR ``p < q`` (module docstring).

    Parameters
    ----------
    m : int
        Bloom filter bits, a positive multiple of 8 (at most 65536).
    h : int
        Hash functions per cohort, ``1 <= h <= m``.
    cohorts : int
        Number of cohorts (1..65536), each with its own hash functions.
    f : float
        PRR probability of replacing a bit by a fair coin, in ``[0, 1)``.
    p, q : float
        IRR probability of a set bit when the PRR bit is 0 (``p``) or 1 (``q``),
        ``0 <= p < q <= 1``.

    Examples
    --------
    >>> r = Rappor(m=128, h=2, cohorts=64, f=0.5, p=0.5, q=0.75)  # the paper's setting
    >>> round(r.permanent_epsilon, 4), round(r.epsilon, 4)
    (4.3944, 1.0743)
    """

    m: int
    h: int
    cohorts: int
    f: float
    p: float
    q: float
    name: ClassVar[str] = "rappor"

    def __post_init__(self) -> None:
        m = v.integer("m", self.m, minimum=8, maximum=MAX_BITS)
        if m % 8:
            raise ParameterError(
                f"`m` (Bloom filter bits) must be a positive multiple of 8, got {self.m!r}."
            )
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "h", v.integer("h", self.h, minimum=1, maximum=m))
        object.__setattr__(
            self, "cohorts", v.integer("cohorts", self.cohorts, minimum=1, maximum=MAX_COHORTS)
        )
        object.__setattr__(self, "f", _probability("f", self.f, top=False))
        p = _probability("p", self.p, top=True)
        q = _probability("q", self.q, top=True)
        if not p < q:
            raise ParameterError(
                f"`p` must be less than `q` (0 <= p < q <= 1), got p = {self.p!r}, q = {self.q!r}."
            )
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)

    # ---- identity (key, parameters, pickling: MechanismBase)

    @cached_property
    def permanent_key(self) -> str:
        """The identity of the PRR, stored with each client's permanent bits: ``m``, ``h``,
        ``cohorts``, ``f`` and the hash family, not the IRR's ``p`` and ``q``."""
        params = {"cohorts": self.cohorts, "f": self.f, "h": self.h, "hash": HASH_FAMILY}
        return mechanism_key("rappor-prr", {**params, "m": self.m})

    @cached_property
    def cohort_key(self) -> str:
        """The identity of a client's cohort draw, stored with it: the number of cohorts."""
        return mechanism_key("rappor-cohort", {"cohorts": self.cohorts})

    @property
    def width(self) -> int:
        """Bytes of a packed report: ``m / 8``."""
        return self.m // 8

    # ---- the channel and epsilon

    @property
    def q_star(self) -> float:
        """``P(S_i = 1 | B_i = 1) = f (p + q) / 2 + (1 - f) q``."""
        return self.f * (self.p + self.q) / 2 + (1 - self.f) * self.q

    @property
    def p_star(self) -> float:
        """``P(S_i = 1 | B_i = 0) = f (p + q) / 2 + (1 - f) p``."""
        return self.f * (self.p + self.q) / 2 + (1 - self.f) * self.p

    @property
    def permanent_epsilon(self) -> float:
        """Epsilon of the PRR, the bound over any number of reports of one value:
        ``2 h ln((1 - f/2) / (f/2))`` (infinite at ``f = 0``)."""
        if self.f == 0:
            return math.inf
        return 2 * self.h * math.log((1 - self.f / 2) / (self.f / 2))

    @property
    def epsilon(self) -> float:
        """Epsilon of one report: ``h ln(q* (1 - p*) / (p* (1 - q*)))`` (infinite if ``p* = 0``
        or ``q* = 1``), or the implemented channel's where rounding reverses it.

        Proof note.  Claim: no two Bloom filters of at most ``h`` set bits give one report
        with probabilities whose ratio exceeds ``e^epsilon`` (to float rounding).
        Argument: the report's bits are independent given the Bloom filter (the PRR and the
        IRR act bit by bit), set with ``q*`` over a Bloom 1 and ``p*`` over a 0; two filters
        differ in at most ``h`` bits each way, and a bit set in one and not the other changes
        the log-likelihood by at most ``max(ln(q*/p*), ln((1-q*)/(1-p*)))`` one way and the
        mirror the other, whose sum is the absolute value of ``ln(q* (1 - p*) / (p* (1 -
        q*)))`` (Erlingsson, Pihur & Korolova 2014, Theorem 2, for ``q* > p*``).  The
        randomizers implement ``f`` and ``p`` rounded up and ``q`` down to ``2**-53``
        (:attr:`implemented_stars`), which narrows the gap ``q* - p*``: the nominal formula
        bounds the implemented channel and is stated (the float closed form, as every spec
        states it).  Where ``p`` and ``q`` lie within ``2**-53`` of each other the rounding
        can reverse the channel (a set bit likelier over a Bloom 0): then the stated
        epsilon is the reversed channel's, computed from the exact implemented
        probabilities, infinite where a report bit is certain (``f = 0`` and ``q`` rounding
        to 0), never the nominal one.  Checked by enumeration in tests/test_rappor.py.
        """
        ips, iqs = self.implemented_stars
        if iqs < ips:  # rounding reversed the channel: its own epsilon, exact then rounded
            if iqs == 0 or ips == 1:
                return math.inf
            # ln(ips (1 - iqs) / (iqs (1 - ips))) = ln(1 + gap / iqs) + ln(1 + gap / (1 - ips)):
            # exact fractions, then one rounding each (no cancellation for a tiny epsilon)
            gap = ips - iqs
            return self.h * (math.log1p(gap / iqs) + math.log1p(gap / (1 - ips)))
        ps, qs = self.p_star, self.q_star
        if ps == 0 or qs == 1:
            return math.inf
        return self.h * math.log(qs * (1 - ps) / (ps * (1 - qs)))

    def _epsilon_per_report(self) -> float:
        """What one report costs a device against any change of its values
        (:func:`~deniable.oracles.report_epsilon`, derived in its Notes): the IRR's epsilon
        over every kept PRR, ``m max(ln(q / p), ln((1 - p) / (1 - q)))``; infinite when ``p =
        0`` or ``q = 1``.

        The IRR draws ``p`` and ``q`` as ``ceil(p 2**53)`` and ``floor(q 2**53)`` out of
        ``2**53``.  That lowers the ratio unless the rounding crosses them (``0 < p < q``
        within a unit of ``2**-53``, as ``p = 1e-17, q = 2e-17``: the IRR then sets a bit
        with probability ``2**-53`` over a kept 0 and never over a kept 1): then the
        implemented ratios are the charge, infinite when ``q`` rounds to 0 (never a finite
        number for an infinite loss)."""
        p, q, two53 = self.p, self.q, 1 << 53
        t_p, t_q = math.ceil(p * two53), math.floor(q * two53)  # exact: scaling by 2**53
        if t_q < t_p:  # the rounding crossed p and q: the reversed ratios, as implemented
            up = math.inf if t_q == 0 else math.log(t_p / t_q)
            down = math.log((two53 - t_q) / (two53 - t_p))
            return self.m * max(up, down)
        # a set report bit: ln(q / p), infinite at p = 0; a clear one: ln((1-p)/(1-q)), at q = 1
        up = math.inf if p == 0 else math.log(q / p)
        down = math.inf if q == 1 else math.log((1 - p) / (1 - q))
        return self.m * max(up, down)

    @property
    def implemented_stars(self) -> tuple[Fraction, Fraction]:
        """``(p*, q*)`` as the randomizers draw them, exact: the PRR's ``f`` rounded up and
        the IRR's ``p`` up and ``q`` down to multiples of ``2**-53`` (``_threshold``)."""
        two53 = 1 << 53
        f = Fraction(int(_threshold(self.f, up=True)), two53)
        p = Fraction(int(_threshold(self.p, up=True)), two53)
        q = Fraction(int(_threshold(self.q, up=False)), two53)
        mix = f * (p + q) / 2
        return mix + (1 - f) * p, mix + (1 - f) * q

    # ---- the Bloom filter

    @cached_property
    def hash_words(self) -> npt.NDArray[np.uint64]:
        """``(cohorts, h, 2)``: the words ``(a, b)`` of each cohort's hash functions."""
        out = np.empty((self.cohorts, self.h, 2), dtype=np.uint64)
        for c in range(self.cohorts):
            for i in range(self.h):
                d = hashlib.blake2b(f"{HASH_FAMILY}:{c}:{i}".encode(), digest_size=16)
                raw = d.digest()
                out[c, i, 0] = int.from_bytes(raw[:8], "little")
                out[c, i, 1] = int.from_bytes(raw[8:], "little")
        out.setflags(write=False)
        return out

    def _cohorts(self, cohorts: Any, n: int) -> npt.NDArray[np.int64]:
        arr = np.asarray(cohorts)
        if arr.ndim == 0:
            arr = np.full(n, arr)
        if arr.shape != (n,):
            raise DataError(
                f"`cohorts` must have one cohort per value ({n}), got shape {arr.shape}."
            )
        if arr.size and arr.dtype.kind not in "iu":
            raise DataError(f"`cohorts` must hold integers, got dtype {arr.dtype}.")
        bad = outside(arr, self.cohorts)
        if bad is not None:
            raise ParameterError(
                f"`cohorts` must be in 0..{self.cohorts - 1} (cohorts = {self.cohorts}), got {bad}."
            )
        return arr.astype(np.int64)

    def bloom_bits(self, values: Any, cohorts: Any) -> npt.NDArray[np.int64]:
        """``(n, h)``: the Bloom bit each hash of each cohort sets for each string."""
        x = string_digest(values)
        c = self._cohorts(cohorts, x.size)
        words = self.hash_words[c]  # (n, h, 2)
        hashed = (words[:, :, 0] * x[:, None] + words[:, :, 1]) >> _32
        return ((hashed * np.uint64(self.m)) >> _32).astype(np.int64)

    def bloom(self, values: Any, cohorts: Any) -> npt.NDArray[np.bool_]:
        """``(n, m)`` booleans: the Bloom filter of each string in its cohort."""
        idx = self.bloom_bits(values, cohorts)
        out = np.zeros((idx.shape[0], self.m), dtype=np.bool_)
        out[np.arange(idx.shape[0])[:, None], idx] = True
        return out

    def design_matrix(self, candidates: Any) -> npt.NDArray[np.bool_]:
        """``(cohorts, m, K)``: whether candidate ``k`` sets bit ``i`` in cohort ``c``."""
        cand = _strings("candidates", candidates)
        k = cand.size
        cs = np.repeat(np.arange(self.cohorts), k)
        bits = self.bloom(np.tile(cand, self.cohorts), cs).reshape(self.cohorts, k, self.m)
        return np.ascontiguousarray(bits.transpose(0, 2, 1))

    # ---- the randomizers

    def permanent(self, bloom: npt.NDArray[np.bool_], *, rng: Any = None) -> npt.NDArray[np.bool_]:
        """The PRR of ``(n, m)`` Bloom bits: each bit replaced by a fair coin with
        probability ``f`` (one word per bit: its top 53 bits decide, its lowest is the coin)."""
        words = random_words(resolve_rng(rng), bloom.size).reshape(bloom.shape)
        coin = (words & np.uint64(1)).astype(np.bool_)
        return np.where(_bernoulli(words, self.f, up=True), coin, bloom)

    def instantaneous(
        self, prr: npt.NDArray[np.bool_], *, rng: Any = None
    ) -> npt.NDArray[np.uint8]:
        """The IRR of ``(n, m)`` PRR bits, packed: bit set with ``q`` where the PRR bit is
        1, ``p`` where it is 0 (one word per bit)."""
        words = random_words(resolve_rng(rng), prr.size).reshape(prr.shape) >> np.uint64(11)
        bits = np.where(
            prr, words < _threshold(self.q, up=False), words < _threshold(self.p, up=True)
        )
        return np.packbits(bits, axis=1, bitorder="little")

    # ---- reports and tally

    def _reports(self, reports: Any) -> RapporReports:
        if not isinstance(reports, RapporReports):
            raise ParameterTypeError(
                f"`reports` must be RapporReports (cohorts and packed bits), got "
                f"{type(reports).__name__}."
            )
        bits = np.asarray(reports.bits)
        if bits.ndim != 2 or bits.shape[1] != self.width or bits.dtype != np.uint8:
            raise DataError(
                f"`reports.bits` must be a 2-D uint8 array of {self.width} bytes a row (m = "
                f"{self.m} bits), got an array of dtype {bits.dtype} and shape {bits.shape}."
            )
        cohorts = self._cohorts(reports.cohorts, bits.shape[0])
        return RapporReports(cohorts, bits)

    def tally(self, reports: RapporReports) -> Tally:  # type: ignore[override]
        """Per cohort, the number of reports with each bit set and the number of reports: a
        :class:`~deniable.designs.Tally` of ``cohorts (m + 1)`` cells bound to ``key``
        (adds across batches)."""
        rep = self._reports(reports)
        order = np.argsort(rep.cohorts, kind="stable")
        sizes = np.bincount(rep.cohorts, minlength=self.cohorts)
        bounds = np.concatenate(([0], np.cumsum(sizes)))
        out = np.zeros((self.cohorts, self.m + 1), dtype=np.int64)
        out[:, self.m] = sizes
        sorted_bits = rep.bits[order]
        for c in np.flatnonzero(sizes):
            block = sorted_bits[bounds[c] : bounds[c + 1]]
            for start in range(0, block.shape[0], 4096):
                unpacked = np.unpackbits(block[start : start + 4096], axis=1, bitorder="little")
                out[c, : self.m] += unpacked.sum(axis=0, dtype=np.int64)
        return Tally(out.reshape(-1), mechanism=self.key)

    @property
    def _tally_cells(self) -> int:
        return self.cohorts * (self.m + 1)

    def _tally_layout(self) -> str:
        return f"cohorts (m + 1): per cohort, the count of each of m = {self.m} bits, then n"

    def _check_counts(self, counts: npt.NDArray[np.int64]) -> None:
        grid = counts.reshape(self.cohorts, self.m + 1)
        if (grid[:, : self.m] > grid[:, self.m : self.m + 1]).any():
            raise DataError("a support count must be at most its cohort's number of reports.")

    def counts(self, tally: Tally) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """``(c, N)``: the ``(cohorts, m)`` support counts and each cohort's reports."""
        grid = self.bind(tally).counts.reshape(self.cohorts, self.m + 1)
        return grid[:, : self.m].copy(), grid[:, self.m].copy()

    def bit_estimates(self, tally: Tally) -> npt.NDArray[np.float64]:
        """The unbiased estimate of each Bloom bit's true count per cohort:
        ``t_ci = (c_ci - (p + f q / 2 - f p / 2) N_c) / ((1 - f)(q - p))``."""
        c, n = self.counts(tally)
        base = self.p + self.f * self.q / 2 - self.f * self.p / 2
        return (c - base * n[:, None]) / ((1 - self.f) * (self.q - self.p))

    def decode(
        self,
        tally: Tally,
        candidates: Any,
        *,
        alpha: float = 0.05,
        method: str = "nnls",
        penalty: float | None = None,
    ) -> RapporEstimate:
        """The frequency of each candidate string, its standard error and whether it is
        reported at Bonferroni level ``alpha``: a
        :class:`~deniable.oracles.RapporEstimate` (``deniable.oracles._rappor_decode``).

        ``method`` selects the candidates that are refit: ``"nnls"`` (non-negative least
        squares, the default) or ``"lasso"`` (the paper's non-negative Lasso, with
        ``penalty`` in noise standard deviations on unit-norm columns, by default
        ``sqrt(2 ln K)`` for ``K`` candidates; ``penalty`` is refused with ``"nnls"``).
        """
        return decode(self, tally, candidates, alpha=alpha, method=method, penalty=penalty)
