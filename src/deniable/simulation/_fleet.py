"""A fleet of telemetry devices whose values change over time, reporting every round through
a longitudinal oracle with memoization, and the realized longitudinal epsilon of each device.

The values follow a Markov switching model: in round 0 each device's value is drawn from a
:class:`~deniable.simulation.DevicePopulation`; in each later round a device keeps its value
with probability ``1 - switch`` and otherwise moves to *another* value, drawn from the
population's frequencies without its current value (renormalized).  Every round each device
reports once through the oracle, its permanent responses kept in a
:class:`~deniable.mechanisms.MemoStore`, and the round's reports are estimated.

A device's realized epsilon is the oracle's own ``longitudinal_epsilon(rounds, values=d)``
at the number ``d`` of distinct values it reported (for :class:`~deniable.oracles.LOLOHA`,
distinct *hashed* values, one PRR each): the loss against value sequences in the same
pattern of changes (``docs/telemetry.md``).  The bound beside it is the worst any device
could reach in those rounds: ``longitudinal_epsilon(rounds, values=min(rounds, k))``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import LOLOHA, FrequencyEstimate, LongitudinalOracle
from deniable.simulation._devices import DevicePopulation

__all__ = ["Fleet", "FleetRun"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class FleetRun:
    """The outcome of :meth:`Fleet.run`: per round the true frequencies (``truth``, rounds x
    k) and the estimate; per device the distinct values (or hashed values) it reported
    (``distinct``) and its realized longitudinal epsilon (``realized_epsilon``); ``bound``,
    the worst any device could reach in these rounds."""

    oracle: Any
    truth: FloatArray = field(repr=False)
    estimates: tuple[FrequencyEstimate, ...] = field(repr=False)
    distinct: npt.NDArray[np.int64] = field(repr=False)
    realized_epsilon: FloatArray = field(repr=False)
    bound: float

    @property
    def rounds(self) -> int:
        """The number of rounds."""
        return len(self.estimates)

    @property
    def epsilon_summary(self) -> dict[str, float]:
        """The realized epsilon over the fleet: ``min``, ``median`` and ``max``, and the
        ``bound``."""
        e = self.realized_epsilon
        return {
            "min": float(e.min()),
            "median": float(np.median(e)),
            "max": float(e.max()),
            "bound": self.bound,
        }


@dataclass(frozen=True)
class Fleet:
    """``devices`` devices whose values move between rounds with probability ``switch`` (in
    ``[0, 1]``) to another value drawn from ``population`` (module doc).

    >>> from deniable.oracles import LGRR
    >>> from deniable.simulation import DevicePopulation
    >>> fleet = Fleet(DevicePopulation.uniform(4), devices=1000, switch=0.0)
    >>> run = fleet.run(LGRR.from_epsilon(2.0, 4, eps_1=1.0), rounds=5, rng=1)
    >>> {k: round(x, 6) for k, x in run.epsilon_summary.items()}   # one value: eps_inf
    {'min': 2.0, 'median': 2.0, 'max': 2.0, 'bound': 5.0}
    """

    population: DevicePopulation
    devices: int
    switch: float

    def __post_init__(self) -> None:
        if not isinstance(self.population, DevicePopulation):
            raise ParameterTypeError(
                "`population` must be a deniable.simulation.DevicePopulation, got "
                f"{type(self.population).__name__}."
            )
        object.__setattr__(self, "devices", v.integer("devices", self.devices, minimum=1))
        object.__setattr__(self, "switch", v.probability("switch", self.switch))
        if self.switch > 0 and np.count_nonzero(self.population.frequencies) < 2:
            raise ParameterError(
                "`switch` must be 0 when the population has one value of positive frequency "
                f"(a device has no other value to move to), got {self.switch!r}."
            )

    def values(self, rounds: int, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """The devices' values in each round, a ``(rounds, devices)`` array (``rng``: a seed
        or a ``numpy.random.Generator``)."""
        r = v.integer("rounds", rounds, minimum=1)
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        pi = np.asarray(self.population.frequencies, dtype=np.float64)
        cdf = np.cumsum(pi)
        out = np.empty((r, self.devices), dtype=np.int64)
        out[0] = self.population.draw(self.devices, rng=gen)
        for t in range(1, r):
            x = out[t - 1].copy()
            moved = np.flatnonzero(gen.random(self.devices) < self.switch)
            cur = x[moved]
            # another value: u uniform on the mass without the current value, mapped past it
            u = gen.random(moved.size) * (1 - pi[cur])
            before = cdf[cur] - pi[cur]
            u = np.where(u < before, u, u + pi[cur])
            new = np.searchsorted(cdf, u, side="right")
            new = np.minimum(new, pi.size - 1)
            bad = new == cur  # float rounding at the edge of the current value's interval
            new[bad] = np.where(cur[bad] + 1 < pi.size, cur[bad] + 1, cur[bad] - 1)
            x[moved] = new
            out[t] = x
        return out

    def run(self, oracle: Any, rounds: int, *, rng: Any = None, memo: Any = None) -> FleetRun:
        """``rounds`` rounds of ``oracle`` (a longitudinal oracle of the population's ``k``
        values: L-GRR, L-SUE, L-OUE, L-OSUE or LOLOHA), memoized in ``memo`` (a fresh
        in-memory store by default), seeded by ``rng`` (reproducible from an int seed)."""
        if not isinstance(oracle, LongitudinalOracle):
            raise ParameterTypeError(
                "`oracle` must be a longitudinal oracle (LGRR, LSUE, LOUE, LOSUE or LOLOHA "
                f"of deniable.oracles), got {type(oracle).__name__}."
            )
        if oracle.k != self.population.k:
            raise ParameterError(
                f"`oracle` must take the population's k = {self.population.k} values, got "
                f"k = {oracle.k}."
            )
        r = v.integer("rounds", rounds, minimum=1)
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        store = InMemoryMemoStore() if memo is None else memo
        values = self.values(r, rng=gen)
        ids = np.arange(self.devices)
        slots = oracle.g if isinstance(oracle, LOLOHA) else oracle.k
        seen = np.zeros((self.devices, slots), dtype=np.bool_)
        estimates = []
        for t in range(r):
            reports = oracle.randomize(values[t], rng=gen, memo=store, devices=ids)
            estimates.append(oracle.estimate(oracle.tally(reports)))
            slot = (
                oracle.hashed(values[t], reports[:, :2])
                if isinstance(oracle, LOLOHA)
                else values[t]
            )
            seen[ids, slot] = True
        distinct = seen.sum(axis=1).astype(np.int64)
        by_count = {
            d: oracle.longitudinal_epsilon(r, values=d) for d in np.unique(distinct).tolist()
        }
        realized = np.array([by_count[d] for d in distinct.tolist()], dtype=np.float64)
        truth = np.stack([np.bincount(x, minlength=oracle.k) / self.devices for x in values])
        bound = oracle.longitudinal_epsilon(r, values=min(r, oracle.k))
        return FleetRun(oracle, truth, tuple(estimates), distinct, realized, bound)
