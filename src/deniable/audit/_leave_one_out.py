"""The "parallel databases" view of a query (Dwork & Roth 2014, sec. 2.3): the query on a
table and on every table with one row removed.

The largest change is the query's *empirical* (local) sensitivity at this table, a lower
bound on its global sensitivity; a mechanism that adds Laplace noise of scale ``b`` to the
query hides row ``i`` up to a privacy loss ``|f(D) - f(D - i)| / b``.  Importable from
:mod:`deniable.audit`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterTypeError
from deniable.results import Table

__all__ = ["LeaveOneOut", "leave_one_out"]


_QUERIES = ("count", "sum", "mean")


@dataclass(frozen=True)
class LeaveOneOut:
    """A query on a table and on every table with one row removed.

    ``value = f(D)``, ``without[i] = f(D - row i)``, ``differences[i] = |f(D) - f(D - i)|``
    (L1 over the outputs of a vector query); ``sensitivity = max_i differences[i]`` is the
    empirical (local) sensitivity at this table: a *lower* bound on the global sensitivity,
    never a substitute for it when calibrating noise (local sensitivity itself leaks).
    """

    query: str
    value: npt.NDArray[np.float64] = field(repr=False)
    without: npt.NDArray[np.float64] = field(repr=False)
    differences: npt.NDArray[np.float64] = field(repr=False)
    vectorized: bool

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.differences.size)

    @property
    def sensitivity(self) -> float:
        """``max_i |f(D) - f(D - i)|``."""
        return float(self.differences.max())

    @property
    def row(self) -> int:
        """The row whose removal changes the query most."""
        return int(np.argmax(self.differences))

    def privacy_loss(self, scale: float) -> npt.NDArray[np.float64]:
        """Per-row privacy loss of ``f(D) + Laplace(scale)`` (iid per output coordinate).

        ``sup_z |ln(p_D(z) / p_{D - i}(z))| = |f(D) - f(D - i)|_1 / scale`` (Dwork, McSherry,
        Nissim & Smith 2006).  With ``scale = Delta / eps`` for a global sensitivity
        ``Delta >= sensitivity`` every entry is at most ``eps``.
        """
        b = v.positive("scale", scale)
        return self.differences / b

    def table(self, limit: int = 10) -> Table:
        """The first ``limit`` rows: value without the row and the difference."""
        lim = v.integer("limit", limit, minimum=1)
        rows = tuple(
            (i, _scalar(self.without[i]), float(self.differences[i]))
            for i in range(min(lim, self.n))
        )
        return Table(
            ("row removed", f"{self.query} without it", "change"),
            rows,
            title=f"{self.query} on the table: {_scalar(self.value)}; empirical sensitivity "
            f"{self.sensitivity:.6g} (row {self.row})",
        )


def _scalar(x: Any) -> Any:
    arr = np.asarray(x)
    return float(arr) if arr.ndim == 0 else arr.tolist()


def leave_one_out(
    table: npt.ArrayLike, query: str | Callable[[npt.NDArray[Any]], Any]
) -> LeaveOneOut:
    """Compute ``query`` on ``table`` and on each table with one row (axis 0) removed.

    ``query`` is ``"count"`` (number of nonzero entries per column), ``"sum"`` or ``"mean"``
    (vectorized by the leave-one-out identities ``f(D - i) = f(D) - x_i`` and
    ``mean(D - i) = (sum(D) - x_i) / (n - 1)``), or any callable ``f(table) -> number or
    array``, which is evaluated ``n + 1`` times in a Python loop over rows.

    >>> loo = leave_one_out([1, 0, 1, 1, 0], "count")
    >>> loo.without.tolist(), loo.sensitivity
    ([2.0, 3.0, 2.0, 2.0, 3.0], 1.0)
    >>> float(loo.privacy_loss(scale=1 / 0.5).max())       # Laplace(1/eps) at eps = 0.5
    0.5
    """
    data = np.asarray(table)
    if data.ndim == 0 or data.shape[0] < 1:
        raise DataError(f"`table` must have at least one row, got shape {data.shape}.")
    if data.dtype.kind not in "biuf":
        raise DataError(f"`table` must be numeric, got dtype {data.dtype}.")
    n = data.shape[0]
    x = data.astype(np.float64)
    if isinstance(query, str):
        v.choice("query", query, _QUERIES)
        if query == "count":
            nz = (x != 0).astype(np.float64)
            value = nz.sum(axis=0)
            without = value - nz
        elif query == "sum":
            value = x.sum(axis=0)
            without = value - x
        else:
            if n < 2:
                raise DataError(f"`table` needs at least 2 rows for a leave-one-out mean, got {n}.")
            total = x.sum(axis=0)
            value = total / n
            without = (total - x) / (n - 1)
        name, vectorized = query, True
    elif callable(query):
        value = np.asarray(query(data), dtype=np.float64)
        without = np.stack(
            [np.asarray(query(np.delete(data, i, axis=0)), dtype=np.float64) for i in range(n)]
        )
        name, vectorized = getattr(query, "__name__", "query"), False
    else:
        raise ParameterTypeError(
            f"`query` must be one of {', '.join(_QUERIES)} or a callable, "
            f"got {type(query).__name__}."
        )
    diff = np.abs(without - value).reshape(n, -1).sum(axis=1)
    return LeaveOneOut(name, value, without, diff, vectorized)
