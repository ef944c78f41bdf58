"""Oracle specs: a versioned JSON description of a frequency oracle, complete enough to
randomize a value without ``deniable``, and read back with every implied field checked.

Fields (schema ``deniable.oracle/1``, ``docs/specs.md``): ``schema``, ``mechanism`` (the
oracle's name), ``parameters`` (exact: a float as the fraction ``"p/q"`` it is), ``key``
(the identity its tallies carry), ``k`` (values ``0..k-1``), ``algorithm``,
``words_per_report`` (64-bit words one report consumes, whatever the value), ``constants``
(the integers the algorithm compares words with), ``report`` (how a report is written),
``hash`` (the hash family and where its seeds come from, for local hashing; otherwise
``null``), ``epsilon`` (the stated, exact epsilon) and ``implemented_epsilon`` (an upper
bound for the randomizer as implemented, never above ``epsilon``).

k-ary randomized response (GRR) is the design :class:`~deniable.designs.Categorical`, whose
question spec (``deniable.question/1``, :func:`~deniable.designs.spec_of`) already states it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Mapping
from fractions import Fraction
from typing import Any, TypeVar

from deniable.common import load_json
from deniable.designs import exact_value
from deniable.exceptions import DataError, DeniableError, ParameterTypeError
from deniable.oracles._base import FrequencyOracle
from deniable.oracles._rappor import Rappor
from deniable.oracles._registry import FREQUENCY_ORACLES

__all__ = ["ORACLES", "ORACLE_SPEC_SCHEMA", "oracle_from_spec", "oracle_spec"]

#: The schema identifier of an oracle spec.
ORACLE_SPEC_SCHEMA = "deniable.oracle/1"

#: The oracles an oracle spec can name, by name: every registered frequency oracle
#: (:data:`~deniable.oracles.FREQUENCY_ORACLES`) but k-ary randomized response, whose spec is
#: the question spec of the design ``categorical`` (``designs.spec_of``).
ORACLES: dict[str, type[FrequencyOracle]] = {
    cls.name: cls for name, cls in FREQUENCY_ORACLES.items() if name != "grr"
}
#: Every registered oracle by the name its key starts with (``categorical`` for GRR).
_BY_KEY_NAME: dict[str, type[Any]] = {cls.name: cls for cls in FREQUENCY_ORACLES.values()}

#: How each algorithm writes its reports (``docs/specs.md``).
_REPORTS = {
    "symmetric-unary/1": "packed-bits",
    "optimized-unary/1": "packed-bits",
    "subset-selection/1": "packed-bits",
    "local-hashing/1": "hash-bucket",
    "linear-local-hashing/1": "linear-hash",
    "hadamard-response/1": "row-bit",
    "longitudinal-grr/1": "value",
    "longitudinal-unary/1": "packed-bits",
    "loloha/1": "hash-bucket",
}

#: The hash family of local hashing; its seeds are the first two words of each report.
HASH_FAMILY = {
    "family": "multiply-add-shift/1",
    "formula": "bucket(x) = (((a * x + b) mod 2**64) >> 32) * g >> 32",
    "seeds": "a = word 0, b = word 1 of the report (sent in the report)",
    "independence": "strongly universal (2-independent) on 32-bit hashes for x < 2**33",
}

#: The hash family of linear local hashing; its matrix is in each report.
LINEAR_HASH_FAMILY = {
    "family": "linear-gf2/1",
    "formula": "bit r of bucket(x) = parity(a_r & x), a_r the r-th row of A (l = log2 g rows)",
    "seeds": "the rows of A = the row words of the report (sent in the report)",
    "independence": "P(bucket(x) = bucket(x')) = 1/g exactly for x != x'",
}

#: The hash field of each algorithm that hashes.
_HASHES = {
    "local-hashing/1": HASH_FAMILY,
    "linear-local-hashing/1": LINEAR_HASH_FAMILY,
    "loloha/1": HASH_FAMILY,
}

_FIELDS = (
    "schema", "mechanism", "parameters", "key", "k", "algorithm", "words_per_report",
    "constants", "report", "hash", "epsilon", "implemented_epsilon",
)  # fmt: skip


def _number(x: float) -> float | str:
    return x if math.isfinite(x) else "inf"


def oracle_spec(oracle: FrequencyOracle) -> dict[str, Any]:
    """The spec of a frequency oracle, as plain JSON data (schema ``deniable.oracle/1``).

    >>> from deniable.oracles import OLH
    >>> spec = oracle_spec(OLH(k=5, g=3, p_truthful=0.5))
    >>> spec["algorithm"], spec["words_per_report"], spec["constants"]
    ('local-hashing/1', 4, {'buckets': 3, 'keep': 4503599627370495})
    >>> oracle_from_spec(spec) == OLH(k=5, g=3, p_truthful=0.5)
    True
    """
    if not isinstance(oracle, FrequencyOracle) or oracle.name not in ORACLES:
        raise ParameterTypeError(
            f"`oracle` must be one of the frequency oracles {', '.join(sorted(ORACLES))} "
            f"(k-ary randomized response has a question spec: designs.spec_of), got "
            f"{type(oracle).__name__}."
        )
    algorithm, words, constants = oracle._spec()
    return {
        "schema": ORACLE_SPEC_SCHEMA,
        "mechanism": oracle.name,
        "parameters": {n: exact_value(x) for n, x in oracle.parameters().items()},
        "key": oracle.key,
        "k": oracle.k,
        "algorithm": algorithm,
        "words_per_report": words,
        "constants": dict(sorted(constants.items())),
        "report": _REPORTS[algorithm],
        "hash": dict(_HASHES[algorithm]) if algorithm in _HASHES else None,
        "epsilon": _number(oracle.epsilon),
        "implemented_epsilon": _number(oracle.implemented_epsilon),
    }


def _parameter(name: str, value: Any) -> Any:
    """A spec parameter back to a Python number: ints stay, ``"p/q"`` becomes its float."""
    if isinstance(value, bool):
        raise DataError(f"spec field `parameters.{name}` must be a number, got {value!r}.")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            frac = Fraction(value)
        except (ValueError, ZeroDivisionError):
            raise DataError(
                f"spec field `parameters.{name}` must be an integer or an exact fraction "
                f'"p/q", got {value!r}.'
            ) from None
        try:
            exact = float(frac) == frac
        except OverflowError:  # beyond every double
            exact = False
        if not exact:
            raise DataError(
                f"spec field `parameters.{name}` must be a fraction a double holds exactly, "
                f"got {value!r}."
            )
        return float(frac)
    raise DataError(
        f'spec field `parameters.{name}` must be an integer or an exact fraction "p/q", '
        f"got {type(value).__name__}."
    )


def _key_parameters(key: Any, names: Collection[str]) -> tuple[str, dict[str, Any] | None]:
    """The name of ``key`` (``NAME{JSON object}``, a report file's or a tally's) and its
    JSON parameters; None for them unless the name is one of ``names`` and the rest a JSON
    object (each reader then refuses the key with its own message)."""
    name, brace, rest = str(key).partition("{")
    try:
        params = json.loads(brace + rest) if name in names and brace else None
    except ValueError:
        params = None
    return name, params if isinstance(params, dict) else None


def _spec_fields(
    spec: Mapping[str, Any] | str | bytes, fields: tuple[str, ...], schema: str, what: str
) -> Mapping[str, Any]:
    """``spec`` (a mapping or its JSON text, ``what`` naming it in errors) checked to hold
    exactly ``fields`` and the schema ``schema``: an unknown or missing field, or another
    schema, is refused with :class:`~deniable.exceptions.DataError` naming it."""
    if isinstance(spec, str | bytes):
        spec = load_json(spec, source=f"`spec` (JSON text of {what})")
    if not isinstance(spec, Mapping):
        raise ParameterTypeError(
            f"`spec` must be a mapping or JSON text, got {type(spec).__name__}."
        )
    unknown = sorted(set(spec) - set(fields))
    missing = [f for f in fields if f not in spec]
    if unknown:
        raise DataError(f"unknown spec field `{unknown[0]}` (fields: {', '.join(fields)}).")
    if missing:
        raise DataError(f"spec field `{missing[0]}` is missing.")
    if spec["schema"] != schema:
        raise DataError(f"spec field `schema` must be {schema!r}, got {spec['schema']!r}.")
    return spec


_M = TypeVar("_M")


def _from_parameters(
    spec: Mapping[str, Any], fields: tuple[str, ...], make: Callable[..., _M], name: str,
    implied_by: Callable[[_M], Mapping[str, Any]],
    convert: Callable[[str, Any], Any] = _parameter,
) -> _M:  # fmt: skip
    """The mechanism ``make`` builds from the spec field ``parameters`` (``name`` naming it
    in errors; each parameter read by ``convert``, a number by default), with every one of
    ``fields`` of ``spec`` checked against the spec ``implied_by`` the mechanism: what the
    oracle, sketch and RAPPOR specs share."""
    params = spec["parameters"]
    if not isinstance(params, Mapping):
        raise DataError(f"spec field `parameters` must be an object, got {params!r}.")
    try:
        out = make(**{n: convert(n, x) for n, x in params.items()})
    except TypeError as exc:
        why = str(exc).rstrip(".")
        raise DataError(f"spec field `parameters` does not fit {name!r}: {why}.") from None
    except DeniableError as exc:
        raise DataError(f"spec field `parameters`: {exc}") from None
    implied = implied_by(out)
    for field in fields:
        if json.dumps(spec[field], sort_keys=True) != json.dumps(implied[field], sort_keys=True):
            raise DataError(
                f"spec field `{field}` does not match the parameters: it says "
                f"{spec[field]!r}, the parameters imply {implied[field]!r}."
            )
    return out


def oracle_from_spec(spec: Mapping[str, Any] | str | bytes) -> FrequencyOracle:
    """The oracle a spec describes (a mapping or its JSON text), with every implied field
    recomputed and compared: a spec with an unknown, missing or altered field (a tampered
    threshold, another epsilon, another hash family) is refused with
    :class:`~deniable.exceptions.DataError` naming the field."""
    spec = _spec_fields(spec, _FIELDS, ORACLE_SPEC_SCHEMA, "an oracle spec")
    name = spec["mechanism"]
    if name not in ORACLES:
        raise DataError(
            f"spec field `mechanism` must be one of {', '.join(sorted(ORACLES))}, got {name!r}."
        )
    return _from_parameters(spec, _FIELDS, ORACLES[name], name, oracle_spec)


def _key_value(name: str, value: Any) -> Any:
    """A parameter of a key: None, a number, or a list of numbers (a categorical design's
    ``forced`` distribution) as a tuple."""
    if value is None:
        return None
    if isinstance(value, list):
        return tuple(_parameter(name, v) for v in value)
    return _parameter(name, value)


def oracle_from_key(key: str) -> Any:
    """The oracle (or the design ``categorical``: k-ary randomized response with uniform
    forcing, or with the non-uniform forcing a stream's question spec may declare; or
    RAPPOR: :func:`~deniable.oracles.rappor_from_key`) whose ``key`` is ``key``, e.g. the
    key a report file, a report table or a tally carries.

    >>> from deniable.oracles import OUE, Rappor
    >>> oracle_from_key(OUE(k=8, q=0.25).key) == OUE(k=8, q=0.25)
    True
    >>> r = Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.25, q=0.75)
    >>> oracle_from_key(r.key) == r
    True
    """
    if not isinstance(key, str):
        raise ParameterTypeError(f"`key` must be a string, got {type(key).__name__}.")
    name, brace, rest = key.partition("{")
    if name == Rappor.name:  # strings through a Bloom filter: its own key's parameters
        return rappor_key_oracle(key)
    try:
        params = load_json(brace + rest, source="`key`") if brace else None
    except DataError:
        params = None
    if not isinstance(params, dict):
        raise DataError(f"`key` must look like NAME{{JSON parameters}}, got {key!r}.")
    # the categorical design with any forcing: k-ary randomized response (uniform forcing)
    # and the non-uniform forcing a stream's question spec may declare, so a stream's
    # reports and their report files are read by the same mechanism
    if name not in _BY_KEY_NAME:
        raise DataError(
            f"`key` must name a frequency oracle ({', '.join(sorted(ORACLES))}), rappor or "
            f"categorical, got {key!r}."
        )
    values: dict[str, Any] = {n: _key_value(n, x) for n, x in params.items()}
    try:
        out = _BY_KEY_NAME[name](**values)
    except TypeError as exc:
        raise DataError(f"`key` {key!r} does not fit its mechanism: {exc}.") from None
    if out.key != key:
        raise DataError(f"`key` {key!r} is not canonical (the mechanism's key is {out.key}).")
    return out


_RAPPOR_EXAMPLE = 'rappor{"cohorts":64,"f":"1/2","h":2,"m":128,"p":"1/2","q":"3/4"}'


def rappor_key_oracle(key: str) -> Rappor:
    """The :class:`~deniable.oracles.Rappor` whose canonical ``key`` is ``key`` (what
    ``rappor_from_key`` and ``oracle_from_key`` return for a RAPPOR key)."""
    _, params = _key_parameters(key, (Rappor.name,))
    if params is None or set(params) != {"cohorts", "f", "h", "m", "p", "q"}:
        raise DataError(f"`key` must be a RAPPOR key like {_RAPPOR_EXAMPLE}, got {key!r}.")
    try:
        out = Rappor(**{n: _parameter(n, x) for n, x in params.items()})
    except DeniableError as exc:  # a parameter that is no number, or out of its range
        raise DataError(f"`key` {key!r} does not fit RAPPOR: {exc}") from None
    if out.key != key:
        raise DataError(f"`key` {key!r} is not canonical (the mechanism's key is {out.key}).")
    return out
