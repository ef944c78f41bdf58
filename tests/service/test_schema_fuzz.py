"""Fuzzing the API from its own OpenAPI schema (schemathesis; issue 9, part 6; issue 14).

Every operation of ``/openapi.json`` gets generated requests (valid and invalid bodies,
paths and queries), each sent three times: without credentials, with a respondent's token
and with the admin token, so that the generated bodies reach the code behind the
authentication.  No response may be a 5xx, every 4xx must be ``{"error": "..."}`` (or,
outside ``/api/``, an HTML page for a person: the dashboard's login form), and every
response must be what the schema declares (schemathesis's conformance checks): a
documented status, its documented content type (JSON, CSV, Parquet, SVG), its required
headers (``Retry-After`` on a 429) and its schema (the ``Error`` body of a refusal).
Every GET case is sent as HEAD too (same status and headers, no body), and every
operation with a JSON body also gets JSON nested far past Python's recursion limit (a 4xx).

Each operation is fuzzed three ways: valid requests to the demo survey (its id in the
path, so that the bodies get past the survey lookup), valid requests with generated paths,
and invalid requests (schemathesis's negative mode).  Bounded and reproducible: a fixed
number of examples per operation and way, derandomized (the same cases on every run), on
SQLite and PostgreSQL.  (The schemathesis pytest plugin's ``parametrize`` does not run
under pytest 9 yet, so the test drives the operations' Hypothesis strategies itself.)
The rate limit and the admin-guess limit are set high, so that the generated credentials
(a respondent's token sent to admin endpoints counts as a wrong admin token) do not lock
the fuzzer out of the code behind them; they are exercised by test_security_limits.py.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from _apihelp import ADMIN, SURVEY, make_client, new_token
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from deniable.service.storage import ServiceStore

EXAMPLES = 20
CONFORMANCE = [
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
DEEP = 50_000  # nesting far past Python's recursion limit


def _check(case: Any, token: str) -> None:
    for auth in (None, token, ADMIN):
        headers = dict(case.headers or {})
        if auth is not None:
            headers["Authorization"] = f"Bearer {auth}"
        response = case.call(headers=headers)
        where = f"{case.method} {case.formatted_path} body={case.body!r} auth={auth is not None}"
        assert response.status_code < 500, (where, response.status_code, response.text)
        case.validate_response(response, checks=CONFORMANCE, headers=headers)
        if case.method == "GET":
            _check_head(case, headers, response, where)
        if response.status_code >= 400:
            ctype = response.headers.get("content-type") or [""]
            if (ctype[0] if isinstance(ctype, list) else ctype).startswith("text/html"):
                # an HTML form (the dashboard's login) may answer a person with a page
                assert not case.formatted_path.startswith("/api/"), where
                continue
            body = response.json()
            assert isinstance(body.get("error"), str) and body["error"], (where, body)


def _check_head(case: Any, headers: dict[str, str], got: Any, where: str) -> None:
    """HEAD of a GET case: the same status and headers, an empty body."""
    head = case.call(headers=headers, method="HEAD")
    assert head.status_code == got.status_code, (where, head.status_code, got.status_code)
    assert head.content == b"", where
    for name in ("content-type", "content-length"):
        assert head.headers.get(name) == got.headers.get(name), (where, name)


def _check_deep(client: Any, op: Any, token: str) -> int:
    """Deeply nested JSON to an operation with a JSON body: a 4xx ``{"error"}`` whatever
    the credentials; the number of requests sent."""
    declared = client.get("/openapi.json").json()["paths"][op.path][op.method.lower()]
    if "application/json" not in declared.get("requestBody", {}).get("content", {}):
        return 0
    path = op.path.replace("{survey_id}", SURVEY)
    sent = 0
    for raw in (b"[" * DEEP + b"]" * DEEP, b'{"a":' * DEEP + b"0" + b"}" * DEEP,
                b'{"reports":[' + b"[" * DEEP + b"]" * DEEP + b"]}"):  # fmt: skip
        for auth in (None, token, ADMIN):
            headers = {"content-type": "application/json"}
            if auth is not None:
                headers["Authorization"] = f"Bearer {auth}"
            r = client.request(op.method.upper(), path, content=raw, headers=headers)
            assert 400 <= r.status_code < 500, (op.label, r.status_code, r.text)
            assert r.json()["error"], op.label
            sent += 1
    return sent


def test_no_5xx_and_4xx_are_errors(store: ServiceStore) -> None:
    client = make_client(store, rate_limit_per_minute=1_000_000, admin_guess_limit=1_000_000)
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
            except Unsatisfiable:  # nothing to make invalid: no body, free string paths
                assert at_least == 0, op.label
                assert not op.path.startswith("/api/surveys/{survey_id}/reports"), op.label
            assert tried - before >= at_least
    assert tried >= len(operations) * EXAMPLES
    deep = sum(_check_deep(client, op, token) for op in operations)
    assert deep >= 5 * 9  # every operation with a JSON body (sessions, reports, batch, ...)
