"""`deniable serve`: bad options are one `error:` line and exit status 2, `--help` imports
nothing of the service, and a real start prints the URLs and the generated admin token once
(stdout), which then works and never appears in the logs (stderr)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from _server import Server
from typer.testing import CliRunner

from deniable.cli import app

SERVICE_MODULES = ("deniable.service", "fastapi", "uvicorn", "sqlalchemy", "starlette")


def _modules_after(*args: str) -> list[str]:
    code = (
        "import sys\nfrom deniable.cli import main\ntry:\n"
        f"    main({list(args)!r})\nexcept SystemExit:\n    pass\n"
        "print('\\x00MODULES', *sorted(sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})  # fmt: skip
    text, _, modules = done.stdout.partition("\x00MODULES")
    assert "serve" in text
    return modules.split()


@pytest.mark.parametrize("args", [("--help",), ("serve", "--help")])
def test_help_imports_nothing_of_the_service(args: tuple[str, ...]) -> None:
    loaded = _modules_after(*args)
    heavy = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in SERVICE_MODULES)]
    assert heavy == []


@pytest.mark.parametrize(
    ("args", "word"),
    [
        (["--db", "nonsense"], "database_url"),
        (["--db", "mysql://u@h/db"], "database_url"),
        (["--survey", "no-such-file.yaml"], "--survey"),
        (["--port", "0"], "--port"),
        (["--port", "70000"], "--port"),
    ],
)
def test_bad_options_are_one_error_line(
    args: list[str], word: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DENIABLE_DATA", str(tmp_path))
    result = CliRunner().invoke(app, ["serve", *args])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert word in lines[0]
    assert "Traceback" not in result.stderr
    assert list(tmp_path.glob("*.db")) == []  # nothing created


def test_a_bad_survey_file_names_its_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: deniable.survey/1\nid: x\ntitle: t\ncap: -1\nquestions: []\n")
    result = CliRunner().invoke(app, ["serve", "--survey", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --survey:") and "cap" in result.stderr


def test_start_prints_urls_and_the_generated_token_once(tmp_path: Path) -> None:
    server = Server(f"sqlite:///{tmp_path}/s.db", tmp_path, admin=None)
    server.start()
    try:
        out = server.stdout()
        assert f"respondent page: {server.base}/s/workplace" in out
        assert f"dashboard:       {server.base}/dashboard/workplace" in out
        found = re.findall(r"admin token:\s+(\S+)", out)
        assert len(found) == 1 and len(found[0]) >= 40
        token = found[0]
        r = httpx.get(f"{server.base}/api/surveys/workplace/protocols",
                      headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        assert r.status_code == 200
    finally:
        server.stop()
    logs = server.logs()
    assert token not in logs
    assert '"event":"request"' in logs
