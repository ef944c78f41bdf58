"""The keys of the string protocols that have no single tally oracle behind them: the
Sequence Fragment Puzzle (:class:`~deniable.oracles.SFP`) and RAPPOR's n-gram discovery
(:class:`~deniable.oracles.RapporNgram`), parsed back into the protocol.

**SFP**: ``sfp{"alphabet":..,"epsilon":..,"fragment_share":..,"k":..,"m":..,
"max_length":..,"puzzle_bits":..,"salt":..,"sketch":..}`` (compact JSON, sorted fields,
numbers exact as every key writes them: ``"1/2"``; ``alphabet`` a string or ``null`` for
bytes, ``sketch`` ``"cms"`` or ``"hcms"``).  ``alpha`` and ``max_candidates`` are not in it:
the server chooses them when it estimates, from the same reports.

**RAPPOR n-grams**: ``rappor-ngram{"alphabet":..,"full":{..} or null,"gram":..,
"length":..,"ngram":{..},"pad":..,"pairs":..}``, ``ngram`` and ``full`` the parameters of
the two RAPPOR mechanisms' own keys (``rappor{...}`` without the name).

A key is read back only when it is the canonical key of the protocol it describes; anything
else raises one :class:`~deniable.exceptions.DataError` naming what is wrong: not
``NAME{JSON}``, a field missing or unknown, a field of the wrong kind, a parameter out of
its range, or a key that is not canonical (the canonical one is shown).
"""

from __future__ import annotations

import json
from typing import Any

from deniable.exceptions import DataError, DeniableError
from deniable.oracles._rappor import Rappor
from deniable.oracles._rappor_ngram import RapporNgram
from deniable.oracles._sfp import SFP

__all__ = ["is_string_protocol_key", "rappor_ngram_from_key", "sfp_from_key"]

_SFP_FIELDS = frozenset(
    {"alphabet", "epsilon", "fragment_share", "k", "m", "max_length", "puzzle_bits", "salt",
     "sketch"}
)  # fmt: skip
_NGRAM_FIELDS = frozenset({"alphabet", "full", "gram", "length", "ngram", "pad", "pairs"})
_SFP_EXAMPLE = (
    'sfp{"alphabet":null,"epsilon":"4","fragment_share":"1/2","k":64,"m":1024,'
    '"max_length":8,"puzzle_bits":8,"salt":0,"sketch":"hcms"}'
)
_NGRAM_EXAMPLE = (
    'rappor-ngram{"alphabet":"abc","full":null,"gram":2,"length":4,"ngram":{"cohorts":8,'
    '"f":"1/2","h":2,"m":32,"p":"1/2","q":"3/4"},"pad":"_","pairs":1}'
)


def is_string_protocol_key(key: str) -> bool:
    """Whether ``key`` names SFP (``sfp{...}``) or RAPPOR's n-grams (``rappor-ngram{...}``)."""
    return str(key).partition("{")[0] in (SFP.name, RapporNgram.name)


def _fields(key: Any, name: str, fields: frozenset[str], example: str) -> dict[str, Any]:
    """The JSON fields of ``key``, which must be ``name{JSON object}`` with ``fields``."""
    if not isinstance(key, str):
        raise DataError(f"`key` must be a string like {example}, got {type(key).__name__}.")
    from deniable.oracles._spec import _key_parameters

    _, params = _key_parameters(key, (name,))
    if params is None:
        raise DataError(f"`key` must look like {example} ({name}{{JSON}}), got {key!r}.")
    missing, unknown = sorted(fields - set(params)), sorted(set(params) - fields)
    if missing or unknown:
        told = [f"missing {', '.join(missing)}"] if missing else []
        told += [f"unknown {', '.join(unknown)}"] if unknown else []
        raise DataError(
            f"`key` of {name} must have the fields {', '.join(sorted(fields))}; {key!r} has "
            f"{'; '.join(told)}."
        )
    return params


def _text(key: str, field: str, value: Any, *, none: bool) -> str | None:
    """A field that is text (or ``null`` when ``none``)."""
    if value is None and none:
        return None
    if not isinstance(value, str):
        allowed = "a string or null" if none else "a string"
        raise DataError(
            f"`key` field {field!r} must be {allowed}, got {type(value).__name__} in {key!r}."
        )
    return value


def _canonical(key: str, out: Any) -> None:
    if out.key != key:
        raise DataError(f"`key` {key!r} is not canonical (the protocol's key is {out.key}).")


def sfp_from_key(key: str, *, alpha: float = 0.01, max_candidates: int = 1024) -> SFP:
    """The :class:`~deniable.oracles.SFP` whose reports ``key`` names (a report file's, a
    report table's or a tally's), estimating with ``alpha`` and ``max_candidates`` (not in
    the key: the server's choice); anything but an SFP's canonical key is refused with a
    :class:`~deniable.exceptions.DataError` naming what is wrong (module docstring).

    >>> sfp = SFP(epsilon=4.0, max_length=4, alphabet="abc", puzzle_bits=4, k=16, m=256)
    >>> sfp_from_key(sfp.key) == sfp
    True
    """
    from deniable.oracles._spec import _parameter

    params = _fields(key, SFP.name, _SFP_FIELDS, _SFP_EXAMPLE)
    alphabet = _text(key, "alphabet", params.pop("alphabet"), none=True)
    sketch = _text(key, "sketch", params.pop("sketch"), none=False)
    try:
        numbers = {n: _parameter(n, x) for n, x in params.items()}
        out = SFP(**numbers, alphabet=alphabet, sketch=str(sketch), alpha=alpha,
                  max_candidates=max_candidates)  # fmt: skip
    except DeniableError as exc:  # a parameter that is no number, or out of its range
        raise DataError(f"`key` {key!r} does not fit {SFP.name!r}: {exc}") from None
    _canonical(key, out)
    return out


def rappor_ngram_from_key(key: str) -> RapporNgram:
    """The :class:`~deniable.oracles.RapporNgram` whose reports ``key`` names; anything but
    its canonical key is refused with a :class:`~deniable.exceptions.DataError` naming what
    is wrong (module docstring).

    >>> ng = RapporNgram(Rappor(m=32, h=2, cohorts=8, f=0.5, p=0.5, q=0.75), None,
    ...                  alphabet="abc", gram=2, length=4)
    >>> rappor_ngram_from_key(ng.key) == ng
    True
    """
    from deniable.oracles._spec import _parameter, rappor_key_oracle

    params = _fields(key, RapporNgram.name, _NGRAM_FIELDS, _NGRAM_EXAMPLE)
    texts: dict[str, Any] = {
        n: _text(key, n, params.pop(n), none=False) for n in ("alphabet", "pad")
    }
    mechanisms: dict[str, Any] = {}
    for field in ("ngram", "full"):
        nested = params.pop(field)
        if nested is None and field == "full":
            mechanisms[field] = None
            continue
        if not isinstance(nested, dict):
            allowed = "an object of RAPPOR parameters" + (" or null" if field == "full" else "")
            raise DataError(
                f"`key` field {field!r} must be {allowed}, got {type(nested).__name__} in {key!r}."
            )
        inner = Rappor.name + json.dumps(nested, sort_keys=True, separators=(",", ":"))
        try:
            mechanisms[field] = rappor_key_oracle(inner)
        except DataError as exc:
            raise DataError(f"`key` field {field!r} of {key!r}: {exc}") from None
    try:
        numbers = {n: _parameter(n, x) for n, x in params.items()}
        out = RapporNgram(mechanisms["ngram"], mechanisms["full"], **texts, **numbers)
    except DeniableError as exc:
        raise DataError(f"`key` {key!r} does not fit {RapporNgram.name!r}: {exc}") from None
    _canonical(key, out)
    return out
