"""RAPPOR n-gram discovery's spec (schema ``deniable.rappor-ngram-spec/1``, ``docs/specs.md``):
the JSON a device needs to build its reports of :class:`~deniable.oracles.RapporNgram`
without ``deniable``, read back with every implied field checked, and the device's own
report rule (:func:`rappor_ngram_device_reports`).

**A device's report** takes ``words_per_report = 1 + C + 2 pairs (2 m) + 2 m_full``
uniform 64-bit words, in order (``C = G (G - 1) / 2`` the position pairs, ``G = length /
gram``, ``m`` the n-gram mechanism's bits, ``m_full`` the full-string mechanism's, 0
without one):

1. word 0 is its cohort word: its cohort is ``((word >> 32) cohorts) >> 32`` for each of
   the two RAPPOR mechanisms with its own ``cohorts`` (one word, so one device's cohorts
   are linked, as :meth:`~deniable.oracles.RapporNgram.randomize` draws them);
2. words ``1..C`` are the keys of the ``C`` pairs ``j1 < j2`` in lexicographic order; it
   reports the ``pairs`` pairs of smallest key (ties to the earlier pair), in increasing
   order of key: uniform without replacement and independent of the string;
3. its string, padded with ``pad`` to ``length`` characters, is cut into ``G`` n-grams;
   for each chosen pair, n-gram ``j1`` then n-gram ``j2`` is reported as the RAPPOR string
   ``"<j>:<n-gram>"`` (decimal ``j``) in its cohort through ``ngram_report`` (a RAPPOR
   spec, ``rappor/1``): its Bloom bits, the PRR with the next ``m`` words (one a bit), the
   IRR with the ``m`` after;
4. with ``full_report``, the unpadded string the same way with the last ``2 m_full``.

Its report is the chosen pairs, its ``2 pairs`` n-gram reports and its full-string report:
what :class:`~deniable.oracles.NgramReports` and a report file of n-grams hold.

**Memoization.**  This rule draws every PRR afresh: one collection, costing ``epsilon =
2 pairs eps_1(ngram) + eps_1(full)`` (basic composition of its reports' exact
one-report epsilons).  A device that keeps each PRR per value (``"<j>:<n-gram>"``, the
full string) across collections, as :class:`~deniable.oracles.RapporClient` does, is
bounded over any number of collections of one string by ``permanent_epsilon = G
eps_inf(ngram) + eps_inf(full)``; the spec states both (``"inf"`` when a PRR has ``f =
0``).  The server's ``alpha``, ``edge_threshold`` and ``max_candidates`` are not in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, DeniableError, ParameterTypeError
from deniable.oracles._base_spec import spec_head
from deniable.oracles._rappor import Rappor, RapporReports
from deniable.oracles._rappor_ngram import RapporNgram
from deniable.oracles._rappor_ngram_decode import NgramReports
from deniable.oracles._rappor_spec import rappor_from_spec, rappor_spec
from deniable.oracles._spec import _from_parameters, _number, _parameter, _spec_fields
from deniable.randomness import ArrayWords, random_words, resolve_rng

__all__ = [
    "RAPPOR_NGRAM_SPEC_SCHEMA",
    "rappor_ngram_device_reports",
    "rappor_ngram_from_spec",
    "rappor_ngram_spec",
]

#: The schema identifier of a RAPPOR n-gram spec.
RAPPOR_NGRAM_SPEC_SCHEMA = "deniable.rappor-ngram-spec/1"

_ALGORITHM = "rappor-ngram/1"
_REPORT = "pairs-ngrams-full"
_COHORT = "c = ((word0 >> 32) * cohorts) >> 32, for each mechanism with its own cohorts"
_SELECTION = (
    "words 1..C are the keys of the C pairs j1 < j2 in lexicographic order; the `pairs` "
    "pairs of smallest key (unsigned; ties to the earlier pair), in increasing order of key"
)
_LABEL = (
    '"<j>:<n-gram>" (decimal j) of the string padded with `pad` to `length` characters, '
    "n-gram j its characters j gram .. (j + 1) gram - 1; for each chosen pair j1's then j2's"
)
_MEMO = (
    "fresh: every PRR is drawn again each collection (epsilon is one collection's); a "
    'device keeping each PRR per value ("<j>:<n-gram>", the full string) across '
    "collections is bounded by permanent_epsilon over any number of them"
)
_FIELDS = (
    "schema", "mechanism", "parameters", "key", "algorithm", "ngram_report", "full_report",
    "positions", "position_pairs", "cohort", "selection", "label", "strings", "words",
    "words_per_report", "report", "memoization", "epsilon", "permanent_epsilon",
)  # fmt: skip
_TEXT = ("alphabet", "pad")  # the parameters that are strings, not numbers
_BLOCK_WORDS = 1 << 20
_32 = np.uint64(32)


def _check_ngram(protocol: Any) -> RapporNgram:
    if not isinstance(protocol, RapporNgram):
        raise ParameterTypeError(
            f"`protocol` must be a RapporNgram, got {type(protocol).__name__}."
        )
    return protocol


def _words(ng: RapporNgram) -> dict[str, int]:
    full = 2 * ng.full.m if ng.full is not None else 0
    return {"cohort": 1, "pair_keys": int(ng.position_pairs.shape[0]),
            "ngrams": 2 * ng.pairs * 2 * ng.ngram.m, "full": full}  # fmt: skip


def rappor_ngram_spec(protocol: RapporNgram) -> dict[str, Any]:
    """The spec of RAPPOR n-gram discovery's device reports, as plain JSON data (schema
    ``deniable.rappor-ngram-spec/1``; module docstring).

    >>> ng = RapporNgram(Rappor(m=32, h=2, cohorts=8, f=0.5, p=0.5, q=0.75), None,
    ...                  alphabet="abc", gram=2, length=4)
    >>> spec = rappor_ngram_spec(ng)
    >>> spec["positions"], spec["position_pairs"], spec["words_per_report"]
    (2, 1, 130)
    >>> rappor_ngram_from_spec(spec) == ng
    True
    """
    ng = _check_ngram(protocol)
    words = _words(ng)
    params = {"alphabet": ng.alphabet, "gram": ng.gram, "length": ng.length,
              "pairs": ng.pairs, "pad": ng.pad}  # fmt: skip
    return {
        **spec_head(RAPPOR_NGRAM_SPEC_SCHEMA, ng, params, _ALGORITHM),
        "ngram_report": rappor_spec(ng.ngram),
        "full_report": rappor_spec(ng.full) if ng.full is not None else None,
        "positions": ng.positions,
        "position_pairs": words["pair_keys"],
        "cohort": _COHORT,
        "selection": _SELECTION,
        "label": _LABEL,
        "strings": {
            "encoding": "utf-8",
            "unit": "characters",
            "empty": "refused",
            "max_length": ng.length,
            "alphabet": ng.alphabet,
            "pad": ng.pad,
        },
        "words": words,
        "words_per_report": sum(words.values()),
        "report": _REPORT,
        "memoization": _MEMO,
        "epsilon": _number(ng.epsilon),
        "permanent_epsilon": _number(ng.permanent_epsilon),
    }


def _convert(name: str, value: Any) -> Any:
    """A spec parameter back to Python: ``alphabet`` and ``pad`` strings, every other one a
    number (:func:`~deniable.oracles._spec._parameter`)."""
    if name not in _TEXT:
        return _parameter(name, value)
    if isinstance(value, str):
        return value
    raise DataError(f"spec field `parameters.{name}` must be a string, got {type(value).__name__}.")


def _mechanism(spec: Mapping[str, Any], field: str) -> Rappor | None:
    """The RAPPOR mechanism of ``ngram_report`` or ``full_report`` (null allowed for the
    latter), its own refusal named under ``field``."""
    value = spec[field]
    if value is None and field == "full_report":
        return None
    if not isinstance(value, Mapping):
        allowed = "a RAPPOR spec" + (" or null" if field == "full_report" else "")
        raise DataError(f"spec field `{field}` must be {allowed}, got {type(value).__name__}.")
    try:
        return rappor_from_spec(value)
    except DeniableError as exc:
        raise DataError(f"spec field `{field}`: {exc}") from None


def rappor_ngram_from_spec(spec: Mapping[str, Any] | str | bytes) -> RapporNgram:
    """The protocol a spec describes (a mapping or its JSON text), every implied field
    recomputed and compared (both RAPPOR specs included): an unknown, missing or altered
    field is refused with :class:`~deniable.exceptions.DataError` naming it."""
    spec = _spec_fields(spec, _FIELDS, RAPPOR_NGRAM_SPEC_SCHEMA, "a RAPPOR n-gram spec")
    if spec["mechanism"] != RapporNgram.name:
        raise DataError(
            f"spec field `mechanism` must be 'rappor-ngram', got {spec['mechanism']!r}."
        )
    ngram = _mechanism(spec, "ngram_report")
    full = _mechanism(spec, "full_report")

    def make(**params: Any) -> RapporNgram:
        return RapporNgram(ngram, full, **params)  # type: ignore[arg-type]

    return _from_parameters(spec, _FIELDS, make, RapporNgram.name, rappor_ngram_spec, _convert)


def _reports(
    rappor: Rappor, labels: npt.NDArray[np.str_], cohorts: npt.NDArray[np.int64],
    draw: npt.NDArray[np.uint64], start: int,
) -> npt.NDArray[np.uint8]:  # fmt: skip
    """Each device's report of its label: PRR with its words ``start .. start + m - 1``,
    IRR with the next ``m``."""
    m = rappor.m
    bloom = rappor.bloom(labels, cohorts)
    prr = rappor.permanent(bloom, rng=ArrayWords(draw[:, start : start + m].reshape(-1)))
    return rappor.instantaneous(prr, rng=ArrayWords(draw[:, start + m : start + 2 * m].reshape(-1)))


def rappor_ngram_device_reports(
    protocol: RapporNgram, items: Any, *, rng: Any = None
) -> NgramReports:
    """Each device's report by the device rule of the module docstring: ``words_per_report``
    words a device, in order (CSPRNG unless ``rng`` is given).  The reports
    (:class:`~deniable.oracles.NgramReports`) are what ``discover`` and the n-gram report
    files read; they follow the same law as :meth:`~deniable.oracles.RapporNgram.randomize`
    (which draws the same words in another order)."""
    ng = _check_ngram(protocol)
    strings = ng.strings(items)
    layout = _words(ng)
    per, npairs, m = sum(layout.values()), layout["pair_keys"], ng.ngram.m
    reps = 2 * ng.pairs
    gen = resolve_rng(rng)
    step = max(1, _BLOCK_WORDS // per)  # devices a block: at most 8 MiB of words
    positions, cohorts, bits = [], [], []
    full_cohorts, full_bits = [], []
    for first in range(0, strings.size, step):
        chunk = strings[first : first + step]
        n = chunk.size
        draw = random_words(gen, per * n).reshape(n, per)
        word = draw[:, 0] >> _32
        coh = ((word * np.uint64(ng.ngram.cohorts)) >> _32).astype(np.int64)
        chosen = np.argsort(draw[:, 1 : 1 + npairs], axis=1, kind="stable")[:, : ng.pairs]
        pos = ng.position_pairs[chosen]  # (n, pairs, 2)
        grams = ng._grams(chunk)
        flat = pos.reshape(n, reps)
        block = np.empty((n, reps, ng.ngram.width), dtype=np.uint8)
        for r in range(reps):
            j = flat[:, r]
            labels = np.char.add(np.char.add(j.astype(str), ":"), grams[np.arange(n), j])
            block[:, r] = _reports(ng.ngram, labels, coh, draw, 1 + npairs + 2 * m * r)
        positions.append(pos)
        cohorts.append(np.repeat(coh, reps))
        bits.append(block.reshape(n * reps, -1))
        if ng.full is not None:
            fc = ((word * np.uint64(ng.full.cohorts)) >> _32).astype(np.int64)
            full_cohorts.append(fc)
            full_bits.append(_reports(ng.full, chunk, fc, draw, per - 2 * ng.full.m))
    ngrams = RapporReports(np.concatenate(cohorts), np.concatenate(bits))
    full = None
    if ng.full is not None:
        full = RapporReports(np.concatenate(full_cohorts), np.concatenate(full_bits))
    return NgramReports(np.concatenate(positions), ngrams, full)
