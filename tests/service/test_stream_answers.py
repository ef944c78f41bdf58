"""A stream's answer settings (the spec's ``answers``: analysis/_stream_answers.py) and the
pooled estimate of the page's days, on SQLite and PostgreSQL (the ``store`` fixture): a
heavy-hitter stream's ``top_k`` and ``alpha``, a range or Square Wave stream's quantiles and
ranges, each checked at creation (a bad value one 422 naming the field, the allowed values
and what was given, nothing stored), served, shown on the page and never changed under a
stored spec (409, the stored spec kept); each day and the pooled days answered as the
library estimates exactly those reports at those settings."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _apihelp import admin_headers
from _streamhelp import NOW, open_stream, post_batch, stream_client
from fastapi.testclient import TestClient
from test_streams_heavy import PROTOCOLS, records_of
from test_streams_heavy import spec_body as heavy_body
from test_streams_range import MECHANISMS, _merged, reports_of
from test_streams_range import spec_body as range_body

from deniable.distributed import encode_batch
from deniable.exceptions import DataError
from deniable.oracles import OUE, heavy_from_records, heavy_spec, oracle_spec
from deniable.service.analysis.streams import load_streams_file, stream_spec_from
from deniable.service.storage import ServiceStore

PEM = PROTOCOLS["pem"]
HH, SW = MECHANISMS["hh-oue"], MECHANISMS["sw"]  # 16 values; numbers in [0, 10]
RANGE = "/api/streams/load/estimates?start=2026-11-27&end=2026-11-28&level=0.9"
HEAVY = "/api/streams/found/estimates?start=2026-11-27&end=2026-11-28&level=0.9"


@pytest.fixture
def client(store: ServiceStore, tmp_path: Path) -> Iterator[TestClient]:
    yield stream_client(store, tmp_path, max_body_bytes=1 << 22)


def on_day(client: TestClient, day: int) -> None:
    client.app.state.streams.clock.now = NOW.replace(day=day)  # type: ignore[attr-defined]


def put(client: TestClient, sid: str, body: dict[str, Any]) -> Any:
    return client.put(f"/api/streams/{sid}", json=body, headers=admin_headers())


def heavy_days(client: TestClient, answers: dict[str, Any] | None) -> dict[int, Any]:
    """A PEM stream (with ``answers`` if given) and 6000 records on each of two days."""
    extra = {} if answers is None else {"answers": answers}
    token = open_stream(client, "found", heavy_body(PEM, **extra))
    days = {}
    for day, seed in ((27, 11), (28, 12)):
        on_day(client, day)
        days[day] = records_of(PEM, 6000, seed)
        assert post_batch(client, "found", token, encode_batch(PEM, days[day])).status_code == 201
    return days


def library(protocol: Any, records: Any) -> Any:
    """The library's in-process estimate of ``records`` at level 0.9, as JSON carries it."""
    want = protocol.estimate(heavy_from_records(protocol, records), level=0.9).to_dict()
    return json.loads(json.dumps(want))


def test_a_heavy_streams_top_k_and_alpha_decide_each_day_and_the_pooled_days(
    client: TestClient,
) -> None:
    days = heavy_days(client, {"top_k": 1, "alpha": 0.01})
    served = client.get("/streams/found").json()
    # answer side only: the device's spec and a report's cost are those of the protocol
    assert served["answers"] == {"top_k": 1, "alpha": 0.01}
    assert served["oracle"] == heavy_spec(PEM)
    got = client.get(HEAVY, headers=admin_headers()).json()
    assert got["answers"] == {"top_k": 1, "alpha": 0.01}
    chosen = dataclasses.replace(PEM, top_k=1, alpha=0.01)
    for d, day in zip(got["days"], (27, 28), strict=True):
        assert d["estimate"] == library(chosen, days[day])
        assert [h["string"] for h in d["estimate"]["heavy_hitters"]] == ["hi"]
        assert len(library(PEM, days[day])["heavy_hitters"]) > 1  # the defaults list more
    pooled = got["pooled"]
    assert (pooled["start"], pooled["end"], pooled["days"]) == ("2026-11-27", "2026-11-28", 2)
    assert pooled["estimate"] == library(chosen, np.concatenate([days[27], days[28]]))
    assert pooled["estimate"]["n"] == 12000
    page = client.get("/dashboard/streams/found?start=2026-11-27&end=2026-11-28",
                      headers=admin_headers()).text  # fmt: skip
    assert "Answer settings: top_k 1, alpha 0.01;" in page
    assert "days 2026-11-27 to 2026-11-28 pooled (2 days, n = 12000)" in page
    assert "pooling is sound when the devices' values are stationary" in page
    assert page.index("All days pooled") < page.index("2026-11-27 (n = 6000)")


def test_a_stream_without_answers_reads_as_the_defaults(client: TestClient) -> None:
    days = heavy_days(client, None)
    assert "answers" not in client.get("/streams/found").json()  # its stored text kept
    got = client.get(HEAVY, headers=admin_headers()).json()
    assert got["answers"] == {"top_k": 16, "alpha": 0.05}
    assert got["days"][0]["estimate"] == library(PEM, days[27])
    assert got["pooled"]["estimate"] == library(PEM, np.concatenate([days[27], days[28]]))
    page = client.get("/dashboard/streams/found?start=2026-11-27&end=2026-11-28",
                      headers=admin_headers()).text  # fmt: skip
    assert "Answer settings: top_k 16 (default), alpha 0.05 (default);" in page
    one = client.get(HEAVY.replace("2026-11-27", "2026-11-28"), headers=admin_headers()).json()
    assert one["pooled"]["days"] == 1 and one["pooled"]["estimate"] == one["days"][0]["estimate"]
    page = client.get("/dashboard/streams/found?start=2026-11-28&end=2026-11-28",
                      headers=admin_headers()).text  # fmt: skip
    assert "All days pooled" not in page  # one day: its table is the pool


def test_alpha_null_is_the_top_k_rule_alone(client: TestClient) -> None:
    days = heavy_days(client, {"alpha": None, "top_k": 3})
    got = client.get(HEAVY, headers=admin_headers()).json()
    chosen = dataclasses.replace(PEM, top_k=3, alpha=None)
    assert got["days"][1]["estimate"] == library(chosen, days[28])
    assert got["days"][1]["estimate"]["rounds"][-1]["kept"] == 3


def test_a_pool_with_a_group_empty_is_listed_undecided(client: TestClient) -> None:
    tree = PROTOCOLS["treehist"]  # 8 groups
    token = open_stream(client, "found", heavy_body(tree, answers={"top_k": 2}))
    for day, seed in ((27, 13), (28, 14)):
        on_day(client, day)
        rec = records_of(tree, 200, seed)
        rec = rec[rec[:, 0] != 5]  # no report of group 5, either day
        assert post_batch(client, "found", token, encode_batch(tree, rec)).status_code == 201
    got = client.get(HEAVY, headers=admin_headers()).json()
    pooled = got["pooled"]["estimate"]
    assert pooled["heavy_hitters"] == [] and pooled["n"] == sum(
        d["estimate"]["n"] for d in got["days"]
    )
    assert (
        "a report in each of the 8 groups; group 5 has no report on these days."
        in pooled["undecided"]
    )
    assert "too few" not in pooled["undecided"]  # the days are not small: group 5 is empty
    page = client.get("/dashboard/streams/found?start=2026-11-27&end=2026-11-28",
                      headers=admin_headers()).text  # fmt: skip
    assert "group 5 has no report on these days" in page
    assert "group 5 has no report on this day" in page


def test_a_day_with_a_group_empty_names_the_group(client: TestClient) -> None:
    tree = PROTOCOLS["treehist"]  # 8 groups
    token = open_stream(client, "found", heavy_body(tree, answers={"top_k": 2}))
    for day, seed in ((27, 13), (28, 14)):
        on_day(client, day)
        rec = records_of(tree, 200, seed)
        if day == 27:
            rec = rec[rec[:, 0] != 3]  # no report of group 3 on the 27th only
        assert post_batch(client, "found", token, encode_batch(tree, rec)).status_code == 201
    got = client.get(HEAVY, headers=admin_headers()).json()
    first, second = (d["estimate"] for d in got["days"])
    assert first["undecided"].endswith(
        "The rounds need a report in each of the 8 groups; group 3 has no report on this day."
    )
    assert "undecided" not in second and "undecided" not in got["pooled"]["estimate"]


def _bad() -> dict[str, tuple[dict[str, Any], str]]:
    hh, sw, pem = range_body(HH), range_body(SW), heavy_body(PEM)
    oue = {**pem, "oracle": oracle_spec(OUE.from_epsilon(1.0, k=4)), "answers": {"top_k": 3}}
    return {
        "top_k 0": ({**pem, "answers": {"top_k": 0}},
                    "field `answers.top_k` must be an integer in [1, 4096], got 0"),
        "top_k 4097": ({**pem, "answers": {"top_k": 4097}}, "in [1, 4096], got 4097"),
        "top_k true": ({**pem, "answers": {"top_k": True}}, "in [1, 4096], got True"),
        "top_k 2.0": ({**pem, "answers": {"top_k": 2.0}}, "in [1, 4096], got 2.0"),
        "alpha 1": ({**pem, "answers": {"alpha": 1}},
                    "field `answers.alpha` must be in (0, 1), or null for the top-k rule alone, "
                    "got 1"),
        "alpha 0": ({**pem, "answers": {"alpha": 0.0}}, "`answers.alpha` must be in (0, 1)"),
        "alpha text": ({**pem, "answers": {"alpha": "0.1"}}, "got '0.1'"),
        "a range field on heavy": ({**pem, "answers": {"quantiles": [0.5]}},
                                   "unknown field `quantiles` (a heavy stream's fields: "
                                   "alpha, top_k)"),
        "not a mapping": ({**pem, "answers": [1]}, "must be a mapping of alpha, top_k, got list"),
        "null": ({**pem, "answers": None}, "must be a mapping of alpha, top_k, got NoneType"),
        "another oracle": (oue, "field `answers` are for heavy-hitter (PEM, TreeHist, SFP, "
                           "RAPPOR n-gram), range "
                           "(HierarchicalHistogram, HaarHRR) and Square Wave streams only, got "
                           "them for a stream of oue"),
        "quantile 1": ({**hh, "answers": {"quantiles": [0.5, 1.0]}},
                       "field `answers.quantiles` must be a list of at most 32 distinct numbers "
                       "in (0, 1), got 1.0 at index 1"),
        "quantile twice": ({**hh, "answers": {"quantiles": [0.5, 0.5]}}, "got 0.5 at index 1"),
        "33 quantiles": ({**hh, "answers": {"quantiles": [0.01 * i for i in range(1, 34)]}},
                         "at most 32 distinct"),
        "range past the domain": ({**hh, "answers": {"ranges": [[0, 16]]}},
                                  "field `answers.ranges` must be a list of at most 32 pairs "
                                  "[a, b] of integers with 0 <= a <= b <= 15 (the stream's "
                                  "domain), got [0, 16] at index 0"),
        "range reversed": ({**hh, "answers": {"ranges": [[1, 1], [3, 2]]}},
                           "got [3, 2] at index 1"),
        "range of reals": ({**hh, "answers": {"ranges": [[0.5, 2]]}}, "got [0.5, 2] at index 0"),
        "range of three": ({**hh, "answers": {"ranges": [[0, 1, 2]]}}, "got [0, 1, 2] at index 0"),
        "wave range empty": ({**sw, "answers": {"ranges": [[2.0, 2.0]]}},
                             "pairs [a, b] of numbers with 0 <= a < b <= 10 (the stream's "
                             "bounds), got [2.0, 2.0] at index 0"),
        "wave range out": ({**sw, "answers": {"ranges": [[-1, 2]]}}, "got [-1, 2] at index 0"),
        "heavy field on a wave": ({**sw, "answers": {"top_k": 3}},
                                  "unknown field `top_k` (a square-wave stream's fields: "
                                  "quantiles, ranges)"),
    }  # fmt: skip


@pytest.mark.parametrize("case", list(_bad()))
def test_bad_answers_are_refused_naming_the_field_with_nothing_stored(
    client: TestClient, case: str
) -> None:
    body, words = _bad()[case]
    r = put(client, str(body["id"]), body)
    assert r.status_code == 422 and words in r.json()["error"], r.text
    assert client.get("/api/streams", headers=admin_headers()).json() == {"streams": []}
    assert client.get(f"/streams/{body['id']}").status_code == 404


def test_answers_never_change_under_a_stored_spec(client: TestClient) -> None:
    """The settings are answer side only, yet part of the stored spec: another ``answers``
    (or none where some were declared) is a 409 naming both settings, the stored spec and
    the reports kept, so a page's answers always mean the settings it shows."""
    heavy_days(client, {"top_k": 8})
    same = put(client, "found", heavy_body(PEM, answers={"top_k": 8}))
    assert same.status_code == 200, same.text
    for other, given in (({"top_k": 4}, "given top_k 4, alpha 0.05 (default)"),
                         (None, "given top_k 16 (default), alpha 0.05 (default)")):  # fmt: skip
        body = heavy_body(PEM) if other is None else heavy_body(PEM, answers=other)
        r = put(client, "found", body)
        assert r.status_code == 409, r.text
        error = r.json()["error"]
        assert f"answers top_k 8, alpha 0.05 (default) ({given})" in error
        assert "a stream's spec cannot change under its data" in error
    assert client.get("/streams/found").json()["answers"] == {"top_k": 8}
    got = client.get(HEAVY, headers=admin_headers()).json()
    assert got["answers"] == {"top_k": 8, "alpha": 0.05} and got["pooled"]["estimate"]["n"] == 12000


def range_days(client: TestClient, m: Any, answers: dict[str, Any]) -> list[Any]:
    """A stream of ``m`` with ``answers`` and 3 x 500 reports on each of two days: the
    parts, in the order stored."""
    token = open_stream(client, "load", range_body(m, answers=answers))
    parts = []
    for day in (27, 28):
        on_day(client, day)
        for i in range(3):
            parts.append(reports_of(m, 500, 100 * day + i))
            assert post_batch(client, "load", token, encode_batch(m, parts[-1])).status_code == 201
    return parts


def test_a_range_streams_quantiles_and_ranges_answer_each_day_and_the_pool(
    client: TestClient,
) -> None:
    answers = {"quantiles": [0.1, 0.9], "ranges": [[0, 7], [2, 2], [0, 15]]}
    parts = range_days(client, HH, answers)
    got = client.get(RANGE, headers=admin_headers()).json()
    assert got["answers"] == answers and client.get("/streams/load").json()["answers"] == answers
    for est, reports, n in ((got["days"][1]["estimate"], _merged(HH, parts[3:]), 1500),
                            (got["pooled"]["estimate"], _merged(HH, parts), 3000)):  # fmt: skip
        lib = HH.estimate(HH.tally(reports))
        names = ["0.1-quantile", "0.9-quantile", "share of [0, 7]", "share of [2, 2]",
                 "share of [0, 15]"]  # fmt: skip
        assert [a["answer"] for a in est["answers"]] == names and est["n"] == n
        for q, a in zip((0.1, 0.9), est["answers"], strict=False):
            assert a["value"] == lib.quantile(q, 0.9).value
        for (lo, hi), a in zip(answers["ranges"], est["answers"][2:], strict=True):
            share = lib.range(lo, hi)
            assert a["value"] == pytest.approx(share.value, abs=1e-12)
            assert a["ci"] == pytest.approx(list(share.ci(0.9)), abs=1e-12)
        assert est["answers"][4]["value"] == pytest.approx(1.0, abs=1e-9)  # consistent
    page = client.get("/dashboard/streams/load?start=2026-11-27&end=2026-11-28",
                      headers=admin_headers()).text  # fmt: skip
    assert "Answer settings: quantiles 0.1, 0.9, ranges [0, 7], [2, 2], [0, 15];" in page
    assert "share of [12, 15]" not in page  # the quarters are the defaults only
    assert "pooled (2 days, n = 3000)" in page


def test_a_square_wave_streams_ranges_are_shares_of_its_ems_fit(client: TestClient) -> None:
    answers = {"quantiles": [0.5], "ranges": [[0, 4.5], [2.5, 10]]}
    parts = range_days(client, SW, answers)
    got = client.get(RANGE, headers=admin_headers()).json()
    est = got["pooled"]["estimate"]
    lib = SW.estimate(SW.tally(np.concatenate(parts)))
    by = {a["answer"]: a for a in est["answers"]}
    assert by["0.5-quantile (EMS)"]["value"] == pytest.approx(float(lib.quantile_value([0.5])[0]))
    for lo, hi in answers["ranges"]:
        share = by[f"share of [{lo:g}, {hi:g}] (EMS)"]
        low, high = lib.cdf([lo, hi])
        assert share["value"] == pytest.approx(float(high - low)) and share["ci"] is None
    assert "0.25-quantile (EMS)" not in by  # the quartiles are the defaults only
    page = client.get("/dashboard/streams/load?start=2026-11-27&end=2026-11-28",
                      headers=admin_headers()).text  # fmt: skip
    assert "Answer settings: quantiles 0.5, ranges [0, 4.5], [2.5, 10];" in page


def test_answers_in_a_streams_file_round_trip_and_a_bad_one_names_its_place(
    tmp_path: Path,
) -> None:
    """A streams file (the service's ``--streams``) carries ``answers`` like a request
    body: read, written back by ``to_dict`` with the declared fields only, read again to
    the same spec; a bad value names the file, the spec's index and the field."""
    good = [heavy_body(PEM, answers={"alpha": None}), {**range_body(HH), "id": "hh"}]
    path = tmp_path / "streams.json"
    path.write_text(json.dumps({"streams": good}), encoding="utf-8")
    heavy, ranges = load_streams_file(path)
    assert heavy.to_dict()["answers"] == {"alpha": None} and "answers" not in ranges.to_dict()
    assert stream_spec_from(heavy.to_dict()) == heavy
    assert heavy.settings is not None and heavy.settings.effective() == {"top_k": 16, "alpha": None}
    assert ranges.settings is not None
    assert ranges.settings.effective()["ranges"] == [[0, 3], [4, 7], [8, 11], [12, 15]]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"streams": [good[1], {**good[0], "answers": {"top_k": -1}}]}),
                   encoding="utf-8")  # fmt: skip
    with pytest.raises(DataError, match=r"`streams\[1\]`: field `answers.top_k` must be an "
                       r"integer in \[1, 4096\], got -1\."):  # fmt: skip
        load_streams_file(bad)
