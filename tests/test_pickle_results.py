"""Every result object crosses a process boundary: pickle (and deepcopy) keep its content.

The estimates of every mechanism are checked by the conformance suite
(``test_results_pickle``); here the results built on top of them: simulations, studies,
survey analyses and reports, power and regression results, majority decisions, Kuk's
likelihood interval.  Each must rebuild with equal plain-data form (its ``to_dict`` or
its fields), which fails if any part (an interval, a note) is a closure.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from deniable import (
    Kuk,
    TwoCoin,
    Warner,
    analyze,
    logistic_rr,
    majority_decision,
    power,
    simulate,
    survey_report,
)
from deniable.designs import CheaterDetection, StochasticLieDetector, Tally
from deniable.simulation import simulation_study

SLD = StochasticLieDetector(2 / 12, 10 / 12)


def _same(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    if hasattr(a, "to_dict"):
        assert b.to_dict() == a.to_dict()
    elif hasattr(a, "table"):
        assert str(b.table()) == str(a.table())
    else:
        assert repr(b) == repr(a)


def _frame() -> pd.DataFrame:
    return simulate(TwoCoin(), 500, 0.3, seed=1).to_frame()


def _two_group_frame() -> pd.DataFrame:
    return simulate(SLD, 2000, 0.3, honesty=0.8, seed=1).to_frame()


def _logistic() -> Any:
    rng = np.random.default_rng(1)
    x = rng.normal(size=800)
    truth = (rng.random(800) < 1 / (1 + np.exp(-x))).astype(np.uint8)
    y = Warner(0.8).randomize(truth, rng=rng)
    return logistic_rr("y ~ x", pd.DataFrame({"y": y, "x": x}), Warner(0.8))


RESULTS: dict[str, Callable[[], Any]] = {
    "estimate": lambda: Warner(0.75).estimate(yes=400, n=1000),
    "kuk-mle": lambda: Kuk(0.8, 0.4, draws=3).estimate(Tally([10, 20, 30, 40]), method="mle"),
    "kuk-moment": lambda: Kuk(0.8, 0.4, draws=3).estimate(Tally([10, 20, 30, 40])),
    "two-group-estimate": lambda: SLD.estimate(yes=(373, 398), n=(564, 692)),
    "simulation": lambda: simulate(TwoCoin(), 1000, 0.3, seed=1),
    "two-group-simulation": lambda: simulate(SLD, 1000, 0.3, honesty=0.8, seed=1),
    "study": lambda: simulation_study(TwoCoin(), 200, 0.3, replications=50, seed=1),
    "two-group-study": lambda: simulation_study(
        CheaterDetection(0.2, 0.6), 400, 0.3, replications=50, seed=1
    ),
    "analysis": lambda: analyze(_frame(), "report", TwoCoin()),
    "two-group-analysis": lambda: analyze(_two_group_frame(), "report", SLD, group="rr_group"),
    "survey-report": lambda: survey_report(_frame(), {"report": TwoCoin()}),
    "power": lambda: power(Warner(0.75), 1000, 0.3, null=0.2),
    "majority": lambda: majority_decision(Warner(0.75), 101, prevalence=0.6),
    "logistic": _logistic,
}


@pytest.mark.parametrize("make", list(RESULTS.values()), ids=list(RESULTS))
def test_result_pickles(make: Callable[[], Any]) -> None:
    result = make()
    _same(result, pickle.loads(pickle.dumps(result)))
    _same(result, copy.deepcopy(result))


def test_estimate_intervals_survive_pickle() -> None:
    est = Warner(0.75).estimate(yes=40, n=1000)  # below P(yes | 0): a level note
    again = pickle.loads(pickle.dumps(est))
    for method in est.interval_methods:
        assert again.ci(0.9, method) == est.ci(0.9, method)
    assert again.notes_at(0.99) == est.notes_at(0.99) and est.notes
