"""Fuzzing the main public functions (issue 7): designs and their ``from_epsilon``,
estimates, majority decisions, power and sample size, composition and conversions,
shuffling, coin protocols and simulation, called with generated arguments (floats of every
size, NaN and infinities, integers beyond 64 bits, booleans).

Each call must return a result whose numbers are finite where the mathematics is
(``check`` in tests/_fuzz_strategies.py names them) or raise an error from
``deniable.exceptions``; never another exception, a warning or a hang.  Calls run in a
worker process with limits on memory and file size and a watchdog for hangs
(tests/_fuzz_harness.py); no call is judged by how fast it ran.
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


def check_call(worker: h.Worker, expr: str) -> None:
    result = worker.run({"kind": "api", "expr": expr})
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
        check_call(worker, expr)

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
    # text with a huge decimal exponent, read as an exact Fraction of 10**exponent: a hang
    "check(deniable.designs.make_design('warner', {'p': '1e-99999999999/2'}), [])",
    "check(deniable.survey.loads_survey(deniable.survey.demo_survey_text()"
    ".replace('cap: 3.25', 'cap: \"7e+99999999999999999\"')), [])",
]


@pytest.mark.parametrize("expr", REGRESSIONS)
def test_regressions(expr: str, worker: h.Worker) -> None:
    check_call(worker, expr)


# --------------------------------------------------------------------------- the harness


def test_a_hang_is_caught_and_the_worker_restarts(worker: h.Worker) -> None:
    """The watchdog (here with a short limit) ends a call that would never return, kills
    the worker, and the next call gets a fresh one."""
    endless = "any(False for _ in __import__('itertools').count())"
    result = worker.run({"kind": "api", "expr": endless}, hang_limit=2.0)
    assert result == {"hang": 2.0}
    assert fs.api_problems(result) == ["a hang: no answer after 2.0 s"]
    assert worker.run({"kind": "api", "expr": "check(1 + 1, ['x'])"})["crash"] is None


def test_a_file_past_the_limit_cannot_be_written(worker: h.Worker, tmp_path: Path) -> None:
    """The worker's file-size limit turns an unbounded write into an error (EFBIG), not a
    full disk (a sparse file: nothing is written)."""
    path = tmp_path / "big"
    path.touch()
    truncate = "__import__('os').truncate({!r}, {})"
    result = worker.run({"kind": "api", "expr": truncate.format(str(path), h.FILE_LIMIT + 1)})
    assert result["crash"] is not None and "File too large" in result["crash"]
    result = worker.run({"kind": "api", "expr": truncate.format(str(path), h.FILE_LIMIT)})
    assert result == {"crash": None, "error": None, "nonfinite": [], "warnings": []}
    assert path.stat().st_size == h.FILE_LIMIT


def test_unbounded_output_is_a_failure() -> None:
    """What a command prints is counted: past ``OUTPUT_LIMIT`` bytes it is a failure."""
    quiet = {"code": 0, "stdout": "", "stderr": "", "crash": None, "warnings": []}
    assert h.cli_problems(["designs"], {**quiet, "output_bytes": h.OUTPUT_LIMIT}) == []
    loud = {**quiet, "output_bytes": h.OUTPUT_LIMIT + 1}
    assert h.cli_problems(["designs"], loud) == [
        f"unbounded output: {h.OUTPUT_LIMIT + 1} bytes printed"
    ]
