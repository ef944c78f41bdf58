"""An SFP stream's answer settings (the spec's ``answers``: its ``alpha`` here, SFP having no
top-k rule, ``max_candidates`` in test_stream_candidates.py; analysis/_stream_answers.py)
and the pooled estimate of the page's days, on SQLite and PostgreSQL (the ``store``
fixture): checked at creation (a bad value one 422 naming the field, the allowed values and
what was given, nothing stored), served, shown on the page and never changed under a stored
spec (409, the stored spec kept); each day and the pooled days estimated as the library
estimates exactly those reports at that alpha.

The reports are 8000 draws of a fixed seed (4000 a day); the expected estimates are the
library's own of the same reports, so no assertion has a false-alarm rate.  The checks that
the setting matters (``alpha`` 0.001 lists fewer strings than the default 0.01) hold for
these fixed reports and would fail if the stream ignored the setting."""

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
from test_streams_sfp import SFP_H, WORDS, spec_body

from deniable.distributed import encode_batch
from deniable.oracles import SFP, sfp_device_reports, sfp_spec
from deniable.service.analysis.streams import stream_spec_from
from deniable.service.storage import ServiceStore

API = "/api/streams/words/estimates?start=2026-11-27&end=2026-11-28&level=0.9"
PAGE = "/dashboard/streams/words?start=2026-11-27&end=2026-11-28"


@pytest.fixture
def client(store: ServiceStore, tmp_path: Path) -> Iterator[TestClient]:
    yield stream_client(store, tmp_path, max_body_bytes=1 << 22)


def put(client: TestClient, body: dict[str, Any]) -> Any:
    return client.put("/api/streams/words", json=body, headers=admin_headers())


def sfp_days(client: TestClient, answers: dict[str, Any] | None) -> Any:
    """An SFP stream (with ``answers`` if given) and 4000 reports on each of 27 and 28
    November: all 8000 reports, the first 4000 those of the 27th."""
    extra = {} if answers is None else {"answers": answers}
    token = open_stream(client, "words", spec_body(**extra))
    rng = np.random.default_rng(21)
    values = rng.choice(np.asarray(WORDS), size=8000, p=[0.5, 0.3, 0.1, 0.1])
    reports = sfp_device_reports(SFP_H, [str(v) for v in values], rng=rng)
    for day, part in ((27, slice(0, 4000)), (28, slice(4000, 8000))):
        client.app.state.streams.clock.now = NOW.replace(day=day)  # type: ignore[attr-defined]
        body = encode_batch(SFP_H, reports[part])
        assert post_batch(client, "words", token, body).status_code == 201
    return reports


def library(protocol: SFP, reports: Any) -> Any:
    """The library's in-process estimate of ``reports`` at level 0.9, as JSON carries it."""
    return json.loads(json.dumps(protocol.estimate(reports, level=0.9).to_dict()))


def strings(estimate: Any) -> list[str]:
    return [h["string"] for h in estimate["heavy_hitters"]]


def test_an_sfp_streams_alpha_decides_each_day_and_the_pooled_days(client: TestClient) -> None:
    reports = sfp_days(client, {"alpha": 0.001})
    served = client.get("/streams/words").json()
    # answer side only: the device's spec and a report's cost are those of the protocol
    assert served["answers"] == {"alpha": 0.001} and served["oracle"] == sfp_spec(SFP_H)
    assert served["report_epsilon"] == 6.0
    got = client.get(API, headers=admin_headers()).json()
    assert got["answers"] == {"alpha": 0.001, "max_candidates": 1024}
    chosen = dataclasses.replace(SFP_H, alpha=0.001)
    for d, part in zip(got["days"], (slice(0, 4000), slice(4000, 8000)), strict=True):
        assert d["estimate"] == library(chosen, reports[part])
        assert d["estimate"]["alpha"] == 0.001
    # the setting matters: at the default 0.01 the 27th lists one string more
    assert len(strings(library(SFP_H, reports[:4000]))) > len(strings(got["days"][0]["estimate"]))
    pooled = got["pooled"]
    assert (pooled["start"], pooled["end"], pooled["days"]) == ("2026-11-27", "2026-11-28", 2)
    assert pooled["estimate"] == library(chosen, reports)
    assert pooled["estimate"]["n"] == 8000
    assert len(strings(library(SFP_H, reports))) > len(strings(pooled["estimate"]))
    page = client.get(PAGE, headers=admin_headers()).text
    assert "Answer settings: alpha 0.001, max_candidates 1024 (default);" in page
    assert "days 2026-11-27 to 2026-11-28 pooled (2 days, n = 8000)" in page
    assert page.index("All days pooled") < page.index("2026-11-27 (n = 4000)")
    assert "alpha and max_candidates: the answer settings" in page


def test_an_sfp_stream_without_answers_reads_as_alpha_0_01(client: TestClient) -> None:
    reports = sfp_days(client, None)
    assert "answers" not in client.get("/streams/words").json()  # its stored text kept
    got = client.get(API, headers=admin_headers()).json()
    assert got["answers"] == {"alpha": 0.01, "max_candidates": 1024}
    assert got["days"][1]["estimate"] == library(SFP_H, reports[4000:])
    assert got["pooled"]["estimate"] == library(SFP_H, reports)
    # pooling finds a string of frequency 0.1 that the 28th alone does not
    assert "zz" in strings(got["pooled"]["estimate"])
    assert "zz" not in strings(got["days"][1]["estimate"])
    page = client.get(PAGE, headers=admin_headers()).text
    assert "Answer settings: alpha 0.01 (default), max_candidates 1024 (default);" in page
    assert "All days pooled" in page
    one = client.get(API.replace("2026-11-27", "2026-11-28"), headers=admin_headers()).json()
    assert one["pooled"]["days"] == 1 and one["pooled"]["estimate"] == one["days"][0]["estimate"]


@pytest.mark.parametrize(
    ("answers", "words"),
    [
        ({"alpha": None}, "field `answers.alpha` must be in (0, 1) (SFP has no top-k rule), "
                          "got None"),
        ({"alpha": 1}, "field `answers.alpha` must be in (0, 1) (SFP has no top-k rule), got 1"),
        ({"alpha": 0.0}, "must be in (0, 1) (SFP has no top-k rule), got 0.0"),
        ({"alpha": "0.1"}, "got '0.1'"),
        ({"alpha": True}, "got True"),
        ({"top_k": 3}, "field `answers`: unknown field `top_k` (an SFP stream's fields: alpha, "
                       "max_candidates)"),
        ({"quantiles": [0.5]}, "unknown field `quantiles` (an SFP stream's fields: alpha, "
                               "max_candidates)"),
        ([0.01], "field `answers` must be a mapping of alpha, max_candidates, got list"),
    ],
)  # fmt: skip
def test_bad_sfp_answers_are_refused_naming_the_field_with_nothing_stored(
    client: TestClient, answers: Any, words: str
) -> None:
    r = put(client, spec_body(answers=answers))
    assert r.status_code == 422 and words in r.json()["error"], r.text
    assert client.get("/api/streams", headers=admin_headers()).json() == {"streams": []}
    assert client.get("/streams/words").status_code == 404


def test_an_sfp_streams_alpha_never_changes_under_its_stored_spec(client: TestClient) -> None:
    sfp_days(client, {"alpha": 0.001})
    assert put(client, spec_body(answers={"alpha": 0.001})).status_code == 200
    for body, given in ((spec_body(answers={"alpha": 0.05}), "given alpha 0.05"),
                        (spec_body(), "given alpha 0.01 (default)")):  # fmt: skip
        r = put(client, body)
        assert r.status_code == 409, r.text
        error = r.json()["error"]
        assert f"answers alpha 0.001, max_candidates 1024 (default) ({given}" in error
        assert "a stream's spec cannot change under its data" in error
    assert client.get("/streams/words").json()["answers"] == {"alpha": 0.001}
    got = client.get(API, headers=admin_headers()).json()
    assert got["answers"] == {"alpha": 0.001, "max_candidates": 1024}
    assert got["pooled"]["estimate"]["n"] == 8000


def test_an_sfp_specs_answers_round_trip() -> None:
    spec = stream_spec_from(spec_body(answers={"alpha": 0.2}))
    assert spec.to_dict()["answers"] == {"alpha": 0.2}
    assert stream_spec_from(spec.to_dict()) == spec
    assert spec.settings is not None
    assert spec.settings.effective() == {"alpha": 0.2, "max_candidates": 1024}
    plain = stream_spec_from(spec_body())
    assert "answers" not in plain.to_dict() and plain.settings is not None
    assert plain.settings.effective() == {"alpha": 0.01, "max_candidates": 1024}
    assert (SFP_H.alpha, SFP_H.max_candidates) == (0.01, 1024)
