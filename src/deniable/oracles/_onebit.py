"""1BitMean with alpha-point rounding and memoization (Ding, Kulkarni & Yekhanin,
"Collecting Telemetry Data Privately", NeurIPS 2017, sec. 3 and 4.1): the mean of numbers
in ``[0, m]`` collected every day.

**1BitMean** (Ding et al., sec. 3): a device with value ``x`` reports one bit, 1 with
probability

    P(1 | x) = 1 / (e^eps + 1) + (x / m) (e^eps - 1) / (e^eps + 1),

which lies between ``q = 1 / (e^eps + 1)`` and ``p = e^eps / (e^eps + 1)``, so a report is
exactly ``eps``-LDP (``x = 0`` against ``x = m``).  The mean estimate

    mu_hat = (m / n) sum_i (b_i - q) / (p - q) = (m / n) sum_i (b_i (e^eps + 1) - 1) /
             (e^eps - 1)

is unbiased, with exact variance ``(m / (p - q))^2 sum_i P_i (1 - P_i) / n^2`` for the fixed
population of the ``n`` devices.  This is Duchi, Jordan & Wainwright's one-dimensional
mechanism on ``t = 2 x / m - 1`` (``P(+C) = 1/2 + t / (2 C)`` is the same line), so
:class:`OneBitMean` is a :class:`~deniable.oracles.DuchiMechanism` on ``[lower, upper] =
[0, m]`` by default, with its integer thresholds (rounded toward privacy), its tally
``(n_zero, n_one)``, its estimate (both empirical SEs, the Wald and the exact interval) and
its exact :meth:`~deniable.oracles.DuchiMechanism.variance`; the bit is 1 for ``+C``.

**alpha-point rounding** (sec. 4.1): ``[lower, upper]`` is cut into ``s`` intervals of width
``m / s``.  Each device draws ``alpha`` uniform in ``[0, 1)`` once and keeps it; a value
with ``(x - lower) s / m = L + f`` (``L`` whole, ``0 <= f < 1``) is rounded to the grid point
``L + 1`` if ``alpha < f``, else ``L``.  Over ``alpha`` the rounded point's mean is ``(x -
lower) s / m``, and ``P(1 | x)`` is linear in ``x``, so the bit of the rounded value is 1
with the probability above (to the ``2**-53`` grid of the thresholds) and the estimator
stays unbiased; a device whose value moves within one interval takes at most two rounded
values.

**Memoization** (:class:`OneBitMeanMemo`): the bit of each rounded value is drawn once and
replayed whenever the device's value rounds to it again.  The view of a device whose values
rounded to ``r`` distinct points is ``r`` independent ``eps``-LDP bits: ``r * eps`` by
basic composition (Dwork & Roth 2014, Thm. 3.14), whatever the number of days, and at most
``(s + 1) eps`` over the device's life.  The days on which the bit may change show when the
rounded value changed (Ding et al. add output perturbation for that; not here).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles._dbitflip_memo import device_keys
from deniable.oracles._numeric import DuchiMechanism
from deniable.randomness import random_words, resolve_rng

__all__ = ["OneBitMean", "OneBitMeanMemo"]

_TWO53 = 1 << 53


@dataclass(frozen=True)
class OneBitMean(DuchiMechanism):
    """1BitMean (Ding et al. 2017) for numbers in ``[lower, upper]`` (default ``[0, 1]``;
    ``m = upper - lower``), with ``s`` intervals for alpha-point rounding (module
    docstring).

    >>> mech = OneBitMean(1.0, upper=24.0)
    >>> est = mech.estimate(mech.randomize(np.full(50_000, 6.0), rng=1))
    >>> abs(est.value - 6.0) < 4 * est.se
    True
    """

    name: ClassVar[str] = "onebitmean"

    lower: float = 0.0
    upper: float = 1.0
    s: int = 16

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "s", v.integer("s", self.s, minimum=1, maximum=1 << 20))

    @property
    def m(self) -> float:
        """``m = upper - lower``, the width of the range."""
        return self.upper - self.lower

    @property
    def probabilities(self) -> tuple[float, float]:
        """``(p, q)`` as implemented: P(1) at ``upper`` and at ``lower``."""
        t_lo, t_hi = self.thresholds
        return t_hi / _TWO53, t_lo / _TWO53

    @property
    def report_epsilon(self) -> float:
        """The exact epsilon of one report: ``epsilon``."""
        return self.epsilon

    def longitudinal_epsilon(self, distinct: int) -> float:
        """The privacy loss of a memoized device whose values rounded to ``distinct``
        distinct grid points, over any number of days: ``distinct * epsilon``."""
        r = v.integer("distinct", distinct, minimum=0, maximum=self.s + 1)
        return r * self.epsilon

    @property
    def longitudinal_bound(self) -> float:
        """The largest privacy loss of a memoized device over its life: ``(s + 1) eps``."""
        return (self.s + 1) * self.epsilon

    def draw_alpha(self, n: int, *, rng: Any = None) -> npt.NDArray[np.float64]:
        """``n`` rounding offsets ``alpha`` uniform on the ``2**-53`` grid of ``[0, 1)``, one
        word each."""
        count = v.integer("n", n, minimum=0)
        words = random_words(resolve_rng(rng), count) >> np.uint64(11)
        return words.astype(np.float64) / _TWO53

    def round_values(self, values: npt.ArrayLike, alpha: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """The alpha-point rounding of each value: a grid point in ``0..s`` (module doc)."""
        t = self._unit(values)
        a = np.asarray(alpha, dtype=np.float64).reshape(-1)
        if a.shape != t.shape or not ((a >= 0) & (a < 1)).all():
            raise DataError(
                f"`alpha` must hold {t.size} numbers in [0, 1), one per value, got shape {a.shape}."
            )
        return self._round_unit(t, a)

    def _round_unit(
        self, t: npt.NDArray[np.float64], a: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.int64]:
        u = (t + 1.0) * (self.s / 2)
        low = np.minimum(np.floor(u), self.s)
        return (low + (a < u - low)).astype(np.int64)

    def point_value(self, points: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """The value of each grid point ``0..s``: ``lower + r m / s`` (within the range)."""
        r = np.asarray(points, dtype=np.float64)
        return np.minimum(self.lower + r * (self.m / self.s), self.upper)


class OneBitMeanMemo:
    """The memoized 1BitMean of a fleet of devices with alpha-point rounding (module
    docstring): ``alpha`` drawn once per device, a bit once per rounded value.

    >>> memo = OneBitMeanMemo(OneBitMean(1.0, upper=10.0, s=10))
    >>> day1 = memo.report(["a", "b"], [3.0, 7.0], rng=1)
    >>> day2 = memo.report(["a", "b"], [3.0, 7.0], rng=2)      # same values: replayed
    >>> bool((day1 == day2).all()), memo.distinct_values("a"), memo.realized_epsilon("a")
    (True, 1, 1.0)
    """

    __slots__ = ("_alpha", "_bits", "_mechanism")

    def __init__(self, mechanism: OneBitMean) -> None:
        if not isinstance(mechanism, OneBitMean):
            raise ParameterTypeError(
                f"`mechanism` must be a OneBitMean, got {type(mechanism).__name__}."
            )
        self._mechanism = mechanism
        self._alpha: dict[Hashable, float] = {}
        self._bits: dict[Hashable, dict[int, int]] = {}

    @property
    def mechanism(self) -> OneBitMean:
        """The mechanism whose bits are memoized."""
        return self._mechanism

    def alpha(self, device: Hashable) -> float:
        """The rounding offset of ``device`` (drawn at its first report)."""
        if device not in self._alpha:
            raise DataError(f"`device` {device!r} has not reported yet.")
        return self._alpha[device]

    def report(
        self, devices: Sequence[Hashable], values: npt.ArrayLike, *, rng: Any = None
    ) -> npt.NDArray[np.uint8]:
        """One day's bits of ``devices`` (distinct keys) whose values are ``values``."""
        mech = self._mechanism
        t = mech._unit(values)  # checked: numbers in [lower, upper], mapped to [-1, 1]
        keys = device_keys(devices)
        if len(keys) != t.size or len(set(keys)) != len(keys):
            raise DataError(
                f"`devices` must hold {t.size} distinct device keys, one per value, got "
                f"{len(keys)} keys ({len(set(keys))} distinct)."
            )
        gen = resolve_rng(rng)
        new = [key for key in keys if key not in self._alpha]
        for key, a in zip(new, mech.draw_alpha(len(new), rng=gen), strict=True):
            self._alpha[key] = float(a)
            self._bits[key] = {}
        alpha = np.array([self._alpha[key] for key in keys], dtype=np.float64)
        points = mech._round_unit(t, alpha)
        fresh = [i for i, key in enumerate(keys) if int(points[i]) not in self._bits[key]]
        if fresh:
            drawn = mech.randomize(mech.point_value(points[fresh]), rng=gen)
            for i, bit in zip(fresh, drawn, strict=True):
                self._bits[keys[i]][int(points[i])] = int(bit)
        out = [self._bits[key][int(r)] for key, r in zip(keys, points, strict=True)]
        return np.array(out, dtype=np.uint8)

    def distinct_values(self, device: Hashable) -> int:
        """The number of distinct rounded values ``device`` has reported (0 if never)."""
        return len(self._bits.get(device, {}))

    def realized_epsilon(self, device: Hashable) -> float:
        """The privacy loss of ``device`` so far: ``distinct * epsilon``."""
        return self._mechanism.longitudinal_epsilon(self.distinct_values(device))
