"""Fuzzing the command line (issue 7): every command, found by walking the Typer app, run
with generated arguments (doc examples with extreme or malformed values swapped in,
unicode, odd paths and files, a terminal that only speaks ASCII).

Every run must end (a watchdog catches a hang) with exit status 0, 1 or 2; print no
traceback and no warning; on status 2 print exactly one ``error:`` line; with ``--json``
and status 0 print strict JSON (no NaN or Infinity); leave the input files unchanged (an
input named only as an output may be replaced with ``--force``), and leave existing
outputs and links to an input as they were unless ``--force`` is given.  Runs happen in a
worker process with limits on memory, output and file size (see tests/_fuzz_harness.py),
so a run that would allocate, print or write without bound fails here instead of
exhausting the machine; no run is judged by how fast it ran.

The default suite runs a bounded number of cases per command; ``-m slow`` runs many more.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

import _fuzz_harness as h
import _fuzz_strategies as fs

# `serve` runs a server until it is stopped: its bad input is tested in
# tests/service/test_serve.py, not by generated command lines.
COMMANDS = [c for c in h.walk_commands() if c.name != "serve"]
# `telemetry aggregate` of a Parquet or CSV report table starts a Dask cluster (worker
# processes, seconds to start on every case): its bad input is
# tested in tests/test_distributed.py.  The fuzzer keeps its report-file examples; a
# generated table path fails before any cluster starts (no such file, no oracle key, or a
# CSV without --mechanism).
for _c in COMMANDS:
    if _c.name == "telemetry aggregate":
        _c.examples = [e for e in _c.examples if not any(".parquet" in t for t in e)]
IDS = [c.name.replace(" ", "-") for c in COMMANDS]


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return h.make_fixture_dir(tmp_path_factory.mktemp("fuzz"))


@pytest.fixture(scope="module")
def worker(fuzz_dir: Path) -> Iterator[h.Worker]:
    w = h.Worker(fuzz_dir)
    yield w
    w.close()


def check_case(worker: h.Worker, root: Path, case: fs.CliCase) -> dict[str, Any]:
    before = h.fixture_state(root)
    result = worker.run(case.request())
    problems = h.cli_problems(case.argv, result)
    problems += h.fixture_problems(root, case.argv, before)
    detail = (result.get("crash") or "")[-2000:]
    assert not problems, f"{case.show()}\n" + "\n".join(problems) + "\n" + detail
    return result


def _fuzz(cmd: h.Command, worker: h.Worker, root: Path, examples: int) -> None:
    @settings(
        max_examples=examples,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: a case can take seconds
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=fs.cli_case(cmd))
    def run(case: fs.CliCase) -> None:
        check_case(worker, root, case)

    run()


def test_the_walk_finds_every_command() -> None:
    names = {c.name for c in COMMANDS}
    assert {"designs", "estimate", "majority", "simulate", "tour"} <= names
    assert {"privacy compose", "privacy audit", "privacy budget"} <= names
    assert all(c.examples for c in COMMANDS if c.name != "tour"), "docs examples are found"
    options = {c.name: {o for p in c.params for o in p.opts} for c in COMMANDS}
    writing = {n for n, opts in options.items() if opts & h.OUTPUT_OPTIONS}
    assert {"report", "power", "spec vectors", "telemetry simulate"} <= writing
    # `survey invite` never replaces its file of single-use links, --force or not
    assert all("--force" in options[n] for n in writing if n != "survey invite")
    assert {"--se", "--method"} <= options["estimate"]


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_fuzz_command(cmd: h.Command, worker: h.Worker, fuzz_dir: Path) -> None:
    _fuzz(cmd, worker, fuzz_dir, examples=10)


@pytest.mark.slow
@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_fuzz_command_long(cmd: h.Command, worker: h.Worker, fuzz_dir: Path) -> None:
    _fuzz(cmd, worker, fuzz_dir, examples=300)


#: Command lines that once ended in a traceback, a MemoryError, a hang or a warning, with
#: the exit status they must end with now.
REGRESSIONS = [
    ("privacy compose --epsilon 0", 0),
    ("privacy compose --epsilon 0.01 --count 1000000000", 0),
    ("privacy compose --epsilon 0.01 --count 1000000000 --method optimal", 2),
    ("privacy compose --epsilons 0.5,0.3,0.2 --count 3130305293815816 --k 4 --method pld", 2),
    ("privacy compose --epsilon 0.5 --count " + "1" + "0" * 330, 0),
    ("majority two-coin --n 1000000000000000000000 --prevalence 0.49", 0),
    ("majority two-coin --n 1000000000000000000000 --true-yes 3", 2),
    ("majority two-coin --n 100 --prevalence 0.6 --simulate 100000000000", 2),
    ("majority two-coin --n 2000 --prevalence " + "1" + "0" * 400, 2),
    ("simulate two-coin --n 100000000000000 --prevalence 0.3 --seed 1", 2),
    ("simulation-study two-coin --n 1000 --prevalence 0.3 --replications 100000000000", 2),
    ("simulation-study two-coin --n 100000000000000000000 --prevalence 0.3", 2),
    ("tour --n 1000000000", 2),
    ("privacy explain --epsilon 1e1000", 2),
    ("privacy audit unary-broken --epsilon 700 --seed 1 --trials 1000", 0),
    ("privacy shuffle --epsilon0 1 --n-grid 18446744073709551616,10000", 0),
    ("privacy shuffle --epsilon0 1 --n 1e400", 2),
    ("privacy shuffle --epsilon0 1 --n 100000000000 --method numerical", 2),
    ("privacy budget --cap 1 --question a=1.7976931348623157e+308 --question b=0.25", 0),
    ("estimate two-coin --yes 10000000000000000 --n 1000000000000000000", 0),
    ("estimate two-coin --yes 1 --n 10000000000000000000 --json", 2),
    ("telemetry choose --k 64 --epsilon 7.560296645572211e-206 --n 100000", 2),
    # a decimal exponent of 22 digits was read as an exact Fraction: 10**exponent, a hang
    (
        "privacy compose --epsilon 0.0 --count=2005 "
        "--delta 6.276951789613612e+1000000000000000000000 --k 2005",
        2,
    ),
    ("privacy compose --epsilon 1 --count 2e+99999999999999 --delta 0.1", 2),
    ("estimate warner --param p=1e-99999999999/2 --yes 3 --n 10", 2),
    # issue 14: outputs never replace a file unasked, never an input, in the format named
    ("report survey.csv -q drugs=two-coin --html survey-link.html --force", 2),
    ("report survey.csv -q drugs=two-coin --html survey-hardlink.html --force", 2),
    ("report reports.csv -q answer=two-coin --html existing.html", 2),
    ("report reports.csv -q answer=two-coin --html existing.html --force", 0),
    ("report reports.csv -q answer=two-coin --html survey-link.html --force", 0),
    ("telemetry simulate --out existing.dnrp --devices 10 --k 4 --epsilon 1 --seed 1", 2),
    ("telemetry simulate --out existing.csv.gz --devices 10 --k 4 --epsilon 1 --format parquet", 2),
    ("telemetry simulate --out survey.csv --devices 10 --k 4 --epsilon 1 --seed 1 --force", 0),
    ("privacy explain --epsilon 1 --plot existing.svg", 2),
    ("spec vectors --out null-device", 0),
    ("estimate kuk -p theta1=0.8 -p theta2=0.4 -p draws=3 --counts 1,2,3,4 --se model", 0),
    # issue 14: ZeroDivisionError, OverflowError, MemoryError or an endless loop before
    ("privacy noise --mechanism discrete-laplace --epsilon 1e-300", 0),
    ("privacy noise --mechanism laplace --epsilon 5e-324", 2),
    (
        "privacy noise --mechanism gaussian --epsilon 0.5 --delta 0.9999999999999999 "
        "--sensitivity 1e-300",
        0,
    ),
    ("privacy noise --mechanism gaussian --rho 700 --sensitivity 5e-324", 2),
    (
        "privacy noise --mechanism discrete-gaussian --epsilon 0.5 --delta 0.5 --sensitivity "
        "1000000000000000",
        2,
    ),
    ("privacy noise --mechanism discrete-gaussian --rho 5e-324", 2),
    ("privacy noise --mechanism discrete-gaussian --rho 1e-12 --delta 1e-10", 2),
    ("privacy noise --table --epsilons 5e-324 --delta 1e-300", 2),
    # issue 14: the categorical audit was O(k^3) in memory (9 GB at k = 200)
    (
        "privacy audit categorical --param k=200 --param p_truthful=0.5 --trials 1000 --seed 1 "
        "--json",
        0,
    ),
    ("privacy audit categorical --param k=1025 --param p_truthful=0.5 --trials 10", 2),
]


@pytest.mark.parametrize(("line", "status"), REGRESSIONS)
def test_regressions(line: str, status: int, worker: h.Worker, fuzz_dir: Path) -> None:
    case = fs.CliCase(line.split())
    assert check_case(worker, fuzz_dir, case)["code"] == status


def _issue14_files() -> dict[str, bytes]:
    """Small files that asked for unbounded work or ended in a traceback (issue 14)."""
    import numpy as np

    from deniable.designs import Categorical
    from deniable.oracles import OLH, write_reports
    from deniable.survey import demo_survey_text

    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory() as tmp:
        oracles = {
            "huge-k.dnrp": OLH.from_epsilon(1.0, k=1 << 24),
            "grr-65536.dnrp": Categorical.from_epsilon(1.0, k=1 << 16),
        }
        for name, oracle in oracles.items():
            reports = oracle.randomize(np.zeros(3, dtype=np.int64), rng=np.random.default_rng(0))
            write_reports(Path(tmp) / name, oracle, reports)
            out[name] = (Path(tmp) / name).read_bytes()
    survey = demo_survey_text()
    out["survey-dup.yaml"] = survey.replace("\ncap: ", "\ncap: 100\ncap: ", 1).encode()
    out["survey-deep.yaml"] = ("x: " + "[" * 5000 + "]" * 5000 + "\n").encode()
    out["survey-big.yaml"] = ("version: " + "9" * 5000 + "\n" + survey).encode()
    laughs = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    laughs += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    out["survey-laughs.yaml"] = "\n".join(laughs).encode()
    out["spec-huge-int.json"] = b'{"schema": ' + b"9" * 5000 + b"}"
    out["spec-deep.json"] = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    return out


#: Command lines on the files of :func:`_issue14_files`, with the exit status they must end
#: with now (a traceback, a RecursionError, gigabytes of output or minutes of work before).
FILE_REGRESSIONS = [
    ("aggregate huge-k.dnrp --json", 2),
    ("aggregate huge-k.dnrp --json --rows 3", 0),
    ("aggregate huge-k.dnrp", 0),
    ("aggregate grr-65536.dnrp --rows 3", 0),
    ("telemetry aggregate grr-65536.dnrp --json --rows 40", 0),
    ("survey validate survey-dup.yaml", 2),
    ("survey validate survey-deep.yaml", 2),
    ("survey validate survey-big.yaml", 2),
    ("survey validate survey-laughs.yaml", 2),
    ("spec check spec-huge-int.json", 2),
    ("spec check spec-deep.json", 2),
]


@pytest.mark.parametrize(("line", "status"), FILE_REGRESSIONS)
def test_file_regressions(line: str, status: int, worker: h.Worker, fuzz_dir: Path) -> None:
    for name, data in _issue14_files().items():
        if not (fuzz_dir / name).exists():
            (fuzz_dir / name).write_bytes(data)
    case = fs.CliCase(line.split())
    assert check_case(worker, fuzz_dir, case)["code"] == status


@pytest.mark.parametrize("line", ["designs", "estimate two-coin --yes 400 --n 1000"])
def test_an_ascii_terminal_gets_ascii_stand_ins(
    line: str, worker: h.Worker, fuzz_dir: Path
) -> None:
    result = worker.run(fs.CliCase(line.split(), encoding="ascii").request())
    assert result["code"] == 0 and not result["crash"], result
    assert "eps" in result["stdout"] and "\\u" not in result["stdout"]


# --------------------------------------------------------------------------- real processes


def _deniable(*args: str, **kw: object) -> subprocess.CompletedProcess[bytes]:
    code = "from deniable.cli import main; main()"
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kw}
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", code, *args], timeout=h.HANG_LIMIT, **streams
    )


def test_a_non_utf8_terminal_gets_no_traceback() -> None:
    env = dict(os.environ, LC_ALL="C", PYTHONIOENCODING="ascii", COLUMNS="100")
    done = _deniable("privacy", "explain", "--epsilon", "1", env=env)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr and done.stderr == b""
    done = _deniable("estimate", "warner", "-p", "p=ε", "--yes", "1", "--n", "2", env=env)
    assert done.returncode == 2
    assert done.stderr.startswith(b"error: ") and done.stderr.count(b"\n") == 1


def test_a_closed_pipe_gets_one_error_line() -> None:
    code = "from deniable.cli import main; main()"
    writer = subprocess.Popen(
        [sys.executable, "-c", code, "designs"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert writer.stdout is not None and writer.stderr is not None
    writer.stdout.close()  # the reader is gone before the first write, like `| head -0`
    err = writer.stderr.read()
    writer.stderr.close()
    assert writer.wait(timeout=h.HANG_LIMIT) == 1
    assert err == b"error: the output was cut short: the program reading it closed the pipe.\n"


def test_a_full_disk_gets_one_error_line(tmp_path: Path) -> None:
    device = Path("/dev/full")
    if os.geteuid() == 0:  # root makes its own node: the suite writes nothing under /dev
        device = tmp_path / "full"
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    with open(device, "wb") as full:
        done = _deniable("designs", "--json", stdout=full, stderr=subprocess.PIPE)
    assert done.returncode == 1
    assert done.stderr == b"error: cannot write the output: No space left on device.\n"
