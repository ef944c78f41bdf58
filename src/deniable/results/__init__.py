"""Result objects shared by every layer: :class:`Estimate` (a value with both standard-error
conventions and its intervals), binomial intervals, and :class:`Table` (a titled table of
rows that prints for people and converts to plain data).

May import :mod:`deniable.common` and :mod:`deniable.exceptions`; scipy is imported only when
an interval needs it.
"""

from __future__ import annotations

from deniable.results._estimate import Estimate, binomial_interval, map_interval
from deniable.results._table import Table

__all__ = ["Estimate", "Table", "binomial_interval", "map_interval"]
