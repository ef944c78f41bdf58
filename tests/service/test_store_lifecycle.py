"""The operator's side of the store (SQLite and PostgreSQL): closing and reopening a survey
(nothing accepted, nothing lost, budgets kept, seen by every process at once), the survey
summaries behind ``deniable survey list``, the warning of a new version that lowers the cap
below what respondents spent, invitations rolled back with their links, and the PostgreSQL
driver missing."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from deniable.exceptions import DataError
from deniable.service.storage import ServiceStore, SurveyClosedError, lifecycle
from deniable.survey import Survey, demo_survey

SID = "workplace"


def snapshot(store: ServiceStore, sid: str = SID) -> dict[str, Any]:
    return {
        "export": list(store.export_rows(sid)),
        "tallies": store.tallies(sid),
        "spent": store.spent(sid).tolist(),
    }


def version(n: int, **changes: Any) -> Survey:
    data = demo_survey().to_dict()
    data.update(version=n, **changes)
    return Survey.from_dict(data)


def test_a_closed_survey_takes_nothing_and_keeps_everything(store: ServiceStore) -> None:
    _, rid = store.open_session(SID, None)
    assert store.submit(SID, rid, "happy", 1).status == "stored"
    before = snapshot(store)
    remaining = store.remaining(SID, rid)
    assert lifecycle.close_survey(store, SID) is True
    assert not store.survey(SID).is_open()
    with pytest.raises(SurveyClosedError, match="closed"):
        store.open_session(SID, None)
    assert store.submit(SID, rid, "harassment", 1).status == "closed"
    assert [r.status for r in store.submit_batch(SID, [(rid, "hours", 2)])] == ["closed"]
    assert snapshot(store) == before  # nothing stored, nothing lost
    assert lifecycle.close_survey(store, SID) is False  # closed already
    # reloading the file (a restart) or a new version does not reopen it
    store.load_survey(demo_survey())
    store.load_survey(version(2, title="Renamed"))
    assert not store.survey(SID).is_open()
    assert lifecycle.reopen_survey(store, SID) is True
    assert lifecycle.reopen_survey(store, SID) is False
    assert store.survey(SID).is_open() and store.survey(SID).title == "Renamed"
    assert store.remaining(SID, rid) == remaining  # the budget as it was
    assert store.submit(SID, rid, "harassment", 1).status == "stored"


def test_another_process_sees_the_close_at_once(store: ServiceStore, db_url: str) -> None:
    """A server's store with the survey cached (as `deniable serve` holds it) refuses the
    next report once `deniable survey close` (another store on the database) has closed it."""
    _, rid = store.open_session(SID, None)
    assert store.submit(SID, rid, "happy", 0).status == "stored"  # the survey is cached
    operator = ServiceStore(db_url)
    try:
        lifecycle.close_survey(operator, SID)
    finally:
        operator.close()
    assert store.submit(SID, rid, "harassment", 0).status == "closed"
    with pytest.raises(SurveyClosedError):
        store.open_session(SID, None)


def test_an_unknown_survey_is_named_with_the_known_ones(store: ServiceStore) -> None:
    with pytest.raises(DataError, match=r"`survey` must be a survey of the database .*'workplace'"):
        lifecycle.close_survey(store, "nope")
    with pytest.raises(DataError, match="got 'nope'"):
        lifecycle.reopen_survey(store, "nope")


def test_summaries_count_and_state_every_survey(store: ServiceStore) -> None:
    now = datetime.now(UTC)
    later = version(1, id="later", opens=(now + timedelta(days=2)).isoformat(), closes=None)
    ended = version(1, id="ended", opens=None, closes=(now - timedelta(days=1)).isoformat())
    invited = version(1, id="invited", respondents="invitation")
    for s in (later, ended, invited):
        store.load_survey(s)
    _, a = store.open_session(SID, None)
    _, b = store.open_session(SID, None)
    store.open_session(SID, None)
    store.submit_batch(SID, [(a, "happy", 1), (a, "hours", 3), (b, "happy", 0)])
    tokens = store.create_invitations("invited", 3)
    store.open_session("invited", tokens[0])
    lifecycle.close_survey(store, "invited")
    found = {s.id: s for s in lifecycle.survey_summaries(store)}
    assert sorted(found) == ["ended", "invited", "later", "workplace"]
    w = found[SID]
    assert (w.state, w.access, w.respondents, w.answered, w.reports) == (
        "live", "anonymous", 3, 2, 3)  # fmt: skip
    assert (w.invitations, w.redeemed, w.live, w.closed_at) == (0, 0, True, None)
    i = found["invited"]
    assert (i.state, i.access, i.respondents, i.invitations, i.redeemed) == (
        "closed", "invitation", 1, 3, 1)  # fmt: skip
    assert i.closed_at is not None and not i.live
    assert found["later"].state == "not open yet" and found["ended"].state == "ended"
    data = i.to_dict()
    assert data["state"] == "closed" and data["invitations_redeemed"] == 1
    assert data["closed_at"] == i.closed_at.isoformat()


def test_a_new_version_lowering_the_cap_below_what_was_spent_warns(store: ServiceStore) -> None:
    _, a = store.open_session(SID, None)
    _, b = store.open_session(SID, None)
    store.open_session(SID, None)  # c
    # a spends ln 3 + 1 (about 2.1), b 1, c nothing
    store.submit_batch(SID, [(a, "happy", 1), (a, "harassment", 0), (b, "hours", 1)])
    assert store.load_survey(version(2, cap=2.5)) == []  # nobody over 2.5
    warned = store.load_survey(version(3, cap=1.5))
    assert len(warned) == 1
    assert "1 respondent(s)" in warned[0] and "cap to 1.5" in warned[0]
    assert "no further question" in warned[0]
    assert store.remaining(SID, a) == 0.0  # they can answer nothing more
    assert store.submit(SID, a, "hours", 0).status == "over_cap"
    assert len(store.load_survey(version(4, cap=0.5))[0]) > 0
    assert "2 respondent(s)" in store.load_survey(version(5, cap=0.25))[0]
    assert store.load_survey(version(5, cap=0.25)) == []  # the same definition again


def test_invitations_roll_back_when_their_links_cannot_be_written(store: ServiceStore) -> None:
    seen: list[list[str]] = []

    def fail(tokens: list[str]) -> None:
        seen.append(tokens)
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        store.create_invitations(SID, 3, before_commit=fail)
    assert len(seen) == 1 and len(seen[0]) == 3
    assert [s.invitations for s in lifecycle.survey_summaries(store)] == [0]
    kept: list[list[str]] = []
    tokens = store.create_invitations(SID, 2, before_commit=kept.append)
    assert kept == [tokens]
    assert [s.invitations for s in lifecycle.survey_summaries(store)] == [2]


def test_postgresql_without_its_driver_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [m for m in sys.modules if m == "psycopg" or m.startswith("psycopg.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` fails
    with pytest.raises(ImportError, match=r"pip install 'deniable\[postgres\]'"):
        ServiceStore("postgresql://user:secret@localhost/survey")


def test_a_new_version_raising_the_cap_after_answers_warns(store: ServiceStore) -> None:
    """Respondents answered under a cap of 3.25; a version that lets them spend more says so
    (how many, both caps), and says nothing while nobody has spent or when the cap holds."""
    assert store.load_survey(version(2, cap=4.0)) == []  # nobody has answered yet
    _, a = store.open_session(SID, None)
    store.open_session(SID, None)  # a session that answered nothing does not count
    assert store.submit(SID, a, "happy", 1).status == "stored"
    assert store.load_survey(version(3, cap=4.0)) == []  # the same cap
    warned = store.load_survey(version(4, cap=6.0))
    assert len(warned) == 1
    assert "raises the cap from 4 to 6" in warned[0] and "1 respondent(s)" in warned[0]
