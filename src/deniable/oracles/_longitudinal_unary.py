"""Longitudinal unary encoding (Arcolezi et al. 2022): L-SUE (basic RAPPOR without the Bloom
filter), L-OUE and L-OSUE, two-round memoized oracles (``deniable.oracles._longitudinal``).

The value ``x`` is one-hot encoded as ``k`` bits.  The PRR sets bit ``x`` with probability
``p1`` and every other bit with ``q1``; the IRR sets each bit of the PRR that is set with
``p2`` and each that is not with ``q2``.  So a report's bit ``j`` is set with ``p_s = p1 p2 +
(1 - p1) q2`` when ``j = x`` and ``q_s = q1 p2 + (1 - q1) q2`` otherwise, independently, and
``p_s - q_s = (p1 - q1)(p2 - q2)``.  Changing the value moves two bits (Wang et al. 2017):

* ``epsilon = ln(p1 (1 - q1) / ((1 - p1) q1))`` (the PRR's);
* ``epsilon_1 = ln(p_s (1 - q_s) / ((1 - p_s) q_s))`` (the composed channel's);
* ``epsilon_irr = k max(ln(p2 / q2), ln((1 - q2) / (1 - p2)))``: two PRR outputs may differ
  in all ``k`` bits.

=======  ==========================  ==========================  ============================
oracle   PRR                         IRR                         ``from_epsilon``
=======  ==========================  ==========================  ============================
L-SUE    SUE: ``q1 = 1 - p1``        SUE: ``q2 = 1 - p2``        ``p1 = e^(e/2) / (e^(e/2)
                                                                 + 1)``, ``p_s`` the same at
                                                                 ``eps_1``
L-OUE    OUE: ``p1 = 1/2``           OUE: ``p2 = 1/2``           ``q1 = 1 / (e^eps_inf + 1)``,
                                                                 ``q2`` solves ``eps_1``
L-OSUE   OUE: ``p1 = 1/2``           SUE: ``q2 = 1 - p2``        ``q1 = 1 / (e^eps_inf + 1)``,
                                                                 ``q_s = 1 / (e^eps_1 + 1)``
=======  ==========================  ==========================  ============================

(``e = eps_inf``; Arcolezi et al.'s closed forms, written as the composed channel they
solve.)  L-OUE's first report cannot reach every ``eps_1 < eps_inf``: with ``p2 = 1/2`` it is
below ``ln((2 e^eps_inf + 1) / 3)``.

**The randomizer.**  Bit ``j`` of a round is set when ``w >> 11 < t``, ``w`` a 64-bit word,
``t = round(p 2**53)``: each probability is realised as ``t / 2**53`` and every number stated
is of those (``probabilities``); ``from_epsilon`` fits them so that
both epsilons are at most the request.  A round consumes ``k`` words, one a bit; a first
report (no memo) ``2 k``, report by report: words ``0..k-1`` the PRR's bits, ``k..2k-1`` the
IRR's.  A report is ``ceil(k / 8)`` bytes, bit ``j`` at bit ``j % 8`` of byte ``j //
8``, as SUE's and OUE's; a kept PRR is ``ceil(k / 56)`` memo reports of 56 bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from scipy.optimize import brentq

from deniable.common import validation as v
from deniable.designs import expit
from deniable.exceptions import ParameterError
from deniable.oracles._base import check_k, open_probability
from deniable.oracles._bits import _PackedSupports
from deniable.oracles._longitudinal import LongitudinalOracle, fit_both
from deniable.randomness import fill_words, probability_threshold, random_words

__all__ = ["LOSUE", "LOUE", "LSUE", "LongitudinalUnary"]

_TWO53 = float(1 << 53)
_ELEVEN = np.uint64(11)
#: Bits of a PRR kept in one memo report (a non-negative int64).
_CHUNK = 56
#: Words a block of reports draws at once (2 MB).
_BLOCK_WORDS = 1 << 18


def _realised(p: float) -> float:
    return probability_threshold(p) / _TWO53


def _ue_epsilon(p: float, q: float) -> float:
    # eps = ln(p (1 - q) / ((1 - p) q)): bit x from p to q, bit x' from q to p
    return math.log(p * (1 - q) / ((1 - p) * q))


class LongitudinalUnary(_PackedSupports, LongitudinalOracle):
    """Base of L-SUE, L-OUE and L-OSUE (module doc)."""

    _family: ClassVar[str] = "unary"
    max_k: ClassVar[int] = 1 << 16
    #: The parameters a subclass is given, as (name, low, high) of an open interval.
    _bounds: ClassVar[tuple[tuple[str, float, float], ...]]

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_k(self.k, self.max_k))
        for name, low, high in self._bounds:
            p = open_probability(name, getattr(self, name), low, high)
            v.realizable(name, min(p, 1 - p))  # the smaller of p and 1 - p is drawn
            object.__setattr__(self, name, p)

    @property
    def _given(self) -> tuple[float, float, float, float]:
        """``(p1, q1, p2, q2)`` as the subclass's parameters give them."""
        raise NotImplementedError  # pragma: no cover - subclasses

    @cached_property
    def _thresholds(self) -> tuple[int, int, int, int]:
        p1, q1, p2, q2 = self._given
        return tuple(probability_threshold(p) for p in (p1, q1, p2, q2))  # type: ignore[return-value]

    @property
    def probabilities(self) -> tuple[float, float, float, float]:
        return tuple(t / _TWO53 for t in self._thresholds)  # type: ignore[return-value]

    @property
    def epsilon(self) -> float:
        p1, q1, _, _ = self.probabilities
        return _ue_epsilon(p1, q1)  # the PRR: every report is its post-processing

    @property
    def epsilon_1(self) -> float:
        ps, qs = self._support()
        return _ue_epsilon(ps, qs)  # the composed channel: unary encoding at (p_s, q_s)

    @property
    def epsilon_irr(self) -> float:
        _, _, p2, q2 = self.probabilities
        # eps_irr = k max ln-ratio of one bit: two PRR outputs may differ in every bit
        return self.k * max(math.log(p2 / q2), math.log((1 - q2) / (1 - p2)))

    @property
    def words_per_report(self) -> int:
        return 2 * self.k

    @property
    def n_reports(self) -> int:
        return self.k

    @property
    def _chunks(self) -> int:
        return -(-self.k // _CHUNK)

    # ---- rounds

    def _blocks(self, n: int, rounds: int) -> list[tuple[int, int]]:
        block = max(1, _BLOCK_WORDS // (rounds * self.k))
        return [(s, min(s + block, n)) for s in range(0, n, block)]

    def _first(self, x: npt.NDArray[np.integer[Any]], gen: Any) -> npt.NDArray[Any]:
        t_p1, t_q1, t_p2, t_q2 = (np.uint64(t) for t in self._thresholds)
        k = self.k
        out = np.empty((x.size, (k + 7) // 8), dtype=np.uint8)
        for start, stop in self._blocks(x.size, 2):
            m = stop - start
            u = random_words(gen, 2 * m * k).reshape(m, 2, k) >> _ELEVEN
            thr = np.full((m, k), t_q1, dtype=np.uint64)
            thr[np.arange(m), x[start:stop]] = t_p1
            prr = u[:, 0] < thr  # words 0..k-1 of a report: the PRR's bits
            irr = u[:, 1] < np.where(prr, t_p2, t_q2)  # words k..2k-1: the IRR's
            out[start:stop] = np.packbits(irr, axis=1, bitorder="little")
        return out

    def _irr(self, prr: npt.NDArray[Any], gen: Any) -> npt.NDArray[Any]:
        # prr: the PRRs packed as reports are, (n, ceil(k / 8)) bytes (_from_chunks).  Bit
        # j is set when w >> 11 < t (t = t_p2 where the PRR's bit is set, else t_q2), i.e.
        # when w < t << 11 (exact: t < 2**53, checked by __post_init__).  Every oracle
        # here has q2 < p2, so that is (w < t_q2 << 11) | (prr & (w < t_p2 << 11)): the
        # same words and bits as a threshold per bit, without the threshold array, the
        # shift or the complement of the PRR; both comparisons are packed (rows padded to
        # whole bytes with zeros, so that one flat packbits packs a block) and combined
        # with the packed PRR, never unpacked.  The words of a block are written into one
        # buffer (fill_words: the same words random_words gives), kept in cache block after
        # block; a numpy Generator's block is its bit generator's own array (random_words:
        # fill_words would copy it into the buffer).
        _, _, t_p2, t_q2 = self._thresholds
        top_p, top_q = np.uint64(t_p2 << 11), np.uint64(t_q2 << 11)
        k, width = self.k, (self.k + 7) // 8
        out = np.empty((prr.shape[0], width), dtype=np.uint8)
        blocks = self._blocks(prr.shape[0], 1)
        rows = blocks[0][1] if blocks else 0  # the first block is the largest
        buf = np.empty(0 if isinstance(gen, np.random.Generator) else rows * k, np.uint64)
        high = np.zeros((rows, 8 * width), dtype=np.bool_)  # the padding columns stay 0
        low = np.zeros((rows, 8 * width), dtype=np.bool_)
        own = isinstance(gen, np.random.Generator)
        for start, stop in blocks:
            m = stop - start
            flat = random_words(gen, m * k) if own else fill_words(gen, buf[: m * k])
            words = flat.reshape(m, k)
            np.less(words, top_p, out=high[:m, :k])
            np.less(words, top_q, out=low[:m, :k])
            block = out[start:stop]
            packed = np.packbits(high[:m].reshape(-1), bitorder="little").reshape(m, width)
            np.bitwise_and(packed, prr[start:stop], out=block)
            block |= np.packbits(low[:m].reshape(-1), bitorder="little").reshape(m, width)
        return out

    def _prr_chunk(self, value: int, n: int, chunk: int, gen: Any) -> npt.NDArray[np.int64]:
        # bit j of the chunk (PRR bit lo + j) is set when its word w has w >> 11 < t_q1, or
        # t_p1 for the value's bit (i.e. w < t << 11, exact as in _irr): one word a bit,
        # row-major, as a threshold array would take them.  Packed little-endian into the
        # low 7 bytes of an int64 (bit j at 2**j): rows padded to 64 bits with zeros, so
        # that one flat packbits gives the int64s' bytes.
        t_p1, t_q1, _, _ = self._thresholds
        if not n:
            return np.zeros(0, dtype=np.int64)
        lo = chunk * _CHUNK
        width = min(_CHUNK, self.k - lo)
        words = random_words(gen, n * width).reshape(n, width)
        bits = np.zeros((n, 64), dtype=np.bool_)
        np.less(words, np.uint64(t_q1 << 11), out=bits[:, :width])
        if lo <= value < lo + width:
            bits[:, value - lo] = words[:, value - lo] < np.uint64(t_p1 << 11)
        packed = np.packbits(bits.reshape(-1), bitorder="little")
        return packed.view("<i8").astype(np.int64, copy=False)

    def _from_chunks(self, chunks: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        # a chunk holds 56 bits: the low 7 bytes of its little-endian int64, bit j of the
        # chunk bit j % 8 of byte j // 8.  56 = 7 x 8, so the chunks' low 7 bytes side by
        # side are the PRR packed as a report is (bit j at bit j % 8 of byte j // 8), the
        # form _irr takes: its ceil(k / 8) bytes, never unpacked (the bits past k are 0:
        # _prr_chunk sets none).  (The shapes are spelled out, never -1: with no rows, -1
        # is ambiguous and refused.)
        n, c = chunks.shape
        raw = np.ascontiguousarray(chunks, dtype="<i8").view(np.uint8).reshape(n, c, 8)
        return np.ascontiguousarray(raw[:, :, :7].reshape(n, 7 * c)[:, : (self.k + 7) // 8])

    def _permanent_parameters(self) -> dict[str, Any]:
        p1, q1, _, _ = self.probabilities
        return {"k": self.k, "p1": p1, "q1": q1}

    # ---- tally

    def _spec(self) -> tuple[str, int, dict[str, Any]]:
        constants = dict(zip(("p1", "q1", "p2", "q2"), self._thresholds, strict=True))
        return "longitudinal-unary/1", self.words_per_report, constants

    @classmethod
    def _fit(cls, eps_inf: float, eps_1: float, k: int) -> Any:
        return fit_both(lambda e_inf, e_1: cls._at(e_inf, e_1, k), eps_inf, eps_1)

    @classmethod
    def _at(cls, eps_inf: float, eps_1: float, k: int) -> Any:
        raise NotImplementedError  # pragma: no cover - subclasses


@dataclass(frozen=True)
class LSUE(LongitudinalUnary):
    """L-SUE (basic RAPPOR without the Bloom filter, Erlingsson et al. 2014): SUE as the PRR
    (``q1 = 1 - p1``) and as the IRR (``q2 = 1 - p2``); ``p1``, ``p2`` in ``(1/2, 1)``.

    >>> o = LSUE.from_epsilon(2.0, 4, eps_1=1.0)
    >>> round(o.epsilon, 9), round(o.epsilon_1, 9), round(o.p2, 6)
    (2.0, 1.0, 0.764996)
    """

    k: int
    p1: float
    p2: float
    name: ClassVar[str] = "l-sue"
    _bounds: ClassVar[tuple[tuple[str, float, float], ...]] = (("p1", 0.5, 1), ("p2", 0.5, 1))

    @property
    def _given(self) -> tuple[float, float, float, float]:
        return self.p1, 1 - self.p1, self.p2, 1 - self.p2

    @classmethod
    def _at(cls, eps_inf: float, eps_1: float, k: int) -> LSUE:
        p1 = _realised(expit(eps_inf / 2))  # each bit at eps_inf / 2
        ps = expit(eps_1 / 2)  # the composed channel is SUE at eps_1
        return cls(k, p1, _realised((ps - (1 - p1)) / (2 * p1 - 1)))


@dataclass(frozen=True)
class LOUE(LongitudinalUnary):
    """L-OUE: OUE as the PRR and as the IRR (``p1 = p2 = 1/2``); ``q1``, ``q2`` in ``(0,
    1/2)``.  ``eps_1`` must be below ``ln((2 e^eps_inf + 1) / 3)`` (module doc).

    >>> o = LOUE.from_epsilon(2.0, 4, eps_1=1.0)
    >>> round(o.epsilon, 9), round(o.epsilon_1, 9), round(o.q2, 6)
    (2.0, 1.0, 0.080937)
    """

    k: int
    q1: float
    q2: float
    name: ClassVar[str] = "l-oue"
    _bounds: ClassVar[tuple[tuple[str, float, float], ...]] = (("q1", 0, 0.5), ("q2", 0, 0.5))

    @property
    def _given(self) -> tuple[float, float, float, float]:
        return 0.5, self.q1, 0.5, self.q2

    @classmethod
    def _fit(cls, eps_inf: float, eps_1: float, k: int) -> Any:
        top = math.log((2 * math.exp(eps_inf) + 1) / 3)
        if not eps_1 < top:
            raise ParameterError(
                f"`eps_1` must be less than ln((2 e^eps_inf + 1) / 3) = {top:.6g} for "
                f"'l-oue' at eps_inf = {eps_inf!r} (its IRR keeps p2 = 1/2), got {eps_1!r}."
            )
        return super()._fit(eps_inf, eps_1, k)

    @classmethod
    def _at(cls, eps_inf: float, eps_1: float, k: int) -> LOUE:
        q1 = _realised(expit(-eps_inf))

        def gap(q2: float) -> float:  # eps_1 of the composed channel, less the target
            return _ue_epsilon(0.25 + q2 / 2, q1 / 2 + (1 - q1) * q2) - eps_1

        q2 = brentq(gap, 2**-52, 0.5 - 2**-52, xtol=1e-18, rtol=1e-15)
        return cls(k, q1, _realised(q2))


@dataclass(frozen=True)
class LOSUE(LongitudinalUnary):
    """L-OSUE: OUE as the PRR (``p1 = 1/2``, ``q1`` in ``(0, 1/2)``) and SUE as the IRR
    (``q2 = 1 - p2``, ``p2`` in ``(1/2, 1)``), the variance-optimal of Arcolezi et al.'s
    chains.  The composed channel has ``p_s = 1/2``, so ``q_s = 1 / (e^eps_1 + 1)``.

    >>> o = LOSUE.from_epsilon(2.0, 4, eps_1=1.0)
    >>> round(o.epsilon, 9), round(o.epsilon_1, 9), round(o.p2, 6)
    (2.0, 1.0, 0.803388)
    """

    k: int
    q1: float
    p2: float
    name: ClassVar[str] = "l-osue"
    _bounds: ClassVar[tuple[tuple[str, float, float], ...]] = (("q1", 0, 0.5), ("p2", 0.5, 1))

    @property
    def _given(self) -> tuple[float, float, float, float]:
        return 0.5, self.q1, self.p2, 1 - self.p2

    @classmethod
    def _at(cls, eps_inf: float, eps_1: float, k: int) -> LOSUE:
        q1 = _realised(expit(-eps_inf))
        qs = expit(-eps_1)  # q_s = q1 p2 + (1 - q1)(1 - p2)
        return cls(k, q1, _realised((1 - q1 - qs) / (1 - 2 * q1)))
