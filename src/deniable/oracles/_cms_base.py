"""What the Count Mean Sketch (CMS, ``_cms``) and the Hadamard Count Mean Sketch (HCMS,
``_hcms``) share: parameters, epsilon, the estimate of strings and its variance; frequencies
of strings without a dictionary (Apple Differential Privacy Team 2017, "Learning with Privacy at
Scale"; the string hash: ``deniable.oracles._sketch``).

A sketch has ``k`` rows, each with its own hash ``h_j`` of strings into ``m`` columns.  A
device with string ``d`` picks a row ``j`` uniformly and sends

* **CMS**: ``(j, bits)``: the one-hot vector of ``h_j(d)`` in ``m`` bits, each bit flipped
  with probability ``f = 1 / (1 + e^(eps/2))``;
* **HCMS** (``m`` a power of two): ``(j, l, b)``: a uniform coefficient ``l`` and the bit
  ``b = parity(l & h_j(d))`` (the sign of the Hadamard matrix ``H[l, h_j(d)]``, the ``l``-th
  coefficient of the transform of the one-hot vector), flipped with probability ``f = 1 /
  (1 + e^eps)``.

**Epsilon** (replace one device's string).  CMS: two strings whose columns differ in row
``j`` differ in exactly two bits of the one-hot vector, so a report's likelihood ratio is at
most ``((1 - f) / f)^2 = e^eps``; HCMS: a report's likelihood is ``(1 - f) / (k m)`` or ``f /
(k m)``, ratio at most ``(1 - f) / f = e^eps``.  Both are attained (two strings with other
columns in some row), so ``eps`` is exact; the row and the coefficient do not depend on the
string.  As implemented, ``f`` is ``t / 2**53`` with ``t`` rounded up (toward privacy), so
``implemented_epsilon`` (``2 ln((2**53 - t) / t)``, ``ln((2**53 - t) / t)``) is at most
``epsilon``; ``tests/test_cms.py`` enumerates every report of small sketches.

**The estimate** of the share of a string ``d`` among ``n`` reports.  Each report gives an
unbiased estimate ``Y`` of whether the device's column in the report's row is ``d``'s:
CMS ``Y = (bit_{h_j(d)} - f) / (1 - 2 f)``; HCMS ``Y = (-1)^b H[l, h_j(d)] / (1 - 2 f)``
(``E[Y | j] = 1[h_j(d_u) = h_j(d)]``).  With ``F = sum_u Y_u`` (the paper's sketch matrix
``M[j, i] = k sum_{u in row j} Y_u(i)`` gives ``F = mean_j M[j, h_j(d)]``) and ``c`` the
pairwise collision probability of a row's hash,

    pi_hat(d) = (F / n - c) / (1 - c)      (Apple's  m / (m - 1) (mean_j M[j, h_j(d)] / n - 1 / m)),

unbiased over the salt (the row hashes) and the device's coins: ``E[Y_u] = 1`` for ``d_u =
d`` and ``c`` otherwise.  **Variance.**  ``E[Y^2 | row] = a + b 1[column match]`` with ``(a,
b) = (f (1 - f) / (1 - 2 f)^2, 1)`` for CMS and ``(1 / (1 - 2 f)^2, 0)`` for HCMS.  For a
device of another string ``v`` let ``c_v`` be the share of rows where ``v`` and ``d`` share
a column: ``E c_v = c``, ``Var c_v = c (1 - c) / k`` (rows independent), and across ``v`` the
``c_v`` are uncorrelated (exactly so for 3-wise independent rows).  With ``V = c (1 - c) / k
sum_{v != d} pi_v^2`` (the **hash-collision term**: every device of ``v`` collides with ``d``
in the same rows),

    fixed population of the n devices:
        Var pi_hat = ([pi (a + b - 1) + (1 - pi)(a + b c - c^2 - c (1 - c) / k)] / n + V)
                     / (1 - c)^2,
    devices drawn from a population (mu = pi + (1 - pi) c):
        Var pi_hat = ((a + b mu - mu^2 - V) / n + V) / (1 - c)^2.

``V`` does not shrink with ``n``: more rows ``k`` or columns ``m`` do.  Given one salt the
estimate is biased by the collisions of that salt, ``sum_{v != d} pi_v (c_v - c) / (1 -
c)``, whose spread over salts is ``V``.  The estimate plugs in ``pi_hat`` (clipped to [0, 1])
and estimates ``sum_{v != d} pi_v^2`` from the sketch itself (:meth:`CountMeanSketch.
second_moment`, less ``d``'s own ``pi_hat^2`` net of its noise), within ``[0, (1 - pi)^2]``;
where too few cells hold two reports it takes the bound ``(1 - pi_hat)^2``.

**The second moment** ``F2 = sum_v pi_v^2``.  Under row ``j``'s hash the bucket shares
``B_ji`` have ``E_salt sum_i B_ji^2 = F2 + (1 - F2) c``.  CMS: a row's ``N_j`` reports set
bit ``i`` with probability ``lambda = f + (1 - 2 f) B_ji``, so ``((C_ji / N_j - f)^2 -
l (1 - l) / (N_j - 1)) / (1 - 2 f)^2`` (``l = C_ji / N_j``) is unbiased for ``B_ji^2``;
HCMS: a cell ``(j, l)`` of ``N`` reports has signed mean ``u`` with ``E u = (1 - 2 f) W``,
``W = (H B_j)_l``, so ``(u^2 - (1 - u^2) / (N - 1)) / (1 - 2 f)^2`` is unbiased for ``W^2``,
and ``E_l W^2 = sum_i B_ji^2`` (Parseval, ``l`` uniform).  Averaged over the rows (cells)
with at least two reports, ``F2_hat = (mean - c) / (1 - c)``.
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
from deniable.designs import MechanismBase, Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._hashing import collision_probability
from deniable.oracles._numeric_base import float_array
from deniable.oracles._sketch import (
    MAX_STRING_BYTES,
    SketchEstimate,
    columns,
    row_seeds,
    sketch_digests,
    sketch_strings,
    string_digests,
)
from deniable.randomness import (
    exp_lower_bound,
    probability_threshold,
    uniform_below,
)

__all__ = ["CountMeanSketch"]

FloatArray = npt.NDArray[np.float64]
_TWO53 = 1 << 53
#: Largest number of rows ``k`` and of columns ``m``.
MAX_ROWS = 1 << 16
MAX_COLUMNS = 1 << 16
#: Largest tally (int64 cells: 1 GiB).
MAX_CELLS = 1 << 27
#: Largest number of (candidate, row) hashes one estimate computes.
MAX_HASHES = 1 << 26
#: Largest epsilon (the flip probability stays above 2**-53 with room).
MAX_EPSILON = 30.0


@dataclass(frozen=True)
class CountMeanSketch(MechanismBase):
    """What CMS and HCMS share: parameters (their fields, in this order), the keyed hash,
    the flip threshold, the estimate of candidate strings and its variance (module
    docstring).  Subclasses give the report, its randomizer and tally, and the per-report
    estimate's moments ``(a, b)``."""

    k: int
    m: int
    epsilon: float
    salt: int = 0
    max_bytes: int = 1024
    #: How many bits of one-hot change between two strings (2 for CMS, 1 for HCMS's bit).
    _bits_moved: ClassVar[int]

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", v.integer("k", self.k, minimum=1, maximum=MAX_ROWS))
        object.__setattr__(self, "m", v.integer("m", self.m, minimum=2, maximum=MAX_COLUMNS))
        eps = v.positive("epsilon", self.epsilon)
        if eps > MAX_EPSILON:
            raise ParameterError(
                f"`epsilon` must be at most {MAX_EPSILON:g} for {self.name!r} (its flip "
                f"probability would fall below what a 53-bit draw resolves), got {self.epsilon!r}."
            )
        object.__setattr__(self, "epsilon", eps)
        if 2 * self.flip_threshold >= self._grid:  # f rounds to 1/2: reports carry no signal
            raise ParameterError(
                f"`epsilon` is too small for {self._what}: its flip probability rounds to "
                f"1/2 on the 2**-{self._grid_bits} grid (the estimate would divide by 1 - 2 f "
                f"= 0), got {self.epsilon!r}."
            )
        object.__setattr__(self, "salt", v.integer("salt", self.salt, minimum=0, maximum=2**32 - 1))
        object.__setattr__(
            self,
            "max_bytes",
            v.integer("max_bytes", self.max_bytes, minimum=1, maximum=MAX_STRING_BYTES),
        )
        self._check_shape()
        if self._tally_cells > MAX_CELLS:
            raise ParameterError(
                f"`m` must keep the tally at most 2**27 cells (k = {self.k} rows of m = "
                f"{self.m} columns take {self._tally_cells}), got {self.m}."
            )

    def _check_shape(self) -> None:
        """Refuse ``m`` that the report cannot hold (nothing by default)."""

    # ---- privacy

    @property
    def flip(self) -> float:
        """The flip probability as stated: ``1 / (1 + e^(eps / bits moved))``."""
        return 1.0 / (1.0 + math.exp(self.epsilon / self._bits_moved))

    @property
    def _grid_bits(self) -> int:
        """Bits of the flip's grid: 53 (``word >> 11``); CMS spec 2 gives its field width."""
        return 53

    @property
    def _grid(self) -> int:
        return 1 << self._grid_bits

    @property
    def _what(self) -> str:
        """How messages name the sketch (CMS adds its spec version)."""
        return repr(self.name)

    @cached_property
    def flip_threshold(self) -> int:
        """Flip a bit iff ``word >> 11 < flip_threshold``: ``ceil(f 2**53)``, raised until
        the implemented epsilon is at most the stated one (toward privacy): exactly,
        ``((2**53 - t) / t)^bits <= L`` with ``L = exp_lower_bound(eps) < e^eps`` (a float
        ``log`` comparison lets an ulp through).  CMS spec 2: the same on the ``2**b`` grid
        of its fields (``deniable.oracles._cms_fields``)."""
        t = probability_threshold(Fraction(self.flip), "up")
        bound = exp_lower_bound(self.epsilon)
        while Fraction(_TWO53 - t, t) ** self._bits_moved > bound:
            t += 1
        return t

    def _epsilon_of(self, t: int) -> float:
        # a report's worst likelihood ratio: ((1 - f) / f) per bit that moves
        return self._bits_moved * math.log((self._grid - t) / t)

    def _epsilon_per_report(self) -> float:
        """What one report costs a device against any change of its values
        (:func:`~deniable.oracles.report_epsilon`): its exact ``epsilon``, a fresh
        row and flips every report, nothing kept."""
        return float(self.epsilon)

    @property
    def implemented_epsilon(self) -> float:
        """The epsilon of the randomizer as implemented (from :attr:`flip_threshold`): at most
        :attr:`epsilon`."""
        # the ratio bound holds exactly (flip_threshold); the float log can land an ulp above
        return min(self._epsilon_of(self.flip_threshold), self.epsilon)

    @property
    def implemented_flip(self) -> float:
        """The flip probability as implemented: ``flip_threshold / 2**53`` (the estimate's;
        ``/ 2**b`` for CMS spec 2)."""
        return self.flip_threshold / self._grid

    @property
    def collision(self) -> float:
        """``c``: P(two strings share a row's column) for distinct digests (``1 / m`` for a
        power of two)."""
        return float(collision_probability(self.m))

    # ---- hashing

    @cached_property
    def seeds(self) -> npt.NDArray[np.uint64]:
        """``(k, 2)``: the words ``(a_j, b_j)`` of each row's hash (``oracles._sketch``)."""
        return row_seeds(self.salt, self.k)

    def strings(self, values: Any, name: str = "values") -> list[bytes]:
        """``values`` as checked UTF-8 bytes (non-empty, at most ``max_bytes``)."""
        return sketch_strings(name, values, self.max_bytes)

    def _digests(self, values: Any) -> npt.NDArray[np.uint64]:
        """``x(s)`` of each of the strings ``values`` (checked as :meth:`strings` checks
        them; each distinct string hashed once)."""
        return sketch_digests("values", values, self.max_bytes)

    def columns(self, values: Any) -> npt.NDArray[np.int64]:
        """``(n, k)``: the column ``h_j(s)`` of each string in every row."""
        x = self._digests(values)
        return columns(self.seeds, x[:, None], np.arange(self.k)[None, :], self.m)

    def _rows_and_columns(
        self, words: npt.NDArray[np.uint64], x: npt.NDArray[np.uint64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        rows = uniform_below(words, self.k).astype(np.int64)
        return rows, columns(self.seeds, x, rows, self.m)

    # ---- what a subclass gives

    @property
    def words_per_report(self) -> int:
        """64-bit words one report consumes, whatever the string."""
        raise NotImplementedError  # pragma: no cover - subclasses

    def randomize(self, values: Any, *, rng: Any = None) -> Any:
        """Reports for the strings ``values`` (CSPRNG unless ``rng`` is given)."""
        raise NotImplementedError  # pragma: no cover - subclasses

    def _moments(self) -> tuple[float, float]:
        """``(a, b)``: ``E[Y^2 | row] = a + b 1[column match]``."""
        raise NotImplementedError  # pragma: no cover - subclasses

    def _column_sums(self, tally: Tally) -> FloatArray:
        """``(k, m)``: per row and column, the sum of ``Y`` of the reports of that row."""
        raise NotImplementedError  # pragma: no cover - subclasses

    # ---- estimate

    def _candidates(self, candidates: Any) -> list[bytes]:
        cands = self.strings(candidates, "candidates")
        if not cands:
            raise DataError("`candidates` must hold at least one string, got none.")
        seen: set[bytes] = set()
        for s in cands:
            if s in seen:
                raise DataError(f"`candidates` must be distinct, got {s.decode()!r} twice.")
            seen.add(s)
        signatures = self.k * math.log2(self.m)
        if signatures < 62 and len(cands) > self.m**self.k:
            raise DataError(
                f"`candidates` must be at most m**k = {self.m**self.k} strings for this sketch "
                f"(k = {self.k} rows of m = {self.m} columns tell no more apart), got "
                f"{len(cands)}: choose a sketch with more rows or columns."
            )
        if len(cands) * self.k > MAX_HASHES:
            raise DataError(
                f"`candidates` must be at most {MAX_HASHES // self.k} strings for k = {self.k} "
                f"rows (each is hashed in every row), got {len(cands)}."
            )
        return cands

    def estimate(self, data: Any, candidates: Any) -> SketchEstimate:
        """The share of the reports of each candidate string, with both variance conventions
        and intervals (:class:`~deniable.oracles.SketchEstimate`), from reports or a tally:
        ``pi_hat = (F / n - c) / (1 - c)`` (module docstring)."""
        tally = self._as_tally(data)
        cands = self._candidates(candidates)
        n = self._reports_in(tally)
        sums = self._column_sums(tally)
        x = string_digests(cands)[:, None]  # checked once, by _candidates
        cols = columns(self.seeds, x, np.arange(self.k)[None, :], self.m)  # (K, k)
        total = sums[np.arange(self.k)[None, :], cols].sum(axis=1)
        c = self.collision
        values = np.asarray((total / n - c) / (1 - c), dtype=np.float64)
        clipped = np.clip(values, 0.0, 1.0)
        moment = self.second_moment(tally)
        if moment is None:  # too few reports a cell: the bound sum_{v != d} pi_v^2 <= (1 - pi)^2
            others = (1.0 - clipped) ** 2
        else:  # less d's own pi^2 (its estimate less its noise, E pi_hat^2 = pi^2 + Var)
            own = np.maximum(clipped**2 - self._variance(n, clipped, 0.0, population="fixed"), 0)
            others = np.clip(moment - own, 0.0, (1.0 - clipped) ** 2)
        se = np.sqrt(self._variance(n, clipped, others, population="iid"))
        se_fixed = np.sqrt(self._variance(n, clipped, others, population="fixed"))
        names = tuple(s.decode("utf-8") for s in cands)
        return SketchEstimate(names, values, se, se_fixed, n, self.key)

    def second_moment(self, data: Any) -> float | None:
        """``sum_v pi_v^2`` over every string of the reports (or tally), estimated from the
        sketch (module docstring), clipped to [0, 1]; ``None`` when fewer than half the rows
        (CMS) or no cells (HCMS) hold two reports."""
        tally = self._as_tally(data)
        mean = self._square_mean(tally)
        if mean is None:
            return None
        c = self.collision
        return min(max((mean - c) / (1 - c), 0.0), 1.0)

    def _square_mean(self, tally: Tally) -> float | None:
        """The mean over rows of an unbiased estimate of ``sum_i B_ji^2``."""
        raise NotImplementedError  # pragma: no cover - subclasses

    def variance(self, n: int, share: Any, others: Any, *, population: str = "fixed") -> FloatArray:
        """Variance of the estimated share of a string with true ``share`` among ``n``
        devices whose other strings have ``sum_{v != d} pi_v^2 = others``, over the salt and
        the devices' coins: the ``fixed`` population of the ``n`` devices (default) or
        devices drawn ``iid`` from a population (module docstring)."""
        nn = v.integer("n", n, minimum=1)
        v.choice("population", population, ("fixed", "iid"))
        pi, s2 = _numbers("share", share), _numbers("others", others)
        if not ((pi >= 0) & (pi <= 1)).all():
            raise ParameterError(f"`share` must be in [0, 1], got {share!r}.")
        if not ((s2 >= 0) & (s2 <= 1)).all():
            raise ParameterError(f"`others` must be in [0, 1], got {others!r}.")
        return self._variance(nn, pi, s2, population=population)

    def _variance(self, n: int, pi: FloatArray, others: Any, *, population: str) -> FloatArray:
        a, b = self._moments()
        c, k = self.collision, self.k
        spread = c * (1 - c) / k  # Var c_v: the share of k independent rows that collide
        big_v = spread * np.asarray(others, dtype=np.float64)
        if population == "iid":
            mu = pi + (1 - pi) * c
            per = a + b * mu - mu**2 - big_v
        else:
            per = pi * (a + b - 1) + (1 - pi) * (a + b * c - c * c - spread)
        return np.asarray((per / n + big_v) / (1 - c) ** 2, dtype=np.float64)


def _numbers(name: str, value: Any) -> FloatArray:
    """``value`` as a float array, or a :class:`~deniable.exceptions.ParameterTypeError`
    naming ``name`` (a string or an object numpy cannot read as numbers)."""
    out = float_array(value)
    if out is None:
        raise ParameterTypeError(
            f"`{name}` must be a number or an array of numbers in [0, 1], got "
            f"{type(value).__name__}."
        )
    return out
