"""Privacy events: what a mechanism was, by its parameters only (never mechanism code).

An event is plain data with structure, as in Google's ``dp_accounting``: a *mechanism
event* (one mechanism applied ``count`` times to the same data) is a leaf; composed,
self-composed and sampled events (``_event_tree``) are built from leaves.  Accountants
(``_accountants``) read events; they never run a mechanism.

Stability rules (what an event means, and that it keeps meaning it):

1. An event is a frozen dataclass validated when it is made.  Two events are equal when
   their classes and fields are equal (``RandomizedResponse(1)`` equals
   ``RandomizedResponse(1.0)``), and equal events are the same mechanism: hashable and
   interchangeable.
2. The meaning of a class and of each field never changes, and no field is removed or
   renamed.  A new field comes only with a default that keeps the old meaning; a new kind
   of mechanism is a new class.
3. ``event.to_dict()`` and :func:`~deniable.accounting.event_from_dict` round-trip exactly
   (JSON numbers, an infinite value as ``"inf"``), so an event can be stored and read back.
4. A mechanism event's parameters are its guarantee under the *neighbouring relation of the
   accountant* that reads it (``"replace"``: one record replaced, the house relation of
   local reports; ``"add_remove"``: one record added or removed).  Sampled events state the
   relation their amplification needs, and an accountant of another relation refuses them.
5. An accountant answers ``supports(event) is False`` for an event or a relation it was not
   written for, and refuses to compose it: it never guesses.

``count`` is honoured by every accountant: ``RandomizedResponse(0.5, count=10)`` is ten
uses, the same as ten events.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

from deniable.common import validation as v
from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = [
    "Channel",
    "DiscreteLaplace",
    "EpsilonDelta",
    "EventBase",
    "Gaussian",
    "Laplace",
    "MechanismEvent",
    "NoOp",
    "NonPrivate",
    "PureEpsilon",
    "RandomizedResponse",
]

#: Largest integer sensitivity of a :class:`DiscreteLaplace` event (its privacy loss has
#: ``sensitivity + 1`` values, each an atom of its privacy loss distribution).
MAX_DISCRETE_SENSITIVITY = 10**6


# the checks several events' fields share (each called with the field's name and value)
_count = partial(v.integer, minimum=0)
_nonnegative = partial(v.positive, allow_zero=True, allow_inf=True)
_sensitivity = partial(v.positive, allow_zero=True)


_Checks = Mapping[str, Callable[[str, Any], Any]]


class EventBase:
    """What every event shares: its fields checked when it is made (``_checks``) and
    ``to_dict()``, its plain-data form (``{"type": NAME, ...}``)."""

    __slots__ = ()

    #: Each checked field, in the order checked: its name -> a function of its name and
    #: value returning the value stored (the event is frozen).
    _checks: ClassVar[_Checks] = {}

    def __post_init__(self) -> None:
        for name, check in self._checks.items():
            object.__setattr__(self, name, check(name, getattr(self, name)))

    def to_dict(self) -> dict[str, Any]:
        """Plain data: the class name as ``"type"`` and every field (nested events as
        dicts, an infinite number as ``"inf"``); ``event_from_dict`` reads it back."""
        out: dict[str, Any] = {"type": type(self).__name__}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            out[f.name] = _plain(getattr(self, f.name))
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, EventBase):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_plain(x) for x in value]
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


@dataclass(frozen=True)
class NoOp(EventBase):
    """An operation with no privacy cost (a placeholder where an event is expected).

    >>> NoOp().to_dict()
    {'type': 'NoOp'}
    """


@dataclass(frozen=True)
class NonPrivate(EventBase):
    """An operation with no differential-privacy guarantee: every accountant reports
    ``epsilon = inf`` and ``delta = 1`` once it holds one (never a finite number).

    >>> NonPrivate() == NonPrivate()
    True
    """


@dataclass(frozen=True)
class RandomizedResponse(EventBase):
    """``count`` uses of ``epsilon``-LDP randomized response over ``k`` categories.

    The truth is reported with probability ``e^eps / (e^eps + k - 1)``, each other category with
    ``1 / (e^eps + k - 1)``.  ``epsilon = inf`` (a deterministic answer) is allowed and makes
    every total epsilon infinite.  Accountants read it under the ``"replace"`` relation only
    (a report exists whatever the answer; adding a respondent adds a report).

    >>> RandomizedResponse(0.5, count=10)
    RandomizedResponse(epsilon=0.5, count=10, k=2)
    """

    epsilon: float
    count: int = 1
    k: int = 2
    _checks: ClassVar[_Checks] = {
        "epsilon": _nonnegative,
        "count": _count,
        "k": partial(v.integer, minimum=2, maximum=2**1000, why="k - 1 must be a double"),
    }

    @property
    def pure_epsilon(self) -> float:
        """The pure-DP epsilon of one use."""
        return self.epsilon


@dataclass(frozen=True)
class PureEpsilon(EventBase):
    """``count`` uses of *some* ``epsilon``-DP mechanism, nothing else known.

    Accounted as its worst case: every ``epsilon``-DP mechanism is a post-processing of
    binary randomized response at ``epsilon`` (Kairouz, Oh & Viswanath 2015, Thm 3.3), so
    the totals are those of ``RandomizedResponse(epsilon, count)`` and are exact for the
    worst mechanism.

    >>> PureEpsilon(0.5, count=3).pure_epsilon
    0.5
    """

    epsilon: float
    count: int = 1
    _checks: ClassVar[_Checks] = {"epsilon": _nonnegative, "count": _count}

    @property
    def pure_epsilon(self) -> float:
        """The pure-DP epsilon of one use."""
        return self.epsilon


@dataclass(frozen=True)
class EpsilonDelta(EventBase):
    """``count`` uses of *some* ``(epsilon, delta)``-DP mechanism, nothing else known.

    Accounted as its worst case, the four-outcome pair of Kairouz, Oh & Viswanath (2015,
    Thm 3.3 and its proof): loss ``+inf`` with probability ``delta``, ``+epsilon`` with
    ``(1 - delta) e^eps / (1 + e^eps)``, ``-epsilon`` with ``(1 - delta) / (1 + e^eps)``.
    ``delta`` is in ``[0, 1)`` (``delta = 1`` is no guarantee: use :class:`NonPrivate`).

    >>> EpsilonDelta(1.0, 1e-6)
    EpsilonDelta(epsilon=1.0, delta=1e-06, count=1)
    """

    epsilon: float
    delta: float
    count: int = 1
    _checks: ClassVar[_Checks] = {
        "epsilon": _nonnegative,
        "delta": partial(v.probability, high_open=True),
        "count": _count,
    }

    @property
    def pure_epsilon(self) -> float:
        """The epsilon of one use (its guarantee holds with ``delta`` beside it)."""
        return self.epsilon


def _noise_epsilon(sensitivity: float, scale: float) -> float:
    """``sensitivity / scale`` with the conventions of a noise event: no sensitivity or
    infinite noise is no loss, no noise is an infinite loss."""
    if sensitivity == 0 or scale == math.inf:
        return 0.0
    if scale == 0:
        return math.inf
    return sensitivity / scale


@dataclass(frozen=True)
class Laplace(EventBase):
    """``count`` releases with Laplace noise of ``scale`` on a query of ``sensitivity``:
    ``epsilon = sensitivity / scale`` each (``scale = 0`` is no noise: ``epsilon = inf``).

    >>> Laplace(2.0).pure_epsilon
    0.5
    """

    scale: float
    sensitivity: float = 1.0
    count: int = 1
    _checks: ClassVar[_Checks] = {
        "scale": _nonnegative,
        "sensitivity": _sensitivity,
        "count": _count,
    }

    @property
    def pure_epsilon(self) -> float:
        """``sensitivity / scale``: the pure-DP epsilon of one release."""
        return _noise_epsilon(self.sensitivity, self.scale)


@dataclass(frozen=True)
class DiscreteLaplace(EventBase):
    """``count`` releases with discrete Laplace noise (``P(z) ∝ e^(-|z| / scale)`` on the
    integers) on an integer query of integer ``sensitivity``: ``epsilon = sensitivity /
    scale`` each (Canonne, Kamath & Steinke 2020, Sec. 2).  Its privacy loss takes
    ``sensitivity + 1`` values, so accountants use its exact loss distribution.

    >>> DiscreteLaplace(2.0, sensitivity=1).pure_epsilon
    0.5
    """

    scale: float
    sensitivity: int = 1
    count: int = 1
    _checks: ClassVar[_Checks] = {
        "scale": _nonnegative,
        "sensitivity": partial(
            v.integer,
            minimum=0,
            maximum=MAX_DISCRETE_SENSITIVITY,
            why="its privacy loss takes sensitivity + 1 values",
        ),
        "count": _count,
    }

    @property
    def pure_epsilon(self) -> float:
        """``sensitivity / scale``: the pure-DP epsilon of one release."""
        return _noise_epsilon(float(self.sensitivity), self.scale)


@dataclass(frozen=True)
class Gaussian(EventBase):
    """``count`` releases with Gaussian noise of standard deviation ``sigma`` on a query of L2
    ``sensitivity``: ``mu = sensitivity / sigma`` each (Gaussian DP), no pure-DP guarantee.

    >>> Gaussian(2.0).mu
    0.5
    """

    sigma: float
    sensitivity: float = 1.0
    count: int = 1
    _checks: ClassVar[_Checks] = {
        "sigma": _nonnegative,
        "sensitivity": _sensitivity,
        "count": _count,
    }

    @property
    def mu(self) -> float:
        """``sensitivity / sigma`` (``inf`` without noise)."""
        return _noise_epsilon(self.sensitivity, self.sigma)

    @property
    def pure_epsilon(self) -> float:
        """Gaussian noise gives no pure-DP guarantee: ``inf`` unless it is a no-op."""
        return 0.0 if self.mu == 0 else math.inf


#: Largest ``n_truths^2 * n_reports`` of a :class:`Channel` whose Renyi curve is taken pair
#: by pair (beyond it, the curve of binary randomized response at its epsilon, which bounds it).
MAX_CHANNEL_PAIRS = 10**6


@dataclass(frozen=True)
class Channel(EventBase):
    """``count`` uses of a randomizer given by its channel ``matrix[report][truth]``
    (``P[report | truth]``, columns summing to 1): any design of ``deniable.designs`` by
    ``np.asarray(design.channel)``, as plain numbers.

    Its ``epsilon`` is the largest log ratio of one report's probabilities under two truths
    (``inf`` where a report is possible under one truth and impossible under another).  The
    Renyi accountant takes the exact divergence of the worst pair of truths at each order;
    the others account it as binary randomized response at its ``epsilon``, which dominates
    every ``epsilon``-DP randomizer (Kairouz, Oh & Viswanath 2015, Thm 3.3).  Read under the
    ``"replace"`` relation, as randomized response.

    >>> warner = Channel([[0.75, 0.25], [0.25, 0.75]])
    >>> round(warner.pure_epsilon, 6)  # ln 3, rounded up
    1.098612
    """

    matrix: tuple[tuple[float, ...], ...]
    count: int = 1
    _checks: ClassVar[_Checks] = {"matrix": lambda _name, matrix: _channel(matrix), "count": _count}

    @property
    def pure_epsilon(self) -> float:
        """The largest log ratio of a report's probabilities under two truths."""
        worst = 0.0
        for row in self.matrix:
            hi, lo = max(row), min(row)
            if hi > 0 and lo == 0:
                return math.inf
            if hi > lo:
                # the rounding error of the two logs and their difference, added: never below
                # the true log ratio (a design's exact epsilon rounds up too)
                a, b = math.log(hi), math.log(lo)
                val = (a - b) + 4 * 2.0**-53 * (abs(a) + abs(b))
                worst = max(worst, math.nextafter(val, math.inf))
        return worst


def _channel(matrix: Any) -> tuple[tuple[float, ...], ...]:
    """``matrix`` checked: rows of reports, columns of truths (at least 2), entries in
    ``[0, 1]``, each column summing to 1 (within 1e-9)."""
    import numpy as np

    if isinstance(matrix, str | bytes):
        raise ParameterTypeError(f"`matrix` must be a matrix of probabilities, got {matrix!r}.")
    try:
        arr = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError):
        raise ParameterTypeError(
            f"`matrix` must be a matrix of probabilities, got {type(matrix).__name__}."
        ) from None
    if arr.ndim != 2 or arr.shape[1] < 2 or arr.shape[0] < 1:
        raise ParameterError(
            f"`matrix` must be 2-D, P[report][truth] with at least 2 truths, got shape {arr.shape}."
        )
    if arr.size > MAX_CHANNEL_PAIRS:
        raise ParameterError(
            f"`matrix` must have at most {MAX_CHANNEL_PAIRS} entries, got {arr.size}."
        )
    if not np.all((arr >= 0) & (arr <= 1)):
        raise ParameterError("`matrix` entries must be probabilities in [0, 1].")
    sums = arr.sum(axis=0)
    if not np.all(np.abs(sums - 1) <= 1e-9):
        bad = int(np.argmax(np.abs(sums - 1)))
        raise ParameterError(
            f"`matrix` columns must sum to 1 (P[report | truth]), got {sums[bad]:.12g} for "
            f"truth {bad}."
        )
    return tuple(tuple(float(x) for x in row) for row in arr)


MechanismEvent = (
    RandomizedResponse | PureEpsilon | EpsilonDelta | Laplace | DiscreteLaplace | Gaussian | Channel
)
"""A leaf event: one mechanism, ``count`` times."""

#: The classes of :data:`MechanismEvent`, for ``isinstance`` checks.
MECHANISM_EVENTS = (
    Channel,
    RandomizedResponse,
    PureEpsilon,
    EpsilonDelta,
    Laplace,
    DiscreteLaplace,
    Gaussian,
)
