"""Events with structure: composition, repetition and sampling (as in ``dp_accounting``).

* :class:`Composed` ``(events)``: the events one after another, each possibly chosen after
  seeing the outputs before it (adaptive composition).
* :class:`SelfComposed` ``(event, count)``: ``event`` ``count`` times; the same as
  ``Composed`` of ``count`` copies.
* :class:`PoissonSampled` ``(probability, event)``: each record enters a sample
  independently with ``probability``, unseen by the adversary; ``event`` runs on the
  sample.  Amplification holds under the ``"add_remove"`` relation (Balle, Barthe &
  Gaboardi 2018, Thm 8), so only accountants of that relation take it.
* :class:`SampledWithoutReplacement` ``(population, sample_size, event)``: a uniformly random
  subset of ``sample_size`` of the ``population`` records, unseen; ``event`` runs on it.
  Amplification holds under the ``"replace"`` relation (Balle, Barthe & Gaboardi 2018,
  Thm 9).

A sampled event holds one mechanism event; its ``count`` is that many uses *on the same
sample* (``SelfComposed(PoissonSampled(q, e), n)`` is ``n`` fresh samples).

:func:`event_from_dict` reads what ``event.to_dict()`` wrote (stability rules:
``_events``); :func:`expand` flattens an event into the units accountants price.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from deniable.accounting._events import (
    MECHANISM_EVENTS,
    EventBase,
    MechanismEvent,
    NonPrivate,
    NoOp,
)
from deniable.common import validation as v
from deniable.exceptions import DataError, DeniableError, ParameterTypeError

__all__ = [
    "EVENT_TYPES",
    "Composed",
    "Event",
    "PoissonSampled",
    "SampledEvent",
    "SampledWithoutReplacement",
    "SelfComposed",
    "Unit",
    "event_from_dict",
    "expand",
    "inner_uses",
]


def _event(name: str, value: Any) -> Any:
    if not isinstance(value, EventBase):
        raise ParameterTypeError(
            f"`{name}` must be a privacy event (e.g. RandomizedResponse(1.0)), got "
            f"{type(value).__name__} {value!r}."
        )
    return value


@dataclass(frozen=True)
class Composed(EventBase):
    """The ``events`` one after another (adaptively chosen); an empty tuple is no event.

    >>> from deniable.accounting import Laplace, RandomizedResponse
    >>> Composed([RandomizedResponse(0.5), Laplace(2.0)]).events[1]
    Laplace(scale=2.0, sensitivity=1.0, count=1)
    """

    events: tuple[Event, ...]

    def __post_init__(self) -> None:
        if isinstance(self.events, EventBase | str | bytes):
            raise ParameterTypeError(
                f"`events` must be a sequence of privacy events, got {self.events!r}."
            )
        try:
            evs = tuple(self.events)
        except TypeError:
            raise ParameterTypeError(
                f"`events` must be a sequence of privacy events, got {type(self.events).__name__}."
            ) from None
        object.__setattr__(self, "events", tuple(_event("events", e) for e in evs))


@dataclass(frozen=True)
class SelfComposed(EventBase):
    """``event`` ``count`` times (adaptively): the same as ``Composed`` of ``count`` copies.

    >>> from deniable.accounting import Gaussian
    >>> SelfComposed(Gaussian(2.0), 4).count
    4
    """

    event: Event
    count: int

    def __post_init__(self) -> None:
        _event("event", self.event)
        object.__setattr__(self, "count", v.integer("count", self.count, minimum=0))


@dataclass(frozen=True)
class PoissonSampled(EventBase):
    """``event`` run on a Poisson sample: each record is in it independently with
    ``probability`` (in ``[0, 1]``), and who is in it stays secret.

    Read under the ``"add_remove"`` relation: ``event``'s parameters are its guarantee for
    adding or removing one record, and so is the amplified result (a pure ``eps`` becomes
    ``ln(1 + q (e^eps - 1))``; Balle, Barthe & Gaboardi 2018, Thm 8).

    >>> from deniable.accounting import Gaussian
    >>> PoissonSampled(0.01, Gaussian(1.0)).probability
    0.01
    """

    probability: float
    event: Event

    def __post_init__(self) -> None:
        object.__setattr__(self, "probability", v.probability("probability", self.probability))
        _event("event", self.event)


@dataclass(frozen=True)
class SampledWithoutReplacement(EventBase):
    """``event`` run on ``sample_size`` records drawn without replacement from
    ``population`` records, which ones staying secret.

    Read under the ``"replace"`` relation: ``event``'s parameters are its guarantee for
    replacing one record, and so is the amplified result (with ``gamma = sample_size /
    population``, a pure ``eps`` becomes ``ln(1 + gamma (e^eps - 1))``; Balle, Barthe &
    Gaboardi 2018, Thm 9).

    >>> from deniable.accounting import PureEpsilon
    >>> SampledWithoutReplacement(1000, 10, PureEpsilon(1.0)).fraction
    0.01
    """

    population: int
    sample_size: int
    event: Event

    def __post_init__(self) -> None:
        n = v.integer("population", self.population, minimum=1)
        m = v.integer(
            "sample_size",
            self.sample_size,
            minimum=0,
            maximum=n,
            why="a sample without replacement is part of the population",
        )
        object.__setattr__(self, "population", n)
        object.__setattr__(self, "sample_size", m)
        _event("event", self.event)

    @property
    def fraction(self) -> float:
        """``sample_size / population``: the chance that a given record is in the sample."""
        return self.sample_size / self.population


Event = (
    MechanismEvent
    | NoOp
    | NonPrivate
    | Composed
    | SelfComposed
    | PoissonSampled
    | SampledWithoutReplacement
)
"""Any privacy event."""

SampledEvent = PoissonSampled | SampledWithoutReplacement

#: Every event class by its name (what ``to_dict`` writes as ``"type"``).
EVENT_TYPES: dict[str, type[Any]] = {
    c.__name__: c
    for c in (
        *MECHANISM_EVENTS,
        NoOp,
        NonPrivate,
        Composed,
        SelfComposed,
        PoissonSampled,
        SampledWithoutReplacement,
    )
}
_NESTED = {"event", "events"}
_MAX_DEPTH = 64


def event_from_dict(data: Any) -> Event:
    """The event that ``event.to_dict()`` describes; malformed data raise
    :class:`~deniable.exceptions.DataError` naming what is wrong.

    >>> from deniable.accounting import Laplace
    >>> e = PoissonSampled(0.5, SelfComposed(Laplace(1.0), 3))
    >>> event_from_dict(e.to_dict()) == e
    True
    """
    out: Event = _from_dict(data, 0)
    return out


def _from_dict(data: Any, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise DataError(f"an event may nest at most {_MAX_DEPTH} levels deep.")
    if not isinstance(data, dict):
        raise DataError(f"an event must be a JSON object, got {type(data).__name__}.")
    name = data.get("type")
    cls = EVENT_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise DataError(f"`type` must be one of {', '.join(sorted(EVENT_TYPES))}, got {name!r}.")
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names - {"type"})
    if unknown:
        raise DataError(f"{name} has no field {unknown[0]!r} (its fields: {sorted(names)}).")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key == "type":
            continue
        if key in _NESTED:
            if key == "events":
                if not isinstance(value, list):
                    raise DataError(f"`events` of {name} must be a list, got {value!r}.")
                kwargs[key] = [_from_dict(x, depth + 1) for x in value]
            else:
                kwargs[key] = _from_dict(value, depth + 1)
        else:
            kwargs[key] = _number(value)
    try:
        out: Any = cls(**kwargs)
    except (DeniableError, TypeError) as exc:
        raise DataError(f"not a valid {name} event: {exc}") from None
    return out


def _number(value: Any) -> Any:
    if value == "inf":
        return math.inf
    if value == "-inf":
        return -math.inf
    return value


# ------------------------------------------------------------------ flattening
Unit = tuple[MechanismEvent | SampledEvent | NonPrivate, int]
"""One thing an accountant prices and how many times: a mechanism event (its own
``count`` folded into the number) or a sampled event (its inner ``count`` is uses on one
sample), or :class:`NonPrivate`."""


def expand(event: Event, count: int = 1) -> list[Unit]:
    """The units of ``event`` composed ``count`` times: composition flattened, counts
    multiplied, no-ops dropped.

    >>> from deniable.accounting import RandomizedResponse
    >>> expand(SelfComposed(Composed([RandomizedResponse(1.0, count=2), NoOp()]), 3))
    [(RandomizedResponse(epsilon=1.0, count=2, k=2), 6)]
    """
    out: list[Unit] = []
    stack: list[tuple[Any, int]] = [(event, count)]
    while stack:
        e, c = stack.pop()
        if isinstance(e, Composed):
            stack.extend((x, c) for x in reversed(e.events))
        elif isinstance(e, SelfComposed):
            stack.append((e.event, c * e.count))
        elif isinstance(e, NoOp) or c == 0:
            continue
        elif isinstance(e, PoissonSampled | SampledWithoutReplacement | NonPrivate):
            out.append((e, c))
        else:
            out.append((e, c * e.count))
    return out


def inner_uses(event: SampledEvent) -> tuple[MechanismEvent | NonPrivate | NoOp | None, int]:
    """The mechanism event a sampled event runs and its uses on one sample (``None`` when
    it holds a structure no accountant amplifies: composed or sampled again)."""
    inner = event.event
    if isinstance(inner, NoOp):
        return inner, 0
    if isinstance(inner, NonPrivate):
        return inner, 1
    if isinstance(inner, SelfComposed) and isinstance(inner.event, MECHANISM_EVENTS):
        return inner.event, inner.count * inner.event.count
    if isinstance(inner, MECHANISM_EVENTS):
        return inner, inner.count
    return None, 0
