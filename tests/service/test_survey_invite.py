"""`deniable survey invite`: single-use invitation links written to a file only its owner can
read, each redeemable once, the database holding none of the tokens; bad options are one
error line and write nothing (SQLite and PostgreSQL)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from typer.testing import CliRunner

from deniable.cli import app
from deniable.exceptions import PrivacyError
from deniable.service.storage import ServiceStore
from deniable.survey import demo_survey_text

STRONG = "x7Qp2Lm9Vd4Kc8Rt1Wz6Hs3Nb5Gf0Yj2Ue4Ia7Oq9Pw"  # an admin token of 256 random bits
ENV = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb", "DENIABLE_SURVEY": None,
       "DATABASE_URL": None, "DENIABLE_ADMIN_TOKEN": STRONG}  # fmt: skip


def run(*args: str) -> Any:
    return CliRunner(env=ENV).invoke(app, list(args), catch_exceptions=False)


def one_error(result: Any, *needles: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_invite_writes_redeemable_single_use_links(db_url: str, tmp_path: Path) -> None:
    survey = tmp_path / "invited.yaml"
    survey.write_text(
        demo_survey_text().replace("respondents: anonymous", "respondents: invitation")
    )
    out = tmp_path / "links.txt"
    res = run("survey", "invite", "--count", "4", "--out", str(out), "--db", db_url,
              "--base-url", "https://survey.example.org/", "--survey", str(survey))  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "anonymous" not in res.stdout
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    links = out.read_text().splitlines()
    assert len(links) == 4 and len(set(links)) == 4
    tokens = []
    for link in links:
        parts = urlsplit(link)
        assert (parts.scheme, parts.netloc, parts.path) == (
            "https", "survey.example.org", "/s/workplace")  # fmt: skip
        (token,) = parse_qs(parts.query)["invitation"]
        assert len(token) >= 43  # 32 random bytes, base64url
        tokens.append(token)
    assert all(t not in res.output for t in tokens)  # written to the file only
    store = ServiceStore(db_url)
    try:
        _, first = store.open_session("workplace", tokens[0])
        _, second = store.open_session("workplace", tokens[1])
        assert first != second
        with pytest.raises(PrivacyError, match="single-use"):
            store.open_session("workplace", tokens[0])
    finally:
        store.close()
    if db_url.startswith("sqlite:///"):
        raw = Path(db_url.removeprefix("sqlite:///")).read_bytes()
        assert all(t.encode() not in raw for t in tokens)  # only hashes are stored


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--count", "0"), "--count"),
        (("--count", "2", "--base-url", "ftp://x"), "`--base-url`"),
        (("--count", "2", "--out", " "), "`--out`"),
        (("--count", "2", "--survey", "missing.yaml", "--base-url", "https://x.org"), "--survey"),
        (("--count", "2"), "`--base-url` (or DENIABLE_BASE_URL) is required"),
        (("--count", "2", "--base-url", "https://"), "`--base-url`"),
        (("--count", "2", "--base-url", "https://x.org/?a=1"), "without a query"),
        (("--count", "2", "--base-url", "https://u:p@x.org"), "user name"),
        (
            ("--count", "2", "--base-url", "https://x.org", "--out", "no/such/dir/l.txt"),
            "does not exist",
        ),
    ],
)
def test_bad_options_are_one_error_and_write_nothing(
    tmp_path: Path, args: tuple[str, ...], needle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["survey", "invite", "--db", f"sqlite:///{tmp_path}/d.db", *args]
    if "--out" not in args:
        argv += ["--out", str(tmp_path / "links.txt")]
    one_error(run(*argv), needle)
    assert not (tmp_path / "links.txt").exists()


def test_an_anonymous_survey_gets_links_and_a_note(tmp_path: Path) -> None:
    out = tmp_path / "links.txt"
    db = f"sqlite:///{tmp_path}/d.db"
    res = run("survey", "invite", "--count", "1", "--out", str(out), "--db", db,
              "--base-url", "http://10.0.0.5:8000")  # fmt: skip
    assert res.exit_code == 0
    assert "also admits anonymous respondents" in res.stdout
    assert out.read_text().startswith("http://10.0.0.5:8000/s/workplace?invitation=")
