"""What the two count mean sketches share: the strings they take, the keyed string hash of
each sketch row, the reports of the plain sketch and the estimate of candidate strings.

**Strings.**  A value is a ``str`` or UTF-8 ``bytes``, non-empty and at most ``max_bytes``
bytes in UTF-8 (a parameter of the sketch); bytes that are not valid UTF-8 are refused.
Two values are the same string when their UTF-8 bytes are equal.

**The hash of row ``j``** (``deniable.cms/1``, salted by ``salt``, a 32-bit integer).  A
string ``s`` is first reduced to a 33-bit integer, then hashed by the multiply-add-shift
family of ``deniable.oracles._hashing`` (Dietzfelbinger 1996) with seeds of its own per row:

    x(s)     = the top 33 bits of SHA-256("deniable.cms/1" || 0x00 || utf-8 s) (big-endian),
    (a_j, b_j) = bytes 0..7 and 8..15, little-endian, of SHA-256("deniable.cms/1:<salt>:<j>"),
    h_j(s)   = ((((a_j x + b_j) mod 2**64) >> 32) m) >> 32.

SHA-256 is in every browser (WebCrypto) and the rest is 64-bit integer arithmetic, so a
JavaScript client reproduces it with ``BigInt`` (``tests/vectors/oracles.json`` has the
columns of each case's strings).  On inputs below ``2**33`` the family is strongly
universal: for ``x(s) != x(s')`` the pair of 32-bit hashes is uniform, so two strings share
the column of a row with probability exactly ``c = collision_probability(m)`` (``1 / m``
for ``m`` a power of two, within ``2**-64`` of it otherwise); two distinct strings share
``x`` with probability ``2**-33`` (then every column).  The seeds of the rows come from a
cryptographic hash of the salt and the row, so for a salt drawn at random the rows behave
as independent draws of the family: that is the randomness over which the sketch's estimate
is unbiased (``deniable.oracles._cms``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.exceptions import DataError, DeniableError, ParameterError, ParameterTypeError
from deniable.results import Result, Table, normal_quantile

__all__ = ["SKETCH_HASH", "SketchEstimate", "SketchReports", "row_seeds", "sketch_strings"]

FloatArray = npt.NDArray[np.float64]
_32 = np.uint64(32)
#: The name (and version) of the sketches' string hash.
SKETCH_HASH = "deniable.cms/1"
#: Largest ``max_bytes`` a sketch takes.
MAX_STRING_BYTES = 1 << 16


def sketch_strings(name: str, values: Any, max_bytes: int) -> list[bytes]:
    """``values`` (a ``str``, ``bytes`` or a sequence of them) as their UTF-8 bytes, each
    checked: non-empty, at most ``max_bytes`` bytes, valid UTF-8; an error names ``name``,
    the position and what was wrong.

    >>> sketch_strings("values", ["a", b"\\xc3\\xa9"], 8)
    [b'a', b'\\xc3\\xa9']
    """
    if isinstance(values, str | bytes):
        values = [values]
    if isinstance(values, np.ndarray) and values.ndim != 1:
        raise DataError(f"`{name}` must be a 1-D sequence of strings, got shape {values.shape}.")
    if not hasattr(values, "__len__") or isinstance(values, dict):
        raise ParameterTypeError(
            f"`{name}` must be a string or a sequence of strings (str or UTF-8 bytes), got "
            f"{type(values).__name__}."
        )
    out: list[bytes] = []
    for i, s in enumerate(values.tolist() if isinstance(values, np.ndarray) else values):
        if isinstance(s, str):
            try:
                raw = s.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate
                raise DataError(
                    f"`{name}`[{i}] must be valid Unicode (no lone surrogates), got a str "
                    "that is not (the item is not shown)."
                ) from None
        elif isinstance(s, bytes):
            try:
                s.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"`{name}`[{i}] must be valid UTF-8, got bytes that are not (invalid at "
                    f"byte {exc.start}; the item is not shown)."
                ) from None
            raw = s
        else:
            raise DataError(f"`{name}`[{i}] must be a str or UTF-8 bytes, got {type(s).__name__}.")
        if not raw:
            raise DataError(f"`{name}`[{i}] must be a non-empty string, got an empty one.")
        if len(raw) > max_bytes:
            raise DataError(
                f"`{name}`[{i}] must be at most max_bytes = {max_bytes} bytes in UTF-8, got "
                f"{len(raw)} bytes."
            )
        out.append(raw)
    return out


def string_digests(strings: list[bytes]) -> npt.NDArray[np.uint64]:
    """``x(s)`` of each string: the top 33 bits of SHA-256 of ``"deniable.cms/1" || 0x00 ||
    s`` (one digest per distinct string)."""
    prefix = SKETCH_HASH.encode() + b"\x00"
    cache: dict[bytes, int] = {}
    for s in strings:
        if s not in cache:
            cache[s] = int.from_bytes(hashlib.sha256(prefix + s).digest()[:8], "big") >> 31
    return np.fromiter((cache[s] for s in strings), dtype=np.uint64, count=len(strings))


def sketch_digests(name: str, values: Any, max_bytes: int) -> npt.NDArray[np.uint64]:
    """``x(s)`` of each of ``values``: ``string_digests(sketch_strings(name, values,
    max_bytes))``, with each distinct value checked and hashed once (a list, tuple or 1-D
    array of repeated strings costs a dictionary look-up an item).  A value that fails a
    check is named as :func:`sketch_strings` names it (the whole input is checked again to
    find its first place)."""
    items = values.tolist() if isinstance(values, np.ndarray) and values.ndim == 1 else values
    if not isinstance(items, list | tuple):
        return string_digests(sketch_strings(name, values, max_bytes))
    try:
        distinct = list(dict.fromkeys(items))
    except TypeError:  # an unhashable item: the checks name it
        return string_digests(sketch_strings(name, values, max_bytes))
    try:
        raw = sketch_strings(name, distinct, max_bytes)
    except DeniableError:
        sketch_strings(name, values, max_bytes)  # raises, naming the item's first place
        raise  # pragma: no cover - the same checks on the same items
    table = dict(zip(distinct, string_digests(raw).tolist(), strict=True))
    return np.fromiter(map(table.__getitem__, items), dtype=np.uint64, count=len(items))


def row_seeds(salt: int, rows: int) -> npt.NDArray[np.uint64]:
    """``(rows, 2)``: the words ``(a_j, b_j)`` of each row's hash under ``salt``."""
    out = np.empty((rows, 2), dtype=np.uint64)
    for j in range(rows):  # once per sketch (cached by the sketch), not per report
        raw = hashlib.sha256(f"{SKETCH_HASH}:{salt}:{j}".encode()).digest()
        out[j, 0] = int.from_bytes(raw[:8], "little")
        out[j, 1] = int.from_bytes(raw[8:16], "little")
    out.setflags(write=False)
    return out


def columns(
    seeds: npt.NDArray[np.uint64], x: npt.NDArray[np.uint64], rows: Any, m: int
) -> npt.NDArray[np.int64]:
    """``h_j(s)`` for digests ``x`` and rows ``rows`` (broadcast together)."""
    a, b = seeds[rows, 0], seeds[rows, 1]
    with np.errstate(over="ignore"):
        hashed = (a * x + b) >> _32
    return np.asarray((hashed * np.uint64(m)) >> _32, dtype=np.int64)


@dataclass(frozen=True)
class SketchReports:
    """A batch of count-mean-sketch reports: each report's row (``rows``, int64) and its
    ``m`` randomized bits packed little-endian into ``ceil(m / 8)`` bytes (``bits``, a
    ``(n, ceil(m / 8))`` uint8 array; bit ``i`` at bit ``i % 8`` of byte ``i // 8``)."""

    rows: npt.NDArray[np.int64]
    bits: npt.NDArray[np.uint8]

    def __len__(self) -> int:
        return int(np.asarray(self.rows).size)

    def __getitem__(self, index: Any) -> SketchReports:
        """The reports of ``index`` (a slice, indices or a mask)."""
        return SketchReports(np.asarray(self.rows)[index], np.asarray(self.bits)[index])


def check_level(level: Any) -> float:
    """A confidence level in (0, 1)."""
    x = v.real("level", level)
    if not 0 < x < 1:
        raise ParameterError(f"`level` must be in (0, 1), got {level!r}.")
    return x


#: What :attr:`SketchEstimate.se` is.
SE_SKETCH = (
    "sampling: devices drawn from a population, the salt (the row hashes) at random, the "
    "collision term from the sketch's own sum of squared shares"
)
#: What :attr:`SketchEstimate.se_fixed` is.
SE_SKETCH_FIXED = "fixed population of the n devices, the salt at random; same collision term"


@dataclass(frozen=True)
class SketchEstimate(Result):
    """Frequencies of candidate strings from a count mean sketch (``deniable.oracles._cms``).

    Attributes
    ----------
    candidates : the candidate strings (as ``str``), in the order given.
    values : each candidate's unbiased frequency (a share of the ``n`` reports; may leave
        [0, 1]).
    se : standard errors for devices sampled from a population (the default convention).
    se_fixed : standard errors for the fixed population of the ``n`` devices.
    n : the number of reports.
    key : the mechanism's key.
    """

    candidates: tuple[str, ...]
    values: FloatArray = field(repr=False)
    se: FloatArray = field(repr=False)
    se_fixed: FloatArray = field(repr=False)
    n: int
    key: str = field(repr=False)

    @property
    def se_convention(self) -> str:
        """Which variance :attr:`se` is (``SE_SKETCH``)."""
        return SE_SKETCH

    @property
    def variances(self) -> FloatArray:
        """``se ** 2``: the sampling variances (the names of a ``FrequencyEstimate``)."""
        return np.asarray(self.se**2, dtype=np.float64)

    @property
    def variances_fixed(self) -> FloatArray:
        """``se_fixed ** 2``: the fixed-population variances."""
        return np.asarray(self.se_fixed**2, dtype=np.float64)

    @property
    def counts(self) -> FloatArray:
        """Estimated number of devices of each candidate: ``n`` times its frequency."""
        return np.asarray(self.values * self.n, dtype=np.float64)

    @property
    def bounded(self) -> FloatArray:
        """Each frequency clipped to [0, 1] (beside the unbiased value, never instead)."""
        return np.asarray(np.clip(self.values, 0.0, 1.0), dtype=np.float64)

    def ci(self, level: float = 0.95, *, fixed: bool = False) -> tuple[FloatArray, FloatArray]:
        """``(low, high)``: the normal interval ``value -/+ z se`` at ``level`` (``se_fixed``
        when ``fixed``), each end clipped to [0, 1] (an interval that respects the range)."""
        z = normal_quantile(check_level(level))
        se = self.se_fixed if fixed else self.se
        low = np.clip(self.values - z * se, 0.0, 1.0)
        high = np.clip(self.values + z * se, 0.0, 1.0)
        return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)

    def table(self, level: float = 0.95) -> Table:
        """Each candidate: frequency, SE (both conventions) and interval at ``level``."""
        low, high = self.ci(level)
        rows = tuple(
            (c, float(self.values[i]), float(self.se[i]), float(self.se_fixed[i]),
             f"[{low[i]:.4g}, {high[i]:.4g}]")
            for i, c in enumerate(self.candidates)
        )  # fmt: skip
        return Table(
            ("candidate", "frequency", "SE", "SE (fixed)", f"{level:.0%} interval"),
            rows,
            title=f"count mean sketch: {len(self.candidates)} candidates, n = {self.n}",
            notes=(f"SE {SE_SKETCH}", f"SE (fixed) {SE_SKETCH_FIXED}"),
        )

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Plain JSON: mechanism, n, level, both SE conventions, per candidate its estimate."""
        low, high = self.ci(level)
        return {
            "mechanism": self.key,
            "n": self.n,
            "level": level,
            "se_convention": SE_SKETCH,
            "se_fixed_convention": SE_SKETCH_FIXED,
            "candidates": [
                {
                    "candidate": c,
                    "frequency": to_jsonable(float(self.values[i])),
                    "se": to_jsonable(float(self.se[i])),
                    "se_fixed": to_jsonable(float(self.se_fixed[i])),
                    "ci": [to_jsonable(float(low[i])), to_jsonable(float(high[i]))],
                }
                for i, c in enumerate(self.candidates)
            ],
        }
