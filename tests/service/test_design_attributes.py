"""Design attributes of invitations (issue 16, part 6): the analyst API stores each
invitation's stratum, PSU, weight and raking variables beside its token hash; the design
endpoint shows every question's design-based estimate (equal to deniable.sampling's on
the same rows); the export carries the design columns, and `deniable analyze` on it
reproduces the endpoint's numbers; bad input is one clear error and stores nothing
(SQLite and PostgreSQL)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from _apihelp import add_survey, admin_headers, make_client, survey_text
from typer.testing import CliRunner

from deniable.cli import app
from deniable.sampling import SampleDesign, survey_estimate
from deniable.service.analysis import MIN_CELL
from deniable.service.storage import ServiceStore
from deniable.service.storage.tables import invitations
from deniable.survey import loads_survey

SID = "designed"
SMALL = 4  # respondents of the last stratum: fewer than MIN_CELL, hidden on the dashboard


def _attributes(seed: int = 7) -> list[dict[str, Any]]:
    """4 strata of 3 PSUs of 10 invitations, and a small fifth stratum of 2 PSUs."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(4):
        for p in range(3):
            for _ in range(10):
                out.append({"stratum": f"s{s}", "psu": f"school {s}-{p}",
                            "weight": float(np.round(rng.uniform(20, 80), 3)),
                            "region": "north" if p else "south"})  # fmt: skip
    for i in range(SMALL):
        out.append({"stratum": "tiny", "psu": f"school t-{i % 2}", "weight": 40.0,
                    "region": "south"})  # fmt: skip
    return out


def _invite(client: Any, attrs: list[dict[str, Any]], **extra: Any) -> Any:
    body = {"count": len(attrs), "attributes": attrs, "variables": ["region"], **extra}
    return client.post(f"/api/surveys/{SID}/invitations", json=body, headers=admin_headers())


def _stored(store: ServiceStore) -> list[Any]:
    with store.engine.connect() as conn:
        return sorted(
            (r.token_hash, json.dumps(r.attributes, sort_keys=True))
            for r in conn.execute(sa.select(invitations).where(invitations.c.survey_id == SID))
        )


@pytest.fixture
def filled(store: ServiceStore) -> tuple[ServiceStore, Any, list[dict[str, Any]], list[Any]]:
    """A survey by invitation whose respondents came with design attributes and answered
    (b missing for every 7th); returns the store, a client, the attributes and the rows
    ``(attributes, {question: report})`` in invitation order."""
    add_survey(store, SID, respondents="invitation")
    client = make_client(store)
    attrs = _attributes()
    r = _invite(client, attrs)
    assert r.status_code == 201, r.text
    tokens = r.json()["invitations"]
    rng = np.random.default_rng(11)
    rows = []
    for i, (token, a) in enumerate(zip(tokens, attrs, strict=True)):
        _, rid = store.open_session(SID, token)
        reports = {"a": int(rng.integers(0, 2)), "c": int(rng.integers(0, 4))}
        if i % 7:
            reports["b"] = int(rng.random() < 0.3 + 0.1 * (a["stratum"] == "s1"))
        store.submit_batch(SID, [(rid, q, v) for q, v in reports.items()])
        rows.append((a, reports))
    return store, client, attrs, rows


def test_attributes_are_stored_beside_the_token_only(filled: Any) -> None:
    store, _, attrs, _ = filled
    stored = [json.loads(a) for _, a in _stored(store)]
    assert sorted(map(json.dumps, stored)) == sorted(json.dumps(a, sort_keys=True) for a in attrs)
    # the reports table holds no attribute: it has the columns it always had
    with store.engine.connect() as conn:
        cols = {c["name"] for c in sa.inspect(conn).get_columns("reports")}
    assert cols == {"survey_id", "respondent_id", "question_id", "report", "received_at"}


def test_design_endpoint_is_deniable_sampling(filled: Any) -> None:
    _, client, _, rows = filled
    r = client.get(f"/api/surveys/{SID}/design", headers=admin_headers())
    assert r.status_code == 200, r.text
    doc = r.json()["design"]
    survey = loads_survey(survey_text(SID, respondents="invitation"))
    sample = SampleDesign(
        np.array([a["weight"] for a, _ in rows]),
        np.array([a["stratum"] for a, _ in rows], dtype=object),
        np.array([a["psu"] for a, _ in rows], dtype=object),
    )
    assert doc["n"] == len(rows) and doc["attributes"] == ["stratum", "psu", "weight", "region"]
    got = {q["question"]: q for q in doc["questions"]}
    for q in survey.questions:
        codes = np.array([rep.get(q.id, -1) for _, rep in rows])
        keep = codes >= 0
        want = survey_estimate(q.design, np.where(keep, codes, 0), sample,
                               domain=None if keep.all() else keep)  # fmt: skip
        based = got[q.id]["design_based"]
        assert np.allclose(based["estimate"], np.asarray(want.to_dict()["estimate"]), rtol=1e-12)
        assert np.allclose(based["deff"], np.asarray(want.to_dict()["deff"]), rtol=1e-12)
        assert based["df"] == want.df == 4 * 3 + 2 - 5  # PSUs - strata
    assert got["b"]["design_based"]["se"] > 0 and got["b"]["n"] == sum("b" in r for _, r in rows)
    # the small stratum's count is hidden, the others shown
    strata = {s["stratum"]: s for s in doc["strata"]}
    assert strata["tiny"] == {"stratum": "tiny", "n": None, "hidden": True}
    assert SMALL < MIN_CELL and strata["s0"]["n"] == 30


def test_export_round_trip_reproduces_the_dashboard(filled: Any, tmp_path: Path) -> None:
    _, client, _, _ = filled
    r = client.get(f"/api/surveys/{SID}/export.csv", headers=admin_headers())
    assert r.status_code == 200, r.text
    header = r.text.splitlines()[0].split(",")
    assert header == ["a", "b", "c", "stratum", "psu", "weight", "region"]
    path = tmp_path / "export.csv"
    path.write_text(r.text)
    survey_file = tmp_path / "survey.yaml"
    survey_file.write_text(survey_text(SID, respondents="invitation"))
    design = client.get(f"/api/surveys/{SID}/design", headers=admin_headers()).json()["design"]
    got = {q["question"]: q["design_based"] for q in design["questions"]}
    for qid in ("a", "b"):
        res = CliRunner(env={"COLUMNS": "100"}).invoke(app, [
            "analyze", str(path), "--column", qid, "--survey", str(survey_file),
            "--weights", "weight", "--strata", "stratum", "--psu", "psu", "--json",
        ], catch_exceptions=False)  # fmt: skip
        assert res.exit_code == 0, res.output
        cli = json.loads(res.stdout)["design_based"]
        for key in ("estimate", "se", "deff", "ci_t"):
            assert np.allclose(cli[key], got[qid][key], rtol=1e-12, atol=0), key
        assert cli["df"] == got[qid]["df"] and cli["n"] == got[qid]["n"]


def test_parquet_export_types(filled: Any) -> None:
    import pyarrow.parquet as pq

    _, client, _, rows = filled
    r = client.get(f"/api/surveys/{SID}/export.parquet", headers=admin_headers())
    assert r.status_code == 200, r.text
    table = pq.read_table(io.BytesIO(r.content))
    types = {f.name: str(f.type) for f in table.schema}
    assert types == {"a": "int64", "b": "int64", "c": "int64", "stratum": "string",
                     "psu": "string", "weight": "double", "region": "string"}  # fmt: skip
    assert sorted(table.column("weight").to_pylist()) == sorted(a["weight"] for a, _ in rows)


def test_no_attributes_no_design(store: ServiceStore) -> None:
    add_survey(store, SID, respondents="invitation")
    client = make_client(store)
    r = client.post(f"/api/surveys/{SID}/invitations", json={"count": 2}, headers=admin_headers())
    assert r.status_code == 201
    assert client.get(f"/api/surveys/{SID}/design", headers=admin_headers()).json() == {
        "design": None
    }
    header = client.get(f"/api/surveys/{SID}/export.csv", headers=admin_headers()).text
    assert header.splitlines()[0] == "a,b,c"


GOOD = {"stratum": "s1", "psu": "p1", "weight": 2.5, "region": "north"}


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"weight": 0}, ["`attributes[1].weight`", "> 0", "got 0"]),
        ({"weight": -3.5}, ["`attributes[1].weight`", "> 0", "-3.5"]),
        ({"weight": "heavy"}, ["attributes"]),
        ({"stratum": ""}, ["`attributes[1].stratum`", "1 to 64"]),
        ({"psu": "x" * 65}, ["psu"]),
        ({"age": "18-39"}, ["`attributes[1]`", "'age'", "variables"]),
        ({"region": None}, ["attributes"]),
        ({"drop": "weight"}, ["`attributes[1]`", "same attributes"]),
    ],
)
def test_bad_attributes_are_one_error_and_store_nothing(
    store: ServiceStore, change: dict[str, Any], needles: list[str]
) -> None:
    add_survey(store, SID, respondents="invitation")
    client = make_client(store)
    before = _stored(store)
    second = dict(GOOD)
    if "drop" in change:
        del second[change["drop"]]
    else:
        second.update(change)
    r = _invite(client, [GOOD, second])
    assert r.status_code == 422, r.text
    for needle in needles:
        assert needle in r.json()["error"], (needle, r.json())
    assert _stored(store) == before


@pytest.mark.parametrize(
    ("body", "needles"),
    [
        ({"count": 3}, ["`attributes`", "one entry per invitation (3)", "got 2"]),
        ({"variables": ["b"]}, ["`variables[0]`", "question id"]),
        ({"variables": ["weight"]}, ["`variables[0]`", "design attribute"]),
        ({"variables": ["Region"]}, ["`variables[0]`", "lower-case", "'Region'"]),
        ({"variables": [f"v{i}" for i in range(9)]}, ["variables"]),
    ],
)
def test_bad_requests_are_one_error_and_store_nothing(
    store: ServiceStore, body: dict[str, Any], needles: list[str]
) -> None:
    add_survey(store, SID, respondents="invitation")
    client = make_client(store)
    before = _stored(store)
    r = _invite(client, [GOOD, GOOD], **body)
    assert r.status_code == 422, r.text
    for needle in needles:
        assert needle in r.json()["error"], (needle, r.json())
    assert _stored(store) == before


def test_a_later_batch_names_the_same_attributes(store: ServiceStore) -> None:
    add_survey(store, SID, respondents="invitation")
    client = make_client(store)
    assert _invite(client, [GOOD]).status_code == 201
    before = _stored(store)
    r = client.post(f"/api/surveys/{SID}/invitations", headers=admin_headers(),
                    json={"count": 1, "attributes": [{"weight": 1.0}]})  # fmt: skip
    assert r.status_code == 422 and "psu, region, stratum, weight" in r.json()["error"], r.text
    assert _stored(store) == before


def test_migration_0004_keeps_the_invitations(db_url: str) -> None:
    from alembic import command
    from alembic.config import Config

    import deniable.service
    from deniable.service.storage.db import make_engine

    engine = make_engine(db_url)
    cfg = Config()
    cfg.set_main_option(
        "script_location", str(Path(deniable.service.__file__).parent / "storage" / "migrations")
    )
    with engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0003")
        conn.commit()
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO surveys (id, version, definition, loaded_at) "
                             "VALUES ('old', 1, '{}', 1.0)"))  # fmt: skip
        conn.execute(sa.text("INSERT INTO invitations (token_hash, survey_id, created_at) "
                             "VALUES ('abc', 'old', 2.0)"))  # fmt: skip
    engine.dispose()
    store = ServiceStore(db_url)
    store.migrate()
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(invitations.c.token_hash, invitations.c.attributes)).all()
    store.close()
    assert [tuple(r) for r in rows] == [("abc", None)]


def test_dashboard_shows_the_design_based_estimates(filled: Any) -> None:
    import html as html_lib

    from deniable.common import format_number

    _, client, _, _ = filled
    design = client.get(f"/api/surveys/{SID}/design", headers=admin_headers()).json()["design"]
    page = client.get(f"/dashboard/{SID}", headers=admin_headers())
    assert page.status_code == 200, page.text
    text = html_lib.unescape(page.text)
    assert "Design-based estimates" in text
    got = {q["question"]: q["design_based"] for q in design["questions"]}
    for qid in ("a", "b"):
        for key in ("estimate", "se", "deff"):
            assert format_number(got[qid][key], 6) in text, (qid, key)
        assert f"<td>{got[qid]['df']}</td>" in text
    for j in range(4):  # the categorical question, one row per category
        assert format_number(got["c"]["estimate"][j], 6) in text
    assert '<th scope="row">tiny</th><td>fewer than 10</td>' in text
    # a survey without design attributes shows no such section
    add_survey(filled[0], "plain", respondents="invitation")
    plain = client.get("/dashboard/plain", headers=admin_headers())
    assert plain.status_code == 200 and "Design-based estimates" not in plain.text


def test_respondents_without_attributes_are_left_out_and_counted(filled: Any) -> None:
    store, client, _, rows = filled
    before = client.get(f"/api/surveys/{SID}/design", headers=admin_headers()).json()["design"]
    _, rid = store.create_respondent(SID)  # an interview: no invitation, no attributes
    store.submit_batch(SID, [(rid, "a", 1), (rid, "b", 1)])
    after = client.get(f"/api/surveys/{SID}/design", headers=admin_headers()).json()["design"]
    assert (before["without_attributes"], after["without_attributes"]) == (0, 1)
    assert after["n"] == before["n"] == len(rows)
    assert after["questions"] == before["questions"]
    page = client.get(f"/dashboard/{SID}", headers=admin_headers()).text
    assert "1 respondents with reports came without design attributes" in page


def test_design_endpoint_needs_the_admin(filled: Any) -> None:
    _, client, _, _ = filled
    r = client.get(f"/api/surveys/{SID}/design")
    assert r.status_code == 401 and "error" in r.json()


def test_attribute_values_are_text_on_the_page(store: ServiceStore) -> None:
    add_survey(store, SID, respondents="invitation")
    client = make_client(store)
    attrs = [{"stratum": "<b>s</b>", "psu": f"p{i % 2}", "weight": 1.0} for i in range(MIN_CELL)]
    r = client.post(f"/api/surveys/{SID}/invitations", headers=admin_headers(),
                    json={"count": len(attrs), "attributes": attrs})  # fmt: skip
    assert r.status_code == 201, r.text
    for token in r.json()["invitations"]:
        _, rid = store.open_session(SID, token)
        store.submit_batch(SID, [(rid, "a", 1)])
    page = client.get(f"/dashboard/{SID}", headers=admin_headers()).text
    assert "&lt;b&gt;s&lt;/b&gt;" in page and "<b>s</b>" not in page
