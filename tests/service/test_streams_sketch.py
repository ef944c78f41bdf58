"""The count mean sketches (CMS, HCMS) as a telemetry stream's oracle (routes/streams.py,
analysis/streams.py), on SQLite and PostgreSQL (the ``store`` fixture): a spec with a
sketch spec and candidates, devices posting sketch reports (binary and JSON), each report
charged ``oracles.report_epsilon`` (the sketch's exact epsilon) in the device's window and
refused at its boundary, a bad batch one clear 4xx with nothing stored or charged, a
changed spec refused, and the stream page giving each day's frequencies of the candidates
from the sketch's own estimate."""

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

from deniable.distributed import aggregate_stream, encode_batch, encode_json_batch, stream_files
from deniable.oracles import CMS, HCMS, OUE, cms_spec, oracle_spec
from deniable.service.storage import ServiceStore

SKETCHES = {
    "cms": CMS(k=8, m=12, epsilon=3.0, salt=11),  # m = 12: 4 padding bits a report
    "hcms": HCMS(k=8, m=16, epsilon=2.0, salt=11),
}
CANDIDATES = ["apple", "pear", "fig", "mango"]
JSON_TYPE = {"Content-Type": "application/json"}


@pytest.fixture(params=sorted(SKETCHES))
def sketch(request: pytest.FixtureRequest) -> Any:
    return SKETCHES[request.param]


def spec_body(sketch: Any, cap: float = 5000.0, **extra: Any) -> dict[str, Any]:
    return {
        "id": "words",
        "oracle": cms_spec(sketch),
        "period": "day",
        "window": {"kind": "day", "epsilon": cap},
        "candidates": CANDIDATES,
        **extra,
    }


def reports_of(sketch: Any, n: int, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    values = rng.choice(np.asarray([*CANDIDATES[:3], "kiwi"]), size=n, p=[0.5, 0.3, 0.1, 0.1])
    return sketch.randomize([str(v) for v in values], rng=rng)


@pytest.fixture
def client(store: ServiceStore, tmp_path: Path) -> Iterator[TestClient]:
    yield stream_client(store, tmp_path, max_body_bytes=1 << 20)


def root(client: TestClient) -> Path:
    return stream_root(client)


def new_stream(client: TestClient, sketch: Any, **kw: Any) -> str:
    return open_stream(client, "words", spec_body(sketch, **kw))


def post(client: TestClient, token: str, body: bytes, **h: str) -> Any:
    return post_batch(client, "words", token, body, **h)


def charges(client: TestClient) -> int:
    return window_charges(client)


def test_devices_post_sketch_reports_charged_at_the_sketchs_epsilon(
    client: TestClient, sketch: Any
) -> None:
    token = new_stream(client, sketch)
    served = client.get("/streams/words").json()
    assert served["oracle"] == cms_spec(sketch) and served["candidates"] == CANDIDATES
    # every report drawn afresh from the string: its exact epsilon, the stated one
    assert served["report_epsilon"] == sketch.epsilon
    first, second = reports_of(sketch, 40, 1), reports_of(sketch, 25, 2)
    r = post(client, token, encode_batch(sketch, first))
    assert r.status_code == 201, r.text
    assert r.json()["reports"] == 40 and r.json()["epsilon"] >= 40 * sketch.epsilon
    r = post(client, token, encode_json_batch(sketch, second).encode(), **JSON_TYPE)
    assert r.status_code == 201, r.text
    tally = aggregate_stream(root(client), "words", scheduler="synchronous")
    assert tally == sketch.tally(first) + sketch.tally(second)
    assert charges(client) == 2


def _bad_bodies(name: str) -> dict[str, tuple[bytes, dict[str, str], str]]:
    sketch = SKETCHES[name]
    good = encode_batch(sketch, reports_of(sketch, 3, 3))
    other = type(sketch)(k=sketch.k, m=sketch.m, epsilon=sketch.epsilon, salt=12)
    out = {
        "truncated": (good[:-1], {}, "(truncated)"),
        "trailing": (good + b"\0", {}, "(bytes after the last report)"),
        "another salt": (encode_batch(other, reports_of(other, 1, 4)), {}, "other parameters"),
    }
    as_json = json.loads(encode_json_batch(sketch, reports_of(sketch, 2, 4)))
    if name == "cms":
        row = bytearray(good)
        row[48 + 4 : 48 + 6] = (8).to_bytes(2, "little")  # report 1's row: 8 of 0..7
        pad = bytearray(good)
        pad[48 + 4 * 2 + 3] |= 0x80  # report 2's bit 15: padding past m = 12
        as_json["reports"][1] = [1, 0]
        out |= {
            "row out of range": (bytes(row), {}, "report 1 has row 8"),
            "padding bit": (bytes(pad), {}, "report 2 sets a padding bit past m = 12"),
            "json of the wrong width": (json.dumps(as_json).encode(), JSON_TYPE, "lists of 3"),
        }
    else:
        value = bytearray(good)
        struct.pack_into("<q", value, 48 + 8, 2 * 8 * 16)  # report 1: 256, past 2 k m - 1
        as_json["reports"][1] = [1, 0]
        out |= {
            "report out of range": (bytes(value), {}, "255"),
            "json of the wrong shape": (json.dumps(as_json).encode(), JSON_TYPE, "whole numbers"),
        }
    return out


_CASES = [(n, case) for n in sorted(SKETCHES) for case in _bad_bodies(n)]


@pytest.mark.parametrize(("name", "case"), _CASES)
def test_a_bad_sketch_batch_is_one_clear_422_with_nothing_stored_or_charged(
    client: TestClient, name: str, case: str
) -> None:
    sketch = SKETCHES[name]
    token = new_stream(client, sketch)
    body, headers, words = _bad_bodies(name)[case]
    r = post(client, token, body, **headers)
    assert r.status_code == 422, r.text
    assert words in r.json()["error"] and "Nothing was charged or stored" in r.json()["error"]
    assert stream_files(root(client), "words") == [] and charges(client) == 0
    assert post(client, token, encode_batch(sketch, reports_of(sketch, 1, 5))).status_code == 201


def test_a_sketch_device_is_refused_at_its_window_boundary(client: TestClient, sketch: Any) -> None:
    token = new_stream(client, sketch, cap=3 * sketch.epsilon)
    assert post(client, token, encode_batch(sketch, reports_of(sketch, 2, 6))).status_code == 201
    assert post(client, token, encode_batch(sketch, reports_of(sketch, 1, 7))).status_code == 201
    r = post(client, token, encode_batch(sketch, reports_of(sketch, 1, 8)))
    assert r.status_code == 429 and "Nothing was stored" in r.json()["error"], r.text
    assert charges(client) == 2
    tally = aggregate_stream(root(client), "words", scheduler="synchronous")
    assert sketch.estimate(tally, ["apple"]).n == 3


def test_a_window_below_one_sketch_report_refuses_the_spec(client: TestClient) -> None:
    body = spec_body(SKETCHES["cms"], cap=2.5)  # a report costs 3
    r = client.put("/api/streams/words", json=body, headers=admin_headers())
    assert r.status_code == 422 and "no report could ever be admitted" in r.json()["error"]


def _flip_lowered() -> dict[str, Any]:
    """A sketch spec whose flip threshold is one step lower than its epsilon allows (a
    weaker privacy than stated, were it trusted)."""
    spec = cms_spec(CMS(k=4, m=8, epsilon=1.0))
    spec["constants"] = {**spec["constants"], "flip": spec["constants"]["flip"] - 1}
    return spec


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"candidates": ["a", "a"]}, "the candidate 'a' is given twice"),
        ({"candidates": ["a", 3]}, "non-empty strings, got 3"),
        ({"candidates": ["a", "x" * 33]}, "at most max_bytes = 32 bytes in UTF-8, got 33 bytes"),
        ({"candidates": ["a", "\ud800"]}, "must be valid Unicode"),
        (
            {"oracle": cms_spec(CMS(k=1, m=2, epsilon=1.0)), "candidates": ["a", "b", "c"]},
            "3 candidates are more than m**k = 2 strings",
        ),
        ({"oracle": {**cms_spec(CMS(k=4, m=8, epsilon=1.0)), "epsilon": 2.0}}, "`epsilon`"),
        (
            {"oracle": {**cms_spec(CMS(k=4, m=8, epsilon=1.0)), "salt": 1}},
            "field `oracle`: unknown spec field `salt`",
        ),
        ({"oracle": _flip_lowered()}, "field `oracle`: spec field `constants` does not match"),
        ({"oracle": oracle_spec(OUE.from_epsilon(1.0, k=4))}, "for a stream of strings only"),
    ],
)
def test_a_bad_sketch_spec_is_refused_naming_its_field(
    client: TestClient, change: dict[str, Any], words: str
) -> None:
    base = CMS(k=4, m=8, epsilon=1.0, max_bytes=32)
    text = json.dumps(spec_body(base, **change))  # ASCII: a lone surrogate as its escape
    r = client.put("/api/streams/words", content=text, headers=admin_headers())
    assert r.status_code == 422 and words in r.json()["error"], r.text
    assert "body: field `" in r.json()["error"]


def test_a_changed_sketch_spec_on_a_stored_stream_is_refused(
    client: TestClient, sketch: Any
) -> None:
    token = new_stream(client, sketch)
    assert post(client, token, encode_batch(sketch, reports_of(sketch, 5, 9))).status_code == 201
    same = client.put("/api/streams/words", json=spec_body(sketch), headers=admin_headers())
    assert same.status_code == 200, same.text
    other = type(sketch)(k=sketch.k, m=sketch.m, epsilon=sketch.epsilon, salt=99)
    for body, words in (
        (spec_body(other), "its partitions hold reports of the oracle"),
        (spec_body(sketch, candidates=["apple"]), "candidates (the strings each day"),
    ):
        r = client.put("/api/streams/words", json=body, headers=admin_headers())
        assert r.status_code == 409 and words in r.json()["error"], r.text
    assert client.get("/streams/words").json()["candidates"] == CANDIDATES


def test_the_stream_page_gives_each_days_frequencies_from_the_sketch(
    client: TestClient, sketch: Any
) -> None:
    token = new_stream(client, sketch)
    days = {}
    for day, seed in ((27, 11), (28, 12)):
        client.app.state.streams.clock.now = NOW.replace(day=day)  # type: ignore[attr-defined]
        days[day] = reports_of(sketch, 400, seed)
        assert post(client, token, encode_batch(sketch, days[day])).status_code == 201
    got = client.get("/api/streams/words/estimates?start=2026-11-27&end=2026-11-28&level=0.9",
                     headers=admin_headers()).json()  # fmt: skip
    assert [d["day"] for d in got["days"]] == ["2026-11-27", "2026-11-28"]
    z = 1.6448536269514722  # the normal 0.95 quantile: a 90% two-sided interval
    for d, day in zip(got["days"], (27, 28), strict=True):
        est = sketch.estimate(sketch.tally(days[day]), CANDIDATES)  # that day's reports only
        assert d["estimate"]["n"] == 400
        rows = d["estimate"]["candidates"]
        assert [c["candidate"] for c in rows] == CANDIDATES
        for i, row in enumerate(rows):
            assert row["frequency"] == pytest.approx(est.values[i], rel=1e-12)
            assert row["se"] == pytest.approx(est.se[i], rel=1e-12)
            low, high = row["ci"]  # value -/+ z se, clipped to [0, 1]
            assert low == pytest.approx(max(0.0, est.values[i] - z * est.se[i]), abs=1e-12)
            assert high == pytest.approx(min(1.0, est.values[i] + z * est.se[i]), abs=1e-12)
    page = client.get("/dashboard/streams/words?start=2026-11-27&end=2026-11-28",
                      headers=admin_headers())  # fmt: skip
    assert page.status_code == 200
    assert "count-mean-sketch reports answer the frequency" in page.text
    assert "SE (fixed devices)" in page.text and "2026-11-28 (n = 400)" in page.text
    assert all(f'<th scope="row">{c}</th>' in page.text for c in CANDIDATES)


def test_a_sketch_stream_without_candidates_is_estimated_by_the_cli_only(
    client: TestClient, sketch: Any, tmp_path: Path
) -> None:
    body = spec_body(sketch, cap=1e5)
    del body["candidates"]
    r = client.put("/api/streams/words", json=body, headers=admin_headers())
    assert r.status_code == 201 and "candidates" not in r.json()
    token = client.post("/api/streams/words/devices", headers=admin_headers()).json()
    reports = reports_of(sketch, 300, 13)
    r = post(client, token["devices"][0]["token"], encode_batch(sketch, reports))
    assert r.status_code == 201, r.text
    r = client.get("/api/streams/words/estimates", headers=admin_headers())
    assert r.status_code == 422 and "carries no `candidates`" in r.json()["error"]
    from typer.testing import CliRunner

    from deniable.cli import app

    cand = tmp_path / "cand.txt"
    cand.write_text("\n".join(CANDIDATES) + "\n")
    result = CliRunner().invoke(app, ["telemetry", "aggregate", "--stream-root", str(root(client)),
                                      "--stream", "words", "--candidates", str(cand),
                                      "--local-workers", "0", "--json"])  # fmt: skip
    assert result.exit_code == 0, (result.stdout, result.stderr)
    got = json.loads(result.stdout)
    expected = sketch.estimate(sketch.tally(reports), CANDIDATES)
    assert [c["frequency"] for c in got["candidates"]] == pytest.approx(expected.values.tolist())
