"""Randomizer test vectors: for each registered design at a few parameterisations, its spec,
the random words, the true answers and the reports Python's randomizer makes from them.

A client in another language (the survey service's browser module) runs each case's words
through the algorithm its spec names and must get exactly the same reports; the schema is
in ``docs/specs.md``.  The words are deterministic: the edge words ``0`` and ``2**64 - 1``,
the two words on either side of every threshold (``(t << 11) - 1`` and ``t << 11``) and of
every category boundary, each paired with every true answer (two-group designs: with every
combination of truth, latent indicator and group), then words from PCG64 seeded by the
case's name.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from functools import partial
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from deniable.designs._base import Design
from deniable.designs._registry import make_design
from deniable.designs._spec import QuestionSpec
from deniable.designs._spec_algorithms import TWO_GROUP_ALGORITHM, latent_input
from deniable.designs._twogroup import TwoGroupDesign
from deniable.randomness import ArrayWords

__all__ = ["VECTORS_SCHEMA", "VECTOR_DESIGNS", "dump_vectors", "randomizer_vectors"]

#: The schema identifier of a vectors file.
VECTORS_SCHEMA = "deniable.vectors/1"

#: The parameterisations of every registered design (finite and infinite epsilon, dyadic
#: and non-dyadic probabilities, thresholds 0 and 2**53, several draws, uniform forcing
#: with k a power of two and not, a given forced distribution with a zero, two-group
#: designs with a group share of 1/2 and not), by parameter name as a question spec gives
#: them.
_PARAMETERS: dict[str, tuple[dict[str, Any], ...]] = {
    "warner": ({"p": 0.75}, {"p": 0.2}),
    "mirrored": ({"p": 0.7}, {"p": 0.375}),
    "two-coin": ({}, {"p_truthful": 0.5, "p_yes": 1.0}),
    "biased-coin": ({"q": 0.25}, {"q": 0.9}),
    "binary": ({"epsilon": 1.0}, {"epsilon": 2.0, "calibration": "half"}),
    "forced": (
        {"forced_yes": 0.25, "forced_no": 0.25},
        {"forced_yes": 1 / 6, "forced_no": 1 / 3},
        {"forced_yes": 0.2, "forced_no": 0.0},
    ),
    "unrelated": ({"p": 0.7, "q": 0.3}, {"p": 0.5, "q": 0.0}),
    "kuk": (
        {"theta1": 0.7, "theta2": 0.3},
        {"theta1": 0.8, "theta2": 0.4, "draws": 3},
        {"theta1": 1.0, "theta2": 0.25, "draws": 2},
    ),
    "mangat": ({"p": 0.7}, {"p": 1.0}),
    "crosswise": ({"p": 0.2}, {"p": 0.85}),
    "triangular": ({"p": 0.3}, {"p": 0.0}),
    "custom": (
        {"p_yes_given_1": 0.6, "p_yes_given_0": 0.1},
        {"p_yes_given_1": 1.0, "p_yes_given_0": 0.3},
    ),
    "categorical": (
        {"k": 4, "p_truthful": 0.5},
        {"k": 5, "p_truthful": 0.6},
        {"k": 3, "p_truthful": 0.6, "forced": (0.2, 0.3, 0.5)},
        {"k": 3, "p_truthful": 0.5, "forced": (0.5, 0.5, 0.0)},
    ),
    "unrelated-unknown": (
        {"p1": 0.7, "p2": 0.3},
        {"p1": 0.6, "p2": 0.0},
        {"p1": 0.7, "p2": 0.3, "group_share": 1 / 3},
    ),
    "cdm": (
        {"forced_yes1": 0.2, "forced_yes2": 0.6},
        {"forced_yes1": 0.0, "forced_yes2": 0.5},
    ),
    "cdm-symmetric": (
        {"forced_yes1": 0.1, "forced_no1": 0.1, "forced_yes2": 0.3, "forced_no2": 0.1},
        {"forced_yes1": 0.25, "forced_no1": 0.0, "forced_yes2": 0.5, "forced_no2": 0.25},
    ),
    "sld": (
        {"p1": 2 / 12, "p2": 10 / 12},
        {"p1": 0.25, "p2": 1.0},
        {"p1": 0.25, "p2": 0.75, "group_share": 0.75},
    ),
}

#: Each parameterisation's design, made by the registry from its name and parameters.
VECTOR_DESIGNS: dict[str, tuple[Callable[[], Design], ...]] = {
    name: tuple(partial(make_design, name, params) for params in cases)
    for name, cases in _PARAMETERS.items()
}

_TOP = (1 << 64) - 1
_TWO53 = 1 << 53
#: Rows of plain random words after the edge rows, per combination of inputs.
_RANDOM_ROWS = 3


def _straddle(thresholds: list[int]) -> list[int]:
    """Words just below and at ``t << 11`` for every threshold strictly inside (0, 2**53)."""
    out = []
    for t in sorted({t for t in thresholds if 0 < t < _TWO53}):
        out += [(t << 11) - 1, t << 11]
    return out


def _category_edges(k: int) -> list[int]:
    """Words on either side of each boundary of the uniform category draw (multiply-shift)."""
    out = []
    if k & (k - 1) == 0:
        shift = 64 - (k.bit_length() - 1)
        edges = [j << shift for j in range(1, k)]
    else:
        b = 64 - k.bit_length()
        edges = [(-(-(j << b) // k)) << (64 - b) for j in range(1, k)]
    for w in edges:
        out += [w - 1, w]
    return out


def _slot_words(spec: QuestionSpec) -> list[list[int]]:
    """The edge words of each of the ``words_per_report`` slots of one report (for a
    two-group design: of the answer word)."""
    edge = [0, _TOP]
    th = spec.thresholds
    if spec.algorithm == "keep-or-forced/1":
        forced = th["forced"]
        category = _category_edges(spec.reports) if forced is None else _straddle(forced)
        return [edge + _straddle([th["keep"]]), edge + category]
    if spec.algorithm == TWO_GROUP_ALGORITHM:
        return [edge + _straddle([t for row in th["yes"] for t in row])]
    words = edge + _straddle(th["yes"])
    # Kuk's draws: each draw sees the edge words, rotated so that they meet different draws
    return [words[d % len(words) :] + words[: d % len(words)] for d in range(spec.words_per_report)]


def _case(case_id: str, design: Design) -> dict[str, Any]:
    spec = QuestionSpec(design)
    slots = _slot_words(spec)
    rows = max(len(s) for s in slots) + _RANDOM_ROWS
    n = rows * spec.truths
    matrix = _words(case_id, slots, spec.truths, rows)
    truth = np.arange(n) % spec.truths
    source = ArrayWords(matrix.reshape(-1))
    reports = design.randomize(truth, rng=source)
    return _finish(case_id, spec, {"truth": truth.tolist()}, matrix, source, reports)


def _words(case_id: str, slots: list[list[int]], combos: int, rows: int) -> npt.NDArray[np.uint64]:
    """``(len(slots), rows * combos)`` words: PCG64 seeded by the case's name, with row
    ``r < len(slot)`` of each slot set to its ``r``-th edge word for every combination."""
    rng = np.random.Generator(np.random.PCG64(zlib.crc32(case_id.encode())))
    matrix = np.asarray(rng.bit_generator.random_raw((len(slots), rows * combos)), np.uint64)
    for s, edge in enumerate(slots):
        for row, word in enumerate(edge):
            matrix[s, row * combos : (row + 1) * combos] = word
    return matrix


def _two_group_case(case_id: str, design: TwoGroupDesign, *, drawn: bool) -> dict[str, Any]:
    """A two-group case: 8 combinations of (truth, latent, group); with ``drawn`` the group
    words come first (edge words on either side of the group threshold pick each group),
    otherwise the groups are given and the words are answer words only."""
    spec = QuestionSpec(design)
    (answer_edges,) = _slot_words(spec)
    combos = 8
    rows = len(answer_edges) + _RANDOM_ROWS
    n = rows * combos
    combo = np.arange(n) % combos
    truth, latent, group = combo % 2, (combo // 2) % 2, 1 + (combo // 4) % 2
    name = latent_input(design).name
    types = design.types(truth, **{name: latent})
    fields: dict[str, Any] = {"truth": truth.tolist(), "latent": latent.tolist()}
    fields["type"] = types.tolist()
    if drawn:
        t = int(spec.thresholds["group"])  # strictly inside (0, 2**53): 0 < group_share < 1
        picks = {1: [0, (t << 11) - 1], 2: [_TOP, t << 11]}  # words that give each group
        matrix = _words(case_id, [[], answer_edges], combos, rows)
        for row in range(len(answer_edges)):
            for c in range(combos):
                matrix[0, row * combos + c] = picks[int(group[c])][row % 2]
        source = ArrayWords(matrix.reshape(-1))  # n group words, then n answer words
        reports = design.randomize(types, rng=source)
    else:
        matrix = _words(case_id, [answer_edges], combos, rows)
        fields["group"] = group.tolist()
        source = ArrayWords(matrix.reshape(-1))
        reports = design.randomize(types, group=group, rng=source)
    return _finish(case_id, spec, fields, matrix, source, reports)


def _finish(
    case_id: str,
    spec: QuestionSpec,
    fields: dict[str, Any],
    matrix: npt.NDArray[np.uint64],
    source: ArrayWords,
    reports: npt.ArrayLike,
) -> dict[str, Any]:
    if source.remaining:  # pragma: no cover - words_per_report is wrong for this design
        raise AssertionError(f"{case_id}: {source.remaining} words left unused")
    return {
        "id": case_id,
        "spec": spec.to_dict(),
        **fields,
        "words": [str(int(w)) for w in matrix.reshape(-1)],
        "reports": [int(r) for r in np.asarray(reports).ravel()],
    }


def _cases(case_id: str, design: Design) -> list[dict[str, Any]]:
    if design.n_groups == 2:
        two = cast(TwoGroupDesign, design)
        return [
            _two_group_case(case_id, two, drawn=True),
            _two_group_case(f"{case_id}-group-given", two, drawn=False),
        ]
    return [_case(case_id, design)]


def randomizer_vectors() -> dict[str, Any]:
    """The test vectors of every registered design (schema ``deniable.vectors/1``).

    ``{"schema", "about", "cases"}``; each case has ``id``, ``spec`` (a question spec),
    ``truth`` (one true answer per report), for two-group designs ``latent`` (0 or 1, the
    spec's ``latent.name`` indicator), ``type`` (the respondent type,
    ``latent.type[truth][latent]``) and, in the ``-group-given`` cases only, ``group`` (1
    or 2, given to the randomizer: no group words), ``words`` (decimal strings: a 64-bit
    word does not fit a JSON number) and ``reports``.  A two-group design has two cases per
    parameterisation: the group drawn from the words (the primary one: ``n`` group words,
    then ``n`` answer words) and the group given.  Deterministic: the same ``deniable``
    gives the same vectors.
    """
    cases = [
        case
        for name, makers in VECTOR_DESIGNS.items()
        for i, make in enumerate(makers)
        for case in _cases(f"{name}-{i}", make())
    ]
    return {
        "schema": VECTORS_SCHEMA,
        "about": (
            "Randomizer test vectors of deniable: the words of each case, given in order to "
            "the algorithm its spec names with each truth (two-group designs: each "
            "respondent type, and the group where it is given), give its reports. Schema "
            "and algorithms: docs/specs.md."
        ),
        "cases": cases,
    }


def dump_vectors(vectors: dict[str, Any]) -> str:
    """The vectors as the text of ``tests/vectors/randomizers.json``: one case a line."""
    head = {k: x for k, x in vectors.items() if k != "cases"}
    lines = ["{"]
    lines += [f"  {json.dumps(k)}: {json.dumps(x, ensure_ascii=False)}," for k, x in head.items()]
    lines.append('  "cases": [')
    cases = [
        "    " + json.dumps(c, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        for c in vectors["cases"]
    ]
    lines.append(",\n".join(cases))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"
