"""Channels as operators: ``P[cell | truth]`` without a dense matrix where one is not needed.

A mechanism's channel maps a distribution of true values (its *inputs*) to the expected
share of each cell of its tally.  Three kinds cover every mechanism:

* :class:`DenseChannel`: any matrix ``P[report, truth]`` (columns sum to 1).  Every binary
  design, Kuk, the categorical design with a given forced vector, the two-group designs.
* :class:`SymmetricChannel`: k-ary randomized response (generalized RR), two numbers:
  ``P[r = x | x] = p`` and ``P[r = y | x] = q`` for ``y != x``, ``p + (k - 1) q = 1``.
  Expectation and inverse are O(k): ``lambda = q + (p - q) pi``,
  ``pi = (lambda - q) / (p - q)``.
* :class:`SupportChannel`: support counts (unary encoding, local hashing, Hadamard
  response, RAPPOR).  A report *supports* some values; cell ``j < k`` counts the reports
  that support ``j`` and the last cell counts the reports.  ``E[cell_j] / n = q + (p - q)
  pi_j`` with ``p = P(report supports x | x)`` and ``q = P(report supports y | x)``
  (Wang, Blocki, Li & Jha 2017, "pure" protocols).

``np.asarray(channel)`` (or :meth:`Channel.dense`) gives the dense matrix where it exists
and raises a clear error where it would be huge; ``channel @ shares`` is
:meth:`Channel.expected`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, ParameterError, ParameterTypeError

__all__ = [
    "MAX_DENSE_CELLS",
    "Channel",
    "DenseChannel",
    "SupportChannel",
    "SymmetricChannel",
    "matrix_epsilon",
]

FloatArray = npt.NDArray[np.float64]

#: Largest number of entries :meth:`Channel.dense` builds for an operator channel (a
#: 4096 x 4096 matrix of doubles, 128 MB).
MAX_DENSE_CELLS = 4096 * 4096

#: Slack for "the columns of a channel sum to 1" (float rounding of the entries).
_COLUMN_TOL = 1e-9


def matrix_epsilon(channel: npt.ArrayLike) -> float:
    """Exact epsilon of a dense channel ``P[report, truth]`` under replace-one neighbouring.

    ``max over reports r and truths x, x' of ln(P[r | x] / P[r | x'])``; ``math.inf`` when a
    report has probability 0 under one truth and not under another (it reveals the answer).
    """
    p = np.asarray(channel, dtype=float)
    eps = 0.0
    for row in p:
        hi, lo = float(row.max()), float(row.min())
        if hi == 0.0:
            continue
        if lo == 0.0:
            return math.inf
        eps = max(eps, math.log(hi / lo))
    return eps


def _shares(name: str, shares: npt.ArrayLike, size: int) -> FloatArray:
    arr = np.asarray(shares, dtype=float)
    if arr.ndim not in (1, 2) or arr.shape[0] != size:
        raise DataError(
            f"`{name}` must have {size} entries (one per input value) along its first axis, "
            f"got shape {arr.shape}."
        )
    return arr


class Channel(ABC):
    """``P[cell | truth]`` of a mechanism as an operator (see the module docstring).

    ``n_truths`` input values (``None``: unbounded, e.g. additive noise on any number),
    ``n_cells`` cells of the tally.  Subclasses give :meth:`expected` and :meth:`dense`.
    """

    __slots__ = ()

    @property
    @abstractmethod
    def n_truths(self) -> int | None:
        """Number of input values (``None``: unbounded)."""

    @property
    @abstractmethod
    def n_cells(self) -> int:
        """Number of cells of the tally (the length of its counts)."""

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_cells, n_truths)``: the shape of :meth:`dense`."""
        k = self.n_truths
        if k is None:
            raise ParameterError(f"{type(self).__name__} has unbounded inputs: no shape.")
        return self.n_cells, k

    @abstractmethod
    def expected(self, shares: npt.ArrayLike) -> FloatArray:
        """Expected count of each cell per respondent when the inputs have distribution
        ``shares`` (a 2-D array: one distribution per column)."""

    @abstractmethod
    def dense(self) -> FloatArray:
        """The matrix ``P[cell, truth]`` (raises where it would be huge or infinite)."""

    @property
    @abstractmethod
    def epsilon(self) -> float:
        """Exact epsilon of the channel under replace-one neighbouring (all inputs are
        neighbours); ``math.inf`` when some report reveals the input."""

    def __array__(self, dtype: Any = None, copy: Any = None) -> FloatArray:
        out = self.dense()
        return out if dtype is None else out.astype(dtype)

    def __matmul__(self, other: Any) -> FloatArray:
        return self.expected(other)

    def __rmatmul__(self, other: Any) -> FloatArray:
        return np.asarray(np.asarray(other, dtype=float) @ self.dense(), dtype=np.float64)

    def __getstate__(self) -> dict[str, Any]:
        return {s: getattr(self, s) for s in _all_slots(type(self))}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, x in state.items():
            object.__setattr__(self, k, x)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _check_dense_size(self) -> None:
        k = self.n_truths
        if k is None:
            raise ParameterError(
                f"{type(self).__name__} has unbounded inputs: it has no dense matrix."
            )
        if self.n_cells * k > MAX_DENSE_CELLS:
            raise ParameterError(
                f"`k` must be at most 4096 for a dense channel (a {self.n_cells} x {k} matrix "
                f"has more than 4096**2 entries; the operator works without it), got {k}."
            )


def _all_slots(cls: type) -> list[str]:
    out: list[str] = []
    for c in cls.__mro__:
        out.extend(getattr(c, "__slots__", ()))
    return out


def _probability(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise ParameterTypeError(f"`{name}` must be a real number, got {value!r}.")
    x = float(value)
    if not 0.0 <= x <= 1.0:
        raise ParameterError(f"`{name}` must be in [0, 1], got {value!r}.")
    return x


def _k(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ParameterTypeError(f"`k` must be an integer, got {value!r}.")
    k = int(value)
    if k < 2:
        raise ParameterError(f"`k` must be an integer in [2, inf), got {k}.")
    return k


class DenseChannel(Channel):
    """A channel given by its matrix ``P[report, truth]`` (entries in [0, 1], columns sum to
    1 within ``1e-9``); read-only.

    >>> ch = DenseChannel([[0.25, 0.75], [0.75, 0.25]])
    >>> ch.expected([0.5, 0.5]).tolist(), round(ch.epsilon, 6)
    ([0.5, 0.5], 1.098612)
    """

    __slots__ = ("_matrix",)
    _matrix: FloatArray

    def __init__(self, matrix: npt.ArrayLike) -> None:
        try:
            m = np.array(matrix, dtype=np.float64)
        except (TypeError, ValueError):
            raise ParameterTypeError(
                f"`matrix` must be a 2-D array of probabilities, got {matrix!r}."
            ) from None
        if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
            raise ParameterError(f"`matrix` must be a non-empty 2-D array, got shape {m.shape}.")
        if not np.all((m >= 0) & (m <= 1)):
            raise ParameterError("`matrix` entries must be probabilities in [0, 1].")
        sums = m.sum(axis=0)
        if not np.all(np.abs(sums - 1) <= _COLUMN_TOL):
            raise ParameterError(
                f"`matrix` columns must sum to 1 (P[report | truth]), got sums {sums.tolist()}."
            )
        m.setflags(write=False)
        object.__setattr__(self, "_matrix", m)

    @property
    def n_truths(self) -> int:
        return int(self._matrix.shape[1])

    @property
    def n_cells(self) -> int:
        return int(self._matrix.shape[0])

    @property
    def matrix(self) -> FloatArray:
        """The read-only matrix."""
        return self._matrix

    def expected(self, shares: npt.ArrayLike) -> FloatArray:
        return np.asarray(self._matrix @ _shares("shares", shares, self.n_truths))

    def dense(self) -> FloatArray:
        return self._matrix.copy()

    @property
    def epsilon(self) -> float:
        return matrix_epsilon(self._matrix)

    def __rmatmul__(self, other: Any) -> FloatArray:
        return np.asarray(np.asarray(other, dtype=float) @ self._matrix, dtype=np.float64)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DenseChannel):
            return NotImplemented
        return bool(np.array_equal(self._matrix, other._matrix))

    def __hash__(self) -> int:
        return hash((self._matrix.shape, self._matrix.tobytes()))

    def __repr__(self) -> str:
        if self._matrix.size > 64:
            return f"DenseChannel(<{self.n_cells} x {self.n_truths} matrix>)"
        return f"DenseChannel({self._matrix.tolist()!r})"


class _TwoNumberChannel(Channel):
    """What :class:`SymmetricChannel` and :class:`SupportChannel` share: ``k`` values and two
    probabilities, ``p`` for the true value and ``q`` for each other one, compared, hashed
    and printed by those three numbers."""

    __slots__ = ("_k", "_p", "_q")
    _k: int
    _p: float
    _q: float
    _tag: ClassVar[str]

    def __init__(self, k: int, p: float, q: float) -> None:
        kk = _k(k)
        pp, qq = _probability("p", p), _probability("q", q)
        self._check(kk, pp, qq)
        if pp == qq:
            raise ParameterError(f"`p` and `q` must differ (no information), got {pp!r}.")
        for name, x in (("_k", kk), ("_p", pp), ("_q", qq)):
            object.__setattr__(self, name, x)

    def _check(self, k: int, p: float, q: float) -> None:
        """Further conditions on the three numbers (none by default)."""

    @property
    def k(self) -> int:
        return self._k

    @property
    def p(self) -> float:
        """P(the report is, or supports, the true value)."""
        return self._p

    @property
    def q(self) -> float:
        """P(the report is, or supports, one given other value)."""
        return self._q

    @property
    def n_truths(self) -> int:
        return self._k

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _TwoNumberChannel)
        return (self._k, self._p, self._q) == (other._k, other._p, other._q)

    def __hash__(self) -> int:
        return hash((self._tag, self._k, self._p, self._q))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(k={self._k}, p={self._p!r}, q={self._q!r})"


class SymmetricChannel(_TwoNumberChannel):
    """k-ary randomized response: ``P[r = x | x] = p``, ``P[r = y | x] = q`` (``y != x``).

    ``p + (k - 1) q = 1`` (within ``1e-9``).  Expectation ``lambda = q sum(pi) + (p - q)
    pi`` and inverse :meth:`invert` are O(k); ``epsilon = |ln(p / q)|``.

    >>> ch = SymmetricChannel(4, 0.4, 0.2)
    >>> ch.expected([1, 0, 0, 0]).tolist(), ch.invert([0.4, 0.2, 0.2, 0.2]).tolist()
    ([0.4, 0.2, 0.2, 0.2], [1.0, 0.0, 0.0, 0.0])
    """

    __slots__ = ()
    _tag: ClassVar[str] = "symmetric"

    def _check(self, k: int, p: float, q: float) -> None:
        if abs(p + (k - 1) * q - 1) > _COLUMN_TOL:
            raise ParameterError(
                f"`p` + (k - 1) `q` must be 1 (each column is a distribution), got "
                f"{p!r} + {k - 1} * {q!r} = {p + (k - 1) * q!r}."
            )

    @property
    def n_cells(self) -> int:
        return self._k

    def expected(self, shares: npt.ArrayLike) -> FloatArray:
        pi = _shares("shares", shares, self._k)
        # (P pi)_r = p pi_r + q sum_{x != r} pi_x = q sum(pi) + (p - q) pi_r
        return np.asarray(self._q * pi.sum(axis=0) + (self._p - self._q) * pi, dtype=np.float64)

    def invert(self, frequencies: npt.ArrayLike) -> FloatArray:
        """``(lambda - q) / (p - q)``: the shares whose expected report frequencies are
        ``frequencies`` (which sum to 1)."""
        lam = _shares("frequencies", frequencies, self._k)
        return np.asarray((lam - self._q) / (self._p - self._q), dtype=np.float64)

    def dense(self) -> FloatArray:
        self._check_dense_size()
        out = np.full((self._k, self._k), self._q)
        np.fill_diagonal(out, self._p)
        return out

    @property
    def epsilon(self) -> float:
        # eps = |ln(p / q)|: report r is likeliest (or least likely) from truth r
        lo, hi = min(self._p, self._q), max(self._p, self._q)
        return math.inf if lo == 0 else math.log(hi / lo)


class SupportChannel(_TwoNumberChannel):
    """Support counts of ``k`` values: cell ``j < k`` counts the reports that support ``j``,
    the last cell (``k``) counts the reports.

    ``p = P(report supports x | truth x)``, ``q = P(report supports y | truth x)`` for
    ``y != x``.  Per respondent ``E[cell_j] = q + (p - q) pi_j`` and ``E[cell_k] = 1``;
    :meth:`invert` gives ``pi_j = (c_j / c_k - q) / (p - q)``.  The support matrix
    (:meth:`dense`, rows ``0..k-1`` the support probabilities and a last row of ones) is
    not a distribution over reports, and it does not determine epsilon: the mechanism
    states its own (:attr:`epsilon` raises).  Unary encoding with bits kept with
    probability ``p`` and set with ``q`` has exactly this form.

    >>> ch = SupportChannel(3, 0.75, 0.25)
    >>> ch.expected([1, 0, 0]).tolist()
    [0.75, 0.25, 0.25, 1.0]
    >>> ch.invert([75, 25, 25, 100]).tolist()
    [1.0, 0.0, 0.0]
    """

    __slots__ = ()
    _tag: ClassVar[str] = "support"

    @property
    def n_cells(self) -> int:
        return self._k + 1

    def expected(self, shares: npt.ArrayLike) -> FloatArray:
        pi = _shares("shares", shares, self._k)
        total = pi.sum(axis=0)
        support = self._q * total + (self._p - self._q) * pi
        return np.asarray(np.concatenate([support, np.reshape(total, (1, *pi.shape[1:]))]))

    def invert(self, counts: npt.ArrayLike) -> FloatArray:
        """``(c_j / c_k - q) / (p - q)`` from the ``k + 1`` cells of a support tally."""
        c = _shares("counts", counts, self._k + 1)
        n = c[-1]
        if np.any(n <= 0):
            raise DataError("a support tally needs at least one report (its last cell is 0).")
        return np.asarray((c[:-1] / n - self._q) / (self._p - self._q), dtype=np.float64)

    def dense(self) -> FloatArray:
        self._check_dense_size()
        out = np.full((self._k + 1, self._k), self._q)
        np.fill_diagonal(out[: self._k], self._p)
        out[self._k] = 1.0
        return out

    @property
    def epsilon(self) -> float:
        raise ParameterError(
            "a support-count channel does not determine epsilon (it holds only the marginal "
            "support probabilities): use the mechanism's `epsilon`."
        )
