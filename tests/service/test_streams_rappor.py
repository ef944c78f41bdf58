"""RAPPOR as a telemetry stream's oracle (routes/streams.py, analysis/streams.py), on
SQLite and PostgreSQL (the ``store`` fixture): a spec with a RAPPOR spec and candidates,
devices posting packed RAPPOR reports (binary and JSON), each report charged
``oracles.report_epsilon`` in the device's window and refused at its boundary, a bad batch
one clear 4xx with nothing stored or charged, and the stream page decoding each day against
the spec's candidates."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _apihelp import admin_headers
from _streamhelp import (
    NOW,
    open_stream,
    post_batch,
    stream_client,
    stream_root,
    window_charges,
)
from fastapi.testclient import TestClient

from deniable.distributed import aggregate_stream, encode_batch, encode_json_batch, stream_files
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import OUE, Rappor, RapporClient, RapporReports, oracle_spec, rappor_spec
from deniable.service.storage import ServiceStore

RAPPOR = Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.5, q=0.75)
# the IRR's epsilon over every PRR, m max(ln(q / p), ln((1 - p) / (1 - q))) = 16 ln 2
PER_REPORT = 16 * np.log(2.0)
CANDIDATES = ["a", "b", "c", "d"]


def spec_body(cap: float = 5000.0, **extra: Any) -> dict[str, Any]:
    return {
        "id": "words",
        "oracle": rappor_spec(RAPPOR),
        "period": "day",
        "window": {"kind": "day", "epsilon": cap},
        "candidates": CANDIDATES,
        **extra,
    }


def reports_of(n: int, seed: int) -> RapporReports:
    rng = np.random.default_rng(seed)
    values = rng.choice(np.asarray(CANDIDATES[:3]), size=n, p=[0.6, 0.3, 0.1])
    out: RapporReports = RapporClient(RAPPOR, InMemoryMemoStore()).report(
        np.arange(n), values, rng=rng
    )
    return out


@pytest.fixture
def client(store: ServiceStore, tmp_path: Path) -> Iterator[TestClient]:
    yield stream_client(store, tmp_path, max_body_bytes=1 << 20)


def root(client: TestClient) -> Path:
    return stream_root(client)


def new_stream(client: TestClient, **kw: Any) -> str:
    return open_stream(client, "words", spec_body(**kw))


def post(client: TestClient, token: str, body: bytes, **h: str) -> Any:
    return post_batch(client, "words", token, body, **h)


def charges(client: TestClient) -> int:
    return window_charges(client)


def test_devices_post_rappor_reports_charged_at_the_irrs_epsilon(client: TestClient) -> None:
    token = new_stream(client)
    served = client.get("/streams/words").json()
    assert served["oracle"] == rappor_spec(RAPPOR) and served["candidates"] == CANDIDATES
    assert served["report_epsilon"] == pytest.approx(PER_REPORT, rel=1e-12)
    first, second = reports_of(40, 1), reports_of(25, 2)
    r = post(client, token, encode_batch(RAPPOR, first))
    assert r.status_code == 201, r.text
    assert r.json()["reports"] == 40 and r.json()["epsilon"] >= 40 * PER_REPORT * (1 - 1e-12)
    r = post(client, token, encode_json_batch(RAPPOR, second).encode(),
             **{"Content-Type": "application/json"})  # fmt: skip
    assert r.status_code == 201, r.text
    tally = aggregate_stream(root(client), "words", scheduler="synchronous")
    assert tally == RAPPOR.tally(first) + RAPPOR.tally(second)
    assert charges(client) == 2


def _bad_bodies() -> dict[str, tuple[bytes, dict[str, str], str]]:
    good = encode_batch(RAPPOR, reports_of(3, 3))
    cohort = bytearray(good)
    cohort[48 + 4 : 48 + 6] = (4).to_bytes(2, "little")  # report 1's cohort: 4 of 0..3
    other = Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.25, q=0.75)
    as_json = json.loads(encode_json_batch(RAPPOR, reports_of(2, 4)))
    as_json["reports"][1] = [1, 0]
    return {
        "truncated": (good[:-1], {}, "(truncated)"),
        "trailing": (good + b"\0", {}, "(bytes after the last report)"),
        "cohort out of range": (bytes(cohort), {}, "report 1 has cohort 4"),
        "other parameters": (encode_batch(other, RapporReports(np.array([0]),
                             np.zeros((1, 2), np.uint8))), {}, "other parameters"),
        "json of the wrong width": (json.dumps(as_json).encode(),
                                    {"Content-Type": "application/json"}, "lists of 3"),
    }  # fmt: skip


@pytest.mark.parametrize("case", list(_bad_bodies()))
def test_a_bad_rappor_batch_is_one_clear_422_with_nothing_stored_or_charged(
    client: TestClient, case: str
) -> None:
    token = new_stream(client)
    body, headers, words = _bad_bodies()[case]
    r = post(client, token, body, **headers)
    assert r.status_code == 422, r.text
    assert words in r.json()["error"] and "Nothing was charged or stored" in r.json()["error"]
    assert stream_files(root(client), "words") == [] and charges(client) == 0
    assert post(client, token, encode_batch(RAPPOR, reports_of(1, 5))).status_code == 201


def test_a_rappor_device_is_refused_at_its_window_boundary(client: TestClient) -> None:
    token = new_stream(client, cap=3 * PER_REPORT * (1 + 1e-9))
    assert post(client, token, encode_batch(RAPPOR, reports_of(2, 6))).status_code == 201
    assert post(client, token, encode_batch(RAPPOR, reports_of(1, 7))).status_code == 201
    r = post(client, token, encode_batch(RAPPOR, reports_of(1, 8)))
    assert r.status_code == 429 and "Nothing was stored" in r.json()["error"], r.text
    assert charges(client) == 2
    n = RAPPOR.counts(aggregate_stream(root(client), "words", scheduler="synchronous"))[1]
    assert int(n.sum()) == 3


def test_a_window_below_one_rappor_report_refuses_the_spec(client: TestClient) -> None:
    # the one-report epsilon (h-bit) would fit this cap; the per-report charge does not
    assert RAPPOR.epsilon < 5.0 < PER_REPORT
    r = client.put("/api/streams/words", json=spec_body(cap=5.0), headers=admin_headers())
    assert r.status_code == 422 and "no report could ever be admitted" in r.json()["error"]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"candidates": ["a", "a"]}, "the candidate 'a' is given twice"),
        (
            {"candidates": []},
            "must be a list of 1 to 1000 distinct non-empty strings, got a list of 0",
        ),
        ({"candidates": ["a", 3]}, "non-empty strings, got 3"),
        ({"candidates": ["a", ""]}, "non-empty strings, got ''"),
        ({"candidates": "a"}, "non-empty strings, got str"),
        (
            {
                "oracle": rappor_spec(Rappor(m=1024, h=2, cohorts=64, f=0.5, p=0.5, q=0.75)),
                "window": {"kind": "day", "epsilon": 1e5},
                "candidates": [str(i) for i in range(513)],
            },
            "513 candidates make a decoder of cohorts x m x K = 33619968 cells, more than 33554432;"
            " give at most 512",
        ),
        ({"oracle": {**rappor_spec(RAPPOR), "epsilon": 1.0}}, "`epsilon` does not match"),
        ({"oracle": oracle_spec(OUE.from_epsilon(1.0, k=4))}, "for a stream of strings only"),
    ],
)
def test_a_bad_rappor_spec_is_refused_naming_its_field(
    client: TestClient, change: dict[str, Any], words: str
) -> None:
    r = client.put("/api/streams/words", json=spec_body(**change), headers=admin_headers())
    assert r.status_code == 422 and words in r.json()["error"], r.text


def test_the_stream_page_decodes_each_day_against_the_specs_candidates(
    client: TestClient,
) -> None:
    token = new_stream(client)
    days = {}
    for day, seed in ((27, 11), (28, 12)):
        client.app.state.streams.clock.now = NOW.replace(day=day)  # type: ignore[attr-defined]
        days[day] = reports_of(300, seed)
        assert post(client, token, encode_batch(RAPPOR, days[day])).status_code == 201
    got = client.get("/api/streams/words/estimates?start=2026-11-27&end=2026-11-28&level=0.9",
                     headers=admin_headers()).json()  # fmt: skip
    assert [d["day"] for d in got["days"]] == ["2026-11-27", "2026-11-28"]
    for d, day in zip(got["days"], (27, 28), strict=True):
        expected = RAPPOR.decode(RAPPOR.tally(days[day]), CANDIDATES).to_dict(0.9)
        assert d["estimate"] == json.loads(json.dumps(expected))
        est = RAPPOR.decode(RAPPOR.tally(days[day]), CANDIDATES)
        low, high = est.ci(0.9)
        for i, row in enumerate(d["estimate"]["candidates"]):
            if est.selected[i]:  # the Wald interval, value -/+ z se at 0.9
                assert row["ci_wald"] == pytest.approx([low[i], high[i]], rel=1e-12)
                assert high[i] - low[i] == pytest.approx(2 * 1.6448536269514722 * est.se[i])
    page = client.get("/dashboard/streams/words?start=2026-11-27&end=2026-11-28",
                      headers=admin_headers())  # fmt: skip
    assert page.status_code == 200
    assert "candidate" in page.text and "decoded against the stream" in page.text
    assert "2026-11-28 (n = 300)" in page.text


def test_a_rappor_stream_without_candidates_is_decoded_by_the_cli_only(
    client: TestClient, tmp_path: Path
) -> None:
    body = spec_body(cap=1e5)
    del body["candidates"]
    r = client.put("/api/streams/words", json=body, headers=admin_headers())
    assert r.status_code == 201 and "candidates" not in r.json()
    token = client.post("/api/streams/words/devices", headers=admin_headers()).json()
    reports = reports_of(500, 13)
    r = post(client, token["devices"][0]["token"], encode_batch(RAPPOR, reports))
    assert r.status_code == 201, r.text
    r = client.get("/api/streams/words/estimates", headers=admin_headers())
    assert r.status_code == 422 and "carries no `candidates`" in r.json()["error"]
    # the command line decodes the stream's partitions against --candidates
    from typer.testing import CliRunner

    from deniable.cli import app

    cand = tmp_path / "cand.txt"
    cand.write_text("\n".join(CANDIDATES) + "\n")
    result = CliRunner().invoke(app, ["telemetry", "aggregate", "--stream-root", str(root(client)),
                                      "--stream", "words", "--candidates", str(cand),
                                      "--local-workers", "0", "--json"])  # fmt: skip
    assert result.exit_code == 0, (result.stdout, result.stderr)
    got = json.loads(result.stdout)
    expected = RAPPOR.decode(RAPPOR.tally(reports), CANDIDATES).to_dict()
    assert [c["frequency"] for c in got["candidates"]] == [
        c["frequency"] for c in json.loads(json.dumps(expected))["candidates"]
    ]
