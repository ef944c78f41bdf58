"""Fuzzing the main public functions (issue 7): designs and their ``from_epsilon``,
estimates, majority decisions, power and sample size, composition and conversions,
shuffling, coin protocols and simulation, called with generated arguments (floats of every
size, NaN and infinities, integers beyond 64 bits, booleans).

Each call must, within its time limit, return a result whose numbers are finite where the
mathematics is (``check`` in tests/_fuzz_strategies.py names them) or raise an error from
``deniable.exceptions``; never another exception, a warning or a hang.  Calls run in a
worker process with an address-space limit (tests/_fuzz_harness.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

import _fuzz_harness as h
import _fuzz_strategies as fs


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[h.Worker]:
    w = h.Worker(Path(tmp_path_factory.mktemp("fuzz-api")))
    yield w
    w.close()


def check_call(worker: h.Worker, expr: str, timeout: float) -> None:
    result = worker.run({"kind": "api", "expr": expr}, timeout)
    problems = fs.api_problems(result)
    assert not problems, f"{expr}\n" + "\n".join(problems) + "\n" + (result.get("crash") or "")


def _fuzz(name: str, worker: h.Worker, examples: int) -> None:
    @settings(
        max_examples=examples,
        phases=[Phase.explicit, Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(expr=fs.API_CASES[name])
    def run(expr: str) -> None:
        check_call(worker, expr, timeout=10.0)

    run()


@pytest.mark.parametrize("name", sorted(fs.API_CASES))
def test_fuzz_api(name: str, worker: h.Worker) -> None:
    _fuzz(name, worker, examples=25)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(fs.API_CASES))
def test_fuzz_api_long(name: str, worker: h.Worker) -> None:
    _fuzz(name, worker, examples=1000)


#: Calls that once raised a foreign exception, returned NaN or ran out of memory.
REGRESSIONS = [
    "check(deniable.ForcedResponse(0.2, 0.0).estimate(deniable.Tally.binary(10**16, 10**18)),"
    " ['x.value', 'x.ci(0.95, \"exact\")'])",
    "check(deniable.TwoCoin().estimate(deniable.Tally.binary(10**17 + 1, 10**18)),"
    " ['x.ci(0.95, \"exact\")'])",
    "check(deniable.majority_decision(deniable.ForcedResponse(0.2, 0.0), 68560343965207340,"
    " prevalence=1), ['x.false_positive_rate'])",
    "check(deniable.majority_decision(deniable.Mangat(0.7), 10**159, prevalence=0.3,"
    " offset=34), ['x.error_probability'])",
    "check(accounting.shuffle_epsilon_numerical(5e-324, 0.36, n=4548), ['x'])",
    "check(accounting.advanced_composition(0.5, 1e-6, counts=3.0), ['x'])",
    "check(deniable.simulate(deniable.TwoCoin(), 10**14, 0.3, seed=1), [])",
    "check(accounting.optimal_rr_epsilon(0.01, 1e-6, count=10**9), [])",
]


@pytest.mark.parametrize("expr", REGRESSIONS)
def test_regressions(expr: str, worker: h.Worker) -> None:
    check_call(worker, expr, timeout=10.0)
