"""Telemetry streams in the service (routes/streams.py), on SQLite and PostgreSQL (the
``store`` fixture): a stream spec stored and served, device tokens, batches posted, decoded,
charged to the device's budget window and appended to the stream's Parquet partitions;
every bad batch one clear 4xx with nothing stored and nothing charged; a device refused at
its window's boundary, also under concurrent posts; a spec never changed under its data."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _apihelp import admin_headers, make_client
from _streamhelp import (
    BINARY,
    NOW,
    open_stream,
    post_batch,
    stream_client,
    stream_root,
    window_charges,
)
from fastapi.testclient import TestClient

from deniable.designs import design_from_spec, spec_of
from deniable.distributed import aggregate_stream, append_reports, encode_batch, stream_files
from deniable.exceptions import DataError
from deniable.oracles import GRR, OLH, OUE, oracle_from_spec, oracle_spec
from deniable.service.storage import ServiceStore

ORACLE = OUE.from_epsilon(1.0, k=6)
ONE = np.array([[1]], np.uint8)  # one packed report (bit 0 set)


def spec_body(sid: str = "app", oracle: Any = ORACLE, cap: float = 500.0) -> dict[str, Any]:
    return {
        "id": sid,
        "oracle": spec_of(oracle).to_dict() if isinstance(oracle, GRR) else oracle_spec(oracle),
        "period": "day",
        "window": {"kind": "day", "epsilon": cap},
    }


@pytest.fixture
def client(store: ServiceStore, tmp_path: Path) -> Iterator[TestClient]:
    yield stream_client(store, tmp_path)


def root(client: TestClient) -> Path:
    return stream_root(client)


def new_stream(client: TestClient, sid: str = "app", **kw: Any) -> str:
    return open_stream(client, sid, spec_body(sid, **kw))


def post(client: TestClient, token: str, body: bytes, sid: str = "app", **h: str) -> Any:
    return post_batch(client, sid, token, body, **h)


def charges(client: TestClient) -> int:
    return window_charges(client)


def test_a_device_posts_and_its_reports_aggregate_back(client: TestClient) -> None:
    token = new_stream(client)
    served = client.get("/streams/app").json()
    assert oracle_from_spec(served["oracle"]) == ORACLE  # what makeOracle reads
    assert served["window"]["epsilon"] == 500.0 and served["period"] == "day"
    first = ORACLE.randomize(np.arange(40) % 6, rng=1)
    second = ORACLE.randomize(np.arange(30) % 5, rng=2)
    r = post(client, token, encode_batch(ORACLE, first))
    assert r.status_code == 201, r.text
    assert (r.json()["day"], r.json()["reports"]) == ("2026-11-28", 40)
    assert r.json()["epsilon"] >= 40 * ORACLE.epsilon
    doc = json.dumps({"key": ORACLE.key, "reports": second.tolist()})
    r = post(client, token, doc.encode(), **{"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    files = stream_files(root(client), "app")
    assert [f.parent.name for f in files] == ["day=2026-11-28"] * 2
    tally = aggregate_stream(root(client), "app", scheduler="synchronous")
    assert tally == ORACLE.tally(np.concatenate([first, second]))
    assert charges(client) == 2


def test_a_k_ary_randomized_response_stream(client: TestClient) -> None:
    """GRR has a question spec (deniable.question/1), not an oracle spec: a stream serves it
    as such, a device's batch of its reports (one uint16 each) is charged epsilon a report,
    stored and aggregated back, and the stream page estimates each day with GRR itself."""
    grr = GRR.from_epsilon(1.5, k=7)
    token = new_stream(client, "grr", oracle=grr, cap=100 * grr.epsilon * (1 + 1e-9))
    served = client.get("/streams/grr").json()
    assert served["oracle"]["schema"] == "deniable.question/1"
    assert design_from_spec(served["oracle"]) == grr
    assert served["report_epsilon"] == grr.epsilon
    reports = grr.randomize(np.arange(60) % 7, rng=3)
    body = encode_batch(grr, reports)
    assert len(body) == 48 + 2 * 60  # the header, then one uint16 a report
    r = post(client, token, body, sid="grr")
    assert r.status_code == 201, r.text
    assert r.json()["reports"] == 60
    assert aggregate_stream(root(client), "grr", scheduler="synchronous") == grr.tally(reports)
    # the budget: 100 reports' worth, 60 spent, so a batch of 41 is refused whole
    more = grr.randomize(np.zeros(41, dtype=np.int64), rng=4)
    r = post(client, token, encode_batch(grr, more), sid="grr")
    assert r.status_code == 429, r.text
    page = client.get("/api/streams/grr/estimates", headers=admin_headers())
    assert page.status_code == 200, page.text
    [day] = page.json()["days"]
    want = json.loads(json.dumps(grr.estimate(reports).to_dict(0.95)))
    assert day["estimate"] == want


@pytest.mark.parametrize(
    ("design", "words"),
    [
        ("warner", "must be k-ary randomized response (mechanism 'categorical')"),
        ("revealing", "no report could ever be admitted"),
    ],
)
def test_a_question_spec_other_than_a_private_grr_is_refused(
    client: TestClient, design: str, words: str
) -> None:
    from fractions import Fraction

    from deniable.designs import Categorical, Warner

    spec = (
        spec_of(Warner(0.75)).to_dict()
        if design == "warner"  # a binary design: a survey question, not a stream oracle
        else spec_of(Categorical(3, Fraction(1, 2), forced=(0.5, 0.5, 0))).to_dict()
    )  # the second forces no one to report 2: a report of 2 tells the answer (epsilon inf)
    body = {**spec_body(), "oracle": spec}
    r = client.put("/api/streams/app", json=body, headers=admin_headers())
    assert r.status_code == 422 and words in r.json()["error"], r.text
    assert client.get("/streams/app").status_code == 404


def _two_report_loss(oracle: object) -> tuple[float, float]:
    """The largest log-ratio of two memoized L-GRR reports between value sequences of the
    same pattern of changes, and between any two sequences (exact enumeration, k = 3)."""
    import itertools

    p1, q1, p2, q2 = oracle.probabilities  # type: ignore[attr-defined]
    k = 3
    prr = np.full((k, k), q1)
    np.fill_diagonal(prr, p1)
    irr = np.full((k, k), q2)
    np.fill_diagonal(irr, p2)

    def joint(seq: tuple[int, ...]) -> np.ndarray:
        out = np.zeros((k, k))
        values = sorted(set(seq))
        for kept in itertools.product(range(k), repeat=len(values)):
            memo = dict(zip(values, kept, strict=True))
            weight = np.prod([prr[v, s] for v, s in memo.items()])
            out += weight * np.outer(irr[memo[seq[0]]], irr[memo[seq[1]]])
        return np.log(out)

    seqs = list(itertools.product(range(k), repeat=2))
    same = max(
        float(np.max(np.abs(joint(a) - joint(b))))
        for a in seqs
        for b in seqs
        if (a[0] == a[1]) == (b[0] == b[1])
    )
    anyway = max(float(np.max(np.abs(joint(a) - joint(b)))) for a in seqs for b in seqs)
    return same, anyway


def test_a_report_costs_the_irr_epsilon_of_a_longitudinal_oracle() -> None:
    """A window bounds the loss against any change of a device's values: two memoized
    reports lose more than 2 epsilon_1 between sequences of different change patterns,
    never more than 2 epsilon_irr, so a report costs epsilon_irr (exact enumeration)."""
    from deniable.oracles import LGRR, LOLOHA
    from deniable.service.analysis.streams import stream_spec_from

    lgrr = LGRR.from_epsilon(2.0, 3, eps_1=0.5)
    same, anyway = _two_report_loss(lgrr)
    assert same <= 2 * lgrr.epsilon_1 + 1e-9  # the memoized bound, same pattern
    assert anyway > 2 * lgrr.epsilon_1 + 0.01  # not a bound across patterns
    spec = stream_spec_from(spec_body(oracle=lgrr))
    assert spec.report_epsilon == lgrr.epsilon_irr
    assert anyway <= 2 * spec.report_epsilon + 1e-9
    loloha = LOLOHA.from_epsilon(2.0, k=10)
    assert stream_spec_from(spec_body(oracle=loloha)).report_epsilon == loloha.epsilon_irr


def test_the_day_is_the_utc_date_the_server_received_the_batch(client: TestClient) -> None:
    token = new_stream(client)
    client.app.state.streams.clock.now = datetime(  # type: ignore[attr-defined]
        2026, 11, 29, 0, 30, tzinfo=UTC
    ) - timedelta(hours=1)  # 23:30 UTC on the 28th, whatever the server's zone
    assert post(client, token, encode_batch(ORACLE, ONE)).json()["day"] == "2026-11-28"


@pytest.mark.parametrize("header", [None, "Bearer not-a-device-token", "Basic abc"])
def test_a_missing_or_unknown_token_is_refused(client: TestClient, header: str | None) -> None:
    new_stream(client)
    headers = {**BINARY, **({} if header is None else {"Authorization": header})}
    r = client.post("/streams/app/batches", content=encode_batch(ORACLE, ONE), headers=headers)
    assert r.status_code == 401 and "Authorization" in r.json()["error"]
    assert stream_files(root(client), "app") == [] and charges(client) == 0


def test_another_streams_token_is_refused(client: TestClient) -> None:
    new_stream(client, "app")
    other = new_stream(client, "other")
    r = post(client, other, encode_batch(ORACLE, ONE), sid="app")
    assert r.status_code == 401 and "not a device of stream 'app'" in r.json()["error"]
    assert charges(client) == 0


def _bad_bodies() -> dict[str, tuple[bytes, dict[str, str], int, str]]:
    good = encode_batch(ORACLE, ORACLE.randomize([1, 2, 3], rng=3))
    outside = bytearray(good)
    outside[-1] = 0b1100_0000  # bits past k - 1 = 5: no value's report
    other = OUE.from_epsilon(1.0, k=7)
    return {
        "another oracle": (encode_batch(other, ONE), {}, 422, "another oracle"),
        "truncated": (good[:-1], {}, 422, "truncated"),
        "outside the domain": (bytes(outside), {}, 422, "padding bits"),
        "json outside the domain": (
            json.dumps({"key": ORACLE.key, "reports": [[192]]}).encode(),
            {"Content-Type": "application/json"}, 422, "padding bits",
        ),
        "no report": (encode_batch(ORACLE, np.zeros((0, 1), np.uint8)), {}, 422, "at least one"),
        "not a batch type": (good, {"Content-Type": "text/plain"}, 415, "Content-Type"),
        "oversize": (good + bytes(5000), {}, 413, ""),
    }  # fmt: skip


@pytest.mark.parametrize("case", list(_bad_bodies()))
def test_a_bad_batch_is_one_clear_4xx_with_nothing_stored_or_charged(
    store: ServiceStore, tmp_path: Path, case: str
) -> None:
    client = make_client(store, streams_dir=tmp_path / "streams", max_body_bytes=4096)
    token = new_stream(client)
    body, headers, status, words = _bad_bodies()[case]
    r = post(client, token, body, **headers)
    assert r.status_code == status, r.text
    assert words in r.json()["error"]
    assert stream_files(root(client), "app") == [] and charges(client) == 0
    assert post(client, token, encode_batch(ORACLE, ONE)).status_code == 201  # still open


def test_a_device_is_refused_at_its_window_boundary(client: TestClient) -> None:
    # the cap is three reports' epsilon, with a margin of 1e-9 relative for the rounding
    token = new_stream(client, cap=3 * ORACLE.epsilon * (1 + 1e-9))
    one = encode_batch(ORACLE, ONE)
    assert (
        post(client, token, encode_batch(ORACLE, np.array([[1], [2]], np.uint8))).status_code == 201
    )
    assert post(client, token, one).status_code == 201  # reaches the cap: passes
    r = post(client, token, one)
    assert r.status_code == 429, r.text
    assert "per day (UTC)" in r.json()["error"] and "Nothing was stored" in r.json()["error"]
    assert r.headers["Retry-After"] == str(12 * 3600)  # noon: the day's window ends at midnight
    assert sum(pq_rows(client)) == 3 and charges(client) == 2
    client.app.state.streams.clock.now = NOW + timedelta(days=1)  # type: ignore[attr-defined]
    assert post(client, token, one).status_code == 201  # a new day, a new window


def pq_rows(client: TestClient) -> list[int]:
    import pyarrow.parquet as pq

    return [pq.read_metadata(f).num_rows for f in stream_files(root(client), "app")]


def test_concurrent_posts_of_one_device_never_exceed_its_window(client: TestClient) -> None:
    token = new_stream(client, cap=5 * ORACLE.epsilon * (1 + 1e-9))
    one = encode_batch(ORACLE, ONE)
    statuses: list[int] = []
    lock = threading.Lock()

    def send() -> None:
        s = post(client, token, one).status_code
        with lock:
            statuses.append(s)

    threads = [threading.Thread(target=send) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [201] * 5 + [429] * 7
    assert sum(pq_rows(client)) == 5 and charges(client) == 5


def test_a_failed_append_keeps_the_charge_and_acknowledges_nothing(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    import deniable.distributed

    token = new_stream(client, cap=2 * ORACLE.epsilon * (1 + 1e-9))

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(deniable.distributed, "append_reports", broken)
    r = post(client, token, encode_batch(ORACLE, ONE))
    assert r.status_code == 503 and "charged and not stored" in r.json()["error"]
    monkeypatch.undo()
    assert post(client, token, encode_batch(ORACLE, ONE)).status_code == 201
    # the lost batch still counts: the safe side, never past the cap
    assert post(client, token, encode_batch(ORACLE, ONE)).status_code == 429
    assert sum(pq_rows(client)) == 1


def test_two_streams_keep_separate_partitions(client: TestClient) -> None:
    olh = OLH.from_epsilon(1.0, k=5)
    a, b = new_stream(client, "app"), new_stream(client, "olh", oracle=olh)
    ra, rb = ORACLE.randomize([0, 1, 1], rng=5), olh.randomize([4, 4], rng=6)
    assert post(client, a, encode_batch(ORACLE, ra), sid="app").status_code == 201
    assert post(client, b, encode_batch(olh, rb), sid="olh").status_code == 201
    assert post(client, b, encode_batch(ORACLE, ra), sid="olh").status_code == 422
    assert aggregate_stream(root(client), "app", scheduler="synchronous") == ORACLE.tally(ra)
    assert aggregate_stream(root(client), "olh", scheduler="synchronous") == olh.tally(rb)


def test_a_spec_is_never_changed_under_its_stream(client: TestClient) -> None:
    new_stream(client)
    same = client.put("/api/streams/app", json=spec_body(), headers=admin_headers())
    assert same.status_code == 200
    for changed, words in [
        (spec_body(cap=20.0), "window epsilon 500 per day (UTC) (given epsilon 20"),
        (spec_body(oracle=OUE.from_epsilon(2.0, k=6)), "oracle"),
    ]:
        r = client.put("/api/streams/app", json=changed, headers=admin_headers())
        assert r.status_code == 409 and words in r.json()["error"], r.text
    assert client.get("/streams/app").json()["window"]["epsilon"] == 500.0


def test_partitions_of_another_oracle_refuse_a_spec(client: TestClient) -> None:
    other = OUE.from_epsilon(2.0, k=6)
    append_reports(root(client), "app", other, other.randomize([1], rng=1), day="2026-11-27")
    r = client.put("/api/streams/app", json=spec_body(), headers=admin_headers())
    assert r.status_code == 409 and "partitions hold reports of the oracle" in r.json()["error"]
    assert client.get("/streams/app").status_code == 404


def test_a_streams_file_is_stored_at_start_and_a_changed_one_refused(
    store: ServiceStore, tmp_path: Path
) -> None:
    path = tmp_path / "streams.json"
    path.write_text(json.dumps({"streams": [spec_body()]}))
    first = make_client(store, streams_dir=tmp_path / "s", streams_file=path)
    assert first.get("/streams/app").json()["oracle"]["key"] == ORACLE.key
    make_client(store, streams_dir=tmp_path / "s", streams_file=path)  # the same: a restart
    path.write_text(json.dumps({"streams": [spec_body(cap=1.0)]}))
    with pytest.raises(DataError, match="stored with another spec"):
        make_client(store, streams_dir=tmp_path / "s", streams_file=path)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"period": "hour"}, "`period` must be one of 'day'"),
        ({"window": {"kind": "day", "epsilon": 0.5}}, "no report could ever be admitted"),
        ({"window": {"kind": "month", "epsilon": 5}}, "`kind` must be one of"),
        ({"extra": 1}, "unknown field `extra`"),
        ({"id": "other"}, "must be the path's 'app'"),
    ],
)
def test_a_bad_spec_is_refused_naming_its_field(
    client: TestClient, change: dict[str, Any], words: str
) -> None:
    r = client.put("/api/streams/app", json={**spec_body(), **change}, headers=admin_headers())
    assert r.status_code == 422 and words in r.json()["error"], r.text
    assert client.get("/streams/app").status_code == 404


def test_only_the_admin_stores_specs_and_issues_tokens(client: TestClient) -> None:
    assert client.put("/api/streams/app", json=spec_body()).status_code == 401
    new_stream(client)
    assert client.post("/api/streams/app/devices").status_code == 401
    r = client.post("/api/streams/app/devices", json={"count": 3}, headers=admin_headers())
    assert len({d["token"] for d in r.json()["devices"]}) == 3
    listed = client.get("/api/streams", headers=admin_headers()).json()["streams"]
    assert [(s["id"], s["devices"]) for s in listed] == [("app", 4)]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("streams: [{id: app, period: day, oracle: {}, window: {kind: day, epsilon: 1}}]",
         "`oracle`"),
        ("streams: 3", "one field `streams`"),
    ],
)  # fmt: skip
def test_serve_refuses_a_bad_streams_file_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, words: str
) -> None:
    from typer.testing import CliRunner

    from deniable.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DENIABLE_DATA", str(tmp_path))
    bad = tmp_path / "streams.yaml"
    bad.write_text(content)
    result = CliRunner().invoke(app, ["serve", "--streams", str(bad)])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --streams:") and words in lines[0]
    assert list(tmp_path.glob("*.db")) == []  # nothing created
