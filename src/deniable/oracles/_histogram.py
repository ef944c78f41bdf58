"""Histograms of numbers: bucket each number on the device, then report its bucket with a
frequency oracle (bucketing uses only the number itself, so epsilon is the oracle's)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Channel, MechanismBase, Tally, channel_epsilon
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._base import check_epsilon
from deniable.oracles._choose import choose_oracle

__all__ = ["Histogram"]


@dataclass(frozen=True)
class Histogram(MechanismBase):
    """A histogram of numbers over the bins ``[e_0, e_1), ..., [e_(k-1), e_k]`` (the last
    bin closed), each number reported as its bin through ``oracle``, a frequency oracle of
    ``k`` values (or the categorical design).

    A mechanism of the protocol: its ``epsilon`` and ``channel`` are the oracle's (over
    bins), its tallies carry its own key (the edges and the oracle's key), and ``estimate``
    returns the oracle's estimate of the bins' frequencies.  A number outside ``[e_0, e_k]``
    is refused (``DataError`` naming ``values``).

    >>> from deniable.oracles import OLH
    >>> h = Histogram((0.0, 10.0, 20.0, 50.0), OLH.from_epsilon(2.0, k=3))
    >>> h.bins([0.0, 9.99, 10.0, 50.0]).tolist()
    [0, 0, 1, 2]
    >>> est = h.estimate(h.randomize(np.full(20_000, 12.5), rng=2))
    >>> bool(abs(est.values[1] - 1.0) < 4 * est.se[1])
    True
    """

    edges: tuple[float, ...]
    oracle: Any
    name: ClassVar[str] = "histogram"
    _noun: ClassVar[str] = "histogram"

    def __post_init__(self) -> None:
        if isinstance(self.edges, str | bytes) or not hasattr(self.edges, "__iter__"):
            raise ParameterTypeError(
                f"`edges` must be a sequence of numbers, got {type(self.edges).__name__}."
            )
        edges = tuple(v.real(f"edges[{i}]", e) for i, e in enumerate(self.edges))
        if len(edges) < 3:
            raise ParameterError(
                f"`edges` must hold at least 3 numbers (2 bins), got {len(edges)}."
            )
        if not all(math.isfinite(e) for e in edges) or any(
            b <= a for a, b in itertools.pairwise(edges)
        ):
            raise ParameterError(f"`edges` must be finite and strictly increasing, got {edges}.")
        object.__setattr__(self, "edges", edges)
        k = getattr(getattr(self.oracle, "channel", None), "n_truths", None)
        if k != len(edges) - 1:
            raise ParameterError(
                f"`oracle` must take one value per bin (k = {len(edges) - 1}), got "
                f"{type(self.oracle).__name__} with k = {k}."
            )

    @classmethod
    def from_epsilon(cls, epsilon: float, edges: Any, n: int = 10**6) -> Histogram:
        """The histogram over ``edges`` with the oracle :func:`~deniable.oracles.choose_oracle`
        picks for its ``k = len(edges) - 1`` bins at ``epsilon`` and ``n`` reports."""
        eps = check_epsilon(epsilon)
        k = len(tuple(edges)) - 1
        if k < 2:
            raise ParameterError(f"`edges` must hold at least 3 numbers (2 bins), got {k + 1}.")
        return cls(tuple(edges), choose_oracle(eps, k, n).oracle)

    def parameters(self) -> dict[str, Any]:
        """The edges and the oracle's key: what ``key``, the identity its tallies carry,
        is made of."""
        return {"edges": list(self.edges), "oracle": self.oracle.key}

    @property
    def epsilon(self) -> float:
        """The oracle's epsilon."""
        return float(self.oracle.epsilon)

    @property
    def implemented_epsilon(self) -> float:
        """The oracle's implemented epsilon (never above :attr:`epsilon`)."""
        inner = getattr(self.oracle, "implemented_epsilon", None)
        if inner is None:  # the categorical design: from its implemented channel
            return float(channel_epsilon(self.oracle.implemented_channel))
        return float(inner)

    @property
    def channel(self) -> Channel:
        """The oracle's channel over the bins."""
        return self.oracle.channel  # type: ignore[no-any-return]

    def bins(self, values: npt.ArrayLike) -> npt.NDArray[np.intp]:
        """The bin of each number (``DataError`` for one outside the edges or NaN)."""
        try:
            x = np.asarray(values, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise DataError("`values` must be numbers.") from None
        lo, hi = self.edges[0], self.edges[-1]
        bad = ~((x >= lo) & (x <= hi))
        if bad.any():
            raise DataError(
                f"`values` must be numbers in [{lo:g}, {hi:g}] (the histogram's edges), got "
                f"{x[bad][0]!r}."
            )
        out = np.searchsorted(np.asarray(self.edges), x, side="right") - 1
        return np.minimum(out, len(self.edges) - 2)

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> Any:
        """The oracle's reports of the numbers' bins."""
        return self.oracle.randomize(self.bins(values), rng=rng)

    def tally(self, reports: npt.ArrayLike) -> Tally:
        """The oracle's tally of the reports, bound to this histogram."""
        return Tally(self.oracle.tally(reports).counts, mechanism=self.key)

    @property
    def _tally_cells(self) -> int:
        return int(self.oracle._tally_cells)

    def _check_counts(self, counts: npt.NDArray[np.int64]) -> None:
        self.oracle.bind(Tally(counts))  # the oracle's own checks of its cells

    def estimate(self, data: Any) -> Any:
        """The oracle's estimate of the bins' frequencies (from reports or a tally)."""
        if isinstance(data, Tally):
            return self.oracle.estimate(Tally(self.bind(data).counts))
        return self.oracle.estimate(data)
