"""The tally of one column of reports in a file, read in batches (``deniable estimate
--reports``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from deniable.exceptions import DataError
from deniable.survey._files import SurveyFile
from deniable.survey._questions import Plan, file_batches, run
from deniable.survey._values import report_rule

if TYPE_CHECKING:  # pragma: no cover
    from deniable.designs import Design, Tally

__all__ = ["tally_reports_file"]


def tally_reports_file(
    path: str,
    design: Design,
    *,
    column: str | None = None,
    missing: str = "drop",
    progress: Callable[[int, int], None] | None = None,
    option: str = "column",
) -> tuple[Tally, int]:
    """The tally of the reports in ``path`` for ``design`` and the number of missing ones.

    Without ``column`` the file is a bare list: one report per line (the first column of
    each line), no header.  With ``column`` its first line is a header and ``column`` picks
    the column by name.  Parquet files name their columns: ``column`` picks one (needed
    when there are several).  Each report must be a whole number the design can produce
    (0/1, also true/false, for binary designs); an empty cell or NA is missing (counted;
    a :class:`~deniable.exceptions.DataError` with ``missing="error"``).  The file is read
    in batches, so its size does not matter.  ``progress`` is called with ``(done,
    total)`` bytes; ``option`` is how messages name ``column`` (the CLI's ``--column``).

    >>> import tempfile, os
    >>> from deniable.designs import Warner
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "reports.csv")
    ...     with open(path, "w") as f:
    ...         _ = f.write("1\\n0\\n1\\n\\n1\\n")
    ...     tally, missing = tally_reports_file(path, Warner(0.7))
    >>> tally.counts.tolist(), missing
    ([1, 3], 1)
    """
    m = design.n_reports
    label = repr(path)
    with SurveyFile(path, header=column is not None, any_suffix=True, progress=progress) as f:
        bare = column is None and f.kind == "csv"
        name = column
        if name is None:
            if len(f.names) != 1 and not bare:
                raise DataError(
                    f"reports file {path!r} has {len(f.names)} columns "
                    f"({', '.join(map(repr, f.names))}): name one with {option}."
                )
            name = f.names[0]
        f.check_columns([(option, name)])
        place = (lambda r: f"line {r}") if bare else (lambda r: f"data row {r} of {label}")
        plan = Plan(name, report_rule(m, design.name), m, place, names=(option, "", ""))
        if bare:
            log = plan.logs[0]
            log.subject = f"reports file {path!r}"
            log.hint = (
                f"; a file with a header row needs {option} NAME (without {option} the file "
                "is a bare list of reports, one per line, and line 1 is a report)"
            )
        rows = run([plan], file_batches(f, [name]), missing)
    counts = plan.counts.total()[0]
    dropped = int(counts[m])
    if rows - dropped == 0:
        where = f"{rows} rows, all missing" if rows else "no rows"
        raise DataError(f"reports file {path!r} holds no reports ({where}).")
    return design.tally_counts(counts[:m]), dropped
