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

The top level holds what a user needs first: the designs, :class:`Estimate`, simulation,
analysis, power, regression, the accountant, the ledger and the exceptions.  Everything
else is in its subpackage (``docs/architecture.md`` draws the layers):

=========================  ===========================================================
Names and subpackages are loaded on first use (``import deniable`` itself loads only
numpy, and ``deniable.distributed`` or ``deniable.service`` none of their extras), so the
command line and small scripts start quickly.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Every public top-level name -> the subpackage that defines it.
_ORIGIN: dict[str, str] = {
    **dict.fromkeys(
        (
            "BiasedCoin",
            "Binary",
            "Categorical",
            "CheaterDetection",
            "Crosswise",
            "Custom",
            "Design",
            "ForcedResponse",
            "Kuk",
            "Mangat",
            "Mirrored",
            "StochasticLieDetector",
            "SymmetricCheaterDetection",
            "Tally",
            "Triangular",
            "TwoCoin",
            "UnrelatedQuestion",
            "UnrelatedUnknown",
            "Warner",
            "make_design",
        ),
        "deniable.designs",
    ),
    "Estimate": "deniable.results",
    "PrivacyAccountant": "deniable.accounting",
    "BudgetLedger": "deniable.accounting",
    "MemoizedRandomizer": "deniable.mechanisms",
    **dict.fromkeys(
        ("linear_rr", "logistic_rr", "majority_decision", "power", "sample_size"),
        "deniable.estimation",
    ),
    "analyze": "deniable.survey",
    "survey_report": "deniable.survey",
    "simulate": "deniable.simulation",
    "SystemRandom": "deniable.randomness",
    **dict.fromkeys(
        ("DataError", "DeniableError", "ParameterError", "ParameterTypeError", "PrivacyError"),
        "deniable.exceptions",
    ),
}

#: The subpackages, loaded on first attribute access (``deniable.accounting``).
_SUBPACKAGES = frozenset(
    {
        "accounting",
        "audit",
        "cli",
        "common",
        "designs",
        "distributed",
        "estimation",
        "exceptions",
        "mechanisms",
        "oracles",
        "plotting",
        "quantitative",
        "randomness",
        "results",
        "service",
        "sampling",
        "simulation",
        "survey",
    }
)

__all__ = [
    "BiasedCoin",
    "Binary",
    "BudgetLedger",
    "Categorical",
    "CheaterDetection",
    "Crosswise",
    "Custom",
    "DataError",
    "DeniableError",
    "Design",
    "Estimate",
    "ForcedResponse",
    "Kuk",
    "Mangat",
    "MemoizedRandomizer",
    "Mirrored",
    "ParameterError",
    "ParameterTypeError",
    "PrivacyAccountant",
    "PrivacyError",
    "StochasticLieDetector",
    "SymmetricCheaterDetection",
    "SystemRandom",
    "Tally",
    "Triangular",
    "TwoCoin",
    "UnrelatedQuestion",
    "UnrelatedUnknown",
    "Warner",
    "analyze",
    "linear_rr",
    "logistic_rr",
    "majority_decision",
    "make_design",
    "power",
    "sample_size",
    "simulate",
    "survey_report",
]


def __getattr__(name: str) -> Any:
    origin = _ORIGIN.get(name)
    if origin is not None:
        value = getattr(importlib.import_module(origin), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"deniable.{name}")
    raise AttributeError(f"module 'deniable' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBPACKAGES})


if TYPE_CHECKING:  # pragma: no cover - what static checkers see
    from deniable.accounting import BudgetLedger, PrivacyAccountant
    from deniable.designs import (
        BiasedCoin,
        Binary,
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
        Tally,
        Triangular,
        TwoCoin,
        UnrelatedQuestion,
        UnrelatedUnknown,
        Warner,
        make_design,
    )
    from deniable.estimation import (
        linear_rr,
        logistic_rr,
        majority_decision,
        power,
        sample_size,
    )
    from deniable.exceptions import (
        DataError,
        DeniableError,
        ParameterError,
        ParameterTypeError,
        PrivacyError,
    )
    from deniable.mechanisms import MemoizedRandomizer
    from deniable.randomness import SystemRandom
    from deniable.results import Estimate
    from deniable.simulation import simulate
    from deniable.survey import analyze, survey_report
