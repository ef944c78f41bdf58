"""Survey science for real samples: design-based estimation of randomized-response items
under weights, strata, clusters and finite population corrections, or replicate weights.

========================  ==============================================================
:class:`SampleDesign`      weights, strata, PSUs, fpc, lonely-PSU rule (R's ``svydesign``)
:class:`ReplicateDesign`   replicate weights: JK1, JKn, bootstrap, BRR, Fay (``svrepdesign``)
:func:`as_replicate`       replicate weights from a design (``as.svrepdesign``)
:func:`survey_estimate`    Hajek prevalence / frequencies with Horvitz-Thompson totals,
                           Taylor or replicate variances, design effects, df, intervals
:func:`survey_by`          the same in each domain, on the full design (``svyby``)
:func:`survey_ratio`       a ratio of weighted totals (``svyratio``)
:func:`debiased_reports`   each report through its design's inverse
:func:`ratio_estimate`     ratios of weighted totals of several columns with their design
                           covariance (Taylor or replicate): the engine of the above
:func:`post_stratify`      weights to known post-stratum counts (``postStratify``)
:func:`rake`               weights raked to several margins (``rake``)
:func:`rake_weights`       the same on weights alone, with iterations and convergence
:func:`trim_weights`       weights trimmed to bounds, the excess shared (``trimWeights``)
:func:`kish_deff`          the weighting's design effect, ``1 + CV^2``
========================  ==============================================================

May import :mod:`deniable.designs`, :mod:`deniable.oracles`, :mod:`deniable.results`,
:mod:`deniable.randomness`, :mod:`deniable.common` and :mod:`deniable.exceptions`; it sits
between ``mechanisms | oracles`` and ``estimation | audit`` (``docs/architecture.md``).
``docs/sampling.md`` has the formulas, their sources and a worked example.
"""

from __future__ import annotations

from deniable.sampling._core import ratio_estimate
from deniable.sampling._design import LONELY_PSU_RULES, SampleDesign
from deniable.sampling._estimate import (
    debiased_reports,
    survey_by,
    survey_estimate,
    survey_ratio,
)
from deniable.sampling._make_replicates import as_replicate
from deniable.sampling._replicate import REPLICATE_METHODS, ReplicateDesign
from deniable.sampling._results import DomainEstimates, SurveyEstimate, SurveyFrequencies
from deniable.sampling._weighting import (
    Raking,
    kish_deff,
    post_stratify,
    rake,
    rake_weights,
    trim_weights,
)

__all__ = [
    "LONELY_PSU_RULES",
    "REPLICATE_METHODS",
    "DomainEstimates",
    "Raking",
    "ReplicateDesign",
    "SampleDesign",
    "SurveyEstimate",
    "SurveyFrequencies",
    "as_replicate",
    "debiased_reports",
    "kish_deff",
    "post_stratify",
    "rake",
    "rake_weights",
    "ratio_estimate",
    "survey_by",
    "survey_estimate",
    "survey_ratio",
    "trim_weights",
]
