"""Simulated telemetry devices: each device's value drawn independently from stated
frequencies over ``0..k-1``, and the reports of a frequency oracle for a stream of them.

The frequencies are Zipf's law with exponent ``s`` (``pi_j`` proportional to
``1 / (j + 1)^s``; Zipf 1949, the usual model of the popularity of items, and of the
frequency-oracle literature's synthetic data, e.g. Wang et al. 2017), uniform, or weights
given by the caller.  ``deniable telemetry simulate`` draws its devices from
``DevicePopulation.zipf(k)`` (``s = 1``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import format_number
from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.randomness import resolve_rng
from deniable.results import Result, Table

__all__ = ["DevicePopulation"]

FloatArray = npt.NDArray[np.float64]

#: The most values a population may have (as many as a frequency oracle takes).
MAX_VALUES = 1 << 24


@dataclass(frozen=True, eq=False)
class DevicePopulation(Result):
    """Devices whose values ``0..k-1`` are drawn independently with probabilities
    :attr:`frequencies`, the expected share of each value (build one with :meth:`zipf`,
    :meth:`uniform` or :meth:`from_weights`).

    ``model`` says where the frequencies came from (``"zipf(s=1)"``, ``"uniform"`` or
    ``"weights"``); ``weights`` are the frequencies before normalization (a read-only
    array).

    >>> pop = DevicePopulation.zipf(4)                 # 1, 1/2, 1/3, 1/4 over H_4 = 25/12
    >>> pop.frequencies.round(4).tolist()
    [0.48, 0.24, 0.16, 0.12]
    >>> pop.draw(8, rng=1).tolist()
    [1, 3, 0, 3, 0, 0, 2, 0]
    """

    model: str
    weights: FloatArray = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.model, str):
            raise ParameterTypeError(f"`model` must be a string, got {type(self.model).__name__}.")
        object.__setattr__(self, "weights", _checked_weights(self.weights))

    # ---- the models

    @classmethod
    def zipf(cls, k: int, s: float = 1.0) -> DevicePopulation:
        """Zipf's law: ``pi_j = (j + 1)^-s / sum_i (i + 1)^-s`` for ``j`` in ``0..k-1``
        (``s = 0`` is uniform; the larger ``s``, the more devices hold the first values)."""
        kk = v.integer("k", k, minimum=1, maximum=MAX_VALUES)
        ss = v.real("s", s)
        if not 0 <= ss <= 100:
            raise ParameterError(f"`s` must be in [0, 100] (Zipf's exponent), got {s!r}.")
        ranks = np.arange(1, kk + 1, dtype=np.float64)
        # 1 / rank^s (for s = 1 exactly 1 / rank, the form `telemetry simulate` always used)
        return cls(f"zipf(s={ss:g})", 1.0 / ranks**ss)

    @classmethod
    def uniform(cls, k: int) -> DevicePopulation:
        """Every value equally likely: ``pi_j = 1 / k``."""
        kk = v.integer("k", k, minimum=1, maximum=MAX_VALUES)
        return cls("uniform", np.ones(kk))

    @classmethod
    def from_weights(cls, weights: npt.ArrayLike) -> DevicePopulation:
        """Frequencies proportional to ``weights`` (finite, non-negative, not all zero)."""
        return cls("weights", _checked_weights(weights))

    # ---- what follows from the weights

    @property
    def k(self) -> int:
        """The number of values (``0..k-1``)."""
        return len(self.weights)

    @cached_property
    def frequencies(self) -> FloatArray:
        """The probability of each value (the weights over their sum), read-only."""
        out: FloatArray = self.weights / self.weights.sum()
        out.setflags(write=False)
        return out

    def expected_counts(self, devices: int) -> FloatArray:
        """The expected number of devices holding each value among ``devices``."""
        n = v.integer("devices", devices, minimum=0)
        out: FloatArray = n * self.frequencies
        return out

    def draw(self, devices: int, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """The values of ``devices`` devices, drawn independently (``rng``: a seed or a
        ``numpy.random.Generator``; fresh entropy when ``None``)."""
        n = v.integer("devices", devices, minimum=0)
        gen = _generator(rng)
        return np.asarray(gen.choice(self.k, size=n, p=self.frequencies), dtype=np.int64)

    def reports(
        self, oracle: Any, devices: int, *, rng: Any = None, batch: int = 1 << 18
    ) -> Iterator[Any]:
        """The reports of ``oracle`` for ``devices`` simulated devices, an iterator over
        batches of at most ``batch`` (the arguments are checked at once, the reports drawn as
        they are read): each batch's values are drawn (:meth:`draw`) and randomized by
        ``oracle.randomize`` with the same generator, so one seed gives the same reports.
        ``oracle`` must take the values ``0..k-1`` (its ``k`` is this population's)."""
        n = v.integer("devices", devices, minimum=0)
        step = v.integer("batch", batch, minimum=1)
        if getattr(oracle, "k", None) != self.k:
            raise ParameterError(
                f"`oracle` must take the population's {self.k} values, got "
                f"{getattr(oracle, 'name', type(oracle).__name__)} with k = "
                f"{getattr(oracle, 'k', None)}."
            )
        gen = _generator(rng)

        def batches() -> Iterator[Any]:
            for start in range(0, n, step):
                m = min(step, n - start)
                yield oracle.randomize(gen.choice(self.k, size=m, p=self.frequencies), rng=gen)

        return batches()

    # ---- the Result interface

    def table(self) -> Table:
        """The frequency of each value (the first 32 and the count of the rest)."""
        shown = min(self.k, 32)
        rows = [(str(j), format_number(float(self.frequencies[j]), 6)) for j in range(shown)]
        notes = (f"{self.k - shown} more values",) if self.k > shown else ()
        return Table(
            ("value", "frequency"), tuple(rows), title=f"devices: {self.model}, k = {self.k}",
            notes=notes,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: the model, ``k`` and every frequency."""
        return {"model": self.model, "k": self.k, "frequencies": self.frequencies.tolist()}


def _checked_weights(weights: Any) -> FloatArray:
    """``weights`` as a read-only copy, checked: a 1-D array of at most
    :data:`MAX_VALUES` finite, non-negative numbers, not all zero."""
    try:
        arr = np.array(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterTypeError(
            f"`weights` must be a 1-D array of numbers, got {type(weights).__name__}."
        ) from None
    if arr.ndim != 1 or arr.size == 0:
        raise DataError(
            f"`weights` must be a 1-D array of one weight per value, got shape {arr.shape}."
        )
    if arr.size > MAX_VALUES:
        raise DataError(
            f"`weights` must have at most {MAX_VALUES:,} entries (values), got {arr.size:,}."
        )
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise DataError(f"`weights` must be finite and >= 0, got {float(arr[j])!r} for value {j}.")
    if not arr.sum() > 0:
        raise DataError("`weights` must not all be 0 (no value could be drawn).")
    arr.setflags(write=False)
    return arr


def _generator(rng: Any) -> np.random.Generator:
    """A numpy generator from ``rng``: a seed, a generator, or fresh entropy (``None``)."""
    if rng is None:
        return np.random.default_rng()
    gen = resolve_rng(rng)
    if not isinstance(gen, np.random.Generator):
        raise ParameterTypeError(
            f"`rng` must be None, an int seed or a numpy.random.Generator (a simulation is "
            f"seeded), got {type(rng).__name__}."
        )
    return gen
