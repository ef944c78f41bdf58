"""The operator's commands on the service's database (SQLite and PostgreSQL): `survey invite`
names its database and never loses a batch of links (a failure before the commit removes the
file and the invitations; one after it keeps both), `survey list`, `close` and `reopen`,
PostgreSQL without its driver, and `serve` listing every survey after checking its port."""

from __future__ import annotations

import re
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from _server import Server, free_port
from test_survey_invite import ENV, one_error, run

from deniable.service.storage import ServiceStore, lifecycle
from deniable.survey import Survey, demo_survey

SID = "workplace"
BASE = "https://survey.example.org"


def _invite(db: str, out: Path, *extra: str) -> Any:
    return run("survey", "invite", "--count", "3", "--out", str(out), "--db", db,
               "--base-url", BASE, *extra)  # fmt: skip


def _stored(db: str) -> dict[str, int]:
    store = ServiceStore(db)
    try:
        return {s.id: s.invitations for s in lifecycle.survey_summaries(store)}
    finally:
        store.close()


def _tokens(out: Path) -> list[str]:
    return [line.rsplit("invitation=", 1)[1] for line in out.read_text().splitlines()]


def test_invite_names_the_database_and_hides_its_password(db_url: str, tmp_path: Path) -> None:
    if db_url.startswith("postgresql://postgres@"):  # a password (the test server trusts)
        db_url = db_url.replace("postgres@", "postgres:pw-secret-1@", 1)
    res = _invite(db_url, tmp_path / "links.txt")
    assert res.exit_code == 0, res.output
    shown = re.search(r"database: (\S+)", res.stdout)
    assert shown is not None
    if db_url.startswith("sqlite"):
        assert shown.group(1) == db_url
    else:
        assert shown.group(1).startswith("postgresql+psycopg://postgres:***@")
        assert shown.group(1).endswith(db_url.rsplit("/", 1)[1])
        assert "pw-secret-1" not in res.output
    assert f"links:    {BASE}/s/{SID}?invitation=..." in res.stdout


def test_the_base_url_comes_from_the_environment(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from deniable.cli import app

    out = tmp_path / "links.txt"
    env = {**ENV, "DENIABLE_BASE_URL": "https://env.example.org/survey/"}
    argv = ["survey", "invite", "--count", "1", "--out", str(out)]
    argv += ["--db", f"sqlite:///{tmp_path}/d.db"]
    res = CliRunner(env=env).invoke(app, argv, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert out.read_text().startswith("https://env.example.org/survey/s/workplace?invitation=")


def test_an_existing_links_file_is_never_replaced(tmp_path: Path) -> None:
    out = tmp_path / "links.txt"
    out.write_text("links of an earlier batch\n")
    db = f"sqlite:///{tmp_path}/d.db"
    one_error(_invite(db, out), "`--out`", "exists", "never replaced")
    assert out.read_text() == "links of an earlier batch\n"
    assert not Path(f"{tmp_path}/d.db").exists()  # refused before the database is touched


def test_a_failure_after_writing_the_links_removes_them_and_the_invitations(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The links are written inside the transaction; the commit then fails: no invitation
    is stored, and the file (whose links would not work) is removed."""
    real = ServiceStore.create_invitations
    wrote: list[bool] = []

    def failing(self: ServiceStore, sid: str, count: int, *, before_commit: Any = None) -> Any:
        def then_fail(tokens: list[str]) -> None:
            before_commit(tokens)
            wrote.append(out.exists())
            raise OSError("the connection was lost before COMMIT")

        return real(self, sid, count, before_commit=then_fail)

    out = tmp_path / "links.txt"
    monkeypatch.setattr(ServiceStore, "create_invitations", failing)
    one_error(_invite(db_url, out), "no invitation was created", "was removed")
    assert wrote == [True]  # the file was there before the commit was attempted
    assert not out.exists()
    assert _stored(db_url) == {SID: 0}
    assert list(tmp_path.glob(".links.txt.*")) == []  # no temporary file left


def test_a_failure_after_committing_keeps_the_links_and_the_invitations(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit went through and the client then sees an error (an ambiguous commit):
    the database is asked, the invitations are there, and the links are kept."""
    real = ServiceStore.create_invitations

    def committed_then_failed(self: ServiceStore, sid: str, count: int, **kw: Any) -> Any:
        real(self, sid, count, **kw)
        raise ConnectionError("the server closed the connection after COMMIT")

    out = tmp_path / "links.txt"
    monkeypatch.setattr(ServiceStore, "create_invitations", committed_then_failed)
    one_error(_invite(db_url, out), "3 invitations are in the database", "keep the file")
    monkeypatch.undo()
    tokens = _tokens(out)
    assert len(tokens) == 3 and _stored(db_url) == {SID: 3}
    store = ServiceStore(db_url)
    try:
        for t in tokens:  # every link works
            store.open_session(SID, t)
    finally:
        store.close()


def test_an_unknowable_commit_keeps_the_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = ServiceStore.create_invitations

    def committed_then_failed(self: ServiceStore, sid: str, count: int, **kw: Any) -> Any:
        real(self, sid, count, **kw)
        raise ConnectionError("lost")

    def cannot_tell(*args: Any) -> int:
        raise ConnectionError("the database is gone")

    out = tmp_path / "links.txt"
    monkeypatch.setattr(ServiceStore, "create_invitations", committed_then_failed)
    monkeypatch.setattr(lifecycle, "invitations_stored", cannot_tell)
    one_error(_invite(f"sqlite:///{tmp_path}/d.db", out), "unknown", "the file is kept")
    assert len(_tokens(out)) == 3


def test_invite_counts_are_what_one_transaction_takes(tmp_path: Path) -> None:
    from deniable.cli._survey_db import MAX_INVITATIONS
    from deniable.service.storage import MAX_INVITATIONS as STORE_MAX

    assert MAX_INVITATIONS == STORE_MAX
    res = run("survey", "invite", "--count", str(STORE_MAX + 1), "--out", str(tmp_path / "l"),
              "--db", f"sqlite:///{tmp_path}/d.db", "--base-url", BASE)  # fmt: skip
    one_error(res, "--count", str(STORE_MAX))
    assert not (tmp_path / "l").exists()


def test_invite_for_a_closed_survey_says_when_the_links_work(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/d.db"
    store = _load(db, demo_survey())
    lifecycle.close_survey(store, SID)
    store.close()
    res = _invite(db, tmp_path / "links.txt")
    assert res.exit_code == 0, res.output
    assert "is closed (deniable survey reopen workplace): the links work once" in res.stdout


def _other(sid: str = "mine") -> Survey:
    data = demo_survey().to_dict()
    data.update(id=sid, title=f"Survey {sid}", respondents="invitation")
    return Survey.from_dict(data)


def test_invite_never_slips_the_demo_survey_into_a_database(tmp_path: Path) -> None:
    """Without --survey, a database's one survey is the one invited to (before: the demo
    survey was loaded into it, live and anonymous); with several, the command asks."""
    db = f"sqlite:///{tmp_path}/d.db"
    _load(db, _other()).close()
    res = _invite(db, tmp_path / "a.txt")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "a.txt").read_text().startswith(f"{BASE}/s/mine?invitation=")
    assert _stored(db) == {"mine": 3}  # no demo survey
    _load(db, _other("second")).close()
    one_error(_invite(db, tmp_path / "b.txt"), "`--survey`", "several surveys", "'second'")
    assert not (tmp_path / "b.txt").exists()
    res = _invite(db, tmp_path / "c.txt", "--survey", "second")  # by id
    assert res.exit_code == 0, res.output
    assert _stored(db) == {"mine": 3, "second": 3}
    one_error(_invite(db, tmp_path / "d.txt", "--survey", "nope"), "`--survey`", "'mine'")
    empty = f"sqlite:///{tmp_path}/e.db"
    assert _invite(empty, tmp_path / "e.txt").exit_code == 0  # an empty database: the demo
    assert _stored(empty) == {SID: 3}


def test_serve_never_slips_the_demo_survey_into_a_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    ran: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.append(kw))
    db = f"sqlite:///{tmp_path}/d.db"
    _load(db, _other()).close()
    monkeypatch.setattr("deniable.service.core.logging.configure_logging", lambda: None)
    res = run("serve", "--db", db, "--port", str(free_port()))
    assert res.exit_code == 0, res.output
    assert len(ran) == 1
    assert "Survey 'mine'" in res.stdout and "workplace" not in res.stdout
    assert _stored(db) == {"mine": 0}  # the demo survey was not added
    empty = f"sqlite:///{tmp_path}/e.db"
    res = run("serve", "--db", empty, "--port", str(free_port()))
    assert res.exit_code == 0 and "Survey 'workplace'" in res.stdout


# ------------------------------------------------------------------ list, close, reopen


def _load(db: str, *surveys: Survey) -> ServiceStore:
    store = ServiceStore(db)
    store.migrate()
    for s in surveys:
        store.load_survey(s)
    return store


def test_list_close_and_reopen(db_url: str) -> None:
    data = demo_survey().to_dict()
    data.update(id="invited", respondents="invitation", title="By invitation")
    store = _load(db_url, demo_survey(), Survey.from_dict(data))
    try:
        _, rid = store.open_session(SID, None)
        store.submit(SID, rid, "happy", 1)
        res = run("survey", "list", "--db", db_url)
        assert res.exit_code == 0, res.output
        assert "2 survey(s) in" in res.stdout
        assert re.search(r"invited\s+1\s+invitation\s+live", res.stdout)
        assert re.search(r"workplace\s+1\s+anonymous\s+live\s+1\s+1", res.stdout)
        res = run("survey", "close", SID, "--db", db_url)
        assert res.exit_code == 0, res.output
        assert "closed survey 'workplace'" in res.stdout
        assert "its 1 reports from 1 respondents are kept" in res.stdout
        assert not store.survey(SID).is_open()
        assert store.submit(SID, rid, "hours", 0).status == "closed"
        again = run("survey", "close", SID, "--db", db_url)
        assert again.exit_code == 0 and "was closed already" in again.stdout
        listed = run("survey", "list", "--db", db_url, "--json")
        import json

        doc = json.loads(listed.stdout)
        states = {s["id"]: s["state"] for s in doc["surveys"]}
        assert states == {"invited": "live", "workplace": "closed"}
        res = run("survey", "reopen", SID, "--db", db_url, "--json")
        assert json.loads(res.stdout)["changed"] is True
        assert store.survey(SID).is_open()
        assert store.submit(SID, rid, "hours", 0).status == "stored"
        one_error(run("survey", "close", "nope", "--db", db_url), "`survey`", "'workplace'")
    finally:
        store.close()


@pytest.mark.parametrize("command", [["list"], ["close", "workplace"], ["reopen", "workplace"]])
def test_a_missing_database_file_is_one_error_and_is_not_created(
    tmp_path: Path, command: list[str]
) -> None:
    db = tmp_path / "none.db"
    one_error(run("survey", *command, "--db", f"sqlite:///{db}"), "`--db`", "no database")
    assert not db.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["survey", "list"],
        ["survey", "close", "workplace"],
        ["survey", "invite", "--count", "1", "--out", "links.txt", "--base-url", BASE],
        ["serve", "--port", "0"],
    ],
)
def test_postgresql_without_its_driver_is_one_error_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in [m for m in sys.modules if m == "psycopg" or m.startswith("psycopg.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    if argv[0] == "serve":
        argv = ["serve", "--port", str(free_port())]
    res = run(*argv, "--db", "postgresql://user:secret@localhost/survey")
    one_error(res, "pip install 'deniable[postgres]'", "`--db`")
    assert "secret" not in res.output
    assert not (tmp_path / "links.txt").exists()


# ------------------------------------------------------------------ serve


def test_serve_refuses_a_taken_port_before_printing_or_writing(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        db = tmp_path / "s.db"
        res = run("serve", "--db", f"sqlite:///{db}", "--host", "127.0.0.1", "--port", str(port))
    one_error(res, "`--port`", str(port), "another program")
    assert res.stdout == ""  # no URL printed
    assert not db.exists()


def test_serve_lists_every_survey_and_warns_of_a_lowered_cap(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/s.db"
    other = demo_survey().to_dict()
    other.update(id="second", title="Second survey", respondents="invitation")
    closed = demo_survey().to_dict()
    closed.update(id="old", title="Old survey")
    store = _load(db, demo_survey(), Survey.from_dict(other), Survey.from_dict(closed))
    _, rid = store.open_session(SID, None)
    store.submit_batch(SID, [(rid, "happy", 1), (rid, "harassment", 0)])  # spends 2.0986
    lifecycle.close_survey(store, "old")
    store.close()
    lowered = demo_survey().to_dict()
    lowered.update(version=2, cap=1.5)
    path = tmp_path / "v2.json"
    path.write_text(Survey.from_dict(lowered).to_json())
    server = Server(db, tmp_path, extra_args=["--survey", str(path)])
    server.start()
    try:
        out = server.stdout()
    finally:
        server.stop()
    assert f"database:        {db}" in out
    for sid in (SID, "second"):
        assert f"respondent page: {server.base}/s/{sid}" in out
        assert f"dashboard:       {server.base}/dashboard/{sid}" in out
    assert out.index("Survey 'workplace'") < out.index("Survey 'second'")  # the one served first
    assert "by invitation" in out and "deniable survey invite" in out
    assert "Survey 'old': Old survey: closed (deniable survey reopen old)" in out
    assert f"respondent page: {server.base}/s/old" not in out
    assert "warning: survey 'workplace' version 2 lowers the cap to 1.5" in out
    assert "1 respondent(s)" in out
