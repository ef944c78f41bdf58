"""The service's settings, from the environment and a ``.env`` file (pydantic-settings).

Each setting, its variable and its default:

* ``database_url`` (``DATABASE_URL``): ``sqlite:///<data dir>/deniable.db``
* ``data_dir`` (``DENIABLE_DATA``): ``./.deniable``
* ``survey_file`` (``DENIABLE_SURVEY``): the demo survey
* ``admin_token`` (``DENIABLE_ADMIN_TOKEN``): generated (``admin_token_generated``)
* ``admin_password`` (``DENIABLE_ADMIN_PASSWORD``): none (token login only)
* ``host``, ``port`` (``DENIABLE_HOST``, ``DENIABLE_PORT``): ``127.0.0.1``, ``8000``
* ``max_body_bytes`` (``DENIABLE_MAX_BODY_BYTES``): 1 MiB
* ``rate_limit_per_minute`` (``DENIABLE_RATE_LIMIT_PER_MINUTE``): 600 (per token)
* ``batch_max_items`` (``DENIABLE_BATCH_MAX_ITEMS``): 10,000
* ``admin_guess_limit`` (``DENIABLE_ADMIN_GUESS_LIMIT``): 10 (wrong admin secrets per client
  address and window)
* ``admin_guess_window`` (``DENIABLE_ADMIN_GUESS_WINDOW``): 60 seconds
* ``sessions_file`` (``DENIABLE_SESSIONS_FILE``): in memory; ``deniable serve``: ``<data
  dir>/sessions.db``
* ``session_limit_per_address`` (``DENIABLE_SESSION_LIMIT_PER_ADDRESS``): 30 per window (0:
  off)
* ``session_limit_per_survey`` (``DENIABLE_SESSION_LIMIT_PER_SURVEY``): 6000 per window (0:
  off)
* ``session_window_seconds`` (``DENIABLE_SESSION_WINDOW_SECONDS``): 600 (the sliding window)
* ``max_connections`` (``DENIABLE_MAX_CONNECTIONS``): 1,000 (per server process)
* ``header_timeout`` (``DENIABLE_HEADER_TIMEOUT``): 10 seconds
* ``body_timeout`` (``DENIABLE_BODY_TIMEOUT``): 30 seconds
* ``keep_alive_timeout`` (``DENIABLE_KEEP_ALIVE_TIMEOUT``): 5 seconds
* ``streams_file`` (``DENIABLE_STREAMS``): none (telemetry streams stored through
  ``PUT /api/streams/{id}`` only); a streams file is loaded at start
* ``streams_dir`` (``DENIABLE_STREAMS_DIR``): ``<data dir>/streams`` (the streams' Parquet
  partitions)

Keyword arguments override the environment: ``Settings(database_url="sqlite:///x.db")``.
The last four settings bound the connections of ``deniable serve``
(:mod:`deniable.service.core.connections`); the admin secrets must be strong enough to start a
server (:mod:`deniable.service.core.strength`).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from deniable.service.storage.db import database_url, default_sqlite_url
from deniable.survey import Survey, demo_survey, load_survey

__all__ = ["Settings"]


class Settings(BaseSettings):
    """Where the service keeps its data, what it serves, and its limits (see the module
    docstring for the variables)."""

    model_config = SettingsConfigDict(
        env_prefix="DENIABLE_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
    )

    database_url: str = Field(
        default="",
        validation_alias=AliasChoices("database_url", "DATABASE_URL", "DENIABLE_DATABASE_URL"),
    )
    data_dir: Path = Field(
        default=Path(".deniable"),
        validation_alias=AliasChoices("data_dir", "DENIABLE_DATA", "DENIABLE_DATA_DIR"),
    )
    survey_file: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("survey_file", "DENIABLE_SURVEY", "DENIABLE_SURVEY_FILE"),
    )
    admin_token: str = ""
    admin_password: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    max_body_bytes: int = Field(default=1 << 20, ge=1)
    rate_limit_per_minute: int = Field(default=600, ge=1)
    batch_max_items: int = Field(default=10_000, ge=1)
    admin_guess_limit: int = Field(default=10, ge=1)
    admin_guess_window: float = Field(default=60.0, gt=0, le=86_400)
    sessions_file: Path | None = None
    max_connections: int = Field(default=1000, ge=1)
    header_timeout: float = Field(default=10.0, gt=0, le=3600)
    body_timeout: float = Field(default=30.0, gt=0, le=3600)
    keep_alive_timeout: int = Field(default=5, ge=1, le=3600)
    # new sessions per client address and per anonymous survey (deniable.service.core.limits)
    session_limit_per_address: int = Field(default=30, ge=0)
    session_limit_per_survey: int = Field(default=6000, ge=0)
    session_window_seconds: float = Field(default=600.0, gt=0, le=86400)
    streams_file: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("streams_file", "DENIABLE_STREAMS", "DENIABLE_STREAMS_FILE"),
    )
    streams_dir: Path | None = None
    #: True when ``admin_token`` was not set and a fresh one was generated (print it once).
    admin_token_generated: bool = Field(default=False, exclude=True)

    @model_validator(mode="after")
    def _defaults(self) -> Settings:
        if not self.database_url:
            self.database_url = default_sqlite_url(self.data_dir)
        self.database_url = database_url(self.database_url)
        if self.streams_dir is None:
            self.streams_dir = self.data_dir / "streams"
        if not self.admin_token:
            self.admin_token = secrets.token_urlsafe(32)
            self.admin_token_generated = True
        return self

    def survey(self) -> Survey:
        """The survey to serve: ``survey_file`` read and checked, else the demo survey."""
        return demo_survey() if self.survey_file is None else load_survey(self.survey_file)

    def __repr_args__(self) -> Any:
        # never show the secrets (logs, tracebacks)
        for name, value in super().__repr_args__():
            if name in ("admin_token", "admin_password") and value:
                yield name, "***"
            else:
                yield name, value
