"""The head every device spec of the telemetry mechanisms opens with: its schema, the
mechanism's name, its constructor's parameters as exact JSON values, its key and the
algorithm a device runs (``docs/specs.md``); the writers of ``_*_spec`` add their own
fields after it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deniable.designs import exact_value

__all__ = ["spec_head"]


def spec_head(
    schema: str, mechanism: Any, parameters: Mapping[str, Any], algorithm: str
) -> dict[str, Any]:
    """``{"schema", "mechanism", "parameters", "key", "algorithm"}`` of ``mechanism`` (its
    ``name`` and ``key``), in that order, each parameter as :func:`exact_value` writes it.

    >>> from deniable.oracles import Rappor
    >>> r = Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.5, q=0.75)
    >>> head = spec_head("deniable.rappor-spec/1", r, {"m": 16, "f": 0.5}, "rappor/1")
    >>> list(head), head["parameters"], head["key"] == r.key
    (['schema', 'mechanism', 'parameters', 'key', 'algorithm'], {'m': 16, 'f': '1/2'}, True)
    """
    return {
        "schema": schema,
        "mechanism": mechanism.name,
        "parameters": {n: exact_value(x) for n, x in parameters.items()},
        "key": mechanism.key,
        "algorithm": algorithm,
    }
