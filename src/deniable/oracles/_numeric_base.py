"""The shared part of the bounded-mean mechanisms of :mod:`deniable.oracles._numeric`:
their channel (:class:`MeanChannel`: no finite matrix, one value's report distribution)
and the base class that maps ``[lower, upper]`` to ``[-1, 1]``, checks values and builds
the mean estimate with its plug-in SEs and intervals."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Channel, MechanismBase
from deniable.exceptions import DataError, ParameterError
from deniable.oracles._base import check_epsilon
from deniable.results import SE_PLUG_IN, Estimate

__all__ = ["GRID", "MeanChannel"]

FloatArray = npt.NDArray[np.float64]
_TWO52 = 1 << 52
_TWO53 = 1 << 53
_TWO64 = 1 << 64
#: Grid points of the piecewise mechanism's reports.
GRID = 4096


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
        lo = v.real("lower", self.lower)
        hi = v.real("upper", self.upper)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ParameterError(
                f"`lower` and `upper` must be finite with lower < upper, got {self.lower!r} "
                f"and {self.upper!r}."
            )
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

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
        try:
            x = None if isinstance(values, str | bytes) else np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            x = None
        if x is None or x.ndim > 1:
            raise DataError(
                f"`values` must be a 1-D array of numbers in [{self.lower:g}, {self.upper:g}]."
            )
        x = x.reshape(-1)
        bad = ~((x >= self.lower) & (x <= self.upper))  # NaN is bad too
        if bad.any():
            raise DataError(
                f"`values` must be numbers in [lower, upper] = [{self.lower:g}, "
                f"{self.upper:g}], got {x[bad][0]!r}."
            )
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
