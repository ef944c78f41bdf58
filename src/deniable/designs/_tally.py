"""The tally: the sufficient statistic of a mechanism, counts that add across shards.

A :class:`Tally` is a read-only ``int64`` numpy array of counts plus the identity of the
mechanism that produced it (its key, :func:`~deniable.designs.mechanism_key`; ``None`` for
a tally built by hand).  Tallies add (``+``, ``sum()``), refuse to add across mechanisms,
pickle, and serialize to JSON (:meth:`Tally.to_json`) and to a compact binary form
(:meth:`Tally.to_bytes`), so a process pool, a Dask job and a database row can each hold
one.  Building and adding are O(k) numpy work.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import load_json
from deniable.common import validation as v
from deniable.designs._counting import ValueCounter
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

__all__ = ["MAX_COUNT", "SCHEMA", "Tally"]


#: Largest number of reports in a tally (estimates, SEs and intervals use doubles; squares
#: of larger counts would overflow them).
MAX_COUNT = 10**18
_WHY = "estimates and intervals are computed with doubles"

#: The ``schema`` field of the JSON form.
SCHEMA = "deniable.tally/1"

#: The binary form: magic, version (u16), flags (u8: 1 = bound), key length (u32), the key
#: (UTF-8), the number of counts (u64), then the counts as little-endian int64.
MAGIC = b"DNTL"
VERSION = 1
_HEADER = struct.Struct("<4sHBI")
_LENGTH = struct.Struct("<Q")


_BOOLS = frozenset((bool, np.bool_))


def _first_bad(values: Any) -> None:
    """Raise the per-entry message (``counts[i]``) for the first invalid entry."""
    for i, c in enumerate(values):
        v.integer(f"counts[{i}]", c, minimum=0, maximum=MAX_COUNT, why=_WHY)


def _as_counts(counts: Any) -> npt.NDArray[np.int64]:
    """A fresh, validated, read-only int64 array from a sequence or array of counts."""
    if isinstance(counts, str | bytes | Mapping):
        raise ParameterTypeError(
            f"`counts` must be a sequence of whole numbers, got {type(counts).__name__}."
        )
    # numpy would read True as 1; the entries' types are collected at C speed (bool and
    # numpy.bool_ cannot be subclassed, so an exact type test finds every boolean)
    if isinstance(counts, list | tuple) and not _BOOLS.isdisjoint(map(type, counts)):
        _first_bad(counts)
    try:
        arr = np.array(counts)
    except (OverflowError, ValueError, TypeError):
        arr = np.array(list(counts), dtype=object)
    if arr.ndim != 1:
        if arr.ndim == 0:
            raise ParameterTypeError(
                f"`counts` must be a sequence of whole numbers, got {type(counts).__name__} "
                f"{counts!r}."
            )
        raise DataError(f"`counts` must be one-dimensional, got shape {arr.shape}.")
    if arr.dtype.kind == "u":
        if arr.size and arr.max() > MAX_COUNT:
            _first_bad(arr.tolist())
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "f":
        ok = np.isfinite(arr) & (arr == np.floor(arr)) & (arr >= 0) & (arr <= MAX_COUNT)
        if not np.all(ok):
            _first_bad(arr.tolist())
        arr = arr.astype(np.int64)
    elif arr.dtype.kind != "i":
        _first_bad(list(counts) if arr.dtype.kind == "O" else arr.tolist())
        arr = np.array([int(c) for c in arr.tolist()], dtype=np.int64)
    else:
        arr = arr.astype(np.int64, copy=False)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) > MAX_COUNT):
        _first_bad(arr.tolist())
    if arr.size < 2:
        raise DataError(f"`counts` needs at least 2 report values, got {arr.size}.")
    _check_total(arr)
    if arr is counts or not arr.flags.owndata:  # np.array copied already; be sure
        arr = arr.copy()
    arr.setflags(write=False)
    return arr


def _check_total(arr: npt.NDArray[np.int64]) -> int:
    """The sum of non-negative counts each at most MAX_COUNT, if at most MAX_COUNT."""
    # a float sum first: an int64 sum of many entries near 10**18 could overflow
    if float(arr.sum(dtype=np.float64)) > 2.0 * MAX_COUNT:
        total = sum(int(c) for c in arr.tolist())
    else:
        total = int(arr.sum())
    if total > MAX_COUNT:
        raise DataError(
            f"`counts` must add up to at most {v.fmt_limit(MAX_COUNT)} ({_WHY}), got {total}."
        )
    return total


def _key(mechanism: Any) -> str | None:
    if mechanism is None or isinstance(mechanism, str):
        return mechanism
    raise ParameterTypeError(
        f"`mechanism` must be a mechanism key (str) or None, got {type(mechanism).__name__}."
    )


class Tally:
    """Counts of each cell of a mechanism's tally, with the mechanism's identity.

    ``counts[r]`` is the number of reports equal to ``r`` (every design here; a
    support-count mechanism documents its own cells).  ``mechanism`` is the key of the
    mechanism that produced the tally (``design.tally(reports)`` binds it), or ``None`` for
    a tally built by hand (``Tally(counts)``, :meth:`binary`): ``design.estimate`` binds an
    unbound tally of the right length, and refuses one bound to another mechanism.

    Tallies are immutable values: equal when their counts and mechanism are equal, and
    hashable.  They add with ``+`` and ``sum()``; adding tallies of different mechanisms
    (or a bound and an unbound one) raises :class:`~deniable.exceptions.DataError`.

    >>> t = Tally([2, 3])
    >>> t.n, t.yes, (t + t).counts.tolist(), sum([t, t, t]).n
    (5, 3, [4, 6], 15)
    >>> Tally.from_json(t.to_json()) == t == Tally.from_bytes(t.to_bytes())
    True
    """

    __slots__ = ("_counts", "_mechanism", "_n")
    _counts: npt.NDArray[np.int64]
    _mechanism: str | None
    _n: int

    def __init__(self, counts: Any, mechanism: str | None = None) -> None:
        arr = _as_counts(counts)
        self._init(arr, _key(mechanism), int(arr.sum()))

    def _init(self, arr: npt.NDArray[np.int64], mechanism: str | None, n: int) -> None:
        object.__setattr__(self, "_counts", arr)
        object.__setattr__(self, "_mechanism", mechanism)
        object.__setattr__(self, "_n", n)

    @classmethod
    def _trusted(cls, arr: npt.NDArray[np.int64], mechanism: str | None, n: int) -> Tally:
        """A tally from an array this module built and checked (no copy, no re-check)."""
        out = cls.__new__(cls)
        arr.setflags(write=False)
        out._init(arr, mechanism, n)
        return out

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Tally is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Tally, (self._counts, self._mechanism))

    # ---- construction

    @classmethod
    def binary(cls, yes: int, n: int) -> Tally:
        """The (unbound) tally of ``yes`` "yes" reports among ``n``."""
        n = v.integer("n", n, minimum=1, maximum=MAX_COUNT, why=_WHY)
        yes = v.integer("yes", yes, minimum=0)
        if yes > n:
            raise DataError(f"`yes` must be in [0, n] = [0, {n}], got {yes}.")
        return cls._trusted(np.array([n - yes, yes], dtype=np.int64), None, n)

    @classmethod
    def from_reports(
        cls, reports: npt.ArrayLike, size: int = 2, *, mechanism: str | None = None
    ) -> Tally:
        """Count ``reports`` (integers in ``0..size-1``), blockwise with ``bincount``
        (``uint16`` reports of at most 16 values four at a time: ``designs/_counting.py``)."""
        key = _key(mechanism)
        arr = v.reports_array("reports", reports, categories=size)
        if arr.size > MAX_COUNT:  # pragma: no cover - needs 10**18 reports in memory
            raise DataError(f"too many reports for one tally (at most {MAX_COUNT}).")
        if arr.dtype == np.uint8 and size == 2:
            yes = int(np.count_nonzero(arr))
            return cls._trusted(np.array([arr.size - yes, yes], dtype=np.int64), key, arr.size)
        counter = ValueCounter(size)
        counter.add(arr)
        return cls._trusted(counter.counts(), key, int(arr.size))

    # ---- values

    @property
    def counts(self) -> npt.NDArray[np.int64]:
        """The counts: a read-only int64 array."""
        return self._counts

    @property
    def mechanism(self) -> str | None:
        """The key of the mechanism that produced the tally (``None``: unbound)."""
        return self._mechanism

    @property
    def n(self) -> int:
        """Number of reports (the sum of the counts)."""
        return self._n

    @property
    def yes(self) -> int:
        """Number of reports equal to 1 (binary tallies only)."""
        if self._counts.size != 2:
            raise DataError(
                f"`yes` is defined for binary tallies, this one has {self._counts.size} values."
            )
        return int(self._counts[1])

    def bind(self, mechanism: str) -> Tally:
        """This tally bound to ``mechanism`` (a key); an error if bound to another one.

        Designs bind with ``design.bind(tally)``, which also checks the length."""
        key = _key(mechanism)
        if self._mechanism == key:
            return self
        if self._mechanism is not None:
            raise DataError(
                f"the tally belongs to mechanism {self._mechanism}, not {key}: tallies of "
                "different mechanisms do not mix."
            )
        return Tally._trusted(self._counts, key, self._n)

    # ---- arithmetic

    def __add__(self, other: object) -> Tally:
        if not isinstance(other, Tally):
            return NotImplemented
        if other._mechanism != self._mechanism:
            raise DataError(_mix_message(self._mechanism, other._mechanism))
        if other._counts.size != self._counts.size:
            raise DataError(
                f"cannot add tallies of {self._counts.size} and {other._counts.size} report values."
            )
        total = self._n + other._n
        if total > MAX_COUNT:
            raise DataError(
                f"the sum of the tallies must hold at most {v.fmt_limit(MAX_COUNT)} reports "
                f"({_WHY}), got {total}."
            )
        # each entry <= its tally's n <= 10**18: the int64 sum cannot overflow
        return Tally._trusted(np.add(self._counts, other._counts), self._mechanism, total)

    def __radd__(self, other: object) -> Tally:
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self  # sum(tallies) starts from 0
        return NotImplemented

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tally):
            return NotImplemented
        return self._mechanism == other._mechanism and bool(
            np.array_equal(self._counts, other._counts)
        )

    def __hash__(self) -> int:
        return hash((self._mechanism, self._counts.tobytes()))

    def __repr__(self) -> str:
        body = np.array2string(self._counts, separator=", ", threshold=32)
        bound = "" if self._mechanism is None else f", mechanism={self._mechanism!r}"
        return f"Tally({body}{bound})"

    # ---- serial forms

    def to_dict(self) -> dict[str, Any]:
        """``{"schema": "deniable.tally/1", "mechanism": key or None, "counts": [...]}``."""
        return {"schema": SCHEMA, "mechanism": self._mechanism, "counts": self._counts.tolist()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Tally:
        """The tally of :meth:`to_dict` (every field checked; DataError if malformed)."""
        if not isinstance(data, Mapping):
            raise DataError(f"a tally must be a mapping, got {type(data).__name__}.")
        if set(data) != {"schema", "mechanism", "counts"}:
            raise DataError(
                "a tally must have exactly the fields schema, mechanism, counts, got "
                f"{', '.join(sorted(map(str, data)))}."
            )
        if data["schema"] != SCHEMA:
            raise DataError(f"`schema` must be {SCHEMA!r}, got {data['schema']!r}.")
        key = data["mechanism"]
        if key is not None and not isinstance(key, str):
            raise DataError(f"`mechanism` must be a string or null, got {key!r}.")
        counts = data["counts"]
        if not isinstance(counts, list) or not all(type(c) is int for c in counts):
            raise DataError("`counts` must be a list of whole numbers (JSON integers).")
        try:
            arr: Any = np.array(counts, dtype=np.int64)
        except OverflowError:
            arr = counts  # beyond int64: the constructor names the entry
        return _data_errors(lambda: cls(arr, key))

    def to_json(self) -> str:
        """Compact JSON of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> Tally:
        """The tally of :meth:`to_json`."""
        return cls.from_dict(load_json(text, source="the tally"))

    def to_bytes(self) -> bytes:
        """The compact binary form: a header (magic ``DNTL``, version, key) and the counts as
        little-endian int64."""
        key = b"" if self._mechanism is None else self._mechanism.encode("utf-8")
        flags = 0 if self._mechanism is None else 1
        return b"".join(
            (
                _HEADER.pack(MAGIC, VERSION, flags, len(key)),
                key,
                _LENGTH.pack(self._counts.size),
                self._counts.astype("<i8", copy=False).tobytes(),
            )
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> Tally:
        """The tally of :meth:`to_bytes` (magic, version and lengths checked)."""
        buf = memoryview(bytes(data))
        if len(buf) < _HEADER.size:
            raise DataError(f"a binary tally needs at least {_HEADER.size} bytes, got {len(buf)}.")
        magic, version, flags, key_len = _HEADER.unpack_from(buf)
        if magic != MAGIC:
            raise DataError(f"not a binary tally: magic {bytes(magic)!r}, expected {MAGIC!r}.")
        if version != VERSION:
            raise DataError(f"binary tally version {version} is not supported (only {VERSION}).")
        if flags not in (0, 1) or (flags == 0 and key_len):
            raise DataError(f"binary tally flags must be 0 (unbound) or 1 (bound), got {flags}.")
        at = _HEADER.size
        if len(buf) < at + key_len + _LENGTH.size:
            raise DataError("binary tally truncated in its header.")
        try:
            key = bytes(buf[at : at + key_len]).decode("utf-8") if flags else None
        except UnicodeDecodeError:
            raise DataError("binary tally: the mechanism key is not UTF-8.") from None
        at += key_len
        (k,) = _LENGTH.unpack_from(buf, at)
        at += _LENGTH.size
        if len(buf) - at != 8 * k:
            raise DataError(
                f"binary tally holds {len(buf) - at} bytes of counts, expected 8 * {k}."
            )
        counts = np.frombuffer(buf[at:], dtype="<i8").astype(np.int64)
        return _data_errors(lambda: cls(counts, key))


def _data_errors(build: Any) -> Tally:
    """Run ``build``; a bad count in serialized data is a DataError."""
    try:
        tally: Tally = build()
    except (ParameterError, ParameterTypeError) as exc:
        raise DataError(str(exc)) from None
    return tally


def _mix_message(a: str | None, b: str | None) -> str:
    if a is None or b is None:
        bound = a if b is None else b
        return (
            f"cannot add an unbound tally (built by hand) to a tally of mechanism {bound}: bind "
            "it first with design.bind(tally) (or build it with design.tally_counts(counts))."
        )
    return f"cannot add tallies of different mechanisms: {a} and {b}."
