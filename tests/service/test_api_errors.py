"""Bad input to the API (issue 9, part 6): every refusal is a 4xx with ``{"error": ...}``
naming the field, and stores nothing (the store is compared before and after each request),
on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from _apihelp import SURVEY, bearer, make_client, new_token, snapshot

from deniable.service.storage import ServiceStore

REPORTS = f"/api/surveys/{SURVEY}/reports"
GOOD = {"question": "happy", "report": 1}


def _cases(token: str) -> list[tuple[str, str, dict[str, Any], int, str]]:
    """(method, url, request kwargs, status, a word the error must contain)."""
    auth = bearer(token)
    json_headers = {**auth, "content-type": "application/json"}
    return [
        # malformed JSON
        ("POST", REPORTS, {"content": b'{"question": "happy", "report": ', "headers": json_headers},
         400, "JSON"),
        ("POST", REPORTS, {"content": b"\xff\xfe", "headers": json_headers}, 400, "JSON"),
        # wrong shapes and types
        ("POST", REPORTS, {"json": [1, 2], "headers": auth}, 422, "body"),
        ("POST", REPORTS, {"headers": auth}, 422, "body"),
        ("POST", REPORTS, {"json": {"question": "happy"}, "headers": auth}, 422, "report"),
        ("POST", REPORTS, {"json": {"report": 1}, "headers": auth}, 422, "question"),
        ("POST", REPORTS, {"json": {"question": "happy", "report": "1"}, "headers": auth}, 422,
         "report"),
        ("POST", REPORTS, {"json": {"question": "happy", "report": True}, "headers": auth}, 422,
         "report"),
        ("POST", REPORTS, {"json": {"question": "happy", "report": 1.0}, "headers": auth}, 422,
         "report"),
        ("POST", REPORTS, {"json": {"question": 7, "report": 1}, "headers": auth}, 422,
         "question"),
        ("POST", REPORTS, {"json": {**GOOD, "answer": 1}, "headers": auth}, 422, "answer"),
        # a report outside the question's output domain
        ("POST", REPORTS, {"json": {"question": "happy", "report": 2}, "headers": auth}, 422,
         "report"),
        ("POST", REPORTS, {"json": {"question": "happy", "report": -1}, "headers": auth}, 422,
         "report"),
        ("POST", REPORTS, {"json": {"question": "hours", "report": 4}, "headers": auth}, 422,
         "report"),
        ("POST", REPORTS, {"json": {"question": "happy", "report": 10**30}, "headers": auth},
         422, "report"),
        # unknown survey or question
        ("POST", "/api/surveys/nope/reports", {"json": GOOD, "headers": auth}, 404, "survey_id"),
        ("GET", "/api/surveys/nope", {"headers": auth}, 404, "survey_id"),
        ("POST", "/api/surveys/nope/sessions", {"json": {}}, 404, "survey_id"),
        ("POST", REPORTS, {"json": {"question": "nope", "report": 0}, "headers": auth}, 404,
         "question"),
        # missing, forged or malformed tokens
        ("POST", REPORTS, {"json": GOOD}, 401, "Authorization"),
        ("POST", REPORTS, {"json": GOOD, "headers": bearer(token + "x")}, 401, "Authorization"),
        ("POST", REPORTS, {"json": GOOD, "headers": bearer("A" * 43)}, 401, "Authorization"),
        ("POST", REPORTS, {"json": GOOD, "headers": {"Authorization": token}}, 401,
         "Authorization"),
        ("GET", f"/api/surveys/{SURVEY}", {}, 401, "Authorization"),
        # the batch endpoint: one bad item refuses the whole batch, naming the item
        ("POST", f"{REPORTS}/batch",
         {"json": {"reports": [{"token": token, **GOOD}, {"token": "forged", **GOOD}]}},
         401, "reports[1].token"),
        ("POST", f"{REPORTS}/batch",
         {"json": {"reports": [{"token": token, **GOOD},
                               {"token": token, "question": "hours", "report": 9}]}},
         422, "reports[1].report"),
        ("POST", f"{REPORTS}/batch",
         {"json": {"reports": [{"token": token, "question": "zz", "report": 0}]}},
         404, "reports[0].question"),
        ("POST", f"{REPORTS}/batch", {"json": {"reports": [{"question": "happy", "report": 0}]}},
         422, "reports[0].token"),
        ("POST", f"{REPORTS}/batch", {"json": {"reports": "all"}}, 422, "reports"),
        # shapes the fast parser of the batch hands to the strict model, which names them
        ("POST", f"{REPORTS}/batch",
         {"json": {"reports": [{"token": token, "question": "happy", "report": True}]}},
         422, "reports[0].report"),
        ("POST", f"{REPORTS}/batch",
         {"json": {"reports": [{"token": token, "question": "happy", "report": 1.0}]}},
         422, "reports[0].report"),
        ("POST", f"{REPORTS}/batch",
         {"json": {"reports": [{"token": token, **GOOD, "answer": 1}]}},
         422, "reports[0].answer"),
        ("POST", f"{REPORTS}/batch",
         {"json": {"reports": [{"token": token, **GOOD}], "extra": 1}}, 422, "extra"),
        ("POST", f"{REPORTS}/batch",
         {"json": {"reports": [{"token": "", **GOOD}]}}, 422, "reports[0].token"),
        ("POST", f"{REPORTS}/batch",
         {"json": {"reports": [{"token": "t" * 257, **GOOD}]}}, 422, "reports[0].token"),
        ("POST", f"{REPORTS}/batch",
         {"json": {"reports": [{"token": token, **GOOD}, 7]}}, 422, "reports[1]"),
        ("POST", f"{REPORTS}/batch",
         {"json": {"reports": [{"token": "é" + token, **GOOD}]}}, 401, "reports[0].token"),
        ("POST", f"{REPORTS}/batch", {"content": b'{"reports": [}',
                                      "headers": {"content-type": "application/json"}},
         400, "JSON"),
        # sessions
        ("POST", f"/api/surveys/{SURVEY}/sessions", {"json": {"invitation": 5}}, 422,
         "invitation"),
        ("POST", f"/api/surveys/{SURVEY}/sessions", {"json": {"other": 1}}, 422, "other"),
        # unknown paths and methods
        ("DELETE", REPORTS, {"headers": auth}, 405, "DELETE"),
        ("GET", "/api/nothing-here", {}, 404, "path"),
    ]  # fmt: skip


def test_bad_requests_are_4xx_naming_the_field_and_store_nothing(store: ServiceStore) -> None:
    client = make_client(store)
    token = new_token(client)
    assert client.post(REPORTS, json={"question": "hours", "report": 1},
                       headers=bearer(token)).status_code == 201  # fmt: skip
    before = snapshot(store)
    for method, url, kwargs, status, word in _cases(token):
        r = client.request(method, url, **kwargs)
        where = f"{method} {url} {kwargs.get('json', kwargs.get('content'))!r}"
        assert r.status_code == status, (where, r.status_code, r.text)
        body = r.json()
        assert set(body) <= {"error", "status"} and isinstance(body["error"], str), where
        assert word in body["error"], (where, body)
        assert token not in body["error"], where
        assert snapshot(store) == before, where
    # and the respondent can still answer
    assert client.post(REPORTS, json=GOOD, headers=bearer(token)).status_code == 201


@pytest.mark.parametrize("chunked", [False, True])
def test_oversized_bodies_are_413_and_store_nothing(store: ServiceStore, chunked: bool) -> None:
    client = make_client(store, max_body_bytes=2000)
    token = new_token(client)
    before = snapshot(store)
    items = [{"token": token, "question": "happy", "report": 1}] * 40  # > 2000 bytes
    import json

    raw = json.dumps({"reports": items}).encode()
    assert len(raw) > 2000
    content: Any = iter([raw[:1000], raw[1000:]]) if chunked else raw
    r = client.post(
        f"{REPORTS}/batch", content=content, headers={"content-type": "application/json"}
    )
    assert r.status_code == 413, r.text
    assert "2000 bytes" in r.json()["error"]
    assert r.headers["x-content-type-options"] == "nosniff"
    assert snapshot(store) == before
    # a body under the limit passes
    r = client.post(f"{REPORTS}/batch", json={"reports": items[:5]})
    assert r.status_code == 200


def test_rate_limit_per_token(store: ServiceStore) -> None:
    client = make_client(store, rate_limit_per_minute=5)
    t1, t2 = new_token(client), new_token(client)
    url = f"/api/surveys/{SURVEY}"
    for _ in range(5):
        assert client.get(url, headers=bearer(t1)).status_code == 200
    r = client.get(url, headers=bearer(t1))
    assert r.status_code == 429
    assert "5 requests per minute" in r.json()["error"]
    assert 1 <= int(r.headers["retry-after"]) <= 61
    before = snapshot(store)
    r = client.post(f"{url}/reports", json=GOOD, headers=bearer(t1))
    assert r.status_code == 429 and snapshot(store) == before
    # another token has its own window
    assert client.get(url, headers=bearer(t2)).status_code == 200


def test_an_unexpected_error_is_a_500_without_its_message(
    store: ServiceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_client(store)
    token = new_token(client)

    def boom(*args: Any) -> Any:
        raise RuntimeError("secret detail 4242")

    monkeypatch.setattr(store, "answered", boom)
    r = client.get(f"/api/surveys/{SURVEY}", headers=bearer(token))
    assert r.status_code == 500
    assert r.json() == {"error": "internal error (logged)"}
    assert "4242" not in r.text
    assert r.headers["content-security-policy"].startswith("default-src 'none'")
