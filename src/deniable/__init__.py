"""deniable: randomized response and local differential privacy, with exact epsilon.

Each respondent's device randomizes the answer; the collector stores only randomized
reports and de-biases their tally into a population estimate with honest error bars.

>>> import deniable
>>> design = deniable.TwoCoin()                     # Dwork & Roth's two fair coins
>>> round(design.epsilon, 4)                        # ln 3
1.0986
>>> reports = design.randomize([1, 0, 1, 1] * 2500, rng=7)
>>> est = design.estimate(reports)
>>> abs(est.value - 0.75) < 4 * est.se
True
"""

from __future__ import annotations

from deniable._estimate import Estimate
from deniable.accounting import BudgetFilter, BudgetLedger, PrivacyAccountant, compare_composition
from deniable.analysis import Analysis, analyze, read_reports
from deniable.coins import CoinProtocol, design_protocol
from deniable.designs import (
    DESIGNS,
    TWO_GROUP_DESIGNS,
    BiasedCoin,
    Binary,
    BinaryDesign,
    Categorical,
    CategoricalEstimate,
    CheaterDetection,
    Crosswise,
    Custom,
    Design,
    ForcedResponse,
    Kuk,
    Mangat,
    Mirrored,
    RespondentType,
    StochasticLieDetector,
    SymmetricCheaterDetection,
    Tally,
    Triangular,
    TwoCoin,
    TwoGroupDesign,
    TwoGroupEstimate,
    TwoGroupTally,
    UnrelatedQuestion,
    UnrelatedUnknown,
    Warner,
    channel_epsilon,
    make_design,
    types_epsilon,
)
from deniable.estimation import (
    LinearRRResult,
    LogisticRRResult,
    MajorityDecision,
    PowerResult,
    SampleSizeResult,
    decide_majority,
    linear_rr,
    logistic_rr,
    majority_decision,
    majority_threshold,
    plot_power_curves,
    power,
    sample_size,
    simulate_majority,
)
from deniable.exceptions import (
    DataError,
    DeniableError,
    ParameterError,
    ParameterTypeError,
    PrivacyError,
)
from deniable.memoization import MemoizedRandomizer
from deniable.randomness import SystemRandom
from deniable.report import SurveyReport, survey_report
from deniable.simulation import (
    ParameterStudy,
    Simulation,
    SimulationStudy,
    TwoGroupSimulationStudy,
    simulate,
    simulation_study,
)

__version__ = "0.1.0"

__all__ = [
    "DESIGNS",
    "TWO_GROUP_DESIGNS",
    "Analysis",
    "BiasedCoin",
    "Binary",
    "BinaryDesign",
    "BudgetFilter",
    "BudgetLedger",
    "Categorical",
    "CategoricalEstimate",
    "CheaterDetection",
    "CoinProtocol",
    "Crosswise",
    "Custom",
    "DataError",
    "DeniableError",
    "Design",
    "Estimate",
    "ForcedResponse",
    "Kuk",
    "LinearRRResult",
    "LogisticRRResult",
    "MajorityDecision",
    "Mangat",
    "MemoizedRandomizer",
    "Mirrored",
    "ParameterError",
    "ParameterStudy",
    "ParameterTypeError",
    "PowerResult",
    "PrivacyAccountant",
    "PrivacyError",
    "RespondentType",
    "SampleSizeResult",
    "Simulation",
    "SimulationStudy",
    "StochasticLieDetector",
    "SurveyReport",
    "SymmetricCheaterDetection",
    "SystemRandom",
    "Tally",
    "Triangular",
    "TwoCoin",
    "TwoGroupDesign",
    "TwoGroupEstimate",
    "TwoGroupSimulationStudy",
    "TwoGroupTally",
    "UnrelatedQuestion",
    "UnrelatedUnknown",
    "Warner",
    "analyze",
    "channel_epsilon",
    "compare_composition",
    "decide_majority",
    "design_protocol",
    "linear_rr",
    "logistic_rr",
    "majority_decision",
    "majority_threshold",
    "make_design",
    "plot_power_curves",
    "power",
    "read_reports",
    "sample_size",
    "simulate",
    "simulate_majority",
    "simulation_study",
    "survey_report",
    "types_epsilon",
]
