"""analysis"""

from __future__ import annotations

from deniable.service.analysis.results import (
    BUCKETS,
    DEFAULT_BINS,
    RESULTS_SCHEMA,
    budget,
    export_columns,
    export_table,
    forest_rows,
    is_binary,
    majority,
    question_result,
    results,
    results_document,
    timeline,
)

__all__ = [
    "BUCKETS",
    "DEFAULT_BINS",
    "RESULTS_SCHEMA",
    "budget",
    "export_columns",
    "export_table",
    "forest_rows",
    "is_binary",
    "majority",
    "question_result",
    "results",
    "results_document",
    "timeline",
]
