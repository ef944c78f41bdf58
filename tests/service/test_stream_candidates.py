"""The answer setting ``max_candidates`` of SFP and RAPPOR n-gram streams
(analysis/_stream_answers.py, analysis/_stream_heavy.py), on SQLite and PostgreSQL (the
``store`` fixture): checked at creation (a bad value one 422 naming the field and the
library's range, nothing stored), served, used for each day and the pooled days exactly as
the library uses it, shown on the page, never changed under a stored spec (409); an n-gram
day whose joined n-grams exceed it is listed undecided with its reason, not a 500."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import test_streams_ngram as ngram
import test_streams_sfp as sfp
from _apihelp import admin_headers
from _streamhelp import open_stream, post_batch, stream_client
from fastapi.testclient import TestClient

from deniable.distributed import encode_batch
from deniable.exceptions import ParameterError
from deniable.oracles import SFP
from deniable.service.analysis._stream_answers import AnswerSettings
from deniable.service.storage import ServiceStore

ESTIMATES = "/api/streams/words/estimates?start=2026-11-27&end=2026-11-28"
PAGE = "/dashboard/streams/words?start=2026-11-27&end=2026-11-28"


@pytest.fixture
def client(store: ServiceStore, tmp_path: Path) -> Iterator[TestClient]:
    yield stream_client(store, tmp_path, max_body_bytes=1 << 22)


def put(client: TestClient, body: dict[str, Any]) -> Any:
    return client.put("/api/streams/words", json=body, headers=admin_headers())


def _json(x: Any) -> Any:
    return json.loads(json.dumps(x))


#: One puzzle bit: "hi" and "zz" share a puzzle value, a product of 3 strings (4000 reports)
ONE_BIT = dataclasses.replace(sfp.SFP_H, puzzle_bits=1)


def test_an_sfp_streams_max_candidates_reaches_its_estimate(client: TestClient) -> None:
    answers = {"max_candidates": 1}
    token = open_stream(client, "words", sfp.spec_body(ONE_BIT, answers=answers))
    assert client.get("/streams/words").json()["answers"] == answers
    reports = sfp.reports_of(4000, 11, ONE_BIT)
    assert post_batch(client, "words", token, encode_batch(ONE_BIT, reports)).status_code == 201
    got = client.get(ESTIMATES, headers=admin_headers()).json()
    assert got["answers"] == {"alpha": 0.01, "max_candidates": 1}
    chosen = dataclasses.replace(ONE_BIT, max_candidates=1)
    want = _json(chosen.estimate(reports, level=0.95).to_dict())
    assert got["days"][0]["estimate"] == want
    default = ONE_BIT.estimate(reports, level=0.95)
    assert want["trimmed"] > 0 and len(want["heavy_hitters"]) < len(default.strings)
    page = client.get(PAGE, headers=admin_headers()).text
    assert "alpha 0.01 (default), max_candidates 1;" in page


def test_an_sfp_stream_without_answers_reads_as_the_protocols_defaults(
    client: TestClient,
) -> None:
    token = open_stream(client, "words", sfp.spec_body())
    body = encode_batch(sfp.SFP_H, sfp.reports_of(50, 3))
    assert post_batch(client, "words", token, body).status_code == 201
    got = client.get(ESTIMATES, headers=admin_headers()).json()
    assert got["answers"] == {"alpha": SFP.alpha, "max_candidates": SFP.max_candidates}
    assert got["answers"] == {"alpha": 0.01, "max_candidates": 1024}
    page = client.get(PAGE, headers=admin_headers()).text
    assert "alpha 0.01 (default), max_candidates 1024 (default);" in page


def test_an_ngram_streams_max_candidates_reaches_discover(client: TestClient) -> None:
    answers = {"max_candidates": 20}
    token = open_stream(client, "words", ngram.spec_body(protocol=ngram.FINDS, answers=answers))
    days, both = ngram._post_days(client, token)
    got = client.get(f"{ESTIMATES}&level=0.9", headers=admin_headers()).json()
    assert got["answers"] == {"alpha": 0.05, "edge_threshold": 0.02, "max_candidates": 20}
    for d, day in zip(got["days"], (27, 28), strict=True):
        want = ngram.FINDS.discover(days[day], max_candidates=20).to_dict(0.9)
        assert d["estimate"] == _json(want) and "undecided" not in d["estimate"]
    want = ngram.FINDS.discover(both, max_candidates=20).to_dict(0.9)
    assert got["pooled"]["estimate"] == _json(want)
    page = client.get(PAGE, headers=admin_headers()).text
    assert "edge_threshold 0.02 (default), max_candidates 20;" in page


def test_an_ngram_day_past_max_candidates_is_listed_undecided(client: TestClient) -> None:
    """3 chains of n-grams by position 1 exceed ``max_candidates`` 3 (7 chains): the
    library refuses (ParameterError), the page explains each day and the pool instead."""
    body = ngram.spec_body(protocol=ngram.FINDS, answers={"max_candidates": 3})
    token = open_stream(client, "words", body)
    days, _ = ngram._post_days(client, token)
    with pytest.raises(ParameterError, match="is exceeded"):
        ngram.FINDS.discover(days[27], max_candidates=3)
    r = client.get(ESTIMATES, headers=admin_headers())
    assert r.status_code == 200, r.text
    got = r.json()
    for est in [d["estimate"] for d in got["days"]] + [got["pooled"]["estimate"]]:
        assert est["strings"] == [] and est["candidates"] == [] and est["ngrams"] == []
        assert est["undecided"].startswith("`max_candidates` (3) is exceeded: ")
        assert "max_candidates 3, edge_threshold 0.02" in est["undecided"]
        assert est["alpha"] == 0.05 and est["edge_threshold"] == 0.02
    assert [d["estimate"]["n"] for d in got["days"]] == [2100, 2100]
    assert got["pooled"]["estimate"]["n"] == 4200
    assert "No string is listed for this day" in got["days"][0]["estimate"]["undecided"]
    assert "these days" in got["pooled"]["estimate"]["undecided"]
    page = client.get(PAGE, headers=admin_headers())
    assert page.status_code == 200, page.text
    assert "2026-11-28 (n = 2100)" in page.text and "is exceeded: " in page.text
    assert "more chains than max_candidates leave the day undecided" in page.text


def _bad() -> dict[str, tuple[dict[str, Any], str]]:
    s = "field `answers.max_candidates` must be an integer in [1, 1048576] (the most candidate "
    n = "field `answers.max_candidates` must be an integer in [1, 1000000] (the most candidate "

    def sfp_of(x: Any) -> dict[str, Any]:
        return sfp.spec_body(answers={"max_candidates": x})

    def ngram_of(x: Any) -> dict[str, Any]:
        return ngram.spec_body(answers={"max_candidates": x})

    return {
        "sfp 0": (sfp_of(0), s + "strings a puzzle value assembles), got 0."),
        "sfp 2**20 + 1": (sfp_of((1 << 20) + 1), s),
        "sfp true": (sfp_of(True), "got True"),
        "sfp 2.0": (sfp_of(2.0), "got 2.0"),
        "sfp text": (sfp_of("8"), "got '8'"),
        "ngram 0": (ngram_of(0), n + "strings of joined n-grams), got 0."),
        "ngram 10**6 + 1": (ngram_of(10**6 + 1), n),
        "ngram null": (ngram_of(None), n),
        "ngram 1.5": (ngram_of(1.5), "got 1.5"),
    }


@pytest.mark.parametrize("case", list(_bad()))
def test_a_bad_max_candidates_is_refused_naming_the_field_and_range(
    client: TestClient, case: str
) -> None:
    body, words = _bad()[case]
    r = put(client, body)
    assert r.status_code == 422 and words in r.json()["error"], r.text
    assert client.get("/streams/words").status_code == 404


def test_the_ranges_are_the_librarys() -> None:
    """The largest value each stream accepts is the library's own, and one more is not."""
    assert dataclasses.replace(sfp.SFP_H, max_candidates=1 << 20).max_candidates == 1 << 20
    with pytest.raises(ParameterError, match=r"\[1, 2\*\*20\]"):
        dataclasses.replace(sfp.SFP_H, max_candidates=(1 << 20) + 1)
    small = ngram.FINDS.randomize(["ab"] * 30, rng=np.random.default_rng(1))
    ngram.FINDS.discover(small, max_candidates=10**6)
    with pytest.raises(ParameterError, match=r"\[1, 10\*\*6\]"):
        ngram.FINDS.discover(small, max_candidates=10**6 + 1)
    assert AnswerSettings("sfp", max_candidates=1 << 20).describe() == (
        "alpha 0.05 (default), max_candidates 1048576 (default)"
    )


@pytest.mark.parametrize(
    ("body", "other", "words"),
    [
        (sfp.spec_body, {"max_candidates": 8},
         "answers alpha 0.01 (default), max_candidates 64 (given alpha 0.01 (default), "
         "max_candidates 8)"),
        (ngram.spec_body, None,
         "answers alpha 0.05 (default), edge_threshold 0.02 (default), max_candidates 64 "
         "(given alpha 0.05 (default), edge_threshold 0.02 (default), max_candidates 10000 "
         "(default))"),
    ],
)  # fmt: skip
def test_max_candidates_never_changes_under_a_stored_spec(
    client: TestClient, body: Any, other: dict[str, Any] | None, words: str
) -> None:
    assert put(client, body(answers={"max_candidates": 64})).status_code == 201
    assert put(client, body(answers={"max_candidates": 64})).status_code == 200
    r = put(client, body() if other is None else body(answers=other))
    assert r.status_code == 409 and words in r.json()["error"], r.text
    assert client.get("/streams/words").json()["answers"] == {"max_candidates": 64}
