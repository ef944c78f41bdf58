"""Privacy accounting: DP measures, conversions, composition, amplification, budget ledgers.

Pure accounting: this package never consumes randomness, never draws a plot and never
imports a mechanism (events hold parameters only); it may import :mod:`deniable.common`
and :mod:`deniable.exceptions`.  The noise mechanisms are in :mod:`deniable.mechanisms`,
the plots in :mod:`deniable.plotting`.


* **Measures** (value objects): :class:`PureDP`, :class:`ApproxDP`, :class:`ZCDP`,
  :class:`RDP`, :class:`GDP`.
* **Conversions**, each rounded toward safety: ``pure_to_zcdp``, ``pure_to_rdp``,
  ``rr_rdp``, ``laplace_rdp``, ``zcdp_*``, ``rdp_*``, ``gdp_*``, ``compose_gdp``.
* **Events** (plain data with structure, as in ``dp_accounting``): the mechanism events
  :class:`RandomizedResponse`, :class:`PureEpsilon`, :class:`EpsilonDelta`,
  :class:`Laplace`, :class:`DiscreteLaplace`, :class:`Gaussian`, :class:`NoOp`,
  :class:`NonPrivate`, and :class:`Composed`, :class:`SelfComposed`,
  :class:`PoissonSampled`, :class:`SampledWithoutReplacement`; ``event_from_dict``.
* **Accountants**, one per method, each with ``supports``, ``compose``, ``epsilon`` and
  ``delta`` (``ACCOUNTANTS``, ``make_accountant``): closed-form bounds
  (:class:`BasicAccountant`, :class:`AdvancedAccountant`, :class:`KOVAccountant`), the exact
  optimum where one exists (:class:`OptimalAccountant`), privacy loss distributions
  (:class:`PLDAccountant`), :class:`RDPAccountant`, :class:`ZCDPAccountant`,
  :class:`GDPAccountant`; the facade :class:`PrivacyAccountant` and
  ``compare_composition`` (every method side by side).  The functions behind them:
  ``basic_composition``, ``advanced_composition``, ``kov_composition``,
  ``optimal_rr_delta``, ``optimal_rr_epsilon``, :class:`PrivacyLossDistribution`,
  ``rr_pld``, ``laplace_pld``, ``gaussian_pld``.
* **Amplification by subsampling**: sampled events in every accountant, and
  ``poisson_amplification``, ``without_replacement_amplification``.
* **Amplification by shuffling** (Feldman, McMillan & Talwar 2021): ``shuffle_*``.
* **Per-respondent budgets**: :class:`BudgetLedger`, :class:`BudgetFilter`; pricing by a
  :class:`Composition` rule (:class:`PureEpsilonComposition`, :class:`ZCDPComposition`,
  which price through :class:`BasicAccountant` and :class:`ZCDPAccountant`),
  storage behind the :class:`LedgerStore` protocol (:class:`InMemoryLedgerStore`; a store
  performs each :class:`SpendRequest` as one atomic check-and-spend of a :class:`SpendPlan`
  made from the respondents' :class:`History`).  :class:`MemoAccess`: the part of a memo
  store (``deniable.mechanisms.MemoStore``) that memoizing randomizers and oracles use.
* **Budgets per period**: :class:`WindowedLedger` caps each device's epsilon (and delta)
  per :class:`BudgetWindow` (calendar day or ISO week in a stated zone, or rolling of a
  stated length), charging through the :class:`WindowStore` protocol
  (:class:`InMemoryWindowStore`; each :class:`WindowRequest` one atomic check-and-charge,
  decided by ``decide_charge`` over every spec the store has enforced); ``window_account``
  states a device's loss across the windows it took part in (:class:`WindowAccount`).

Proof notes for the non-trivial bounds are in ``proofs/`` beside this package.  See
``docs/accounting.md``, ``docs/shuffle.md``, ``docs/noise.md`` and ``docs/budgets.md``.

>>> from deniable.accounting import compare_composition
>>> compare_composition([0.5] * 10, delta=1e-6)["basic"]
5.0
"""

from __future__ import annotations

from deniable.accounting._accountant import (
    ACCOUNTANTS,
    COMPOSITION_METHODS,
    PrivacyAccountant,
    make_accountant,
)
from deniable.accounting._accountants import (
    Accountant,
    AdvancedAccountant,
    BasicAccountant,
    KOVAccountant,
)
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
from deniable.accounting._event_tree import (
    EVENT_TYPES,
    Composed,
    Event,
    PoissonSampled,
    SampledWithoutReplacement,
    SelfComposed,
    event_from_dict,
)
from deniable.accounting._events import (
    Channel,
    DiscreteLaplace,
    EpsilonDelta,
    Gaussian,
    Laplace,
    NonPrivate,
    NoOp,
    PureEpsilon,
    RandomizedResponse,
)
from deniable.accounting._exact_sum import add_up
from deniable.accounting._keys import KeyIndex, Keys, format_key, respondent_keys
from deniable.accounting._ledger import BudgetLedger
from deniable.accounting._measures import GDP, RDP, ZCDP, ApproxDP, PureDP
from deniable.accounting._memo_access import MemoAccess
from deniable.accounting._optimal import OptimalAccountant
from deniable.accounting._pld import PrivacyLossDistribution, rr_pld
from deniable.accounting._pld_accountants import PLDAccountant
from deniable.accounting._pld_noise import gaussian_pld, laplace_pld
from deniable.accounting._pricing import (
    PURE_EPSILON,
    UNKNOWN_UNIT,
    Composition,
    History,
    PureEpsilonComposition,
    QuestionRecord,
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
from deniable.accounting._rdp_accountants import GDPAccountant, RDPAccountant, ZCDPAccountant
from deniable.accounting._sampling import (
    poisson_amplification,
    without_replacement_amplification,
)
from deniable.accounting._shuffle import (
    MAX_NUMERICAL_N,
    ShuffleTable,
    shuffle_closed_form_limit,
    shuffle_delta_numerical,
    shuffle_epsilon_closed_form,
    shuffle_epsilon_numerical,
    shuffle_epsilon_table,
    shuffle_guarantee,
)
from deniable.accounting._stores import InMemoryLedgerStore, LedgerStore, SpentSummary, adopted_unit
from deniable.accounting._window_account import WindowAccount, WindowTotal, window_account
from deniable.accounting._window_stores import (
    InMemoryWindowStore,
    WindowRequest,
    WindowStore,
    device_key,
)
from deniable.accounting._windowed_ledger import WindowedLedger
from deniable.accounting._windows import (
    WINDOW_KINDS,
    BudgetWindow,
    Charge,
    charge_cost,
    decide_charge,
)

__all__ = [
    "ACCOUNTANTS",
    "COMPOSITION_METHODS",
    "CONVERSIONS",
    "EVENT_TYPES",
    "GDP",
    "MAX_NUMERICAL_N",
    "PURE_EPSILON",
    "QUESTIONNAIRE_METHODS",
    "RDP",
    "UNKNOWN_UNIT",
    "WINDOW_KINDS",
    "ZCDP",
    "Accountant",
    "AdvancedAccountant",
    "ApproxDP",
    "BasicAccountant",
    "BudgetFilter",
    "BudgetLedger",
    "BudgetPlan",
    "BudgetWindow",
    "Channel",
    "Charge",
    "Composed",
    "Composition",
    "CompositionRow",
    "CompositionTable",
    "Conversion",
    "DiscreteLaplace",
    "EpsilonDelta",
    "Event",
    "GDPAccountant",
    "Gaussian",
    "History",
    "InMemoryLedgerStore",
    "InMemoryWindowStore",
    "KOVAccountant",
    "KeyIndex",
    "Keys",
    "Laplace",
    "LedgerStore",
    "MemoAccess",
    "NoOp",
    "NonPrivate",
    "OptimalAccountant",
    "PLDAccountant",
    "PoissonSampled",
    "PrivacyAccountant",
    "PrivacyLossDistribution",
    "PureDP",
    "PureEpsilon",
    "PureEpsilonComposition",
    "QuestionRecord",
    "RDPAccountant",
    "RandomizedResponse",
    "SampledWithoutReplacement",
    "SelfComposed",
    "ShuffleTable",
    "SpendPlan",
    "SpendRequest",
    "SpentSummary",
    "WindowAccount",
    "WindowRequest",
    "WindowStore",
    "WindowTotal",
    "WindowedLedger",
    "ZCDPAccountant",
    "ZCDPComposition",
    "add_up",
    "admitted",
    "adopted_unit",
    "advanced_composition",
    "basic_composition",
    "budget_plan",
    "charge_cost",
    "check_unit",
    "common_lattice",
    "compare_composition",
    "compose_gdp",
    "compose_questions",
    "conversion_methods",
    "convert_guarantee",
    "decide_charge",
    "device_key",
    "event_from_dict",
    "format_key",
    "gaussian_pld",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_to_approx",
    "kov_composition",
    "laplace_pld",
    "laplace_rdp",
    "make_accountant",
    "optimal_rr_delta",
    "optimal_rr_epsilon",
    "poisson_amplification",
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
    "shuffle_closed_form_limit",
    "shuffle_delta_numerical",
    "shuffle_epsilon_closed_form",
    "shuffle_epsilon_numerical",
    "shuffle_epsilon_table",
    "shuffle_guarantee",
    "spend_limit",
    "window_account",
    "without_replacement_amplification",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_to_approx",
]
