"""The JSON API on a real store, SQLite and PostgreSQL (the ``store`` fixture): sessions,
the survey, reports and their outcomes, the batch endpoint, the interviewer endpoint and
the protocols.  Bad input is in test_api_errors.py."""

from __future__ import annotations

import math

import pytest
from _apihelp import (
    ADMIN,
    SURVEY,
    add_survey,
    admin_headers,
    bearer,
    future,
    make_client,
    new_token,
    past,
    snapshot,
)
from fastapi import Request, Response

from deniable.accounting._exact_sum import add_up
from deniable.service.core.security import set_admin_cookie
from deniable.service.storage import ServiceStore
from deniable.survey import demo_survey

REPORTS = f"/api/surveys/{SURVEY}/reports"


def test_healthz_and_security_headers(store: ServiceStore) -> None:
    client = make_client(store)
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"ok": True}
    for resp in (r, client.get("/nowhere"), client.get(f"/api/surveys/{SURVEY}")):
        h = resp.headers
        assert h["content-security-policy"] == (
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
        )
        assert h["x-content-type-options"] == "nosniff"
        assert h["referrer-policy"] == "no-referrer"
        assert h["cache-control"] == "no-store"


def test_an_anonymous_respondent_answers_the_demo_survey(store: ServiceStore) -> None:
    client = make_client(store)
    token = new_token(client)
    survey = demo_survey()
    r = client.get(f"/api/surveys/{SURVEY}", headers=bearer(token))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["id"] == SURVEY and body["title"] == survey.title and body["open"] is True
    assert body["cap"] == survey.cap and body["remaining"] == pytest.approx(survey.cap)
    assert [q["id"] for q in body["questions"]] == [q.id for q in survey.questions]
    first = body["questions"][0]
    assert first["spec"] == survey.questions[0].spec.to_dict()
    assert first["epsilon"] == pytest.approx(math.log(3)) and first["answered"] is None
    assert first["labels"] == ["no", "yes"]

    r = client.post(REPORTS, json={"question": "happy", "report": 1}, headers=bearer(token))
    assert (r.status_code, r.json()) == (201, {"status": "stored"})
    # the same report again: idempotent, nothing spent twice
    r = client.post(REPORTS, json={"question": "happy", "report": 1}, headers=bearer(token))
    assert (r.status_code, r.json()) == (200, {"status": "duplicate"})
    # a different one: refused, the first is kept
    r = client.post(REPORTS, json={"question": "happy", "report": 0}, headers=bearer(token))
    assert r.status_code == 409 and r.json()["status"] == "conflict"
    assert "happy" in r.json()["error"]
    r = client.post(REPORTS, json={"question": "hours", "report": 3}, headers=bearer(token))
    assert r.status_code == 201

    body = client.get(f"/api/surveys/{SURVEY}", headers=bearer(token)).json()
    answered = {q["id"]: q["answered"] for q in body["questions"]}
    assert answered == {"happy": 1, "harassment": None, "hours": 3}
    spent = float(add_up(math.log(3), 1.0))
    assert body["remaining"] == pytest.approx(survey.cap - spent)
    rows, spends = snapshot(store)
    assert [{k: v for k, v in row.items() if k != "respondent"} for row in rows] == [
        {"happy": 1, "harassment": None, "hours": 3}
    ]
    assert spends == [pytest.approx(spent)]


def test_questions_past_the_cap_are_left_out_and_refused(store: ServiceStore) -> None:
    # cap 2.2: a (ln 3 = 1.0986) and then b (1) fit (2.0986); c (1) would not
    add_survey(store, "capped", cap=2.2)
    client = make_client(store)
    token = new_token(client, "capped")
    url = "/api/surveys/capped"
    shown = [q["id"] for q in client.get(url, headers=bearer(token)).json()["questions"]]
    assert shown == ["a", "b", "c"]  # each alone fits
    assert client.post(f"{url}/reports", json={"question": "a", "report": 0},
                       headers=bearer(token)).status_code == 201  # fmt: skip
    assert client.post(f"{url}/reports", json={"question": "b", "report": 1},
                       headers=bearer(token)).status_code == 201  # fmt: skip
    body = client.get(url, headers=bearer(token)).json()
    # answered questions stay (with their reports); c would pass the cap: left out
    assert [(q["id"], q["answered"]) for q in body["questions"]] == [("a", 0), ("b", 1)]
    assert body["remaining"] < 1.0
    before = snapshot(store, "capped")
    r = client.post(f"{url}/reports", json={"question": "c", "report": 2}, headers=bearer(token))
    assert r.status_code == 403 and r.json()["status"] == "over_cap"
    assert "cap" in r.json()["error"]
    assert snapshot(store, "capped") == before


def test_a_question_of_exactly_the_remaining_epsilon_is_shown(store: ServiceStore) -> None:
    # cap exactly 2: b (1) then c (1) reach it; after b, c must still be shown and admitted
    add_survey(store, "exact", cap=2.0)
    client = make_client(store)
    token = new_token(client, "exact")
    url = "/api/surveys/exact"
    ok = client.post(f"{url}/reports", json={"question": "b", "report": 1}, headers=bearer(token))
    assert ok.status_code == 201
    shown = [q["id"] for q in client.get(url, headers=bearer(token)).json()["questions"]]
    assert shown == ["b", "c"]  # a (ln 3 > 1) is left out
    r = client.post(f"{url}/reports", json={"question": "c", "report": 0}, headers=bearer(token))
    assert r.status_code == 201
    assert [q["id"] for q in client.get(url, headers=bearer(token)).json()["questions"]] == [
        "b",
        "c",
    ]


def test_closed_and_not_yet_open_surveys(store: ServiceStore) -> None:
    add_survey(store, "over", opens=past(10), closes=past(1))
    add_survey(store, "later", opens=future(1))
    client = make_client(store)
    for sid in ("over", "later"):
        before = snapshot(store, sid)
        r = client.post(f"/api/surveys/{sid}/sessions", json={})
        assert r.status_code == 409 and "closed" in r.json()["error"]
        token, _ = store.create_respondent(sid)  # a respondent from before the close
        before = snapshot(store, sid)
        body = client.get(f"/api/surveys/{sid}", headers=bearer(token)).json()
        assert body["open"] is False
        r = client.post(
            f"/api/surveys/{sid}/reports", json={"question": "a", "report": 1},
            headers=bearer(token),
        )  # fmt: skip
        assert r.status_code == 409 and r.json()["status"] == "closed"
        r = client.post(
            f"/api/surveys/{sid}/reports/batch",
            json={"reports": [{"token": token, "question": "a", "report": 1}]},
        )
        assert r.status_code == 409
        assert snapshot(store, sid) == before


def test_invitation_surveys_redeem_each_invitation_once(store: ServiceStore) -> None:
    add_survey(store, "invited", respondents="invitation")
    client = make_client(store)
    url = "/api/surveys/invited/sessions"
    before = snapshot(store, "invited")
    for body in ({}, {"invitation": "made-up"}, None):
        r = client.post(url, json=body)
        assert r.status_code == 403 and "invitation" in r.json()["error"]
    assert snapshot(store, "invited") == before
    r = client.post("/api/surveys/invited/invitations", json={"count": 2})
    assert r.status_code == 401
    r = client.post("/api/surveys/invited/invitations", json={"count": 2}, headers=admin_headers())
    assert r.status_code == 201
    first, second = r.json()["invitations"]
    token = new_token(client, "invited", invitation=first)
    assert client.get("/api/surveys/invited", headers=bearer(token)).status_code == 200
    r = client.post(url, json={"invitation": first})  # replayed
    assert r.status_code == 403
    assert new_token(client, "invited", invitation=second) != token


def test_tokens_belong_to_one_survey(store: ServiceStore) -> None:
    add_survey(store, "other")
    client = make_client(store)
    token = new_token(client, "other")
    r = client.get(f"/api/surveys/{SURVEY}", headers=bearer(token))
    assert r.status_code == 401
    # nor is the admin token a respondent token
    assert client.get(f"/api/surveys/{SURVEY}", headers=admin_headers()).status_code == 401


def test_batch_reports_in_order_with_their_outcomes(store: ServiceStore) -> None:
    client = make_client(store)
    t1, t2 = new_token(client), new_token(client)
    items = [
        {"token": t1, "question": "happy", "report": 1},
        {"token": t2, "question": "happy", "report": 0},
        {"token": t1, "question": "hours", "report": 2},
        {"token": t1, "question": "happy", "report": 1},  # the same again
        {"token": t2, "question": "happy", "report": 1},  # a different one
    ]
    r = client.post(f"{REPORTS}/batch", json={"reports": items})
    assert r.status_code == 200, r.text
    assert [x["status"] for x in r.json()["results"]] == [
        "stored", "stored", "stored", "duplicate", "conflict",
    ]  # fmt: skip
    rows = sorted(
        tuple(row[q] for q in ("happy", "harassment", "hours")) for row in snapshot(store)[0]
    )
    assert rows == [(0, None, None), (1, None, 2)]
    assert client.post(f"{REPORTS}/batch", json={"reports": []}).json() == {"results": []}


def test_batch_max_items_is_enforced(store: ServiceStore) -> None:
    client = make_client(store, batch_max_items=3)
    token = new_token(client)
    before = snapshot(store)
    items = [{"token": token, "question": "happy", "report": 1}] * 4
    r = client.post(f"{REPORTS}/batch", json={"reports": items})
    assert r.status_code == 413 and "at most 3" in r.json()["error"]
    assert snapshot(store) == before
    assert client.post(f"{REPORTS}/batch", json={"reports": items[:3]}).status_code == 200


def test_interviewer_stores_one_new_respondent(store: ServiceStore) -> None:
    client = make_client(store)
    url = f"/api/surveys/{SURVEY}/interviewer"
    body = {"reports": [{"question": "happy", "report": 1}, {"question": "harassment",
                                                            "report": 0}]}  # fmt: skip
    before = snapshot(store)
    assert client.post(url, json=body).status_code == 401
    assert client.post(url, json=body, headers=bearer("nope")).status_code == 401
    assert snapshot(store) == before
    r = client.post(url, json=body, headers=admin_headers())
    assert r.status_code == 201, r.text
    assert [x["status"] for x in r.json()["results"]] == ["stored", "stored"]
    rows, spends = snapshot(store)
    assert rows == [{"respondent": r.json()["respondent"], "happy": 1, "harassment": 0,
                     "hours": None}]  # fmt: skip
    assert spends == [pytest.approx(float(add_up(math.log(3), 1.0)))]


def test_interviewer_refuses_before_writing(store: ServiceStore) -> None:
    add_survey(store, "small", cap=1.5)
    client = make_client(store)
    before = snapshot(store, "small")
    cases = [
        ([{"question": "a", "report": 1}, {"question": "b", "report": 1}], 403),  # past the cap
        ([{"question": "a", "report": 1}, {"question": "a", "report": 1}], 422),  # twice
        ([{"question": "a", "report": 2}], 422),  # out of range
        ([{"question": "zzz", "report": 0}], 404),
        ([], 422),
    ]
    for reports, status in cases:
        r = client.post(
            "/api/surveys/small/interviewer", json={"reports": reports}, headers=admin_headers()
        )
        assert r.status_code == status, (reports, r.text)
        assert "reports" in r.json()["error"]
    assert snapshot(store, "small") == before


def test_protocols_only_where_a_device_gives_the_design_exactly(store: ServiceStore) -> None:
    client = make_client(store)
    url = f"/api/surveys/{SURVEY}/protocols"
    assert client.get(url).status_code == 401
    r = client.get(url, headers=admin_headers())
    assert r.status_code == 200
    by_id = {p["question"]: p for p in r.json()}
    assert list(by_id) == ["happy", "harassment", "hours"]
    happy = by_id["happy"]
    assert happy["protocol"]["device"] == "2 coins"
    assert happy["protocol"]["p_yes_given_1"] == "3/4"
    assert happy["steps"][0].startswith("Flip two coins")
    assert any("report 1" in s for s in happy["steps"])
    # Warner at epsilon 1 and a four-way question: no fair device gives these channels
    for qid in ("harassment", "hours"):
        assert by_id[qid]["protocol"] is None
        assert "No coin or dice protocol" in by_id[qid]["steps"][0]


def test_admin_cookie_from_security_passes_admin_endpoints(store: ServiceStore) -> None:
    client = make_client(store)
    app = client.app

    @app.post("/test-login")  # type: ignore[attr-defined, untyped-decorator]
    def login(request: Request, response: Response) -> dict[str, bool]:
        set_admin_cookie(response, request)
        return {"ok": True}

    assert client.get(f"/api/surveys/{SURVEY}/protocols").status_code == 401
    assert client.post("/test-login").status_code == 200
    assert client.get(f"/api/surveys/{SURVEY}/protocols").status_code == 200
    assert ADMIN not in client.cookies.get("deniable_admin", "")


def test_openapi_and_docs(store: ServiceStore) -> None:
    client = make_client(store)
    schema = client.get("/openapi.json").json()
    for path in (
        "/api/surveys/{survey_id}/sessions",
        "/api/surveys/{survey_id}",
        "/api/surveys/{survey_id}/reports",
        "/api/surveys/{survey_id}/reports/batch",
        "/api/surveys/{survey_id}/interviewer",
        "/api/surveys/{survey_id}/protocols",
        "/healthz",
    ):
        assert path in schema["paths"], path
    r = client.get("/docs")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "/api/surveys/{survey_id}/reports" in r.text
    assert "<script" not in r.text and "style=" not in r.text
    assert "script-src 'self'" in r.headers["content-security-policy"]


def test_pages_of_unknown_surveys_are_404(store: ServiceStore) -> None:
    client = make_client(store)
    for url in ("/s/nope", "/interviewer/nope"):
        r = client.get(url)
        assert r.status_code == 404 and "survey_id" in r.json()["error"]
