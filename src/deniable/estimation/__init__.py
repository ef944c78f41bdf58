"""Estimation beyond one design's estimator: majority decisions, power, regression,
robustness to manipulation (how many fake respondents would move an estimate), several
sensitive items together (their joint distribution, association and independence), and
Bayesian estimates (the exact posterior of a prevalence; regression through NumPyro, the
``bayes`` extra)."""

from __future__ import annotations

from deniable.estimation._association import Association, AssociationMeasure, association
from deniable.estimation._bayes import INTERVAL_KINDS, POSTERIOR_METHODS, Posterior, posterior
from deniable.estimation._bayes_categorical import CategoricalPosterior
from deniable.estimation._bayes_dirichlet import CATEGORICAL_EXACT_MAX_WORK
from deniable.estimation._bayes_exact import EXACT_MAX_N
from deniable.estimation._bayes_mcmc import (
    RHAT_LIMIT,
    BayesLogisticRRResult,
    bayes_logistic_rr,
)
from deniable.estimation._bayes_prior import PRIORS, Beta
from deniable.estimation._formula import check_formula
from deniable.estimation._independence import (
    INDEPENDENCE_TESTS,
    IndependenceTest,
    independence_test,
)
from deniable.estimation._joint import joint_estimate
from deniable.estimation._joint_results import JOINT_ESTIMATORS, JointEstimate
from deniable.estimation._linear import LinearRRResult, linear_rr
from deniable.estimation._logistic import DirectTest, LogisticRRResult, logistic_rr
from deniable.estimation._majority import (
    MAX_TRIALS,
    MajorityDecision,
    majority_decision,
    simulate_majority,
)
from deniable.estimation._majority_rule import decide_majority, majority_threshold
from deniable.estimation._mixed import MIXED_METHODS, mixed_logistic_rr
from deniable.estimation._mixed_data import RandomTerm, parse_random
from deniable.estimation._mixed_results import HosmerLemeshow, MixedRRResult, VarianceComponent
from deniable.estimation._power import power, power_curve, sample_size, unit_variance
from deniable.estimation._power_model import ALTERNATIVES
from deniable.estimation._power_results import PowerResult, SampleSizeResult
from deniable.estimation._regression_design import BREADS, SamplingInfo
from deniable.estimation._regression_links import LINKS
from deniable.estimation._regression_power import RegressionPower, regression_power
from deniable.estimation._regression_results import RegressionResult
from deniable.estimation._regression_stats import SE_TYPES, LRTest, Prevalence
from deniable.estimation._regression_twogroup import TwoGroupRRResult
from deniable.estimation._related import threshold_vs_bracket
from deniable.estimation._robustness import (
    DIRECTIONS,
    MANIPULATIONS,
    ManipulationRobustness,
    manipulation_robustness,
)
from deniable.estimation._rr_predictors import RRPredictorResult

__all__ = [
    "ALTERNATIVES",
    "BREADS",
    "CATEGORICAL_EXACT_MAX_WORK",
    "DIRECTIONS",
    "EXACT_MAX_N",
    "INDEPENDENCE_TESTS",
    "INTERVAL_KINDS",
    "JOINT_ESTIMATORS",
    "LINKS",
    "MANIPULATIONS",
    "MAX_TRIALS",
    "MIXED_METHODS",
    "POSTERIOR_METHODS",
    "PRIORS",
    "RHAT_LIMIT",
    "SE_TYPES",
    "Association",
    "AssociationMeasure",
    "BayesLogisticRRResult",
    "Beta",
    "CategoricalPosterior",
    "DirectTest",
    "HosmerLemeshow",
    "IndependenceTest",
    "JointEstimate",
    "LRTest",
    "LinearRRResult",
    "LogisticRRResult",
    "MajorityDecision",
    "ManipulationRobustness",
    "MixedRRResult",
    "Posterior",
    "PowerResult",
    "Prevalence",
    "RRPredictorResult",
    "RandomTerm",
    "RegressionPower",
    "RegressionResult",
    "SampleSizeResult",
    "SamplingInfo",
    "TwoGroupRRResult",
    "VarianceComponent",
    "association",
    "bayes_logistic_rr",
    "check_formula",
    "decide_majority",
    "independence_test",
    "joint_estimate",
    "linear_rr",
    "logistic_rr",
    "majority_decision",
    "majority_threshold",
    "manipulation_robustness",
    "mixed_logistic_rr",
    "parse_random",
    "posterior",
    "power",
    "power_curve",
    "regression_power",
    "sample_size",
    "simulate_majority",
    "threshold_vs_bracket",
    "unit_variance",
]
