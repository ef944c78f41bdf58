"""Raking in the survey service (issue 16, part 6): the survey file's `weighting` margins
rake the respondents' design weights (deniable.sampling), the design endpoint and the
dashboard show the raked estimate beside the unweighted and design-weighted ones with the
raking's iterations and Kish design effect; a raking that cannot be done is a clear
message, never the unraked numbers; the export reproduces the raked estimate through
`deniable weight` and `deniable analyze`; a new survey version's margins are followed and
nothing stored changes (SQLite and PostgreSQL)."""

from __future__ import annotations

import html as html_lib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from _apihelp import admin_headers, make_client, survey_text
from typer.testing import CliRunner

from deniable.cli import app
from deniable.common import format_number
from deniable.sampling import SampleDesign, rake, survey_estimate
from deniable.service.analysis import MIN_CELL
from deniable.service.storage import ServiceStore
from deniable.service.storage.tables import invitations
from deniable.survey import loads_survey

SID = "raked"
FEW = 4  # respondents of the age band "80+": fewer than MIN_CELL, its count hidden
MARGINS = {"age": {"18-34": 0.3, "35-79": 0.6, "80+": 0.1},
           "region": {"north": 0.45, "south": 0.55}}  # fmt: skip


def _text(margins: dict[str, Any] | None, version: int = 1, trim: str = "") -> str:
    text = survey_text(SID, respondents="invitation")
    text = text.replace(f"id: {SID}\n", f"id: {SID}\nversion: {version}\n", 1)
    if margins is not None:
        text += f"weighting: {{margins: {json.dumps(margins)}{trim}}}\n"
    return text


def _attributes(seed: int = 3) -> list[dict[str, Any]]:
    """4 strata of 3 PSUs of 10 invitations; region and age band independent of them."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(120):
        s, p = divmod(i // 10, 3)
        out.append({"stratum": f"s{s}", "psu": f"school {s}-{p}",
                    "weight": float(np.round(rng.uniform(20, 80), 3)),
                    "region": "north" if rng.random() < 0.35 else "south",
                    "age": "80+" if i % 30 == 7 and i < 30 * FEW else
                    ("18-34" if rng.random() < 0.5 else "35-79")})  # fmt: skip
    return out


def _fill(store: ServiceStore, text: str, attrs: list[dict[str, Any]], variables: list[str]):
    """The survey loaded, ``attrs`` invited, every invitation redeemed and answered (b
    missing for every 7th); returns a client and the rows ``(attributes, reports)``."""
    store.load_survey(loads_survey(text))
    client = make_client(store)
    body = {"count": len(attrs), "attributes": attrs, "variables": variables}
    r = client.post(f"/api/surveys/{SID}/invitations", json=body, headers=admin_headers())
    assert r.status_code == 201, r.text
    rng = np.random.default_rng(11)
    rows = []
    for i, (token, a) in enumerate(zip(r.json()["invitations"], attrs, strict=True)):
        _, rid = store.open_session(SID, token)
        reports = {"a": int(rng.integers(0, 2)), "c": int(rng.integers(0, 4))}
        if i % 7:
            reports["b"] = int(rng.random() < 0.3 + 0.2 * (a.get("age") == "18-34"))
        store.submit_batch(SID, [(rid, q, v) for q, v in reports.items()])
        rows.append((a, reports))
    return client, rows


@pytest.fixture
def filled(store: ServiceStore) -> tuple[ServiceStore, Any, list[Any]]:
    client, rows = _fill(store, _text(MARGINS), _attributes(), ["region", "age"])
    return store, client, rows


def _design(client: Any) -> dict[str, Any]:
    r = client.get(f"/api/surveys/{SID}/design", headers=admin_headers())
    assert r.status_code == 200, r.text
    doc: dict[str, Any] = r.json()["design"]
    return doc


def _ipf(w: np.ndarray, labels: dict[str, np.ndarray], margins: dict[str, Any]) -> np.ndarray:
    """Raking written out (Deming & Stephan 1940), run to its fixed point: each variable's
    weighted shares set to the targets in turn, 500 sweeps."""
    w = w.astype(float).copy()
    for _ in range(500):
        for var in sorted(margins):
            total = w.sum()
            for level, share in margins[var].items():
                cell = labels[var] == level
                w[cell] *= share * total / w[cell].sum()
    return w


def _hajek(rows: list[Any], qid: str, w: np.ndarray, p1: float, p0: float) -> float:
    """The weighted mean of the de-biased reports of those who answered ``qid``."""
    y = np.array([r.get(qid, -1) for _, r in rows], dtype=float)
    keep = y >= 0
    return float(np.sum(w[keep] * (y[keep] - p0) / (p1 - p0)) / np.sum(w[keep]))


def _expected(
    rows: list[Any], margins: dict[str, Any], base: bool = True, qids: tuple[str, ...] = ("a", "b")
) -> dict[str, float]:
    w0 = np.array([a["weight"] if base else 1.0 for a, _ in rows])
    labels = {v: np.array([a[v] for a, _ in rows], dtype=object) for v in margins}
    w = _ipf(w0, labels, margins)
    survey = loads_survey(_text(margins))
    out = {}
    for qid in qids:
        d = survey.question(qid).design
        out[qid] = _hajek(rows, qid, w, d.p_yes_given_1, d.p_yes_given_0)
    return out


def test_the_raked_estimate_is_the_hajek_estimate_under_raked_weights(filled: Any) -> None:
    _, client, rows = filled
    doc = _design(client)
    raking = doc["raking"]
    assert raking["error"] is None and raking["converged"] is True
    assert 1 <= raking["iterations"] <= 100 and raking["n"] == len(rows)
    assert raking["without_variables"] == 0
    got = {q["question"]: q for q in doc["questions"]}
    want = _expected(rows, MARGINS)
    for qid in ("a", "b"):
        assert got[qid]["raked"]["estimate"] == pytest.approx(want[qid], rel=1e-6)
        # the design-weighted (unraked) estimate is shown beside it, and differs
        assert got[qid]["design_based"]["estimate"] != pytest.approx(want[qid], rel=1e-3)
    assert got["b"]["raked_n"] == sum("b" in r for _, r in rows)
    # Kish's design effect of the raked weights, from weights raked here
    w = _ipf(
        np.array([a["weight"] for a, _ in rows]),
        {v: np.array([a[v] for a, _ in rows], dtype=object) for v in MARGINS},
        MARGINS,
    )
    assert raking["deff_weights"] == pytest.approx(len(w) * np.sum(w**2) / w.sum() ** 2, rel=1e-6)
    # the SE treats the margins as known: deniable.sampling's rake of the same design
    sample = SampleDesign(np.array([a["weight"] for a, _ in rows]),
                          np.array([a["stratum"] for a, _ in rows], dtype=object),
                          np.array([a["psu"] for a, _ in rows], dtype=object))  # fmt: skip
    raked = rake(sample, {v: (np.array([a[v] for a, _ in rows], dtype=object), MARGINS[v])
                          for v in sorted(MARGINS)})  # fmt: skip
    survey = loads_survey(_text(MARGINS))
    codes = np.array([r["a"] for _, r in rows])
    ref = survey_estimate(survey.question("a").design, codes, raked)
    assert got["a"]["raked"]["se"] == pytest.approx(ref.se, rel=1e-9)
    assert got["a"]["raked"]["df"] == 12 - 4
    # every margin met; the small age band's count hidden
    cells = {(c["variable"], c["level"]): c for c in raking["cells"]}
    for (var, level), c in cells.items():
        assert c["achieved"] == pytest.approx(MARGINS[var][level], abs=1e-8)
    assert cells[("age", "80+")]["hidden"] and cells[("age", "80+")]["n"] is None
    assert FEW < MIN_CELL
    north = sum(a["region"] == "north" for a, _ in rows)
    assert cells[("region", "north")]["n"] == north >= MIN_CELL


def test_the_dashboard_shows_raked_beside_unweighted_and_weighted(filled: Any) -> None:
    _, client, _ = filled
    doc = _design(client)
    page = client.get(f"/dashboard/{SID}", headers=admin_headers())
    assert page.status_code == 200, page.text
    text = html_lib.unescape(page.text)
    assert "Raked to the survey's population margins" in text
    assert f"converged after {doc['raking']['iterations']} iterations" in text
    assert format_number(doc["raking"]["deff_weights"], 6) in text
    for q in doc["questions"]:
        for key in ("estimate", "se", "deff"):
            values = q["raked"][key]
            for x in values if isinstance(values, list) else [values]:
                assert format_number(x, 6) in text, (q["question"], key)
        if q["question"] != "c":
            assert format_number(q["design_based"]["estimate"], 6) in text
    row = '<th scope="row">age</th><td>80+</td><td>{0}</td><td>{0}</td><td>fewer than 10</td>'
    assert row.format(format_number(0.1, 6)) in text
    north = sum(a["region"] == "north" for a, _ in filled[2])
    assert '<th scope="row">region</th><td>north</td>' in text and f"<td>{north}</td>" in text


def test_export_weight_analyze_round_trip_reproduces_the_raked_estimate(
    filled: Any, tmp_path: Path
) -> None:
    _, client, _ = filled
    r = client.get(f"/api/surveys/{SID}/export.csv", headers=admin_headers())
    assert r.status_code == 200, r.text
    export = tmp_path / "export.csv"
    export.write_text(r.text)
    margins = tmp_path / "margins.csv"
    margins.write_text("variable,level,target\n" + "".join(
        f"{var},{level},{share!r}\n" for var in sorted(MARGINS)
        for level, share in MARGINS[var].items()))  # fmt: skip
    survey_file = tmp_path / "survey.yaml"
    survey_file.write_text(_text(MARGINS))
    runner = CliRunner(env={"COLUMNS": "100"})
    out = tmp_path / "raked.csv"
    res = runner.invoke(app, ["weight", str(export), "--margins", str(margins), "--weights",
                              "weight", "--column", "raked", "-o", str(out)],
                        catch_exceptions=False)  # fmt: skip
    assert res.exit_code == 0, res.output
    got = {q["question"]: q["raked"] for q in _design(client)["questions"]}
    for qid in ("a", "b", "c"):
        res = runner.invoke(app, [
            "analyze", str(out), "--column", qid, "--survey", str(survey_file),
            "--weights", "raked", "--strata", "stratum", "--psu", "psu", "--json",
        ], catch_exceptions=False)  # fmt: skip
        assert res.exit_code == 0, res.output
        cli = json.loads(res.stdout)["design_based"]
        assert np.allclose(cli["estimate"], got[qid]["estimate"], rtol=1e-9, atol=0), qid
        assert cli["n"] == got[qid]["n"] and cli["df"] == got[qid]["df"]


def _not_raked(doc: dict[str, Any], *needles: str) -> None:
    """No raked estimate anywhere, the reason given (never the unraked numbers instead)."""
    error = doc["raking"]["error"]
    assert error is not None
    for needle in needles:
        assert needle in error, (needle, error)
    for q in doc["questions"]:
        assert q["raked"] is None and q["raked_error"] == error
        assert q["design_based"] is not None  # the design-weighted estimate stays


def test_a_raking_that_does_not_converge_is_a_message(store: ServiceStore) -> None:
    # age is a function of region in this sample: the margins contradict each other
    attrs = _attributes()
    for a in attrs:
        a["age"] = "18-34" if a["region"] == "north" else "35-79"
    margins = {"age": {"18-34": 0.7, "35-79": 0.3}, "region": {"north": 0.3, "south": 0.7}}
    client, _ = _fill(store, _text(margins), attrs, ["region", "age"])
    doc = _design(client)
    _not_raked(doc, "did not converge", "after 100 iterations")
    assert doc["raking"]["converged"] is False and doc["raking"]["iterations"] == 100
    page = html_lib.unescape(client.get(f"/dashboard/{SID}", headers=admin_headers()).text)
    assert "No raked estimate: raking did not converge" in page
    assert "estimate (raked)" not in page


def test_a_margin_category_without_respondents_is_a_message(store: ServiceStore) -> None:
    margins = {"region": {"north": 0.4, "south": 0.5, "east": 0.1}}
    client, _ = _fill(store, _text(margins), _attributes(), ["region", "age"])
    doc = _design(client)
    _not_raked(doc, "`weighting.margins.region.east`", "no respondent")
    page = html_lib.unescape(client.get(f"/dashboard/{SID}", headers=admin_headers()).text)
    assert "No raked estimate: `weighting.margins.region.east`" in page


def test_a_level_the_margins_do_not_give_is_a_message(store: ServiceStore) -> None:
    margins = {"age": {"18-34": 0.4, "35-79": 0.6}}
    client, _ = _fill(store, _text(margins), _attributes(), ["region", "age"])
    _not_raked(_design(client), "gives no target for age='80+'", "fewer than 10")


def test_a_variable_no_invitation_carries_is_a_message(store: ServiceStore) -> None:
    margins = {"sex": {"f": 0.5, "m": 0.5}}
    client, _ = _fill(store, _text(margins), _attributes(), ["region", "age"])
    _not_raked(_design(client), "'sex'", "no respondent's invitation carries")


def test_raking_variables_alone_rake_weights_of_one(store: ServiceStore) -> None:
    attrs = [{"region": a["region"], "age": a["age"]} for a in _attributes()]
    client, rows = _fill(store, _text(MARGINS), attrs, ["region", "age"])
    doc = _design(client)
    assert doc["design"] is None and doc["raking"]["error"] is None
    want = _expected(rows, MARGINS, base=False)
    for q in doc["questions"]:
        assert q["design_based"] is None
        if q["question"] in want:
            assert q["raked"]["estimate"] == pytest.approx(want[q["question"]], rel=1e-6)
    text = html_lib.unescape(client.get(f"/dashboard/{SID}", headers=admin_headers()).text)
    assert "The weights (weights of 1) raked" in text
    assert "estimate (design weights)" not in text and "SE (design)" not in text


def test_trimming_bounds_the_raked_weights(store: ServiceStore) -> None:
    from deniable.sampling import trim_weights

    attrs = [{"region": a["region"], "age": a["age"]} for a in _attributes()]
    client, rows = _fill(store, _text(MARGINS, trim=", trim: [0.5, 2.5]"), attrs,
                         ["region", "age"])  # fmt: skip
    doc = _design(client)
    assert doc["raking"]["trim"] == [0.5, 2.5] and doc["raking"]["error"] is None
    assert any("trimmed to [0.5, 2.5]" in n for n in doc["raking"]["notes"])
    labels = {v: np.array([a[v] for a, _ in rows], dtype=object) for v in MARGINS}
    w = _ipf(np.ones(len(rows)), labels, MARGINS)
    assert w.max() > 2.5  # the "80+" band is weighted up past the bound
    w = trim_weights(SampleDesign(weights=w), lower=0.5, upper=2.5).weights
    assert w.max() <= 2.5 * (1 + 1e-9)
    survey = loads_survey(_text(MARGINS))
    d = survey.question("a").design
    want = _hajek(rows, "a", w, d.p_yes_given_1, d.p_yes_given_0)
    got = {q["question"]: q["raked"] for q in doc["questions"]}
    assert got["a"]["estimate"] == pytest.approx(want, rel=1e-6)
    assert doc["raking"]["deff_weights"] == pytest.approx(
        len(w) * np.sum(w**2) / w.sum() ** 2, rel=1e-6
    )


def _stored(store: ServiceStore) -> list[Any]:
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(invitations).where(invitations.c.survey_id == SID))
        return sorted((r.token_hash, json.dumps(r.attributes, sort_keys=True)) for r in rows)


def test_a_new_version_s_margins_are_followed_and_nothing_stored_changes(filled: Any) -> None:
    store, client, rows = filled
    export = client.get(f"/api/surveys/{SID}/export.csv", headers=admin_headers()).text
    invited = _stored(store)
    v1 = {q["question"]: q["raked"] for q in _design(client)["questions"]}
    changed = {"region": {"north": 0.7, "south": 0.3}}  # one variable, other shares
    warnings = store.load_survey(loads_survey(_text(changed, version=2)))
    assert warnings == []
    doc = _design(client)
    assert doc["raking"]["variables"] == ["region"]
    want = _expected(rows, changed)
    for qid in ("a", "b"):
        got = next(q for q in doc["questions"] if q["question"] == qid)["raked"]
        assert got["estimate"] == pytest.approx(want[qid], rel=1e-6)
        assert got["estimate"] != pytest.approx(v1[qid]["estimate"], rel=1e-3)
    # a version without margins shows no raking; one adding them back rakes again
    store.load_survey(loads_survey(_text(None, version=3)))
    assert _design(client)["raking"] is None
    store.load_survey(loads_survey(_text(MARGINS, version=4)))
    again = {q["question"]: q["raked"] for q in _design(client)["questions"]}
    assert again["a"]["estimate"] == pytest.approx(v1["a"]["estimate"], rel=1e-12)
    # nothing stored changed: the reports, the invitations and their attributes
    assert client.get(f"/api/surveys/{SID}/export.csv", headers=admin_headers()).text == export
    assert _stored(store) == invited


def test_respondents_without_a_raking_variable_are_counted_and_left_out() -> None:
    from deniable.service.analysis import design_results

    survey = loads_survey(_text(MARGINS))
    attrs = {i: dict(a) for i, a in enumerate(_attributes())}
    for i in (1, 2, 50):  # their invitations lack the age band
        del attrs[i]["age"]
    rng = np.random.default_rng(2)
    rows = [{"respondent": i, "a": int(rng.integers(0, 2))} for i in attrs]
    doc = design_results(survey, rows, attrs)
    assert doc is not None
    raking = doc["raking"]
    assert (raking["n"], raking["without_variables"]) == (len(rows) - 3, 3)
    kept = [(a, {"a": r["a"]}) for a, r in zip(attrs.values(), rows, strict=True) if "age" in a]
    a = doc["questions"][0]
    assert a["raked_n"] == len(kept) and a["n"] == len(rows)
    assert a["raked"]["estimate"] == pytest.approx(
        _expected(kept, MARGINS, qids=("a",))["a"], rel=1e-6
    )


def test_trimming_bounds_the_weights_cannot_meet_are_a_message() -> None:
    from deniable.service.analysis import design_results

    # design weights of 20 to 80 cannot all be brought within [0.3, 3.0] keeping their total
    survey = loads_survey(_text(MARGINS, trim=", trim: [0.3, 3.0]"))
    attrs = dict(enumerate(_attributes()))
    rows = [{"respondent": i, "a": i % 2} for i in attrs]
    doc = design_results(survey, rows, attrs)
    assert doc is not None
    error = doc["raking"]["error"]
    assert error is not None and "`lower` = 0.3 and `upper` = 3" in error
    assert doc["questions"][0]["raked"] is None
    assert doc["questions"][0]["design_based"] is not None


def test_no_reports_or_no_design_still_say_why_nothing_is_raked() -> None:
    from deniable.service.analysis import design_results

    survey = loads_survey(_text(MARGINS))
    attrs = dict(enumerate(_attributes()))
    doc = design_results(survey, [], attrs)
    assert doc is not None and doc["raking"]["error"] == (
        "no respondent with design attributes has sent a report yet"
    )
    # one PSU in a stratum (lonely PSU: fail) makes no design, raked or not
    for a in attrs.values():
        a["psu"] = a["stratum"]
    doc = design_results(survey, [{"respondent": i, "a": 1} for i in attrs], attrs)
    assert doc is not None and doc["raking"]["error"].startswith("no design: ")
    assert doc["error"] in doc["raking"]["error"]
