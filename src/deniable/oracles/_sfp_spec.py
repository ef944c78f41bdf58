"""The Sequence Fragment Puzzle's spec (schema ``deniable.sfp-spec/1``, ``docs/specs.md``):
the JSON a device needs to build its one report of :class:`~deniable.oracles.SFP` without
``deniable``, read back with every implied field checked, and the device's own report rule
(:func:`sfp_device_reports`).

**A device's report.**  ``words_per_report = 1 + w_f + w_w`` uniform 64-bit words, in
order: the position word, the ``w_f`` words of a fragment-sketch report, the ``w_w`` words
of a whole-string-sketch report (``w = 1 + m`` for CMS, 3 for HCMS: each sketch's own
``words_per_report``).  The device

1. draws its position ``l = uniform_below(word 0, P)`` (``P = ceil(max_length / 2)``; the
   position does not depend on the string and is sent in the clear);
2. writes its string as ``2 P`` symbol indices (its UTF-8 bytes, or its characters' indices
   in ``alphabet``), padded with the index ``A`` (``symbols``), and its puzzle piece ``p``,
   the top ``puzzle_bits`` bits of SHA-256(``"deniable.sfp/1" || 0x00 || utf-8 s``)
   big-endian;
3. reports the record ``"l:p:i.j"`` (decimal; ``i, j`` the indices of symbols ``2 l`` and
   ``2 l + 1``) through the fragment sketch (its spec: ``fragment_sketch``) with the next
   ``w_f`` words, and its string through the whole-string sketch (``word_sketch``) with
   the last ``w_w``.

Its report is ``[l, fragment report, whole-string report]`` (each sketch report in its own
form), what a report file's record, a report table and a batch of SFP hold
(``oracles._string_files``).  The server's simulation (:meth:`~deniable.oracles.SFP.
randomize`) draws the same distribution with its words in another order (every position,
then every fragment report, then every whole-string report).

**Epsilon.**  ``epsilon = fragment_epsilon + word_epsilon``: the two sketches' epsilons
(``fragment_share`` of it and the rest), the position independent of the string; the
spec states all three and each sketch's own spec (its flip threshold and
``implemented_epsilon``).  **The key** is the protocol's (``sfp{...}``): ``alpha`` and
``max_candidates`` are the server's, not in the spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles._base_spec import spec_head
from deniable.oracles._cms_spec import cms_spec
from deniable.oracles._sfp import SFP
from deniable.oracles._sfp_assemble import PUZZLE_HASH
from deniable.oracles._sfp_result import SFPReports
from deniable.oracles._spec import _from_parameters, _number, _parameter, _spec_fields
from deniable.randomness import ArrayWords, random_words, resolve_rng, uniform_below

__all__ = ["SFP_SPEC_SCHEMA", "sfp_device_reports", "sfp_from_spec", "sfp_spec"]

#: The schema identifier of a Sequence Fragment Puzzle spec.
SFP_SPEC_SCHEMA = "deniable.sfp-spec/1"

_ALGORITHM = "sequence-fragment-puzzle/1"
_REPORT = "position-fragment-word"
_POSITION = "l = uniform_below(word 0, positions): ((word >> (64 - b)) * positions) >> b, " + (
    "b = 64 - bit_length(positions); word >> (64 - log2 positions) when positions is a power of two"
)
_PUZZLE_DIGEST = (
    f'p(s) = top `bits` bits of SHA-256("{PUZZLE_HASH}" || 0x00 || utf-8 s), big-endian'
)
_RECORD = (
    '"<l>:<p>:<i>.<j>" in decimal, i and j the indices of symbols 2 l and 2 l + 1 of the '
    "padded string, to fragment_sketch; the string itself to word_sketch"
)
_FIELDS = (
    "schema", "mechanism", "parameters", "key", "algorithm", "positions", "symbols",
    "position", "puzzle", "record", "fragment_sketch", "word_sketch", "words_per_report",
    "report", "strings", "epsilon", "fragment_epsilon", "word_epsilon",
    "implemented_epsilon",
)  # fmt: skip
_TEXT = ("alphabet", "sketch")  # the parameters that are strings, not numbers
_BLOCK_WORDS = 1 << 20


def _check_sfp(protocol: Any) -> SFP:
    if not isinstance(protocol, SFP):
        raise ParameterTypeError(f"`protocol` must be an SFP, got {type(protocol).__name__}.")
    return protocol


def sfp_spec(protocol: SFP) -> dict[str, Any]:
    """The spec of a Sequence Fragment Puzzle's device reports, as plain JSON data (schema
    ``deniable.sfp-spec/1``; module docstring).

    >>> spec = sfp_spec(SFP(epsilon=4.0, max_length=4, alphabet="abc", puzzle_bits=4, k=8,
    ...                     m=64))
    >>> spec["positions"], spec["symbols"], spec["words_per_report"], spec["epsilon"]
    (2, 3, 7, 4.0)
    >>> sfp_from_spec(spec).key == spec["key"]
    True
    """
    sfp = _check_sfp(protocol)
    frag, word = sfp.fragment_sketch, sfp.word_sketch
    params = {"epsilon": sfp.epsilon, "max_length": sfp.max_length, "alphabet": sfp.alphabet,
              "puzzle_bits": sfp.puzzle_bits, "k": sfp.k, "m": sfp.m, "sketch": sfp.sketch,
              "fragment_share": sfp.fragment_share, "salt": sfp.salt}  # fmt: skip
    return {
        **spec_head(SFP_SPEC_SCHEMA, sfp, params, _ALGORITHM),
        "positions": sfp.positions,
        "symbols": sfp.symbols,
        "position": _POSITION,
        "puzzle": {"hash": PUZZLE_HASH, "bits": sfp.puzzle_bits, "digest": _PUZZLE_DIGEST},
        "record": _RECORD,
        "fragment_sketch": cms_spec(frag),
        "word_sketch": cms_spec(word),
        "words_per_report": 1 + frag.words_per_report + word.words_per_report,
        "report": _REPORT,
        "strings": {
            "encoding": "utf-8",
            "empty": "refused",
            "max_length": sfp.max_length,
            "unit": "bytes" if sfp.alphabet is None else "characters",
            "alphabet": sfp.alphabet,
            "padding": "the symbol index `symbols` to 2 positions symbols",
        },
        "epsilon": _number(sfp.epsilon_per_device),
        "fragment_epsilon": _number(sfp.fragment_epsilon),
        "word_epsilon": _number(sfp.word_epsilon),
        "implemented_epsilon": _number(sfp.implemented_epsilon),
    }


def _convert(name: str, value: Any) -> Any:
    """A spec parameter back to Python: ``alphabet`` (a string or null) and ``sketch`` (a
    string) as they are, every other one a number (:func:`~deniable.oracles._spec.
    _parameter`)."""
    if name not in _TEXT:
        return _parameter(name, value)
    if isinstance(value, str) or (name == "alphabet" and value is None):
        return value
    kind = "a string or null" if name == "alphabet" else "a string"
    raise DataError(f"spec field `parameters.{name}` must be {kind}, got {type(value).__name__}.")


def sfp_from_spec(
    spec: Mapping[str, Any] | str | bytes, *, alpha: float = 0.01, max_candidates: int = 1024
) -> SFP:
    """The protocol a spec describes (a mapping or its JSON text), estimating with ``alpha``
    and ``max_candidates`` (the server's, not in the spec); every implied field recomputed
    and compared (both sketches' specs included): an unknown, missing or altered field is
    refused with :class:`~deniable.exceptions.DataError` naming it."""
    spec = _spec_fields(spec, _FIELDS, SFP_SPEC_SCHEMA, "a Sequence Fragment Puzzle spec")
    if spec["mechanism"] != SFP.name:
        raise DataError(f"spec field `mechanism` must be 'sfp', got {spec['mechanism']!r}.")

    def make(**params: Any) -> SFP:
        return SFP(**params, alpha=alpha, max_candidates=max_candidates)

    return _from_parameters(spec, _FIELDS, make, SFP.name, sfp_spec, _convert)


def sfp_device_reports(protocol: SFP, items: Any, *, rng: Any = None) -> SFPReports:
    """Each device's report by the device rule of the module docstring: ``words_per_report``
    words a device, in order (CSPRNG unless ``rng`` is given): its position word, then its
    fragment-sketch report's words, then its whole-string report's.  The reports
    (:class:`~deniable.oracles.SFPReports`) are what ``estimate`` and ``sfp_records`` read;
    they follow the same law as :meth:`~deniable.oracles.SFP.randomize`'s."""
    sfp = _check_sfp(protocol)
    raw = sfp.strings(items)
    frag, word = sfp.fragment_sketch, sfp.word_sketch
    wf, ww = frag.words_per_report, word.words_per_report
    per = 1 + wf + ww
    gen = resolve_rng(rng)
    step = max(1, _BLOCK_WORDS // per)  # devices a block: at most 8 MiB of words
    parts: list[SFPReports] = []
    for start in range(0, max(len(raw), 1), step):
        chunk = raw[start : start + step]
        draw = random_words(gen, per * len(chunk)).reshape(-1, per)
        pos = uniform_below(np.ascontiguousarray(draw[:, 0]), sfp.positions).astype(np.int64)
        records = sfp._fragment_records(chunk, pos)
        fragments = frag.randomize(records, rng=ArrayWords(draw[:, 1 : 1 + wf].reshape(-1)))
        words = word.randomize(chunk, rng=ArrayWords(draw[:, 1 + wf :].reshape(-1)))
        parts.append(SFPReports(pos, fragments, words))
    if len(parts) == 1:
        return parts[0]
    return _concatenate(parts)


def _concatenate(parts: list[SFPReports]) -> SFPReports:
    """One :class:`~deniable.oracles.SFPReports` of several chunks' (CMS reports are
    ``SketchReports``, HCMS reports arrays)."""
    from deniable.oracles._sketch import SketchReports

    def join(items: list[Any]) -> Any:
        if isinstance(items[0], SketchReports):
            return SketchReports(
                np.concatenate([r.rows for r in items]), np.concatenate([r.bits for r in items])
            )
        return np.concatenate(items)

    return SFPReports(
        np.concatenate([p.positions for p in parts]),
        join([p.fragments for p in parts]),
        join([p.words for p in parts]),
    )
