"""The cheater detection models (Clark & Desharnais 1998; Ostapczuk et al. 2009): honest
carriers, honest non-carriers, and cheaters who say "no" whatever the randomizer says."""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.designs._twogroup import FloatArray, RespondentType, TwoGroupDesign
from deniable.designs._twogroup_models import SIMPLEX, differ, prob
from deniable.exceptions import ParameterError

__all__ = ["CheaterDetection", "SymmetricCheaterDetection"]


# --------------------------------------------------------------------------- CDM


class _CheaterBase(TwoGroupDesign):
    """Shared parts of the two cheater detection models: honest carriers ``pi``, honest
    non-carriers ``beta``, cheaters ``gamma = 1 - pi - beta`` who always say "no"."""

    estimated: ClassVar[tuple[str, ...]] = ("prevalence", "beta", "cheating")
    nuisance: ClassVar[Mapping[str, float | None]] = {"cheating": 0.0}
    respondent_types: ClassVar[tuple[RespondentType, ...]] = (
        RespondentType("honest carrier", 1, True),
        RespondentType("honest non-carrier", 0, True),
        RespondentType("cheating carrier", 1, False),
        RespondentType("cheating non-carrier", 0, False),
    )
    vertices: ClassVar[tuple[tuple[float, float], ...]] = SIMPLEX
    latent: ClassVar[tuple[str, int | None]] = ("cheater", 0)

    def _outputs(self, phi: FloatArray) -> tuple[FloatArray, FloatArray]:
        pi, beta = float(phi[0]), float(phi[1])
        return np.array([pi, beta, 1 - pi - beta]), np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])

    def _affine_outputs(self) -> tuple[tuple[tuple[float, float], float] | None, ...]:
        return (((1.0, 0.0), 0.0), ((0.0, 1.0), 0.0), ((-1.0, -1.0), 1.0))

    def _truth(self, truth: Mapping[str, Any]) -> tuple[FloatArray, FloatArray]:
        t = self._truth_values(truth, ("prevalence", "cheating", "beta"))
        pi = t["prevalence"]
        if "beta" in t and "cheating" in t and abs(pi + t["beta"] + t["cheating"] - 1) > 1e-12:
            raise ParameterError(
                "the true `prevalence` + `beta` + `cheating` must be 1 (give `cheating` or "
                f"`beta` alone), got {pi} + {t['beta']} + {t['cheating']}."
            )
        other = "beta" if "beta" in t else "cheating"
        value = t["beta"] if "beta" in t else self._nuisance_value(t, "cheating")
        if pi + value > 1:
            raise ParameterError(
                f"`prevalence` + `{other}` must be at most 1, got {pi} + {value} = {pi + value}."
            )
        beta = value if other == "beta" else 1 - pi - value
        return np.array([pi, beta]), self._known_slopes()

    @abstractmethod
    def _known_slopes(self) -> FloatArray:
        """``d lambda_g / d pi`` with the cheating share held fixed."""

    def _types_of(
        self, x: npt.NDArray[np.intp], latent: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.intp]:
        # honest carrier 0, honest non-carrier 1, cheating carrier 2, cheating non-carrier 3
        return 2 * latent + (1 - x)


@dataclass(frozen=True, repr=False)
class CheaterDetection(_CheaterBase):
    """Cheater detection model (Clark & Desharnais 1998).

    Forced response with forced "yes" only: in group ``g`` the randomizer says "answer
    yes" with probability ``forced_yes_g``, otherwise "answer truthfully".  Honest carriers
    (share ``pi``) always say "yes", honest non-carriers (``beta``) say "yes" when forced,
    cheaters (``gamma = 1 - pi - beta``, carriers or not) always say "no":
    ``lambda_g = pi + forced_yes_g beta``.  Hence
    ``beta = (lambda_2 - lambda_1) / (forced_yes2 - forced_yes1)``,
    ``pi = (forced_yes2 lambda_1 - forced_yes1 lambda_2) / (forced_yes2 - forced_yes1)``.
    The true prevalence is between ``pi`` and ``pi + gamma``.  RRreg: ``model = "CDM"``,
    ``p = c(forced_yes1, forced_yes2)``.  ``forced_yes_g = 0`` gives ``pi`` exact intervals.

    Estimated: ``prevalence`` (pi, the honest carriers), ``beta``, ``cheating`` (gamma).
    Truth keywords: ``prevalence`` and ``cheating`` (default 0) or ``beta``; the nuisance held
    fixed by :meth:`~deniable.designs.TwoGroupDesign.prevalence_variance_known` is ``cheating``.

    Epsilon is infinite: an honest carrier never says "no" while an honest non-carrier does
    with probability ``1 - forced_yes_g > 0`` (a cheater vs an honest carrier also reveals).

    >>> d = CheaterDetection(0.2, 0.6)
    >>> est = d.estimate(yes=(340, 470), n=(1000, 1000))
    >>> [round(est[k].value, 4) for k in est.parameters]
    [0.275, 0.325, 0.4]
    """

    forced_yes1: float
    forced_yes2: float
    name: ClassVar[str] = "cdm"

    def __post_init__(self) -> None:
        self._check_group_share()
        object.__setattr__(self, "forced_yes1", prob("forced_yes1", self.forced_yes1))
        object.__setattr__(self, "forced_yes2", prob("forced_yes2", self.forced_yes2))
        differ("forced_yes1", self.forced_yes1, "forced_yes2", self.forced_yes2,
                "the forced-yes probabilities of the two groups")  # fmt: skip

    def _fy(self, group: int) -> float:
        return self.forced_yes1 if group == 1 else self.forced_yes2

    def _yes_probabilities(self, group: int) -> tuple[float, ...]:
        return (1.0, self._fy(group), 0.0, 0.0)

    @property
    def epsilon(self) -> float:
        # eps = inf: "no" has probability 0 for an honest carrier and 1 - forced_yes_g > 0
        # for an honest non-carrier in a group with forced_yes_g < 1 (the groups differ)
        return math.inf

    def linear_system(self) -> tuple[FloatArray, FloatArray]:
        return np.zeros(2), np.array([[1.0, self.forced_yes1], [1.0, self.forced_yes2]])

    def _known_slopes(self) -> FloatArray:
        # gamma fixed: lambda_g = pi + fy_g (1 - pi - gamma)
        return np.array([1 - self.forced_yes1, 1 - self.forced_yes2])


@dataclass(frozen=True, repr=False)
class SymmetricCheaterDetection(_CheaterBase):
    """Symmetric cheater detection model (Ostapczuk, Moshagen, Zhao & Musch 2009).

    In group ``g`` the randomizer forces "yes" with probability ``forced_yes_g``, "no" with
    ``forced_no_g``, and otherwise asks for the truth; cheaters always say "no":
    ``lambda_g = pi (1 - forced_no_g) + beta forced_yes_g``.  With
    ``D = (1 - forced_no1) forced_yes2 - (1 - forced_no2) forced_yes1 != 0``:
    ``pi = (forced_yes2 lambda_1 - forced_yes1 lambda_2) / D`` and
    ``beta = ((1 - forced_no1) lambda_2 - (1 - forced_no2) lambda_1) / D``.
    RRreg: ``model = "CDMsym"``, ``p = c(forced_yes1, forced_no1, forced_yes2, forced_no2)``.

    Estimated: ``prevalence`` (pi), ``beta``, ``cheating`` (gamma); truth keywords as for
    :class:`CheaterDetection`.

    Epsilon is infinite: a cheater never says "yes", an honest respondent of the other
    answer does.  Among compliant respondents only (:attr:`epsilon_compliant`) it is the
    forced-response value ``max_g max(ln((1 - fn_g) / fy_g), ln((1 - fy_g) / fn_g))``.

    >>> d = SymmetricCheaterDetection(0.1, 0.1, 0.3, 0.1)
    >>> est = d.estimate(yes=(300, 400), n=(1000, 1000))
    >>> [round(est[k].value, 4) for k in est.parameters]
    [0.2778, 0.5, 0.2222]
    """

    forced_yes1: float
    forced_no1: float
    forced_yes2: float
    forced_no2: float
    name: ClassVar[str] = "cdm-symmetric"

    def __post_init__(self) -> None:
        self._check_group_share()
        names = ("forced_yes1", "forced_no1", "forced_yes2", "forced_no2")
        for n in names:
            object.__setattr__(self, n, prob(n, getattr(self, n)))
        for g in (1, 2):
            fy, fn = self._forced(g)
            if fy + fn >= 1:
                raise ParameterError(
                    f"`forced_yes{g}` + `forced_no{g}` must be < 1 (someone must answer "
                    f"truthfully), got {fy} + {fn} = {fy + fn}."
                )
        if self._det() == 0:
            raise ParameterError(
                "(1 - `forced_no1`) * `forced_yes2` must differ from (1 - `forced_no2`) * "
                "`forced_yes1` (otherwise the model is non-identifiable), got "
                + ", ".join(f"{n} = {getattr(self, n)}" for n in names)
                + "."
            )

    def _forced(self, group: int) -> tuple[float, float]:
        if group == 1:
            return self.forced_yes1, self.forced_no1
        return self.forced_yes2, self.forced_no2

    def _det(self) -> float:
        return (1 - self.forced_no1) * self.forced_yes2 - (1 - self.forced_no2) * self.forced_yes1

    def _yes_probabilities(self, group: int) -> tuple[float, ...]:
        fy, fn = self._forced(group)
        return (1 - fn, fy, 0.0, 0.0)

    @property
    def epsilon(self) -> float:
        # eps = inf: "yes" has probability 0 for a cheating carrier and forced_yes_g > 0 for
        # an honest non-carrier (D != 0 needs some forced_yes_g > 0)
        return math.inf

    @property
    def epsilon_compliant(self) -> float:
        """Epsilon among compliant respondents (not the design's, which is infinite):
        ``max_g max(ln((1 - fn_g) / fy_g), ln((1 - fy_g) / fn_g))``, infinite if some
        forced probability is 0."""
        eps = 0.0
        for g in (1, 2):
            fy, fn = self._forced(g)
            if fy == 0 or fn == 0:
                return math.inf
            # honest carrier vs non-carrier: a forced-response channel (1 - fn, fy)
            eps = max(eps, math.log((1 - fn) / fy), math.log((1 - fy) / fn))
        return eps

    def linear_system(self) -> tuple[FloatArray, FloatArray]:
        return np.zeros(2), np.array(
            [[1 - self.forced_no1, self.forced_yes1], [1 - self.forced_no2, self.forced_yes2]]
        )

    def _known_slopes(self) -> FloatArray:
        # gamma fixed: lambda_g = pi (1 - fn_g) + fy_g (1 - pi - gamma)
        return np.array([1 - self.forced_no1 - self.forced_yes1,
                         1 - self.forced_no2 - self.forced_yes2])  # fmt: skip
