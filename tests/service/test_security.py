"""The admin check, the dashboard's signed cookie and bearer parsing (service/security.py).

These run on a bare FastAPI app whose state holds only settings: the admin check needs no
store.  The respondent check against a real store is in test_service_api.py.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fastapi import Depends, FastAPI, Request, Response
from fastapi.testclient import TestClient
from itsdangerous import URLSafeTimedSerializer

from deniable.service.core import security
from deniable.service.core.security import (
    ADMIN_COOKIE,
    bearer_token,
    check_admin_credential,
    clear_admin_cookie,
    require_admin,
    set_admin_cookie,
)

TOKEN = "admin-token-" + "x" * 32


def _app(**settings: object) -> FastAPI:
    app = FastAPI()
    app.state.settings = SimpleNamespace(
        **{"admin_token": TOKEN, "admin_password": None, **settings}
    )

    @app.get("/secret", dependencies=[Depends(require_admin)])
    def secret() -> dict[str, bool]:
        return {"ok": True}

    @app.post("/login")
    def login(request: Request, response: Response) -> dict[str, bool]:
        set_admin_cookie(response, request)
        return {"ok": True}

    @app.post("/logout")
    def logout(request: Request, response: Response) -> dict[str, bool]:
        clear_admin_cookie(response, request)
        return {"ok": True}

    return app


def test_admin_bearer_token_passes_and_others_are_refused() -> None:
    client = TestClient(_app())
    assert client.get("/secret", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert client.get("/secret", headers={"Authorization": f"bearer {TOKEN}"}).status_code == 200
    for header in (None, "Bearer", f"Basic {TOKEN}", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}"):
        headers = {} if header is None else {"Authorization": header}
        r = client.get("/secret", headers=headers)
        assert r.status_code == 401, header
        assert r.headers["www-authenticate"] == "Bearer"


def test_cookie_is_signed_httponly_strict_and_secure_on_https() -> None:
    client = TestClient(_app())
    r = client.post("/login")
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{ADMIN_COOKIE}=")
    low = cookie.lower()
    assert "httponly" in low and "samesite=strict" in low and "path=/" in low
    assert "secure" not in low.replace("samesite", "")  # plain http: no Secure flag
    assert client.get("/secret").status_code == 200  # the client sends the cookie back

    https = TestClient(_app(), base_url="https://testserver")
    assert "; secure" in https.post("/login").headers["set-cookie"].lower()


def _with_cookie(app: FastAPI, value: str) -> int:
    client = TestClient(app)
    client.cookies.set(ADMIN_COOKIE, value)
    return client.get("/secret").status_code


def test_forged_expired_or_foreign_cookies_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    app = _app()
    value = TestClient(app).post("/login").cookies[ADMIN_COOKIE]
    assert _with_cookie(app, value) == 200
    # a changed signature byte (not the last character: its low bits are base64 padding)
    flipped = value[:-5] + ("A" if value[-5] != "A" else "B") + value[-4:]
    for forged in (flipped, "admin", URLSafeTimedSerializer("guess").dumps("admin")):
        assert _with_cookie(app, forged) == 401
    # a cookie signed under another admin token does not pass
    assert _with_cookie(_app(admin_token="another-token"), value) == 401
    # an old cookie has expired
    monkeypatch.setattr(security, "ADMIN_COOKIE_MAX_AGE", -1)
    assert _with_cookie(app, value) == 401


def test_logout_expires_the_cookie() -> None:
    client = TestClient(_app())
    client.post("/login")
    r = client.post("/logout")
    assert "max-age=0" in r.headers["set-cookie"].lower()
    assert client.get("/secret").status_code == 401


def test_empty_admin_token_never_authenticates() -> None:
    client = TestClient(_app(admin_token=""))
    assert client.get("/secret", headers={"Authorization": "Bearer "}).status_code == 401
    r = client.get("/secret", headers={"Authorization": "Bearer x"})
    assert r.status_code == 503


def test_check_admin_credential_takes_token_or_password() -> None:
    plain = SimpleNamespace(admin_token=TOKEN, admin_password=None)
    assert check_admin_credential(plain, TOKEN)
    assert not check_admin_credential(plain, "")
    with_pw = SimpleNamespace(admin_token=TOKEN, admin_password="correct horse")
    assert check_admin_credential(with_pw, "correct horse")
    assert check_admin_credential(with_pw, TOKEN)
    assert not check_admin_credential(with_pw, "correct hors")


def test_check_admin_credential_compares_in_constant_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = security.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(security.hmac, "compare_digest", spy)
    with_pw = SimpleNamespace(admin_token=TOKEN, admin_password="pw")
    assert check_admin_credential(with_pw, TOKEN)
    # both secrets are compared, each through compare_digest, whatever the first said
    assert [b for _, b in calls] == [TOKEN.encode(), b"pw"]


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer   abc ", "abc"),
        ("Bearer", None),
        ("Bearer ", None),
        ("Token abc", None),
        ("", None),
    ],
)
def test_bearer_token_parsing(header: str, token: str | None) -> None:
    scope = {"type": "http", "headers": [(b"authorization", header.encode())]}
    assert bearer_token(Request(scope)) == token
