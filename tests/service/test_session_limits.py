"""Ballot stuffing at the door: the sliding-window limiter (a fake clock), the client keys
(IPv6 by /64), and the session endpoint on a real store (SQLite and PostgreSQL): one client
no longer gets thousands of respondents, a survey's ceiling holds across addresses, past a
limit the answer is 429 with Retry-After and nothing is created, invitation surveys admit
no one without an invitation, and a closed survey takes nothing."""

from __future__ import annotations

import pytest
from _apihelp import (
    ADMIN,
    SURVEY,
    add_survey,
    admin_headers,
    bearer,
    make_client,
    new_token,
    snapshot,
)
from fastapi.testclient import TestClient

from deniable.service.app import create_app
from deniable.service.core.limiter import SlidingWindowLimiter
from deniable.service.core.limits import SessionLimits, client_key
from deniable.service.core.settings import Settings
from deniable.service.storage import ServiceStore, lifecycle

SESSIONS = f"/api/surveys/{SURVEY}/sessions"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_window_slides() -> None:
    clock = Clock()
    lim = SlidingWindowLimiter(3, 60.0, clock=clock)
    for t in (0.0, 10.0, 20.0):
        clock.now = 1000.0 + t
        assert lim.wait("a") == 0.0
        lim.record("a")
    clock.now = 1030.0
    assert lim.wait("a") == pytest.approx(30.0)  # the event at 0 leaves the window at 60
    assert lim.wait("b") == 0.0  # keys are counted apart
    clock.now = 1060.0
    assert lim.wait("a") == 0.0
    lim.record("a")
    assert lim.wait("a") == pytest.approx(10.0)  # now the event at 10 is the oldest
    off = SessionLimits(Settings(database_url="sqlite://", session_limit_per_address=0,
                                 session_limit_per_survey=0))  # fmt: skip
    assert off.per_address is None and off.per_survey is None
    assert all(off.admit("10.0.0.1", "s", anonymous=True) is None for _ in range(1000))


def test_the_keys_kept_are_bounded() -> None:
    clock = Clock()
    lim = SlidingWindowLimiter(1, 60.0, max_keys=100, clock=clock)
    for i in range(1000):
        lim.record(f"k{i}")
    assert len(lim._events) <= 100
    assert lim.wait("k999") > 0  # the most recent keys are kept


def test_client_keys_group_an_ipv6_machine_and_hold_no_address() -> None:
    secret = b"s" * 32
    a = client_key("2001:db8:1:2::1", secret)
    assert a == client_key("2001:db8:1:2:ffff:1:2:3", secret)  # the same /64
    assert a != client_key("2001:db8:1:3::1", secret)
    assert client_key("::ffff:192.0.2.7", secret) == client_key("192.0.2.7", secret)
    assert client_key("192.0.2.7", secret) != client_key("192.0.2.8", secret)
    assert "192.0.2.7" not in client_key("192.0.2.7", secret)
    assert client_key("192.0.2.7", secret) != client_key("192.0.2.7", b"t" * 32)
    assert client_key(None, secret) == client_key("unknown", secret)


def test_one_client_no_longer_opens_thousands_of_sessions(store: ServiceStore) -> None:
    """Issue 14: an anonymous survey took 3,000 sessions from one client in 10 s.  With the
    default settings one address gets 30 per 10 minutes; the rest are 429 and create
    nothing."""
    client = make_client(store)
    codes = [client.post(SESSIONS, json={}).status_code for _ in range(200)]
    assert codes.count(201) == Settings(database_url="sqlite://").session_limit_per_address == 30
    assert codes[:30] == [201] * 30 and set(codes[30:]) == {429}
    assert len(store.spent(SURVEY)) == 30  # respondents created
    r = client.post(SESSIONS, json={})
    assert r.status_code == 429
    assert 1 <= int(r.headers["retry-after"]) <= 600
    error = r.json()["error"]
    assert "settings.session_limit_per_address" in error and "at most 30 in 600 seconds" in error
    assert f"retry after {r.headers['retry-after']} s" in error


def test_other_addresses_are_counted_apart_and_the_survey_has_a_ceiling(
    store: ServiceStore,
) -> None:
    settings = Settings(database_url="sqlite://", admin_token=ADMIN,
                        session_limit_per_address=2, session_limit_per_survey=5)  # fmt: skip
    app = create_app(settings, store)
    codes = []
    for i in range(8):  # a botnet: every address new
        with TestClient(app, client=(f"198.51.100.{i}", 4000)) as c:
            codes.append(c.post(SESSIONS, json={}).status_code)
    assert codes == [201] * 5 + [429] * 3
    with TestClient(app, client=("198.51.100.1", 4000)) as c:
        r = c.post(SESSIONS, json={})
    assert r.status_code == 429 and "settings.session_limit_per_survey" in r.json()["error"]
    assert len(store.spent(SURVEY)) == 5


def test_limits_off_and_invitations_counted_per_address_only(store: ServiceStore) -> None:
    client = make_client(store, session_limit_per_address=0, session_limit_per_survey=0)
    assert all(client.post(SESSIONS, json={}).status_code == 201 for _ in range(40))
    add_survey(store, "invited", respondents="invitation")
    client = make_client(store, session_limit_per_address=3, session_limit_per_survey=1)
    made = client.post("/api/surveys/invited/invitations", json={"count": 3},
                       headers=admin_headers()).json()["invitations"]  # fmt: skip
    url = "/api/surveys/invited/sessions"
    # the survey ceiling (1) does not apply: each session needs an invitation
    assert client.post(url, json={"invitation": made[0]}).status_code == 201
    assert client.post(url, json={"invitation": made[1]}).status_code == 201
    assert client.post(url, json={"invitation": "guessed"}).status_code == 403  # counted
    r = client.post(url, json={"invitation": made[2]})
    assert r.status_code == 429 and "session_limit_per_address" in r.json()["error"]


def test_an_invitation_survey_admits_no_one_without_an_invitation(store: ServiceStore) -> None:
    add_survey(store, "invited", respondents="invitation")
    client = make_client(store)
    before = snapshot(store, "invited")
    for body in ({}, None):
        r = client.post("/api/surveys/invited/sessions", json=body)
        assert r.status_code == 403
        assert "by invitation only" in r.json()["error"] and "personal link" in r.json()["error"]
    assert snapshot(store, "invited") == before and len(store.spent("invited")) == 0


def test_a_closed_survey_says_so_to_sessions_reports_and_the_survey(store: ServiceStore) -> None:
    client = make_client(store)
    token = new_token(client)
    assert client.post(f"/api/surveys/{SURVEY}/reports", json={"question": "happy", "report": 1},
                       headers=bearer(token)).status_code == 201  # fmt: skip
    before = snapshot(store)
    lifecycle.close_survey(store, SURVEY)
    client = make_client(store)  # a fresh app: no survey cached (the store decides anyway)
    r = client.post(SESSIONS, json={})
    assert r.status_code == 409 and "closed" in r.json()["error"]
    r = client.post(f"/api/surveys/{SURVEY}/reports", json={"question": "hours", "report": 1},
                    headers=bearer(token))  # fmt: skip
    assert r.status_code == 409 and r.json()["status"] == "closed"
    batch = {"reports": [{"token": token, "question": "hours", "report": 1}]}
    r = client.post(f"/api/surveys/{SURVEY}/reports/batch", json=batch)
    assert r.status_code == 409
    r = client.get(f"/api/surveys/{SURVEY}", headers=bearer(token))
    assert r.status_code == 200 and r.json()["open"] is False
    assert snapshot(store) == before
    lifecycle.reopen_survey(store, SURVEY)
    client = make_client(store)
    assert client.post(SESSIONS, json={}).status_code == 201


def test_the_limits_reach_every_worker(store: ServiceStore) -> None:
    from deniable.cli._serve import worker_environment

    settings = Settings(database_url="sqlite://", session_limit_per_address=7,
                        session_limit_per_survey=70, session_window_seconds=90)  # fmt: skip
    env = worker_environment(settings)
    assert env["DENIABLE_SESSION_LIMIT_PER_ADDRESS"] == "7"
    assert env["DENIABLE_SESSION_LIMIT_PER_SURVEY"] == "70"
    assert float(env["DENIABLE_SESSION_WINDOW_SECONDS"]) == 90
    limits = SessionLimits(settings)
    assert limits.per_address is not None and limits.per_survey is not None
    assert (limits.per_address.limit, limits.per_survey.limit, limits.window) == (7, 70, 90.0)
