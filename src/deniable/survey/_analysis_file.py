"""Analysing a survey file: :func:`analyze_file`, :func:`~deniable.survey.analyze` on a
CSV or Parquet file read in batches (or, under a sample design, read whole)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from deniable.designs import Design
from deniable.survey._analysis import Analysis, _analysis, _check, _plan
from deniable.survey._compare import with_design_by
from deniable.survey._files import Progress, SurveyFile
from deniable.survey._grouped import _grouped
from deniable.survey._questions import Plan, file_batches, frame_batches, run
from deniable.survey._readers import read_frame
from deniable.survey._sample import (
    DesignColumns,
    SampleArg,
    Spec,
    build_sample,
    sample_spec,
    with_design,
)

__all__ = ["analyze_file"]


def analyze_file(
    path: str | os.PathLike[str],
    column: str,
    design: Design,
    *,
    group: str | None = None,
    by: str | None = None,
    level: float = 0.95,
    missing: str = "drop",
    block_size: int | None = None,
    progress: Progress | None = None,
    sample_design: Any = None,
    weights: str | None = None,
    strata: str | None = None,
    psu: str | None = None,
    fpc: str | None = None,
    replicate_weights: Any = None,
) -> Analysis | Any:
    """:func:`~deniable.survey.analyze` (or with ``by``, :func:`~deniable.survey.grouped`) on a
    survey file, read in batches.

    The file is CSV (``.csv``, also ``.csv.gz``, ``.csv.bz2``, ``.csv.xz``, ``.csv.zst``,
    ``.csv.zip``) with a header row, or Parquet (``.parquet``, ``.pq``).  Only the named
    columns are read, ``block_size`` bytes of CSV (default 1 MiB) or 65536 Parquet rows at a
    time, and counted as they come: memory is bounded by the batch, not by the file (with
    ``by``, plus the distinct labels).  The values follow the same rules as in a DataFrame
    (docs/analysis.md, "Survey files"); rows in messages are data rows, numbered from 1
    without the header.  ``progress(bytes_done, bytes_total)`` is called after each batch.

    With a sample design (``sample_design`` or the column shortcuts, as in
    :func:`~deniable.survey.analyze`) the report, group and design columns are read whole
    (the design needs every row) and the result holds the design-based estimate too; rows
    are still data rows in messages.

    >>> import pathlib, tempfile
    >>> from deniable import TwoCoin
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "q.csv"
    >>> _ = path.write_text("q,region\\n1,north\\n0,south\\n,north\\n1,south\\n")
    >>> res = analyze_file(path, "q", TwoCoin())
    >>> res.n, res.missing
    (3, 1)
    """
    d, lvl = _check(design, column, group, by, level, missing)
    label = str(path)
    plan = _plan(d, column, group, by, lambda r: f"data row {r} of {label!r}")
    parts = {"weights": weights, "strata": strata, "psu": psu, "fpc": fpc,
             "replicate_weights": replicate_weights}  # fmt: skip
    spec = sample_spec(sample_design, parts)
    with SurveyFile(path, block_size=block_size, progress=progress) as f:
        f.check_columns([(w, c) for w, c in (("column", column), ("group", group), ("by", by))
                         if c is not None])  # fmt: skip
        _, frame, sample = read_counts(f, label, [plan], spec, missing)
        text = sample is None and f.kind == "csv"
    if by is not None:
        out = _grouped(plan, d, lvl, text=text)
        return out if sample is None else with_design_by(out, frame, plan, d, sample, False)
    result = _analysis(plan, d, lvl, label)
    return result if sample is None else with_design(result, frame, plan, sample)


def read_counts(
    f: SurveyFile, label: str, plans: Sequence[Plan], spec: Spec | None, missing: str
) -> tuple[int, Any, SampleArg | None]:
    """Count the reports of every question of ``plans`` in the open file ``f`` (``label``):
    the number of data rows, and under the sample design ``spec`` the columns read whole
    (a DataFrame whose index is the data row, numbered from 1) and the sample built on
    them; without ``spec`` the file is read in batches and both are ``None``."""
    columns = [c for p in plans for c in p.columns()]
    if spec is None:
        return run(plans, file_batches(f, columns), missing), None, None
    frame = read_whole(f, label, spec, columns)
    rows = run(plans, frame_batches(frame, columns), missing)
    return rows, frame, build_sample(frame, spec, lambda r: f"data row {r} of {label!r}")


def read_whole(f: SurveyFile, label: str, spec: Spec, columns: Sequence[Any]) -> Any:
    """``columns`` and the columns of the sample design ``spec`` (checked first) of the
    open file ``f`` (``label``), read whole into a DataFrame whose index is the data row,
    numbered from 1."""
    needed = list(columns)
    if isinstance(spec, DesignColumns):
        given = [(spec.label(p), getattr(spec, p)) for p in ("weights", "strata", "psu", "fpc")]
        f.check_columns([(w, c) for w, c in given if c is not None])
        needed += spec.columns(list(f.names))
    frame = read_frame(label, columns=list(dict.fromkeys(needed)))
    frame.index = frame.index + 1  # data rows, numbered from 1
    return frame
