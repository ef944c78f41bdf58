"""Streams of strings: the ``candidates`` of a RAPPOR or count-mean-sketch stream's spec
(the strings each day's reports are decoded against, or whose frequencies the sketch
answers) and each day's estimate of them (:mod:`deniable.service.analysis.streams`).

RAPPOR's estimate is its decoding (:meth:`deniable.oracles.Rappor.decode`: a
:class:`~deniable.oracles.RapporEstimate`); a sketch's is its own
(:meth:`deniable.oracles.CountMeanSketch.estimate`: a
:class:`~deniable.oracles.SketchEstimate`, each candidate's unbiased frequency with its
standard errors and interval).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from deniable.designs import Tally
from deniable.exceptions import DataError, DeniableError
from deniable.oracles import CountMeanSketch, Rappor

__all__ = [
    "MAX_CANDIDATES",
    "MAX_DECODE_CELLS",
    "check_candidates",
    "of_strings",
    "strings_estimate",
]

#: The most candidate strings a RAPPOR or sketch stream's spec may carry (each day's
#: decoding fits one column per candidate; a sketch hashes each in every row).
MAX_CANDIDATES = 1000
#: The most cells ``cohorts m K`` of the decoder's design matrix a spec's candidates may
#: make (as ``deniable telemetry aggregate`` allows: float64, 256 MB).
MAX_DECODE_CELLS = 1 << 25


def of_strings(oracle: Any) -> bool:
    """Whether ``oracle`` reports strings (RAPPOR, CMS, HCMS): its stream may carry
    ``candidates``."""
    return isinstance(oracle, Rappor | CountMeanSketch)


def _sketch_candidates(where: str, sketch: CountMeanSketch, got: list[str]) -> None:
    """The sketch's own bounds: each string valid UTF-8 of 1 to ``max_bytes`` bytes, and
    no more strings than ``m**k`` (the signatures a sketch can tell apart)."""
    try:
        sketch.strings(got, "candidates")
    except DeniableError as exc:
        raise DataError(f"{where}: {exc}") from None
    if sketch.k * math.log2(sketch.m) < 62 and len(got) > sketch.m**sketch.k:
        raise DataError(
            f"{where}: {len(got)} candidates are more than m**k = {sketch.m**sketch.k} strings, "
            f"all this sketch (k = {sketch.k} rows of m = {sketch.m} columns) tells apart."
        )


def check_candidates(where: str, data: Mapping[str, Any], oracle: Any) -> tuple[str, ...] | None:
    """The spec's ``candidates`` (``where`` names the field in errors): for a stream of
    strings only, 1 to :data:`MAX_CANDIDATES` distinct non-empty strings, within the
    RAPPOR decoder's :data:`MAX_DECODE_CELLS` or the sketch's bounds; absent (None) by
    default."""
    if "candidates" not in data:
        return None
    if not of_strings(oracle):
        raise DataError(
            f"{where} is for a stream of strings only (RAPPOR, CMS, HCMS: the strings its "
            f"reports are decoded against); this stream's oracle is {oracle.name}."
        )
    got = data["candidates"]
    allowed = f"must be a list of 1 to {MAX_CANDIDATES} distinct non-empty strings"
    if not isinstance(got, list) or not 1 <= len(got) <= MAX_CANDIDATES:
        size = f"a list of {len(got)}" if isinstance(got, list) else type(got).__name__
        raise DataError(f"{where} {allowed}, got {size}.")
    bad = next((c for c in got if not isinstance(c, str) or not c), None)
    if bad is not None or any(not isinstance(c, str) for c in got):
        raise DataError(f"{where} {allowed}, got {bad!r}.")
    if len(set(got)) != len(got):
        twice = next(c for i, c in enumerate(got) if c in got[:i])
        raise DataError(f"{where}: the candidate {twice!r} is given twice.")
    if isinstance(oracle, CountMeanSketch):
        _sketch_candidates(where, oracle, got)
        return tuple(got)
    cells = oracle.cohorts * oracle.m * len(got)
    if cells > MAX_DECODE_CELLS:
        raise DataError(
            f"{where}: {len(got)} candidates make a decoder of cohorts x m x K = {cells} "
            f"cells, more than {MAX_DECODE_CELLS}; give at most "
            f"{MAX_DECODE_CELLS // (oracle.cohorts * oracle.m)}."
        )
    return tuple(got)


def strings_estimate(
    oracle: Any, tally: Tally, candidates: tuple[str, ...], level: float
) -> dict[str, Any]:
    """One day's estimate of ``candidates`` from the day's ``tally``, as the result's
    ``to_dict(level)``: RAPPOR's decoding, or the sketch's own estimate."""
    if isinstance(oracle, Rappor):
        return oracle.decode(tally, list(candidates)).to_dict(level)
    out: dict[str, Any] = oracle.estimate(tally, list(candidates)).to_dict(level)
    return out
