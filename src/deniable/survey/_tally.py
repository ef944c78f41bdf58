"""Counting a question's reports batch by batch: the counts of each (subgroup label,
randomization group, report) and, per column, the missing and offending values.

The batches are numpy arrays of codes (:mod:`deniable.survey`), from a DataFrame
(one batch) or from a file (many); the counts add, so a file of any size is tallied with
memory bounded by its batch size and the number of distinct subgroup labels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError
from deniable.survey._values import BAD, MISSING, ValueRule

__all__ = ["ColumnLog", "Labels", "QuestionCounts", "check_logs"]

Codes = npt.NDArray[np.int32]


@dataclass
class ColumnLog:
    """What one column held: the number of missing and of offending values and where the
    first of each is.

    ``name`` is the column, ``what`` the parameter that named it (``column``, ``group``,
    ``by``, ``--column``), ``rule`` its value rule (``None`` for subgroup labels, where only
    missing values are counted) and ``place`` turns a row into words (``"row 7"`` for a
    DataFrame's index label, ``"data row 8 of 'survey.csv'"`` for a file).
    """

    name: Any
    what: str
    rule: ValueRule | None
    place: Callable[[Any], str]
    n_missing: int = 0
    first_missing: Any = None
    n_bad: int = 0
    first_bad: tuple[Any, Any] | None = None
    hint: str = ""
    subject: str = ""

    def _subject(self) -> str:
        return self.subject or f"`{self.what}` {self.name!r}"

    def add(
        self,
        codes: Codes,
        row: Callable[[int], Any],
        value: Callable[[int], Any],
    ) -> None:
        """Count one batch; ``row(i)`` and ``value(i)`` give the row and the cell of entry i."""
        miss = codes == MISSING
        k = int(np.count_nonzero(miss))
        if k:
            if self.first_missing is None:
                self.first_missing = row(int(np.argmax(miss)))
            self.n_missing += k
        bad = codes == BAD
        k = int(np.count_nonzero(bad))
        if k:
            if self.first_bad is None:
                i = int(np.argmax(bad))
                self.first_bad = (row(i), value(i))
            self.n_bad += k

    def bad_error(self) -> DataError:
        assert self.rule is not None and self.first_bad is not None
        where, value = self.first_bad
        value = value.item() if isinstance(value, np.generic) else value
        count = (
            "the only offending value"
            if self.n_bad == 1
            else f"the first of {self.n_bad} offending values"
        )
        return DataError(
            f"{self._subject()} must hold {self.rule.allowed}, got {value!r} at "
            f"{self.place(where)} ({count}; missing values are not counted)"
            f"{self.hint if where == 1 else ''}."
        )

    def missing_error(self) -> DataError:
        return DataError(
            f"{self._subject()} has {self.n_missing} missing value(s) (first at "
            f"{self.place(self.first_missing)}) and missing values are errors (missing="
            "'error', --missing error); use 'drop' to leave them out and count them."
        )


def check_logs(logs: list[ColumnLog], missing: str) -> None:
    """Raise the first offending value of any column, then (``missing="error"``) the first
    missing one."""
    for log in logs:
        if log.n_bad:
            raise log.bad_error()
    if missing == "error":
        for log in logs:
            if log.n_missing:
                raise log.missing_error()


@dataclass
class Labels:
    """Subgroup labels seen so far, numbered from 1 in order of appearance (0: missing)."""

    ids: dict[Any, int] = field(default_factory=dict)

    def lookup(self, uniques: list[Any], missing: Callable[[Any], bool]) -> npt.NDArray[np.int64]:
        out = np.zeros(len(uniques), dtype=np.int64)
        for j, u in enumerate(uniques):
            if not missing(u):
                key = u.item() if isinstance(u, np.generic) else u
                out[j] = self.ids.setdefault(key, len(self.ids) + 1)
        return out

    def __len__(self) -> int:
        return len(self.ids)


class QuestionCounts:
    """Counts of ``(label, group, report)``: ``label`` 0 (missing) or 1.. (see
    :class:`Labels`; one label when there is no ``by``), ``group`` 0/1 for randomization
    group 1/2 and 2 for missing (one group for a one-group design), ``report`` ``0..m-1``
    and ``m`` for missing (an offending value is counted as missing: it raises anyway)."""

    def __init__(self, m: int, two_group: bool) -> None:
        self.m = m
        self.g = 3 if two_group else 1
        self.counts = np.zeros((1, self.g, m + 1), dtype=np.int64)
        self.rows = 0

    def add(
        self, reports: Codes, groups: Codes | None, labels: npt.NDArray[np.int64] | None
    ) -> None:
        r = np.where(reports >= 0, reports, self.m).astype(np.int64)
        idx = r
        if self.g == 3:
            assert groups is not None
            gi = np.where(groups > 0, groups - 1, 2).astype(np.int64)
            idx = gi * (self.m + 1) + r
        nlab = 1
        if labels is not None:
            nlab = int(labels.max(initial=0)) + 1
            idx = labels * (self.g * (self.m + 1)) + idx
        cell = self.g * (self.m + 1)
        add = np.bincount(idx, minlength=nlab * cell).reshape(-1, self.g, self.m + 1)
        if add.shape[0] > self.counts.shape[0]:
            grown = np.zeros_like(add)
            grown[: self.counts.shape[0]] = self.counts
            self.counts = grown
        self.counts[: add.shape[0]] += add
        self.rows += len(reports)

    def label_counts(self, n_labels: int) -> npt.NDArray[np.int64]:
        """Counts with exactly ``n_labels + 1`` label rows (labels never seen hold zeros)."""
        out = np.zeros((n_labels + 1, self.g, self.m + 1), dtype=np.int64)
        out[: self.counts.shape[0]] = self.counts
        return out

    def total(self) -> npt.NDArray[np.int64]:
        """Counts over every label (missing labels included): shape ``(groups, m + 1)``."""
        out: npt.NDArray[np.int64] = self.counts.sum(axis=0)
        return out
