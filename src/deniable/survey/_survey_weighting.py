"""The ``weighting`` field of a survey file: the population margins its raking variables are
raked to (and optional trimming bounds), for the survey service's design-based estimates.

The raking variables are design attributes the invitations carry (``docs/service.md``,
"Design attributes of invitations"); the service rakes the respondents' design weights (or
1) to these margins with :func:`deniable.sampling.rake_weights` (Deming & Stephan 1940)
and trims them with :func:`deniable.sampling.trim_weights`.  Each variable's targets are
shares (every one at most 1, summing to 1 within 1e-9) or population counts (then every
variable adds to the same total); every refusal names the field
(``weighting.margins.region.north``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deniable.exceptions import ParameterError

__all__ = ["MAX_LEVEL_LENGTH", "MAX_MARGIN_VARIABLES", "SurveyWeighting", "survey_weighting"]

#: The most raking variables a survey may rake to (as many as an invitation may carry).
MAX_MARGIN_VARIABLES = 8
#: The longest level of a raking variable (as long as an invitation's attribute value).
MAX_LEVEL_LENGTH = 64
#: Names that have a role of their own in the design, not raking variables.
DESIGN_NAMES = ("stratum", "psu", "weight")
_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,31}")
_SHARE_SUM = 1e-9  # shares must sum to 1 within this
_COUNT_TOTALS = 1e-6  # population counts of every variable must agree within this (relative)


def _where(path: str, message: str) -> ParameterError:
    return ParameterError(f"survey field `{path}` {message}")


@dataclass(frozen=True)
class SurveyWeighting:
    """The population margins of a survey's raking variables: ``margins`` as
    ``((variable, ((level, target), ...)), ...)``, the variables in alphabetical order (the
    order the service rakes them in, whatever order the file gives), ``kind``
    (``"shares"`` or ``"counts"``) and the optional ``trim`` bounds ``(lower, upper)`` on
    the raked weights (:func:`deniable.sampling.trim_weights`)."""

    margins: tuple[tuple[str, tuple[tuple[str, float], ...]], ...]
    kind: str
    trim: tuple[float, float] | None = None

    @property
    def variables(self) -> tuple[str, ...]:
        """The raking variables, in alphabetical order."""
        return tuple(name for name, _ in self.margins)

    @property
    def targets(self) -> dict[str, dict[str, float]]:
        """``{variable: {level: target}}``."""
        return {name: dict(levels) for name, levels in self.margins}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"margins": self.targets}
        if self.trim is not None:
            out["trim"] = list(self.trim)
        return out


def survey_weighting(
    data: Any, *, questions: Collection[str] = (), respondents: str = "invitation"
) -> SurveyWeighting | None:
    """The checked ``weighting`` field of a survey file (``None`` when absent).

    ``questions``: the survey's question ids (a raking variable needs a name of its own: it
    names a column of the export); ``respondents``: how they come (raking variables come
    with invitations, so an anonymous survey has none).

    >>> w = survey_weighting({"margins": {"region": {"north": 0.4, "south": 0.6}}})
    >>> w.variables, w.kind, w.trim
    (('region',), 'shares', None)
    >>> survey_weighting({"margins": {"region": {"north": 0.4, "south": 0.5}}})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    deniable.exceptions.ParameterError: survey field `weighting.margins.region` must give ...
    """
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise _where("weighting", "must be a mapping with `margins` (and optionally `trim`), "
                     f"got {type(data).__name__}.")  # fmt: skip
    extra = sorted(set(map(str, data)) - {"margins", "trim"})
    if extra:
        raise _where("weighting", f"has unknown field(s) {', '.join(map(repr, extra))} "
                     "(allowed: margins, trim).")  # fmt: skip
    if "margins" not in data:
        raise _where("weighting", "lacks the required field 'margins'.")
    if respondents != "invitation":
        raise _where("weighting", "needs `respondents: invitation`: the raking variables "
                     f"come with the invitations, got respondents {respondents!r}.")  # fmt: skip
    raw = data["margins"]
    if not isinstance(raw, Mapping) or not raw:
        raise _where("weighting.margins", "must be a non-empty mapping variable -> {level: "
                     f"share or population count}}, got {raw!r}.")  # fmt: skip
    if len(raw) > MAX_MARGIN_VARIABLES:
        raise _where("weighting.margins", f"must name at most {MAX_MARGIN_VARIABLES} raking "
                     f"variables, got {len(raw)}.")  # fmt: skip
    margins = tuple(
        sorted(
            (_variable(name, questions), _levels(f"weighting.margins.{name}", levels))
            for name, levels in raw.items()
        )
    )
    kind = _kind(margins)
    trim = _trim(data.get("trim"))
    return SurveyWeighting(margins, kind, trim)


def _variable(name: Any, questions: Collection[str]) -> str:
    path = f"weighting.margins.{name}"
    if not isinstance(name, str) or _NAME_RE.fullmatch(name) is None:
        raise _where(path, "is not a raking variable: a raking variable is named by 1 to 32 "
                     "lower-case letters, digits and _ starting with a letter (as the "
                     f"invitations declare it), got {name!r}.")  # fmt: skip
    if name in DESIGN_NAMES:
        raise _where(path, f"is not a raking variable: {name!r} is a design attribute of its "
                     f"own ({', '.join(DESIGN_NAMES)}); rake to the variables the invitations "
                     "declare.")  # fmt: skip
    if name in questions:
        raise _where(path, f"is not a raking variable: {name!r} is a question id of the "
                     "survey (a raking variable names an export column of its own).")  # fmt: skip
    return name


def _levels(path: str, raw: Any) -> tuple[tuple[str, float], ...]:
    if not isinstance(raw, Mapping) or not raw:
        raise _where(path, "must be a non-empty mapping level -> share or population count, "
                     f"got {raw!r}.")  # fmt: skip
    out: dict[str, float] = {}
    for key, value in raw.items():
        label = str(key) if isinstance(key, int) and not isinstance(key, bool) else key
        if not isinstance(label, str):
            raise _where(path, f"has the level {key!r}: a level must be a text.")
        text = label.strip()
        if not 1 <= len(text) <= MAX_LEVEL_LENGTH or not text.isprintable():
            raise _where(f"{path}.{text[:80]}", f"must be named by a printable text of 1 to "
                         f"{MAX_LEVEL_LENGTH} characters (as an invitation's attribute "
                         f"value), got {label[:80]!r} ({len(label)} characters).")  # fmt: skip
        if text in out:
            raise _where(f"{path}.{text}", "is given twice.")
        where = f"{path}.{text}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _where(where, f"must be a share or a population count (a number > 0), got "
                         f"{value!r}.")  # fmt: skip
        x = float(value)
        if not (math.isfinite(x) and x > 0):
            raise _where(where, "must be a share or a population count > 0 (a category of "
                         "zero share cannot be raked to: leave it out, or collapse it with a "
                         f"neighbour), got {value!r}.")  # fmt: skip
        out[text] = x
    return tuple(out.items())


def _kind(margins: tuple[tuple[str, tuple[tuple[str, float], ...]], ...]) -> str:
    sums = {name: math.fsum(x for _, x in levels) for name, levels in margins}
    kinds = {}
    for name, levels in margins:
        if all(x <= 1 for _, x in levels):
            if abs(sums[name] - 1) > _SHARE_SUM:
                raise _where(f"weighting.margins.{name}", "must give shares summing to 1 "
                             f"(within {_SHARE_SUM:g}) or population counts, got shares "
                             f"summing to {sums[name]:.12g}.")  # fmt: skip
            kinds[name] = "shares"
        else:
            kinds[name] = "counts"
    first = margins[0][0]
    for name, _ in margins[1:]:
        if kinds[name] != kinds[first]:
            raise _where(f"weighting.margins.{name}", f"gives {kinds[name]} but "
                         f"`weighting.margins.{first}` gives {kinds[first]}: give every "
                         "variable as shares or every one as population counts.")  # fmt: skip
        if kinds[name] == "counts" and abs(sums[name] / sums[first] - 1) > _COUNT_TOTALS:
            raise _where(f"weighting.margins.{name}", f"adds to {sums[name]:.12g} but "
                         f"`weighting.margins.{first}` to {sums[first]:.12g}: population "
                         "counts of every variable must add to the same total.")  # fmt: skip
    return kinds[first]


def _trim(raw: Any) -> tuple[float, float] | None:
    if raw is None:
        return None
    if (
        isinstance(raw, str)
        or not isinstance(raw, Sequence)
        or len(raw) != 2
        or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in raw)
    ):
        raise _where("weighting.trim", f"must be two numbers [lower, upper], got {raw!r}.")
    lower, upper = float(raw[0]), float(raw[1])
    if not (math.isfinite(lower) and math.isfinite(upper) and 0 <= lower < upper):
        raise _where("weighting.trim", "must be bounds 0 <= lower < upper (finite) on the "
                     f"raked weights, got {list(raw)!r}.")  # fmt: skip
    return (lower, upper)
