"""The range mechanisms and Square Wave as a telemetry stream's oracle (analysis/streams.py,
analysis/_stream_range.py), on SQLite and PostgreSQL (the ``store`` fixture): a spec with a
range or Square Wave spec, devices posting their reports (binary and JSON), each report
charged ``oracles.report_epsilon`` in the device's window, a bad batch one clear 422 with
nothing stored or charged, a bad spec refused naming its field, and the stream page
answering each day from that day's reports alone, as the library estimates them."""

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

from deniable.distributed import decode_batch, encode_batch, encode_json_batch, stream_files
from deniable.oracles import (
    HaarHRR,
    HierarchicalHistogram,
    LevelReports,
    SquareWave,
    range_spec,
    report_epsilon,
    square_wave_spec,
)
from deniable.service.storage import ServiceStore

MECHANISMS = {
    "hh-oue": HierarchicalHistogram(16, 4, 2.0, oracle="oue"),  # levels of 4, 16 values
    "haar": HaarHRR(16, 1.0),
    "sw": SquareWave(1.0, lower=0.0, upper=10.0, bins=16, output_bins=16),
}
JSON_TYPE = {"Content-Type": "application/json"}


@pytest.fixture(params=sorted(MECHANISMS))
def mechanism(request: pytest.FixtureRequest) -> Any:
    return MECHANISMS[request.param]


def device_spec(m: Any) -> dict[str, Any]:
    return square_wave_spec(m) if isinstance(m, SquareWave) else range_spec(m)


def spec_body(m: Any, cap: float = 1e6, **extra: Any) -> dict[str, Any]:
    return {"id": "load", "oracle": device_spec(m), "period": "day",
            "window": {"kind": "day", "epsilon": cap}, **extra}  # fmt: skip


def reports_of(m: Any, n: int, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    if isinstance(m, SquareWave):
        return m.randomize(np.clip(rng.normal(4.0, 1.5, n), 0.0, 10.0), rng=rng)
    return m.randomize(rng.binomial(m.domain - 1, 0.3, n), rng=rng)


@pytest.fixture
def client(store: ServiceStore, tmp_path: Path) -> Iterator[TestClient]:
    yield stream_client(store, tmp_path, max_body_bytes=1 << 22)


def root(client: TestClient) -> Path:
    return stream_root(client)


def new_stream(client: TestClient, m: Any, **kw: Any) -> str:
    return open_stream(client, "load", spec_body(m, **kw))


def post(client: TestClient, token: str, body: bytes, **h: str) -> Any:
    return post_batch(client, "load", token, body, **h)


def charges(client: TestClient) -> int:
    return window_charges(client)


def test_devices_post_reports_charged_at_the_report_epsilon(
    client: TestClient, mechanism: Any
) -> None:
    token = new_stream(client, mechanism)
    served = client.get("/streams/load").json()
    assert served["oracle"] == device_spec(mechanism)
    # one report is one level oracle's report (the largest level epsilon), or one cell
    want = (
        mechanism.epsilon
        if isinstance(mechanism, SquareWave)
        else max(o.epsilon for o in mechanism.levels)
    )
    assert served["report_epsilon"] == want == report_epsilon(mechanism)
    first, second = reports_of(mechanism, 40, 1), reports_of(mechanism, 25, 2)
    r = post(client, token, encode_batch(mechanism, first))
    assert r.status_code == 201, r.text
    assert r.json()["reports"] == 40 and r.json()["epsilon"] >= 40 * want
    r = post(client, token, encode_json_batch(mechanism, second).encode(), **JSON_TYPE)
    assert r.status_code == 201, r.text
    assert charges(client) == 2 and len(stream_files(root(client), "load")) == 2


def _bad_bodies() -> dict[str, tuple[Any, bytes, dict[str, str], str]]:
    hh = MECHANISMS["hh-oue"]  # records of 2 level bytes + 2 bytes of bits
    rec = reports_of(hh, 16, 3)
    good = encode_batch(hh, rec)
    level0 = int(np.flatnonzero(rec.level == 0)[0])
    level = bytearray(good)
    struct.pack_into("<H", level, 48 + 4 * 2, 2)
    padding = bytearray(good)
    padding[48 + 4 * level0 + 3] = 1
    bit = bytearray(good)
    bit[48 + 4 * level0 + 2] = 0x10  # a bit past k = 4 at level 0
    sw = MECHANISMS["sw"]
    cells = bytearray(encode_batch(sw, reports_of(sw, 3, 4)))
    struct.pack_into("<H", cells, 48 + 2, sw.n_reports)
    as_json = json.loads(encode_json_batch(hh, rec))
    as_json["reports"][1] = as_json["reports"][1][:-1]
    other = HierarchicalHistogram(16, 2, 2.0, oracle="oue")
    return {
        "truncated": (hh, good[:-1], {}, "(truncated)"),
        "trailing": (hh, good + b"\0", {}, "(bytes after the last report)"),
        "level out of range": (hh, bytes(level), {}, "report 2: its level must be in 0..1"),
        "padding set": (hh, bytes(padding), {}, f"report {level0}: the items past"),
        "level oracle refuses": (hh, bytes(bit), {}, f"report {level0} (level 0) is refused"),
        "cell out of range": (sw, bytes(cells), {}, "`body`"),
        "json of the wrong width": (hh, json.dumps(as_json).encode(), JSON_TYPE, "report 1"),
        "other parameters": (hh, encode_batch(other, reports_of(other, 2, 5)), {}, "other"),
    }


@pytest.mark.parametrize("case", list(_bad_bodies()))
def test_a_bad_range_batch_is_one_clear_422_with_nothing_stored_or_charged(
    client: TestClient, case: str
) -> None:
    m, body, headers, words = _bad_bodies()[case]
    token = new_stream(client, m)
    r = post(client, token, body, **headers)
    assert r.status_code == 422, r.text
    assert words in r.json()["error"] and "Nothing was charged or stored" in r.json()["error"]
    assert stream_files(root(client), "load") == [] and charges(client) == 0
    assert post(client, token, encode_batch(m, reports_of(m, 1, 6))).status_code == 201


def test_a_range_device_is_refused_at_its_window_boundary(client: TestClient) -> None:
    haar = MECHANISMS["haar"]
    token = new_stream(client, haar, cap=3 * report_epsilon(haar))
    assert post(client, token, encode_batch(haar, reports_of(haar, 2, 7))).status_code == 201
    assert post(client, token, encode_batch(haar, reports_of(haar, 1, 8))).status_code == 201
    r = post(client, token, encode_batch(haar, reports_of(haar, 1, 9)))
    assert r.status_code == 429 and "Nothing was stored" in r.json()["error"], r.text
    assert charges(client) == 2


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"candidates": ["a"]}, "for a stream of strings only"),
        ({"oracle": {**range_spec(MECHANISMS["haar"]), "epsilon": 5.0}}, "spec field `epsilon`"),
        ({"oracle": {**range_spec(MECHANISMS["haar"]), "levels": []}}, "spec field `levels`"),
        ({"oracle": {**square_wave_spec(MECHANISMS["sw"]), "words_per_report": 3}},
         "spec field `words_per_report`"),
        ({"window": {"kind": "day", "epsilon": 0.5}}, "no report could ever be admitted"),
    ],
)  # fmt: skip
def test_a_bad_range_spec_is_refused_naming_its_field(
    client: TestClient, change: dict[str, Any], words: str
) -> None:
    r = client.put("/api/streams/load", json=spec_body(MECHANISMS["haar"], **change),
                   headers=admin_headers())  # fmt: skip
    assert r.status_code == 422 and words in r.json()["error"], r.text


def _merged(m: Any, parts: list[Any]) -> Any:
    if isinstance(m, SquareWave):
        return np.concatenate(parts)
    body = b"".join(encode_batch(m, p)[48:] for p in parts)  # the records, device order
    n = sum(len(p.level) for p in parts)
    head = encode_batch(m, parts[0])[:40] + struct.pack("<Q", n)
    out: LevelReports = decode_batch(m, head + body)
    return out


def test_the_stream_page_answers_each_day_from_its_reports(
    client: TestClient, mechanism: Any
) -> None:
    token = new_stream(client, mechanism)
    days = {}
    for day, seed in ((27, 11), (28, 12)):
        client.app.state.streams.clock.now = NOW.replace(day=day)  # type: ignore[attr-defined]
        parts = [reports_of(mechanism, 700, seed + 10 * i) for i in range(3)]
        for part in parts:  # several batches, one day
            assert post(client, token, encode_batch(mechanism, part)).status_code == 201
        days[day] = _merged(mechanism, parts)
    got = client.get("/api/streams/load/estimates?start=2026-11-27&end=2026-11-28&level=0.9",
                     headers=admin_headers()).json()  # fmt: skip
    assert [d["day"] for d in got["days"]] == ["2026-11-27", "2026-11-28"]
    for d, day in zip(got["days"], (27, 28), strict=True):
        est = d["estimate"]
        assert est["n"] == 2100 and est["level"] == 0.9
        # that day's reports alone, estimated by the library
        lib = mechanism.estimate(mechanism.tally(days[day]))
        answers = {a["answer"]: a for a in est["answers"]}
        if isinstance(mechanism, SquareWave):
            mean = lib.moment_mean
            assert answers["mean (moment, unbiased)"]["value"] == pytest.approx(mean.value)
            assert answers["mean (moment, unbiased)"]["ci"] == pytest.approx(list(mean.ci(0.9)))
            median = float(lib.quantile_value([0.5])[0])
            assert answers["0.5-quantile (EMS)"]["value"] == pytest.approx(median)
            assert answers["0.5-quantile (EMS)"]["ci"] is None  # no bootstrap on page load
        else:
            for q in (0.25, 0.5, 0.75):
                quant = lib.quantile(q, 0.9)
                assert answers[f"{q:g}-quantile"]["value"] == quant.value
                assert answers[f"{q:g}-quantile"]["ci"] == list(quant.interval)
            share = lib.range(4, 7)
            assert answers["share of [4, 7]"]["value"] == pytest.approx(share.value)
            assert answers["share of [4, 7]"]["ci"] == pytest.approx(list(share.ci(0.9)))
            # the four quarters' shares add to 1 (the estimate is consistent)
            total = sum(a["value"] for n, a in answers.items() if n.startswith("share"))
            assert total == pytest.approx(1.0, abs=1e-9)
    page = client.get("/dashboard/streams/load?start=2026-11-27&end=2026-11-28",
                      headers=admin_headers())  # fmt: skip
    assert page.status_code == 200, page.text
    assert "2026-11-28 (n = 2100)" in page.text
    if isinstance(mechanism, SquareWave):
        assert "mean (moment, unbiased)" in page.text and "parametric bootstrap" in page.text
    else:
        assert "0.5-quantile" in page.text and "share of [12, 15]" in page.text
        assert "inverts the CDF" in page.text


@pytest.mark.parametrize(
    "other",
    [
        HierarchicalHistogram(16, 4, 2.0, oracle="olh"),  # another level oracle
        HierarchicalHistogram(16, 4, 3.0, oracle="oue"),  # another epsilon
        HaarHRR(16, 1.0),  # another mechanism
    ],
)
def test_a_changed_range_spec_on_a_stored_stream_is_refused(client: TestClient, other: Any) -> None:
    """A stream's reports were drawn by its spec: a new spec under stored reports is a 409
    (the same spec again is accepted), so a device's charge and the page's estimate never
    read reports of one mechanism as another's."""
    hh = MECHANISMS["hh-oue"]
    token = new_stream(client, hh)
    assert post(client, token, encode_batch(hh, reports_of(hh, 5, 9))).status_code == 201
    same = client.put("/api/streams/load", json=spec_body(hh), headers=admin_headers())
    assert same.status_code == 200, same.text
    r = client.put("/api/streams/load", json=spec_body(other), headers=admin_headers())
    assert r.status_code == 409 and "its partitions hold reports of the oracle" in r.json()["error"]
    assert len(stream_files(root(client), "load")) == 1  # the stored reports kept
