"""The shared part of the bounded-mean mechanisms of :mod:`deniable.oracles._numeric`:
their channel (:class:`MeanChannel`: no finite matrix, one value's report distribution)
and the base class that maps ``[lower, upper]`` to ``[-1, 1]``, checks values and builds
the mean estimate with its plug-in SEs and intervals; and what the piecewise mechanism and
Square Wave (:mod:`deniable.oracles._square_wave`) share: the check of the bounds and the
values, the integer window weights, their epsilon, and the randomizer (the window's start
rounded with one word, the inverse-CDF cell draw with another)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Channel, MechanismBase
from deniable.exceptions import DataError, ParameterError
from deniable.oracles._base import check_epsilon
from deniable.randomness import CHUNK, exp_lower_bound, random_words, resolve_rng
from deniable.results import SE_PLUG_IN, Estimate

__all__ = ["GRID", "MeanChannel", "window_cells", "window_weights"]

FloatArray = npt.NDArray[np.float64]
_TWO52 = 1 << 52
_TWO53 = 1 << 53
_TWO64 = 1 << 64
#: Grid points of the piecewise mechanism's reports.
GRID = 4096


def window_weights(window: int, rest: int, epsilon: float) -> tuple[int, int]:
    """``(alpha, beta)``: integers with ``window alpha + rest beta = 2**64`` and ``alpha /
    beta`` the largest such ratio at most ``e^eps`` (toward privacy): the cell weights of a
    grid mechanism whose ``window`` cells around the value are likelier than the ``rest``
    (the piecewise mechanism, Square Wave)."""
    # Proof note (threshold rounding toward privacy, docs/architecture.md#proof-notes).
    # Claim: alpha / beta <= e^eps exactly, and the weights are a distribution over the
    # grid (w alpha + rest beta = 2**64).  Argument: a grid point's probability is
    # alpha / 2**64 or beta / 2**64 whatever the value, so the worst ratio is alpha /
    # beta; the loop returns only a pair with alpha <= L beta, L = exp_lower_bound(eps)
    # < e^eps, in integers, with alpha = (2**64 - rest beta) / w whole (beta in the
    # residue class that makes it so); raising beta by a step lowers alpha, so the loop
    # ends.  Checked by tests/test_implemented_epsilon.py::test_piecewise_realises_at_
    # most_its_epsilon_over_the_whole_range (which also checks the sum) and by
    # tests/test_square_wave.py for Square Wave's grids.
    w = window
    ratio = exp_lower_bound(min(epsilon, 700.0))  # proven: at most e^eps
    # w alpha + rest beta = 2**64 with alpha = ratio beta: beta = 2**64 / (w ratio + rest)
    beta = math.floor(_TWO64 / (w * ratio + rest))
    g = math.gcd(rest, w)
    step = w // g  # beta moves in steps of w / g; alpha by rest / g the other way
    # (rest beta) = 2**64 mod w: solve rest/g * beta = (2**64 mod w)/g mod w/g
    target = (_TWO64 % w) // g
    inv = pow(rest // g, -1, step) if step > 1 else 0
    base = (target * inv) % step if step > 1 else 0
    beta += (base - beta) % step  # the first beta >= the guess in the right class
    while True:
        alpha = (_TWO64 - rest * beta) // w
        if alpha <= ratio * beta:
            return alpha, beta
        beta += step


def check_window(weights: tuple[int, int], epsilon: float, name: str, grid: str) -> None:
    """Refuse ``weights`` ``(alpha, beta)`` that make no window (``alpha <= beta``: the
    ``epsilon`` is too small for the mechanism ``name`` on its ``grid``)."""
    alpha, beta = weights
    if alpha <= beta:
        raise ParameterError(
            f"`epsilon` is too small for {name!r} on its grid of {grid}, got {epsilon!r}."
        )


def window_epsilon(weights: tuple[int, int], epsilon: float) -> float:
    """The implemented epsilon of a window mechanism: ``ln(alpha / beta)``, the worst ratio
    of one cell's probability under two values.  ``alpha / beta <= e^eps`` holds exactly in
    integers (:func:`window_weights`); the float log can land an ulp above ``epsilon``, so
    the proven bound is stated then."""
    alpha, beta = weights
    return min(math.log(alpha / beta), epsilon)


def window_cells(
    start: npt.NDArray[np.uint64],
    point: npt.NDArray[np.uint64],
    alpha: np.uint64,
    beta: np.uint64,
    window: np.uint64,
) -> npt.NDArray[np.uint64]:
    """The grid cell each 64-bit word ``point`` picks (inverse CDF on the word grid) when
    the window of ``window`` cells starts at ``start``: cells below the window take the
    words ``[0, start beta)``, the window's the next ``window alpha``, the rest the others."""
    width = window * alpha  # the window's words: w alpha < 2**64
    before = start * beta  # the points below the window take [0, s beta)
    past = point - before  # wraps below `before`, where the first branch is taken
    return np.where(
        point < before,
        point // beta,
        np.where(past < width, start + past // alpha, start + window + (past - width) // beta),
    )


def float_array(value: Any) -> FloatArray | None:
    """``value`` as a float array, or ``None`` for a string or what numpy cannot read as
    numbers (the caller names it in its own error)."""
    if isinstance(value, str | bytes):
        return None
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None


def check_bounds(mechanism: Any) -> None:
    """Set ``mechanism.lower`` and ``.upper`` (a frozen dataclass's) to their checked
    floats: finite, with ``lower < upper``."""
    lo = v.real("lower", mechanism.lower)
    hi = v.real("upper", mechanism.upper)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ParameterError(
            f"`lower` and `upper` must be finite with lower < upper, got {mechanism.lower!r} "
            f"and {mechanism.upper!r}."
        )
    object.__setattr__(mechanism, "lower", lo)
    object.__setattr__(mechanism, "upper", hi)


def checked_values(
    values: npt.ArrayLike, lower: float, upper: float, *, clip: bool = False, hint: str = ""
) -> FloatArray:
    """``values`` as a flat float array, checked: numbers in ``[lower, upper]`` (NaN is
    outside), or with ``clip`` any number but NaN; ``hint`` follows the bounds in the error
    that names the first value outside (never the value itself)."""
    x = float_array(values)
    if x is None or x.ndim > 1:
        raise DataError(f"`values` must be a 1-D array of numbers in [{lower:g}, {upper:g}].")
    x = x.reshape(-1)
    bad = np.isnan(x) if clip else ~((x >= lower) & (x <= upper))  # NaN is bad too
    if bad.any():
        raise DataError(
            f"`values` must be numbers in [lower, upper] = [{lower:g}, {upper:g}]{hint}, got "
            f"one outside at index {int(np.flatnonzero(bad)[0])} (values are not shown in "
            "errors)."
        )
    return x


def window_reports(
    unit: FloatArray, start: Callable[[FloatArray], tuple[FloatArray, npt.NDArray[np.uint64]]],
    weights: tuple[int, int], window: int, rng: Any,
) -> npt.NDArray[np.uint16]:  # fmt: skip
    """The grid cells of a window mechanism (the piecewise mechanism, Square Wave) for the
    mapped values ``unit``: report ``i`` uses words ``2 i`` (rounding the window's start,
    ``start(unit)`` as ``(floor, floor(frac 2**53))``) and ``2 i + 1`` (the cell, by
    :func:`window_cells` with ``weights`` ``(alpha, beta)``)."""
    gen = resolve_rng(rng)
    alpha, beta = (np.uint64(x) for x in weights)
    w = np.uint64(window)
    out = np.empty(unit.size, dtype=np.uint16)
    for first in range(0, unit.size, CHUNK):
        stop = min(first + CHUNK, unit.size)
        words = random_words(gen, 2 * (stop - first)).reshape(-1, 2)
        whole, frac = start(unit[first:stop])
        s = whole.astype(np.uint64) + (words[:, 0] < (frac << np.uint64(11)))
        out[first:stop] = window_cells(s, words[:, 1], alpha, beta, w)
    return out


class MeanChannel(Channel):
    """The channel of a mechanism on real numbers in ``[lower, upper]``: no finite set of
    inputs, so no matrix; :meth:`report_distribution` gives ``P[report | value]`` for one
    value, ``n_cells`` is the length of the tally and :attr:`epsilon` the mechanism's."""

    __slots__ = ("_mechanism",)
    _mechanism: Any

    def __init__(self, mechanism: Any) -> None:
        object.__setattr__(self, "_mechanism", mechanism)

    @property
    def n_truths(self) -> None:
        return None

    @property
    def n_cells(self) -> int:
        return int(self._mechanism.n_cells)

    @property
    def n_reports(self) -> int:
        """Number of report values."""
        return int(self._mechanism.n_reports)

    @property
    def epsilon(self) -> float:
        return float(self._mechanism.epsilon)

    def report_distribution(self, value: float) -> FloatArray:
        """``P[report = r | value]`` for every report value ``r`` (as implemented)."""
        return np.asarray(self._mechanism.report_distribution(value), dtype=np.float64)

    def expected(self, shares: npt.ArrayLike) -> FloatArray:
        raise ParameterError(
            "a mean mechanism's inputs are real numbers, not a finite set of values to "
            "distribute: use `report_distribution(value)`."
        )

    def dense(self) -> FloatArray:
        raise ParameterError(
            "a mean mechanism's channel has no dense matrix: its inputs are real numbers; "
            "use `report_distribution(value)`."
        )

    def __repr__(self) -> str:
        return f"MeanChannel({self._mechanism!r})"


@dataclass(frozen=True)
class _Interval:
    """A picklable interval of a mean (``level -> (lo, hi)``)."""

    method: str
    mechanism: Any
    data: tuple[int, ...]

    def __call__(self, level: float) -> tuple[float, float]:
        return self.mechanism._interval(self.method, self.data, level)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _BoundedMean(MechanismBase):
    """What the two mean mechanisms share: their parameters (``epsilon`` and the bounds
    ``lower`` and ``upper``, default ``[-1, 1]``), the map to [-1, 1] and the estimate;
    identity, binding and pickling come from :class:`~deniable.designs.MechanismBase`."""

    epsilon: float
    lower: float = -1.0
    upper: float = 1.0

    def _check_bounds(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        check_bounds(self)

    @property
    def channel(self) -> MeanChannel:
        """:class:`MeanChannel`: ``P[report | value]`` one value at a time."""
        return MeanChannel(self)

    @property
    def n_cells(self) -> int:  # pragma: no cover - subclasses
        raise NotImplementedError

    @property
    def _tally_cells(self) -> int:
        return self.n_cells

    def _unit(self, values: npt.ArrayLike) -> FloatArray:
        """``values`` checked (finite, in [lower, upper]) and mapped to [-1, 1]."""
        x = checked_values(values, self.lower, self.upper)
        t = (x - self.lower) / (self.upper - self.lower) * 2.0 - 1.0
        return np.clip(t, -1.0, 1.0)

    def _scale(self) -> float:
        return (self.upper - self.lower) / 2

    def _to_value(self, t: float) -> float:
        return self.lower + (t + 1.0) * self._scale()

    def _estimate(
        self, n: int, mean_t: float, var_plug_in: float, var_unbiased: float,
        intervals: dict[str, _Interval],
    ) -> Estimate:  # fmt: skip
        scale = self._scale()
        value = self._to_value(mean_t)
        return Estimate(
            value=value,
            bounded=min(max(value, self.lower), self.upper),
            se=math.sqrt(var_plug_in / n) * scale,
            se_unbiased=math.sqrt(var_unbiased / n) * scale if n > 1 else math.nan,
            n=n,
            method="mean",
            parameter="mean",
            se_convention=SE_PLUG_IN + " (empirical variance of the reports)",
            intervals=intervals,
        )

    def _map_interval(self, lo_t: float, hi_t: float) -> tuple[float, float]:
        lo_t, hi_t = max(lo_t, -1.0), min(hi_t, 1.0)
        return self._to_value(lo_t), self._to_value(hi_t)
