"""Helpers of the telemetry stream tests (test_streams*.py): an app on a test's store whose
stream clock the test sets, a stream opened with one device, a batch posted, and the count
of window charges (to check that a refusal charged nothing)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _apihelp import admin_headers, bearer, make_client
from fastapi.testclient import TestClient

from deniable.service.storage import ServiceStore

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
BINARY = {"Content-Type": "application/octet-stream"}


class Clock:
    """The streams' clock: ``now``, which a test moves."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def stream_client(store: ServiceStore, tmp_path: Path, **settings: Any) -> TestClient:
    """An app on ``store`` with its streams under ``tmp_path / "streams"`` and a
    :class:`Clock` at :data:`NOW`."""
    c = make_client(store, streams_dir=tmp_path / "streams", **settings)
    c.app.state.streams.clock = Clock()  # type: ignore[attr-defined]
    return c


def stream_root(client: TestClient) -> Path:
    return Path(client.app.state.streams.root)  # type: ignore[attr-defined]


def open_stream(client: TestClient, sid: str, spec: dict[str, Any]) -> str:
    """PUT stream ``sid``'s ``spec`` and register one device: its token."""
    r = client.put(f"/api/streams/{sid}", json=spec, headers=admin_headers())
    assert r.status_code == 201, r.text
    r = client.post(f"/api/streams/{sid}/devices", headers=admin_headers())
    assert r.status_code == 201, r.text
    return str(r.json()["devices"][0]["token"])


def post_batch(client: TestClient, sid: str, token: str, body: bytes, **h: str) -> Any:
    """POST a binary batch ``body`` to stream ``sid`` as the device of ``token``."""
    return client.post(f"/streams/{sid}/batches", content=body,
                       headers={**BINARY, **bearer(token), **h})  # fmt: skip


def window_charges(client: TestClient) -> int:
    """How many charges the streams' window store holds."""
    import sqlalchemy as sa

    state = client.app.state.streams  # type: ignore[attr-defined]
    with state.windows.engine.connect() as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM window_charge")).scalar_one())
