"""Example parameterisations of every design in ``deniable.designs.DESIGNS`` and
``TWO_GROUP_DESIGNS``, and of the other mechanisms (noise, memoization) that answer the
mechanism protocol.

A new design gets the whole conformance suite (tests/test_conformance.py) by adding its
parameterisations to ``EXAMPLES`` (or ``TWO_GROUP_EXAMPLES``, with its estimands in
``TWO_GROUP_ESTIMANDS``) below; a design with a one-argument ``from_epsilon`` gets two by
default and needs nothing at all.  A new mechanism of another kind is added to
``OTHER_MECHANISMS``; a frequency oracle of :mod:`deniable.oracles` to ``ORACLES`` (it then
also gets the oracle clauses: support probabilities, unbiasedness, the variance formula).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import settings

from deniable.designs import (
    DESIGNS,
    TWO_GROUP_DESIGNS,
    BiasedCoin,
    Binary,
    BinaryDesign,
    Categorical,
    CheaterDetection,
    Crosswise,
    Custom,
    Design,
    ForcedResponse,
    Kuk,
    Mangat,
    Mirrored,
    StochasticLieDetector,
    SymmetricCheaterDetection,
    Triangular,
    TwoCoin,
    UnrelatedQuestion,
    UnrelatedUnknown,
    Warner,
)
from deniable.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    MemoizedMechanism,
    NoiseMechanism,
)
from deniable.oracles import (
    BLH,
    GRR,
    LGRR,
    LOLOHA,
    LOSUE,
    LOUE,
    LSUE,
    OLH,
    OUE,
    SUE,
    DuchiMechanism,
    HadamardResponse,
    Histogram,
    LinearOLH,
    PiecewiseMechanism,
    SquareWave,
    SubsetSelection,
)

# Property tests: reproducible (derandomized), no example database written to the tree, no
# deadline (timings on a shared 2-core machine vary).
settings.register_profile("deniable", derandomize=True, database=None, deadline=None)
settings.load_profile("deniable")

#: 2-3 parameterisations per design, including edge ones (p < 1/2, infinite epsilon,
#: a deterministic path, several draws, a given forced vector).
EXAMPLES: dict[str, list[Callable[[], Design]]] = {
    "warner": [lambda: Warner(0.75), lambda: Warner(0.2), lambda: Warner(0.999)],
    "mirrored": [lambda: Mirrored(0.7), lambda: Mirrored(0.35)],
    "two-coin": [
        lambda: TwoCoin(),
        lambda: TwoCoin(p_truthful=0.3, p_yes=0.8),
        lambda: TwoCoin(p_truthful=0.5, p_yes=1.0),  # a "no" reveals a non-carrier: eps = inf
    ],
    "biased-coin": [lambda: BiasedCoin(0.25), lambda: BiasedCoin(0.9)],
    "binary": [
        lambda: Binary(1.0),
        lambda: Binary(2.0, calibration="half"),
        lambda: Binary(0.01),
    ],
    "forced": [
        lambda: ForcedResponse(0.25, 0.25),
        lambda: ForcedResponse(1 / 6, 1 / 3),
        lambda: ForcedResponse(0.2, 0.0),  # a forced "no" does not exist: eps = inf
    ],
    "unrelated": [
        lambda: UnrelatedQuestion(0.7, 0.3),
        lambda: UnrelatedQuestion(0.4, 0.9),
        lambda: UnrelatedQuestion(0.5, 0.0),  # eps = inf
    ],
    "kuk": [
        lambda: Kuk(0.7, 0.3),
        lambda: Kuk(0.8, 0.4, draws=3),
        lambda: Kuk(0.25, 0.6, draws=3),
    ],
    "mangat": [lambda: Mangat(0.7), lambda: Mangat(1.0)],
    "crosswise": [lambda: Crosswise(0.2), lambda: Crosswise(0.85)],
    "triangular": [lambda: Triangular(0.3), lambda: Triangular(0.0)],
    "custom": [
        lambda: Custom(0.6, 0.1),
        lambda: Custom(0.2, 0.9),
        lambda: Custom(1.0, 0.3),  # eps = inf
    ],
    "categorical": [
        lambda: Categorical(k=4, p_truthful=0.5),
        lambda: Categorical(k=3, p_truthful=0.6, forced=(0.2, 0.3, 0.5)),
        lambda: Categorical(k=3, p_truthful=0.5, forced=(0.5, 0.5, 0.0)),  # eps = inf
    ],
}


#: The two-group designs: 2 parameterisations each, one with a group share other than 1/2.
TWO_GROUP_EXAMPLES: dict[str, list[Callable[[], Design]]] = {
    "unrelated-unknown": [
        lambda: UnrelatedUnknown(0.7, 0.3),
        lambda: UnrelatedUnknown(0.25, 0.0, group_share=0.3),  # Moors' variant
    ],
    "cdm": [lambda: CheaterDetection(0.2, 0.6), lambda: CheaterDetection(0.0, 0.5)],
    "cdm-symmetric": [
        lambda: SymmetricCheaterDetection(0.1, 0.1, 0.3, 0.1),
        lambda: SymmetricCheaterDetection(0.2, 0.3, 0.1, 0.2, group_share=0.75),
    ],
    "sld": [
        lambda: StochasticLieDetector(2 / 12, 10 / 12),
        lambda: StochasticLieDetector(0.7, 0.2),
    ],
}


def _uqt(s: np.ndarray) -> dict[str, float]:
    # types (carrier, unrelated yes), (carrier, no), (non-carrier, yes), (non-carrier, no)
    return {"prevalence": s[0] + s[1], "unrelated_prevalence": s[0] + s[2]}


def _cdm(s: np.ndarray) -> dict[str, float]:
    # types honest carrier, honest non-carrier, cheating carrier, cheating non-carrier
    return {"prevalence": s[0], "beta": s[1], "cheating": s[2] + s[3]}


def _sld(s: np.ndarray) -> dict[str, float]:
    # types honest carrier, lying carrier, non-carrier
    carriers = s[0] + s[1]
    return {"prevalence": carriers, "honesty": s[0] / carriers if carriers else math.nan}


#: The estimated parameters of a two-group design at a distribution of respondent types,
#: from the documented meaning of each type (independent of the designs' linear systems),
#: and which of them the moment estimator estimates without bias (the linear ones).
TWO_GROUP_ESTIMANDS: dict[str, tuple[Callable[[np.ndarray], dict[str, float]], tuple[str, ...]]] = {
    "unrelated-unknown": (_uqt, ("prevalence", "unrelated_prevalence")),
    "cdm": (_cdm, ("prevalence", "beta", "cheating")),
    "cdm-symmetric": (_cdm, ("prevalence", "beta", "cheating")),
    "sld": (_sld, ("prevalence",)),
}


def _default_examples(cls: type[Design]) -> list[Callable[[], Design]]:
    """Two parameterisations from ``from_epsilon`` for a design not listed in ``EXAMPLES``."""
    make = getattr(cls, "from_epsilon", None)
    if make is None:
        return []
    required = [
        p
        for p in inspect.signature(make).parameters.values()
        if p.default is inspect.Parameter.empty and p.name != "epsilon"
    ]
    if required:
        return []
    return [lambda: make(0.5), lambda: make(math.log(3))]


def design_cases() -> list[tuple[str, Callable[[], Design]]]:
    """``(id, factory)`` for every example of every registered design (one- and two-group)."""
    cases = []
    for name, cls in DESIGNS.items():
        for i, factory in enumerate(EXAMPLES.get(name) or _default_examples(cls)):
            cases.append((f"{name}-{i}", factory))
    for name in TWO_GROUP_DESIGNS:
        for i, factory in enumerate(TWO_GROUP_EXAMPLES.get(name, [])):
            cases.append((f"{name}-{i}", factory))
    return cases


DESIGN_CASES = design_cases()

#: The mechanisms that are not designs, wrapped to answer the protocol (noise for released
#: values, memoized randomized response); ``values`` says what their inputs are.
OTHER_MECHANISMS: dict[str, list[Callable[[], Any]]] = {
    "laplace": [lambda: NoiseMechanism(LaplaceMechanism(2.0))],
    "gaussian": [lambda: NoiseMechanism(GaussianMechanism(1.5))],
    "discrete-laplace": [lambda: NoiseMechanism(DiscreteLaplaceMechanism.from_epsilon(0.5))],
    "discrete-gaussian": [lambda: NoiseMechanism(DiscreteGaussianMechanism.from_zcdp(0.5))],
    "memoized": [
        lambda: MemoizedMechanism(Warner(0.75)),
        lambda: MemoizedMechanism(Warner(0.8), instantaneous=Binary(1.0)),
        lambda: MemoizedMechanism(Categorical(k=3, p_truthful=0.5)),
    ],
}

#: The frequency oracles of deniable.oracles (k-ary RR, the design Categorical, among
#: them at k = 128): small and large k, k a power of two and not, probabilities on the
#: oracles' grids and off them (unary encoding at 32 bits), g a power of two and not.
ORACLES: dict[str, list[Callable[[], Any]]] = {
    "sue": [
        lambda: SUE.from_epsilon(1.0, k=8),
        lambda: SUE(k=1024, q=0.25),
        lambda: SUE(k=5, q=0.1),  # not dyadic: 32-bit lanes, q rounded up
    ],
    "oue": [
        lambda: OUE.from_epsilon(1.0, k=1024),
        lambda: OUE(k=3, q=0.3),
        lambda: OUE.from_epsilon(3.0, k=70),
    ],
    "blh": [lambda: BLH.from_epsilon(1.0, k=2), lambda: BLH.from_epsilon(0.5, k=1024)],
    "olh": [
        lambda: OLH.from_epsilon(1.0, k=1024),  # g = 4
        lambda: OLH.from_epsilon(2.5, k=37),  # g = 13
        lambda: OLH(k=5, g=3, p_truthful=0.5),
    ],
    "olh-linear": [
        lambda: LinearOLH.from_epsilon(1.0, k=1024),  # g = 4, one word a report
        lambda: LinearOLH.from_epsilon(2.5, k=37),  # g = 16
        lambda: LinearOLH(k=5, g=2, p_truthful=0.5),
        lambda: LinearOLH(k=40, g=2048, p_truthful=0.75),  # two words a report
    ],
    "hadamard": [
        lambda: HadamardResponse.from_epsilon(1.0, k=1000),  # K = 1024
        lambda: HadamardResponse(k=2, p=0.75),
        lambda: HadamardResponse.from_epsilon(2.0, k=1024),
    ],
    "subset": [
        lambda: SubsetSelection.from_epsilon(1.0, k=16),
        lambda: SubsetSelection(k=5, d=2, p=0.7),
        lambda: SubsetSelection.from_epsilon(0.5, k=300),
    ],
    "grr": [lambda: GRR.from_epsilon(1.0, k=128)],  # (a dense k x k epsilon check: O(k^3))
    # longitudinal (first reports, no memo): eps_1 above eps_inf / 2, so that the audit
    # refutes half the stated epsilon; a k that is not a power of two and one above 56
    # (two memo chunks of a unary PRR)
    "l-grr": [lambda: LGRR.from_epsilon(2.0, 6, eps_1=1.5), lambda: LGRR(k=3, p1=0.8, p2=0.9)],
    "l-sue": [
        lambda: LSUE.from_epsilon(2.0, 5, eps_1=1.5),
        lambda: LSUE(k=70, p1=0.875, p2=0.9375),
    ],
    "l-oue": [lambda: LOUE.from_epsilon(2.0, 4, eps_1=1.5)],
    "l-osue": [lambda: LOSUE.from_epsilon(3.0, 9, eps_1=2.0)],
    # LOLOHA: g below k (values share buckets) and g = 2 (BiLOLOHA)
    "loloha": [
        lambda: LOLOHA.from_epsilon(2.0, 10, eps_1=1.5, g=4),
        lambda: LOLOHA(k=6, g=2, p1=0.8, p2=0.9),
    ],
}

#: Mechanisms of deniable.oracles that are not frequency oracles of values 0..k-1: a
#: histogram of numbers (edges at 0..4, so the integer values of the suite are bins) and the
#: means of numbers in [0, 4].
TELEMETRY_MECHANISMS: dict[str, list[Callable[[], Any]]] = {
    "histogram": [lambda: Histogram((0.0, 1.0, 2.0, 3.0, 4.0), OUE.from_epsilon(1.0, k=4))],
    "duchi": [lambda: DuchiMechanism(1.0, lower=0.0, upper=4.0)],
    "piecewise": [
        lambda: PiecewiseMechanism(2.0, lower=0.0, upper=4.0),
        lambda: PiecewiseMechanism(0.5, lower=0.0, upper=4.0),
    ],
    "square-wave": [
        lambda: SquareWave(1.0, lower=0.0, upper=4.0, bins=8),
        lambda: SquareWave(3.0, b=0.1, lower=0.0, upper=4.0, bins=16, output_bins=24),
    ],
}

ORACLE_CASES: list[tuple[str, Callable[[], Any]]] = [
    (f"{name}-{i}", f) for name, fs in ORACLES.items() for i, f in enumerate(fs)
]

MECHANISM_CASES: list[tuple[str, Callable[[], Any]]] = [
    *DESIGN_CASES,
    *((f"{name}-{i}", f) for name, fs in OTHER_MECHANISMS.items() for i, f in enumerate(fs)),
    *ORACLE_CASES,
    *((f"{name}-{i}", f) for name, fs in TELEMETRY_MECHANISMS.items() for i, f in enumerate(fs)),
]


def _cases_where(keep: Callable[[Design], bool]) -> list[tuple[str, Callable[[], Design]]]:
    return [(i, f) for i, f in DESIGN_CASES if keep(f())]


ONE_BIT_CASES = _cases_where(lambda d: isinstance(d, BinaryDesign) and d.n_reports == 2)
FINITE_EPSILON_CASES = _cases_where(lambda d: math.isfinite(d.epsilon))
