"""HTTP correctness under abuse (issue 14, part 5): deeply nested JSON is a 4xx on every
JSON endpoint, HEAD works wherever GET does, redirects never echo the Host header, logout
ends the session on the server and cannot be triggered by another site, the SQLite files
are the owner's only, OpenAPI declares the credentials, the refusals and the content
types, and ``/`` is a landing page (on SQLite and PostgreSQL where a store is involved)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from _apihelp import ADMIN, SURVEY, admin_headers, bearer, make_client, new_token, snapshot
from fastapi.testclient import TestClient

from deniable.service.core.middleware import CSP
from deniable.service.storage import ServiceStore
from deniable.service.storage.db import make_engine

DEPTH = 100_000  # far past Python's recursion limit


def _nested(depth: int) -> list[bytes]:
    arrays = b"[" * depth + b"]" * depth
    objects = b'{"a":' * depth + b"1" + b"}" * depth
    return [arrays, objects, b'{"reports":' + arrays + b"}", b'{"reports":[' + objects + b"]}"]


def _json_operations(client: TestClient) -> list[tuple[str, str]]:
    """(method, path) of every operation of the schema that takes a JSON body."""
    schema = client.get("/openapi.json").json()
    out = []
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            content = op.get("requestBody", {}).get("content", {})
            if "application/json" in content:
                out.append((method.upper(), path.replace("{survey_id}", SURVEY)))
    return out


def test_deeply_nested_json_is_a_4xx_on_every_json_endpoint(store: ServiceStore) -> None:
    client = make_client(store)
    token = new_token(client)
    operations = _json_operations(client)
    assert len(operations) >= 5  # sessions, reports, batch, interviewer, invitations
    before = snapshot(store)
    for method, path in operations:
        for body in _nested(DEPTH):
            for auth in ({}, bearer(token), admin_headers()):
                r = client.request(
                    method, path, content=body, headers={**auth, "content-type": "application/json"}
                )
                assert 400 <= r.status_code < 500, (path, body[:20], r.status_code, r.text)
                assert r.json()["error"], path
    assert snapshot(store) == before


def test_nested_json_errors_name_the_body(store: ServiceStore) -> None:
    client = make_client(store)
    for path in (f"/api/surveys/{SURVEY}/reports/batch", f"/api/surveys/{SURVEY}/sessions"):
        r = client.post(path, content=_nested(DEPTH)[0],
                        headers={"content-type": "application/json"})  # fmt: skip
        assert r.status_code == 400, r.text
        assert r.json()["error"].startswith("body: "), r.text


def _get_routes(client: TestClient, token: str) -> list[tuple[str, dict[str, str]]]:
    paths: list[tuple[str, dict[str, str]]] = [
        ("/", {}),
        ("/healthz", {}),
        ("/docs", {}),
        ("/openapi.json", {}),
        ("/static/style.css", {}),
        (f"/s/{SURVEY}", {}),
        (f"/interviewer/{SURVEY}", {}),
        ("/dashboard/login", {}),
        ("/dashboard", admin_headers()),
        (f"/dashboard/{SURVEY}", admin_headers()),
        ("/dashboard", {}),  # 401: the login form
        ("/api/surveys/nope/protocols", admin_headers()),  # 404
    ]
    schema = client.get("/openapi.json").json()
    for path, ops in schema["paths"].items():
        if "get" in ops:
            concrete = path.replace("{survey_id}", SURVEY).replace("{question_id}", "happy")
            headers = bearer(token) if path == "/api/surveys/{survey_id}" else admin_headers()
            paths.append((concrete, headers))
    return paths


def test_head_works_wherever_get_does(store: ServiceStore) -> None:
    client = make_client(store)
    token = new_token(client)
    routes = _get_routes(client, token)
    assert len(routes) >= 25
    for path, headers in routes:
        got = client.get(path, headers=headers)
        head = client.head(path, headers=headers)
        assert head.status_code == got.status_code, (path, head.status_code, got.status_code)
        assert head.content == b"", path
        for name in ("content-type", "content-length", "content-security-policy"):
            assert head.headers.get(name) == got.headers.get(name), (path, name)
    assert client.head("/api/surveys/workplace/reports").status_code == 405  # POST only


def test_redirects_never_echo_the_host_header(store: ServiceStore) -> None:
    client = make_client(store)
    hostile = {"host": "evil.example"}
    for path, target in [
        ("/dashboard/", "/dashboard"),
        (f"/dashboard/{SURVEY}/", f"/dashboard/{SURVEY}"),
        (f"/s/{SURVEY}/", f"/s/{SURVEY}"),
        (f"/api/surveys/{SURVEY}/results/?level=0.9", f"/api/surveys/{SURVEY}/results?level=0.9"),
        ("/docs//", "/docs"),
    ]:
        for method in ("GET", "HEAD"):
            r = client.request(method, path, headers=hostile, follow_redirects=False)
            assert r.status_code == 308, (path, r.status_code)
            assert r.headers["location"] == target, (path, r.headers["location"])
            assert r.headers["content-security-policy"] == CSP
    # no redirect to another host, nor to a path nothing serves
    for path in ("//evil.example/", "/\\evil.example/", "/nothing-here/", "/%2Fevil.example/"):
        r = client.get(f"http://testserver{path}", headers=hostile, follow_redirects=False)
        assert r.status_code == 404, (path, r.status_code, r.headers.get("location"))
    # the login's redirect is relative too
    r = client.post("/dashboard/login", data={"secret": ADMIN}, headers=hostile,
                    follow_redirects=False)  # fmt: skip
    assert r.status_code == 303 and r.headers["location"] == "/dashboard"
    r = client.post("/dashboard/logout", headers=hostile, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/dashboard/login"


def _login(client: TestClient) -> str:
    r = client.post("/dashboard/login", data={"secret": ADMIN}, follow_redirects=False)
    assert r.status_code == 303, r.text
    return str(r.cookies["deniable_admin"])


def _with_cookie(client: TestClient, value: str, path: str = "/dashboard") -> int:
    fresh = TestClient(client.app)
    fresh.cookies.set("deniable_admin", value)
    return fresh.get(path).status_code


def test_logout_revokes_the_session_on_the_server(store: ServiceStore) -> None:
    client = make_client(store)
    copied = _login(client)
    other = _login(TestClient(client.app))  # another browser's session
    assert _with_cookie(client, copied) == 200
    assert _with_cookie(client, copied, f"/api/surveys/{SURVEY}/results") == 200
    assert client.post("/dashboard/logout", follow_redirects=False).status_code == 303
    # the cookie copied before the logout no longer works anywhere
    assert _with_cookie(client, copied) == 401
    assert _with_cookie(client, copied, f"/api/surveys/{SURVEY}/results") == 401
    assert _with_cookie(client, other) == 200  # other sessions live on
    # logging in again gives a new session
    assert _with_cookie(client, _login(client)) == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},  # a sibling subdomain: SameSite would send it
        {"origin": "https://evil.example"},
        {"origin": "null"},
    ],
)
def test_logout_and_login_are_not_triggerable_cross_site(
    store: ServiceStore, headers: dict[str, str]
) -> None:
    client = make_client(store)
    cookie = _login(client)
    r = client.post("/dashboard/logout", headers=headers, follow_redirects=False)
    assert r.status_code == 403, r.text
    assert "cross-site" in r.json()["error"]
    assert "set-cookie" not in r.headers
    assert _with_cookie(client, cookie) == 200  # still logged in
    r = client.post("/dashboard/login", data={"secret": ADMIN}, headers=headers,
                    follow_redirects=False)  # fmt: skip
    assert r.status_code == 403 and "set-cookie" not in r.headers
    # a write authenticated by the cookie alone is refused as well
    r = client.post(f"/api/surveys/{SURVEY}/invitations", json={"count": 1}, headers=headers)
    assert r.status_code == 403
    # the same from the service's own pages passes
    for same in ({"sec-fetch-site": "same-origin"}, {"origin": "http://testserver"}, {}):
        r = client.post(f"/api/surveys/{SURVEY}/invitations", json={"count": 1}, headers=same)
        assert r.status_code == 201, (same, r.text)
    r = client.post("/dashboard/logout", headers={"sec-fetch-site": "same-origin"},
                    follow_redirects=False)  # fmt: skip
    assert r.status_code == 303
    assert _with_cookie(client, cookie) == 401


def test_the_bearer_token_is_not_refused_as_cross_site(store: ServiceStore) -> None:
    client = make_client(store)
    r = client.post(f"/api/surveys/{SURVEY}/invitations", json={"count": 1},
                    headers={**admin_headers(), "origin": "https://elsewhere.example"})  # fmt: skip
    assert r.status_code == 201  # a script with the token is not a browser's ambient cookie


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_sqlite_files_are_created_owner_only(tmp_path: Path) -> None:
    old = os.umask(0o022)  # a common umask: 0644 files unless the service says otherwise
    try:
        data = tmp_path / "data"
        store = ServiceStore(f"sqlite:///{data}/deniable.db")
        store.migrate()
        from deniable.survey import demo_survey

        store.load_survey(demo_survey())
        for name in ("deniable.db", "deniable.db-wal", "deniable.db-shm"):
            assert _mode(data / name) == 0o600, (name, oct(_mode(data / name)))
        assert _mode(data) == 0o700
        client = make_client(store, sessions_file=data / "sessions.db")
        _login(client)  # creates the sessions file
        assert (data / "sessions.db").exists()
        for p in data.iterdir():  # every file of the data directory
            assert _mode(p) == 0o600, (p.name, oct(_mode(p)))
        store.close()
        # an engine alone (the migrations, the CLI) creates the file owner-only too
        engine = make_engine(f"sqlite:///{tmp_path}/other/x.db")
        with engine.connect() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
            conn.commit()
        engine.dispose()
        assert _mode(tmp_path / "other" / "x.db") == 0o600
    finally:
        os.umask(old)


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m, p, op) for p, ops in schema["paths"].items() for m, op in ops.items()]


def test_openapi_declares_credentials_refusals_and_content_types(store: ServiceStore) -> None:
    client = make_client(store)
    schema = client.get("/openapi.json").json()
    schemes = schema["components"]["securitySchemes"]
    assert schemes["adminToken"] == {"type": "http", "scheme": "bearer",
                                     "description": "The admin token."}  # fmt: skip
    assert schemes["adminCookie"]["in"] == "cookie"
    assert schemes["adminCookie"]["name"] == "deniable_admin"
    assert schemes["respondentToken"]["scheme"] == "bearer"
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    admin = {"adminToken", "adminCookie"}
    for method, path, op in _operations(schema):
        where = f"{method} {path}"
        names = {name for requirement in op.get("security", []) for name in requirement}
        if path in ("/healthz", "/api/surveys/{survey_id}/sessions",
                    "/api/surveys/{survey_id}/reports/batch", "/streams/{stream_id}"):  # fmt: skip
            assert names == set(), where
        elif path == "/streams/{stream_id}/batches":
            assert names == {"deviceToken"}, where
        elif path in ("/api/surveys/{survey_id}", "/api/surveys/{survey_id}/reports"):
            assert names == {"respondentToken"}, where
        else:
            assert names == admin, where
        responses = op["responses"]
        for code, response in responses.items():
            if code.startswith(("4", "5")):
                ref = response["content"]["application/json"]["schema"]
                assert ref == {"$ref": "#/components/schemas/Error"}, (where, code)
        assert "503" in responses, where
        if path.startswith("/api/"):
            assert "429" in responses and "Retry-After" in responses["429"]["headers"], where
        if names or path.endswith("/batch"):
            assert "401" in responses, where
        if "requestBody" in op:
            assert {"400", "408", "413", "422"} <= set(responses), where
        if "{survey_id}" in path or ("{stream_id}" in path and method != "put"):
            assert "404" in responses, where  # a PUT of a stream creates it
        ok = next(r for c, r in responses.items() if c.startswith("2"))
        types = set(ok["content"])
        if path.endswith(".svg"):
            assert types == {"image/svg+xml"}, where
        elif path.endswith(".csv"):
            assert types == {"text/csv"}, where
        elif path.endswith(".parquet"):
            assert types == {"application/vnd.apache.parquet"}, where
        else:
            assert types == {"application/json"}, where


def test_the_declared_content_types_are_served(store: ServiceStore) -> None:
    client = make_client(store)
    for path, ctype in [
        (f"/api/surveys/{SURVEY}/plots/forest.svg", "image/svg+xml"),
        (f"/api/surveys/{SURVEY}/export.csv", "text/csv"),
        (f"/api/surveys/{SURVEY}/export.parquet", "application/vnd.apache.parquet"),
    ]:
        r = client.get(path, headers=admin_headers())
        assert r.status_code == 200 and r.headers["content-type"].startswith(ctype), path


def test_the_root_is_a_landing_page(store: ServiceStore) -> None:
    client = make_client(store)
    r = client.get("/")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert r.headers["content-security-policy"] == CSP
    assert r.headers["cache-control"] == "no-store"
    for link in ('href="/dashboard/login"', 'href="/docs"', 'href="/openapi.json"'):
        assert link in r.text
    assert "<script" not in r.text and "style=" not in r.text  # nothing inline: the CSP
    # it lists no survey: which surveys run here is for their organizers to announce
    assert SURVEY not in r.text and "/s/workplace" not in r.text
    for link in ("/dashboard/login", "/docs", "/openapi.json", "/static/style.css"):
        assert client.get(link).status_code == 200, link
