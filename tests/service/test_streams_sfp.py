"""The Sequence Fragment Puzzle as a telemetry stream's oracle (routes/streams.py,
analysis/streams.py, analysis/_stream_heavy.py), on SQLite and PostgreSQL (the ``store``
fixture): a spec carrying an SFP spec, devices posting their reports (binary and JSON), each
report charged ``oracles.report_epsilon`` (both sketches' epsilons added: eps/2 + eps/2) in
the device's window and refused at its boundary, a bad batch one clear 422 with nothing
stored or charged, a bad spec refused naming its field, and the stream page listing each
day's strings, estimated from that day's reports by the library's own estimate."""

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
from deniable.oracles import SFP, sfp_device_reports, sfp_records, sfp_spec
from deniable.service.storage import ServiceStore

# P = 2 positions, HCMS halves at eps/2 = 3 each: the two frequent words are found at n = 4000
SFP_H = SFP(epsilon=6.0, max_length=4, alphabet="hiyokz", puzzle_bits=4, k=16, m=256)
JSON_TYPE = {"Content-Type": "application/json"}
WORDS = ["hi", "yoyo", "ok", "zz"]


def spec_body(protocol: SFP = SFP_H, cap: float = 1e6, **extra: Any) -> dict[str, Any]:
    return {
        "id": "words",
        "oracle": sfp_spec(protocol),
        "period": "day",
        "window": {"kind": "day", "epsilon": cap},
        **extra,
    }


def reports_of(n: int, seed: int, protocol: SFP = SFP_H) -> Any:
    rng = np.random.default_rng(seed)
    values = rng.choice(np.asarray(WORDS), size=n, p=[0.5, 0.3, 0.1, 0.1])
    return sfp_device_reports(protocol, [str(v) for v in values], rng=rng)


@pytest.fixture
def client(store: ServiceStore, tmp_path: Path) -> Iterator[TestClient]:
    yield stream_client(store, tmp_path, max_body_bytes=1 << 22)


def new_stream(client: TestClient, **kw: Any) -> str:
    return open_stream(client, "words", spec_body(**kw))


def post(client: TestClient, token: str, body: bytes, **h: str) -> Any:
    return post_batch(client, "words", token, body, **h)


def stored_records(client: TestClient) -> Any:
    import pyarrow.parquet as pq

    files = stream_files(stream_root(client), "words")
    return np.concatenate(
        [np.column_stack([c.to_numpy() for c in pq.read_table(f).columns]) for f in files]
    )


def test_devices_post_sfp_reports_charged_at_both_halves(client: TestClient) -> None:
    token = new_stream(client)
    served = client.get("/streams/words").json()
    assert served["oracle"] == sfp_spec(SFP_H) and "candidates" not in served
    # one report: a fragment-sketch report at eps/2 and a whole-string one at eps/2
    halves = SFP_H.fragment_sketch.epsilon + SFP_H.word_sketch.epsilon
    assert SFP_H.fragment_sketch.epsilon == SFP_H.word_sketch.epsilon == 6.0 / 2
    assert served["report_epsilon"] == halves == 6.0
    first, second = reports_of(40, 1), reports_of(25, 2)
    r = post(client, token, encode_batch(SFP_H, first))
    assert r.status_code == 201, r.text
    assert r.json()["reports"] == 40 and r.json()["epsilon"] >= 40 * halves
    r = post(client, token, encode_json_batch(SFP_H, second).encode(), **JSON_TYPE)
    assert r.status_code == 201, r.text
    want = np.concatenate([sfp_records(SFP_H, first), sfp_records(SFP_H, second)])
    assert np.array_equal(stored_records(client), want)
    assert window_charges(client) == 2


def _bad_bodies() -> dict[str, tuple[bytes, dict[str, str], str]]:
    rep = reports_of(4, 3)
    good = encode_batch(SFP_H, rep)
    width = 3 * 8  # three int64: position, fragment report, word report
    position = bytearray(good)
    struct.pack_into("<q", position, 48 + width, 2)  # P = 2
    fragment = bytearray(good)
    struct.pack_into("<q", fragment, 48 + 2 * width + 8, 2 * 16 * 256)  # past 2 k m
    other = SFP(epsilon=6.0, max_length=4, alphabet="hiyokz", puzzle_bits=4, k=16, m=256, salt=1)
    as_json = json.loads(encode_json_batch(SFP_H, rep))
    as_json["reports"][1] = as_json["reports"][1][:-1]
    return {
        "truncated": (good[:-1], {}, "(truncated)"),
        "trailing": (good + b"\0", {}, "(bytes after the last report)"),
        "position out of range": (bytes(position), {}, "must be in 0..1, got 2"),
        "fragment report out of range": (
            bytes(fragment),
            {},
            "0..8191, got one outside at index 2",
        ),
        "other parameters": (encode_batch(other, reports_of(1, 4, other)), {}, "other parameters"),
        "json of uneven records": (json.dumps(as_json).encode(), JSON_TYPE, "one length"),
    }


@pytest.mark.parametrize("case", list(_bad_bodies()))
def test_a_bad_sfp_batch_is_one_clear_422_with_nothing_stored_or_charged(
    client: TestClient, case: str
) -> None:
    token = new_stream(client)
    body, headers, words = _bad_bodies()[case]
    r = post(client, token, body, **headers)
    assert r.status_code == 422, r.text
    assert words in r.json()["error"] and "Nothing was charged or stored" in r.json()["error"]
    assert stream_files(stream_root(client), "words") == [] and window_charges(client) == 0
    assert post(client, token, encode_batch(SFP_H, reports_of(1, 5))).status_code == 201


def test_an_sfp_device_is_refused_at_its_window_boundary(client: TestClient) -> None:
    token = new_stream(client, cap=3 * 6.0)  # three reports of eps/2 + eps/2
    assert post(client, token, encode_batch(SFP_H, reports_of(2, 6))).status_code == 201
    assert post(client, token, encode_batch(SFP_H, reports_of(1, 7))).status_code == 201
    r = post(client, token, encode_batch(SFP_H, reports_of(1, 8)))
    assert r.status_code == 429 and "Nothing was stored" in r.json()["error"], r.text
    assert window_charges(client) == 2
    assert len(stream_files(stream_root(client), "words")) == 2


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"candidates": ["hi"]}, "for a stream of strings only"),
        ({"oracle": {**sfp_spec(SFP_H), "positions": 3}}, "spec field `positions`"),
        ({"oracle": {**sfp_spec(SFP_H), "word_epsilon": 4.0}}, "spec field `word_epsilon`"),
        ({"window": {"kind": "day", "epsilon": 5.0}}, "no report could ever be admitted"),
        (
            {"answers": {"top_k": 3}},
            "unknown field `top_k` (an SFP stream's fields: alpha, max_candidates)",
        ),
    ],
)
def test_a_bad_sfp_spec_is_refused_naming_its_field(
    client: TestClient, change: dict[str, Any], words: str
) -> None:
    r = client.put("/api/streams/words", json=spec_body(**change), headers=admin_headers())
    assert r.status_code == 422 and words in r.json()["error"], r.text


def test_the_stream_page_lists_each_days_sfp_strings_from_its_reports(
    client: TestClient,
) -> None:
    token = new_stream(client)
    days = {}
    for day, seed in ((27, 11), (28, 12)):
        client.app.state.streams.clock.now = NOW.replace(day=day)  # type: ignore[attr-defined]
        days[day] = reports_of(4000, seed)
        for part in np.array_split(np.arange(4000), 3):  # several batches, one day
            body = encode_batch(SFP_H, days[day][part])
            assert post(client, token, body).status_code == 201
    got = client.get("/api/streams/words/estimates?start=2026-11-27&end=2026-11-28&level=0.9",
                     headers=admin_headers()).json()  # fmt: skip
    assert [d["day"] for d in got["days"]] == ["2026-11-27", "2026-11-28"]
    for d, day in zip(got["days"], (27, 28), strict=True):
        # that day's reports alone, estimated by the library (alpha 0.01, the default)
        want = SFP_H.estimate(days[day], level=0.9).to_dict()
        assert d["estimate"] == json.loads(json.dumps(want))
        assert d["estimate"]["n"] == 4000
        found = [h["string"] for h in d["estimate"]["heavy_hitters"]]
        assert found[:2] == WORDS[:2]
    page = client.get("/dashboard/streams/words?start=2026-11-27&end=2026-11-28",
                      headers=admin_headers())  # fmt: skip
    assert page.status_code == 200, page.text
    assert "Sequence Fragment Puzzle reports are estimated on their own" in page.text
    assert "threshold (rule)" in page.text and "2026-11-28 (n = 4000)" in page.text
    assert '<th scope="row">hi</th>' in page.text and "(whole-string sketch)" in page.text


def test_a_day_too_small_to_find_anything_is_listed_without_strings(client: TestClient) -> None:
    token = new_stream(client)
    assert post(client, token, encode_batch(SFP_H, reports_of(3, 14))).status_code == 201
    r = client.get("/api/streams/words/estimates", headers=admin_headers())
    assert r.status_code == 200, r.text
    est = r.json()["days"][0]["estimate"]
    assert est["n"] == 3 and est["heavy_hitters"] == [] and est["candidates"] == 0
    page = client.get("/dashboard/streams/words", headers=admin_headers())
    assert page.status_code == 200 and "(n = 3)" in page.text, page.text
