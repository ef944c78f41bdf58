"""Where a memoizing randomizer keeps its permanent reports: the :class:`MemoStore` protocol
and :class:`InMemoryMemoStore`.

A memo store holds one randomized report (a non-negative integer) per (respondent key,
question), and with each report the key of the mechanism that drew it (its permanent
stage: ``design.key``).  It makes two promises: ``MemoStore.get_or_create`` is one
atomic get-or-create, so two rounds asking the same respondent the same question at once
get the same permanent report; and a stored report is only ever returned to the mechanism
that drew it: asked by another mechanism, the store raises
:class:`~deniable.exceptions.PrivacyError` (a report replayed for another design would
misstate what it reveals, and a second draw would pay the permanent epsilon twice).  Only
randomized reports are ever stored; never a true answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from deniable.accounting import KeyIndex, Keys, MemoAccess, format_key
from deniable.exceptions import DataError, ParameterTypeError, PrivacyError
from deniable.mechanisms._memo_legacy import upgraded_question

__all__ = ["InMemoryMemoStore", "MemoStore"]

Reports = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Codes = npt.NDArray[np.int32]


@runtime_checkable
class MemoStore(MemoAccess, Protocol):
    """The storage behind a :class:`~deniable.mechanisms.MemoizedRandomizer`.

    Keys are canonical respondent keys (``respondent_keys`` in ``deniable.accounting._keys``:
    a 1-D ``int64`` or ``object`` array), distinct within one call.  Reports are
    non-negative integers (report indices of the permanent design).  ``mechanism`` is the
    key of the mechanism that draws the reports (its permanent stage, e.g.
    ``warner{"p":"3/4"}``), stored with each report.

    ``get_or_create(question, keys, create, *, mechanism) -> reports``
        **One atomic get-or-create per (key, question).**  Find the stored report of each
        key; if one of them was drawn by another mechanism (or by one not recorded: a
        report stored before reports carried their mechanism), raise
        :class:`~deniable.exceptions.PrivacyError` naming the question, the respondent, the
        stored and the asked mechanism, and store nothing.  Otherwise call
        ``create(missing)`` exactly once, with the boolean mask of the keys that have none
        (possibly all False: the caller charges its ledger in there, atomically with the
        lookup), which returns one report per missing key; store them with ``mechanism``
        and return the report of every key.  If ``create`` raises, nothing is stored and
        the error propagates.  No other call may store a report for these keys and this
        question between the lookup and the store.
    ``lookup(question, keys, *, mechanism) -> reports``
        The stored report of each key, ``-1`` where there is none; a stored report of
        another mechanism raises :class:`~deniable.exceptions.PrivacyError` as above.
    ``forget(question)``
        Drop every stored report of ``question``.
    ``snapshot() -> MemoStore``
        An independent copy taken atomically (pickling uses it).

    The first two are :class:`~deniable.accounting.MemoAccess`, all that the oracles'
    memoized randomizers use.

    How a SQL store keeps ``get_or_create`` atomic: a table ``memo(key, question,
    report, mechanism)`` with a **unique constraint on (key, question)**.  In one
    transaction: take a lock that serializes creators of this question (``SELECT ... FOR
    UPDATE`` on the question's row, or ``BEGIN IMMEDIATE`` on SQLite), ``SELECT`` the stored
    reports and mechanisms of the keys (a mechanism other than the asked one: raise, roll
    back), call ``create(missing)`` (which may charge the ledger store in the same
    transaction), ``INSERT ... ON CONFLICT (key, question) DO NOTHING`` the new reports,
    ``SELECT`` again and return what is stored, then ``COMMIT`` (``ROLLBACK`` if anything
    raised).  The unique constraint alone already guarantees one report per (key,
    question): if a concurrent transaction won the race, its report is the one returned, and
    the losing draw is discarded without ever being released (its charge, if any, only
    over-counts).  Returning the re-selected rows, never the freshly drawn ones, is what
    keeps a respondent at one permanent report.
    """

    def forget(self, question: str) -> None: ...

    def snapshot(self) -> MemoStore: ...


def checked_mechanism(mechanism: Any) -> str:
    """``mechanism`` checked: a non-empty string (a mechanism's key)."""
    if not isinstance(mechanism, str) or not mechanism:
        raise ParameterTypeError(
            "`mechanism` must be the key of the mechanism that draws the reports (a non-empty "
            f"string, e.g. design.key), got {mechanism!r}."
        )
    return mechanism


def mismatch(question: str, key: Any, stored: str | None, asked: str) -> PrivacyError:
    """The refusal of a stored report of another mechanism (``stored``; ``None``: a report
    stored before reports carried their mechanism)."""
    if stored is None:
        return PrivacyError(
            f"question {question!r}: respondent {format_key(key)} holds a permanent report "
            "stored before reports carried the key of their mechanism, so it cannot be "
            f"replayed as a report of {asked}, nor drawn again (the permanent epsilon would be "
            f"paid twice): refused.  If {asked} drew it, say so once with "
            f"store.adopt({question!r}, mechanism); otherwise use a new question name."
        )
    return PrivacyError(
        f"question {question!r}: respondent {format_key(key)} holds a permanent report drawn "
        f"by {stored}; the mechanism {asked} would replay a report of another mechanism or "
        "draw a second one (the permanent epsilon paid twice): refused.  A permanent report "
        "belongs to the respondent and the question: ask with the mechanism that drew it, or "
        "use a new question name."
    )


def checked_reports(new: npt.NDArray[Any], n_new: int) -> None:
    """What ``create`` returned must be ``n_new`` non-negative integers."""
    if new.shape != (n_new,) or (n_new and (new.dtype.kind not in "iu" or new.min() < 0)):
        raise DataError(
            f"`create` must return {n_new} non-negative integer reports (one per "
            f"missing key), got dtype {new.dtype} and shape {new.shape}."
        )


def _grown(buf: npt.NDArray[Any], size: int, fill: int) -> npt.NDArray[Any]:
    if size <= buf.size:
        return buf
    out = np.full(max(size, 2 * buf.size, 16), fill, dtype=buf.dtype)
    out[: buf.size] = buf
    return out


class _Question:
    """One question's reports: keys mapped to dense indices (``KeyIndex``), the reports and
    each report's mechanism (a code into ``kinds``; ``None`` in ``kinds``: not recorded)."""

    __slots__ = ("codes", "index", "kinds", "reports")

    def __init__(
        self, index: KeyIndex, reports: Reports, codes: Codes, kinds: list[str | None]
    ) -> None:
        self.index, self.reports, self.codes, self.kinds = index, reports, codes, kinds

    @classmethod
    def empty(cls) -> _Question:
        return cls(KeyIndex(), np.zeros(0, np.int64), np.zeros(0, np.int32), [])

    def copy(self) -> _Question:
        n = len(self.index)
        return _Question(
            self.index.copy(), self.reports[:n].copy(), self.codes[:n].copy(), list(self.kinds)
        )

    def code(self, mechanism: str) -> int:
        """The code of ``mechanism`` (``-1`` if no report of it is stored)."""
        return self.kinds.index(mechanism) if mechanism in self.kinds else -1

    def added(
        self, keys: Keys, found: npt.NDArray[np.int64], new: Reports, mechanism: str | None
    ) -> tuple[_Question, npt.NDArray[np.int64]]:
        """This question with the reports ``new`` of the keys not found (``found < 0``)
        added, and every key's dense index.  The buffers are prepared first, then the keys
        added (all or nothing), then plain writes."""
        missing = found < 0
        top = len(self.index) + int(np.count_nonzero(missing))
        reports = _grown(self.reports, top, -1)
        codes = _grown(self.codes, top, 0)
        kinds = self.kinds if mechanism in self.kinds else [*self.kinds, mechanism]
        idx = self.index.add(keys, found)
        fresh = idx[missing]
        reports[fresh] = new
        codes[fresh] = kinds.index(mechanism)
        return _Question(self.index, reports, codes, kinds), idx

    def check(self, question: str, keys: Keys, found: npt.NDArray[np.int64], asked: str) -> None:
        """Refuse if a key found holds a report of another mechanism."""
        if self.kinds == [asked]:  # every stored report is the asked mechanism's
            return
        hit = np.flatnonzero(found >= 0)
        bad = hit[self.codes[found[hit]] != self.code(asked)]
        if bad.size:
            first = int(bad[0])
            stored = self.kinds[int(self.codes[found[first]])]
            raise mismatch(question, keys[first], stored, asked)


class InMemoryMemoStore:
    """A :class:`MemoStore` in this process's memory, safe under threads (one lock).

    Per question, the keys that have a report are mapped to dense indices
    (``KeyIndex`` (in ``deniable.accounting._keys``)) and the reports kept in an array over
    them, with a small integer per report naming its mechanism, so memory follows the number
    of reports stored, never the size of the ids.

    >>> store = InMemoryMemoStore()
    >>> keys = np.array(["tok-a", "tok-b"], dtype=object)
    >>> draw = lambda missing: np.ones(int(missing.sum()), dtype=np.int64)
    >>> store.get_or_create("q", keys, draw, mechanism='warner{"p":"3/4"}').tolist()
    [1, 1]
    >>> store.lookup("q", np.array(["tok-b", "tok-c"], dtype=object),
    ...              mechanism='warner{"p":"3/4"}').tolist()
    [1, -1]
    >>> store.lookup("q", keys, mechanism='warner{"p":"4/5"}')
    Traceback (most recent call last):
    ...
    deniable.exceptions.PrivacyError: question 'q': respondent 'tok-a' holds a permanent report
    drawn by warner{"p":"3/4"}; the mechanism warner{"p":"4/5"} would replay a report of another
    mechanism or draw a second one (the permanent epsilon paid twice): refused.  A permanent
    report belongs to the respondent and the question: ask with the mechanism that drew it, or
    use a new question name.
    """

    __slots__ = ("_lock", "_memo")

    def __init__(self) -> None:
        self._memo: dict[str, _Question] = {}
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        with self._lock:
            sizes = ", ".join(f"{q!r}: {len(e.index)}" for q, e in self._memo.items())
        return f"InMemoryMemoStore({{{sizes}}})"

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {
                "version": 2,
                "memo": {
                    q: (c.index, c.reports, c.codes, c.kinds)
                    for q, c in ((q, e.copy()) for q, e in self._memo.items())
                },
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        memo: dict[str, _Question] = {}
        if state.get("version", 1) >= 2:
            memo = {q: _Question(*entry) for q, entry in state["memo"].items()}
        else:  # pickled before reports carried their mechanism (docs/changes.md)
            for q, (index, reports) in sorted(state["memo"].items()):
                new_q, mechanism = upgraded_question(q) or (q, None)
                entry = memo.get(new_q) or _Question.empty()
                keys = index.keys()
                found = entry.index.find(keys)
                new = reports[: len(index)][found < 0]
                memo[new_q] = entry.added(keys, found, new, mechanism)[0]
        self._memo = memo
        self._lock = threading.RLock()

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (reports, mechanism codes and integer key indices)."""
        with self._lock:
            return sum(
                int(e.reports.nbytes + e.codes.nbytes) + e.index.nbytes for e in self._memo.values()
            )

    def get_or_create(
        self,
        question: str,
        keys: Keys,
        create: Callable[[Mask], npt.ArrayLike],
        *,
        mechanism: str,
    ) -> Reports:
        asked = checked_mechanism(mechanism)
        with self._lock:  # the lookup, create() and the store: one atomic get-or-create
            entry = self._memo.get(question) or _Question.empty()
            found = entry.index.find(keys)
            entry.check(question, keys, found, asked)
            missing = found < 0
            n_new = int(np.count_nonzero(missing))
            new = np.asarray(create(missing.copy()))
            checked_reports(new, n_new)
            if not n_new:
                return entry.reports[found]
            self._memo[question], idx = entry.added(keys, found, new, asked)
            return self._memo[question].reports[idx]

    def lookup(self, question: str, keys: Keys, *, mechanism: str) -> Reports:
        asked = checked_mechanism(mechanism)
        with self._lock:
            out = np.full(keys.size, -1, dtype=np.int64)
            entry = self._memo.get(question)
            if entry is not None:
                found = entry.index.find(keys)
                entry.check(question, keys, found, asked)
                hit = found >= 0
                out[hit] = entry.reports[found[hit]]
            return out

    def adopt(self, question: str, mechanism: str) -> int:
        """Record ``mechanism`` as the mechanism of every report of ``question`` stored
        without one (pickled by an earlier version); the number of reports adopted.

        An explicit statement: only make it if that mechanism drew them.
        """
        asked = checked_mechanism(mechanism)
        with self._lock:
            entry = self._memo.get(question)
            if entry is None or None not in entry.kinds:
                return 0
            n = len(entry.index)
            legacy = entry.codes[:n] == entry.kinds.index(None)
            kinds = list(entry.kinds)
            if asked not in kinds:
                kinds.append(asked)
            codes = entry.codes.copy()
            codes[:n][legacy] = kinds.index(asked)
            self._memo[question] = _Question(entry.index, entry.reports, codes, kinds)
            return int(np.count_nonzero(legacy))

    def forget(self, question: str) -> None:
        with self._lock:
            self._memo.pop(question, None)

    def snapshot(self) -> InMemoryMemoStore:
        new = InMemoryMemoStore.__new__(InMemoryMemoStore)
        new.__setstate__(self.__getstate__())
        return new
