"""Two-group questions in the survey service (issue 16, part 6), on SQLite and PostgreSQL:
the server draws each respondent's group, a report must carry it, the question is outside
the cap (no charge, no effect on any other question's admission), the dashboard and the
JSON say "ε = ∞ (no bounded guarantee)", never a number, the estimate is the design's
over both groups, and the export's ``<id>_group`` column reproduces it with
``deniable analyze --group-column``."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _apihelp import admin_headers, bearer, make_client, new_token, snapshot
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from deniable.accounting import add_up
from deniable.cli import app
from deniable.designs import CheaterDetection
from deniable.service.storage import ServiceStore
from deniable.survey import Survey, loads_survey, survey_report_file

SID = "tg"
NO_BOUND = "ε = ∞ (no bounded guarantee)"
BOUNDED = (
    "  - {id: a, text: 'First?', design: {mechanism: two-coin}}\n"
    "  - {id: b, text: 'Second?', design: {mechanism: warner, epsilon: 1}}\n"
    "  - {id: d, text: 'Third?', design: {mechanism: warner, epsilon: 1}}\n"
)
CDM = (
    "  - {id: c, text: 'Cheat?', unbounded: true, design: {mechanism: cdm, parameters: "
    "{forced_yes1: 0.2, forced_yes2: 0.6%s}}}\n"
)


def text(*, version: int = 1, cap: float = 2.2, two_group: str | None = CDM % "",
         first: bool = True) -> str:  # fmt: skip
    qs = BOUNDED if two_group is None else (two_group + BOUNDED if first else BOUNDED + two_group)
    return (f"schema: deniable.survey/1\nid: {SID}\nversion: {version}\ntitle: T\n"
            f"cap: {cap}\nquestions:\n{qs}")  # fmt: skip


def load(store: ServiceStore, source: str) -> Survey:
    survey = loads_survey(source)
    store.load_survey(survey)
    return survey


@pytest.fixture
def tg(store: ServiceStore) -> tuple[ServiceStore, TestClient, Survey]:
    survey = load(store, text())
    return store, make_client(store, session_limit_per_address=0), survey


def questions(client: TestClient, token: str, sid: str = SID) -> dict[str, Any]:
    r = client.get(f"/api/surveys/{sid}", headers=bearer(token))
    assert r.status_code == 200, r.text
    return {q["id"]: q for q in r.json()["questions"]}


def post(client: TestClient, token: str, qid: str, report: int, sid: str = SID) -> Any:
    return client.post(f"/api/surveys/{sid}/reports", headers=bearer(token),
                       json={"question": qid, "report": report})  # fmt: skip


def test_the_server_draws_the_group_once_and_sends_it(tg: Any) -> None:
    store, client, _ = tg
    token = new_token(client, SID)
    c = questions(client, token)["c"]
    assert c["group"] in (1, 2)
    assert c["epsilon"] == "inf" and c["unbounded"] is True and c["guarantee"] == NO_BOUND
    assert c["spec"]["epsilon"] == "inf" and c["spec"]["algorithm"] == "two-group/2"
    for _ in range(3):  # read again: the same group, never a new draw
        assert questions(client, token)["c"]["group"] == c["group"]
    rid = store.respondent(SID, token)
    assert store.assigned_groups(SID, rid) == {"c": c["group"]}
    # a bounded question carries its finite epsilon and no group
    a = questions(client, token)["a"]
    assert "group" not in a and "unbounded" not in a and a["epsilon"] == math.log(3)


def test_groups_follow_the_design_share(store: ServiceStore) -> None:
    load(store, text(two_group=CDM % ", group_share: 0.25"))
    n = 400
    ones = 0
    for i in range(n):
        _, rid = store.create_respondent(SID)
        ones += store.assign_groups(SID, rid, rng=np.random.default_rng(i))["c"] == 1
    # group 1 with probability 1/4: a binomial(400, 1/4) count is within 100 +- 4.4 SD
    # (a false alarm about once in 10^5 runs; the seeds are fixed, so it never flakes)
    assert abs(ones - 100) <= 4.4 * math.sqrt(n * 0.25 * 0.75), ones


def test_a_forged_group_or_a_bad_report_is_refused_and_nothing_stored(tg: Any) -> None:
    store, client, _ = tg
    token = new_token(client, SID)
    before_read = post(client, token, "c", 1)  # no group drawn yet: none may be claimed
    assert before_read.status_code == 422, before_read.text
    assert "`report`" in before_read.json()["error"] and "no group" in before_read.json()["error"]
    g = questions(client, token)["c"]["group"]
    before = snapshot(store, SID)
    other = 2 * (2 - g)  # a report of the other group
    r = post(client, token, "c", other)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error.startswith("`report` must carry this respondent's group"), error
    assert f"group {g}" in error and "nothing was stored" in error
    for bad in (4, -1):
        r = post(client, token, "c", bad)
        assert r.status_code == 422 and "report" in r.text, r.text
    rid = store.respondent(SID, token)
    batch = {"reports": [{"token": token, "question": "a", "report": 1},
                         {"token": token, "question": "c", "report": other}]}  # fmt: skip
    r = client.post(f"/api/surveys/{SID}/reports/batch", json=batch)
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith("`reports[1].report` must carry"), r.text
    assert snapshot(store, SID) == before and store.answered(SID, rid) == {}
    # the group it was told: stored
    r = post(client, token, "c", 2 * (g - 1) + 1)
    assert r.status_code == 201, r.text
    assert store.answered(SID, rid) == {"c": 2 * (g - 1) + 1}


def test_the_unrelated_question_is_sent_for_the_page_to_ask(store: ServiceStore) -> None:
    uq = ("  - {id: u, text: 'Shoplifted?', unbounded: true, unrelated: 'Born in April?', "
          "design: {mechanism: unrelated-unknown, parameters: {p1: 0.7, p2: 0.3}}}\n")  # fmt: skip
    load(store, text(two_group=uq))
    client = make_client(store, session_limit_per_address=0)
    u = questions(client, new_token(client, SID))["u"]
    assert u["unrelated"] == "Born in April?" and u["group"] in (1, 2)
    assert u["spec"]["latent"]["name"] == "unrelated" and u["spec"]["latent"]["default"] is None
    assert "unrelated" not in questions(client, new_token(client, SID))["a"]


def test_the_interviewer_cannot_enter_a_two_group_report(tg: Any) -> None:
    store, client, _ = tg
    before = snapshot(store, SID)
    r = client.post(f"/api/surveys/{SID}/interviewer", headers=admin_headers(),
                    json={"reports": [{"question": "c", "report": 0}]})  # fmt: skip
    assert r.status_code == 422 and "`reports[0].question`" in r.json()["error"], r.text
    assert snapshot(store, SID) == before


def _answer_all(client: TestClient, token: str, order: list[str]) -> dict[str, str]:
    out = {}
    for qid in order:
        qs = questions(client, token)
        if qid not in qs:
            out[qid] = "hidden"
            continue
        report = 2 * (qs[qid]["group"] - 1) if "group" in qs[qid] else 0
        out[qid] = post(client, token, qid, report).json()["status"]
    return out


@pytest.mark.parametrize("first", [True, False])
def test_a_two_group_question_changes_no_admission_and_charges_nothing(
    db_url: str, first: bool
) -> None:
    outcomes, spent, remaining = {}, {}, {}
    for with_c in (False, True):
        store = ServiceStore(db_url)
        store.migrate()
        sid_text = text(two_group=CDM % "" if with_c else None, first=first)
        sid_text = sid_text.replace(f"id: {SID}\n", f"id: {SID}{int(with_c)}\n")
        survey = loads_survey(sid_text)
        store.load_survey(survey)
        client = make_client(store, session_limit_per_address=0)
        sid = survey.id
        token = new_token(client, sid)
        order = ["c", "a", "b", "d"] if first else ["a", "b", "d", "c"]
        got = {}
        for qid in order:
            if qid == "c" and not with_c:
                continue
            qs = questions(client, token, sid)
            if qid not in qs:
                got[qid] = "hidden"
                continue
            report = 2 * (qs[qid]["group"] - 1) if "group" in qs[qid] else 0
            got[qid] = post(client, token, qid, report, sid).json()["status"]
        rid = store.respondent(sid, token)
        if with_c:
            assert got.pop("c") == "stored"
            assert store.affordable(sid, rid)["c"] is True
        outcomes[with_c] = got
        spent[with_c] = store.spent(sid).tolist()
        remaining[with_c] = store.remaining(sid, rid)
        if with_c:  # the ledger records no charge for the unbounded question
            ledger = store.ledger.snapshot()
            assert f"{sid}/c" not in ledger.__getstate__()["records"]
            flags = ledger.__getstate__()["charged"]
            assert not any(flag.any() for q, flag in flags.items() if q.endswith("/c"))
        client.close()
        store.close()
    # the cap 2.2 admits a (ln 3) and b (1), not d (1): with the two-group question or not
    assert outcomes[False] == outcomes[True] == {"a": "stored", "b": "stored", "d": "hidden"}
    assert spent[False] == spent[True] and remaining[False] == remaining[True]


def _fill(store: ServiceStore, n: int = 120) -> None:
    """``n`` respondents answer c (their groups drawn by the server) and some answer a."""
    rng = np.random.default_rng(7)
    for i in range(n):
        _, rid = store.create_respondent(SID)
        g = store.assign_groups(SID, rid)["c"]
        assert store.submit(SID, rid, "c", 2 * (g - 1) + int(rng.integers(0, 2))).stored
        if i % 3 == 0:
            assert store.submit(SID, rid, "a", int(rng.integers(0, 2))).stored
            assert store.submit(SID, rid, "b", int(rng.integers(0, 2))).stored


def test_the_dashboard_and_its_json_show_no_number_for_epsilon(tg: Any) -> None:
    store, client, survey = tg
    _fill(store)
    b_eps = survey.question("b").epsilon
    design = survey.question("c").design
    assert design == CheaterDetection(0.2, 0.6)
    tally = store.tallies(SID)["c"]
    want = design.estimate(tally).to_dict(0.95)
    r = client.get(f"/api/surveys/{SID}/results", headers=admin_headers())
    assert r.status_code == 200, r.text
    c = {q["id"]: q for q in r.json()["questions"]}["c"]
    assert c["kind"] == "two-group" and c["epsilon"] == "inf" and c["guarantee"] == NO_BOUND
    prevalence = want["estimates"]["prevalence"]
    for key in ("estimate", "se", "se_unbiased", "ci_wald", "estimate_bounded"):
        assert c[key] == prevalence[key], key
    assert c["estimates"]["beta"]["estimate"] == want["estimates"]["beta"]["estimate"]
    assert [(g["yes"], g["n"]) for g in c["groups"]] == list(zip(want["yes"], want["n"],
                                                                 strict=True))  # fmt: skip
    assert sum(g["n"] for g in c["groups"]) == 120
    budget = client.get(f"/api/surveys/{SID}/budget", headers=admin_headers()).json()
    entry = {q["id"]: q for q in budget["questions"]}["c"]
    assert entry == {"id": "c", "epsilon": "inf", "unbounded": True, "guarantee": NO_BOUND}
    assert budget["total"] == survey.budget().basic  # over the bounded questions only
    # a and b, charged as always; c charged nothing
    spent = {v["spent"]: v["respondents"] for v in budget["values"]}
    assert spent == {0.0: 80, float(add_up(math.log(3), b_eps)): 40}
    doc = client.get(f"/api/surveys/{SID}/results.json", headers=admin_headers())
    assert doc.status_code == 200 and "Infinity" not in doc.text
    page = client.get(f"/dashboard/{SID}", headers=admin_headers())
    assert page.status_code == 200, page.text
    html = page.text
    assert "c: Cheat? (cdm, ε = ∞ (no bounded guarantee), n = 120" in html
    assert "Outside the cap (unbounded, acknowledged): c, ε = ∞ (no bounded guarantee)" in html
    # no finite epsilon is printed beside the two-group question anywhere on the page
    for m in re.finditer(r"c: Cheat\?[^<]*", html):
        assert not re.search(r"ε = \d", m.group(0)), m.group(0)
    timeline = client.get(f"/api/surveys/{SID}/results/c/timeline", headers=admin_headers())
    assert timeline.status_code == 200 and timeline.json()["epsilon"] == "inf", timeline.text
    assert timeline.json()["guarantee"] == NO_BOUND


def test_the_export_round_trip_reproduces_the_dashboard(tg: Any, tmp_path: Path) -> None:
    store, client, _ = tg
    _fill(store)
    r = client.get(f"/api/surveys/{SID}/export.csv", headers=admin_headers())
    assert r.status_code == 200, r.text
    assert r.text.splitlines()[0].split(",") == ["c", "c_group", "a", "b", "d"]
    path = tmp_path / "export.csv"
    path.write_text(r.text)
    results = client.get(f"/api/surveys/{SID}/results", headers=admin_headers()).json()
    dash = {q["id"]: q for q in results["questions"]}
    res = CliRunner(env={"COLUMNS": "100"}).invoke(app, [
        "analyze", str(path), "--column", "c", "--design", "cdm", "--param", "forced_yes1=0.2",
        "--param", "forced_yes2=0.6", "--group-column", "c_group", "--json",
    ], catch_exceptions=False)  # fmt: skip
    assert res.exit_code == 0, res.output
    cli = json.loads(res.stdout)
    for key in ("estimate", "se", "ci_wald"):
        assert cli["estimates"]["prevalence"][key] == dash["c"][key], key
    assert cli["estimates"]["beta"]["estimate"] == dash["c"]["estimates"]["beta"]["estimate"]
    # with the survey file: its design, and the whole-survey report finds the group column
    survey_file = tmp_path / "survey.yaml"
    survey_file.write_text(text())
    res = CliRunner(env={"COLUMNS": "100"}).invoke(app, [
        "analyze", str(path), "--column", "c", "--survey", str(survey_file),
        "--group-column", "c_group", "--json",
    ], catch_exceptions=False)  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["estimates"]["prevalence"]["se"] == dash["c"]["se"]
    d_line = BOUNDED.splitlines(keepends=True)[2]  # d has no reports (past the cap)
    rep = survey_report_file(path, loads_survey(text().replace(d_line, "")))  # c_group found
    frame = rep.to_frame()
    row = frame[(frame["question"] == "c") & (frame["parameter"] == "prevalence")].iloc[0]
    assert row["estimate"] == dash["c"]["estimate"] and row["se"] == dash["c"]["se"]
    assert math.isinf(row["epsilon"])


def reload(store: ServiceStore, client: TestClient, source: str) -> None:
    """Load a new version and drop the routes' cache of survey definitions (a server
    drops it after a few seconds)."""
    load(store, source)
    client.app.state.survey_cache = {}


def test_a_version_change_keeps_the_bounded_guarantees(db_url: str) -> None:
    store = ServiceStore(db_url)
    store.migrate()
    load(store, text(two_group=None))  # v1: bounded questions only
    client = make_client(store, session_limit_per_address=0)
    token = new_token(client, SID)
    rid = store.respondent(SID, token)
    assert post(client, token, "a", 1).status_code == 201
    spent_v1, remaining_v1 = store.spent(SID).tolist(), store.remaining(SID, rid)
    # v2 adds a two-group question: answered, it charges nothing; b and d as before
    reload(store, client, text(version=2))
    g = questions(client, token)["c"]["group"]
    assert post(client, token, "c", 2 * (g - 1)).status_code == 201
    assert store.spent(SID).tolist() == spent_v1 and store.remaining(SID, rid) == remaining_v1
    # v3 changes the design of a two-group question without reports: its groups are
    # drawn again (with the new share); the answered one cannot change (refused)
    with pytest.raises(Exception, match="already have reports"):
        reload(store, client, text(version=3, two_group=CDM % ", group_share: 0.25"))
    other = new_token(client, SID)
    orid = store.respondent(SID, other)
    new_c = CDM.replace("id: c,", "id: e,").replace("Cheat?", "Lie?")
    reload(store, client, text(version=3, two_group=CDM % "" + new_c % ""))
    assert set(store.assign_groups(SID, orid)) == {"c", "e"}
    reload(store, client, text(version=4, two_group=CDM % "" + new_c % ", group_share: 0.25"))
    assert set(store.assigned_groups(SID, orid)) == {"c"}  # e's group is drawn again
    assert "group" in questions(client, other)["e"]
    # v5 removes e: the bounded questions' admission and every total are as before
    reload(store, client, text(version=5))
    assert _answer_all(client, token, ["b", "d"]) == {"b": "stored", "d": "hidden"}
    assert store.remaining(SID, rid) == pytest.approx(2.2 - math.log(3) - 1.0, abs=1e-9)
    assert store.spent(SID).tolist()[0] >= math.log(3) + 1.0
    client.close()
    store.close()
