"""PEM and TreeHist as a telemetry stream's oracle (routes/streams.py, analysis/streams.py,
analysis/_stream_heavy.py), on SQLite and PostgreSQL (the ``store`` fixture): a spec with a
heavy-hitter spec, devices posting their records (binary and JSON), each report charged
``oracles.report_epsilon`` (the OLH epsilon) in the device's window and refused at its
boundary, a bad batch one clear 422 with nothing stored or charged, a changed spec refused,
and the stream page listing each day's discovered strings, decoded from that day's records
by the library's own estimate."""

from __future__ import annotations

import json
import struct
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

from deniable.distributed import encode_batch, encode_json_batch, stream_files
from deniable.oracles import (
    PEM,
    TreeHist,
    heavy_device_records,
    heavy_from_records,
    heavy_spec,
)
from deniable.service.storage import ServiceStore

PROTOCOLS = {
    "pem": PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=8),  # 2 groups, g = 64
    "treehist": TreeHist(epsilon=3.0, max_bytes=1),  # 8 groups, g = 16
}
JSON_TYPE = {"Content-Type": "application/json"}
WORDS = ["hi", "yo", "ok", "zz"]


@pytest.fixture(params=sorted(PROTOCOLS))
def protocol(request: pytest.FixtureRequest) -> Any:
    return PROTOCOLS[request.param]


def spec_body(protocol: Any, cap: float = 1e6, **extra: Any) -> dict[str, Any]:
    return {
        "id": "found",
        "oracle": heavy_spec(protocol),
        "period": "day",
        "window": {"kind": "day", "epsilon": cap},
        **extra,
    }


def records_of(protocol: Any, n: int, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    words = [w[: protocol.max_bytes] for w in WORDS]
    values = rng.choice(np.asarray(words), size=n, p=[0.5, 0.3, 0.1, 0.1])
    return heavy_device_records(protocol, [str(v) for v in values], rng=rng)


@pytest.fixture
def client(store: ServiceStore, tmp_path: Path) -> Iterator[TestClient]:
    yield stream_client(store, tmp_path, max_body_bytes=1 << 22)


def root(client: TestClient) -> Path:
    return stream_root(client)


def new_stream(client: TestClient, protocol: Any, **kw: Any) -> str:
    return open_stream(client, "found", spec_body(protocol, **kw))


def post(client: TestClient, token: str, body: bytes, **h: str) -> Any:
    return post_batch(client, "found", token, body, **h)


def charges(client: TestClient) -> int:
    return window_charges(client)


def test_devices_post_heavy_records_charged_at_the_olh_epsilon(
    client: TestClient, protocol: Any
) -> None:
    token = new_stream(client, protocol)
    served = client.get("/streams/found").json()
    assert served["oracle"] == heavy_spec(protocol) and "candidates" not in served
    g, p = protocol.base.g, protocol.base.p_truthful
    assert served["report_epsilon"] == pytest.approx(np.log1p(g * p / (1 - p)), rel=1e-12)
    first, second = records_of(protocol, 40, 1), records_of(protocol, 25, 2)
    r = post(client, token, encode_batch(protocol, first))
    assert r.status_code == 201, r.text
    assert r.json()["reports"] == 40 and r.json()["epsilon"] >= 40 * served["report_epsilon"]
    r = post(client, token, encode_json_batch(protocol, second).encode(), **JSON_TYPE)
    assert r.status_code == 201, r.text
    import pyarrow.parquet as pq

    stored = np.concatenate([
        np.column_stack([c.to_numpy() for c in pq.read_table(f).columns])
        for f in stream_files(root(client), "found")
    ]).astype(np.uint64)  # fmt: skip
    assert np.array_equal(stored, np.concatenate([first, second]))
    assert charges(client) == 2


def _bad_bodies() -> dict[str, tuple[bytes, dict[str, str], str]]:
    pem = PROTOCOLS["pem"]  # 2 groups of 8 and 16 bits, l = 6 rows, g = 64
    rec = records_of(pem, 4, 3)
    good = encode_batch(pem, rec)
    width = 8 * 8
    group = bytearray(good)
    struct.pack_into("<Q", group, 48 + width, 2)
    row = bytearray(good)
    struct.pack_into("<Q", row, 48 + 2 * width + 8, 1)  # bit 63: past 16 bits
    bucket = bytearray(good)
    struct.pack_into("<Q", bucket, 48 + 3 * width + 7 * 8, 64)
    other = PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=4)
    as_json = json.loads(encode_json_batch(pem, rec))
    as_json["reports"][1] = as_json["reports"][1][:-1]
    return {
        "truncated": (good[:-1], {}, "(truncated)"),
        "trailing": (good + b"\0", {}, "(bytes after the last report)"),
        "group out of range": (bytes(group), {}, "report 1 has group 2"),
        "row past its prefix": (bytes(row), {}, "report 2 of group"),
        "bucket out of range": (bytes(bucket), {}, "report 3 has bucket 64"),
        "other parameters": (encode_batch(other, records_of(other, 1, 4)), {}, "other parameters"),
        "json of the wrong width": (json.dumps(as_json).encode(), JSON_TYPE, "lists of 8"),
    }


@pytest.mark.parametrize("case", list(_bad_bodies()))
def test_a_bad_heavy_batch_is_one_clear_422_with_nothing_stored_or_charged(
    client: TestClient, case: str
) -> None:
    pem = PROTOCOLS["pem"]
    token = new_stream(client, pem)
    body, headers, words = _bad_bodies()[case]
    r = post(client, token, body, **headers)
    assert r.status_code == 422, r.text
    assert words in r.json()["error"] and "Nothing was charged or stored" in r.json()["error"]
    assert stream_files(root(client), "found") == [] and charges(client) == 0
    assert post(client, token, encode_batch(pem, records_of(pem, 1, 5))).status_code == 201


def test_a_heavy_device_is_refused_at_its_window_boundary(
    client: TestClient, protocol: Any
) -> None:
    token = new_stream(client, protocol, cap=3 * protocol.epsilon_per_device)
    assert (
        post(client, token, encode_batch(protocol, records_of(protocol, 2, 6))).status_code == 201
    )
    assert (
        post(client, token, encode_batch(protocol, records_of(protocol, 1, 7))).status_code == 201
    )
    r = post(client, token, encode_batch(protocol, records_of(protocol, 1, 8)))
    assert r.status_code == 429 and "Nothing was stored" in r.json()["error"], r.text
    assert charges(client) == 2 and len(stream_files(root(client), "found")) == 2


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"candidates": ["hi"]}, "for a stream of strings only"),
        ({"oracle": {**heavy_spec(PROTOCOLS["pem"]), "levels": [8]}}, "spec field `levels`"),
        ({"oracle": {**heavy_spec(PROTOCOLS["pem"]), "epsilon": 5.0}}, "spec field `epsilon`"),
        ({"window": {"kind": "day", "epsilon": 3.0}}, "no report could ever be admitted"),
    ],
)
def test_a_bad_heavy_spec_is_refused_naming_its_field(
    client: TestClient, change: dict[str, Any], words: str
) -> None:
    r = client.put("/api/streams/found", json=spec_body(PROTOCOLS["pem"], **change),
                   headers=admin_headers())  # fmt: skip
    assert r.status_code == 422 and words in r.json()["error"], r.text


def test_a_changed_heavy_spec_on_a_stored_stream_is_refused(client: TestClient) -> None:
    pem = PROTOCOLS["pem"]
    token = new_stream(client, pem)
    assert post(client, token, encode_batch(pem, records_of(pem, 5, 9))).status_code == 201
    same = client.put("/api/streams/found", json=spec_body(pem), headers=admin_headers())
    assert same.status_code == 200, same.text
    other = PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=4)
    r = client.put("/api/streams/found", json=spec_body(other), headers=admin_headers())
    assert r.status_code == 409 and "its partitions hold reports of the oracle" in r.json()["error"]


def test_the_stream_page_lists_each_days_heavy_hitters_from_its_records(
    client: TestClient, protocol: Any
) -> None:
    token = new_stream(client, protocol)
    days = {}
    for day, seed in ((27, 11), (28, 12)):
        client.app.state.streams.clock.now = NOW.replace(day=day)  # type: ignore[attr-defined]
        days[day] = records_of(protocol, 6000, seed)
        for part in np.array_split(days[day], 3):  # several batches, one day
            assert post(client, token, encode_batch(protocol, part)).status_code == 201
    got = client.get("/api/streams/found/estimates?start=2026-11-27&end=2026-11-28&level=0.9",
                     headers=admin_headers()).json()  # fmt: skip
    assert [d["day"] for d in got["days"]] == ["2026-11-27", "2026-11-28"]
    for d, day in zip(got["days"], (27, 28), strict=True):
        # that day's records alone, decoded by the library at the protocol's top_k, alpha
        want = protocol.estimate(heavy_from_records(protocol, days[day]), level=0.9).to_dict()
        assert d["estimate"] == json.loads(json.dumps(want))
        assert d["estimate"]["n"] == 6000
        found = [h["string"] for h in d["estimate"]["heavy_hitters"]]
        assert found[:2] == [w[: protocol.max_bytes] for w in WORDS[:2]]
    page = client.get("/dashboard/streams/found?start=2026-11-27&end=2026-11-28",
                      headers=admin_headers())  # fmt: skip
    assert page.status_code == 200, page.text
    assert "PEM/TreeHist records are decoded on their own" in page.text
    assert "threshold (rule)" in page.text and "2026-11-28 (n = 6000)" in page.text
    first = got["days"][1]["estimate"]
    assert f'<th scope="row">{first["heavy_hitters"][0]["string"]}</th>' in page.text
    assert f"({first['rounds'][-1]['rule']})" in page.text


def test_a_day_with_an_empty_group_is_listed_undecided(client: TestClient) -> None:
    tree = PROTOCOLS["treehist"]  # 8 groups
    token = new_stream(client, tree)
    rec = records_of(tree, 200, 13)
    rec = rec[rec[:, 0] != 5]  # no report of group 5
    assert post(client, token, encode_batch(tree, rec)).status_code == 201
    got = client.get("/api/streams/found/estimates", headers=admin_headers()).json()
    est = got["days"][0]["estimate"]
    assert est["n"] == rec.shape[0] and est["heavy_hitters"] == []
    assert "a report in each of the 8 groups" in est["undecided"]
    page = client.get("/dashboard/streams/found", headers=admin_headers())
    assert "a report in each of the 8 groups" in page.text
