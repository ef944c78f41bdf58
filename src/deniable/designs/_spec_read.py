"""Reading a question spec: strict JSON, the schema version, the fields present, and every
field the parameters imply checked against the spec's own (``QuestionSpec.from_dict``)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from deniable.common import load_json
from deniable.designs._registry import DESIGNS, TWO_GROUP_DESIGNS
from deniable.designs._spec_algorithms import SPEC_SCHEMA, read_ints
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError

__all__ = ["check_fields", "check_implied", "check_labels", "loads"]

_SCHEMA_FAMILY, _, _SCHEMA_VERSION = SPEC_SCHEMA.rpartition("/")
_BASE_FIELDS = (
    "schema",
    "mechanism",
    "parameters",
    "key",
    "truths",
    "reports",
    "algorithm",
    "words_per_report",
    "thresholds",
    "epsilon",
)
_OPTIONAL_FIELDS = ("text", "labels")


def check_fields(data: Any) -> str:
    """Check a spec's shape before its parameters are read: a mapping, the schema, a known
    mechanism, every field present and none unknown, ``parameters`` and ``labels`` of the
    right kind.  Returns the mechanism's name."""
    if not isinstance(data, Mapping):
        raise ParameterTypeError(
            f"a question spec must be a JSON object (a mapping), got {type(data).__name__}."
        )
    _check_schema(data)
    name = data.get("mechanism")
    if not isinstance(name, str):
        if "mechanism" not in data:
            raise DataError(_missing(["mechanism"]))
        raise ParameterTypeError(
            f"`mechanism` must be a string (a design name), got {type(name).__name__} {name!r}."
        )
    if name not in DESIGNS and name not in TWO_GROUP_DESIGNS:
        every = ", ".join([*DESIGNS, *TWO_GROUP_DESIGNS])
        raise ParameterError(f"`mechanism` must be one of {every}, got {name!r}.")
    required = _BASE_FIELDS + (("latent",) if name in TWO_GROUP_DESIGNS else ())
    missing = [f for f in required if f not in data]
    if missing:
        raise DataError(_missing(missing))
    extra = [str(f) for f in data if f not in required and f not in _OPTIONAL_FIELDS]
    if extra:
        allowed = ", ".join([*required, *_OPTIONAL_FIELDS])
        raise DataError(
            f"the spec has unknown field{'s' if len(extra) > 1 else ''} "
            f"{', '.join(f'`{f}`' for f in extra)}; a {SPEC_SCHEMA} spec of {name!r} has "
            f"{allowed}."
        )
    params = data["parameters"]
    if not isinstance(params, Mapping):
        raise ParameterTypeError(
            f"`parameters` must be a JSON object of name to value, got "
            f"{type(params).__name__} {params!r}."
        )
    labels = data.get("labels")
    if labels is not None and (isinstance(labels, str | bytes) or not isinstance(labels, Sequence)):
        raise ParameterTypeError(
            f"`labels` must be a list of strings, got {type(labels).__name__} {labels!r}."
        )
    return name


def _fmt_epsilon(eps: float) -> str:
    return "inf" if math.isinf(eps) else repr(eps)


def _missing(fields: Sequence[str]) -> str:
    plural = "s" if len(fields) > 1 else ""
    return (
        f"the spec is missing field{plural} {', '.join(f'`{f}`' for f in fields)} "
        f"(schema {SPEC_SCHEMA})."
    )


def _check_schema(data: Mapping[str, Any]) -> None:
    if "schema" not in data:
        raise DataError(_missing(["schema"]))
    schema = data["schema"]
    if not isinstance(schema, str):
        raise ParameterTypeError(
            f"`schema` must be the string {SPEC_SCHEMA!r}, got {type(schema).__name__} {schema!r}."
        )
    family, _, version = schema.rpartition("/")
    if schema == SPEC_SCHEMA:
        return
    if family == _SCHEMA_FAMILY and version.isdigit() and int(version) > int(_SCHEMA_VERSION):
        raise ParameterError(
            f"`schema` {schema!r} is newer than this version of deniable reads "
            f"({SPEC_SCHEMA}): upgrade deniable to read it."
        )
    raise ParameterError(f"`schema` must be {SPEC_SCHEMA!r}, got {schema!r}.")


def _difference(expected: Any, got: Any, path: str) -> tuple[str, Any, Any] | None:
    """The first place where ``got`` differs from ``expected``: ``(path, expected, got)``."""
    if isinstance(expected, Mapping):
        if not isinstance(got, Mapping):
            return path, expected, got
        for k in expected:
            if k not in got:
                return f"{path}.{k}", expected[k], "(missing)"
            found = _difference(expected[k], got[k], f"{path}.{k}")
            if found:
                return found
        extra = [k for k in got if k not in expected]
        return (f"{path}.{extra[0]}", "(no such field)", got[extra[0]]) if extra else None
    if isinstance(expected, list | tuple):
        if not isinstance(got, list | tuple) or len(got) != len(expected):
            return path, expected, got
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            found = _difference(e, g, f"{path}[{i}]")
            if found:
                return found
        return None
    same = type(got) is type(expected) or (
        isinstance(expected, int | float)
        and isinstance(got, int | float)
        and not isinstance(got, bool)
        and not isinstance(expected, bool)
        and isinstance(expected, int) == isinstance(got, int)
    )
    return None if same and got == expected else (path, expected, got)


def check_implied(expected: Mapping[str, Any], epsilon: float, data: Mapping[str, Any]) -> None:
    """Check each field of ``data`` that the parameters imply against ``expected`` (the
    spec's own :meth:`~deniable.designs.QuestionSpec.to_dict`); ``epsilon`` is the exact one."""
    what = (
        f"mechanism {expected['mechanism']!r} with parameters {json.dumps(expected['parameters'])}"
    )
    for field in ("key", "truths", "reports", "algorithm", "words_per_report", "latent"):
        if field not in expected:
            continue
        found = _difference(expected[field], data[field], field)
        if found:
            _tampered(what, *found)
    found = _difference(
        read_ints(expected["thresholds"]), read_ints(data["thresholds"]), "thresholds"
    )
    if found:
        _tampered(what, *found)
    _check_epsilon(epsilon, what, data["epsilon"])


def _tampered(what: str, path: str, expected: Any, got: Any) -> None:
    raise DataError(
        f"`{path}` does not match the parameters: {what} gives {json.dumps(expected)}, the "
        f"spec says {json.dumps(got)} (a tampered spec, or one from another version)."
    )


def _check_epsilon(true: float, what: str, given: Any) -> None:
    if isinstance(given, str) and given.strip().lower() in ("inf", "+inf", "infinity"):
        value = math.inf
    elif isinstance(given, int | float) and not isinstance(given, bool):
        value = float(given)
    else:
        raise ParameterTypeError(
            f'`epsilon` must be a number or "inf", got {type(given).__name__} {given!r}.'
        )
    if value == true:
        return
    if math.isinf(true):
        raise PrivacyError(
            f'`epsilon` must be "inf" for {what}: some report reveals the true answer, and no '
            f"finite epsilon may stand for it; the spec says {_fmt_epsilon(value)}."
        )
    if value < true:
        raise PrivacyError(
            f"`epsilon` understates the privacy loss: {what} has epsilon {true!r}, the spec "
            f"says {_fmt_epsilon(value)}."
        )
    raise DataError(
        f"`epsilon` does not match the parameters: {what} has epsilon {true!r}, the spec "
        f"says {_fmt_epsilon(value)} (a tampered spec, or one from another version)."
    )


def loads(text: str | bytes) -> Any:
    """The JSON data of a spec's text (the one strict loader: a key given twice, nesting
    deeper than 64 levels, an integer of more than 40 digits, NaN refused)."""
    if not isinstance(text, str | bytes):
        raise ParameterTypeError(f"a spec must be JSON text, got {type(text).__name__}.")
    return load_json(text, source="the spec")


def check_labels(labels: Any, n: int) -> tuple[str, ...]:
    if isinstance(labels, str | bytes) or not isinstance(labels, Sequence):
        raise ParameterTypeError(
            f"`labels` must be a sequence of {n} strings, got {type(labels).__name__}."
        )
    out = tuple(labels)
    for i, label in enumerate(out):
        if not isinstance(label, str) or not label.strip():
            raise ParameterTypeError(f"`labels[{i}]` must be a non-empty string, got {label!r}.")
    if len(out) != n:
        raise ParameterError(
            f"`labels` must have one label per true answer ({n}), got {len(out)}: {list(out)!r}."
        )
    if len(set(out)) != len(out):
        raise ParameterError(f"`labels` must be distinct, got {list(out)!r}.")
    return out
