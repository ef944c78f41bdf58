"""The randomizer algorithms a question spec can name, and what each needs from a design:
its integer thresholds, the number of 64-bit words per report, and for the two-group
designs the latent input and the map from (truth, latent) to respondent type.

``docs/specs.md`` states each algorithm exactly; ``tests/test_specs.py`` reimplements them
from a spec alone and checks the reimplementation against every design's own randomizer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deniable.designs._base import BinaryDesign, Design
from deniable.designs._categorical import Categorical
from deniable.designs._kuk import Kuk
from deniable.designs._registry import DESIGNS, TWO_GROUP_DESIGNS
from deniable.designs._twogroup import TwoGroupDesign
from deniable.exceptions import ParameterError

__all__ = [
    "ALGORITHMS",
    "SPEC_SCHEMA",
    "LatentInput",
    "json_ints",
    "latent_input",
    "read_ints",
    "spec_algorithm",
]

#: The schema identifier written into every spec; a reader refuses a later version.
SPEC_SCHEMA = "deniable.question/1"

#: The randomizer algorithms, by the name a spec gives (``docs/specs.md`` states each).
ALGORITHMS = ("bernoulli-count/1", "keep-or-forced/1", "two-group/1")

#: Integers above this are written as strings (a JSON number may lose them in JavaScript).
_JSON_INT_MAX = 1 << 53


@dataclass(frozen=True)
class LatentInput:
    """The second input of a two-group randomizer besides the true answer and the group.

    ``name`` is the randomizer's keyword (``unrelated``, ``cheater`` or ``honest``), 0 or
    1 per respondent; ``default`` its value when not given (``None``: it must be given).
    The respondent's type, the column of the group's threshold table, is
    ``type[truth][latent]``; ``types`` labels the columns.
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


#: How each two-group randomizer maps (truth, latent) to a respondent type (the column of
#: ``thresholds(group)``); the conformance test of the spec checks these against each
#: design's own ``randomize``.
_LATENT: dict[str, tuple[str, int | None, tuple[tuple[int, int], tuple[int, int]]]] = {
    # type = 2 (1 - truth) + (1 - unrelated)
    "unrelated-unknown": ("unrelated", None, ((3, 2), (1, 0))),
    # type = 2 cheater + (1 - truth)
    "cdm": ("cheater", 0, ((1, 3), (0, 2))),
    "cdm-symmetric": ("cheater", 0, ((1, 3), (0, 2))),
    # type = truth (1 - honest) + 2 (1 - truth)
    "sld": ("honest", 1, ((2, 2), (1, 0))),
}


def latent_input(design: TwoGroupDesign) -> LatentInput:
    """The latent input of a two-group design's randomizer (see :class:`LatentInput`)."""
    if design.name not in _LATENT:
        raise ParameterError(
            f"two-group mechanism {design.name!r} has no question-spec algorithm (known: "
            f"{', '.join(_LATENT)})."
        )
    name, default, table = _LATENT[design.name]
    return LatentInput(name, default, table, tuple(t.label for t in design.respondent_types))


def spec_algorithm(design: Design) -> tuple[str, int, dict[str, Any]]:
    """``(algorithm, words per report, thresholds)`` of a registered design."""
    registry: Mapping[str, type[Design]] = (
        TWO_GROUP_DESIGNS if isinstance(design, TwoGroupDesign) else DESIGNS
    )
    if registry.get(design.name) is not type(design):
        raise ParameterError(
            f"`design` must be a registered design (deniable.designs.DESIGNS or "
            f"TWO_GROUP_DESIGNS) to have a question spec, got {type(design).__name__} "
            f"named {design.name!r}."
        )
    if isinstance(design, TwoGroupDesign):
        latent_input(design)  # refuses a two-group design without a known latent mapping
        table = [list(design.thresholds(1)), list(design.thresholds(2))]
        return "two-group/1", 1, {"yes": table}
    if isinstance(design, Categorical):
        keep, cumulative = design.thresholds()
        return "keep-or-forced/1", 2, {"keep": keep, "forced": cumulative}
    if isinstance(design, BinaryDesign):
        draws = design.draws if isinstance(design, Kuk) else 1
        return "bernoulli-count/1", draws, {"yes": list(design.thresholds())}
    raise ParameterError(  # pragma: no cover - every registered design is one of the above
        f"mechanism {design.name!r} has no question-spec algorithm."
    )


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
    """The inverse of :func:`json_ints` for a spec read from JSON (digit strings -> int)."""
    if isinstance(value, list | tuple):
        return [read_ints(x) for x in value]
    if isinstance(value, Mapping):
        return {k: read_ints(x) for k, x in value.items()}
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value
