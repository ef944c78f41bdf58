"""``deniable survey invite --attributes CSV``: the design attributes of the invitations
(stratum, PSU, weight, raking variables), one row per invitation; the store checks the
values (``deniable.service.storage.attributes``).

The file is read line by line and never past what ``--count`` needs: reading stops at the
first data row beyond ``--count``, and at ``MAX_ROW_BYTES`` bytes per invitation (the
header counted as one more row), so a file far larger than the invitations asked for is
refused after reading at most that many bytes, whatever its size or shape (one endless
line included)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from deniable.cli._base import fail

__all__ = ["MAX_ROW_BYTES", "read_attributes", "store_error"]

#: The most bytes ``--attributes`` may hold per invitation, the header counted as one
#: more: a row of stratum, PSU, weight and eight raking variables of 64 characters each
#: (the store's limits) is under 1 KiB.
MAX_ROW_BYTES = 2048


def _lines(f: BinaryIO, path: str, count: int) -> Iterator[str]:
    """The lines of ``f`` as text, refusing more than ``MAX_ROW_BYTES * (count + 1)`` bytes
    (a line is read only up to what is left of that)."""
    import codecs

    limit = MAX_ROW_BYTES * (count + 1)
    decoder = codecs.getincrementaldecoder("utf-8")()
    left = limit
    while line := f.readline(left + 1):
        left -= len(line)
        if left < 0:
            fail(
                f"`--attributes` {path!r} is larger than {limit:,} bytes, the most for --count "
                f"{count} ({MAX_ROW_BYTES:,} bytes per invitation, the header counted as one)."
            )
        yield decoder.decode(line)
    if tail := decoder.decode(b"", final=True):  # raises on a cut-off character
        yield tail


def read_attributes(path: str, count: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The design attributes of ``--attributes`` (a CSV with a header row, one row per
    invitation) and its raking variables (the columns other than stratum, psu and weight);
    the store checks the values.  One error line for a file that cannot be read, larger
    than ``MAX_ROW_BYTES`` per invitation, or whose rows do not match ``--count``
    (reading stops at the first row too many)."""
    import csv
    import math

    design = ("stratum", "psu", "weight")
    rows: list[list[str]] = []
    try:
        with open(path, "rb") as f:
            reader = csv.reader(_lines(f, path, count))
            header = next(reader, None)
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue
                if len(rows) == count:  # read no further
                    fail(f"`--attributes` {path!r} must have one row per invitation (--count "
                         f"{count}), got more than {count}.")  # fmt: skip
                rows.append(row)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        fail(f"`--attributes` {path!r} cannot be read: {getattr(exc, 'strerror', None) or exc}.")
    if not header or not all(h.strip() for h in header):
        fail(f"`--attributes` {path!r} needs a header row naming every column (e.g. "
             f"stratum,psu,weight,region), got {header!r}.")  # fmt: skip
    names = [h.strip() for h in header]
    if len(rows) != count:
        fail(
            f"`--attributes` {path!r} must have one row per invitation (--count {count}), got "
            f"{len(rows)}."
        )
    out: list[dict[str, Any]] = []
    for i, row in enumerate(rows, start=1):
        if len(row) != len(names):
            fail(f"`--attributes` {path!r}, data row {i}: {len(names)} columns expected, got "
                 f"{len(row)}.")  # fmt: skip
        entry: dict[str, Any] = dict(zip(names, (c.strip() for c in row), strict=True))
        if "weight" in entry:
            try:
                entry["weight"] = float(entry["weight"])
            except ValueError:
                entry["weight"] = math.nan
            if not math.isfinite(entry["weight"]) or entry["weight"] <= 0:
                fail(f"`--attributes` {path!r}, data row {i}: `weight` must be a finite number "
                     f"> 0, got {row[names.index('weight')]!r}.")  # fmt: skip
        out.append(entry)
    return out, [n for n in names if n not in design]


def _row(m: re.Match[str]) -> str:
    field = f" `{m.group(2)}`" if m.group(2) else ""
    return f"data row {int(m.group(1)) + 1}{field}"


def store_error(path: str, exc: Exception) -> str:
    """The store's refusal of an attribute, its entries named as data rows of ``path`` and
    its raking variables as columns."""
    text = re.sub(r"`attributes\[(\d+)\]\.?(\w*)`", _row, str(exc))
    text = re.sub(r"`variables\[\d+\]`", "a column", text)
    return f"`--attributes` {path!r}: {text}"
