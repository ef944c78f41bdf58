"""The dashboard's defences against ballot stuffing: the burst rule (against Poisson tails
computed here, and a seeded Poisson process), arrival counts per window on SQLite and
PostgreSQL (times placed on the window edges), the arrivals and robustness endpoints and
panels, and a stuffing attempt seen on the dashboard."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from test_dashboard import _page

from deniable.designs import Tally
from deniable.estimation import manipulation_robustness
from deniable.exceptions import ParameterError
from deniable.service.analysis.arrivals import arrival_rates, bursts
from deniable.service.app import create_app
from deniable.service.core.settings import Settings
from deniable.service.storage import ServiceStore, lifecycle
from deniable.service.storage.exports import arrival_counts
from deniable.service.storage.tables import reports, respondents
from deniable.survey import demo_survey

SID = "workplace"
TOKEN = "admin-token-for-the-integrity-tests-0123456789"


def poisson_tail(c: int, mean: float) -> float:
    """P(X >= c) for X ~ Poisson(mean), summed here."""
    return 1.0 - sum(math.exp(-mean) * mean**k / math.factorial(k) for k in range(c))


# --------------------------------------------------------------------------- the rule


def test_a_quiet_window_is_never_a_burst_and_ten_in_a_sparse_minute_is() -> None:
    # sparse arrivals: most windows empty, so the baseline is its floor, 1
    assert poisson_tail(9, 1.0) > 1e-6 > poisson_tail(10, 1.0)
    base, found = bursts({0: 1, 50: 9, 100: 1})
    assert base == 1.0 and found == []
    base, found = bursts({0: 1, 50: 10, 100: 1})
    assert base == 1.0 and [(k, c) for k, c, _ in found] == [(50, 10)]
    assert found[0][2] == pytest.approx(poisson_tail(10, 1.0), rel=1e-9)


def test_the_baseline_is_the_median_with_empty_windows_and_the_factor_holds() -> None:
    # windows 0..10: nine empty, two with 4: the median is 0, the baseline 1
    assert bursts({0: 4, 10: 4})[0] == 1.0
    # a busy survey: 100 per window; 499 is improbable but under 5 times the baseline
    busy = {k: 100 for k in range(50)}
    assert bursts({**busy, 50: 499})[1] == []
    found = bursts({**busy, 50: 500})[1]
    assert [(k, c) for k, c, _ in found] == [(50, 500)]
    assert bursts({}) == (None, [])


def test_a_poisson_process_raises_no_false_alarm_and_a_stuffing_minute_is_caught() -> None:
    """10,000 minutes of Poisson(3) arrivals (seed 14): with a per-window false-alarm
    probability below 1e-6 the chance of any flag here is under 1%; then 3,000 sessions in
    one minute (the issue's attack) are flagged, and only they."""
    rng = np.random.default_rng(14)
    counts = {k: int(c) for k, c in enumerate(rng.poisson(3.0, 10_000)) if c}
    base, found = bursts(counts)
    assert base == 3.0 and found == []
    counts[10_000] = 3000
    base, found = bursts(counts)
    assert [(k, c) for k, c, _ in found] == [(10_000, 3000)]


def test_the_panel_lists_the_last_windows_up_to_now() -> None:
    minute = 60
    now = 1000 * minute + 30  # half way through window 1000
    out = arrival_rates(SID, {990: 2, 1000: 40, 5: 1}, {1000: 80}, bucket="minute", now=now,
                        windows=12)  # fmt: skip
    shown = out["sessions"]["windows"]
    assert len(shown) == 12 and shown[-1]["count"] == 40 and shown[1]["count"] == 2
    assert shown[-1]["start"] == "1970-01-01T16:40:00+00:00"  # window 1000: 60,000 s
    assert shown[-1]["burst"] and out["sessions"]["bursts_total"] == 1
    assert out["sessions"]["total"] == 43 and out["reports"]["total"] == 80
    assert out["reports"]["bursts"] == []  # one window only: nothing to compare with
    assert "Poisson" in out["rule"]["text"]
    assert len(arrival_rates(SID, {}, {}, bucket="hour", now=now)["sessions"]["windows"]) == 48
    for kw, needle in (({"bucket": "second"}, "`bucket`"), ({"windows": 0}, "`windows`"),
                       ({"windows": 1441}, "`windows`"), ({"now": math.inf}, "`now`")):  # fmt: skip
        args = {"bucket": "minute", "now": now, **kw}
        with pytest.raises(ParameterError, match=needle):
            arrival_rates(SID, {}, {}, **args)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the store


def test_arrival_counts_put_times_in_their_windows(store: ServiceStore) -> None:
    """Times on and beside the window edges: floor(t / 60), on both backends (a cast to an
    integer rounds on PostgreSQL)."""
    times = [59.9, 60.0, 60.4, 119.999, 120.0, 3600.5, 1.7e9 + 29.9, 1.7e9 + 30.0]
    with store.engine.begin() as conn:
        ids = []
        for i, t in enumerate(times):
            ids.append(
                conn.execute(
                    sa.insert(respondents)
                    .values(survey_id=SID, token_hash=f"{i:064x}", created_at=t)
                    .returning(respondents.c.id)
                ).scalar_one()
            )
        conn.execute(
            sa.insert(reports),
            [
                {
                    "survey_id": SID,
                    "respondent_id": r,
                    "question_id": "happy",
                    "report": 1,
                    "received_at": t,
                }
                for r, t in zip(ids, times, strict=True)
            ],
        )
    want: dict[int, int] = {}
    for t in times:
        want[math.floor(t / 60)] = want.get(math.floor(t / 60), 0) + 1
    sessions, received = arrival_counts(store, SID, 60)
    assert sessions == want and received == want
    hours = arrival_counts(store, SID, 3600)[0]
    assert hours == {0: 5, 1: 1, math.floor((1.7e9 + 29.9) / 3600): 2}


# --------------------------------------------------------------------------- the endpoints


@pytest.fixture
def admin(store: ServiceStore) -> Iterator[TestClient]:
    settings = Settings(database_url="sqlite://", admin_token=TOKEN, session_limit_per_address=0)
    with TestClient(create_app(settings, store)) as client:
        client.headers["Authorization"] = f"Bearer {TOKEN}"
        yield client


def test_a_stuffing_attempt_shows_on_the_dashboard(store: ServiceStore, admin: TestClient) -> None:
    # a quiet week: one respondent every 20 minutes
    start = time.time() - 7 * 86400
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(respondents),
            [
                {"survey_id": SID, "token_hash": f"{i:064x}", "created_at": start + 1200 * i}
                for i in range(500)
            ],
        )
    for _ in range(60):  # then one client opens 60 sessions at once
        assert admin.post(f"/api/surveys/{SID}/sessions", json={}).status_code == 201
    data = admin.get(f"/api/surveys/{SID}/arrivals").json()
    s = data["sessions"]
    assert s["total"] == 560 and s["baseline"] == 1.0
    # (a minute boundary may split them: one window has at least 30)
    assert s["bursts_total"] >= 1 and 30 <= sum(b["count"] for b in s["bursts"]) <= 60
    assert any(w["burst"] for w in s["windows"])
    hourly = admin.get(f"/api/surveys/{SID}/arrivals", params={"bucket": "hour"}).json()
    assert hourly["sessions"]["bursts_total"] >= 1
    page = _page(admin, f"/dashboard/{SID}")
    text = " ".join(c for r in page.rows for c in r)
    assert "new sessions 560" in text
    r = admin.get(f"/dashboard/{SID}")
    assert 'class="bar burst"' in r.text and "Bursts: more arrivals" in r.text


def test_robustness_endpoint_and_panel_state_the_library_numbers(
    store: ServiceStore, admin: TestClient
) -> None:
    survey = demo_survey()
    rows = []
    for i in range(40):
        _, rid = store.open_session(SID, None)
        rows += [(rid, "happy", int(i % 5 != 0)), (rid, "hours", i % 4)]
    store.submit_batch(SID, rows)
    data = admin.get(f"/api/surveys/{SID}/robustness", params={"shift": 0.1}).json()
    assert data["shift"] == 0.1
    by_id = {q["id"]: q for q in data["questions"]}
    happy = survey.question("happy")
    want = manipulation_robustness(happy.design, happy.design.tally_counts([8, 32]), shift=0.1,
                                   labels=["yes"]).to_dict()["shares"]  # fmt: skip
    assert by_id["happy"]["n"] == 40 and by_id["happy"]["shares"] == want
    hours = survey.question("hours")
    lib = manipulation_robustness(hours.design, Tally([10, 10, 10, 10]), shift=0.1,
                                  labels=list(hours.labels))  # fmt: skip
    got = by_id["hours"]["shares"]
    assert [s["label"] for s in got] == list(hours.labels)
    assert [s["up"]["output"]["fakes"] for s in got] == [
        lib.fakes("up", "output", j) for j in range(4)
    ]
    assert by_id["harassment"]["n"] == 0 and by_id["harassment"]["shares"][0]["estimate"] is None
    page = _page(admin, f"/dashboard/{SID}?shift=0.1")
    row = next(r for r in page.rows if r and r[0].startswith("happy") and r[1] == "40")
    assert row[3:] == [str(want[0]["up"]["input"]["fakes"] or "impossible"),
                       str(want[0]["up"]["output"]["fakes"] or "impossible"),
                       str(want[0]["down"]["input"]["fakes"]),
                       str(want[0]["down"]["output"]["fakes"])]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "params", "status", "needle"),
    [
        ("arrivals", {"bucket": "day"}, 422, "`bucket`"),
        ("arrivals", {"windows": 0}, 422, "`windows`"),
        ("arrivals", {"windows": 5000}, 422, "`windows`"),
        ("robustness", {"shift": 0}, 422, "`shift`"),
        ("robustness", {"shift": 2}, 422, "(0, 1]"),
        ("robustness", {"shift": "nan"}, 422, "`shift`"),
    ],
)
def test_bad_parameters_are_named(
    admin: TestClient, path: str, params: dict[str, object], status: int, needle: str
) -> None:
    r = admin.get(f"/api/surveys/{SID}/{path}", params=params)
    assert r.status_code == status and needle in r.json()["error"], r.text
    assert admin.get(f"/api/surveys/nope/{path}").status_code == 404


def test_the_pages_show_how_respondents_come_and_the_state(
    store: ServiceStore, admin: TestClient
) -> None:
    data = demo_survey().to_dict()
    data.update(id="invited", respondents="invitation", title="Invited")
    from deniable.survey import Survey

    store.load_survey(Survey.from_dict(data))
    tokens = store.create_invitations("invited", 3)
    store.open_session("invited", tokens[0])
    lifecycle.close_survey(store, "invited")
    r = admin.get("/dashboard/invited")
    assert "by invitation only (1 of 3 invitations redeemed)" in r.text
    assert "state: <strong>closed</strong>" in r.text
    listing = _page(admin, "/dashboard")
    rows = {r[0]: r for r in listing.rows if r}
    assert rows["invited"][3:5] == ["by invitation", "closed"]
    assert rows[SID][3:5] == ["anonymous", "live"]
