"""The decisions of a submission (storage/_plan.py): a small group, decided one item after
another and priced through a cache, is decided exactly as the passes of a batch decide it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.accounting import QuestionRecord
from deniable.exceptions import DeniableError
from deniable.service.storage._plan import Items, decide_each, decide_in_passes, ranked
from deniable.survey import loads_survey

_SURVEY = loads_survey(
    "schema: deniable.survey/1\nid: d\ntitle: D\ncap: 3\nrespondents: anonymous\n"
    "questions:\n"
    "  - {id: a, text: 'A?', labels: ['no', 'yes'], design: {mechanism: two-coin}}\n"
    "  - {id: b, text: 'B?', labels: ['no', 'yes'], design: {mechanism: warner, epsilon: 1}}\n"
    "  - {id: c, text: 'C?', labels: [w, x, y, z],"
    " design: {mechanism: categorical, parameters: {k: 4}, epsilon: 0.5}}\n"
    "  - {id: u, text: 'U?', labels: ['no', 'yes'], unbounded: true,"
    " design: {mechanism: cdm, parameters: {forced_yes1: 0.2, forced_yes2: 0.6}}}\n"
)
_SIZES = [q.spec.reports for q in _SURVEY.questions]
# totals on both sides of the cap once a question is added (rounded upward: 3 - ln 3 + ln 3
# may pass 3)
_SPENT = [0.0, 0.5, 1.0, math.log(3), 1.5, 2.0, 2.0000001, 2.5, 2.9, 3 - math.log(3), 3.0]


@st.composite
def _cases(draw: Any) -> tuple[Any, ...]:
    n = draw(st.integers(1, 40))
    rid = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    qix = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    rep = [draw(st.integers(0, _SIZES[j] - 1)) for j in qix]
    who = ranked(np.array(rid, dtype=np.int64))
    spent = [draw(st.sampled_from(_SPENT)) for _ in range(who.ids.size)]
    done = {
        (r, j): draw(st.integers(0, _SIZES[j] - 1))
        for r in set(rid)
        for j in range(4)
        if draw(st.integers(0, 4)) == 0
    }
    records: dict[int, QuestionRecord | None] = {}
    for j in sorted(set(qix)):
        kind = draw(st.sampled_from(["none", "same", "other", "uncharged"]))
        name = f"d/{_SURVEY.questions[j].id}"
        eps = _SURVEY.questions[j].epsilon
        records[j] = {
            "none": None,
            "same": QuestionRecord(name, eps, False, draw(st.integers(1, 5))),
            "other": QuestionRecord(name, eps + 0.25, False, 2),  # bound to another epsilon
            "uncharged": QuestionRecord(name, eps + 0.25, False, 0),  # binds nothing
        }[kind]
    return rid, qix, rep, spent, done, records


def _run(decide: Any, case: tuple[Any, ...]) -> Any:
    rid, qix, rep, spent, done, records = case
    done = dict(done)
    names = {j: f"d/{_SURVEY.questions[j].id}" for j in records}
    r = np.array(rid, dtype=np.int64)
    try:
        out = decide(
            Items(
                _SURVEY,
                names,
                r,
                np.array(qix, dtype=np.int64),
                np.array(rep, dtype=np.int64),
                ranked(r),
                np.array(spent, dtype=np.float64),
                done,
                dict(records),
            )
        )
    except DeniableError as exc:  # (of two questions bound to others, either is named)
        return type(exc), "was first charged with epsilon" in str(exc)
    return out.status.tolist(), out.charged.tolist(), out.spent.tolist(), out.records, done


@settings(max_examples=300, deadline=None)
@given(_cases())
def test_a_small_group_is_decided_as_the_passes_of_a_batch_decide_it(
    case: tuple[Any, ...],
) -> None:
    # the same statuses, charges, totals (to the bit), question records and stored reports,
    # and the same refusal of a question bound to another epsilon
    assert _run(decide_each, case) == _run(decide_in_passes, case)


def test_a_question_outside_the_cap_is_stored_and_never_charged() -> None:
    # a two-group question (``unbounded``: epsilon infinite, outside the cap) is stored
    # without pricing, charge or record, in a small group as in a batch's passes
    from types import SimpleNamespace

    q = SimpleNamespace(epsilon=math.inf, unbounded=True)
    paid = SimpleNamespace(epsilon=1.0, unbounded=False)
    survey: Any = SimpleNamespace(cap=1.5, questions=[q, paid])
    rid = np.array([7, 7, 8, 7], dtype=np.int64)
    done: dict[tuple[int, int], int] = {}
    out = decide_each(
        Items(
            survey,
            {0: "s/u", 1: "s/p"},
            rid,
            np.array([0, 1, 0, 0], dtype=np.int64),
            np.array([1, 0, 0, 0], dtype=np.int64),
            ranked(rid),
            np.array([0.5, 0.0]),
            done,
            {0: None, 1: None},
        )
    )
    assert out.status.tolist() == [0, 0, 0, 2]  # stored, stored, stored, conflict
    assert out.charged.tolist() == [0.0, 1.0, 0.0, 0.0]
    assert out.spent.tolist() == [1.5, 0.0]
    assert out.records[0] is None and out.records[1] == QuestionRecord("s/p", 1.0, False, 1)
    assert done == {(7, 0): 1, (7, 1): 0, (8, 0): 0}
