"""The service's logs (issue 9, part 5): one JSON object per line, route templates instead
of paths, and never a token, an answer or a report value.  A run of requests of every kind
(good and bad) is logged into a buffer, then the buffer is searched."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from _apihelp import ADMIN, SURVEY, admin_headers, bearer, make_client, new_token

from deniable.service.core.logging import JsonFormatter, configure_logging
from deniable.service.storage import ServiceStore


@pytest.fixture
def log_buffer() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    buffer = io.StringIO()
    configure_logging(logging.DEBUG, stream=buffer)
    # the test client's own request log (httpx2) shows the URLs it sent: not the server's
    client_log = logging.getLogger("httpx2")
    client_level = client_log.level
    client_log.setLevel(logging.WARNING)
    try:
        yield buffer
    finally:
        client_log.setLevel(client_level)
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


def test_logs_hold_no_token_no_report_and_no_raw_path(
    store: ServiceStore, log_buffer: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_client(store, rate_limit_per_minute=30)
    tokens = [new_token(client) for _ in range(3)]
    invitation_like = "INVITE-" + "q" * 36
    # distinctive values that must not be logged: reports sent in the bodies ride with
    # marker fields that only a body or an error message could carry into the logs
    for i, token in enumerate(tokens):
        h = bearer(token)
        client.get(f"/api/surveys/{SURVEY}", headers=h)
        client.post(f"/api/surveys/{SURVEY}/reports", json={"question": "hours", "report": i},
                    headers=h)  # fmt: skip
        client.post(f"/api/surveys/{SURVEY}/reports", json={"question": "happy", "report": 1},
                    headers=h)  # fmt: skip
        client.post(f"/api/surveys/{SURVEY}/reports", json={"question": "happy", "report": 0},
                    headers=h)  # fmt: skip
        client.post(f"/api/surveys/{SURVEY}/reports",
                    json={"question": "happy", "report": 0, "MARKER_FIELD": "x"},
                    headers=h)  # fmt: skip
        client.post(f"/api/surveys/{SURVEY}/reports",
                    json={"question": "hours", "report": 987654321}, headers=h)  # fmt: skip
    client.post(
        f"/api/surveys/{SURVEY}/reports/batch",
        json={"reports": [{"token": tokens[0], "question": "harassment", "report": 1}]},
    )
    client.post(f"/api/surveys/{SURVEY}/reports/batch",
                json={"reports": [{"token": "FORGED-TOKEN-123456", "question": "happy",
                                   "report": 1}]})  # fmt: skip
    client.post(f"/api/surveys/{SURVEY}/sessions", json={"invitation": invitation_like})
    client.get(f"/api/surveys/{SURVEY}/{tokens[1]}")  # a token pasted into a path
    client.get(f"/api/surveys/{SURVEY}?token={tokens[2]}")  # or a query string
    client.get(f"/api/surveys/{SURVEY}/protocols", headers=admin_headers())
    client.post(f"/api/surveys/{SURVEY}/interviewer", headers=admin_headers(),
                json={"reports": [{"question": "hours", "report": 3}]})  # fmt: skip
    for _ in range(31):  # into the rate limit
        client.get(f"/api/surveys/{SURVEY}", headers=bearer(tokens[2]))
    monkeypatch.setattr(store, "answered", _boom)
    client.get(f"/api/surveys/{SURVEY}", headers=bearer(tokens[0]))  # a 500

    text = log_buffer.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    requests = [x for x in lines if x["event"] == "request"]
    assert len(requests) >= 50
    for secret in [*tokens, ADMIN, invitation_like, "FORGED-TOKEN", "MARKER_FIELD",
                   "987654321", "secret 777", "answer"]:  # fmt: skip
        assert secret not in text, secret
    for x in requests:
        assert set(x) == {"time", "level", "logger", "event", "method", "path", "status",
                          "duration_ms"}, x  # fmt: skip
        assert "?" not in x["path"]
    paths = {x["path"] for x in requests}
    assert "/api/surveys/{survey_id}/reports" in paths
    assert "/api/surveys/{survey_id}/reports/batch" in paths
    assert "<unmatched>" in paths  # the path with a token in it
    assert {x["status"] for x in requests} >= {200, 201, 401, 404, 409, 422, 429, 500}
    errors = [x for x in lines if x["event"] == "error"]
    assert errors and errors[0]["exception"] == "RuntimeError" and "at" in errors[0]


def _boom(*args: Any) -> Any:
    raise RuntimeError("secret 777")


def test_json_formatter_drops_exception_messages() -> None:
    try:
        raise ValueError("the answer was yes")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), None)
        import sys

        record.exc_info = sys.exc_info()
    out = json.loads(JsonFormatter().format(record))
    assert out["exception"] == "ValueError" and out["event"] == "failed"
    assert "yes" not in json.dumps(out)
