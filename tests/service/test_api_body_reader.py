"""The single report's body read without the strict model (routes/respondent.py) only when
the model would read it, and read it the same way."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from deniable.service.routes.bodies import ReportRequest
from deniable.service.routes.respondent import _report_fields

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=70),
    st.text(alphabet="ab\u00e9\ud7ff\x00\n", max_size=3),
    st.lists(st.integers(0, 3), max_size=2),
)
_BODIES = st.one_of(
    st.dictionaries(st.sampled_from(["question", "report", "token", "x"]), _VALUES).map(
        lambda d: json.dumps(d).encode()
    ),
    st.dictionaries(st.sampled_from(["question", "report"]), _VALUES).map(
        lambda d: json.dumps(d, ensure_ascii=False).encode("utf-8", "surrogatepass")
    ),
    st.binary(max_size=60),
    st.sampled_from(
        [
            b'{"question":"a","report":1}',
            b' {"question" : "a", "report": 1 } ',
            b'{"question":"\\ud800","report":1}',
            b'{"question":"a","question":"b","report":1}',
            b'{"question":"a","report":1.0}',
            b'{"question":"a","report":true}',
            b'{"question":"","report":1}',
            b'{"question":"a","report":1}x',
            b'{"question":"a","report":NaN}',
            '{"question":"a","report":1}'.encode("utf-16"),
            b"[]",
            b"",
        ]
    ),
)


@settings(max_examples=500, deadline=None)
@given(_BODIES)
def test_the_fast_body_reader_reads_only_what_the_strict_model_reads_alike(raw: bytes) -> None:
    fields = _report_fields(raw)
    if fields is None:
        return  # the strict model parses it (and names what is wrong)
    try:
        model = ReportRequest.model_validate_json(raw)
    except ValidationError as exc:  # pragma: no cover - the failure this test looks for
        pytest.fail(f"the fast reader accepted {raw!r}, the model refuses it: {exc}")
    assert fields == (model.question, model.report)


def test_the_fast_body_reader_reads_a_plain_report() -> None:
    assert _report_fields(b'{"report": 2, "question": "q07"}') == ("q07", 2)
