"""What the command-line tests share: a quiet terminal, a runner call and the one-error check
(exit status 2, exactly one `error: ...` line on stderr naming each needle, nothing on stdout)."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from deniable.cli import app

ENV = {"COLUMNS": "100", "LINES": "50", "NO_COLOR": "1", "FORCE_COLOR": None, "TERM": "dumb"}


def run(runner: CliRunner, *args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def one_error(result: Any, *needles: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert result.stdout == ""
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return str(lines[0])
