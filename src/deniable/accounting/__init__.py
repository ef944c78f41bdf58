"""Privacy accounting: DP measures, conversions, composition, amplification, budget ledgers.

Pure accounting: this package never consumes randomness, never draws a plot and never
imports a mechanism (events hold parameters only); it may import :mod:`deniable.common`
and :mod:`deniable.exceptions`.  The noise mechanisms are in :mod:`deniable.mechanisms`,
the plots in :mod:`deniable.plotting`.


* **Measures** (value objects): :class:`PureDP`, :class:`ApproxDP`, :class:`ZCDP`,
  :class:`RDP`, :class:`GDP`.
* **Conversions**, each rounded toward safety: ``pure_to_zcdp``, ``pure_to_rdp``,
  ``rr_rdp``, ``laplace_rdp``, ``zcdp_*``, ``rdp_*``, ``gdp_*``, ``compose_gdp``.
* **Composition** of randomized response and noise: closed-form bounds
  (``basic_composition``, ``advanced_composition``, ``kov_composition``), the exact optimum
  (``optimal_rr_delta``, ``optimal_rr_epsilon``), privacy loss distributions
  (:class:`PrivacyLossDistribution`, ``rr_pld``, ``laplace_pld``, ``gaussian_pld``), the
  events :class:`RandomizedResponse`, :class:`Laplace` and :class:`Gaussian`, the explicit
  :class:`PrivacyAccountant`, and ``compare_composition`` (every method side by side).
* **Amplification by shuffling** (Feldman, McMillan & Talwar 2021): ``shuffle_*``.
* **Per-respondent budgets**: :class:`BudgetLedger`, :class:`BudgetFilter`; pricing by a
  :class:`Composition` rule (:class:`PureEpsilonComposition`, :class:`ZCDPComposition`),
  storage behind the :class:`LedgerStore` protocol (:class:`InMemoryLedgerStore`; a store
  performs each :class:`SpendRequest` as one atomic check-and-spend of a :class:`SpendPlan`
  made from the respondents' :class:`History`).

See ``docs/accounting.md``, ``docs/shuffle.md``, ``docs/noise.md`` and ``docs/budgets.md``.

>>> from deniable.accounting import compare_composition
>>> compare_composition([0.5] * 10, delta=1e-6)["basic"]
5.0
"""

from __future__ import annotations

from deniable.accounting._accountant import COMPOSITION_METHODS, PrivacyAccountant
from deniable.accounting._budget_filter import BudgetFilter
from deniable.accounting._budget_plan import BudgetPlan, budget_plan
from deniable.accounting._compare import (
    QUESTIONNAIRE_METHODS,
    compare_composition,
    compose_questions,
)
from deniable.accounting._composition import (
    CompositionRow,
    CompositionTable,
    advanced_composition,
    basic_composition,
    common_lattice,
    kov_composition,
    optimal_rr_delta,
    optimal_rr_epsilon,
)
from deniable.accounting._conversions import (
    compose_gdp,
    gdp_delta,
    gdp_epsilon,
    gdp_to_approx,
    pure_to_zcdp,
    zcdp_delta,
    zcdp_epsilon,
    zcdp_to_approx,
)
from deniable.accounting._convert_table import (
    CONVERSIONS,
    Conversion,
    conversion_methods,
    convert_guarantee,
)
from deniable.accounting._events import Gaussian, Laplace, RandomizedResponse
from deniable.accounting._exact_sum import add_up
from deniable.accounting._keys import KeyIndex, Keys, respondent_keys
from deniable.accounting._ledger import BudgetLedger, QuestionRecord
from deniable.accounting._measures import GDP, RDP, ZCDP, ApproxDP, PureDP
from deniable.accounting._pld import PrivacyLossDistribution, gaussian_pld, laplace_pld, rr_pld
from deniable.accounting._pricing import (
    PURE_EPSILON,
    UNKNOWN_UNIT,
    Composition,
    History,
    PureEpsilonComposition,
    SpendPlan,
    SpendRequest,
    ZCDPComposition,
    admitted,
    check_unit,
    remaining_budget,
    spend_limit,
)
from deniable.accounting._rdp import (
    laplace_rdp,
    pure_to_rdp,
    rdp_curve_delta,
    rdp_curve_epsilon,
    rdp_delta,
    rdp_epsilon,
    rdp_to_approx,
    rr_rdp,
)
from deniable.accounting._shuffle import (
    ShuffleTable,
    shuffle_delta_numerical,
    shuffle_epsilon_closed_form,
    shuffle_epsilon_numerical,
    shuffle_epsilon_table,
    shuffle_guarantee,
)
from deniable.accounting._stores import InMemoryLedgerStore, LedgerStore, SpentSummary, adopted_unit

__all__ = [
    "COMPOSITION_METHODS",
    "CONVERSIONS",
    "GDP",
    "PURE_EPSILON",
    "QUESTIONNAIRE_METHODS",
    "RDP",
    "UNKNOWN_UNIT",
    "ZCDP",
    "ApproxDP",
    "BudgetFilter",
    "BudgetLedger",
    "BudgetPlan",
    "Composition",
    "CompositionRow",
    "CompositionTable",
    "Conversion",
    "Gaussian",
    "History",
    "InMemoryLedgerStore",
    "KeyIndex",
    "Keys",
    "Laplace",
    "LedgerStore",
    "PrivacyAccountant",
    "PrivacyLossDistribution",
    "PureDP",
    "PureEpsilonComposition",
    "QuestionRecord",
    "RandomizedResponse",
    "ShuffleTable",
    "SpendPlan",
    "SpendRequest",
    "SpentSummary",
    "ZCDPComposition",
    "add_up",
    "admitted",
    "adopted_unit",
    "advanced_composition",
    "basic_composition",
    "budget_plan",
    "check_unit",
    "common_lattice",
    "compare_composition",
    "compose_gdp",
    "compose_questions",
    "conversion_methods",
    "convert_guarantee",
    "gaussian_pld",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_to_approx",
    "kov_composition",
    "laplace_pld",
    "laplace_rdp",
    "optimal_rr_delta",
    "optimal_rr_epsilon",
    "pure_to_rdp",
    "pure_to_zcdp",
    "rdp_curve_delta",
    "rdp_curve_epsilon",
    "rdp_delta",
    "rdp_epsilon",
    "rdp_to_approx",
    "remaining_budget",
    "respondent_keys",
    "rr_pld",
    "rr_rdp",
    "shuffle_delta_numerical",
    "shuffle_epsilon_closed_form",
    "shuffle_epsilon_numerical",
    "shuffle_epsilon_table",
    "shuffle_guarantee",
    "spend_limit",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_to_approx",
]
