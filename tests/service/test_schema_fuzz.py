"""Fuzzing the API from its own OpenAPI schema (schemathesis; issue 9, part 6).

Every operation of ``/openapi.json`` gets generated requests (valid and invalid bodies,
paths and queries), each sent three times: without credentials, with a respondent's token
and with the admin token, so that the generated bodies reach the code behind the
authentication.  No response may be a 5xx, and every 4xx must be ``{"error": "..."}``.

Each operation is fuzzed three ways: valid requests to the demo survey (its id in the
path, so that the bodies get past the survey lookup), valid requests with generated paths,
and invalid requests (schemathesis's negative mode).  Bounded and reproducible: a fixed
number of examples per operation and way, derandomized (the same cases on every run), on
SQLite and PostgreSQL.  (The schemathesis pytest plugin's ``parametrize`` does not run
under pytest 9 yet, so the test drives the operations' Hypothesis strategies itself.)
"""

from __future__ import annotations

from typing import Any

import schemathesis
from _apihelp import ADMIN, SURVEY, make_client, new_token
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

from deniable.service.storage import ServiceStore

EXAMPLES = 20


def _check(case: Any, token: str) -> None:
    for auth in (None, token, ADMIN):
        headers = dict(case.headers or {})
        if auth is not None:
            headers["Authorization"] = f"Bearer {auth}"
        response = case.call(headers=headers)
        where = f"{case.method} {case.formatted_path} body={case.body!r} auth={auth is not None}"
        assert response.status_code < 500, (where, response.status_code, response.text)
        if response.status_code >= 400:
            body = response.json()
            assert isinstance(body.get("error"), str) and body["error"], (where, body)


def test_no_5xx_and_4xx_are_errors(store: ServiceStore) -> None:
    client = make_client(store, rate_limit_per_minute=1_000_000)
    token = new_token(client)
    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 7
    tried = 0
    for op in operations:
        has_survey = "{survey_id}" in op.path
        ways = [
            (op.as_strategy(path_parameters={"survey_id": SURVEY} if has_survey else None), 1),
            (op.as_strategy(), 1),
            (op.as_strategy(schemathesis.GenerationMode.NEGATIVE), 0),
        ]
        for strategy, at_least in ways:
            before = tried

            @settings(
                max_examples=EXAMPLES,
                derandomize=True,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(case=strategy)
            def run(case: Any) -> None:
                nonlocal tried
                tried += 1
                _check(case, token)

            try:
                run()
            except Unsatisfiable:  # nothing to make invalid: a GET with a free string path
                assert at_least == 0 and op.method.upper() != "POST", op.label
            assert tried - before >= at_least
    assert tried >= len(operations) * EXAMPLES
