"""RAPPOR n-gram discovery as a telemetry stream's oracle (routes/streams.py,
analysis/streams.py), on SQLite and PostgreSQL (the ``store`` fixture): a spec carrying the
n-gram spec, devices posting their reports (binary and JSON), each report charged
``oracles.report_epsilon`` (``2 pairs eps_1(ngram) + eps_1(full)``, every PRR fresh) in the
device's window and refused at its boundary, a malformed or truncated batch one clear 422
with nothing stored or charged, a bad spec refused naming its field, and each day's strings
(and the days pooled) the library's own ``discover`` of that day's reports, at the stream's
answer settings ``alpha``, ``edge_threshold`` and ``max_candidates``
(test_stream_candidates.py)."""

from __future__ import annotations

import json
import math
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
    NgramReports,
    Rappor,
    RapporNgram,
    ngram_records,
    rappor_ngram_device_reports,
    rappor_ngram_spec,
)
from deniable.service.storage import ServiceStore

# G = 3 positions, 2 pairs a report; a record: 4 pair bytes, 4 n-gram reports of 2 + 2
# bytes (cohort, m = 16 bits), the full report 2 + 1 bytes (m = 8)
NG = RapporNgram(Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.5, q=0.75),
                 Rappor(m=8, h=1, cohorts=2, f=0.5, p=0.25, q=0.75),
                 alphabet="abc", gram=2, length=6, pairs=2)  # fmt: skip
SIZE = 4 + 4 * (2 + 2) + (2 + 1)
JSON_TYPE = {"Content-Type": "application/json"}
WORDS = ["ab", "cab", "abcabc", "c"]


def _eps_1(f: float, p: float, q: float, h: int) -> float:
    """One fresh RAPPOR report's epsilon (Erlingsson, Pihur & Korolova 2014, Thm. 2)."""
    ps, qs = f / 2 * (p + q) + (1 - f) * p, f / 2 * (p + q) + (1 - f) * q
    return h * math.log(qs * (1 - ps) / (ps * (1 - qs)))


#: 2 pairs eps_1(ngram) + eps_1(full), from the parameters above
CHARGE = 4 * _eps_1(0.5, 0.5, 0.75, 2) + _eps_1(0.5, 0.25, 0.75, 1)


# found at n = 2100 (as tests/test_distributed_strings.py): G = 3, two pairs a report
FINDS = RapporNgram(Rappor(m=32, h=2, cohorts=8, f=0.25, p=0.25, q=0.75),
                    Rappor(m=64, h=2, cohorts=4, f=0.25, p=0.25, q=0.75),
                    alphabet="abc", gram=1, length=3, pairs=2)  # fmt: skip
DAY = ["ab"] * 900 + ["cab"] * 600 + ["c", "ba", "bbb", "acc"] * 150


def spec_body(cap: float = 1e6, protocol: RapporNgram = NG, **extra: Any) -> dict[str, Any]:
    return {
        "id": "words",
        "oracle": rappor_ngram_spec(protocol),
        "period": "day",
        "window": {"kind": "day", "epsilon": cap},
        **extra,
    }


def reports_of(n: int, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    values = rng.choice(np.asarray(WORDS), size=n, p=[0.5, 0.3, 0.1, 0.1])
    return rappor_ngram_device_reports(NG, [str(v) for v in values], rng=rng)


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


def test_devices_post_ngram_reports_charged_every_reports_epsilon(client: TestClient) -> None:
    token = new_stream(client)
    served = client.get("/streams/words").json()
    assert served["oracle"] == rappor_ngram_spec(NG) and "candidates" not in served
    assert served["report_epsilon"] == pytest.approx(CHARGE, rel=1e-12)
    first, second = reports_of(40, 1), reports_of(25, 2)
    r = post(client, token, encode_batch(NG, first))
    assert r.status_code == 201, r.text
    assert r.json()["reports"] == 40 and r.json()["epsilon"] >= 40 * CHARGE * (1 - 1e-12)
    r = post(client, token, encode_json_batch(NG, second).encode(), **JSON_TYPE)
    assert r.status_code == 201, r.text
    want = np.concatenate([ngram_records(NG, first), ngram_records(NG, second)])
    assert stored_records(client).shape == (65, SIZE)
    assert np.array_equal(stored_records(client), want)
    assert window_charges(client) == 2


def _bad_bodies() -> dict[str, tuple[bytes, dict[str, str], str]]:
    rep = reports_of(4, 3)
    good = encode_batch(NG, rep)
    assert len(good) == 48 + 4 * SIZE
    pair = bytearray(good)
    pair[48 + SIZE + 1] = 3  # report 1's first pair (j1, 3): G = 3
    order = bytearray(good)
    order[48:50] = bytes([1, 1])  # report 0's first pair (1, 1): not j1 < j2
    cohort = bytearray(good)
    struct.pack_into("<H", cohort, 48 + 4, 4)  # an n-gram report's cohort: 4 cohorts
    full = bytearray(good)
    struct.pack_into("<H", full, 48 + SIZE - 3, 2)  # the full report's cohort: 2 cohorts
    other = RapporNgram(NG.ngram, NG.full, alphabet="abc", gram=2, length=6, pairs=1)
    other_body = encode_batch(other, rappor_ngram_device_reports(other, ["ab"], rng=4))
    as_json = json.loads(encode_json_batch(NG, rep))
    as_json["reports"][1] = as_json["reports"][1][:-1]  # one record a byte short
    return {
        "truncated": (good[:-1], {}, "(truncated)"),
        "trailing": (good + b"\0", {}, "(bytes after the last report)"),
        "pair out of range": (bytes(pair), {}, "pairs j1 < j2 in 0..2"),
        "pair out of order": (bytes(order), {}, "pairs j1 < j2 in 0..2"),
        "n-gram cohort out of range": (bytes(cohort), {}, "cohorts"),
        "full cohort out of range": (bytes(full), {}, "cohorts"),
        "other parameters": (other_body, {}, "another oracle"),
        "json of a short record": (json.dumps(as_json).encode(), JSON_TYPE, f"{SIZE} bytes"),
    }


@pytest.mark.parametrize("case", list(_bad_bodies()))
def test_a_bad_ngram_batch_is_one_clear_422_with_nothing_stored_or_charged(
    client: TestClient, case: str
) -> None:
    token = new_stream(client)
    body, headers, words = _bad_bodies()[case]
    r = post(client, token, body, **headers)
    assert r.status_code == 422, r.text
    assert words in r.json()["error"] and "Nothing was charged or stored" in r.json()["error"]
    assert stream_files(stream_root(client), "words") == [] and window_charges(client) == 0
    assert post(client, token, encode_batch(NG, reports_of(1, 5))).status_code == 201


def test_an_ngram_device_is_refused_at_its_window_boundary(client: TestClient) -> None:
    token = new_stream(client, cap=3 * CHARGE * (1 + 1e-9))  # three reports
    assert post(client, token, encode_batch(NG, reports_of(2, 6))).status_code == 201
    assert post(client, token, encode_batch(NG, reports_of(1, 7))).status_code == 201
    r = post(client, token, encode_batch(NG, reports_of(1, 8)))
    assert r.status_code == 429 and "Nothing was stored" in r.json()["error"], r.text
    assert window_charges(client) == 2
    assert len(stream_files(stream_root(client), "words")) == 2


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"candidates": ["ab"]}, "for a stream of strings only"),
        ({"oracle": {**rappor_ngram_spec(NG), "positions": 4}}, "`positions`"),
        ({"oracle": {**rappor_ngram_spec(NG), "epsilon": 1.0}}, "`epsilon`"),
        # a device keeping PRRs is no stream rule (its per-report charge is the IRR's)
        ({"oracle": {**rappor_ngram_spec(NG), "memoization": "keep"}}, "`memoization`"),
        ({"window": {"kind": "day", "epsilon": CHARGE / 2}}, "no report could ever be admitted"),
    ],
)
def test_a_bad_ngram_spec_is_refused_naming_its_field(
    client: TestClient, change: dict[str, Any], words: str
) -> None:
    r = client.put("/api/streams/words", json=spec_body(**change), headers=admin_headers())
    assert r.status_code == 422 and words in r.json()["error"], r.text


def _rows(reports: NgramReports, a: int, b: int, ng: RapporNgram = FINDS) -> NgramReports:
    """Devices ``a .. b - 1`` of ``reports``."""
    k = 2 * ng.pairs
    full = None if reports.full is None else reports.full[a:b]
    return NgramReports(reports.positions[a:b], reports.ngrams[a * k : b * k], full)


def _post_days(client: TestClient, token: str) -> tuple[dict[int, NgramReports], NgramReports]:
    """Two days of 2100 devices each, posted in three batches a day; each day's reports and
    both days' (one randomization, cut in two)."""
    both = FINDS.randomize(DAY * 2, rng=21)
    days = {27: _rows(both, 0, 2100), 28: _rows(both, 2100, 4200)}
    for day, reports in days.items():
        client.app.state.streams.clock.now = NOW.replace(day=day)  # type: ignore[attr-defined]
        for a, b in ((0, 700), (700, 1500), (1500, 2100)):  # several batches, one day
            r = post(client, token, encode_batch(FINDS, _rows(reports, a, b)))
            assert r.status_code == 201, r.text
    return days, both


def _json(x: Any) -> Any:
    return json.loads(json.dumps(x))


def test_the_stream_page_lists_each_days_strings_discovered_from_its_reports(
    client: TestClient,
) -> None:
    token = new_stream(client, protocol=FINDS)
    days, both = _post_days(client, token)
    got = client.get("/api/streams/words/estimates?start=2026-11-27&end=2026-11-28&level=0.9",
                     headers=admin_headers()).json()  # fmt: skip
    assert [d["day"] for d in got["days"]] == ["2026-11-27", "2026-11-28"]
    assert got["answers"] == {"alpha": 0.05, "edge_threshold": 0.02, "max_candidates": 10_000}
    for d, day in zip(got["days"], (27, 28), strict=True):
        # that day's reports alone, by the library's own discover (alpha 0.05, edges 0.02)
        assert d["estimate"] == _json(FINDS.discover(days[day]).to_dict(0.9))
        assert d["estimate"]["n"] == 2100
        assert {"ab", "cab"} <= {h["string"] for h in d["estimate"]["strings"]}
    pooled = got["pooled"]
    assert (pooled["start"], pooled["end"], pooled["days"]) == ("2026-11-27", "2026-11-28", 2)
    assert pooled["estimate"] == _json(FINDS.discover(both).to_dict(0.9))
    page = client.get("/dashboard/streams/words?start=2026-11-27&end=2026-11-28",
                      headers=admin_headers())  # fmt: skip
    assert page.status_code == 200, page.text
    assert "RAPPOR n-gram reports are decoded on their own" in page.text
    assert "2026-11-28 (n = 2100)" in page.text and '<th scope="row">ab</th>' in page.text
    assert "(full-string reports)" in page.text


def test_answer_settings_reach_discover_and_bad_ones_are_refused(client: TestClient) -> None:
    answers = {"alpha": 0.01, "edge_threshold": 0.05}
    token = new_stream(client, protocol=FINDS, answers=answers)
    assert client.get("/streams/words").json()["answers"] == answers
    days, _ = _post_days(client, token)
    got = client.get("/api/streams/words/estimates?start=2026-11-27&end=2026-11-27",
                     headers=admin_headers()).json()  # fmt: skip
    assert got["answers"] == {**answers, "max_candidates": 10_000}
    want = FINDS.discover(days[27], alpha=0.01, edge_threshold=0.05).to_dict(0.95)
    assert got["days"][0]["estimate"] == _json(want)
    assert got["days"][0]["estimate"]["edge_threshold"] == 0.05


@pytest.mark.parametrize(
    ("answers", "words"),
    [
        ({"top_k": 3}, "unknown field `top_k` (a RAPPOR n-gram stream's fields: alpha, "
         "edge_threshold, max_candidates)"),
        ({"alpha": None}, "`answers.alpha` must be in (0, 1) (RAPPOR n-gram discovery has no "
         "top-k rule), got None"),
        ({"edge_threshold": 1.0}, "`answers.edge_threshold` must be in (0, 1)"),
        ({"edge_threshold": True}, "`answers.edge_threshold` must be in (0, 1)"),
    ],
)  # fmt: skip
def test_bad_ngram_answers_are_refused_naming_the_field(
    client: TestClient, answers: dict[str, Any], words: str
) -> None:
    body = spec_body(protocol=FINDS, answers=answers)
    r = client.put("/api/streams/words", json=body, headers=admin_headers())
    assert r.status_code == 422 and words in r.json()["error"], r.text


def test_a_day_too_small_to_find_anything_is_listed_without_strings(client: TestClient) -> None:
    token = new_stream(client, protocol=FINDS)
    small = FINDS.randomize(["ab", "cab", "c"], rng=14)
    assert post(client, token, encode_batch(FINDS, small)).status_code == 201
    r = client.get("/api/streams/words/estimates", headers=admin_headers())
    assert r.status_code == 200, r.text
    est = r.json()["days"][0]["estimate"]
    assert est["n"] == 3 and est["strings"] == []
    page = client.get("/dashboard/streams/words", headers=admin_headers())
    assert page.status_code == 200 and "(n = 3)" in page.text, page.text
