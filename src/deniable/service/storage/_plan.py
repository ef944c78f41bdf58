"""The pure part of a submission (no SQL): the items checked and turned into arrays, the
respondents ranked by their first item, and each item's outcome decided in the order given
(:func:`decide`), from what the transaction read.

Each item is decided as if submitted alone, in order, and priced by the library's pricing
(:class:`~deniable.accounting.SpendRequest`), which rounds each spend upward exactly as
:class:`~deniable.accounting.BudgetLedger` does.  Two ways, with the same decisions (a
property test compares them):

* many items (a batch): a respondent's ``k``-th item is in pass ``k``, so that a pass holds
  each respondent at most once and the items of one question in a pass are priced together
  in one call of the pricing;
* a few items (a group of single reports, :data:`FEW` or fewer): one item after another,
  each priced alone through a cache of the pricing's answers.  A new report's price
  depends only on the respondent's total, the question's epsilon and the limit (the
  service's questions are not memoized, and the pricing is pure), and the totals of a
  survey take few values, so a group is mostly priced from the cache: a call of the
  pricing costs some 70 microseconds whatever the number of respondents, and a group of
  single reports is typically a few items of each of many questions.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from deniable.accounting import History, QuestionRecord, SpendRequest, spend_limit
from deniable.exceptions import DataError
from deniable.survey import Survey

__all__ = [
    "FEW",
    "MAX_ID",
    "STATUSES",
    "Decision",
    "Items",
    "Layout",
    "Ranked",
    "checked",
    "decide",
    "layout",
    "ranked",
]

#: The outcomes of a submission (a :class:`Decision`'s ``status`` indexes it).
STATUSES = ("stored", "duplicate", "conflict", "over_cap", "closed")
#: The largest respondent id (the column is a 32-bit integer).
MAX_ID = 2**31 - 1
#: Up to this many items, :func:`decide` decides one item after another (see the module).
FEW = 256

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Layout:
    """A survey's questions as a submission looks them up: each id's position (``qpos``),
    the ids in order (``qids``) and each question's number of reports (``sizes``).  Made
    once per survey definition (:func:`layout`; the store keeps it with the survey)."""

    qpos: dict[str, int]
    qids: list[str]
    sizes: Ints


def layout(survey: Survey) -> Layout:
    """The :class:`Layout` of ``survey``."""
    qids = [q.id for q in survey.questions]
    sizes = np.array([q.spec.reports for q in survey.questions], dtype=np.int64)
    return Layout({x: j for j, x in enumerate(qids)}, qids, sizes)


def checked(
    survey: Survey,
    items: Sequence[tuple[int, str, int]],
    *,
    single: bool,
    shape: Layout | None = None,
) -> tuple[Ints, Ints, Ints]:
    """The items as arrays (respondent id, question index, report); the first bad item is a
    DataError naming its field (``items[3].report``) and the allowed values.  ``shape``:
    the survey's :class:`Layout`, if the caller has it."""
    shape = layout(survey) if shape is None else shape
    qpos, sizes = shape.qpos, shape.sizes
    try:  # the common case at array speed: well-formed items of plain ints and strs
        rs, qs, vs = zip(*items, strict=True) if items else ((), (), ())
        if set(map(type, rs)) <= {int} and set(map(type, vs)) <= {int}:
            rid = np.array(rs, dtype=np.int64)
            rep = np.array(vs, dtype=np.int64)
            qix = np.array([qpos.get(x, -1) if type(x) is str else -1 for x in qs], np.int64)
            ok = (rid > 0) & (rid <= MAX_ID) & (qix >= 0) & (rep >= 0) & (rep < sizes[qix])
            if ok.all():
                return rid, qix, rep
    except (TypeError, ValueError, OverflowError):
        pass
    # find the first bad item and say what is wrong with it
    for i, item in enumerate(items):
        where = "" if single else f"items[{i}]."
        try:
            r, qid, v = item
        except (TypeError, ValueError):
            raise DataError(
                f"`items[{i}]` must be (respondent id, question id, report), got {item!r}."
            ) from None
        if isinstance(r, bool) or not isinstance(r, int | np.integer) or not 0 < r <= MAX_ID:
            raise DataError(
                f"`{where}respondent_id` must be an integer id in [1, {MAX_ID}], got {r!r}."
            )
        j = qpos.get(qid) if isinstance(qid, str) else None
        if j is None:
            known = ", ".join(map(repr, qpos))
            raise DataError(
                f"`{where}question_id` must be a question of survey {survey.id!r} ({known}), "
                f"got {qid!r}."
            )
        k = int(sizes[j])
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 0 <= v < k:
            raise DataError(
                f"`{where}report` must be a report of question {qid!r}: an integer in "
                f"[0, {k - 1}], got {v!r}."
            )
    # numpy integers or the like, all valid
    rid = np.array([int(it[0]) for it in items], dtype=np.int64)
    qix = np.array([qpos[it[1]] for it in items], dtype=np.int64)
    rep = np.array([int(it[2]) for it in items], dtype=np.int64)
    return rid, qix, rep


@dataclass(frozen=True)
class Ranked:
    """The distinct respondents of a submission in the order of their first item
    (``ids``; a new one is ranked so in the ledger) and each item's position in it
    (``ipos``)."""

    ids: Ints
    ipos: Ints


def ranked(rid: Ints) -> Ranked:
    """:class:`Ranked` of the items' respondent ids."""
    uniq, first_item, inverse = np.unique(rid, return_index=True, return_inverse=True)
    order = np.argsort(first_item, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return Ranked(uniq[order], rank[inverse])


def occurrence(groups: Ints) -> Ints:
    """For each position, how many earlier positions have the same group (0, 1, ...)."""
    n = groups.size
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    start = np.flatnonzero(np.append(True, g[1:] != g[:-1]))
    run = np.repeat(start, np.diff(np.append(start, n)))
    out = np.empty(n, dtype=np.int64)
    out[order] = np.arange(n) - run
    return out


@dataclass(frozen=True)
class Decision:
    """Each item's outcome (``status``, an index into :data:`STATUSES`) and charge, each
    respondent's new total (``spent``, in :class:`Ranked` order) and each used question's
    record after the charges (``records``, by question index)."""

    status: npt.NDArray[np.int8]
    charged: npt.NDArray[np.float64]
    spent: npt.NDArray[np.float64]
    records: dict[int, QuestionRecord | None]


@dataclass(frozen=True)
class Items:
    """What :func:`decide` decides on: the items (respondent ``rid``, question index ``qix``,
    report ``rep``; ``who`` ranks their respondents) of ``survey``, each respondent's total
    (``spent``, :class:`Ranked` order), the reports stored before (``done``: ``(respondent
    id, question index) -> report``; updated in place with the items stored) and the records
    of the used questions (``records``, by question index; ``names`` are their ledger
    names)."""

    survey: Survey
    names: dict[int, str]
    rid: Ints
    qix: Ints
    rep: Ints
    who: Ranked
    spent: npt.NDArray[np.float64]
    done: dict[tuple[int, int], int]
    records: dict[int, QuestionRecord | None]


def decide(items: Items) -> Decision:
    """The outcome of every item, in order (see the module docstring)."""
    return (decide_each if items.rid.size <= FEW else decide_in_passes)(items)


def decide_in_passes(items: Items) -> Decision:
    """:func:`decide` in passes, each question of a pass priced in one call."""
    survey, names, rid, qix, rep = items.survey, items.names, items.rid, items.qix, items.rep
    who, spent, done, records = items.who, items.spent, items.done, items.records
    n = rid.size
    ipos = who.ipos
    spent = spent.copy()
    occ = occurrence(ipos)
    status = np.zeros(n, dtype=np.int8)  # index into STATUSES
    charged = np.zeros(n, dtype=np.float64)
    limit = spend_limit(survey.cap, 0.0)
    rid_l, rep_l = rid.tolist(), rep.tolist()
    now_records = dict(records)
    used = sorted(names)
    for p in range(int(occ.max()) + 1 if n else 0):
        in_pass = np.flatnonzero(occ == p)
        for j in used:
            sel = in_pass[qix[in_pass] == j]
            if not sel.size:
                continue
            pend = []
            for i in sel.tolist():
                old = done.get((rid_l[i], j))
                if old is None:
                    pend.append(i)
                else:
                    status[i] = 1 if old == rep_l[i] else 2
            if not pend:
                continue
            pend_a = np.array(pend, dtype=np.int64)
            whose = ipos[pend_a]
            question = survey.questions[j]
            if question.unbounded:  # outside the cap (two-group): stored, never charged
                for i in pend:
                    done[(rid_l[i], j)] = rep_l[i]
                continue
            request = SpendRequest(names[j], question.epsilon, False, limit, partial=True)
            plan = request.plan(
                History(spent[whose], np.zeros(whose.size, dtype=np.bool_), now_records[j])
            )
            ok = plan.write
            spent[whose[ok]] = plan.new_spent
            now_records[j] = plan.record
            status[pend_a[~ok]] = 3
            stored = pend_a[ok]
            charged[stored] = plan.cost[ok]
            for i in stored.tolist():
                done[(rid_l[i], j)] = rep_l[i]
    return Decision(status, charged, spent, now_records)


@functools.lru_cache(maxsize=1 << 16)
def _price(spent: float, epsilon: float, limit: float) -> tuple[float, bool, float]:
    """The library's price of one new report of a question of ``epsilon`` (not memoized)
    to a respondent who spent ``spent``, under ``limit``: the cost, whether it is admitted,
    and the respondent's new total (``spent`` if not)."""
    request = SpendRequest("price", epsilon, False, limit, partial=True)
    plan = request.plan(History(np.array([spent]), np.zeros(1, dtype=np.bool_), None))
    if not plan.write[0]:
        return float(plan.cost[0]), False, spent
    return float(plan.cost[0]), True, float(plan.new_spent[0])


def _check_record(name: str, epsilon: float, limit: float, record: QuestionRecord | None) -> None:
    """Raise the pricing's error if ``record`` binds question ``name`` to another mechanism
    (its epsilon or memoization fixed at its first charge): then the pricing itself is
    asked, with the record."""
    if record is None or record.charges <= 0:
        return
    if record.epsilon == epsilon and not record.memoized:
        return
    none = np.zeros(0, dtype=np.float64)
    request = SpendRequest(name, epsilon, False, limit, partial=True)
    request.plan(History(none, np.zeros(0, dtype=np.bool_), record))


def decide_each(items: Items) -> Decision:
    """:func:`decide` one item after another, priced through a cache (see the module)."""
    survey, names, rid, qix, rep = items.survey, items.names, items.rid, items.qix, items.rep
    who, spent, done, records = items.who, items.spent, items.done, items.records
    n = rid.size
    total = spent.tolist()
    status = [0] * n
    charged = [0.0] * n
    limit = spend_limit(survey.cap, 0.0)
    charges: dict[int, int] = {}  # per question priced: the charges it made
    eps = {j: survey.questions[j].epsilon for j in names}
    # a question outside the cap (a two-group design, where the survey has them): stored,
    # never priced nor charged, its record untouched
    free = {j for j in names if getattr(survey.questions[j], "unbounded", False) is True}
    for i, (r, j, v, p) in enumerate(
        zip(rid.tolist(), qix.tolist(), rep.tolist(), who.ipos.tolist(), strict=True)
    ):
        old = done.get((r, j))
        if old is not None:
            status[i] = 1 if old == v else 2
            continue
        if j in free:
            done[(r, j)] = v
            continue
        epsilon = eps[j]
        if j not in charges:
            _check_record(names[j], epsilon, limit, records[j])
            charges[j] = 0
        cost, ok, after = _price(total[p], epsilon, limit)
        if not ok:
            status[i] = 3
            continue
        total[p] = after
        charged[i] = cost
        done[(r, j)] = v
        # a free question (epsilon 0) counts every respondent asked; otherwise those who paid
        charges[j] += 1 if epsilon == 0 or cost > 0 else 0
    now = dict(records)
    for j, made in charges.items():
        before = records[j]
        prior = 0 if before is None else before.charges
        now[j] = QuestionRecord(names[j], eps[j], False, prior + made)
    return Decision(
        np.array(status, dtype=np.int8),
        np.array(charged, dtype=np.float64),
        np.array(total, dtype=np.float64),
        now,
    )
