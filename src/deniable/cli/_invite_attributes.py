"""``deniable survey invite --attributes CSV``: the design attributes of the invitations
(stratum, PSU, weight, raking variables), one row per invitation; the store checks the
values (``deniable.service.storage.attributes``)."""

from __future__ import annotations

import re
from typing import Any

from deniable.cli._base import fail

__all__ = ["read_attributes", "store_error"]


def read_attributes(path: str, count: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The design attributes of ``--attributes`` (a CSV with a header row, one row per
    invitation) and its raking variables (the columns other than stratum, psu and weight);
    the store checks the values.  One error line for a file that cannot be read, or whose
    rows do not match ``--count``."""
    import csv
    import math

    design = ("stratum", "psu", "weight")
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            rows = [r for r in reader if any(cell.strip() for cell in r)]
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
