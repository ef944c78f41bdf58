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
from deniable.exceptions import DataError
from deniable.oracles._dbitflip_state import _FleetMemo, device_keys, memoized_rows, seen
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


class OneBitMeanMemo(_FleetMemo[OneBitMean]):
    """The memoized 1BitMean of a fleet of devices with alpha-point rounding (module
    docstring): ``alpha`` drawn once per device, a bit once per rounded value.

    ``store`` is where the devices' state lives: a :class:`~deniable.mechanisms.MemoStore`
    (``deniable.mechanisms.InMemoryMemoStore()``, or the service's
    ``deniable.service.storage.SqlMemoStore(url)``, where it survives a restart), by default
    a store of this object's own in memory.  A device's ``alpha`` is kept under the question
    ``<name>/alpha`` (its ``2**-53`` grid index) and the bit of rounded point ``r`` under
    ``<name>/bit/<r>``, every report carrying ``OneBitMean.key`` (``epsilon``, ``lower``,
    ``upper``, ``s``): another mechanism over the same store and name is refused
    (:class:`~deniable.exceptions.PrivacyError`) for a device that holds state.

    >>> memo = OneBitMeanMemo(OneBitMean(1.0, upper=10.0, s=10))
    >>> day1 = memo.report(["a", "b"], [3.0, 7.0], rng=1)
    >>> day2 = memo.report(["a", "b"], [3.0, 7.0], rng=2)      # same values: replayed
    >>> bool((day1 == day2).all()), memo.distinct_values("a"), memo.realized_epsilon("a")
    (True, 1, 1.0)
    """

    __slots__ = ()
    _kind = OneBitMean

    def __init__(
        self, mechanism: OneBitMean, store: Any = None, *, name: str = "onebitmean"
    ) -> None:
        super().__init__(mechanism, store, name)

    def _alpha_questions(self, _: int = 0) -> list[str]:
        return [f"{self._name}/alpha"]

    def _bit_questions(self, point: int) -> list[str]:
        return [f"{self._name}/bit/{point}"]

    def alpha(self, device: Hashable) -> float:
        """The rounding offset of ``device`` (drawn at its first report)."""
        keys = device_keys([device])
        got = self._store.lookup(self._name + "/alpha", keys, mechanism=self._mechanism.key)
        if got[0] < 0:
            raise DataError(f"`device` {device!r} has not reported yet.")
        return float(got[0]) / _TWO53

    def report(
        self, devices: Sequence[Hashable], values: npt.ArrayLike, *, rng: Any = None
    ) -> npt.NDArray[np.uint8]:
        """One day's bits of ``devices`` (distinct keys) whose values are ``values``."""
        mech = self._mechanism
        t = mech._unit(values)  # checked: numbers in [lower, upper], mapped to [-1, 1]
        keys = device_keys(devices, t.size)
        gen = resolve_rng(rng)
        if not keys.size:
            return np.zeros(0, dtype=np.uint8)

        def draw_alpha(rows: npt.NDArray[np.intp], _: npt.NDArray[np.int64]) -> Any:
            grid = mech.draw_alpha(rows.size, rng=gen) * _TWO53  # exact: 53-bit integers
            return grid.astype(np.int64)[:, None]

        zero = np.zeros(keys.size, dtype=np.int64)
        grid = memoized_rows(
            self._store, self._alpha_questions, keys, zero, draw_alpha, mechanism=mech.key
        )[:, 0]
        if grid.max() >= _TWO53:
            raise DataError(  # only a store written by something else can hold this
                f"the store holds rounding offsets outside [0, 1) under {self._name!r}: refused."
            )
        points = mech._round_unit(t, grid.astype(np.float64) / _TWO53)

        def draw_bits(rows: npt.NDArray[np.intp], _: npt.NDArray[np.int64]) -> Any:
            drawn = mech.randomize(mech.point_value(points[rows]), rng=gen)
            return np.asarray(drawn, dtype=np.int64)[:, None]

        bits = memoized_rows(
            self._store, self._bit_questions, keys, points, draw_bits, mechanism=mech.key
        )
        if bits.max() > 1:
            raise DataError(  # only a store written by something else can hold this
                f"the store holds bits other than 0 and 1 under {self._name!r}: refused."
            )
        return bits[:, 0].astype(np.uint8)

    def distinct_counts(self, devices: Any) -> npt.NDArray[np.int64]:
        """The number of distinct rounded values each device has reported (0 if never):
        one lookup per grid point over every device."""
        questions = [self._bit_questions(r)[0] for r in range(self._mechanism.s + 1)]
        return seen(self._store, questions, device_keys(devices), mechanism=self._mechanism.key)

    def realized_epsilons(self, devices: Any) -> npt.NDArray[np.float64]:
        """The privacy loss of each device so far: ``distinct * epsilon``."""
        return np.asarray(self.distinct_counts(devices) * self._mechanism.epsilon, dtype=np.float64)

    def distinct_values(self, device: Hashable) -> int:
        """The number of distinct rounded values ``device`` has reported (0 if never)."""
        return int(self.distinct_counts([device])[0])

    def realized_epsilon(self, device: Hashable) -> float:
        """The privacy loss of ``device`` so far: ``distinct * epsilon``."""
        return self._mechanism.longitudinal_epsilon(self.distinct_values(device))
