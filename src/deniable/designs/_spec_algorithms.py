"""The randomizer algorithms a question spec can name, and what each needs from a design:
its integer thresholds, the number of 64-bit words per report, and for the two-group
designs the map from (truth, latent indicator) to respondent type, read off the design's
own :meth:`~deniable.designs.TwoGroupDesign.types`.

``docs/specs.md`` states each algorithm exactly; ``tests/test_specs.py`` reimplements them
from a spec alone and checks the reimplementation against every design's own randomizer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from deniable.designs._base import Design
from deniable.designs._kuk import Kuk, KukMultiDraw, KukSingleDraw
from deniable.designs._registry import DESIGNS, TWO_GROUP_DESIGNS
from deniable.designs._twogroup import TWO_GROUP_ALGORITHM, TwoGroupDesign
from deniable.exceptions import ParameterError

__all__ = [
    "ALGORITHMS",
    "SPEC_SCHEMA",
    "TWO_GROUP_ALGORITHM",
    "LatentInput",
    "json_ints",
    "latent_input",
    "read_ints",
    "spec_algorithm",
]

#: The schema identifier written into every spec; a reader refuses a later version.
SPEC_SCHEMA = "deniable.question/1"

#: The randomizer algorithms, by the name a spec gives (``docs/specs.md`` states each).
ALGORITHMS = ("bernoulli-count/1", "keep-or-forced/1", "two-group/2")


#: Integers above this are written as strings (a JSON number may lose them in JavaScript).
_JSON_INT_MAX = 1 << 53
#: A decimal integer a spec may spell as a string (:func:`read_ints`): at most 40 digits.
_DIGITS = re.compile(r"-?[0-9]{1,40}")


@dataclass(frozen=True)
class LatentInput:
    """How a two-group randomizer's input, the respondent type, follows from the true
    answer and the latent indicator.

    ``name`` is the latent indicator's keyword of
    :meth:`~deniable.designs.TwoGroupDesign.types` (``unrelated``, ``cheater`` or
    ``honest``), 0 or 1 per respondent; ``default`` its value when not given (``None``: it
    must be given).  The respondent's type, an index into ``types`` (the labels of
    :attr:`~deniable.designs.TwoGroupDesign.respondent_types`) and the column of each
    group's threshold row, is ``type[truth][latent]``.
    """

    name: str
    default: int | None
    type: tuple[tuple[int, int], tuple[int, int]]
    types: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "default": self.default,
            "type": [list(row) for row in self.type],
            "types": list(self.types),
        }


def latent_input(design: TwoGroupDesign) -> LatentInput:
    """The respondent-type table of a two-group design (see :class:`LatentInput`): its
    :attr:`~deniable.designs.TwoGroupDesign.latent` keyword and default, and
    ``type[truth][latent]`` as :meth:`~deniable.designs.TwoGroupDesign.types` gives it."""
    name, default = design.latent
    truth = np.array([0, 0, 1, 1])
    kinds = [int(t) for t in design.types(truth, **{name: np.array([0, 1, 0, 1])})]
    table = ((kinds[0], kinds[1]), (kinds[2], kinds[3]))
    return LatentInput(name, default, table, tuple(t.label for t in design.respondent_types))


def spec_algorithm(design: Design) -> tuple[str, int, dict[str, Any]]:
    """``(algorithm, words per report, thresholds)`` of a registered design."""
    registry: Mapping[str, type[Design]] = TWO_GROUP_DESIGNS if design.n_groups == 2 else DESIGNS
    cls = registry.get(design.name)
    # Kuk(...) makes one of its two forms (one draw, several draws)
    forms = (cls, KukSingleDraw, KukMultiDraw) if cls is Kuk else (cls,)
    if cls is None or type(design) not in forms:
        raise ParameterError(
            f"`design` must be a registered design (deniable.designs.DESIGNS or "
            f"TWO_GROUP_DESIGNS) to have a question spec, got {type(design).__name__} "
            f"named {design.name!r}."
        )
    return design._spec_algorithm()  # what the design's randomizer is, said by the design


def json_ints(value: Any) -> Any:
    """Integers above 2**53 as decimal strings, recursively (JSON numbers lose them)."""
    if isinstance(value, list | tuple):
        return [json_ints(x) for x in value]
    if isinstance(value, Mapping):
        return {k: json_ints(x) for k, x in value.items()}
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _JSON_INT_MAX:
        return str(value)
    return value


def read_ints(value: Any) -> Any:
    """The inverse of :func:`json_ints` for a spec read from JSON (strings of at most 40
    ASCII digits -> int; anything else stays as it is, and the comparison names it)."""
    if isinstance(value, list | tuple):
        return [read_ints(x) for x in value]
    if isinstance(value, Mapping):
        return {k: read_ints(x) for k, x in value.items()}
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        return int(value)
    return value
