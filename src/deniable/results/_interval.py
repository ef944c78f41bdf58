"""The one interval type, :class:`ConfidenceInterval` (like scipy's): every ``ci()`` of the
library returns one."""

from __future__ import annotations

from typing import NamedTuple

from deniable.common import format_interval

__all__ = ["ConfidenceInterval"]


class ConfidenceInterval(NamedTuple):
    """A two-sided interval ``(low, high)``: a named tuple, so ``lo, hi = est.ci()`` works.

    >>> ci = ConfidenceInterval(0.25, 0.5)
    >>> ci.low, ci.high, ci.width, ci.covers(0.3), ci.format(2)
    (0.25, 0.5, 0.25, True, '[0.25, 0.50]')
    """

    low: float
    high: float

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low

    def covers(self, value: float) -> bool:
        """Whether ``low <= value <= high``."""
        return bool(self.low <= value <= self.high)

    def format(self, digits: int = 4) -> str:
        """``[low, high]`` with ``digits`` decimals (scientific when tiny, ``∞`` when
        infinite)."""
        return format_interval(self, digits)
