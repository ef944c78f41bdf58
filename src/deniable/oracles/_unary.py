"""Unary encoding: symmetric (SUE, basic one-time RAPPOR) and optimized (OUE).

The value ``x`` is one-hot encoded as ``k`` bits and each bit is randomized on its own:
bit ``j != x`` is set with probability ``q``, bit ``x`` with probability ``p`` (Wang, Blocki,
Li & Jha 2017).  Changing the answer from ``x`` to ``x'`` changes two bits' distributions,
so the likelihood ratio of a report is at most ``p (1 - q) / ((1 - p) q)``:

* SUE (Erlingsson, Pihur & Korolova 2014, RAPPOR without the permanent step): ``p = 1 - q``,
  ``epsilon = 2 ln((1 - q) / q)``; each bit is calibrated at ``epsilon / 2`` (the "half"
  calibration of ``docs/architecture.md``: one answer moves two coordinates);
* OUE: ``p = 1/2``, ``epsilon = ln((1 - q) / q)``; ``q = 1 / (e^eps + 1)`` minimizes the
  variance (Wang et al. 2017).

**The randomizer.**  The ``k - 1`` bits with probability ``q`` are drawn as bit-sliced
lanes (``deniable.oracles._bits``): ``q = t / 2**L`` is implemented exactly with ``L`` words
per 64 bits, ``L`` the number of binary digits of ``q`` (at most 32; a ``q`` that needs more
is rounded up to a multiple of ``2**-32``, toward privacy).  :meth:`from_epsilon` picks ``q``
on a ``2**-bits`` grid (default 16 bits), the smallest grid value whose epsilon is at most the
request, so the implemented channel is the stated one.  A report is ``ceil(k / 8)`` bytes,
bit ``j`` at bit ``j % 8`` of byte ``j // 8``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import expit
from deniable.exceptions import ParameterError
from deniable.oracles._base import FrequencyOracle, check_epsilon, check_k, open_probability
from deniable.oracles._bits import (
    _PackedSupports,
    lanes,
    pack_words,
)
from deniable.randomness import random_words, resolve_rng

__all__ = ["OUE", "SUE", "UnaryEncoding"]

#: The most binary digits of ``q`` the randomizer draws (words per 64 bits of a report).
MAX_BITS = 32
#: Words a block of reports draws at once (2 MB).
_BLOCK_WORDS = 1 << 18


def _grid(q: float) -> tuple[int, int]:
    """``(L, t)``: ``q`` implemented as ``t / 2**L`` (exact if ``q`` has at most 32 binary
    digits, else ``t = ceil(q 2**32)``, rounded toward privacy)."""
    frac = Fraction(q)
    den = frac.denominator
    if den & (den - 1) == 0 and den <= 1 << MAX_BITS:
        return den.bit_length() - 1, frac.numerator
    return MAX_BITS, math.ceil(frac * (1 << MAX_BITS))


@dataclass(frozen=True)
class UnaryEncoding(_PackedSupports, FrequencyOracle):
    """Unary encoding of ``k`` values: bits of the one-hot vector randomized one by one (the
    module docstring has the algorithm); :class:`SUE` and :class:`OUE` are its two
    calibrations."""

    k: int
    q: float
    max_k: ClassVar[int] = 1 << 16
    #: Extra words per report beyond the lanes (OUE draws the true bit from one more word).
    _own_word: ClassVar[int] = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_k(self.k, self.max_k))
        q = open_probability("q", self.q, 0.0, 0.5)
        if q < 2.0**-MAX_BITS:
            raise ParameterError(
                f"`q` must be at least 2**-{MAX_BITS} (the randomizer draws {MAX_BITS}-bit "
                f"probabilities; a smaller one would round to another channel), got {self.q!r}."
            )
        object.__setattr__(self, "q", q)

    def _support(self) -> tuple[float, float]:
        return self.p, self.q

    @property
    def p(self) -> float:
        """P(bit x is set | value x)."""
        raise NotImplementedError  # pragma: no cover - subclasses

    @property
    def bits(self) -> int:
        """Binary digits of the implemented ``q`` (words per 64 bits of a report)."""
        return _grid(self.q)[0]

    @property
    def set_count(self) -> int:
        """The implemented ``q`` is ``set_count / 2**bits``."""
        return _grid(self.q)[1]

    @property
    def words_per_report(self) -> int:
        return self.bits * self._words + self._own_word

    @property
    def n_reports(self) -> int:
        """Bits of a report: ``k``."""
        return self.k

    @cached_property
    def _words(self) -> int:
        """64-bit words of lanes a report needs: ``ceil(k / 64)``."""
        return (self.k + 63) // 64

    @classmethod
    def _q_for(cls, epsilon: float) -> float:  # pragma: no cover - subclasses
        raise NotImplementedError

    @classmethod
    def from_epsilon(cls, epsilon: float, k: int, *, bits: int = 16) -> Any:
        """The oracle whose ``q`` is the smallest multiple of ``2**-bits`` with an epsilon at
        most ``epsilon`` (the implemented channel is then exactly the stated one).

        ``bits`` (2..32) trades speed for resolution: each bit of ``q`` costs one word per 64
        bits of a report.  A request above the largest epsilon the grid holds (``q =
        2**-bits``) raises :class:`~deniable.exceptions.ParameterError` naming ``epsilon``.
        """
        eps = check_epsilon(epsilon)
        kk = check_k(k, cls.max_k)
        b = v.integer("bits", bits, minimum=2, maximum=MAX_BITS)
        scale, half = 1 << b, 1 << (b - 1)
        target = cls._q_for(eps) * scale
        if target < 1:
            largest = cls(kk, 1 / scale).epsilon
            if largest < eps:
                raise ParameterError(
                    f"`epsilon` must be at most {largest:.6g} for {cls.name!r} with q on a "
                    f"2**-{b} grid (pass bits up to {MAX_BITS} for more), got {epsilon!r}."
                )
        t = max(1, math.ceil(target))
        while t < half and cls(kk, t / scale).epsilon > eps:
            t += 1  # float rounding of the closed form: never above the request
        if t >= half:
            smallest = cls(kk, (half - 1) / scale).epsilon
            raise ParameterError(
                f"`epsilon` must be at least {smallest:.6g} for {cls.name!r} with q on a "
                f"2**-{b} grid (pass more bits for a finer grid), got {epsilon!r}."
            )
        return cls(kk, t / scale)

    # ---- randomize

    def _own_bits(self, r: npt.NDArray[np.uint64], words: npt.NDArray[np.uint64],
                  x: npt.NDArray[np.integer[Any]]) -> None:  # fmt: skip
        raise NotImplementedError  # pragma: no cover - subclasses

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.uint8]:
        """Packed reports (``ceil(k / 8)`` bytes each) for the values ``0..k-1``.

        Report ``i`` consumes words ``i w .. i w + w - 1`` (``w`` =
        :attr:`words_per_report`): word ``l W + c`` is bit ``l`` of the lanes ``64 c ..
        64 c + 63`` (``W = ceil(k / 64)``), then OUE's own-bit word.
        """
        x = self._values(values)
        gen = resolve_rng(rng)
        n, w, width = x.size, self.words_per_report, (self.k + 7) // 8
        bits, count, nw = self.bits, self.set_count, self._words
        out = np.empty((n, width), dtype=np.uint8)
        block = max(1, _BLOCK_WORDS // w)
        tail = self.k % 64
        for start in range(0, n, block):
            stop = min(start + block, n)
            m = stop - start
            words = random_words(gen, m * w).reshape(m, w)
            r = lanes(words[:, : bits * nw].reshape(m, bits, nw), bits, count)
            if tail:
                r[:, -1] &= np.uint64((1 << tail) - 1)
            self._own_bits(r, words, x[start:stop])
            out[start:stop] = pack_words(r, self.k)
        return out

    # ---- tally

    def _spec(self) -> tuple[str, int, dict[str, Any]]:
        return self._algorithm, self.words_per_report, {"bits": self.bits, "set": self.set_count}

    _algorithm: ClassVar[str] = ""


def _rows_and_masks(
    x: npt.NDArray[np.integer[Any]],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.uint64]]:
    xi = x.astype(np.intp, copy=False)
    shift = (xi & 63).astype(np.uint64)
    return np.arange(x.size), xi >> 6, shift


@dataclass(frozen=True)
class SUE(UnaryEncoding):
    """Symmetric unary encoding (basic one-time RAPPOR): every bit of the one-hot vector is
    flipped with probability ``q``, so ``p = 1 - q``.

    ``epsilon = 2 ln((1 - q) / q)``: one answer changes two bits, each with likelihood ratio
    ``(1 - q) / q`` (Erlingsson, Pihur & Korolova 2014; Wang et al. 2017).
    ``from_epsilon`` uses ``q = 1 / (e^(eps / 2) + 1)``, each bit at ``epsilon / 2``.

    >>> sue = SUE.from_epsilon(2.0, k=8)
    >>> sue.q, round(sue.epsilon, 4), sue.words_per_report
    (0.268951416015625, 1.9999, 15)
    >>> sue.randomize([3, 5], rng=1).shape                 # two packed reports of 8 bits
    (2, 1)
    """

    name: ClassVar[str] = "sue"
    _algorithm: ClassVar[str] = "symmetric-unary/1"

    @property
    def p(self) -> float:
        return 1 - self.q

    @property
    def epsilon(self) -> float:
        # eps = 2 ln((1 - q) / q): x -> x' turns bit x from p = 1 - q to q and bit x' back
        return 2 * math.log((1 - self.q) / self.q)

    @property
    def implemented_epsilon(self) -> float:
        bits, t = _grid(self.q)
        q = t / (1 << bits)  # exact: t < 2**52
        return 2 * math.log((1 - q) / q)

    @classmethod
    def _q_for(cls, epsilon: float) -> float:
        return expit(-epsilon / 2)

    def _own_bits(self, r: npt.NDArray[np.uint64], words: npt.NDArray[np.uint64],
                  x: npt.NDArray[np.integer[Any]]) -> None:  # fmt: skip
        rows, col, shift = _rows_and_masks(x)
        # flip bit x: lane x was set with q, so it now reads 1 with p = 1 - q
        r[rows, col] ^= np.uint64(1) << shift


@dataclass(frozen=True)
class OUE(UnaryEncoding):
    """Optimized unary encoding: bit ``x`` is set with probability ``p = 1/2``, every other
    bit with ``q``.

    ``epsilon = ln((1 - q) / q)`` (the ratio ``p (1 - q) / ((1 - p) q)`` at ``p = 1/2``);
    ``from_epsilon`` uses ``q = 1 / (e^eps + 1)``, the variance-optimal choice (Wang et
    al. 2017).  The true bit comes from the top bit of one more word.

    >>> oue = OUE.from_epsilon(1.0, k=1024)
    >>> oue.q, round(oue.epsilon, 4), oue.words_per_report
    (0.268951416015625, 0.9999, 241)
    """

    name: ClassVar[str] = "oue"
    _own_word: ClassVar[int] = 1
    _algorithm: ClassVar[str] = "optimized-unary/1"

    @property
    def p(self) -> float:
        return 0.5

    @property
    def epsilon(self) -> float:
        # eps = ln(p (1 - q) / ((1 - p) q)) at p = 1/2: bit x from 1/2 to q, bit x' back
        return math.log((1 - self.q) / self.q)

    @property
    def implemented_epsilon(self) -> float:
        bits, t = _grid(self.q)
        q = t / (1 << bits)
        return math.log((1 - q) / q)  # p = 1/2 exactly (one bit of a word)

    @classmethod
    def _q_for(cls, epsilon: float) -> float:
        return expit(-epsilon)

    def _own_bits(self, r: npt.NDArray[np.uint64], words: npt.NDArray[np.uint64],
                  x: npt.NDArray[np.integer[Any]]) -> None:  # fmt: skip
        rows, col, shift = _rows_and_masks(x)
        own = words[:, -1] >> np.uint64(63)  # the true bit: 1 with probability 1/2
        one = np.uint64(1) << shift
        r[rows, col] = (r[rows, col] & ~one) | (own << shift)
