"""Helpers of the API tests (owner: api): an app on a test's store, survey texts, and a
snapshot of everything a store holds for a survey (to check that a refusal stored nothing).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient

from deniable.service.app import create_app
from deniable.service.core.settings import Settings
from deniable.service.storage import ServiceStore
from deniable.survey import Survey, loads_survey

ADMIN = "test-admin-token-0123456789abcdef0123456789"
SURVEY = "workplace"  # the demo survey's id


def make_client(store: ServiceStore, **settings: Any) -> TestClient:
    """A TestClient on the app over ``store`` (the admin token is :data:`ADMIN`)."""
    values: dict[str, Any] = {"database_url": "sqlite:///unused.db", "admin_token": ADMIN}
    values.update(settings)
    return TestClient(create_app(Settings(**values), store))


def admin_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN}"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def new_token(client: TestClient, survey: str = SURVEY, **body: Any) -> str:
    r = client.post(f"/api/surveys/{survey}/sessions", json=body)
    assert r.status_code == 201, r.text
    token = r.json()["token"]
    assert isinstance(token, str) and len(token) >= 40
    return token


def survey_text(
    survey_id: str,
    *,
    cap: float = 5.0,
    respondents: str = "anonymous",
    opens: datetime | None = None,
    closes: datetime | None = None,
    questions: str = "",
) -> str:
    """A survey file's text with two binary questions (``a``: two coins, ln 3; ``b``:
    Warner at epsilon 1) and a four-way one (``c``: epsilon 1), unless ``questions`` says."""
    dates = ""
    if opens is not None:
        dates += f"opens: {opens.isoformat()}\n"
    if closes is not None:
        dates += f"closes: {closes.isoformat()}\n"
    qs = questions or (
        "  - {id: a, text: 'First?', labels: ['no', 'yes'], design: {mechanism: two-coin}}\n"
        "  - {id: b, text: 'Second?', labels: ['no', 'yes'],"
        " design: {mechanism: warner, epsilon: 1}}\n"
        "  - {id: c, text: 'Third?', labels: [w, x, y, z],"
        " design: {mechanism: categorical, parameters: {k: 4}, epsilon: 1}}\n"
    )
    return (
        f"schema: deniable.survey/1\nid: {survey_id}\ntitle: Test {survey_id}\n"
        f"cap: {cap}\nrespondents: {respondents}\n{dates}questions:\n{qs}"
    )


def add_survey(store: ServiceStore, survey_id: str, **kwargs: Any) -> Survey:
    survey = loads_survey(survey_text(survey_id, **kwargs))
    store.load_survey(survey)
    return survey


def past(days: int = 1) -> datetime:
    return datetime.now(UTC) - timedelta(days=days)


def future(days: int = 1) -> datetime:
    return datetime.now(UTC) + timedelta(days=days)


def snapshot(store: ServiceStore, survey_id: str = SURVEY) -> tuple[Any, ...]:
    """Everything stored for a survey: reports per respondent, budgets spent (one entry per
    respondent), so that equal snapshots mean nothing was stored."""
    return (list(store.export_rows(survey_id)), store.spent(survey_id).tolist())
