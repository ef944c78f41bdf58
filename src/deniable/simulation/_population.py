"""The simulated population of the two-group designs, shared by
:func:`~deniable.simulation.simulate` and :func:`~deniable.simulation.simulation_study`:
the validated two-group options, the group sizes, each design's latent quantity, the
respondent-type probabilities, the groups' "yes" probabilities and the estimands.

The model and the table of estimands are in the docstring of :mod:`deniable.simulation`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Design, TwoGroupDesign
from deniable.exceptions import ParameterError

__all__ = [
    "TWO_GROUP_OPTIONS",
    "Latent",
    "TwoGroupSetting",
    "group_sizes",
    "group_yes_probabilities",
    "latent_of",
    "population_targets",
    "realized_parameters",
    "two_group_options",
]

#: Largest number of respondents :func:`~deniable.simulation.simulate` draws (each one's
#: answer and report is held in memory: about 16 bytes each, 160 MB and under a second at
#: the limit).
MAX_RESPONDENTS = 10**7

#: Keywords of :func:`~deniable.simulation.simulate` and
#: :func:`~deniable.simulation.simulation_study` that only the two-group designs take.
TWO_GROUP_OPTIONS = ("group_share", "unrelated_prevalence", "cheating", "honesty")

FloatArray = npt.NDArray[np.float64]


class Latent(NamedTuple):
    """The latent quantity of a two-group design: its keyword in
    :func:`~deniable.simulation.simulate`, its keyword in the design's ``randomize``, its
    default (``None``: required) and meaning."""

    option: str
    keyword: str
    default: float | None
    meaning: str


#: Each latent quantity, by the keyword of the design's ``types`` (``design.latent[0]``).
_LATENTS = {
    "unrelated": Latent(
        "unrelated_prevalence", "unrelated", None,
        "the share who would say yes to the unrelated question",
    ),
    "cheater": Latent(
        "cheating", "cheater", 0.0, "the share of respondents who cheat and always say no"
    ),
    "honest": Latent("honesty", "honest", 1.0, "carriers' probability of answering honestly"),
}  # fmt: skip


def _latent_keyword(design: Design) -> str:
    latent = getattr(design, "latent", None)
    return str(latent[0]) if latent else ""


def latent_of(design: TwoGroupDesign) -> Latent:
    """The latent quantity that :func:`~deniable.simulation.simulate` draws for ``design``
    (from its latent keyword: ``unrelated``, ``cheater`` or ``honest``)."""
    found = _LATENTS.get(_latent_keyword(design))
    if found is None:  # pragma: no cover - every registered two-group design has one
        raise ParameterError(
            f"simulation does not know the latent quantity of design {design.name!r}."
        )
    return found


class TwoGroupSetting(NamedTuple):
    """Validated two-group options: the latent quantity and its value, the share of
    respondents in group 1, and the share whose reports are set to "no" after randomizing
    (0 for the cheater detection models, whose non-compliers are the cheaters)."""

    latent: Latent
    value: float
    group_share: float
    zeroed: float


def _is_cheater_design(design: Design) -> bool:
    return _latent_keyword(design) == "cheater"


def two_group_options(
    design: Design, options: Mapping[str, Any], non_compliance: float
) -> TwoGroupSetting | None:
    """Check the two-group keywords (``None`` = not given) against ``design``.

    One-group designs take none of them; a two-group design takes ``group_share`` (default:
    the design's own ``group_share``, 1/2 unless set; in (0, 1)) and its own latent keyword
    (see ``latent_of``).
    """
    given = {k: x for k, x in options.items() if x is not None}
    if design.n_groups != 2:
        if given:
            first = next(iter(given))
            raise ParameterError(
                f"`{first}` applies to the two-group designs only ({', '.join(TWO_GROUP_OPTIONS)}"
                f"); design {design.name!r} has one group."
            )
        return None
    design = cast(TwoGroupDesign, design)
    latent = latent_of(design)
    for key in given:
        if key not in ("group_share", latent.option):
            raise ParameterError(
                f"`{key}` does not apply to design {design.name!r}: its latent quantity is "
                f"`{latent.option}` ({latent.meaning})."
            )
    share = v.probability(
        "group_share", given.get("group_share", design.group_share), low_open=True, high_open=True
    )
    value = given.get(latent.option)
    zeroed = non_compliance
    if _is_cheater_design(design):
        if value is not None and non_compliance > 0:
            raise ParameterError(
                f"for design {design.name!r} `non_compliance` and `cheating` are the same thing "
                "(respondents who say no whatever the randomizer says): give one, got "
                f"cheating={value!r} and non_compliance={non_compliance!r}."
            )
        if value is None and non_compliance > 0:
            value = non_compliance
        zeroed = 0.0
    if value is None:
        if latent.default is None:
            raise ParameterError(
                f"design {design.name!r} needs `{latent.option}` ({latent.meaning}), e.g. "
                f"{latent.option}=0.5."
            )
        value = latent.default
    return TwoGroupSetting(latent, v.probability(latent.option, value), share, zeroed)


def group_sizes(n: int, group_share: float) -> tuple[int, int]:
    """``(n1, n2)`` with ``n1 = floor(n * group_share + 1/2)``; both must be at least 1."""
    n1 = math.floor(n * group_share + 0.5)
    if not 1 <= n1 <= n - 1:
        raise ParameterError(
            f"`group_share` * `n` must leave at least one respondent in each group, got "
            f"n1 = floor({group_share:g} * {n} + 1/2) = {n1} of n = {n}."
        )
    return n1, n - n1


def _types(design: TwoGroupDesign, pi: float, x: float) -> list[float]:
    """P(type) in the order of ``design.respondent_types`` (latent independent of truth)."""
    if _latent_keyword(design) == "unrelated":
        return [pi * x, pi * (1 - x), (1 - pi) * x, (1 - pi) * (1 - x)]
    if _is_cheater_design(design):
        return [pi * (1 - x), (1 - pi) * (1 - x), pi * x, (1 - pi) * x]
    return [pi * x, pi * (1 - x), 1 - pi]  # SLD: honest carrier, lying carrier, non-carrier


def population_targets(design: TwoGroupDesign, pi: float, x: float) -> dict[str, float]:
    """The population value of every estimated parameter (the table of estimands in
    :mod:`deniable.simulation`)."""
    if _latent_keyword(design) == "unrelated":
        return {"prevalence": pi, "unrelated_prevalence": x}
    if _is_cheater_design(design):
        return {"prevalence": pi * (1 - x), "beta": (1 - pi) * (1 - x), "cheating": x}
    return {"prevalence": pi, "honesty": x}


def group_yes_probabilities(
    design: TwoGroupDesign, pi: float, setting: TwoGroupSetting
) -> FloatArray:
    """``(lambda_1, lambda_2)``: ``(1 - s) sum_type P(type) P(yes | type, g)``."""
    types = np.array(_types(design, pi, setting.value))
    lam = [float(design.group_channel(g)[1] @ types) for g in (1, 2)]
    out: FloatArray = (1 - setting.zeroed) * np.clip(np.array(lam), 0.0, 1.0)
    return out


def realized_parameters(
    design: TwoGroupDesign, truth: npt.NDArray[Any], latent: npt.NDArray[Any]
) -> dict[str, float]:
    """The estimands computed on one simulated population (not the population values):
    e.g. the share of honest carriers among these respondents, or the share of these
    carriers who answer honestly (NaN without carriers)."""
    t, x = truth.astype(bool), latent.astype(bool)
    n = t.size
    if _latent_keyword(design) == "unrelated":
        return {"prevalence": int(t.sum()) / n, "unrelated_prevalence": int(x.sum()) / n}
    if _is_cheater_design(design):
        return {"prevalence": int((t & ~x).sum()) / n, "beta": int((~t & ~x).sum()) / n,
                "cheating": int(x.sum()) / n}  # fmt: skip
    carriers = int(t.sum())
    honest = int((t & x).sum()) / carriers if carriers else math.nan
    return {"prevalence": carriers / n, "honesty": honest}
