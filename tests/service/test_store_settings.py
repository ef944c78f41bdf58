"""Settings from the environment and .env, and database URLs mapped to psycopg 3."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from deniable.exceptions import ParameterError
from deniable.service.core.settings import Settings
from deniable.service.storage.db import database_url
from deniable.survey import demo_survey

VARS = ("DATABASE_URL", "DENIABLE_DATA", "DENIABLE_SURVEY", "DENIABLE_ADMIN_TOKEN",
        "DENIABLE_ADMIN_PASSWORD", "DENIABLE_PORT", "DENIABLE_BATCH_MAX_ITEMS")  # fmt: skip


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(
    ("url", "expect"),
    [
        ("postgres://u:p@h:5432/d", "postgresql+psycopg://u:p@h:5432/d"),
        ("postgresql://u@h/d?sslmode=require", "postgresql+psycopg://u@h/d?sslmode=require"),
        ("postgresql+psycopg://u@h/d", "postgresql+psycopg://u@h/d"),
        ("sqlite:////abs/x.db", "sqlite:////abs/x.db"),
    ],
)
def test_database_urls_map_to_psycopg(url: str, expect: str) -> None:
    assert database_url(url) == expect


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://h/d", r"must start with sqlite://, postgresql:// or postgres://.*'mysql://'"),
        ("postgresql+psycopg2://h/d", r"must use the psycopg driver"),
        ("just-a-path.db", r"must be a database URL .* got 'just-a-path.db'"),
    ],
)
def test_bad_database_urls_are_named(url: str, message: str) -> None:
    with pytest.raises(ParameterError, match=rf"`database_url` {message}"):
        database_url(url)


def test_defaults(tmp_path: Path) -> None:
    s = Settings()
    assert s.database_url == f"sqlite:///{tmp_path / '.deniable' / 'deniable.db'}"
    assert (s.host, s.port, s.max_body_bytes) == ("127.0.0.1", 8000, 1 << 20)
    assert (s.rate_limit_per_minute, s.batch_max_items) == (600, 10_000)
    assert s.admin_token_generated and len(s.admin_token) >= 43
    assert Settings().admin_token != s.admin_token
    assert s.admin_password is None and s.survey() == demo_survey()
    assert s.admin_token not in repr(s)


def test_environment_and_dotenv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DENIABLE_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("DENIABLE_ADMIN_TOKEN", "t" * 40)
    (tmp_path / ".env").write_text("DENIABLE_PORT=9001\nDENIABLE_ADMIN_PASSWORD=pw\n")
    s = Settings()
    assert s.database_url == f"sqlite:///{tmp_path / 'data' / 'deniable.db'}"
    assert s.port == 9001 and s.admin_password == "pw"
    assert s.admin_token == "t" * 40 and not s.admin_token_generated
    assert "pw" not in repr(s) and "t" * 40 not in repr(s)
    monkeypatch.setenv("DATABASE_URL", "postgres://u@db/survey")
    assert Settings().database_url == "postgresql+psycopg://u@db/survey"
    assert Settings(database_url="sqlite:///x.db").database_url == "sqlite:///x.db"


def test_bad_settings_name_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENIABLE_PORT", "70000")
    with pytest.raises(ValidationError, match="port"):
        Settings()
    monkeypatch.delenv("DENIABLE_PORT")
    monkeypatch.setenv("DATABASE_URL", "mysql://h/d")
    with pytest.raises(ValidationError, match="`database_url` must start with"):
        Settings()
