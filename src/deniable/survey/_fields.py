"""The fields of a survey file (``deniable.survey/1``), each read and checked with a
refusal that names it (``questions[2].design.epsilon``): ids, texts, numbers, epsilons,
delta, dates, the schema and the keys of a mapping."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from deniable.common import validation
from deniable.exceptions import ParameterError

__all__ = ["SURVEY_SCHEMA"]

#: The schema of survey files this version reads and writes.
SURVEY_SCHEMA = "deniable.survey/1"
_SCHEMA_RE = re.compile(r"deniable\.survey/(\d+)")
_ID_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def _where(path: str, message: str) -> ParameterError:
    return ParameterError(f"survey field `{path}` {message}")


def _check_keys(path: str, data: Mapping[str, Any], allowed: set[str], required: set[str]) -> None:
    extra = sorted(set(map(str, data)) - allowed)
    if extra:
        raise _where(f"{path}", f"has unknown field(s) {', '.join(map(repr, extra))} (allowed: "
                     f"{', '.join(sorted(allowed))}).")  # fmt: skip
    missing = sorted(required - set(data))
    if missing:
        raise _where(f"{path}", f"lacks the required field(s) {', '.join(map(repr, missing))}.")


def _check_schema(value: Any) -> None:
    m = _SCHEMA_RE.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        raise _where("schema", f"must be {SURVEY_SCHEMA!r}, got {value!r}.")
    if int(m.group(1)) > 1:
        raise _where("schema", f"is {value!r}, newer than this version of deniable reads "
                     f"({SURVEY_SCHEMA!r}): upgrade deniable.")  # fmt: skip


def _ident(path: str, value: Any) -> str:
    if not isinstance(value, str) or not _ID_RE.fullmatch(value):
        raise _where(path, "must be 1 to 64 lowercase letters, digits, '-' or '_', starting "
                     f"with a letter or digit, got {value!r}.")  # fmt: skip
    return value


def _text(path: str, value: Any, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise _where(path, f"must be {'a' if empty else 'a non-empty'} string, got {value!r}.")
    return value


def _number(path: str, value: Any) -> float:
    if isinstance(value, bool):
        raise _where(path, f"must be a number, got {value!r}.")
    if isinstance(value, int | float):
        x = float(value)
    elif isinstance(value, str):
        try:
            exact = validation.exact_number(value)
            x = float(exact)
        except OverflowError:  # beyond every double ("1e400"): refused below with the range
            x = math.inf if exact > 0 else -math.inf
        except (ValueError, ZeroDivisionError):
            try:
                x = float(value)  # "inf", "-inf", "nan": refused below with the range
            except ValueError:
                raise _where(
                    path, f"must be a number (e.g. 3, 2.5 or 5/2), got {value!r}."
                ) from None
    else:
        raise _where(path, f"must be a number, got {type(value).__name__} {value!r}.")
    if math.isnan(x):
        raise _where(path, "must be a number, got NaN.")
    return x


def _positive(path: str, value: Any) -> float:
    x = _number(path, value)
    if not 0 < x < math.inf:
        raise _where(path, f"must be in (0, inf) (a finite epsilon cap), got {value!r}.")
    return x


def _delta(value: Any) -> float:
    x = _number("delta", value)
    if not 0 < x < 1:
        raise _where("delta", f"must be in (0, 1), got {value!r}.")
    return x


def _when(path: str, value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, date):
        when = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.strip())
        except ValueError:
            raise _where(path, "must be an ISO 8601 date or date-time (e.g. "
                         f"2026-12-01T09:00:00+00:00), got {value!r}.") from None  # fmt: skip
    else:
        raise _where(path, f"must be an ISO 8601 date-time or null, got {value!r}.")
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # a date-time without a zone is read as UTC
    return when
