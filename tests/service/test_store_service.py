"""ServiceStore on SQLite and PostgreSQL: surveys and their versions, sessions and tokens,
the outcomes of a submission, bad input (named, nothing stored), and the analysis reads
(tallies equal to the library's, timelines, spent, export rows)."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import threading
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from deniable.accounting import BudgetLedger, ZCDPComposition
from deniable.accounting._exact_sum import add_up
from deniable.exceptions import DataError, ParameterError, PrivacyError
from deniable.service.storage import ServiceStore, Submitted, SurveyClosedError
from deniable.service.storage.tables import reports, respondents
from deniable.survey import Survey, demo_survey

SID = "workplace"


def everything(store: ServiceStore) -> dict[str, Any]:
    """What the store shows: reports, tallies, spends, the ledger's questions."""
    return {
        "export": list(store.export_rows(SID)),
        "tallies": store.tallies(SID),
        "spent": store.spent(SID).tolist(),
        "questions": store.ledger.questions(),
        "respondents": store.ledger.respondents().tolist(),
    }


def survey_with(**changes: Any) -> Survey:
    data = demo_survey().to_dict()
    data.update(changes)
    return Survey.from_dict(data)


# ---------------------------------------------------------------- surveys


def test_survey_round_trips_and_unknown_is_named(store: ServiceStore) -> None:
    assert store.survey(SID) == demo_survey()
    assert store.survey_ids() == [SID]
    with pytest.raises(DataError, match="there is no survey 'nope'"):
        store.survey("nope")


def test_loading_the_same_survey_again_changes_nothing(store: ServiceStore) -> None:
    store.load_survey(demo_survey())
    assert store.survey(SID) == demo_survey()


def test_a_new_version_replaces_unanswered_questions_only(store: ServiceStore) -> None:
    data = demo_survey().to_dict()
    data["version"] = 2
    data["questions"][1]["text"] = "In the last year, have you seen harassment at work?"
    v2 = Survey.from_dict(data)
    store.load_survey(v2)  # no report yet: the change is taken
    assert store.survey(SID) == v2
    _, rid = store.open_session(SID, None)
    assert store.submit(SID, rid, "harassment", 1).status == "stored"
    data["version"] = 3
    data["questions"][1]["text"] = "Changed again"
    with pytest.raises(DataError, match=r"changes or removes question\(s\) 'harassment'"):
        store.load_survey(Survey.from_dict(data))
    assert store.survey(SID) == v2
    data["questions"][1]["text"] = v2.questions[1].text
    data["title"] = "A new title"
    store.load_survey(Survey.from_dict(data))  # answered questions unchanged: fine
    assert store.survey(SID).title == "A new title"


def test_a_question_nobody_was_charged_for_may_change_in_a_new_version(db_url: str) -> None:
    # a batch in which one question was over the cap for everyone still wrote its ledger
    # record (0 charges); the record fixed the question's epsilon, so a new version that
    # changed it (accepted: the question had no report) made the question unanswerable
    store = ServiceStore(db_url)
    store.migrate()
    data = demo_survey().to_dict()
    data["cap"] = 2.1  # happy (ln 3) and one epsilon-1 question fit, not three
    store.load_survey(Survey.from_dict(data))
    _, a = store.open_session(SID, None)
    _, b = store.open_session(SID, None)
    assert store.submit(SID, a, "happy", 1).stored and store.submit(SID, a, "hours", 1).stored
    got = store.submit_batch(SID, [(a, "harassment", 1), (b, "happy", 1)])
    assert [x.status for x in got] == ["over_cap", "stored"]
    data["version"] = 2
    data["questions"][1]["design"] = {"mechanism": "warner", "epsilon": 0.5}
    store.load_survey(Survey.from_dict(data))  # no report of "harassment": taken
    assert store.submit(SID, b, "harassment", 1) == Submitted("stored", pytest.approx(0.5))
    assert store.ledger.questions()[f"{SID}/harassment"].epsilon == pytest.approx(0.5)
    # a question somebody was charged for keeps its epsilon (as its reports keep the design)
    data["version"] = 3
    data["questions"][1]["design"] = {"mechanism": "warner", "epsilon": 0.25}
    with pytest.raises(DataError, match=r"changes or removes question\(s\) 'harassment'"):
        store.load_survey(Survey.from_dict(data))
    store.close()


def test_a_changed_survey_needs_a_higher_version(store: ServiceStore) -> None:
    with pytest.raises(DataError, match="needs a higher `version`, got 1"):
        store.load_survey(survey_with(title="Other"))


# ---------------------------------------------------------------- sessions and tokens


def test_tokens_are_random_and_stored_only_as_hashes(store: ServiceStore) -> None:
    token, rid = store.open_session(SID, None)
    token2, rid2 = store.open_session(SID, None)
    assert len(token) >= 43 and token != token2 and rid != rid2
    assert store.respondent(SID, token) == rid and store.respondent(SID, token2) == rid2
    assert store.respondent(SID, token + "x") is None
    assert store.respondent("other", token) is None
    assert store.respondent(SID, "") is None
    assert store.respondent_ids(SID, [token2, "nope", token, "", token2]) == [
        rid2,
        None,
        rid,
        None,
        rid2,
    ]
    assert store.respondent_ids("other", [token]) == [None]
    assert store.respondent_ids(SID, []) == []
    with store.engine.connect() as conn:
        stored = conn.execute(sa.select(respondents.c.token_hash)).scalars().all()
    assert hashlib.sha256(token.encode()).hexdigest() in stored
    assert all(token not in h and token2 not in h for h in stored)


def test_invitations_are_single_use(db_url: str) -> None:
    store = ServiceStore(db_url)
    store.migrate()
    store.load_survey(survey_with(respondents="invitation"))
    first, second = store.create_invitations(SID, 2)
    token, rid = store.open_session(SID, first)
    assert store.respondent(SID, token) == rid
    with pytest.raises(PrivacyError, match="used already"):
        store.open_session(SID, first)
    with pytest.raises(PrivacyError, match="not an invitation"):
        store.open_session(SID, first + "x")
    with pytest.raises(PrivacyError, match="by invitation"):
        store.open_session(SID, None)
    assert store.open_session(SID, second)[1] != rid
    # the interviewer's paper/phone mode creates respondents without an invitation
    token3, rid3 = store.create_respondent(SID)
    assert store.respondent(SID, token3) == rid3 and rid3 not in (rid,)
    with pytest.raises(DataError, match="there is no survey 'nope'"):
        store.create_respondent("nope")
    with pytest.raises(ParameterError, match=r"`count` must be in \[1, 100000\]"):
        store.create_invitations(SID, 0)
    store.close()


def test_a_closed_survey_opens_no_session_and_stores_nothing(db_url: str) -> None:
    store = ServiceStore(db_url)
    store.migrate()
    open_ = survey_with(version=1)
    store.load_survey(open_)
    _, rid = store.open_session(SID, None)
    past = datetime.now(UTC) - timedelta(days=1)
    store.load_survey(
        survey_with(
            version=2, opens=(past - timedelta(days=9)).isoformat(), closes=past.isoformat()
        )
    )
    with pytest.raises(SurveyClosedError, match="closed"):
        store.open_session(SID, None)
    assert store.submit(SID, rid, "happy", 1) == Submitted("closed")
    assert (
        store.submit_batch(SID, [(rid, "happy", 1), (rid, "hours", 0)]) == [Submitted("closed")] * 2
    )
    assert store.answered(SID, rid) == {}
    store.close()


# ---------------------------------------------------------------- submitting


def test_the_outcomes_of_a_submission(store: ServiceStore) -> None:
    survey = demo_survey()
    _, rid = store.open_session(SID, None)
    eps = {q.id: q.epsilon for q in survey.questions}
    got = store.submit(SID, rid, "happy", 1)
    assert got == Submitted("stored", eps["happy"]) and got.stored
    assert store.submit(SID, rid, "happy", 1) == Submitted("duplicate")
    assert store.submit(SID, rid, "happy", 0) == Submitted("conflict")
    assert store.answered(SID, rid) == {"happy": 1}
    assert store.spent(SID).tolist() == [eps["happy"]]
    assert store.remaining(SID, rid) == pytest.approx(survey.cap - eps["happy"])
    assert store.submit(SID, rid, "hours", 3).status == "stored"
    assert store.submit(SID, rid, "harassment", 0).status == "stored"
    assert store.answered(SID, rid) == {"happy": 1, "hours": 3, "harassment": 0}


def test_over_cap_stores_nothing_and_spends_nothing(db_url: str) -> None:
    store = ServiceStore(db_url)
    store.migrate()
    store.load_survey(survey_with(cap=2.1))  # happy (ln 3 = 1.0986) + one epsilon-1 question
    _, rid = store.open_session(SID, None)
    assert store.affordable(SID, rid) == {"happy": True, "harassment": True, "hours": True}
    assert store.submit(SID, rid, "happy", 1).status == "stored"
    assert store.affordable(SID, rid) == {"happy": True, "harassment": True, "hours": True}
    assert store.submit(SID, rid, "hours", 2).status == "stored"
    # answered questions stay shown (a resend costs nothing); the third would pass the cap
    assert store.affordable(SID, rid) == {"happy": True, "harassment": False, "hours": True}
    before = everything(store)
    assert store.submit(SID, rid, "harassment", 1) == Submitted("over_cap")
    assert everything(store) == before
    assert store.remaining(SID, rid) == pytest.approx(2.1 - math.log(3) - 1)
    store.close()


def test_the_cap_is_compared_as_the_ledger_compares_it(fresh_db: Any) -> None:
    # three questions near epsilon 0.1, 0.2, 0.3: their sum rounded upward (as the ledger
    # adds) is the smallest cap admitting all three; one float below it refuses the third
    data = demo_survey().to_dict()
    for q, eps in zip(data["questions"], (0.1, 0.2, 0.3), strict=True):
        q["design"] = {"mechanism": "warner", "epsilon": eps}
        q["labels"] = ["no", "yes"]
    epsilons = [Survey.from_dict(data).questions[i].epsilon for i in range(3)]
    total = float(add_up(add_up(epsilons[0], epsilons[1]), epsilons[2]))
    assert Fraction(total) >= sum(map(Fraction, epsilons))
    for cap, expect in ((math.nextafter(total, 0), "over_cap"), (total, "stored")):
        data["cap"] = cap
        store = ServiceStore(fresh_db())
        survey = Survey.from_dict(data)
        store.load_survey(survey)
        _, rid = store.open_session(SID, None)
        got = [store.submit(SID, rid, q.id, 1).status for q in survey.questions[:2]]
        shown = store.affordable(SID, rid)[survey.questions[2].id]
        got.append(store.submit(SID, rid, survey.questions[2].id, 1).status)
        assert got == ["stored", "stored", expect]
        assert shown == (expect == "stored")
        ledger = BudgetLedger(cap=cap)
        for q in survey.questions[:2]:
            ledger.spend(["r"], q.id, q.epsilon)
        q3 = survey.questions[2]
        assert ledger.can_afford(["r"], q3.id, q3.epsilon).tolist() == [expect == "stored"]
        if expect == "stored":
            ledger.spend(["r"], q3.id, q3.epsilon)
        assert store.spent(SID).tolist() == [ledger.spent("r")]
        store.close()


@pytest.mark.parametrize(
    ("item", "field", "message"),
    [
        (
            (0, "happy", 2),
            "report",
            r"must be a report of question 'happy': an integer in \[0, 1\], got 2",
        ),
        ((0, "hours", -1), "report", r"must be a report of question 'hours': .* got -1"),
        ((0, "hours", True), "report", r"must be .* got True"),
        ((0, "hours", 1.0), "report", r"must be .* got 1\.0"),
        ((0, "nope", 1), "question_id", r"must be a question of survey 'workplace' \('happy'"),
        ((0, None, 1), "question_id", r"must be a question of survey 'workplace' .* got None"),
        (
            ("1", "happy", 1),
            "respondent_id",
            r"must be an integer id in \[1, 2147483647\], got '1'",
        ),
        ((2**31, "happy", 1), "respondent_id", r"must be an integer id .* got 2147483648"),
    ],
)
def test_bad_input_is_named_and_stores_nothing(
    store: ServiceStore, item: tuple[Any, Any, Any], field: str, message: str
) -> None:
    _, rid = store.open_session(SID, None)
    store.submit(SID, rid, "hours", 1)
    before = everything(store)
    r, q, v = item
    with pytest.raises(DataError, match=f"`{field}` {message}"):
        store.submit(SID, r or rid, q, v)
    batch = [(rid, "happy", 1), (r or rid, q, v)]
    with pytest.raises(DataError, match=rf"`items\[1\]\.{field}` {message}"):
        store.submit_batch(SID, batch)
    assert everything(store) == before


def test_unknown_survey_respondent_and_malformed_items_store_nothing(store: ServiceStore) -> None:
    _, rid = store.open_session(SID, None)
    before = everything(store)
    with pytest.raises(DataError, match="there is no survey 'nope'"):
        store.submit("nope", rid, "happy", 1)
    with pytest.raises(DataError, match="`respondent_id` 1000000 is not a respondent"):
        store.submit_batch(SID, [(rid, "happy", 1), (10**6, "happy", 1)])
    with pytest.raises(DataError, match=r"`items\[0\]` must be \(respondent id, question id"):
        store.submit_batch(SID, [(rid, "happy")])  # type: ignore[list-item]
    assert everything(store) == before


def test_a_respondent_of_another_survey_is_refused(store: ServiceStore) -> None:
    other = demo_survey().to_dict()
    other["id"] = "other"
    store.load_survey(Survey.from_dict(other))
    _, rid = store.open_session("other", None)
    with pytest.raises(DataError, match=f"`respondent_id` {rid} is not a respondent of survey"):
        store.submit(SID, rid, "happy", 1)


def test_a_batch_has_the_outcomes_of_one_by_one_submissions(
    store: ServiceStore, fresh_db: Any
) -> None:
    # the same random stream of items through submit_batch and through submit, on a
    # survey whose cap admits two of the three questions
    rng = np.random.default_rng(5)
    survey = survey_with(cap=2.2, version=2)
    one = ServiceStore(fresh_db())
    for s in (store, one):
        s.load_survey(survey)
        for _ in range(30):
            s.open_session(SID, None)
    qs = [q.id for q in survey.questions]
    sizes = {q.id: q.spec.reports for q in survey.questions}
    items = []
    for _ in range(400):
        q = qs[int(rng.integers(3))]
        items.append((int(rng.integers(1, 31)), q, int(rng.integers(sizes[q]))))
    batched = store.submit_batch(SID, items[:250]) + store.submit_batch(SID, items[250:])
    single = [one.submit(SID, *item) for item in items]
    assert batched == single
    assert {s.status for s in single} == {"stored", "duplicate", "conflict", "over_cap"}
    assert everything(store) == everything(one)
    one.close()


def test_a_batch_with_nothing_new_writes_nothing(store: ServiceStore) -> None:
    _, rid = store.open_session(SID, None)
    store.submit(SID, rid, "happy", 1)
    before = everything(store)
    assert store.submit_batch(SID, [(rid, "happy", 1), (rid, "happy", 0)]) == [
        Submitted("duplicate"),
        Submitted("conflict"),
    ]
    assert store.submit_batch(SID, []) == []
    assert everything(store) == before


# ---------------------------------------------------------------- analysis


def test_tallies_equal_the_library_tallies_of_the_same_reports(store: ServiceStore) -> None:
    survey = demo_survey()
    rng = np.random.default_rng(1)
    truth = {q.id: rng.integers(q.design.n_truths, size=60) for q in survey.questions}
    sent = {q.id: q.design.randomize(truth[q.id], rng=rng) for q in survey.questions}
    ids = [store.open_session(SID, None)[1] for _ in range(60)]
    items = [(ids[i], q, int(sent[q][i])) for i in range(60) for q in sent]
    assert all(s.stored for s in store.submit_batch(SID, items))
    tallies = store.tallies(SID)
    for q in survey.questions:
        assert tallies[q.id] == q.design.tally(sent[q.id])
        assert tallies[q.id].mechanism == q.design.key
    rows = list(store.export_rows(SID))
    assert [r["respondent"] for r in rows] == ids
    assert all(r[q] == int(sent[q][i]) for i, r in enumerate(rows) for q in sent)
    assert store.spent(SID) == pytest.approx([survey.budget().basic] * 60)


def test_an_empty_survey_has_empty_tallies(store: ServiceStore) -> None:
    store.open_session(SID, None)
    assert {q: t.n for q, t in store.tallies(SID).items()} == dict.fromkeys(
        ("happy", "harassment", "hours"), 0
    )
    assert list(store.export_rows(SID)) == []
    assert store.spent(SID).tolist() == [0.0]
    assert store.timeline(SID, "happy", "day") == []


def test_timeline_is_cumulative_per_bucket(store: ServiceStore) -> None:
    ids = [store.open_session(SID, None)[1] for _ in range(5)]
    for i in ids:
        store.submit(SID, i, "happy", i % 2)
    # spread the reports over three hours and two days
    stamps = [1_700_000_000.0 + h * 3600 for h in (0, 0.5, 1, 25, 25.2)]
    with store.engine.begin() as conn:
        for i, t in zip(ids, stamps, strict=True):
            conn.execute(
                sa.update(reports).where(reports.c.respondent_id == i).values(received_at=t)
            )
    hours = store.timeline(SID, "happy", "hour")
    design = demo_survey().question("happy").design
    assert [t.n for _, t in hours] == [2, 3, 5]
    assert hours[-1][1] == store.tallies(SID)["happy"]
    assert all(t.mechanism == design.key for _, t in hours)
    assert all(end.tzinfo is not None and end.minute == 0 for end, _ in hours)
    assert hours[0][0] - datetime.fromtimestamp(stamps[0], UTC) <= timedelta(hours=1)
    days = store.timeline(SID, "happy", "day")
    assert [t.n for _, t in days] == [3, 5] and days[0][0].hour == 0
    with pytest.raises(ParameterError, match="`bucket` must be one of hour, day, got 'week'"):
        store.timeline(SID, "happy", "week")
    with pytest.raises(DataError, match="has no question 'nope'"):
        store.timeline(SID, "nope", "day")


def test_submitted_is_a_frozen_value() -> None:
    s = Submitted("stored", 0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.status = "x"  # type: ignore[misc]


def test_the_ledger_store_sees_the_service_charges(store: ServiceStore) -> None:
    # the service records a charge as the stored report: the ledger protocol shows it
    _, a = store.open_session(SID, None)
    _, b = store.open_session(SID, None)
    store.submit_batch(SID, [(a, "happy", 1), (a, "hours", 2), (b, "hours", 0)])
    keys = np.array([f"{SID}:{a}", f"{SID}:{b}", f"{SID}:999"], dtype=object)
    assert store.ledger.history(keys, f"{SID}/happy").charged.tolist() == [True, False, False]
    assert store.ledger.history(keys, f"{SID}/hours").charged.tolist() == [True, True, False]
    assert store.ledger.respondents().tolist() == [f"{SID}:{a}", f"{SID}:{b}"]
    snap = store.ledger.snapshot()
    assert snap.history(keys, f"{SID}/hours").charged.tolist() == [True, True, False]
    assert snap.history(keys).spent.tolist() == store.ledger.history(keys).spent.tolist()
    assert snap.questions() == store.ledger.questions()
    assert {n: r.charges for n, r in store.ledger.questions().items()} == {
        f"{SID}/happy": 1,
        f"{SID}/hours": 2,
    }


@pytest.mark.parametrize("zcdp_first", [False, True])
def test_the_service_and_a_ledger_of_another_unit_never_share_the_budgets(
    fresh_db: Any, zcdp_first: bool
) -> None:
    # the service prices in pure epsilon: a zCDP ledger over its ledger store is refused
    # once the service spent, and the service refuses to add epsilon to a store of rho
    store = ServiceStore(fresh_db())
    store.load_survey(demo_survey())
    _, rid = store.open_session(SID, None)
    key = f"{SID}:{rid}"
    if zcdp_first:
        zcdp = BudgetLedger(cap=5.0, store=store.ledger, composition=ZCDPComposition())
        zcdp.spend([key], "panel", 0.5)
        before = everything(store)
        with pytest.raises(PrivacyError, match=r"totals in rho .* counts epsilon"):
            store.submit(SID, rid, "happy", 1)
        with pytest.raises(PrivacyError, match=r"totals in rho .* counts epsilon"):
            store.submit_batch(SID, [(rid, "hours", 1)])
        assert everything(store) == before
    else:
        assert store.submit(SID, rid, "happy", 1).stored
        with pytest.raises(PrivacyError, match=r"totals in epsilon .* counts rho"):
            BudgetLedger(cap=5.0, store=store.ledger, composition=ZCDPComposition())
        BudgetLedger(cap=5.0, store=store.ledger).spend([key], "panel", 0.5)  # epsilon: fine
        assert store.spent(SID).tolist() == [pytest.approx(math.log(3) + 0.5)]
    store.close()


def test_servers_starting_together_load_the_survey_once(db_url: str) -> None:
    # several server processes migrate and load the same survey at once: no error, one row
    store = ServiceStore(db_url)
    store.migrate()
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def start() -> None:
        try:
            barrier.wait()
            store.load_survey(demo_survey())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and store.survey_ids() == [SID]
    store.close()
