"""Device state of the memoized counters (:class:`~deniable.oracles.DBitFlipMemo`,
:class:`~deniable.oracles.OneBitMeanMemo`) kept in a memo store.

A device's state is a few rows of small integers (dBitFlipPM's sampled buckets, 1BitMean's
rounding offset, and one row of bits per value it has reported), each row kept in one or
more memo reports (non-negative ``int64``) under one question per row and chunk, every
report carrying the key of the mechanism that drew it.  So the state lives in any
:class:`~deniable.mechanisms.MemoStore` (in memory, or the service's SQL stores, where it
survives a restart), each chunk is one atomic get-or-create over every device of a call,
and a store refuses (:class:`~deniable.exceptions.PrivacyError`) to give a row to another
mechanism.  :func:`memoized_rows` does the work for one batch of devices: the devices whose
row is new are found first and drawn together in the order of the call (so a seeded fleet
draws exactly the words it drew when the state was kept in dicts), then each chunk is
stored; what is returned is what the store holds, never a draw that lost a race.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from deniable.accounting import KeyIndex, MemoAccess, respondent_keys
from deniable.exceptions import DataError, ParameterTypeError, PrivacyError

__all__ = [
    "LocalStore",
    "checked_store",
    "device_keys",
    "memoized_rows",
    "pack",
    "seen",
    "unpack",
]

Rows = npt.NDArray[np.int64]
#: ``draw(devices, prefix)``: packed rows for the devices at these positions of the call,
#: whose first ``prefix.shape[1]`` chunks must equal ``prefix`` (what the store holds).
Draw = Callable[[npt.NDArray[np.intp], Rows], Rows]


class LocalStore:
    """A minimal :class:`~deniable.accounting.MemoAccess` in this process's memory (the
    default of the counters when no store is given): per question the keys' dense
    indices, their reports (a buffer grown by doubling) and the one mechanism that drew
    them; one lock makes each get-or-create atomic.  A question is refused
    (:class:`~deniable.exceptions.PrivacyError`) to every other mechanism: the store is
    one memo's own."""

    __slots__ = ("_lock", "_memo")

    def __init__(self) -> None:
        self._memo: dict[str, tuple[KeyIndex, Rows, str]] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {
                "memo": {
                    q: (index.copy(), reports[: len(index)].copy(), mechanism)
                    for q, (index, reports, mechanism) in self._memo.items()
                }
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._memo = state["memo"]
        self._lock = threading.Lock()

    def _entry(self, question: str, asked: str) -> tuple[KeyIndex, Rows, str]:
        entry = self._memo.get(question)
        if entry is None:
            return KeyIndex(), np.zeros(0, dtype=np.int64), asked
        if entry[2] != asked:
            raise PrivacyError(
                f"question {question!r}: the devices' state was drawn by {entry[2]}; the "
                f"mechanism {asked} would replay it or draw a second one: refused."
            )
        return entry

    def get_or_create(
        self,
        question: str,
        keys: npt.NDArray[Any],
        create: Callable[[npt.NDArray[np.bool_]], npt.ArrayLike],
        *,
        mechanism: str,
    ) -> Rows:
        with self._lock:
            index, reports, held = self._entry(question, mechanism)
            found = index.find(keys)
            missing = found < 0
            new = np.asarray(create(missing.copy()), dtype=np.int64)
            if not missing.any():
                return reports[found]
            top = len(index) + int(np.count_nonzero(missing))
            if top > reports.size:
                grown = np.full(max(top, 2 * reports.size, 16), -1, dtype=np.int64)
                grown[: reports.size] = reports
                reports = grown
            idx = index.add(keys, found)  # all or nothing
            reports[idx[missing]] = new
            self._memo[question] = (index, reports, held)
            return reports[idx]

    def lookup(self, question: str, keys: npt.NDArray[Any], *, mechanism: str) -> Rows:
        with self._lock:
            index, reports, _ = self._entry(question, mechanism)
            found = index.find(keys)
            hit = found >= 0
            out = np.full(keys.size, -1, dtype=np.int64)
            out[hit] = reports[found[hit]]
            return out


def checked_store(store: Any) -> Any:
    """``store``, or a new :class:`LocalStore` for ``None``; anything else must be a memo
    store."""
    if store is None:
        return LocalStore()
    if not isinstance(store, MemoAccess):
        raise ParameterTypeError(
            "`store` must be a MemoStore (e.g. deniable.mechanisms.InMemoryMemoStore() or "
            f"deniable.service.storage.SqlMemoStore(url)) or None, got {type(store).__name__}."
        )
    return store


_M = TypeVar("_M")


class _FleetMemo(Generic[_M]):
    """What the memoized counters of a fleet share: their mechanism (an instance of the
    subclass's ``_kind``), the memo store of the devices' state (:func:`checked_store`) and
    the name that prefixes its questions, each checked."""

    __slots__ = ("_mechanism", "_name", "_store")
    _kind: ClassVar[type]

    def __init__(self, mechanism: _M, store: Any, name: str) -> None:
        if not isinstance(mechanism, self._kind):
            raise ParameterTypeError(
                f"`mechanism` must be a {self._kind.__name__}, got {type(mechanism).__name__}."
            )
        if not isinstance(name, str) or not name:
            raise ParameterTypeError(f"`name` must be a non-empty string, got {name!r}.")
        self._mechanism = mechanism
        self._store = checked_store(store)
        self._name = name

    @property
    def mechanism(self) -> _M:
        """The mechanism whose reports are memoized."""
        return self._mechanism

    @property
    def store(self) -> Any:
        """Where the devices' state (what they drew) lives."""
        return self._store


def device_keys(devices: Any, n: int | None = None) -> npt.NDArray[Any]:
    """``devices`` as canonical distinct keys (``n`` of them, one per value, if given), or a
    clear error."""
    if isinstance(devices, str | bytes):
        raise ParameterTypeError("`devices` must be a sequence of device keys, got a string.")
    keys = respondent_keys(devices, unique=True, name="devices")
    if n is not None and keys.size != n:
        raise DataError(
            f"`devices` must hold {n} distinct device keys, one per value, got {keys.size}."
        )
    return keys


def pack(values: Rows, width: int, per: int) -> Rows:
    """Rows of small non-negative integers (``n x d``, each below ``2**width``) packed
    ``per`` to a non-negative ``int64`` report: ``n x ceil(d / per)``, value ``i`` of a
    chunk at bits ``width * i``."""
    n, d = values.shape
    chunks = -(-d // per)
    out = np.zeros((n, chunks), dtype=np.int64)
    # value i of each chunk, OR-ed in place (the values are below 2**width, so OR is the
    # sum); only the d given values are touched, never the padding of the last chunk
    for i in range(min(per, d)):
        part = np.asarray(values[:, i::per], dtype=np.int64)
        out[:, : part.shape[1]] |= part << (width * i)
    return out


def unpack(reports: Rows, width: int, per: int, d: int) -> Rows:
    """The inverse of :func:`pack`: ``n x d`` values."""
    j = np.arange(d, dtype=np.int64)
    return np.asarray((reports[:, j // per] >> (width * (j % per))) & ((1 << width) - 1))


def memoized_rows(
    store: Any,
    questions: Callable[[int], list[str]],
    keys: npt.NDArray[Any],
    labels: npt.NDArray[np.int64],
    draw: Draw,
    *,
    mechanism: str,
) -> Rows:
    """The stored row of each device for its label (``n x chunks`` packed reports), the
    rows a device lacks drawn and stored (module docstring).

    ``questions(label)`` names the questions of a label's chunks.  Devices with no row yet
    (chunk 0 missing) are drawn at once, in the order of the call, by ``draw``; a device
    whose earlier chunks were stored by a concurrent call gets later chunks drawn given
    those (``draw`` with their prefix), so a row is always one consistent draw.
    """
    n = keys.size
    # the devices of each label, in call order (a radix sort of 16-bit labels)
    small = n and int(labels.min()) >= 0 and int(labels.max()) < 1 << 16
    order = np.argsort(labels.astype(np.uint16) if small else labels, kind="stable")
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    groups = [
        (int(labels[part[0]]), part, keys[part]) for part in np.split(order, cuts) if part.size
    ]
    chunks = len(questions(groups[0][0])) if groups else 0
    fresh = np.zeros(n, dtype=np.bool_)
    for label, rows, sub in groups:
        fresh[rows] = store.lookup(questions(label)[0], sub, mechanism=mechanism) < 0
    drawn = np.full((n, chunks), -1, dtype=np.int64)
    new = np.flatnonzero(fresh)
    if new.size:
        drawn[new] = draw(new, np.zeros((new.size, 0), dtype=np.int64))
    out = np.full((n, chunks), -1, dtype=np.int64)
    for label, rows, sub in groups:
        for c, question in enumerate(questions(label)):

            def create(missing: npt.NDArray[np.bool_], rows: Any = rows, c: int = c) -> Rows:
                sel = rows[missing]
                # a draw of this call fits where the store holds its earlier chunks
                ok = (drawn[sel, 0] >= 0) & (drawn[sel, :c] == out[sel, :c]).all(axis=1)
                if not ok.all():
                    bad = sel[~ok]
                    drawn[bad] = draw(bad, out[bad, :c])
                return np.asarray(drawn[sel, c], dtype=np.int64)

            out[rows, c] = store.get_or_create(question, sub, create, mechanism=mechanism)
    return out


def seen(
    store: Any, questions: list[str], keys: npt.NDArray[Any], *, mechanism: str
) -> npt.NDArray[np.int64]:
    """For each device, the number of ``questions`` (one per label) it holds a report of:
    one lookup per question, over every device at once."""
    count = np.zeros(keys.size, dtype=np.int64)
    for question in questions:
        count += store.lookup(question, keys, mechanism=mechanism) >= 0
    return count
