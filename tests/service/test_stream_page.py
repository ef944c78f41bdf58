"""The dashboard's telemetry-stream page (routes/stream_pages.py) and its JSON twin, on
SQLite: each UTC day's estimate is the stream oracle's own estimate of exactly that day's
reports; admin only; a bounded, well-formed range or a 422 naming the parameter; an
unknown stream 404; the page escapes what it shows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _apihelp import admin_headers, bearer
from _streamhelp import NOW, stream_client
from fastapi.testclient import TestClient
from test_streams import ORACLE, new_stream, post

from deniable.distributed import encode_batch
from deniable.oracles import oracle_spec
from deniable.service import pages
from deniable.service.analysis.streams import MAX_STREAM_DAYS
from deniable.service.pages._env import num
from deniable.service.storage import ServiceStore

DAY1, DAY2 = "2026-11-28", "2026-11-29"


@pytest.fixture
def backend() -> str:
    """SQLite only (the stream store's SQL is tested on both in test_streams.py)."""
    return "sqlite"


@pytest.fixture
def client(store: ServiceStore, tmp_path: Path) -> Iterator[TestClient]:
    c = stream_client(store, tmp_path)
    yield c


def two_days(client: TestClient) -> tuple[str, Any, Any]:
    """Batches on two UTC days (two on the first, one on the second); the device token and
    each day's reports."""
    token = new_stream(client)
    a = ORACLE.randomize(np.arange(40) % 6, rng=1)
    b = ORACLE.randomize(np.arange(25) % 3, rng=2)
    c = ORACLE.randomize(np.full(30, 5), rng=3)
    assert post(client, token, encode_batch(ORACLE, a)).status_code == 201
    assert post(client, token, encode_batch(ORACLE, b)).status_code == 201
    client.app.state.streams.clock.now = NOW + timedelta(days=1)  # type: ignore[attr-defined]
    assert post(client, token, encode_batch(ORACLE, c)).status_code == 201
    return token, np.concatenate([a, b]), c


def expected(reports: Any, level: float = 0.95) -> Any:
    """The oracle's own estimate of ``reports``, as JSON carries it."""
    return json.loads(json.dumps(ORACLE.estimate(reports).to_dict(level)))


def estimates(client: TestClient, sid: str = "app", **params: Any) -> Any:
    return client.get(f"/api/streams/{sid}/estimates", params=params, headers=admin_headers())


def test_each_day_is_the_oracles_estimate_of_that_days_reports(client: TestClient) -> None:
    _, first, second = two_days(client)
    r = estimates(client)
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["stream"], out["oracle"], out["level"]) == ("app", ORACLE.key, 0.95)
    # the default range: the last 30 days up to today (the clock's day, the second)
    assert (out["start"], out["end"]) == ("2026-10-31", DAY2)
    assert [d["day"] for d in out["days"]] == [DAY1, DAY2]
    assert out["days"][0]["estimate"] == expected(first)
    assert out["days"][1]["estimate"] == expected(second)
    assert out["days"][0]["estimate"]["n"] == 65 and out["days"][1]["estimate"]["n"] == 30
    # the level reaches the intervals; a range of one day reads that day only
    r = estimates(client, start=DAY1, end=DAY1, level=0.8)
    assert r.status_code == 200, r.text
    assert [d["day"] for d in r.json()["days"]] == [DAY1]
    assert r.json()["days"][0]["estimate"] == expected(first, 0.8)


def test_the_page_shows_both_days_with_estimates_and_intervals(client: TestClient) -> None:
    _, first, second = two_days(client)
    r = client.get("/dashboard/streams/app", headers=admin_headers())
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/html")
    assert "no-store" in r.headers["cache-control"]
    text = r.text
    assert DAY1 in text and DAY2 in text and "(n = 65)" in text and "(n = 30)" in text
    for reports in (first, second):
        est = ORACLE.estimate(reports)
        lo, hi = est.ci(0.95, "exact")[0]
        assert f"<td>{num(est.values[0])}</td><td>{num(est.se[0])}</td>" in text
        assert f"[{num(lo)}, {num(hi)}]" in text
    assert "95% CI exact" in text
    # the index links the stream's page
    index = client.get("/dashboard", headers=admin_headers())
    assert index.status_code == 200 and 'href="/dashboard/streams/app"' in index.text


def test_a_longitudinal_oracles_stream(client: TestClient) -> None:
    """LOLOHA's reports (its device-side memoized randomizer) estimated by LOLOHA itself."""
    from deniable.oracles import LOLOHA

    loloha = LOLOHA.from_epsilon(2.0, k=10)
    token = new_stream(client, "lo", oracle=loloha)
    reports = loloha.randomize(np.arange(50) % 10, rng=5)
    assert post(client, token, encode_batch(loloha, reports), sid="lo").status_code == 201
    r = estimates(client, "lo")
    assert r.status_code == 200, r.text
    want = json.loads(json.dumps(loloha.estimate(reports).to_dict(0.95)))
    assert [d["day"] for d in r.json()["days"]] == [DAY1]
    assert r.json()["days"][0]["estimate"] == want
    page = client.get("/dashboard/streams/lo", headers=admin_headers())
    assert page.status_code == 200 and "(n = 50)" in page.text


def test_a_day_without_reports_is_not_shown(client: TestClient) -> None:
    new_stream(client)
    r = estimates(client)
    assert r.status_code == 200 and r.json()["days"] == []
    page = client.get("/dashboard/streams/app", headers=admin_headers())
    assert page.status_code == 200 and "No reports in these days." in page.text


def test_admin_only(client: TestClient) -> None:
    token, _, _ = two_days(client)
    for path in ("/api/streams/app/estimates", "/dashboard/streams/app"):
        for headers in ({}, bearer(token), bearer("nope")):  # a device token is not admin
            r = client.get(path, headers=headers)
            assert r.status_code == 401, (path, headers)
            assert "0." not in r.text  # no estimate leaks into the refusal
        if path.startswith("/dashboard"):
            assert 'action="/dashboard/login"' in client.get(path).text


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"start": "2026-13-01"}, "`start` must be a UTC day"),
        ({"start": "28/11/2026"}, "`start` must be a UTC day"),
        ({"end": "yesterday"}, "`end` must be a UTC day"),
        ({"end": "2026-02-30"}, "`end` must be a UTC day"),
        ({"start": DAY2, "end": DAY1}, "`start` must not be after `end`"),
        ({"start": "2026-01-01", "end": DAY2}, f"may span at most {MAX_STREAM_DAYS} days"),
        ({"start": "2026-08-29"}, f"may span at most {MAX_STREAM_DAYS} days, got 93"),
        ({"level": 1.5}, "`level`"),
    ],
)
def test_bad_ranges_are_refused_naming_the_parameter(
    client: TestClient, params: dict[str, Any], named: str
) -> None:
    two_days(client)
    r = estimates(client, **params)
    assert r.status_code == 422 and named in r.json()["error"], r.text
    page = client.get("/dashboard/streams/app", params=params, headers=admin_headers())
    assert page.status_code == 422 and named in page.text


def test_the_longest_range_is_read(client: TestClient) -> None:
    two_days(client)
    r = estimates(client, start="2026-08-30")  # 92 days up to the clock's day
    assert r.status_code == 200, r.text
    assert [d["day"] for d in r.json()["days"]] == [DAY1, DAY2]


def test_an_unknown_stream_is_404(client: TestClient) -> None:
    two_days(client)
    for path in ("/api/streams/nope/estimates", "/dashboard/streams/nope"):
        r = client.get(path, headers=admin_headers())
        assert r.status_code == 404 and "no stream 'nope'" in r.text
    r = client.get("/dashboard/streams/%3Cscript%3E", headers=admin_headers())
    assert r.status_code == 404 and not r.headers["content-type"].startswith("text/html")


def test_the_page_escapes_a_hostile_stream_id() -> None:
    hostile = '<script>alert("x")</script>'
    spec = {
        "id": hostile,
        "oracle": oracle_spec(ORACLE),
        "period": "day",
        "window": {"kind": "day", "epsilon": 5.0, "tz": "UTC"},
        "report_epsilon": ORACLE.epsilon,
    }
    est = json.loads(json.dumps(ORACLE.estimate(ORACLE.randomize(np.zeros(9, int), rng=4))
                                .to_dict()))  # fmt: skip
    data = {"stream": hostile, "oracle": hostile, "start": DAY1, "end": DAY1, "level": 0.95,
            "max_days": MAX_STREAM_DAYS, "days": [{"day": hostile, "estimate": est}]}  # fmt: skip
    page = pages.stream_page(spec, data, 1)
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "/api/streams/%3Cscript%3Ealert%28%22x%22%29%3C%2Fscript%3E/estimates" in page
    listed = pages.survey_list_page([], [{"id": hostile, "oracle": hostile, "devices": 2}])
    assert "<script>alert" not in listed and "/dashboard/streams/%3Cscript%3E" in listed
