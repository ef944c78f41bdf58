"""One pass over survey data for one or more questions: a DataFrame (one batch) or a file
(many batches, :mod:`deniable.survey`) gives the same counts, missing values and
errors, because both go through the same value rules and the same tallies.

Subgroup labels (``by``) are kept in a dict, so a file's number of *distinct* labels must
fit in memory (regions, waves, versions: fine; one label per respondent: not the point).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.survey._tally import ColumnLog, Labels, QuestionCounts, check_logs
from deniable.survey._values import GROUP_RULE, MISSING, ValueRule, is_missing

__all__ = [
    "Plan",
    "file_batches",
    "frame_batches",
    "label_order",
    "run",
]

Codes = npt.NDArray[np.int32]


class Cells:
    """One column of one batch: its codes under a rule, its subgroup labels, its values."""

    def codes(self, rule: ValueRule, cache: dict[Any, int]) -> Codes:
        raise NotImplementedError

    def labels(self, labels: Labels) -> npt.NDArray[np.int64]:
        raise NotImplementedError

    def value(self, i: int) -> Any:
        raise NotImplementedError


class FrameCells(Cells):
    """A pandas Series (the whole DataFrame is one batch)."""

    def __init__(self, s: Any) -> None:
        self.s = s

    def codes(self, rule: ValueRule, cache: dict[Any, int]) -> Codes:
        import pandas as pd

        s = self.s
        isna = np.asarray(s.isna(), dtype=bool)
        if pd.api.types.is_bool_dtype(s.dtype):
            values = np.asarray(s.fillna(False).to_numpy(dtype=bool), dtype=bool)
            return rule.numbers(values, isna)
        if pd.api.types.is_numeric_dtype(s.dtype):
            values = np.asarray(s.to_numpy(dtype=np.float64, na_value=np.nan))
            return rule.numbers(values, isna)
        idx, uniques = pd.factorize(s, use_na_sentinel=True)
        lut = np.append(rule.lookup(list(uniques), cache), MISSING).astype(np.int32)
        out: Codes = lut[np.asarray(idx)]
        return out

    def labels(self, labels: Labels) -> npt.NDArray[np.int64]:
        import pandas as pd

        idx, uniques = pd.factorize(self.s, use_na_sentinel=True)
        lut = np.append(labels.lookup(list(uniques), is_missing), 0)
        return np.asarray(lut[np.asarray(idx)], dtype=np.int64)

    def value(self, i: int) -> Any:
        return self.s.iloc[i]


class ArrowCells(Cells):
    """A pyarrow array, one batch of a file (text for CSV, typed for Parquet)."""

    def __init__(self, arr: Any, text: bool) -> None:
        self.arr = arr
        self.text = text

    def codes(self, rule: ValueRule, cache: dict[Any, int]) -> Codes:
        from deniable.survey._files import report_codes

        return report_codes(self.arr, rule, cache)

    def labels(self, labels: Labels) -> npt.NDArray[np.int64]:
        from deniable.survey._files import label_ids

        return label_ids(self.arr, labels, text=self.text)

    def value(self, i: int) -> Any:
        return self.arr[i].as_py()


#: A batch: a function from a position in the batch to the row it names, and the columns.
Batch = tuple[Callable[[int], Any], Mapping[Any, Cells]]


@dataclass
class Plan:
    """What to count for one question: the report ``column`` under ``rule``, the
    randomization-``group`` column of a two-group design, the subgroup column ``by``."""

    column: Any
    rule: ValueRule
    m: int
    place: Callable[[Any], str]
    group: Any = None
    by: Any = None
    names: tuple[str, str, str] = ("column", "group", "by")
    logs: list[ColumnLog] = field(default_factory=list)
    labels: Labels = field(default_factory=Labels)
    counts: QuestionCounts = field(init=False)
    _caches: tuple[dict[Any, int], dict[Any, int]] = field(default_factory=lambda: ({}, {}))

    def __post_init__(self) -> None:
        self.counts = QuestionCounts(self.m, self.group is not None)
        what_col, what_group, what_by = self.names
        self.logs = [ColumnLog(self.column, what_col, self.rule, self.place)]
        if self.group is not None:
            self.logs.append(ColumnLog(self.group, what_group, GROUP_RULE, self.place))
        if self.by is not None:
            self.logs.append(ColumnLog(self.by, what_by, None, self.place))

    def columns(self) -> list[Any]:
        return [c for c in (self.column, self.group, self.by) if c is not None]

    def add(self, row: Callable[[int], Any], cols: Mapping[Any, Cells]) -> None:
        cells = cols[self.column]
        reports = cells.codes(self.rule, self._caches[0])
        self.logs[0].add(reports, row, cells.value)
        groups = None
        k = 1
        if self.group is not None:
            gcells = cols[self.group]
            groups = gcells.codes(GROUP_RULE, self._caches[1])
            self.logs[k].add(groups, row, gcells.value)
            k += 1
        labels = None
        if self.by is not None:
            bcells = cols[self.by]
            labels = bcells.labels(self.labels)
            codes = np.where(labels == 0, MISSING, 0).astype(np.int32)
            self.logs[k].add(codes, row, bcells.value)
        self.counts.add(reports, groups, labels)


def run(plans: Sequence[Plan], batches: Iterable[Batch], missing: str) -> int:
    """Feed every batch to every plan; raise the first offending (or, with
    ``missing="error"``, missing) value; return the number of rows."""
    rows = 0
    for row, cols in batches:
        n = 0
        for p in plans:
            p.add(row, cols)
            n = p.counts.rows
        rows = n
    check_logs([log for p in plans for log in p.logs], missing)
    return rows


def frame_batches(df: Any, columns: Iterable[Any]) -> Iterator[Batch]:
    """A DataFrame as one batch; rows are named by their index labels."""
    index = df.index

    def row(i: int) -> Any:
        label = index[i]
        return label.item() if isinstance(label, np.generic) else label

    yield row, {c: FrameCells(df[c]) for c in dict.fromkeys(columns)}


def file_batches(f: Any, columns: Sequence[Any]) -> Iterator[Batch]:
    """The batches of an open :class:`~deniable.survey._files.SurveyFile`; rows are data
    rows, numbered from 1."""
    text = f.kind == "csv"
    for start, arrays in f.batches(list(columns)):

        def row(i: int, first: int = start) -> int:
            return first + i + 1

        yield row, {c: ArrowCells(a, text) for c, a in arrays.items()}


_INT = re.compile(r"[+-]?\d+")


def label_order(labels: Labels, text: bool) -> list[tuple[int, Any]]:
    """``(id, label)`` sorted by label (first-seen order when labels do not compare).  Text
    labels from a CSV file that are all whole numbers (or all numbers) become numbers, as
    pandas would read them, unless two would become the same number."""
    items = [(i, key) for key, i in labels.ids.items()]
    if text and items:
        keys = [str(k) for _, k in items]
        for convert, test in ((int, _INT.fullmatch), (float, _is_float)):
            if all(test(k) for k in keys):
                values = [convert(k) for k in keys]
                if len(set(values)) == len(values):
                    items = [(i, x) for (i, _), x in zip(items, values, strict=True)]
                break
    try:
        return sorted(items, key=lambda t: t[1])
    except TypeError:
        return sorted(items, key=lambda t: t[0])


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
