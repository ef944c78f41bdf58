"""Checking and explaining privacy: empirical audits of a mechanism's epsilon (one- and
two-group designs, noise mechanisms, (epsilon, delta) claims), the "parallel databases"
view of a query, and epsilon explained in words and tables.

May import :mod:`deniable.mechanisms`, :mod:`deniable.designs`, :mod:`deniable.randomness`,
:mod:`deniable.results` and :mod:`deniable.common`.
"""

from __future__ import annotations

from deniable.audit._audit import (
    MAX_AUDIT_CELLS,
    MAX_AUDIT_DRAWS,
    audit,
    audit_design,
    audit_unary,
)
from deniable.audit._core import clopper_pearson_bounds
from deniable.audit._explain import (
    Explanation,
    check_epsilons,
    epsilon_from_lying_probability,
    epsilon_from_truth_probability,
    explain,
    likelihood_sentence,
    lying_table,
    odds_to_probability,
    posterior,
    posterior_table,
    truth_table,
)
from deniable.audit._leave_one_out import LeaveOneOut, leave_one_out
from deniable.audit._result import AuditResult
from deniable.audit._two_group import audit_two_group
from deniable.audit._unary_encoding import UnaryEncoding

__all__ = [
    "MAX_AUDIT_CELLS",
    "MAX_AUDIT_DRAWS",
    "AuditResult",
    "Explanation",
    "LeaveOneOut",
    "UnaryEncoding",
    "audit",
    "audit_design",
    "audit_two_group",
    "audit_unary",
    "check_epsilons",
    "clopper_pearson_bounds",
    "epsilon_from_lying_probability",
    "epsilon_from_truth_probability",
    "explain",
    "leave_one_out",
    "likelihood_sentence",
    "lying_table",
    "odds_to_probability",
    "posterior",
    "posterior_table",
    "truth_table",
]
