"""The dashboard over HTTP (``deniable.service.routes.analyst``), on a real ServiceStore (SQLite and
PostgreSQL) with reports submitted through the store, through the app (``create_app``) with
TestClient:

* every admin endpoint and page refuses a request without credentials (401) and answers with
  the admin token and with the login cookie (from the token and from the password);
* the numbers equal closed forms computed here from the submitted reports (not from the
  code's output): estimates, SEs, exact and Wald intervals, per category, the timeline's
  cumulative counts per bucket, the budget each respondent spent, the majority decision's
  exact binomial tails;
* ``deniable analyze`` (the CLI) on the CSV export, and ``analyze_file`` on the Parquet one,
  give the results endpoint's numbers for every yes/no question; a categorical question's
  column, counted and estimated with its design, gives its per-category numbers
  (categorical questions too, with ``--survey``);
* the exports hold the report values and nothing else;
* the pages carry no inline script or style (parsed), every number of the results is in a
  table, and the strict CSP header is sent.
"""

from __future__ import annotations

import io
import json
import math
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from _closed_forms import binary, binom_sf
from fastapi.testclient import TestClient
from test_streams import spec_body

from deniable.service.app import create_app
from deniable.service.core.settings import Settings
from deniable.service.storage import ServiceStore

SID = "workplace"
TOKEN = "admin-token-for-the-dashboard-tests-0123456789"
PASSWORD = "correct horse battery staple"
E = math.e
CHANNELS = {"happy": (0.75, 0.25), "harassment": (E / (1 + E), 1 / (1 + E))}
N_RESPONDENTS = 80  # the last two open a session and send nothing
STREAM = "app"  # a telemetry stream (its routes are admin only, as the survey's)
ADMIN_PATHS = [
    f"/api/surveys/{SID}/results",
    f"/api/surveys/{SID}/results/happy/timeline",
    f"/api/surveys/{SID}/results/happy/majority",
    f"/api/surveys/{SID}/budget",
    f"/api/surveys/{SID}/plots/forest.svg",
    f"/api/surveys/{SID}/plots/timeline/hours.svg",
    f"/api/surveys/{SID}/plots/budget.svg",
    f"/api/surveys/{SID}/export.csv",
    f"/api/surveys/{SID}/export.parquet",
    f"/api/surveys/{SID}/results.json",
    f"/api/surveys/{SID}/arrivals",
    f"/api/surveys/{SID}/robustness",
    "/dashboard",
    f"/dashboard/{SID}",
    "/api/streams",
    f"/api/streams/{STREAM}/estimates",
    f"/dashboard/streams/{STREAM}",
]
#: The stream routes that store: admin only too (a PUT of a spec, a POST issuing tokens).
ADMIN_WRITES = [("PUT", f"/api/streams/{STREAM}"), ("POST", f"/api/streams/{STREAM}/devices")]


# --------------------------------------------------------------------------- fixtures
class Filled:
    """The reports submitted through the store: per respondent id, question -> report."""

    def __init__(self, answers: dict[int, dict[str, int]], idle: list[int]) -> None:
        self.answers = answers
        self.idle = idle

    def reports(self, qid: str) -> list[int]:
        return [a[qid] for a in self.answers.values() if qid in a]

    def counts(self, qid: str, k: int = 2) -> list[int]:
        c = Counter(self.reports(qid))
        return [c[j] for j in range(k)]


@pytest.fixture
def filled(store: ServiceStore) -> Filled:
    rng = np.random.default_rng(20261125)
    answers: dict[int, dict[str, int]] = {}
    idle: list[int] = []
    items: list[tuple[int, str, int]] = []
    for i in range(N_RESPONDENTS):
        _, rid = store.open_session(SID, None)
        if i >= N_RESPONDENTS - 2:
            idle.append(rid)
            continue
        mine = {"happy": int(rng.random() < 0.6)}
        if i % 4:
            mine["harassment"] = int(rng.random() < 0.3)
        if i % 5:
            mine["hours"] = int(rng.choice(4, p=[0.2, 0.4, 0.3, 0.1]))
        answers[rid] = mine
        items.extend((rid, q, r) for q, r in mine.items())
    out = store.submit_batch(SID, items)
    assert [s.status for s in out] == ["stored"] * len(items)
    return Filled(answers, idle)


@pytest.fixture
def app_client(store: ServiceStore, db_url: str, tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        database_url=db_url,
        admin_token=TOKEN,
        admin_password=PASSWORD,
        streams_dir=tmp_path / "streams",
    )
    app = create_app(settings, store=store)
    with TestClient(app) as client:
        yield client


@pytest.fixture
def stream(app_client: TestClient) -> str:
    """A telemetry stream stored through the API (no reports yet)."""
    r = app_client.put(
        f"/api/streams/{STREAM}",
        json=spec_body(STREAM),
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert r.status_code == 201, r.text
    return STREAM


@pytest.fixture
def admin(app_client: TestClient) -> TestClient:
    app_client.headers["Authorization"] = f"Bearer {TOKEN}"
    return app_client


def _get(client: TestClient, path: str, **params: Any) -> Any:
    r = client.get(path, params=params)
    assert r.status_code == 200, r.text
    return r.json()


# --------------------------------------------------------------------------- auth
@pytest.mark.parametrize("path", ADMIN_PATHS)
def test_admin_only(app_client: TestClient, filled: Filled, stream: str, path: str) -> None:
    r = app_client.get(path)
    assert r.status_code == 401
    if path.startswith("/dashboard"):
        assert 'action="/dashboard/login"' in r.text  # the page offers the login form
    else:
        assert "error" in r.json()
    assert app_client.get(path, headers={"Authorization": "Bearer nope"}).status_code == 401
    app_client.cookies.set("deniable_admin", "forged.value.sig")
    assert app_client.get(path).status_code == 401
    app_client.cookies.clear()
    assert app_client.get(path, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    for secret in (TOKEN, PASSWORD):
        login = app_client.post("/dashboard/login", data={"secret": secret}, follow_redirects=False)
        assert login.status_code == 303 and login.headers["location"] == "/dashboard"
        cookie = login.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert app_client.get(path).status_code == 200
        out = app_client.post("/dashboard/logout", follow_redirects=False)
        assert out.status_code == 303
        app_client.cookies.clear()  # what the browser does with the expired cookie
        assert app_client.get(path).status_code == 401


@pytest.mark.parametrize(("method", "path"), ADMIN_WRITES)
def test_stream_writes_are_admin_only(
    app_client: TestClient, stream: str, method: str, path: str
) -> None:
    """Without the admin's credentials a stream's spec is not replaced and no device token
    is issued: 401 naming the credentials, and the stream keeps no device."""
    body = spec_body(STREAM, cap=1.0)
    app_client.cookies.set("deniable_admin", "forged.value.sig")
    for headers in ({}, {"Authorization": "Bearer nope"}):
        r = app_client.request(method, path, json=body, headers=headers)
        assert r.status_code == 401, (method, headers)
        assert "admin only" in r.json()["error"]
    app_client.cookies.clear()
    listed = app_client.get("/api/streams", headers={"Authorization": f"Bearer {TOKEN}"})
    assert listed.status_code == 200
    [kept] = listed.json()["streams"]
    assert kept["devices"] == 0
    assert kept["window"]["epsilon"] == 500.0  # the cap stored first, not the 1 sent after


def test_login_refuses_a_wrong_secret(app_client: TestClient) -> None:
    for data in ({"secret": "wrong"}, {"secret": ""}, {}):
        r = app_client.post("/dashboard/login", data=data, follow_redirects=False)
        assert r.status_code == 401 and "set-cookie" not in r.headers
        assert "not the admin token or password" in r.text or not data.get("secret")
    assert app_client.get("/dashboard/login").status_code == 200


# --------------------------------------------------------------------------- numbers
@pytest.mark.parametrize("level", [0.95, 0.8])
def test_results_equal_closed_forms(admin: TestClient, filled: Filled, level: float) -> None:
    res = _get(admin, f"/api/surveys/{SID}/results", level=level)
    qs = {q["id"]: q for q in res["questions"]}
    for qid, (p1, p0) in CHANNELS.items():
        yes, n = sum(filled.reports(qid)), len(filled.reports(qid))
        cf = binary(yes, n, p1, p0, level)
        q = qs[qid]
        assert q["n"] == n and q["counts"] == [n - yes, yes] and q["level"] == level
        for key in ("estimate", "se", "se_unbiased", "ci_wald"):
            assert q[key] == pytest.approx(cf[key], rel=1e-12), key
        assert q["ci_exact"] == pytest.approx(cf["ci_exact"], rel=1e-9, abs=1e-12)
    counts = filled.counts("hours", 4)
    n = sum(counts)
    p, r = E / (E + 3), 1 / (E + 3)  # 4-ary randomized response at epsilon 1
    q = qs["hours"]
    assert q["kind"] == "categorical" and q["n"] == n and q["counts"] == counts
    assert q["epsilon"] == pytest.approx(1.0, rel=1e-12)
    for j, c in enumerate(counts):
        cf = binary(c, n, p, r, level)  # category j: "report j or not"
        for key in ("estimate", "se", "se_unbiased", "ci_wald"):
            assert q[key][j] == pytest.approx(cf[key], rel=1e-12), (key, j)
        assert q["ci_exact"][j] == pytest.approx(cf["ci_exact"], rel=1e-9, abs=1e-12)


def test_timeline_cumulative_per_bucket(
    admin: TestClient, filled: Filled, store: ServiceStore
) -> None:
    import sqlalchemy as sa

    from deniable.service.storage.tables import reports

    ids = sorted(filled.answers)
    day0 = datetime(2026, 3, 1, 10, 30, tzinfo=UTC)
    groups = [(ids[:20], day0), (ids[20:50], day0 + timedelta(days=1, hours=2)),
              (ids[50:], day0 + timedelta(days=3))]  # fmt: skip
    with store.engine.begin() as conn:
        for members, when in groups:
            conn.execute(
                sa.update(reports)
                .where(reports.c.respondent_id.in_(members))
                .values(received_at=when.timestamp())
            )
    tl = _get(admin, f"/api/surveys/{SID}/results/harassment/timeline", bucket="day")
    midnight = datetime(2026, 3, 2, tzinfo=UTC)
    assert [p["end"] for p in tl["points"]] == [
        midnight.isoformat(),
        (midnight + timedelta(days=1)).isoformat(),
        (midnight + timedelta(days=3)).isoformat(),
    ]
    p1, p0 = CHANNELS["harassment"]
    for k, point in enumerate(tl["points"]):
        members = {i for g in groups[: k + 1] for i in g[0]}
        mine = [
            filled.answers[i]["harassment"] for i in members if "harassment" in filled.answers[i]
        ]
        assert point["n"] == len(mine)
        assert point["counts"] == [len(mine) - sum(mine), sum(mine)]
        cf = binary(sum(mine), len(mine), p1, p0)
        assert point["estimate"] == pytest.approx(cf["estimate"], rel=1e-12)
        assert point["ci_exact"] == pytest.approx(cf["ci_exact"], rel=1e-9, abs=1e-12)
    hourly = _get(admin, f"/api/surveys/{SID}/results/hours/timeline", bucket="hour")
    assert [p["end"] for p in hourly["points"]] == [
        datetime(2026, 3, 1, 11, tzinfo=UTC).isoformat(),
        datetime(2026, 3, 2, 13, tzinfo=UTC).isoformat(),
        datetime(2026, 3, 4, 11, tzinfo=UTC).isoformat(),
    ]
    assert hourly["points"][-1]["counts"] == filled.counts("hours", 4)
    svg = admin.get(f"/api/surveys/{SID}/plots/timeline/hours.svg", params={"bucket": "hour"})
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")


def test_budget_is_what_each_respondent_spent(admin: TestClient, filled: Filled) -> None:
    eps = {"happy": math.log(3), "harassment": 1.0, "hours": 1.0}
    expected = sorted([math.fsum(eps[q] for q in a) for a in filled.answers.values()]
                      + [0.0] * len(filled.idle))  # fmt: skip
    b = _get(admin, f"/api/surveys/{SID}/budget", bins=13)
    assert b["cap"] == 3.25 and b["respondents"] == N_RESPONDENTS
    got = sorted(x["spent"] for x in b["values"] for _ in range(x["respondents"]))
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert b["mean"] == pytest.approx(math.fsum(expected) / len(expected), rel=1e-12)
    assert b["at_cap"] == 0
    hist = [0] * 13  # bins of width 0.25 over [0, 3.25]
    for x in expected:
        hist[min(int(x / 0.25), 12)] += 1
    assert b["histogram"]["counts"] == hist


@pytest.mark.parametrize("qid", ["happy", "harassment"])
def test_majority_exact_tails(admin: TestClient, filled: Filled, qid: str) -> None:
    p1, p0 = CHANNELS[qid]
    yes, n = sum(filled.reports(qid)), len(filled.reports(qid))
    m = _get(admin, f"/api/surveys/{SID}/results/{qid}/majority")
    t = n * (p0 + p1) / 2  # both designs: P1 > P0, so "majority iff #yes > t"
    assert m["n"] == n and m["yes"] == yes and m["threshold"] == pytest.approx(t, rel=1e-12)
    assert m["decision"] is (yes > t)
    assert m["false_positive_rate"] == pytest.approx(binom_sf(t, n, (p0 + p1) / 2), rel=1e-9)
    est = min(max((yes / n - p0) / (p1 - p0), 0.0), 1.0)
    lam = p0 + est * (p1 - p0)
    above = binom_sf(t, n, lam)
    wrong = 1 - above if est > 0.5 else above
    assert m["prevalence"] == pytest.approx(est, rel=1e-12)
    assert m["error_probability"] == pytest.approx(wrong, rel=1e-8)
    r = admin.get(f"/api/surveys/{SID}/results/hours/majority")
    assert r.status_code == 422 and "binary" in r.json()["error"]


# --------------------------------------------------------------------------- exports
def _expected_rows(filled: Filled) -> list[tuple[int | None, ...]]:
    return [
        tuple(a.get(q) for q in ("happy", "harassment", "hours")) for a in filled.answers.values()
    ]


def test_csv_export_holds_reports_only(admin: TestClient, filled: Filled) -> None:
    r = admin.get(f"/api/surveys/{SID}/export.csv")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert r.headers["cache-control"] == "no-store"
    assert "attachment" in r.headers["content-disposition"]
    lines = r.text.splitlines()
    assert lines[0] == "happy,harassment,hours"
    rows = [tuple(None if x == "" else int(x) for x in line.split(",")) for line in lines[1:]]
    assert Counter(rows) == Counter(_expected_rows(filled))
    key = [tuple(-1 if x is None else x for x in row) for row in rows]
    assert key == sorted(key)  # the order says nothing about arrival


def test_cli_analyze_on_csv_export_gives_the_results(
    admin: TestClient, filled: Filled, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from deniable.cli import app

    path = tmp_path / "workplace-reports.csv"
    path.write_bytes(admin.get(f"/api/surveys/{SID}/export.csv").content)
    res = {q["id"]: q for q in _get(admin, f"/api/surveys/{SID}/results")["questions"]}
    runner = CliRunner(env={"COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"})
    for qid in CHANNELS:
        q = res[qid]
        params = [a for k, v in q["parameters"].items() for a in ("--param", f"{k}={v!r}")]
        out = runner.invoke(app, ["analyze", str(path), "--column", qid, "--design", q["design"],
                                  *params, "--json"], catch_exceptions=False)  # fmt: skip
        assert out.exit_code == 0, out.output
        cli = json.loads(out.stdout)
        assert cli["n"] == q["n"] and cli["yes"] == q["counts"][1]
        assert cli["missing"] == len(filled.answers) - q["n"]
        assert cli["epsilon"] == pytest.approx(q["epsilon"], rel=1e-15)
        for key in ("estimate", "estimate_bounded", "se", "se_unbiased", "ci_exact", "ci_wald"):
            assert cli[key] == pytest.approx(q[key], rel=1e-12, abs=1e-15), key
    # categorical: `deniable analyze --survey` reads the question's design from the survey
    # file and gives the dashboard's per-category numbers
    from deniable.survey import demo_survey_text

    spec = tmp_path / "workplace.yaml"
    spec.write_text(demo_survey_text())
    out = runner.invoke(app, ["analyze", str(path), "--column", "hours", "--survey", str(spec),
                              "--json"], catch_exceptions=False)  # fmt: skip
    assert out.exit_code == 0, out.output
    cli = json.loads(out.stdout)
    q = res["hours"]
    assert cli["n"] == q["n"] and cli["counts"] == q["counts"]
    assert cli["missing"] == len(filled.answers) - q["n"]
    for key in ("estimate", "estimate_bounded", "se", "se_unbiased", "ci_exact", "ci_wald"):
        got, want = np.asarray(cli[key], dtype=float), np.asarray(q[key], dtype=float)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15, err_msg=key)
    # and the whole survey at once
    out = runner.invoke(app, ["report", str(path), "--survey", str(spec), "--json"],
                        catch_exceptions=False)  # fmt: skip
    assert out.exit_code == 0, out.output
    rows = {r["question"]: r for r in json.loads(out.stdout)["questions"]}
    assert rows["hours"]["estimate"] == pytest.approx(q["estimate"], rel=1e-12)
    assert rows["happy"]["estimate"] == pytest.approx(res["happy"]["estimate"], rel=1e-12)


def test_parquet_export_gives_the_results(
    admin: TestClient, filled: Filled, tmp_path: Path
) -> None:
    from deniable.survey import analyze_file, demo_survey

    r = admin.get(f"/api/surveys/{SID}/export.parquet")
    assert r.status_code == 200
    path = tmp_path / "reports.parquet"
    path.write_bytes(r.content)
    table = pq.read_table(io.BytesIO(r.content))
    assert table.column_names == ["happy", "harassment", "hours"]
    assert Counter(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True)) \
        == Counter(_expected_rows(filled))  # fmt: skip
    res = {q["id"]: q for q in _get(admin, f"/api/surveys/{SID}/results")["questions"]}
    survey = demo_survey()
    for qid in CHANNELS:
        a = analyze_file(path, qid, survey.question(qid).design)
        assert a.n == res[qid]["n"]
        assert a.estimate.value == pytest.approx(res[qid]["estimate"], rel=1e-12)
        assert list(a.ci) == pytest.approx(res[qid]["ci_exact"], rel=1e-12, abs=1e-15)


def test_results_json_export(admin: TestClient, filled: Filled) -> None:
    r = admin.get(f"/api/surveys/{SID}/results.json", params={"level": 0.9})
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    doc = r.json()
    assert doc["schema"] == "deniable.service.results/1"
    assert doc["results"] == _get(admin, f"/api/surveys/{SID}/results", level=0.9)
    assert doc["budget"] == _get(admin, f"/api/surveys/{SID}/budget")
    assert doc["majority"] == [_get(admin, f"/api/surveys/{SID}/results/{q}/majority")
                               for q in ("happy", "harassment")]  # fmt: skip
    assert doc["survey"]["id"] == SID


def test_bad_requests(admin: TestClient, filled: Filled) -> None:
    for path, params, status, word in [
        ("/api/surveys/nope/results", {}, 404, "nope"),
        (f"/api/surveys/{SID}/results/nope/timeline", {}, 404, "nope"),
        (f"/api/surveys/{SID}/plots/timeline/nope.svg", {}, 404, "nope"),
        (f"/api/surveys/{SID}/results", {"level": 1.5}, 422, "level"),
        (f"/api/surveys/{SID}/results/happy/timeline", {"bucket": "week"}, 422, "bucket"),
        (f"/api/surveys/{SID}/results/happy/majority", {"offset": "inf"}, 422, "offset"),
        (f"/api/surveys/{SID}/budget", {"bins": 0}, 422, "bins"),
        ("/dashboard/nope", {}, 404, "nope"),
    ]:
        r = admin.get(path, params=params)
        assert r.status_code == status, (path, r.text)
        assert word in r.json()["error"], (path, r.text)


def test_empty_survey_has_no_numbers_yet(admin: TestClient, stream: str) -> None:
    res = _get(admin, f"/api/surveys/{SID}/results")
    assert all(q["n"] == 0 and q["estimate"] in (None, [None] * 4) for q in res["questions"])
    for path in ADMIN_PATHS:
        assert admin.get(path).status_code == 200, path
    assert admin.get(f"/api/surveys/{SID}/export.csv").text == "happy,harassment,hours\n"


# --------------------------------------------------------------------------- pages
class Page(HTMLParser):
    """What the CSP cares about, and the text of every table row."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.urls: list[str] = []
        self.rows: list[list[str]] = []
        self._in: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for name, value in attrs:
            if name == "style" or name.startswith("on"):
                self.problems.append(f"<{tag} {name}=...>")
            if value and value.strip().lower().startswith("javascript:"):
                self.problems.append(f"<{tag} {name}={value}>")
        if tag == "style":
            self.problems.append("<style>")
        if tag == "script":
            if not a.get("src"):
                self.problems.append("<script> without src")
            self._in = "script"
        for key in ("src", "href", "action"):
            if a.get(key):
                self.urls.append(str(a[key]))
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in = None
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._in == "script" and data.strip():
            self.problems.append("inline script text")
        if self._cell is not None:
            self._cell.append(data)


def _page(client: TestClient, path: str, status: int = 200) -> Page:
    r = client.get(path)
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "style-src 'self'" in csp
    assert "unsafe-inline" not in csp
    page = Page()
    page.feed(r.text)
    page.close()
    assert page.problems == []
    for url in page.urls:  # every resource and link stays on this origin
        assert url.startswith("/"), url
    return page


def _interval(text: str) -> list[float]:
    lo, hi = text.strip("[]").split(",")
    return [float(lo), float(hi)]


def test_pages_have_no_inline_script_or_style_and_show_every_number(
    app_client: TestClient, filled: Filled
) -> None:
    _page(app_client, "/dashboard", 401)
    _page(app_client, "/dashboard/login")
    app_client.post("/dashboard/login", data={"secret": PASSWORD})
    listing = _page(app_client, "/dashboard")
    assert any(row and row[0] == SID for row in listing.rows)
    page = _page(app_client, f"/dashboard/{SID}?level=0.9")
    for url in page.urls:  # the plots, scripts and styles load (the cookie is enough)
        if url.startswith(("/api/", "/static/")):
            r = app_client.get(url)
            assert r.status_code == 200, url
    imgs = [u for u in page.urls if u.endswith(".svg") or ".svg?" in u]
    assert len(imgs) == 1 + 3 + 1  # forest, one timeline per question, budget
    res = _get(app_client, f"/api/surveys/{SID}/results", level=0.9)
    for q in res["questions"]:
        if q["kind"] == "binary":
            row = next(r for r in page.rows if r and r[0].startswith(q["id"]))
            assert int(row[3]) == q["n"] and int(row[4]) == q["counts"][1]
            for cell, key in ((5, "estimate"), (6, "estimate_bounded"), (7, "se"),
                              (8, "se_unbiased")):  # fmt: skip
                assert float(row[cell]) == pytest.approx(q[key], abs=6e-7), key
            assert _interval(row[9]) == pytest.approx(q["ci_exact"], abs=6e-7)
            assert _interval(row[10]) == pytest.approx(q["ci_wald"], abs=6e-7)
        else:
            for j, label in enumerate(q["labels"]):
                row = next(r for r in page.rows if r and r[0] == label)
                assert int(row[1]) == q["counts"][j]
                assert float(row[2]) == pytest.approx(q["estimate"][j], abs=6e-7)
                assert float(row[4]) == pytest.approx(q["se"][j], abs=6e-7)
                assert _interval(row[6]) == pytest.approx(q["ci_exact"][j], abs=6e-7)
    text = " ".join(c for r in page.rows for c in r)
    for m in (_get(app_client, f"/api/surveys/{SID}/results/{q}/majority") for q in CHANNELS):
        row = next(r for r in page.rows if r and r[0] == m["question"] and len(r) == 9)
        assert float(row[6]) == pytest.approx(m["error_probability"], abs=6e-7)
        assert float(row[7]) == pytest.approx(m["false_positive_rate"], abs=6e-7)
    assert str(N_RESPONDENTS) in text
    budget = _get(app_client, f"/api/surveys/{SID}/budget")
    summary = next(r for r in page.rows if r and r[0] == str(budget["respondents"]))
    assert float(summary[3]) == pytest.approx(budget["mean"], abs=6e-7)
    for v in budget["values"]:  # every amount spent, with its count
        assert any(
            len(r) == 2 and r[1] == str(v["respondents"]) and abs(float(r[0]) - v["spent"]) < 6e-5
            for r in page.rows
        ), v
    for qid in ("harassment", "hours"):  # the timeline tables
        tl = _get(app_client, f"/api/surveys/{SID}/results/{qid}/timeline", level=0.9)
        last = tl["points"][-1]
        if tl["kind"] == "categorical":
            want = [[last["end"], label, str(last["n"]), e]
                    for label, e in zip(tl["labels"], last["estimate"], strict=True)]  # fmt: skip
        else:
            want = [[last["end"], str(last["n"]), last["estimate"]]]
        for w in want:
            assert any(
                r[: len(w) - 1] == w[:-1] and abs(float(r[len(w) - 1]) - w[-1]) < 6e-7
                for r in page.rows
            ), w


def test_page_escapes_survey_text(app_client: TestClient, store: ServiceStore) -> None:
    from dataclasses import replace

    from deniable.survey import demo_survey

    evil = '<script>alert("x")</script>'
    s = demo_survey()
    store.load_survey(replace(s, id="evil", title=evil, description=evil))
    app_client.post("/dashboard/login", data={"secret": TOKEN})
    r = app_client.get("/dashboard/evil")
    assert r.status_code == 200 and "<script>alert" not in r.text
    assert "&lt;script&gt;alert" in r.text
    _page(app_client, "/dashboard/evil")


def test_failed_logins_are_limited(app_client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from deniable.service.core import logins as dashboard

    now = [1000.0]
    monkeypatch.setattr(dashboard, "clock", lambda: now[0])
    for _ in range(dashboard.LOGIN_FAILURES):
        r = app_client.post("/dashboard/login", data={"secret": "guess"}, follow_redirects=False)
        assert r.status_code == 401
    for secret in ("guess", PASSWORD):  # blocked: even the right password waits
        r = app_client.post("/dashboard/login", data={"secret": secret}, follow_redirects=False)
        assert r.status_code == 429 and "set-cookie" not in r.headers
        assert r.headers["retry-after"] == "60"
    bearer = {"Authorization": f"Bearer {TOKEN}"}  # the token still works
    assert app_client.get(f"/api/surveys/{SID}/results", headers=bearer).status_code == 200
    now[0] += dashboard.LOGIN_WINDOW + 1
    r = app_client.post("/dashboard/login", data={"secret": PASSWORD}, follow_redirects=False)
    assert r.status_code == 303
    # a success forgets the failures: the next nine wrong guesses are 401, not 429
    for _ in range(dashboard.LOGIN_FAILURES - 1):
        r = app_client.post("/dashboard/login", data={"secret": "guess"}, follow_redirects=False)
        assert r.status_code == 401
