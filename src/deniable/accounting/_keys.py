"""Respondent keys: opaque ids or tokens, checked once and mapped to dense indices.

A respondent key is any hashable value that is not ``None``, not a bool and not a
non-integer number: an integer id (Python or numpy, of any size), a string token, bytes,
a UUID.  Floats are refused because ``1.0 == 1`` would merge two keys and ``nan != nan``
could never be found again.  :func:`respondent_keys` turns what a caller passes into the
canonical form every store takes: a 1-D numpy array, ``int64`` when every key is an integer
that fits (the vectorized path), ``object`` otherwise (integers in an object array are Python
ints, strings are ``str``).

:class:`KeyIndex` maps keys to dense indices ``0, 1, 2, ...`` in the order they are first
added, so that what a store keeps per respondent lives in compact arrays whatever the keys
look like: id ``99_999_999`` or a 40-character token costs what id ``0`` costs.  Integer
keys are found with a binary search over a sorted array (``np.searchsorted``: no Python loop
per key); other keys with a dict.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, ParameterTypeError

__all__ = ["KeyIndex", "Keys", "first_repeat", "format_key", "respondent_keys"]

#: A canonical array of respondent keys (``int64`` or ``object``).
Keys = npt.NDArray[Any]
IdArray = npt.NDArray[np.int64]

_LO, _HI = -(2**63), 2**63 - 1
#: The largest dense index a ``KeyIndex`` table (``int32``) holds.
_TABLE_TOP = 2**31 - 1


def format_key(key: Any) -> str:
    """A key as an error message shows it: integers bare, everything else by ``repr``."""
    if isinstance(key, numbers.Integral) and not isinstance(key, bool | np.bool_):
        return str(int(key))
    return repr(key)


def _not_a_key(name: str, why: str) -> ParameterTypeError:
    return ParameterTypeError(
        f"`{name}` must hold respondent keys (integer ids or string tokens; {why}."
    )


def _canonical(key: Any, name: str) -> Hashable:
    if key is None or isinstance(key, bool | np.bool_):
        raise _not_a_key(name, f"not None, a bool or a float), got {key!r}")
    if isinstance(key, numbers.Integral):
        return int(key)
    if isinstance(key, numbers.Number):
        raise _not_a_key(
            name,
            "not a float, which could equal another key or be nan), got "
            f"{type(key).__name__} {key!r}",
        )
    if isinstance(key, np.str_):
        return str(key)
    if isinstance(key, np.bytes_):
        return bytes(key)
    try:
        hash(key)
    except TypeError:
        raise ParameterTypeError(
            f"`{name}` must hold hashable respondent keys (integer ids or string tokens), got "
            f"unhashable {type(key).__name__} {key!r}."
        ) from None
    return key  # type: ignore[no-any-return]


def respondent_keys(respondents: Any, *, unique: bool, name: str = "respondents") -> Keys:
    """``respondents`` as a canonical 1-D key array (see the module docstring).

    A scalar is one key.  With ``unique``, a key given twice raises
    :class:`~deniable.exceptions.DataError` (a spend or a memoized round charges each
    respondent once).
    """
    if isinstance(respondents, np.ndarray):
        arr = respondents
    elif isinstance(respondents, range):
        arr = np.arange(respondents.start, respondents.stop, respondents.step, dtype=np.int64)
    elif isinstance(respondents, str | bytes) or not isinstance(respondents, Iterable):
        arr = np.empty(1, dtype=object)  # one key
        arr[0] = respondents
    else:
        if not hasattr(respondents, "__len__"):  # an iterator or generator of keys
            respondents = list(respondents)
        try:
            arr = np.asarray(respondents)
            kind = {"U": str, "S": bytes}.get(arr.dtype.kind)
            # numpy turns [1, "a"] into ["1", "a"] and [1, True] into [1, 1]: keep each key
            # as it was given (and have a bool refused below)
            # (over the distinct types of the keys: one C-speed pass, not one call per key)
            types = set(map(type, respondents))
            if kind is not None:
                mixed = not all(issubclass(t, kind) for t in types)
            else:
                mixed = arr.dtype.kind in "iu" and bool(types & {bool, np.bool_})
        except ValueError:  # ragged, e.g. ["a", ["b"]]: each item is checked as a key below
            mixed = True
        if mixed:
            arr = np.empty(len(respondents), dtype=object)
            arr[:] = list(respondents)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise DataError(
            f"`{name}` must be a 1-D array of respondent keys, got an array of shape {arr.shape}."
        )
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    dkind = arr.dtype.kind
    out: Keys
    if dkind == "i" or (dkind == "u" and int(arr.max()) <= _HI):
        out = arr.astype(np.int64, copy=False)
    elif dkind in "uUSO":
        items = [_canonical(k, name) for k in arr.tolist()]
        if all(type(k) is int and _LO <= k <= _HI for k in items):
            out = np.array(items, dtype=np.int64)
        else:
            out = np.empty(len(items), dtype=object)
            out[:] = items
    elif dkind == "b":
        raise ParameterTypeError(
            f"`{name}` must hold respondent keys (integer ids or string tokens), got booleans."
        )
    else:
        raise ParameterTypeError(
            f"`{name}` must hold respondent keys (integer ids or string tokens), got dtype "
            f"{arr.dtype} (a float could equal another key or be nan)."
        )
    if unique and (rep := first_repeat(out)) is not None:
        raise DataError(
            f"`{name}` must not repeat a respondent within one call, got {format_key(rep)} "
            "twice (ask again in a separate call)."
        )
    return out


def first_repeat(keys: npt.NDArray[Any]) -> Any:
    """The first key (the smallest, for integer ids) that occurs twice in ``keys``, or
    ``None``."""
    if keys.size < 2:
        return None
    if keys.dtype != object:
        if bool((keys[1:] > keys[:-1]).all()):  # increasing ids (e.g. arange): no repeat
            return None
        lo, hi = int(keys.min()), int(keys.max())
        if hi - lo < 4 * keys.size:  # dense ids: count them over their span, linear time
            counts = np.bincount(keys - lo, minlength=1)
            dups = np.flatnonzero(counts > 1)
            return int(dups[0]) + lo if dups.size else None
        s = np.sort(keys)
        dup = s[1:][s[1:] == s[:-1]]
        return int(dup[0]) if dup.size else None
    seen: set[Any] = set()
    for k in keys.tolist():
        if k in seen:
            return k
        seen.add(k)
    return None


def _int_mask(keys: Keys) -> npt.NDArray[np.bool_]:
    """Which keys of an object array are integers that fit ``int64`` (they are indexed with
    the integer keys, so an id is the same key however it was passed)."""
    return np.fromiter(
        (type(k) is int and _LO <= k <= _HI for k in keys.tolist()),
        dtype=np.bool_,
        count=keys.size,
    )


class KeyIndex:
    """Respondent keys mapped to dense indices ``0 .. len - 1`` in order of first addition.

    Integer keys are kept sorted with their dense indices, and found by binary search; when
    they fill their range densely enough (a span at most ``_DENSITY`` times their number,
    plus a little), a direct table over the span (``int32`` dense indices) is built on the
    next lookup instead, so that ids ``0 .. n - 1``, or a tenth of them, are found by one
    array index.  New keys inside the table's span are written into it and kept aside,
    merged into the sorted arrays when they reach a quarter of them or the arrays are
    needed (a question that gains a few devices a round keeps its table and does not copy
    its arrays every round); a key outside the span drops the table, to be rebuilt on the
    next lookup if the keys are still dense.  Other keys are in a dict.  Memory stays
    proportional to the number of keys (the table: at most ``4 _DENSITY`` bytes a key),
    never to their size.

    Not thread-safe on its own: the store that owns it holds its lock.  :meth:`add` is all
    or nothing; the sorted arrays are replaced, never written in place, so a copy may share
    them (the table, written in place, is never shared: a copy builds its own).
    """

    __slots__ = ("_int_keys", "_int_pos", "_n", "_other", "_pending", "_table")

    #: A direct table is built while the span of the integer keys is at most
    #: ``_DENSITY * count + _SLACK`` (and the dense indices fit its ``int32`` entries).
    _DENSITY = 16
    _SLACK = 1024

    def __init__(self) -> None:
        self._int_keys: IdArray = np.zeros(0, dtype=np.int64)  # sorted
        self._int_pos: IdArray = np.zeros(0, dtype=np.int64)  # dense index of each
        self._other: dict[Hashable, int] = {}
        self._n = 0
        self._table: npt.NDArray[np.int32] | None = None  # dense index by key - min key, -1: none
        # (sorted keys, dense indices) added inside the table's span, not yet merged
        self._pending: list[tuple[IdArray, IdArray]] = []

    def __len__(self) -> int:
        return self._n

    def __getstate__(self) -> dict[str, Any]:
        self._flush()
        return {"int_keys": self._int_keys, "int_pos": self._int_pos, "other": self._other}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._int_keys = state["int_keys"]
        self._int_pos = state["int_pos"]
        self._other = state["other"]
        self._n = int(self._int_keys.size) + len(self._other)
        self._table = None
        self._pending = []

    def copy(self) -> KeyIndex:
        self._flush()
        new = KeyIndex()
        new.__setstate__(
            {"int_keys": self._int_keys, "int_pos": self._int_pos, "other": dict(self._other)}
        )
        return new  # the sorted arrays are never written in place, so they can be shared

    @property
    def nbytes(self) -> int:
        """Bytes held by the integer arrays (the dict of other keys is not counted)."""
        self._flush()
        table = 0 if self._table is None else self._table.nbytes
        return int(self._int_keys.nbytes + self._int_pos.nbytes + table)

    def _flush(self) -> None:
        """Merge the pending keys into the sorted arrays (the table holds them already)."""
        if self._pending:
            keys = np.concatenate([k for k, _ in self._pending])
            pos = np.concatenate([p for _, p in self._pending])
            order = np.argsort(keys, kind="stable")  # sorted runs: merged (timsort)
            self._int_keys, self._int_pos = self._merged(keys[order], pos[order])
            self._pending = []

    def _dense_table(self) -> npt.NDArray[np.int32] | None:
        k = self._int_keys
        if self._table is None and k.size and self._n <= _TABLE_TOP:
            span = int(k[-1]) - int(k[0]) + 1
            if span <= self._DENSITY * k.size + self._SLACK:
                table = np.full(span, -1, dtype=np.int32)
                table[k - k[0]] = self._int_pos
                self._table = table
        return self._table

    def _find_ints(self, ids: IdArray) -> IdArray:
        if self._table is None:
            self._flush()  # (after a failed add: the pending keys without their table)
        k = self._int_keys
        if k.size == 0:
            return np.full(ids.size, -1, dtype=np.int64)
        table = self._dense_table()
        if table is not None:
            lo = k[0]
            out: IdArray
            if ids.size and lo <= ids.min() and ids.max() <= k[-1]:  # all inside the span
                out = table[ids - lo if lo else ids].astype(np.int64)
                return out
            inside = (ids >= lo) & (ids <= k[-1])
            off = ids - lo  # may wrap around outside the span: only used inside it
            out = np.full(ids.size, -1, dtype=np.int64)
            out[inside] = table[off[inside]]
            return out
        if ids.size > 4096 and not bool((ids[1:] >= ids[:-1]).all()):
            # a binary search per random key misses the cache at every step; on sorted keys
            # numpy's search narrows from the last answer: sort, search, put back
            order = np.argsort(ids)
            pos = np.empty(ids.size, dtype=np.intp)
            pos[order] = np.searchsorted(k, ids[order])
        else:
            pos = np.searchsorted(k, ids)
        pos = np.minimum(pos, k.size - 1)
        hit = k[pos] == ids
        return np.where(hit, self._int_pos[pos], -1)

    def find(self, keys: Keys) -> IdArray:
        """The dense index of each key, ``-1`` for a key never added."""
        if keys.dtype != object:
            return self._find_ints(keys)
        out = np.full(keys.size, -1, dtype=np.int64)
        ints = _int_mask(keys)
        if ints.any():
            out[ints] = self._find_ints(keys[ints].astype(np.int64))
        others = np.flatnonzero(~ints)
        if others.size:
            get = self._other.get
            out[others] = [get(k, -1) for k in keys[others].tolist()]
        return out

    def add(self, keys: Keys, found: IdArray) -> IdArray:
        """Add the keys with ``found == -1`` (``found`` is :meth:`find` of ``keys``) and
        return the dense index of every key.  All or nothing: if adding fails midway (a
        ``MemoryError``), the index is restored before the error propagates."""
        missing = found < 0
        if not missing.any():
            return found
        saved = (self._int_keys, self._int_pos, self._n, list(self._pending))
        added: list[Hashable] = []
        try:
            return self._add(keys, found, missing, added)
        except BaseException:
            # the table may hold keys written in place before the failure: dropped (a
            # cache: rebuilt from the arrays and the pending keys on the next lookup)
            self._int_keys, self._int_pos, self._n, self._pending = saved
            self._table = None
            for k in added:
                del self._other[k]
            raise

    def _merge(self, srt: IdArray, pos: IdArray) -> None:
        """Add new integer keys (sorted, absent) and their dense indices: written into the
        table and kept pending if they are inside its span, else merged (linear time) and
        the table dropped."""
        old_keys, table = self._int_keys, self._table
        if not old_keys.size:
            self._int_keys, self._int_pos, self._table = srt, pos.astype(np.int64), None
            return
        if (
            table is not None
            and old_keys[0] <= srt[0]
            and srt[-1] <= old_keys[-1]
            and int(pos.max()) <= _TABLE_TOP
        ):
            # inside the span: old_keys[0], the table's base, is still the smallest key
            off, val = srt - old_keys[0], pos.astype(np.int32)
            self._pending.append((srt, pos))
            table[off] = val
            if sum(k.size for k, _ in self._pending) > old_keys.size // 4:
                self._flush()
            return
        self._flush()
        self._int_keys, self._int_pos = self._merged(srt, pos)
        self._table = None  # a key outside the span (or an index past int32): rebuilt lazily

    def _merged(self, srt: IdArray, pos: IdArray) -> tuple[IdArray, IdArray]:
        """The sorted arrays with new keys (sorted, absent) merged in: linear time."""
        old_keys, old_pos = self._int_keys, self._int_pos
        # where each new key lands in the merged array: its rank among the old, plus its own
        dest = np.searchsorted(old_keys, srt) + np.arange(srt.size)
        rest = np.ones(old_keys.size + srt.size, dtype=np.bool_)
        rest[dest] = False
        int_keys = np.empty(rest.size, dtype=np.int64)
        int_pos = np.empty(rest.size, dtype=np.int64)
        int_keys[dest], int_keys[rest] = srt, old_keys
        int_pos[dest], int_pos[rest] = pos, old_pos
        return int_keys, int_pos

    def _add(
        self, keys: Keys, found: IdArray, missing: npt.NDArray[np.bool_], added: list[Hashable]
    ) -> IdArray:
        out = found.copy()
        rows = np.flatnonzero(missing)
        fresh = keys[rows]
        n = self._n
        if keys.dtype != object:
            # strictly ascending (e.g. ids in order): as is, and distinct
            if distinct := bool((fresh[1:] > fresh[:-1]).all()):
                perm, srt = np.arange(fresh.size), fresh
            else:
                perm = np.argsort(fresh, kind="stable")
                srt = fresh[perm]
            if distinct or srt.size < 2 or bool((srt[1:] != srt[:-1]).all()):
                # distinct new integer ids (the usual case): row r gets index n + r
                self._merge(srt, n + perm)
                out[rows] = np.arange(n, n + rows.size, dtype=np.int64)
                self._n = n + int(rows.size)
                return out
            ints, int_rows, other_rows = fresh, rows, rows[:0]
        else:
            mask = _int_mask(fresh)
            ints, int_rows, other_rows = fresh[mask].astype(np.int64), rows[mask], rows[~mask]
        # distinct new keys and the row where each first occurs
        uniq, first, inverse = np.unique(ints, return_index=True, return_inverse=True)
        firsts: dict[Hashable, int] = {}
        for r, k in zip(other_rows.tolist(), keys[other_rows].tolist(), strict=True):
            firsts.setdefault(k, r)
        # dense indices in order of first occurrence
        first_rows = np.concatenate([int_rows[first], np.fromiter(firsts.values(), np.int64)])
        dense = np.empty(first_rows.size, dtype=np.int64)
        dense[np.argsort(first_rows, kind="stable")] = np.arange(
            n, n + first_rows.size, dtype=np.int64
        )
        if uniq.size:
            pos = dense[: uniq.size]
            self._merge(uniq, pos)
            out[int_rows] = pos[inverse.reshape(-1)]
        if firsts:
            other = self._other
            for k, i in zip(firsts, dense[uniq.size :].tolist(), strict=True):
                other[k] = i
                added.append(k)
            get = other.__getitem__
            out[other_rows] = [get(k) for k in keys[other_rows].tolist()]
        self._n = n + int(first_rows.size)
        return out

    def keys(self) -> Keys:
        """Every key, in order of dense index (``int64`` if all are integers)."""
        self._flush()
        if not self._other:
            out = np.empty(self._n, dtype=np.int64)
            out[self._int_pos] = self._int_keys
            return out
        obj = np.empty(self._n, dtype=object)
        obj[self._int_pos] = self._int_keys.tolist()
        for k, i in self._other.items():
            obj[i] = k
        return obj
