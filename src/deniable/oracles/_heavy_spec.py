"""The heavy-hitter protocols' spec (schema ``deniable.heavy-spec/1``, ``docs/specs.md``):
the JSON a device needs to build its one report of :class:`~deniable.oracles.PEM` or
:class:`~deniable.oracles.TreeHist` without ``deniable``, read back with every implied field
checked, and the device's own report rule (:func:`heavy_device_records`).

**A device's report.**  ``words_per_report = l W + 3`` uniform 64-bit words, in order: the
group word, ``l W`` row words, the keep word and the bucket word (``l = log2 g``, ``W =
ceil(max_bytes / 8)``).  The device

1. draws its group ``j = uniform_below(word 0, G)`` (multiply-shift over the ``G = len(levels)``
   groups, exact when ``G`` is a power of two and within ``2**-53`` of ``1 / G`` otherwise:
   ``randomness.uniform_below``); the group does not depend on the string;
2. pads its string (UTF-8, 1 to ``max_bytes`` bytes, no NUL byte) with NUL bytes to
   ``max_bytes`` bytes, reads it as ``W`` big-endian words (byte 0 the top byte of word 0)
   and keeps its prefix of ``s = levels[j]`` bits (``oracles._strings``);
3. reports ``(A, y)`` through :class:`~deniable.oracles._prefix_oracle.PrefixOLH` at ``s``
   bits with the remaining ``l W + 2`` words: row ``r`` of ``A`` is words ``1 + r W .. r W +
   W`` masked to the prefix, ``y = A x`` (bit ``r`` the parity of ``a_r & x``) when ``keep
   word >> 11 < keep``, else the top ``l`` bits of the bucket word.

Its record is ``[j, a_0 words ..., a_(l-1) words ..., y]``: ``2 + l W`` words, what a report
file, a report table and a batch of the protocol hold (``oracles._heavy_files``).  The
server's own simulation (``randomize``) assigns the groups by a balanced rank rule instead;
either way the group is independent of the string and each device sends one report at the
oracle's epsilon.

**The key** is the protocol's (``heavy_key``): ``alpha`` and ``top_k`` are the server's, not
in the spec.

**The alphabet** (optional: the bytes a string may contain, ``oracles._prefix_alphabet``)
stands, when the protocol has one, as ``parameters.alphabet`` and ``strings.alphabet`` (its
sorted bytes in lowercase hex) and in the key; a spec without it is read as before.  It
stays schema ``heavy-spec/1`` because it changes no step of the report rule above: a
device that ignored it would still send an exact report of its own prefix, which the
server reads correctly (a string outside the alphabet is simply never a candidate, and its
reports support each candidate with probability ``q``, as a non-holder's do); a device that
honours it refuses such a string before drawing any word.  A reader that does not know the
field refuses the spec (its ``parameters`` do not fit), never misreads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles._base_spec import spec_head
from deniable.oracles._heavy_hitters import PEM, TreeHist, _prefixes
from deniable.oracles._prefix_alphabet import alphabet_from_hex, alphabet_hex, check_in_alphabet
from deniable.oracles._spec import LINEAR_HASH_FAMILY, _from_parameters, _number, _spec_fields
from deniable.oracles._strings import encode_strings
from deniable.randomness import CHUNK, ArrayWords, random_words, resolve_rng, uniform_below

__all__ = ["HEAVY_SPEC_SCHEMA", "heavy_device_records", "heavy_from_spec", "heavy_spec"]

#: The schema identifier of a heavy-hitter protocol's spec.
HEAVY_SPEC_SCHEMA = "deniable.heavy-spec/1"

_PROTOCOLS: dict[str, type[PEM] | type[TreeHist]] = {"pem": PEM, "treehist": TreeHist}
_ALGORITHM = "prefix-linear-hashing/1"
_REPORT = "group-linear-hash"
_GROUP = "group = uniform_below(word 0, groups): ((word >> (64 - b)) * groups) >> b, " + (
    "b = 64 - bit_length(groups); word >> (64 - log2 groups) when groups is a power of two"
)
_FIELDS = (
    "schema", "mechanism", "parameters", "key", "algorithm", "levels", "groups", "group",
    "constants", "words_per_report", "report", "hash", "strings", "epsilon",
    "implemented_epsilon",
)  # fmt: skip


def _check_protocol(protocol: Any) -> PEM | TreeHist:
    if not isinstance(protocol, PEM | TreeHist):
        raise ParameterTypeError(
            f"`protocol` must be a PEM or a TreeHist, got {type(protocol).__name__}."
        )
    return protocol


def _parameters(protocol: PEM | TreeHist) -> dict[str, Any]:
    params: dict[str, Any] = {
        "epsilon": protocol.epsilon, "g": protocol.base.g, "max_bytes": protocol.max_bytes,
    }  # fmt: skip
    if isinstance(protocol, PEM):
        params |= {"start_bits": protocol.start_bits, "step_bits": protocol.step_bits}
    if protocol.symbols is not None:
        params["alphabet"] = alphabet_hex(protocol.symbols)
    return params


def heavy_spec(protocol: PEM | TreeHist) -> dict[str, Any]:
    """The spec of a heavy-hitter protocol's device reports, as plain JSON data (schema
    ``deniable.heavy-spec/1``; module docstring).

    >>> spec = heavy_spec(PEM(epsilon=2.0, max_bytes=2, start_bits=8, step_bits=4))
    >>> spec["levels"], spec["groups"], spec["words_per_report"], spec["constants"]["buckets"]
    ([8, 12, 16], 3, 6, 8)
    >>> heavy_from_spec(spec).key == PEM(epsilon=2.0, max_bytes=2, step_bits=4).key
    True
    """
    protocol = _check_protocol(protocol)
    base = protocol.base
    keep, _ = base.randomized_response.thresholds()
    levels = list(protocol.levels)
    strings = {
        "encoding": "utf-8",
        "empty": "refused",
        "nul": "refused",
        "max_bytes": protocol.max_bytes,
        "padding": "NUL bytes to max_bytes",
    }
    if protocol.symbols is not None:  # absent by default: the specs of before, unchanged
        strings["alphabet"] = alphabet_hex(protocol.symbols)
    return {
        **spec_head(HEAVY_SPEC_SCHEMA, protocol, _parameters(protocol), _ALGORITHM),
        "levels": levels,
        "groups": len(levels),
        "group": _GROUP,
        "constants": {
            "buckets": base.g,
            "keep": keep,
            "rows": base.bucket_bits,
            "words": protocol.words,
        },
        "words_per_report": protocol.oracle(levels[0]).report_width + 2,
        "report": _REPORT,
        "hash": dict(LINEAR_HASH_FAMILY),
        "strings": strings,
        "epsilon": _number(protocol.epsilon_per_device),
        "implemented_epsilon": _number(protocol.implemented_epsilon),
    }


def heavy_from_spec(
    spec: Mapping[str, Any] | str | bytes, *, top_k: int = 16, alpha: float | None = 0.05
) -> PEM | TreeHist:
    """The protocol a spec describes (a mapping or its JSON text), estimating with ``top_k``
    and ``alpha`` (the server's, not in the spec); every implied field recomputed and
    compared: an unknown, missing or altered field is refused with
    :class:`~deniable.exceptions.DataError` naming it."""
    spec = _spec_fields(spec, _FIELDS, HEAVY_SPEC_SCHEMA, "a heavy-hitter spec")
    name = spec["mechanism"]
    if name not in _PROTOCOLS:
        raise DataError(f"spec field `mechanism` must be one of pem, treehist, got {name!r}.")
    cls = _PROTOCOLS[name]
    params = spec["parameters"]
    alphabet = None
    if isinstance(params, Mapping) and "alphabet" in params:  # hex, not a number
        alphabet = alphabet_from_hex(params["alphabet"], "spec field `parameters.alphabet`")
        spec = {**spec, "parameters": {n: x for n, x in params.items() if n != "alphabet"}}

    def make(**kw: Any) -> PEM | TreeHist:
        return cls(**kw, top_k=top_k, alpha=alpha, alphabet=alphabet)

    def implied(protocol: PEM | TreeHist) -> dict[str, Any]:
        out = heavy_spec(protocol)  # `key` and `strings` still say the alphabet
        out["parameters"].pop("alphabet", None)
        return out

    return _from_parameters(spec, _FIELDS, make, name, implied)


def heavy_device_records(
    protocol: PEM | TreeHist, items: Any, *, rng: Any = None
) -> npt.NDArray[np.uint64]:
    """Each device's record ``[group, report words ...]`` (``(n, 2 + l W)`` uint64) by the
    device rule of the module docstring: ``l W + 3`` words a device, in order (CSPRNG unless
    ``rng`` is given).  ``heavy_from_records`` turns them into the reports ``estimate``
    reads; one device alone may report (no group quota)."""
    protocol = _check_protocol(protocol)
    x = encode_strings(items, protocol.max_bytes)
    check_in_alphabet(x, protocol.max_bytes, protocol.symbols)
    levels = protocol.levels
    per = protocol.oracle(levels[0]).report_width + 2
    gen = resolve_rng(rng)
    n = x.shape[0]
    out = np.empty((n, per - 1), dtype=np.uint64)
    for start in range(0, n, CHUNK):
        stop = min(start + CHUNK, n)
        draw = random_words(gen, per * (stop - start)).reshape(-1, per)
        group = uniform_below(np.ascontiguousarray(draw[:, 0]), len(levels))
        out[start:stop, 0] = group
        for j, bits in enumerate(levels):
            mine = np.flatnonzero(group == j)
            if mine.size == 0:
                continue
            words = ArrayWords(np.ascontiguousarray(draw[mine, 1:]).reshape(-1))
            prefixes = _prefixes(x[start + mine], bits)
            out[start + mine, 1:] = protocol.oracle(bits).randomize(prefixes, rng=words)
    return out
