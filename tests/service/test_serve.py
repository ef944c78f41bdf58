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
from _server import ADMIN, Server
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


def test_workers_share_one_database(tmp_path: Path) -> None:
    server = Server(f"sqlite:///{tmp_path}/w.db", tmp_path, extra_args=["--workers", "2"])
    server.start()
    try:
        with httpx.Client(base_url=server.base, timeout=10.0) as c:
            tokens = [c.post("/api/surveys/workplace/sessions", json={}).json()["token"]
                      for _ in range(20)]  # fmt: skip
            for t in tokens:  # connections spread over both processes: each knows every token
                with httpx.Client(base_url=server.base, timeout=10.0) as fresh:
                    r = fresh.post("/api/surveys/workplace/reports",
                                   json={"question": "happy", "report": 1},
                                   headers={"Authorization": f"Bearer {t}"})  # fmt: skip
                    assert r.status_code == 201, r.text
            r = c.get("/api/surveys/workplace/protocols",
                      headers={"Authorization": f"Bearer {ADMIN}"})  # fmt: skip
            assert r.status_code == 200
    finally:
        server.stop()
    logs = server.logs()
    assert logs.count('"path":"/api/surveys/{survey_id}/reports"') == 20
    assert not any(t in logs for t in tokens)


def test_dashboard_sessions_are_shared_by_the_workers_and_end_at_logout(tmp_path: Path) -> None:
    server = Server(f"sqlite:///{tmp_path}/w.db", tmp_path, extra_args=["--workers", "2"])
    server.start()
    try:
        with httpx.Client(base_url=server.base, timeout=10.0) as c:
            r = c.post("/dashboard/login", data={"secret": ADMIN})
            assert r.status_code == 303, r.text
            cookie = r.cookies["deniable_admin"]

        def status() -> set[int]:  # fresh connections: spread over both processes
            seen = set()
            for _ in range(12):
                with httpx.Client(base_url=server.base, timeout=10.0) as fresh:
                    fresh.cookies.set("deniable_admin", cookie)
                    seen.add(fresh.get("/api/surveys/workplace/results").status_code)
            return seen

        assert status() == {200}
        with httpx.Client(base_url=server.base, timeout=10.0) as c:
            c.cookies.set("deniable_admin", cookie)
            assert c.post("/dashboard/logout").status_code == 303
        assert status() == {401}  # every process knows the session has ended
    finally:
        server.stop()
    sessions = tmp_path / "sessions.db"  # in the data directory, the owner's only
    assert sessions.exists() and sessions.stat().st_mode & 0o777 == 0o600
