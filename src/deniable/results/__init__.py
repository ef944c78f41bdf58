"""Result objects shared by every layer: :class:`Estimate` (a value with both standard-error
conventions and its intervals), :class:`ConfidenceInterval` (the one interval type),
binomial intervals, the symmetric t and Wald intervals of design-based estimates
(:func:`t_interval`), :class:`Table` (a titled table of rows that prints for people,
renders as HTML in Jupyter and converts to plain data) and :class:`Result`, the base of
every result that prints (``table()`` and ``to_dict()``).

May import :mod:`deniable.common` and :mod:`deniable.exceptions`; scipy is imported only when
an interval needs it.
"""

from __future__ import annotations

from deniable.results._estimate import (
    SE_PLUG_IN,
    Estimate,
    MappedBinomialInterval,
    OutsideChannelNotes,
    beta_quantile_bounds,
    binomial_interval,
    information_note,
    map_interval,
    normal_quantile,
    t_quantile,
)
from deniable.results._interval import ConfidenceInterval
from deniable.results._symmetric import SYMMETRIC_INTERVALS, t_interval
from deniable.results._table import Result, Table, format_cell

__all__ = [
    "SE_PLUG_IN",
    "SYMMETRIC_INTERVALS",
    "ConfidenceInterval",
    "Estimate",
    "MappedBinomialInterval",
    "OutsideChannelNotes",
    "Result",
    "Table",
    "beta_quantile_bounds",
    "binomial_interval",
    "format_cell",
    "information_note",
    "map_interval",
    "normal_quantile",
    "t_interval",
    "t_quantile",
]
