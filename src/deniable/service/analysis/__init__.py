"""The analyst's numbers, as plain JSON-ready dicts: pure functions of a survey, its
tallies, the budget each respondent spent and the exported rows (no HTTP, no SQL: import
contracts in ``pyproject.toml``), each made from the library's results (their
``to_dict()``), never computed twice.

Every number the dashboard shows comes from here, and each function is also a JSON endpoint
(:mod:`deniable.service.routes`), so the page and the API cannot disagree:

* :func:`results` -- per question ``n``, the unbiased moment estimate, the bounded MLE, both
  standard errors (plug-in with ``n``, printed; unbiased with ``n - 1``), the exact and Wald
  intervals at ``level`` and the question's epsilon; a categorical question per category
  (each category as the binary design "report j or not");
* :func:`timeline` -- the same at the end of each hour or day (cumulative tallies);
* :func:`budget` -- the distribution of the epsilon each respondent has spent, with the cap;
* :func:`majority` -- the majority decision of a binary question and its exact error
  probabilities (:func:`deniable.estimation.majority_decision`);
* :func:`robustness` -- the fake respondents that would move each estimate;
* :func:`arrival_rates` -- sessions and reports per minute or hour, bursts flagged;
* :func:`design_results` -- under the design attributes of the invitations (stratum, PSU,
  weight), every question's design-based estimate (:func:`deniable.sampling.survey_estimate`)
  with its SE, interval, design effect and degrees of freedom, and under weights raked to
  the survey file's population margins (:mod:`deniable.service.analysis.raking`);
* :func:`export_table` -- the randomized reports, one row per respondent and one column per
  question, then the design attributes of the respondent's invitation if any, with nothing
  else: no respondent id, no time, rows sorted by their reports so that their order
  reveals nothing about who came when.

The estimators are the designs' own (``design.estimate(tally)``), the same code
``deniable analyze`` runs on an export, so the dashboard and an analysis of the export
agree to the last bit.
"""

from __future__ import annotations

from deniable.service.analysis.arrivals import (
    ARRIVAL_BUCKETS,
    BURST_ALPHA,
    BURST_FACTOR,
    MAX_WINDOWS,
    arrival_rates,
    bursts,
)
from deniable.service.analysis.budget import DEFAULT_BINS, budget
from deniable.service.analysis.design import MIN_CELL, design_columns, design_results
from deniable.service.analysis.estimates import (
    BUCKETS,
    NO_BOUND,
    forest_rows,
    is_binary,
    majority,
    question_result,
    results,
    timeline,
)
from deniable.service.analysis.exports import (
    RESULTS_SCHEMA,
    export_columns,
    export_table,
    results_document,
)
from deniable.service.analysis.robustness import DEFAULT_SHIFT, robustness

__all__ = [
    "ARRIVAL_BUCKETS",
    "BUCKETS",
    "BURST_ALPHA",
    "BURST_FACTOR",
    "DEFAULT_BINS",
    "DEFAULT_SHIFT",
    "MAX_WINDOWS",
    "MIN_CELL",
    "NO_BOUND",
    "RESULTS_SCHEMA",
    "arrival_rates",
    "budget",
    "bursts",
    "design_columns",
    "design_results",
    "export_columns",
    "export_table",
    "forest_rows",
    "is_binary",
    "majority",
    "question_result",
    "results",
    "results_document",
    "robustness",
    "timeline",
]
