"""Limits that make abuse not pay (issue 14, part 5): the sliding-window limiter, the
per-token rate limit on every endpoint that takes reports (the batch endpoint included),
admin-token guesses throttled per client address, and weak admin secrets refused before a
server starts (on SQLite and PostgreSQL where a store is involved)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from _apihelp import ADMIN, SURVEY, admin_headers, bearer, make_client, new_token, snapshot
from _server import free_port

from deniable.exceptions import ParameterError
from deniable.service.core import security
from deniable.service.storage import ServiceStore

# the limiter and the strength rules are imported in the tests that use them, so that the
# tests of behaviour run (and fail) on a tree without them

REPORTS = f"/api/surveys/{SURVEY}/reports"
BATCH = f"{REPORTS}/batch"


# --------------------------------------------------------------------------- the limiter
def test_limiter_counts_a_sliding_window_per_key() -> None:
    from deniable.service.core.security import SlidingWindowLimiter

    now = [100.0]
    limiter = SlidingWindowLimiter(3, 10.0, clock=lambda: now[0])
    assert [limiter.acquire("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.acquire("a") == pytest.approx(10.0)  # refused: nothing recorded
    assert limiter.acquire(("b", 1)) == 0.0  # any hashable key, its own window
    now[0] = 105.0
    assert limiter.wait("a") == pytest.approx(5.0)
    now[0] = 110.0  # the three events leave the window together
    assert limiter.acquire("a", n=3) == 0.0
    assert limiter.acquire("a") > 0
    now[0] = 111.0
    assert limiter.acquire("a", n=4) == pytest.approx(10.0)  # never fits: the window


def test_limiter_acquire_many_is_all_or_nothing() -> None:
    from deniable.service.core.security import SlidingWindowLimiter

    now = [0.0]
    limiter = SlidingWindowLimiter(5, 60.0, clock=lambda: now[0])
    assert limiter.acquire_many({"a": 3, "b": 5}) is None
    assert limiter.acquire_many({"c": 1, "a": 3}) == ("a", pytest.approx(60.0))
    assert limiter.wait("c") == 0.0 and limiter.wait("a", 2) == 0.0  # nothing recorded
    limiter.record("c", 9)  # recorded past the limit (failures)
    assert limiter.wait("c") > 0
    limiter.forget("c")
    assert limiter.wait("c") == 0.0


def test_limiter_memory_is_bounded_and_threads_do_not_overshoot() -> None:
    from deniable.service.core.security import SlidingWindowLimiter

    now = [0.0]
    limiter = SlidingWindowLimiter(1, 1.0, clock=lambda: now[0], max_keys=100)
    for i in range(1000):
        now[0] = i * 0.01
        limiter.acquire(i)
    assert len(limiter._events) <= 100
    shared = SlidingWindowLimiter(50, 60.0)
    granted = []

    def take() -> None:
        granted.extend(1 for _ in range(100) if shared.acquire("k") == 0.0)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(granted) == 50


@pytest.mark.parametrize(("limit", "window"), [(0, 1.0), (1.5, 1.0), (True, 1.0), (1, 0.0),
                                               (1, float("inf")), (1, float("nan"))])  # fmt: skip
def test_limiter_refuses_bad_parameters(limit: Any, window: Any) -> None:
    from deniable.service.core.security import SlidingWindowLimiter

    with pytest.raises(ParameterError, match=r"`limit`|`window`"):
        SlidingWindowLimiter(limit, window)


# --------------------------------------------------------------------------- rate limit
def test_the_batch_endpoint_counts_each_report_against_its_token(store: ServiceStore) -> None:
    client = make_client(store, rate_limit_per_minute=5)
    t1, t2 = new_token(client), new_token(client)
    for _ in range(3):  # three requests of t1 through the single endpoint
        assert client.get(f"/api/surveys/{SURVEY}", headers=bearer(t1)).status_code == 200
    before = snapshot(store)
    items = [{"token": t2, "question": "happy", "report": 1},
             {"token": t1, "question": "happy", "report": 1},
             {"token": t1, "question": "harassment", "report": 0},
             {"token": t1, "question": "hours", "report": 2}]  # fmt: skip
    r = client.post(BATCH, json={"reports": items})  # t1: 3 + 3 > 5
    assert r.status_code == 429, r.text
    assert "`reports[1].token`" in r.json()["error"] and "5" in r.json()["error"]
    assert 1 <= int(r.headers["retry-after"]) <= 60
    assert t1 not in r.text and t2 not in r.text
    assert snapshot(store) == before  # the whole batch refused: nothing stored
    # nothing was counted either: t2 still has its five
    for _ in range(5):
        assert client.get(f"/api/surveys/{SURVEY}", headers=bearer(t2)).status_code == 200
    assert client.get(f"/api/surveys/{SURVEY}", headers=bearer(t2)).status_code == 429
    # a batch within t1's remaining two passes, and then t1 is at its limit everywhere
    r = client.post(BATCH, json={"reports": items[1:3]})
    assert r.status_code == 200 and [x["status"] for x in r.json()["results"]] == ["stored"] * 2
    r = client.post(REPORTS, json={"question": "hours", "report": 1}, headers=bearer(t1))
    assert r.status_code == 429


def test_a_batch_cannot_flood_one_token(store: ServiceStore) -> None:
    client = make_client(store, rate_limit_per_minute=10)
    token = new_token(client)
    item = {"token": token, "question": "happy", "report": 1}
    r = client.post(BATCH, json={"reports": [item] * 11})
    assert r.status_code == 429
    r = client.post(BATCH, json={"reports": [item] * 10})  # duplicates, but each counted
    assert r.status_code == 200
    r = client.post(BATCH, json={"reports": [item]})
    assert r.status_code == 429


# --------------------------------------------------------------------------- admin guesses
def test_admin_token_guesses_are_throttled_per_address(store: ServiceStore) -> None:
    client = make_client(store, admin_guess_limit=4, admin_guess_window=60.0)
    now = [1000.0]
    url = f"/api/surveys/{SURVEY}/protocols"
    token = new_token(client)
    for guess in ("guess", token, "A" * 43, ADMIN[:-1]):  # a respondent's token is a guess too
        r = client.get(url, headers=bearer(guess))
        assert r.status_code == 401, r.text
    for guess in ("another", ADMIN):  # blocked: even the right token waits
        r = client.get(url, headers=bearer(guess))
        assert r.status_code == 429, r.text
        assert r.headers["retry-after"] == "60"
        assert "wrong admin tokens" in r.json()["error"] and ADMIN not in r.text
    # the failures were counted on the limiter's clock: move it past the window
    limiter = security.admin_guesses(client.app)
    real = limiter.clock
    limiter.clock = lambda: real() + now[0]
    now[0] = 0.0
    # the dashboard's session is not a guess: a logged-in browser keeps working
    other = make_client(store)
    assert other.get(url, headers=admin_headers()).status_code == 200  # another app/address
    now[0] = 61.0
    assert client.get(url, headers=admin_headers()).status_code == 200
    # a success does not clear the count: the failures count until they leave the window
    for _ in range(4):
        assert client.get(url, headers=bearer("guess")).status_code == 401
    assert client.get(url, headers=admin_headers()).status_code == 429


def test_guesses_from_another_address_are_counted_apart(store: ServiceStore) -> None:
    client = make_client(store, admin_guess_limit=2)
    url = f"/api/surveys/{SURVEY}/results"
    for _ in range(2):
        assert client.get(url, headers=bearer("guess")).status_code == 401
    assert client.get(url, headers=admin_headers()).status_code == 429
    from fastapi.testclient import TestClient

    elsewhere = TestClient(client.app, client=("203.0.113.9", 5000))
    assert elsewhere.get(url, headers=admin_headers()).status_code == 200


def test_failed_logins_count_apart_from_bearer_guesses(store: ServiceStore) -> None:
    client = make_client(store, admin_guess_limit=3)
    for _ in range(3):
        r = client.post("/dashboard/login", data={"secret": "guess"}, follow_redirects=False)
        assert r.status_code == 401
    r = client.post("/dashboard/login", data={"secret": ADMIN}, follow_redirects=False)
    assert r.status_code == 429 and r.headers["retry-after"] == "60"
    url = f"/api/surveys/{SURVEY}/results"
    assert client.get(url, headers=admin_headers()).status_code == 200


# --------------------------------------------------------------------------- weak secrets
WEAK_TOKENS = [
    "changeme",
    "CHANGEME",
    "s3cr3t-admin",  # 12 base64url characters: 72 bits
    "deadbeef" * 3,  # 24 hex digits: 96 bits, and repeated
    "0123456789abcdef" * 2,  # 32 hex digits, but one piece twice
    "1234567890" * 3 + "123456789",  # 39 digits, one piece repeated
    "a" * 64,
    "correct horse battery staple and more",  # a passphrase, not a token
    "tøken-" + "x" * 40,  # outside ASCII
]


@pytest.mark.parametrize("token", WEAK_TOKENS)
def test_weak_admin_tokens_are_refused_by_create_app(store: ServiceStore, token: str) -> None:
    with pytest.raises(ParameterError, match=r"`admin_token` \(DENIABLE_ADMIN_TOKEN\)") as info:
        make_client(store, admin_token=token)
    assert token not in str(info.value)


@pytest.mark.parametrize(
    "token",
    [
        secrets.token_urlsafe(32),  # what serve generates (43 characters)
        secrets.token_urlsafe(17),  # 23 characters, 138 bits
        secrets.token_hex(16),  # 32 hex digits: 128 bits
        "".join(secrets.choice("0123456789") for _ in range(39)),
        ADMIN,
    ],
    ids=["urlsafe-32", "urlsafe-17", "hex-16", "digits-39", "tests-admin"],
)
def test_strong_admin_tokens_pass(token: str) -> None:
    from deniable.service.core.strength import token_weakness

    assert token_weakness(token) is None


@pytest.mark.parametrize("password", ["pw", "LetMeIn", "Password123", "abcabcabcabc"])
def test_weak_admin_passwords_are_refused(password: str) -> None:
    from types import SimpleNamespace

    from deniable.service.core.strength import check_admin_secrets

    settings = SimpleNamespace(admin_token=ADMIN, admin_password=password)
    with pytest.raises(ParameterError, match="`admin_password`") as info:
        check_admin_secrets(settings)
    assert password not in str(info.value)
    check_admin_secrets(SimpleNamespace(admin_token=ADMIN, admin_password="correct horse 42"))


@pytest.mark.parametrize(
    ("env", "word"),
    [
        ({"DENIABLE_ADMIN_TOKEN": "changeme"}, "`admin_token`"),
        ({"DENIABLE_ADMIN_TOKEN": "0123456789abcdef"}, "`admin_token`"),
        ({"DENIABLE_ADMIN_PASSWORD": "hunter2"}, "`admin_password`"),
    ],
)
@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_serve_refuses_weak_secrets_before_creating_anything(
    tmp_path: Path, env: dict[str, str], word: str, host: str
) -> None:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("DENIABLE_") and k != "DATABASE_URL"}  # fmt: skip
    base.update(env, DENIABLE_DATA=str(tmp_path / "data"))
    port = str(free_port())
    try:  # a server that starts would never exit: the timeout says it started
        result = subprocess.run(
            [sys.executable, "-m", "deniable.cli", "serve", "--host", host, "--port", port],
            capture_output=True, text=True, cwd=tmp_path, env=base, timeout=60,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("the server started with a weak secret")
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert word in lines[0] and "too weak" in lines[0]
    assert all(value not in result.stderr + result.stdout for value in env.values())
    assert not (tmp_path / "data").exists()  # nothing created


def test_a_second_authorization_header_does_not_escape_the_rate_limit(
    store: ServiceStore,
) -> None:
    # the route authenticates the first Authorization header: the limit must count that
    # token, whatever other Authorization headers the request carries
    client = make_client(store, rate_limit_per_minute=3)
    token = new_token(client)
    codes = []
    for i in range(5):
        headers = [("Authorization", f"Bearer {token}"), ("Authorization", f"Bearer decoy{i}")]
        r = client.post(REPORTS, json={"question": "happy", "report": 1}, headers=headers)
        codes.append(r.status_code)
    assert codes == [201, 200, 200, 429, 429], codes
