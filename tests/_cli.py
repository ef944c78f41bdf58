"""What the command-line tests share, once: a quiet terminal of a fixed width, the runner
call, the JSON call (standard JSON only) and the one-error check (exit status 2, exactly
one `error: ...` line on stderr naming each needle, no traceback, nothing on stdout).

A command group's tests take the helpers bound to it (``run_privacy`` runs
``deniable privacy ...``), so a test file imports what it uses under the short names.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from typer.testing import CliRunner

from deniable.cli import app


def terminal(columns: int) -> dict[str, str | None]:
    """A dumb terminal ``columns`` wide with no colour: output compares byte for byte."""
    return {"COLUMNS": str(columns), "LINES": "50", "NO_COLOR": "1", "FORCE_COLOR": None,
            "TERM": "dumb"}  # fmt: skip


ENV = terminal(100)
ENV_80 = terminal(80)
ENV_120 = terminal(120)


def no_constant(name: str) -> Any:
    """``json.loads``'s ``parse_constant``: NaN and Infinity are not standard JSON."""
    raise AssertionError(f"JSON output contains the non-standard constant {name}")


def run(runner: CliRunner, *args: Any) -> Any:
    """``deniable ARGS`` (each argument as text); an exception escapes as a test failure."""
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def run_json(runner: CliRunner, *args: Any, code: int = 0) -> Any:
    """``deniable ARGS --json``: exit status ``code``, nothing on stderr, standard JSON."""
    result = run(runner, *args, "--json")
    assert result.exit_code == code, result.output
    assert result.stderr == ""
    return json.loads(result.stdout, parse_constant=no_constant)


def one_error(result: Any, *needles: str) -> str:
    """The one ``error: ...`` line of a refused command (exit 2), naming each needle."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert result.stdout == ""
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return str(lines[0])


def command(*group: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``run`` and ``run_json`` of one command group (``command("privacy")``)."""

    def run_group(runner: CliRunner, *args: Any) -> Any:
        return run(runner, *group, *args)

    def run_group_json(runner: CliRunner, *args: Any, code: int = 0) -> Any:
        return run_json(runner, *group, *args, code=code)

    return run_group, run_group_json


run_privacy, run_privacy_json = command("privacy")
run_regress, run_regress_json = command("regress")
