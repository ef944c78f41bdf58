"""A stream's answer settings (the stream spec's optional ``answers``): what the server lists
for a heavy-hitter (PEM, TreeHist, SFP, RAPPOR n-grams), range or Square Wave stream, read
strictly and checked at stream creation.

=====================  ===================================  ===============================
stream (oracle)        ``answers`` fields                   when not given
=====================  ===================================  ===============================
PEM, TreeHist          ``top_k``: integer in [1, 4096];     16 and 0.05
                       ``alpha``: in (0, 1), or null (the
                       top-k rule alone)
SFP                    ``alpha``: in (0, 1) (each stage's   0.01 and 1024 (SFP's own)
                       family-wise level; SFP has no top-k
                       rule); ``max_candidates``: integer
                       in [1, 2^20] (the most strings a
                       puzzle value assembles)
RAPPOR n-grams         ``alpha``: in (0, 1) (the n-grams'     0.05, 0.02 and 10,000
                       and the strings' family-wise         (``discover``'s)
                       level); ``edge_threshold``: in
                       (0, 1) (the joint frequency that
                       joins two n-grams);
                       ``max_candidates``: integer in
                       [1, 10^6] (the most chains of
                       joined n-grams: more, and the day
                       is listed undecided)
HierarchicalHistogram, ``quantiles``: up to 32 distinct     the quartiles and the domain's
HaarHRR                numbers in (0, 1); ``ranges``: up    quarters (``quarters(D)``)
                       to 32 pairs ``[a, b]`` of integers,
                       ``0 <= a <= b <= D - 1``
Square Wave            ``quantiles`` as above; ``ranges``:  the quartiles, no ranges
                       pairs ``[a, b]`` of numbers,
                       ``lower <= a < b <= upper``
=====================  ===================================  ===============================

**Answer side only.**  None of them reaches a device or changes a report or its cost: the
device spec (``oracle``) and ``report_epsilon`` are the same with or without them.  They are
still part of the stored spec, and a stored spec never changes
(:func:`deniable.service.routes.streams.store_spec` refuses another one, naming
``answers``): a page's answers always mean the settings shown beside them.  The confidence
level is not a stream setting: each request chooses it (``level``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deniable.exceptions import DataError
from deniable.oracles import (
    PEM,
    SFP,
    HaarHRR,
    HierarchicalHistogram,
    RapporNgram,
    SquareWave,
    TreeHist,
)

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_EDGE_THRESHOLD",
    "DEFAULT_NGRAM_MAX_CANDIDATES",
    "DEFAULT_SFP_ALPHA",
    "DEFAULT_SFP_MAX_CANDIDATES",
    "DEFAULT_TOP_K",
    "MAX_ANSWERS",
    "QUARTILES",
    "AnswerSettings",
    "answer_settings",
    "quarters",
]

#: The quantiles listed unless the spec sets ``answers.quantiles``.
QUARTILES = (0.25, 0.5, 0.75)
#: A heavy-hitter stream's ``top_k`` and ``alpha`` unless set (the protocols' defaults).
DEFAULT_TOP_K, DEFAULT_ALPHA = 16, 0.05
#: An SFP stream's ``alpha`` unless set (the protocol's default, :class:`deniable.oracles.SFP`).
DEFAULT_SFP_ALPHA: float = SFP.alpha
#: An SFP stream's ``max_candidates`` unless set (the protocol's default).
DEFAULT_SFP_MAX_CANDIDATES: int = SFP.max_candidates
#: A RAPPOR n-gram stream's ``edge_threshold`` unless set (:meth:`RapporNgram.discover`'s);
#: its ``alpha`` unless set is :data:`DEFAULT_ALPHA`, the protocol's too.
DEFAULT_EDGE_THRESHOLD = 0.02
#: A RAPPOR n-gram stream's ``max_candidates`` unless set (:meth:`RapporNgram.discover`'s).
DEFAULT_NGRAM_MAX_CANDIDATES = 10_000
#: The most quantiles, and the most ranges, one stream may list.
MAX_ANSWERS = 32
_MAX_TOP_K = 4096  # the protocols' bound on top_k
#: The library's bound on ``max_candidates`` (:class:`SFP`'s field, ``RapporNgram.discover``'s).
_MAX_CANDIDATES = {"sfp": 1 << 20, "ngram": 10**6}
_FIELDS = {"heavy": ("alpha", "top_k"), "sfp": ("alpha", "max_candidates"),
           "range": ("quantiles", "ranges"), "square-wave": ("quantiles", "ranges"),
           "ngram": ("alpha", "edge_threshold", "max_candidates")}  # fmt: skip
_A_KIND = {"sfp": "an SFP", "ngram": "a RAPPOR n-gram"}
_NO_TOP_K = {"sfp": "SFP", "ngram": "RAPPOR n-gram discovery"}


def quarters(domain: int) -> list[tuple[int, int]]:
    """The ranges a range stream lists unless set: ``min(4, D)`` consecutive ranges covering
    ``0 .. D - 1``, range ``i`` starting at ``floor(i D / 4)``.

    >>> quarters(16), quarters(9), quarters(2)
    ([(0, 3), (4, 7), (8, 11), (12, 15)], [(0, 1), (2, 3), (4, 5), (6, 8)], [(0, 0), (1, 1)])
    """
    parts = min(4, domain)
    starts = [i * domain // parts for i in range(parts)] + [domain]
    return [(starts[i], starts[i + 1] - 1) for i in range(parts)]


@dataclass(frozen=True)
class AnswerSettings:
    """The answer settings of a stream of kind ``"heavy"``, ``"sfp"``, ``"ngram"``,
    ``"range"`` or ``"square-wave"``, each field resolved (the spec's value or the
    default); ``declared`` names the fields the spec gave (:meth:`to_dict` writes those
    only, so that a spec without ``answers`` keeps its stored text)."""

    kind: str
    top_k: int = DEFAULT_TOP_K
    alpha: float | None = DEFAULT_ALPHA
    quantiles: tuple[float, ...] = QUARTILES
    ranges: tuple[tuple[float, float], ...] = ()
    edge_threshold: float = DEFAULT_EDGE_THRESHOLD
    max_candidates: int = DEFAULT_NGRAM_MAX_CANDIDATES
    declared: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The declared fields, as the spec carries them."""
        return {k: v for k, v in self.effective().items() if k in self.declared}

    def effective(self) -> dict[str, Any]:
        """Every field of the stream's kind, resolved (what its answers use)."""
        if self.kind == "heavy":
            return {"top_k": self.top_k, "alpha": self.alpha}
        if self.kind == "sfp":
            return {"alpha": self.alpha, "max_candidates": self.max_candidates}
        if self.kind == "ngram":
            return {
                "alpha": self.alpha,
                "edge_threshold": self.edge_threshold,
                "max_candidates": self.max_candidates,
            }
        return {"quantiles": list(self.quantiles), "ranges": [list(r) for r in self.ranges]}

    def describe(self) -> str:
        """One line for the page: each field and whether it is the default.

        >>> AnswerSettings("heavy", top_k=8, declared=("top_k",)).describe()
        'top_k 8, alpha 0.05 (default)'
        """
        parts = []
        for name, value in self.effective().items():
            if name == "ranges":
                text = ", ".join(f"[{a:g}, {b:g}]" for a, b in self.ranges) or "none"
            elif name == "quantiles":
                text = ", ".join(f"{q:g}" for q in self.quantiles) or "none"
            elif isinstance(value, int):  # top_k, max_candidates: whole (1048576, not 1.05e+06)
                text = str(value)
            else:
                text = "null (top-k only)" if value is None else f"{value:g}"
            parts.append(f"{name} {text}" + ("" if name in self.declared else " (default)"))
        return ", ".join(parts)


def _kind(oracle: Any) -> str | None:
    if isinstance(oracle, PEM | TreeHist):
        return "heavy"
    if isinstance(oracle, SFP):
        return "sfp"
    if isinstance(oracle, RapporNgram):
        return "ngram"
    if isinstance(oracle, HierarchicalHistogram | HaarHRR):
        return "range"
    return "square-wave" if isinstance(oracle, SquareWave) else None


def _real(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    x = float(value)
    return x if math.isfinite(x) else None


def _top_k(where: str, value: Any) -> int:
    if type(value) is not int or not 1 <= value <= _MAX_TOP_K:
        raise DataError(f"{where}.top_k` must be an integer in [1, {_MAX_TOP_K}], got {value!r}.")
    return value


def _alpha(where: str, value: Any, kind: str) -> float | None:
    x = _real(value)
    if kind in ("sfp", "ngram") and (x is None or not 0 < x < 1):  # no top-k: a level needed
        raise DataError(
            f"{where}.alpha` must be in (0, 1) ({_NO_TOP_K[kind]} has no top-k rule), "
            f"got {value!r}."
        )
    if value is not None and (x is None or not 0 < x < 1):
        raise DataError(
            f"{where}.alpha` must be in (0, 1), or null for the top-k rule alone, got {value!r}."
        )
    return x


def _max_candidates(where: str, value: Any, kind: str) -> int:
    bound = _MAX_CANDIDATES[kind]
    if type(value) is not int or not 1 <= value <= bound:
        what = "a puzzle value assembles" if kind == "sfp" else "of joined n-grams"
        raise DataError(
            f"{where}.max_candidates` must be an integer in [1, {bound}] (the most candidate "
            f"strings {what}), got {value!r}."
        )
    return value


def _edge(where: str, value: Any) -> float:
    x = _real(value)
    if x is None or not 0 < x < 1:
        raise DataError(
            f"{where}.edge_threshold` must be in (0, 1) (the joint frequency that joins two "
            f"n-grams), got {value!r}."
        )
    return x


def _quantiles(where: str, value: Any) -> tuple[float, ...]:
    rule = f"{where}.quantiles` must be a list of at most {MAX_ANSWERS} distinct numbers in (0, 1)"
    if not isinstance(value, list) or len(value) > MAX_ANSWERS:
        raise DataError(f"{rule}, got {value!r}.")
    out = []
    for i, q in enumerate(value):
        x = _real(q)
        if x is None or not 0 < x < 1 or x in out:
            raise DataError(f"{rule}, got {q!r} at index {i}.")
        out.append(x)
    return tuple(out)


def _ranges(where: str, value: Any, oracle: Any) -> tuple[tuple[float, float], ...]:
    if isinstance(oracle, SquareWave):
        lo, hi = oracle.lower, oracle.upper
        what = f"pairs [a, b] of numbers with {lo:g} <= a < b <= {hi:g} (the stream's bounds)"
    else:
        lo, hi = 0, oracle.domain - 1
        what = f"pairs [a, b] of integers with 0 <= a <= b <= {hi} (the stream's domain)"
    rule = f"{where}.ranges` must be a list of at most {MAX_ANSWERS} {what}"
    if not isinstance(value, list) or len(value) > MAX_ANSWERS:
        raise DataError(f"{rule}, got {value!r}.")
    out: list[tuple[float, float]] = []
    for i, pair in enumerate(value):
        a: Any = pair[0] if isinstance(pair, list) and len(pair) == 2 else None
        b: Any = pair[1] if a is not None else None
        x, y = _real(a), _real(b)
        if isinstance(oracle, SquareWave):
            ok = x is not None and y is not None and lo <= x < y <= hi
        else:  # integers, kept as such (a range's label: "share of [0, 3]")
            ok = type(a) is int and type(b) is int and lo <= a <= b <= hi
        if not ok or x is None or y is None:
            raise DataError(f"{rule}, got {pair!r} at index {i}.")
        out.append((x, y) if isinstance(oracle, SquareWave) else (a, b))
    return tuple(out)


def answer_settings(
    data: Any, oracle: Any, where: str, *, given: bool = True
) -> AnswerSettings | None:
    """The :class:`AnswerSettings` of ``oracle``'s stream from the spec's ``answers``
    (``data``, a mapping; when ``given`` is False the spec has none: every field its
    default); None for a stream of another oracle (which refuses ``answers``).  ``where``
    names the spec and field in a :class:`~deniable.exceptions.DataError` (module
    docstring's table: each field's allowed values, and what was given)."""
    kind = _kind(oracle)
    if kind is None:
        if given:
            raise DataError(
                f"{where} are for heavy-hitter (PEM, TreeHist, SFP, RAPPOR n-gram), range "
                f"(HierarchicalHistogram, HaarHRR) and Square Wave streams only, got them for a "
                f"stream of {oracle.name}."
            )
        return None
    defaults: dict[str, Any] = {"kind": kind}
    if kind == "sfp":  # the protocol's, as the device spec has none
        defaults.update(alpha=DEFAULT_SFP_ALPHA, max_candidates=DEFAULT_SFP_MAX_CANDIDATES)
    if kind == "range":
        defaults["ranges"] = tuple(quarters(oracle.domain))
    if not given:
        return AnswerSettings(**defaults)
    fields = _FIELDS[kind]
    if not isinstance(data, Mapping):
        raise DataError(
            f"{where} must be a mapping of {', '.join(fields)}, got {type(data).__name__}."
        )
    unknown = sorted(set(map(str, data)) - set(fields))
    if unknown:
        a_kind = _A_KIND.get(kind, f"a {kind}")
        raise DataError(
            f"{where}: unknown field `{unknown[0]}` ({a_kind} stream's fields: "
            f"{', '.join(fields)})."
        )
    at = where.removesuffix("`")
    chosen: dict[str, Any] = {}
    if "top_k" in data:
        chosen["top_k"] = _top_k(at, data["top_k"])
    if "alpha" in data:
        chosen["alpha"] = _alpha(at, data["alpha"], kind)
    if "edge_threshold" in data:
        chosen["edge_threshold"] = _edge(at, data["edge_threshold"])
    if "max_candidates" in data:
        chosen["max_candidates"] = _max_candidates(at, data["max_candidates"], kind)
    if "quantiles" in data:
        chosen["quantiles"] = _quantiles(at, data["quantiles"])
    if "ranges" in data:
        chosen["ranges"] = _ranges(at, data["ranges"], oracle)
    return AnswerSettings(**{**defaults, **chosen}, declared=tuple(sorted(chosen)))
