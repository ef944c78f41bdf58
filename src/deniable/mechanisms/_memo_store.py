"""Where a memoizing randomizer keeps its permanent reports: the :class:`MemoStore` protocol
and :class:`InMemoryMemoStore`.

A memo store holds one randomized report (a non-negative integer) per (respondent key,
question) and makes one promise: :meth:`MemoStore.get_or_create` is one atomic
get-or-create, so two rounds asking the same respondent the same question at once get the
same permanent report.  Only randomized reports are ever stored; never a true answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from deniable.accounting._keys import KeyIndex, Keys
from deniable.exceptions import DataError

__all__ = ["InMemoryMemoStore", "MemoStore"]

Reports = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@runtime_checkable
class MemoStore(Protocol):
    """The storage behind a :class:`~deniable.mechanisms.MemoizedRandomizer`.

    Keys are canonical respondent keys (``respondent_keys`` in ``deniable.accounting._keys``:
    a 1-D ``int64`` or ``object`` array), distinct within one call.  Reports are
    non-negative integers (report indices of the permanent design).

    ``get_or_create(question, keys, create) -> reports``
        **One atomic get-or-create per (key, question).**  Find the stored report of each
        key; call ``create(missing)`` exactly once, with the boolean mask of the keys that
        have none (possibly all False: the caller charges its ledger in there, atomically
        with the lookup), which returns one report per missing key; store them and return
        the report of every key.  If ``create`` raises, nothing is stored and the error
        propagates.  No other call may store a report for these keys and this question
        between the lookup and the store.
    ``lookup(question, keys) -> reports``
        The stored report of each key, ``-1`` where there is none.
    ``forget(question)``
        Drop every stored report of ``question``.
    ``snapshot() -> MemoStore``
        An independent copy taken atomically (pickling uses it).

    How a SQL store keeps :meth:`get_or_create` atomic: a table ``memo(key, question,
    report)`` with a **unique constraint on (key, question)**.  In one transaction: take a
    lock that serializes creators of this question (``SELECT ... FOR UPDATE`` on the
    question's row, or ``BEGIN IMMEDIATE`` on SQLite), ``SELECT`` the stored reports of the
    keys, call ``create(missing)`` (which may charge the ledger store in the same
    transaction), ``INSERT ... ON CONFLICT (key, question) DO NOTHING`` the new reports,
    ``SELECT`` again and return what is stored, then ``COMMIT`` (``ROLLBACK`` if anything
    raised).  The unique constraint alone already guarantees one report per (key,
    question): if a concurrent transaction won the race, its report is the one returned, and
    the losing draw is discarded without ever being released (its charge, if any, only
    over-counts).  Returning the re-selected rows, never the freshly drawn ones, is what
    keeps a respondent at one permanent report.
    """

    def get_or_create(
        self, question: str, keys: Keys, create: Callable[[Mask], npt.ArrayLike]
    ) -> Reports: ...

    def lookup(self, question: str, keys: Keys) -> Reports: ...

    def forget(self, question: str) -> None: ...

    def snapshot(self) -> MemoStore: ...


def _grown(buf: Reports, size: int) -> Reports:
    if size <= buf.size:
        return buf
    out = np.full(max(size, 2 * buf.size, 16), -1, dtype=np.int64)
    out[: buf.size] = buf
    return out


class InMemoryMemoStore:
    """A :class:`MemoStore` in this process's memory, safe under threads (one lock).

    Per question, the keys that have a report are mapped to dense indices
    (``KeyIndex`` (in ``deniable.accounting._keys``)) and the reports kept in an array over
    them, so memory follows the number of reports stored, never the size of the ids.

    >>> store = InMemoryMemoStore()
    >>> keys = np.array(["tok-a", "tok-b"], dtype=object)
    >>> draw = lambda missing: np.ones(int(missing.sum()), dtype=np.int64)
    >>> store.get_or_create("q", keys, draw).tolist()
    [1, 1]
    >>> store.lookup("q", np.array(["tok-b", "tok-c"], dtype=object)).tolist()
    [1, -1]
    """

    __slots__ = ("_lock", "_memo")

    def __init__(self) -> None:
        self._memo: dict[str, tuple[KeyIndex, Reports]] = {}
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        with self._lock:
            sizes = ", ".join(f"{q!r}: {len(ix)}" for q, (ix, _) in self._memo.items())
        return f"InMemoryMemoStore({{{sizes}}})"

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {
                "memo": {
                    q: (ix.copy(), rep[: len(ix)].copy()) for q, (ix, rep) in self._memo.items()
                }
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._memo = state["memo"]
        self._lock = threading.RLock()

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (reports and integer key indices)."""
        with self._lock:
            return sum(int(rep.nbytes) + ix.nbytes for ix, rep in self._memo.values())

    def get_or_create(
        self, question: str, keys: Keys, create: Callable[[Mask], npt.ArrayLike]
    ) -> Reports:
        with self._lock:  # the lookup, create() and the store: one atomic get-or-create
            index, reports = self._memo.get(question) or (KeyIndex(), np.zeros(0, np.int64))
            found = index.find(keys)
            missing = found < 0
            n_new = int(np.count_nonzero(missing))
            new = np.asarray(create(missing.copy()))
            if new.shape != (n_new,) or (n_new and (new.dtype.kind not in "iu" or new.min() < 0)):
                raise DataError(
                    f"`create` must return {n_new} non-negative integer reports (one per "
                    f"missing key), got dtype {new.dtype} and shape {new.shape}."
                )
            if not n_new:
                return reports[found]
            # prepare the buffer, then add the keys (all or nothing), then plain writes
            buf = _grown(reports, len(index) + n_new)
            idx = index.add(keys, found)
            buf[idx[missing]] = new
            self._memo[question] = (index, buf)
            return buf[idx]

    def lookup(self, question: str, keys: Keys) -> Reports:
        with self._lock:
            out = np.full(keys.size, -1, dtype=np.int64)
            entry = self._memo.get(question)
            if entry is not None:
                index, reports = entry
                found = index.find(keys)
                hit = found >= 0
                out[hit] = reports[found[hit]]
            return out

    def forget(self, question: str) -> None:
        with self._lock:
            self._memo.pop(question, None)

    def snapshot(self) -> InMemoryMemoStore:
        new = InMemoryMemoStore.__new__(InMemoryMemoStore)
        new.__setstate__(self.__getstate__())
        return new
