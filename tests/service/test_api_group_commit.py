"""Group commit of single reports (service/batching.py): concurrent requests share a
transaction, and each still gets the outcome of submitting the reports one by one in
arrival order; a failing group falls back to one transaction per report."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import httpx
import pytest
from _apihelp import add_survey, make_client, snapshot

from deniable.accounting._exact_sum import add_up
from deniable.exceptions import DataError
from deniable.service.core.batching import GroupSubmitter
from deniable.service.storage import ServiceStore


def _spy(store: ServiceStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    real = store.submit_batch

    def submit_batch(survey_id: str, items: Any, **options: Any) -> Any:
        sizes.append(len(items))
        return real(survey_id, items, **options)

    monkeypatch.setattr(store, "submit_batch", submit_batch)
    return sizes


async def _post_all(app: Any, requests: list[tuple[str, str, int]]) -> list[httpx.Response]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return list(
            await asyncio.gather(
                *(
                    client.post(
                        "/api/surveys/g/reports",
                        json={"question": q, "report": r},
                        headers={"Authorization": f"Bearer {t}"},
                    )
                    for t, q, r in requests
                )
            )
        )


def test_concurrent_reports_share_transactions_with_sequential_outcomes(
    store: ServiceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cap 2.2: a (ln 3) + b (1) fit, c (1) after both does not
    add_survey(store, "g", cap=2.2)
    client = make_client(store, rate_limit_per_minute=10**6, session_limit_per_address=0)
    tokens = [client.post("/api/surveys/g/sessions", json={}).json()["token"] for _ in range(40)]
    sizes = _spy(store, monkeypatch)
    requests = []
    for t in tokens:
        requests += [(t, "a", 1), (t, "b", 0), (t, "a", 1), (t, "a", 0), (t, "c", 2)]
    responses = asyncio.run(_post_all(client.app, requests))
    # arrival order is request order here: per respondent, stored, stored, duplicate,
    # conflict, over_cap (a and b spent 2.0986 of 2.2)
    by_token: dict[str, list[tuple[int, str]]] = {}
    for (t, _, _), r in zip(requests, responses, strict=True):
        by_token.setdefault(t, []).append((r.status_code, r.json()["status"]))
    for t in tokens:
        assert by_token[t] == [(201, "stored"), (201, "stored"), (200, "duplicate"),
                               (409, "conflict"), (403, "over_cap")]  # fmt: skip
    assert sum(sizes) == len(requests)
    assert len(sizes) < len(requests) / 5, sizes  # grouped, not one transaction each
    rows, spent = snapshot(store, "g")
    assert len(rows) == len(tokens)
    assert all((row["a"], row["b"], row["c"]) == (1, 0, None) for row in rows)
    assert spent == [pytest.approx(float(add_up(math.log(3), 1.0)))] * len(tokens)


def test_a_failing_group_is_retried_one_report_at_a_time(
    store: ServiceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_survey(store, "g")
    client = make_client(store, rate_limit_per_minute=10**6)
    tokens = [client.post("/api/surveys/g/sessions", json={}).json()["token"] for _ in range(6)]
    real_submit = store.submit
    bad = {}

    def submit_batch(survey_id: str, items: Any, **options: Any) -> Any:
        raise DataError("the group failed")

    def submit(survey_id: str, rid: int, q: str, report: int) -> Any:
        if rid == bad.get("rid"):
            raise DataError("this one failed")
        return real_submit(survey_id, rid, q, report)

    bad["rid"] = store.respondent("g", tokens[0])
    monkeypatch.setattr(store, "submit_batch", submit_batch)
    monkeypatch.setattr(store, "submit", submit)
    responses = asyncio.run(_post_all(client.app, [(t, "a", 1) for t in tokens]))
    codes = [r.status_code for r in responses]
    assert codes[0] == 422 and codes[1:] == [201] * 5
    assert len(snapshot(store, "g")[0]) == 5


def test_an_idle_submitter_forgets_its_loop(store: ServiceStore) -> None:
    add_survey(store, "g")
    group = GroupSubmitter(store)
    _, rid = store.create_respondent("g")

    async def one() -> Any:
        return await group.submit("g", rid, "a", 1)

    assert asyncio.run(one()).status == "stored"
    assert group._queues == {} and group._writers == {}
